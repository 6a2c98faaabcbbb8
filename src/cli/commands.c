/* The command table. One entry per top-level command; groups point to their
 * own tables, defined beside their commands in cmd-*.c. */
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/runner-help.h"

const struct cmd cli_commands[] = {
	{"adapters", NULL, adapters_cmds, 0, "inspect adapter declarations and agent binaries",
	 NULL,
	 "Adapters are the agent CLIs bernstein can drive. Each is declared on five\n"
	 "strategy axes (resume, dangerous mode, event channel, output mode, session\n"
	 "state); see docs/capability-contract.md.\n"},
	{"audit", NULL, audit_cmds, 0, "verify and inspect the HMAC audit chain", NULL,
	 "The audit chain (.bernstein/audit/YYYY-MM-DD.jsonl) records what bernstein did,\n"
	 "each record MACed and chained to the previous one; see docs/audit-log.md.\n"},
	{"help", cmd_help, NULL, 0, "show help for a command", "[<command>...]",
	 "Prints the same text as 'bernstein <command> -h'.\n"},
	{"integrations", NULL, integrations_cmds, 0,
	 "what each agent is good for, how to install it", NULL,
	 "The agents bernstein can drive, one line of copy each (catalog/use-cases.yaml).\n"},
	{"profiles", NULL, profiles_cmds, 0, "validate capability profiles and print their hashes",
	 NULL,
	 "A capability profile declares an agent CLI as data: how it is invoked, its\n"
	 "strategy and capabilities, and how resume, dangerous mode and endpoints are\n"
	 "spelled; see docs/profile-format.md.\n"},
	{"runner", cmd_runner_exec, NULL, 0, RUNNER_SUMMARY, RUNNER_USAGE, RUNNER_HELP},
	{"shim", cmd_shim, NULL, 0, "run a program under pdeathsig, rlimits and landlock",
	 "[--rlimit-NAME N]... [--landlock-rw DIR]... [--landlock-ro DIR]... -- PROGRAM [ARG...]",
	 "Prepares the process and then execs PROGRAM in its place (no wrapper stays):\n"
	 "parent-death signal SIGKILL, fds above 2 closed on exec, resource limits,\n"
	 "optional Landlock rules, default signal dispositions; the environment is\n"
	 "passed through unchanged. A bare PROGRAM is looked up on $PATH.\n"
	 "\n"
	 "options:\n"
	 "  --rlimit-as BYTES, --rlimit-nofile N, --rlimit-cpu SECONDS,\n"
	 "  --rlimit-core BYTES, --rlimit-nproc N, --rlimit-fsize BYTES\n"
	 "                         set soft and hard limit ('unlimited' accepted)\n"
	 "  --landlock-rw DIR      allow read-write beneath DIR (repeatable)\n"
	 "  --landlock-ro DIR      allow read and execute beneath DIR (repeatable);\n"
	 "                         with any Landlock option, everything else is denied\n"
	 "  --landlock-best-effort run unconfined if the kernel lacks Landlock\n"
	 "  --status-fd N          write a failure record to fd N (the supervisor's)\n"
	 "  --parent-pid PID       die at once if the parent is no longer PID\n"
	 "\n"
	 "Exit codes when PROGRAM does not run: 127 not found, 126 cannot be executed,\n"
	 "125 set-up failed (rlimits, Landlock). See docs/supervision.md.\n"},
	{"version", cmd_version, NULL, 0, "print the version", "",
	 "Prints 'bernstein VERSION', or {\"name\": ..., \"version\": ...} with --json.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
