/* The run loop's parts (orch/run.h is its interface; docs/runs.md,
 * "Layout"): what the run-*.c files share, and nothing else includes.
 *
 * One run in memory is a struct loop of struct otask, one per task of the
 * plan. The files, each one concern, in the order a task goes through them:
 *
 *   run.c           create a run; execute it: the supervisor's callbacks
 *                   (next_task, on_exit...), the run's end and summary
 *   run-dispatch.c  a task's next attempt: route -> name -> checkout ->
 *                   invocation -> attempt -> session (run_dispatch())
 *   run-complete.c  an agent ended: outcome -> changes -> artifact ->
 *                   gates (run_complete(), run_finish(), run_gate_*())
 *   run-merge.c     the crash-safe merge into the base branch (run_merge())
 *   run-resume.c    what `bernstein resume` does, and the fallback prompt
 *                   an attempt that continues another gets
 *   run-repair.c    what a killed bernstein left in git, before any git runs
 *   run-cleanup.c   a finished task's worktree and empty branch removed
 *   run-sandbox.c   a task's sandbox tier, policy and confined process spec
 *   run-control.c   cancel, stop, retry, add-task from another shell: the
 *                   control channel's requests (orch/control.h)
 *   run-retry.c     retries, escalation models and fallback adapters of a
 *                   task whose attempt did not complete (orch/retry.h)
 *   run-review.c    merge: review (approve, reject, the feedback prompt) and
 *                   merge: pr (push, gh pr create)
 *   run-conflict.c  a merge that conflicted: the rebase in the task's tree,
 *                   the resolver agent, their repair after a crash
 *   run-task.c      the shared core: the loop loaded, a task's transition
 *                   on the lifecycle table, audit records, small helpers
 *
 * A task's tree and branch are a checkout (orch/checkout.h): a worktree, or
 * a sandboxed task's clone. The loop gets it from run_task_checkout(), the
 * one place that asks which kind it is, and uses it without asking again.
 *
 * Who calls whom (no circle; data flows plan -> spec -> dispatch ->
 * process -> outcome -> completion -> merge without coming back):
 *
 *   run.c          -> dispatch, complete, conflict, repair, cleanup, sandbox, control,
 *                     task
 *   run-control.c  -> merge (an approved task), review, conflict, cleanup, retry, task
 *   run-dispatch.c -> resume (the fallback prompt), sandbox, retry, task
 *   run-complete.c -> merge, cleanup, sandbox, retry, task
 *   run-retry.c    -> sandbox, task
 *   run-merge.c    -> review (review, pr), conflict, cleanup, task
 *   run-conflict.c -> task
 *   run-review.c   -> task
 *   run-repair.c   -> cleanup, task
 *   run-resume.c   -> sandbox, task
 *   run-cleanup.c  -> sandbox, task
 *   run-sandbox.c  -> task
 *   run-task.c     -> (the layers below)
 *
 * A dispatch never completes a task itself: when there is nothing to start
 * (the agent's binary is missing) it says so and run.c completes it. */
#ifndef BERNSTEIN_ORCH_RUN_INTERNAL_H
#define BERNSTEIN_ORCH_RUN_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapter/invocation.h"
#include "adapter/outcome.h"
#include "orch/agentrun.h"
#include "orch/checkout.h"
#include "orch/confine.h"
#include "orch/lifecycle.h"
#include "orch/meters.h"
#include "orch/run.h"
#include "orch/spec.h"
#include "orch/state.h"
#include "proc/supervise.h"
#include "util/diag.h"
#include "util/strvec.h"

struct control;

#define TS_MAX 40 /* an ISO-8601 time as clock_iso8601_utc() writes it */

/* What run_dispatch() returns besides 1 (spawn the spec), 0 (not spawned:
 * refused or failed, the state says) and < 0 (the run must stop): */
#define DISPATCH_BUSY  2 /* its adapter runs as many agents as it may */
#define DISPATCH_ENDED 5 /* nothing to start: complete the attempt now */

struct otask {
	struct task_row row;
	struct task_spec spec; /* the task as recorded (orch/spec.h) */
	size_t *deps;	       /* indices */
	size_t n_deps;
	bool selected; /* runs in this execution (resume of one task: only it) */

	/* the live attempt */
	bool live;
	struct loop *loop;
	struct attempt_row att;
	struct invocation_plan plan;
	struct agentrun ar;
	char *prompt; /* as given to the agent (fallback resume prefixes context) */
	struct strvec attachments;
	char *session_dir;
	/* its checkout (orch/checkout.h): bound by run_task_checkout() */
	struct checkout co;
	/* sandboxed: what its agent and gates may read and write, computed once
	 * per attempt (at dispatch; for gates after a resume, when first needed) */
	struct confine_policy sb;
	bool sb_built;
	/* llm: the proxy's refusals already events (run_net_watch()) */
	struct confine_net_watch nw;
	/* gates: run by the supervisor like agents, one after the other */
	/* the list (gate_list(): names and commands borrowed from the
	 * configuration and spec) while state completing; NULL none */
	struct orch_gate *gates;
	size_t n_gates;
	size_t gate_next; /* the next one to run */
	bool gate_live;	  /* a gate of this task runs now */
	char *gate_log;	  /* its log file */
	/* the worktree made by a supervised `git worktree add` (run_dispatch()):
	 * routed and recorded, the command running, done, or failed (then
	 * worktree_add() repairs and makes it) */
	enum { PREP_NONE, PREP_RUNNING, PREP_DONE, PREP_FAILED } prep;
	/* `bernstein cancel` asked (its agent, gate or worktree command is
	 * being stopped: the task ends cancelled); `retry --fresh`: the next
	 * attempt starts afresh, not continuing the last one */
	bool cancel_req, fresh;
	/* conflicts (run-conflict.c): the conflict handlings of this execution
	 * (bounded); a resolver attempt to dispatch; the base commit its merge
	 * took in (the resolution must contain it) */
	unsigned conflict_rounds;
	bool resolve_due;
	bool gates_due;	   /* rebased or resolved: its gates to start again */
	char *own_adapter; /* the adapter of its work, before any resolver */
	char *resolve_base;
};

struct loop {
	struct orch_env *e;
	struct run_row run;
	struct otask *t;
	size_t n;
	int fatal; /* a negative errno that stops the run */
	struct diag fatal_d;
	bool cancelled;
	/* empty branches of no_changes tasks, deleted together: one git
	 * process for many (run_flush_branches()) */
	struct strvec dead_branches;
	/* worktree directories moved aside (judge_changes()): their
	 * registrations go with one `git worktree prune` in run_flush_branches() */
	bool prune_worktrees;
	/* audit group commit (flush_audit_soon()): mono ms of the last flush,
	 * and when the pending one is due (0: none pending) */
	uint64_t audit_flushed_ms, audit_due_ms;
	/* the sandbox tiers this host provides, looked at once (sandbox: auto) */
	unsigned host_tiers;
	bool host_tiers_known;
	struct meters meters; /* rate limits, one meter per adapter (meters.h) */
	/* the control channel (orch/control.h): NULL when not listening;
	 * draining: `bernstein stop`, no new dispatch; sv: the supervisor,
	 * while a request is carried out (NULL offline); cap: room in t for
	 * tasks added by `bernstein add-task` (t never moves: the supervisor
	 * holds pointers into it) */
	struct control *ctl;
	bool draining;
	struct supervisor *sv;
	size_t cap;
};

/* run-task.c */
uint64_t run_secs_to_ms(double s);
const char *run_now(struct loop *l, char *buf);
void run_set_str(char **dst, const char *s);
void run_fail(struct loop *l, int r, const struct diag *d);
void run_warn(struct loop *l, const struct otask *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int run_audit(struct loop *l, const char *event_type, const char *rtype, const char *rid,
	      json_t *details);
char *run_task_resource(const struct loop *l, const struct otask *t);
int run_transition(struct loop *l, struct otask *t, enum task_event ev, const char *reason);
void run_refuse(struct loop *l, struct otask *t, enum task_event ev, const char *reason);
void run_loop_release(struct loop *l);
long run_find_task(const struct loop *l, const char *id);
int run_loop_load(struct loop *l, struct orch_env *e, const char *run_id, struct diag *reterr);
char *run_session_path(const struct loop *l, const struct otask *t, const char *leaf);
void run_task_limits(const struct loop *l, const struct otask *t, struct contain_limits *ret);

/* run-sandbox.c */
enum sandbox_kind run_task_tier(struct loop *l, const struct otask *t);
unsigned run_task_offered_tiers(struct loop *l, const struct otask *t);
bool run_task_sandboxed(struct loop *l, const struct otask *t);
struct checkout *run_task_checkout(struct loop *l, struct otask *t);
int run_task_policy(struct loop *l, struct otask *t, const char *binary, const char *session_dir,
		    const char *home, const char *tmp, struct diag *reterr);
int run_confine_spec(struct loop *l, struct otask *t, const char *home, const char *tmp,
		     struct proc_spec *spec, struct diag *reterr);
const char *run_tier_refusal(struct loop *l, const struct otask *t, char *msg, size_t size);
/* llm: the refusals of t's running agent or gate become events as they
 * happen (confine_net_watch_poll()); whether t has such a process */
bool run_net_watch(struct otask *t);
/* a warning event of t's attempt after its agent ended (a gate's) */
void run_net_event(const struct otask *t, const char *msg);

/* run-dispatch.c */
int run_dispatch(struct loop *l, struct otask *t, struct proc_spec *spec);

/* run-resume.c */
char *run_fallback_prompt(struct loop *l, struct otask *t, const struct attempt_row *prev);
bool run_previous_attempt(struct loop *l, struct otask *t, struct attempt_row *ret);

/* run-complete.c */
void run_finish(struct loop *l, struct otask *t);
void run_complete(struct loop *l, struct otask *t);
int run_gate_spec(struct loop *l, struct otask *t, struct proc_spec *spec);

/* run-wtsetup.c: worktree_setup and .worktreeinclude applied to t's made
 * checkout (0; else t is refused with the reason, < 0); the linked
 * directories added to a sandbox policy's read-only lists. */
int run_worktree_setup(struct loop *l, struct otask *t);
void run_worktree_setup_ro(struct loop *l, struct confine_policy *p);
void run_gate_ended(struct loop *l, struct otask *t, const struct proc *p);

/* run-merge.c */
void run_merge(struct loop *l, struct otask *t, const char *gates_msg);

/* run-complete.c: t's gates (the configuration's, then its own) started
 * again in its current state (rebasing, resolving: run.c, for gates_due);
 * with none, the merge */
void run_gates_start(struct loop *l, struct otask *t, const char *no_gates_msg);

/* run-conflict.c (docs/runs.md, "Conflicts"): after git_merge_prepare()
 * found conflicts in merging t (the paths; rev what it tried to merge):
 * true when on_conflict took t on (rebasing, or a resolver), false for the
 * conflict as before. run_conflict_resume(): a task found rebasing or
 * resolving by a new execution (a killed bernstein, a stop) handled again
 * from its tree's repair and the rebase. The resolver's attempt: its
 * adapter and model (NULL: as routing decides, the configuration's), its
 * prompt (caller frees), its audit record once routed, and its end. */
bool run_conflict(struct loop *l, struct otask *t, const struct strvec *conflicts, const char *rev);
void run_conflict_resume(struct loop *l, struct otask *t);
/* t's branch and tree back at the head its conflict started from (a
 * cancel, a resolver refused), best effort: a warning says what failed. */
void run_conflict_put_back(struct loop *l, struct otask *t);
const char *run_conflict_adapter(const struct loop *l, const struct otask *t);
const char *run_conflict_model(const struct loop *l, const struct otask *t);
bool run_conflict_own_adapter(const struct otask *t, const char *adapter);
char *run_conflict_prompt(struct loop *l, const struct otask *t);
int run_conflict_dispatched(struct loop *l, struct otask *t);
void run_conflict_resolver_ended(struct loop *l, struct otask *t, enum outcome out,
				 const char *why);

/* run-review.c */
struct control_request;
struct control_peer;
void run_review_request(struct loop *l, struct otask *t, const char *gates_msg);
void run_review_control(struct loop *l, const struct control_request *req,
			const struct control_peer *who, json_t *reply);
char *run_review_prompt(const struct otask *t);
void run_pr_deliver(struct loop *l, struct otask *t, const char *gates_msg);

/* run-cleanup.c */
void run_flush_branches(struct loop *l);
int run_set_aside(struct loop *l, struct otask *t);
void run_remove_worktree(struct loop *l, struct otask *t, bool removed);

/* run-control.c: requests from another shell (orch/control.h) */
void run_control_start(struct loop *l, struct supervisor_ops *ops, struct supervisor_opts *sopts);
void run_control_cancelled(struct loop *l, struct otask *t);
bool run_deps_state(const struct loop *l, const struct otask *t, bool *ret_blocked);
void run_gates_clear(struct otask *t);

/* run-retry.c: the retry: and fallback: that apply to t (task > role >
 * bernstein.yaml); the fallback adapter in use (NULL: routing decides as
 * for a first attempt); the model of t's next attempt (NULL: no escalation
 * models: the task's, role's or bernstein.yaml's); after an invocation is
 * built, its model noted in the spec; after `bernstein retry`, the chain
 * starts over; after an attempt ended with out (not completed, not
 * no_changes): true when a retry or fallback moved t on (false: the
 * outcome's usual end). delay_ms is the adapter's rate-limit wait. */
struct retry_resolved;
void run_retry_policy(const struct loop *l, const struct otask *t, struct retry_resolved *ret);
const char *run_retry_adapter(const struct loop *l, const struct otask *t);
const char *run_retry_model(const struct loop *l, const struct otask *t);
void run_retry_note(struct loop *l, struct otask *t);
void run_retry_reset(struct loop *l, struct otask *t);
bool run_retry_after(struct loop *l, struct otask *t, enum outcome out, int64_t delay_ms,
		     const char *why);
/* Before a run is recorded: every fallback adapter a task may get is in
 * the catalogue with a profile, and passes a model when models escalate
 * (so is the task's own adapter, when it names one). -EINVAL at the
 * entry's FILE:LINE:COL. */
int run_retry_check(const struct orch_env *e, const struct plan *plan, struct diag *reterr);

/* run-repair.c */
int run_repair_locks(struct loop *l, int64_t locked_ns, struct diag *reterr);
void run_repair_worktrees(struct loop *l);
void run_cleanup_worktrees(struct loop *l);

#endif
