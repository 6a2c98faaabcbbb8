#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/strvec.h"

static void test_push_terminated(void **state)
{
	struct strvec sv = STRVEC_INIT;
	char buf[8];
	int i;

	(void)state;
	assert_null(sv.v[0]);
	for (i = 0; i < 100; i++) {
		(void)snprintf(buf, sizeof(buf), "%d", i);
		strvec_push(&sv, buf);
		assert_null(sv.v[sv.nr]);
	}
	assert_int_equal(sv.nr, 100);
	assert_string_equal(sv.v[42], "42");
	strvec_pushf(&sv, "K=%s", "v");
	assert_string_equal(sv.v[100], "K=v");
	assert_int_equal(strvec_find(&sv, "K=v"), 100);
	assert_int_equal(strvec_find(&sv, "nope"), -1);
	strvec_pop(&sv);
	assert_int_equal(sv.nr, 100);
	assert_null(sv.v[100]);
	strvec_clear(&sv);
	assert_int_equal(sv.nr, 0);
	assert_null(sv.v[0]);
}

static void test_sort(void **state)
{
	struct strvec sv = STRVEC_INIT;
	const char *in[] = {"PATH=/bin", "HOME=/h", "LANG=C", NULL};

	(void)state;
	strvec_pushv(&sv, in);
	strvec_sort(&sv);
	assert_string_equal(sv.v[0], "HOME=/h");
	assert_string_equal(sv.v[1], "LANG=C");
	assert_string_equal(sv.v[2], "PATH=/bin");
	strvec_clear(&sv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_terminated),
		cmocka_unit_test(test_sort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
