/* The life of a task in a run: state x event -> state.
 *
 * Every change of a task's state (orch/run.c's transition()) names the event
 * that caused it; the table gives the state it leads to, or none: an illegal
 * move, which transition() refuses (the run stops with -EPROTO, a bug of
 * bernstein's). docs/runs.md ("The life of a task") lists the same moves,
 * checked by tests/unit/test-lifecycle.c, which also walks every cell
 * against an expected table written apart.
 *
 *   pending      dispatched -> running, refused -> refused,
 *                dispatch_failed -> failed, dependency_failed -> blocked,
 *                cancelled -> cancelled, setup_failed -> failed
 *   running      agent_completed -> completing, no_changes -> no_changes,
 *                rate_limited -> pending, agent_failed -> failed,
 *                interrupted -> interrupted, resumed -> pending,
 *                cancelled -> cancelled, retrying -> pending,
 *                fallback -> pending
 *   completing   no_changes -> no_changes, changes_failed -> failed,
 *                gates_failed -> failed, gates_passed -> merging,
 *                not_merged -> done, cancelled -> cancelled,
 *                review_requested -> review, pushed -> done,
 *                push_failed -> failed
 *   merging      merged -> done, conflict -> conflict,
 *                merge_failed -> failed, merge_postponed -> merging
 *   interrupted, blocked
 *                resumed -> pending, cancelled -> cancelled,
 *                retried -> pending
 *   failed, conflict, cancelled
 *                retried -> pending (`bernstein retry`)
 *   review       approved -> merging, rejected -> pending,
 *                cancelled -> cancelled
 *   merging      (on_conflict: rebase|resolve) rebasing -> rebasing
 *   rebasing     rebased -> rebasing, rebase_failed -> conflict,
 *                resolving -> resolving, gates_passed -> merging,
 *                gates_failed -> failed, review_requested -> review,
 *                resumed -> rebasing, cancelled -> cancelled
 *   resolving    dispatched -> resolving, resolved -> resolving,
 *                resolve_failed -> conflict, refused -> conflict,
 *                dispatch_failed -> conflict, agent_failed -> conflict,
 *                gates_passed -> merging, gates_failed -> failed,
 *                review_requested -> review, resumed -> rebasing,
 *                cancelled -> cancelled
 *   done, no_changes, refused: none (final). */
#ifndef BERNSTEIN_ORCH_LIFECYCLE_H
#define BERNSTEIN_ORCH_LIFECYCLE_H

#include <errno.h>
#include <stdbool.h>

#include "orch/state.h"

enum task_event {
	TASK_EV_DISPATCHED,	   /* "dispatched": the attempt is recorded, the agent starts */
	TASK_EV_REFUSED,	   /* "refused": routing or a preflight gate said no */
	TASK_EV_DISPATCH_FAILED,   /* "dispatch_failed": it could not be prepared */
	TASK_EV_DEPENDENCY_FAILED, /* "dependency_failed": a dependency will never finish */
	TASK_EV_AGENT_COMPLETED,   /* "agent_completed": outcome completed */
	TASK_EV_NO_CHANGES,	   /* "no_changes": the agent finished and changed nothing */
	TASK_EV_RATE_LIMITED,	   /* "rate_limited": a retry is due later */
	TASK_EV_AGENT_FAILED,	   /* "agent_failed": the attempt failed, or could not start */
	TASK_EV_INTERRUPTED,	   /* "interrupted": timed out, killed, cancelled */
	TASK_EV_CHANGES_FAILED,	   /* "changes_failed": its work cannot be taken (artifact,
				    * commit, branch) */
	TASK_EV_GATES_FAILED,	   /* "gates_failed": a gate failed or could not run */
	TASK_EV_GATES_PASSED,	   /* "gates_passed": every gate passed (or none): merge */
	TASK_EV_NOT_MERGED,	   /* "not_merged": merge: none, done as it is */
	TASK_EV_MERGED,		   /* "merged": in the base branch (or already there) */
	TASK_EV_CONFLICT,	   /* "conflict": the merge conflicted */
	TASK_EV_MERGE_FAILED,	   /* "merge_failed": the branch cannot be merged */
	TASK_EV_MERGE_POSTPONED,   /* "merge_postponed": not now; resume retries */
	TASK_EV_RESUMED,	   /* "resumed": bernstein resume sends it back to pending */
	TASK_EV_CANCELLED,	   /* "cancelled": `bernstein cancel` */
	TASK_EV_RETRIED,	   /* "retried": `bernstein retry` (or a dependency of it) */
	TASK_EV_RETRYING,	   /* "retrying": its retry: policy gives it another attempt */
	TASK_EV_FALLBACK,	   /* "fallback": the next adapter of its fallback: takes over */
	TASK_EV_REVIEW_REQUESTED,  /* "review_requested": gates passed under merge: review */
	TASK_EV_APPROVED,	   /* "approved": `bernstein approve`: merge the reviewed head */
	TASK_EV_REJECTED,	/* "rejected": `bernstein reject`: a new attempt, with feedback */
	TASK_EV_PUSHED,		/* "pushed": merge: pr, the branch pushed (and the PR opened) */
	TASK_EV_PUSH_FAILED,	/* "push_failed": merge: pr, the push failed */
	TASK_EV_SETUP_FAILED,	/* "setup_failed": worktree_setup's setup_command failed or
				 * timed out before the agent started */
	TASK_EV_REBASING,	/* "rebasing": the merge conflicted; on_conflict: rebase|resolve */
	TASK_EV_REBASED,	/* "rebased": the rebase was clean; the gates run again */
	TASK_EV_REBASE_FAILED,	/* "rebase_failed": it conflicted too (aborted): conflict */
	TASK_EV_RESOLVING,	/* "resolving": on_conflict: resolve, a resolver agent starts */
	TASK_EV_RESOLVED,	/* "resolved": its resolution committed; the gates run again */
	TASK_EV_RESOLVE_FAILED, /* "resolve_failed": markers left, or the resolver failed */
	_TASK_EVENT_MAX,
	_TASK_EVENT_INVALID = -EINVAL,
};

const char *task_event_to_string(enum task_event ev);
enum task_event task_event_from_string(const char *s); /* _TASK_EVENT_INVALID if unknown */

/* The state a task in state from enters on ev; _TASK_STATE_INVALID when the
 * move is illegal (or from or ev is out of range). */
enum task_state lifecycle_next(enum task_state from, enum task_event ev);

/* done or no_changes: its dependents may start. */
bool lifecycle_finished_ok(enum task_state s);
/* No event of a run moves it any more (only resume's, for blocked). */
bool lifecycle_terminal(enum task_state s);

#endif
