/* Tokens and cost as `bernstein cost`, `status` and the end of `run` show
 * them (docs/runs.md, "Cost"; orch/cost.h adds them up). */
#ifndef BERNSTEIN_CLI_COST_REPORT_H
#define BERNSTEIN_CLI_COST_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "orch/budget.h"
#include "orch/cost.h"
#include "orch/state.h"

/* "$0.0123", "$0.0123+?" (some attempts of unknown cost), "?" (none known)
 * or "-" (no usage at all) into buf. */
const char *cost_report_money(const struct cost_total *t, char *buf, size_t size);
/* The attempts of task t added up (a zero total when they cannot be read). */
void cost_report_task(struct state *st, const struct task_row *t, struct cost_total *ret);
/* The run's recorded budget: true and *ret when it has one. */
bool cost_report_budget(struct state *st, const char *run_id, struct orch_budget *ret);
/* Spent has reached a cap of b. */
bool cost_report_budget_reached(const struct orch_budget *b, const struct cost_total *t);
/* "budget: $X of $Y (N%), T of M tokens; on_exceed drain" (no newline). */
void cost_report_budget_line(FILE *f, const struct orch_budget *b, const struct cost_total *t);
/* {"max_cost_usd", "max_tokens", "warn_at", "on_exceed", "spent_usd",
 * "tokens", "exceeded"} */
json_t *cost_report_budget_json(const struct orch_budget *b, const struct cost_total *t);

#endif
