/* Tokens and cost added up over attempts (docs/runs.md, "Cost"): what
 * `bernstein cost`, `status` and a run's budget count.
 *
 * A total keeps the attempts whose cost is unknown apart: their tokens are
 * counted, their cost is not (cost_known false when any such attempt used
 * tokens), so a total never passes an unknown cost off as 0. */
#ifndef BERNSTEIN_ORCH_COST_H
#define BERNSTEIN_ORCH_COST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orch/state.h"
#include "util/diag.h"

struct cost_total {
	size_t attempts;
	int64_t input_tokens, output_tokens, cached_tokens; /* reported ones only */
	double cost_usd;     /* of the attempts whose cost is known */
	size_t cost_known;   /* attempts with a cost (reported or computed) */
	size_t cost_unknown; /* attempts that used tokens with no cost */
	bool any_usage;	     /* some attempt reported tokens or a cost */
};

void cost_total_add(struct cost_total *t, const struct attempt_row *a);
void cost_total_sum(struct cost_total *t, const struct cost_total *more);
/* Input plus output tokens. */
int64_t cost_total_tokens(const struct cost_total *t);

/* Every attempt of every task of run_id. */
int cost_run_total(struct state *st, const char *run_id, struct cost_total *ret,
		   struct diag *reterr);

/* {"attempts", "input_tokens", "output_tokens", "cached_tokens", "tokens",
 * "cost_usd" (null when no attempt's cost is known), "cost_unknown_attempts"} */
json_t *cost_total_json(const struct cost_total *t);

#endif
