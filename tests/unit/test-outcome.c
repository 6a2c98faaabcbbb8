/* adapter/outcome: every rule of outcome_classify() from hand-built inputs
 * (the real streams are in test-events.c), the tally of events, the copy of
 * a struct proc, and the names. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/outcome.h"

/* Inputs of a stream-json run (claude-like dialect). */
static struct outcome_inputs stream_run(void)
{
	struct outcome_inputs in;

	outcome_inputs_init(&in, DIALECT_CLAUDE);
	return in;
}

static struct outcome_inputs text_run(void)
{
	struct outcome_inputs in;

	outcome_inputs_init(&in, DIALECT_NONE);
	return in;
}

static void with_result(struct outcome_inputs *in, bool is_error, int http)
{
	struct event ev;

	event_init(&ev, EVENT_RESULT);
	ev.is_error = is_error;
	ev.http_status = http;
	outcome_observe(in, &ev);
}

static void with(struct outcome_inputs *in, enum event_kind k)
{
	struct event ev;

	event_init(&ev, k);
	outcome_observe(in, &ev);
}

static enum outcome classify(const struct outcome_inputs *in, const char *must_say)
{
	char why[256];
	enum outcome o = outcome_classify_why(in, why, sizeof(why));

	print_message("# %s: %s\n", outcome_to_string(o), why);
	assert_int_equal(o, outcome_classify(in));
	assert_true(why[0] != '\0');
	if (must_say)
		assert_non_null(strstr(why, must_say));
	return o;
}

static void test_start_failures(void **state)
{
	struct outcome_inputs in = stream_run();

	(void)state;
	in.start_failed = true;
	in.exit_code = 127;
	assert_int_equal(classify(&in, "missing"), OUTCOME_BINARY_MISSING);
	in.exit_code = 126;
	assert_int_equal(classify(&in, "not executable"), OUTCOME_BINARY_MISSING);
	in.exit_code = 125;
	assert_int_equal(classify(&in, "could not be started"), OUTCOME_FAILED);
	/* an agent that itself exits 127 ran: that is a plain failure */
	in = stream_run();
	in.exit_code = 127;
	assert_int_equal(classify(&in, "without its terminal event"), OUTCOME_FAILED);
	in = text_run();
	in.exit_code = 127;
	assert_int_equal(classify(&in, "code 127"), OUTCOME_FAILED);
}

/* The OOM killer killed a process over the memory limit (limits:): oom,
 * unless the agent's own result says it finished. */
static void test_oom(void **state)
{
	struct outcome_inputs in = stream_run();

	(void)state;
	in.oom_kills = 2;
	in.exit_code = 137;
	in.term_signal = 9;
	assert_int_equal(classify(&in, "over its memory limit"), OUTCOME_OOM);
	in = text_run();
	in.oom_kills = 1; /* a child of it: the agent itself exited 1 */
	in.exit_code = 1;
	assert_int_equal(classify(&in, "killed 1 of its processes"), OUTCOME_OOM);
	in = stream_run();
	in.oom_kills = 1;
	with_result(&in, false, 0);
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);
	with_result(&in, true, 0);
	assert_int_equal(classify(&in, "over its memory limit"), OUTCOME_OOM);
}

static void test_terminal_result(void **state)
{
	struct outcome_inputs in;

	(void)state;
	/* success, exit 0 */
	in = stream_run();
	with_result(&in, false, 0);
	assert_int_equal(classify(&in, "finished"), OUTCOME_COMPLETED);
	/* failure whatever the exit code */
	in = stream_run();
	with_result(&in, true, 400);
	assert_int_equal(classify(&in, "HTTP 400"), OUTCOME_FAILED);
	in.exit_code = 144;
	assert_int_equal(classify(&in, NULL), OUTCOME_FAILED);
	/* the last result counts */
	in = stream_run();
	with_result(&in, true, 0);
	with_result(&in, false, 0);
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);
	/* a failed result that was a rate limit */
	in = stream_run();
	with(&in, EVENT_RATE_LIMITED);
	with_result(&in, true, 0);
	assert_int_equal(classify(&in, "rate limited"), OUTCOME_RATE_LIMITED);
	in = stream_run();
	with_result(&in, true, 429);
	assert_int_equal(classify(&in, NULL), OUTCOME_RATE_LIMITED);
	/* rate limited, retried, succeeded */
	in = stream_run();
	with(&in, EVENT_RATE_LIMITED);
	with(&in, EVENT_ERROR);
	with_result(&in, false, 0);
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);
	/* success said, non-zero exit on its own: not trusted */
	in = stream_run();
	with_result(&in, false, 0);
	in.exit_code = 1;
	assert_int_equal(classify(&in, "exited with code 1"), OUTCOME_FAILED);
	/* success said, then hung and got killed on the way out: done */
	in.timed_out = true;
	in.term_signal = SIGKILL;
	in.exit_code = 128 + SIGKILL;
	assert_int_equal(classify(&in, "timed out on its way out"), OUTCOME_COMPLETED);
	in.timed_out = false;
	assert_int_equal(classify(&in, "killed on its way out"), OUTCOME_COMPLETED);
	/* a failed result stays failed when it was also killed */
	in = stream_run();
	with_result(&in, true, 0);
	in.timed_out = true;
	assert_int_equal(classify(&in, NULL), OUTCOME_FAILED);
}

static void test_no_terminal(void **state)
{
	struct outcome_inputs in;

	(void)state;
	/* exit 0 without the terminal event: failed, not completed */
	in = stream_run();
	assert_int_equal(classify(&in, "exited 0 without its terminal event"), OUTCOME_FAILED);
	with(&in, EVENT_TEXT);
	with(&in, EVENT_TOOL_CALL);
	assert_int_equal(classify(&in, NULL), OUTCOME_FAILED);
	/* killed before the end */
	in = stream_run();
	in.timed_out = true;
	in.term_signal = SIGTERM;
	in.exit_code = 128 + SIGTERM;
	assert_int_equal(classify(&in, "timed out"), OUTCOME_TIMED_OUT);
	in.timed_out = false;
	assert_int_equal(classify(&in, "signal 15"), OUTCOME_KILLED);
	in.cancelled = true;
	assert_int_equal(classify(&in, "cancelled"), OUTCOME_CANCELLED);
	/* the timeout wins over what happened before it */
	in = stream_run();
	with(&in, EVENT_RATE_LIMITED);
	in.timed_out = true;
	assert_int_equal(classify(&in, NULL), OUTCOME_TIMED_OUT);
	/* rate limited, error, nothing */
	in = stream_run();
	with(&in, EVENT_RATE_LIMITED);
	assert_int_equal(classify(&in, "rate limited"), OUTCOME_RATE_LIMITED);
	in = stream_run();
	with(&in, EVENT_ERROR);
	in.exit_code = 1;
	assert_int_equal(classify(&in, "1 error"), OUTCOME_FAILED);
	/* text channels: the exit decides */
	in = text_run();
	assert_int_equal(classify(&in, "exited 0"), OUTCOME_COMPLETED);
	with(&in, EVENT_RATE_LIMITED);
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);
	in.exit_code = 1;
	assert_int_equal(classify(&in, NULL), OUTCOME_RATE_LIMITED);
	in = text_run();
	in.exit_code = 2;
	assert_int_equal(classify(&in, "code 2"), OUTCOME_FAILED);
	in.term_signal = SIGSEGV;
	assert_int_equal(classify(&in, NULL), OUTCOME_KILLED);
}

static void test_success_checks(void **state)
{
	struct outcome_inputs in;
	struct event ev;

	(void)state;
	/* nothing changed, nothing expected: completed */
	in = stream_run();
	with_result(&in, false, 0);
	outcome_set_changes(&in, false, false);
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);
	/* expected: no_changes */
	outcome_set_changes(&in, false, true);
	assert_int_equal(classify(&in, "unchanged"), OUTCOME_NO_CHANGES);
	outcome_set_changes(&in, true, true);
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);
	/* unknown worktree: no claim either way */
	in = stream_run();
	with_result(&in, false, 0);
	in.expect_changes = true;
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);

	/* permission denials counted by the agent */
	in = stream_run();
	event_init(&ev, EVENT_RESULT);
	ev.permission_denials = 2;
	outcome_observe(&in, &ev);
	assert_int_equal(in.permission_denials, 2);
	outcome_set_changes(&in, false, false);
	assert_int_equal(classify(&in, "2 permission denials"), OUTCOME_PERMISSION_BLOCKED);
	outcome_set_changes(&in, true, true);
	assert_int_equal(classify(&in, NULL), OUTCOME_COMPLETED);
	/* a refused tool result */
	in = text_run();
	event_init(&ev, EVENT_TOOL_RESULT);
	ev.is_error = true;
	ev.permission_denied = true;
	outcome_observe(&in, &ev);
	assert_int_equal(in.tool_errors, 1);
	assert_int_equal(in.tool_refusals, 1);
	outcome_set_changes(&in, false, true);
	assert_int_equal(classify(&in, "1 refused"), OUTCOME_PERMISSION_BLOCKED);
}

static void test_tally_and_exit(void **state)
{
	struct outcome_inputs in;
	struct proc p = PROC_INIT;
	struct event ev;
	int k;

	(void)state;
	outcome_inputs_init(&in, DIALECT_CODEX);
	assert_true(in.terminal_expected);
	for (k = 0; k < _EVENT_KIND_MAX; k++) {
		event_init(&ev, (enum event_kind)k);
		outcome_observe_fn(&in, &ev);
	}
	assert_int_equal(in.results, 1);
	assert_int_equal(in.errors, 1);
	assert_int_equal(in.rate_limits, 1);
	assert_int_equal(in.tool_calls, 1);
	assert_int_equal(in.unknown, 1);
	assert_int_equal(in.tool_errors, 0);
	outcome_inputs_init(&in, DIALECT_TEXT_SIGNALS);
	assert_false(in.terminal_expected);

	p.exit_code = 137;
	p.term_signal = SIGKILL;
	p.timed_out = true;
	p.failed_stage = SHIM_STAGE_NONE;
	outcome_set_exit(&in, &p);
	assert_false(in.start_failed);
	assert_int_equal(in.exit_code, 137);
	assert_int_equal(in.term_signal, SIGKILL);
	assert_true(in.timed_out);
	assert_int_equal(outcome_classify(&in), OUTCOME_TIMED_OUT);
	p = (struct proc)PROC_INIT;
	p.exit_code = 127;
	p.failed_stage = SHIM_STAGE_EXEC;
	outcome_set_exit(&in, &p);
	assert_true(in.start_failed);
	assert_false(in.timed_out);
	assert_int_equal(outcome_classify(&in), OUTCOME_BINARY_MISSING);
	p.cancelled = true;
	p.failed_stage = SHIM_STAGE_NONE;
	p.exit_code = 130;
	outcome_set_exit(&in, &p);
	assert_int_equal(outcome_classify(&in), OUTCOME_CANCELLED);
}

/* A poll-pty agent killed by the timeout: the reason tells how long its
 * output had been still (from the supervisor's struct proc). */
static void test_poll_pty_liveness(void **state)
{
	struct outcome_inputs in;
	struct proc p = PROC_INIT;
	char why[256];

	(void)state;
	outcome_inputs_init(&in, DIALECT_POLL_PTY);
	assert_true(in.liveness);
	p.exit_code = 128 + SIGTERM;
	p.term_signal = SIGTERM;
	p.timed_out = true;
	p.output_bytes = 40;
	p.timeout_idle_ms = 12345;
	outcome_set_exit(&in, &p);
	assert_int_equal(in.output_bytes, 40);
	assert_int_equal(in.timeout_idle_ms, 12345);
	assert_int_equal(outcome_classify_why(&in, why, sizeof(why)), OUTCOME_TIMED_OUT);
	assert_string_equal(
		why,
		"timed out; its output last grew 12.3 s before the deadline (poll-pty liveness, 40 bytes in all)");
	p.output_bytes = 0;
	outcome_set_exit(&in, &p);
	assert_int_equal(outcome_classify_why(&in, why, sizeof(why)), OUTCOME_TIMED_OUT);
	assert_string_equal(why, "timed out without printing anything (poll-pty liveness)");
	/* a poll-pty agent that exits by itself is judged by its exit as before */
	p.timed_out = false;
	p.exit_code = 0;
	p.term_signal = 0;
	outcome_set_exit(&in, &p);
	assert_int_equal(classify(&in, "exited 0"), OUTCOME_COMPLETED);
	/* other text channels keep the plain reason */
	outcome_inputs_init(&in, DIALECT_NONE);
	assert_false(in.liveness);
	p.timed_out = true;
	p.output_bytes = 40;
	outcome_set_exit(&in, &p);
	assert_int_equal(outcome_classify_why(&in, why, sizeof(why)), OUTCOME_TIMED_OUT);
	assert_string_equal(why, "timed out before its terminal event");
}

/* executor: slurm: a job lost with its node is lost, whatever the agent
 * printed before and however the relay exited */
static void test_lost(void **state)
{
	struct outcome_inputs in = stream_run();
	struct proc p = {0};
	struct event ev = {.kind = EVENT_RESULT};
	char big[600];

	(void)state;
	p.exit_code = 1;
	outcome_set_exit(&in, &p);
	assert_int_equal(classify(&in, "exited with code 1"), OUTCOME_FAILED);
	outcome_set_lost(&in, "Slurm job 7 ended NODE_FAIL without its result");
	assert_int_equal(classify(&in, "lost with its node: Slurm job 7 ended NODE_FAIL"),
			 OUTCOME_LOST);
	/* a success it printed before the node went: its work never came back */
	outcome_observe(&in, &ev);
	p.exit_code = 0;
	outcome_set_exit(&in, &p);
	assert_int_equal(classify(&in, "NODE_FAIL"), OUTCOME_LOST);
	/* no reason given: still lost; a long one is cut, not overrun */
	outcome_set_lost(&in, NULL);
	assert_int_equal(classify(&in, "its host was lost"), OUTCOME_LOST);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	outcome_set_lost(&in, big);
	assert_int_equal(strlen(in.lost), sizeof(in.lost) - 1);
	assert_int_equal(outcome_classify(&in), OUTCOME_LOST);
	assert_string_equal(outcome_to_string(OUTCOME_LOST), "lost");
}

static void test_names(void **state)
{
	int o;

	(void)state;
	for (o = 0; o < _OUTCOME_MAX; o++)
		assert_int_equal(outcome_from_string(outcome_to_string((enum outcome)o)), o);
	assert_string_equal(outcome_to_string(OUTCOME_PERMISSION_BLOCKED), "permission_blocked");
	assert_string_equal(outcome_to_string(OUTCOME_NO_CHANGES), "no_changes");
	assert_string_equal(outcome_to_string(OUTCOME_OOM), "oom");
	assert_string_equal(outcome_to_string(OUTCOME_SETUP_FAILED), "setup_failed");
	assert_null(outcome_to_string(_OUTCOME_MAX));
	assert_int_equal(outcome_from_string("Completed"), _OUTCOME_INVALID);
	assert_int_equal(outcome_from_string(NULL), _OUTCOME_INVALID);
	/* a small reason buffer is cut, not overrun */
	{
		struct outcome_inputs in = stream_run();
		char buf[4];

		assert_int_equal(outcome_classify_why(&in, buf, sizeof(buf)), OUTCOME_FAILED);
		assert_string_equal(buf, "exi");
		assert_int_equal(outcome_classify_why(&in, NULL, 0), OUTCOME_FAILED);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_failures),
		cmocka_unit_test(test_oom),
		cmocka_unit_test(test_terminal_result),
		cmocka_unit_test(test_no_terminal),
		cmocka_unit_test(test_success_checks),
		cmocka_unit_test(test_tally_and_exit),
		cmocka_unit_test(test_poll_pty_liveness),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_lost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
