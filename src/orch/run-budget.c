/* The cost of an attempt and the run's budget (docs/runs.md, "Cost" and
 * "Budgets"; orch/budget.h).
 *
 * An attempt's cost is the agent's own (it reported cost_usd), else its
 * tokens at the prices of catalog/pricing.yaml for its model (the one the
 * agent announced, else the one bernstein asked for), else unknown: NULL in
 * state.db, never 0. Each ended attempt gets a task.cost audit record.
 *
 * Spent-so-far is every ended attempt of the run in state.db (so it
 * survives `resume`) plus what the live agents have reported so far. The
 * crossing of warn_at is budget.warn, the cap budget.exceeded: each has one
 * place here that writes it (run_budget_event()), for notifications to hang
 * on. At the cap the loop drains (no new attempt starts) and, with
 * on_exceed: stop, the supervisor stops every agent as `stop --force` does. */
#include "orch/run-internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/catalog.h"
#include "adapter/pricing.h"
#include "orch/cost.h"
#include "orch/plan.h"
#include "util/json.h"
#include "util/mathx.h"
#include "util/banned.h"

/* What t's live (or just ended) attempt has used: tokens, and its cost
 * when known (source "agent" or "pricing"). */
struct usage_now {
	int64_t tokens;
	double cost;
	const char *source; /* NULL: cost unknown */
	const char *model;
};

static void usage_of(const struct loop *l, const struct otask *t, struct usage_now *ret)
{
	const struct agentrun *ar = t->ar;
	struct pricing_usage u;
	double c = 0;

	memset(ret, 0, sizeof(*ret));
	ret->model = run_plan(t)->model;
	if (!ar)
		return; /* no agent (yet): nothing spent */
	if (ar->model[0])
		ret->model = ar->model;
	if (ar->input_tokens > 0)
		ret->tokens += ar->input_tokens;
	if (ar->output_tokens > 0)
		ret->tokens += ar->output_tokens;
	if (ar->cost_usd >= 0) {
		ret->cost = ar->cost_usd;
		ret->source = "agent";
		return;
	}
	pricing_usage_from(run_plan(t)->dialect, ar->input_tokens, ar->output_tokens,
			   ar->cached_tokens, &u);
	if (pricing_cost(catalog_pricing(l->e->cat, ret->model), &u, &c) == 0) {
		ret->cost = c;
		ret->source = "pricing";
	}
}

static json_t *jmoney(double v)
{
	return json_real(mathx_round(v * 1e6) / 1e6);
}

static json_t *budget_details(const struct loop *l, double spent, int64_t tokens)
{
	const struct orch_budget *b = &l->budget.b;
	json_t *det = json_object();

	json_obj_set(det, "spent_usd", jmoney(spent));
	json_obj_set(det, "tokens", json_integer(tokens));
	json_obj_set(det, "max_cost_usd", b->max_cost_usd > 0 ? json_real(b->max_cost_usd) : NULL);
	json_obj_set(det, "max_tokens",
		     b->max_tokens > 0 ? json_integer((json_int_t)b->max_tokens) : NULL);
	json_obj_set(det, "warn_at", json_real(b->warn_at));
	json_obj_set(det, "on_exceed", json_str_lossy(budget_on_exceed_to_string(b->on_exceed)));
	if (l->budget.unknown)
		json_obj_set(det, "cost_unknown_attempts",
			     json_integer((json_int_t)l->budget.unknown));
	return det;
}

/* budget.warn or budget.exceeded: the one place each is written. */
static void run_budget_event(struct loop *l, bool exceeded, double spent, int64_t tokens,
			     const char *why, double frac)
{
	const struct orch_budget *b = &l->budget.b;
	json_t *det = budget_details(l, spent, tokens);
	char amount[160];

	json_obj_set(det, "by", json_str_lossy(why));
	(void)run_audit(l, exceeded ? "budget.exceeded" : "budget.warn", "run", l->run.id, det);
	(void)snprintf(amount, sizeof(amount), "%s: %.0f%% spent", why, frac * 100);
	run_notify(l, exceeded ? "budget_exceeded" : "budget_warn", NULL, amount);
	if (strcmp(why, "max_tokens") == 0)
		(void)snprintf(amount, sizeof(amount), "%lld of %lld tokens", (long long)tokens,
			       (long long)b->max_tokens);
	else
		(void)snprintf(amount, sizeof(amount), "$%.4f of $%.4f, %lld tokens", spent,
			       b->max_cost_usd, (long long)tokens);
	if (!exceeded)
		run_warn(l, NULL, "budget: %.0f%% of %s spent (%s; warn_at %g)", frac * 100, why,
			 amount, b->warn_at);
	else
		run_warn(
			l, NULL,
			b->on_exceed == BUDGET_STOP
				? "budget exceeded: %s reached (%s): no new attempt starts; the running agents are being stopped"
				: "budget exceeded: %s reached (%s): no new attempt starts; the running agents finish",
			why, amount);
}

/* Spent so far: the ended attempts, plus the live ones. */
static void spent_now(const struct loop *l, double *ret_usd, int64_t *ret_tokens)
{
	double usd = l->budget.spent_usd;
	int64_t tok = l->budget.spent_tokens;
	size_t i;

	for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)) {
		const struct otask *t = &l->t[i];
		struct usage_now u;

		if (!t->live || t->gate_live || t->hook_live || run_prep_live(t))
			continue;
		usage_of(l, t, &u);
		tok += u.tokens;
		if (u.source)
			usd += u.cost;
	}
	*ret_usd = usd;
	*ret_tokens = tok;
}

void run_budget_check(struct loop *l)
{
	struct run_budget *bg = &l->budget;
	const struct orch_budget *b = &bg->b;
	double usd, f_cost = 0, f_tok = 0;
	int64_t tok;
	const char *why;

	if (!bg->active || bg->exceeded)
		return;
	spent_now(l, &usd, &tok);
	if (b->max_cost_usd > 0)
		f_cost = usd / b->max_cost_usd;
	if (b->max_tokens > 0)
		f_tok = (double)tok / (double)b->max_tokens;
	why = f_tok > f_cost ? "max_tokens" : "max_cost_usd";
	if (f_cost >= 1 || f_tok >= 1) {
		if (!bg->warned) /* both crossed at once: the warning first */
			run_budget_event(l, false, usd, tok, why, f_tok > f_cost ? f_tok : f_cost);
		bg->exceeded = true;
		bg->warned = true;
		run_budget_event(l, true, usd, tok, why, f_tok > f_cost ? f_tok : f_cost);
		l->draining = true; /* next_task starts nothing new */
		if (b->on_exceed == BUDGET_STOP)
			bg->stop_pending = true;
		return;
	}
	if (!bg->warned && (f_cost >= b->warn_at || f_tok >= b->warn_at)) {
		bg->warned = true;
		run_budget_event(l, false, usd, tok, why, f_tok > f_cost ? f_tok : f_cost);
	}
}

void run_budget_line(struct loop *l, struct otask *t)
{
	const struct agentrun *ar = t->ar;
	double seen;

	if (!ar)
		return;
	seen = (double)ar->input_tokens + (double)ar->output_tokens + ar->cost_usd +
	       (double)ar->cached_tokens;
	if (!l->budget.active || l->budget.exceeded || seen == t->budget_seen)
		return;
	t->budget_seen = seen;
	run_budget_check(l);
}

bool run_budget_interrupt(void *ctx)
{
	struct loop *l = ctx;

	if (!l->budget.stop_pending)
		return false;
	l->budget.stop_pending = false;
	return true;
}

/* The first attempt of unknown cost under a cost cap: say the cap misses
 * it (the model's name is the agent's word: control bytes as '?'). */
static void warn_unknown(struct loop *l, const struct otask *t, const char *model)
{
	char m[72];
	size_t i;

	(void)snprintf(m, sizeof(m), "%s", model ? model : "?");
	for (i = 0; m[i]; i++)
		if ((unsigned char)m[i] < 0x20 || m[i] == 0x7f)
			m[i] = '?';
	run_warn(
		l, t,
		"budget: the cost of this attempt is unknown (its agent reported none and model '%s' has no price in catalog/pricing.yaml): max_cost_usd does not count it, max_tokens does",
		m);
}

void run_budget_attempt(struct loop *l, struct otask *t)
{
	struct usage_now u;
	char *res;
	json_t *det;

	usage_of(l, t, &u);
	run_set_str(&run_att(t)->model, u.model);
	run_att(t)->cached_tokens = t->ar && t->ar->cached_tokens != EVENT_UNSET
					    ? t->ar->cached_tokens
					    : STATE_NULL_INT;
	run_att(t)->cost_usd = u.source ? u.cost : NAN;
	run_set_str(&run_att(t)->cost_source, u.source);
	l->budget.spent_tokens += u.tokens;
	if (u.source)
		l->budget.spent_usd += u.cost;
	else if (u.tokens > 0 && !l->budget.unknown++ && l->budget.b.max_cost_usd > 0)
		warn_unknown(l, t, u.model);
	t->budget_seen = 0;

	det = json_object();
	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "attempt", json_integer((json_int_t)run_att(t)->n));
	json_obj_set(det, "adapter", json_str_lossy(t->row.adapter));
	json_obj_set(det, "model", json_str_lossy(u.model));
	json_obj_set(det, "input_tokens",
		     run_att(t)->input_tokens != STATE_NULL_INT
			     ? json_integer(run_att(t)->input_tokens)
			     : NULL);
	json_obj_set(det, "output_tokens",
		     run_att(t)->output_tokens != STATE_NULL_INT
			     ? json_integer(run_att(t)->output_tokens)
			     : NULL);
	json_obj_set(det, "cached_tokens",
		     run_att(t)->cached_tokens != STATE_NULL_INT
			     ? json_integer(run_att(t)->cached_tokens)
			     : NULL);
	json_obj_set(det, "cost_usd", u.source ? jmoney(u.cost) : NULL);
	json_obj_set(det, "cost_source", json_str_lossy(u.source));
	res = run_task_resource(l, t);
	(void)run_audit(l, "task.cost", "task", res, det);
	free(res);
}

int run_budget_load(struct loop *l, struct diag *reterr)
{
	struct orch_env *e = l->e;
	struct run_budget *bg = &l->budget;
	struct cost_total tot;
	char *text = NULL, ts[TS_MAX];
	json_t *o = NULL;
	int r;

	memset(bg, 0, sizeof(*bg));
	bg->b = (struct orch_budget)ORCH_BUDGET_INIT;
	r = state_run_get_budget(e->st, l->run.id, &text, reterr);
	if (r < 0)
		return r;
	if (text) {
		o = json_loads(text, 0, NULL);
		if (orch_budget_from_json(o, &bg->b) < 0) {
			diag_set(reterr, state_path(e->st), 0, 0,
				 "run '%s': the recorded budget cannot be read: %s", l->run.id,
				 text);
			r = -EBADMSG;
			goto out;
		}
	}
	if (e->max_cost_usd > 0 && e->max_cost_usd != bg->b.max_cost_usd) {
		char *s;

		bg->b.max_cost_usd = e->max_cost_usd;
		bg->b.has_cost = true;
		json_decref(o);
		o = orch_budget_json(&bg->b);
		s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		r = state_run_set_budget(e->st, l->run.id, s, run_now(l, ts), reterr);
		free(s);
		if (r < 0)
			goto out;
		r = run_audit(l, "budget.set", "run", l->run.id, json_deep_copy(o));
		if (r < 0) {
			*reterr = l->fatal_d;
			goto out;
		}
	}
	bg->active = orch_budget_active(&bg->b);
	if (!bg->active)
		goto out;
	r = cost_run_total(e->st, l->run.id, &tot, reterr);
	if (r < 0)
		goto out;
	bg->spent_usd = tot.cost_usd;
	bg->spent_tokens = cost_total_tokens(&tot);
	bg->unknown = tot.cost_unknown;
	/* a warning given before this execution is not given again */
	bg->warned =
		(bg->b.max_cost_usd > 0 && bg->spent_usd >= bg->b.warn_at * bg->b.max_cost_usd) ||
		(bg->b.max_tokens > 0 &&
		 (double)bg->spent_tokens >= bg->b.warn_at * (double)bg->b.max_tokens);
	run_budget_check(l); /* already at the cap: nothing starts */
out:
	json_decref(o);
	free(text);
	return r;
}

int run_budget_record(struct orch_env *e, const struct plan *plan, const char *run_id,
		      const char *now, json_t **ret_json, struct diag *reterr)
{
	struct orch_budget b = e->cfg->budget;
	json_t *o;
	char *s;
	int r;

	orch_budget_merge(&b, &plan->budget);
	if (e->max_cost_usd > 0) {
		b.max_cost_usd = e->max_cost_usd;
		b.has_cost = true;
	}
	if (!orch_budget_active(&b))
		return 0;
	o = orch_budget_json(&b);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	r = state_run_set_budget(e->st, run_id, s, now, reterr);
	free(s);
	if (r >= 0 && ret_json)
		*ret_json = o;
	else
		json_decref(o);
	return r;
}
