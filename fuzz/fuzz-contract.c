/* Fuzz target for upstream CLI contracts: the loader on arbitrary bytes and
 * the help matcher on arbitrary help text.
 *
 * Input: CONTRACT-YAML NUL HELP-TEXT (without a NUL, the whole input is both).
 * When the YAML does not load, a fixed contract is matched instead. The first
 * line of the help text is also used as a flag and a subcommand needle. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/contract.h"
#include "fuzz/fuzz.h"
#include "util/strvec.h"

static const char fallback_yaml[] = "binary: fuzz\n"
				    "required_flags: [\"-m\", \"--model\", \"--json\", \"-o\"]\n"
				    "required_subcommands: [exec, run]\n"
				    "help_command: [fuzz, exec, --help]\n";

static bool ci_substr(const char *t, size_t len, const char *needle)
{
	size_t n = strlen(needle), i, j;

	for (i = 0; i + n <= len; i++) {
		for (j = 0; j < n; j++) {
			char a = t[i + j], b = needle[j];

			if (a >= 'A' && a <= 'Z')
				a = (char)(a - 'A' + 'a');
			if (b >= 'A' && b <= 'Z')
				b = (char)(b - 'A' + 'a');
			if (a != b)
				break;
		}
		if (j == n)
			return true;
	}
	return false;
}

static void check_list(const char *const *v, size_t n)
{
	size_t i;

	if (!v || v[n])
		abort(); /* never NULL, NULL-terminated at n */
	for (i = 0; i < n; i++)
		if (!v[i])
			abort();
}

static void check_contract(const struct contract *c)
{
	if (!c->name || !c->adapter || !c->binary || !c->install_spec || !c->adapter[0])
		abort();
	check_list(c->required_flags, c->n_required_flags);
	check_list(c->required_subcommands, c->n_required_subcommands);
	check_list(c->help_command, c->n_help_command);
	check_list(c->secret_env, c->n_secret_env);
	check_list(c->models_command, c->n_models_command);
	check_list(c->models_required, c->n_models_required);
	if ((c->n_help_command == 0) != (c->binary[0] == '\0'))
		abort(); /* a help command exactly when there is a binary */
	if (c->session_id_flag && !c->session_id_flag[0])
		abort();
}

static void match(const struct contract *c, const char *help, size_t hlen)
{
	struct strvec failures = STRVEC_INIT;
	size_t total = c->n_required_flags + c->n_required_subcommands, missing, i;
	const char *why;

	missing = contract_match_help(c, help, hlen, &failures);
	if (missing != failures.nr || missing > total)
		abort();
	if (contract_match_help(c, help, hlen, NULL) != missing)
		abort(); /* deterministic, with or without messages */
	why = contract_probe_failure(c, help, hlen, 1);
	if (why && strcmp(why, "no output") && strcmp(why, "no required tokens advertised"))
		abort();
	if (why && !strcmp(why, "no required tokens advertised") && missing != total)
		abort();
	if (!total && why)
		abort();
	why = contract_probe_failure(c, help, hlen, 0);
	if (why && strcmp(why, "no output"))
		abort(); /* with exit 0 only an empty help is a broken probe */
	/* advertised implies present (raw text, escapes included) as a substring */
	for (i = 0; i < c->n_required_flags; i++)
		if (contract_flag_advertised(help, hlen, c->required_flags[i]) &&
		    !ci_substr(help, hlen, c->required_flags[i]))
			abort();
	strvec_clear(&failures);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	const char *nul = memchr(buf, '\0', size);
	size_t ylen = nul ? (size_t)(nul - buf) : size;
	const char *help = nul ? nul + 1 : buf;
	size_t hlen = nul ? size - ylen - 1 : size;
	struct contract *c = NULL;
	struct diag d;
	char needle[64];
	size_t nl;

	diag_clear(&d);
	if (contract_load_buf("fuzz", "fuzz.yaml", buf, ylen, &c, &d) == 0) {
		check_contract(c);
	} else {
		if (c || !d.msg[0])
			abort(); /* a failure always says why, and returns nothing */
		if (contract_load_buf("fuzz", "fallback.yaml", fallback_yaml,
				      sizeof(fallback_yaml) - 1, &c, &d) < 0)
			abort();
	}
	match(c, help, hlen);

	/* the first line as a needle of its own */
	for (nl = 0; nl < hlen && nl < sizeof(needle) - 1 && help[nl] != '\n' && help[nl]; nl++)
		needle[nl] = help[nl];
	needle[nl] = '\0';
	if (contract_flag_advertised(help, hlen, needle) && !needle[0])
		abort(); /* the empty flag is never advertised */
	(void)contract_subcommand_advertised(help, hlen, needle);
	contract_free(c);
	return 0;
}
