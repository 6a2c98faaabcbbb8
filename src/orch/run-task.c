/* The run loop's shared core: a run loaded into memory, a task moved on
 * the lifecycle table, audit records, small helpers (run-internal.h). */
#include "orch/run-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "orch/config.h"
#include "orch/control.h"
#include "proc/contain.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* ---- small helpers ---- */

/* Seconds (> 0, finite: checked when the plan and configuration loaded) to
 * whole milliseconds, rounded up. */
uint64_t run_secs_to_ms(double s)
{
	double ms = s * 1000.0;
	uint64_t v;

	if (!(ms > 0))
		return 0;
	if (ms > 1e15)
		return (uint64_t)1e15;
	v = (uint64_t)ms;
	return (double)v < ms ? v + 1 : v;
}

const char *run_now(struct loop *l, char *buf)
{
	return clock_iso8601_utc(l->e->clk->now_ns(l->e->clk), buf, TS_MAX);
}

void run_set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

void run_fail(struct loop *l, int r, const struct diag *d)
{
	if (l->fatal)
		return;
	l->fatal = r;
	if (d)
		l->fatal_d = *d;
}

void run_warn(struct loop *l, const struct otask *t, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!l->e->hooks.on_warning)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l->e->hooks.on_warning(l->e->hooks.userdata, t ? t->row.id : NULL, msg);
}

int run_audit(struct loop *l, const char *event_type, const char *rtype, const char *rid,
	      json_t *details)
{
	struct diag d;
	int r;

	diag_clear(&d);
	r = audit_append(l->e->chain, event_type, ORCH_ACTOR, rtype, rid, details, &d);
	json_decref(details);
	if (r < 0)
		run_fail(l, r, &d);
	return r;
}

char *run_task_resource(const struct loop *l, const struct otask *t)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s", l->run.id, t->row.id);
	return sbuf_detach(&sb, NULL);
}

/* Move t on ev (orch/lifecycle.h): commit the task row in its new state,
 * tell the hooks, and anchor the transition. A move the table does not have
 * is refused, the task left as it is, and stops the run (-EPROTO: a bug).
 * Returns 0 or the (fatal) error. */
int run_transition(struct loop *l, struct otask *t, enum task_event ev, const char *reason)
{
	enum task_state from = t->row.state, to = lifecycle_next(from, ev);
	char ts[TS_MAX];
	struct diag d;
	json_t *det;
	char *rid;
	int r;

	run_task_warm(l, t); /* an ended task's row, whole again before it is written */
	if (t->slim)
		return l->fatal;
	if ((int)to < 0) {
		diag_set(
			&d, NULL, 0, 0,
			"task '%s': illegal move from state %s on event %s, refused (a bug of bernstein's)",
			t->row.id, task_state_to_string(from), task_event_to_string(ev));
		run_warn(l, t, "%s", d.msg);
		run_fail(l, -EPROTO, &d);
		return -EPROTO;
	}
	t->row.state = to;
	if (reason)
		run_set_str(&t->row.reason, reason);
	diag_clear(&d);
	r = state_task_update(l->e->st, &t->row, run_now(l, ts), &d);
	if (r < 0) {
		run_fail(l, r, &d);
		return r;
	}
	if (from != to && l->e->hooks.on_task)
		l->e->hooks.on_task(l->e->hooks.userdata, &t->row, from);
	run_hooks_transition(l, t, from, ev);
	if (from == to)
		return 0;
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "from", json_str_lossy(task_state_to_string(from)));
	json_obj_set(det, "to", json_str_lossy(task_state_to_string(to)));
	json_obj_set(det, "reason", json_str_lossy(reason));
	if (t->row.adapter)
		json_obj_set(det, "adapter", json_str_lossy(t->row.adapter));
	json_obj_set(det, "attempt", json_integer(t->row.attempts));
	rid = run_task_resource(l, t);
	r = run_audit(l, "task.transition", "task", rid, det);
	free(rid);
	return r;
}

/* Refuse t before it ran: state refused (or failed: ev), with the reason. */
void run_refuse(struct loop *l, struct otask *t, enum task_event ev, const char *reason)
{
	(void)run_transition(l, t, ev, reason);
}

/* ---- loading the run ---- */

void run_task_ar_free(struct otask *t)
{
	if (!t->ar)
		return;
	agentrun_release(t->ar);
	free(t->ar);
	t->ar = NULL;
}

void run_task_trim(struct otask *t)
{
	if (!lifecycle_terminal(t->row.state) || t->live || t->gate_live || t->hook_live ||
	    run_prep_live(t) || (!t->sb_built && !t->prompt))
		return;
	run_sb_drop(t);
	confine_net_watch_release(&t->nw);
	t->sb_built = false;
	free(t->prompt);
	t->prompt = NULL;
}

/* The row's strings an ended task drops: all but its id, prompt and spec
 * (those go with run_task_cool()). */
static const size_t slim_offs[] = {
	offsetof(struct task_row, run_id),
	offsetof(struct task_row, title),
	offsetof(struct task_row, role),
	offsetof(struct task_row, adapter),
	offsetof(struct task_row, profile_hash),
	offsetof(struct task_row, retry_at),
	offsetof(struct task_row, outcome),
	offsetof(struct task_row, reason),
	offsetof(struct task_row, receipt_hash),
	offsetof(struct task_row, branch),
	offsetof(struct task_row, worktree),
	offsetof(struct task_row, session),
	offsetof(struct task_row, agent_session_id),
	offsetof(struct task_row, head_commit),
	offsetof(struct task_row, merge_commit),
	offsetof(struct task_row, conflicts),
	offsetof(struct task_row, artifact_sha256),
	offsetof(struct task_row, updated_at),
	offsetof(struct task_row, feedback),
};

static char **slim_str(struct task_row *r, size_t k)
{
	return (char **)(void *)((char *)r + slim_offs[k]);
}

bool run_task_slim(struct loop *l, struct otask *t)
{
	size_t i;

	(void)l;
	if (t->slim)
		return true;
	if (!t->loop || !t->row.id || !lifecycle_terminal(t->row.state) || t->live ||
	    t->gate_live || t->hook_live || run_prep_live(t) || t->hooks_due || t->gates ||
	    t->cancel_req || t->resolve_due || t->gates_due)
		return false;
	run_task_trim(t);
	run_task_ar_free(t);
	run_plan_drop(t);
	for (i = 0; i < ARRAY_SIZE(slim_offs); i++) {
		free(*slim_str(&t->row, i));
		*slim_str(&t->row, i) = NULL;
	}
	run_att_drop(t);
	checkout_release(&t->co);
	checkout_init(&t->co);
	strvec_clear(&t->attachments);
	free(t->session_dir);
	free(t->gate_log);
	free(t->hook_log);
	t->session_dir = t->gate_log = t->hook_log = NULL;
	t->slim = true;
	return true;
}

void run_task_warm(struct loop *l, struct otask *t)
{
	struct task_row row;
	struct diag d;
	size_t i;
	int r;

	if (!t->slim)
		return;
	task_row_init(&row);
	diag_clear(&d);
	r = state_task_get(l->e->st, l->run.id, t->row.id, &row, &d);
	if (r < 0) {
		diag_prefix(&d, "task '%s': its recorded row: ", t->row.id);
		run_fail(l, r, &d);
		task_row_release(&row);
		return;
	}
	/* its state and attempts in memory are what its last update wrote */
	for (i = 0; i < ARRAY_SIZE(slim_offs); i++) {
		free(*slim_str(&t->row, i));
		*slim_str(&t->row, i) = *slim_str(&row, i);
		*slim_str(&row, i) = NULL;
	}
	task_row_release(&row);
	t->slim = false;
	if (l->skip) /* the jumps over it no longer hold */
		memset(l->skip, 0, l->cap * sizeof(*l->skip));
}

size_t run_open(const struct loop *cl, size_t i)
{
	size_t *skip = cl->skip, j = i, k;

	while (j < cl->n && cl->t[j].slim)
		j = skip && skip[j] > j ? skip[j] : j + 1;
	/* the path taken shortened: the next walk jumps at once */
	while (skip && i < j && i < cl->n) {
		k = skip[i] > i ? skip[i] : i + 1;
		skip[i] = j;
		i = k;
	}
	return j;
}

struct invocation_plan *run_plan(const struct otask *ct)
{
	struct otask *t = (struct otask *)(uintptr_t)ct; /* never a const object */

	if (!t->plan) {
		t->plan = xmalloc(sizeof(*t->plan));
		invocation_plan_init(t->plan);
	}
	return t->plan;
}

struct attempt_row *run_att(const struct otask *ct)
{
	struct otask *t = (struct otask *)(uintptr_t)ct; /* never a const object */

	if (!t->att) {
		t->att = xmalloc(sizeof(*t->att));
		attempt_row_init(t->att);
	}
	return t->att;
}

void run_att_drop(struct otask *t)
{
	if (!t->att)
		return;
	attempt_row_release(t->att);
	free(t->att);
	t->att = NULL;
}

void run_plan_drop(struct otask *t)
{
	if (!t->plan)
		return;
	invocation_plan_release(t->plan);
	free(t->plan);
	t->plan = NULL;
}

struct confine_policy *run_sb(const struct otask *ct)
{
	struct otask *t = (struct otask *)(uintptr_t)ct; /* never a const object */

	if (!t->sb) {
		t->sb = xmalloc(sizeof(*t->sb));
		*t->sb = (struct confine_policy)CONFINE_POLICY_INIT;
	}
	return t->sb;
}

void run_sb_drop(struct otask *t)
{
	if (!t->sb)
		return;
	confine_policy_release(t->sb);
	free(t->sb);
	t->sb = NULL;
}

struct task_spec *run_spec_new(struct otask *t)
{
	if (t->spec)
		spec_release(t->spec);
	else
		t->spec = xmalloc(sizeof(*t->spec));
	spec_init(t->spec);
	return t->spec;
}

struct task_spec *run_spec(const struct otask *ct)
{
	/* the tasks of a loop are never const objects (l->t is allocated) */
	struct otask *t = (struct otask *)(uintptr_t)ct;
	struct task_row row;
	struct diag d;
	int r;

	if (t->spec)
		return t->spec;
	run_spec_new(t);
	if (!t->loop || !t->row.id)
		return t->spec; /* the run's own hook: no task, an empty spec */
	task_row_init(&row);
	r = state_task_get(t->loop->e->st, t->loop->run.id, t->row.id, &row, &d);
	if (r >= 0) {
		r = spec_parse_text(row.spec ? row.spec : "{}", row.spec ? strlen(row.spec) : 2,
				    t->spec, &d);
		if (r < 0)
			diag_prefix(&d, "task '%s': its recorded spec: ", t->row.id);
	}
	if (r < 0) {
		run_fail(t->loop, r, &d);
	} else {
		free(t->row.prompt);
		free(t->row.spec);
		t->row.prompt = row.prompt;
		t->row.spec = row.spec;
		row.prompt = row.spec = NULL;
	}
	task_row_release(&row);
	return t->spec;
}

const char *run_prompt(const struct otask *t)
{
	(void)run_spec(t);
	return t->row.prompt;
}

/* Does t's spec in memory say what state.db has (t->row.spec, the JSON
 * last written)? Retries and conflicts change it in memory and write it
 * with the task's next update. */
static bool spec_recorded(const struct otask *t)
{
	struct task_spec rec;
	struct diag d;
	char *a, *b = NULL;
	bool same;

	if (!t->row.spec)
		return false;
	spec_init(&rec);
	if (spec_parse_text(t->row.spec, strlen(t->row.spec), &rec, &d) < 0) {
		spec_release(&rec);
		return false;
	}
	a = spec_dump(t->spec);
	b = spec_dump(&rec);
	same = a && b && strcmp(a, b) == 0;
	free(a);
	free(b);
	spec_release(&rec);
	return same;
}

void run_task_cool(struct otask *t)
{
	if (!t->spec || t->spec_kept || !t->loop || !t->row.id || t->live || t->gate_live ||
	    t->hook_live || run_prep_live(t) || t->ar || t->gates || t->resolve_due || t->gates_due)
		return;
	if (!lifecycle_terminal(t->row.state) && (t->row.state != TASK_PENDING || t->spec->n_files))
		return; /* in flight, or its files: decide when it may start */
	if (!spec_recorded(t)) {
		t->spec_kept = true; /* a retry or conflict changed it: stays */
		return;
	}
	spec_release(t->spec);
	free(t->spec);
	t->spec = NULL;
	free(t->row.prompt);
	free(t->row.spec);
	t->row.prompt = t->row.spec = NULL;
}

static void otask_release(struct otask *t)
{
	run_task_ar_free(t);
	task_row_release(&t->row);
	if (t->spec)
		spec_release(t->spec);
	free(t->spec);
	run_plan_drop(t);
	free(t->deps);
	run_att_drop(t);
	free(t->prompt);
	strvec_clear(&t->attachments);
	free(t->session_dir);
	checkout_release(&t->co);
	run_sb_drop(t);
	confine_net_watch_release(&t->nw);
	free(t->gates);
	free(t->gate_log);
	run_hooks_release(t);
	free(t->resolve_base);
	free(t->own_adapter);
}

void run_loop_release(struct loop *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		otask_release(&l->t[i]);
	free(l->t);
	free(l->skip);
	run_hooks_release(&l->run_hook);
	run_hooks_loop_release(l);
	if (l->run_hook.spec)
		spec_release(l->run_hook.spec);
	free(l->run_hook.spec);
	run_plan_drop(&l->run_hook);
	run_sb_drop(&l->run_hook);
	l->ctl = control_close(l->ctl);
	run_row_release(&l->run);
	strvec_clear(&l->dead_branches);
	meters_release(&l->meters);
	run_executor_release(l);
}

long run_find_task(const struct loop *l, const char *id)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->t[i].row.id, id) == 0)
			return (long)i;
	return -1;
}

/* t's recorded spec parsed (run_spec_new()), its dependencies' ids kept in
 * deps for the second pass (they may name tasks not loaded yet). */
static int load_spec(struct loop *l, struct otask *t, struct strvec *deps, struct diag *reterr)
{
	struct diag d;
	size_t j;
	int r;

	r = spec_parse_text(t->row.spec ? t->row.spec : "{}", t->row.spec ? strlen(t->row.spec) : 2,
			    run_spec_new(t), &d);
	if (r < 0) {
		diag_set(reterr, state_path(l->e->st), 0, 0,
			 "task '%s' of run '%s': its recorded spec: %s", t->row.id, l->run.id,
			 d.msg);
		return r;
	}
	for (j = 0; j < t->spec->n_depends_on; j++)
		strvec_push(deps, t->spec->depends_on[j] ? t->spec->depends_on[j] : "");
	t->n_deps = t->spec->n_depends_on; /* their indices: the second pass */
	t->deps = t->n_deps ? xcalloc(t->n_deps, sizeof(size_t)) : NULL;
	return 0;
}

int run_loop_load(struct loop *l, struct orch_env *e, const char *run_id, struct diag *reterr)
{
	struct strvec ids = STRVEC_INIT, deps = STRVEC_INIT;
	size_t n = 0, i, j, k = 0;
	int r;

	memset(l, 0, sizeof(*l));
	l->e = e;
	meters_init(&l->meters, e->cfg ? e->cfg->retry_backoff_s : ORCH_DEFAULT_RETRY_BACKOFF_S,
		    e->clk);
	run_row_init(&l->run);
	r = state_run_get(e->st, run_id, &l->run, reterr);
	if (r < 0)
		return r;
	/* row by row (issue #24): the rows, prompts and specs of a big
	 * fan-out are never all in memory together; each task's spec is
	 * parsed for its dependencies and dropped at once when it waits or has
	 * ended (run_task_cool()) */
	r = state_task_ids(e->st, run_id, &ids, reterr);
	if (r < 0)
		return r;
	n = ids.nr;
	l->cap = n + ORCH_ADDED_MAX;
	l->t = xcalloc(l->cap, sizeof(*l->t));
	l->skip = xcalloc(l->cap, sizeof(*l->skip));
	for (i = 0; i < n; i++) {
		struct otask *t = &l->t[i];

		task_row_init(&t->row);
		t->attachments = (struct strvec)STRVEC_INIT;
		checkout_init(&t->co);
		t->loop = l;
		t->selected = true;
		r = state_task_get(e->st, run_id, ids.v[i], &t->row, reterr);
		if (r < 0)
			goto out;
		l->n = i + 1; /* released with the loop from here on */
		r = load_spec(l, t, &deps, reterr);
		if (r < 0)
			goto out;
		/* a waiting or ended task reads its spec again when it needs it */
		run_task_cool(t);
		/* a crash may have left the empty branch of a no_changes task,
		 * and the registration of its worktree set aside (run_set_aside()),
		 * without which git does not delete the branch */
		if (t->row.state == TASK_NO_CHANGES && t->row.branch) {
			strvec_push(&l->dead_branches, t->row.branch);
			l->prune_worktrees = true;
		}
	}
	for (i = 0; i < n; i++) {
		struct otask *t = &l->t[i];

		for (j = 0; j < t->n_deps; j++, k++) {
			long d = run_find_task(l, deps.v[k]);

			if (d < 0) {
				diag_set(
					reterr, state_path(e->st), 0, 0,
					"task '%s' of run '%s' depends on '%s', which the run does not have",
					t->row.id, run_id, deps.v[k][0] ? deps.v[k] : "?");
				r = -EBADMSG;
				goto out;
			}
			t->deps[j] = (size_t)d;
		}
	}
	r = 0;
out:
	strvec_clear(&ids);
	strvec_clear(&deps);
	return r;
}

char *run_session_path(const struct loop *l, const struct otask *t, const char *leaf)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s/%s/%s", l->e->repo, AGENTRUN_RUNS_DIR, l->run.id,
			t->row.session);
	if (leaf)
		(void)sbuf_addf(&sb, "/%s", leaf);
	return sbuf_detach(&sb, NULL);
}

/* The limits of t's agent and its gates: bernstein.yaml's, each one its
 * role's policy sets overriding, then each one the task sets (its spec
 * records them). */
void run_task_limits(const struct loop *l, const struct otask *t, struct contain_limits *ret)
{
	const struct role_policy *rp = orch_config_role(l->e->cfg, t->row.role);
	const struct contain_limits *lim = &run_spec(t)->limits;

	*ret = l->e->cfg->limits;
	if (rp && rp->limits.memory)
		ret->memory = rp->limits.memory;
	if (rp && rp->limits.pids)
		ret->pids = rp->limits.pids;
	if (rp && rp->limits.cpu_milli)
		ret->cpu_milli = rp->limits.cpu_milli;
	if (lim->memory)
		ret->memory = lim->memory;
	if (lim->pids)
		ret->pids = lim->pids;
	if (lim->cpu_milli)
		ret->cpu_milli = lim->cpu_milli;
}
