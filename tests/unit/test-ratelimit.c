/* adapter/ratelimit: the text needles (and the bare "429"/"resets" forms they
 * refuse), HTTP statuses in context, reset hints, their resolution, and the
 * per-adapter meter driven by a fixed clock. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/ratelimit.h"
#include "orch/meters.h"

static bool matches(const char *s)
{
	return ratelimit_text_matches(s, strlen(s));
}

static void test_needles(void **state)
{
	static const char *const yes[] = {
		"Rate limit exceeded",
		"rate-limited by the provider",
		"error: rate_limit_error",
		"openai.RateLimitError: Error code: 429",
		"You have reached your USAGE LIMIT",
		"usage_limit_reached",
		"Quota exceeded for quota metric",
		"You exceeded your current quota, please check your plan",
		"insufficient_quota",
		"429 Too Many Requests",
		"too many requests",
		"Overloaded",
		"overloaded_error",
		"You've hit your limit",
		"you hit your limit for today",
		"Token limit exceeded",
		"RESOURCE_EXHAUSTED",
		"Resource exhausted",
		"HTTP 429",
		"status: 429",
		"last status: 429 Too",
		"{\"code\":429}",
		"{\"statusCode\": 429}",
		"API Error: 429 {}",
		"error 429",
		"Claude AI usage limit reached|1748404800",
		"5-hour limit reached - resets 3pm",
		"limit resets at 10:30 pm",
		"your quota resets in 2 hours",
		"reset at 22:00",
	};
	static const char *const no[] = {
		"",
		"separate limits apply",		  /* "rate limit" inside a word */
		"x-ratelimit-remaining-requests: 99",	  /* a response header */
		"anthropic-ratelimit-tokens-limit: 1000", /* another one */
		"line 429 of main.c",			  /* a bare 429 */
		"processed 4290 records",
		"code429",
		"status 4291",
		"port 14290",
		"HTTP 200 OK",
		"the counter resets", /* "resets" without a time */
		"resets the cache",
		"git reset 3 files",
		"reset the value to 10",
		"Done: I wrote hello.txt.",
		"error: file not found",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		print_message("# yes: %s\n", yes[i]);
		assert_true(matches(yes[i]));
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		print_message("# no: %s\n", no[i]);
		assert_false(matches(no[i]));
	}
	assert_false(ratelimit_text_matches(NULL, 5));
	/* the length is honoured: the needle past it does not count */
	assert_false(ratelimit_text_matches("ok. rate limit", 4));
}

static void test_http_status(void **state)
{
	struct {
		const char *s;
		bool leading;
		int want;
	} cases[] = {
		{"API Error: 400 fakellm: scripted invalid request", false, 400},
		{"[API Error: {\"error\":{\"code\":400,\"message\":\"x\"}}]", false, 400},
		{"exceeded retry limit, last status: 429 Too Many Requests", false, 429},
		{"unexpected status 503 Service Unavailable", false, 503},
		{"HTTP/1.1 502 Bad Gateway", false, 502},
		{"Error code: 401 - {'error': ...}", false, 401},
		{"{\"statusCode\": 404}", false, 404},
		{"status_code=500", false, 500},
		{"400 fakellm: scripted invalid request", true, 400},
		{"  429 Rate limit reached", true, 429},
		{"400 fakellm: scripted invalid request", false, 0}, /* leading not allowed */
		{"took 400 ms", true, 0},			     /* not at the start */
		{"4000 tokens", true, 0},
		{"opcode 429", false, 0}, /* "code" inside a word */
		{"status 700", false, 0}, /* not a status */
		{"status 42", false, 0},
		{"status 429.5", false, 0},
		{"code: 200, then code: 429", false, 200}, /* the first one */
		{"", true, 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("# %s\n", cases[i].s);
		assert_int_equal(
			ratelimit_http_status(cases[i].s, strlen(cases[i].s), cases[i].leading),
			cases[i].want);
	}
	assert_int_equal(ratelimit_http_status(NULL, 3, true), 0);
}

static void test_hints(void **state)
{
	struct {
		const char *s;
		int64_t retry, reset_at;
		int hour, minute;
	} cases[] = {
		{"Retry-After: 30", 30, -1, -1, -1},
		{"retry_after=7", 7, -1, -1, -1},
		{"{\"retryAfter\": 12}", 12, -1, -1, -1},
		{"\"retry_after_seconds\": 45", 45, -1, -1, -1},
		{"{\"resets_in_seconds\":3600}", 3600, -1, -1, -1},
		{"Please try again in 20s.", 20, -1, -1, -1},
		{"Please retry in 27.9s.", 28, -1, -1, -1},
		{"try again in 1h 30m", 5400, -1, -1, -1},
		{"Try again in 2 days 3 hours and 4 minutes.", 2 * 86400 + 3 * 3600 + 240, -1, -1,
		 -1},
		{"try again in 4m12s", 252, -1, -1, -1},
		{"retry in 500ms", 1, -1, -1, -1},
		{"retry after 90 seconds", 90, -1, -1, -1},
		{"\"retryDelay\": \"27s\"", 27, -1, -1, -1},
		{"quota resets in 2 hours", 7200, -1, -1, -1},
		{"please wait 15 minutes", 900, -1, -1, -1},
		{"try again in 2 weeks", -1, -1, -1, -1}, /* a unit we do not know */
		{"limit resets at 10pm", -1, -1, 22, 0},
		{"resets 3pm (Europe/Berlin)", -1, -1, 15, 0},
		{"resets at 10:30 pm", -1, -1, 22, 30},
		{"resets at 12am", -1, -1, 0, 0},
		{"resets at 12 p.m.", -1, -1, 12, 0},
		{"resets at 22:05", -1, -1, 22, 5},
		{"resets at 25:00", -1, -1, -1, -1},
		{"resets at 13pm", -1, -1, -1, -1},
		{"resets at 3", -1, -1, -1, -1}, /* no colon, no am/pm */
		{"resets at 2026-11-30T22:00:00Z", -1, 1796076000, -1, -1},
		{"resets at 2026-11-30T23:00:00+01:00", -1, 1796076000, -1, -1},
		{"usage limit reached|1748404800", -1, 1748404800, -1, -1},
		{"\"reset_at\": 1748404800123", -1, 1748404800, -1, -1},
		{"\"resetsAt\":\"2026-11-30T22:00:00Z\"", -1, 1796076000, -1, -1},
		{"Retry-After: 30; resets at 10pm", 30, -1, 22, 0},
		{"nothing here", -1, -1, -1, -1},
		{"waiting 5 seconds", -1, -1, -1, -1}, /* "waiting" is not "wait" */
	};
	struct ratelimit_hint h;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool any;

		print_message("# %s\n", cases[i].s);
		any = ratelimit_parse_hint(cases[i].s, strlen(cases[i].s), &h);
		assert_int_equal(h.retry_after_s, cases[i].retry);
		assert_int_equal(h.reset_at_s, cases[i].reset_at);
		assert_int_equal(h.reset_hour, cases[i].hour);
		if (cases[i].hour >= 0)
			assert_int_equal(h.reset_minute, cases[i].minute);
		assert_int_equal(any, !ratelimit_hint_empty(&h));
		assert_int_equal(any, cases[i].retry >= 0 || cases[i].reset_at >= 0 ||
					      cases[i].hour >= 0);
	}
	assert_false(ratelimit_parse_hint(NULL, 0, &h));
	assert_true(ratelimit_hint_empty(&h));
}

static void test_hint_wait(void **state)
{
	struct ratelimit_hint h = RATELIMIT_HINT_INIT;
	const int64_t now = 1796034443; /* 2026-11-30T10:27:23Z */

	(void)state;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 0), -1);
	assert_int_equal(ratelimit_hint_wait_s(NULL, now, 0), -1);
	h.retry_after_s = 30;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 0), 30);
	h.reset_at_s = now + 100;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 0), 100); /* the later one */
	h.reset_at_s = now - 100;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 0), 30); /* passed: 0, retry wins */
	ratelimit_hint_init(&h);
	h.reset_at_s = now - 100;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 0), 0);
	/* 10pm UTC is 11:32:37 after 10:27:23 */
	ratelimit_hint_init(&h);
	h.reset_hour = 22;
	h.reset_minute = 0;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 0), 11 * 3600 + 32 * 60 + 37);
	/* in UTC+1 local time is 11:27:23: 10h32m37s */
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 3600), 10 * 3600 + 32 * 60 + 37);
	/* 9am has passed today: tomorrow */
	h.reset_hour = 9;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, 0), 22 * 3600 + 32 * 60 + 37);
	/* west of UTC, before the epoch day boundary */
	h.reset_hour = 3;
	assert_int_equal(ratelimit_hint_wait_s(&h, now, -8 * 3600), 32 * 60 + 37);
}

static void test_meter(void **state)
{
	struct ratelimit_policy pol = RATELIMIT_POLICY_DEFAULT;
	struct ratelimit_meter m;
	struct ratelimit_snapshot snap;
	struct ratelimit_hint h = RATELIMIT_HINT_INIT;
	struct clock clk;
	const int64_t wall0 = 1796034443LL * 1000000000; /* 10:27:23Z */
	unsigned i;

	(void)state;
	clock_fixed_init(&clk, wall0, 1000000);
	ratelimit_meter_init(&m, "claude", NULL, &clk);
	assert_string_equal(m.adapter, "claude");
	assert_int_equal(m.policy.window_ms, 300000);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 0);
	assert_int_equal(ratelimit_meter_hits_in_window(&m), 0);
	ratelimit_meter_snapshot(&m, &snap);
	assert_false(snap.ever_hit);
	assert_string_equal(snap.last_error_code, "");

	/* backoff 1 s, doubling, capped at 60 s, times the jitter (the
	 * least: half of it; the most: just under all of it) */
	ratelimit_meter_hit(&m, "claude_fast_exit_429", NULL, 0, UINT32_MAX);
	assert_int_equal(m.consecutive, 1);
	assert_int_equal(m.backoff_ms, 999);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 999);
	clk.fixed_mono_ms += 400;
	assert_int_equal(ratelimit_meter_wait_ms(&m), 599);
	clk.fixed_mono_ms += 600;
	assert_int_equal(ratelimit_meter_wait_ms(&m), 0);
	for (i = 2; i <= 8; i++) {
		static const uint64_t want[] = {0, 0, 1000, 2000, 4000, 8000, 16000, 30000, 30000};

		ratelimit_meter_hit(&m, NULL, NULL, 0, 0);
		assert_int_equal(m.consecutive, i);
		assert_int_equal(m.backoff_ms, want[i]);
		assert_int_equal(ratelimit_meter_wait_ms(&m), want[i]);
	}
	assert_int_equal(ratelimit_meter_hits_in_window(&m), 8);
	assert_string_equal(m.last_error_code, "");

	/* the window slides: 300 s after the first hits they are gone */
	clk.fixed_mono_ms += 200000;
	ratelimit_meter_hit(&m, "again", NULL, 0, 0);
	assert_int_equal(ratelimit_meter_hits_in_window(&m), 9);
	clk.fixed_mono_ms += 100001; /* the first 8 are now 300001 ms old */
	assert_int_equal(ratelimit_meter_hits_in_window(&m), 1);
	clk.fixed_mono_ms += 200000;
	assert_int_equal(ratelimit_meter_hits_in_window(&m), 0);
	assert_int_equal(m.total_hits, 9);

	/* success resets the run of hits, not the history */
	ratelimit_meter_success(&m);
	assert_int_equal(m.consecutive, 0);
	assert_int_equal(m.backoff_ms, 0);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 0);
	ratelimit_meter_hit(&m, NULL, NULL, 0, 0);
	assert_int_equal(m.backoff_ms, 500); /* from the base again */

	/* the agent's hint wins, without jitter, longer or shorter than the
	 * backoff would be */
	h.retry_after_s = 30;
	ratelimit_meter_hit(&m, "x", &h, 0, 0);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 30000);
	clk.fixed_ns += 10LL * 1000000000;
	clk.fixed_mono_ms += 10000;
	assert_int_equal(ratelimit_meter_wait_ms(&m), 20000);
	h.retry_after_s = 0;
	ratelimit_meter_hit(&m, "x", &h, 0, UINT32_MAX);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 0);
	/* "resets at 10pm" in UTC: 11:32:37 after the wall clock's 10:27:33,
	 * capped at the hint cap (an hour) */
	ratelimit_hint_init(&h);
	h.reset_hour = 22;
	h.reset_minute = 0;
	ratelimit_meter_hit(&m, "x", &h, 0, 0);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 3600000);
	ratelimit_meter_snapshot(&m, &snap);
	assert_true(snap.ever_hit);
	assert_int_equal(snap.consecutive, 4);
	assert_int_equal(snap.reset_at_ns, wall0 + 10LL * 1000000000 + 3600LL * 1000000000);
	assert_string_equal(snap.adapter, "claude");
	assert_string_equal(snap.last_error_code, "x");
	assert_int_equal(snap.last_hit_ago_ms, 0);
	assert_int_equal(snap.window_ms, 300000);
	ratelimit_meter_success(&m);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 0);

	/* a policy with a longer hint cap honours the whole wait; a hint
	 * beyond it is cut to it, never ignored */
	pol.backoff.hint_cap_ms = 86400000;
	ratelimit_meter_init(&m, "codex", &pol, &clk);
	ratelimit_meter_hit(&m, NULL, &h, 0, 0);
	assert_int_equal(ratelimit_meter_wait_ms(&m), (11 * 3600 + 32 * 60 + 27) * 1000ULL);
	ratelimit_hint_init(&h);
	h.retry_after_s = 2 * 86400;
	ratelimit_meter_hit(&m, NULL, &h, 0, 0);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 86400000);
	h.retry_after_s = INT64_MAX;
	ratelimit_meter_hit(&m, NULL, &h, 0, 0);
	assert_int_equal(ratelimit_meter_wait_ms(&m), 86400000);

	/* more hits than the window keeps: the oldest drop, the count saturates */
	ratelimit_meter_init(
		&m, "a-very-long-adapter-name-that-is-longer-than-sixty-four-bytes-for-sure-really",
		NULL, &clk);
	assert_int_equal(strlen(m.adapter), RATELIMIT_NAME_MAX - 1);
	for (i = 0; i < RATELIMIT_WINDOW_MAX_HITS + 10; i++) {
		clk.fixed_mono_ms += 1;
		ratelimit_meter_hit(&m, NULL, NULL, 0, 0);
	}
	assert_int_equal(ratelimit_meter_hits_in_window(&m), RATELIMIT_WINDOW_MAX_HITS);
	assert_int_equal(m.hits[0], clk.fixed_mono_ms - RATELIMIT_WINDOW_MAX_HITS + 1);
	assert_int_equal(m.backoff_ms, 30000);
}

/* The run loop's meters (orch/meters.h): one per adapter, fed by outcomes. */
static void test_run_meters(void **state)
{
	struct meters ms;
	struct ratelimit_hint h = RATELIMIT_HINT_INIT;
	struct clock clk;
	uint64_t w;

	(void)state;
	clock_fixed_init(&clk, 1796034443LL * 1000000000, 1000000);
	meters_init(&ms, 2.0, &clk);
	assert_int_equal(meters_wait_ms(&ms, "claude"), 0);
	assert_int_equal(meters_next_ms(&ms), -1);
	/* no adapter, or an outcome that is not a rate limit: nothing to wait */
	assert_int_equal(meters_feed(&ms, NULL, OUTCOME_RATE_LIMITED, &h), 0);
	assert_int_equal(meters_feed(&ms, "claude", OUTCOME_COMPLETED, &h), 0);
	assert_int_equal(meters_next_ms(&ms), -1);

	/* without a hint: retry_backoff with jitter, [1 s, 2 s), then doubled */
	w = (uint64_t)meters_feed(&ms, "claude", OUTCOME_RATE_LIMITED, &h);
	assert_true(w >= 1000 && w < 2000);
	assert_int_equal(meters_wait_ms(&ms, "claude"), w);
	assert_int_equal(meters_wait_ms(&ms, "codex"), 0);
	assert_int_equal(meters_next_ms(&ms), (int64_t)w);
	w = (uint64_t)meters_feed(&ms, "claude", OUTCOME_RATE_LIMITED, &h);
	assert_true(w >= 2000 && w < 4000);

	/* the agent's hint wins, capped at an hour */
	h.retry_after_s = 7;
	assert_int_equal(meters_feed(&ms, "codex", OUTCOME_RATE_LIMITED, &h), 7000);
	assert_int_equal(meters_next_ms(&ms), 7000 < w ? 7000 : (int64_t)w);
	h.retry_after_s = 86400;
	assert_int_equal(meters_feed(&ms, "codex", OUTCOME_RATE_LIMITED, &h), METERS_WAIT_MAX_MS);
	clk.fixed_mono_ms += 1000;
	assert_int_equal(meters_wait_ms(&ms, "codex"), METERS_WAIT_MAX_MS - 1000);

	/* a success on the adapter ends its wait; the other keeps its own */
	assert_int_equal(meters_feed(&ms, "codex", OUTCOME_FAILED, NULL), 0);
	assert_int_equal(meters_wait_ms(&ms, "codex"), 0);
	clk.fixed_mono_ms += 4000;
	assert_int_equal(meters_wait_ms(&ms, "claude"), 0);
	assert_int_equal(meters_next_ms(&ms), -1);
	meters_release(&ms);

	/* retry_backoff 0: no wait unless the agent asks */
	meters_init(&ms, 0, &clk);
	ratelimit_hint_init(&h);
	assert_int_equal(meters_feed(&ms, "pi", OUTCOME_RATE_LIMITED, &h), 0);
	assert_int_equal(meters_feed(&ms, "pi", OUTCOME_RATE_LIMITED, NULL), 0);
	h.retry_after_s = 3;
	assert_int_equal(meters_feed(&ms, "pi", OUTCOME_RATE_LIMITED, &h), 3000);
	meters_release(&ms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_needles), cmocka_unit_test(test_http_status),
		cmocka_unit_test(test_hints),	cmocka_unit_test(test_hint_wait),
		cmocka_unit_test(test_meter),	cmocka_unit_test(test_run_meters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
