/* The supervisor's per-task state table, proc_transitions[state][event],
 * walked cell by cell without any process: every cell against the expected
 * table, then properties that must hold whatever the table says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proc/supervise.h"

#define S(x) PROC_##x
#define A(x) PROC_ACT_##x

/* The expected table, written out independently of src/proc/supervise.c:
 * a change there has to be made here too, on purpose. '-' = cannot happen. */
/* clang-format off */
static const char *const expected[_PROC_STATE_MAX][_PROC_EVENT_MAX] = {
	[S(STARTING)] = {
		[PROC_EV_SPAWNED]         = "start>running",
		[PROC_EV_SPAWN_FAILED]    = "fail>exited",
		[PROC_EV_EXITED]          = "-",
		[PROC_EV_DEADLINE]        = "-",
		[PROC_EV_GRACE_EXPIRED]   = "-",
		[PROC_EV_CANCEL]          = "-",
		[PROC_EV_LINE]            = "-",
		[PROC_EV_EOF]             = "-",
		[PROC_EV_GROUP_GONE]      = "-",
	},
	[S(RUNNING)] = {
		[PROC_EV_SPAWNED]         = "-",
		[PROC_EV_SPAWN_FAILED]    = "-",
		[PROC_EV_EXITED]          = "reaped>draining",
		[PROC_EV_DEADLINE]        = "term>terminating",
		[PROC_EV_GRACE_EXPIRED]   = "-",
		[PROC_EV_CANCEL]          = "term>terminating",
		[PROC_EV_LINE]            = "deliver>running",
		[PROC_EV_EOF]             = "ignore>running",
		[PROC_EV_GROUP_GONE]      = "-",
	},
	[S(TERMINATING)] = {
		[PROC_EV_SPAWNED]         = "-",
		[PROC_EV_SPAWN_FAILED]    = "-",
		[PROC_EV_EXITED]          = "reaped>draining",
		[PROC_EV_DEADLINE]        = "ignore>terminating",
		[PROC_EV_GRACE_EXPIRED]   = "kill>killing",
		[PROC_EV_CANCEL]          = "ignore>terminating",
		[PROC_EV_LINE]            = "deliver>terminating",
		[PROC_EV_EOF]             = "ignore>terminating",
		[PROC_EV_GROUP_GONE]      = "-",
	},
	[S(KILLING)] = {
		[PROC_EV_SPAWNED]         = "-",
		[PROC_EV_SPAWN_FAILED]    = "-",
		[PROC_EV_EXITED]          = "reaped>draining",
		[PROC_EV_DEADLINE]        = "ignore>killing",
		[PROC_EV_GRACE_EXPIRED]   = "ignore>killing",
		[PROC_EV_CANCEL]          = "ignore>killing",
		[PROC_EV_LINE]            = "deliver>killing",
		[PROC_EV_EOF]             = "ignore>killing",
		[PROC_EV_GROUP_GONE]      = "-",
	},
	[S(DRAINING)] = {
		[PROC_EV_SPAWNED]         = "-",
		[PROC_EV_SPAWN_FAILED]    = "-",
		[PROC_EV_EXITED]          = "-",
		[PROC_EV_DEADLINE]        = "ignore>draining",
		[PROC_EV_GRACE_EXPIRED]   = "finish>exited",
		[PROC_EV_CANCEL]          = "ignore>draining",
		[PROC_EV_LINE]            = "deliver>draining",
		[PROC_EV_EOF]             = "settle>settling",
		[PROC_EV_GROUP_GONE]      = "-",
	},
	[S(EXITED)] = {
		[PROC_EV_SPAWNED]         = "-",
		[PROC_EV_SPAWN_FAILED]    = "-",
		[PROC_EV_EXITED]          = "-",
		[PROC_EV_DEADLINE]        = "-",
		[PROC_EV_GRACE_EXPIRED]   = "-",
		[PROC_EV_CANCEL]          = "ignore>exited",
		[PROC_EV_LINE]            = "-",
		[PROC_EV_EOF]             = "-",
		[PROC_EV_GROUP_GONE]      = "-",
	},
	[S(SETTLING)] = {
		[PROC_EV_SPAWNED]         = "-",
		[PROC_EV_SPAWN_FAILED]    = "-",
		[PROC_EV_EXITED]          = "-",
		[PROC_EV_DEADLINE]        = "ignore>settling",
		[PROC_EV_GRACE_EXPIRED]   = "finish>exited",
		[PROC_EV_CANCEL]          = "ignore>settling",
		[PROC_EV_LINE]            = "deliver>settling",
		[PROC_EV_EOF]             = "ignore>settling",
		[PROC_EV_GROUP_GONE]      = "finish>exited",
	},
};
/* clang-format on */

static void test_every_cell(void **state)
{
	int s, e, cells = 0;

	(void)state;
	for (s = 0; s < _PROC_STATE_MAX; s++)
		for (e = 0; e < _PROC_EVENT_MAX; e++) {
			const struct proc_transition *t = &proc_transitions[s][e];
			char got[64];

			if (t->action == A(INVALID))
				(void)snprintf(got, sizeof(got), "-");
			else
				(void)snprintf(got, sizeof(got), "%s>%s",
					       proc_action_name(t->action),
					       proc_state_name(t->next));
			if (strcmp(got, expected[s][e]) != 0)
				fail_msg("[%s][%s]: got '%s', expected '%s'",
					 proc_state_name((enum proc_state)s),
					 proc_event_name((enum proc_event)e), got, expected[s][e]);
			cells++;
		}
	assert_int_equal(cells, 7 * 9);
}

/* Every valid cell names a real action and a real next state; invalid cells
 * name no state. */
static void test_cells_well_formed(void **state)
{
	int s, e;

	(void)state;
	for (s = 0; s < _PROC_STATE_MAX; s++)
		for (e = 0; e < _PROC_EVENT_MAX; e++) {
			const struct proc_transition *t = &proc_transitions[s][e];

			assert_true(t->action < _PROC_ACTION_MAX);
			assert_string_not_equal(proc_action_name(t->action), "?");
			if (t->action == A(INVALID)) {
				assert_int_equal(t->next, _PROC_STATE_INVALID);
				continue;
			}
			assert_true(t->next >= 0 && t->next < _PROC_STATE_MAX);
			/* Time never runs backwards: no cell returns to STARTING,
			 * and only STARTING enters RUNNING from elsewhere. */
			assert_int_not_equal(t->next, S(STARTING));
			if (t->next == S(RUNNING))
				assert_true(s == S(STARTING) || s == S(RUNNING));
			/* IGNORE and DELIVER never change the state. */
			if (t->action == A(IGNORE) || t->action == A(DELIVER))
				assert_int_equal(t->next, s);
			/* Only FINISH and FAIL enter EXITED (besides staying). */
			if (t->next == S(EXITED) && s != S(EXITED))
				assert_true(t->action == A(FINISH) || t->action == A(FAIL));
		}
	for (e = 0; e < _PROC_EVENT_MAX; e++)
		assert_string_not_equal(proc_event_name((enum proc_event)e), "?");
	for (s = 0; s < _PROC_STATE_MAX; s++)
		assert_string_not_equal(proc_state_name((enum proc_state)s), "?");
}

/* A model of the world, to run the table without processes: what each
 * action makes happen next. */
struct world {
	enum proc_state state;
	bool term_sent, kill_sent, reaped, pipes_closed, finished;
	bool honours_term; /* the agent dies on SIGTERM */
	bool leftover;	   /* it leaves a process in its group, pipes closed */
	bool leftover_honours_term;
	int steps;
};

static bool step(struct world *w, enum proc_event ev)
{
	const struct proc_transition *t = &proc_transitions[w->state][ev];

	if (t->action == A(INVALID))
		return false;
	w->state = t->next;
	w->steps++;
	switch (t->action) {
	case A(TERM):
		w->term_sent = true;
		break;
	case A(KILL):
		w->kill_sent = true;
		break;
	case A(REAPED):
		w->reaped = true;
		if (w->pipes_closed)
			return step(w, PROC_EV_EOF);
		break;
	case A(SETTLE):
		if (!w->leftover)
			return step(w, PROC_EV_GROUP_GONE);
		break;
	case A(FINISH):
	case A(FAIL):
		w->finished = true;
		break;
	default:
		break;
	}
	return true;
}

/* The next event the world produces, given what was sent. */
static enum proc_event world_next(struct world *w)
{
	if (w->state == S(SETTLING)) /* what it left ends on SIGTERM, or the grace */
		return w->leftover_honours_term ? PROC_EV_GROUP_GONE : PROC_EV_GRACE_EXPIRED;
	if (!w->reaped && (w->kill_sent || (w->term_sent && w->honours_term)))
		return PROC_EV_EXITED;
	if (!w->reaped && w->term_sent)
		return PROC_EV_GRACE_EXPIRED;
	if (w->reaped && !w->pipes_closed)
		return PROC_EV_GRACE_EXPIRED; /* a grandchild holds the pipe */
	return PROC_EV_EOF;
}

/* From RUNNING, a deadline or a cancel always ends in EXITED within a few
 * steps, whether or not the agent honours SIGTERM, and SIGKILL is sent only
 * when it does not. */
static void test_termination(void **state)
{
	int start, honours, pipes;

	(void)state;
	for (start = 0; start < 2; start++)
		for (honours = 0; honours < 2; honours++)
			for (pipes = 0; pipes < 2; pipes++) {
				struct world w = {.state = S(STARTING)};

				w.honours_term = honours;
				w.pipes_closed = pipes;
				assert_true(step(&w, PROC_EV_SPAWNED));
				assert_int_equal(w.state, S(RUNNING));
				assert_true(step(&w, PROC_EV_LINE));
				assert_true(step(&w, start ? PROC_EV_CANCEL : PROC_EV_DEADLINE));
				assert_true(w.term_sent);
				while (!w.finished) {
					assert_true(w.steps < 10);
					assert_true(step(&w, PROC_EV_LINE));
					assert_true(step(&w, PROC_EV_CANCEL));
					assert_true(step(&w, world_next(&w)));
				}
				assert_int_equal(w.state, S(EXITED));
				assert_int_equal(w.kill_sent, !honours);
			}
}

/* Normal life: spawned, lines, exited, eof. And a spawn failure. */
static void test_normal_paths(void **state)
{
	struct world w = {.state = S(STARTING)};

	(void)state;
	assert_true(step(&w, PROC_EV_SPAWNED));
	assert_true(step(&w, PROC_EV_LINE));
	assert_true(step(&w, PROC_EV_EOF)); /* pipes may close before the exit */
	assert_int_equal(w.state, S(RUNNING));
	w.pipes_closed = true;
	assert_true(step(&w, PROC_EV_EXITED)); /* REAPED raises EOF: over */
	assert_int_equal(w.state, S(EXITED));
	assert_true(w.finished);
	assert_false(w.term_sent || w.kill_sent);

	/* It left a process in its group, pipes closed: that one gets the
	 * grace (settling) and the task ends when it is gone, or at the grace. */
	for (int honours = 0; honours < 2; honours++) {
		w = (struct world){.state = S(STARTING)};
		w.leftover = true;
		w.leftover_honours_term = honours;
		assert_true(step(&w, PROC_EV_SPAWNED));
		w.pipes_closed = true;
		assert_true(step(&w, PROC_EV_EXITED));
		assert_int_equal(w.state, S(SETTLING));
		assert_false(w.finished);
		assert_true(step(&w, PROC_EV_LINE)); /* a hook's line still arrives */
		assert_true(step(&w, PROC_EV_CANCEL));
		assert_int_equal(w.state, S(SETTLING));
		assert_true(step(&w, world_next(&w)));
		assert_int_equal(w.state, S(EXITED));
		assert_true(w.finished);
	}

	w = (struct world){.state = S(STARTING)};
	assert_true(step(&w, PROC_EV_SPAWN_FAILED));
	assert_int_equal(w.state, S(EXITED));
	assert_true(w.finished);
	/* Nothing but a (harmless) cancel can reach a finished task. */
	assert_false(step(&w, PROC_EV_LINE));
	assert_false(step(&w, PROC_EV_EXITED));
	assert_true(step(&w, PROC_EV_CANCEL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_cell),
		cmocka_unit_test(test_cells_well_formed),
		cmocka_unit_test(test_termination),
		cmocka_unit_test(test_normal_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
