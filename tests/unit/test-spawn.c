/* proc_spawn() with real processes (tests/helpers/fake-agent): exactly the
 * given environment, fd hygiene, a new session, exit mapping, stdin, cwd, the
 * shim's steps in the child (parent-death signal, rlimits, Landlock, signal
 * dispositions) and every failure to start reported at once, with its step,
 * leaving no child behind. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* The end of a variadic argument list (a typed NULL). */
#define END ((const char *)NULL)

#include "proc/landlock.h"
#include "proc/spawn.h"
#include "util/sbuf.h"
#include "util/strvec.h"

#define DEADLINE_MS 20000

static const char *fake_agent;

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

/* The tier run_agent() asks for (CONTAIN_AUTO: the host's best). */
static enum contain_tier spawn_tier = CONTAIN_AUTO;

/* Spawn argv (NULL-terminated, after the agent path) with env; collect. */
static int run_agent(const char *const *env, struct proc *p, struct sbuf *out, struct sbuf *err,
		     const char *first, ...)
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
	spec.contain = spawn_tier;
	r = proc_spawn(&spec, p, &d);
	proc_spec_release(&spec);
	if (r == 0)
		collect(p, out, err);
	return r;
}

static const char *const test_env[] = {"A=1", "B=two words", "PATH=/usr/bin:/bin", NULL};

static void check_env(void)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;

	assert_int_equal(setenv("BERNSTEIN_TEST_CANARY", "leak", 1), 0);
	assert_int_equal(run_agent(test_env, &p, &out, &err, "dump-env", END), 0);
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
	check_env();
}

static void check_fds(void)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	int leak = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
	int fds[2];

	assert_true(leak >= 0);
	assert_int_equal(pipe(fds), 0); /* also without O_CLOEXEC */
	assert_int_equal(run_agent(test_env, &p, &out, &err, "dump-fds", END), 0);
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
	check_fds();
}

static void check_session(void)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	char want[128];

	assert_int_equal(run_agent(test_env, &p, &out, &err, "dump-ids", END), 0);
	if (p.tier == CONTAIN_PIDNS) /* the init of its own PID namespace */
		(void)snprintf(want, sizeof(want), "ids pid=1 ppid=0 pgid=1 sid=1\n");
	else
		(void)snprintf(want, sizeof(want), "ids pid=%ld ppid=%ld pgid=%ld sid=%ld\n",
			       (long)p.pid, (long)getpid(), (long)p.pid, (long)p.pid);
	assert_string_equal(out.buf, want);
	proc_release(&p);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_new_session(void **state)
{
	(void)state;
	check_session();
}

static void test_exit_codes(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	char msg[256];

	(void)state;
	assert_int_equal(run_agent(test_env, &p, &out, &err, "exit", "3", END), 0);
	assert_int_equal(p.exit_code, 3);
	assert_int_equal(p.term_signal, 0);
	assert_int_equal(p.failed_stage, SHIM_STAGE_NONE);
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)), "exited with code 3");
	proc_release(&p);

	/* the init of a PID namespace ignores the signals it raises itself
	 * (test-contain.c): the process-group tier */
	spawn_tier = CONTAIN_PGROUP;
	assert_int_equal(run_agent(test_env, &p, &out, &err, "kill-self", "TERM", END), 0);
	spawn_tier = CONTAIN_AUTO;
	assert_int_equal(p.exit_code, 128 + SIGTERM);
	assert_int_equal(p.term_signal, SIGTERM);
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
			    "killed by signal 15 (SIGTERM)");
	proc_release(&p);
	sbuf_release(&out);
	sbuf_release(&err);
}

/* No child of this process is left, running or a zombie. */
static void assert_no_children(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* A missing binary: reported when proc_spawn() returns, with the step, and
 * the child that could not exec is already reaped. */
static void test_missing_binary(void **state)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d = {0};
	char msg[256];

	(void)state;
	strvec_push(&spec.argv, "/nonexistent/agent");
	assert_int_equal(proc_spawn(&spec, &p, &d), -ENOENT);
	assert_string_equal(d.msg,
			    "cannot execute '/nonexistent/agent': No such file or directory");
	assert_int_equal(p.pid, -1);
	assert_int_equal(p.failed_stage, SHIM_STAGE_EXEC);
	assert_int_equal(p.start_errno, ENOENT);
	assert_no_children();
	p.path = strdup("/nonexistent/agent");
	proc_set_start_failure(&p, p.failed_stage, p.start_errno, NULL);
	assert_int_equal(p.exit_code, 127);
	assert_string_equal(proc_describe_exit(&p, msg, sizeof(msg)),
			    "cannot execute '/nonexistent/agent': No such file or directory");
	proc_release(&p);
	proc_spec_release(&spec);
}

static void test_not_executable(void **state)
{
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
	assert_int_equal(p.failed_stage, SHIM_STAGE_EXEC);
	assert_int_equal(shim_exit_code(p.failed_stage, p.start_errno), 126);
	(void)snprintf(want, sizeof(want), "cannot execute '%s': Permission denied", path);
	assert_string_equal(d.msg, want);
	assert_no_children();
	proc_spec_release(&spec);
	unlink(path);
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
	assert_int_equal(run_agent(test_env, &p, &out, &err, "read-stdin", "emit", "done", END), 0);
	assert_string_equal(out.buf, "done\n");
	proc_release(&p);

	/* A missing cwd is named in the message. */
	strvec_push(&spec.argv, fake_agent);
	spec.cwd = "/nonexistent/dir";
	assert_int_equal(proc_spawn(&spec, &p, &d), -ENOENT);
	assert_string_equal(d.msg,
			    "cannot change to '/nonexistent/dir': No such file or directory");
	assert_int_equal(p.failed_stage, SHIM_STAGE_SPAWN);
	assert_no_children();
	proc_spec_release(&spec);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* bernstein ignores SIGPIPE and blocks signals for its signalfd; the agent
 * gets default dispositions and an empty mask anyway, and a signal the
 * parent catches is back to its default too. */
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
	signal(SIGPIPE, SIG_IGN);
	signal(SIGUSR1, on_usr1);
	assert_int_equal(run_agent(test_env, &p, &out, &err, "dump-signals", END), 0);
	assert_string_equal(out.buf, "signals blocked=0000000000000000 ignored=0000000000000000\n");
	signal(SIGUSR2, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
	/* the parent's own mask and dispositions are untouched */
	{
		sigset_t now;
		struct sigaction sa;

		sigprocmask(SIG_SETMASK, NULL, &now);
		assert_true(sigismember(&now, SIGUSR1));
		sigaction(SIGUSR2, NULL, &sa);
		assert_true(sa.sa_handler == SIG_DFL);
	}
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
	int r;

	(void)state;
	strvec_push(&spec.argv, fake_agent);
	strvec_push(&spec.argv, "dump-rlimit");
	strvec_push(&spec.argv, "nofile");
	strvec_push(&spec.argv, "dump-rlimit");
	strvec_push(&spec.argv, "core");
	shim_opts_set_rlimit(&spec.shim, SHIM_RLIMIT_NOFILE, 16);
	shim_opts_set_rlimit(&spec.shim, SHIM_RLIMIT_CORE, 0);
	assert_int_equal(proc_spawn(&spec, &p, &d), 0);
	collect(&p, &out, &err);
	assert_string_equal(out.buf, "rlimit nofile 16 16\nrlimit core 0 0\n");
	proc_release(&p);

	/* A limit above the hard limit cannot be set by an unprivileged
	 * process, nor above the kernel's nr_open by root. Either way the agent
	 * must not run silently with a different limit: a failure at the
	 * rlimit step that names it, or the exact value. */
	sbuf_reset(&out);
	sbuf_reset(&err);
	shim_opts_release(&spec.shim);
	shim_opts_set_rlimit(&spec.shim, SHIM_RLIMIT_NOFILE, 1ULL << 40);
	r = proc_spawn(&spec, &p, &d);
	if (r < 0) {
		assert_true(r == -EPERM || r == -EINVAL);
		assert_int_equal(p.failed_stage, SHIM_STAGE_RLIMIT);
		assert_int_equal(shim_exit_code(p.failed_stage, p.start_errno), 125);
		assert_non_null(strstr(d.msg, "cannot set rlimit nofile to 1099511627776"));
		assert_no_children();
	} else {
		collect(&p, &out, &err);
		assert_int_equal(p.exit_code, 0);
		assert_string_equal(out.buf, "rlimit nofile 1099511627776 1099511627776\n");
	}
	proc_release(&p);
	proc_spec_release(&spec);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_shim_names(void **state)
{
	(void)state;
	assert_int_equal(shim_rlimit_from_name("nofile"), SHIM_RLIMIT_NOFILE);
	assert_int_equal(shim_rlimit_from_name("bogus"), _SHIM_RLIMIT_INVALID);
	assert_string_equal(shim_rlimit_name(SHIM_RLIMIT_FSIZE), "fsize");
	assert_int_equal(shim_exit_code(SHIM_STAGE_EXEC, ENOENT), 127);
	assert_int_equal(shim_exit_code(SHIM_STAGE_SPAWN, ENOTDIR), 127);
	assert_int_equal(shim_exit_code(SHIM_STAGE_EXEC, EACCES), 126);
	assert_int_equal(shim_exit_code(SHIM_STAGE_EXEC, ENOEXEC), 126);
	assert_int_equal(shim_exit_code(SHIM_STAGE_LANDLOCK, EOPNOTSUPP), 125);
}

/* The agent dies with this process: its parent-death signal is SIGKILL,
 * and its parent is this process (no program in between). */
static void test_pdeathsig(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	char want[64];

	(void)state;
	assert_int_equal(run_agent(test_env, &p, &out, &err, "dump-pdeathsig", "dump-ids", END), 0);
	(void)snprintf(want, sizeof(want), "pdeathsig %d\n", SIGKILL);
	assert_int_equal(strncmp(out.buf, want, strlen(want)), 0);
	/* outside a PID namespace of its own, its parent is this process */
	(void)snprintf(want, sizeof(want), " ppid=%ld ",
		       p.tier == CONTAIN_PIDNS ? 0L : (long)getpid());
	assert_non_null(strstr(out.buf, want));
	proc_release(&p);
	sbuf_release(&out);
	sbuf_release(&err);
}

/* Landlock in the child: it writes inside the read-write directory and
 * nowhere else; this process stays unconfined. A path that cannot be opened
 * fails at once, naming it. */
static void test_landlock(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d = {0};
	char in[] = "/tmp/bernstein-ll-in.XXXXXX", outside[] = "/tmp/bernstein-ll-out.XXXXXX";
	char f1[64], f2[64], want[256];
	FILE *f;

	(void)state;
	assert_int_equal(proc_spawn(&spec, &p, &d), -EINVAL); /* empty argv: before anything */
	assert_non_null(mkdtemp(in));
	assert_non_null(mkdtemp(outside));
	(void)snprintf(f1, sizeof(f1), "%s/a", in);
	(void)snprintf(f2, sizeof(f2), "%s/b", outside);

	strvec_push(&spec.shim.landlock_rw, "/nonexistent/dir");
	strvec_push(&spec.argv, fake_agent);
	assert_int_equal(proc_spawn(&spec, &p, &d),
			 landlock_abi_version() < 0 ? -EOPNOTSUPP : -ENOENT);
	assert_int_equal(p.failed_stage, SHIM_STAGE_LANDLOCK);
	assert_int_equal(shim_exit_code(p.failed_stage, p.start_errno), 125);
	if (landlock_abi_version() >= 0)
		assert_string_equal(
			d.msg,
			"landlock: cannot open read-write path '/nonexistent/dir': No such file or directory");
	assert_no_children();
	proc_spec_release(&spec);

	if (landlock_abi_version() < 0) {
		rmdir(in);
		rmdir(outside);
		skip();
	}
	strvec_push(&spec.argv, fake_agent);
	strvec_push(&spec.argv, "write-file");
	strvec_push(&spec.argv, f1);
	strvec_push(&spec.argv, "in");
	strvec_push(&spec.argv, "write-file");
	strvec_push(&spec.argv, f2);
	strvec_push(&spec.argv, "out");
	strvec_push(&spec.shim.landlock_rw, in);
	strvec_push(&spec.shim.landlock_rw, "/dev/null");
	strvec_push(&spec.shim.landlock_ro, "/");
	assert_int_equal(proc_spawn(&spec, &p, &d), 0);
	collect(&p, &out, &err);
	(void)snprintf(want, sizeof(want), "write-file %s ok\nwrite-file %s error EACCES\n", f1,
		       f2);
	assert_string_equal(out.buf, want);
	/* not confined here */
	f = fopen(f2, "we");
	assert_non_null(f);
	fclose(f);
	unlink(f1);
	unlink(f2);
	rmdir(in);
	rmdir(outside);
	proc_release(&p);
	proc_spec_release(&spec);
	sbuf_release(&out);
	sbuf_release(&err);
}

/* Many starts, one after another, with fds and a handler around: nothing of
 * the child's (fds, memory, mask) stays behind in this process. */
static void test_many_starts(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX), err = SBUF_INIT(SIZE_MAX);
	struct proc p = PROC_INIT;
	sigset_t before, after;
	int i, fd_before, fd_after;

	(void)state;
	fd_before = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(fd_before);
	sigprocmask(SIG_SETMASK, NULL, &before);
	for (i = 0; i < 200; i++) {
		sbuf_reset(&out);
		assert_int_equal(run_agent(test_env, &p, &out, &err, "emit", "x", END), 0);
		assert_string_equal(out.buf, "x\n");
		assert_int_equal(p.exit_code, 0);
		proc_release(&p);
	}
	fd_after = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(fd_after);
	assert_int_equal(fd_after, fd_before);
	sigprocmask(SIG_SETMASK, NULL, &after);
	for (i = 1; i < NSIG; i++)
		assert_int_equal(sigismember(&before, i), sigismember(&after, i));
	assert_no_children();
	sbuf_release(&out);
	sbuf_release(&err);
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
		cmocka_unit_test(test_env_exact),
		cmocka_unit_test(test_fd_hygiene),
		cmocka_unit_test(test_new_session),
		cmocka_unit_test(test_exit_codes),
		cmocka_unit_test(test_missing_binary),
		cmocka_unit_test(test_not_executable),
		cmocka_unit_test(test_bare_name_refused),
		cmocka_unit_test(test_stdin_and_cwd),
		cmocka_unit_test(test_shim_resets_signals),
		cmocka_unit_test(test_shim_rlimit),
		cmocka_unit_test(test_shim_names),
		cmocka_unit_test(test_pdeathsig),
		cmocka_unit_test(test_landlock),
		cmocka_unit_test(test_many_starts),
		cmocka_unit_test(test_describe),
	};

	fake_agent = getenv("FAKE_AGENT");
	if (!fake_agent) {
		fprintf(stderr, "FAKE_AGENT must be set (meson test does it)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
