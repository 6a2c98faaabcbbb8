/* Fuzz target for capability profiles: the loader and gate 1 on arbitrary
 * bytes, then, for what loads, the invariants of a valid profile: the hash is
 * SHA-256 of the canonical bytes, the canonical form re-reads to the same
 * bytes, the strategy rules and the contract cross-check never crash for any
 * strategy, and the argv always builds. */
#include <stdlib.h>
#include <string.h>

#include "adapter/contract.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_issues is = PROFILE_ISSUES_INIT;
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
	if (contract_load_buf("fake", "fake.yaml", contract_yaml, sizeof(contract_yaml) - 1, &c,
			      &d) < 0)
		abort();
	(void)profile_contract_discrepancies(p, c, NULL, &is);
	for (i = 0; i < is.n; i++)
		if (strncmp(is.v[i].msg, "field '", 7) != 0 || is.v[i].line == 0)
			abort(); /* every discrepancy names its field and position */
	profile_issues_release(&is);
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
