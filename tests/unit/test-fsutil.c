#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/fsutil.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	(void)snprintf(dir, sizeof(dir), "/tmp/bernstein-fsutil-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	(void)snprintf(cmd, sizeof(cmd), "%s/a/b/c", dir);
	(void)rmdir(cmd);
	(void)snprintf(cmd, sizeof(cmd), "%s/a/b", dir);
	(void)rmdir(cmd);
	(void)snprintf(cmd, sizeof(cmd), "%s/a", dir);
	(void)rmdir(cmd);
	(void)snprintf(cmd, sizeof(cmd), "%s/f", dir);
	(void)unlink(cmd);
	return rmdir(dir);
}

static void test_atomic_write_and_capped_read(void **state)
{
	char path[128], *data = NULL;
	size_t len = 0;
	struct stat st;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(atomic_write_file(path, "hello", 5, 0600), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(read_file_capped(path, 5, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(data, "hello");
	free(data);
	assert_int_equal(read_file_capped(path, 4, &data, &len), -EFBIG);
	assert_int_equal(atomic_write_file(path, "bye", 3, 0644), 0);
	assert_int_equal(read_file_capped(path, 100, &data, &len), 0);
	assert_string_equal(data, "bye");
	free(data);
	assert_int_equal(read_file_capped(dir, 100, &data, &len), -EISDIR);
	assert_int_equal(read_file_capped("/nonexistent/x", 100, &data, &len), -ENOENT);
	/* a temp file that cannot be created leaves nothing behind */
	assert_int_equal(atomic_write_file("/nonexistent/x", "a", 1, 0600), -ENOENT);
}

static void test_mkdir_p(void **state)
{
	char path[128];
	struct stat st;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/a/b/c", dir);
	assert_int_equal(mkdir_p(path, 0700), 0);
	assert_int_equal(mkdir_p(path, 0700), 0); /* idempotent */
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(mkdir_p("", 0700), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_atomic_write_and_capped_read),
		cmocka_unit_test(test_mkdir_p),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
