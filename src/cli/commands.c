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
	{"runner", cmd_runner, NULL, 0, "run the built-in agent (OpenAI-compatible endpoints)",
	 "--manifest FILE [--resume SESSION] [--session-dir DIR] [--proxy URL] [--max-retries N]",
	 "The built-in agent runner: an agent loop over an OpenAI-compatible endpoint\n"
	 "(Chat Completions at the manifest's base_url, else the Responses API at the\n"
	 "default endpoint) with builtin or MCP gateway tools. It is normally spawned by\n"
	 "bernstein itself (the openai_agents adapter writes the manifest into the session\n"
	 "directory), but it is usable by hand. One JSON event per line on stdout: start,\n"
	 "progress, tool_call, tool_result, usage, completion, error. See docs/runner.md.\n"
	 "\n"
	 "options:\n"
	 "  --manifest FILE      the runner manifest (JSON)\n"
	 "  --resume SESSION     continue SESSION's saved transcript with this prompt\n"
	 "  --session-dir DIR    where transcripts live (default: the manifest's directory)\n"
	 "  --proxy URL          use this HTTP proxy (default: none; proxy variables in the\n"
	 "                       environment are ignored)\n"
	 "  --max-retries N      retries of a model request on 429/5xx (default 5)\n"
	 "\n"
	 "environment: the manifest's api_key_env (default OPENAI_API_KEY) holds the key;\n"
	 "BERNSTEIN_ALLOWED_API_KEY_ENVS admits more key variable names;\n"
	 "BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 offers run_command without an OS sandbox.\n"
	 "\n"
	 "Exit codes: 0 done, 1 runtime error, 2 manifest missing or invalid, or\n"
	 "config_invalid, 4 rate limited.\n"},
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
