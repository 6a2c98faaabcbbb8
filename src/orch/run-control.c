/* Requests from another shell to a run (orch/control.h, docs/runs.md,
 * "Controlling a live run"): cancel, stop, retry, add-task, carried out
 * between two events of the loop (control_watch()), or on a run that is
 * not live with the run lock held (orch_control_offline()). Every change
 * goes through run_transition(), as any other. */
#include "orch/run-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orch/control.h"
#include "orch/plan.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

static json_t *task_reply(const struct otask *t, const char *state, const char *msg)
{
	json_t *o = json_object();

	json_obj_set(o, "id", json_str_lossy(t->row.id));
	json_obj_set(o, "state",
		     json_str_lossy(state ? state : task_state_to_string(t->row.state)));
	if (msg)
		json_obj_set(o, "message", json_str_lossy(msg));
	return o;
}

static void who_reason(const struct control_peer *who, const char *what, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s (uid %ld, pid %ld)", what, (long)who->uid, (long)who->pid);
}

/* t's cancel is done: its agent, gate or worktree command has ended. */
void run_control_cancelled(struct loop *l, struct otask *t)
{
	/* the reason cancel_one() wrote: a copy, since the transition
	 * replaces t->row.reason */
	char *why = xstrdup(t->row.reason ? t->row.reason : "cancelled");

	t->cancel_req = false;
	t->live = false;
	if (t->row.state == TASK_REBASING || t->row.state == TASK_RESOLVING)
		run_conflict_put_back(l, t); /* the branch as it was, no merge half made */
	(void)run_transition(l, t, TASK_EV_CANCELLED, why);
	free(why);
}

/* Why t cannot be cancelled now, or NULL. */
static const char *cancel_refusal(const struct loop *l, const struct otask *t)
{
	switch (t->row.state) {
	case TASK_PENDING:
	case TASK_BLOCKED:
	case TASK_INTERRUPTED:
	case TASK_REVIEW:
		return NULL;
	case TASK_RUNNING:
	case TASK_COMPLETING:
	case TASK_REBASING:
	case TASK_RESOLVING:
		return l->sv || t->live || t->gate_live
			       ? NULL
			       : "the run was killed while it ran: 'bernstein resume' it first";
	case TASK_MERGING:
		return "it is being merged";
	case TASK_CANCELLED:
		return "it is cancelled already";
	case TASK_DONE:
	case TASK_NO_CHANGES:
	case TASK_FAILED:
	case TASK_REFUSED:
	case TASK_CONFLICT:
	case _TASK_STATE_MAX:
	case _TASK_STATE_INVALID:
	default:
		return "it has finished";
	}
}

static void cancel_one(struct loop *l, struct otask *t, const char *reason, json_t *tasks)
{
	run_task_warm(l, t); /* an ended task's row, read back */
	run_set_str(&t->row.reason, reason);
	if (t->cancel_req) {
		(void)json_array_append_new(tasks, task_reply(t, "cancelling", NULL));
		return;
	}
	if (t->live || t->gate_live || (t->hook_live && t->row.state == TASK_PENDING)) {
		/* its agent, gate, pre_task hook or `git worktree add`: stopped
		 * through the supervisor (its whole tree), then
		 * run_control_cancelled() */
		t->cancel_req = true;
		if (l->sv)
			(void)supervise_cancel_task(l->sv, t);
		(void)json_array_append_new(tasks, task_reply(t, "cancelling", NULL));
		return;
	}
	if (t->row.state == TASK_COMPLETING || t->row.state == TASK_REBASING ||
	    t->row.state == TASK_RESOLVING)
		run_gates_clear(t);
	if (t->row.state == TASK_REBASING || t->row.state == TASK_RESOLVING) {
		t->resolve_due = false;
		run_conflict_put_back(l, t);
	}
	(void)run_transition(l, t, TASK_EV_CANCELLED, reason);
	(void)json_array_append_new(tasks, task_reply(t, NULL, NULL));
}

/* The blocked tasks whose dependencies can all still finish are pending
 * again (after a retry): transitively. */
static void unblock(struct loop *l, const char *because)
{
	bool progress = true;
	size_t i;

	while (progress && !l->fatal) {
		progress = false;
		for (i = 0; i < l->n && !l->fatal; i++) {
			struct otask *t = &l->t[i];
			bool blocked;
			char msg[256];

			if (t->row.state != TASK_BLOCKED)
				continue;
			(void)run_deps_state(l, t, &blocked);
			if (blocked)
				continue;
			(void)snprintf(msg, sizeof(msg), "its dependency '%s' is retried", because);
			t->selected = true;
			(void)run_transition(l, t, TASK_EV_RETRIED, msg);
			progress = true;
		}
	}
}

static const char *retry_refusal(const struct otask *t)
{
	if (t->live || t->gate_live || t->cancel_req)
		return "it is running";
	switch (t->row.state) {
	case TASK_FAILED:
	case TASK_CONFLICT:
	case TASK_CANCELLED:
	case TASK_INTERRUPTED:
		return NULL;
	case TASK_BLOCKED:
		return "it is blocked: retry the task it waits for";
	default:
		return "only a failed, conflicted, cancelled or interrupted task is retried";
	}
}

/* --fresh: the task's worktree (or clone) and branch go; the next attempt
 * names new ones and starts from the base branch as it is then. */
static void drop_checkout(struct loop *l, struct otask *t)
{
	if (t->row.worktree)
		run_remove_worktree(l, t, false);
	if (t->row.branch)
		strvec_push(&l->dead_branches, t->row.branch);
	l->prune_worktrees = true;
	run_flush_branches(l);
	run_set_str(&t->row.session, NULL);
	run_set_str(&t->row.branch, NULL);
	run_set_str(&t->row.worktree, NULL);
	run_set_str(&t->row.agent_session_id, NULL);
	run_set_str(&t->row.head_commit, NULL);
	run_set_str(&t->row.merge_commit, NULL);
	run_set_str(&t->row.conflicts, NULL);
	checkout_release(&t->co);
	checkout_init(&t->co); /* bound again to the new names */
	t->fresh = true;
}

static void retry_one(struct loop *l, struct otask *t, bool fresh, const char *reason,
		      json_t *tasks)
{
	run_task_warm(l, t); /* an ended task's row, read back */
	if (fresh)
		drop_checkout(l, t);
	run_set_str(&t->row.retry_at, NULL);
	run_retry_reset(l, t); /* its retries and fallbacks start over */
	t->selected = true;
	if (run_transition(l, t, TASK_EV_RETRIED, reason) == 0)
		unblock(l, t->row.id);
	(void)json_array_append_new(tasks, task_reply(t, NULL, fresh ? "fresh" : NULL));
}

/* cancel and retry: every task checked first, then all carried out (or
 * none). */
static void control_tasks(struct loop *l, const struct control_request *req,
			  const struct control_peer *who, json_t *reply)
{
	bool cancel = req->op == CONTROL_CANCEL;
	json_t *tasks = json_array();
	char reason[256];
	size_t i;

	for (i = 0; i < req->n_tasks; i++) {
		long k = run_find_task(l, req->tasks[i]);
		const char *why;

		if (k < 0) {
			control_reply_error(reply, CONTROL_KIND_NOT_FOUND,
					    "no task '%s' in run '%s'", req->tasks[i], l->run.id);
			goto out;
		}
		why = cancel ? cancel_refusal(l, &l->t[k]) : retry_refusal(&l->t[k]);
		if (why) {
			control_reply_error(reply, CONTROL_KIND_STATE, "task '%s' is %s: %s",
					    req->tasks[i], task_state_to_string(l->t[k].row.state),
					    why);
			goto out;
		}
	}
	who_reason(who,
		   cancel	? "cancelled by request"
		   : req->fresh ? "retried afresh by request"
				: "retried by request",
		   reason, sizeof(reason));
	for (i = 0; i < req->n_tasks && !l->fatal; i++) {
		struct otask *t = &l->t[run_find_task(l, req->tasks[i])];

		if (cancel)
			cancel_one(l, t, reason, tasks);
		else
			retry_one(l, t, req->fresh, reason, tasks);
	}
	if (l->fatal)
		control_reply_error(reply, CONTROL_KIND_INTERNAL, "%s", l->fatal_d.msg);
out:
	json_obj_set(reply, "tasks", tasks);
}

/* The added task as a one-task plan (the same loader and checks as a plan
 * file's task), its dependencies checked against the run. */
static int added_plan(struct loop *l, const struct control_new_task *nt, struct plan **ret,
		      char *msg, size_t size)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	json_t *doc = json_object(), *arr = json_array(), *o = json_object();
	char title[80], *text;
	size_t i;
	int r;

	if (nt->title) {
		(void)snprintf(title, sizeof(title), "%s", nt->title);
	} else {
		size_t n = strcspn(nt->prompt, "\n");

		(void)snprintf(title, sizeof(title), "%.*s", (int)(n > 60 ? 60 : n), nt->prompt);
	}
	json_obj_set(o, "title", json_str_lossy(title));
	json_obj_set(o, "prompt", json_str_lossy(nt->prompt));
	if (nt->id)
		json_obj_set(o, "id", json_str_lossy(nt->id));
	if (nt->adapter)
		json_obj_set(o, "adapter", json_str_lossy(nt->adapter));
	if (nt->role)
		json_obj_set(o, "role", json_str_lossy(nt->role));
	(void)json_array_append_new(arr, o);
	json_obj_set(doc, "name", json_str_lossy("add-task"));
	json_obj_set(doc, "tasks", arr);
	text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(doc);
	r = text ? plan_load_buf("add-task", text, strlen(text), l->e->allowed_api_key_envs, ret,
				 &is)
		 : -ENOMEM;
	free(text);
	if (r < 0) {
		(void)snprintf(msg, size, "%s", is.n ? is.v[0].msg : strerror(-r));
		diag_list_release(&is);
		return -EINVAL;
	}
	diag_list_release(&is);
	for (i = 0; i < nt->n_depends_on; i++)
		if (run_find_task(l, nt->depends_on[i]) < 0) {
			(void)snprintf(msg, size, "depends on '%s', which run '%s' does not have",
				       nt->depends_on[i], l->run.id);
			*ret = plan_free(*ret);
			return -EINVAL;
		}
	return 0;
}

/* A free id for the added task: its own (which must be free), else the
 * plan's slug, with -2, -3... when taken. */
static int added_id(struct loop *l, const struct control_new_task *nt, const char *slug, char *id,
		    size_t size)
{
	unsigned k;

	if (nt->id)
		return run_find_task(l, nt->id) < 0 ? snprintf(id, size, "%s", nt->id), 0 : -EEXIST;
	(void)snprintf(id, size, "%s", slug);
	for (k = 2; run_find_task(l, id) >= 0; k++) {
		if (k > 1000)
			return -EEXIST;
		(void)snprintf(id, size, "%.50s-%u", slug, k);
	}
	return 0;
}

static void add_task(struct loop *l, const struct control_request *req,
		     const struct control_peer *who, json_t *reply)
{
	struct task_row row = TASK_ROW_INIT;
	struct task_spec spec;
	struct plan *plan = NULL;
	struct otask *t;
	char msg[1024], id[PLAN_ID_MAX + 1], ts[TS_MAX], *dump = NULL;
	const char **deps = NULL;
	struct diag d;
	json_t *det;
	size_t i;

	spec_init(&spec);
	if (l->n >= l->cap) {
		control_reply_error(
			reply, CONTROL_KIND_STATE,
			"%d tasks were added to this execution already: add more after it ends",
			ORCH_ADDED_MAX);
		goto out;
	}
	if (added_plan(l, &req->add, &plan, msg, sizeof(msg)) < 0) {
		control_reply_error(reply, CONTROL_KIND_INVALID, "%s", msg);
		goto out;
	}
	if (added_id(l, &req->add, plan->tasks[0].id, id, sizeof(id)) < 0) {
		control_reply_error(reply, CONTROL_KIND_INVALID, "run '%s' has a task '%s' already",
				    l->run.id, req->add.id ? req->add.id : plan->tasks[0].id);
		goto out;
	}
	spec_from_plan(plan, 0, &spec);
	spec.id = id;
	deps = xcalloc(req->add.n_depends_on + 1, sizeof(*deps));
	for (i = 0; i < req->add.n_depends_on; i++)
		deps[i] = req->add.depends_on[i];
	spec.depends_on = deps;
	spec.n_depends_on = req->add.n_depends_on;
	dump = spec_dump(&spec);
	spec.depends_on = NULL;
	spec.n_depends_on = 0;
	row.run_id = l->run.id;
	row.id = id;
	row.idx = (int64_t)l->n;
	row.title = (char *)(uintptr_t)plan->tasks[0].title;
	row.role = (char *)(uintptr_t)plan->tasks[0].role;
	row.prompt = (char *)(uintptr_t)plan->tasks[0].prompt;
	row.spec = dump;
	row.state = TASK_PENDING;
	row.updated_at = (char *)(uintptr_t)run_now(l, ts);
	diag_clear(&d);
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(id));
	json_obj_set(det, "title", json_str_lossy(row.title));
	json_obj_set(
		det, "who",
		json_pack("{s:I, s:I}", "uid", (json_int_t)who->uid, "pid", (json_int_t)who->pid));
	if (state_task_insert(l->e->st, &row, &d) < 0) {
		json_decref(det);
		control_reply_error(reply, CONTROL_KIND_INTERNAL, "%s", d.msg);
		goto out;
	}
	{
		char *rid = NULL;
		struct sbuf sb = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&sb, "%s/%s", l->run.id, id);
		rid = sbuf_detach(&sb, NULL);
		(void)run_audit(l, "task.added", "task", rid, det);
		free(rid);
	}
	/* the new task in memory, as run_loop_load() makes one */
	t = &l->t[l->n];
	memset(t, 0, sizeof(*t));
	task_row_init(&t->row);
	if (state_task_get(l->e->st, l->run.id, id, &t->row, &d) < 0 ||
	    spec_parse_text(dump, strlen(dump), run_spec_new(t), &d) < 0) {
		run_fail(l, -EIO, &d);
		control_reply_error(reply, CONTROL_KIND_INTERNAL, "%s", d.msg);
		goto out;
	}
	t->attachments = (struct strvec)STRVEC_INIT;
	checkout_init(&t->co);
	t->loop = l;
	t->selected = true;
	t->deps = xcalloc(req->add.n_depends_on + 1, sizeof(size_t));
	for (i = 0; i < req->add.n_depends_on; i++)
		t->deps[t->n_deps++] = (size_t)run_find_task(l, req->add.depends_on[i]);
	l->n++;
	if (l->e->hooks.on_task)
		l->e->hooks.on_task(l->e->hooks.userdata, &t->row, TASK_PENDING);
	json_obj_set(reply, "tasks", json_pack("[o]", task_reply(t, NULL, "added")));
out:
	free(deps);
	free(dump);
	spec_release(&spec);
	plan_free(plan);
}

/* A live run merges the tasks approve moved to merging at once (a run
 * that is not live leaves them to the resume that follows). */
static void merge_approved(struct loop *l, json_t *reply)
{
	json_t *tasks = json_object_get(reply, "tasks"), *o;
	size_t i;

	json_array_foreach(tasks, i, o)
	{
		long k = run_find_task(l, json_string_value(json_object_get(o, "id")));

		if (k < 0 || l->t[k].row.state != TASK_MERGING || l->fatal)
			continue;
		run_merge(l, &l->t[k], NULL);
		json_obj_set(o, "state", json_str_lossy(task_state_to_string(l->t[k].row.state)));
	}
}

static void control_handle(void *ctx, const struct control_request *req,
			   const struct control_peer *who, json_t *reply)
{
	struct loop *l = ctx;

	switch (req->op) {
	case CONTROL_PING:
		json_obj_set(reply, "live", json_boolean(l->sv != NULL));
		json_obj_set(reply, "pid", json_integer((json_int_t)getpid()));
		json_obj_set(reply, "draining", json_boolean(l->draining));
		break;
	case CONTROL_CANCEL:
	case CONTROL_RETRY:
		control_tasks(l, req, who, reply);
		break;
	case CONTROL_STOP:
		if (!l->sv) {
			control_reply_error(reply, CONTROL_KIND_STATE, "run '%s' is not running",
					    l->run.id);
			break;
		}
		if (req->force) {
			l->cancelled = true;
			supervise_interrupt(l->sv);
		}
		l->draining = true;
		run_warn(l, NULL, "%s",
			 req->force
				 ? "stopped by request: every agent is being stopped"
				 : "stop requested: no new task starts; the running ones finish");
		json_obj_set(reply, "draining", json_true());
		break;
	case CONTROL_ADD_TASK:
		add_task(l, req, who, reply);
		break;
	case CONTROL_APPROVE:
	case CONTROL_REJECT:
		run_review_control(l, req, who, reply);
		if (req->op == CONTROL_APPROVE && l->sv)
			merge_approved(l, reply);
		break;
	case _CONTROL_OP_MAX:
	case _CONTROL_OP_INVALID:
	default:
		control_reply_error(reply, CONTROL_KIND_USAGE, "unknown operation");
		break;
	}
}

static void control_watch(void *ctx, struct supervisor *sv)
{
	struct loop *l = ctx;
	struct diag d;

	diag_clear(&d);
	l->sv = sv;
	if (control_poll(l->ctl, control_handle, l, &d) < 0)
		run_fail(l, -EIO, &d);
	l->sv = NULL;
	if (l->fatal)
		supervise_interrupt(sv);
}

/* The supervisor's clock, and the control channel it watches (a run that
 * cannot listen is run all the same, with a warning: only its control from
 * another shell is lost). */
void run_control_start(struct loop *l, struct supervisor_ops *ops, struct supervisor_opts *sopts)
{
	struct diag d;

	sopts->clock = l->e->clk;
	diag_clear(&d);
	if (control_listen(l->e->repo, l->run.id, l->e->chain, &l->ctl, &d) < 0) {
		run_warn(
			l, NULL,
			"no control channel ('bernstein cancel', 'stop'... will not reach this run): %s",
			d.msg);
	} else {
		ops->on_watch = control_watch;
		sopts->watch_fd = control_fd(l->ctl);
	}
	if (l->e->hooks.on_started)
		l->e->hooks.on_started(l->e->hooks.userdata);
}

int orch_control_offline(struct orch_env *e, const char *run_id, const struct control_request *req,
			 const struct control_peer *who, json_t *reply, struct diag *reterr)
{
	struct loop l;
	char ts[TS_MAX];
	json_t *det;
	int r;

	if (!e->locked) {
		diag_set(reterr, e->repo, 0, 0, "a run is changed only under %s", ORCH_LOCK_FILE);
		return -EINVAL;
	}
	r = run_loop_load(&l, e, run_id, reterr);
	if (r < 0)
		goto out;
	/* the hooks and notifications its state changes fire, as a live run
	 * fires them (run_hooks_drain() below runs the hooks) */
	l.executing = true;
	r = run_hooks_load(&l, reterr);
	if (r < 0)
		goto out;
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(run_id));
	json_obj_set(
		det, "who",
		json_pack("{s:I, s:I}", "uid", (json_int_t)who->uid, "pid", (json_int_t)who->pid));
	json_obj_set(det, "op", json_str_lossy(control_op_to_string(req->op)));
	json_obj_set(det, "live", json_false());
	r = run_audit(&l, "control.request", "run", run_id, det);
	if (r < 0) {
		*reterr = l.fatal_d;
		goto out;
	}
	json_obj_set(reply, "run", json_str_lossy(run_id));
	control_handle(&l, req, who, reply);
	if (!json_object_get(reply, "ok"))
		json_obj_set(reply, "ok", json_true());
	run_flush_branches(&l);
	r = 0;
	if (!l.fatal) {
		struct diag d;

		diag_clear(&d);
		r = run_hooks_drain(&l, &d);
		if (r < 0 && !l.fatal)
			run_fail(&l, r, &d);
		r = 0;
	}
	if (l.fatal) {
		r = l.fatal;
		*reterr = l.fatal_d;
	} else if (json_is_true(json_object_get(reply, "ok")) && req->op != CONTROL_PING &&
		   (req->op == CONTROL_RETRY || req->op == CONTROL_ADD_TASK ||
		    req->op == CONTROL_APPROVE || req->op == CONTROL_REJECT)) {
		/* the run has work again: resume executes it */
		(void)state_run_set_state(e->st, run_id, RUN_INTERRUPTED, run_now(&l, ts), NULL);
	}
out:
	if (l.e)
		run_loop_release(&l);
	return r;
}
