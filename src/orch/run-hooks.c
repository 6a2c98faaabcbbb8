/* Lifecycle hooks and notifications in the run loop (orch/hooks.h,
 * docs/runs.md "Hooks", docs/configuration.md "Notifications").
 *
 * Hooks are children of the supervisor like gates: next_task starts them
 * (run_hook_next()), on_exit_cb() judges them (run_hook_ended()). Each is
 * `/bin/sh -c RUN` with the event as JSON on stdin (a memfd), BERNSTEIN_*
 * variables beside git_env (PATH, HOME, LC_ALL...), its own process group
 * and PID namespace or cgroup (proc/contain.h: everything it starts dies
 * with it), its timeout, and its output in a log:
 *   pre_task, post_task, post_merge   .bernstein/runs/RUN/hooks/TASK.HOOK.log
 *   on_run_end                        .bernstein/runs/RUN/hooks/on_run_end.log
 *   pre_merge                         hook-pre_merge.log beside the gate logs
 * pre_merge is the last of a task's gates (run-complete.c) and runs like
 * one: in the task's tree, confined like its gates when it is sandboxed.
 * The others run in the repository (your checkout), never in an agent's
 * tree: they run nothing an agent wrote that was not merged.
 *
 * Notifications are never sent from this process: run_notify() starts the
 * bernstein-notify helper (src/cli/notify-main.c, the only one linking
 * libcurl for them), detached, with what to send on stdin; it has its own
 * deadline (notify.timeout) and the loop never waits for it. */
#include "orch/run-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "orch/config.h"
#include "orch/failure.h"
#include "orch/hooks.h"
#include "orch/worktree.h"
#include "proc/detached.h"
#include "proc/spawn.h"
#include "proc/supervise.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/url.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define HOOK_LOG_MAX	  (1u << 20) /* bytes of a hook's output kept */
#define HOOK_EXIT_TIMEOUT 124	     /* a hook past its timeout, as timeout(1) */
#define NOTIFY_EXE	  "bernstein-notify"
#define NOTIFY_LOG	  "notify.log"
#define NOTIFY_REASON_MAX 300 /* bytes of a task's reason in a notification */

const struct orch_hook *run_hook_of(const struct loop *l, const struct otask *t, enum hook_kind k)
{
	const struct orch_config *c = l->e->cfg;
	const struct role_policy *rp;

	if (!c || (int)k < 0 || k >= _HOOK_KIND_MAX)
		return NULL;
	/* the narrowest scope that sets it: the task's role, the plan,
	 * bernstein.yaml (docs/configuration.md, "Hooks") */
	if (t && t != &l->run_hook && (rp = orch_config_role(c, t->row.role)) && rp->hooks.h[k].run)
		return &rp->hooks.h[k];
	if (l->plan_hooks.h[k].run)
		return &l->plan_hooks.h[k];
	return c->hooks.h[k].run ? &c->hooks.h[k] : NULL;
}

static const struct orch_hook *hook_of(const struct loop *l, const struct otask *t,
				       enum hook_kind k)
{
	return run_hook_of(l, t, k);
}

/* The notify: of t's events (NULL: the run's): its role's, else the
 * plan's, else bernstein.yaml's, each whole; NULL when none is set. */
static const struct orch_notify *notify_of(const struct loop *l, const struct otask *t)
{
	const struct orch_config *c = l->e->cfg;
	const struct role_policy *rp;

	if (!c)
		return NULL;
	if (t && (rp = orch_config_role(c, t->row.role)) && rp->notify.set)
		return &rp->notify;
	if (l->plan_notify.set)
		return &l->plan_notify;
	return c->notify.set ? &c->notify : NULL;
}

/* A read-only fd holding s (a memfd), for a child's stdin; -1 on failure. */
static int stdin_of(const char *s)
{
	size_t n = strlen(s), off = 0;
	int fd = memfd_create("bernstein-hook", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	while (off < n) {
		ssize_t w = write(fd, s + off, n - off);

		if (w <= 0) {
			(void)close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		(void)close(fd);
		return -1;
	}
	return fd;
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v && *v)
		json_obj_set(o, k, json_str_lossy(v));
}

/* The event of hook k of t (NULL: the run's), as documented in docs/runs.md
 * ("Hooks"): never the prompt, never a secret. */
static json_t *hook_event(struct loop *l, const struct otask *t, enum hook_kind k)
{
	json_t *o = json_object();
	char ts[TS_MAX];

	json_obj_set(o, "hook", json_string(hook_kind_to_string(k)));
	json_obj_set(o, "time", json_str_lossy(run_now(l, ts)));
	set_str(o, "run", l->run.id);
	set_str(o, "run_name", l->run.name);
	set_str(o, "repo", l->e->repo);
	set_str(o, "base_branch", l->run.base_branch);
	if (!t) {
		json_t *counts = json_object();
		bool open_ = false, bad = false;
		size_t i;

		for (i = 0; i < l->n; i++) {
			enum task_state s = l->t[i].row.state;
			const char *name = task_state_to_string(s);
			json_t *c = name ? json_object_get(counts, name) : NULL;

			if (!name)
				continue;
			json_obj_set(counts, name, json_integer(c ? json_integer_value(c) + 1 : 1));
			if (!lifecycle_terminal(s))
				open_ = true;
			else if (!lifecycle_finished_ok(s))
				bad = true;
		}
		json_obj_set(o, "state",
			     json_string(run_state_to_string(open_ ? RUN_INTERRUPTED
							     : bad ? RUN_FAILED
								   : RUN_DONE)));
		json_obj_set(o, "counts", counts);
		return o;
	}
	set_str(o, "task", t->row.id);
	set_str(o, "title", t->row.title);
	set_str(o, "role", t->row.role);
	set_str(o, "adapter", t->row.adapter);
	/* pre_task: the attempt about to start */
	json_obj_set(o, "attempt", json_integer(t->row.attempts + (k == HOOK_PRE_TASK ? 1 : 0)));
	set_str(o, "state", task_state_to_string(t->row.state));
	set_str(o, "outcome", t->row.outcome);
	set_str(o, "reason", t->row.reason);
	set_str(o, "branch", t->row.branch);
	set_str(o, "head", t->row.head_commit);
	set_str(o, "merge_commit", t->row.merge_commit);
	set_str(o, "worktree", t->row.worktree);
	return o;
}

/* BERNSTEIN_* variables of an event: its short strings (no reason: it
 * may span lines; stdin has it). */
static void hook_env(const json_t *ev, struct strvec *env)
{
	static const char *const keys[] = {"hook",     "run",	      "task",	"state",
					   "outcome",  "attempt",     "branch", "head",
					   "worktree", "base_branch", "repo",	NULL};
	const char *const *k;
	char up[64];

	for (k = keys; *k; k++) {
		const json_t *v = json_object_get(ev, *k);
		size_t i;

		if (!v)
			continue;
		for (i = 0; (*k)[i] && i + 1 < sizeof(up); i++)
			up[i] = (char)((*k)[i] >= 'a' && (*k)[i] <= 'z' ? (*k)[i] - 32 : (*k)[i]);
		up[i] = '\0';
		if (json_is_string(v))
			strvec_pushf(env, "BERNSTEIN_%s=%s", up, json_string_value(v));
		else if (json_is_integer(v))
			strvec_pushf(env, "BERNSTEIN_%s=%" JSON_INTEGER_FORMAT, up,
				     json_integer_value(v));
	}
	if (json_is_string(json_object_get(ev, "hook")))
		strvec_pushf(env, "BERNSTEIN_EVENT=%s",
			     json_string_value(json_object_get(ev, "hook")));
}

/* The event on stdin and in BERNSTEIN_*: 0 or -EIO (no memfd). */
static int hook_io(const json_t *ev, struct proc_spec *spec)
{
	char *s = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
	int fd;

	if (!s)
		return -ENOMEM;
	fd = stdin_of(s);
	free(s);
	if (fd < 0)
		return -EIO;
	if (spec->stdin_fd >= 0)
		(void)close(spec->stdin_fd);
	spec->stdin_fd = fd;
	hook_env(ev, &spec->env);
	return 0;
}

void run_hook_gate_io(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	json_t *ev = hook_event(l, t, HOOK_PRE_MERGE);

	(void)hook_io(ev, spec);
	json_decref(ev);
}

bool run_hook_is_gate(const struct otask *t)
{
	return t->gate_hook && t->gates && t->gate_next + 1 == t->n_gates;
}

/* The log of hook k of t (NULL: the run's), its directory made. */
static char *hook_log_path(const struct loop *l, const struct otask *t, enum hook_kind k)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	char *dir;
	size_t i, start;

	(void)sbuf_addf(&sb, "%s/%s/%s/hooks", l->e->repo, AGENTRUN_RUNS_DIR, l->run.id);
	dir = xstrdup(sb.buf);
	(void)mkdir_p(dir, 0755);
	free(dir);
	(void)sbuf_adds(&sb, "/");
	start = sb.len;
	if (t)
		(void)sbuf_addf(&sb, "%s.", t->row.id);
	(void)sbuf_addf(&sb, "%s.log", hook_kind_to_string(k));
	for (i = start; i < sb.len; i++)
		if (sb.buf[i] == '/')
			sb.buf[i] = '_';
	return sbuf_detach(&sb, NULL);
}

/* Hook k of t (the loop's run_hook for the run's) into spec. */
static int hook_spec(struct loop *l, struct otask *t, enum hook_kind k, json_t *ev,
		     struct proc_spec *spec)
{
	const struct otask *task = t == &l->run_hook ? NULL : t;
	const struct orch_hook *h = hook_of(l, task, k);
	const char *const *e;
	int r;

	strvec_push(&spec->argv, "/bin/sh");
	strvec_push(&spec->argv, "-c");
	strvec_push(&spec->argv, h->run);
	for (e = l->e->git_env; e && *e; e++)
		if (strncmp(*e, WORKTREE_GIT_ENV_PREFIX, strlen(WORKTREE_GIT_ENV_PREFIX)) != 0)
			strvec_push(&spec->env, *e);
	r = hook_io(ev, spec);
	if (r < 0)
		return r;
	spec->cwd = l->e->repo;
	spec->timeout_ms = run_secs_to_ms(h->timeout_s > 0 ? h->timeout_s : HOOK_DEFAULT_TIMEOUT_S);
	spec->kill_grace_ms = run_secs_to_ms(l->e->cfg->kill_grace_s);
	spec->init_exe = l->e->self_exe; /* what it leaves gets the grace */
	free(t->hook_log);
	t->hook_log = hook_log_path(l, task, k);
	(void)unlink(t->hook_log); /* this run of the hook only */
	spec->log_path = t->hook_log;
	spec->max_log_bytes = HOOK_LOG_MAX;
	spec->cgroup_name = task ? task->row.id : "run";
	t->hook_kind = (int)k;
	t->hook_live = true;
	return 0;
}

void run_hooks_release(struct otask *t)
{
	int i;

	for (i = 0; i < _HOOK_KIND_MAX; i++) {
		json_decref(t->hook_ev[i]);
		t->hook_ev[i] = NULL;
	}
	json_decref(t->hook_live_ev);
	t->hook_live_ev = NULL;
	free(t->hook_log);
	t->hook_log = NULL;
	t->hooks_due = 0;
}

/* The hooks due of the run's tasks that resume must run if this execution
 * is killed: post_merge and post_task, due or running (pre_task runs again
 * before the next attempt anyway, pre_merge is a gate, on_run_end belongs
 * to an execution). Written to state.db each time the set changes. */
static bool persisted(int k)
{
	return k == HOOK_POST_MERGE || k == HOOK_POST_TASK;
}

static void due_save(struct loop *l)
{
	json_t *a = json_array();
	char ts[TS_MAX], *s;
	struct diag d;
	size_t i;
	int k, r;

	for (i = 0; i < l->n; i++) {
		const struct otask *t = &l->t[i];

		for (k = 0; k < _HOOK_KIND_MAX; k++) {
			const json_t *ev = NULL;

			if (!persisted(k))
				continue;
			if (t->hook_live && t->hook_kind == k && t->hook_live_ev)
				ev = t->hook_live_ev;
			else if (t->hooks_due & (1u << k))
				ev = t->hook_ev[k];
			else
				continue;
			(void)json_array_append_new(
				a, json_pack("{s:s, s:s, s:O?}", "task", t->row.id, "hook",
					     hook_kind_to_string((enum hook_kind)k), "event", ev));
		}
	}
	s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	diag_clear(&d);
	r = s ? state_run_set_hooks_due(l->e->st, l->run.id, s, run_now(l, ts), &d) : -ENOMEM;
	free(s);
	if (r < 0)
		run_fail(l, r, &d);
}

/* The first hook due of t into spec: 1, or 0 (none, or it could not be
 * prepared: then it is skipped with a warning). */
static int due_spec(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	/* post_merge before post_task: the merge happened first */
	static const enum hook_kind order[] = {HOOK_PRE_TASK, HOOK_PRE_MERGE, HOOK_POST_MERGE,
					       HOOK_POST_TASK, HOOK_ON_RUN_END};
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		enum hook_kind k = order[i];
		json_t *ev;
		int r;

		if (!(t->hooks_due & (1u << k)))
			continue;
		t->hooks_due &= ~(1u << k);
		ev = t->hook_ev[k] ? t->hook_ev[k] : hook_event(l, t, (enum hook_kind)k);
		t->hook_ev[k] = NULL;
		r = hook_of(l, t, (enum hook_kind)k) ? hook_spec(l, t, (enum hook_kind)k, ev, spec)
						     : -ENOENT;
		if (r == 0) {
			json_decref(t->hook_live_ev);
			t->hook_live_ev = persisted(k) ? ev : NULL; /* due until it ended */
			if (!persisted(k))
				json_decref(ev);
			return 1;
		}
		json_decref(ev);
		proc_spec_release(spec);
		if (r != -ENOENT)
			run_warn(l, t, "hook '%s' could not be started: %s",
				 hook_kind_to_string((enum hook_kind)k), strerror(-r));
		if (persisted(k))
			due_save(l); /* it will not run: no longer due */
	}
	return 0;
}

int run_hook_next(struct loop *l, struct proc_spec *spec, void **ret_task)
{
	size_t i;

	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)) {
		struct otask *t = &l->t[i];

		if (!t->hooks_due || t->hook_live || t->live || t->gate_live)
			continue;
		if (due_spec(l, t, spec) == 1) {
			*ret_task = t;
			return 1;
		}
	}
	return 0;
}

int run_hook_pre_task(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	json_t *ev;
	int r;

	if (t->pre_task_ok || !hook_of(l, t, HOOK_PRE_TASK))
		return 0;
	if (t->hook_live)
		return 2; /* running: the task waits */
	ev = hook_event(l, t, HOOK_PRE_TASK);
	r = hook_spec(l, t, HOOK_PRE_TASK, ev, spec);
	json_decref(ev);
	if (r < 0) {
		char msg[512];

		proc_spec_release(spec);
		(void)snprintf(msg, sizeof(msg), "hook 'pre_task' could not be started: %s",
			       strerror(-r));
		(void)run_transition(l, t, TASK_EV_DISPATCH_FAILED, msg);
		return 2;
	}
	return 1;
}

/* Anything still running or due: the run has not ended. */
static bool anything_left(struct loop *l)
{
	size_t i;

	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)) {
		const struct otask *t = &l->t[i];

		if (t->live || t->gate_live || t->hook_live || t->hooks_due ||
		    (t->gates && t->row.state == TASK_COMPLETING))
			return true;
	}
	return l->run_hook.hook_live;
}

int run_hook_run_end(struct loop *l, bool waiting, struct proc_spec *spec, void **ret_task)
{
	json_t *ev;
	int r;

	if (l->run_hook_done || waiting || l->fatal || l->cancelled ||
	    !hook_of(l, NULL, HOOK_ON_RUN_END) || anything_left(l))
		return 0;
	l->run_hook_done = true;
	ev = hook_event(l, NULL, HOOK_ON_RUN_END);
	r = hook_spec(l, &l->run_hook, HOOK_ON_RUN_END, ev, spec);
	json_decref(ev);
	if (r < 0) {
		proc_spec_release(spec);
		run_warn(l, NULL, "hook 'on_run_end' could not be started: %s", strerror(-r));
		return 0;
	}
	*ret_task = &l->run_hook;
	return 1;
}

/* The one-line verdict on a hook's process into msg ("" when it passed). */
static void verdict(const char *name, const struct proc *p, const char *log, char *msg, size_t size)
{
	msg[0] = '\0';
	if (p->failed_stage != SHIM_STAGE_NONE)
		(void)snprintf(msg, size, "hook '%s' could not run (exit %d): %s", name,
			       p->exit_code, p->start_error ? p->start_error : "see its log");
	else if (p->timed_out)
		(void)snprintf(msg, size, "hook '%s' timed out after %.1f s (exit %d)", name,
			       (double)p->timeout_ms / 1000.0, HOOK_EXIT_TIMEOUT);
	else if (p->exit_code != 0)
		(void)snprintf(msg, size, "hook '%s' failed (exit %d)", name, p->exit_code);
	if (msg[0])
		orch_reason_with_gate_log(msg, size, log);
}

void run_hook_audit(struct loop *l, const struct otask *t, const char *name, const struct proc *p,
		    const char *log, bool ok)
{
	json_t *det = json_object();
	char *rid;

	json_obj_set(det, "run", json_str_lossy(l->run.id));
	if (t)
		json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "hook", json_str_lossy(name));
	json_obj_set(det, "exit_code", json_integer(p->exit_code));
	json_obj_set(det, "timed_out", json_boolean(p->timed_out));
	json_obj_set(det, "ok", json_boolean(ok));
	json_obj_set(det, "log", json_str_lossy(log));
	rid = t ? run_task_resource(l, t) : xstrdup(l->run.id);
	(void)run_audit(l, "hook.finished", t ? "task" : "run", rid, det);
	free(rid);
}

void run_hook_ended(struct loop *l, struct otask *t, const struct proc *p)
{
	enum hook_kind k = (enum hook_kind)t->hook_kind;
	const char *name = hook_kind_to_string(k);
	bool run_level = t == &l->run_hook;
	char msg[1024];

	t->hook_live = false;
	if (!name)
		name = "?";
	verdict(name, p, t->hook_log, msg, sizeof(msg));
	run_hook_audit(l, run_level ? NULL : t, name, p, t->hook_log, !msg[0]);
	if (p->cancelled && !t->cancel_req) {
		l->cancelled = true; /* SIGINT: the task stays as it is (resume) */
		if (t->hook_live_ev && (int)k >= 0) {
			/* it did not finish: due again, for resume */
			json_decref(t->hook_ev[k]);
			t->hook_ev[k] = t->hook_live_ev;
			t->hook_live_ev = NULL;
			t->hooks_due |= 1u << k;
		}
		return;
	}
	if (t->hook_live_ev) {
		/* it ran: never again (before anything else is recorded) */
		json_decref(t->hook_live_ev);
		t->hook_live_ev = NULL;
		due_save(l);
	}
	if (k == HOOK_PRE_TASK && !run_level) {
		if (t->cancel_req) {
			run_control_cancelled(l, t);
			return;
		}
		if (t->row.state != TASK_PENDING)
			return; /* cancelled meanwhile */
		if (!msg[0]) {
			t->pre_task_ok = true; /* next_task dispatches it */
			return;
		}
		(void)run_transition(l, t, TASK_EV_DISPATCH_FAILED, msg);
		return;
	}
	/* post_task, post_merge, on_run_end: said and audited, nothing more */
	if (msg[0])
		run_warn(l, run_level ? NULL : t, "%s", msg);
}

/* ---- the plan's hooks, and hooks due across executions (state.db) ---- */

int run_hooks_record(struct orch_env *e, const struct plan *plan, const char *run_id,
		     const char *now, struct diag *reterr)
{
	json_t *o;
	char *s;
	int r;

	if (!orch_hooks_any(&plan->hooks) && !plan->notify.set)
		return 0;
	o = json_object();
	if (orch_hooks_any(&plan->hooks))
		json_obj_set(o, "hooks", orch_hooks_json(&plan->hooks));
	if (plan->notify.set)
		json_obj_set(o, "notify", orch_notify_json(&plan->notify));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	r = state_run_set_hooks(e->st, run_id, s, now, reterr);
	free(s);
	return r;
}

/* runs.hooks_due into the tasks' hooks due (an entry of a task that is
 * gone, or malformed, is dropped) */
static void due_load(struct loop *l, const char *text)
{
	json_t *a = json_loads(text, 0, NULL), *e;
	size_t i;

	json_array_foreach(a, i, e)
	{
		long k = run_find_task(l, json_string_value(json_object_get(e, "task")));
		enum hook_kind h =
			hook_kind_from_string(json_string_value(json_object_get(e, "hook")));
		json_t *ev = json_object_get(e, "event");
		struct otask *t;

		if (k < 0 || !persisted((int)h) || !json_is_object(ev))
			continue;
		t = &l->t[k];
		json_decref(t->hook_ev[h]);
		t->hook_ev[h] = json_incref(ev);
		t->hooks_due |= 1u << h;
	}
	json_decref(a);
}

int run_hooks_load(struct loop *l, struct diag *reterr)
{
	char *text = NULL;
	int r;

	r = state_run_get_hooks(l->e->st, l->run.id, &text, reterr);
	if (r < 0)
		return r;
	if (text) {
		l->plan_hooks_json = json_loads(text, 0, NULL);
		free(text);
		text = NULL;
		if (!json_is_object(l->plan_hooks_json) ||
		    orch_hooks_from_json(json_object_get(l->plan_hooks_json, "hooks"),
					 &l->plan_hooks) < 0 ||
		    orch_notify_from_json(json_object_get(l->plan_hooks_json, "notify"),
					  &l->plan_notify) < 0) {
			diag_set(reterr, state_path(l->e->st), 0, 0,
				 "run '%s': its recorded hooks are malformed", l->run.id);
			return -EBADMSG;
		}
	}
	r = state_run_get_hooks_due(l->e->st, l->run.id, &text, reterr);
	if (r < 0)
		return r;
	if (text)
		due_load(l, text);
	free(text);
	return 0;
}

void run_hooks_loop_release(struct loop *l)
{
	json_decref(l->plan_hooks_json);
	l->plan_hooks_json = NULL;
	memset(&l->plan_hooks, 0, sizeof(l->plan_hooks));
	memset(&l->plan_notify, 0, sizeof(l->plan_notify));
}

/* A request served offline: only its hooks run (the run's tasks stay as
 * they are), under a supervisor of their own, each as in a run. */
static int drain_next(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct loop *l = ctx;

	if (l->fatal)
		return l->fatal;
	if (l->cancelled)
		return 0;
	return run_hook_next(l, spec, ret_task);
}

static void drain_exit(void *ctx, void *task, const struct proc *p)
{
	run_hook_ended(ctx, task, p);
}

int run_hooks_drain(struct loop *l, struct diag *reterr)
{
	static const struct supervisor_ops ops = {.next_task = drain_next, .on_exit = drain_exit};
	struct supervisor_opts sopts = {0};
	size_t i;
	int r;

	for (i = 0; i < l->n && !l->t[i].hooks_due; i++)
		;
	if (i == l->n)
		return 0;
	sopts.clock = l->e->clk;
	sopts.max_parallel = l->e->cfg && l->e->cfg->parallel ? (unsigned)l->e->cfg->parallel : 1;
	r = supervise_run(&ops, l, &sopts, reterr);
	if (r == -ECANCELED) {
		l->cancelled = true;
		r = 0;
	}
	return r;
}

/* ---- on every state change (run_transition()) ---- */

static bool settled(enum task_state s)
{
	return lifecycle_terminal(s) || s == TASK_REVIEW;
}

void run_hooks_transition(struct loop *l, struct otask *t, enum task_state from, enum task_event ev)
{
	enum task_state to = t->row.state;

	if (from == to)
		return;
	t->pre_task_ok = false; /* it runs again before the next attempt */
	if (!l->executing)
		return;
	if (ev == TASK_EV_MERGED && hook_of(l, t, HOOK_POST_MERGE)) {
		json_decref(t->hook_ev[HOOK_POST_MERGE]);
		t->hook_ev[HOOK_POST_MERGE] = hook_event(l, t, HOOK_POST_MERGE);
		t->hooks_due |= 1u << HOOK_POST_MERGE;
		due_save(l);
	}
	if (settled(to) && hook_of(l, t, HOOK_POST_TASK)) {
		json_decref(t->hook_ev[HOOK_POST_TASK]);
		t->hook_ev[HOOK_POST_TASK] = hook_event(l, t, HOOK_POST_TASK);
		t->hooks_due |= 1u << HOOK_POST_TASK;
		due_save(l);
	}
	if (to == TASK_FAILED || to == TASK_CONFLICT)
		run_notify(l, "task_failed", t, t->row.reason);
	else if (to == TASK_REVIEW)
		run_notify(l, "task_review", t, t->row.reason);
	else if (to == TASK_DONE)
		run_notify(l, "task_done", t, t->row.reason);
}

/* ---- notifications ---- */

/* The documented body (docs/configuration.md, "Notifications"). */
static json_t *notify_body(struct loop *l, const char *event, const struct otask *t,
			   const char *full_reason, char *text, size_t size)
{
	json_t *o = json_object();
	char ts[TS_MAX], reason_buf[NOTIFY_REASON_MAX + 1];
	const char *repo = strrchr(l->e->repo, '/'), *said, *reason = NULL;

	/* what the agent said stays home: in a sandbox without network, text
	 * it prints must not become a way out through the webhook */
	if (full_reason) {
		size_t n = strlen(full_reason);

		said = strstr(full_reason, ORCH_AGENT_SAID);
		if (said)
			n = (size_t)(said - full_reason);
		if (n > NOTIFY_REASON_MAX)
			n = NOTIFY_REASON_MAX;
		memcpy(reason_buf, full_reason, n);
		reason_buf[n] = '\0';
		reason = reason_buf;
	}

	json_obj_set(o, "source", json_string("bernstein"));
	json_obj_set(o, "event", json_str_lossy(event));
	json_obj_set(o, "time", json_str_lossy(run_now(l, ts)));
	set_str(o, "run", l->run.id);
	set_str(o, "run_name", l->run.name);
	set_str(o, "repo", repo ? repo + 1 : l->e->repo);
	if (t) {
		json_t *task = json_object();

		set_str(task, "id", t->row.id);
		set_str(task, "title", t->row.title);
		set_str(task, "role", t->row.role);
		set_str(task, "adapter", t->row.adapter);
		set_str(task, "state", task_state_to_string(t->row.state));
		set_str(task, "outcome", t->row.outcome);
		json_obj_set(task, "attempt", json_integer(t->row.attempts));
		set_str(task, "branch", t->row.branch);
		json_obj_set(o, "task", task);
		(void)snprintf(text, size, "bernstein: task '%s' %s (run %s)%s%s", t->row.id,
			       task_state_to_string(t->row.state), l->run.id, reason ? ": " : "",
			       reason ? reason : "");
	} else if (strcmp(event, "run_done") != 0) {
		/* a run's event that is not its end (budget_warn, budget_exceeded) */
		(void)snprintf(text, size, "bernstein: %s in run %s%s%s", event, l->run.id,
			       reason ? ": " : "", reason ? reason : "");
	} else {
		json_t *ev = hook_event(l, NULL, HOOK_ON_RUN_END);

		json_obj_set(o, "state", json_incref(json_object_get(ev, "state")));
		json_obj_set(o, "counts", json_incref(json_object_get(ev, "counts")));
		(void)snprintf(text, size, "bernstein: run %s %s%s%s", l->run.id,
			       json_string_value(json_object_get(ev, "state")), reason ? ": " : "",
			       reason ? reason : "");
		json_decref(ev);
	}
	set_str(o, "reason", reason);
	json_obj_set(o, "text", json_str_lossy(text));
	return o;
}

/* The helper beside this binary, or NULL. */
static char *notify_exe(const struct loop *l)
{
	char dir[PATH_MAX];

	if (!l->e->self_exe)
		return NULL;
	path_dirname(l->e->self_exe, dir, sizeof(dir));
	return agentrun_path(dir, NOTIFY_EXE);
}

/* What the helper may need of the host: the desktop session (notify-send)
 * and proxies (curl); never anything else. */
static void notify_env(const struct loop *l, struct strvec *env)
{
	static const char *const pass[] = {"DBUS_SESSION_BUS_ADDRESS=",
					   "DISPLAY=",
					   "WAYLAND_DISPLAY=",
					   "XDG_RUNTIME_DIR=",
					   "https_proxy=",
					   "HTTPS_PROXY=",
					   "http_proxy=",
					   "HTTP_PROXY=",
					   "no_proxy=",
					   "NO_PROXY=",
					   "SSL_CERT_FILE=",
					   "SSL_CERT_DIR=",
					   NULL};
	const char *const *e, *const *p;

	for (e = l->e->git_env; e && *e; e++)
		if (strncmp(*e, WORKTREE_GIT_ENV_PREFIX, strlen(WORKTREE_GIT_ENV_PREFIX)) != 0)
			strvec_push(env, *e);
	for (e = l->e->host_env; e && *e; e++)
		for (p = pass; *p; p++)
			if (strncmp(*e, *p, strlen(*p)) == 0)
				strvec_push(env, *e);
}

/* The value of name in bernstein's environment, or NULL. */
static const char *host_value(const struct loop *l, const char *name)
{
	const char *const *e;
	size_t n = strlen(name);

	for (e = l->e->host_env; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

void run_notify(struct loop *l, const char *event, const struct otask *t, const char *reason)
{
	const struct orch_notify *n = notify_of(l, t);
	struct proc_spec spec = PROC_SPEC_INIT;
	enum notify_event ev = notify_event_from_string(event);
	char text[1024], *exe = NULL, *log = NULL, *s = NULL;
	const char *url;
	json_t *in = NULL, *body;
	struct diag d;
	int fd, r;

	if (!n || !n->set || (int)ev < 0 || !(n->on & (1u << ev)) ||
	    (!n->webhook && !n->webhook_env && !n->desktop))
		return;
	if (!l->executing)
		return;
	url = n->webhook;
	if (n->webhook_env) {
		url = host_value(l, n->webhook_env);
		if (!url || !*url) {
			run_warn(l, t, "notification '%s': %s is not set, no webhook", event,
				 n->webhook_env);
			url = NULL;
		} else if (url_webhook_check(url, NULL, &d) < 0) {
			run_warn(l, t, "notification '%s': %s: %s, no webhook", event,
				 n->webhook_env, d.msg);
			url = NULL;
		}
		if (!url && !n->desktop)
			return;
	}
	exe = notify_exe(l);
	if (!exe) {
		run_warn(l, t, "notification '%s' not sent: bernstein-notify not found", event);
		return;
	}
	body = notify_body(l, event, t, reason, text, sizeof(text));
	log = agentrun_path(l->e->repo, AGENTRUN_RUNS_DIR);
	{
		char *runs = log;

		log = agentrun_path(runs, l->run.id);
		free(runs);
		runs = log;
		(void)mkdir_p(runs, 0755);
		log = agentrun_path(runs, NOTIFY_LOG);
		free(runs);
	}
	in = json_object();
	json_obj_set(in, "url", url ? json_string(url) : json_null());
	json_obj_set(in, "body", body);
	json_obj_set(in, "desktop", json_boolean(n->desktop));
	{
		char summary[96];

		(void)snprintf(summary, sizeof(summary), "bernstein: %s", event);
		json_obj_set(in, "summary", json_str_lossy(summary));
	}
	json_obj_set(in, "message", json_str_lossy(text));
	json_obj_set(in, "timeout", json_real(n->timeout_s));
	json_obj_set(in, "retries", json_integer(n->retries));
	json_obj_set(in, "log", json_str_lossy(log));
	s = json_dumps(in, JSON_COMPACT);
	fd = s ? stdin_of(s) : -1;
	if (s) {
		/* the URL may hold a secret: no copy of it lingers */
		explicit_bzero(s, strlen(s));
		free(s);
	}
	if (fd < 0) {
		run_warn(l, t, "notification '%s' not sent: cannot prepare its input", event);
		goto out;
	}
	strvec_push(&spec.argv, exe);
	notify_env(l, &spec.env);
	spec.stdin_fd = fd;
	spec.cwd = l->e->repo;
	/* detached: the run's last notification goes on after bernstein
	 * exited; its own alarm (notify.timeout) bounds it; it writes its log */
	diag_clear(&d);
	r = proc_spawn_detached(&spec, NULL, &d);
	if (r < 0)
		run_warn(l, t, "notification '%s' not sent: %s", event, d.msg);
out:
	proc_spec_release(&spec);
	json_decref(in);
	free(exe);
	free(log);
}
