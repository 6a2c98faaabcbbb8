#include "proc/spawn.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/landlock.h"
#include "proc/pty.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/xalloc.h"

static const char *const state_names[_PROC_STATE_MAX] = {
	[PROC_STARTING] = "starting",	    [PROC_RUNNING] = "running",
	[PROC_TERMINATING] = "terminating", [PROC_KILLING] = "killing",
	[PROC_DRAINING] = "draining",	    [PROC_EXITED] = "exited",
	[PROC_SETTLING] = "settling",
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
 * when owned. Keeps the child-side fds clear of the dup2 targets 0-2, so no
 * dup2 in the child overwrites another's source. */
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
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	/* Only the parent's read end is non-blocking; the child's write end
	 * stays blocking, as a program expects of its stdout. */
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	return fd_move_above(&fds[1], STDERR_FILENO + 1, true);
}

static void close_pair(int fds[2])
{
	close_fdp(&fds[0]);
	close_fdp(&fds[1]);
}

/* What the child needs, all of it prepared by the parent; the child writes
 * back which step failed. Shared memory: the parent is suspended until the
 * child has called execve or exited. */
struct child {
	const char *path;
	char *const *argv, *const *envp;
	const char *cwd;
	int in_fd, out_fd, err_fd; /* -1: /dev/null for stdin, inherit for stdout/stderr */
	bool new_session;
	bool ctty;	      /* in_fd is a pty's slave: make it the controlling terminal */
	const int *procs_fds; /* the cgroups to enter (cgroup.procs), n_procs of them */
	unsigned n_procs;
	bool new_ns; /* started in new PID and mount namespaces: mount its /proc */
	/* bernstein's init exec'd in place of the program (spec.init_exe):
	 * its path and argv, and the write end of the wait-status pipe, which
	 * becomes its fd 3 */
	const char *init_path;
	char *const *init_argv;
	int status_fd;
	struct shim_plan *plan;
	enum shim_stage stage;	 /* out: SHIM_STAGE_NONE, or the step that failed */
	int err;		 /* out: its errno */
	const char *contain_why; /* out: the SHIM_STAGE_CONTAIN step that failed */
};

VFORK_SAFE static int child_dup(int fd, int target)
{
	if (fd >= 0 && dup2(fd, target) < 0)
		return -errno;
	return 0;
}

VFORK_SAFE static int child_stdio(const struct child *c)
{
	int r;

	if (c->in_fd < 0) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		if (fd == STDIN_FILENO) {
			/* the parent's stdin was closed: it stays where it landed */
			r = fcntl(fd, F_SETFD, 0) < 0 ? -errno : 0;
		} else {
			r = child_dup(fd, STDIN_FILENO);
			(void)close(fd);
		}
	} else {
		r = child_dup(c->in_fd, STDIN_FILENO);
	}
	if (r == 0)
		r = child_dup(c->out_fd, STDOUT_FILENO);
	if (r == 0)
		r = child_dup(c->err_fd, STDERR_FILENO);
	return r;
}

/* The child: the shim's steps (proc/shim.h), then execve. Returns only by
 * exiting: 127/126/125 with c->stage and c->err set. */
VFORK_SAFE static int child_main(void *arg)
{
	struct child *c = arg;
	enum shim_stage stage = SHIM_STAGE_CONTAIN;
	int r;

	/* first of all: whatever happens next happens inside */
	r = contain_child_enter(c->procs_fds, c->n_procs);
	if (r < 0) {
		c->contain_why = "cannot enter its cgroup";
		goto fail;
	}
	if (c->new_ns) {
		r = contain_child_ns();
		if (r < 0) {
			c->contain_why = "cannot mount its /proc";
			goto fail;
		}
		/* the rules were built on the old /proc: read of the new one */
		if (c->plan->ruleset_fd >= 0 && c->plan->landlock_proc) {
			r = landlock_allow_ro_now(c->plan->ruleset_fd, c->plan->landlock_abi,
						  "/proc");
			if (r < 0) {
				c->contain_why = "cannot let Landlock read its /proc";
				goto fail;
			}
		}
	}
	stage = SHIM_STAGE_SPAWN;
	if (c->new_session ? setsid() < 0 : setpgid(0, 0) < 0) {
		r = -errno;
		goto fail;
	}
	if (c->ctty && (r = pty_child_ctty(c->in_fd)) < 0)
		goto fail;
	r = child_stdio(c);
	if (r == 0 && c->cwd && chdir(c->cwd) < 0)
		r = -errno;
	if (r < 0)
		goto fail;
	r = shim_apply(c->plan, &stage);
	if (r < 0)
		goto fail;
	if (c->plan->landlock_skipped) {
		static const char warn[] =
			"bernstein: warning: landlock is not supported by this kernel, running unconfined\n";

		(void)!write(STDERR_FILENO, warn, sizeof(warn) - 1);
	}
	/* Only 0, 1 and 2 reach the program, even an fd the parent opened
	 * without O_CLOEXEC (the ruleset and the pipes' originals go too). */
	stage = SHIM_STAGE_FDS;
	if (c->init_path) {
		/* the init's fd 3: the wait-status pipe (open across its exec) */
		if (c->status_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(c->status_fd, 3) < 0) {
			r = -errno;
			goto fail;
		}
		r = shim_fds_from(4, true);
	} else {
		r = shim_fds_from_3(true);
	}
	if (r < 0)
		goto fail;
	shim_reset_signals();
	stage = SHIM_STAGE_EXEC;
	if (c->init_path) {
		(void)execve(c->init_path, c->init_argv, c->envp);
		/* no init to be had (its binary gone): the program as pid 1,
		 * as without one; the parent reads no status and takes the
		 * real one */
		(void)close(3);
	}
	(void)execve(c->path, c->argv, c->envp);
	r = -errno;
fail:
	c->stage = stage;
	c->err = -r;
	_exit(shim_exit_code(stage, -r));
}

/* The message for a step that failed in the child. */
static void child_diag(const struct proc_spec *spec, const struct child *c, struct diag *reterr)
{
	char msg[256];

	switch (c->stage) {
	case SHIM_STAGE_SPAWN:
		if (spec->cwd && access(spec->cwd, X_OK) < 0) {
			diag_set(reterr, NULL, 0, 0, "cannot change to '%s': %s", spec->cwd,
				 strerror(errno));
			break;
		}
		diag_set(reterr, NULL, 0, 0, "cannot set up the process for '%s': %s", c->path,
			 strerror(c->err));
		break;
	case SHIM_STAGE_FDS:
		diag_set(reterr, NULL, 0, 0, "cannot close inherited fds for '%s': %s", c->path,
			 strerror(c->err));
		break;
	case SHIM_STAGE_EXEC:
		diag_set(reterr, NULL, 0, 0, "cannot execute '%s': %s", c->path, strerror(c->err));
		break;
	case SHIM_STAGE_CONTAIN:
		diag_set(reterr, NULL, 0, 0, "cannot contain '%s': %s: %s", c->path,
			 c->contain_why ? c->contain_why : "?", strerror(c->err));
		break;
	default:
		diag_set(reterr, NULL, 0, 0, "%s",
			 shim_failure_message(c->plan, c->stage, c->err, msg, sizeof(msg)));
		break;
	}
}

/* The child's stdio: pipes for stdout and stderr as the flags say, stdin from
 * the spec (moved above 2), else /dev/null (the child opens it). */
static int open_stdio(const struct proc_spec *spec, int out[2], int err[2], int *in)
{
	int r;

	if ((spec->flags & SPAWN_PIPE_STDOUT) && (r = make_pipe(out)) < 0)
		return r;
	if ((spec->flags & SPAWN_PIPE_STDERR) && (r = make_pipe(err)) < 0)
		return r;
	if (spec->stdin_fd >= 0) {
		*in = spec->stdin_fd;
		r = fd_move_above(in, STDERR_FILENO + 1, false);
		if (r < 0) {
			*in = -1;
			return r;
		}
	}
	return 0;
}

/* spec.pty: the master reads as stdout (out[0]); the slave (*in, also
 * out[1] and err[1], not owned there) is the child's 0, 1 and 2. */
static int open_pty(const struct proc_spec *spec, int out[2], int err[2], int *in)
{
	unsigned rows, cols;
	int r;

	ptydrive_rows_cols(spec->pty, &rows, &cols);
	r = pty_open(rows, cols, &out[0], in);
	if (r < 0)
		return r;
	out[1] = *in;
	err[1] = *in;
	return 0;
}

static int check_command(const struct proc_spec *spec, struct diag *reterr)
{
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
	return 0;
}

/* Its cgroups: for the limits, and to kill it whole in the cgroup tier;
 * procs[] their cgroup.procs, moved above 2. */
static int spawn_cgroup(const struct proc_spec *spec, const struct contain_host *host,
			enum contain_tier tier, struct contain_cg **cg, int *procs,
			struct diag *reterr)
{
	unsigned i;
	int r;

	if (!contain_limits_any(&spec->limits) && tier != CONTAIN_CGROUP)
		return 0;
	r = contain_cg_create(host, spec->cgroup_name, &spec->limits, tier == CONTAIN_CGROUP, cg,
			      procs, reterr);
	for (i = 0; r == 0 && *cg && i < (*cg)->n; i++)
		r = fd_move_above(&procs[i], STDERR_FILENO + 1, true);
	if (r < 0 && (!reterr || !reterr->msg[0]))
		diag_set(reterr, NULL, 0, 0, "cannot contain '%s': %s", spec->argv.v[0],
			 strerror(-r));
	return r;
}

/* The pid-namespace tier: its parent is outside its namespace (getppid()
 * is 0 there), so the child checks a pidfd of this process (*pidfd)
 * instead; *flags get the namespaces. */
static int spawn_pidns(const struct proc_spec *spec, const struct contain_host *host,
		       struct shim_plan *plan, int *flags, int *pidfd, struct diag *reterr)
{
	int r = 0;

	*flags |= CLONE_NEWPID | CLONE_NEWNS | (host->userns ? CLONE_NEWUSER : 0);
	*pidfd = pidfd_open(getpid(), 0);
	if (*pidfd < 0 || (r = fd_move_above(pidfd, STDERR_FILENO + 1, true)) < 0) {
		r = *pidfd < 0 ? -errno : r;
		*pidfd = -1;
		diag_set(reterr, NULL, 0, 0, "cannot contain '%s': pidfd_open: %s", spec->argv.v[0],
			 strerror(-r));
		return r;
	}
	plan->parent_pid = 0;
	plan->parent_pidfd = *pidfd;
	return 0;
}

/* bernstein's init for spec (spec.init_exe): the wait-status pipe (the read
 * end non-blocking; the write end above 3, or dup2() to 3 in the child
 * would be a no-op that keeps its close-on-exec), and its argv. */
static int init_prepare(const struct proc_spec *spec, int status[2], struct strvec *argv)
{
	size_t i;
	int r;

	if (pipe2(status, O_CLOEXEC) < 0)
		return -errno;
	(void)fcntl(status[0], F_SETFL, O_NONBLOCK);
	r = fd_move_above(&status[1], 3, true);
	if (r < 0)
		return r;
	strvec_push(argv, spec->init_exe);
	strvec_push(argv, "shim");
	strvec_push(argv, "--init");
	strvec_pushf(argv, "--grace-ms=%" PRIu64,
		     spec->kill_grace_ms ? spec->kill_grace_ms
					 : (uint64_t)PROC_DEFAULT_KILL_GRACE_MS);
	strvec_push(argv, "--wait-status-fd=3");
	strvec_push(argv, "--");
	for (i = 0; i < spec->argv.nr; i++)
		strvec_push(argv, spec->argv.v[i]);
	return 0;
}

/* Stack of the child until its execve: a few frames of system calls. */
#define CHILD_STACK_SIZE (64 * 1024)

/* clone() with c on a fresh stack; the parent is back when the child has
 * called execve or exited. */
static int clone_child(struct child *c, int flags, pid_t *ret_pid)
{
	sigset_t all, old;
	void *stack;
	pid_t pid;
	int r;

	stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	/* No handler of the parent may run in the child, which shares its
	 * memory: everything is blocked until the child has reset the
	 * dispositions (shim_reset_signals) and until clone() is back here. */
	(void)sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, &old);
	pid = clone(child_main, (char *)stack + CHILD_STACK_SIZE, flags, c);
	r = pid < 0 ? -errno : 0;
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	(void)munmap(stack, CHILD_STACK_SIZE);
	*ret_pid = pid;
	return r;
}

int proc_spawn(const struct proc_spec *spec, struct proc *ret, struct diag *reterr)
{
	const struct contain_host *host = contain_host();
	struct shim_plan plan = SHIM_PLAN_INIT;
	struct child c = {0};
	struct contain_cg *cg = NULL;
	enum contain_tier tier = contain_effective(host, spec->contain);
	int out[2] = {-1, -1}, err[2] = {-1, -1}, in = -1, pidfd = -1, status[2] = {-1, -1};
	struct strvec init_argv = STRVEC_INIT;
	bool pty = spec->pty && spec->pty->declared;
	int procs[CONTAIN_HIER_MAX], flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
	unsigned i;
	pid_t pid = -1;
	int r;

	*ret = (struct proc)PROC_INIT;
	for (i = 0; i < CONTAIN_HIER_MAX; i++)
		procs[i] = -1;
	r = check_command(spec, reterr);
	if (r < 0)
		return r;

	r = shim_prepare(&spec->shim, getpid(), &plan, reterr);
	if (r < 0) {
		ret->failed_stage = SHIM_STAGE_LANDLOCK;
		ret->start_errno = -r;
		return r;
	}
	r = spawn_cgroup(spec, host, tier, &cg, procs, reterr);
	if (r >= 0 && tier == CONTAIN_PIDNS)
		r = spawn_pidns(spec, host, &plan, &flags, &pidfd, reterr);
	if (r < 0) {
		ret->failed_stage = SHIM_STAGE_CONTAIN;
		ret->start_errno = -r;
		goto out;
	}
	r = pty ? open_pty(spec, out, err, &in) : open_stdio(spec, out, err, &in);
	if (r < 0)
		goto fail_errno;
	if (spec->init_exe && tier == CONTAIN_PIDNS) {
		r = init_prepare(spec, status, &init_argv);
		if (r < 0)
			goto fail_errno;
		c.init_path = spec->init_exe;
		c.init_argv = (char *const *)(uintptr_t)init_argv.v;
		c.status_fd = status[1];
	}

	c.path = spec->argv.v[0];
	c.argv = (char *const *)(uintptr_t)spec->argv.v;
	c.envp = (char *const *)(uintptr_t)spec->env.v;
	c.cwd = spec->cwd;
	c.in_fd = in;
	c.out_fd = out[1];
	c.err_fd = err[1];
	c.new_session = pty || (spec->flags & SPAWN_NEW_SESSION);
	c.ctty = pty;
	c.procs_fds = procs;
	c.n_procs = cg ? cg->n : 0;
	c.new_ns = tier == CONTAIN_PIDNS;
	c.plan = &plan;
	c.stage = SHIM_STAGE_NONE;

	r = clone_child(&c, flags, &pid);
	if (r < 0)
		goto fail_errno;

	if (c.stage != SHIM_STAGE_NONE) {
		/* It has exited already (CLONE_VFORK): reap it here, so that no
		 * one else sees a child that never ran. */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		child_diag(spec, &c, reterr);
		ret->failed_stage = c.stage;
		ret->start_errno = c.err;
		r = -c.err;
		goto out;
	}

	ret->pid = pid;
	ret->out_fd = out[0];
	ret->err_fd = err[0];
	out[0] = err[0] = -1;
	ret->state = PROC_RUNNING;
	ret->failed_stage = SHIM_STAGE_NONE;
	ret->timeout_ms = spec->timeout_ms;
	ret->path = xstrdup(spec->argv.v[0]);
	ret->tier = tier;
	ret->cg = cg;
	cg = NULL;
	if (c.init_path) {
		ret->init = true;
		ret->init_status_fd = status[0];
		status[0] = -1;
	}
	r = 0;
	goto out;

fail_errno:
	diag_set(reterr, NULL, 0, 0, "cannot set up the process for '%s': %s", spec->argv.v[0],
		 strerror(-r));
	ret->failed_stage = SHIM_STAGE_SPAWN;
	ret->start_errno = -r;
out:
	shim_plan_release(&plan);
	if (pty)
		out[1] = err[1] = -1; /* both are in, closed below */
	close_pair(out);
	close_pair(err);
	close_pair(status);
	strvec_clear(&init_argv);
	close_fdp(&in);
	close_fdp(&pidfd);
	for (i = 0; i < CONTAIN_HIER_MAX; i++)
		close_fdp(&procs[i]);
	if (cg) {
		(void)contain_cg_remove(cg);
		contain_cg_free(cg);
	}
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
	if (p->init) {
		/* the init exited (not killed): the agent's own status, which it
		 * wrote before (none: the init did not start it, or this is an
		 * agent in place of an init that could not be exec'd) */
		int32_t w;

		if (p->init_status_fd >= 0 && WIFEXITED(wstatus) &&
		    read(p->init_status_fd, &w, sizeof(w)) == (ssize_t)sizeof(w))
			wstatus = w;
		close_fdp(&p->init_status_fd);
	}
	p->exited = true;
	if (WIFEXITED(wstatus)) {
		p->exit_code = WEXITSTATUS(wstatus);
		p->term_signal = 0;
	} else if (WIFSIGNALED(wstatus)) {
		p->term_signal = WTERMSIG(wstatus);
		p->exit_code = 128 + p->term_signal;
	}
}

/* Does sig end a process that neither catches nor ignores it? */
static bool sig_terminates(int sig)
{
	switch (sig) {
	case SIGCHLD:
	case SIGCONT:
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
	case SIGURG:
	case SIGWINCH:
		return false;
	default:
		return sig > 0;
	}
}

bool proc_group_alive(const struct proc *p)
{
	return p->pid > 0 && (kill(-p->pid, 0) == 0 || errno == EPERM);
}

int proc_kill_group(const struct proc *p, int sig)
{
	int r = 0;

	if (p->pid <= 0)
		return -ESRCH;
	if (kill(-p->pid, sig) < 0 && errno != ESRCH)
		r = -errno;
	/* the init of a PID namespace ignores a signal it has no handler for,
	 * even from outside; what the signal would have done is SIGKILL (its
	 * pid cannot have been reused: it is not reaped) */
	if (p->tier == CONTAIN_PIDNS && !p->init && !p->exited && sig != SIGKILL &&
	    sig_terminates(sig) && contain_init_default_action(p->pid, sig))
		(void)kill(p->pid, SIGKILL);
	if (sig == SIGKILL && p->cg)
		(void)contain_cg_kill(p->cg);
	return r;
}

void proc_contain_end(struct proc *p)
{
	if (!p->cg)
		return;
	p->oom_kills = contain_cg_oom_kills(p->cg);
	p->memory_hit = contain_cg_memory_hit(p->cg);
	if (contain_cg_remove(p->cg) < 0)
		log_debug("pid %ld: its cgroups stay behind", (long)p->pid);
	p->cg = contain_cg_free(p->cg);
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
	p->state = PROC_EXITED;
	return 0;
}

void proc_release(struct proc *p)
{
	if (!p)
		return;
	proc_contain_end(p);
	close_fdp(&p->out_fd);
	close_fdp(&p->err_fd);
	if (p->init)
		close_fdp(&p->init_status_fd);
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
				(void)snprintf(
					buf, size,
					"cannot confine '%s': the kernel does not support landlock",
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
