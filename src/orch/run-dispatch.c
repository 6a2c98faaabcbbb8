/* Dispatch: a task's next attempt prepared, one step after the other:
 * route -> name -> checkout -> invocation -> attempt -> session
 * (run-internal.h, docs/runs.md "The spawn path"). */
#include "orch/run-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/outcome.h"
#include "adapter/profile.h"
#include "adapter/strategy.h"
#include "orch/autoroute.h"
#include "orch/config.h"
#include "orch/context.h"
#include "proc/contain.h"
#include "route/requirements.h"
#include "route/route.h"
#include "route/select.h"
#include "util/fsutil.h"
#include "util/randid.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

static unsigned live_on_adapter(const struct loop *l, const char *adapter)
{
	size_t i;
	unsigned n = 0;

	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1))
		if (l->t[i].live && l->t[i].row.adapter &&
		    strcmp(l->t[i].row.adapter, adapter) == 0)
			n++;
	return n;
}

/* The candidates and preference for routing t; adapter: auto (a task
 * that names none, under bernstein.yaml's auto) fills ap and lists its
 * usable agents as the explicit candidates (orch/autoroute.c). */
static void routing_lists(const struct loop *l, const struct otask *t, struct strvec *cand,
			  struct strvec *pref, bool *ret_explicit, struct autopick *ap)
{
	const struct orch_config *c = l->e->cfg;
	const char *a = run_spec(t)->adapter;
	const struct role_policy *rp = orch_config_role(c, t->row.role);
	const struct autoroute_task at = {.cfg = c, .plan_endpoints = &run_spec(t)->endpoints};
	size_t i;

	*ret_explicit = false;
	/* a fallback adapter took over (run-retry.c): it alone */
	if (run_retry_adapter(l, t))
		a = run_retry_adapter(l, t);
	/* a resolver (run-conflict.c): resolver:, the resolver role's, the task's own */
	if (t->row.state == TASK_RESOLVING && run_conflict_adapter(l, t))
		a = run_conflict_adapter(l, t);
	if (!a && rp)
		a = rp->adapter;
	if (!a && ap && autoroute_prepare(l->e, &at, ap)) {
		strvec_pushv(cand, (const char *const *)ap->usable.v);
		*ret_explicit = true;
		return;
	}
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

/* The selection input of t: its requirements, its candidates (cand, pref:
 * the lists routing_lists() fills, which in borrows) and the sandbox tiers
 * it may get here when it requires one. */
static void routing_input(struct loop *l, const struct otask *t, const struct requirements *req,
			  struct strvec *cand, struct strvec *pref, struct select_input *in,
			  struct autopick *ap)
{
	bool explicit_list;

	routing_lists(l, t, cand, pref, &explicit_list, ap);
	in->req = req;
	if (req->set & (1u << REQ_SANDBOX))
		in->host_tiers = run_task_offered_tiers(l, t);
	in->candidates = explicit_list ? (const char *const *)cand->v : NULL;
	in->preference = explicit_list ? NULL : (const char *const *)pref->v;
}

static void on_agent_event(void *userdata, const struct event *ev, const char *json, size_t len)
{
	struct otask *t = userdata;
	struct loop *l = t->loop;

	if (ev->kind == EVENT_SESSION_STARTED && ev->session_id && !run_att(t)->agent_session_id) {
		char ts[TS_MAX];

		run_set_str(&run_att(t)->agent_session_id, ev->session_id);
		run_set_str(&t->row.agent_session_id, ev->session_id);
		/* resume needs it even if bernstein dies now */
		(void)state_attempt_update(l->e->st, run_att(t), NULL);
		(void)state_task_update(l->e->st, &t->row, run_now(l, ts), NULL);
	}
	if (l->e->hooks.on_event)
		l->e->hooks.on_event(l->e->hooks.userdata, &t->row, ev, json, len, t->ar->rd);
}

/* What a step of dispatch says: go on with the next step, or stop: 0 not
 * spawned (refused or failed: the state says), DISPATCH_BUSY, DISPATCH_ENDED,
 * DISPATCH_SPAWN (spec filled: spawn it), < 0 the run must stop. */
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
	struct arena mcp_arena; /* ir.mcp_servers */
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
	struct autopick ap = AUTOPICK_INIT;
	char msg[1024];
	struct diag d;
	int r, ret = 0;

	diag_clear(&d);
	/* limits this host cannot enforce: refused, never run without them */
	run_task_limits(l, t, &spec->limits);
	if (contain_limits_any(&spec->limits) &&
	    contain_limits_check(contain_host(), &spec->limits, msg, sizeof(msg)) < 0) {
		run_refuse(l, t, TASK_EV_REFUSED, msg);
		goto out;
	}
	routing_input(l, t, &run_spec(t)->req, &cand, &pref, &in, &ap);
	/* the adapter's own parallelism first: decide without recording, and
	 * leave the task pending while that adapter is at its limit */
	if (select_adapter(&in, &sel, NULL) == 0 && sel.chosen && sel.chosen->profile) {
		int64_t max = sel.chosen->profile->caps.max_parallel_workers;

		/* or while its rate-limit meter says wait */
		if (live_on_adapter(l, sel.chosen->name) >= (unsigned)(max > 0 ? max : 1) ||
		    meters_wait_ms(&l->meters, sel.chosen->name) > 0) {
			ret = DISPATCH_BUSY;
			goto out;
		}
	}
	selection_release(&sel);
	memset(&sel, 0, sizeof(sel));
	r = route_and_record(&in, e->chain, l->run.id, &sel, &d);
	if (r >= 0 || r == -ENOTSUP)
		r = autoroute_record(e, l->run.id, &ap, &sel, r, &d);
	if (r == -ENOTSUP) {
		struct sbuf sb = SBUF_INIT(SIZE_MAX);
		char *why;

		run_set_str(&t->row.receipt_hash, sel.receipt_hash);
		if (ap.active) {
			autopick_describe_refusal(&ap, &sel, &sb);
		} else {
			(void)sbuf_addf(&sb, "no adapter satisfies ");
			(void)requirements_describe(&run_spec(t)->req, &sb);
		}
		(void)sbuf_addf(&sb, " (receipt %.16s)", sel.receipt_hash);
		why = sbuf_detach(&sb, NULL);
		run_refuse(l, t, TASK_EV_REFUSED, why);
		free(why);
		goto out;
	}
	if (r == -EINVAL) {
		run_refuse(l, t, TASK_EV_DISPATCH_FAILED, d.msg);
		goto out;
	}
	if (r < 0) {
		run_fail(l, r, &d);
		ret = r;
		goto out;
	}
	dp->entry = catalog_find(e->cat, sel.chosen->name);
	if (!dp->entry || !sel.chosen->profile) {
		(void)snprintf(msg, sizeof(msg),
			       "adapter '%s' has no capability profile; runs need one",
			       sel.chosen->name);
		run_refuse(l, t, TASK_EV_DISPATCH_FAILED, msg);
		goto out;
	}
	run_set_str(&t->row.adapter, dp->entry->name);
	run_set_str(&t->row.profile_hash, sel.chosen->profile_hash);
	/* its tier, decided now that its agent is known, recorded with it */
	if (!run_spec(t)->has_tier) {
		run_spec(t)->tier = run_task_tier(l, t);
		run_spec(t)->has_tier = true;
		free(t->row.spec);
		t->row.spec = spec_dump(run_spec(t));
	}
	/* a tier (and network) this host cannot give: refused before anything
	 * is made, never run unconfined nor with the host's network instead */
	if (run_tier_refusal(l, t, msg, sizeof(msg)) ||
	    run_executor_refusal(l, t, msg, sizeof(msg))) {
		run_refuse(l, t, TASK_EV_REFUSED, msg);
		goto out;
	}
	ret = DISPATCH_NEXT;
out:
	selection_release(&sel);
	autopick_release(&ap);
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
		run_set_str(&t->row.session, s);
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
	r = state_task_update(e->st, &t->row, run_now(l, ts), &d);
	if (r < 0) {
		run_fail(l, r, &d);
		return r;
	}
	return DISPATCH_NEXT;
}

/* A new worktree from the base branch as it is now (the merges of its
 * dependencies are in), in the common case by the supervisor beside the
 * other tasks' work: spec is that command (DISPATCH_SPAWN); the loop
 * continues with make_checkout() when it ended. */
static int start_checkout(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	struct checkout *co = run_task_checkout(l, t);
	struct diag d;
	int r;

	diag_clear(&d);
	r = checkout_command(co, l->run.base_branch, &spec->argv, &spec->env, &spec->timeout_ms,
			     &d);
	if (r == 1) {
		t->prep = PREP_RUNNING;
		t->live = true;
		return DISPATCH_SPAWN;
	}
	proc_spec_release(spec);
	return DISPATCH_NEXT;
}

/* t's checkout made (orch/checkout.h: a sandboxed task's clone of its own,
 * else the worktree, unless the supervised command made it). */
static int make_checkout(struct loop *l, struct otask *t)
{
	struct checkout *co = run_task_checkout(l, t);
	char msg[1024];
	struct diag d;
	int r;

	diag_clear(&d);
	r = checkout_make(co, l->run.base_branch, t->prep == PREP_DONE, &d);
	t->prep = PREP_NONE;
	run_checkout_made(l, t);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot create the %s: %s", checkout_noun(co),
			       d.msg);
		run_refuse(l, t, TASK_EV_DISPATCH_FAILED, msg);
		return 0;
	}
	if (run_worktree_setup(l, t) < 0)
		return 0;
	return DISPATCH_NEXT;
}

/* t's prompt rendered from the template (orch/context.h) into *ret, or
 * NULL when the task gives no constraints:/context_files: (its prompt goes
 * verbatim). The context files are read beneath the base checkout. */
static int render_prompt(struct loop *l, struct otask *t, char **ret, struct diag *reterr)
{
	const struct orch_config *c = l->e->cfg;
	struct context_input in = {.repo_fd = -1};
	struct context_dep *deps = NULL;
	struct task_row *held = NULL;
	struct orch_gate *gates = NULL;
	size_t i;
	int r;

	*ret = NULL;
	if (!spec_renders(run_spec(t)) || t->row.state == TASK_RESOLVING)
		return 0;
	in.repo_fd = open(l->e->repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (in.repo_fd < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot open the repository '%s': %s", l->e->repo,
			 strerror(-r));
		return r;
	}
	deps = xcalloc(t->n_deps + 1, sizeof(*deps));
	held = xcalloc(t->n_deps + 1, sizeof(*held));
	for (i = 0; i < t->n_deps; i++) {
		const struct otask *u = &l->t[t->deps[i]];
		const struct task_row *d = &u->row;

		/* an ended dependency keeps only its id and state in memory
		 * (run_task_slim()): its title and outcome read from state.db */
		task_row_init(&held[i]);
		if (u->slim && state_task_get(l->e->st, l->run.id, u->row.id, &held[i], NULL) == 0)
			d = &held[i];
		deps[i].id = d->id;
		deps[i].title = d->title;
		deps[i].outcome = d->outcome ? d->outcome : task_state_to_string(d->state);
	}
	gates = xcalloc(c->n_gates + run_spec(t)->n_gates + 1, sizeof(*gates));
	if (c->n_gates)
		memcpy(gates, c->gates, c->n_gates * sizeof(*gates));
	if (run_spec(t)->n_gates)
		memcpy(gates + c->n_gates, run_spec(t)->gates,
		       run_spec(t)->n_gates * sizeof(*gates));
	in.goal = run_spec(t)->goal;
	in.role = t->row.role;
	in.preamble = catalog_role_preamble(l->e->cat, t->row.role);
	in.prompt = run_prompt(t);
	in.constraints = run_spec(t)->constraints;
	in.n_constraints = run_spec(t)->n_constraints;
	in.context_files = run_spec(t)->context_files;
	in.n_context_files = run_spec(t)->n_context_files;
	in.deps = deps;
	in.n_deps = t->n_deps;
	in.gates = gates;
	in.n_gates = c->n_gates + run_spec(t)->n_gates;
	in.artifact = run_spec(t)->artifact;
	r = context_render(&in, ret, reterr);
	(void)close(in.repo_fd);
	free(deps);
	task_rows_free(held, t->n_deps);
	free(gates);
	return r;
}

/* How the attempt continues the previous one: natively (its agent session)
 * or with a fallback prompt. */
static void resume_from(struct loop *l, struct otask *t, struct dispatch *dp, const char *base)
{
	struct strategy_resolved res;

	(void)catalog_profile_strategy(l->e->cat, dp->entry->profile, &res);
	/* an agent's session state stays on the node it ran on (its HOME
	 * there is removed with the job): another executor resumes with the
	 * recovered context */
	if (res.strategy.resume != RESUME_UNSUPPORTED && dp->prev.agent_session_id &&
	    run_task_executor(l, t) == EXECUTOR_LOCAL && dp->prev.adapter &&
	    strcmp(dp->prev.adapter, dp->entry->name) == 0) {
		dp->ir.resume_id = dp->prev.agent_session_id;
		run_att(t)->resume_kind = xstrdup("native");
	} else {
		t->prompt = run_fallback_prompt(l, t, &dp->prev, base);
		run_att(t)->resume_kind = xstrdup("fallback");
	}
	if (dp->prev.agent_session_id)
		run_att(t)->resumed_from = xstrdup(dp->prev.agent_session_id);
}

/* The invocation of t's next attempt: model, sampling, attachments, the
 * session directory, what it continues; its own gates refuse here. */
static int build_invocation(struct loop *l, struct otask *t, struct dispatch *dp)
{
	struct orch_env *e = l->e;
	const struct orch_endpoint *ep;
	struct invocation_request *ir = &dp->ir;
	char nbuf[32], msg[1024], *base = NULL;
	struct diag d;
	size_t i;
	int r;

	free(t->prompt);
	t->prompt = NULL;
	/* a rejected attempt (feedback) is continued too */
	dp->resuming = run_previous_attempt(l, t, &dp->prev) && dp->prev.outcome &&
		       (strcmp(dp->prev.outcome, outcome_to_string(OUTCOME_COMPLETED)) != 0 ||
			t->row.feedback) &&
		       !t->fresh && t->row.state != TASK_RESOLVING;
	t->fresh = false;
	/* the endpoint of the adapter routing chose (named, by role, auto,
	 * fallback): the plan's entry, else bernstein.yaml's */
	ep = orch_config_endpoint(e->cfg, &run_spec(t)->endpoints, dp->entry->name);
	if (t->row.state == TASK_RESOLVING)
		/* a resolver: the resolver role's endpoint; the task's own slots
		 * only when it runs on the task's own adapter */
		orch_config_slots(e->cfg, "resolver", dp->entry->profile, ep,
				  run_conflict_own_adapter(t, dp->entry->name)
					  ? &run_spec(t)->sampling
					  : NULL,
				  &ir->sampling);
	else
		orch_config_slots(e->cfg, t->row.role, dp->entry->profile, ep,
				  &run_spec(t)->sampling, &ir->sampling);
	ir->model = orch_config_model(e->cfg, t->row.role, ep, run_spec(t)->model);
	if (run_retry_model(l, t)) /* escalation: attempt N's model */
		ir->model = run_retry_model(l, t);
	if (t->row.state == TASK_RESOLVING)
		ir->model = run_conflict_model(l, t);
	strvec_clear(&t->attachments);
	for (i = 0; i < run_spec(t)->n_attachments; i++)
		strvec_pushf(&t->attachments, "%s/%s", t->row.worktree,
			     run_spec(t)->attachments[i]);
	t->row.attempts++;
	(void)snprintf(nbuf, sizeof(nbuf), "%" PRId64, t->row.attempts);
	free(t->session_dir);
	t->session_dir = run_session_path(l, t, nbuf);
	dp->state_dir = run_session_path(l, t, "home");

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
	dp->timeout_s = run_spec(t)->timeout_s > 0 ? run_spec(t)->timeout_s : e->cfg->timeout_s;
	ir->timeout_s = (run_secs_to_ms(dp->timeout_s) + 999) / 1000;
	/* the runner's sandbox_provider: bwrap confines by Landlock inside too */
	if (run_task_sandboxed(l, t))
		ir->sandbox =
			run_task_tier(l, t) == SANDBOX_KIND_CONTAINER ? "container" : "landlock";
	ir->arg_total_max = (size_t)sysconf(_SC_ARG_MAX) > 0 ? (size_t)sysconf(_SC_ARG_MAX) : 0;

	run_att_drop(t);
	diag_clear(&d);
	r = render_prompt(l, t, &base, &d);
	if (r < 0) {
		t->row.attempts--;
		(void)snprintf(msg, sizeof(msg), "task context refused: %s", d.msg);
		run_refuse(l, t, TASK_EV_REFUSED, msg);
		return 0;
	}
	if (dp->resuming)
		resume_from(l, t, dp, base);
	if (t->row.state == TASK_RESOLVING) {
		free(t->prompt);
		t->prompt = run_conflict_prompt(l, t);
	} else if (t->row.feedback) {
		free(t->prompt);
		t->prompt = run_review_prompt(t, base);
	}
	if (!t->prompt) {
		t->prompt = base;
		base = NULL;
	}
	free(base);
	ir->prompt = t->prompt ? t->prompt : (run_prompt(t) ? run_prompt(t) : "");
	run_plan_drop(t);
	{
		/* task > role > plan > bernstein.yaml, by name (orch/mcpservers.h) */
		struct orch_mcp_servers ms;

		arena_release(&dp->mcp_arena);
		orch_config_mcp_servers(e->cfg,
					t->row.state == TASK_RESOLVING ? "resolver" : t->row.role,
					&run_spec(t)->plan_mcp_servers, &run_spec(t)->mcp_servers,
					&dp->mcp_arena, &ms);
		ir->mcp_servers = ms.v;
		ir->n_mcp_servers = ms.n;
	}
	diag_clear(&d);
	r = invocation_build(ir, run_plan(t), &d);
	if (r < 0) {
		t->row.attempts--;
		(void)snprintf(msg, sizeof(msg), "preflight refused: %s", d.msg);
		run_refuse(l, t,
			   r == -EPERM || r == -E2BIG ? TASK_EV_REFUSED : TASK_EV_DISPATCH_FAILED,
			   msg);
		return 0;
	}
	if (t->row.state == TASK_RESOLVING)
		return run_conflict_dispatched(l, t) < 0 ? -EIO : DISPATCH_NEXT;
	run_retry_note(l, t);
	return DISPATCH_NEXT;
}

/* The attempt row, committed before the agent starts; then t is running. */
static int begin_attempt(struct loop *l, struct otask *t, const struct dispatch *dp)
{
	struct orch_env *e = l->e;
	const char *kind = run_att(t)->resume_kind;
	char ts[TS_MAX];
	struct diag d;
	int r;

	run_att(t)->run_id = xstrdup(l->run.id);
	run_att(t)->task_id = xstrdup(t->row.id);
	run_att(t)->n = t->row.attempts;
	run_att(t)->session = xstrdup(t->row.session);
	run_att(t)->adapter = xstrdup(dp->entry->name);
	run_att(t)->profile_hash = t->row.profile_hash ? xstrdup(t->row.profile_hash) : NULL;
	run_att(t)->started_at = xstrdup(run_now(l, ts));
	run_set_str(&t->row.outcome, NULL);
	diag_clear(&d);
	r = state_begin(e->st, &d);
	if (r >= 0)
		r = state_attempt_insert(e->st, run_att(t), &d);
	if (r >= 0)
		r = state_commit(e->st, &d);
	if (r < 0) {
		(void)state_rollback(e->st, NULL);
		run_fail(l, r, &d);
		return r;
	}
	r = run_transition(l, t, TASK_EV_DISPATCHED,
			   t->row.state == TASK_RESOLVING ? "the resolver is dispatched"
			   : !kind			  ? "dispatched"
			   : strcmp(kind, "native") == 0
				   ? "resumed (native)"
				   : "resumed (fresh session, recovered context)");
	return r < 0 ? r : DISPATCH_NEXT;
}

/* A sandboxed task's agent confined (orch/confine.h). */
static int confine_agent(struct loop *l, struct otask *t, const struct dispatch *dp,
			 struct proc_spec *spec, struct diag *reterr)
{
	char *tmp = run_session_path(l, t, "tmp");
	int r;

	run_sb_drop(t);
	confine_net_watch_release(&t->nw);
	t->sb_built = false;
	r = mkdir_p(dp->state_dir, 0700);
	if (r >= 0)
		r = mkdir_p(tmp, 0700);
	if (r >= 0)
		r = run_task_policy(l, t, run_plan(t)->binary_found ? run_plan(t)->argv.v[0] : NULL,
				    t->session_dir, dp->state_dir, tmp, reterr);
	else
		diag_set(reterr, tmp, 0, 0, "cannot create the agent's HOME or TMPDIR: %s",
			 strerror(-r));
	if (r >= 0)
		r = run_confine_spec(l, t, dp->state_dir, tmp, spec, reterr);
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
	run_task_ar_free(t);
	t->ar = xcalloc(1, sizeof(*t->ar));
	agentrun_init(t->ar, run_plan(t), &hooks);
	t->ar->timeout_ms = run_secs_to_ms(dp->timeout_s);
	/* the stall watchdog: the task's (or its plan's), else its role's or
	 * bernstein.yaml's; 0 off */
	t->ar->idle_timeout_ms = run_secs_to_ms(
		run_spec(t)->has_idle_timeout ? run_spec(t)->idle_timeout_s
					      : orch_config_idle_timeout(e->cfg, t->row.role));
	t->ar->kill_grace_ms = run_secs_to_ms(e->cfg->kill_grace_s);
	t->ar->init_exe = e->self_exe;
	t->ar->expect_changes = !run_spec(t)->artifact;
	t->live = true;
	pj = agentrun_plan_json(dp->entry->profile, run_plan(t), l->run.id, t->row.session);
	r = agentrun_open(t->ar, pj, &d);
	json_decref(pj);
	if (r >= 0)
		r = agentrun_fill_spec(t->ar, spec, &d);
	if (r >= 0) {
		run_task_limits(l, t, &spec->limits);
		spec->cgroup_name = t->row.id;
	}
	if (r >= 0 && run_task_sandboxed(l, t))
		r = confine_agent(l, t, dp, spec, &d);
	/* another executor: the spec becomes its relay's (run-executor.c) */
	if (r >= 0 && run_plan(t)->binary_found && run_task_executor(l, t) != EXECUTOR_LOCAL)
		r = run_executor_wrap(l, t, dp->timeout_s, spec, &d);
	if (r < 0) {
		/* the agent never ran: the attempt ends as failed */
		(void)snprintf(msg, sizeof(msg), "cannot prepare the session: %s", d.msg);
		run_set_str(&run_att(t)->outcome, outcome_to_string(OUTCOME_FAILED));
		run_set_str(&run_att(t)->reason, msg);
		run_set_str(&run_att(t)->ended_at, run_now(l, ts));
		(void)state_attempt_update(e->st, run_att(t), NULL);
		run_task_ar_free(t);
		t->live = false;
		run_refuse(l, t, TASK_EV_AGENT_FAILED, msg);
		return 0;
	}
	agentrun_plan_warnings(t->ar);
	if (!run_plan(t)->binary_found) {
		/* nothing to start: the outcome a failed execve's 127 would give */
		agentrun_binary_missing(t->ar);
		return DISPATCH_ENDED; /* run.c completes it */
	}
	return DISPATCH_SPAWN;
}

/* From a made (or to be made) checkout to a started agent: worktree_setup's
 * setup_command, when there is one, runs first under the supervisor
 * (DISPATCH_SPAWN) and the dispatch goes on when it passed
 * (PREP_SETUP_DONE). */
static int dispatch_attempt(struct loop *l, struct otask *t, struct dispatch *dp,
			    struct proc_spec *spec)
{
	int r = DISPATCH_NEXT;

	if (t->prep == PREP_SETUP_DONE) {
		t->prep = PREP_NONE;
	} else {
		r = make_checkout(l, t);
		if (r == DISPATCH_NEXT) {
			r = run_setup_spec(l, t, spec);
			r = r == 1 ? DISPATCH_SPAWN : r == 0 ? DISPATCH_NEXT : 0;
		}
	}
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
 * as it may, the task stays pending; DISPATCH_ENDED: nothing to start (its
 * binary is missing), the caller completes the attempt; < 0: the run must
 * stop. */
int run_dispatch(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	struct dispatch dp = {.entry = NULL};
	int r;

	attempt_row_init(&dp.prev);
	if (t->prep == PREP_DONE || t->prep == PREP_FAILED || t->prep == PREP_SETUP_DONE) {
		/* routed and recorded when its worktree (or its setup_command)
		 * was started: go on */
		dp.entry = t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;
		r = DISPATCH_NEXT;
		if (!dp.entry || !dp.entry->profile) {
			t->prep = PREP_NONE;
			run_refuse(l, t, TASK_EV_DISPATCH_FAILED, "its adapter left the catalogue");
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
	arena_release(&dp.mcp_arena);
	return r == DISPATCH_SPAWN ? 1 : r;
}
