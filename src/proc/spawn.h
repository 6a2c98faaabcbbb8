/* Spawning one agent, the way posix_spawn does it (clone with CLONE_VM |
 * CLONE_VFORK, never fork, never a shell): contained (proc/contain.h: as
 * pid 1 of PID and mount namespaces of its own with a fresh /proc, or in a
 * cgroup of its own, whatever the host allows; with its resource limits in
 * cgroups), in a new session, stdin on
 * /dev/null (or a given fd), stdout/stderr on pipes, every other fd closed,
 * exactly the given environment, and, in the child before execve, the shim's
 * steps (proc/shim.h): the parent-death signal, rlimits, Landlock, default
 * signal dispositions and an empty mask. No program runs between the
 * supervisor and the agent: the pid is the agent's from the start.
 *
 * Every failure to start (a missing binary or cwd, an rlimit, Landlock) is
 * known when proc_spawn() returns (CLONE_VFORK: the parent waits for the
 * child's execve), and reported then.
 *
 * A struct proc is the runtime handle; the supervisor (proc/supervise.h)
 * drives it, but proc_spawn() + proc_wait() also work on their own. */
#ifndef BERNSTEIN_PROC_SPAWN_H
#define BERNSTEIN_PROC_SPAWN_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/contain.h"
#include "proc/ptydrive.h"
#include "proc/shim.h"
#include "util/diag.h"
#include "util/strvec.h"

enum spawn_flags {
	SPAWN_NEW_SESSION = 1 << 0, /* setsid(); without it the child still gets its own group */
	SPAWN_PIPE_STDOUT = 1 << 1, /* else stdout is inherited */
	SPAWN_PIPE_STDERR = 1 << 2, /* else stderr is inherited */
};
#define SPAWN_DEFAULT (SPAWN_NEW_SESSION | SPAWN_PIPE_STDOUT | SPAWN_PIPE_STDERR)

#define PROC_DEFAULT_MAX_LINE	   (1024 * 1024) /* bytes, excluding the newline */
#define PROC_DEFAULT_KILL_GRACE_MS 5000

/* The life of one task (the rows of the supervisor's state table). */
enum proc_state {
	PROC_STARTING,	  /* accepted; proc_spawn not yet done */
	PROC_RUNNING,	  /* the agent runs */
	PROC_TERMINATING, /* SIGTERM sent to the group (timeout or cancel); grace running */
	PROC_KILLING,	  /* SIGKILL sent to the group; waiting for the exit */
	PROC_DRAINING,	  /* the agent was reaped; reading its pipes until EOF or the grace ends */
	PROC_EXITED,	  /* final: on_exit() has the result */
	PROC_SETTLING,	  /* reaped, its pipes at EOF; the rest of its group (SIGTERMed)
			   * is given the grace to end before the SIGKILL */
	_PROC_STATE_MAX,
	_PROC_STATE_INVALID = -EINVAL,
};

struct proc_spec {
	struct strvec argv; /* the agent's argv; argv[0] absolute (resolved on PATH BEFORE) */
	struct strvec env;  /* the complete environment (never environ) */
	const char *cwd;    /* the task's worktree; NULL = inherit (borrowed) */
	int stdin_fd;	    /* -1 = /dev/null; else owned by the spec (closed on release) */
	enum spawn_flags flags;
	uint64_t timeout_ms;	/* 0 = none; enforced by the supervisor */
	uint64_t kill_grace_ms; /* SIGTERM to the group, then SIGKILL after this; 0 = default */
	/* Supervisor-only fields (proc_spawn() ignores them). */
	const char *log_path;	/* per-task log of both streams' lines; NULL = none (borrowed) */
	size_t max_line;	/* line cap; 0 = PROC_DEFAULT_MAX_LINE */
	uint64_t max_log_bytes; /* log file cap; 0 = unlimited */
	/* The hooks channel: a listening AF_UNIX stream socket (proc/usock.h) whose
	 * connections' lines go to on_line() with stream PROC_STREAM_SOCKET,
	 * framed and capped like the pipes but not logged; -1 = none. Owned by
	 * the spec until the supervisor takes it (it closes it when the task
	 * ends); proc_spec_release() closes it otherwise. */
	int listen_fd;
	/* rlimits and Landlock, applied in the child (status_fd and parent_pid
	 * are not used: proc_spawn() knows its own pid and reports failures
	 * itself) */
	struct shim_opts shim;
	/* Containment: the strongest tier allowed (CONTAIN_AUTO: what the host
	 * allows, contain_host()), the limits of the child and all it starts
	 * (in cgroups; a host that cannot enforce one fails the spawn with
	 * SHIM_STAGE_CONTAIN), and a name for its cgroups (optional, borrowed). */
	enum contain_tier contain;
	struct contain_limits limits;
	const char *cgroup_name;
	/* The stall watchdog (supervisor): nothing read from stdout, stderr or
	 * the hooks socket for this long (since the start or the last bytes)
	 * -> stopped as at timeout_ms, with stalled set; 0 = none. */
	uint64_t idle_timeout_ms;
	/* A pseudo-terminal instead of pipes (proc/pty.h), when pty is set and
	 * declared: its size from pty, the agent in a new session with it as
	 * controlling terminal and stdio (stdin_fd and the pipe flags are not
	 * used); proc.out_fd is the master. The supervisor reads the screen
	 * with a proc/ptydrive.h driver: pty_prompt is typed, pty_allow is the
	 * task's answer to permission prompts. Borrowed; they must outlive the
	 * task. */
	const struct ptydrive_conf *pty;
	const char *pty_prompt;
	bool pty_allow;
	/* In the pidns tier: the absolute path of bernstein itself, run as the
	 * namespace's init (`bernstein shim --init --grace-ms KILL_GRACE
	 * --wait-status-fd 3 -- ARGV`) with the agent as its child, so that
	 * what the agent leaves behind gets SIGTERM and the grace at its exit
	 * instead of the kernel's SIGKILL, and a program that does not catch
	 * SIGTERM is not an init that ignores it; the agent's own wait status
	 * is read back at the exit (docs/supervision.md). NULL, or another
	 * tier: the agent is exec'd directly. Borrowed. */
	const char *init_exe;
};

#define PROC_SPEC_INIT                                                                             \
	{                                                                                          \
		.argv = STRVEC_INIT, .env = STRVEC_INIT, .stdin_fd = -1, .flags = SPAWN_DEFAULT,   \
		.listen_fd = -1, .shim = SHIM_OPTS_INIT,                                           \
	}

void proc_spec_init(struct proc_spec *spec);
/* Frees argv, env and the shim options, closes stdin_fd and listen_fd; back to
 * PROC_SPEC_INIT. */
void proc_spec_release(struct proc_spec *spec);

struct proc {
	pid_t pid;  /* == the process group id (new session); -1 before spawn */
	int out_fd; /* parent ends: O_CLOEXEC|O_NONBLOCK, -1 if not piped (or closed) */
	int err_fd;
	enum proc_state state;	      /* maintained by the supervisor */
	int exit_code;		      /* as a shell reports it: code, 128+signal, or 125/126/127 */
	int term_signal;	      /* the signal that killed it, 0 if it exited */
	bool timed_out;		      /* the supervisor's deadline fired */
	bool cancelled;		      /* the supervisor was told to stop (SIGINT/SIGTERM/SIGHUP) */
	bool exited;		      /* the agent (or shim) was reaped; exit_code is valid */
	enum shim_stage failed_stage; /* SHIM_STAGE_NONE unless the agent could not start */
	int start_errno;	      /* errno of failed_stage */
	uint64_t timeout_ms;	      /* copied from the spec, for messages */
	uint64_t start_ms, end_ms, deadline_ms; /* CLOCK_MONOTONIC ms (supervisor) */
	uint64_t output_bytes;			/* bytes read from stdout and stderr (supervisor) */
	uint64_t last_output_ms;  /* CLOCK_MONOTONIC ms of the last bytes read; 0 none yet */
	uint64_t timeout_idle_ms; /* timed_out: ms without output (since the last bytes, or
				   * the start) when the deadline fired */
	char *path;		  /* the agent's argv[0] (owned) */
	char *start_error;	  /* why it could not start, when known (owned), else NULL */
	enum contain_tier tier;	  /* how it is contained (CONTAIN_PIDNS: pid is the outer
				   * pid of its namespace's init) */
	struct contain_cg *cg;	  /* its cgroups, NULL none (owned until proc_contain_end) */
	uint64_t oom_kills;	  /* processes of it the kernel's OOM killer killed over its
				   * memory limit (proc_contain_end) */
	bool memory_hit;	  /* its memory limit was reached (proc_contain_end) */

	/* the stall watchdog (supervisor): idle_timeout_ms copied from the
	 * spec (0 none), the last bytes read from a pipe or the hooks socket,
	 * and whether it fired (then timed_out is set too) */
	uint64_t idle_timeout_ms;
	uint64_t last_activity_ms;
	bool stalled;

	/* spec.init_exe in the pidns tier: pid is the outer pid of bernstein's
	 * init, not of the agent; init_status_fd (valid when init) the read
	 * end where the init writes the agent's wait status */
	bool init;
	int init_status_fd;
};

#define PROC_INIT                                                                                  \
	{                                                                                          \
		.pid = -1, .out_fd = -1, .err_fd = -1,                                             \
	}

/* Start spec's agent. On success *ret is filled (state PROC_RUNNING). On
 * failure returns a negative errno (-ENOENT: the binary or cwd is missing,
 * -EACCES, -EINVAL for an empty argv or a relative argv[0], -EPERM for an
 * rlimit above the hard limit...) with the reason in reterr, and *ret is
 * PROC_INIT but for failed_stage and start_errno: the step that failed
 * (SHIM_STAGE_SPAWN for the process itself, SHIM_STAGE_EXEC for execve,
 * SHIM_STAGE_RLIMIT, SHIM_STAGE_LANDLOCK...). No child is left behind. */
int proc_spawn(const struct proc_spec *spec, struct proc *ret, struct diag *reterr);

/* Record a failure to start: exit_code 127, 126 or 125 from stage and err;
 * msg (optional, copied) is the diag message of proc_spawn(). */
void proc_set_start_failure(struct proc *p, enum shim_stage stage, int err, const char *msg);
/* Record a waitpid() status. */
void proc_set_wait_status(struct proc *p, int wstatus);
/* kill(-pid, sig): the whole process group. ESRCH (group gone) counts as 0.
 * Contained: SIGKILL also kills its cgroups; another signal that ends a
 * process by default is followed by SIGKILL to the agent when it is the init
 * of its PID namespace and neither catches nor ignores sig (an init gets
 * only the signals it handles: SIGKILL is what sig would have done to it;
 * its namespace dies with it). */
int proc_kill_group(const struct proc *p, int sig);
/* Whether any process (a zombie included) is still in p's process group. */
bool proc_group_alive(const struct proc *p);
/* The task is over: records oom_kills, kills what is left in its cgroups and
 * removes them. Idempotent; proc_release() calls it. */
void proc_contain_end(struct proc *p);
/* Block until the process exits, then record its status (for use without a
 * supervisor). Returns 0 or a negative errno. */
int proc_wait(struct proc *p);
/* Closes the fds and frees path; proc_contain_end() if not done (which may
 * wait briefly for killed processes to leave their cgroup); never waits for
 * the process itself. */
void proc_release(struct proc *p);

/* One line saying how the agent ended:
 *   "exited with code 3", "killed by signal 9 (SIGKILL)",
 *   "timed out after 500 ms; killed by signal 9 (SIGKILL)",
 *   "cannot execute '/x': No such file or directory". */
const char *proc_describe_exit(const struct proc *p, char *buf, size_t size);

const char *proc_state_name(enum proc_state s);

#endif
