/* The run loop's rate-limit meters: one adapter/ratelimit.h meter per
 * adapter for the run (docs/runs.md, "Rate limits").
 *
 * Each attempt's outcome feeds its adapter's meter: rate_limited is a hit
 * with the hint the agent gave (adapter/outcome.h), anything else a
 * success. The meter says how long that adapter must wait: the agent's
 * hint, at most METERS_WAIT_MAX_MS; without a hint retry_backoff doubled
 * per consecutive hit (at most METERS_WAIT_MAX_MS) with jitter
 * (util/backoff.h). The loop retries the task after that wait and starts no
 * other task on the adapter before it ends. */
#ifndef BERNSTEIN_ORCH_METERS_H
#define BERNSTEIN_ORCH_METERS_H

#include <stddef.h>
#include <stdint.h>

#include "adapter/outcome.h"
#include "adapter/ratelimit.h"
#include "util/clock.h"

#define METERS_WAIT_MAX_MS 3600000 /* the longest wait after a rate limit: one hour */

struct meters {
	struct ratelimit_meter *v;
	size_t n, alloc;
	struct ratelimit_policy policy;
	const struct clock *clock;
};

/* No meter yet; retry_backoff_s is the configuration's retry_backoff. */
void meters_init(struct meters *ms, double retry_backoff_s, const struct clock *clock);
void meters_release(struct meters *ms);
/* An attempt on adapter was rate limited, with the agent's hint (may be
 * NULL). Returns the wait in ms before the adapter's next spawn. */
uint64_t meters_hit(struct meters *ms, const char *adapter, const struct ratelimit_hint *hint);
/* An attempt on adapter ended any other way. */
void meters_success(struct meters *ms, const char *adapter);
/* Feed an attempt's outcome on adapter (NULL: nothing to feed): a hit for
 * rate_limited (returns its wait), else a success (returns 0). */
int64_t meters_feed(struct meters *ms, const char *adapter, enum outcome out,
		    const struct ratelimit_hint *hint);
/* Milliseconds before adapter may spawn again; 0 = go. */
uint64_t meters_wait_ms(const struct meters *ms, const char *adapter);
/* The shortest wait of a meter that still says wait, or -1 when none does. */
int64_t meters_next_ms(const struct meters *ms);

#endif
