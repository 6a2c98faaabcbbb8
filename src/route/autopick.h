/* adapter: auto (docs/routing.md, "adapter: auto"): the first agent of
 * bernstein.yaml's auto: list that is usable here (adapter/usable.h: on
 * PATH, with credentials) and meets the task's requirements.
 *
 * autopick_prepare() sorts the list into the usable agents (the explicit
 * candidates of select_adapter(), in order) and the skipped ones with what
 * each lacks; selection then proceeds as for any explicit list, so the
 * capability selection or refusal is anchored as usual (route.h). Then
 * autopick_record() anchors the auto decision itself, one record of
 * resource_type "run" (actor "bernstein"):
 *   adapter.auto_selection  a usable candidate met the requirements
 *   adapter.auto_refusal    none did (or none is usable)
 * with details
 *   {"order": [NAME...], "skipped": [{"adapter": NAME, "reason": TEXT}...],
 *    "candidates": [NAME...], "chosen": NAME | null,
 *    "unmet": {NAME: [AXIS...]...}}
 * (unmet: the usable candidates the requirements ruled out).
 *
 * Never chosen: a name not in the catalogue, a built-in adapter (mock, the
 * runner) or one without a profile: each is skipped with its reason. */
#ifndef BERNSTEIN_ROUTE_AUTOPICK_H
#define BERNSTEIN_ROUTE_AUTOPICK_H

#include <jansson.h>
#include <stdbool.h>

#include "adapter/catalog.h"
#include "adapter/usable.h"
#include "route/select.h"
#include "util/diag.h"
#include "util/sbuf.h"
#include "util/strvec.h"

struct audit_chain;

#define AUTOPICK_EVENT_SELECTION "adapter.auto_selection"
#define AUTOPICK_EVENT_REFUSAL	 "adapter.auto_refusal"

/* The api_key_env of an adapter's endpoint (bernstein.yaml or the plan),
 * or NULL: a credential usable_check() counts too. */
typedef const char *autopick_key_env_fn(void *userdata, const char *adapter);

struct autopick {
	bool active;	       /* prepared: the task is routed by auto */
	struct strvec order;   /* the auto: list as given */
	struct strvec usable;  /* the usable ones, in order: the candidates */
	struct strvec skipped; /* the others, in order */
	struct strvec why;     /* what each skipped one lacks (parallel to skipped) */
};

#define AUTOPICK_INIT                                                                              \
	{                                                                                          \
		.active = false, .order = STRVEC_INIT, .usable = STRVEC_INIT,                      \
		.skipped = STRVEC_INIT, .why = STRVEC_INIT                                         \
	}

/* Sort order (NULL-terminated) into usable and skipped agents of cat with
 * the environment env (its extra_key_env is set per adapter from key_env,
 * which may be NULL). *ret is overwritten; release with autopick_release(). */
void autopick_prepare(const struct catalog *cat, const char *const *order,
		      const struct usable_env *env, autopick_key_env_fn *key_env, void *userdata,
		      struct autopick *ret);
void autopick_release(struct autopick *a);

/* The details of the record for a and the selection made among its usable
 * agents (sel: NULL when none was attempted). A new reference. */
json_t *autopick_details(const struct autopick *a, const struct selection *sel);

/* Append the record (no-op without a chain). 0 or the append's error. */
int autopick_record(const struct autopick *a, const struct selection *sel,
		    struct audit_chain *chain, const char *run_id, struct diag *reterr);

/* Why nothing was chosen, one line, appended to out:
 *   adapter auto: no usable agent meets the task: claude: not installed:
 *   'claude' is not on PATH; codex: requirement vision not met; ... */
void autopick_describe_refusal(const struct autopick *a, const struct selection *sel,
			       struct sbuf *out);

#endif
