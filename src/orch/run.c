/* Runs: creating and executing one, the supervisor's side (see run.h,
 * run-internal.h for the other parts, docs/runs.md). */
#include "orch/run-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "orch/config.h"
#include "orch/context.h"
#include "orch/control.h"
#include "orch/plan.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/randid.h"
#include "util/banned.h"

#define AUDIT_FLUSH_MS 1000 /* at most one audit fsync a second while agents end */

/* ---- creating a run ---- */

int orch_run_create(struct orch_env *e, const struct plan *plan, const char *plan_path,
		    char *run_id, size_t size, struct diag *reterr)
{
	struct run_row run = RUN_ROW_INIT;
	char ts[TS_MAX], id[64];
	char *branch = NULL, *commit = NULL;
	json_t *det, *budget = NULL;
	size_t i;
	int r;

	if (!e->locked) {
		diag_set(reterr, e->repo, 0, 0, "a run is recorded only under %s", ORCH_LOCK_FILE);
		return -EINVAL;
	}
	r = run_retry_check(e, plan, reterr); /* fallback: and retry.models, up front */
	if (r < 0)
		return r;
	r = git_head(e->repo, e->git_env, &branch, &commit, reterr);
	if (r < 0)
		return r;
	if (!branch) {
		diag_set(reterr, e->repo, 0, 0,
			 "HEAD is detached: check out the branch the run should merge into");
		r = -ENOTSUP; /* the checkout, not the plan: exit 4 (docs/runs.md) */
		goto out;
	}
	randid_run(id, sizeof(id), e->clk->now_ns(e->clk));
	(void)clock_iso8601_utc(e->clk->now_ns(e->clk), ts, sizeof(ts));
	run.id = id;
	run.plan_path = (char *)(uintptr_t)plan_path;
	run.plan_hash = (char *)(uintptr_t)plan_hash(plan);
	run.name = (char *)(uintptr_t)plan->name;
	run.repo = (char *)(uintptr_t)e->repo;
	run.base_branch = branch;
	run.base_commit = commit;
	run.state = RUN_RUNNING;
	run.parallel = e->parallel ? e->parallel : e->cfg->parallel;
	run.created_at = ts;
	run.updated_at = ts;

	r = state_begin(e->st, reterr);
	if (r < 0)
		goto out;
	r = state_run_insert(e->st, &run, reterr);
	if (r >= 0) /* budget: bernstein.yaml < plan < --max-cost-usd */
		r = run_budget_record(e, plan, id, ts, &budget, reterr);
	if (r >= 0) /* the plan's own hooks: and notify: (run-hooks.c) */
		r = run_hooks_record(e, plan, id, ts, reterr);
	for (i = 0; r >= 0 && i < plan->n; i++) {
		struct task_row t = TASK_ROW_INIT;
		const struct plan_task *pt = &plan->tasks[i];
		struct task_spec tspec;
		char *spec;

		spec_from_plan(plan, i, &tspec);
		spec = spec_dump(&tspec);
		spec_release(&tspec);

		t.run_id = id;
		t.id = (char *)(uintptr_t)pt->id;
		t.idx = (int64_t)i;
		t.title = (char *)(uintptr_t)pt->title;
		t.role = (char *)(uintptr_t)pt->role;
		t.prompt = (char *)(uintptr_t)pt->prompt;
		t.spec = spec;
		t.state = TASK_PENDING;
		t.updated_at = ts;
		r = state_task_insert(e->st, &t, reterr);
		free(spec);
	}
	if (r >= 0)
		r = state_commit(e->st, reterr);
	if (r < 0) {
		(void)state_rollback(e->st, NULL);
		goto out;
	}
	det = json_object();
	json_obj_set(det, "plan", json_str_lossy(plan_path));
	json_obj_set(det, "plan_hash", json_str_lossy(plan_hash(plan)));
	json_obj_set(det, "name", json_str_lossy(plan->name));
	json_obj_set(det, "base_branch", json_str_lossy(branch));
	json_obj_set(det, "base_commit", json_str_lossy(commit));
	json_obj_set(det, "tasks", json_integer((json_int_t)plan->n));
	if (budget) {
		json_obj_set(det, "budget", budget);
		budget = NULL;
	}
	r = audit_append(e->chain, "run.started", ORCH_ACTOR, "run", id, det, reterr);
	json_decref(det);
	if (r < 0)
		goto out;
	(void)snprintf(run_id, size, "%s", id);
out:
	json_decref(budget);
	free(branch);
	free(commit);
	return r;
}

bool run_deps_state(const struct loop *l, const struct otask *t, bool *ret_blocked)
{
	size_t i;
	bool ready = true;

	*ret_blocked = false;
	for (i = 0; i < t->n_deps; i++) {
		enum task_state s = l->t[t->deps[i]].row.state;

		if (lifecycle_finished_ok(s))
			continue;
		ready = false;
		if (lifecycle_terminal(s))
			*ret_blocked = true;
	}
	return ready;
}

/* ---- the supervisor's side ---- */

static bool retry_due(const struct loop *l, const struct otask *t, int64_t *ret_wait_ms)
{
	char ts[TS_MAX];

	if (!t->row.retry_at)
		return true;
	(void)clock_iso8601_utc(l->e->clk->now_ns(l->e->clk), ts, sizeof(ts));
	if (strcmp(ts, t->row.retry_at) >= 0)
		return true;
	if (ret_wait_ms) {
		struct tm tm = {0};
		const char *end = strptime(t->row.retry_at, "%Y-%m-%dT%H:%M:%S", &tm);
		int64_t due_ms, now_ms = l->e->clk->now_ns(l->e->clk) / 1000000;
		double frac = 0;

		if (end && *end == '.')
			frac = strtod(end, NULL);
		due_ms = (int64_t)timegm(&tm) * 1000 + (int64_t)(frac * 1000.0);
		*ret_wait_ms = due_ms > now_ms ? due_ms - now_ms : 0;
	}
	return false;
}

/* The audit records of a run are written (write(2), under the chain's lock)
 * before the action they describe, so they survive bernstein being killed;
 * they are fsynced, with state.json, at most AUDIT_FLUSH_MS after an attempt
 * has been completed, and at the end of the run (docs/runs.md,
 * "Durability"). */
static void flush_audit(struct loop *l)
{
	struct diag d;
	int r;

	diag_clear(&d);
	r = audit_batch_end(l->e->chain, &d);
	audit_batch_begin(l->e->chain);
	l->audit_flushed_ms = l->e->clk->mono_ms(l->e->clk);
	l->audit_due_ms = 0;
	if (r < 0)
		run_fail(l, r, &d);
}

/* A group commit: an attempt ended, its records go to disk within
 * AUDIT_FLUSH_MS (each fsync of the day file and state.json costs
 * milliseconds; agents that end together share one). The supervisor wakes
 * for a pending one (wake_in_ms) and next_task does it. */
static void flush_audit_soon(struct loop *l)
{
	uint64_t mono = l->e->clk->mono_ms(l->e->clk);

	if (mono >= l->audit_flushed_ms + AUDIT_FLUSH_MS)
		flush_audit(l);
	else if (!l->audit_due_ms)
		l->audit_due_ms = l->audit_flushed_ms + AUDIT_FLUSH_MS;
}

static void flush_audit_if_due(struct loop *l)
{
	if (l->audit_due_ms && l->e->clk->mono_ms(l->e->clk) >= l->audit_due_ms)
		flush_audit(l);
}

static int64_t wake_in_ms(void *ctx);

/* The gates of tasks rebased or resolved (run-conflict.c) started again;
 * with none, their merge, which may conflict again (bounded there). */
static void gates_due(struct loop *l)
{
	bool any = true;
	size_t i;

	while (any && !l->fatal) {
		any = false;
		for (i = run_open(l, 0); i < l->n && !l->fatal; i = run_open(l, i + 1)) {
			struct otask *t = &l->t[i];

			if (!t->gates_due)
				continue;
			t->gates_due = false;
			any = true;
			if (t->row.state == TASK_REBASING || t->row.state == TASK_RESOLVING)
				run_gates_start(l, t,
						t->row.state == TASK_REBASING
							? "rebased; no gates"
							: "resolved; no gates");
		}
	}
}

/* next_task()'s part for the resolvers due (run-conflict.c): 1 with spec
 * filled (the agent, or its tree's command first), 0 none, < 0 fatal. */
static int next_resolver(struct loop *l, struct proc_spec *spec, void **ret_task)
{
	size_t i;

	for (i = run_open(l, 0); i < l->n && !l->draining; i = run_open(l, i + 1)) {
		struct otask *t = &l->t[i];
		int r;

		if (!t->resolve_due || t->live || t->row.state != TASK_RESOLVING)
			continue;
		r = run_dispatch(l, t, spec);
		if (r != 1)
			proc_spec_release(spec);
		if (r < 0)
			return r;
		if (r == DISPATCH_BUSY)
			continue;
		/* its tree's command first (then it is due again), else the agent */
		t->resolve_due = r == 1 && run_prep_live(t);
		if (r == 1) {
			*ret_task = t;
			return 1;
		}
		if (t->row.state == TASK_CONFLICT)
			run_conflict_put_back(l, t); /* refused: no merge left half made */
		if (r == DISPATCH_ENDED)
			run_complete(l, t);
		if (l->fatal)
			return l->fatal;
	}
	return 0;
}

/* next_task()'s part for the gates due: true with spec filled. */
static bool next_gate(struct loop *l, struct proc_spec *spec, void **ret_task)
{
	size_t i;

	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)) {
		struct otask *t = &l->t[i];

		if (t->gates && !t->gate_live && !t->hook_live &&
		    (t->row.state == TASK_COMPLETING || t->row.state == TASK_REBASING ||
		     t->row.state == TASK_RESOLVING)) {
			if (run_gate_spec(l, t, spec) < 0) {
				proc_spec_release(spec); /* what it filled in */
				continue;
			}
			*ret_task = t;
			return true;
		}
	}
	return false;
}

/* t's files: overlap those of a task in flight (dispatched, not finished):
 * it waits (docs/runs.md, "Tasks that touch the same files"). */
static bool files_held(const struct loop *l, const struct otask *t)
{
	const struct task_spec *ts = run_spec(t);
	size_t i;

	if (!ts->n_files)
		return false;
	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)) {
		const struct otask *u = &l->t[i];

		/* a pending task is in flight too while its tree is made, its
		 * setup or its pre_task hook runs (before "dispatched"); a task
		 * that does not hold its spec is neither (run_task_cool()) */
		if (u == t || !u->spec || !u->spec->n_files || lifecycle_terminal(u->row.state) ||
		    (u->row.state == TASK_PENDING && !u->live && !run_prep_live(u) &&
		     !u->hook_live))
			continue;
		if (context_files_overlap(ts->files, ts->n_files, u->spec->files, u->spec->n_files))
			return true;
	}
	return false;
}

static int next_task(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct loop *l = ctx;
	size_t i;
	bool progress = true;
	int r;

	flush_audit_if_due(l);
	if (l->fatal)
		return l->fatal;
	if (l->cancelled)
		return 0;
	/* hooks due (post_task, post_merge: short, and the user waits for them) */
	if (run_hook_next(l, spec, ret_task) == 1)
		return 1;
	gates_due(l);
	/* gates before new agents: they finish tasks others depend on */
	if (next_gate(l, spec, ret_task))
		return 1;
	/* a resolver (run-conflict.c): an attempt of a task in its conflict */
	r = next_resolver(l, spec, ret_task);
	if (r != 0)
		return r;
	while (progress) {
		progress = false;
		for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)) {
			struct otask *t = &l->t[i];
			bool blocked;

			run_task_trim(t);	   /* an ended task: what it no longer needs goes */
			run_task_cool(t);	   /* and its spec, until it is needed again */
			(void)run_task_slim(l, t); /* and what state.db has */
			if (!t->selected || t->live || t->hook_live || t->row.state != TASK_PENDING)
				continue;
			if (!run_deps_state(l, t, &blocked)) {
				if (blocked) {
					(void)run_transition(l, t, TASK_EV_DEPENDENCY_FAILED,
							     "a dependency did not finish");
					progress = true;
				}
				continue;
			}
			if (l->draining || !retry_due(l, t, NULL) || files_held(l, t))
				continue;
			/* hooks.pre_task first, before each attempt */
			r = run_hook_pre_task(l, t, spec);
			if (r == 1) {
				*ret_task = t;
				return 1;
			}
			if (r == 2) {
				if (l->fatal)
					return l->fatal;
				if (t->row.state != TASK_PENDING)
					progress = true; /* failed: its dependents are blocked */
				continue;
			}
			r = run_dispatch(l, t, spec);
			if (r != 1)
				/* nothing spawned: what a refused or failed dispatch put
				 * into the spec must not reach the next task's agent */
				proc_spec_release(spec);
			if (r < 0)
				return r;
			if (r == DISPATCH_BUSY) {
				run_task_cool(t); /* it waits on */
				continue;
			}
			if (r == DISPATCH_ENDED) {
				run_complete(l, t);
				r = 0;
			}
			if (r > 0) {
				*ret_task = t;
				return 1;
			}
			if (l->fatal)
				return l->fatal;
			progress = true;
		}
	}
	/* nothing left to start: the run's own hook, once nothing runs */
	return run_hook_run_end(l, wake_in_ms(l) >= 0, spec, ret_task);
}

/* The supervisor asks when next_task had nothing: a retry waiting for its
 * time starts then, even while other agents run. */
static int64_t wake_in_ms(void *ctx)
{
	struct loop *l = ctx;
	int64_t wait_ms = -1;
	size_t i;

	bool live = false, pending = false;

	if (l->fatal || l->cancelled || l->draining)
		return -1;
	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)) {
		struct otask *t = &l->t[i];
		int64_t w = 0;
		bool blocked;

		live = live || t->live || t->gate_live;
		if (!t->selected || t->live || t->row.state != TASK_PENDING ||
		    !run_deps_state(l, t, &blocked))
			continue;
		pending = true;
		if (!retry_due(l, t, &w) && (wait_ms < 0 || w < wait_ms))
			wait_ms = w;
	}
	/* a task held back while its adapter's rate-limit meter says wait */
	if (pending) {
		int64_t w = meters_next_ms(&l->meters);

		if (w >= 0 && (wait_ms < 0 || w < wait_ms))
			wait_ms = w;
	}
	/* a pending audit flush, while the run goes on (at its end, the end
	 * flushes: no reason to linger for it) */
	if (l->audit_due_ms && (live || wait_ms >= 0)) {
		uint64_t mono = l->e->clk->mono_ms(l->e->clk);
		int64_t w = l->audit_due_ms > mono ? (int64_t)(l->audit_due_ms - mono) : 0;

		if (wait_ms < 0 || w < wait_ms)
			wait_ms = w;
	}
	return wait_ms;
}

static void on_start(void *ctx, void *task, const struct proc *p)
{
	struct loop *l = ctx;
	struct otask *t = task;

	if (t->gate_live || run_prep_live(t) || t->hook_live)
		return;
	run_att(t)->pid = p->pid;
	(void)state_attempt_update(l->e->st, run_att(t), NULL);
}

static void on_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	if (((struct otask *)task)->gate_live || ((struct otask *)task)->hook_live ||
	    run_prep_live(task))
		return; /* the supervisor writes the gate's log; git's chatter */
	agentrun_line(((struct otask *)task)->ar, stream, line, len);
	run_budget_line(ctx, task); /* what the agent has spent so far */
}

static void on_oversized(void *ctx, void *task, int stream, const char *head, size_t head_len,
			 uint64_t total)
{
	(void)ctx;
	if (((struct otask *)task)->gate_live || ((struct otask *)task)->hook_live ||
	    run_prep_live(task))
		return;
	agentrun_oversized(((struct otask *)task)->ar, stream, head, head_len, total);
}

static void on_notice(void *ctx, void *task, enum proc_notice notice, uint64_t value)
{
	(void)ctx;
	if (((struct otask *)task)->gate_live || ((struct otask *)task)->hook_live ||
	    run_prep_live(task))
		return;
	agentrun_notice(((struct otask *)task)->ar, notice, value);
}

/* ops->on_stop: an ACP agent is asked to end its turn before the SIGTERM */
static uint64_t on_stop(void *ctx, void *task)
{
	(void)ctx;
	if (((struct otask *)task)->gate_live || ((struct otask *)task)->hook_live ||
	    run_prep_live(task))
		return 0;
	return ((struct otask *)task)->ar ? agentrun_stop(((struct otask *)task)->ar) : 0;
}

#define NET_WATCH_MS 200

static int64_t on_tick(void *ctx)
{
	struct loop *l = ctx;
	bool any = false;
	size_t i;

	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1))
		any |= run_net_watch(&l->t[i]);
	return any ? NET_WATCH_MS : -1;
}

static void on_exit_cb(void *ctx, void *task, const struct proc *p)
{
	struct loop *l = ctx;
	struct otask *t = task;

	if (t->hook_live) {
		run_hook_ended(l, t, p);
		flush_audit_soon(l);
		return;
	}
	/* a runtime killed cannot delete its container: bernstein does */
	run_container_sweep(l, t);
	if (t->gate_live) {
		run_gate_ended(l, t, p);
		flush_audit_soon(l);
		return;
	}
	if (t->prep == PREP_SETUP) {
		/* worktree_setup's setup_command ended: next_task goes on */
		run_setup_ended(l, t, p);
		flush_audit_soon(l);
		return;
	}
	if (t->prep == PREP_RUNNING) {
		/* the worktree command ended: next_task dispatches t again */
		t->live = false;
		if (p->cancelled || t->cancel_req) {
			t->prep = PREP_NONE; /* resume routes it again and repairs */
			if (t->cancel_req)
				run_control_cancelled(l, t);
			else
				l->cancelled = true;
			return;
		}
		t->prep = p->exit_code == 0 && !p->timed_out && p->failed_stage == SHIM_STAGE_NONE
				  ? PREP_DONE
				  : PREP_FAILED;
		if (t->prep == PREP_DONE)
			checkout_command_ended(&t->co);
		return;
	}
	if (t->sb_built && run_sb(t)->network == NET_MODE_LLM && t->session_dir) {
		(void)run_net_watch(t);
		confine_net_report(t->session_dir, t->ar);
	}
	if (run_task_tier(l, t) == SANDBOX_KIND_CONTAINER && confine_oci_oom(p)) {
		struct proc q = *p;

		q.oom_kills = 1;
		agentrun_exit(t->ar, &q);
	} else {
		agentrun_exit(t->ar, p);
	}
	if (p->cancelled && !t->cancel_req)
		l->cancelled = true;
	run_complete(l, t);
	flush_audit_soon(l);
}

int orch_lock_take(const char *repo, int *ret_fd, struct diag *reterr)
{
	char *path = agentrun_path(repo, ORCH_LOCK_FILE), dir[PATH_MAX];
	int fd, r;

	path_dirname(path, dir, sizeof(dir));
	r = mkdir_p(dir, 0755);
	if (r < 0) {
		diag_set(reterr, dir, 0, 0, "cannot create directory: %s", strerror(-r));
		free(path);
		return r;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		diag_set(reterr, path, 0, 0, "cannot open: %s", strerror(-r));
		free(path);
		return r;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		diag_set(reterr, path, 0, 0,
			 r == -EBUSY
				 ? "another bernstein is still running a plan in this repository"
				 : "cannot lock: %s",
			 strerror(-r));
		(void)close(fd);
		free(path);
		return r;
	}
	free(path);
	*ret_fd = fd;
	return 0;
}

static void summarize(struct loop *l, struct orch_summary *s)
{
	size_t i;
	bool bad = false, open_ = false;

	/* the supervisor has ended: no request is served any more */
	l->ctl = control_close(l->ctl);
	memset(s, 0, sizeof(*s));
	(void)snprintf(s->run_id, sizeof(s->run_id), "%s", l->run.id);
	s->n_tasks = l->n;
	s->cancelled = l->cancelled;
	s->budget_exceeded = l->budget.exceeded;
	s->stopped = l->draining && !l->cancelled && !s->budget_exceeded;
	for (i = 0; i < l->n; i++) {
		enum task_state st = l->t[i].row.state;

		if ((int)st >= 0 && st < _TASK_STATE_MAX && l->t[i].selected)
			s->counts[st]++;
		if (!lifecycle_terminal(st))
			open_ = true;
		else if (!lifecycle_finished_ok(st))
			bad = true;
	}
	s->state = open_ ? RUN_INTERRUPTED : bad ? RUN_FAILED : RUN_DONE;
}

/* The run's end, after the supervisor returned: its state and pid in
 * state.db, and run.finished in the audit chain; a fatal error stops it
 * interrupted (its diag into *reterr). */
static int run_end(struct loop *l, const struct orch_summary *sum, struct diag *reterr)
{
	struct orch_env *e = l->e;
	const char *run_id = l->run.id;
	char ts[TS_MAX];
	json_t *det;
	size_t i;
	int r;

	if (l->fatal) {
		*reterr = l->fatal_d;
		(void)state_run_set_state(e->st, run_id, RUN_INTERRUPTED, run_now(l, ts), NULL);
		(void)state_run_set_pid(e->st, run_id, STATE_NULL_INT, ts, NULL);
		return l->fatal;
	}
	r = state_run_set_state(e->st, run_id, sum->state, run_now(l, ts), reterr);
	if (r >= 0)
		r = state_run_set_pid(e->st, run_id, STATE_NULL_INT, ts, reterr);
	if (r < 0)
		return r;
	det = json_object();
	json_obj_set(det, "state", json_str_lossy(run_state_to_string(sum->state)));
	for (i = 0; i < _TASK_STATE_MAX; i++)
		if (sum->counts[i])
			json_obj_set(det, task_state_to_string((enum task_state)i),
				     json_integer((json_int_t)sum->counts[i]));
	r = audit_append(e->chain, "run.finished", ORCH_ACTOR, "run", run_id, det, reterr);
	json_decref(det);
	if (r >= 0)
		r = audit_batch_end(e->chain, reterr);
	return r;
}

static const struct supervisor_ops run_ops = {
	.next_task = next_task,
	.wake_in_ms = wake_in_ms,
	.on_start = on_start,
	.on_line = on_line,
	.on_oversized = on_oversized,
	.on_notice = on_notice,
	.on_tick = on_tick,
	.on_exit = on_exit_cb,
	.want_interrupt = run_budget_interrupt,
	.on_stop = on_stop,
};

/* A selected task an earlier execution left completing, merging,
 * rebasing or resolving goes on from there. */
static void finish_earlier(struct loop *l, struct otask *t)
{
	if (!t->selected || (t->row.state != TASK_COMPLETING && t->row.state != TASK_MERGING &&
			     t->row.state != TASK_REBASING && t->row.state != TASK_RESOLVING))
		return;
	/* its gates' logs and network refusals go with its last attempt, as
	 * in the run that was interrupted */
	if (!t->session_dir && t->row.session && t->row.attempts > 0) {
		char nbuf[24];

		(void)snprintf(nbuf, sizeof(nbuf), "%" PRId64, t->row.attempts);
		t->session_dir = run_session_path(l, t, nbuf);
		(void)mkdir_p(t->session_dir, 0700);
	}
	if (t->row.state == TASK_COMPLETING || t->row.state == TASK_MERGING)
		run_finish(l, t);
	else
		run_conflict_resume(l, t);
}

int orch_run_execute(struct orch_env *e, const char *run_id, struct orch_summary *ret,
		     struct diag *reterr)
{
	struct supervisor_ops ops = run_ops;
	struct supervisor_opts sopts = {0};
	struct orch_summary sum;
	struct loop l;
	char ts[TS_MAX];
	int64_t locked_ns;
	int lock = -1, r;
	size_t i;

	if (!e->locked) {
		r = orch_lock_take(e->repo, &lock, reterr);
		if (r < 0)
			return r;
	}
	locked_ns = clock_system()->now_ns(clock_system()); /* compared with file times */
	r = run_loop_load(&l, e, run_id, reterr);
	if (r < 0)
		goto out;
	l.executing = true; /* hooks and notifications from here on */
	/* the plan's hooks, and those an earlier execution left due */
	r = run_hooks_load(&l, reterr);
	if (r < 0)
		goto out;
	/* what a killed bernstein left in git, before any git runs */
	r = run_repair_locks(&l, locked_ns, reterr);
	if (r < 0) {
		(void)state_run_set_state(e->st, run_id, RUN_INTERRUPTED, run_now(&l, ts), NULL);
		goto out;
	}
	run_repair_worktrees(&l);
	run_cleanup_worktrees(&l);
	if (e->only_task) {
		for (i = 0; i < l.n; i++)
			l.t[i].selected = strcmp(l.t[i].row.id, e->only_task) == 0;
	}
	audit_batch_begin(e->chain);
	r = run_budget_load(&l, reterr); /* the caps, and what was spent so far */
	if (r < 0)
		goto out;
	/* tasks finished earlier (completing, merging, in a conflict) go on first */
	for (i = 0; i < l.n && !l.fatal; i++)
		finish_earlier(&l, &l.t[i]);
	r = state_run_set_pid(e->st, run_id, (int64_t)getpid(), run_now(&l, ts), reterr);
	if (r >= 0)
		r = state_run_set_state(e->st, run_id, RUN_RUNNING, ts, reterr);
	if (r < 0)
		goto out;
	sopts.max_parallel = e->parallel ? e->parallel
					 : (l.run.parallel > 0 ? (unsigned)l.run.parallel
							       : (unsigned)e->cfg->parallel);
	run_control_start(&l, &ops, &sopts); /* and the clock */
	diag_clear(reterr);
	/* until every selected task is settled; retries wait inside (wake_in_ms) */
	r = supervise_run(&ops, &l, &sopts, reterr);
	if (r == -ECANCELED) {
		l.cancelled = true;
		r = 0;
	}
	if (r < 0 && !l.fatal)
		run_fail(&l, r, reterr);
	run_flush_branches(&l);
	run_overlay_gc(&l);
	flush_audit(&l);
	summarize(&l, &sum);
	r = run_end(&l, &sum, reterr);
	run_notify(&l, "run_done", NULL, l.fatal ? reterr->msg : NULL);
	if (r >= 0 && ret)
		*ret = sum;
out:
	if (l.e && e->chain)
		(void)audit_batch_end(e->chain, NULL); /* idempotent: nothing left when done */
	if (l.e)
		run_loop_release(&l);
	if (lock >= 0)
		(void)close(lock);
	return r;
}
