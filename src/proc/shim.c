#include "proc/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "proc/landlock.h"
#include "util/fsutil.h"

static const struct {
	const char *name;
	int resource;
} rlimits[_SHIM_RLIMIT_MAX] = {
	[SHIM_RLIMIT_AS] = {"as", RLIMIT_AS},
	[SHIM_RLIMIT_NOFILE] = {"nofile", RLIMIT_NOFILE},
	[SHIM_RLIMIT_CPU] = {"cpu", RLIMIT_CPU},
	[SHIM_RLIMIT_CORE] = {"core", RLIMIT_CORE},
	[SHIM_RLIMIT_NPROC] = {"nproc", RLIMIT_NPROC},
	[SHIM_RLIMIT_FSIZE] = {"fsize", RLIMIT_FSIZE},
};

static const char *const stage_names[_SHIM_STAGE_MAX] = {
	[SHIM_STAGE_NONE] = "none",	[SHIM_STAGE_SPAWN] = "spawn",
	[SHIM_STAGE_PARENT] = "parent", [SHIM_STAGE_FDS] = "fds",
	[SHIM_STAGE_RLIMIT] = "rlimit", [SHIM_STAGE_LANDLOCK] = "landlock",
	[SHIM_STAGE_EXEC] = "exec",	[SHIM_STAGE_CONTAIN] = "contain",
};

void shim_opts_init(struct shim_opts *o)
{
	memset(o, 0, sizeof(*o));
	strvec_init(&o->landlock_rw);
	strvec_init(&o->landlock_ro);
	o->status_fd = -1;
}

void shim_opts_release(struct shim_opts *o)
{
	if (!o)
		return;
	strvec_clear(&o->landlock_rw);
	strvec_clear(&o->landlock_ro);
	shim_opts_init(o);
}

void shim_opts_set_rlimit(struct shim_opts *o, enum shim_rlimit r, uint64_t value)
{
	if (r < 0 || r >= _SHIM_RLIMIT_MAX)
		return;
	o->rlimit[r] = value;
	o->rlimit_set |= 1u << r;
}

const char *shim_rlimit_name(enum shim_rlimit r)
{
	return r >= 0 && r < _SHIM_RLIMIT_MAX ? rlimits[r].name : NULL;
}

enum shim_rlimit shim_rlimit_from_name(const char *name)
{
	int i;

	for (i = 0; i < _SHIM_RLIMIT_MAX; i++)
		if (strcmp(rlimits[i].name, name) == 0)
			return (enum shim_rlimit)i;
	return _SHIM_RLIMIT_INVALID;
}

const char *shim_stage_name(enum shim_stage s)
{
	return s >= 0 && s < _SHIM_STAGE_MAX ? stage_names[s] : "?";
}

int shim_exit_code(enum shim_stage stage, int err)
{
	if (stage == SHIM_STAGE_SPAWN || stage == SHIM_STAGE_EXEC) {
		if (err == ENOENT || err == ENOTDIR || err == ELOOP || err == ENAMETOOLONG)
			return SHIM_EXIT_NOTFOUND;
		return SHIM_EXIT_NOEXEC;
	}
	return SHIM_EXIT_SETUP;
}

void shim_report_failure(const struct shim_opts *o, enum shim_stage stage, int err)
{
	struct shim_status st = {.magic = SHIM_STATUS_MAGIC, .stage = stage, .err = err};

	if (o->status_fd < 0)
		return;
	/* One write below PIPE_BUF is atomic; nothing useful can be done if it
	 * fails (the supervisor then only sees the exit code). */
	(void)write_all(o->status_fd, &st, sizeof(st));
}

/* Kernels before 5.9 (close_range) or 5.11 (CLOSE_RANGE_CLOEXEC): walk
 * /proc/self/fd with getdents64 into a stack buffer (opendir would
 * allocate, which the child of proc_spawn() must not). */
VFORK_SAFE static int fds_from_slow(int first, bool close_them)
{
	char buf[1024];
	int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf)), off;

		if (n <= 0) {
			(void)close(dfd);
			return n < 0 ? -errno : 0;
		}
		for (off = 0; off < n;) {
			/* struct linux_dirent64: d_ino 8, d_off 8, d_reclen 2, d_type 1, d_name */
			unsigned short reclen;
			const char *name = buf + off + 19;
			long fd = 0;
			int fl;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (*name < '0' || *name > '9')
				continue;
			for (; *name >= '0' && *name <= '9'; name++)
				fd = fd * 10 + (*name - '0');
			if (fd < first || fd == dfd)
				continue;
			if (close_them)
				(void)close((int)fd);
			else if ((fl = fcntl((int)fd, F_GETFD)) >= 0)
				(void)fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC);
		}
	}
}

VFORK_SAFE int shim_fds_from(int first, bool close_them)
{
	if (close_range((unsigned)first, ~0U, close_them ? 0 : CLOSE_RANGE_CLOEXEC) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL)
		return -errno;
	return fds_from_slow(first, close_them);
}

VFORK_SAFE int shim_fds_from_3(bool close_them)
{
	return shim_fds_from(STDERR_FILENO + 1, close_them);
}

void shim_plan_release(struct shim_plan *p)
{
	if (!p)
		return;
	close_fdp(&p->ruleset_fd);
	*p = (struct shim_plan)SHIM_PLAN_INIT;
}

int shim_prepare(const struct shim_opts *o, pid_t parent, struct shim_plan *ret,
		 struct diag *reterr)
{
	struct shim_plan p = SHIM_PLAN_INIT;
	int r;

	memcpy(p.rlimit, o->rlimit, sizeof(p.rlimit));
	p.rlimit_set = o->rlimit_set;
	p.parent_pid = parent;
	if (o->landlock_rw.nr || o->landlock_ro.nr) {
		size_t i;

		r = landlock_prepare(o->landlock_rw.v, o->landlock_ro.v, &p.ruleset_fd,
				     &p.landlock_abi, reterr);
		for (i = 0; i < o->landlock_ro.nr; i++)
			if (strcmp(o->landlock_ro.v[i], "/proc") == 0)
				p.landlock_proc = true;
		for (i = 0; i < o->landlock_rw.nr; i++)
			if (strcmp(o->landlock_rw.v[i], "/proc") == 0)
				p.landlock_proc = true;
		if (r == -EOPNOTSUPP && o->landlock_best_effort) {
			diag_clear(reterr);
			p.landlock_skipped = true;
		} else if (r < 0) {
			return r;
		}
	}
	*ret = p;
	return 0;
}

VFORK_SAFE int shim_apply(struct shim_plan *p, enum shim_stage *ret_stage)
{
	int i;

	*ret_stage = SHIM_STAGE_PARENT;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	/* The parent may have died before the prctl: then this process was
	 * re-parented (to init or a subreaper) and the signal never comes. */
	if (p->parent_pidfd >= 0) {
		struct pollfd pfd = {.fd = p->parent_pidfd, .events = POLLIN};

		int n = poll(&pfd, 1, 0);

		if (n < 0)
			return -errno;
		if (n > 0) /* readable once the parent has exited */
			return -ESRCH;
	} else if (p->parent_pid > 0 && getppid() != p->parent_pid) {
		return -ESRCH;
	}

	*ret_stage = SHIM_STAGE_RLIMIT;
	for (i = 0; i < _SHIM_RLIMIT_MAX; i++) {
		struct rlimit rl;

		if (!(p->rlimit_set & (1u << i)))
			continue;
		rl.rlim_cur = rl.rlim_max = p->rlimit[i] >= (uint64_t)RLIM_INFINITY
						    ? RLIM_INFINITY
						    : (rlim_t)p->rlimit[i];
		if (setrlimit(rlimits[i].resource, &rl) < 0) {
			p->failed_rlimit = i;
			return -errno;
		}
	}

	*ret_stage = SHIM_STAGE_LANDLOCK;
	if (p->ruleset_fd >= 0) {
		int r = landlock_enforce(p->ruleset_fd);

		if (r < 0)
			return r;
	}
	*ret_stage = SHIM_STAGE_NONE;
	return 0;
}

const char *shim_failure_message(const struct shim_plan *p, enum shim_stage stage, int err,
				 char *buf, size_t size)
{
	switch (stage) {
	case SHIM_STAGE_PARENT:
		if (err == ESRCH)
			(void)snprintf(buf, size, "parent process %ld is gone",
				       (long)p->parent_pid);
		else
			(void)snprintf(buf, size, "cannot set the parent-death signal: %s",
				       strerror(err));
		break;
	case SHIM_STAGE_RLIMIT:
		if (p->failed_rlimit >= 0 && p->failed_rlimit < _SHIM_RLIMIT_MAX)
			(void)snprintf(buf, size, "cannot set rlimit %s to %" PRIu64 ": %s",
				       rlimits[p->failed_rlimit].name, p->rlimit[p->failed_rlimit],
				       strerror(err));
		else
			(void)snprintf(buf, size, "cannot set a resource limit: %s", strerror(err));
		break;
	case SHIM_STAGE_LANDLOCK:
		(void)snprintf(buf, size, "landlock: cannot restrict the process: %s",
			       strerror(err));
		break;
	default:
		(void)snprintf(buf, size, "%s: %s", shim_stage_name(stage), strerror(err));
		break;
	}
	return buf;
}

VFORK_SAFE void shim_reset_signals(void)
{
	/* A kernel struct sigaction of zeros is SIG_DFL, no flags, an empty
	 * mask, whatever the architecture's field order. */
	unsigned long kact[8] = {0}, none[2] = {0};
	int sig;

	/* Default dispositions: ignored signals survive execve, bernstein
	 * itself ignores SIGPIPE, and glibc leaves its internal signals (32,
	 * 33) as it likes. glibc's sigaction() refuses those two, so this goes
	 * to the kernel directly. Caught signals are reset by execve anyway,
	 * but not before it: the child of proc_spawn() must not run the
	 * parent's handlers. */
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, sig, kact, NULL, (size_t)(_NSIG / 8));
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, none, NULL, (size_t)(_NSIG / 8));
}

int shim_exec(const struct shim_opts *o, const char *path, char *const argv[], char *const envp[])
{
	int r;

	shim_reset_signals();
	(void)execve(path, argv, envp);
	r = -errno;
	shim_report_failure(o, SHIM_STAGE_EXEC, -r);
	return r;
}

bool shim_init_release_tty(char *tty, size_t size)
{
	struct sigaction ign, old_hup, old_cont;
	bool ok;

	if (!isatty(STDIN_FILENO) || getsid(0) != getpid() || tcgetsid(STDIN_FILENO) != getpid() ||
	    ttyname_r(STDIN_FILENO, tty, size) != 0)
		return false;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	(void)sigaction(SIGHUP, &ign, &old_hup);
	(void)sigaction(SIGCONT, &ign, &old_cont);
	ok = ioctl(STDIN_FILENO, TIOCNOTTY) == 0;
	(void)sigaction(SIGHUP, &old_hup, NULL);
	(void)sigaction(SIGCONT, &old_cont, NULL);
	return ok;
}

/* What the init's program left: SIGTERM to every process of the namespace
 * (but the init), then every child reaped until none is left or grace_ms
 * have passed. Signals stay blocked (sigtimedwait()). */
static void init_settle(uint64_t grace_ms)
{
	struct timespec now, end;
	sigset_t chld;

	/* kill(-1) is "every process of the namespace" only for its init:
	 * anywhere else it would be every process the user may signal */
	if (!grace_ms || getpid() != 1 || kill(-1, SIGTERM) < 0)
		return; /* not an init, or nothing else in the namespace (ESRCH) */
	(void)sigemptyset(&chld);
	(void)sigaddset(&chld, SIGCHLD);
	(void)clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)(grace_ms / 1000);
	end.tv_nsec += (long)(grace_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		struct timespec left;
		pid_t pid;

		while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (pid < 0 && errno == ECHILD)
			return; /* all gone */
		(void)clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			return; /* the grace is over: the kernel SIGKILLs the rest */
		(void)sigtimedwait(&chld, NULL, &left);
	}
}

int shim_init_run(const char *path, char *const argv[], char *const envp[], const char *tty,
		  uint64_t grace_ms, int wait_fd, int *ret_code)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all, none, old;
	pid_t child;
	int r;

	/* the program must not inherit it (it could write a status of its own) */
	if (wait_fd >= 0)
		(void)fcntl(wait_fd, F_SETFD, FD_CLOEXEC);
	(void)sigfillset(&all);
	(void)sigemptyset(&none);
	(void)posix_spawnattr_init(&attr);
	(void)posix_spawnattr_setsigmask(&attr, &none);
	(void)posix_spawnattr_setsigdefault(&attr, &all);
	(void)posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
						      POSIX_SPAWN_SETSIGDEF);
	(void)posix_spawn_file_actions_init(&fa);
	/* a session leader without a terminal that opens one (no O_NOCTTY)
	 * gets it as its controlling terminal */
	if (tty)
		(void)posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, tty, O_RDWR, 0);
	/* from now on every signal waits for sigwaitinfo(): none is lost, and
	 * none is dropped as an init's would be */
	(void)sigprocmask(SIG_BLOCK, &all, &old);
	r = posix_spawn(&child, path, &fa, &attr, argv, envp);
	(void)posix_spawn_file_actions_destroy(&fa);
	(void)posix_spawnattr_destroy(&attr);
	if (r != 0) {
		(void)sigprocmask(SIG_SETMASK, &old, NULL);
		return -r;
	}
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&all, &si), st;
		pid_t pid;

		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			(void)kill(-child, sig);
			continue;
		}
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			if (pid == child) {
				*ret_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				init_settle(grace_ms);
				if (wait_fd >= 0) {
					int32_t w = st;

					(void)!write(wait_fd, &w, sizeof(w));
				}
				return 0;
			}
	}
}
