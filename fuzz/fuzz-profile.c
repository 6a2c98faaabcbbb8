/* Fuzz target for capability profiles: the loader and gate 1 on arbitrary
 * bytes, then, for what loads, the invariants of a valid profile: the hash is
 * SHA-256 of the canonical bytes, the canonical form re-reads to the same
 * bytes, the strategy rules and the contract cross-check never crash for any
 * strategy, the argv always builds, and no prompt that looks like an option
 * reaches argv unguarded (issue #14): invocation_build() puts it after "--",
 * glues it to its flag, moves it off argv or refuses. */
#include <stdlib.h>
#include <string.h>

#include "adapter/contract.h"
#include "adapter/invocation.h"
#include "adapter/profile.h"

static size_t profile_canonical_len(const struct profile *p)
{
	size_t n;

	(void)profile_canonical_bytes(p, &n);
	return n;
}
#include "fuzz/fuzz.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/strvec.h"

static const char contract_yaml[] = "binary: fake-agent\n"
				    "required_flags: [-m, --model, -p, --json, --yolo]\n"
				    "required_subcommands: [exec, run]\n";

static void check_canonical(const struct profile *p)
{
	char hex[SHA256_HEX_LEN + 1];
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j = NULL;
	struct diag d;

	hash_sha256_hex(profile_canonical_bytes(p, NULL), profile_canonical_len(p), hex);
	if (strcmp(hex, profile_hash(p)) != 0)
		abort();
	if (strlen(profile_canonical_bytes(p, NULL)) != profile_canonical_len(p))
		abort();
	if (json_parse_strict("canonical", profile_canonical_bytes(p, NULL),
			      profile_canonical_len(p), &j, &d) < 0)
		abort(); /* the canonical form is JSON */
	if (json_canon_jcs(j, &sb) < 0 || sb.len != profile_canonical_len(p) ||
	    memcmp(sb.buf, profile_canonical_bytes(p, NULL), sb.len) != 0)
		abort(); /* and already canonical */
	json_decref(j);
	sbuf_release(&sb);
}

static void check_strategies(const struct profile *p)
{
	struct adapter_strategy s = {0};
	struct diag d;
	int r, dm, ec, in;

	for (r = 0; r < _RESUME_STRATEGY_MAX; r++)
		for (dm = 0; dm < _DANGEROUS_MODE_MAX; dm++)
			for (ec = 0; ec < _EVENT_CHANNEL_MAX; ec++)
				for (in = 0; in < 2; in++) {
					int rc;

					s.resume = (enum resume_strategy)r;
					s.dangerous_mode = (enum dangerous_mode)dm;
					s.event_channel = (enum event_channel)ec;
					diag_clear(&d);
					rc = profile_check_strategy(p, &s, in, "fuzz", &d);
					if (rc != 0 && (rc != -EINVAL || !d.msg[0]))
						abort();
				}
}

static void check_prompt_guard(const struct profile *p)
{
	static const char *const hostile[] = {"--version", "-", "--", "-h"};
	static const char *const env[] = {"PATH=/nonexistent", NULL};
	size_t i, n;

	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct invocation_request req = {
			.profile = p,
			.prompt = hostile[i],
			.workdir = "/nonexistent/w",
			.session_dir = "/nonexistent/w/s",
			.host_env = env,
			.path_env = "/nonexistent",
			.bernstein_exe = "/nonexistent/bernstein",
		};
		struct invocation_plan plan;
		struct diag d;
		const char *last;

		invocation_plan_init(&plan);
		diag_clear(&d);
		if (invocation_build(&req, &plan, &d) < 0 ||
		    plan.prompt_via != PROMPT_DELIVERY_ARGV) {
			invocation_plan_release(&plan);
			continue;
		}
		n = plan.argv.nr;
		last = plan.argv.v[n - 1];
		if (p->invocation.prompt_guard == PROMPT_GUARD_GLUED) {
			size_t fl = strlen(p->invocation.prompt_flag);

			if (strncmp(last, p->invocation.prompt_flag, fl) != 0 || last[fl] != '=' ||
			    strcmp(last + fl + 1, hostile[i]) != 0)
				abort();
		} else if (n < 2 || strcmp(last, hostile[i]) != 0 ||
			   strcmp(plan.argv.v[n - 2], "--") != 0 || strcmp(last, "-") == 0) {
			abort(); /* an option-looking prompt on argv without "--" before it */
		}
		invocation_plan_release(&plan);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list is = PROFILE_ISSUES_INIT;
	struct profile_vars vars = {.v = {NULL}};
	struct strvec argv = STRVEC_INIT;
	struct contract *c = NULL;
	struct profile *p = NULL;
	struct diag d;
	size_t i;
	int k;

	diag_clear(&d);
	if (profile_load_buf("fuzz.yaml", NULL, (const char *)data, size, &p, &d) < 0) {
		if (p || !d.msg[0])
			abort(); /* a failure always says why, and returns nothing */
		return 0;
	}
	if (!profile_name_valid(p->name) || !p->invocation.binary[0])
		abort();
	if (p->caps.max_parallel_workers < 1)
		abort();
	check_canonical(p);
	check_strategies(p);
	check_prompt_guard(p);
	if (contract_load_buf("fake", "fake.yaml", contract_yaml, sizeof(contract_yaml) - 1, &c,
			      &d) < 0)
		abort();
	(void)profile_contract_discrepancies(p, c, NULL, &is);
	for (i = 0; i < is.n; i++)
		if (strncmp(is.v[i].msg, "field '", 7) != 0 || is.v[i].line == 0)
			abort(); /* every discrepancy names its field and position */
	diag_list_release(&is);
	contract_free(c);
	for (k = 0; k < _PH_MAX; k++)
		vars.v[k] = "x";
	if (profile_build_argv(p, NULL, "model", "prompt", &vars, &argv) < 0)
		abort();
	if (argv.nr < 2 || strcmp(argv.v[0], p->invocation.binary) != 0)
		abort();
	strvec_clear(&argv);
	profile_free(p);
	return 0;
}
