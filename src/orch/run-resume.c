/* Resume: what `bernstein resume` does with each task of a run, and the
 * fallback prompt of an attempt that continues another (run-internal.h,
 * docs/runs.md "Resume"). */
#include "orch/run-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/strategy.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define CONTEXT_EVENTS	    12		 /* events quoted in a fallback resume */
#define CONTEXT_EVENTS_READ (256u << 10) /* tail of events.jsonl read for them */
#define CONTEXT_FIELD_MAX   300

static const char *jget_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The files the previous attempt of t changed so far: in its worktree, and
 * on its branch since the base. */
static void fallback_files(struct loop *l, struct otask *t, struct sbuf *sb)
{
	struct checkout *co = run_task_checkout(l, t);
	struct strvec files = STRVEC_INIT;
	size_t i;

	if (co) {
		(void)checkout_changes(co, &files, NULL);
		if (l->run.base_branch)
			(void)checkout_changed_files(co, l->run.base_branch, &files, NULL);
	}
	if (files.nr) {
		(void)sbuf_addf(sb, "- files changed so far:");
		for (i = 0; i < files.nr && i < 50; i++)
			(void)sbuf_addf(sb, " %s", files.v[i]);
		(void)sbuf_addf(sb, "%s\n", files.nr > 50 ? " ..." : "");
	} else {
		(void)sbuf_addf(sb, "- files changed so far: none\n");
	}
	strvec_clear(&files);
}

/* One line of events.jsonl into lines ("- KIND: WHAT"), the text of a text
 * or result event into *last_text. */
static void fallback_event(const char *line, struct strvec *lines, json_t **last_text)
{
	json_t *ev = json_loads(line, 0, NULL);
	const char *kind = jget_str(ev, "kind");
	const char *what = NULL;

	if (kind && (strcmp(kind, "text") == 0 || strcmp(kind, "result") == 0)) {
		what = jget_str(ev, "text");
		if (what && *what) {
			json_decref(*last_text);
			*last_text = json_string(what);
		}
	} else if (kind && strcmp(kind, "tool_call") == 0) {
		what = jget_str(ev, "tool_name");
	} else if (kind && strcmp(kind, "error") == 0) {
		what = jget_str(ev, "message");
	}
	if (kind && what && *what)
		strvec_pushf(lines, "- %s: %.*s", kind, CONTEXT_FIELD_MAX, what);
	json_decref(ev);
}

/* The previous attempt's final message and last events, from the tail of
 * its events.jsonl. */
static void fallback_events(struct loop *l, struct otask *t, const struct attempt_row *prev,
			    struct sbuf *sb)
{
	struct strvec lines = STRVEC_INIT;
	char *dir, *ev_path, *text = NULL;
	size_t len = 0, i, start;
	const char *final = NULL;
	json_t *last_text = NULL;

	dir = run_session_path(l, t, NULL);
	{
		struct sbuf p = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&p, "%s/%" PRId64 "/events.jsonl", dir, prev->n);
		ev_path = sbuf_detach(&p, NULL);
	}
	if (read_file_tail(ev_path, CONTEXT_EVENTS_READ, &text, &len) == 0 && text) {
		const char *p = len > CONTEXT_EVENTS_READ ? text + len - CONTEXT_EVENTS_READ : text;
		char *copy = xstrdup(p), *save = NULL, *line;

		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			fallback_event(line, &lines, &last_text);
		free(copy);
	}
	final = last_text ? json_string_value(last_text) : NULL;
	if (final)
		(void)sbuf_addf(sb, "- final message: %.*s\n", CONTEXT_FIELD_MAX * 4, final);
	if (lines.nr) {
		(void)sbuf_addf(sb, "### Last events\n");
		start = lines.nr > CONTEXT_EVENTS ? lines.nr - CONTEXT_EVENTS : 0;
		for (i = start; i < lines.nr; i++)
			(void)sbuf_addf(sb, "%s\n", lines.v[i]);
	}
	json_decref(last_text);
	strvec_clear(&lines);
	free(text);
	free(ev_path);
	free(dir);
}

/* The fallback resume prompt: what the previous attempt did, then the task. */
char *run_fallback_prompt(struct loop *l, struct otask *t, const struct attempt_row *prev,
			  const char *prompt)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(
		&sb,
		"## Resume context\n"
		"A previous attempt at this task (attempt %" PRId64
		", adapter %s) ended early (%s). Its work is in this worktree. Continue from where it stopped; do not redo what is done.\n",
		prev->n, prev->adapter ? prev->adapter : "?",
		prev->reason ? prev->reason : (prev->outcome ? prev->outcome : "interrupted"));
	if (prev->agent_session_id)
		(void)sbuf_addf(&sb, "- prior_adapter_session_id: %s\n", prev->agent_session_id);
	fallback_files(l, t, &sb);
	fallback_events(l, t, prev, &sb);
	if (!prompt)
		prompt = run_prompt(t) ? run_prompt(t) : "";
	(void)sbuf_addf(&sb, "\n## Task\n%s", prompt);
	return sbuf_detach(&sb, NULL);
}

/* The previous attempt of t, when the next one should continue it. */
bool run_previous_attempt(struct loop *l, struct otask *t, struct attempt_row *ret)
{
	struct attempt_row *v = NULL;
	size_t n = 0;
	bool found = false;

	if (t->row.attempts <= 0)
		return false;
	if (state_attempts_get(l->e->st, l->run.id, t->row.id, &v, &n, NULL) < 0 || n == 0)
		return false;
	*ret = v[n - 1];
	attempt_row_init(&v[n - 1]);
	found = true;
	attempt_rows_free(v, n);
	return found;
}

/* ---- resume ---- */

const char *resume_action_to_string(enum resume_action a)
{
	static const char *const names[_RESUME_ACTION_MAX] = {
		[RESUME_NATIVE] = "native", [RESUME_FALLBACK] = "fallback",
		[RESUME_START] = "start",   [RESUME_COMPLETE] = "complete",
		[RESUME_MERGE] = "merge",
	};

	return (int)a >= 0 && a < _RESUME_ACTION_MAX ? names[a] : NULL;
}

void resume_plan_release(struct resume_plan *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		free(p->v[i].task_id);
		free(p->v[i].adapter);
		free(p->v[i].agent_session_id);
	}
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

/* The action resume takes for t (whose last attempt is prev, if any). */
static enum resume_action resume_kind(struct loop *l, const struct otask *t,
				      const struct attempt_row *prev)
{
	const struct registry_entry *entry;
	struct strategy_resolved res;

	if (t->row.state == TASK_COMPLETING)
		return RESUME_COMPLETE;
	if (t->row.state == TASK_MERGING || t->row.state == TASK_REBASING ||
	    t->row.state == TASK_RESOLVING)
		return RESUME_MERGE; /* a conflict: handled again from the rebase */
	if (!prev)
		return RESUME_START;
	entry = prev->adapter ? catalog_find(l->e->cat, prev->adapter) : NULL;
	if (!entry || !entry->profile || !prev->agent_session_id)
		return RESUME_FALLBACK;
	(void)catalog_profile_strategy(l->e->cat, entry->profile, &res);
	return res.strategy.resume == RESUME_UNSUPPORTED ? RESUME_FALLBACK : RESUME_NATIVE;
}

static bool lock_held(const char *repo)
{
	char *path = agentrun_path(repo, ORCH_LOCK_FILE);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	bool held = false;

	free(path);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		held = true;
	(void)close(fd);
	return held;
}

/* The run to resume: RUN, else the latest (then run_or_task, if given,
 * names a task of it: *ret_only); -EBUSY while another bernstein runs it. */
static int resume_find_run(struct orch_env *e, const char *run_or_task, struct run_row *run,
			   const char **ret_only, struct diag *reterr)
{
	int r = -ENOENT;

	*ret_only = NULL;
	if (run_or_task)
		r = state_run_get(e->st, run_or_task, run, NULL);
	if (r == -ENOENT) {
		r = state_run_latest(e->st, run, reterr);
		if (r == -ENOENT)
			diag_set(reterr, state_path(e->st), 0, 0, "no run recorded yet");
		if (r < 0)
			return r;
		*ret_only = run_or_task;
	} else if (r < 0) {
		diag_set(reterr, state_path(e->st), 0, 0, "cannot read run '%s'", run_or_task);
		return r;
	}
	if (!e->locked && lock_held(e->repo)) {
		diag_set(reterr, e->repo, 0, 0,
			 "run '%s' is still running (another bernstein holds %s)", run->id,
			 ORCH_LOCK_FILE);
		return -EBUSY;
	}
	return 0;
}

/* What resume does with t (into it); with apply, done: an attempt left open
 * by a dead bernstein is closed, and a running, interrupted or blocked t is
 * pending again. */
static int resume_task(struct loop *l, struct otask *t, bool apply, struct resume_item *it,
		       struct diag *reterr)
{
	struct attempt_row prev;
	bool has_prev;
	char ts[TS_MAX];
	int r = 0;

	attempt_row_init(&prev);
	has_prev = run_previous_attempt(l, t, &prev);
	it->task_id = xstrdup(t->row.id);
	it->state = t->row.state;
	/* as dispatch decides: an attempt that did not complete (still
	 * open, or interrupted, rate limited...) is continued */
	it->action = resume_kind(
		l, t,
		has_prev && (!prev.outcome || strcmp(prev.outcome, "completed") != 0) ? &prev
										      : NULL);
	it->adapter = prev.adapter ? xstrdup(prev.adapter) : NULL;
	if (it->action == RESUME_NATIVE && prev.agent_session_id)
		it->agent_session_id = xstrdup(prev.agent_session_id);
	if (apply && has_prev && !prev.ended_at) {
		/* bernstein died with the agent running: what its runtime
		 * left of a container goes */
		run_container_sweep(l, t);
		run_set_str(&prev.ended_at, run_now(l, ts));
		run_set_str(&prev.outcome, "cancelled");
		run_set_str(&prev.reason, "bernstein stopped while the agent ran");
		r = state_attempt_update(l->e->st, &prev, reterr);
		if (r < 0)
			goto out;
	}
	if (apply && (t->row.state == TASK_RUNNING || t->row.state == TASK_INTERRUPTED ||
		      t->row.state == TASK_BLOCKED)) {
		run_set_str(&t->row.retry_at, NULL);
		r = run_transition(l, t, TASK_EV_RESUMED, "resumed");
		if (r < 0)
			*reterr = l->fatal_d;
	}
out:
	attempt_row_release(&prev);
	return r < 0 ? r : 0;
}

int orch_resume_prepare(struct orch_env *e, const char *run_or_task, bool apply,
			struct resume_plan *ret, struct diag *reterr)
{
	struct run_row run = RUN_ROW_INIT;
	const char *only = NULL;
	struct loop l;
	size_t i;
	int r;

	memset(ret, 0, sizeof(*ret));
	run_row_init(&run);
	r = resume_find_run(e, run_or_task, &run, &only, reterr);
	if (r < 0)
		goto out;
	r = run_loop_load(&l, e, run.id, reterr);
	if (r < 0) {
		if (l.e)
			run_loop_release(&l);
		goto out;
	}
	if (only && run_find_task(&l, only) < 0) {
		diag_set(reterr, state_path(e->st), 0, 0,
			 "no run '%s', and no task '%s' in the latest run '%s'", only, only,
			 run.id);
		run_loop_release(&l);
		r = -ENOENT;
		goto out;
	}
	(void)snprintf(ret->run_id, sizeof(ret->run_id), "%s", run.id);
	ret->unfinished = run.state == RUN_RUNNING || run.state == RUN_INTERRUPTED;
	ret->v = xcalloc(l.n ? l.n : 1, sizeof(*ret->v));
	for (i = 0; i < l.n && r >= 0; i++) {
		struct otask *t = &l.t[i];

		if (only && strcmp(t->row.id, only) != 0)
			continue;
		if (t->row.state == TASK_DONE || t->row.state == TASK_NO_CHANGES ||
		    t->row.state == TASK_FAILED || t->row.state == TASK_REFUSED ||
		    t->row.state == TASK_CONFLICT || t->row.state == TASK_CANCELLED ||
		    t->row.state == TASK_REVIEW)
			continue;
		r = resume_task(&l, t, apply, &ret->v[ret->n++], reterr);
	}
	if (r >= 0 && apply && only)
		e->only_task = only;
	run_loop_release(&l);
out:
	run_row_release(&run);
	return r;
}
