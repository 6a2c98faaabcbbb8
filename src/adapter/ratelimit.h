/* Rate limits: recognising them in what an agent prints, reading the reset
 * time it announces, and a per-adapter meter (hits in a sliding window,
 * consecutive hits, exponential backoff with a cap, reset time).
 *
 * Pure code: no I/O, no globals; time comes from an injected struct clock.
 * docs/event-stream.md ("Rate limits") documents the needles and patterns.
 *
 * Text detection (ratelimit_text_matches) is case-insensitive over ASCII and
 * takes the needle list of the anchor's _is_rate_limit_error() (rate limit,
 * usage limit, quota exceeded, too many requests, overloaded, hit your limit,
 * limit exceeded, 429, resets) with two tightenings, because the bare forms
 * match ordinary text:
 *   - every needle must start at a word boundary (the byte before it is not
 *     a letter, digit, '_' or '-'), so "separate limits" and the
 *     "x-ratelimit-remaining" response header do not count;
 *   - "429" counts only as an HTTP status in context (ratelimit_http_status()
 *     finds 429: "status 429", "HTTP 429", "API Error: 429", "\"code\":429"),
 *     and "resets" only when a time follows ("resets 3pm", "resets at 22:00",
 *     "resets in 2h").
 * A few provider spellings are added: rate-limit, rate_limit, ratelimit,
 * usage_limit, insufficient_quota, exceeded your current quota,
 * resource_exhausted / resource exhausted. */
#ifndef BERNSTEIN_ADAPTER_RATELIMIT_H
#define BERNSTEIN_ADAPTER_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/backoff.h"
#include "util/clock.h"

/* When the agent says it may try again. Every field is optional (-1). */
struct ratelimit_hint {
	int64_t retry_after_s; /* relative: "Retry-After: 30", "try again in 20s" */
	int64_t reset_at_s;    /* absolute, epoch seconds: "limit reached|1748404800", ISO time */
	int reset_hour;	       /* time of day in the agent's local time: "resets at 10pm" */
	int reset_minute;      /* with reset_hour */
};

#define RATELIMIT_HINT_INIT                                                                        \
	{                                                                                          \
		.retry_after_s = -1, .reset_at_s = -1, .reset_hour = -1, .reset_minute = -1        \
	}

void ratelimit_hint_init(struct ratelimit_hint *h);
/* True when no field is set. */
bool ratelimit_hint_empty(const struct ratelimit_hint *h);

/* True when the n bytes at s contain a rate-limit needle (see above). */
bool ratelimit_text_matches(const char *s, size_t n);

/* The first HTTP status (100-599) the text states in context: after
 * "status", "status code", "statusCode", "code", "error", "error code",
 * "HTTP", "HTTP/1.1", "API Error" (separators ' ', ':', '=', '"', '\'' and '#'
 * may sit between), or, with allow_leading, a bare status at the very start
 * ("429 Too Many Requests", pi's errorMessage). 0 when none. */
int ratelimit_http_status(const char *s, size_t n, bool allow_leading);

/* Read a reset hint from text. Recognised (case-insensitive):
 *   retry-after / retry_after / retryAfter [:= "] N         -> retry_after_s
 *   retryDelay [:= "] DURATION                                -> retry_after_s
 *   try again in / retry in / retry after / reset after /
 *   resets in / reset in / wait DURATION                       -> retry_after_s
 *   resets [at] / reset at TIME-OF-DAY ("10pm", "10:30 pm", "22:00")
 *                                                              -> reset_hour/minute
 *   resets [at] / reset at ISO-8601 ("2026-11-30T22:00:00Z")   -> reset_at_s
 *   "|" + 10 digits (Claude's "usage limit reached|1748404800"),
 *   reset_at / resets_at / resetsAt [:= "] 10 or 13 digits     -> reset_at_s
 * DURATION is one or more NUMBER [UNIT] groups ("20s", "1h 30m",
 * "2 hours and 5 minutes", "27.9s"; units ms, s, sec(s), second(s), m,
 * min(s), minute(s), h, hr(s), hour(s), d, day(s); no unit = seconds),
 * rounded up to whole seconds. Returns true when something was found; ret
 * is reset first, then filled with the first match of each kind. */
bool ratelimit_parse_hint(const char *s, size_t n, struct ratelimit_hint *ret);

/* Seconds from now_s until the hint allows a retry: the largest of
 * retry_after_s, reset_at_s - now_s and the next occurrence of the time of
 * day (utc_offset_s is the agent's local offset from UTC, east positive).
 * 0 when the time has passed, -1 when the hint is empty. */
int64_t ratelimit_hint_wait_s(const struct ratelimit_hint *h, int64_t now_s, long utc_offset_s);

/* ---- the meter ------------------------------------------------------------ */

struct ratelimit_policy {
	uint64_t window_ms; /* sliding window for hits_in_window */
	/* the wait after a hit (util/backoff.h): base_ms after the first
	 * consecutive hit, doubling up to cap_ms, with jitter; a hint the
	 * agent gave instead, at most hint_cap_ms */
	struct backoff_policy backoff;
};

/* The anchor's meter: 300 s window, backoff 1 s doubling to 60 s; a hint
 * honoured up to an hour. */
#define RATELIMIT_POLICY_DEFAULT                                                                   \
	{                                                                                          \
		.window_ms = 300000, .backoff = {                                                  \
			.base_ms = 1000,                                                           \
			.cap_ms = 60000,                                                           \
			.hint_cap_ms = 3600000                                                     \
		}                                                                                  \
	}

#define RATELIMIT_WINDOW_MAX_HITS 256 /* hits remembered; older ones drop first */
#define RATELIMIT_NAME_MAX	  64

struct ratelimit_meter {
	char adapter[RATELIMIT_NAME_MAX];
	struct ratelimit_policy policy;
	const struct clock *clock;
	uint64_t hits[RATELIMIT_WINDOW_MAX_HITS]; /* monotonic ms, oldest first */
	unsigned nhits;
	unsigned consecutive;
	uint64_t total_hits;
	uint64_t backoff_ms;  /* the wait set by the last hit; 0 after a success */
	bool ever_hit;	      /* last_hit_* are valid */
	uint64_t last_hit_ms; /* monotonic */
	int64_t last_hit_ns;  /* wall clock */
	int64_t reset_at_ns;  /* wall clock instant the hint asked for (capped); 0 = none */
	char last_error_code[RATELIMIT_NAME_MAX];
};

/* policy NULL = RATELIMIT_POLICY_DEFAULT; clock NULL = clock_system(). The
 * adapter name is copied (cut to RATELIMIT_NAME_MAX - 1 bytes). */
void ratelimit_meter_init(struct ratelimit_meter *m, const char *adapter,
			  const struct ratelimit_policy *policy, const struct clock *clock);
/* A rate-limited run: record the hit at the clock's now, bump the consecutive
 * count and set the wait before the next spawn: backoff_delay_ms() of the
 * consecutive count, with the hint's wait (optional; resolved with
 * utc_offset_s, see ratelimit_hint_wait_s()) honoured up to the policy's
 * hint cap, otherwise exponential with jitter taken from jitter (a random
 * value). error_code is optional. */
void ratelimit_meter_hit(struct ratelimit_meter *m, const char *error_code,
			 const struct ratelimit_hint *hint, long utc_offset_s, uint32_t jitter);
/* A run that was not rate limited: consecutive and backoff go back to 0 and
 * the announced reset is forgotten; the window keeps its hits. */
void ratelimit_meter_success(struct ratelimit_meter *m);
/* Hits within the window ending now (drops older ones). */
unsigned ratelimit_meter_hits_in_window(struct ratelimit_meter *m);
/* Milliseconds to wait before the next spawn on this adapter: the rest of
 * the wait the last hit set. 0 = go. */
uint64_t ratelimit_meter_wait_ms(const struct ratelimit_meter *m);

struct ratelimit_snapshot {
	const char *adapter;
	uint64_t window_ms;
	unsigned hits_in_window;
	unsigned consecutive;
	uint64_t total_hits;
	uint64_t backoff_ms;
	uint64_t wait_ms;
	bool ever_hit;
	int64_t last_hit_ns;	     /* wall clock, when ever_hit */
	uint64_t last_hit_ago_ms;    /* when ever_hit */
	int64_t reset_at_ns;	     /* 0 = none */
	const char *last_error_code; /* "" when none */
};

/* Fill snap (pointers borrow from m). Prunes the window like
 * ratelimit_meter_hits_in_window(). */
void ratelimit_meter_snapshot(struct ratelimit_meter *m, struct ratelimit_snapshot *snap);

#endif
