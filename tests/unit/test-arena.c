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

/* arena_alloc_raw() is aligned and leaves the bytes as they are; what is
 * built on it (strndup, memdup) still terminates and zeroes what it must,
 * on blocks malloc hands back dirty. */
static void test_raw_on_dirty_blocks(void **state)
{
	struct arena a = ARENA_INIT;
	unsigned char *prev = NULL;
	int round, i;

	(void)state;
	for (round = 0; round < 2; round++) {
		arena_init(&a, 0);
		for (i = 1; i < 200; i++) {
			unsigned char *p = arena_alloc_raw(&a, (size_t)i);
			char *s = arena_strndup(&a, "abcdefgh", (size_t)i % 9);
			const unsigned char *z = arena_memdup(&a, "x", 0);
			const unsigned char *d = arena_memdup(&a, "wxyz", 4);
			size_t j;

			assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
			assert_true(!prev || p != prev);
			prev = p;
			assert_int_equal(strlen(s), (size_t)i % 9);
			assert_memory_equal(s, "abcdefgh", (size_t)i % 9);
			for (j = 0; j < alignof(max_align_t); j++)
				assert_int_equal(z[j], 0);
			assert_memory_equal(d, "wxyz", 4);
			memset(p, 0xff, (size_t)i); /* dirty for the next round */
		}
		arena_release(&a);
		prev = NULL;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_aligned_zeroed),
		cmocka_unit_test(test_strdup_large),
		cmocka_unit_test(test_raw_on_dirty_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
