/* util/mountinfo: lines of /proc/self/mountinfo parsed (proc(5)); the mount
 * points in them may be paths an agent chose, so hostile lines are refused
 * precisely and never crash. Also every line of this process's real
 * mountinfo parses, and "/" is among the mount points. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/fsutil.h"
#include "util/mountinfo.h"

static int parse(const char *line, struct mountinfo_entry *e)
{
	return mountinfo_parse_line(line, strlen(line), e);
}

static void test_plain(void **state)
{
	struct mountinfo_entry e = MOUNTINFO_ENTRY_INIT;

	(void)state;
	assert_int_equal(parse("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root "
			       "rw,errors=continue",
			       &e),
			 0);
	assert_string_equal(e.mount_point, "/mnt2");
	assert_string_equal(e.fstype, "ext3");
	assert_string_equal(e.source, "/dev/root");
	assert_string_equal(e.super_opts, "rw,errors=continue");
	mountinfo_entry_release(&e);
	/* no optional field */
	assert_int_equal(parse("1 0 0:1 / / rw - overlay overlay rw,lowerdir=/a,upperdir=/b", &e),
			 0);
	assert_string_equal(e.mount_point, "/");
	assert_string_equal(e.fstype, "overlay");
	mountinfo_entry_release(&e);
}

static void test_escapes(void **state)
{
	struct mountinfo_entry e = MOUNTINFO_ENTRY_INIT;
	char *v = NULL;

	(void)state;
	assert_int_equal(parse("40 1 0:50 / /tmp/a\\040b\\011c\\134d rw shared:9 - overlay overlay "
			       "rw,lowerdir=/x\\054y,upperdir=/u\\040v,workdir=/w",
			       &e),
			 0);
	assert_string_equal(e.mount_point, "/tmp/a b\tc\\d");
	/* the option list is split before its values are unescaped */
	assert_int_equal(mountinfo_opt(e.super_opts, "lowerdir", &v), 0);
	assert_string_equal(v, "/x,y");
	free(v);
	assert_int_equal(mountinfo_opt(e.super_opts, "upperdir", &v), 0);
	assert_string_equal(v, "/u v");
	free(v);
	assert_int_equal(mountinfo_opt(e.super_opts, "workdir", &v), 0);
	assert_string_equal(v, "/w");
	free(v);
	assert_int_equal(mountinfo_opt(e.super_opts, "rw", &v), -ENOENT); /* a bare key */
	assert_int_equal(mountinfo_opt(e.super_opts, "lower", &v), -ENOENT);
	assert_int_equal(mountinfo_opt("a=\\9", "a", &v), -EBADMSG);
	mountinfo_entry_release(&e);
}

static void test_hostile(void **state)
{
	static const char *const bad[] = {
		"",
		"36 35 98:0 /mnt1",
		"36 35 98:0 /mnt1 /mnt2 rw master:1 ext3 /dev/root rw", /* no " - " */
		"36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root",		/* no super options */
		"36 35 98:0 /mnt1 /m\\0 rw - ext3 /dev/root rw",	/* a short escape */
		"36 35 98:0 /mnt1 /m\\000 rw - ext3 /dev/root rw",	/* NUL by escape */
		"36 35 98:0 /mnt1 /m\\400 rw - ext3 /dev/root rw",	/* not a byte */
		"36 35 98:0 /mnt1 /m\\08x rw - ext3 /dev/root rw",
		NULL,
	};
	struct mountinfo_entry e = MOUNTINFO_ENTRY_INIT;
	char nul[] = "1 0 0:1 / /a\0b rw - ext4 /dev/x rw";
	char *big;
	size_t i;

	(void)state;
	for (i = 0; bad[i]; i++)
		assert_int_equal(parse(bad[i], &e), -EBADMSG);
	assert_null(e.mount_point); /* untouched */
	assert_int_equal(mountinfo_parse_line(nul, sizeof(nul) - 1, &e), -EBADMSG);
	assert_int_equal(mountinfo_parse_line("1 0 0:1 / /a\nb rw - e s o", 28, &e), -EBADMSG);
	big = malloc(MOUNTINFO_LINE_MAX + 2);
	memset(big, 'a', MOUNTINFO_LINE_MAX + 1);
	big[MOUNTINFO_LINE_MAX + 1] = '\0';
	assert_int_equal(mountinfo_parse_line(big, MOUNTINFO_LINE_MAX + 1, &e), -ENOBUFS);
	free(big);
}

static void test_real(void **state)
{
	char *text = NULL, *line, *nl;
	size_t len, n = 0;
	int root = 0;

	(void)state;
	assert_int_equal(read_file_capped(MOUNTINFO_PATH, 64u << 20, &text, &len), 0);
	for (line = text; *line; line = nl + 1) {
		struct mountinfo_entry e = MOUNTINFO_ENTRY_INIT;

		nl = strchr(line, '\n');
		assert_non_null(nl);
		assert_int_equal(mountinfo_parse_line(line, (size_t)(nl - line), &e), 0);
		root += strcmp(e.mount_point, "/") == 0;
		mountinfo_entry_release(&e);
		n++;
	}
	assert_true(n > 0);
	assert_true(root > 0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_real),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
