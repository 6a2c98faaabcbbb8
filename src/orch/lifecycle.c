/* The life of a task in a run (see lifecycle.h). */
#include "orch/lifecycle.h"

#include <string.h>

#include "util/banned.h"

static const char *const event_names[_TASK_EVENT_MAX] = {
	[TASK_EV_DISPATCHED] = "dispatched",
	[TASK_EV_REFUSED] = "refused",
	[TASK_EV_DISPATCH_FAILED] = "dispatch_failed",
	[TASK_EV_DEPENDENCY_FAILED] = "dependency_failed",
	[TASK_EV_AGENT_COMPLETED] = "agent_completed",
	[TASK_EV_NO_CHANGES] = "no_changes",
	[TASK_EV_RATE_LIMITED] = "rate_limited",
	[TASK_EV_AGENT_FAILED] = "agent_failed",
	[TASK_EV_INTERRUPTED] = "interrupted",
	[TASK_EV_CHANGES_FAILED] = "changes_failed",
	[TASK_EV_GATES_FAILED] = "gates_failed",
	[TASK_EV_GATES_PASSED] = "gates_passed",
	[TASK_EV_NOT_MERGED] = "not_merged",
	[TASK_EV_MERGED] = "merged",
	[TASK_EV_CONFLICT] = "conflict",
	[TASK_EV_MERGE_FAILED] = "merge_failed",
	[TASK_EV_MERGE_POSTPONED] = "merge_postponed",
	[TASK_EV_RESUMED] = "resumed",
	[TASK_EV_CANCELLED] = "cancelled",
	[TASK_EV_RETRIED] = "retried",
	[TASK_EV_RETRYING] = "retrying",
	[TASK_EV_FALLBACK] = "fallback",
	[TASK_EV_REVIEW_REQUESTED] = "review_requested",
	[TASK_EV_APPROVED] = "approved",
	[TASK_EV_REJECTED] = "rejected",
	[TASK_EV_PUSHED] = "pushed",
	[TASK_EV_PUSH_FAILED] = "push_failed",
	[TASK_EV_SETUP_FAILED] = "setup_failed",
	[TASK_EV_REBASING] = "rebasing",
	[TASK_EV_REBASED] = "rebased",
	[TASK_EV_REBASE_FAILED] = "rebase_failed",
	[TASK_EV_RESOLVING] = "resolving",
	[TASK_EV_RESOLVED] = "resolved",
	[TASK_EV_RESOLVE_FAILED] = "resolve_failed",
};

const char *task_event_to_string(enum task_event ev)
{
	return (int)ev >= 0 && ev < _TASK_EVENT_MAX ? event_names[ev] : NULL;
}

enum task_event task_event_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _TASK_EVENT_MAX; i++)
		if (strcmp(event_names[i], s) == 0)
			return (enum task_event)i;
	return _TASK_EVENT_INVALID;
}

/* Rows: the state a task is in. Columns: what happened. Cell: the state
 * entered, plus one; 0 (every cell not written) is an illegal move. */
/* clang-format off */
#define TO(s) (TASK_##s + 1)
static const signed char next_state[_TASK_STATE_MAX][_TASK_EVENT_MAX] = {
	[TASK_PENDING] = {
		[TASK_EV_DISPATCHED]        = TO(RUNNING),
		[TASK_EV_REFUSED]           = TO(REFUSED),
		[TASK_EV_DISPATCH_FAILED]   = TO(FAILED),
		[TASK_EV_DEPENDENCY_FAILED] = TO(BLOCKED),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
		[TASK_EV_SETUP_FAILED]      = TO(FAILED),
	},
	[TASK_RUNNING] = {
		[TASK_EV_AGENT_COMPLETED]   = TO(COMPLETING),
		[TASK_EV_NO_CHANGES]        = TO(NO_CHANGES),
		[TASK_EV_RATE_LIMITED]      = TO(PENDING),
		[TASK_EV_AGENT_FAILED]      = TO(FAILED),
		[TASK_EV_INTERRUPTED]       = TO(INTERRUPTED),
		[TASK_EV_RESUMED]           = TO(PENDING),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
		[TASK_EV_RETRYING]          = TO(PENDING),
		[TASK_EV_FALLBACK]          = TO(PENDING),
	},
	[TASK_COMPLETING] = {
		[TASK_EV_NO_CHANGES]        = TO(NO_CHANGES),
		[TASK_EV_CHANGES_FAILED]    = TO(FAILED),
		[TASK_EV_GATES_FAILED]      = TO(FAILED),
		[TASK_EV_GATES_PASSED]      = TO(MERGING),
		[TASK_EV_NOT_MERGED]        = TO(DONE),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
		[TASK_EV_REVIEW_REQUESTED]  = TO(REVIEW),
		[TASK_EV_PUSHED]            = TO(DONE),
		[TASK_EV_PUSH_FAILED]       = TO(FAILED),
	},
	[TASK_MERGING] = {
		[TASK_EV_MERGED]            = TO(DONE),
		[TASK_EV_CONFLICT]          = TO(CONFLICT),
		[TASK_EV_MERGE_FAILED]      = TO(FAILED),
		[TASK_EV_MERGE_POSTPONED]   = TO(MERGING),
		[TASK_EV_REBASING]          = TO(REBASING),
	},
	[TASK_INTERRUPTED] = {
		[TASK_EV_RESUMED]           = TO(PENDING),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
		[TASK_EV_RETRIED]           = TO(PENDING),
	},
	[TASK_BLOCKED] = {
		[TASK_EV_RESUMED]           = TO(PENDING),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
		[TASK_EV_RETRIED]           = TO(PENDING),
	},
	[TASK_FAILED] = {
		[TASK_EV_RETRIED]           = TO(PENDING),
	},
	[TASK_CONFLICT] = {
		[TASK_EV_RETRIED]           = TO(PENDING),
	},
	[TASK_CANCELLED] = {
		[TASK_EV_RETRIED]           = TO(PENDING),
	},
	[TASK_REVIEW] = {
		[TASK_EV_APPROVED]          = TO(MERGING),
		[TASK_EV_REJECTED]          = TO(PENDING),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
	},
	[TASK_REBASING] = {
		[TASK_EV_REBASED]           = TO(REBASING),
		[TASK_EV_REBASE_FAILED]     = TO(CONFLICT),
		[TASK_EV_RESOLVING]         = TO(RESOLVING),
		[TASK_EV_GATES_PASSED]      = TO(MERGING),
		[TASK_EV_GATES_FAILED]      = TO(FAILED),
		[TASK_EV_REVIEW_REQUESTED]  = TO(REVIEW),
		[TASK_EV_RESUMED]           = TO(REBASING),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
	},
	[TASK_RESOLVING] = {
		[TASK_EV_DISPATCHED]        = TO(RESOLVING),
		[TASK_EV_RESOLVED]          = TO(RESOLVING),
		[TASK_EV_RESOLVE_FAILED]    = TO(CONFLICT),
		[TASK_EV_REFUSED]           = TO(CONFLICT),
		[TASK_EV_DISPATCH_FAILED]   = TO(CONFLICT),
		[TASK_EV_AGENT_FAILED]      = TO(CONFLICT),
		[TASK_EV_GATES_PASSED]      = TO(MERGING),
		[TASK_EV_GATES_FAILED]      = TO(FAILED),
		[TASK_EV_REVIEW_REQUESTED]  = TO(REVIEW),
		[TASK_EV_RESUMED]           = TO(REBASING),
		[TASK_EV_CANCELLED]         = TO(CANCELLED),
	},
};
#undef TO
/* clang-format on */

enum task_state lifecycle_next(enum task_state from, enum task_event ev)
{
	if ((int)from < 0 || from >= _TASK_STATE_MAX || (int)ev < 0 || ev >= _TASK_EVENT_MAX ||
	    !next_state[from][ev])
		return _TASK_STATE_INVALID;
	return (enum task_state)(next_state[from][ev] - 1);
}

bool lifecycle_finished_ok(enum task_state s)
{
	return s == TASK_DONE || s == TASK_NO_CHANGES;
}

bool lifecycle_terminal(enum task_state s)
{
	return lifecycle_finished_ok(s) || s == TASK_FAILED || s == TASK_REFUSED ||
	       s == TASK_CONFLICT || s == TASK_BLOCKED || s == TASK_CANCELLED;
}
