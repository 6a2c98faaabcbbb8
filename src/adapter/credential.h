/* Which environment variable may hold an API key (seed 000, "Sampling and
 * endpoint parameters").
 *
 * A spawn request names the variable (api_key_env), never the key. The name
 * must match ^[A-Z][A-Z0-9_]*$ AND be a known LLM provider key (the built-in
 * allow-list of 19 names, anchor-adapters.md section 6.2) or be listed in the
 * host variable BERNSTEIN_ALLOWED_API_KEY_ENVS (comma-separated, entries
 * stripped of blanks; cli/ reads it and passes its value here). Anything else
 * (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, ...) is refused, so a repo-carried
 * config cannot point an agent at an unrelated secret: the host override
 * lives in the operator's environment, which a repository cannot set.
 *
 * Nothing here sees the key's value.
 *
 * (src/runner/credential.c has its own copy of this rule for now, with other
 * function names; the runner is to switch to this module.) */
#ifndef BERNSTEIN_ADAPTER_CREDENTIAL_H
#define BERNSTEIN_ADAPTER_CREDENTIAL_H

#include <stdbool.h>

#include "util/diag.h"
#include "util/strvec.h"

/* The variable the built-in runner reads when a manifest names none. */
#define CREDENTIAL_DEFAULT_ENV "OPENAI_API_KEY"

/* The host variable that admits more names. */
#define CREDENTIAL_HOST_ALLOW_ENV "BERNSTEIN_ALLOWED_API_KEY_ENVS"

/* The built-in allow-list, NULL-terminated (19 names). */
extern const char *const credential_env_builtin[];

/* ^[A-Z][A-Z0-9_]*$ */
bool credential_env_wellformed(const char *name);

/* Is name an entry of the comma-separated list (entries stripped of
 * blanks)? A NULL or empty list holds nothing. */
bool credential_env_listed(const char *name, const char *list);

/* 0 when name may hold an API key; -EPERM with the reason in reterr
 * otherwise:
 *   api_key_env 'GITHUB_TOKEN' is not an allowed credential variable name:
 *   it is not a known LLM provider key; an operator can allow it with
 *   BERNSTEIN_ALLOWED_API_KEY_ENVS on the host
 * host_allowed is the value of BERNSTEIN_ALLOWED_API_KEY_ENVS, or NULL. */
int credential_env_check(const char *name, const char *host_allowed, struct diag *reterr);

/* Does the variable name hold a secret, one to redact wherever its value
 * could be written? A name of the built-in allow-list, a name listed in
 * host_allowed, or a name that says so: it contains KEY, TOKEN, SECRET,
 * PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, AUTHORIZATION, COOKIE or
 * PRIVATE (any case). So the keys a profile passes through (AMP_API_KEY,
 * SRC_ACCESS_TOKEN...) and bernstein's own (BERNSTEIN_AUTH_TOKEN,
 * BERNSTEIN_HOOK_SECRET) count. */
bool credential_env_secret(const char *name, const char *host_allowed);

/* The values of the secret variables of env (KEY=VALUE, NULL-terminated;
 * NULL = none), appended to ret each once. A value shorter than REDACT_MIN
 * (util/redact.h) would match everywhere and is not appended: its variable's
 * name goes to ret_short instead (when not NULL) so a caller can warn. Empty
 * values are skipped. */
void credential_env_secrets(const char *const *env, const char *host_allowed, struct strvec *ret,
			    struct strvec *ret_short);

#endif
