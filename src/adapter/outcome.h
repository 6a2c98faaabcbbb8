/* The typed outcome of one agent run. It does not trust the exit code alone:
 * qwen 0.15 and pi exit 0 on an API error (their stream says so), gemini
 * exits 144 (HTTP 400 mod 256), claude says subtype "success" with
 * is_error true. The inputs are the exit information, a tally of the
 * normalized events seen (outcome_observe() on each) and whether the worktree
 * changed (computed by the caller).
 *
 * The rules, in order (docs/event-stream.md, "Outcome"):
 *   0. the executor says the agent's host was lost (outcome_set_lost()) ->
 *      lost, whatever it printed before;
 *   1. the agent could not start: exit 127 or 126 -> binary_missing, any
 *      other start failure -> failed; the kernel's OOM killer killed one of
 *      its processes over its memory limit (limits:) and no successful
 *      terminal result says it finished anyway -> oom;
 *   2. a terminal result was seen (the last one counts):
 *      - it failed: rate_limited if a rate-limit event was seen or its HTTP
 *        status is 429, else failed (whatever the exit code);
 *      - it succeeded: failed if the agent then exited non-zero on its own
 *        (not killed, not timed out: the work was done before a kill);
 *        else the success checks below;
 *   3. no terminal result:
 *      the stall watchdog fired -> stalled ("stalled: printed nothing
 *      for 30.0 s (idle_timeout); ..."); timed out -> timed_out (for
 *      poll-pty the reason says how long its output had not grown: "timed
 *      out; its output last grew 12.3 s before the deadline (40 bytes in
 *      all)", or "timed out without printing anything"); cancelled ->
 *      cancelled; killed by a signal -> killed; a text channel (no terminal
 *      event in its dialect) that exited 0 -> the success checks; a
 *      rate-limit event -> rate_limited; an error event -> failed; else
 *      failed (for a stream dialect an exit 0 without its terminal event
 *      included);
 *   4. success checks: a permission refusal (the agent's permission_denials,
 *      or a tool result refused) and a worktree known to be unchanged ->
 *      permission_blocked; expect_changes and a worktree known to be
 *      unchanged -> no_changes; else completed.
 *
 * Feed the meter (ratelimit.h) from the outcome, not from single events:
 * rate_limited -> ratelimit_meter_hit() with the tally's hint, anything
 * else -> success. A chatty agent that mentions "rate limit" and finishes
 * stays completed. */
#ifndef BERNSTEIN_ADAPTER_OUTCOME_H
#define BERNSTEIN_ADAPTER_OUTCOME_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/dialect.h"
#include "adapter/events.h"
#include "proc/spawn.h"

enum outcome {
	OUTCOME_COMPLETED,	    /* "completed" */
	OUTCOME_FAILED,		    /* "failed" */
	OUTCOME_RATE_LIMITED,	    /* "rate_limited" */
	OUTCOME_TIMED_OUT,	    /* "timed_out": the watchdog killed it before it finished */
	OUTCOME_KILLED,		    /* "killed": a signal ended it before it finished */
	OUTCOME_CANCELLED,	    /* "cancelled": bernstein was interrupted */
	OUTCOME_BINARY_MISSING,	    /* "binary_missing": exit 127/126 at start */
	OUTCOME_PERMISSION_BLOCKED, /* "permission_blocked": refused, nothing written */
	OUTCOME_NO_CHANGES,	    /* "no_changes": finished but changed nothing */
	OUTCOME_OOM,		    /* "oom": the kernel killed it (or its children) over its
				     * memory limit */
	OUTCOME_STALLED,	    /* "stalled": the stall watchdog (idle_timeout) stopped it
				     * after it printed nothing for too long; retryable */
	OUTCOME_SETUP_FAILED,	    /* "setup_failed": the task's worktree_setup setup_command
				     * failed or timed out; the agent never ran (never from
				     * outcome_classify(): the run loop sets it) */
	OUTCOME_LOST,		    /* "lost": the agent ran on another host (executor: slurm)
				     * and its job was lost with its node: the connection
				     * broke and the job ended without its result, or it
				     * ended NODE_FAIL before dialling back; retryable */
	_OUTCOME_MAX,
	_OUTCOME_INVALID = -EINVAL,
};

struct outcome_inputs {
	/* how the process ended (outcome_set_exit() copies a struct proc) */
	bool start_failed;	  /* it never ran: exit_code is 127, 126 or 125 */
	int exit_code;		  /* as a shell reports it: code, or 128+signal */
	int term_signal;	  /* the signal that ended it, 0 if it exited */
	bool timed_out;		  /* the watchdog fired */
	bool cancelled;		  /* bernstein was told to stop */
	uint64_t output_bytes;	  /* read from stdout and stderr */
	uint64_t timeout_idle_ms; /* timed_out: how long the output had not grown */
	uint64_t oom_kills;	  /* processes of it the OOM killer killed over its memory limit */
	bool stalled;		  /* the stall watchdog fired (timed_out is set too) */
	uint64_t idle_timeout_ms; /* stalled: the idle_timeout it exceeded */
	char lost[256];		  /* not "": the executor lost its host (outcome_set_lost()) */

	/* the event channel */
	bool terminal_expected; /* dialect_has_terminal() of its dialect */
	bool liveness;		/* poll-pty: a timeout's reason tells the output's liveness */

	/* the tally (outcome_observe()) */
	unsigned results;	    /* EVENT_RESULT seen */
	bool result_is_error;	    /* the last one failed */
	int result_http_status;	    /* the last one's HTTP status */
	unsigned errors;	    /* EVENT_ERROR */
	unsigned rate_limits;	    /* EVENT_RATE_LIMITED */
	struct ratelimit_hint hint; /* of the last EVENT_RATE_LIMITED that had one */
	unsigned tool_calls;	    /* EVENT_TOOL_CALL */
	unsigned tool_errors;	    /* EVENT_TOOL_RESULT with is_error */
	unsigned tool_refusals;	    /* EVENT_TOOL_RESULT with permission_denied */
	int64_t permission_denials; /* the most any result reported; 0 none */
	unsigned unknown;	    /* EVENT_UNKNOWN */

	/* the worktree */
	bool changes_known;    /* the caller looked at the worktree */
	bool worktree_changed; /* ... and it changed */
	bool expect_changes;   /* a run that changes nothing is no_changes */
};

/* Zeroed inputs for a run read with dialect d. */
void outcome_inputs_init(struct outcome_inputs *in, enum dialect d);
/* Count one event. */
void outcome_observe(struct outcome_inputs *in, const struct event *ev);
/* An event_emit_fn that calls outcome_observe(userdata, ev). */
void outcome_observe_fn(void *userdata, const struct event *ev);
/* Copy the end of a supervised process (exit code, signal, timeout,
 * cancellation, start failure, output liveness). */
void outcome_set_exit(struct outcome_inputs *in, const struct proc *p);
/* The executor lost the agent's host; why says how ("Slurm job 12 ended
 * NODE_FAIL without its result"), truncated to fit. */
void outcome_set_lost(struct outcome_inputs *in, const char *why);
/* Record what the caller found in the worktree. */
void outcome_set_changes(struct outcome_inputs *in, bool changed, bool expect_changes);

enum outcome outcome_classify(const struct outcome_inputs *in);
/* The same, with the rule that decided in buf ("exited 0 without its terminal
 * event"); buf may be NULL. */
enum outcome outcome_classify_why(const struct outcome_inputs *in, char *buf, size_t size);

const char *outcome_to_string(enum outcome o);
enum outcome outcome_from_string(const char *s);

#endif
