/* Retries, escalation and fallback in the run loop (orch/retry.h,
 * docs/runs.md "Retries, escalation and fallback"): what follows an attempt
 * that did not complete, which adapter and model the next one gets.
 *
 * Where a task's retries stand lives in its recorded spec (chain_at,
 * chain_base, chain_model: spec.h's retry_state), written with the
 * transition that changes it, so a bernstein killed while a retry waits
 * resumes it as it was: the same adapter, the same count, its retry_at. */
#include "orch/run-internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "adapter/catalog.h"
#include "adapter/profile.h"
#include "orch/config-internal.h"
#include "orch/failure.h"
#include "orch/retry.h"
#include "route/select.h"
#include "util/backoff.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/banned.h"

#define RETRY_WAIT_MAX_MS (3600u * 1000u) /* a backoff is at most an hour */

void run_retry_policy(const struct loop *l, const struct otask *t, struct retry_resolved *ret)
{
	const struct orch_config *c = l->e->cfg;
	const struct role_policy *rp = orch_config_role(c, t->row.role);

	retry_resolve(&run_spec(t)->retry, rp ? &rp->retry : NULL, &c->retry, c->max_retries + 1,
		      c->retry_backoff_s, ret);
}

const char *run_retry_adapter(const struct loop *l, const struct otask *t)
{
	struct retry_resolved p;

	if (!run_spec(t)->chain_at)
		return NULL;
	run_retry_policy(l, t, &p);
	return run_spec(t)->chain_at <= p.n_fallback ? p.fallback[run_spec(t)->chain_at - 1] : NULL;
}

const char *run_retry_model(const struct loop *l, const struct otask *t)
{
	struct retry_resolved p;

	run_retry_policy(l, t, &p);
	/* the attempt about to start: its number on this adapter */
	return retry_model(&p, t->row.attempts - run_spec(t)->chain_base + 1);
}

/* t's spec changed: its recorded form follows (written with the next
 * state update of the row) */
static void spec_changed(struct otask *t)
{
	free(t->row.spec);
	t->row.spec = spec_dump(run_spec(t));
}

void run_retry_note(struct loop *l, struct otask *t)
{
	struct retry_resolved p;
	const char *m = run_plan(t)->model;

	run_retry_policy(l, t, &p);
	if (!p.n_models && !run_spec(t)->chain_model)
		return; /* no escalation: the model is the task's, as always */
	if ((m && run_spec(t)->chain_model && strcmp(m, run_spec(t)->chain_model) == 0) ||
	    (!m && !run_spec(t)->chain_model))
		return;
	run_spec(t)->chain_model = m ? arena_strdup(&run_spec(t)->arena, m) : NULL;
	spec_changed(t);
}

void run_retry_reset(struct loop *l, struct otask *t)
{
	(void)l;
	if (!run_spec(t)->chain_at && run_spec(t)->chain_base == t->row.attempts)
		return;
	run_spec(t)->chain_at = 0;
	run_spec(t)->chain_base = t->row.attempts;
	run_spec(t)->chain_model = NULL;
	spec_changed(t);
}

static uint32_t jitter(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;
	}
	return v;
}

/* Another attempt on the same adapter after its wait: a rate limit's from
 * the adapter's meter (delay_ms), any other's from the policy's backoff. */
static void again(struct loop *l, struct otask *t, const struct retry_resolved *p, enum outcome out,
		  int64_t n, int64_t delay_ms, const char *why)
{
	struct orch_env *e = l->e;
	const char *model = retry_model(p, n + 1);
	char ts[TS_MAX], msg[1024], with[200] = "";
	int64_t at = e->clk->now_ns(e->clk);

	if (out != OUTCOME_RATE_LIMITED) {
		double base = p->backoff_s * 1000.0;
		const struct backoff_policy bp = {
			.base_ms = base < RETRY_WAIT_MAX_MS ? (uint64_t)base : RETRY_WAIT_MAX_MS,
			.cap_ms = RETRY_WAIT_MAX_MS,
			.hint_cap_ms = RETRY_WAIT_MAX_MS,
		};

		delay_ms = (int64_t)backoff_delay_ms(&bp, (unsigned)n, -1, jitter());
	}
	(void)clock_iso8601_utc(at + delay_ms * 1000000, ts, sizeof(ts));
	run_set_str(&t->row.retry_at, ts);
	if (model)
		(void)snprintf(with, sizeof(with), " with model %s", model);
	if (out == OUTCOME_RATE_LIMITED) {
		(void)snprintf(msg, sizeof(msg),
			       "rate limited; retry %" PRId64 " of %" PRId64 " in %.1f s%s", n,
			       p->max_attempts - 1, (double)delay_ms / 1000.0, with);
		orch_reason_with_agent_error(msg, sizeof(msg), run_att(t)->agent_error);
		(void)run_transition(l, t, TASK_EV_RATE_LIMITED, msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "%s; retry %" PRId64 " of %" PRId64 " in %.1f s%s", why, n,
		       p->max_attempts - 1, (double)delay_ms / 1000.0, with);
	(void)run_transition(l, t, TASK_EV_RETRYING, msg);
}

/* The first adapter of t's fallback list from position from on that
 * satisfies its requirements (the same selection as routing), with its
 * profile hash; -1 when none does. */
static long next_adapter(struct loop *l, const struct otask *t, const struct retry_resolved *p,
			 size_t from, char *hash, size_t size)
{
	size_t k;

	for (k = from; k < p->n_fallback; k++) {
		const char *cand[2] = {p->fallback[k], NULL};
		struct select_input in = {
			.cat = l->e->cat, .req = &run_spec(t)->req, .candidates = cand};
		struct selection sel = {0};
		bool ok;

		if (run_spec(t)->req.set & (1u << REQ_SANDBOX))
			in.host_tiers = run_task_offered_tiers(l, t);
		ok = select_adapter(&in, &sel, NULL) == 0 && sel.chosen && sel.chosen->profile;
		if (ok)
			(void)snprintf(hash, size, "%s", sel.chosen->profile_hash);
		selection_release(&sel);
		if (ok)
			return (long)k;
	}
	return -1;
}

/* The attempts on t's adapter are spent: the next adapter of its chain
 * takes over (an audited task.fallback), or none does (false). */
static bool fall_back(struct loop *l, struct otask *t, const struct retry_resolved *p,
		      const char *why)
{
	char hash[SHA256_HEX_LEN + 1] = "", msg[1024], *rid;
	const char *from = t->row.adapter ? t->row.adapter : "?";
	long k = next_adapter(l, t, p, run_spec(t)->chain_at, hash, sizeof(hash));
	json_t *det;

	if (k < 0)
		return false;
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "attempt", json_integer(t->row.attempts));
	json_obj_set(
		det, "from",
		json_pack("{s:o, s:o}", "adapter", json_str_lossy(from), "profile_hash",
			  t->row.profile_hash ? json_str_lossy(t->row.profile_hash) : json_null()));
	json_obj_set(det, "to",
		     json_pack("{s:o, s:o}", "adapter", json_str_lossy(p->fallback[k]),
			       "profile_hash", json_str_lossy(hash)));
	json_obj_set(det, "reason", json_str_lossy(why));
	rid = run_task_resource(l, t);
	if (run_audit(l, "task.fallback", "task", rid, det) < 0) {
		free(rid);
		return true; /* the run stops (run_audit() said why) */
	}
	free(rid);
	run_spec(t)->chain_at = (size_t)k + 1;
	run_spec(t)->chain_base = t->row.attempts;
	run_spec(t)->chain_model = NULL;
	spec_changed(t);
	run_set_str(&t->row.retry_at, NULL);
	(void)snprintf(msg, sizeof(msg), "%s; falling back from %s to %s", why, from,
		       p->fallback[k]);
	(void)run_transition(l, t, TASK_EV_FALLBACK, msg);
	return true;
}

bool run_retry_after(struct loop *l, struct otask *t, enum outcome out, int64_t delay_ms,
		     const char *why)
{
	struct retry_resolved p;
	int64_t n = t->row.attempts - run_spec(t)->chain_base;

	run_retry_policy(l, t, &p);
	switch (retry_decide(&p, out, n, run_spec(t)->chain_at)) {
	case RETRY_AGAIN:
		again(l, t, &p, out, n, delay_ms, why);
		return true;
	case RETRY_FALLBACK:
		return fall_back(l, t, &p, why);
	case RETRY_NO:
	default:
		return false;
	}
}

/* ---- before a run is recorded ---- */

/* One adapter a task may fall back to, or run escalation models on:
 * known, with a profile, and passing a model when models escalate. 0, or
 * -EINVAL with the problem at file:line:col in reterr. */
static int check_adapter(const struct orch_env *e, const char *name, bool models, const char *file,
			 unsigned line, unsigned col, const char *field, struct diag *reterr)
{
	const struct registry_entry *en = catalog_find(e->cat, name);

	if (!en || !en->profile) {
		diag_set(
			reterr, file, line, col,
			"field '%s': adapter '%s' is not in the catalogue with a capability profile (bernstein adapters list)",
			field, name);
		return -EINVAL;
	}
	if (models && !en->profile->invocation.model_flag &&
	    !en->profile->runtime.endpoint.declared) {
		diag_set(
			reterr, file, line, col,
			"field '%s': adapter '%s' takes no model (its profile has no model flag), so retry.models cannot escalate it",
			field, name);
		return -EINVAL;
	}
	return 0;
}

/* The adapters task i may run on that are known before routing: its own
 * (or its role's), then its fallback list. */
static int check_task(const struct orch_env *e, const struct plan *plan, size_t i,
		      struct diag *reterr)
{
	const struct plan_task *pt = &plan->tasks[i];
	const struct orch_config *c = e->cfg;
	const struct role_policy *rp = orch_config_role(c, pt->role);
	const struct retry_policy *own = pt->retry.fallback	    ? &pt->retry
					 : rp && rp->retry.fallback ? &rp->retry
								    : &c->retry;
	const char *file = own == &pt->retry ? plan->source : c->source;
	const char *first = pt->adapter ? pt->adapter : rp ? rp->adapter : NULL;
	struct retry_resolved p;
	char field[YAML_PATH_MAX];
	size_t k;
	int r;

	retry_resolve(&pt->retry, rp ? &rp->retry : NULL, &c->retry, c->max_retries + 1,
		      c->retry_backoff_s, &p);
	if (first && p.n_models &&
	    (r = check_adapter(e, first, true, plan->source, pt->line, pt->col,
			       pt->path ? pt->path : "task", reterr)) < 0)
		return r;
	for (k = 0; k < p.n_fallback; k++) {
		(void)snprintf(field, sizeof(field), "fallback[%zu]", k);
		if (own == &pt->retry && pt->path)
			(void)snprintf(field, sizeof(field), "%s.fallback[%zu]", pt->path, k);
		else if (rp && own == &rp->retry)
			(void)snprintf(field, sizeof(field), "role_model_policy.%s.fallback[%zu]",
				       rp->role, k);
		r = check_adapter(e, p.fallback[k], p.n_models > 0, file ? file : "bernstein.yaml",
				  own->fallback_lines ? own->fallback_lines[k] : 0,
				  own->fallback_cols ? own->fallback_cols[k] : 0, field, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

int run_retry_check(const struct orch_env *e, const struct plan *plan, struct diag *reterr)
{
	size_t i;
	int r;

	for (i = 0; i < plan->n; i++)
		if ((r = check_task(e, plan, i, reterr)) < 0)
			return r;
	return 0;
}
