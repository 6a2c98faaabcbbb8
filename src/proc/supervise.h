/* The supervisor: one epoll loop, no threads, N children at once.
 *
 * Sources of the loop: every child's stdout and stderr pipe, a signalfd for
 * SIGCHLD, SIGINT, SIGTERM and SIGHUP, and a timeout equal to the nearest
 * deadline. PR_SET_CHILD_SUBREAPER is set while it runs, so orphaned
 * grandchildren come back to this process and are reaped (waitpid(-1) in a
 * loop; unknown pids are logged at debug level). While supervise() runs it
 * owns every child of the process: do not wait for other children meanwhile.
 *
 * Per child:
 *   - pipes are drained continuously (a child printing 1 GB never blocks on a
 *     full pipe; memory stays flat), framed into lines with a hard cap
 *     (spec.max_line): every complete line goes to on_line() (NUL-terminated,
 *     without its newline); the head of an oversized line goes to
 *     on_oversized() with its full length, and framing resumes after its
 *     newline; a last line without a newline is delivered at EOF;
 *   - the lines (oversized ones cut to their head) are appended to
 *     spec.log_path, whole lines at a time so stdout and stderr lines never
 *     split each other; at most spec.max_log_bytes are written (then draining
 *     continues, writing stops, and on_notice(PROC_NOTICE_LOG_CAPPED) fires once);
 *   - timeout: SIGTERM to the whole process group, kill_grace_ms, SIGKILL;
 *   - when the agent exits, the rest of its group gets SIGTERM; the task ends
 *     when its pipes reach EOF and its group is empty (or kill_grace_ms after
 *     the exit), and then anything left in its process group gets SIGKILL:
 *     what the agent left (a transcript writer, a git holding a lock) has
 *     the grace to finish on SIGTERM, as under systemd's stop.
 *
 * The hooks channel (optional, spec.listen_fd): a listening Unix socket
 * watched with the pipes. Each connection (an agent's hook command, e.g.
 * `bernstein hook-post`) is read like a pipe, framed into lines with the same
 * cap, and every line goes to on_line() with stream PROC_STREAM_SOCKET (the
 * head of an oversized one to on_oversized()); socket lines are not written
 * to log_path. At most PROC_MAX_SOCKET_CONNS connections are open at once
 * per task (more are refused and logged at debug level). Before a task
 * finishes, pending connections are accepted and drained, so what a hook
 * wrote before the agent exited is delivered.
 *
 * Liveness: struct proc counts the bytes read from stdout and stderr and the
 * time of the last read; when the deadline fires, timeout_idle_ms records
 * how long the output had not grown (adapter/outcome.h reports it for a
 * poll-pty agent). The stall watchdog (spec.idle_timeout_ms): a running
 * child from which nothing was read (pipes or hooks socket) for that long
 * gets the deadline event (TERM, grace, KILL, the whole group), with
 * p->stalled and p->timed_out set and PROC_NOTICE_STALLED.
 *
 * SIGINT, SIGTERM or SIGHUP cancels every child the same way (TERM, grace,
 * KILL); a second one kills at once. supervise() then returns -ECANCELED
 * once every child is reaped, so cli/ can exit 130.
 *
 * Control (optional, ops->on_watch): one more fd the loop watches
 * (opts.watch_fd, e.g. an epoll fd of a control channel's sockets). When it
 * is readable, on_watch() runs with the supervisor, and may call
 * supervise_cancel_task() (one task's child: the cancel event of the table,
 * so TERM, grace, KILL, and at the end the whole group and its cgroup, as for
 * a signal) or supervise_interrupt() (what SIGINT does); next_task is asked
 * again after it (a request may have made a task runnable). The loop still
 * ends when nothing runs and next_task has nothing: the watched fd alone
 * does not keep it alive.
 *
 * Each task's life is the table proc_transitions[state][event] below: the
 * supervisor looks the cell up for every event and runs its action. */
#ifndef BERNSTEIN_PROC_SUPERVISE_H
#define BERNSTEIN_PROC_SUPERVISE_H

#include <stddef.h>
#include <stdint.h>

#include "proc/spawn.h"
#include "util/clock.h"
#include "util/diag.h"

enum proc_event {
	PROC_EV_SPAWNED,       /* proc_spawn succeeded: the agent runs */
	PROC_EV_SPAWN_FAILED,  /* proc_spawn failed: it never ran */
	PROC_EV_EXITED,	       /* the agent (or the shim in its place) was reaped */
	PROC_EV_DEADLINE,      /* timeout_ms passed */
	PROC_EV_GRACE_EXPIRED, /* kill_grace_ms passed after SIGTERM, or after the exit */
	PROC_EV_CANCEL,	       /* the supervisor was interrupted */
	PROC_EV_LINE,	       /* a line (or an oversized line's head) was read */
	PROC_EV_EOF,	       /* both pipes reached EOF */
	PROC_EV_GROUP_GONE,    /* nothing is left in the agent's process group */
	_PROC_EVENT_MAX,
	_PROC_EVENT_INVALID = -EINVAL,
};

enum proc_action {
	PROC_ACT_INVALID, /* cannot happen: BUG() */
	PROC_ACT_IGNORE,  /* nothing to do */
	PROC_ACT_START,	  /* arm the deadline, call on_start() */
	PROC_ACT_FAIL,	  /* record 127/126/125; the task is over */
	PROC_ACT_REAPED,  /* record the status; SIGTERM the rest of the group, arm the
			   * grace; if the pipes are already closed, raise EOF */
	PROC_ACT_TERM,	  /* SIGTERM to the group, arm the grace */
	PROC_ACT_KILL,	  /* SIGKILL to the group */
	PROC_ACT_DELIVER, /* hand the line to on_line() / on_oversized() */
	PROC_ACT_FINISH,  /* SIGKILL what is left of the group, close the pipes: over */
	PROC_ACT_SETTLE,  /* the group empty: raise group_gone; else poll it until the grace */
	_PROC_ACTION_MAX,
};

struct proc_transition {
	enum proc_action action;
	enum proc_state next; /* entered before the action runs */
};

extern const struct proc_transition proc_transitions[_PROC_STATE_MAX][_PROC_EVENT_MAX];

const char *proc_event_name(enum proc_event e);
const char *proc_action_name(enum proc_action a);

/* The stream number of lines read from spec.listen_fd's connections (1 is
 * stdout, 2 stderr). */
#define PROC_STREAM_SOCKET 3
/* Connections open at once per task on spec.listen_fd. */
#define PROC_MAX_SOCKET_CONNS 32

enum proc_notice {
	PROC_NOTICE_TIMEOUT,	/* deadline hit: SIGTERM sent to the group (value: timeout ms) */
	PROC_NOTICE_KILL,	/* grace over: SIGKILL sent to the group (value: grace ms) */
	PROC_NOTICE_LOG_CAPPED, /* max_log_bytes reached; no more log writes (value: the cap) */
	PROC_NOTICE_LOG_ERROR,	/* opening or writing the log failed (value: errno); once */
	PROC_NOTICE_STALLED,	/* the stall watchdog fired (spec.idle_timeout_ms): SIGTERM
				 * sent to the group (value: idle_timeout_ms) */
	_PROC_NOTICE_MAX,
};

struct supervisor;

struct supervisor_ops {
	/* Fill spec (already PROC_SPEC_INIT) and *ret_task; return 1 to start
	 * it, 0 when there is nothing to start now (asked again after each exit;
	 * the loop ends when it says 0 and nothing runs), or a negative errno to
	 * stop: every child is cancelled and supervise() returns that errno. The
	 * supervisor releases the spec. */
	int (*next_task)(void *ctx, struct proc_spec *spec, void **ret_task);
	/* Optional: asked each time next_task says 0: in how many ms it may
	 * have a task after all (a retry waiting for its time), or < 0 for
	 * none. The loop asks next_task again then, or at the next exit if that
	 * comes first, and does not end meanwhile even when nothing runs. */
	int64_t (*wake_in_ms)(void *ctx);
	/* Optional: the agent was spawned (p->pid is valid). */
	void (*on_start)(void *ctx, void *task, const struct proc *p);
	/* Optional: one complete line; stream is 1 (stdout), 2 (stderr) or
	 * PROC_STREAM_SOCKET (a connection to spec.listen_fd; only when the spec
	 * gave one); line[len] == '\0'; the line may contain NUL bytes. */
	void (*on_line)(void *ctx, void *task, int stream, const char *line, size_t len);
	/* Optional: a line longer than max_line. head holds its first max_line
	 * bytes (NUL-terminated), total its full length without the newline. */
	void (*on_oversized)(void *ctx, void *task, int stream, const char *head, size_t head_len,
			     uint64_t total);
	/* Optional: see enum proc_notice. */
	void (*on_notice)(void *ctx, void *task, enum proc_notice notice, uint64_t value);
	/* Optional: called at the next turn of the loop after a child started,
	 * then when the time it asks for came: it returns in how many ms to be
	 * called again (the loop wakes for it while children run), or < 0 for
	 * not until another child starts. For work that follows what a child
	 * writes to files (the network proxy's refusals). */
	int64_t (*on_tick)(void *ctx);
	/* Required: the final state (exit_code, term_signal, timed_out,
	 * cancelled, failed_stage...). proc_describe_exit() renders it. */
	void (*on_exit)(void *ctx, void *task, const struct proc *p);
	/* Optional: opts.watch_fd is readable. sv is valid during the call only
	 * (for supervise_cancel_task(), supervise_interrupt()). */
	void (*on_watch)(void *ctx, struct supervisor *sv);
	/* Optional: asked at each turn of the loop; true does what SIGINT
	 * does (supervise_interrupt(): every child cancelled, -ECANCELED).
	 * For a stop the caller decides in another callback (a budget). */
	bool (*want_interrupt)(void *ctx);
	/* Optional: the task's child is about to get SIGTERM (its deadline,
	 * the stall watchdog or a cancel). The caller may ask the agent to
	 * stop on its own first (ACP's session/cancel) and return how many ms
	 * to wait for that before the SIGTERM; 0 sends it at once. An exit
	 * meanwhile ends the wait (the group then gets SIGTERM as after any
	 * exit); a second cancel does not shorten it. */
	uint64_t (*on_stop)(void *ctx, void *task);
};

struct supervisor_opts {
	unsigned max_parallel;	   /* children at once; 0 = 1 */
	const struct clock *clock; /* NULL = clock_system() (monotonic ms for deadlines) */
	size_t read_chunk;	   /* bytes per read(); 0 = 64 KiB */
	int watch_fd;		   /* watched for ops->on_watch (only when it is set) */
};

/* Run tasks until next_task has none and every child has finished. Returns
 * 0, -ECANCELED when a signal cancelled the run, the negative errno returned
 * by next_task, or a negative errno when the loop cannot be set up (with
 * reterr). Restores the signal mask, SIGCHLD disposition and subreaper flag. */
int supervise_run(const struct supervisor_ops *ops, void *ctx, const struct supervisor_opts *opts,
		  struct diag *reterr);

/* Cancel the child started for task (by next_task's *ret_task): the table's
 * cancel event, as a signal does for every child (TERM to the group, the
 * grace, KILL; p->cancelled is set). 0 sent; -EALREADY when it has already
 * exited or is being stopped (its on_exit() follows as usual); -ESRCH when
 * no child of the loop is that task's. Only from on_watch(). */
int supervise_cancel_task(struct supervisor *sv, const void *task);

/* What SIGINT does: every child cancelled, and supervise_run() returns
 * -ECANCELED once they are reaped; a second call kills at once. Only from
 * on_watch(). */
void supervise_interrupt(struct supervisor *sv);

/* supervise_run() with default options and max_parallel children. */
int supervise(const struct supervisor_ops *ops, void *ctx, unsigned max_parallel);

#endif
