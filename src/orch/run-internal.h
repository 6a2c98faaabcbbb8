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
 *   run-hooks.c     hooks: (pre_task, post_task, post_merge, on_run_end run
 *                   by the supervisor; pre_merge as the last gate) and
 *                   notify: (run_notify(): the bernstein-notify helper)
 *   run-budget.c    an attempt's cost (task.cost) and the run's budget
 *                   (budget.warn, budget.exceeded; orch/budget.h)
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
 *   run-hooks.c    -> control (a cancelled pre_task), task
 *   run-task.c     -> hooks (run_hooks_transition()), (the layers below)
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
#include "orch/budget.h"
#include "orch/checkout.h"
#include "orch/confine.h"
#include "orch/hooks.h"
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
	/* the task as recorded (orch/spec.h), with row.prompt and row.spec:
	 * NULL while not held (a waiting or ended task: run_task_cool());
	 * read it with run_spec(), which loads it from state.db */
	struct task_spec *spec;
	bool spec_kept; /* its spec differs from state.db's: kept, not looked at again */
	size_t *deps;	/* indices */
	size_t n_deps;
	bool selected; /* runs in this execution (resume of one task: only it) */
	/* it has ended and keeps only what the scheduler and the run's end
	 * read (id, state, attempts, dependencies): its row's other strings,
	 * its last attempt and its checkout are in state.db, read back by
	 * run_task_warm() when something needs them (run_task_slim()) */
	bool slim;

	/* the live attempt */
	bool live;
	struct loop *loop;
	/* its last attempt's row (184 bytes): allocated when first asked for
	 * (run_att()), dropped when it ends slim, so a task that has not run
	 * or has ended holds none (issue #24) */
	struct attempt_row *att;
	/* its invocation (run_plan(): made when first needed, dropped when the
	 * attempt ends, run_plan_drop()) */
	struct invocation_plan *plan;
	/* the attempt's agent (21 KB): allocated at dispatch, freed when the
	 * attempt ends (run_task_ar_free()), so a run of many tasks keeps one
	 * per live attempt, not one per task; NULL none */
	struct agentrun *ar;
	char *prompt; /* as given to the agent (fallback resume prefixes context) */
	struct strvec attachments;
	char *session_dir;
	/* its checkout (orch/checkout.h): bound by run_task_checkout() */
	struct checkout co;
	/* sandboxed: what its agent and gates may read and write, computed once
	 * per attempt (at dispatch; for gates after a resume, when first needed) */
	struct confine_policy *sb; /* run_sb(), run_sb_drop() */
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
	char *gate_log;	  /* its log file (or worktree_setup's setup_command's) */
	/* the worktree made by a supervised `git worktree add` (run_dispatch()):
	 * routed and recorded, the command running, done, or failed (then
	 * worktree_add() repairs and makes it); then worktree_setup's
	 * setup_command running, done (run-wtsetup.c) */
	enum { PREP_NONE, PREP_RUNNING, PREP_DONE, PREP_FAILED, PREP_SETUP, PREP_SETUP_DONE } prep;
	/* `bernstein cancel` asked (its agent, gate or worktree command is
	 * being stopped: the task ends cancelled); `retry --fresh`: the next
	 * attempt starts afresh, not continuing the last one */
	bool cancel_req, fresh;
	/* hooks (run-hooks.c): those due (bit 1 << enum hook_kind) with their
	 * events as of when they fell due; one running now (hook_live: kind
	 * hook_kind, its log); pre_task passed for the attempt about to start;
	 * gate_hook: the last of gates is the pre_merge hook */
	unsigned hooks_due;
	json_t *hook_ev[_HOOK_KIND_MAX];
	/* the event of the post_task or post_merge hook running now: it
	 * stays due in state.db (runs.hooks_due) until the hook ended */
	json_t *hook_live_ev;
	bool hook_live;
	int hook_kind;
	char *hook_log;
	bool pre_task_ok;
	bool gate_hook;
	/* run-budget.c: the live attempt's usage when the budget last looked */
	double budget_seen;
	/* conflicts (run-conflict.c): the conflict handlings of this execution
	 * (bounded); a resolver attempt to dispatch; the base commit its merge
	 * took in (the resolution must contain it) */
	unsigned conflict_rounds;
	bool resolve_due;
	bool gates_due;	   /* rebased or resolved: its gates to start again */
	char *own_adapter; /* the adapter of its work, before any resolver */
	char *resolve_base;
};

/* run-budget.c: the budget of the run and what it has spent */
struct run_budget {
	struct orch_budget b;
	bool active;	       /* a cap is set */
	double spent_usd;      /* the ended attempts of known cost */
	int64_t spent_tokens;  /* the ended attempts' input + output tokens */
	size_t unknown;	       /* ended attempts with tokens and no cost */
	bool warned, exceeded; /* budget.warn, budget.exceeded written */
	bool stop_pending;     /* on_exceed: stop, the supervisor not told yet */
};

struct loop {
	struct orch_env *e;
	struct run_row run;
	struct otask *t;
	size_t n;
	/* the scans per dispatch walk the tasks that are not slim (nothing in
	 * a slim task is live, due or pending: run_task_slim()), so they take
	 * the time of the tasks still open, not of all (issue #24): skip[i]
	 * is 0 or an index past i with every task in between slim (cap
	 * entries; run_open() follows and shortens them, run_task_warm()
	 * clears them) */
	size_t *skip;
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
	/* orch_run_execute() runs this loop, or orch_control_offline()
	 * serves a request with it (hooks and notifications happen only then,
	 * not while a run is merely loaded: status, resume's plan); the run's
	 * own hook (on_run_end) runs as this pseudo-task, once */
	bool executing;
	/* a plan's own hooks: and notify: (state.db runs.hooks, run-hooks.c:
	 * run_hooks_load()); the strings point into plan_hooks_json */
	json_t *plan_hooks_json;
	struct orch_hookset plan_hooks;
	struct orch_notify plan_notify;
	struct otask run_hook;
	bool run_hook_done;
	struct run_budget budget;
	/* checkout: (run-sandbox.c): whether unsandboxed tasks get overlay
	 * trees, decided at the first (0 not yet, 1 yes, 2 reflink trees
	 * instead, -1 no: then why was said once) */
	int overlay;
	/* slurm.git_daemon: the hub served for the run's Slurm jobs
	 * (run-executor.c); pid -1 while not started */
	struct proc gitd;
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
/* t's spec, and its prompt (t->row.prompt, NULL when it has none), loaded
 * from state.db when t does not hold them; never NULL (a failed load fails
 * the run: the spec is then empty). run_task_cool(): a task that waits or
 * has ended drops them (its spec, prompt and the spec's JSON, about 2 KB),
 * when what it holds is what state.db has (issue #24: a fan-out's memory
 * grows with its live tasks, not all of them); run_spec_new(): t gets an
 * empty spec to fill (an added task). */
struct task_spec *run_spec(const struct otask *t);
const char *run_prompt(const struct otask *t);
void run_task_cool(struct otask *t);
/* t's invocation plan and sandbox policy: allocated empty when first
 * asked for (never NULL), released and freed by the drops, so a task
 * that waits or has ended holds neither (issue #24). */
struct invocation_plan *run_plan(const struct otask *t);
void run_plan_drop(struct otask *t);
struct attempt_row *run_att(const struct otask *t);
void run_att_drop(struct otask *t);
struct confine_policy *run_sb(const struct otask *t);
void run_sb_drop(struct otask *t);
struct task_spec *run_spec_new(struct otask *t);
int run_loop_load(struct loop *l, struct orch_env *e, const char *run_id, struct diag *reterr);
char *run_session_path(const struct loop *l, const struct otask *t, const char *leaf);
void run_task_limits(const struct loop *l, const struct otask *t, struct contain_limits *ret);

/* run-sandbox.c */
void run_checkout_made(struct loop *l, struct otask *t);
void run_overlay_gc(struct loop *l);
enum sandbox_kind run_task_tier(struct loop *l, const struct otask *t);
unsigned run_task_offered_tiers(struct loop *l, const struct otask *t);
bool run_task_sandboxed(struct loop *l, const struct otask *t);
/* t's attempt's agent run released and freed (NULL-safe; run-task.c). */
void run_task_ar_free(struct otask *t);
/* A task that has ended (lifecycle_terminal(), nothing of it running)
 * keeps only what the run's end and a later retry read: its sandbox
 * policy (rebuilt when next needed) and its last prompt go, so a run's
 * memory does not grow with the tasks it has finished. */
void run_task_trim(struct otask *t);
/* An ended task (as run_task_trim(), and no hook due, no gate left) drops
 * what state.db has: its row's strings but its id, its last attempt's
 * row, its checkout, session directory and attachments (issue #24: about
 * 1.5 KB a task); true when it is slim (now or already). run_task_warm():
 * what it dropped read back from state.db (its row; its checkout is bound
 * again by run_task_checkout(), its previous attempt read as a resume
 * reads it), before anything reads or writes them: every transition, a
 * retry, a cancel. A failed read fails the run. */
bool run_task_slim(struct loop *l, struct otask *t);
void run_task_warm(struct loop *l, struct otask *t);
/* The first task at or after i that is not slim (l->n: none); walk the
 * open tasks with for (i = run_open(l, 0); i < l->n; i = run_open(l, i + 1)). */
size_t run_open(const struct loop *l, size_t i);
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
/* The containers t's runtime left behind (a container-tier task whose
 * runtime was killed): deleted, a warning when one cannot be
 * (confine_oci_sweep()). Cheap when there are none (a directory read). */
void run_container_sweep(struct loop *l, const struct otask *t);
void run_net_event(const struct otask *t, const char *msg);

/* run-executor.c: the task's executor (orch/executor.h); why it cannot
 * run there (NULL: it can); its agent's spec turned into the relay's */
enum executor_kind run_task_executor(const struct loop *l, const struct otask *t);
const char *run_executor_refusal(struct loop *l, const struct otask *t, char *msg, size_t size);
int run_executor_wrap(struct loop *l, struct otask *t, double timeout_s, struct proc_spec *spec,
		      struct diag *reterr);
/* a slurm task whose relay reported its job lost: its attempt's outcome
 * inputs say so (before classifying) */
void run_executor_lost(struct loop *l, struct otask *t);
/* the run's git daemon stopped (run_loop_release()) */
void run_executor_release(struct loop *l);

/* run-dispatch.c */
int run_dispatch(struct loop *l, struct otask *t, struct proc_spec *spec);

/* run-resume.c: prompt is the task's (rendered, orch/context.h; NULL: its
 * prompt as written) */
char *run_fallback_prompt(struct loop *l, struct otask *t, const struct attempt_row *prev,
			  const char *prompt);
bool run_previous_attempt(struct loop *l, struct otask *t, struct attempt_row *ret);

/* run-complete.c */
void run_finish(struct loop *l, struct otask *t);
void run_complete(struct loop *l, struct otask *t);
int run_gate_spec(struct loop *l, struct otask *t, struct proc_spec *spec);
/* `/bin/sh -c run` in t's checkout, supervised and confined like a gate
 * (env without secrets, timeout, kill grace, output to log, t's limits, t's
 * sandbox tier); 0 or a negative errno with why in reterr. */
int run_command_spec(struct loop *l, struct otask *t, const char *run, double timeout_s,
		     const char *log, struct proc_spec *spec, struct diag *reterr);

void run_gate_ended(struct loop *l, struct otask *t, const struct proc *p);

/* run-wtsetup.c: t's worktree_setup (bernstein.yaml's, its role's, its
 * plan's and its own, key by key); it and .worktreeinclude applied to t's
 * made checkout (0; else t is refused with the reason, < 0); the linked
 * directories added to t's sandbox policy's read-only lists; its
 * setup_command into spec (1: spawn it, t->prep PREP_SETUP; 0: none; < 0:
 * t failed with setup_failed) and its end (t->prep PREP_SETUP_DONE: the
 * dispatch goes on; else t failed with setup_failed, or cancelled). */
void run_task_wtsetup(const struct loop *l, const struct otask *t, struct orch_wtsetup *ret);
int run_worktree_setup(struct loop *l, struct otask *t);
void run_worktree_setup_ro(struct loop *l, const struct otask *t, struct confine_policy *p);
int run_setup_spec(struct loop *l, struct otask *t, struct proc_spec *spec);
void run_setup_ended(struct loop *l, struct otask *t, const struct proc *p);

/* run-merge.c */
void run_merge(struct loop *l, struct otask *t, const char *gates_msg);
/* The paths of bernstein's own configuration (orch/protect.h) that head
 * (t's branch when NULL) changes against the merge base with the run's
 * base branch, appended to hits. A negative errno with why in reterr. */
int run_protected_changes(struct loop *l, const struct otask *t, const char *head,
			  struct strvec *hits, struct diag *reterr);

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
/* protected: the paths of bernstein's own configuration the task changes
 * (may be NULL or empty): named in the review's reason, and approve then
 * needs --allow-protected. */
void run_review_request(struct loop *l, struct otask *t, const char *gates_msg,
			const struct strvec *protected);
void run_review_control(struct loop *l, const struct control_request *req,
			const struct control_peer *who, json_t *reply);
/* the feedback prompt: prompt (NULL: the task's as written), then the
 * reviewer's feedback */
char *run_review_prompt(const struct otask *t, const char *prompt);
void run_pr_deliver(struct loop *l, struct otask *t, const char *gates_msg,
		    const struct strvec *protected);

/* run-cleanup.c */
void run_flush_branches(struct loop *l);
int run_set_aside(struct loop *l, struct otask *t);
void run_remove_worktree(struct loop *l, struct otask *t, bool removed);

/* run-control.c: requests from another shell (orch/control.h) */
void run_control_start(struct loop *l, struct supervisor_ops *ops, struct supervisor_opts *sopts);
void run_control_cancelled(struct loop *l, struct otask *t);
bool run_deps_state(const struct loop *l, const struct otask *t, bool *ret_blocked);
void run_gates_clear(struct otask *t);

/* t's live process is a preparation (`git worktree add`, setup_command),
 * not its agent. */
static inline bool run_prep_live(const struct otask *t)
{
	return t->prep == PREP_RUNNING || t->prep == PREP_SETUP;
}

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

/* run-hooks.c: hooks run by the supervisor and notifications (orch/hooks.h).
 * run_hook_next(): a hook due of some task into spec (1, *ret_task set;
 * 0 none). run_hook_pre_task(): before t's dispatch: 0 it passed (or none
 * is set), 1 the hook is in spec (start it with t), 2 t waits or failed.
 * run_hook_run_end(): when nothing is left (waiting: a retry is due later),
 * on_run_end into spec once (1), else 0. run_hook_ended(): a hook's child
 * ended (t->hook_live). run_hook_gate_io(): pre_merge's event on a gate's
 * spec (stdin, BERNSTEIN_*); run_hook_is_gate(): t's current gate is it.
 * run_hooks_transition(): after every state change (due hooks,
 * notifications). run_notify(): event (a name of enum notify_event) about
 * t (NULL: the run) sent by the bernstein-notify helper when notify: asks
 * for it; never blocks, never fails the run. */
/* run_hook_of(): hook k of t (NULL: the run's) as the merge rule gives it
 * (t's role's, else the plan's, else bernstein.yaml's), NULL when none.
 * run_hooks_load(): the plan's hooks and notify and the hooks due that an
 * earlier execution left (state.db), for an execution or a request served
 * offline. run_hooks_record(): a new run's plan's hooks and notify into
 * state.db. run_hooks_drain(): a request served offline: the hooks its
 * state changes made due run now, under a supervisor of their own. */
const struct orch_hook *run_hook_of(const struct loop *l, const struct otask *t, enum hook_kind k);
int run_hooks_load(struct loop *l, struct diag *reterr);
struct plan;
int run_hooks_record(struct orch_env *e, const struct plan *plan, const char *run_id,
		     const char *now, struct diag *reterr);
int run_hooks_drain(struct loop *l, struct diag *reterr);
void run_hooks_loop_release(struct loop *l);
int run_hook_next(struct loop *l, struct proc_spec *spec, void **ret_task);
int run_hook_pre_task(struct loop *l, struct otask *t, struct proc_spec *spec);
int run_hook_run_end(struct loop *l, bool waiting, struct proc_spec *spec, void **ret_task);
void run_hook_ended(struct loop *l, struct otask *t, const struct proc *p);
/* hook.finished in the audit chain (t NULL: the run's hook) */
void run_hook_audit(struct loop *l, const struct otask *t, const char *name, const struct proc *p,
		    const char *log, bool ok);
void run_hook_gate_io(struct loop *l, struct otask *t, struct proc_spec *spec);
bool run_hook_is_gate(const struct otask *t);
void run_hooks_transition(struct loop *l, struct otask *t, enum task_state from,
			  enum task_event ev);
void run_hooks_release(struct otask *t);
void run_notify(struct loop *l, const char *event, const struct otask *t, const char *reason);
/* run-budget.c: the budget of the run loaded (runs.budget, run/resume
 * --max-cost-usd), spent-so-far from state.db; after an attempt ended, its
 * model, cached tokens and cost into t->att and task.cost audited; after
 * an agent's line (cheap unless its usage changed) and after an attempt,
 * the caps checked (budget.warn, budget.exceeded: draining, and with
 * on_exceed: stop, run_budget_interrupt() says true once); the resolved
 * budget of a new run recorded (its JSON into *ret_json for run.started). */
int run_budget_load(struct loop *l, struct diag *reterr);
void run_budget_attempt(struct loop *l, struct otask *t);
void run_budget_check(struct loop *l);
void run_budget_line(struct loop *l, struct otask *t);
bool run_budget_interrupt(void *ctx);
struct plan;
int run_budget_record(struct orch_env *e, const struct plan *plan, const char *run_id,
		      const char *now, json_t **ret_json, struct diag *reterr);

/* run-repair.c */
int run_repair_locks(struct loop *l, int64_t locked_ns, struct diag *reterr);
void run_repair_worktrees(struct loop *l);
void run_cleanup_worktrees(struct loop *l);

#endif
