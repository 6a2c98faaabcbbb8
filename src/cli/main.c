#include <signal.h>

#include "cli/cli.h"

int main(int argc, char **argv, char **envp)
{
	/* Before anything reads a variable: the secrets in our environment
	 * are no business of the agents, gates and git we start. */
	envp = cli_environ_take(envp);
	/* A closed stdout (bernstein ... | head) must not kill us mid-write. */
	(void)signal(SIGPIPE, SIG_IGN);
	return cli_main(argc, argv, envp, cli_commands);
}
