/* The run loop's rate-limit meters (meters.h). */
#include "orch/meters.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util/xalloc.h"
#include "util/banned.h"

void meters_init(struct meters *ms, double retry_backoff_s, const struct clock *clock)
{
	static const struct ratelimit_policy dflt = RATELIMIT_POLICY_DEFAULT;
	double base = retry_backoff_s * 1000.0;

	memset(ms, 0, sizeof(*ms));
	ms->policy = dflt;
	ms->policy.backoff.base_ms =
		base > 0 ? (base < METERS_WAIT_MAX_MS ? (uint64_t)base : METERS_WAIT_MAX_MS) : 0;
	ms->policy.backoff.cap_ms = METERS_WAIT_MAX_MS;
	ms->policy.backoff.hint_cap_ms = METERS_WAIT_MAX_MS;
	ms->clock = clock ? clock : clock_system();
}

void meters_release(struct meters *ms)
{
	free(ms->v);
	memset(ms, 0, sizeof(*ms));
}

static struct ratelimit_meter *find(const struct meters *ms, const char *adapter)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		if (strncmp(ms->v[i].adapter, adapter, RATELIMIT_NAME_MAX - 1) == 0)
			return &ms->v[i];
	return NULL;
}

static uint32_t jitter(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;
	}
	return v;
}

/* The agent's local offset from UTC, for "resets at 10pm" (it runs on this
 * host, in its time zone). */
static long utc_offset_s(const struct clock *clock)
{
	time_t t = (time_t)(clock->now_ns(clock) / 1000000000);
	struct tm tm;

	if (!localtime_r(&t, &tm))
		return 0;
	return tm.tm_gmtoff;
}

uint64_t meters_hit(struct meters *ms, const char *adapter, const struct ratelimit_hint *hint)
{
	struct ratelimit_meter *m = find(ms, adapter);

	if (!m) {
		if (ms->n == ms->alloc) {
			ms->alloc = ms->alloc ? 2 * ms->alloc : 4;
			ms->v = xrealloc(ms->v, ms->alloc * sizeof(*ms->v));
		}
		m = &ms->v[ms->n++];
		ratelimit_meter_init(m, adapter, &ms->policy, ms->clock);
	}
	ratelimit_meter_hit(m, NULL, hint, utc_offset_s(ms->clock), jitter());
	return ratelimit_meter_wait_ms(m);
}

void meters_success(struct meters *ms, const char *adapter)
{
	struct ratelimit_meter *m = find(ms, adapter);

	if (m)
		ratelimit_meter_success(m);
}

int64_t meters_feed(struct meters *ms, const char *adapter, enum outcome out,
		    const struct ratelimit_hint *hint)
{
	if (!adapter)
		return 0;
	if (out == OUTCOME_RATE_LIMITED)
		return (int64_t)meters_hit(ms, adapter, hint);
	meters_success(ms, adapter);
	return 0;
}

uint64_t meters_wait_ms(const struct meters *ms, const char *adapter)
{
	const struct ratelimit_meter *m = find(ms, adapter);

	return m ? ratelimit_meter_wait_ms(m) : 0;
}

int64_t meters_next_ms(const struct meters *ms)
{
	int64_t best = -1;
	size_t i;

	for (i = 0; i < ms->n; i++) {
		uint64_t w = ratelimit_meter_wait_ms(&ms->v[i]);

		if (w > 0 && (best < 0 || (int64_t)w < best))
			best = (int64_t)w;
	}
	return best;
}
