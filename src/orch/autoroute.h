/* adapter: auto in a run (route/autopick.h with the run's environment):
 * which tasks it routes and what its decision anchors. */
#ifndef BERNSTEIN_ORCH_AUTOROUTE_H
#define BERNSTEIN_ORCH_AUTOROUTE_H

#include <stdbool.h>

#include "orch/run.h"
#include "route/autopick.h"
#include "route/select.h"
#include "util/diag.h"

/* The key variable of adapter's endpoint for a task (its plan's
 * endpoints: entry, else bernstein.yaml's), or NULL: the extra credential
 * usable_check() counts for that adapter. A key variable of a role policy
 * or of the task's sampling: is not counted (it is not one agent's: every
 * candidate would look usable). */
struct autoroute_task {
	const struct orch_config *cfg;
	const struct orch_endpoints *plan_endpoints; /* may be NULL */
};
const char *autoroute_key_env(void *task, const char *adapter);

/* When bernstein.yaml's adapter is auto (the caller checked that the task
 * and its role name none): prepare ap from the auto: list with the host's
 * environment (PATH, HOME, each agent's endpoint key variable:
 * autoroute_key_env()) and return true; else false with ap
 * untouched. */
bool autoroute_prepare(const struct orch_env *e, const struct autoroute_task *t,
		       struct autopick *ap);

/* After route_and_record() returned r with sel: anchor ap's decision when
 * ap is active. Returns r, or the append's error (diag). */
int autoroute_record(const struct orch_env *e, const char *run_id, const struct autopick *ap,
		     const struct selection *sel, int r, struct diag *reterr);

#endif
