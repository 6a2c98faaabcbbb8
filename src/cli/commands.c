/* The command table. One entry per top-level command; groups point to their
 * own tables, defined beside their commands in cmd-*.c. */
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/runner-help.h"
#include "cli/shim-help.h"

const struct cmd cli_commands[] = {
	{"adapters", NULL, adapters_cmds, 0, "inspect adapter declarations and agent binaries",
	 NULL,
	 "Adapters are the agent CLIs bernstein can drive. Each is declared on five\n"
	 "strategy axes (resume, dangerous mode, event channel, output mode, session\n"
	 "state); see docs/capability-contract.md.\n"},
	{"add-task", cmd_add_task, NULL, CMD_LOAD_LIBS, cmd_add_task_summary, cmd_add_task_usage,
	 cmd_add_task_help},
	{"agent-exec", cmd_agent_exec, NULL, CMD_HIDDEN,
	 "run a task's agent on a Slurm node (executor: slurm)", agent_exec_usage, agent_exec_help},
	{"agent-relay", cmd_agent_relay, NULL, CMD_HIDDEN,
	 "submit a task's agent as a Slurm job and relay its output", agent_relay_usage,
	 agent_relay_help},
	{"approve", cmd_approve, NULL, CMD_LOAD_LIBS, cmd_approve_summary, cmd_approve_usage,
	 cmd_approve_help},
	{"attach", cmd_attach, NULL, 0, cmd_attach_summary, cmd_attach_usage, cmd_attach_help},
	{"audit", NULL, audit_cmds, 0, "verify and inspect the HMAC audit chain", NULL,
	 "The audit chain (.bernstein/audit/YYYY-MM-DD.jsonl) records what bernstein did,\n"
	 "each record MACed and chained to the previous one; see docs/audit-log.md.\n"},
	{"cancel", cmd_cancel, NULL, 0, cmd_cancel_summary, cmd_cancel_usage, cmd_cancel_help},
	{"config", NULL, config_cmds, 0, "check and show bernstein.yaml", NULL,
	 "bernstein.yaml at the repository root configures runs: default adapter and\n"
	 "model, parallelism, timeouts, gates, merge policy, mode profiles and the\n"
	 "per-role model policy; every key is optional. See docs/configuration.md.\n"},
	{"cost", cmd_cost, NULL, 0, cmd_cost_summary, cmd_cost_usage, cmd_cost_help},
	{"demo", cmd_demo, NULL, CMD_LOAD_LIBS, cmd_demo_summary, cmd_demo_usage, cmd_demo_help},
	{"diff", cmd_diff, NULL, 0, cmd_diff_summary, cmd_diff_usage, cmd_diff_help},
	{"doctor", cmd_doctor, NULL, 0,
	 "check the usable agents, this repository and the host, with fixes", doctor_usage,
	 doctor_help},
	{"help", cmd_help, NULL, 0, "show help for a command", "[<command>...]",
	 "Prints the same text as 'bernstein <command> -h'.\n"},
	{"hook-post", cmd_hook_post, NULL, CMD_HIDDEN,
	 "post an agent hook's payload to its session", hook_post_usage, hook_post_help},
	{"init", cmd_init, NULL, 0, "write a commented bernstein.yaml and ignore .bernstein/",
	 init_usage, init_help},
	{"integrations", NULL, integrations_cmds, 0,
	 "what each agent is good for, how to install it", NULL,
	 "The agents bernstein can drive, one line of copy each (catalog/use-cases.yaml).\n"},
	{"logs", cmd_logs, NULL, 0, cmd_logs_summary, cmd_logs_usage, cmd_logs_help},
	{"mcp", cmd_mcp, NULL, 0, cmd_mcp_summary, cmd_mcp_usage, cmd_mcp_help},
	{"mock-agent", cmd_mock_agent, NULL, CMD_HIDDEN, "the mock adapter's offline agent",
	 mock_agent_usage, mock_agent_help},
	{"netproxy", cmd_netproxy, NULL, CMD_HIDDEN,
	 "run a sandbox's command behind an allow-listing HTTP proxy", netproxy_usage,
	 netproxy_help},
	{"onboard", NULL, onboard_cmds, 0, onboard_summary, NULL, onboard_help},
	{"plan", NULL, plan_cmds, 0, "check and show plan files", NULL,
	 "A plan (plan.yaml) lists the tasks of a run: title, prompt, role, requires,\n"
	 "dependencies, gates; Bernstein's stages/steps form works too. See\n"
	 "docs/plans.md.\n"},
	{"profiles", NULL, profiles_cmds, 0, "validate capability profiles and print their hashes",
	 NULL,
	 "A capability profile declares an agent CLI as data: how it is invoked, its\n"
	 "strategy and capabilities, and how resume, dangerous mode and endpoints are\n"
	 "spelled; see docs/profile-format.md.\n"},
	{"reject", cmd_reject, NULL, CMD_LOAD_LIBS, cmd_reject_summary, cmd_reject_usage,
	 cmd_reject_help},
	{"resume", cmd_resume, NULL, CMD_LOAD_LIBS, cmd_resume_summary, cmd_resume_usage,
	 cmd_resume_help},
	{"retry", cmd_retry, NULL, CMD_LOAD_LIBS, cmd_retry_summary, cmd_retry_usage,
	 cmd_retry_help},
	{"route", cmd_route, NULL, 0, "pick the adapter for a task's capability requirements",
	 "[--requires capability:AXIS[=VALUE]]... [--candidates A,B] [--audit] [--run-id ID] [--json]",
	 "Selects the first adapter whose capability profile satisfies every requirement,\n"
	 "in a deterministic order: the --candidates list as given; else the adapters of\n"
	 "the preference: list of the repository's bernstein.yaml first, then catalogue\n"
	 "order (adapter names in byte order; only adapters with a capability profile).\n"
	 "A stronger capability satisfies a weaker one. When nothing satisfies the task\n"
	 "it never falls back: it prints the refusal receipt (every candidate with its\n"
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
	 "  --candidates A,B   consider only these adapters, in this order (repeatable);\n"
	 "                     bernstein.yaml is then not read\n"
	 "  --audit            anchor the decision in the audit chain (.bernstein/audit):\n"
	 "                     adapter.capability_selection or adapter.capability_refusal;\n"
	 "                     the key is created on first use (see 'bernstein audit key')\n"
	 "  --run-id ID        the run the decision is for (the record's resource_id)\n"
	 "  --json             {\"selected\": true, \"adapter\", \"profile_hash\", ...} or\n"
	 "                     {\"selected\": false, \"receipt\", \"receipt_hash\", ...};\n"
	 "                     \"preference\" is {\"adapters\", \"source\"} or null\n"
	 "\n"
	 "Exit: 0 selected, 6 refused (receipt printed), 2 usage or unknown adapter,\n"
	 "3 invalid requirement, catalogue or bernstein.yaml (an unknown adapter in its\n"
	 "preference too), 4 audit key or I/O problem (bernstein.yaml unreadable), 5 the\n"
	 "chain does not match its state.\n"},
	{"run", cmd_run, NULL, CMD_LOAD_LIBS, cmd_run_summary, cmd_run_usage, cmd_run_help},
	{"runner", cmd_runner_exec, NULL, 0, RUNNER_SUMMARY, RUNNER_USAGE, RUNNER_HELP},
	{"serve", cmd_serve, NULL, 0, cmd_serve_summary, cmd_serve_usage, cmd_serve_help},
	{"shim", cmd_shim, NULL, 0, SHIM_SUMMARY, SHIM_USAGE, SHIM_HELP},
	{"spawn", cmd_spawn, NULL, CMD_LOAD_LIBS,
	 "run one agent headless and report its typed outcome", spawn_usage, spawn_help},
	{"status", cmd_status, NULL, 0, cmd_status_summary, cmd_status_usage, cmd_status_help},
	{"stop", cmd_stop, NULL, 0, cmd_stop_summary, cmd_stop_usage, cmd_stop_help},
	{"version", cmd_version, NULL, 0, "print the version", "",
	 "Prints 'bernstein VERSION', or {\"name\": ..., \"version\": ...} with --json.\n"},
	{"worktrees", NULL, worktrees_cmds, 0, "list and remove the worktrees of finished tasks",
	 NULL,
	 "The worktrees (or clones) and branches bernstein/SESSION of the tasks of every\n"
	 "run; 'gc' removes those no longer needed. See docs/worktrees.md.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
