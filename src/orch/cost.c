/* Tokens and cost added up over attempts (cost.h). */
#include "orch/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/strvec.h"

void cost_total_add(struct cost_total *t, const struct attempt_row *a)
{
	bool tokens = false;

	t->attempts++;
	if (a->input_tokens != STATE_NULL_INT && a->input_tokens > 0) {
		t->input_tokens += a->input_tokens;
		tokens = true;
	}
	if (a->output_tokens != STATE_NULL_INT && a->output_tokens > 0) {
		t->output_tokens += a->output_tokens;
		tokens = true;
	}
	if (a->cached_tokens != STATE_NULL_INT && a->cached_tokens > 0) {
		t->cached_tokens += a->cached_tokens;
		tokens = true;
	}
	if (!isnan(a->cost_usd) && a->cost_usd >= 0) {
		t->cost_usd += a->cost_usd;
		t->cost_known++;
		t->any_usage = true;
	} else if (tokens) {
		t->cost_unknown++;
	}
	if (tokens)
		t->any_usage = true;
}

void cost_total_sum(struct cost_total *t, const struct cost_total *more)
{
	t->attempts += more->attempts;
	t->input_tokens += more->input_tokens;
	t->output_tokens += more->output_tokens;
	t->cached_tokens += more->cached_tokens;
	t->cost_usd += more->cost_usd;
	t->cost_known += more->cost_known;
	t->cost_unknown += more->cost_unknown;
	t->any_usage = t->any_usage || more->any_usage;
}

int64_t cost_total_tokens(const struct cost_total *t)
{
	return t->input_tokens + t->output_tokens;
}

int cost_run_total(struct state *st, const char *run_id, struct cost_total *ret,
		   struct diag *reterr)
{
	struct cost_total t;
	struct strvec ids = STRVEC_INIT;
	size_t i, j;
	int r;

	/* task by task: a run of many tasks is never all in memory */
	memset(&t, 0, sizeof(t));
	r = state_task_ids(st, run_id, &ids, reterr);
	for (i = 0; r >= 0 && i < ids.nr; i++) {
		struct attempt_row *v = NULL;
		size_t m = 0;

		r = state_attempts_get(st, run_id, ids.v[i], &v, &m, reterr);
		for (j = 0; r >= 0 && j < m; j++)
			cost_total_add(&t, &v[j]);
		attempt_rows_free(v, m);
	}
	strvec_clear(&ids);
	if (r < 0)
		return r;
	*ret = t;
	return 0;
}

json_t *cost_total_json(const struct cost_total *t)
{
	json_t *o = json_object();

	(void)json_object_set_new(o, "attempts", json_integer((json_int_t)t->attempts));
	(void)json_object_set_new(o, "input_tokens", json_integer(t->input_tokens));
	(void)json_object_set_new(o, "output_tokens", json_integer(t->output_tokens));
	(void)json_object_set_new(o, "cached_tokens", json_integer(t->cached_tokens));
	(void)json_object_set_new(o, "tokens", json_integer(cost_total_tokens(t)));
	(void)json_object_set_new(o, "cost_usd",
				  t->cost_known ? json_real(t->cost_usd) : json_null());
	(void)json_object_set_new(o, "cost_unknown_attempts",
				  json_integer((json_int_t)t->cost_unknown));
	return o;
}
