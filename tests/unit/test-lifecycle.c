/* The life of a task (src/orch/lifecycle.h): every cell of state x event
 * against an expected table written here apart from the code, the names of
 * the events, and docs/runs.md's table of the moves ("The life of a task")
 * read and compared with the code's table, cell by cell, both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orch/lifecycle.h"
#include "util/fsutil.h"
#include "util/sbuf.h"

/* The expected moves, "from event to"; every other cell is illegal. A
 * change in src/orch/lifecycle.c has to be made here too, on purpose. */
static const char *const expected[] = {
	"pending dispatched running",
	"pending refused refused",
	"pending dispatch_failed failed",
	"pending dependency_failed blocked",
	"pending cancelled cancelled",
	"pending setup_failed failed",
	"running agent_completed completing",
	"running no_changes no_changes",
	"running rate_limited pending",
	"running agent_failed failed",
	"running interrupted interrupted",
	"running resumed pending",
	"running cancelled cancelled",
	"running retrying pending",
	"running fallback pending",
	"completing no_changes no_changes",
	"completing changes_failed failed",
	"completing gates_failed failed",
	"completing gates_passed merging",
	"completing not_merged done",
	"completing cancelled cancelled",
	"completing review_requested review",
	"completing pushed done",
	"completing push_failed failed",
	"merging merged done",
	"merging conflict conflict",
	"merging merge_failed failed",
	"merging merge_postponed merging",
	"interrupted resumed pending",
	"interrupted cancelled cancelled",
	"interrupted retried pending",
	"blocked resumed pending",
	"blocked cancelled cancelled",
	"blocked retried pending",
	"failed retried pending",
	"conflict retried pending",
	"cancelled retried pending",
	"review approved merging",
	"review rejected pending",
	"review cancelled cancelled",
	"merging rebasing rebasing",
	"rebasing rebased rebasing",
	"rebasing rebase_failed conflict",
	"rebasing resolving resolving",
	"rebasing gates_passed merging",
	"rebasing gates_failed failed",
	"rebasing review_requested review",
	"rebasing resumed rebasing",
	"rebasing cancelled cancelled",
	"resolving dispatched resolving",
	"resolving resolved resolving",
	"resolving resolve_failed conflict",
	"resolving refused conflict",
	"resolving dispatch_failed conflict",
	"resolving agent_failed conflict",
	"resolving gates_passed merging",
	"resolving gates_failed failed",
	"resolving review_requested review",
	"resolving resumed rebasing",
	"resolving cancelled cancelled",
};

static const char *expected_to(const char *from, const char *ev, char *buf, size_t size)
{
	size_t i;

	for (i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		char f[32], e[32], t[32];

		assert_int_equal(sscanf(expected[i], "%31s %31s %31s", f, e, t), 3);
		if (strcmp(f, from) == 0 && strcmp(e, ev) == 0) {
			(void)snprintf(buf, size, "%s", t);
			return buf;
		}
	}
	return NULL;
}

static void test_every_cell(void **state)
{
	int s, ev;
	size_t legal = 0;

	(void)state;
	for (s = 0; s < _TASK_STATE_MAX; s++) {
		for (ev = 0; ev < _TASK_EVENT_MAX; ev++) {
			const char *from = task_state_to_string((enum task_state)s);
			const char *name = task_event_to_string((enum task_event)ev);
			enum task_state to =
				lifecycle_next((enum task_state)s, (enum task_event)ev);
			char buf[32];
			const char *want = expected_to(from, name, buf, sizeof(buf));

			if (!want && (int)to >= 0)
				fail_msg("%s on %s: %s, expected illegal", from, name,
					 task_state_to_string(to));
			if (want && ((int)to < 0 || strcmp(task_state_to_string(to), want) != 0))
				fail_msg("%s on %s: %s, expected %s", from, name,
					 (int)to < 0 ? "illegal" : task_state_to_string(to), want);
			legal += want != NULL;
		}
	}
	assert_int_equal(legal, sizeof(expected) / sizeof(expected[0]));
	/* out of range is illegal, never a read past the table */
	assert_int_equal(lifecycle_next(_TASK_STATE_MAX, TASK_EV_RESUMED), _TASK_STATE_INVALID);
	assert_int_equal(lifecycle_next(TASK_PENDING, _TASK_EVENT_MAX), _TASK_STATE_INVALID);
	assert_int_equal(lifecycle_next(_TASK_STATE_INVALID, TASK_EV_DISPATCHED),
			 _TASK_STATE_INVALID);
	assert_int_equal(lifecycle_next(TASK_PENDING, _TASK_EVENT_INVALID), _TASK_STATE_INVALID);
}

/* Properties whatever the table says. */
static void test_properties(void **state)
{
	int s, ev;

	(void)state;
	for (ev = 0; ev < _TASK_EVENT_MAX; ev++) {
		const char *name = task_event_to_string((enum task_event)ev);

		assert_non_null(name);
		assert_int_equal(task_event_from_string(name), ev);
	}
	assert_int_equal(task_event_from_string("bogus"), _TASK_EVENT_INVALID);
	assert_int_equal(task_event_from_string(NULL), _TASK_EVENT_INVALID);
	assert_null(task_event_to_string(_TASK_EVENT_MAX));
	for (s = 0; s < _TASK_STATE_MAX; s++) {
		bool any = false, run = false;

		for (ev = 0; ev < _TASK_EVENT_MAX; ev++) {
			bool legal =
				(int)lifecycle_next((enum task_state)s, (enum task_event)ev) >= 0;

			any = any || legal;
			/* the moves a run makes by itself (not a user's retry or
			 * cancel) */
			run = run || (legal && ev != TASK_EV_RETRIED && ev != TASK_EV_CANCELLED);
		}
		/* a final state has no way out; failed, conflict and cancelled
		 * only a retry; blocked only resume's (or a retry, a cancel) */
		if (s == TASK_DONE || s == TASK_NO_CHANGES || s == TASK_REFUSED)
			assert_false(any);
		else
			assert_true(any);
		if (s == TASK_FAILED || s == TASK_CONFLICT || s == TASK_CANCELLED)
			assert_false(run);
		assert_int_equal(lifecycle_terminal((enum task_state)s), !run || s == TASK_BLOCKED);
	}
	/* every event leads somewhere from some state */
	for (ev = 0; ev < _TASK_EVENT_MAX; ev++) {
		bool any = false;

		for (s = 0; s < _TASK_STATE_MAX; s++)
			any = any ||
			      (int)lifecycle_next((enum task_state)s, (enum task_event)ev) >= 0;
		assert_true(any);
	}
	assert_true(lifecycle_finished_ok(TASK_DONE));
	assert_true(lifecycle_finished_ok(TASK_NO_CHANGES));
	assert_false(lifecycle_finished_ok(TASK_FAILED));
}

/* docs/runs.md: the rows "| `from` | `event` | `to` |" between the markers
 * are exactly the legal cells of the table. */
static void test_docs_table(void **state)
{
	const char *src = getenv("SRCDIR");
	bool seen[_TASK_STATE_MAX][_TASK_EVENT_MAX] = {{false}};
	struct sbuf path = SBUF_INIT(SIZE_MAX);
	char *text = NULL, *begin, *end, *line, *save = NULL;
	size_t len = 0, rows = 0, legal = 0;
	int s, ev;

	(void)state;
	(void)sbuf_addf(&path, "%s/docs/runs.md", src && *src ? src : ".");
	assert_int_equal(read_file_capped(path.buf, 1u << 20, &text, &len), 0);
	begin = strstr(text, "<!-- lifecycle: begin -->");
	end = strstr(text, "<!-- lifecycle: end -->");
	assert_non_null(begin);
	assert_non_null(end);
	assert_true(begin < end);
	*end = '\0';
	for (line = strtok_r(begin, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char f[32], e[32], t[32];
		enum task_state from, to;
		enum task_event evn;

		if (sscanf(line, "| `%31[a-z_]` | `%31[a-z_]` | `%31[a-z_]` |", f, e, t) != 3)
			continue;
		from = task_state_from_string(f);
		evn = task_event_from_string(e);
		to = task_state_from_string(t);
		if ((int)from < 0 || (int)evn < 0 || (int)to < 0)
			fail_msg("docs/runs.md: unknown name in '%s'", line);
		if (seen[from][evn])
			fail_msg("docs/runs.md: '%s' twice", line);
		seen[from][evn] = true;
		if (lifecycle_next(from, evn) != to)
			fail_msg("docs/runs.md: '%s', but the code moves %s on %s to %s", line, f,
				 e,
				 (int)lifecycle_next(from, evn) < 0
					 ? "nowhere"
					 : task_state_to_string(lifecycle_next(from, evn)));
		rows++;
	}
	for (s = 0; s < _TASK_STATE_MAX; s++)
		for (ev = 0; ev < _TASK_EVENT_MAX; ev++)
			if ((int)lifecycle_next((enum task_state)s, (enum task_event)ev) >= 0) {
				legal++;
				if (!seen[s][ev])
					fail_msg("docs/runs.md does not list %s on %s",
						 task_state_to_string((enum task_state)s),
						 task_event_to_string((enum task_event)ev));
			}
	assert_int_equal(rows, legal);
	free(text);
	sbuf_release(&path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_cell),
		cmocka_unit_test(test_properties),
		cmocka_unit_test(test_docs_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
