/* bernstein cancel | stop | retry | add-task: requests from another shell to
 * the latest run (docs/runs.md, "Controlling a live run"). A live run gets
 * them through its control channel (orch/control.h); a run that is not
 * live, where it makes sense, directly under the run lock, and a retried or
 * added task is then resumed in the foreground. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/run-session.h"
#include "orch/control.h"
#include "orch/plan.h"
#include "orch/run.h"
#include "orch/state.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define CALL_TIMEOUT_MS 30000
#define CANCEL_WAIT_S	120
#define CANCEL_POLL_NS	50000000L

enum {
	OPT_FORCE = CLI_CTL_OWN,
	OPT_FRESH,
	OPT_PROMPT,
	OPT_TITLE,
	OPT_ADAPTER,
	OPT_ROLE,
	OPT_DEPENDS_ON,
	OPT_ID,
};

/* The exit code of a refusal's kind (docs/exit-codes.md). */
static int kind_exit(const char *kind)
{
	if (!kind || strcmp(kind, CONTROL_KIND_STATE) == 0)
		return BEXIT_FAILED;
	if (strcmp(kind, CONTROL_KIND_NOT_FOUND) == 0 || strcmp(kind, CONTROL_KIND_USAGE) == 0)
		return BEXIT_USAGE;
	if (strcmp(kind, CONTROL_KIND_INVALID) == 0)
		return BEXIT_INVALID;
	return BEXIT_ENV;
}

/* The latest run: its id and the repository (the caller frees both). 0 or
 * the exit code (printed). */
static int latest_run(struct cli_ctx *ctx, char **ret_repo, char **ret_run, bool *ret_running)
{
	struct session s;
	struct run_row run = RUN_ROW_INIT;
	struct diag d;
	int code, r;

	code = session_open(&s, ctx, true, false, NULL);
	if (code) {
		session_release(&s);
		return code;
	}
	run_row_init(&run);
	diag_clear(&d);
	r = state_run_latest(s.st, &run, &d);
	if (r == -ENOENT)
		code = cli_error(ctx, BEXIT_USAGE, "no runs in '%s' yet", s.repo);
	else if (r < 0)
		code = cli_diag(ctx, r == -EBADMSG ? BEXIT_INVALID : BEXIT_ENV, &d);
	if (!code) {
		*ret_repo = xstrdup(s.repo);
		*ret_run = xstrdup(run.id);
		*ret_running = run.state == RUN_RUNNING;
	}
	run_row_release(&run);
	session_release(&s);
	return code;
}

static void print_tasks_text(struct cli_ctx *ctx, const json_t *reply)
{
	const json_t *tasks = json_object_get(reply, "tasks"), *t;
	size_t i;

	json_array_foreach(tasks, i, t)
	{
		const char *msg = json_string_value(json_object_get(t, "message"));

		(void)fprintf(ctx->out, "%s: %s%s%s%s\n",
			      json_string_value(json_object_get(t, "id")),
			      json_string_value(json_object_get(t, "state")), msg ? " (" : "",
			      msg ? msg : "", msg ? ")" : "");
	}
}

/* Print a reply and return its exit code. */
static int finish_reply(struct cli_ctx *ctx, json_t *reply)
{
	const char *kind = json_string_value(json_object_get(reply, "kind"));
	int code = json_is_true(json_object_get(reply, "ok")) ? 0 : kind_exit(kind);

	if (ctx->json) {
		cli_jset(reply, "exit_code", json_integer(code));
		print_json_line(ctx, json_incref(reply));
	} else if (code) {
		(void)cli_error(ctx, code, "%s",
				json_string_value(json_object_get(reply, "error"))
					? json_string_value(json_object_get(reply, "error"))
					: "refused");
	} else {
		print_tasks_text(ctx, reply);
	}
	return code;
}

/* After a cancel of running tasks: wait (polling state.db) until none of
 * the reply's tasks is "cancelling" any more; the reply is updated. */
static void wait_cancelled(const char *repo, const char *run_id, json_t *reply)
{
	json_t *tasks = json_object_get(reply, "tasks"), *t;
	char *db = NULL;
	struct state *st = NULL;
	time_t end = time(NULL) + CANCEL_WAIT_S;
	size_t i;
	bool left = true;

	{
		size_t n = strlen(repo) + sizeof("/" ORCH_STATE_DB);

		db = xmalloc(n);
		(void)snprintf(db, n, "%s/%s", repo, ORCH_STATE_DB);
	}
	if (state_open(db, STATE_READONLY, &st, NULL) < 0)
		goto out;
	while (left && time(NULL) < end) {
		struct timespec ts = {.tv_sec = 0, .tv_nsec = CANCEL_POLL_NS};
		struct run_row run = RUN_ROW_INIT;
		bool gone;

		left = false;
		json_array_foreach(tasks, i, t)
		{
			struct task_row row = TASK_ROW_INIT;
			const char *id = json_string_value(json_object_get(t, "id"));

			if (strcmp(json_string_value(json_object_get(t, "state")), "cancelling") !=
			    0)
				continue;
			task_row_init(&row);
			if (state_task_get(st, run_id, id, &row, NULL) == 0 &&
			    row.state != TASK_RUNNING && row.state != TASK_PENDING &&
			    row.state != TASK_COMPLETING)
				json_object_set_new(t, "state",
						    json_string(task_state_to_string(row.state)));
			else
				left = true;
			task_row_release(&row);
		}
		if (!left)
			break;
		/* a run that died meanwhile will not cancel anything (asked after
		 * the tasks: a run whose last task was cancelled ends at once) */
		run_row_init(&run);
		gone = state_run_get(st, run_id, &run, NULL) < 0 || run.supervisor_pid <= 0 ||
		       (kill((pid_t)run.supervisor_pid, 0) < 0 && errno == ESRCH);
		run_row_release(&run);
		if (gone)
			break;
		(void)nanosleep(&ts, NULL);
	}
out:
	state_close(st);
	free(db);
}

/* The run resumed in the background, as `bernstein resume --detach RUN`
 * (its output, its exit code): what --detach asks of a run that is not
 * live once the change is in state.db. */
static int resume_detached(struct cli_ctx *ctx, const char *run_id, const char *key_file)
{
	char *argv[6] = {NULL};
	int argc = 0, code, i;

	argv[argc++] = xstrdup("resume");
	argv[argc++] = xstrdup("--detach");
	if (key_file) {
		argv[argc++] = xstrdup("--key-file");
		argv[argc++] = xstrdup(key_file);
	}
	argv[argc++] = xstrdup(run_id);
	(void)fflush(ctx->out);
	(void)fflush(ctx->err);
	code = cmd_resume(argc, argv, ctx);
	for (i = 0; i < argc; i++)
		free(argv[i]);
	return code;
}

/* Carry out req on the latest run: through its channel when it is live,
 * else (cancel, retry, add_task, approve, reject) under the run lock, then
 * resumed (retry, add_task, approve, reject): here in the foreground, or
 * with detach in the background. */
int cli_control_request(struct cli_ctx *ctx, const struct control_request *req,
			const char *key_file, bool wait, bool detach)
{
	char *repo = NULL, *run_id = NULL, *path = NULL;
	struct control_peer who = {.uid = getuid(), .pid = getpid()};
	struct resume_plan rp = {0};
	struct orch_summary sum;
	struct session s;
	json_t *reply = NULL;
	bool running = false, opened = false;
	struct diag d;
	int code, r;

	code = latest_run(ctx, &repo, &run_id, &running);
	if (code)
		goto out;
	path = control_socket_path(repo, run_id);
	diag_clear(&d);
	r = control_call(path, req, CALL_TIMEOUT_MS, &reply, &d);
	if (r == 0) {
		if (req->op == CONTROL_CANCEL && wait && json_is_true(json_object_get(reply, "ok")))
			wait_cancelled(repo, run_id, reply);
		code = finish_reply(ctx, reply);
		goto out;
	}
	if (r != -ENOENT && r != -ECONNREFUSED) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	/* not live */
	if (req->op == CONTROL_STOP) {
		code = cli_error(ctx, BEXIT_FAILED, "run '%s' is not running: nothing to stop",
				 run_id);
		goto out;
	}
	code = session_open(&s, ctx, false, true, key_file);
	opened = true;
	if (code)
		goto out;
	hooks_attach(&s);
	if (!ctx->json)
		(void)fprintf(ctx->out, "run %s is not running: changed in state.db\n", run_id);
	reply = json_object();
	diag_clear(&d);
	r = orch_control_offline(&s.env, run_id, req, &who, reply, &d);
	if (r < 0) {
		code = cli_diag(ctx, exit_for(r), &d);
		goto out;
	}
	code = finish_reply(ctx, reply);
	if (code || (req->op != CONTROL_RETRY && req->op != CONTROL_ADD_TASK &&
		     req->op != CONTROL_APPROVE && req->op != CONTROL_REJECT))
		goto out;
	if (detach) {
		/* the run lock released first: the resume takes it */
		session_release(&s);
		opened = false;
		code = resume_detached(ctx, run_id, key_file);
		goto out;
	}
	/* the run has work again: a resume, as `bernstein resume` */
	r = orch_resume_prepare(&s.env, run_id, true, &rp, &d);
	if (r < 0) {
		code = cli_diag(ctx, r == -ENOENT ? BEXIT_USAGE : BEXIT_INVALID, &d);
		goto out;
	}
	print_resume_plan(ctx, &rp, false);
	r = orch_run_execute(&s.env, rp.run_id, &sum, &d);
	if (r < 0) {
		code = cli_diag(ctx, exit_for(r), &d);
		goto out;
	}
	print_summary(&s, &sum);
	code = summary_exit(&sum);
	session_record_exit(&s, rp.run_id, code);
out:
	resume_plan_release(&rp);
	if (opened)
		session_release(&s);
	json_decref(reply);
	free(path);
	free(repo);
	free(run_id);
	return code;
}

int cli_control_ids(struct cli_ctx *ctx, int argc, char **argv, struct control_request *req)
{
	int i;

	if (optind >= argc)
		return cli_usage_error(ctx, "missing the task id");
	if (argc - optind > CONTROL_TASKS_MAX)
		return cli_usage_error(ctx, "at most %d tasks at once", CONTROL_TASKS_MAX);
	req->tasks = xcalloc((size_t)(argc - optind) + 1, sizeof(*req->tasks));
	for (i = optind; i < argc; i++) {
		size_t j;

		if (!plan_id_valid(argv[i]))
			return cli_usage_error(ctx, "'%s' is not a task id", argv[i]);
		for (j = 0; j < req->n_tasks; j++)
			if (strcmp(req->tasks[j], argv[i]) == 0)
				return cli_usage_error(ctx, "task '%s' given twice", argv[i]);
		req->tasks[req->n_tasks++] = xstrdup(argv[i]);
	}
	return 0;
}

int cli_control_args(struct cli_ctx *ctx, int argc, char **argv, const struct option *opts,
		     cli_control_opt_fn *own, bool ids, struct control_request *req,
		     struct cli_control_args *ret)
{
	struct cli_control_args a = {.wait = true};
	int c, code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case CLI_CTL_JSON:
			ctx->json = true;
			break;
		case CLI_CTL_KEY_FILE:
			a.key_file = optarg;
			break;
		case CLI_CTL_DETACH:
			a.detach = true;
			break;
		case CLI_CTL_NO_WAIT:
			a.wait = false;
			break;
		default:
			if (c < CLI_CTL_OWN || !own)
				return cli_option_error(ctx, argv, opts, "");
			code = own(ctx, c, optarg, req);
			if (code)
				return code;
		}
	}
	if (ids) {
		code = cli_control_ids(ctx, argc, argv, req);
		if (code)
			return code;
	} else if (optind < argc) {
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	}
	*ret = a;
	return CLI_CONTINUE;
}

/* ---- bernstein cancel ---- */

static const struct option cancel_options[] = {
	{"json", no_argument, NULL, CLI_CTL_JSON},
	{"no-wait", no_argument, NULL, CLI_CTL_NO_WAIT},
	{"key-file", required_argument, NULL, CLI_CTL_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

int cmd_cancel(int argc, char **argv, struct cli_ctx *ctx)
{
	struct control_request req;
	struct cli_control_args a;
	int code;

	control_request_init(&req);
	req.op = CONTROL_CANCEL;
	code = cli_control_args(ctx, argc, argv, cancel_options, NULL, true, &req, &a);
	if (code == CLI_CONTINUE)
		code = cli_control_request(ctx, &req, a.key_file, a.wait, false);
	control_request_release(&req);
	return code;
}

const char cmd_cancel_summary[] = "cancel tasks of the latest run";
const char cmd_cancel_usage[] = "TASK... [--no-wait] [--json] [--key-file FILE]";
const char cmd_cancel_help[] =
	"Cancels tasks of the latest run. In a live run (one started by 'bernstein run'\n"
	"or 'resume' in another shell) a running task's agent is stopped with its whole\n"
	"process tree (SIGTERM, the kill grace, SIGKILL), a gate of a task being\n"
	"completed likewise; the task becomes 'cancelled' and the tasks that depend on\n"
	"it 'blocked'. Its worktree and branch are kept ('bernstein retry TASK' runs it\n"
	"again). A pending, blocked or interrupted task is cancelled at once, also when\n"
	"the run is not live (then in state.db, under the run lock). A merging task, or\n"
	"one that has finished, is not cancelled. Either every task named is cancelled\n"
	"or none is. The request is audited (control.request: who, what).\n"
	"\n"
	"options:\n"
	"  --no-wait          do not wait for the agents to be gone (their tasks are\n"
	"                     then reported 'cancelling')\n"
	"  --json             the run's reply as one JSON object: {\"ok\", \"run\", \"tasks\":\n"
	"                     [{\"id\", \"state\"}], \"exit_code\"} or {\"ok\": false, \"kind\",\n"
	"                     \"error\"}\n"
	"  --key-file FILE    the audit key (a run that is not live is changed here)\n"
	"\n"
	"Exit: 0 cancelled, 1 a task is in a state that cannot be cancelled (nothing\n"
	"changed), 2 usage, no run or no such task, 4 the run refused the request (not\n"
	"your run, or asked from inside it) or I/O, 5 the audit chain is broken.\n";

/* ---- bernstein stop ---- */

static const struct option stop_options[] = {
	{"force", no_argument, NULL, OPT_FORCE},
	{"json", no_argument, NULL, CLI_CTL_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int stop_opt(struct cli_ctx *ctx, int opt, const char *arg, struct control_request *req)
{
	(void)ctx;
	(void)arg;
	if (opt == OPT_FORCE)
		req->force = true;
	return 0;
}

int cmd_stop(int argc, char **argv, struct cli_ctx *ctx)
{
	struct control_request req;
	struct cli_control_args a;
	int code;

	control_request_init(&req);
	req.op = CONTROL_STOP;
	code = cli_control_args(ctx, argc, argv, stop_options, stop_opt, false, &req, &a);
	if (code != CLI_CONTINUE)
		goto out;
	code = cli_control_request(ctx, &req, NULL, false, false);
	if (code == 0 && !ctx->json)
		(void)fprintf(
			ctx->out, "%s\n",
			req.force
				? "the run is stopping: every agent is being stopped"
				: "the run is draining: no new task starts; the running ones finish");
out:
	control_request_release(&req);
	return code;
}

const char cmd_stop_summary[] = "stop the live run: drain it, or --force";
const char cmd_stop_usage[] = "[--force] [--json]";
const char cmd_stop_help[] =
	"Drains the live run of this repository: no new task starts, the running ones\n"
	"(their agents, gates and merges) finish, then the run ends with its usual\n"
	"summary; the tasks it did not start stay 'pending' and 'bernstein resume' runs\n"
	"them. With --force the run stops as on Ctrl-C: every agent is stopped (SIGTERM,\n"
	"the grace, SIGKILL), its task 'interrupted' (resume continues it), and the run\n"
	"exits 130. Returns once the run has the request, not when it has ended:\n"
	"'bernstein attach' follows it to its end, 'bernstein status' shows where it\n"
	"is. Audited (control.request).\n"
	"\n"
	"options:\n"
	"  --force            stop every agent now (as Ctrl-C)\n"
	"  --json             the run's reply as one JSON object\n"
	"\n"
	"Exit: 0 the run has the request, 1 no run is live, 2 usage or no run, 4 the\n"
	"run refused the request (not your run, or asked from inside it) or I/O.\n";

/* ---- bernstein retry ---- */

static const struct option retry_options[] = {
	{"detach", no_argument, NULL, CLI_CTL_DETACH},
	{"fresh", no_argument, NULL, OPT_FRESH},
	{"json", no_argument, NULL, CLI_CTL_JSON},
	{"key-file", required_argument, NULL, CLI_CTL_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int retry_opt(struct cli_ctx *ctx, int opt, const char *arg, struct control_request *req)
{
	(void)ctx;
	(void)arg;
	if (opt == OPT_FRESH)
		req->fresh = true;
	return 0;
}

int cmd_retry(int argc, char **argv, struct cli_ctx *ctx)
{
	struct control_request req;
	struct cli_control_args a;
	int code;

	control_request_init(&req);
	req.op = CONTROL_RETRY;
	code = cli_control_args(ctx, argc, argv, retry_options, retry_opt, true, &req, &a);
	if (code == CLI_CONTINUE)
		code = cli_control_request(ctx, &req, a.key_file, false, a.detach);
	control_request_release(&req);
	return code;
}

const char cmd_retry_summary[] = "give failed or cancelled tasks of the latest run a new attempt";
const char cmd_retry_usage[] = "TASK... [--fresh] [--detach] [--json] [--key-file FILE]";
const char cmd_retry_help[] =
	"A failed, conflicted, cancelled or interrupted task of the latest run goes back\n"
	"to 'pending' and gets a new attempt, which continues the last one as resume\n"
	"does (the agent's own session where the adapter can resume, else a fresh one\n"
	"with the recovered context) in the same worktree and branch; the tasks blocked\n"
	"on it are pending again. With --fresh its worktree (or clone) and branch are\n"
	"removed first and the attempt starts anew from the base branch as it is then.\n"
	"A live run starts it as soon as a slot is free. When the run is not live, the\n"
	"change is made in state.db under the run lock and the run is resumed here, in\n"
	"the foreground, as 'bernstein resume' (its output, its exit code), or with\n"
	"--detach in the background, as 'bernstein resume --detach'. Audited\n"
	"(control.request, then task.transition 'retried').\n"
	"\n"
	"options:\n"
	"  --fresh            a new worktree and branch instead of the task's own\n"
	"  --detach           a run that is not live is resumed in the background\n"
	"  --json             the run's reply as one JSON object (then the resume's lines)\n"
	"  --key-file FILE    the audit key\n"
	"\n"
	"Exit (live run): 0 retried, 1 a task is not failed, conflicted, cancelled or\n"
	"interrupted (nothing changed), 2 usage, no run or no such task, 4 refused or\n"
	"I/O, 5 the audit chain is broken. Not live: as 'bernstein resume' (with\n"
	"--detach: as 'bernstein resume --detach').\n";

/* ---- bernstein add-task ---- */

static const struct option add_options[] = {
	{"prompt", required_argument, NULL, OPT_PROMPT},
	{"title", required_argument, NULL, OPT_TITLE},
	{"id", required_argument, NULL, OPT_ID},
	{"adapter", required_argument, NULL, OPT_ADAPTER},
	{"role", required_argument, NULL, OPT_ROLE},
	{"depends-on", required_argument, NULL, OPT_DEPENDS_ON},
	{"detach", no_argument, NULL, CLI_CTL_DETACH},
	{"json", no_argument, NULL, CLI_CTL_JSON},
	{"key-file", required_argument, NULL, CLI_CTL_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int add_opt(struct cli_ctx *ctx, char **slot, const char *name, const char *v)
{
	if (*slot)
		return cli_usage_error(ctx, "--%s given twice", name);
	if (!*v)
		return cli_usage_error(ctx, "--%s: empty", name);
	*slot = xstrdup(v);
	return 0;
}

static int add_dep(struct cli_ctx *ctx, struct control_new_task *t, const char *id)
{
	size_t i;

	if (!plan_id_valid(id))
		return cli_usage_error(ctx, "--depends-on: '%s' is not a task id", id);
	for (i = 0; i < t->n_depends_on; i++)
		if (strcmp(t->depends_on[i], id) == 0)
			return cli_usage_error(ctx, "--depends-on: '%s' given twice", id);
	if (t->n_depends_on >= CONTROL_TASKS_MAX)
		return cli_usage_error(ctx, "--depends-on: at most %d", CONTROL_TASKS_MAX);
	t->depends_on = xrealloc(t->depends_on, (t->n_depends_on + 2) * sizeof(char *));
	t->depends_on[t->n_depends_on++] = xstrdup(id);
	t->depends_on[t->n_depends_on] = NULL;
	return 0;
}

static int add_task_opt(struct cli_ctx *ctx, int opt, const char *arg, struct control_request *req)
{
	struct control_new_task *t = &req->add;
	int code;

	switch (opt) {
	case OPT_PROMPT:
		return add_opt(ctx, &t->prompt, "prompt", arg);
	case OPT_TITLE:
		return add_opt(ctx, &t->title, "title", arg);
	case OPT_ID:
		code = add_opt(ctx, &t->id, "id", arg);
		if (!code && !plan_id_valid(arg))
			code = cli_usage_error(ctx, "--id: '%s' is not a task id", arg);
		return code;
	case OPT_ADAPTER:
		return add_opt(ctx, &t->adapter, "adapter", arg);
	case OPT_ROLE:
		return add_opt(ctx, &t->role, "role", arg);
	case OPT_DEPENDS_ON:
		return add_dep(ctx, t, arg);
	default:
		return 0;
	}
}

int cmd_add_task(int argc, char **argv, struct cli_ctx *ctx)
{
	struct control_request req;
	struct cli_control_args a;
	int code;

	control_request_init(&req);
	req.op = CONTROL_ADD_TASK;
	code = cli_control_args(ctx, argc, argv, add_options, add_task_opt, false, &req, &a);
	if (code != CLI_CONTINUE)
		goto out;
	if (!req.add.prompt) {
		code = cli_usage_error(ctx, "missing --prompt");
		goto out;
	}
	if (strlen(req.add.prompt) >= CONTROL_LINE_MAX / 2) {
		code = cli_usage_error(ctx, "--prompt: longer than %zu bytes",
				       CONTROL_LINE_MAX / 2);
		goto out;
	}
	code = cli_control_request(ctx, &req, a.key_file, false, a.detach);
out:
	control_request_release(&req);
	return code;
}

const char cmd_add_task_summary[] = "add a task to the latest run";
const char cmd_add_task_usage[] =
	"--prompt P [--title T] [--id ID] [--adapter A] [--role R] [--depends-on ID]... [--detach] [--json] [--key-file FILE]";
const char cmd_add_task_help[] =
	"Adds a task to the latest run, checked as a task of a plan file is (the same\n"
	"loader: role, adapter name, title, id), its dependencies against the run's\n"
	"tasks. Its id is --id, else a slug of the title (the first line of the prompt\n"
	"when there is no --title), with -2, -3... when taken. A live run starts it when\n"
	"its dependencies are done and a slot is free (at most 64 tasks are added to one\n"
	"execution). When the run is not live, the task is recorded under the run lock\n"
	"and the run resumed here in the foreground, as 'bernstein resume' (with\n"
	"--detach in the background, as 'bernstein resume --detach'). Audited\n"
	"(control.request, task.added).\n"
	"\n"
	"options:\n"
	"  --prompt P         what the agent is asked (required)\n"
	"  --title T          the title (unique in the run's plan)\n"
	"  --id ID            the task id ([a-z0-9][a-z0-9-]{0,63}, unique in the run)\n"
	"  --adapter A        the agent (else routing, as for a plan task)\n"
	"  --role R           the role (default backend)\n"
	"  --depends-on ID    a task of the run it waits for (repeatable)\n"
	"  --detach           a run that is not live is resumed in the background\n"
	"  --json             the run's reply as one JSON object\n"
	"  --key-file FILE    the audit key\n"
	"\n"
	"Exit (live run): 0 added, 2 usage or no run, 3 the task is invalid (an unknown\n"
	"role, a dependency the run does not have, an id taken), 4 refused or I/O, 5 the\n"
	"audit chain is broken. Not live: as 'bernstein resume' (with --detach: as\n"
	"'bernstein resume --detach').\n";
