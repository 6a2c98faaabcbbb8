#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/sbuf.h"

static void test_empty_is_valid_string(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)state;
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, "");
	assert_int_equal(sb.len, 0);
	sbuf_release(&sb);
}

static void test_add_and_format(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int i;

	(void)state;
	assert_int_equal(sbuf_adds(&sb, "abc"), 0);
	assert_int_equal(sbuf_addf(&sb, "-%d-%s", 42, "x"), 0);
	assert_string_equal(sb.buf, "abc-42-x");
	for (i = 0; i < 1000; i++)
		assert_int_equal(sbuf_addc(&sb, 'z'), 0);
	assert_int_equal(sb.len, 8 + 1000);
	assert_int_equal(sb.buf[sb.len], '\0');
	sbuf_release(&sb);
}

static void test_cap_refuses_without_truncating(void **state)
{
	struct sbuf sb = SBUF_INIT(5);

	(void)state;
	assert_int_equal(sbuf_adds(&sb, "1234"), 0);
	assert_int_equal(sbuf_adds(&sb, "56"), -ENOBUFS);
	assert_string_equal(sb.buf, "1234"); /* unchanged */
	assert_int_equal(sbuf_adds(&sb, "5"), 0);
	assert_int_equal(sbuf_addc(&sb, '6'), -ENOBUFS);
	assert_int_equal(sbuf_addf(&sb, "%s", "x"), -ENOBUFS);
	assert_string_equal(sb.buf, "12345");
	sbuf_release(&sb);
}

static void test_reset_detach(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t len;
	char *p;

	(void)state;
	(void)sbuf_adds(&sb, "hello  \n");
	sbuf_rtrim(&sb);
	assert_string_equal(sb.buf, "hello");
	p = sbuf_detach(&sb, &len);
	assert_int_equal(len, 5);
	assert_string_equal(p, "hello");
	assert_string_equal(sb.buf, "");
	free(p);
	p = sbuf_detach(&sb, &len); /* detaching an empty buffer still yields a string */
	assert_string_equal(p, "");
	assert_int_equal(len, 0);
	free(p);
	(void)sbuf_adds(&sb, "abc");
	sbuf_reset(&sb);
	assert_string_equal(sb.buf, "");
	sbuf_release(&sb);
}

static void test_all_digits(void **state)
{
	(void)state;
	assert_true(str_all_digits("0"));
	assert_true(str_all_digits("12345678901234567890"));
	assert_false(str_all_digits(""));
	assert_false(str_all_digits("12a"));
	assert_false(str_all_digits("-1"));
	assert_false(str_all_digits(" 1"));
	assert_false(str_all_digits("1 "));
	assert_false(str_all_digits("\xd9\xa1")); /* ARABIC-INDIC DIGIT ONE */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_valid_string),
		cmocka_unit_test(test_add_and_format),
		cmocka_unit_test(test_cap_refuses_without_truncating),
		cmocka_unit_test(test_reset_detach),
		cmocka_unit_test(test_all_digits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
