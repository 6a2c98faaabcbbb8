/* proc_spawn() with real processes (tests/helpers/fake-agent): exactly the
 * given environment, fd hygiene, a new session, exit mapping, stdin, cwd, and
 * the same through the shim (the bernstein binary). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

/* The end of a variadic argument list (a typed NULL). */
#define END ((const char *)NULL)

#include "proc/spawn.h"
#include "util/sbuf.h"
#include "util/strvec.h"

#define DEADLINE_MS 20000

static const char *fake_agent;
static const char *bernstein;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Read both pipes to EOF (poll with a deadline), then wait. */
static void collect(struct proc *p, struct sbuf *out, struct sbuf *err)
{
	uint64_t end = mono_ms() + DEADLINE_MS;

	while (p->out_fd >= 0 || p->err_fd >= 0) {
		struct pollfd pfd[2] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
		int i, n;

		assert_true(mono_ms() < end);
		n = poll(pfd, 2, 1000);
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n >= 0);
		for (i = 0; i < 2; i++) {
			int *fd = i == 0 ? &p->out_fd : &p->err_fd;
			struct sbuf *sb = i == 0 ? out : err;
			char buf[4096];
			ssize_t r;

			if (*fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(*fd, buf, sizeof(buf));
			if (r > 0) {
				assert_int_equal(sbuf_add(sb, buf, (size_t)r), 0);
			} else if (r == 0 || errno != EAGAIN) {
				close(*fd);
				*fd = -1;
			}
		}
	}
	assert_int_equal(proc_wait(p), 0);
}

/* Spawn argv (NULL-terminated, after the agent path) with env; collect. */
static int run_agent(bool shim, const char *const *env, struct proc *p, struct sbuf *out,
		     struct sbuf *err, const char *first, ...)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct diag d = {0};
	const char *a;
	va_list ap;
	int r;

	strvec_push(&spec.argv, fake_agent);
	va_start(ap, first);
	for (a = first; a; a = va_arg(ap, const char *))
		strvec_push(&spec.argv, a);
	va_end(ap);
	strvec_pushv(&spec.env, env);
	if (shim)
		spec.shim_exe = bernstein;
	r = proc_spawn(&spec, p, &d);
	proc_spec_release(&spec);
	if (r == 0)
		collect(p, out, err);
	return r;
}

static const char *const test_env[] = {"A=1", "B=two words", "PATH=/usr/bin:/bin", NULL};

static void check_env(bool shim)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;

	assert_int_equal(setenv("BERNSTEIN_TEST_CANARY", "leak", 1), 0);
	assert_int_equal(run_agent(shim, test_env, &p, &out, &err, "dump-env", END), 0);
	assert_int_equal(p.exit_code, 0);
	assert_string_equal(out.buf, "A=1\nB=two words\nPATH=/usr/bin:/bin\n");
	assert_null(strstr(out.buf, "CANARY"));
	proc_release(&p);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_env_exact(void **state)
{
	(void)state;
	check_env(false);
}

static void test_env_exact_shim(void **state)
{
	(void)state;
	check_env(true);
}

static void check_fds(bool shim)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	int leak = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
	int fds[2];

	assert_true(leak >= 0);
	assert_int_equal(pipe(fds), 0); /* also without O_CLOEXEC */
	assert_int_equal(run_agent(shim, test_env, &p, &out, &err, "dump-fds", END), 0);
	assert_string_equal(out.buf, "fds 0 1 2\n");
	close(leak);
	close(fds[0]);
	close(fds[1]);
	proc_release(&p);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_fd_hygiene(void **state)
{
	(void)state;
	check_fds(false);
}

static void test_fd_hygiene_shim(void **state)
{
	(void)state;
	check_fds(true);
}

static void check_session(bool shim)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	char want[128];

	assert_int_equal(run_agent(shim, test_env, &p, &out, &err, "dump-ids", END), 0);
	(void)snprintf(want, sizeof(want), "ids pid=%ld ppid=%ld pgid=%ld sid=%ld\n", (long)p.pid,
		       (long)getpid(), (long)p.pid, (long)p.pid);
	assert_string_equal(out.buf, want);
	proc_release(&p);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_new_session(void **state)
{
	(void)state;
	check_session(false);
}

static void test_new_session_shim(void **state)
{
	(void)state;
	check_session(true);
}

static void test_exit_codes(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	char msg[256];
	int shim;

	(void)state;
	for (shim = 0; shim < 2; shim++) {
		assert_int_equal(run_agent(shim, test_env, &p, &out, &err, "exit", "3", END), 0);
		assert_int_equal(p.exit_code, 3);
		assert_int_equal(p.term_signal, 0);
		assert_int_equal(p.failed_stage, SHIM_STAGE_NONE);
		assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)), "exited with code 3");
		proc_release(&p);

		assert_int_equal(
			run_agent(shim, test_env, &p, &out, &err, "kill-self", "TERM", END), 0);
		assert_int_equal(p.exit_code, 128 + SIGTERM);
		assert_int_equal(p.term_signal, SIGTERM);
		assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
				    "killed by signal 15 (SIGTERM)");
		proc_release(&p);
	}
	sbuf_release(&out);
	sbuf_release(&err);
}

/* A missing binary: posix_spawn fails at once without the shim; with it, the
 * shim exits 127 and says why on the status pipe and on stderr. */
static void test_missing_binary(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d = {0};
	char msg[256];

	(void)state;
	strvec_push(&spec.argv, "/nonexistent/agent");
	assert_int_equal(proc_spawn(&spec, &p, &d), -ENOENT);
	assert_string_equal(d.msg,
			    "cannot execute '/nonexistent/agent': No such file or directory");
	assert_int_equal(p.pid, -1); /* untouched */
	p.path = strdup("/nonexistent/agent");
	proc_set_start_failure(&p, SHIM_STAGE_SPAWN, ENOENT, NULL);
	assert_int_equal(p.exit_code, 127);
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
			    "cannot execute '/nonexistent/agent': No such file or directory");
	proc_release(&p);

	spec.shim_exe = bernstein;
	assert_int_equal(proc_spawn(&spec, &p, &d), 0);
	collect(&p, &out, &err);
	assert_int_equal(p.exit_code, 127);
	assert_int_equal(p.failed_stage, SHIM_STAGE_EXEC);
	assert_int_equal(p.start_errno, ENOENT);
	assert_string_equal(err.buf, "bernstein shim: cannot execute '/nonexistent/agent': No such "
				     "file or directory\n");
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
			    "cannot execute '/nonexistent/agent': No such file or directory");
	proc_release(&p);
	proc_spec_release(&spec);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_not_executable(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d = {0};
	char path[] = "/tmp/bernstein-noexec.XXXXXX", want[256];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	assert_int_equal(chmod(path, 0644), 0);
	strvec_push(&spec.argv, path);
	assert_int_equal(proc_spawn(&spec, &p, &d), -EACCES);

	spec.shim_exe = bernstein;
	assert_int_equal(proc_spawn(&spec, &p, &d), 0);
	collect(&p, &out, &err);
	assert_int_equal(p.exit_code, 126);
	assert_int_equal(p.failed_stage, SHIM_STAGE_EXEC);
	assert_int_equal(p.start_errno, EACCES);
	(void)snprintf(want, sizeof(want),
		       "bernstein shim: cannot execute '%s': Permission denied\n", path);
	assert_string_equal(err.buf, want);
	proc_release(&p);
	proc_spec_release(&spec);
	unlink(path);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_bare_name_refused(void **state)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d = {0};

	(void)state;
	strvec_push(&spec.argv, "sh");
	assert_int_equal(proc_spawn(&spec, &p, &d), -EINVAL);
	assert_string_equal(d.msg, "'sh' is not an absolute path (resolve it on PATH first)");
	strvec_clear(&spec.argv);
	strvec_push(&spec.argv, "./agent");
	assert_int_equal(proc_spawn(&spec, &p, &d), -EINVAL);
	proc_spec_release(&spec);
	assert_int_equal(proc_spawn(&spec, &p, &d), -EINVAL); /* empty argv */
}

static void test_stdin_and_cwd(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d = {0};
	char dir[] = "/tmp/bernstein-cwd.XXXXXX", file[64], prompt[] = "/tmp/bernstein-in.XXXXXX";
	int fd;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fd = mkstemp(prompt);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "the prompt\n", 11), 11);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	unlink(prompt);

	strvec_push(&spec.argv, fake_agent);
	strvec_push(&spec.argv, "read-stdin");
	strvec_push(&spec.argv, "write-file");
	strvec_push(&spec.argv, "here.txt");
	strvec_push(&spec.argv, "in cwd");
	spec.cwd = dir;
	spec.stdin_fd = fd; /* owned by the spec from now on */
	spec.shim_exe = bernstein;
	assert_int_equal(proc_spawn(&spec, &p, &d), 0);
	proc_spec_release(&spec);
	collect(&p, &out, &err);
	assert_int_equal(p.exit_code, 0);
	assert_string_equal(out.buf, "the prompt\nwrite-file here.txt ok\n");
	(void)snprintf(file, sizeof(file), "%s/here.txt", dir);
	f = fopen(file, "re");
	assert_non_null(f);
	fclose(f);
	unlink(file);
	rmdir(dir);
	proc_release(&p);

	/* Without a stdin fd the agent reads /dev/null: EOF at once, no hang. */
	sbuf_reset(&out);
	assert_int_equal(
		run_agent(true, test_env, &p, &out, &err, "read-stdin", "emit", "done", END), 0);
	assert_string_equal(out.buf, "done\n");
	proc_release(&p);

	/* A missing cwd is named in the message. */
	strvec_push(&spec.argv, fake_agent);
	spec.cwd = "/nonexistent/dir";
	assert_int_equal(proc_spawn(&spec, &p, &d), -ENOENT);
	assert_string_equal(d.msg,
			    "cannot change to '/nonexistent/dir': No such file or directory");
	proc_spec_release(&spec);
	sbuf_release(&out);
	sbuf_release(&err);
}

/* bernstein ignores SIGPIPE; the shim must hand the agent default
 * dispositions and an empty mask anyway. */
static void test_shim_resets_signals(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	sigset_t set, old;

	(void)state;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	signal(SIGUSR2, SIG_IGN);
	assert_int_equal(run_agent(true, test_env, &p, &out, &err, "dump-signals", END), 0);
	assert_string_equal(out.buf, "signals blocked=0000000000000000 ignored=0000000000000000\n");
	signal(SIGUSR2, SIG_DFL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	proc_release(&p);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_shim_rlimit(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d = {0};

	(void)state;
	strvec_push(&spec.argv, fake_agent);
	strvec_push(&spec.argv, "dump-rlimit");
	strvec_push(&spec.argv, "nofile");
	strvec_push(&spec.argv, "dump-rlimit");
	strvec_push(&spec.argv, "core");
	spec.shim_exe = bernstein;
	shim_opts_set_rlimit(&spec.shim, SHIM_RLIMIT_NOFILE, 16);
	shim_opts_set_rlimit(&spec.shim, SHIM_RLIMIT_CORE, 0);
	assert_int_equal(proc_spawn(&spec, &p, &d), 0);
	collect(&p, &out, &err);
	assert_string_equal(out.buf, "rlimit nofile 16 16\nrlimit core 0 0\n");
	proc_release(&p);

	/* A limit above the hard limit cannot be set by an unprivileged
	 * process; as root it can. Either way the shim must not exec silently
	 * with a different limit: exit 125 with a record, or the exact value. */
	sbuf_reset(&out);
	sbuf_reset(&err);
	shim_opts_release(&spec.shim);
	shim_opts_set_rlimit(&spec.shim, SHIM_RLIMIT_NOFILE, 1ULL << 40);
	assert_int_equal(proc_spawn(&spec, &p, &d), 0);
	collect(&p, &out, &err);
	if (p.exit_code == 125) {
		assert_int_equal(p.failed_stage, SHIM_STAGE_RLIMIT);
		assert_non_null(strstr(err.buf, "bernstein shim: cannot set rlimit nofile"));
	} else {
		assert_int_equal(p.exit_code, 0);
		assert_string_equal(out.buf, "rlimit nofile 1099511627776 1099511627776\n");
	}
	proc_release(&p);
	proc_spec_release(&spec);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_shim_argv(void **state)
{
	struct shim_opts o = SHIM_OPTS_INIT;
	struct strvec v = STRVEC_INIT;

	(void)state;
	shim_opts_set_rlimit(&o, SHIM_RLIMIT_AS, 1 << 30);
	shim_opts_set_rlimit(&o, SHIM_RLIMIT_CORE, 0);
	strvec_push(&o.landlock_rw, "/work/tree");
	strvec_push(&o.landlock_ro, "/usr");
	o.landlock_best_effort = true;
	shim_opts_to_argv(&o, &v);
	assert_int_equal(v.nr, 9);
	assert_string_equal(v.v[0], "--rlimit-as");
	assert_string_equal(v.v[1], "1073741824");
	assert_string_equal(v.v[2], "--rlimit-core");
	assert_string_equal(v.v[3], "0");
	assert_string_equal(v.v[4], "--landlock-rw");
	assert_string_equal(v.v[5], "/work/tree");
	assert_string_equal(v.v[6], "--landlock-ro");
	assert_string_equal(v.v[7], "/usr");
	assert_string_equal(v.v[8], "--landlock-best-effort");
	assert_int_equal(shim_rlimit_from_name("nofile"), SHIM_RLIMIT_NOFILE);
	assert_int_equal(shim_rlimit_from_name("bogus"), _SHIM_RLIMIT_INVALID);
	assert_int_equal(shim_exit_code(SHIM_STAGE_EXEC, ENOENT), 127);
	assert_int_equal(shim_exit_code(SHIM_STAGE_SPAWN, ENOTDIR), 127);
	assert_int_equal(shim_exit_code(SHIM_STAGE_EXEC, EACCES), 126);
	assert_int_equal(shim_exit_code(SHIM_STAGE_EXEC, ENOEXEC), 126);
	assert_int_equal(shim_exit_code(SHIM_STAGE_LANDLOCK, EOPNOTSUPP), 125);
	strvec_clear(&v);
	shim_opts_release(&o);
}

static void test_describe(void **state)
{
	struct proc p = PROC_INIT;
	char msg[256];

	(void)state;
	p.path = strdup("/bin/agent");
	p.exited = true;
	proc_set_wait_status(&p, 9); /* signalled by SIGKILL */
	assert_int_equal(p.exit_code, 137);
	p.timed_out = true;
	p.timeout_ms = 500;
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
			    "timed out after 500 ms; killed by signal 9 (SIGKILL)");
	p.timed_out = false;
	p.cancelled = true;
	proc_set_wait_status(&p, 0);
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
			    "cancelled; exited with code 0");
	p.cancelled = false;
	proc_set_start_failure(&p, SHIM_STAGE_LANDLOCK, EOPNOTSUPP, NULL);
	assert_int_equal(p.exit_code, 125);
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
			    "cannot confine '/bin/agent': the kernel does not support landlock");
	proc_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_exact),      cmocka_unit_test(test_env_exact_shim),
		cmocka_unit_test(test_fd_hygiene),     cmocka_unit_test(test_fd_hygiene_shim),
		cmocka_unit_test(test_new_session),    cmocka_unit_test(test_new_session_shim),
		cmocka_unit_test(test_exit_codes),     cmocka_unit_test(test_missing_binary),
		cmocka_unit_test(test_not_executable), cmocka_unit_test(test_bare_name_refused),
		cmocka_unit_test(test_stdin_and_cwd),  cmocka_unit_test(test_shim_resets_signals),
		cmocka_unit_test(test_shim_rlimit),    cmocka_unit_test(test_shim_argv),
		cmocka_unit_test(test_describe),
	};

	fake_agent = getenv("FAKE_AGENT");
	bernstein = getenv("BERNSTEIN");
	if (!fake_agent || !bernstein) {
		fprintf(stderr, "FAKE_AGENT and BERNSTEIN must be set (meson test does it)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
