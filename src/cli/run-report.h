/* Why tasks failed, as `status` and the end of `run`/`resume` show it: the
 * agent's own last error (state.db attempts.agent_error) and the log of a
 * failed gate, beside the task's reason (orch/failure.h). */
#ifndef BERNSTEIN_CLI_RUN_REPORT_H
#define BERNSTEIN_CLI_RUN_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli/cli.h"
#include "orch/state.h"

/* The exit code of `run`, `resume` and `demo` from the states of the tasks
 * an execution ran (counts[state]: how many), and what `status` shows for
 * a run that ended: 0 all done or no_changes, 6 refusals and nothing else
 * wrong, 1 any task failed, conflicted, blocked or left unfinished, 130
 * cancelled (docs/exit-codes.md). One rule for both. */
int run_report_exit(const size_t *counts, bool cancelled);
/* Its words: "ok", "a task failed or is unfinished", "tasks refused", "interrupted",
 * "budget reached" (`status` gives 7 itself: run-report knows no budget). */
const char *run_report_exit_words(int code);

/* Why `resume` has nothing to move in run_id, into buf: the states its tasks
 * are in ("2 done, 1 failed, 1 refused") and that ended tasks are not
 * resumed. */
void run_report_nothing_to_resume(struct state *st, const char *run_id, char *buf, size_t size);

/* Whether a task in state s needs the user's eyes (failed, refused,
 * conflict, blocked, interrupted). */
bool run_report_is_problem(enum task_state s);
/* What the live table shows of a reason: the agent's own words when the
 * reason carries them (they say more than the rule in a narrow column), else
 * the reason. A pointer into reason. */
const char *run_report_short_reason(const char *reason);
/* Set "agent_error" (of t's last attempt; null none) and "gate_log" (null
 * none) in o. */
void run_report_task_json(struct state *st, const struct task_row *t, json_t *o);
/* The tasks of run_id named by ids (n of them) that need the user's eyes:
 * text lines on ctx->out ("  TASK: failed: REASON", then the gate log and the
 * logs command), or with json an array "problems" set in json_o. */
void run_report_problems(struct cli_ctx *ctx, struct state *st, const char *run_id,
			 const char *const *ids, size_t n, json_t *json_o);

#endif
