/* orch/confine.c: the OCI bundle of a poll-pty agent (process.terminal,
 * consoleSize, the shim as the container's init, /dev/tty allowed inside)
 * and confine_oci_sweep(), which deletes the containers a killed runtime
 * left (with a fake runtime that records its argv). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "orch/confine.h"
#include "util/fsutil.h"

struct tmp {
	char dir[64];
};

static int setup(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	(void)snprintf(t->dir, sizeof(t->dir), "/tmp/test-orch-confine.XXXXXX");
	if (!mkdtemp(t->dir)) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tmp *t = *state;

	(void)rmtree_beneath(t->dir);
	free(t);
	return 0;
}

static json_t *bundle(const char *dir, const struct confine_oci_opts *o)
{
	struct confine_policy p = CONFINE_POLICY_INIT;
	char path[PATH_MAX];
	json_error_t err;
	json_t *c;

	strvec_push(&p.rw, "/tmp");
	strvec_push(&p.ro_bind, "/usr");
	assert_int_equal(confine_oci_bundle(&p, dir, "/usr/bin/bernstein", "/tmp",
					    (const char *const[]){"TERM=xterm", NULL},
					    (const char *const[]){"/usr/bin/agent", NULL}, o, NULL),
			 0);
	confine_policy_release(&p);
	(void)snprintf(path, sizeof(path), "%s/config.json", dir);
	c = json_load_file(path, 0, &err);
	assert_non_null(c);
	return c;
}

static bool has_arg(json_t *args, const char *a)
{
	size_t i;
	json_t *v;

	json_array_foreach(args, i, v) if (strcmp(json_string_value(v), a) == 0) return true;
	return false;
}

static void test_bundle_terminal(void **state)
{
	struct tmp *t = *state;
	struct confine_oci_opts o = {.terminal = true, .rows = 30, .cols = 100};
	char dir[PATH_MAX];
	json_t *c, *proc, *args;

	(void)snprintf(dir, sizeof(dir), "%s/tty", t->dir);
	c = bundle(dir, &o);
	proc = json_object_get(c, "process");
	assert_true(json_is_true(json_object_get(proc, "terminal")));
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(proc, "consoleSize"), "height")),
		30);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(proc, "consoleSize"), "width")),
		100);
	args = json_object_get(proc, "args");
	/* the shim stays as the init, the agent its child */
	assert_string_equal(json_string_value(json_array_get(args, 1)), "shim");
	assert_string_equal(json_string_value(json_array_get(args, 2)), "--init");
	assert_true(has_arg(args, "/dev/tty"));
	json_decref(c);
}

static void test_bundle_no_terminal(void **state)
{
	struct tmp *t = *state;
	char dir[PATH_MAX];
	json_t *c, *proc, *args;

	(void)snprintf(dir, sizeof(dir), "%s/pipes", t->dir);
	c = bundle(dir, NULL);
	proc = json_object_get(c, "process");
	assert_true(json_is_false(json_object_get(proc, "terminal")));
	assert_null(json_object_get(proc, "consoleSize"));
	args = json_object_get(proc, "args");
	/* as before: the shim becomes the agent; no /dev/tty */
	assert_string_not_equal(json_string_value(json_array_get(args, 2)), "--init");
	assert_false(has_arg(args, "--init"));
	assert_false(has_arg(args, "/dev/tty"));
	json_decref(c);
}

static void mkdirs(const char *base, const char *rel)
{
	char path[PATH_MAX];

	(void)snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_true(mkdir_p(path, 0700) >= 0);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	assert_int_equal(atomic_replace_file(path, text, strlen(text), mode), 0);
}

static void test_sweep(void **state)
{
	struct tmp *t = *state;
	char rt[PATH_MAX], log[PATH_MAX], sess[PATH_MAX], script[PATH_MAX * 2];
	char *text = NULL;
	size_t len = 0;
	struct diag d;

	diag_clear(&d);
	(void)snprintf(sess, sizeof(sess), "%s/SESSION", t->dir);
	(void)snprintf(log, sizeof(log), "%s/runtime.log", t->dir);
	(void)snprintf(rt, sizeof(rt), "%s/runtime", t->dir);
	(void)snprintf(script, sizeof(script), "#!/bin/sh\necho \"$*\" >> '%s'\n", log);
	write_file(rt, script, 0700);

	/* nothing left: the runtime is not even run */
	mkdirs(sess, "1/oci-aa/state");
	mkdirs(sess, "1/home");
	assert_int_equal(confine_oci_sweep(rt, "/usr/bin:/bin", sess, &d), 0);
	assert_int_equal(access(log, F_OK), -1);

	/* a container left in an attempt's bundle, one in the session's own,
	 * a file (not a container) beside them */
	mkdirs(sess, "1/oci-aa/state/bernstein-x-aa");
	mkdirs(sess, "oci-bb/state/bernstein-x-bb");
	(void)snprintf(script, sizeof(script), "%s/1/oci-aa/state/stray", sess);
	write_file(script, "x", 0600);
	assert_int_equal(confine_oci_sweep(rt, "/usr/bin:/bin", sess, &d), 2);
	assert_int_equal(read_file_capped(log, 4096, &text, &len), 0);
	assert_non_null(strstr(text, "--root "));
	assert_non_null(strstr(text, "/1/oci-aa/state delete --force bernstein-x-aa\n"));
	assert_non_null(strstr(text, "/oci-bb/state delete --force bernstein-x-bb\n"));
	assert_null(strstr(text, "stray"));
	free(text);

	/* a runtime that fails: the reason, -EIO */
	write_file(rt, "#!/bin/sh\necho 'container does not exist' >&2\nexit 1\n", 0700);
	assert_int_equal(confine_oci_sweep(rt, "/usr/bin:/bin", sess, &d), -EIO);
	assert_non_null(strstr(d.msg, "cannot delete the container"));
	assert_non_null(strstr(d.msg, "container does not exist"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bundle_terminal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bundle_no_terminal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
