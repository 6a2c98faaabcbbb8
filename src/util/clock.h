/* Injectable clock: everything that reads time takes a struct clock *, so tests
 * can pin it. clock_system() is the real one. */
#ifndef BERNSTEIN_UTIL_CLOCK_H
#define BERNSTEIN_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

struct clock {
	/* Wall time (CLOCK_REALTIME) in nanoseconds since the epoch. */
	int64_t (*now_ns)(const struct clock *c);
	/* Monotonic milliseconds, for deadlines. */
	uint64_t (*mono_ms)(const struct clock *c);
	int64_t fixed_ns; /* used by the fixed clock */
	uint64_t fixed_mono_ms;
};

const struct clock *clock_system(void);
/* A clock frozen at the given instant; advance it by writing the fields. */
void clock_fixed_init(struct clock *c, int64_t now_ns, uint64_t mono_ms);
/* ISO-8601 UTC with microseconds and a literal Z, "2026-11-30T11:03:56.123456Z"
 * (Python strftime("%Y-%m-%dT%H:%M:%S.%fZ"), the audit chain's timestamp form).
 * buf needs 28 bytes. */
const char *clock_iso8601_utc(int64_t ns, char *buf, unsigned long size);
/* "YYYY-MM-DD" of the UTC day. buf needs 11 bytes. */
const char *clock_utc_day(int64_t ns, char *buf, unsigned long size);

#endif
