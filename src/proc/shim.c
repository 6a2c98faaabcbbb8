#include "proc/shim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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
	[SHIM_STAGE_EXEC] = "exec",
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

void shim_opts_copy(struct shim_opts *dst, const struct shim_opts *src)
{
	shim_opts_init(dst);
	memcpy(dst->rlimit, src->rlimit, sizeof(dst->rlimit));
	dst->rlimit_set = src->rlimit_set;
	strvec_pushv(&dst->landlock_rw, src->landlock_rw.v);
	strvec_pushv(&dst->landlock_ro, src->landlock_ro.v);
	dst->landlock_best_effort = src->landlock_best_effort;
	dst->parent_pid = src->parent_pid;
	dst->status_fd = src->status_fd;
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

void shim_opts_to_argv(const struct shim_opts *o, struct strvec *argv)
{
	size_t i;
	int r;

	for (r = 0; r < _SHIM_RLIMIT_MAX; r++)
		if (o->rlimit_set & (1u << r)) {
			strvec_pushf(argv, "--rlimit-%s", rlimits[r].name);
			strvec_pushf(argv, "%" PRIu64, o->rlimit[r]);
		}
	for (i = 0; i < o->landlock_rw.nr; i++) {
		strvec_push(argv, "--landlock-rw");
		strvec_push(argv, o->landlock_rw.v[i]);
	}
	for (i = 0; i < o->landlock_ro.nr; i++) {
		strvec_push(argv, "--landlock-ro");
		strvec_push(argv, o->landlock_ro.v[i]);
	}
	if (o->landlock_best_effort)
		strvec_push(argv, "--landlock-best-effort");
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

/* Mark every fd above 2 close-on-exec: the agent sees only 0, 1 and 2 even
 * when the shim is started by hand from a shell that leaks fds. */
static int cloexec_from_3(void)
{
	DIR *d;
	struct dirent *de;
	int dfd;

	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL)
		return -errno;
	/* Kernels before 5.11: walk /proc/self/fd. */
	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		int fl;

		if (*end || end == de->d_name || fd < 3 || fd == dfd)
			continue;
		fl = fcntl((int)fd, F_GETFD);
		if (fl >= 0)
			(void)fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC);
	}
	(void)closedir(d);
	return 0;
}

static int apply_rlimits(const struct shim_opts *o, struct diag *reterr)
{
	int i;

	for (i = 0; i < _SHIM_RLIMIT_MAX; i++) {
		struct rlimit rl;

		if (!(o->rlimit_set & (1u << i)))
			continue;
		rl.rlim_cur = rl.rlim_max = o->rlimit[i] >= (uint64_t)RLIM_INFINITY
						    ? RLIM_INFINITY
						    : (rlim_t)o->rlimit[i];
		if (setrlimit(rlimits[i].resource, &rl) < 0) {
			int r = -errno;

			diag_set(reterr, NULL, 0, 0, "cannot set rlimit %s to %" PRIu64 ": %s",
				 rlimits[i].name, o->rlimit[i], strerror(-r));
			return r;
		}
	}
	return 0;
}

int shim_setup(const struct shim_opts *o, struct shim_report *ret, enum shim_stage *ret_stage,
	       struct diag *reterr)
{
	struct shim_report rep = {0};
	enum shim_stage stage;
	pid_t parent = o->parent_pid > 0 ? o->parent_pid : getppid();
	int r;

	stage = SHIM_STAGE_PARENT;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot set the parent-death signal: %s",
			 strerror(-r));
		goto fail;
	}
	/* The parent may have died before the prctl: then we were re-parented
	 * (to init or a subreaper) and the death signal will never come. */
	if (getppid() != parent) {
		r = -ESRCH;
		diag_set(reterr, NULL, 0, 0, "parent process %ld is gone", (long)parent);
		goto fail;
	}

	stage = SHIM_STAGE_FDS;
	r = cloexec_from_3();
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot mark inherited fds close-on-exec: %s",
			 strerror(-r));
		goto fail;
	}

	stage = SHIM_STAGE_RLIMIT;
	r = apply_rlimits(o, reterr);
	if (r < 0)
		goto fail;

	stage = SHIM_STAGE_LANDLOCK;
	if (o->landlock_rw.nr || o->landlock_ro.nr) {
		r = landlock_restrict(o->landlock_rw.v, o->landlock_ro.v, &rep.landlock_abi,
				      reterr);
		if (r == -EOPNOTSUPP && o->landlock_best_effort) {
			rep.landlock_skipped = true;
			r = 0;
		}
		if (r < 0)
			goto fail;
	}
	if (ret)
		*ret = rep;
	return 0;
fail:
	shim_report_failure(o, stage, -r);
	if (ret_stage)
		*ret_stage = stage;
	return r;
}

int shim_exec(const struct shim_opts *o, const char *path, char *const argv[], char *const envp[])
{
	/* A kernel struct sigaction of zeros is SIG_DFL, no flags, an empty
	 * mask, whatever the architecture's field order. */
	unsigned long kact[8] = {0};
	sigset_t none;
	int sig, r;

	/* Default dispositions: ignored signals survive execve, bernstein
	 * itself ignores SIGPIPE, and glibc's posix_spawn leaves its internal
	 * signals (32, 33) ignored. glibc's sigaction() refuses those two, so
	 * this goes to the kernel directly. Caught signals are reset by execve
	 * anyway. */
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, sig, kact, NULL, (size_t)(_NSIG / 8));
	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);

	(void)execve(path, argv, envp);
	r = -errno;
	shim_report_failure(o, SHIM_STAGE_EXEC, -r);
	return r;
}
