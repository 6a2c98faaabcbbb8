/* Retries, escalation and fallback of a task (docs/runs.md, "Retries,
 * escalation and fallback").
 *
 * The same two keys at three levels, a plan task's, its role's
 * (role_model_policy.ROLE) and bernstein.yaml's:
 *
 *   retry:
 *     max_attempts: 3            attempts on one adapter, 1..21
 *     on: [failed, timed_out]    the outcomes retried (see retry_on_names)
 *     backoff: 2                 seconds before the first retry, doubled
 *     models: [small, big]       attempt N on an adapter uses models[N-1]
 *                                (the last one past the end)
 *   fallback: [codex, gemini]    the adapters that take over, in order, when
 *                                the attempts on one are spent
 *
 * Each key given at a more specific level wins (task > role >
 * bernstein.yaml), key by key. bernstein.yaml's max_retries: N is
 * retry.max_attempts: N+1 and retry_backoff: S is retry.backoff: S (giving
 * both spellings in one file is an error). Without on: anywhere, a task
 * that has no retry: or fallback: at any level retries rate_limited (what
 * max_retries always did) and lost only; else on: defaults to
 * RETRY_ON_DEFAULT.
 *
 * Parsing (retry_get_yaml(), retry_get_fallback()) is strict, each error at
 * its FILE:LINE:COL with the field's path. The decision (retry_decide()) is
 * pure: the run loop (run-retry.c) gives it the outcome and the counts. */
#ifndef BERNSTEIN_ORCH_RETRY_H
#define BERNSTEIN_ORCH_RETRY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/outcome.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/yaml.h"

#define RETRY_MAX_ATTEMPTS  21 /* max_retries' 20, plus the first attempt */
#define RETRY_MAX_MODELS    16
#define RETRY_MAX_FALLBACK  8
#define RETRY_MAX_BACKOFF_S 3600.0

/* The outcomes a retry: on: names (a bit per enum outcome). */
#define RETRY_ON_BIT(o) (1u << (unsigned)(o))
#define RETRY_ON_DEFAULT                                                                           \
	(RETRY_ON_BIT(OUTCOME_FAILED) | RETRY_ON_BIT(OUTCOME_TIMED_OUT) |                          \
	 RETRY_ON_BIT(OUTCOME_KILLED) | RETRY_ON_BIT(OUTCOME_OOM) |                                \
	 RETRY_ON_BIT(OUTCOME_STALLED) | RETRY_ON_BIT(OUTCOME_RATE_LIMITED) |                      \
	 RETRY_ON_BIT(OUTCOME_LOST))
/* without any retry: or fallback:, a rate limit and a lost node (neither
 * the agent's doing) are retried */
#define RETRY_ON_LEGACY (RETRY_ON_BIT(OUTCOME_RATE_LIMITED) | RETRY_ON_BIT(OUTCOME_LOST))

/* One level's retry: and fallback: as written; each part unset when not
 * given (0, NULL). Strings live in the arena the parser was given. */
struct retry_policy {
	int64_t max_attempts; /* 0: not given */
	unsigned on;	      /* 0: not given */
	bool has_backoff;
	double backoff_s;
	const char *const *models; /* NULL: not given */
	size_t n_models;
	const char *const *fallback; /* NULL: not given */
	size_t n_fallback;
	/* where retry: and fallback: (and each fallback entry) are written,
	 * for errors found later (an adapter the catalogue does not know) */
	unsigned line, col, fallback_line, fallback_col;
	const unsigned *fallback_lines, *fallback_cols;
};

/* What applies to one task: every part decided. */
struct retry_resolved {
	int64_t max_attempts; /* >= 1 */
	unsigned on;
	double backoff_s;
	const char *const *models; /* borrowed; n_models 0: no escalation */
	size_t n_models;
	const char *const *fallback; /* borrowed */
	size_t n_fallback;
};

/* The names on: takes: every outcome but completed, no_changes and
 * cancelled, plus crashed (= killed: a signal ended the agent). */
const char *retry_on_name_list(void); /* "failed, rate_limited, ..." for messages */

/* retry: at n (a mapping) into *ret (its strings in a); path is the field
 * path ("tasks[2].retry"). -EINVAL with FILE:LINE:COL: field 'PATH.KEY':
 * ... in reterr. */
int retry_get_yaml(struct arena *a, const struct ydoc *doc, const struct ynode *n, const char *path,
		   struct retry_policy *ret, struct diag *reterr);
/* fallback: at n (a list of adapter names, no duplicates, not auto) into
 * *ret. */
int retry_get_fallback(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, struct retry_policy *ret, struct diag *reterr);
/* Whether any part is given. */
bool retry_policy_any(const struct retry_policy *p);

/* task over role over cfg (each may be NULL), key by key; legacy_attempts
 * and legacy_backoff_s are bernstein.yaml's max_retries + 1 and
 * retry_backoff, used when no level gives max_attempts or backoff. */
void retry_resolve(const struct retry_policy *task, const struct retry_policy *role,
		   const struct retry_policy *cfg, int64_t legacy_attempts, double legacy_backoff_s,
		   struct retry_resolved *ret);

/* What follows an attempt that ended with out, the n-th (1-based) on the
 * adapter at position at of the task's chain (0: the adapter routing chose,
 * i: fallback[i-1]). */
enum retry_verdict {
	RETRY_NO,	/* the outcome's usual end */
	RETRY_AGAIN,	/* another attempt on the same adapter */
	RETRY_FALLBACK, /* the next adapter of the chain (the caller checks it) */
};
enum retry_verdict retry_decide(const struct retry_resolved *p, enum outcome out, int64_t n,
				size_t at);

/* The model of the n-th attempt (1-based) on an adapter: models[n-1], the
 * last one past the end; NULL without escalation models. */
const char *retry_model(const struct retry_resolved *p, int64_t n);

/* The recorded forms (spec.h): retry as {max_attempts, on, backoff, models}
 * (only the parts given), fallback as an array. NULL when not given. */
json_t *retry_policy_json(const struct retry_policy *p);
json_t *retry_fallback_json(const struct retry_policy *p);
/* And back: -EBADMSG with the problem in msg. */
int retry_policy_parse_json(struct arena *a, const json_t *j, struct retry_policy *ret, char *msg,
			    size_t size);
int retry_fallback_parse_json(struct arena *a, const json_t *j, struct retry_policy *ret, char *msg,
			      size_t size);

#endif
