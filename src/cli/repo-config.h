/* bernstein.yaml at a repository's root (docs/configuration.md), loaded the
 * way every command that works on a repository loads it: bernstein run,
 * resume and demo (cmd-run.c) and bernstein route (cmd-route.c). The
 * api_key_env allow-list comes from the host's
 * BERNSTEIN_ALLOWED_API_KEY_ENVS. */
#ifndef BERNSTEIN_CLI_REPO_CONFIG_H
#define BERNSTEIN_CLI_REPO_CONFIG_H

#include "adapter/usable.h"
#include "cli/cli.h"
#include "orch/config.h"

/* Load <repo>/bernstein.yaml. 0 with *ret (caller frees with
 * orch_config_free()): the file's configuration, or the defaults
 * ((*ret)->source NULL) when the file does not exist. Otherwise the
 * diagnostic is printed (bernstein: FILE:LINE:COL: field 'PATH': message)
 * and the exit code returned: 3 for an invalid or too large file, 4 for
 * one that cannot be read; *ret is untouched. */
int repo_config_load(struct cli_ctx *ctx, const char *repo, struct orch_config **ret);

/* The environment usable_check() sees (adapter/usable.h): this process's,
 * its HOME and PATH, BERNSTEIN_ALLOWED_API_KEY_ENVS. doctor, init, plan
 * show and a run's adapter: auto judge an agent by the same rule. */
struct usable_env repo_usable_env(struct cli_ctx *ctx);

#endif
