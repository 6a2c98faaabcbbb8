#include "adapter/outcome.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/banned.h"

static const char *const outcome_names[_OUTCOME_MAX] = {
	[OUTCOME_COMPLETED] = "completed",
	[OUTCOME_FAILED] = "failed",
	[OUTCOME_RATE_LIMITED] = "rate_limited",
	[OUTCOME_TIMED_OUT] = "timed_out",
	[OUTCOME_KILLED] = "killed",
	[OUTCOME_CANCELLED] = "cancelled",
	[OUTCOME_BINARY_MISSING] = "binary_missing",
	[OUTCOME_PERMISSION_BLOCKED] = "permission_blocked",
	[OUTCOME_NO_CHANGES] = "no_changes",
	[OUTCOME_OOM] = "oom",
	[OUTCOME_STALLED] = "stalled",
	[OUTCOME_SETUP_FAILED] = "setup_failed",
	[OUTCOME_LOST] = "lost",
};

const char *outcome_to_string(enum outcome o)
{
	if ((int)o < 0 || o >= _OUTCOME_MAX)
		return NULL;
	return outcome_names[o];
}

enum outcome outcome_from_string(const char *s)
{
	int i;

	if (!s)
		return _OUTCOME_INVALID;
	for (i = 0; i < _OUTCOME_MAX; i++)
		if (strcmp(outcome_names[i], s) == 0)
			return (enum outcome)i;
	return _OUTCOME_INVALID;
}

void outcome_inputs_init(struct outcome_inputs *in, enum dialect d)
{
	memset(in, 0, sizeof(*in));
	in->terminal_expected = dialect_has_terminal(d);
	in->liveness = d == DIALECT_POLL_PTY;
	ratelimit_hint_init(&in->hint);
}

void outcome_observe(struct outcome_inputs *in, const struct event *ev)
{
	switch (ev->kind) {
	case EVENT_RESULT:
		in->results++;
		in->result_is_error = ev->is_error;
		in->result_http_status = ev->http_status;
		if (ev->permission_denials > in->permission_denials)
			in->permission_denials = ev->permission_denials;
		break;
	case EVENT_ERROR:
		in->errors++;
		break;
	case EVENT_RATE_LIMITED:
		in->rate_limits++;
		if (!ratelimit_hint_empty(&ev->hint))
			in->hint = ev->hint;
		break;
	case EVENT_TOOL_CALL:
		in->tool_calls++;
		break;
	case EVENT_TOOL_RESULT:
		if (ev->is_error)
			in->tool_errors++;
		if (ev->permission_denied)
			in->tool_refusals++;
		break;
	case EVENT_UNKNOWN:
		in->unknown++;
		break;
	default:
		break;
	}
}

void outcome_observe_fn(void *userdata, const struct event *ev)
{
	outcome_observe(userdata, ev);
}

void outcome_set_exit(struct outcome_inputs *in, const struct proc *p)
{
	in->start_failed = p->failed_stage != SHIM_STAGE_NONE;
	in->exit_code = p->exit_code;
	in->term_signal = p->term_signal;
	in->timed_out = p->timed_out;
	in->cancelled = p->cancelled;
	in->output_bytes = p->output_bytes;
	in->timeout_idle_ms = p->timeout_idle_ms;
	in->oom_kills = p->oom_kills;
	in->stalled = p->stalled;
	in->idle_timeout_ms = p->idle_timeout_ms;
}

void outcome_set_lost(struct outcome_inputs *in, const char *why)
{
	(void)snprintf(in->lost, sizeof(in->lost), "%s", why && *why ? why : "its host was lost");
}

void outcome_set_changes(struct outcome_inputs *in, bool changed, bool expect_changes)
{
	in->changes_known = true;
	in->worktree_changed = changed;
	in->expect_changes = expect_changes;
}

static enum outcome why(enum outcome o, char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static enum outcome why(enum outcome o, char *buf, size_t size, const char *fmt, ...)
{
	if (buf && size) {
		va_list ap;

		va_start(ap, fmt);
		(void)vsnprintf(buf, size, fmt, ap);
		va_end(ap);
	}
	return o;
}

/* Rule 3, a watchdog stopped it: the stall watchdog (stalled), else its
 * deadline (timed_out, with the output's liveness for poll-pty). */
static enum outcome watchdog_fired(const struct outcome_inputs *in, char *buf, size_t size)
{
	if (in->stalled)
		return why(
			OUTCOME_STALLED, buf, size,
			"stalled: printed nothing for %llu.%llu s (idle_timeout); its process tree was stopped",
			(unsigned long long)(in->idle_timeout_ms / 1000),
			(unsigned long long)(in->idle_timeout_ms % 1000 / 100));
	if (in->liveness && in->output_bytes == 0)
		return why(OUTCOME_TIMED_OUT, buf, size,
			   "timed out without printing anything (poll-pty liveness)");
	if (in->liveness)
		return why(
			OUTCOME_TIMED_OUT, buf, size,
			"timed out; its output last grew %llu.%llu s before the deadline (poll-pty liveness, %llu bytes in all)",
			(unsigned long long)(in->timeout_idle_ms / 1000),
			(unsigned long long)(in->timeout_idle_ms % 1000 / 100),
			(unsigned long long)in->output_bytes);
	return why(OUTCOME_TIMED_OUT, buf, size, "timed out before its terminal event");
}

/* Rule 4: the run finished well; did it do anything? */
static enum outcome success_checks(const struct outcome_inputs *in, const char *how, char *buf,
				   size_t size)
{
	bool unchanged = in->changes_known && !in->worktree_changed;

	if (unchanged && (in->permission_denials > 0 || in->tool_refusals > 0))
		return why(
			OUTCOME_PERMISSION_BLOCKED, buf, size,
			"%s, but tool calls were refused (%lld permission denials, %u refused tool results) and the worktree is unchanged",
			how, (long long)in->permission_denials, in->tool_refusals);
	if (unchanged && in->expect_changes)
		return why(OUTCOME_NO_CHANGES, buf, size, "%s, but the worktree is unchanged", how);
	return why(OUTCOME_COMPLETED, buf, size, "%s", how);
}

enum outcome outcome_classify_why(const struct outcome_inputs *in, char *buf, size_t size)
{
	if (buf && size)
		buf[0] = '\0';

	/* 0. its host is gone: what it printed before says nothing of its end */
	if (in->lost[0])
		return why(OUTCOME_LOST, buf, size, "lost with its node: %s", in->lost);

	/* 1. it never ran */
	if (in->start_failed) {
		if (in->exit_code == 127 || in->exit_code == 126)
			return why(OUTCOME_BINARY_MISSING, buf, size,
				   "the agent binary is %s (exit %d)",
				   in->exit_code == 127 ? "missing" : "not executable",
				   in->exit_code);
		return why(OUTCOME_FAILED, buf, size, "the agent could not be started (exit %d)",
			   in->exit_code);
	}

	/* over its memory limit, unless it says it finished all the same */
	if (in->oom_kills > 0 && !(in->results > 0 && !in->result_is_error && in->exit_code == 0))
		return why(
			OUTCOME_OOM, buf, size,
			"the kernel killed %llu of its processes over its memory limit (exit %d)",
			(unsigned long long)in->oom_kills, in->exit_code);

	/* 2. the agent said how it ended */
	if (in->results > 0) {
		if (in->result_is_error) {
			if (in->rate_limits > 0 || in->result_http_status == 429)
				return why(
					OUTCOME_RATE_LIMITED, buf, size,
					"the agent's result is an error and it was rate limited");
			if (in->result_http_status)
				return why(OUTCOME_FAILED, buf, size,
					   "the agent's result is an error (HTTP %d; exit %d)",
					   in->result_http_status, in->exit_code);
			return why(OUTCOME_FAILED, buf, size,
				   "the agent's result is an error (exit %d)", in->exit_code);
		}
		if (in->timed_out)
			return success_checks(in,
					      "the agent finished (then timed out on its way out)",
					      buf, size);
		if (in->cancelled || in->term_signal)
			return success_checks(in,
					      "the agent finished (then was killed on its way out)",
					      buf, size);
		if (in->exit_code != 0)
			return why(OUTCOME_FAILED, buf, size,
				   "the agent's result is a success but it exited with code %d",
				   in->exit_code);
		return success_checks(in, "the agent finished", buf, size);
	}

	/* 3. it ended without saying so */
	if (in->timed_out)
		return watchdog_fired(in, buf, size);
	if (in->cancelled)
		return why(OUTCOME_CANCELLED, buf, size, "cancelled before its terminal event");
	if (in->term_signal)
		return why(OUTCOME_KILLED, buf, size,
			   "killed by signal %d before its terminal event", in->term_signal);
	/* a text channel has no terminal event: its exit decides, and a
	 * rate-limit line in a run that exits 0 was retried past */
	if (!in->terminal_expected && in->exit_code == 0)
		return success_checks(in, "exited 0", buf, size);
	if (in->rate_limits > 0)
		return why(OUTCOME_RATE_LIMITED, buf, size,
			   "rate limited, and no terminal event (exit %d)", in->exit_code);
	if (in->errors > 0)
		return why(OUTCOME_FAILED, buf, size,
			   "the agent reported %u error(s) and no terminal event (exit %d)",
			   in->errors, in->exit_code);
	if (in->terminal_expected) {
		if (in->exit_code == 0)
			return why(OUTCOME_FAILED, buf, size,
				   "exited 0 without its terminal event");
		return why(OUTCOME_FAILED, buf, size,
			   "exited with code %d without its terminal event", in->exit_code);
	}
	return why(OUTCOME_FAILED, buf, size, "exited with code %d", in->exit_code);
}

enum outcome outcome_classify(const struct outcome_inputs *in)
{
	return outcome_classify_why(in, NULL, 0);
}
