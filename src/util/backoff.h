/* The wait before a retry, in one place: the run loop's rate-limit retries
 * (through the meter, adapter/ratelimit.h) and the built-in runner's HTTP
 * retries (runner/llm.c) both take it from backoff_delay_ms().
 *
 * Pure: no clock, no randomness of its own; the caller passes the jitter. */
#ifndef BERNSTEIN_UTIL_BACKOFF_H
#define BERNSTEIN_UTIL_BACKOFF_H

#include <stdint.h>

struct backoff_policy {
	uint64_t base_ms;     /* the first retry's delay, before jitter */
	uint64_t cap_ms;      /* the doubling stops here */
	uint64_t hint_cap_ms; /* a hint asking for longer is cut to this */
};

/* The delay before retry number attempt (1-based; 0 counts as 1):
 *   - hint_ms >= 0 (the agent or the server said when: Retry-After, "try
 *     again in 20s", a reset time): hint_ms, at most hint_cap_ms, with no
 *     jitter (never sooner than asked);
 *   - else base_ms * 2^(attempt-1), at most cap_ms, times a jitter factor
 *     in [0.5, 1.0) taken from rnd (0.5 + 0.5 * rnd / 2^32). */
uint64_t backoff_delay_ms(const struct backoff_policy *p, unsigned attempt, int64_t hint_ms,
			  uint32_t rnd);

#endif
