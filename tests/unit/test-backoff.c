/* util/backoff.c: the one wait before a retry (the run loop's rate-limit
 * retries through the meter, the runner's HTTP retries). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/backoff.h"

static void test_exponential(void **state)
{
	const struct backoff_policy p = {.base_ms = 500, .cap_ms = 30000, .hint_cap_ms = 120000};
	unsigned a;

	(void)state;
	/* jitter in [0.5, 1.0) of base * 2^(n-1), capped */
	assert_int_equal(backoff_delay_ms(&p, 1, -1, 0), 250);
	assert_int_equal(backoff_delay_ms(&p, 1, -1, UINT32_MAX), 499);
	assert_int_equal(backoff_delay_ms(&p, 0, -1, 0), 250);
	assert_int_equal(backoff_delay_ms(&p, 2, -1, 0), 500);
	assert_int_equal(backoff_delay_ms(&p, 3, -1, 0), 1000);
	assert_int_equal(backoff_delay_ms(&p, 3, -1, 1u << 31), 1500);
	for (a = 1; a < 100; a++) {
		uint64_t lo = backoff_delay_ms(&p, a, -1, 0);
		uint64_t hi = backoff_delay_ms(&p, a, -1, UINT32_MAX);

		assert_true(lo <= hi);
		assert_true(hi < 30000);
		assert_true(lo >= 250);
	}
	assert_int_equal(backoff_delay_ms(&p, 30, -1, 0), 15000);
	assert_int_equal(backoff_delay_ms(&p, UINT32_MAX, -1, 0), 15000);
}

static void test_hint(void **state)
{
	const struct backoff_policy p = {.base_ms = 500, .cap_ms = 30000, .hint_cap_ms = 120000};

	(void)state;
	/* the hint wins over the backoff, with no jitter, up to its cap */
	assert_int_equal(backoff_delay_ms(&p, 1, 3000, 0), 3000);
	assert_int_equal(backoff_delay_ms(&p, 9, 3000, UINT32_MAX), 3000);
	assert_int_equal(backoff_delay_ms(&p, 1, 0, 0), 0);
	assert_int_equal(backoff_delay_ms(&p, 1, 60000, 0), 60000);
	assert_int_equal(backoff_delay_ms(&p, 1, 120001, 0), 120000);
	assert_int_equal(backoff_delay_ms(&p, 1, INT64_MAX, 0), 120000);
}

static void test_zero(void **state)
{
	const struct backoff_policy p = {.base_ms = 0, .cap_ms = 3600000, .hint_cap_ms = 3600000};

	(void)state;
	/* base 0 (retry_backoff: 0): no wait, unless the agent asked for one */
	assert_int_equal(backoff_delay_ms(&p, 1, -1, UINT32_MAX), 0);
	assert_int_equal(backoff_delay_ms(&p, 40, -1, UINT32_MAX), 0);
	assert_int_equal(backoff_delay_ms(&p, 1, 2000, 0), 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exponential),
		cmocka_unit_test(test_hint),
		cmocka_unit_test(test_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
