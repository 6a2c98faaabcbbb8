/* Why tasks failed (see run-report.h). */
#include "cli/run-report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/outcome.h"
#include "cli/exit.h"
#include "cli/output.h"
#include "orch/failure.h"
#include "util/banned.h"

int run_report_exit(const size_t *counts, bool cancelled)
{
	size_t i, bad = 0;

	if (cancelled)
		return BEXIT_INTERRUPTED;
	for (i = 0; i < _TASK_STATE_MAX; i++)
		if (i != TASK_DONE && i != TASK_NO_CHANGES && i != TASK_REFUSED)
			bad += counts[i];
	if (bad)
		return BEXIT_FAILED;
	return counts[TASK_REFUSED] ? BEXIT_REFUSED : BEXIT_OK;
}

const char *run_report_exit_words(int code)
{
	switch (code) {
	case BEXIT_OK:
		return "ok";
	case BEXIT_REFUSED:
		return "tasks refused";
	case BEXIT_INTERRUPTED:
		return "interrupted";
	case BEXIT_BUDGET:
		return "budget reached";
	default:
		return "a task failed or is unfinished";
	}
}

void run_report_nothing_to_resume(struct state *st, const char *run_id, char *buf, size_t size)
{
	size_t counts[_TASK_STATE_MAX] = {0}, n = 0, i, o;
	struct task_row *tasks = NULL;
	bool first = true;

	if (state_tasks_get(st, run_id, &tasks, &n, NULL) < 0)
		n = 0;
	for (i = 0; i < n; i++)
		if ((int)tasks[i].state >= 0 && tasks[i].state < _TASK_STATE_MAX)
			counts[tasks[i].state]++;
	task_rows_free(tasks, n);
	(void)snprintf(buf, size, "every task has ended (");
	for (i = 0; i < _TASK_STATE_MAX; i++) {
		if (!counts[i])
			continue;
		o = strlen(buf);
		(void)snprintf(buf + o, size - o, "%s%zu %s", first ? "" : ", ", counts[i],
			       task_state_to_string((enum task_state)i));
		first = false;
	}
	o = strlen(buf);
	(void)snprintf(
		buf + o, size - o, "%s)%s", first ? "no tasks" : "",
		counts[TASK_FAILED] || counts[TASK_REFUSED] || counts[TASK_CONFLICT] ||
				counts[TASK_BLOCKED]
			? "; failed, refused, conflicting and blocked tasks are not resumed: fix the cause ('bernstein status' says it) and run the plan again"
			: "");
}

bool run_report_is_problem(enum task_state s)
{
	return s == TASK_FAILED || s == TASK_REFUSED || s == TASK_CONFLICT || s == TASK_BLOCKED ||
	       s == TASK_INTERRUPTED;
}

const char *run_report_short_reason(const char *reason)
{
	const char *p = reason ? strstr(reason, ORCH_AGENT_SAID) : NULL;

	return p && p[strlen(ORCH_AGENT_SAID)] ? p + strlen(ORCH_AGENT_SAID) : reason;
}

/* The agent_error of t's last attempt (caller frees), or NULL. */
static char *last_agent_error(struct state *st, const struct task_row *t)
{
	struct attempt_row *v = NULL;
	size_t n = 0;
	char *err = NULL;

	if (t->attempts < 1 || state_attempts_get(st, t->run_id, t->id, &v, &n, NULL) < 0)
		return NULL;
	if (n && v[n - 1].agent_error) {
		err = v[n - 1].agent_error;
		v[n - 1].agent_error = NULL;
	}
	attempt_rows_free(v, n);
	return err;
}

/* Where t's retries stand (docs/runs.md, "Retries, escalation and
 * fallback"), flat beside adapter and reason (the why): its attempt on the
 * adapter in use, the model of its last attempt, its position in the
 * fallback chain (0: the adapter routing chose). */
static void retry_fields(const struct task_row *t, json_t *o)
{
	json_t *spec = t->spec ? json_loads(t->spec, 0, NULL) : NULL;
	json_t *rs = json_object_get(spec, "retry_state");
	json_int_t base = json_integer_value(json_object_get(rs, "base"));
	const char *model = json_string_value(json_object_get(rs, "model"));

	if (!model)
		model = json_string_value(json_object_get(spec, "model"));
	cli_jset(o, "adapter_attempt", json_integer(t->attempts - base));
	cli_jset(o, "model", cli_jstr(model));
	cli_jset(o, "fallback", json_integer(json_integer_value(json_object_get(rs, "at"))));
	json_decref(spec);
}

void run_report_task_json(struct state *st, const struct task_row *t, json_t *o)
{
	char *err = last_agent_error(st, t);

	retry_fields(t, o);
	cli_jset(o, "agent_error", cli_jstr(err));
	cli_jset(o, "gate_log", cli_jstr(orch_reason_gate_log(t->reason)));
	free(err);
}

/* A task tried more than once: its attempts, adapter and model. */
static void retry_text(struct cli_ctx *ctx, const struct task_row *t)
{
	const char *model;
	json_t *o;

	if (t->attempts < 2)
		return;
	o = json_object();
	retry_fields(t, o);
	model = json_string_value(json_object_get(o, "model"));
	(void)fprintf(ctx->out, "    attempts: %lld (the last %lld on %s, model %s)\n",
		      (long long)t->attempts,
		      (long long)json_integer_value(json_object_get(o, "adapter_attempt")),
		      t->adapter ? t->adapter : "-", model ? model : "its default");
	json_decref(o);
}

static void problem_text(struct cli_ctx *ctx, const struct task_row *t)
{
	const char *log = orch_reason_gate_log(t->reason);
	size_t n = t->reason ? strlen(t->reason) : 0;

	/* the reason without its log path: that gets its own line */
	if (log)
		n = (size_t)(log - t->reason) - strlen(ORCH_GATE_LOG);
	(void)fprintf(ctx->out, "  %s: %s%s%.*s\n", t->id, task_state_to_string(t->state),
		      n ? ": " : "", (int)n, t->reason ? t->reason : "");
	if (log)
		(void)fprintf(ctx->out, "    %s log: %s\n",
			      t->outcome && outcome_from_string(t->outcome) == OUTCOME_SETUP_FAILED
				      ? "setup"
				      : "gate",
			      log);
	retry_text(ctx, t);
	if (t->attempts > 0 && t->state != TASK_REFUSED && t->state != TASK_BLOCKED)
		(void)fprintf(ctx->out, "    agent log: bernstein logs %s --run %s\n", t->id,
			      t->run_id);
}

void run_report_problems(struct cli_ctx *ctx, struct state *st, const char *run_id,
			 const char *const *ids, size_t n, json_t *json_o)
{
	json_t *a = json_o ? json_array() : NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		struct task_row t = TASK_ROW_INIT;

		task_row_init(&t);
		if (state_task_get(st, run_id, ids[i], &t, NULL) < 0 ||
		    !run_report_is_problem(t.state)) {
			task_row_release(&t);
			continue;
		}
		if (a) {
			json_t *o = json_object();

			cli_jset(o, "task", cli_jstr(t.id));
			cli_jset(o, "state", cli_jstr(task_state_to_string(t.state)));
			cli_jset(o, "reason", cli_jstr(t.reason));
			run_report_task_json(st, &t, o);
			(void)json_array_append_new(a, o);
		} else {
			problem_text(ctx, &t);
		}
		task_row_release(&t);
	}
	if (json_o)
		cli_jset(json_o, "problems", a);
}
