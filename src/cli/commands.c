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
	{"route", cmd_route, NULL, 0, "pick the adapter for a task's capability requirements",
	 "[--requires capability:AXIS[=VALUE]]... [--candidates A,B] [--audit] [--run-id ID] "
	 "[--json]",
	 "Selects the first adapter whose capability profile satisfies every requirement,\n"
	 "in a deterministic order: the --candidates list as given, else catalogue order\n"
	 "(adapter names in byte order; only adapters with a capability profile). A\n"
	 "stronger capability satisfies a weaker one. When nothing satisfies the task it\n"
	 "never falls back: it prints the refusal receipt (every candidate with its\n"
	 "profile hash and unmet axes, and the receipt hash) and exits 6. See\n"
	 "docs/routing.md.\n"
	 "\n"
	 "options:\n"
	 "  --requires TOKEN   a requires token (repeatable); capability:AXIS for a boolean\n"
	 "                     axis (agents_md, computer_use, endpoint, local_models,\n"
	 "                     mcp_client, mcp_server, native_subagents, resume, sampling,\n"
	 "                     streaming, tool_use, unattended, vision), or\n"
	 "                     capability:sandbox=none|process|container|microvm,\n"
	 "                     capability:max_parallel_workers=N,\n"
	 "                     capability:output_mode=git-diff|artifact; other tokens are\n"
	 "                     skill addressing and ignored (with a warning)\n"
	 "  --candidates A,B   consider only these adapters, in this order (repeatable)\n"
	 "  --audit            anchor the decision in the audit chain (.bernstein/audit):\n"
	 "                     adapter.capability_selection or adapter.capability_refusal;\n"
	 "                     the key is created on first use (see 'bernstein audit key')\n"
	 "  --run-id ID        the run the decision is for (the record's resource_id)\n"
	 "  --json             {\"selected\": true, \"adapter\", \"profile_hash\", ...} or\n"
	 "                     {\"selected\": false, \"receipt\", \"receipt_hash\", ...}\n"
	 "\n"
	 "Exit: 0 selected, 6 refused (receipt printed), 2 usage or unknown adapter,\n"
	 "3 invalid requirement or catalogue, 4 audit key or I/O problem, 5 the chain\n"
	 "does not match its state.\n"},
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
	{"spawn", cmd_spawn, NULL, 0, "run one agent headless and report its typed outcome",
	 spawn_usage, spawn_help},
	{"version", cmd_version, NULL, 0, "print the version", "",
	 "Prints 'bernstein VERSION', or {\"name\": ..., \"version\": ...} with --json.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
