/* The command table. One entry per top-level command; groups point to their
 * own tables, defined beside their commands in cmd-*.c. */
#include "cli/cli.h"
#include "cli/commands.h"

const struct cmd cli_commands[] = {
	{"adapters", NULL, adapters_cmds, 0, "inspect adapter declarations and agent binaries",
	 NULL,
	 "Adapters are the agent CLIs bernstein can drive. Each is declared on five\n"
	 "strategy axes (resume, dangerous mode, event channel, output mode, session\n"
	 "state); see docs/capability-contract.md.\n"},
	{"help", cmd_help, NULL, 0, "show help for a command", "[<command>...]",
	 "Prints the same text as 'bernstein <command> -h'.\n"},
	{"version", cmd_version, NULL, 0, "print the version", "",
	 "Prints 'bernstein VERSION', or {\"name\": ..., \"version\": ...} with --json.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
