#include "proc/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/xalloc.h"

/* The fd the shim's status pipe gets in the child. */
#define SHIM_STATUS_FD 3

static const char *const state_names[_PROC_STATE_MAX] = {
	[PROC_STARTING] = "starting",	    [PROC_RUNNING] = "running",
	[PROC_TERMINATING] = "terminating", [PROC_KILLING] = "killing",
	[PROC_DRAINING] = "draining",	    [PROC_EXITED] = "exited",
};

const char *proc_state_name(enum proc_state s)
{
	return s >= 0 && s < _PROC_STATE_MAX ? state_names[s] : "?";
}

void proc_spec_init(struct proc_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	strvec_init(&spec->argv);
	strvec_init(&spec->env);
	spec->stdin_fd = -1;
	spec->listen_fd = -1;
	spec->flags = SPAWN_DEFAULT;
	shim_opts_init(&spec->shim);
}

void proc_spec_release(struct proc_spec *spec)
{
	if (!spec)
		return;
	strvec_clear(&spec->argv);
	strvec_clear(&spec->env);
	close_fdp(&spec->stdin_fd);
	close_fdp(&spec->listen_fd);
	shim_opts_release(&spec->shim);
	proc_spec_init(spec);
}

/* Make *fd a close-on-exec duplicate numbered >= min, closing the original
 * when owned. Keeps the child-side fds clear of the dup2 targets 0-3, so
 * no file action overwrites another's source. */
static int fd_move_above(int *fd, int min, bool owned)
{
	int nfd;

	if (*fd >= min && owned)
		return 0;
	nfd = fcntl(*fd, F_DUPFD_CLOEXEC, min);
	if (nfd < 0)
		return -errno;
	if (owned)
		(void)close(*fd);
	*fd = nfd;
	return 0;
}

static int make_pipe(int fds[2])
{
	int r;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	/* Only the parent's read end is non-blocking; the child's write end
	 * stays blocking, as a program expects of its stdout. */
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	r = fd_move_above(&fds[1], SHIM_STATUS_FD + 1, true);
	return r;
}

static void close_pair(int fds[2])
{
	close_fdp(&fds[0]);
	close_fdp(&fds[1]);
}

static void build_argv(const struct proc_spec *spec, bool status_pipe, struct strvec *argv)
{
	if (!spec->shim_exe) {
		strvec_pushv(argv, spec->argv.v);
		return;
	}
	strvec_push(argv, spec->shim_exe);
	strvec_push(argv, "shim");
	shim_opts_to_argv(&spec->shim, argv);
	if (status_pipe) {
		strvec_push(argv, "--status-fd");
		strvec_pushf(argv, "%d", SHIM_STATUS_FD);
	}
	strvec_push(argv, "--parent-pid");
	strvec_pushf(argv, "%ld", (long)getpid());
	strvec_push(argv, "--");
	strvec_pushv(argv, spec->argv.v);
}

/* posix_spawn says ENOENT for a missing binary and for a missing cwd alike:
 * find out which, for the message. */
static void spawn_diag(const struct proc_spec *spec, int err, struct diag *reterr)
{
	const char *agent = spec->argv.v[0];

	if (spec->cwd && access(spec->cwd, X_OK) < 0)
		diag_set(reterr, NULL, 0, 0, "cannot change to '%s': %s", spec->cwd,
			 strerror(errno));
	else if (spec->shim_exe && access(spec->shim_exe, X_OK) < 0)
		diag_set(reterr, NULL, 0, 0, "cannot execute the shim '%s': %s", spec->shim_exe,
			 strerror(errno));
	else
		diag_set(reterr, NULL, 0, 0, "cannot execute '%s': %s", agent, strerror(err));
}

int proc_spawn(const struct proc_spec *spec, struct proc *ret, struct diag *reterr)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct strvec argv = STRVEC_INIT;
	int out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1}, in = -1;
	bool fa_init = false, attr_init = false;
	bool use_status = spec->shim_exe != NULL;
	sigset_t set;
	short aflags;
	pid_t pid;
	int r;

	if (spec->argv.nr == 0 || !spec->argv.v[0][0]) {
		diag_set(reterr, NULL, 0, 0, "empty command");
		return -EINVAL;
	}
	if (spec->argv.v[0][0] != '/') {
		diag_set(reterr, NULL, 0, 0,
			 "'%s' is not an absolute path (resolve it on PATH first)",
			 spec->argv.v[0]);
		return -EINVAL;
	}

	if ((spec->flags & SPAWN_PIPE_STDOUT) && (r = make_pipe(out)) < 0)
		goto fail_errno;
	if ((spec->flags & SPAWN_PIPE_STDERR) && (r = make_pipe(err)) < 0)
		goto fail_errno;
	if (use_status && (r = make_pipe(st)) < 0)
		goto fail_errno;
	if (spec->stdin_fd >= 0) {
		in = spec->stdin_fd;
		r = fd_move_above(&in, SHIM_STATUS_FD + 1, false);
		if (r < 0) {
			in = -1;
			goto fail_errno;
		}
	}

	r = -posix_spawn_file_actions_init(&fa);
	if (r < 0)
		goto fail_errno;
	fa_init = true;
	if (in >= 0)
		r = -posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
	else
		r = -posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (r == 0 && out[1] >= 0)
		r = -posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	if (r == 0 && err[1] >= 0)
		r = -posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
	if (r == 0 && st[1] >= 0)
		r = -posix_spawn_file_actions_adddup2(&fa, st[1], SHIM_STATUS_FD);
	if (r == 0 && spec->cwd)
		r = -posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
	if (r == 0)
		r = -posix_spawn_file_actions_addclosefrom_np(&fa, st[1] >= 0 ? SHIM_STATUS_FD + 1
									      : SHIM_STATUS_FD);
	if (r < 0)
		goto fail_errno;

	r = -posix_spawnattr_init(&attr);
	if (r < 0)
		goto fail_errno;
	attr_init = true;
	aflags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	aflags |= (spec->flags & SPAWN_NEW_SESSION) ? POSIX_SPAWN_SETSID : POSIX_SPAWN_SETPGROUP;
	r = -posix_spawnattr_setflags(&attr, aflags);
	if (r == 0)
		r = -posix_spawnattr_setpgroup(&attr, 0);
	(void)sigemptyset(&set);
	if (r == 0)
		r = -posix_spawnattr_setsigmask(&attr, &set);
	(void)sigfillset(&set);
	if (r == 0)
		r = -posix_spawnattr_setsigdefault(&attr, &set);
	if (r < 0)
		goto fail_errno;

	build_argv(spec, use_status, &argv);
	r = -posix_spawn(&pid, argv.v[0], &fa, &attr, (char *const *)(uintptr_t)argv.v,
			 (char *const *)(uintptr_t)spec->env.v);
	if (r < 0) {
		spawn_diag(spec, -r, reterr);
		goto out;
	}

	memset(ret, 0, sizeof(*ret));
	ret->pid = pid;
	ret->out_fd = out[0];
	ret->err_fd = err[0];
	ret->status_fd = st[0];
	out[0] = err[0] = st[0] = -1;
	ret->state = PROC_RUNNING;
	ret->failed_stage = SHIM_STAGE_NONE;
	ret->timeout_ms = spec->timeout_ms;
	ret->path = xstrdup(spec->argv.v[0]);
	ret->start_error = NULL;
	r = 0;
	goto out;

fail_errno:
	diag_set(reterr, NULL, 0, 0, "cannot set up the process for '%s': %s", spec->argv.v[0],
		 strerror(-r));
out:
	if (fa_init)
		(void)posix_spawn_file_actions_destroy(&fa);
	if (attr_init)
		(void)posix_spawnattr_destroy(&attr);
	strvec_clear(&argv);
	close_pair(out);
	close_pair(err);
	close_pair(st);
	close_fdp(&in);
	return r;
}

void proc_set_start_failure(struct proc *p, enum shim_stage stage, int err, const char *msg)
{
	p->failed_stage = stage;
	p->start_errno = err;
	p->exit_code = shim_exit_code(stage, err);
	p->term_signal = 0;
	if (msg && *msg) {
		free(p->start_error);
		p->start_error = xstrdup(msg);
	}
}

void proc_set_wait_status(struct proc *p, int wstatus)
{
	p->exited = true;
	if (WIFEXITED(wstatus)) {
		p->exit_code = WEXITSTATUS(wstatus);
		p->term_signal = 0;
	} else if (WIFSIGNALED(wstatus)) {
		p->term_signal = WTERMSIG(wstatus);
		p->exit_code = 128 + p->term_signal;
	}
}

int proc_read_shim_status(struct proc *p)
{
	struct shim_status st;
	ssize_t n;

	if (p->status_fd < 0)
		return 1;
	do
		n = read(p->status_fd, &st, sizeof(st));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n < 0) {
		int r = -errno;

		close_fdp(&p->status_fd);
		return r;
	}
	if (n == (ssize_t)sizeof(st) && st.magic == SHIM_STATUS_MAGIC && st.stage > 0 &&
	    st.stage < _SHIM_STAGE_MAX) {
		p->failed_stage = (enum shim_stage)st.stage;
		p->start_errno = st.err;
	}
	close_fdp(&p->status_fd);
	return 1;
}

int proc_kill_group(const struct proc *p, int sig)
{
	if (p->pid <= 0)
		return -ESRCH;
	if (kill(-p->pid, sig) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}

int proc_wait(struct proc *p)
{
	int st;
	pid_t w;

	if (p->pid <= 0)
		return -ECHILD;
	do
		w = waitpid(p->pid, &st, 0);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	proc_set_wait_status(p, st);
	if (p->status_fd >= 0) {
		/* The shim is gone, so its end is closed: this cannot block
		 * for long, but the fd is non-blocking anyway. */
		(void)proc_read_shim_status(p);
	}
	if (p->failed_stage != SHIM_STAGE_NONE)
		p->exit_code = shim_exit_code(p->failed_stage, p->start_errno);
	p->state = PROC_EXITED;
	return 0;
}

void proc_release(struct proc *p)
{
	if (!p)
		return;
	close_fdp(&p->out_fd);
	close_fdp(&p->err_fd);
	close_fdp(&p->status_fd);
	free(p->path);
	p->path = NULL;
	free(p->start_error);
	p->start_error = NULL;
}

static const char *sig_name(int sig, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		(void)snprintf(buf, size, "SIG%s", abbrev);
	else
		(void)snprintf(buf, size, "signal %d", sig);
	return buf;
}

const char *proc_describe_exit(const struct proc *p, char *buf, size_t size)
{
	const char *path = p->path ? p->path : "?";
	char how[128], sname[32];

	if (p->failed_stage != SHIM_STAGE_NONE) {
		const char *e = strerror(p->start_errno);

		if (p->start_error) {
			(void)snprintf(buf, size, "%s", p->start_error);
			return buf;
		}
		switch (p->failed_stage) {
		case SHIM_STAGE_SPAWN:
		case SHIM_STAGE_EXEC:
			(void)snprintf(buf, size, "cannot execute '%s': %s", path, e);
			break;
		case SHIM_STAGE_RLIMIT:
			(void)snprintf(buf, size, "cannot set resource limits for '%s': %s", path,
				       e);
			break;
		case SHIM_STAGE_LANDLOCK:
			if (p->start_errno == EOPNOTSUPP)
				(void)snprintf(buf, size,
					       "cannot confine '%s': the kernel does not support "
					       "landlock",
					       path);
			else
				(void)snprintf(buf, size, "cannot confine '%s' with landlock: %s",
					       path, e);
			break;
		default:
			(void)snprintf(buf, size, "cannot start '%s' (%s): %s", path,
				       shim_stage_name(p->failed_stage), e);
			break;
		}
		return buf;
	}

	if (!p->exited)
		(void)snprintf(how, sizeof(how), "did not exit");
	else if (p->term_signal)
		(void)snprintf(how, sizeof(how), "killed by signal %d (%s)", p->term_signal,
			       sig_name(p->term_signal, sname, sizeof(sname)));
	else
		(void)snprintf(how, sizeof(how), "exited with code %d", p->exit_code);

	if (p->timed_out)
		(void)snprintf(buf, size, "timed out after %llu ms; %s",
			       (unsigned long long)p->timeout_ms, how);
	else if (p->cancelled)
		(void)snprintf(buf, size, "cancelled; %s", how);
	else
		(void)snprintf(buf, size, "%s", how);
	return buf;
}
