/* Which environment variable may hold the runner's API key.
 *
 * A manifest names the variable (api_key_env), never the key. The name must
 * match ^[A-Z][A-Z0-9_]*$ AND be a known LLM provider key (the built-in
 * allow-list of 19 names below) or be listed in the host variable
 * BERNSTEIN_ALLOWED_API_KEY_ENVS (comma-separated; cli/ reads it and passes
 * its value here). Anything else (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, ...)
 * is refused, so a repo-carried config cannot point the runner at an
 * unrelated secret: the host override lives in the operator's environment,
 * which a repository cannot set.
 *
 * Nothing here sees the key's value. */
#ifndef BERNSTEIN_RUNNER_CREDENTIAL_H
#define BERNSTEIN_RUNNER_CREDENTIAL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"

/* The variable used when the manifest names none. */
#define CREDENTIAL_DEFAULT_ENV "OPENAI_API_KEY"

/* The built-in allow-list, NULL-terminated (19 names). */
extern const char *const credential_builtin_names[];

/* ^[A-Z][A-Z0-9_]*$ */
bool credential_name_wellformed(const char *name);

/* Is name listed in a comma-separated list (entries stripped of blanks)? */
bool credential_in_list(const char *name, const char *list);

/* 0 when name may be used; -EPERM with the reason in reterr otherwise
 * ("api_key_env 'GITHUB_TOKEN' is not an allowed credential variable name: ...").
 * host_allowed is the value of BERNSTEIN_ALLOWED_API_KEY_ENVS, or NULL. */
int credential_check_name(const char *name, const char *host_allowed, struct diag *reterr);

#endif
