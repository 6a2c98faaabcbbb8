/* util/mathx.c: round() and llround() without libm, checked against libm's
 * on the edges (halfway cases, the largest doubles below 0.5, 2^52 and
 * beyond, negative zero, infinities, NaN) and on a million values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/mathx.h"

static void same(double x)
{
	double want = round(x), got = mathx_round(x);

	if (isnan(want)) {
		assert_true(isnan(got));
		return;
	}
	/* bit for bit: -0.0 stays -0.0 */
	assert_memory_equal(&want, &got, sizeof(want));
	if (fabs(x) < 9.0e18)
		assert_true(mathx_llround(x) == llround(x));
}

static void test_edges(void **state)
{
	static const double v[] = {
		0.0,
		-0.0,
		0.5,
		-0.5,
		1.5,
		-1.5,
		2.5,
		-2.5,
		0.49999999999999994,
		-0.49999999999999994,
		1.4999999999999998,
		4503599627370495.5,
		-4503599627370495.5,
		4503599627370496.0,
		4503599627370497.0,
		9007199254740993.0,
		1e300,
		-1e300,
		5e-324,
		-5e-324,
		0.1 * 3,
		2.675 * 1e6,
		1234567.8949999999,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		same(v[i]);
		same(nextafter(v[i], INFINITY));
		same(nextafter(v[i], -INFINITY));
	}
	same(INFINITY);
	same(-INFINITY);
	same(NAN);
}

static void test_many(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15u;
	double x;
	int i;

	(void)state;
	for (i = 0; i < 1000000; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		/* halves and quarters around every magnitude up to 2^60, both signs */
		x = (double)(int64_t)(s >> (4 + s % 60)) / (double)(1u << (s % 4));
		same(x);
		memcpy(&x, &s, sizeof(x)); /* any bit pattern */
		same(x);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
