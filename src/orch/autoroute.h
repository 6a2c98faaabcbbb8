/* adapter: auto in a run (route/autopick.h with the run's environment):
 * which tasks it routes and what its decision anchors. */
#ifndef BERNSTEIN_ORCH_AUTOROUTE_H
#define BERNSTEIN_ORCH_AUTOROUTE_H

#include <stdbool.h>

#include "orch/run.h"
#include "route/autopick.h"
#include "route/select.h"
#include "util/diag.h"

/* When bernstein.yaml's adapter is auto (the caller checked that the task
 * and its role name none): prepare ap from the auto: list with the host's
 * environment (PATH, HOME, the endpoints' key variables) and return true;
 * else false with ap untouched. */
bool autoroute_prepare(const struct orch_env *e, struct autopick *ap);

/* After route_and_record() returned r with sel: anchor ap's decision when
 * ap is active. Returns r, or the append's error (diag). */
int autoroute_record(const struct orch_env *e, const char *run_id, const struct autopick *ap,
		     const struct selection *sel, int r, struct diag *reterr);

#endif
