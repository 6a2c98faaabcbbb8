#include <signal.h>

#include "cli/cli.h"

int main(int argc, char **argv, char **envp)
{
	/* A closed stdout (bernstein ... | head) must not kill us mid-write. */
	(void)signal(SIGPIPE, SIG_IGN);
	return cli_main(argc, argv, envp, cli_commands);
}
