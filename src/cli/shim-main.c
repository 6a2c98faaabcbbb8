/* bernstein-shim: the shim as its own small executable. The supervisor puts
 * a shim in front of every agent it starts; `bernstein shim` does the same
 * job, but bernstein links libcrypto, SQLite, libyaml and jansson, and
 * loading them costs milliseconds at every start (bench/run-bench.sh). This
 * one links none of them. It takes the arguments of `bernstein shim`, with or
 * without the leading "shim" (proc/spawn.c puts it there). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/shim-help.h"

static const struct cmd shim_cmd = {"shim", cmd_shim, NULL, 0, SHIM_SUMMARY, SHIM_USAGE, SHIM_HELP};

int main(int argc, char **argv, char **envp)
{
	struct cli_ctx ctx = {
		.progname = "bernstein",
		.out = stdout,
		.err = stderr,
		.envp = envp,
		.cmd = &shim_cmd,
		.cmd_path = "shim",
	};

	if (argc > 1 && strcmp(argv[1], "shim") == 0) {
		argv++;
		argc--;
	}
	return cmd_shim(argc, argv, &ctx);
}
