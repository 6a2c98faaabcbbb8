#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/arena.h"

static void test_alloc_aligned_zeroed(void **state)
{
	struct arena a = ARENA_INIT;
	int i;

	(void)state;
	arena_init(&a, 128);
	for (i = 1; i < 300; i++) {
		unsigned char *p = arena_alloc(&a, (size_t)i);
		int j;

		assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
		for (j = 0; j < i; j++)
			assert_int_equal(p[j], 0);
		memset(p, 0xab, (size_t)i);
	}
	arena_release(&a);
	assert_null(a.head);
}

static void test_strdup_large(void **state)
{
	struct arena a = ARENA_INIT;
	char big[100000];
	char *s;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	s = arena_strdup(&a, big); /* larger than a block */
	assert_string_equal(s, big);
	assert_string_equal(arena_strndup(&a, "abcdef", 3), "abc");
	arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_aligned_zeroed),
		cmocka_unit_test(test_strdup_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
