/* Worktree setup in the run loop (orch/wtsetup.h): applied to a task's
 * tree after its checkout is made, before its agent starts, on every
 * attempt (copies overwrite, links replace: a setup interrupted by a kill
 * is simply done again); then its setup_command, run by the supervisor
 * like a gate (run_command_spec(): confined in the task's tier, the gate's
 * environment, its timeout), its output in setup.log of the session
 * directory of the attempt it prepares. It fails the task with the outcome
 * setup_failed (the event setup_failed: pending -> failed), the log's path
 * in its reason; `bernstein retry` runs it all again. */
#include "orch/run-internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/outcome.h"
#include "orch/config.h"
#include "orch/failure.h"
#include "orch/worktree.h"
#include "orch/wtsetup.h"
#include "util/fsutil.h"
#include "util/banned.h"

#define SETUP_EXIT_TIMEOUT 124 /* past its timeout, as timeout(1) (and a gate) */
#define SETUP_LOG	   "setup.log"

void run_task_wtsetup(const struct loop *l, const struct otask *t, struct orch_wtsetup *ret)
{
	orch_config_wtsetup(l->e->cfg, t->row.role, ret);
	wtsetup_merge(ret, &run_spec(t)->wtsetup);
}

int run_worktree_setup(struct loop *l, struct otask *t)
{
	struct orch_wtsetup ws;
	struct strvec inc = STRVEC_INIT;
	char msg[1200];
	struct diag d = {0};
	int r;

	run_task_wtsetup(l, t, &ws);
	r = git_worktreeinclude(l->e->repo, l->e->git_env, &inc, &d);
	if (r >= 0 && (inc.nr || ws.n_copy || ws.n_links))
		r = wtsetup_apply(l->e->repo, t->row.worktree, &ws, &inc, NULL, &d);
	strvec_clear(&inc);
	if (r >= 0)
		return 0;
	(void)snprintf(msg, sizeof(msg), "worktree setup failed: %s", d.msg);
	run_refuse(l, t, TASK_EV_DISPATCH_FAILED, msg);
	return r;
}

void run_worktree_setup_ro(struct loop *l, const struct otask *t, struct confine_policy *p)
{
	struct orch_wtsetup ws;
	struct strvec v = STRVEC_INIT;
	size_t i;

	run_task_wtsetup(l, t, &ws);
	wtsetup_link_targets(l->e->repo, &ws, &v);
	for (i = 0; i < v.nr; i++) {
		strvec_push(&p->ro, v.v[i]);
		strvec_push(&p->ro_bind, v.v[i]);
	}
	strvec_clear(&v);
}

/* t fails with the outcome setup_failed and why. */
static void setup_failed(struct loop *l, struct otask *t, const char *why)
{
	t->live = false;
	t->prep = PREP_NONE;
	run_set_str(&t->row.outcome, outcome_to_string(OUTCOME_SETUP_FAILED));
	(void)run_transition(l, t, TASK_EV_SETUP_FAILED, why);
}

int run_setup_spec(struct loop *l, struct otask *t, struct proc_spec *spec)
{
	struct orch_wtsetup ws;
	char leaf[32], msg[1200];
	struct diag d = {0};
	int r;

	run_task_wtsetup(l, t, &ws);
	if (!ws.setup_command)
		return 0;
	/* the session directory of the attempt it prepares (build_invocation()
	 * names the same one): its log beside that attempt's gate logs */
	(void)snprintf(leaf, sizeof(leaf), "%" PRId64, t->row.attempts + 1);
	free(t->session_dir);
	t->session_dir = run_session_path(l, t, leaf);
	r = mkdir_p(t->session_dir, 0700);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg),
			       ORCH_SETUP_REASON "could not run: cannot create '%.900s': %s",
			       t->session_dir, strerror(-r));
		setup_failed(l, t, msg);
		return r;
	}
	free(t->gate_log);
	t->gate_log = agentrun_path(t->session_dir, SETUP_LOG);
	/* a sandbox policy for this start: the last attempt's named its
	 * session directory (and the network proxy's socket there) */
	run_sb_drop(t);
	confine_net_watch_release(&t->nw);
	t->sb_built = false;
	r = run_command_spec(l, t, ws.setup_command, wtsetup_timeout(&ws), t->gate_log, spec, &d);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), ORCH_SETUP_REASON "could not be confined: %s",
			       d.msg);
		setup_failed(l, t, msg);
		return r;
	}
	t->prep = PREP_SETUP;
	t->live = true;
	return 1;
}

void run_setup_ended(struct loop *l, struct otask *t, const struct proc *p)
{
	char msg[1200] = "";

	(void)run_net_watch(t); /* the last of its refusals */
	t->live = false;
	t->prep = PREP_NONE;
	if (t->cancel_req) {
		run_control_cancelled(l, t);
		return;
	}
	if (p->cancelled) {
		/* stays pending: resume sets it up again */
		l->cancelled = true;
		return;
	}
	if (p->failed_stage != SHIM_STAGE_NONE)
		(void)snprintf(msg, sizeof(msg), ORCH_SETUP_REASON "could not run (exit %d): %s",
			       p->exit_code, p->start_error ? p->start_error : "see its log");
	else if (p->timed_out)
		(void)snprintf(msg, sizeof(msg),
			       ORCH_SETUP_REASON "timed out after %.1f s (exit %d)",
			       (double)p->timeout_ms / 1000.0, SETUP_EXIT_TIMEOUT);
	else if (p->exit_code != 0)
		(void)snprintf(msg, sizeof(msg), ORCH_SETUP_REASON "failed (exit %d)",
			       p->exit_code);
	if (!msg[0]) {
		t->prep = PREP_SETUP_DONE; /* next_task dispatches it on */
		return;
	}
	orch_reason_with_gate_log(msg, sizeof(msg), t->gate_log);
	setup_failed(l, t, msg);
}
