/* Run children to completion and read what they say: the one loop behind
 * every "run a program, capture its output, enforce a deadline, reap it"
 * (version probes, bernstein's git, the runner's run_command tool, gates).
 * The long-lived agents have the supervisor (proc/supervise.h) instead.
 *
 * Each child is started by proc_spawn() (proc/spawn.h): contained (its own
 * PID namespace or cgroup where the host allows, else its own process
 * group), in a new session, stdin on /dev/null unless the spec gives one,
 * exactly the spec's environment, the spec's Landlock rules. Then:
 *   - both streams are read as they come, into bounded buffers: the first
 *     max bytes of a stream (the rest is read and dropped, counted), or for
 *     a tail stream the last max bytes (starting on a UTF-8 boundary);
 *   - at the deadline the child's whole tree gets SIGTERM, then SIGKILL
 *     after the grace (no grace: SIGKILL at once);
 *   - when the child exits, whatever it started is killed while its zombie
 *     still pins the group id (and, contained, its namespace or cgroup),
 *     then it is reaped and its pipes are drained until EOF or drain_ms:
 *     nothing it started in the background outlives it or holds the loop.
 * Many children run in one poll loop, at most max_parallel at a time, so n
 * probes cost about one deadline at worst. Never hangs, never leaves a
 * child behind, whatever the children do. */
#ifndef BERNSTEIN_PROC_CAPTURE_H
#define BERNSTEIN_PROC_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/shim.h"
#include "proc/spawn.h"
#include "util/clock.h"
#include "util/sbuf.h"

#define CAPTURE_DEFAULT_DRAIN_MS 1000

struct capture {
	/* in */
	const struct proc_spec *spec; /* borrowed; its pipe flags are ignored: both piped */
	uint64_t timeout_ms;	      /* 0 = no deadline */
	uint64_t kill_grace_ms;	      /* SIGTERM at the deadline, SIGKILL after this; 0 = SIGKILL */
	size_t max_out, max_err;      /* bytes kept of each stream; 0 = nothing kept */
	bool tail_err;		      /* keep the last max_err bytes of stderr, not the first */
	/* called once the child is reaped and its tree killed (e.g. to kill
	 * what left the tree: the runner's orphans), before the drain */
	void (*on_reaped)(void *ctx);
	void *ctx;

	/* out (capture_release() frees them) */
	int start_result;	      /* 0, or proc_spawn()'s negative errno: it did not run */
	enum shim_stage failed_stage; /* the step that failed to start it, or SHIM_STAGE_NONE */
	int start_errno;
	char *start_error;   /* why it could not start (owned), or NULL */
	int exit_code;	     /* as a shell reports it (128+N for signal N); -1 unknown */
	int term_signal;     /* 0 unless killed by a signal */
	bool timed_out;	     /* the deadline fired */
	bool status_unknown; /* reaped behind our back (SIGCHLD ignored): no status */
	struct sbuf out, err;
	size_t out_dropped, err_dropped; /* bytes read past what was kept */
	uint64_t oom_kills;		 /* its memory limit's kills (proc_contain_end) */
	uint64_t elapsed_ms;		 /* from the spawn to the reap */
};

struct capture_opts {
	unsigned max_parallel;	   /* 0 = 16 */
	uint64_t drain_ms;	   /* 0 = CAPTURE_DEFAULT_DRAIN_MS */
	const struct clock *clock; /* NULL = clock_system(): deadlines are on it */
};

/* Run the n children (their in fields set; the out fields are overwritten)
 * and wait for all of them. Returns 0 when the loop ran (each child's fate
 * is in its out fields: start_result < 0 when it could not start), or a
 * negative errno when the loop itself failed (poll): every child started is
 * then killed and reaped, every one not started has start_result set. */
int proc_capture(struct capture *c, size_t n, const struct capture_opts *o);

void capture_release(struct capture *c);

#endif
