/* Whether an agent is usable here: its binary on PATH and credentials
 * present (docs/spawning.md, "Which agents are usable"). The one rule
 * `bernstein doctor` reports and `adapter: auto` dispatches by.
 *
 * Credentials are any of:
 *   - a variable the profile passes through (invocation.env_passthrough)
 *     that holds a secret (credential_env_secret()), set and non-empty;
 *   - the endpoint's api_key_env (the caller's: bernstein.yaml or the
 *     plan), set and non-empty;
 *   - one of the profile's login files (runtime.login: paths under HOME)
 *     present as a regular file;
 *   - nothing at all when the profile declares neither key variables nor
 *     login files: the CLI logs in its own way, which bernstein cannot see.
 *
 * Pure: the environment, HOME and PATH come in as arguments; nothing here
 * reads the process environment or runs the binary. */
#ifndef BERNSTEIN_ADAPTER_USABLE_H
#define BERNSTEIN_ADAPTER_USABLE_H

#include <stdbool.h>

#include "util/strvec.h"

struct registry_entry;

struct usable_env {
	const char *const *env;	   /* KEY=VALUE, NULL-terminated (NULL: none) */
	const char *home;	   /* the user's HOME (absolute), or NULL */
	const char *path;	   /* the value of PATH, or NULL */
	const char *host_allowed;  /* BERNSTEIN_ALLOWED_API_KEY_ENVS, or NULL */
	const char *extra_key_env; /* the endpoint's api_key_env for this agent, or NULL */
};

struct usable {
	bool installed;		   /* the binary is on PATH */
	char *binary;		   /* its resolved path, or NULL (owned) */
	bool usable;		   /* installed and credentials present */
	bool own_login;		   /* the profile declares no credentials at all */
	struct strvec keys;	   /* the secret variables it takes, in profile order */
	struct strvec keys_set;	   /* those set */
	struct strvec logins;	   /* "~/PATH" of each declared login file */
	struct strvec logins_have; /* those present */
	/* NULL when usable; else what it lacks, one line:
	 *   not installed: 'codex' is not on PATH
	 *   no credentials: set OPENAI_API_KEY, or log in with 'codex' itself
	 *   (its login: ~/.codex/auth.json)
	 * (owned) */
	char *lacks;
};

/* Check e (a registry entry with a binary; a built-in or profile-less
 * entry is "not an agent CLI": never usable) against env. Fills *ret
 * (release with usable_release()). */
void usable_check(const struct registry_entry *e, const struct usable_env *env, struct usable *ret);
void usable_release(struct usable *u);

#endif
