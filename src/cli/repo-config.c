/* bernstein.yaml at a repository's root (repo-config.h). */
#include "cli/repo-config.h"

#include <errno.h>
#include <stdlib.h>

#include "adapter/credential.h"
#include "orch/agentrun.h"

int repo_config_load(struct cli_ctx *ctx, const char *repo, struct orch_config **ret)
{
	char *path = agentrun_path(repo, ORCH_CONFIG_FILE);
	struct diag d;
	int r, code = 0;

	diag_clear(&d);
	r = orch_config_load(path, cli_getenv(ctx, CREDENTIAL_HOST_ALLOW_ENV), ret, &d);
	if (r == -ENOENT)
		*ret = orch_config_new_default();
	else if (r < 0)
		code = cli_diag(ctx, r == -EINVAL || r == -EFBIG ? BEXIT_INVALID : BEXIT_ENV, &d);
	free(path);
	return code;
}

struct usable_env repo_usable_env(struct cli_ctx *ctx)
{
	return (struct usable_env){
		.env = (const char *const *)ctx->envp,
		.home = cli_getenv(ctx, "HOME"),
		.path = cli_getenv(ctx, "PATH"),
		.host_allowed = cli_getenv(ctx, CREDENTIAL_HOST_ALLOW_ENV),
	};
}
