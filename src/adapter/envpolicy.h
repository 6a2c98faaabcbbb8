/* The environment of an agent, built from an allow-list and never from
 * environ (anchor-adapters.md section 1.13, STYLE.md section 8).
 *
 * The result is, in this order of precedence (a later layer replaces a
 * variable of an earlier one):
 *   1. the host variables whose names are on the base allow-list
 *      (envpolicy_base: Bernstein's 51 names minus the 13 Windows-only ones),
 *      on the caller's pass-through list (a profile's env_passthrough, the
 *      api_key_env of an endpoint), or on the test-only list below; only the
 *      variables that are set are copied, and the first of duplicate host
 *      entries counts, as getenv() does;
 *   2. fixed values (envpolicy_set(): the profile's runtime env, HOME of an
 *      isolated agent, telemetry off).
 * It comes out sorted (byte order of the KEY=VALUE strings), ready
 * for proc_spawn.
 *
 * The host environment is an argument (a KEY=VALUE array, NULL-terminated),
 * never read from the process: cli/ passes its envp. Secrets not named by
 * the caller never reach the agent.
 *
 * Test-only: BERNSTEIN_TEST_PASS_ENV in the host environment, a
 * comma-separated list of names (blanks stripped), adds those names to the
 * pass-through list. Tests use it to keep ASAN_OPTIONS, UBSAN_OPTIONS and
 * LSAN_OPTIONS (which the allow-list strips) for sanitized children, or to
 * hand a test endpoint to a fake agent. Do not set it in production: it
 * widens every agent's environment. */
#ifndef BERNSTEIN_ADAPTER_ENVPOLICY_H
#define BERNSTEIN_ADAPTER_ENVPOLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"
#include "util/strvec.h"

#define ENVPOLICY_TEST_PASS_ENV "BERNSTEIN_TEST_PASS_ENV"

/* The base allow-list, NULL-terminated (38 names). */
extern const char *const envpolicy_base[];
/* Fixed values every agent gets unless its profile says otherwise
 * (telemetry off): "DO_NOT_TRACK=1". NULL-terminated KEY=VALUE. */
extern const char *const envpolicy_telemetry_off[];

struct envpolicy {
	const char *const *host; /* KEY=VALUE, NULL-terminated (borrowed); NULL = empty */
	struct strvec pass;	 /* extra names copied from host */
	struct strvec set;	 /* KEY=VALUE fixed values, in the order set */
};

void envpolicy_init(struct envpolicy *e, const char *const *host);
void envpolicy_release(struct envpolicy *e);
/* Copy name from the host too (if set there). */
void envpolicy_pass(struct envpolicy *e, const char *name);
/* Set name=value in the result, whatever the host says (the last call for a
 * name wins). */
void envpolicy_set(struct envpolicy *e, const char *name, const char *value);

/* Build the environment into *ret (appended to an empty strvec; sorted).
 * -EINVAL when a name (passed or set) is not [A-Za-z_][A-Za-z0-9_]*, with
 * the name in reterr. */
int envpolicy_build(const struct envpolicy *e, struct strvec *ret, struct diag *reterr);

/* [A-Za-z_][A-Za-z0-9_]* */
bool envpolicy_name_valid(const char *name);
/* name is on the base allow-list. */
bool envpolicy_base_allowed(const char *name);
/* The value of name in a KEY=VALUE array (the first entry), or NULL. */
const char *envpolicy_get(const char *const *env, const char *name);

#endif
