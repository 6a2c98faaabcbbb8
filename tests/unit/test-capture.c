/* proc/capture: real children run to their end through /bin/sh: what they
 * print, the caps, the deadline and its grace, a tree that outlives its
 * leader, a child that cannot start, many at once, the injected clock. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/capture.h"
#include "util/clock.h"

static char tmp[64];

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	(void)state;
	(void)snprintf(tmp, sizeof(tmp), "/tmp/test-capture.XXXXXX");
	return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A spec running `/bin/sh -c script` in the temp dir. */
static void sh_spec(struct proc_spec *spec, const char *script)
{
	proc_spec_init(spec);
	strvec_push(&spec->argv, "/bin/sh");
	strvec_push(&spec->argv, "-c");
	strvec_push(&spec->argv, script);
	strvec_push(&spec->env, "PATH=/usr/bin:/bin");
	spec->cwd = tmp;
}

static struct capture cap(const struct proc_spec *spec, size_t max)
{
	struct capture c = {.spec = spec, .max_out = max, .max_err = max};

	return c;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static off_t file_size(const char *name)
{
	char p[128];
	struct stat st;

	(void)snprintf(p, sizeof(p), "%s/%s", tmp, name);
	return stat(p, &st) == 0 ? st.st_size : -1;
}

/* Does the file stop growing (no growth over 600 ms), within ~10 s? */
static bool stops_growing(const char *name)
{
	int i;

	for (i = 0; i < 16; i++) {
		off_t a = file_size(name);

		nap_ms(600);
		if (file_size(name) == a)
			return true;
	}
	return false;
}

static void test_output_and_exit(void **state)
{
	struct proc_spec spec;
	struct capture c;

	(void)state;
	sh_spec(&spec, "printf out; printf err >&2; exit 3");
	c = cap(&spec, 1024);
	assert_int_equal(proc_capture(&c, 1, NULL), 0);
	assert_int_equal(c.start_result, 0);
	assert_int_equal(c.exit_code, 3);
	assert_int_equal(c.term_signal, 0);
	assert_false(c.timed_out);
	assert_string_equal(c.out.buf, "out");
	assert_string_equal(c.err.buf, "err");
	assert_int_equal(c.out_dropped + c.err_dropped, 0);
	capture_release(&c);
	proc_spec_release(&spec);
}

static void test_head_cap_counts_dropped(void **state)
{
	struct proc_spec spec;
	struct capture c;

	(void)state;
	/* 100000 bytes, far more than a pipe holds: the child never blocks */
	sh_spec(&spec, "head -c 100000 /dev/zero | tr '\\0' a");
	c = cap(&spec, 1000);
	assert_int_equal(proc_capture(&c, 1, NULL), 0);
	assert_int_equal(c.exit_code, 0);
	assert_int_equal(c.out.len, 1000);
	assert_int_equal(c.out_dropped, 99000);
	capture_release(&c);
	proc_spec_release(&spec);
}

static void test_tail_keeps_the_end_on_a_character(void **state)
{
	struct proc_spec spec;
	struct capture c;

	(void)state;
	/* 3000 x 'a', then "é" (2 bytes) and "END": a window of 4 bytes would
	 * start inside the é; the tail starts after it instead */
	sh_spec(&spec, "head -c 3000 /dev/zero | tr '\\0' a >&2; printf '\\303\\251END' >&2");
	c = cap(&spec, 4);
	c.tail_err = true;
	assert_int_equal(proc_capture(&c, 1, NULL), 0);
	assert_string_equal(c.err.buf, "END");
	assert_int_equal(c.err_dropped, 3000 + 2); /* everything but END */
	capture_release(&c);
	proc_spec_release(&spec);
}

static void test_deadline_term_then_kill(void **state)
{
	struct proc_spec spec;
	struct capture c;

	(void)state;
	/* ignores SIGTERM: only the SIGKILL after the grace ends it */
	sh_spec(&spec, "trap '' TERM; echo up; while :; do sleep 1; done");
	c = cap(&spec, 1024);
	c.timeout_ms = 300;
	c.kill_grace_ms = 200;
	assert_int_equal(proc_capture(&c, 1, NULL), 0);
	assert_true(c.timed_out);
	assert_int_equal(c.term_signal, SIGKILL);
	assert_string_equal(c.out.buf, "up\n");
	capture_release(&c);

	/* without a grace: SIGKILL at once */
	c = cap(&spec, 1024);
	c.timeout_ms = 200;
	assert_int_equal(proc_capture(&c, 1, NULL), 0);
	assert_true(c.timed_out);
	assert_int_equal(c.term_signal, SIGKILL);
	capture_release(&c);
	proc_spec_release(&spec);
}

static void test_tree_dies_with_its_leader(void **state)
{
	struct proc_spec spec;
	struct capture c;

	(void)state;
	/* a grandchild in a session of its own, ignoring TERM, holding stdout
	 * and appending to a file: the leader exits at once */
	sh_spec(&spec, "setsid sh -c 'trap \"\" TERM; while :; do echo x >> grow.txt; "
		       "sleep 0.1; done' & sleep 0.3; echo leader-done");
	c = cap(&spec, 1024);
	assert_int_equal(proc_capture(&c, 1, NULL), 0);
	assert_int_equal(c.exit_code, 0);
	assert_non_null(strstr(c.out.buf, "leader-done"));
	assert_true(file_size("grow.txt") > 0);
	/* contained (PID namespace or cgroup on this host) it is gone; in a
	 * bare process group it escaped with setsid (contain.h) */
	if (contain_host()->tier != CONTAIN_PGROUP)
		assert_true(stops_growing("grow.txt"));
	capture_release(&c);
	proc_spec_release(&spec);
}

static void test_cannot_start(void **state)
{
	struct proc_spec spec;
	struct capture c;

	(void)state;
	proc_spec_init(&spec);
	strvec_push(&spec.argv, "/nonexistent/bin/tool");
	c = cap(&spec, 1024);
	assert_int_equal(proc_capture(&c, 1, NULL), 0);
	assert_int_equal(c.start_result, -ENOENT);
	assert_int_equal(c.exit_code, 127);
	assert_non_null(c.start_error);
	assert_non_null(strstr(c.start_error, "/nonexistent/bin/tool"));
	capture_release(&c);
	proc_spec_release(&spec);
}

static unsigned reaped_calls;

static void on_reaped(void *ctx)
{
	(void)ctx;
	reaped_calls++;
}

static void test_many_at_most_max_parallel(void **state)
{
	enum { N = 5 };
	struct proc_spec spec[N];
	struct capture c[N];
	struct capture_opts o = {.max_parallel = 2};
	char script[256], log[128], buf[256];
	int fd, i, live = 0, most = 0;
	ssize_t n;

	(void)state;
	(void)snprintf(log, sizeof(log), "%s/par.log", tmp);
	reaped_calls = 0;
	for (i = 0; i < N; i++) {
		(void)snprintf(script, sizeof(script),
			       "echo s >> par.log; sleep 0.2; echo e >> par.log; echo %d", i);
		sh_spec(&spec[i], script);
		c[i] = cap(&spec[i], 64);
		c[i].on_reaped = on_reaped;
	}
	assert_int_equal(proc_capture(c, N, &o), 0);
	assert_int_equal(reaped_calls, N);
	for (i = 0; i < N; i++) {
		char want[8];

		(void)snprintf(want, sizeof(want), "%d\n", i);
		assert_int_equal(c[i].exit_code, 0);
		assert_string_equal(c[i].out.buf, want);
		capture_release(&c[i]);
		proc_spec_release(&spec[i]);
	}
	/* never more than two alive at once: every "s" after two unmatched
	 * ones would be a third */
	fd = open(log, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	assert_true(n == 4 * N);
	for (i = 0; i < n; i += 2) {
		live += buf[i] == 's' ? 1 : -1;
		most = live > most ? live : most;
	}
	assert_int_equal(live, 0);
	assert_true(most <= 2);
}

static uint64_t fake_now;

static uint64_t fake_mono(const struct clock *ck)
{
	(void)ck;
	/* ten seconds pass at every look */
	fake_now += 10000;
	return fake_now;
}

static void test_deadline_on_the_injected_clock(void **state)
{
	struct clock ck = {.mono_ms = fake_mono};
	struct capture_opts o = {.clock = &ck};
	struct proc_spec spec;
	struct capture c;

	(void)state;
	sh_spec(&spec, "while :; do sleep 1; done");
	c = cap(&spec, 64);
	c.timeout_ms = 60000; /* a minute of the fake clock: a few looks */
	assert_int_equal(proc_capture(&c, 1, &o), 0);
	assert_true(c.timed_out);
	capture_release(&c);
	proc_spec_release(&spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_and_exit),
		cmocka_unit_test(test_head_cap_counts_dropped),
		cmocka_unit_test(test_tail_keeps_the_end_on_a_character),
		cmocka_unit_test(test_deadline_term_then_kill),
		cmocka_unit_test(test_tree_dies_with_its_leader),
		cmocka_unit_test(test_cannot_start),
		cmocka_unit_test(test_many_at_most_max_parallel),
		cmocka_unit_test(test_deadline_on_the_injected_clock),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
