/* Runs: dispatch, completion, merge and resume (see run.h, docs/runs.md). */
#include "orch/run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/envpolicy.h"
#include "adapter/invocation.h"
#include "adapter/outcome.h"
#include "adapter/profile.h"
#include "adapter/strategy.h"
#include "audit/audit.h"
#include "orch/agentrun.h"
#include "orch/config.h"
#include "orch/confine.h"
#include "orch/control.h"
#include "orch/lifecycle.h"
#include "orch/plan.h"
#include "orch/spec.h"
#include "proc/holders.h"
#include "proc/contain.h"
#include "proc/landlock.h"
#include "proc/supervise.h"
#include "route/requirements.h"
#include "route/route.h"
#include "route/select.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/randid.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define TS_MAX		    40
#define ARTIFACT_MAX	    (1ull << 32) /* bytes hashed at most */
#define CONTEXT_EVENTS	    12		 /* events quoted in a fallback resume */
#define CONTEXT_EVENTS_READ (256u << 10) /* tail of events.jsonl read for them */
#define CONTEXT_FIELD_MAX   300
#define GATE_EXIT_TIMEOUT   124	       /* a gate past its timeout, as timeout(1) */
#define GATE_LOG_MAX	    (1u << 20) /* bytes of a gate's output kept in gate-NAME.log */
#define AUDIT_FLUSH_MS	    1000       /* at most one audit fsync a second while agents end */

/* ---- one task in memory ---- */

struct otask {
	struct task_row row;
	struct task_spec spec; /* the task as recorded (orch/spec.h) */
	size_t *deps;	       /* indices */
	size_t n_deps;
	bool selected; /* runs in this execution (resume of one task: only it) */

	/* the live attempt */
	bool live;
	struct loop *loop;
	struct attempt_row att;
	struct invocation_plan plan;
	struct agentrun ar;
	char *prompt; /* as given to the agent (fallback resume prefixes context) */
	struct strvec attachments;
	char *session_dir;
	/* the commit this execution made the task's branch at; NULL when the
	 * branch came from an earlier execution (a resume): then git is asked */
	char *start;
	/* sandboxed: the environment for git in the task's clone (git_env plus
	 * the confinement entries, worktree.h); empty until first needed */
	struct strvec clone_env;
	/* sandboxed: what its agent and gates may read and write, computed once
	 * per attempt (at dispatch; for gates after a resume, when first needed) */
	struct confine_policy sb;
	bool sb_built;
	/* gates: run by the supervisor like agents, one after the other */
	/* the list (gate_list(): names and commands borrowed from the
	 * configuration and spec) while state completing; NULL none */
	struct orch_gate *gates;
	size_t n_gates;
	size_t gate_next; /* the next one to run */
	bool gate_live;	  /* a gate of this task runs now */
	char *gate_log;	  /* its log file */
	/* the worktree made by a supervised `git worktree add` (dispatch()):
	 * routed and recorded, the command running, done, or failed (then
	 * worktree_add() repairs and makes it) */
	enum { PREP_NONE, PREP_RUNNING, PREP_DONE, PREP_FAILED } prep;
	/* `bernstein cancel` asked (its agent, gate or worktree command is
	 * being stopped: the task ends cancelled); `retry --fresh`: the next
	 * attempt starts afresh, not continuing the last one */
	bool cancel_req, fresh;
};

struct loop {
	struct orch_env *e;
	struct run_row run;
	struct otask *t;
	size_t n;
	int fatal; /* a negative errno that stops the run */
	struct diag fatal_d;
	bool cancelled;
	/* empty branches of no_changes tasks, deleted together: one git
	 * process for many (flush_branches()) */
	struct strvec dead_branches;
	/* worktree directories moved aside (judge_changes()): their
	 * registrations go with one `git worktree prune` in flush_branches() */
	bool prune_worktrees;
	/* audit group commit (flush_audit_soon()): mono ms of the last flush,
	 * and when the pending one is due (0: none pending) */
	uint64_t audit_flushed_ms, audit_due_ms;
	/* the sandbox tiers this host provides, looked at once (sandbox: auto) */
	unsigned host_tiers;
	bool host_tiers_known;
	/* the control channel (orch/control.h): NULL when not listening;
	 * draining: `bernstein stop`, no new dispatch; sv: the supervisor,
	 * while a request is carried out (NULL offline); cap: room in t for
	 * tasks added by `bernstein add-task` (t never moves: the supervisor
	 * holds pointers into it) */
	struct control *ctl;
	bool draining;
	struct supervisor *sv;
	size_t cap;
};

/* ---- small helpers ---- */

/* Seconds (> 0, finite: checked when the plan and configuration loaded) to
 * whole milliseconds, rounded up. */
static uint64_t secs_to_ms(double s)
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

static const char *now(struct loop *l, char *buf)
{
	return clock_iso8601_utc(l->e->clk->now_ns(l->e->clk), buf, TS_MAX);
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

static const char *jget_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void fail_run(struct loop *l, int r, const struct diag *d)
{
	if (l->fatal)
		return;
	l->fatal = r;
	if (d)
		l->fatal_d = *d;
}

static void warn(struct loop *l, const struct otask *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warn(struct loop *l, const struct otask *t, const char *fmt, ...)
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

static int audit(struct loop *l, const char *event_type, const char *rtype, const char *rid,
		 json_t *details)
{
	struct diag d;
	int r;

	diag_clear(&d);
	r = audit_append(l->e->chain, event_type, ORCH_ACTOR, rtype, rid, details, &d);
	json_decref(details);
	if (r < 0)
		fail_run(l, r, &d);
	return r;
}

static char *task_resource(const struct loop *l, const struct otask *t)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s", l->run.id, t->row.id);
	return sbuf_detach(&sb, NULL);
}

/* Move t on ev (orch/lifecycle.h): commit the task row in its new state,
 * tell the hooks, and anchor the transition. A move the table does not have
 * is refused, the task left as it is, and stops the run (-EPROTO: a bug).
 * Returns 0 or the (fatal) error. */
static int transition(struct loop *l, struct otask *t, enum task_event ev, const char *reason)
{
	enum task_state from = t->row.state, to = lifecycle_next(from, ev);
	char ts[TS_MAX];
	struct diag d;
	json_t *det;
	char *rid;
	int r;

	if ((int)to < 0) {
		diag_set(
			&d, NULL, 0, 0,
			"task '%s': illegal move from state %s on event %s, refused (a bug of bernstein's)",
			t->row.id, task_state_to_string(from), task_event_to_string(ev));
		warn(l, t, "%s", d.msg);
		fail_run(l, -EPROTO, &d);
		return -EPROTO;
	}
	t->row.state = to;
	if (reason)
		set_str(&t->row.reason, reason);
	diag_clear(&d);
	r = state_task_update(l->e->st, &t->row, now(l, ts), &d);
	if (r < 0) {
		fail_run(l, r, &d);
		return r;
	}
	if (from != to && l->e->hooks.on_task)
		l->e->hooks.on_task(l->e->hooks.userdata, &t->row, from);
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
	rid = task_resource(l, t);
	r = audit(l, "task.transition", "task", rid, det);
	free(rid);
	return r;
}

/* ---- loading the run ---- */

static void otask_release(struct otask *t)
{
	task_row_release(&t->row);
	spec_release(&t->spec);
	free(t->deps);
	attempt_row_release(&t->att);
	free(t->prompt);
	strvec_clear(&t->attachments);
	free(t->session_dir);
	free(t->start);
	strvec_clear(&t->clone_env);
	confine_policy_release(&t->sb);
	free(t->gates);
	free(t->gate_log);
}

static void loop_release(struct loop *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		otask_release(&l->t[i]);
	free(l->t);
	l->ctl = control_close(l->ctl);
	run_row_release(&l->run);
	strvec_clear(&l->dead_branches);
}

static long find_task(const struct loop *l, const char *id)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->t[i].row.id, id) == 0)
			return (long)i;
	return -1;
}

static int loop_load(struct loop *l, struct orch_env *e, const char *run_id, struct diag *reterr)
{
	struct task_row *rows = NULL;
	size_t n = 0, i, j;
	struct diag d;
	int r;

	memset(l, 0, sizeof(*l));
	l->e = e;
	run_row_init(&l->run);
	r = state_run_get(e->st, run_id, &l->run, reterr);
	if (r < 0)
		return r;
	r = state_tasks_get(e->st, run_id, &rows, &n, reterr);
	if (r < 0)
		return r;
	l->cap = n + ORCH_ADDED_MAX;
	l->t = xcalloc(l->cap, sizeof(*l->t));
	l->n = n;
	for (i = 0; i < n; i++) {
		struct otask *t = &l->t[i];

		t->row = rows[i];
		attempt_row_init(&t->att);
		t->attachments = (struct strvec)STRVEC_INIT;
		t->clone_env = (struct strvec)STRVEC_INIT;
		t->sb = (struct confine_policy)CONFINE_POLICY_INIT;
		t->loop = l;
		t->selected = true;
		invocation_plan_init(&t->plan);
		spec_init(&t->spec);
		r = spec_parse_text(t->row.spec ? t->row.spec : "{}",
				    t->row.spec ? strlen(t->row.spec) : 2, &t->spec, &d);
		if (r < 0) {
			diag_set(reterr, state_path(e->st), 0, 0,
				 "task '%s' of run '%s': its recorded spec: %s", t->row.id, run_id,
				 d.msg);
			/* the rows not moved into l->t go now */
			for (j = i + 1; j < n; j++)
				task_row_release(&rows[j]);
			free(rows);
			l->n = i + 1;
			return r;
		}
	}
	free(rows); /* the strings moved into l->t */
	for (i = 0; i < n; i++) {
		struct otask *t = &l->t[i];
		t->deps = xcalloc(t->spec.n_depends_on + 1, sizeof(size_t));
		for (j = 0; j < t->spec.n_depends_on; j++) {
			const char *id = t->spec.depends_on[j];
			long k = id ? find_task(l, id) : -1;

			if (k < 0) {
				diag_set(
					reterr, state_path(e->st), 0, 0,
					"task '%s' of run '%s' depends on '%s', which the run does not have",
					t->row.id, run_id, id ? id : "?");
				return -EBADMSG;
			}
			t->deps[t->n_deps++] = (size_t)k;
		}
		/* a crash may have left the empty branch of a no_changes task,
		 * and the registration of its worktree set aside (set_aside()),
		 * without which git does not delete the branch */
		if (t->row.state == TASK_NO_CHANGES && t->row.branch) {
			strvec_push(&l->dead_branches, t->row.branch);
			l->prune_worktrees = true;
		}
	}
	return 0;
}

/* ---- creating a run ---- */

int orch_run_create(struct orch_env *e, const struct plan *plan, const char *plan_path,
		    char *run_id, size_t size, struct diag *reterr)
{
	struct run_row run = RUN_ROW_INIT;
	char ts[TS_MAX], id[64];
	char *branch = NULL, *commit = NULL;
	json_t *det;
	size_t i;
	int r;

	if (!e->locked) {
		diag_set(reterr, e->repo, 0, 0, "a run is recorded only under %s", ORCH_LOCK_FILE);
		return -EINVAL;
	}
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
	r = audit_append(e->chain, "run.started", ORCH_ACTOR, "run", id, det, reterr);
	json_decref(det);
	if (r < 0)
		goto out;
	(void)snprintf(run_id, size, "%s", id);
out:
	free(branch);
	free(commit);
	return r;
}

/* ---- preflight and spawn ---- */

static bool deps_state(const struct loop *l, const struct otask *t, bool *ret_blocked)
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

static unsigned live_on_adapter(const struct loop *l, const char *adapter)
{
	size_t i;
	unsigned n = 0;

	for (i = 0; i < l->n; i++)
		if (l->t[i].live && l->t[i].row.adapter &&
		    strcmp(l->t[i].row.adapter, adapter) == 0)
			n++;
	return n;
}

/* The candidates and preference for routing t. */
static void routing_lists(const struct loop *l, const struct otask *t, struct strvec *cand,
			  struct strvec *pref, bool *ret_explicit)
{
	const struct orch_config *c = l->e->cfg;
	const char *a = t->spec.adapter;
	const struct role_policy *rp = orch_config_role(c, t->row.role);
	size_t i;

	*ret_explicit = false;
	if (!a && rp)
		a = rp->adapter;
	if (a) {
		strvec_push(cand, a);
		*ret_explicit = true;
		return;
	}
	strvec_push(pref, c->adapter);
	for (i = 0; i < c->preference.nr; i++)
		if (strcmp(c->preference.v[i], c->adapter) != 0)
			strvec_push(pref, c->preference.v[i]);
}

static char *session_path(const struct loop *l, const struct otask *t, const char *leaf)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s/%s/%s", l->e->repo, AGENTRUN_RUNS_DIR, l->run.id,
			t->row.session);
	if (leaf)
		(void)sbuf_addf(&sb, "/%s", leaf);
	return sbuf_detach(&sb, NULL);
}

/* t's sandbox tier: the one recorded when it was first routed
 * ("sandbox_tier" in its spec: kept by a retry and a resume, so its clone
 * stays a clone), else its own sandbox:, else bernstein.yaml's; auto is
 * the strongest tier this host provides that the routed adapter's profile
 * declares (none before routing, or when none fits). */
static void task_limits(const struct loop *l, const struct otask *t, struct contain_limits *ret);

/* The run's directory, where the container tier is probed (not root). */
static char *run_scratch(const struct loop *l)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s/%s", l->e->repo, AGENTRUN_RUNS_DIR, l->run.id);
	return sbuf_detach(&sb, NULL);
}

static unsigned host_tiers(struct loop *l)
{
	if (!l->host_tiers_known) {
		char *dir = run_scratch(l);

		l->host_tiers = confine_host_tiers(envpolicy_get(l->e->host_env, "PATH"),
						   l->e->self_exe, dir);
		l->host_tiers_known = true;
		free(dir);
	}
	return l->host_tiers;
}

/* The network mode t asks for (its own, else bernstein.yaml's), or -1:
 * the default (orch/confine.h). */
static int task_net_wanted(const struct loop *l, const struct otask *t)
{
	return t->spec.network >= 0 ? t->spec.network : l->e->cfg->network;
}

/* The tiers with a network namespace, when t asks for llm or none. */
static unsigned task_net_tiers(const struct loop *l, const struct otask *t)
{
	int w = task_net_wanted(l, t);

	if (w < 0 || w == NET_MODE_FULL)
		return ~0u;
	return (1u << SANDBOX_KIND_BWRAP) | (1u << SANDBOX_KIND_CONTAINER);
}

static enum sandbox_kind task_tier(struct loop *l, const struct otask *t)
{
	enum sandbox_mode m = t->spec.has_sandbox ? t->spec.sandbox : l->e->cfg->sandbox;

	if (t->spec.has_tier)
		return t->spec.tier;
	switch (m) {
	case SANDBOX_AUTO: {
		const struct registry_entry *entry =
			t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;

		if (!entry || !entry->profile)
			return SANDBOX_KIND_NONE;
		return confine_strongest(host_tiers(l) & task_net_tiers(l, t),
					 entry->profile->runtime.sandbox.tiers);
	}
	case SANDBOX_LANDLOCK:
		return SANDBOX_KIND_LANDLOCK;
	case SANDBOX_BWRAP:
		return SANDBOX_KIND_BWRAP;
	case SANDBOX_CONTAINER:
		return SANDBOX_KIND_CONTAINER;
	default:
		return SANDBOX_KIND_NONE;
	}
}

/* The tiers this host provides that t may get, before it is routed (for
 * capability:sandbox=T: select_input.host_tiers): every one for auto, the
 * one it names, or none. */
static unsigned task_offered_tiers(struct loop *l, const struct otask *t)
{
	enum sandbox_mode m = t->spec.has_sandbox ? t->spec.sandbox : l->e->cfg->sandbox;
	unsigned want;

	switch (m) {
	case SANDBOX_AUTO:
		want = ~0u;
		want &= task_net_tiers(l, t);
		break;
	case SANDBOX_LANDLOCK:
		want = 1u << SANDBOX_KIND_LANDLOCK;
		break;
	case SANDBOX_BWRAP:
		want = 1u << SANDBOX_KIND_BWRAP;
		break;
	case SANDBOX_CONTAINER:
		want = 1u << SANDBOX_KIND_CONTAINER;
		break;
	default:
		return 0;
	}
	return host_tiers(l) & want & ~(1u << SANDBOX_KIND_NONE);
}

/* The selection input of t: its requirements, its candidates (cand, pref:
 * the lists routing_lists() fills, which in borrows) and the sandbox tiers
 * it may get here when it requires one. */
static void routing_input(struct loop *l, const struct otask *t, const struct requirements *req,
			  struct strvec *cand, struct strvec *pref, struct select_input *in)
{
	bool explicit_list;

	routing_lists(l, t, cand, pref, &explicit_list);
	in->req = req;
	if (req->set & (1u << REQ_SANDBOX))
		in->host_tiers = task_offered_tiers(l, t);
	in->candidates = explicit_list ? (const char *const *)cand->v : NULL;
	in->preference = explicit_list ? NULL : (const char *const *)pref->v;
}

/* Whether t runs sandboxed (any tier): a clone of its own, confined. */
static bool task_sandboxed(struct loop *l, const struct otask *t)
{
	return task_tier(l, t) != SANDBOX_KIND_NONE;
}

/* The environment for git in t's checkout: for a sandboxed task's clone,
 * git_env plus the entries that make worktree.c run git there confined to
 * the clone (the agent controlled its config, hooks and refs). */
static const char *const *task_git_env(struct loop *l, struct otask *t)
{
	const char *const *e;

	if (!task_sandboxed(l, t) || !t->row.worktree)
		return l->e->git_env;
	if (!t->clone_env.nr) {
		for (e = l->e->git_env; e && *e; e++)
			strvec_push(&t->clone_env, *e);
		strvec_pushf(&t->clone_env, "%s=%s", WORKTREE_GIT_CONFINE_ENV, t->row.worktree);
	}
	return (const char *const *)t->clone_env.v;
}

/* t's endpoint (the base_url its agent is pointed at), or NULL: borrowed
 * from its spec or the configuration. */
static const char *task_endpoint(struct loop *l, const struct otask *t)
{
	const struct registry_entry *entry =
		t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;
	struct invocation_sampling out;

	orch_config_slots(l->e->cfg, t->row.role, entry ? entry->profile : NULL, &t->spec.sampling,
			  &out);
	return (out.set & (1u << SAMPLING_BASE_URL)) ? out.base_url : NULL;
}

/* t's network mode in its tier (orch/confine.h). */
static enum net_mode task_network(struct loop *l, const struct otask *t)
{
	return confine_net_default(task_net_wanted(l, t), task_tier(l, t), task_endpoint(l, t));
}

/* t's sandbox policy (orch/confine.h), built once per attempt: binary is
 * the agent's argv[0] (NULL for a gate after a resume), session_dir its
 * session directory (NULL: none yet). */
static int task_policy(struct loop *l, struct otask *t, const char *binary, const char *session_dir,
		       const char *home, const char *tmp, struct diag *reterr)
{
	const struct registry_entry *entry;
	char *objects = NULL;
	struct confine_input in = {
		.kind = task_tier(l, t),
		.repo = l->e->repo,
		.user_home = envpolicy_get(l->e->host_env, "HOME"),
		.audit_key = l->e->audit_key_path,
		.tree = t->row.worktree,
		.home = home,
		.tmp = tmp,
		.session_dir = session_dir,
		.binary = binary,
		.self_exe = l->e->self_exe,
		.path_env = envpolicy_get(l->e->host_env, "PATH"),
		.network = task_network(l, t),
		.endpoint = task_endpoint(l, t),
	};
	char *sock = NULL;
	int r;

	if (t->sb_built)
		return 0;
	if (in.network == NET_MODE_LLM)
		in.net_socket = sock = session_dir ? agentrun_path(session_dir, CONFINE_NET_SOCKET)
				       : t->session_dir
					       ? agentrun_path(t->session_dir, CONFINE_NET_SOCKET)
					       : session_path(l, t, CONFINE_NET_SOCKET);
	r = worktree_repo_objects(l->e->repo, l->e->git_env, &objects, reterr);
	if (r < 0)
		return r;
	in.objects = objects;
	entry = t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;
	if (entry && entry->profile) {
		in.decl = &entry->profile->runtime.sandbox;
		in.login = &entry->profile->runtime.login;
	}
	r = confine_policy_build(&in, &t->sb, reterr);
	free(objects);
	free(sock);
	if (r < 0)
		return r;
	t->sb_built = true;
	return 0;
}

/* The agent (or a gate) of a sandboxed task: read-write its clone, its
 * HOME, a private TMPDIR (set in its environment) and /dev/null; read-only
 * what t's policy allows; Landlock set before its execve, or for bwrap,
 * argv run in bubblewrap with the same Landlock rules inside; no Landlock
 * (or no bwrap), no agent (never best effort). */
static int confine_spec(struct loop *l, struct otask *t, const char *home, const char *tmp,
			struct proc_spec *spec, struct diag *reterr)
{
	const char *path_env = envpolicy_get(l->e->host_env, "PATH");
	const char *cwd = spec->cwd ? spec->cwd : t->row.worktree;
	struct strvec env = STRVEC_INIT, argv = STRVEC_INIT;
	char prog[PATH_MAX];
	size_t i;
	int r;

	r = mkdir_p(home, 0700);
	if (r >= 0)
		r = mkdir_p(tmp, 0700);
	if (r < 0) {
		diag_set(reterr, tmp, 0, 0, "cannot create the agent's HOME or TMPDIR: %s",
			 strerror(-r));
		return r;
	}
	r = task_policy(l, t, NULL, NULL, home, tmp, reterr);
	if (r >= 0 && t->sb.kind == SANDBOX_KIND_LANDLOCK)
		r = confine_policy_link_logins(&t->sb, home, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < spec->env.nr; i++)
		if (strncmp(spec->env.v[i], "TMPDIR=", 7) != 0)
			strvec_push(&env, spec->env.v[i]);
	strvec_pushf(&env, "TMPDIR=%s", tmp);
	confine_net_env(&t->sb, &env);
	strvec_clear(&spec->env);
	spec->env = env;
	switch (t->sb.kind) {
	case SANDBOX_KIND_BWRAP:
		if (!confine_find_program(path_env, "bwrap", prog, sizeof(prog))) {
			diag_set(
				reterr, NULL, 0, 0,
				"sandbox: bwrap: bubblewrap (bwrap) is not on PATH (the task is not run unconfined)");
			return -ENOENT;
		}
		confine_bwrap_argv(&t->sb, prog, l->e->self_exe, cwd, geteuid() == 0,
				   (const char *const *)spec->argv.v, &argv);
		/* bwrap makes user and PID namespaces of its own, which it
		 * cannot inside a user namespace of ours that has no uid map
		 * (not root): there its own PID namespace and --die-with-parent
		 * contain the agent, and ours is not asked for */
		if (geteuid() != 0 && spec->contain < CONTAIN_CGROUP)
			spec->contain = CONTAIN_CGROUP;
		break;
	case SANDBOX_KIND_CONTAINER: {
		/* a bundle per start (agent or gate), beside the session's files,
		 * where the agent cannot write */
		char hex[20], id[160], *dir;
		struct sbuf sb = SBUF_INIT(SIZE_MAX);
		struct confine_oci_opts o = {.rootless = geteuid() != 0, .cgroup = id};

		o.limits = &spec->limits;
		if (!confine_oci_runtime(path_env, prog, sizeof(prog), reterr))
			return -ENOENT;
		randid_hex(hex, 8, l->e->clk->now_ns(l->e->clk));
		if (t->session_dir)
			(void)sbuf_addf(&sb, "%s/oci-%s", t->session_dir, hex);
		else
			(void)sbuf_addf(&sb, "%s/%s/%s/%s/oci-%s", l->e->repo, AGENTRUN_RUNS_DIR,
					l->run.id, t->row.session, hex);
		dir = sbuf_detach(&sb, NULL);
		(void)snprintf(id, sizeof(id), "bernstein-%s-%s", t->row.session, hex);
		r = confine_oci_bundle(&t->sb, dir, l->e->self_exe, cwd,
				       (const char *const *)spec->env.v,
				       (const char *const *)spec->argv.v, &o, reterr);
		if (r >= 0)
			confine_oci_argv(prog, dir, id, &argv);
		/* rootless: the runtime makes the user namespace, as bwrap does */
		if (o.rootless && spec->contain < CONTAIN_CGROUP)
			spec->contain = CONTAIN_CGROUP;
		free(dir);
		if (r < 0)
			return r;
		break;
	}
	default:
		strvec_pushv(&spec->shim.landlock_rw, t->sb.rw.v);
		strvec_pushv(&spec->shim.landlock_rw, t->sb.login_src.v); /* each file alone */
		strvec_pushv(&spec->shim.landlock_ro, t->sb.ro.v);
		spec->shim.landlock_best_effort = false;
		return 0;
	}
	strvec_clear(&spec->argv);
	spec->argv = argv;
	if (t->sb.network == NET_MODE_LLM) {
		/* the sandbox's command behind the proxy (orch/confine.h) */
		char *log = t->session_dir ? agentrun_path(t->session_dir, CONFINE_NET_LOG)
					   : session_path(l, t, CONFINE_NET_LOG);

		argv = (struct strvec)STRVEC_INIT;
		confine_net_wrap(&t->sb, l->e->self_exe, log, (const char *const *)spec->argv.v,
				 &argv);
		free(log);
		strvec_clear(&spec->argv);
		spec->argv = argv;
	}
	return 0;
}

/* Why t cannot have its tier and network here, into msg (one line), or
 * NULL: never run unconfined, nor with the host's network, instead. */
static const char *tier_refusal(struct loop *l, const struct otask *t, char *msg, size_t size)
{
	const char *path_env = envpolicy_get(l->e->host_env, "PATH");
	enum sandbox_kind k = task_tier(l, t);
	const char *why = NULL;
	struct diag d;

	diag_clear(&d);
	if (confine_net_refusal(task_network(l, t), k, task_endpoint(l, t), msg, size))
		return msg;
	if (k == SANDBOX_KIND_NONE)
		return NULL;
	if (landlock_abi_version() < 0)
		why = "sandbox: landlock: the kernel does not support Landlock (the task is not run unconfined)";
	else if (k == SANDBOX_KIND_BWRAP && !confine_find_program(path_env, "bwrap", msg, size))
		why = "sandbox: bwrap: bubblewrap (bwrap) is not on PATH (the task is not run unconfined)";
	if (!why && k == SANDBOX_KIND_CONTAINER) {
		/* a runtime, and as another user than root a probe container
		 * that worked (confine_container_usable): the reason in msg */
		char *dir = run_scratch(l);
		int r = confine_container_usable(path_env, l->e->self_exe, dir, msg, size);

		free(dir);
		return r < 0 ? msg : NULL;
	}
	if (!why)
		return NULL;
	(void)snprintf(msg, size, "%s", why);
	return msg;
}

/* Refuse t before it ran: state refused (or failed: ev), with the reason. */
static void refuse(struct loop *l, struct otask *t, enum task_event ev, const char *reason)
{
	(void)transition(l, t, ev, reason);
}

/* The fallback resume prompt: what the previous attempt did, then the task. */
static char *fallback_prompt(struct loop *l, struct otask *t, const struct attempt_row *prev)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct strvec files = STRVEC_INIT;
	struct strvec lines = STRVEC_INIT;
	char *dir, *ev_path, *text = NULL;
	size_t len = 0, i, start;
	const char *final = NULL;
	json_t *last_text = NULL;

	(void)sbuf_addf(
		&sb,
		"## Resume context\n"
		"A previous attempt at this task (attempt %" PRId64
		", adapter %s) ended early (%s). Its work is in this worktree. Continue from where it stopped; do not redo what is done.\n",
		prev->n, prev->adapter ? prev->adapter : "?",
		prev->reason ? prev->reason : (prev->outcome ? prev->outcome : "interrupted"));
	if (prev->agent_session_id)
		(void)sbuf_addf(&sb, "- prior_adapter_session_id: %s\n", prev->agent_session_id);
	if (t->row.worktree) {
		(void)worktree_changes(t->row.worktree, task_git_env(l, t), &files, NULL);
		if (l->run.base_branch && t->row.branch && task_sandboxed(l, t)) {
			/* the branch is in the clone only: from the base's commit */
			char *base = NULL;

			if (git_branch_commit(l->e->repo, l->run.base_branch, l->e->git_env, &base,
					      NULL) == 0)
				(void)git_changed_files(t->row.worktree, base, t->row.branch,
							task_git_env(l, t), &files, NULL);
			free(base);
		} else if (l->run.base_branch && t->row.branch) {
			(void)git_changed_files(l->e->repo, l->run.base_branch, t->row.branch,
						l->e->git_env, &files, NULL);
		}
	}
	if (files.nr) {
		(void)sbuf_addf(&sb, "- files changed so far:");
		for (i = 0; i < files.nr && i < 50; i++)
			(void)sbuf_addf(&sb, " %s", files.v[i]);
		(void)sbuf_addf(&sb, "%s\n", files.nr > 50 ? " ..." : "");
	} else {
		(void)sbuf_addf(&sb, "- files changed so far: none\n");
	}
	dir = session_path(l, t, NULL);
	{
		struct sbuf p = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&p, "%s/%" PRId64 "/events.jsonl", dir, prev->n);
		ev_path = sbuf_detach(&p, NULL);
	}
	if (read_file_tail(ev_path, CONTEXT_EVENTS_READ, &text, &len) == 0 && text) {
		const char *p = len > CONTEXT_EVENTS_READ ? text + len - CONTEXT_EVENTS_READ : text;
		char *copy = xstrdup(p), *save = NULL, *line;

		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			json_t *ev = json_loads(line, 0, NULL);
			const char *kind = jget_str(ev, "kind");
			const char *what = NULL;

			if (kind && (strcmp(kind, "text") == 0 || strcmp(kind, "result") == 0)) {
				what = jget_str(ev, "text");
				if (what && *what) {
					json_decref(last_text);
					last_text = json_string(what);
				}
			} else if (kind && strcmp(kind, "tool_call") == 0) {
				what = jget_str(ev, "tool_name");
			} else if (kind && strcmp(kind, "error") == 0) {
				what = jget_str(ev, "message");
			}
			if (kind && what && *what)
				strvec_pushf(&lines, "- %s: %.*s", kind, CONTEXT_FIELD_MAX, what);
			json_decref(ev);
		}
		free(copy);
	}
	final = last_text ? json_string_value(last_text) : NULL;
	if (final)
		(void)sbuf_addf(&sb, "- final message: %.*s\n", CONTEXT_FIELD_MAX * 4, final);
	if (lines.nr) {
		(void)sbuf_addf(&sb, "### Last events\n");
		start = lines.nr > CONTEXT_EVENTS ? lines.nr - CONTEXT_EVENTS : 0;
		for (i = start; i < lines.nr; i++)
			(void)sbuf_addf(&sb, "%s\n", lines.v[i]);
	}
	(void)sbuf_addf(&sb, "\n## Task\n%s", t->row.prompt ? t->row.prompt : "");
	json_decref(last_text);
	strvec_clear(&files);
	strvec_clear(&lines);
	free(text);
	free(ev_path);
	free(dir);
	return sbuf_detach(&sb, NULL);
}

/* The previous attempt of t, when the next one should continue it. */
static bool previous_attempt(struct loop *l, struct otask *t, struct attempt_row *ret)
{
	struct attempt_row *v = NULL;
	size_t n = 0;
	bool found = false;

	if (t->row.attempts <= 0)
		return false;
	if (state_attempts_get(l->e->st, l->run.id, t->row.id, &v, &n, NULL) < 0 || n == 0)
		return false;
	*ret = v[n - 1];
	attempt_row_init(&v[n - 1]);
	found = true;
	attempt_rows_free(v, n);
	return found;
}

static void on_agent_event(void *userdata, const struct event *ev, const char *json, size_t len)
{
	struct otask *t = userdata;
	struct loop *l = t->loop;

	if (ev->kind == EVENT_SESSION_STARTED && ev->session_id && !t->att.agent_session_id) {
		char ts[TS_MAX];

		set_str(&t->att.agent_session_id, ev->session_id);
		set_str(&t->row.agent_session_id, ev->session_id);
		/* resume needs it even if bernstein dies now */
		(void)state_attempt_update(l->e->st, &t->att, NULL);
		(void)state_task_update(l->e->st, &t->row, now(l, ts), NULL);
	}
	if (l->e->hooks.on_event)
		l->e->hooks.on_event(l->e->hooks.userdata, &t->row, ev, json, len, t->ar.rd);
}

static void complete(struct loop *l, struct otask *t);
static void control_cancelled(struct loop *l, struct otask *t);

#define DISPATCH_BUSY 2

/* The limits of t's agent and its gates: bernstein.yaml's, each one its
 * role's policy sets overriding, then each one the task sets (its spec
 * records them). */
static void task_limits(const struct loop *l, const struct otask *t, struct contain_limits *ret)
{
	const struct role_policy *rp = orch_config_role(l->e->cfg, t->row.role);
	const struct contain_limits *lim = &t->spec.limits;

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

/* What a step of dispatch says: go on with the next step, or stop: 0 not
 * spawned (refused or failed: the state says), DISPATCH_BUSY, DISPATCH_SPAWN
 * (spec filled: spawn it), < 0 the run must stop. */
#define DISPATCH_NEXT  3
#define DISPATCH_SPAWN 4

/* What the steps of one dispatch hand on. */
struct dispatch {
	const struct registry_entry *entry; /* the routed adapter, with its profile */
	struct attempt_row prev;	    /* the attempt this one continues */
	bool resuming;
	char *state_dir; /* the agent's HOME */
	double timeout_s;
	struct invocation_request ir;
};

/* Routing (preflight): limits this host cannot enforce, the adapter's own
 * parallelism, route_and_record() and its receipt; the adapter and its
 * sandbox tier recorded with t. */
static int route_task(struct loop *l, struct otask *t, struct proc_spec *spec, struct dispatch *dp)
{
	struct orch_env *e = l->e;
	struct strvec cand = STRVEC_INIT, pref = STRVEC_INIT;
	struct select_input in = {.cat = e->cat};
	struct selection sel = {0};
	char msg[1024];
	struct diag d;
	int r, ret = 0;

	diag_clear(&d);
	/* limits this host cannot enforce: refused, never run without them */
	task_limits(l, t, &spec->limits);
	if (contain_limits_any(&spec->limits) &&
	    contain_limits_check(contain_host(), &spec->limits, msg, sizeof(msg)) < 0) {
		refuse(l, t, TASK_EV_REFUSED, msg);
		goto out;
	}
	routing_input(l, t, &t->spec.req, &cand, &pref, &in);
	/* the adapter's own parallelism first: decide without recording, and
	 * leave the task pending while that adapter is at its limit */
	if (select_adapter(&in, &sel, NULL) == 0 && sel.chosen && sel.chosen->profile) {
		int64_t max = sel.chosen->profile->caps.max_parallel_workers;

		if (live_on_adapter(l, sel.chosen->name) >= (unsigned)(max > 0 ? max : 1)) {
			ret = DISPATCH_BUSY;
			goto out;
		}
	}
	selection_release(&sel);
	memset(&sel, 0, sizeof(sel));
	r = route_and_record(&in, e->chain, l->run.id, &sel, &d);
	if (r == -ENOTSUP) {
		struct sbuf sb = SBUF_INIT(SIZE_MAX);
		char *why;

		set_str(&t->row.receipt_hash, sel.receipt_hash);
		(void)sbuf_addf(&sb, "no adapter satisfies ");
		(void)requirements_describe(&t->spec.req, &sb);
		(void)sbuf_addf(&sb, " (receipt %.16s)", sel.receipt_hash);
		why = sbuf_detach(&sb, NULL);
		refuse(l, t, TASK_EV_REFUSED, why);
		free(why);
		goto out;
	}
	if (r == -EINVAL) {
		refuse(l, t, TASK_EV_DISPATCH_FAILED, d.msg);
		goto out;
	}
	if (r < 0) {
		fail_run(l, r, &d);
		ret = r;
		goto out;
	}
	dp->entry = catalog_find(e->cat, sel.chosen->name);
	if (!dp->entry || !sel.chosen->profile) {
		(void)snprintf(msg, sizeof(msg),
			       "adapter '%s' has no capability profile; runs need one",
			       sel.chosen->name);
		refuse(l, t, TASK_EV_DISPATCH_FAILED, msg);
		goto out;
	}
	set_str(&t->row.adapter, dp->entry->name);
	set_str(&t->row.profile_hash, sel.chosen->profile_hash);
	/* its tier, decided now that its agent is known, recorded with it */
	if (!t->spec.has_tier) {
		t->spec.tier = task_tier(l, t);
		t->spec.has_tier = true;
		free(t->row.spec);
		t->row.spec = spec_dump(&t->spec);
	}
	/* a tier (and network) this host cannot give: refused before anything
	 * is made, never run unconfined nor with the host's network instead */
	if (tier_refusal(l, t, msg, sizeof(msg))) {
		refuse(l, t, TASK_EV_REFUSED, msg);
		goto out;
	}
	ret = DISPATCH_NEXT;
out:
	selection_release(&sel);
	strvec_clear(&cand);
	strvec_clear(&pref);
	return ret;
}

/* The names of t's checkout (session, branch, directory), committed before
 * anything is made: idempotent on resume. */
static int name_checkout(struct loop *l, struct otask *t)
{
	struct orch_env *e = l->e;
	char ts[TS_MAX], hex[16];
	struct diag d;
	int r;

	if (!t->row.session) {
		char s[128];

		randid_hex(hex, 6, e->clk->now_ns(e->clk));
		(void)snprintf(s, sizeof(s), "%s-%s", t->row.id, hex);
		set_str(&t->row.session, s);
	}
	if (!t->row.branch) {
		struct sbuf sb = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&sb, "%s%s", ORCH_BRANCH_PREFIX, t->row.session);
		t->row.branch = sbuf_detach(&sb, NULL);
	}
	if (!t->row.worktree) {
		struct sbuf sb = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&sb, "%s/%s/%s", e->repo, ORCH_WORKTREES_DIR, t->row.session);
		t->row.worktree = sbuf_detach(&sb, NULL);
	}
	diag_clear(&d);
	r = state_task_update(e->st, &t->row, now(l, ts), &d);
	if (r < 0) {
		fail_run(l, r, &d);
		return r;
	}
	return DISPATCH_NEXT;
}

/* A new worktree from the base branch as it is now (the merges of its
 * dependencies are in), in the common case by the supervisor beside the
 * other tasks' work: spec is that command (DISPATCH_SPAWN); the loop
 * continues with dispatch_made() when it ended. */
static int start_checkout(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	struct orch_env *e = l->e;
	struct diag d;
	int r;

	if (task_sandboxed(l, t))
		return DISPATCH_NEXT;
	diag_clear(&d);
	r = worktree_add_command(e->repo, t->row.worktree, t->row.branch, l->run.base_branch,
				 e->git_env, &spec->argv, &spec->env, &spec->timeout_ms, &d);
	if (r == 1) {
		t->prep = PREP_RUNNING;
		t->live = true;
		return DISPATCH_SPAWN;
	}
	proc_spec_release(spec);
	return DISPATCH_NEXT;
}

/* t's checkout made (a sandboxed task's clone of its own, else the
 * worktree, unless the supervised command made it); t->start is the commit
 * its branch was made at when made now. */
static int make_checkout(struct loop *l, struct otask *t)
{
	struct orch_env *e = l->e;
	bool sandboxed = task_sandboxed(l, t);
	char msg[1024], *made = NULL;
	struct diag d;
	int r = 0;

	diag_clear(&d);
	if (sandboxed)
		r = worktree_clone_add(e->repo, t->row.worktree, t->row.branch, l->run.base_branch,
				       task_git_env(l, t), &made, &d);
	else if (t->prep != PREP_DONE)
		r = worktree_add(e->repo, t->row.worktree, t->row.branch, l->run.base_branch,
				 e->git_env, &made, &d);
	t->prep = PREP_NONE;
	if (made) {
		free(t->start);
		t->start = made;
	}
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot create the %s: %s",
			       sandboxed ? "clone" : "worktree", d.msg);
		refuse(l, t, TASK_EV_DISPATCH_FAILED, msg);
		return 0;
	}
	return DISPATCH_NEXT;
}

/* How the attempt continues the previous one: natively (its agent session)
 * or with a fallback prompt. */
static void resume_from(struct loop *l, struct otask *t, struct dispatch *dp)
{
	struct strategy_resolved res;

	(void)catalog_profile_strategy(l->e->cat, dp->entry->profile, &res);
	if (res.strategy.resume != RESUME_UNSUPPORTED && dp->prev.agent_session_id &&
	    dp->prev.adapter && strcmp(dp->prev.adapter, dp->entry->name) == 0) {
		dp->ir.resume_id = dp->prev.agent_session_id;
		t->att.resume_kind = xstrdup("native");
	} else {
		t->prompt = fallback_prompt(l, t, &dp->prev);
		t->att.resume_kind = xstrdup("fallback");
	}
	if (dp->prev.agent_session_id)
		t->att.resumed_from = xstrdup(dp->prev.agent_session_id);
}

/* The invocation of t's next attempt: model, sampling, attachments, the
 * session directory, what it continues; its own gates refuse here. */
static int build_invocation(struct loop *l, struct otask *t, struct dispatch *dp)
{
	struct orch_env *e = l->e;
	const struct role_policy *rp = orch_config_role(e->cfg, t->row.role);
	struct invocation_request *ir = &dp->ir;
	char nbuf[32], msg[1024];
	struct diag d;
	size_t i;
	int r;

	free(t->prompt);
	t->prompt = NULL;
	dp->resuming = previous_attempt(l, t, &dp->prev) && dp->prev.outcome &&
		       strcmp(dp->prev.outcome, outcome_to_string(OUTCOME_COMPLETED)) != 0 &&
		       !t->fresh;
	t->fresh = false;
	orch_config_slots(e->cfg, t->row.role, dp->entry->profile, &t->spec.sampling,
			  &ir->sampling);
	ir->model = t->spec.model ? t->spec.model : rp && rp->model ? rp->model : e->cfg->model;
	strvec_clear(&t->attachments);
	for (i = 0; i < t->spec.n_attachments; i++)
		strvec_pushf(&t->attachments, "%s/%s", t->row.worktree, t->spec.attachments[i]);
	t->row.attempts++;
	(void)snprintf(nbuf, sizeof(nbuf), "%" PRId64, t->row.attempts);
	free(t->session_dir);
	t->session_dir = session_path(l, t, nbuf);
	dp->state_dir = session_path(l, t, "home");

	ir->profile = dp->entry->profile;
	ir->catalog = e->cat;
	ir->dangerous = true;
	ir->attachments = (const char *const *)t->attachments.v;
	ir->n_attachments = t->attachments.nr;
	ir->workdir = t->row.worktree;
	ir->session_dir = t->session_dir;
	ir->state_dir = dp->state_dir;
	ir->host_env = e->host_env;
	ir->self_exe = e->self_exe;
	dp->timeout_s = t->spec.timeout_s > 0 ? t->spec.timeout_s : e->cfg->timeout_s;
	ir->timeout_s = (secs_to_ms(dp->timeout_s) + 999) / 1000;
	/* the runner's sandbox_provider: bwrap confines by Landlock inside too */
	if (task_sandboxed(l, t))
		ir->sandbox = task_tier(l, t) == SANDBOX_KIND_CONTAINER ? "container" : "landlock";
	ir->arg_total_max = (size_t)sysconf(_SC_ARG_MAX) > 0 ? (size_t)sysconf(_SC_ARG_MAX) : 0;

	attempt_row_release(&t->att);
	attempt_row_init(&t->att);
	if (dp->resuming)
		resume_from(l, t, dp);
	ir->prompt = t->prompt ? t->prompt : (t->row.prompt ? t->row.prompt : "");
	invocation_plan_release(&t->plan);
	invocation_plan_init(&t->plan);
	diag_clear(&d);
	r = invocation_build(ir, &t->plan, &d);
	if (r < 0) {
		t->row.attempts--;
		(void)snprintf(msg, sizeof(msg), "preflight refused: %s", d.msg);
		refuse(l, t, r == -EPERM || r == -E2BIG ? TASK_EV_REFUSED : TASK_EV_DISPATCH_FAILED,
		       msg);
		return 0;
	}
	return DISPATCH_NEXT;
}

/* The attempt row, committed before the agent starts; then t is running. */
static int begin_attempt(struct loop *l, struct otask *t, const struct dispatch *dp)
{
	struct orch_env *e = l->e;
	const char *kind = t->att.resume_kind;
	char ts[TS_MAX];
	struct diag d;
	int r;

	t->att.run_id = xstrdup(l->run.id);
	t->att.task_id = xstrdup(t->row.id);
	t->att.n = t->row.attempts;
	t->att.session = xstrdup(t->row.session);
	t->att.adapter = xstrdup(dp->entry->name);
	t->att.profile_hash = t->row.profile_hash ? xstrdup(t->row.profile_hash) : NULL;
	t->att.started_at = xstrdup(now(l, ts));
	set_str(&t->row.outcome, NULL);
	diag_clear(&d);
	r = state_begin(e->st, &d);
	if (r >= 0)
		r = state_attempt_insert(e->st, &t->att, &d);
	if (r >= 0)
		r = state_commit(e->st, &d);
	if (r < 0) {
		(void)state_rollback(e->st, NULL);
		fail_run(l, r, &d);
		return r;
	}
	r = transition(l, t, TASK_EV_DISPATCHED,
		       !kind ? "dispatched"
		       : strcmp(kind, "native") == 0
			       ? "resumed (native)"
			       : "resumed (fresh session, recovered context)");
	return r < 0 ? r : DISPATCH_NEXT;
}

/* A sandboxed task's agent confined (orch/confine.h). */
static int confine_agent(struct loop *l, struct otask *t, const struct dispatch *dp,
			 struct proc_spec *spec, struct diag *reterr)
{
	char *tmp = session_path(l, t, "tmp");
	int r;

	confine_policy_release(&t->sb);
	t->sb_built = false;
	r = mkdir_p(dp->state_dir, 0700);
	if (r >= 0)
		r = mkdir_p(tmp, 0700);
	if (r >= 0)
		r = task_policy(l, t, t->plan.binary_found ? t->plan.argv.v[0] : NULL,
				t->session_dir, dp->state_dir, tmp, reterr);
	else
		diag_set(reterr, tmp, 0, 0, "cannot create the agent's HOME or TMPDIR: %s",
			 strerror(-r));
	if (r >= 0)
		r = confine_spec(l, t, dp->state_dir, tmp, spec, reterr);
	free(tmp);
	return r;
}

/* The session: its directory and files, the agent's process spec (its
 * limits, its confinement). DISPATCH_SPAWN, or 0 with t failed. */
static int start_session(struct loop *l, struct otask *t, const struct dispatch *dp,
			 struct proc_spec *spec)
{
	struct orch_env *e = l->e;
	const struct agentrun_hooks hooks = {.on_event = on_agent_event, .userdata = t};
	char msg[1024], ts[TS_MAX];
	struct diag d;
	json_t *pj;
	int r;

	diag_clear(&d);
	agentrun_init(&t->ar, &t->plan, &hooks);
	t->ar.timeout_ms = secs_to_ms(dp->timeout_s);
	t->ar.kill_grace_ms = secs_to_ms(e->cfg->kill_grace_s);
	t->ar.expect_changes = !t->spec.artifact;
	t->live = true;
	pj = agentrun_plan_json(dp->entry->profile, &t->plan, l->run.id, t->row.session);
	r = agentrun_open(&t->ar, pj, &d);
	json_decref(pj);
	if (r >= 0)
		r = agentrun_fill_spec(&t->ar, spec, &d);
	if (r >= 0) {
		task_limits(l, t, &spec->limits);
		spec->cgroup_name = t->row.id;
	}
	if (r >= 0 && task_sandboxed(l, t))
		r = confine_agent(l, t, dp, spec, &d);
	if (r < 0) {
		/* the agent never ran: the attempt ends as failed */
		(void)snprintf(msg, sizeof(msg), "cannot prepare the session: %s", d.msg);
		set_str(&t->att.outcome, outcome_to_string(OUTCOME_FAILED));
		set_str(&t->att.reason, msg);
		set_str(&t->att.ended_at, now(l, ts));
		(void)state_attempt_update(e->st, &t->att, NULL);
		agentrun_release(&t->ar);
		t->live = false;
		refuse(l, t, TASK_EV_AGENT_FAILED, msg);
		return 0;
	}
	agentrun_plan_warnings(&t->ar);
	if (!t->plan.binary_found) {
		/* nothing to start: the outcome a failed execve's 127 would give */
		agentrun_binary_missing(&t->ar);
		complete(l, t);
		return 0;
	}
	return DISPATCH_SPAWN;
}

/* From a made (or to be made) checkout to a started agent. */
static int dispatch_attempt(struct loop *l, struct otask *t, struct dispatch *dp,
			    struct proc_spec *spec)
{
	int r = make_checkout(l, t);

	if (r == DISPATCH_NEXT)
		r = build_invocation(l, t, dp);
	if (r == DISPATCH_NEXT)
		r = begin_attempt(l, t, dp);
	if (r == DISPATCH_NEXT)
		r = start_session(l, t, dp, spec);
	return r;
}

/* Preflight and prepare t's next attempt, one step after the other: route
 * -> name -> checkout -> invocation -> attempt -> session. 1: spec filled,
 * spawn it (the agent, or the command that makes t's worktree: then
 * next_task() goes on with it when it ended); 0: not spawned (refused,
 * failed: the state says); DISPATCH_BUSY: its adapter runs as many agents
 * as it may, the task stays pending; < 0: the run must stop. */
static int dispatch(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	struct dispatch dp = {.entry = NULL};
	int r;

	attempt_row_init(&dp.prev);
	if (t->prep == PREP_DONE || t->prep == PREP_FAILED) {
		/* routed and recorded when its worktree was started: go on */
		dp.entry = t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;
		r = DISPATCH_NEXT;
		if (!dp.entry || !dp.entry->profile) {
			t->prep = PREP_NONE;
			refuse(l, t, TASK_EV_DISPATCH_FAILED, "its adapter left the catalogue");
			r = 0;
		}
	} else {
		r = route_task(l, t, spec, &dp);
		if (r == DISPATCH_NEXT)
			r = name_checkout(l, t);
		if (r == DISPATCH_NEXT)
			r = start_checkout(l, t, spec);
	}
	if (r == DISPATCH_NEXT)
		r = dispatch_attempt(l, t, &dp, spec);
	attempt_row_release(&dp.prev);
	free(dp.state_dir);
	return r == DISPATCH_SPAWN ? 1 : r;
}

/* ---- completion ---- */

#define DEAD_BRANCHES_BATCH 64

/* Delete the collected empty branches: at the end of an execution, and
 * whenever DEAD_BRANCHES_BATCH gathered. A crash before leaves them; the
 * next execution of the run collects them again (loop_load()). */
static void flush_branches(struct loop *l)
{
	struct diag d;

	diag_clear(&d);
	if (l->prune_worktrees && worktree_prune(l->e->repo, l->e->git_env, &d) < 0)
		warn(l, NULL, "cannot prune the removed worktrees: %s", d.msg);
	l->prune_worktrees = false;
	if (!l->dead_branches.nr)
		return;
	if (worktree_branches_delete(l->e->repo, (const char *const *)l->dead_branches.v,
				     l->dead_branches.nr, l->e->git_env, &d) < 0)
		warn(l, NULL, "cannot delete %zu empty task branch(es): %s", l->dead_branches.nr,
		     d.msg);
	strvec_clear(&l->dead_branches);
}

#define TRASH_SUFFIX ".removing"

static bool strvec_has(const struct strvec *v, const char *s)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		if (strcmp(v->v[i], s) == 0)
			return true;
	return false;
}

/* Whether path/.git is a directory (a clone), not a worktree's .git file. */
static bool git_is_dir(const char *path)
{
	char *git = agentrun_path(path, ".git");
	struct stat st;
	bool dir = lstat(git, &st) == 0 && S_ISDIR(st.st_mode);

	free(git);
	return dir;
}

static char *trash_path(const char *worktree)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s" TRASH_SUFFIX, worktree);
	return sbuf_detach(&sb, NULL);
}

/* Move t's worktree (clean, its branch unmoved: nothing to keep) out of
 * the way in one step, a rename: from then on it is gone for git and for
 * resume. Its files go in remove_worktree(), after the state says
 * no_changes; its registration with the next `git worktree prune`
 * (flush_branches(); after a crash, the next execution's). */
static int set_aside(struct loop *l, struct otask *t)
{
	char *trash = trash_path(t->row.worktree);
	int r = 0;

	(void)rmtree_beneath(trash);
	if (rename(t->row.worktree, trash) < 0)
		r = -errno;
	else
		l->prune_worktrees = true;
	free(trash);
	return r;
}

/* The worktree of a finished task goes (judge_changes() moved it aside
 * already when removed); its branch stays unless it is empty, then it goes
 * soon after. */
static void remove_worktree(struct loop *l, struct otask *t, bool removed)
{
	bool empty = t->row.state == TASK_NO_CHANGES; /* nothing on the branch either */
	struct diag d;

	diag_clear(&d);
	if (removed && t->row.worktree) {
		char *trash = trash_path(t->row.worktree);
		int r = rmtree_beneath(trash);

		if (r < 0)
			warn(l, t, "cannot remove '%s': %s", trash, strerror(-r));
		free(trash);
	} else if (t->row.worktree && (task_sandboxed(l, t) || git_is_dir(t->row.worktree))) {
		/* a clone: deleted without following what the agent planted */
		int r = rmtree_beneath(t->row.worktree);

		if (r < 0)
			warn(l, t, "cannot remove the clone '%s': %s", t->row.worktree,
			     strerror(-r));
	} else if (t->row.worktree && worktree_remove(l->e->repo, t->row.worktree, false, NULL,
						      l->e->git_env, &d) < 0) {
		warn(l, t, "cannot remove the worktree '%s': %s", t->row.worktree, d.msg);
	} else if (t->row.worktree) {
		/* what a `git worktree remove` killed half way left: no longer a
		 * worktree for git, which leaves such a directory alone */
		struct stat st;
		int r;

		if (lstat(t->row.worktree, &st) == 0 && (r = rmtree_beneath(t->row.worktree)) < 0)
			warn(l, t, "cannot remove '%s': %s", t->row.worktree, strerror(-r));
	}
	if (empty && t->row.branch && !strvec_has(&l->dead_branches, t->row.branch)) {
		strvec_push(&l->dead_branches, t->row.branch);
		if (l->dead_branches.nr >= DEAD_BRANCHES_BATCH)
			flush_branches(l);
	}
}

static int64_t backoff_ms(const struct loop *l, int64_t attempt)
{
	double s = l->e->cfg->retry_backoff_s;
	int64_t i;

	for (i = 1; i < attempt && s < 3600; i++)
		s *= 2;
	return (int64_t)(s * 1000.0);
}

/* Artifact mode: the declared file exists inside the worktree; its SHA-256
 * goes into the row and the audit chain. 0, or a reason in msg. */
static int check_artifact(struct loop *l, struct otask *t, const char *art, char *msg, size_t size)
{
	char real_wt[PATH_MAX], real_art[PATH_MAX], hex[SHA256_HEX_LEN + 1];
	char *path = agentrun_path(t->row.worktree, art), *data = NULL, *rid;
	size_t len = 0, wl;
	struct stat st;
	json_t *det;
	int r;

	if (!realpath(t->row.worktree, real_wt) || !realpath(path, real_art) ||
	    lstat(real_art, &st) < 0) {
		(void)snprintf(msg, size, "the declared artifact '%s' was not produced", art);
		free(path);
		return -ENOENT;
	}
	if (!S_ISREG(st.st_mode)) {
		r = file_type_error(st.st_mode);
		(void)snprintf(msg, size, "the declared artifact '%s' %s", art, file_strerror(r));
		free(path);
		return r;
	}
	wl = strlen(real_wt);
	if (strncmp(real_art, real_wt, wl) != 0 || real_art[wl] != '/') {
		(void)snprintf(msg, size,
			       "the declared artifact '%s' resolves outside the worktree", art);
		free(path);
		return -EXDEV;
	}
	r = read_file_capped(real_art, ARTIFACT_MAX, &data, &len);
	free(path);
	if (r < 0) {
		(void)snprintf(msg, size, "cannot read the artifact '%s': %s", art,
			       file_strerror(r));
		return r;
	}
	hash_sha256_hex(data, len, hex);
	free(data);
	set_str(&t->row.artifact_sha256, hex);
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "path", json_str_lossy(art));
	json_obj_set(det, "sha256", json_str_lossy(hex));
	json_obj_set(det, "bytes", json_integer((json_int_t)len));
	rid = task_resource(l, t);
	r = audit(l, "artifact.completed", "task", rid, det);
	free(rid);
	return r < 0 ? r : 0;
}

/* t's gates: the configuration's, then its own. */
static void gate_list(const struct loop *l, struct otask *t)
{
	const struct orch_config *c = l->e->cfg;

	free(t->gates);
	t->n_gates = c->n_gates + t->spec.n_gates;
	t->gates = xcalloc(t->n_gates + 1, sizeof(*t->gates));
	if (c->n_gates)
		memcpy(t->gates, c->gates, c->n_gates * sizeof(*t->gates));
	if (t->spec.n_gates)
		memcpy(t->gates + c->n_gates, t->spec.gates, t->spec.n_gates * sizeof(*t->gates));
}

static void gates_clear(struct otask *t)
{
	free(t->gates);
	t->gates = NULL;
	t->n_gates = 0;
}

static void merge_task(struct loop *l, struct otask *t, const char *gates_msg);

/* The commits t's branch has over the base branch, asked where the branch
 * lives: the main repository, or a sandboxed task's clone (against the base
 * branch's commit, git confined there). */
static int task_ahead(struct loop *l, struct otask *t, unsigned *ret, struct diag *reterr)
{
	char *base = NULL;
	int r;

	if (!task_sandboxed(l, t))
		return git_commits_between(l->e->repo, l->run.base_branch, t->row.branch,
					   l->e->git_env, ret, reterr);
	r = git_branch_commit(l->e->repo, l->run.base_branch, l->e->git_env, &base, reterr);
	if (r >= 0)
		r = git_commits_between(t->row.worktree, base, t->row.branch, task_git_env(l, t),
					ret, reterr);
	free(base);
	return r;
}

/* The agent's work committed and judged; then the gates (run by the
 * supervisor: agents are read meanwhile, timeouts fire on time), then the
 * merge. The task is in state completing, or merging after a crash. */
static void finish(struct loop *l, struct otask *t)
{
	struct orch_env *e = l->e;
	const char *art = t->spec.artifact;
	bool sandboxed = task_sandboxed(l, t);
	char msg[2048];
	bool committed = false;
	unsigned ahead = 0;
	struct diag d;
	int r;

	diag_clear(&d);
	if (t->row.state == TASK_MERGING) {
		merge_task(l, t, NULL);
		return;
	}
	if (art && check_artifact(l, t, art, msg, sizeof(msg)) != 0) {
		if (!l->fatal)
			(void)transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "bernstein: %s\n\nTask %s of run %s, attempt %" PRId64 ".",
		       t->row.title ? t->row.title : t->row.id, t->row.id, l->run.id,
		       t->row.attempts);
	if (sandboxed && (r = worktree_clone_check(t->row.worktree, &d)) < 0) {
		(void)snprintf(msg, sizeof(msg), "the task's clone cannot be trusted: %s", d.msg);
		(void)transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	r = worktree_commit_all(t->row.worktree, msg, &e->identity, task_git_env(l, t), &committed,
				&d);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot commit the agent's changes: %s", d.msg);
		(void)transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	r = task_ahead(l, t, &ahead, &d);
	if (sandboxed && r >= 0 && ahead > 0) {
		/* only a branch with commits is fetched: no_changes leaves no
		 * branch behind in the main repository; then as any branch */
		r = worktree_clone_fetch(e->repo, t->row.worktree, t->row.branch, e->git_env, &d);
		if (r >= 0)
			r = git_commits_between(e->repo, l->run.base_branch, t->row.branch,
						e->git_env, &ahead, &d);
	}
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot inspect branch '%s': %s", t->row.branch,
			       d.msg);
		(void)transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	free(t->row.head_commit);
	t->row.head_commit = NULL;
	if (ahead > 0 || !sandboxed)
		(void)git_rev_parse(e->repo, t->row.branch, e->git_env, &t->row.head_commit, NULL);
	if (ahead == 0) {
		set_str(&t->row.outcome, outcome_to_string(OUTCOME_NO_CHANGES));
		(void)transition(l, t, TASK_EV_NO_CHANGES, "the agent finished without changes");
		remove_worktree(l, t, false);
		return;
	}
	gate_list(l, t);
	t->gate_next = 0;
	if (t->n_gates) {
		/* next_task starts them (gate_spec()), on_exit_cb() judges them
		 * (gate_ended()), and the last one to pass calls merge_task() */
		return;
	}
	gates_clear(t);
	merge_task(l, t, "no gates");
}

/* An ISO-8601 UTC time as clock_iso8601_utc() writes it, in ns since the
 * epoch; INT64_MAX when it cannot be read. */
static int64_t iso_to_ns(const char *ts)
{
	struct tm tm = {0};
	const char *end = ts ? strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	double frac = 0;

	if (!end)
		return INT64_MAX;
	if (*end == '.')
		frac = strtod(end, NULL);
	return (int64_t)timegm(&tm) * 1000000000LL + (int64_t)(frac * 1e9);
}

/* A merge that cannot be made now for a reason outside the task (the
 * checkout has changes or a file in the way, another git holds its index,
 * the disk is full): the task stays merging, with the reason, and the next
 * `bernstein resume` tries again. Never a conflict, never failed. */
static void merge_postponed(struct loop *l, struct otask *t, const char *why)
{
	char msg[1024];

	(void)snprintf(msg, sizeof(msg), "merge postponed ('bernstein resume' retries it): %s",
		       why);
	warn(l, t, "%s", msg);
	(void)transition(l, t, TASK_EV_MERGE_POSTPONED, msg);
}

/* After the gates passed: the merge (or done, with merge: none).
 *
 * Crash-safe in steps (docs/runs.md, "After a crash"): the merge commit is
 * made in the object store first (the checkout untouched; a conflict ends
 * there), recorded in the task's row (merge_commit, while merging: the
 * journal), and only then written into the checkout and the branch. A
 * task found merging with a recorded commit was interrupted there:
 * git_merge_recover() finishes it or puts the checkout back first. */
static void merge_task(struct loop *l, struct otask *t, const char *gates_msg)
{
	struct orch_env *e = l->e;
	char msg[2048], ts[TS_MAX];
	struct strvec conflicts = STRVEC_INIT;
	char *commit = NULL;
	bool already = false;
	int tries = 0;
	struct diag d;
	int r;

	diag_clear(&d);
	if (t->row.state != TASK_MERGING) {
		if (e->cfg->merge == MERGE_NONE) {
			(void)transition(l, t, TASK_EV_NOT_MERGED,
					 "completed; not merged (merge: none)");
			return;
		}
		if (transition(l, t, TASK_EV_GATES_PASSED, gates_msg) < 0)
			return;
	} else if (t->row.merge_commit) {
		enum git_merge_found found = GIT_MERGE_MOVED;

		r = git_merge_recover(e->repo, l->run.base_branch, t->row.merge_commit,
				      iso_to_ns(t->row.updated_at), &e->identity, e->git_env,
				      &found, &d);
		if (r < 0) {
			merge_postponed(l, t, d.msg);
			return;
		}
		if (found == GIT_MERGE_DONE)
			goto merged;
		if (found == GIT_MERGE_UNDONE) {
			commit = xstrdup(t->row.merge_commit);
			goto apply;
		}
	}
prepare:
	(void)snprintf(msg, sizeof(msg), "Merge %s: %s\n\nTask %s of run %s.", t->row.branch,
		       t->row.title ? t->row.title : t->row.id, t->row.id, l->run.id);
	free(commit);
	commit = NULL;
	r = git_merge_prepare(e->repo, l->run.base_branch, t->row.branch, msg, &e->identity,
			      e->git_env, &commit, &already, &conflicts, &d);
	if (r == -EBUSY) {
		json_t *a = json_strvec(&conflicts);
		char *s = json_dumps(a, JSON_COMPACT);

		set_str(&t->row.conflicts, s);
		set_str(&t->row.merge_commit, NULL);
		free(s);
		json_decref(a);
		(void)snprintf(msg, sizeof(msg),
			       "merge conflict in %zu file(s); branch '%s' kept as it is",
			       conflicts.nr, t->row.branch);
		(void)transition(l, t, TASK_EV_CONFLICT, msg);
		goto out;
	}
	if (r == -ENOENT || r == -EINVAL || r == -EOPNOTSUPP) {
		(void)snprintf(msg, sizeof(msg), "cannot merge '%s': %s", t->row.branch, d.msg);
		(void)transition(l, t, TASK_EV_MERGE_FAILED, msg);
		goto out;
	}
	if (r < 0) {
		merge_postponed(l, t, d.msg);
		goto out;
	}
	if (already) {
		(void)transition(l, t, TASK_EV_MERGED, "already merged");
		remove_worktree(l, t, false);
		goto out;
	}
	/* the journal, committed before the checkout is touched */
	set_str(&t->row.merge_commit, commit);
	r = state_task_update(e->st, &t->row, now(l, ts), &d);
	if (r < 0) {
		fail_run(l, r, &d);
		goto out;
	}
	set_str(&t->row.updated_at, ts);
apply:
	r = git_merge_apply(e->repo, l->run.base_branch, commit, &e->identity, e->git_env, &d);
	if (r == -ESTALE && ++tries < 2)
		goto prepare; /* the branch moved since: made again from where it is */
	if (r < 0) {
		merge_postponed(l, t, d.msg);
		goto out;
	}
merged:
	(void)transition(l, t, TASK_EV_MERGED, "merged");
	remove_worktree(l, t, false);
out:
	strvec_clear(&conflicts);
	free(commit);
}

/* Did the agent of t change anything: commits on its branch, or files in
 * its worktree? Asked only as far as the verdict depends on it, because each
 * git process costs the supervisor milliseconds on every task:
 *   - when the outcome is the same either way, not at all;
 *   - else by `git status`; when it lists nothing, the branch has not moved
 *     since this execution made it (read from the ref files) and
 *     "unchanged" makes the task no_changes, the worktree is moved aside at
 *     once (set_aside(), *ret_removed): the removal no_changes does anyway;
 *   - else by the commits the branch has over the base.
 * A crash between moving the worktree aside and the state commit that
 * follows leaves the task running in the state and its worktree gone;
 * resume makes the worktree again and runs the task on its (empty) branch,
 * never in a half-removed one. */
static void judge_changes(struct loop *l, struct otask *t, bool *ret_removed)
{
	struct orch_env *e = l->e;
	const char *const *genv = task_git_env(l, t);
	bool sandboxed = task_sandboxed(l, t), changed = false, moved = true, listed;
	struct strvec changes = STRVEC_INIT;
	enum outcome if_unchanged, if_changed;
	char *head = NULL;
	unsigned ahead = 0;

	*ret_removed = false;
	if (!t->row.worktree)
		return;
	agentrun_set_changes(&t->ar, false);
	if_unchanged = agentrun_classify(&t->ar, NULL, 0);
	agentrun_set_changes(&t->ar, true);
	if_changed = agentrun_classify(&t->ar, NULL, 0);
	if (if_unchanged == if_changed)
		return;
	/* a sandboxed task's branch is in its clone, where git runs confined */
	if (t->start && git_branch_commit(sandboxed ? t->row.worktree : e->repo, t->row.branch,
					  genv, &head, NULL) == 0)
		moved = strcmp(head, t->start) != 0;
	free(head);
	listed = worktree_changes(t->row.worktree, genv, &changes, NULL) == 0;
	if (listed && changes.nr > 0)
		changed = true;
	strvec_clear(&changes);
	if (listed && !changed && !sandboxed && !moved && if_unchanged == OUTCOME_NO_CHANGES &&
	    set_aside(l, t) == 0) {
		*ret_removed = true;
		agentrun_set_changes(&t->ar, false);
		return;
	}
	if (!changed && moved && task_ahead(l, t, &ahead, NULL) == 0 && ahead > 0)
		changed = true;
	agentrun_set_changes(&t->ar, changed);
}

/* The agent of t ended: record the attempt and move the task on. */
static void complete(struct loop *l, struct otask *t)
{
	struct orch_env *e = l->e;
	char why[256] = "", ts[TS_MAX], msg[512], tampered[1024] = "";
	enum outcome out;
	bool removed = false;
	struct diag d;
	int64_t delay;

	diag_clear(&d);
	/* a sandboxed task's clone: no git runs there unless it still is one */
	if (task_sandboxed(l, t) && t->row.worktree &&
	    worktree_clone_check(t->row.worktree, &d) < 0)
		(void)snprintf(tampered, sizeof(tampered), "the task's clone cannot be trusted: %s",
			       d.msg);
	else
		judge_changes(l, t, &removed);
	out = agentrun_classify(&t->ar, why, sizeof(why));
	set_str(&t->att.ended_at, now(l, ts));
	set_str(&t->att.outcome, outcome_to_string(out));
	set_str(&t->att.reason, why);
	t->att.exit_code = t->ar.agent_exit_code;
	if (t->ar.agent_session && !t->att.agent_session_id)
		t->att.agent_session_id = xstrdup(t->ar.agent_session);
	if (t->ar.input_tokens != EVENT_UNSET)
		t->att.input_tokens = t->ar.input_tokens;
	if (t->ar.output_tokens != EVENT_UNSET)
		t->att.output_tokens = t->ar.output_tokens;
	if (t->ar.cost_usd >= 0)
		t->att.cost_usd = t->ar.cost_usd;
	if (t->ar.last_kind[0])
		set_str(&t->att.last_event, t->ar.last_kind);
	if (t->ar.agent_session)
		set_str(&t->row.agent_session_id, t->ar.agent_session);
	set_str(&t->row.outcome, outcome_to_string(out));
	if (state_attempt_update(e->st, &t->att, &d) < 0)
		fail_run(l, -EIO, &d);
	{
		struct session_record rec = {
			.adapter = t->row.adapter,
			.run = l->run.id,
			.session = t->row.session,
			.task = t->row.id,
			.attempt = (int)t->row.attempts,
			.exit_code = -1,
			.started_at = t->att.started_at,
			.ended_at = t->att.ended_at,
		};
		json_t *s = agentrun_session_json(&t->ar, out, why, &rec);
		char *p = agentrun_path(t->session_dir, "session.json");

		(void)agentrun_write_json(p, s);
		json_decref(s);
		free(p);
	}
	agentrun_release(&t->ar);
	invocation_plan_release(&t->plan);
	invocation_plan_init(&t->plan);
	t->live = false;

	if (t->cancel_req) {
		control_cancelled(l, t);
		return;
	}
	if (tampered[0] && out != OUTCOME_FAILED) {
		(void)transition(l, t, TASK_EV_AGENT_FAILED, tampered);
		return;
	}
	switch (out) {
	case OUTCOME_COMPLETED:
		if (transition(l, t, TASK_EV_AGENT_COMPLETED, "the agent completed") == 0)
			finish(l, t);
		break;
	case OUTCOME_NO_CHANGES:
		(void)transition(l, t, TASK_EV_NO_CHANGES, why);
		remove_worktree(l, t, removed);
		break;
	case OUTCOME_RATE_LIMITED:
		if (t->row.attempts <= e->cfg->max_retries) {
			int64_t at = e->clk->now_ns(e->clk);

			delay = backoff_ms(l, t->row.attempts);
			(void)clock_iso8601_utc(at + delay * 1000000, ts, sizeof(ts));
			set_str(&t->row.retry_at, ts);
			(void)snprintf(msg, sizeof(msg),
				       "rate limited; retry %" PRId64 " of %" PRId64 " in %.1f s",
				       t->row.attempts, e->cfg->max_retries,
				       (double)delay / 1000.0);
			(void)transition(l, t, TASK_EV_RATE_LIMITED, msg);
		} else {
			(void)snprintf(msg, sizeof(msg),
				       "rate limited %" PRId64 " times; giving up",
				       t->row.attempts);
			(void)transition(l, t, TASK_EV_AGENT_FAILED, msg);
		}
		break;
	case OUTCOME_TIMED_OUT:
	case OUTCOME_KILLED:
	case OUTCOME_CANCELLED:
		(void)transition(l, t, TASK_EV_INTERRUPTED, why);
		break;
	case OUTCOME_FAILED:
	case OUTCOME_OOM: /* like failed */
	case OUTCOME_BINARY_MISSING:
	case OUTCOME_PERMISSION_BLOCKED:
	case _OUTCOME_MAX:
	case _OUTCOME_INVALID:
	default:
		(void)transition(l, t, TASK_EV_AGENT_FAILED, why);
		break;
	}
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
		fail_run(l, r, &d);
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

/* ---- gates, run by the supervisor ---- */

/* t's next gate into spec: `/bin/sh -c RUN` in the task's checkout with
 * git_env (PATH, HOME, LC_ALL=C...), its process group dying with bernstein,
 * its timeout and the configured kill grace, its output in
 * gate-NAME.log of the session directory (the first GATE_LOG_MAX bytes).
 * A gate runs what the agent wrote (its Makefile, its tests): in a sandboxed
 * task it is confined exactly like the agent (its clone, the agent's HOME
 * and TMPDIR read-write, nothing else), else it would carry the agent's code
 * out of the sandbox. 0, or a negative errno (t is failed, nothing to run). */
static int gate_spec(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	const struct orch_gate *g = &t->gates[t->gate_next];
	const char *name = g->name, *run = g->run;
	double to = g->timeout_s;
	const char *const *e;
	char leaf[160], *c;

	if (!(to > 0))
		to = ORCH_DEFAULT_GATE_TIMEOUT_S;
	strvec_push(&spec->argv, "/bin/sh");
	strvec_push(&spec->argv, "-c");
	strvec_push(&spec->argv, run ? run : "false");
	for (e = l->e->git_env; e && *e; e++)
		if (strncmp(*e, WORKTREE_GIT_ENV_PREFIX, strlen(WORKTREE_GIT_ENV_PREFIX)) != 0)
			strvec_push(&spec->env, *e);
	spec->cwd = t->row.worktree;
	spec->timeout_ms = secs_to_ms(to);
	spec->kill_grace_ms = secs_to_ms(l->e->cfg->kill_grace_s);
	(void)snprintf(leaf, sizeof(leaf), "gate-%s.log", name ? name : "gate");
	for (c = leaf; *c; c++)
		if (*c == '/')
			*c = '_'; /* a name is free text: the log stays in the session directory */
	free(t->gate_log);
	t->gate_log =
		t->session_dir ? agentrun_path(t->session_dir, leaf) : session_path(l, t, leaf);
	(void)unlink(t->gate_log); /* this run of the gate only */
	spec->log_path = t->gate_log;
	spec->max_log_bytes = GATE_LOG_MAX;
	/* the agent's limits: a gate runs what the agent wrote */
	task_limits(l, t, &spec->limits);
	spec->cgroup_name = t->row.id;
	if (task_sandboxed(l, t)) {
		char *home = session_path(l, t, "home"), *tmp = session_path(l, t, "tmp");
		struct strvec env = STRVEC_INIT;
		struct diag d = {0};
		size_t i;
		int r;

		for (i = 0; i < spec->env.nr; i++)
			if (strncmp(spec->env.v[i], "HOME=", 5) != 0)
				strvec_push(&env, spec->env.v[i]);
		strvec_pushf(&env, "HOME=%s", home);
		strvec_clear(&spec->env);
		spec->env = env;
		r = confine_spec(l, t, home, tmp, spec, &d);
		free(home);
		free(tmp);
		if (r < 0) {
			char msg[1024];

			(void)snprintf(msg, sizeof(msg), "gate '%s' could not be confined: %s",
				       name ? name : "gate", d.msg);
			gates_clear(t);
			(void)transition(l, t, TASK_EV_GATES_FAILED, msg);
			return r;
		}
	}
	t->gate_live = true;
	return 0;
}

/* A gate of t ended: the next one, the merge after the last, or failed. */
static void gate_ended(struct loop *l, struct otask *t, const struct proc *p)
{
	const char *name = t->gates[t->gate_next].name;
	char msg[1024] = "";
	size_t n;

	t->gate_live = false;
	if (!name)
		name = "?";
	if (t->cancel_req) {
		gates_clear(t);
		control_cancelled(l, t);
		return;
	}
	if (p->cancelled) {
		/* stays completing: resume runs the gates again */
		l->cancelled = true;
		return;
	}
	if (p->failed_stage != SHIM_STAGE_NONE)
		(void)snprintf(msg, sizeof(msg), "gate '%s' could not run (exit %d): %s", name,
			       p->exit_code, p->start_error ? p->start_error : "see the gate log");
	else if (p->timed_out)
		(void)snprintf(msg, sizeof(msg), "gate '%s' timed out after %.1f s (exit %d)", name,
			       (double)p->timeout_ms / 1000.0, GATE_EXIT_TIMEOUT);
	else if (p->exit_code != 0)
		(void)snprintf(msg, sizeof(msg), "gate '%s' failed (exit %d)", name, p->exit_code);
	if (msg[0]) {
		gates_clear(t);
		(void)transition(l, t, TASK_EV_GATES_FAILED, msg);
		return;
	}
	if (++t->gate_next < t->n_gates)
		return; /* next_task starts the next */
	n = t->n_gates;
	gates_clear(t);
	(void)snprintf(msg, sizeof(msg), "%zu gate(s) passed", n);
	merge_task(l, t, msg);
}

static int next_task(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct loop *l = ctx;
	size_t i;
	bool progress = true;

	flush_audit_if_due(l);
	if (l->fatal)
		return l->fatal;
	if (l->cancelled)
		return 0;
	/* gates before new agents: they finish tasks others depend on */
	for (i = 0; i < l->n; i++) {
		struct otask *t = &l->t[i];

		if (t->gates && !t->gate_live && t->row.state == TASK_COMPLETING) {
			if (gate_spec(l, t, spec) < 0) {
				proc_spec_release(spec); /* what it filled in */
				continue;
			}
			*ret_task = t;
			return 1;
		}
	}
	while (progress) {
		progress = false;
		for (i = 0; i < l->n; i++) {
			struct otask *t = &l->t[i];
			bool blocked;
			int r;

			if (!t->selected || t->live || t->row.state != TASK_PENDING)
				continue;
			if (!deps_state(l, t, &blocked)) {
				if (blocked) {
					(void)transition(l, t, TASK_EV_DEPENDENCY_FAILED,
							 "a dependency did not finish");
					progress = true;
				}
				continue;
			}
			if (l->draining || !retry_due(l, t, NULL))
				continue;
			r = dispatch(l, t, spec);
			if (r != 1)
				/* nothing spawned: what a refused or failed dispatch put
				 * into the spec must not reach the next task's agent */
				proc_spec_release(spec);
			if (r < 0)
				return r;
			if (r == DISPATCH_BUSY)
				continue;
			if (r > 0) {
				*ret_task = t;
				return 1;
			}
			if (l->fatal)
				return l->fatal;
			progress = true;
		}
	}
	return 0;
}

/* The supervisor asks when next_task had nothing: a retry waiting for its
 * time starts then, even while other agents run. */
static int64_t wake_in_ms(void *ctx)
{
	struct loop *l = ctx;
	int64_t wait_ms = -1;
	size_t i;

	bool live = false;

	if (l->fatal || l->cancelled || l->draining)
		return -1;
	for (i = 0; i < l->n; i++) {
		struct otask *t = &l->t[i];
		int64_t w = 0;
		bool blocked;

		live = live || t->live || t->gate_live;
		if (t->selected && !t->live && t->row.state == TASK_PENDING &&
		    deps_state(l, t, &blocked) && !retry_due(l, t, &w) &&
		    (wait_ms < 0 || w < wait_ms))
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

	if (t->gate_live || t->prep == PREP_RUNNING)
		return;
	t->att.pid = p->pid;
	(void)state_attempt_update(l->e->st, &t->att, NULL);
}

static void on_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	(void)ctx;
	if (((struct otask *)task)->gate_live || ((struct otask *)task)->prep == PREP_RUNNING)
		return; /* the supervisor writes the gate's log; git's chatter */
	agentrun_line(&((struct otask *)task)->ar, stream, line, len);
}

static void on_oversized(void *ctx, void *task, int stream, const char *head, size_t head_len,
			 uint64_t total)
{
	(void)ctx;
	if (((struct otask *)task)->gate_live || ((struct otask *)task)->prep == PREP_RUNNING)
		return;
	agentrun_oversized(&((struct otask *)task)->ar, stream, head, head_len, total);
}

static void on_notice(void *ctx, void *task, enum proc_notice notice, uint64_t value)
{
	(void)ctx;
	if (((struct otask *)task)->gate_live || ((struct otask *)task)->prep == PREP_RUNNING)
		return;
	agentrun_notice(&((struct otask *)task)->ar, notice, value);
}

static void on_exit_cb(void *ctx, void *task, const struct proc *p)
{
	struct loop *l = ctx;
	struct otask *t = task;

	if (t->gate_live) {
		gate_ended(l, t, p);
		flush_audit_soon(l);
		return;
	}
	if (t->prep == PREP_RUNNING) {
		/* the worktree command ended: next_task dispatches t again */
		t->live = false;
		if (p->cancelled || t->cancel_req) {
			t->prep = PREP_NONE; /* resume routes it again and repairs */
			if (t->cancel_req)
				control_cancelled(l, t);
			else
				l->cancelled = true;
			return;
		}
		t->prep = p->exit_code == 0 && !p->timed_out && p->failed_stage == SHIM_STAGE_NONE
				  ? PREP_DONE
				  : PREP_FAILED;
		if (t->prep == PREP_DONE) {
			char *start = NULL;

			if (git_branch_commit(l->e->repo, t->row.branch, l->e->git_env, &start,
					      NULL) == 0) {
				free(t->start);
				t->start = start;
			}
		}
		return;
	}
	if (t->sb_built && t->sb.network == NET_MODE_LLM && t->session_dir)
		confine_net_report(t->session_dir, &t->ar);
	if (task_tier(l, t) == SANDBOX_KIND_CONTAINER && confine_oci_oom(p)) {
		struct proc q = *p;

		q.oom_kills = 1;
		agentrun_exit(&t->ar, &q);
	} else {
		agentrun_exit(&t->ar, p);
	}
	if (p->cancelled && !t->cancel_req)
		l->cancelled = true;
	complete(l, t);
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

#define REPAIR_HELD_WAIT_MS 10000 /* a lock a surviving git child still has open */
#define REPAIR_POLL_MS	    50
#define SHARED_STALE_NS	    2000000000LL /* packed-refs.lock etc.: older than this, unheld */
#define SAME_TRANSACTION_NS 1000000000LL

/* Lock files git left in this repository, made right before any git of
 * this execution runs (docs/runs.md, "After a crash"). The run lock is
 * held: no git of a bernstein runs here, so
 *   - bernstein's own (its branches' ref locks, its worktrees' and clones'
 *     locks) are stale as soon as no process has them open (a git child of
 *     the dead bernstein may outlive it a moment: waited for);
 *   - packed-refs.lock, config.lock, shallow.lock (held by any git only for
 *     a write; packed-refs.lock without the file open) are stale when
 *     nobody has them open and they are older than the lock taking, or
 *     were taken with a stale ref lock of bernstein's (same_transaction());
 *   - the main checkout's index.lock, HEAD.lock and refs/heads/BASE.lock
 *     may be the user's git's (a commit waiting in the editor has its index
 *     lock without the file open): with a merge of this run recorded as
 *     under way, its recovery decides (git_merge_recover()); otherwise they
 *     must go away by themselves, else -EBUSY naming the file.
 * Every removal is reported as a warning. */
/* Whether the shared lock v[k] was taken by the same killed git as one of
 * bernstein's ref locks (a ref transaction takes packed-refs.lock right
 * after the locks of its refs: `git branch -D` of empty task branches). */
static bool same_transaction(const struct git_lock *v, size_t n, size_t k)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int64_t d = v[i].mtime_ns - v[k].mtime_ns;

		if (v[i].kind == GIT_LOCK_OURS && strstr(v[i].path, "/refs/heads/") &&
		    d < SAME_TRANSACTION_NS && d > -SAME_TRANSACTION_NS)
			return true;
	}
	return false;
}

static int repair_locks(struct loop *l, int64_t locked_ns, struct diag *reterr)
{
	struct orch_env *e = l->e;
	struct git_lock *v = NULL;
	bool *done = NULL, journaled = false;
	const char **paths = NULL;
	pid_t *holders = NULL;
	/* waits for other processes, and file times: the real clocks */
	const struct clock *real = clock_system();
	uint64_t start = real->mono_ms(real);
	size_t n = 0, i, left;
	int r;

	r = worktree_locks_find(e->repo, ORCH_WORKTREES_DIR, ORCH_BRANCH_PREFIX, l->run.base_branch,
				e->git_env, &v, &n, reterr);
	if (r < 0 || n == 0)
		goto out;
	for (i = 0; i < l->n; i++)
		if (l->t[i].row.state == TASK_MERGING && l->t[i].row.merge_commit)
			journaled = true;
	done = xcalloc(n, sizeof(*done));
	paths = xcalloc(n, sizeof(*paths));
	holders = xcalloc(n, sizeof(*holders));
	for (i = 0; i < n; i++)
		paths[i] = v[i].path;
	for (;;) {
		uint64_t waited = real->mono_ms(real) - start;
		bool late = waited >= WORKTREE_LOCK_WAIT_MS,
		     very_late = waited >= REPAIR_HELD_WAIT_MS;
		struct stat st;

		if (proc_file_holders(paths, n, holders) < 0)
			memset(holders, 0, n * sizeof(*holders));
		for (i = 0, left = 0; i < n; i++) {
			if (done[i])
				continue;
			if (lstat(v[i].path, &st) < 0 ||
			    (v[i].kind == GIT_LOCK_MERGE && journaled)) {
				done[i] = true;
				continue;
			}
			if (!holders[i] && (v[i].kind == GIT_LOCK_OURS ||
					    (v[i].kind == GIT_LOCK_SHARED &&
					     (v[i].mtime_ns < locked_ns - SHARED_STALE_NS ||
					      same_transaction(v, n, i))))) {
				r = git_lock_remove(&v[i], reterr);
				if (r < 0)
					goto out;
				warn(l, NULL, "removed '%s', a lock file a killed git left behind",
				     v[i].path);
				done[i] = true;
				continue;
			}
			if (v[i].kind == GIT_LOCK_SHARED && late) {
				warn(l, NULL,
				     "'%s' exists: another git is running here, or one was killed (remove the file if no git is running), ignoring",
				     v[i].path);
				done[i] = true;
				continue;
			}
			if ((v[i].kind == GIT_LOCK_MERGE && late) ||
			    (v[i].kind == GIT_LOCK_OURS && very_late)) {
				if (holders[i])
					diag_set(
						reterr, v[i].path, 0, 0,
						"exists and process %ld has it open: another git is running in this repository",
						(long)holders[i]);
				else
					diag_set(
						reterr, v[i].path, 0, 0,
						"exists: another git is running in this repository, or one was killed (remove the file if no git is running; after a bernstein killed while merging, 'bernstein resume' repairs it)");
				r = -EBUSY;
				goto out;
			}
			left++;
		}
		if (left == 0)
			break;
		{
			struct timespec ts = {.tv_sec = 0, .tv_nsec = REPAIR_POLL_MS * 1000000L};

			(void)nanosleep(&ts, NULL);
		}
	}
	r = 0;
out:
	git_locks_free(v, n);
	free(done);
	free(paths);
	free(holders);
	return r;
}

/* Worktrees a killed `git worktree add` left half made (a repair of one
 * killed in turn included): removed now, before any other git runs -- a
 * half-made worktree's null HEAD makes `git fetch` into the repository
 * fail -- and made again when their task is dispatched. */
static void repair_worktrees(struct loop *l)
{
	struct diag d;
	size_t n = 0;

	diag_clear(&d);
	if (worktree_repair(l->e->repo, ORCH_WORKTREES_DIR, l->e->git_env, &n, &d) < 0)
		warn(l, NULL, "cannot repair the half-made worktrees: %s", d.msg);
	else if (n)
		warn(l, NULL, "removed %zu half-made worktree(s) a killed git left behind", n);
}

/* Worktrees a killed bernstein did not get to remove: those of this run's
 * tasks that are merged or no_changes (a crash between the state commit and
 * the removal, or inside `git worktree remove`), and the ones set aside
 * (set_aside()). Kept, as always: those of failed, refused, conflicted or
 * blocked tasks, and of tasks done with merge: none. */
static void cleanup_worktrees(struct loop *l)
{
	char *dir = agentrun_path(l->e->repo, ORCH_WORKTREES_DIR);
	struct dirent *de;
	size_t i, n = strlen(TRASH_SUFFIX);
	DIR *d;

	for (i = 0; i < l->n; i++) {
		struct otask *t = &l->t[i];
		struct stat st;

		/* those whose removal was due: merged, or no_changes (merge:
		 * none keeps a done task's worktree) */
		if (!t->row.worktree || lstat(t->row.worktree, &st) < 0 ||
		    !(t->row.state == TASK_NO_CHANGES ||
		      (t->row.state == TASK_DONE &&
		       (t->row.merge_commit ||
			(t->row.reason && strcmp(t->row.reason, "already merged") == 0)))))
			continue;
		remove_worktree(l, t, false);
	}
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char *p;
		int r;

		if (len <= n || strcmp(de->d_name + len - n, TRASH_SUFFIX) != 0)
			continue;
		p = agentrun_path(dir, de->d_name);
		r = rmtree_beneath(p);
		if (r < 0)
			warn(l, NULL, "cannot remove '%s': %s", p, strerror(-r));
		l->prune_worktrees = true;
		free(p);
	}
	if (d)
		(void)closedir(d);
	free(dir);
}

/* ---- control from another shell (orch/control.h, docs/runs.md) ----
 *
 * A request of the control channel, carried out between two events of the
 * loop (control_watch()), or on a run that is not live with the run lock
 * held (orch_control_offline()). Every change goes through transition(),
 * as any other. */

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
static void control_cancelled(struct loop *l, struct otask *t)
{
	t->cancel_req = false;
	t->live = false;
	(void)transition(l, t, TASK_EV_CANCELLED, t->row.reason ? t->row.reason : "cancelled");
}

/* Why t cannot be cancelled now, or NULL. */
static const char *cancel_refusal(const struct loop *l, const struct otask *t)
{
	switch (t->row.state) {
	case TASK_PENDING:
	case TASK_BLOCKED:
	case TASK_INTERRUPTED:
		return NULL;
	case TASK_RUNNING:
	case TASK_COMPLETING:
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
	set_str(&t->row.reason, reason);
	if (t->cancel_req) {
		(void)json_array_append_new(tasks, task_reply(t, "cancelling", NULL));
		return;
	}
	if (t->live || t->gate_live) {
		/* its agent, gate or `git worktree add`: stopped through the
		 * supervisor (its whole tree), then control_cancelled() */
		t->cancel_req = true;
		if (l->sv)
			(void)supervise_cancel_task(l->sv, t);
		(void)json_array_append_new(tasks, task_reply(t, "cancelling", NULL));
		return;
	}
	if (t->row.state == TASK_COMPLETING)
		gates_clear(t);
	(void)transition(l, t, TASK_EV_CANCELLED, reason);
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
			(void)deps_state(l, t, &blocked);
			if (blocked)
				continue;
			(void)snprintf(msg, sizeof(msg), "its dependency '%s' is retried", because);
			t->selected = true;
			(void)transition(l, t, TASK_EV_RETRIED, msg);
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
		remove_worktree(l, t, false);
	if (t->row.branch && !strvec_has(&l->dead_branches, t->row.branch))
		strvec_push(&l->dead_branches, t->row.branch);
	l->prune_worktrees = true;
	flush_branches(l);
	set_str(&t->row.session, NULL);
	set_str(&t->row.branch, NULL);
	set_str(&t->row.worktree, NULL);
	set_str(&t->row.agent_session_id, NULL);
	set_str(&t->row.head_commit, NULL);
	set_str(&t->row.merge_commit, NULL);
	set_str(&t->row.conflicts, NULL);
	free(t->start);
	t->start = NULL;
	t->fresh = true;
}

static void retry_one(struct loop *l, struct otask *t, bool fresh, const char *reason,
		      json_t *tasks)
{
	if (fresh)
		drop_checkout(l, t);
	set_str(&t->row.retry_at, NULL);
	t->selected = true;
	if (transition(l, t, TASK_EV_RETRIED, reason) == 0)
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
		long k = find_task(l, req->tasks[i]);
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
		struct otask *t = &l->t[find_task(l, req->tasks[i])];

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
	struct plan_issues is = PLAN_ISSUES_INIT;
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
		plan_issues_release(&is);
		return -EINVAL;
	}
	plan_issues_release(&is);
	for (i = 0; i < nt->n_depends_on; i++)
		if (find_task(l, nt->depends_on[i]) < 0) {
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
		return find_task(l, nt->id) < 0 ? snprintf(id, size, "%s", nt->id), 0 : -EEXIST;
	(void)snprintf(id, size, "%s", slug);
	for (k = 2; find_task(l, id) >= 0; k++) {
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
	row.updated_at = (char *)(uintptr_t)now(l, ts);
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
		(void)audit(l, "task.added", "task", rid, det);
		free(rid);
	}
	/* the new task in memory, as loop_load() makes one */
	t = &l->t[l->n];
	memset(t, 0, sizeof(*t));
	task_row_init(&t->row);
	if (state_task_get(l->e->st, l->run.id, id, &t->row, &d) < 0 ||
	    spec_parse_text(dump, strlen(dump), &t->spec, &d) < 0) {
		fail_run(l, -EIO, &d);
		control_reply_error(reply, CONTROL_KIND_INTERNAL, "%s", d.msg);
		goto out;
	}
	attempt_row_init(&t->att);
	t->attachments = (struct strvec)STRVEC_INIT;
	t->clone_env = (struct strvec)STRVEC_INIT;
	t->sb = (struct confine_policy)CONFINE_POLICY_INIT;
	t->loop = l;
	t->selected = true;
	invocation_plan_init(&t->plan);
	t->deps = xcalloc(req->add.n_depends_on + 1, sizeof(size_t));
	for (i = 0; i < req->add.n_depends_on; i++)
		t->deps[t->n_deps++] = (size_t)find_task(l, req->add.depends_on[i]);
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
		warn(l, NULL, "%s",
		     req->force ? "stopped by request: every agent is being stopped"
				: "stop requested: no new task starts; the running ones finish");
		json_obj_set(reply, "draining", json_true());
		break;
	case CONTROL_ADD_TASK:
		add_task(l, req, who, reply);
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
		fail_run(l, -EIO, &d);
	l->sv = NULL;
	if (l->fatal)
		supervise_interrupt(sv);
}

/* The supervisor's clock, and the control channel it watches (a run that
 * cannot listen is run all the same, with a warning: only its control from
 * another shell is lost). */
static void control_start(struct loop *l, struct supervisor_ops *ops, struct supervisor_opts *sopts)
{
	struct diag d;

	sopts->clock = l->e->clk;
	diag_clear(&d);
	if (control_listen(l->e->repo, l->run.id, l->e->chain, &l->ctl, &d) < 0) {
		warn(l, NULL,
		     "no control channel ('bernstein cancel', 'stop'... will not reach this run): %s",
		     d.msg);
		return;
	}
	ops->on_watch = control_watch;
	sopts->watch_fd = control_fd(l->ctl);
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
	r = loop_load(&l, e, run_id, reterr);
	if (r < 0)
		goto out;
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(run_id));
	json_obj_set(
		det, "who",
		json_pack("{s:I, s:I}", "uid", (json_int_t)who->uid, "pid", (json_int_t)who->pid));
	json_obj_set(det, "op", json_str_lossy(control_op_to_string(req->op)));
	json_obj_set(det, "live", json_false());
	r = audit(&l, "control.request", "run", run_id, det);
	if (r < 0) {
		*reterr = l.fatal_d;
		goto out;
	}
	json_obj_set(reply, "run", json_str_lossy(run_id));
	control_handle(&l, req, who, reply);
	if (!json_object_get(reply, "ok"))
		json_obj_set(reply, "ok", json_true());
	flush_branches(&l);
	r = 0;
	if (l.fatal) {
		r = l.fatal;
		*reterr = l.fatal_d;
	} else if (json_is_true(json_object_get(reply, "ok")) && req->op != CONTROL_PING &&
		   (req->op == CONTROL_RETRY || req->op == CONTROL_ADD_TASK)) {
		/* the run has work again: resume executes it */
		(void)state_run_set_state(e->st, run_id, RUN_INTERRUPTED, now(&l, ts), NULL);
	}
out:
	if (l.e)
		loop_release(&l);
	return r;
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
	s->stopped = l->draining && !l->cancelled;
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

int orch_run_execute(struct orch_env *e, const char *run_id, struct orch_summary *ret,
		     struct diag *reterr)
{
	struct supervisor_ops ops = {
		.next_task = next_task,
		.wake_in_ms = wake_in_ms,
		.on_start = on_start,
		.on_line = on_line,
		.on_oversized = on_oversized,
		.on_notice = on_notice,
		.on_exit = on_exit_cb,
	};
	struct supervisor_opts sopts = {0};
	struct orch_summary sum;
	struct loop l;
	char ts[TS_MAX];
	int64_t locked_ns;
	int lock = -1, r;
	size_t i;
	json_t *det;

	if (!e->locked) {
		r = orch_lock_take(e->repo, &lock, reterr);
		if (r < 0)
			return r;
	}
	locked_ns = clock_system()->now_ns(clock_system()); /* compared with file times */
	r = loop_load(&l, e, run_id, reterr);
	if (r < 0)
		goto out;
	/* what a killed bernstein left in git, before any git runs */
	r = repair_locks(&l, locked_ns, reterr);
	if (r < 0) {
		(void)state_run_set_state(e->st, run_id, RUN_INTERRUPTED, now(&l, ts), NULL);
		goto out;
	}
	repair_worktrees(&l);
	cleanup_worktrees(&l);
	if (e->only_task) {
		for (i = 0; i < l.n; i++)
			l.t[i].selected = strcmp(l.t[i].row.id, e->only_task) == 0;
	}
	audit_batch_begin(e->chain);
	/* tasks finished earlier in state completing/merging go on first */
	for (i = 0; i < l.n && !l.fatal; i++) {
		struct otask *t = &l.t[i];

		if (t->selected &&
		    (t->row.state == TASK_COMPLETING || t->row.state == TASK_MERGING))
			finish(&l, t);
	}
	r = state_run_set_pid(e->st, run_id, (int64_t)getpid(), now(&l, ts), reterr);
	if (r >= 0)
		r = state_run_set_state(e->st, run_id, RUN_RUNNING, ts, reterr);
	if (r < 0)
		goto out;
	sopts.max_parallel = e->parallel ? e->parallel
					 : (l.run.parallel > 0 ? (unsigned)l.run.parallel
							       : (unsigned)e->cfg->parallel);
	control_start(&l, &ops, &sopts); /* and the clock */
	diag_clear(reterr);
	/* until every selected task is settled; retries wait inside (wake_in_ms) */
	r = supervise_run(&ops, &l, &sopts, reterr);
	if (r == -ECANCELED) {
		l.cancelled = true;
		r = 0;
	}
	if (r < 0 && !l.fatal)
		fail_run(&l, r, reterr);
	flush_branches(&l);
	flush_audit(&l);
	summarize(&l, &sum);
	if (l.fatal) {
		r = l.fatal;
		*reterr = l.fatal_d;
		(void)state_run_set_state(e->st, run_id, RUN_INTERRUPTED, now(&l, ts), NULL);
		(void)state_run_set_pid(e->st, run_id, STATE_NULL_INT, ts, NULL);
		goto out;
	}
	r = state_run_set_state(e->st, run_id, sum.state, now(&l, ts), reterr);
	if (r >= 0)
		r = state_run_set_pid(e->st, run_id, STATE_NULL_INT, ts, reterr);
	if (r < 0)
		goto out;
	det = json_object();
	json_obj_set(det, "state", json_str_lossy(run_state_to_string(sum.state)));
	for (i = 0; i < _TASK_STATE_MAX; i++)
		if (sum.counts[i])
			json_obj_set(det, task_state_to_string((enum task_state)i),
				     json_integer((json_int_t)sum.counts[i]));
	r = audit_append(e->chain, "run.finished", ORCH_ACTOR, "run", run_id, det, reterr);
	json_decref(det);
	if (r >= 0)
		r = audit_batch_end(e->chain, reterr);
	if (r < 0)
		goto out;
	if (ret)
		*ret = sum;
out:
	if (l.e && e->chain)
		(void)audit_batch_end(e->chain, NULL); /* idempotent: nothing left when done */
	if (l.e)
		loop_release(&l);
	if (lock >= 0)
		(void)close(lock);
	return r;
}

/* ---- resume ---- */

const char *resume_action_to_string(enum resume_action a)
{
	static const char *const names[_RESUME_ACTION_MAX] = {
		[RESUME_NATIVE] = "native", [RESUME_FALLBACK] = "fallback",
		[RESUME_START] = "start",   [RESUME_COMPLETE] = "complete",
		[RESUME_MERGE] = "merge",
	};

	return (int)a >= 0 && a < _RESUME_ACTION_MAX ? names[a] : NULL;
}

void resume_plan_release(struct resume_plan *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		free(p->v[i].task_id);
		free(p->v[i].adapter);
		free(p->v[i].agent_session_id);
	}
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

/* The action resume takes for t (whose last attempt is prev, if any). */
static enum resume_action resume_kind(struct loop *l, const struct otask *t,
				      const struct attempt_row *prev)
{
	const struct registry_entry *entry;
	struct strategy_resolved res;

	if (t->row.state == TASK_COMPLETING)
		return RESUME_COMPLETE;
	if (t->row.state == TASK_MERGING)
		return RESUME_MERGE;
	if (!prev)
		return RESUME_START;
	entry = prev->adapter ? catalog_find(l->e->cat, prev->adapter) : NULL;
	if (!entry || !entry->profile || !prev->agent_session_id)
		return RESUME_FALLBACK;
	(void)catalog_profile_strategy(l->e->cat, entry->profile, &res);
	return res.strategy.resume == RESUME_UNSUPPORTED ? RESUME_FALLBACK : RESUME_NATIVE;
}

static bool lock_held(const char *repo)
{
	char *path = agentrun_path(repo, ORCH_LOCK_FILE);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	bool held = false;

	free(path);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		held = true;
	(void)close(fd);
	return held;
}

/* The run to resume: RUN, else the latest (then run_or_task, if given,
 * names a task of it: *ret_only); -EBUSY while another bernstein runs it. */
static int resume_find_run(struct orch_env *e, const char *run_or_task, struct run_row *run,
			   const char **ret_only, struct diag *reterr)
{
	int r = -ENOENT;

	*ret_only = NULL;
	if (run_or_task)
		r = state_run_get(e->st, run_or_task, run, NULL);
	if (r == -ENOENT) {
		r = state_run_latest(e->st, run, reterr);
		if (r == -ENOENT)
			diag_set(reterr, state_path(e->st), 0, 0, "no run recorded yet");
		if (r < 0)
			return r;
		*ret_only = run_or_task;
	} else if (r < 0) {
		diag_set(reterr, state_path(e->st), 0, 0, "cannot read run '%s'", run_or_task);
		return r;
	}
	if (!e->locked && lock_held(e->repo)) {
		diag_set(reterr, e->repo, 0, 0,
			 "run '%s' is still running (another bernstein holds %s)", run->id,
			 ORCH_LOCK_FILE);
		return -EBUSY;
	}
	return 0;
}

/* What resume does with t (into it); with apply, done: an attempt left open
 * by a dead bernstein is closed, and a running, interrupted or blocked t is
 * pending again. */
static int resume_task(struct loop *l, struct otask *t, bool apply, struct resume_item *it,
		       struct diag *reterr)
{
	struct attempt_row prev;
	bool has_prev;
	char ts[TS_MAX];
	int r = 0;

	attempt_row_init(&prev);
	has_prev = previous_attempt(l, t, &prev);
	it->task_id = xstrdup(t->row.id);
	it->state = t->row.state;
	/* as dispatch decides: an attempt that did not complete (still
	 * open, or interrupted, rate limited...) is continued */
	it->action = resume_kind(
		l, t,
		has_prev && (!prev.outcome || strcmp(prev.outcome, "completed") != 0) ? &prev
										      : NULL);
	it->adapter = prev.adapter ? xstrdup(prev.adapter) : NULL;
	if (it->action == RESUME_NATIVE && prev.agent_session_id)
		it->agent_session_id = xstrdup(prev.agent_session_id);
	if (apply && has_prev && !prev.ended_at) {
		/* bernstein died with the agent running */
		set_str(&prev.ended_at, now(l, ts));
		set_str(&prev.outcome, "cancelled");
		set_str(&prev.reason, "bernstein stopped while the agent ran");
		r = state_attempt_update(l->e->st, &prev, reterr);
		if (r < 0)
			goto out;
	}
	if (apply && (t->row.state == TASK_RUNNING || t->row.state == TASK_INTERRUPTED ||
		      t->row.state == TASK_BLOCKED)) {
		set_str(&t->row.retry_at, NULL);
		r = transition(l, t, TASK_EV_RESUMED, "resumed");
		if (r < 0)
			*reterr = l->fatal_d;
	}
out:
	attempt_row_release(&prev);
	return r < 0 ? r : 0;
}

int orch_resume_prepare(struct orch_env *e, const char *run_or_task, bool apply,
			struct resume_plan *ret, struct diag *reterr)
{
	struct run_row run = RUN_ROW_INIT;
	const char *only = NULL;
	struct loop l;
	size_t i;
	int r;

	memset(ret, 0, sizeof(*ret));
	run_row_init(&run);
	r = resume_find_run(e, run_or_task, &run, &only, reterr);
	if (r < 0)
		goto out;
	r = loop_load(&l, e, run.id, reterr);
	if (r < 0) {
		if (l.e)
			loop_release(&l);
		goto out;
	}
	if (only && find_task(&l, only) < 0) {
		diag_set(reterr, state_path(e->st), 0, 0,
			 "no run '%s', and no task '%s' in the latest run '%s'", only, only,
			 run.id);
		loop_release(&l);
		r = -ENOENT;
		goto out;
	}
	(void)snprintf(ret->run_id, sizeof(ret->run_id), "%s", run.id);
	ret->unfinished = run.state == RUN_RUNNING || run.state == RUN_INTERRUPTED;
	ret->v = xcalloc(l.n ? l.n : 1, sizeof(*ret->v));
	for (i = 0; i < l.n && r >= 0; i++) {
		struct otask *t = &l.t[i];

		if (only && strcmp(t->row.id, only) != 0)
			continue;
		if (t->row.state == TASK_DONE || t->row.state == TASK_NO_CHANGES ||
		    t->row.state == TASK_FAILED || t->row.state == TASK_REFUSED ||
		    t->row.state == TASK_CONFLICT || t->row.state == TASK_CANCELLED)
			continue;
		r = resume_task(&l, t, apply, &ret->v[ret->n++], reterr);
	}
	if (r >= 0 && apply && only)
		e->only_task = only;
	loop_release(&l);
out:
	run_row_release(&run);
	return r;
}
