/* A run's budget (docs/runs.md, "Budgets"): the cost and tokens its agents
 * may spend before no new attempt starts.
 *
 *   budget:
 *     max_cost_usd: 5       USD, > 0 (attempts of unknown cost are not counted)
 *     max_tokens: 2000000   input + output tokens as the agents report them, >= 1
 *     warn_at: 0.8          the fraction of a cap that warns once (0 < warn_at <= 1)
 *     on_exceed: drain      drain: running agents finish; stop: they are stopped
 *
 * or `budget: 5`, `budget: "$5"` (Bernstein's spelling): max_cost_usd alone.
 * In bernstein.yaml and in plans; a plan's field wins over bernstein.yaml's,
 * `run --max-cost-usd` over both.
 * The resolved budget is recorded with the run (runs.budget, JSON), so
 * `resume` keeps it; `resume --max-cost-usd` changes its cap. */
#ifndef BERNSTEIN_ORCH_BUDGET_H
#define BERNSTEIN_ORCH_BUDGET_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/diag.h"

struct ydoc;
struct ynode;

#define BUDGET_DEFAULT_WARN_AT 0.8
#define BUDGET_MAX_COST_USD    1.0e9
#define BUDGET_MAX_TOKENS      ((int64_t)1 << 50)

enum budget_on_exceed {
	BUDGET_DRAIN, /* "drain": no new attempt; running ones finish */
	BUDGET_STOP,  /* "stop": running agents are stopped as `stop --force` does */
	_BUDGET_ON_EXCEED_MAX,
	_BUDGET_ON_EXCEED_INVALID = -EINVAL,
};

const char *budget_on_exceed_to_string(enum budget_on_exceed e);

struct orch_budget {
	double max_cost_usd; /* 0: no cost cap */
	int64_t max_tokens;  /* 0: no token cap */
	double warn_at;
	enum budget_on_exceed on_exceed;
	/* which fields were given (a plan's given field wins) */
	bool has_cost, has_tokens, has_warn_at, has_on_exceed;
};
#define ORCH_BUDGET_INIT                                                                           \
	{                                                                                          \
		.warn_at = BUDGET_DEFAULT_WARN_AT, .on_exceed = BUDGET_DRAIN                       \
	}

/* A cap is set. */
bool orch_budget_active(const struct orch_budget *b);

/* The value n of field path (a mapping, or a number for max_cost_usd):
 * -EINVAL with "field 'budget.warn_at': ..." at its FILE:LINE:COL. */
int orch_budget_parse(const struct ydoc *doc, const struct ynode *n, const char *path,
		      struct orch_budget *ret, struct diag *reterr);

/* The fields given in over over those of *base. */
void orch_budget_merge(struct orch_budget *base, const struct orch_budget *over);

/* The JSON object recorded with a run (every field, caps 0 omitted), and
 * back: -EBADMSG for an object this code did not write. */
json_t *orch_budget_json(const struct orch_budget *b);
int orch_budget_from_json(const json_t *o, struct orch_budget *ret);

/* Only the fields given (bernstein.yaml's rendering, `config --json`): NULL
 * when none is; and as a YAML flow mapping appended to out. */
struct sbuf;
json_t *orch_budget_given_json(const struct orch_budget *b);
int orch_budget_given_yaml(const struct orch_budget *b, struct sbuf *out);

#endif
