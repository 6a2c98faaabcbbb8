/* bernstein runner ...: exec the bernstein-runner executable installed beside
 * bernstein. The runner is a separate program (as git-remote-https is for
 * git) so that libcurl and its two dozen shared libraries are loaded only by
 * the runner, not by every bernstein command: start-up time is a budget
 * (bench/startup). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"

#define RUNNER_EXE "bernstein-runner"

int cmd_runner_exec(int argc, char **argv, struct cli_ctx *ctx)
{
	char path[PATH_MAX];
	int r = cli_sibling_path(RUNNER_EXE, path, sizeof(path));

	(void)argc;
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot locate '%s': %s", RUNNER_EXE,
				 strerror(-r));
	(void)fflush(ctx->out);
	(void)fflush(ctx->err);
	argv[0] = path;
	(void)execv(path, argv);
	return cli_error(ctx, BEXIT_ENV, "cannot run the built-in runner '%s': %s", path,
			 strerror(errno));
}
