/* Completion: an agent ended; its outcome, its changes, its artifact, then
 * the gates run by the supervisor (run-internal.h, docs/runs.md
 * "Completion"). */
#include "orch/run-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/outcome.h"
#include "orch/config.h"
#include "orch/failure.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define ARTIFACT_MAX	  (1ull << 32) /* bytes hashed at most */
#define GATE_EXIT_TIMEOUT 124	       /* a gate past its timeout, as timeout(1) */
#define GATE_LOG_MAX	  (1u << 20)   /* bytes of a gate's output kept in gate-NAME.log */

/* Artifact mode: the declared file exists inside the worktree; its SHA-256
 * goes into the row and the audit chain. 0, or a reason in msg. */
static int check_artifact(struct loop *l, struct otask *t, const char *art, char *msg, size_t size)
{
	char real_wt[PATH_MAX], real_art[PATH_MAX], hex[SHA256_HEX_LEN + 1];
	char *path = agentrun_path(t->row.worktree, art), *data = NULL, *rid;
	size_t len = 0, wl;
	struct stat st;
	json_t *det;
	int r;

	if (!realpath(t->row.worktree, real_wt) || !realpath(path, real_art) ||
	    lstat(real_art, &st) < 0) {
		(void)snprintf(msg, size, "the declared artifact '%s' was not produced", art);
		free(path);
		return -ENOENT;
	}
	if (!S_ISREG(st.st_mode)) {
		r = file_type_error(st.st_mode);
		(void)snprintf(msg, size, "the declared artifact '%s' %s", art, file_strerror(r));
		free(path);
		return r;
	}
	wl = strlen(real_wt);
	if (strncmp(real_art, real_wt, wl) != 0 || real_art[wl] != '/') {
		(void)snprintf(msg, size,
			       "the declared artifact '%s' resolves outside the worktree", art);
		free(path);
		return -EXDEV;
	}
	r = read_file_capped(real_art, ARTIFACT_MAX, &data, &len);
	free(path);
	if (r < 0) {
		(void)snprintf(msg, size, "cannot read the artifact '%s': %s", art,
			       file_strerror(r));
		return r;
	}
	hash_sha256_hex(data, len, hex);
	free(data);
	run_set_str(&t->row.artifact_sha256, hex);
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "path", json_str_lossy(art));
	json_obj_set(det, "sha256", json_str_lossy(hex));
	json_obj_set(det, "bytes", json_integer((json_int_t)len));
	rid = run_task_resource(l, t);
	r = run_audit(l, "artifact.completed", "task", rid, det);
	free(rid);
	return r < 0 ? r : 0;
}

/* t's gates: the configuration's, then its own, then hooks.pre_merge
 * (run-hooks.c: a gate with the event on its stdin). */
static void gate_list(const struct loop *l, struct otask *t)
{
	const struct orch_config *c = l->e->cfg;
	const struct orch_hook *pm = run_hook_of(l, t, HOOK_PRE_MERGE);

	free(t->gates);
	t->gate_hook = pm != NULL;
	t->n_gates = c->n_gates + run_spec(t)->n_gates + (t->gate_hook ? 1 : 0);
	t->gates = xcalloc(t->n_gates + 1, sizeof(*t->gates));
	if (c->n_gates)
		memcpy(t->gates, c->gates, c->n_gates * sizeof(*t->gates));
	if (run_spec(t)->n_gates)
		memcpy(t->gates + c->n_gates, run_spec(t)->gates,
		       run_spec(t)->n_gates * sizeof(*t->gates));
	if (t->gate_hook) {
		struct orch_gate *g = &t->gates[t->n_gates - 1];

		g->name = hook_kind_to_string(HOOK_PRE_MERGE);
		g->run = pm->run;
		g->timeout_s = pm->timeout_s;
		g->line = pm->line;
		g->col = pm->col;
	}
}

void run_gates_clear(struct otask *t)
{
	free(t->gates);
	t->gates = NULL;
	t->n_gates = 0;
}

void run_gates_start(struct loop *l, struct otask *t, const char *no_gates_msg)
{
	gate_list(l, t);
	t->gate_next = 0;
	if (t->n_gates)
		return; /* next_task starts them */
	run_gates_clear(t);
	run_merge(l, t, no_gates_msg);
}

/* The agent's work committed and judged; then the gates (run by the
 * supervisor: agents are read meanwhile, timeouts fire on time), then the
 * merge. The task is in state completing, or merging after a crash. */
void run_finish(struct loop *l, struct otask *t)
{
	struct orch_env *e = l->e;
	const char *art = run_spec(t)->artifact;
	struct checkout *co = run_task_checkout(l, t);
	char msg[2048], *head = NULL;
	bool committed = false;
	unsigned ahead = 0;
	struct diag d;
	int r;

	diag_clear(&d);
	if (t->row.state == TASK_MERGING) {
		run_merge(l, t, NULL);
		return;
	}
	if (art && check_artifact(l, t, art, msg, sizeof(msg)) != 0) {
		if (!l->fatal)
			(void)run_transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "bernstein: %s\n\nTask %s of run %s, attempt %" PRId64 ".",
		       t->row.title ? t->row.title : t->row.id, t->row.id, l->run.id,
		       t->row.attempts);
	if (!co) {
		(void)run_transition(l, t, TASK_EV_CHANGES_FAILED,
				     "cannot commit the agent's changes: the task has no worktree");
		return;
	}
	if ((r = checkout_check(co, &d)) < 0) {
		(void)snprintf(msg, sizeof(msg), "the task's %s cannot be trusted: %s",
			       checkout_noun(co), d.msg);
		(void)run_transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	r = checkout_commit(co, msg, &e->identity, &committed, &d);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot commit the agent's changes: %s", d.msg);
		(void)run_transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	/* the branch into the repository, where the merge takes it */
	r = checkout_publish(co, l->run.base_branch, &ahead, &head, &d);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot inspect branch '%s': %s", t->row.branch,
			       d.msg);
		(void)run_transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	free(t->row.head_commit);
	t->row.head_commit = head;
	if (ahead == 0) {
		run_set_str(&t->row.outcome, outcome_to_string(OUTCOME_NO_CHANGES));
		(void)run_transition(l, t, TASK_EV_NO_CHANGES,
				     "the agent finished without changes");
		run_remove_worktree(l, t, false);
		return;
	}
	gate_list(l, t);
	t->gate_next = 0;
	if (t->n_gates) {
		/* next_task starts them (run_gate_spec()), on_exit_cb() judges them
		 * (run_gate_ended()), and the last one to pass calls run_merge() */
		return;
	}
	run_gates_clear(t);
	run_merge(l, t, "no gates");
}

/* Did the agent of t change anything: commits on its branch, or files in
 * its worktree? Asked only as far as the verdict depends on it, because each
 * git process costs the supervisor milliseconds on every task:
 *   - when the outcome is the same either way, not at all;
 *   - else by `git status`; when it lists nothing, the branch has not moved
 *     since this execution made it (read from the ref files) and
 *     "unchanged" makes the task no_changes, the worktree is moved aside at
 *     once (run_set_aside(), *ret_removed): the removal no_changes does anyway;
 *   - else by the commits the branch has over the base.
 * A crash between moving the worktree aside and the state commit that
 * follows leaves the task running in the state and its worktree gone;
 * resume makes the worktree again and runs the task on its (empty) branch,
 * never in a half-removed one. */
static void judge_changes(struct loop *l, struct otask *t, bool *ret_removed)
{
	struct checkout *co = run_task_checkout(l, t);
	bool changed = false, moved, listed;
	struct strvec changes = STRVEC_INIT;
	enum outcome if_unchanged, if_changed;
	unsigned ahead = 0;

	*ret_removed = false;
	if (!co)
		return;
	agentrun_set_changes(t->ar, false);
	if_unchanged = agentrun_classify(t->ar, NULL, 0);
	agentrun_set_changes(t->ar, true);
	if_changed = agentrun_classify(t->ar, NULL, 0);
	if (if_unchanged == if_changed)
		return;
	/* asked where the branch lives (a clone's: in the clone, confined) */
	moved = checkout_moved(co);
	listed = checkout_changes(co, &changes, NULL) == 0;
	if (listed && changes.nr > 0)
		changed = true;
	strvec_clear(&changes);
	/* a kind that is not set aside (a clone) goes whole later */
	if (listed && !changed && !moved && if_unchanged == OUTCOME_NO_CHANGES &&
	    run_set_aside(l, t) == 0) {
		*ret_removed = true;
		agentrun_set_changes(t->ar, false);
		return;
	}
	if (!changed && moved && checkout_ahead(co, l->run.base_branch, &ahead, NULL) == 0 &&
	    ahead > 0)
		changed = true;
	agentrun_set_changes(t->ar, changed);
}

/* The agent of t ended: record the attempt and move the task on. */
void run_complete(struct loop *l, struct otask *t)
{
	struct orch_env *e = l->e;
	struct checkout *co = run_task_checkout(l, t);
	char why[768] = "", ts[TS_MAX], msg[768], tampered[1024] = "";
	enum outcome out;
	bool removed = false;
	struct diag d;
	int64_t delay;

	diag_clear(&d);
	/* no git runs in a checkout unless it can (a clone still one); a
	 * resolver's tree is judged by run_conflict_resolver_ended() */
	if (t->row.state == TASK_RESOLVING)
		agentrun_set_changes(t->ar, true);
	else if (co && checkout_check(co, &d) < 0)
		(void)snprintf(tampered, sizeof(tampered), "the task's %s cannot be trusted: %s",
			       checkout_noun(co), d.msg);
	else
		judge_changes(l, t, &removed);
	run_executor_lost(l, t);
	out = agentrun_classify(t->ar, why, sizeof(why));
	run_set_str(&run_att(t)->ended_at, run_now(l, ts));
	delay = meters_feed(&l->meters, t->row.adapter, out, &t->ar->in.hint);
	run_set_str(&run_att(t)->outcome, outcome_to_string(out));
	run_set_str(&run_att(t)->reason, why);
	/* what the agent said went wrong: kept when it did not complete (a
	 * retried hiccup of an agent that then finished is not its error) */
	run_set_str(&run_att(t)->agent_error, out != OUTCOME_COMPLETED &&
							      out != OUTCOME_NO_CHANGES &&
							      agentrun_last_error(t->ar)[0]
						      ? agentrun_last_error(t->ar)
						      : NULL);
	run_att(t)->exit_code = t->ar->agent_exit_code;
	if (t->ar->agent_session && !run_att(t)->agent_session_id)
		run_att(t)->agent_session_id = xstrdup(t->ar->agent_session);
	if (t->ar->input_tokens != EVENT_UNSET)
		run_att(t)->input_tokens = t->ar->input_tokens;
	if (t->ar->output_tokens != EVENT_UNSET)
		run_att(t)->output_tokens = t->ar->output_tokens;
	if (t->ar->cost_usd >= 0)
		run_att(t)->cost_usd = t->ar->cost_usd;
	run_budget_attempt(l, t); /* model, cached tokens, the cost; task.cost */
	if (t->ar->last_kind[0])
		run_set_str(&run_att(t)->last_event, t->ar->last_kind);
	if (t->ar->agent_session)
		run_set_str(&t->row.agent_session_id, t->ar->agent_session);
	run_set_str(&t->row.outcome, outcome_to_string(out));
	if (state_attempt_update(e->st, run_att(t), &d) < 0)
		run_fail(l, -EIO, &d);
	{
		struct session_record rec = {
			.adapter = t->row.adapter,
			.run = l->run.id,
			.session = t->row.session,
			.task = t->row.id,
			.attempt = (int)t->row.attempts,
			.exit_code = -1,
			.started_at = run_att(t)->started_at,
			.ended_at = run_att(t)->ended_at,
		};
		json_t *s = agentrun_session_json(t->ar, out, why, &rec);
		char *p = agentrun_path(t->session_dir, "session.json");

		(void)agentrun_write_json(p, s);
		json_decref(s);
		free(p);
	}
	run_task_ar_free(t);
	run_plan_drop(t);
	t->live = false;
	run_budget_check(l); /* budget.warn, budget.exceeded (t counted once: ended) */
	/* the task's reason says what the agent itself said went wrong */
	if (out != OUTCOME_COMPLETED && out != OUTCOME_NO_CHANGES)
		orch_reason_with_agent_error(why, sizeof(why), run_att(t)->agent_error);

	if (t->cancel_req) {
		run_control_cancelled(l, t);
		return;
	}
	if (t->row.state == TASK_RESOLVING) {
		run_conflict_resolver_ended(l, t, out, why);
		return;
	}
	if (tampered[0] && out != OUTCOME_FAILED) {
		(void)run_transition(l, t, TASK_EV_AGENT_FAILED, tampered);
		return;
	}
	if (out != OUTCOME_COMPLETED && out != OUTCOME_NO_CHANGES &&
	    run_retry_after(l, t, out, delay, why))
		return;
	switch (out) {
	case OUTCOME_COMPLETED:
		if (run_transition(l, t, TASK_EV_AGENT_COMPLETED, "the agent completed") == 0)
			run_finish(l, t);
		break;
	case OUTCOME_NO_CHANGES:
		(void)run_transition(l, t, TASK_EV_NO_CHANGES, why);
		run_remove_worktree(l, t, removed);
		break;
	case OUTCOME_RATE_LIMITED:
		/* its retries spent (run_retry_after()) */
		(void)snprintf(msg, sizeof(msg), "rate limited %" PRId64 " times; giving up",
			       t->row.attempts - run_spec(t)->chain_base);
		orch_reason_with_agent_error(msg, sizeof(msg), run_att(t)->agent_error);
		(void)run_transition(l, t, TASK_EV_AGENT_FAILED, msg);
		break;
	case OUTCOME_TIMED_OUT:
	case OUTCOME_STALLED: /* retryable: resume and retry start it again */
	case OUTCOME_KILLED:
	case OUTCOME_CANCELLED:
	case OUTCOME_LOST: /* its retries spent: resume runs it again */
		(void)run_transition(l, t, TASK_EV_INTERRUPTED, why);
		break;
	case OUTCOME_FAILED:
	case OUTCOME_OOM: /* like failed */
	case OUTCOME_BINARY_MISSING:
	case OUTCOME_PERMISSION_BLOCKED:
	case _OUTCOME_MAX:
	case _OUTCOME_INVALID:
	default:
		(void)run_transition(l, t, TASK_EV_AGENT_FAILED, why);
		break;
	}
}

/* ---- gates, run by the supervisor ---- */

/* msg as a warning event of t's attempt: its session directory, or after
 * a resume (no agent ran in this execution, t has none) the directory of
 * its last attempt, so that a gate refused there is in its events too. */
static void gate_event(struct loop *l, const struct otask *t, const char *msg)
{
	char leaf[64];
	char *ev;

	if (t->session_dir) {
		run_net_event(t, msg);
		return;
	}
	if (t->row.attempts < 1)
		return;
	(void)snprintf(leaf, sizeof(leaf), "%" PRId64 "/events.jsonl", t->row.attempts);
	ev = run_session_path(l, t, leaf);
	(void)confine_event_append(ev, msg);
	free(ev);
}

/* `/bin/sh -c RUN` for t into spec, as a gate runs (and worktree_setup's
 * setup_command): in the task's checkout with git_env (PATH, HOME,
 * LC_ALL=C...: no secret, none of bernstein's own git settings), its
 * process group dying with bernstein, its timeout and the configured kill
 * grace, its output in log (the first GATE_LOG_MAX bytes; log is borrowed:
 * it must outlive the process), the agent's limits. Such a command runs what the agent wrote
 * (its Makefile, its tests): in a sandboxed task it is confined exactly like
 * the agent (its clone, the agent's HOME and TMPDIR read-write, nothing
 * else), else it would carry the agent's code out of the sandbox. 0, or a
 * negative errno with why in reterr (nothing to run). */
int run_command_spec(struct loop *l, struct otask *t, const char *run, double timeout_s,
		     const char *log, struct proc_spec *spec, struct diag *reterr)
{
	const char *const *e;

	strvec_push(&spec->argv, "/bin/sh");
	strvec_push(&spec->argv, "-c");
	strvec_push(&spec->argv, run ? run : "false");
	for (e = l->e->git_env; e && *e; e++)
		if (strncmp(*e, WORKTREE_GIT_ENV_PREFIX, strlen(WORKTREE_GIT_ENV_PREFIX)) != 0)
			strvec_push(&spec->env, *e);
	spec->cwd = t->row.worktree;
	spec->timeout_ms = run_secs_to_ms(timeout_s);
	spec->kill_grace_ms = run_secs_to_ms(l->e->cfg->kill_grace_s);
	/* behind bernstein's init: what the command leaves gets the grace */
	spec->init_exe = l->e->self_exe;
	(void)unlink(log); /* this run of the command only */
	spec->log_path = log;
	spec->max_log_bytes = GATE_LOG_MAX;
	/* the agent's limits: the command runs what the agent wrote */
	run_task_limits(l, t, &spec->limits);
	spec->cgroup_name = t->row.id;
	if (run_task_sandboxed(l, t)) {
		char *home = run_session_path(l, t, "home"), *tmp = run_session_path(l, t, "tmp");
		struct strvec env = STRVEC_INIT;
		size_t i;
		int r;

		for (i = 0; i < spec->env.nr; i++)
			if (strncmp(spec->env.v[i], "HOME=", 5) != 0)
				strvec_push(&env, spec->env.v[i]);
		strvec_pushf(&env, "HOME=%s", home);
		strvec_clear(&spec->env);
		spec->env = env;
		r = run_confine_spec(l, t, home, tmp, spec, reterr);
		free(home);
		free(tmp);
		if (r < 0)
			return r;
	}
	if (t->sb_built && run_sb(t)->network == NET_MODE_LLM && t->session_dir) {
		/* its refusals follow the agent's in the same log */
		char *nlog = agentrun_path(t->session_dir, CONFINE_NET_LOG);

		confine_net_watch_skip(&t->nw, nlog);
		free(nlog);
	}
	return 0;
}

/* t's next gate into spec (run_command_spec()), its output in
 * gate-NAME.log of the session directory. 0, or a negative errno (t is
 * failed, nothing to run). */
int run_gate_spec(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	const struct orch_gate *g = &t->gates[t->gate_next];
	const char *name = g->name;
	double to = g->timeout_s;
	char leaf[160], *c;
	struct diag d = {0};
	int r;

	if (!(to > 0))
		to = ORCH_DEFAULT_GATE_TIMEOUT_S;
	(void)snprintf(leaf, sizeof(leaf), "%s-%s.log", run_hook_is_gate(t) ? "hook" : "gate",
		       name ? name : "gate");
	for (c = leaf; *c; c++)
		if (*c == '/')
			*c = '_'; /* a name is free text: the log stays in the session directory */
	free(t->gate_log);
	t->gate_log =
		t->session_dir ? agentrun_path(t->session_dir, leaf) : run_session_path(l, t, leaf);
	if (run_hook_is_gate(t))
		run_hook_gate_io(l, t, spec); /* pre_merge: its event, stdin and BERNSTEIN_* */
	r = run_command_spec(l, t, g->run, to, t->gate_log, spec, &d);
	if (r < 0) {
		char msg[1024];

		(void)snprintf(msg, sizeof(msg), "gate '%s' could not be confined: %s",
			       name ? name : "gate", d.msg);
		gate_event(l, t, msg);
		run_gates_clear(t);
		(void)run_transition(l, t, TASK_EV_GATES_FAILED, msg);
		return r;
	}
	t->gate_live = true;
	return 0;
}

/* A gate of t ended: the next one, the merge after the last, or failed. */
void run_gate_ended(struct loop *l, struct otask *t, const struct proc *p)
{
	const char *name = t->gates[t->gate_next].name;
	const char *noun = run_hook_is_gate(t) ? "hook" : "gate";
	char msg[1024] = "";
	size_t n;

	(void)run_net_watch(t); /* the last of its refusals */
	t->gate_live = false;
	if (!name)
		name = "?";
	if (t->cancel_req) {
		run_gates_clear(t);
		run_control_cancelled(l, t);
		return;
	}
	if (p->cancelled) {
		/* stays completing: resume runs the gates again */
		l->cancelled = true;
		return;
	}
	if (p->failed_stage != SHIM_STAGE_NONE)
		(void)snprintf(msg, sizeof(msg), "%s '%s' could not run (exit %d): %s", noun, name,
			       p->exit_code, p->start_error ? p->start_error : "see the gate log");
	else if (p->timed_out)
		(void)snprintf(msg, sizeof(msg), "%s '%s' timed out after %.1f s (exit %d)", noun,
			       name, (double)p->timeout_ms / 1000.0, GATE_EXIT_TIMEOUT);
	else if (p->exit_code != 0)
		(void)snprintf(msg, sizeof(msg), "%s '%s' failed (exit %d)", noun, name,
			       p->exit_code);
	if (msg[0])
		orch_reason_with_gate_log(msg, sizeof(msg), t->gate_log);
	if (run_hook_is_gate(t))
		run_hook_audit(l, t, name, p, t->gate_log, !msg[0]);
	if (msg[0]) {
		run_gates_clear(t);
		(void)run_transition(l, t, TASK_EV_GATES_FAILED, msg);
		return;
	}
	if (++t->gate_next < t->n_gates)
		return; /* next_task starts the next */
	n = t->n_gates;
	if (t->gate_hook)
		n--; /* the last was hooks.pre_merge */
	if (t->gate_hook && n == 0)
		(void)snprintf(msg, sizeof(msg), "hook 'pre_merge' passed");
	else
		(void)snprintf(msg, sizeof(msg), "%zu gate(s) passed%s", n,
			       t->gate_hook ? ", then hook 'pre_merge'" : "");
	run_gates_clear(t);
	run_merge(l, t, msg);
}
