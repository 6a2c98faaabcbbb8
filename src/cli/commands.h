/* Every command function and group table, for the table in commands.c. */
#ifndef BERNSTEIN_CLI_COMMANDS_H
#define BERNSTEIN_CLI_COMMANDS_H

#include "cli/cli.h"

cmd_fn cmd_adapters_contract_check;
cmd_fn cmd_doctor;
extern const char doctor_usage[], doctor_help[];
cmd_fn cmd_help;
cmd_fn cmd_hook_post;
extern const char hook_post_usage[], hook_post_help[];
cmd_fn cmd_init;
cmd_fn cmd_mock_agent;
extern const char mock_agent_usage[], mock_agent_help[];
extern const char init_usage[], init_help[];
cmd_fn cmd_netproxy;
cmd_fn cmd_agent_relay, cmd_agent_exec;
extern const char agent_relay_usage[], agent_relay_help[], agent_exec_usage[], agent_exec_help[];
extern const char netproxy_usage[], netproxy_help[];
cmd_fn cmd_route;
cmd_fn cmd_runner;	/* in the bernstein-runner executable */
cmd_fn cmd_runner_exec; /* bernstein runner: execs bernstein-runner */
cmd_fn cmd_serve;	/* bernstein serve: execs bernstein-serve (cmd-serve.c) */
extern const char cmd_serve_summary[], cmd_serve_usage[], cmd_serve_help[];
cmd_fn cmd_shim;
cmd_fn cmd_spawn;
extern const char spawn_usage[], spawn_help[];
cmd_fn cmd_version;
/* cmd-control.c */
cmd_fn cmd_add_task, cmd_cancel, cmd_retry, cmd_stop;
extern const char cmd_add_task_summary[], cmd_add_task_usage[], cmd_add_task_help[];
extern const char cmd_cancel_summary[], cmd_cancel_usage[], cmd_cancel_help[];
extern const char cmd_retry_summary[], cmd_retry_usage[], cmd_retry_help[];
extern const char cmd_stop_summary[], cmd_stop_usage[], cmd_stop_help[];
/* cmd-mcp.c */
cmd_fn cmd_mcp;
extern const char cmd_mcp_summary[], cmd_mcp_usage[], cmd_mcp_help[];
/* cmd-attach.c */
cmd_fn cmd_attach;
extern const char cmd_attach_summary[], cmd_attach_usage[], cmd_attach_help[];
struct control_request;
/* Carry out req on the latest run: through its channel when it is live,
 * else under the run lock, then resumed (retry, add-task, approve,
 * reject): in the foreground, or with detach as `resume --detach`. The
 * exit code. */
/* The task ids of argv[optind..] into req->tasks, checked (ids, at most
 * CONTROL_TASKS_MAX, none twice) before anything is sent: 0, or the exit
 * code of the usage error it printed (2). */
int cli_control_ids(struct cli_ctx *ctx, int argc, char **argv, struct control_request *req);
int cli_control_request(struct cli_ctx *ctx, const struct control_request *req,
			const char *key_file, bool wait, bool detach);
/* The options the control commands (cancel, stop, retry, add-task,
 * approve, reject) share, parsed by cli_control_args(); a command's own
 * options take codes from CLI_CTL_OWN up. */
enum {
	CLI_CTL_JSON = 256,
	CLI_CTL_KEY_FILE,
	CLI_CTL_DETACH,
	CLI_CTL_NO_WAIT,
	CLI_CTL_OWN,
};
struct cli_control_args {
	const char *key_file; /* --key-file FILE (NULL: none) */
	bool detach;	      /* --detach */
	bool wait;	      /* true unless --no-wait */
};
/* A command's own option opt (its value arg, NULL for a flag) into req: 0,
 * or the exit code of the error it printed. */
typedef int cli_control_opt_fn(struct cli_ctx *ctx, int opt, const char *arg,
			       struct control_request *req);
/* cli_control_args() went through: the command goes on. */
#define CLI_CONTINUE (-1)
struct option;
/* A control command's argv against its option table opts: -h/--help,
 * --json (ctx->json), --key-file, --detach and --no-wait here, any other
 * option of opts to own (NULL: none); the first problem ends it. Then, with
 * ids, the task ids into req (cli_control_ids()), else no operand at all.
 * CLI_CONTINUE with *ret filled, or the exit code the command ends with (0
 * after the help, the code of the usage error it printed). */
int cli_control_args(struct cli_ctx *ctx, int argc, char **argv, const struct option *opts,
		     cli_control_opt_fn *own, bool ids, struct control_request *req,
		     struct cli_control_args *ret);
/* cmd-review.c */
cmd_fn cmd_approve, cmd_diff, cmd_reject;
extern const char cmd_approve_summary[], cmd_approve_usage[], cmd_approve_help[];
extern const char cmd_diff_summary[], cmd_diff_usage[], cmd_diff_help[];
extern const char cmd_reject_summary[], cmd_reject_usage[], cmd_reject_help[];
/* cmd-cost.c */
cmd_fn cmd_cost;
extern const char cmd_cost_summary[], cmd_cost_usage[], cmd_cost_help[];
/* cmd-run.c */
cmd_fn cmd_demo, cmd_logs, cmd_resume, cmd_run, cmd_status;
extern const char cmd_demo_summary[], cmd_demo_usage[], cmd_demo_help[];
extern const char cmd_logs_summary[], cmd_logs_usage[], cmd_logs_help[];
extern const char cmd_resume_summary[], cmd_resume_usage[], cmd_resume_help[];
extern const char cmd_run_summary[], cmd_run_usage[], cmd_run_help[];
extern const char cmd_status_summary[], cmd_status_usage[], cmd_status_help[];

extern const struct cmd adapters_cmds[];
extern const struct cmd audit_cmds[];
extern const struct cmd config_cmds[];
extern const struct cmd integrations_cmds[];
extern const struct cmd plan_cmds[];
int cmd_plan_generate(int argc, char **argv, struct cli_ctx *ctx);
extern const struct cmd onboard_cmds[];
extern const char onboard_summary[], onboard_help[];
extern const struct cmd profiles_cmds[];
extern const struct cmd worktrees_cmds[]; /* cmd-worktrees.c */

#endif
