/* bernstein-runner: the built-in agent runner as its own executable, normally
 * reached as 'bernstein runner ...' (src/cli/runner-exec.c). */
#include <signal.h>
#include <stdio.h>

#include "cli/commands.h"
#include "cli/runner-help.h"

static const struct cmd runner_cmd = {"runner",	      cmd_runner,   NULL,	0,
				      RUNNER_SUMMARY, RUNNER_USAGE, RUNNER_HELP};

int main(int argc, char **argv, char **envp)
{
	/* The API key stays ours: run_command's commands and the MCP servers
	 * get an environment without it and must not read it from /proc. */
	struct cli_ctx ctx = {
		.progname = "bernstein",
		.out = stdout,
		.err = stderr,
		.envp = cli_environ_take(envp),
		.cmd = &runner_cmd,
		.cmd_path = "runner",
	};

	int r;

	(void)signal(SIGPIPE, SIG_IGN);
	cli_lazy_init(&ctx);
	r = cli_contain_env(&ctx);
	if (r)
		return r;
	return cmd_runner(argc, argv, &ctx);
}
