/* Runs: a plan of tasks on agents in parallel git worktrees, with state in
 * SQLite that survives a crash (docs/runs.md).
 *
 * One supervisor (proc/supervise.h) runs every agent. For each task, in
 * plan order as dependencies and limits allow (global parallelism, each
 * adapter's max_parallel_workers):
 *
 *   preflight   capability routing with route_and_record() (a refusal
 *               anchors its receipt in the audit chain and the task is
 *               refused: a hard stop, never a failover), the profile hash
 *               anchored, then the invocation's own gates (sampling,
 *               credential names, attachments) -- all before the agent
 *               sees anything of the task;
 *   worktree    .bernstein/worktrees/SESSION on branch bernstein/SESSION
 *               from the run's base commit (kept across attempts);
 *   spawn       the attempt is committed to state.db, then the agent runs
 *               under the supervisor; session dir .bernstein/runs/RUN/SESSION/N;
 *   completion  by the typed outcome: rate_limited is retried with
 *               backoff (native resume when the adapter has it); timeouts
 *               and interruptions leave the task 'interrupted' for
 *               `bernstein resume`; a completed git-diff task has its
 *               uncommitted changes committed by bernstein (an empty diff
 *               is no_changes); an artifact task must produce its declared
 *               file, whose SHA-256 is anchored (artifact.completed);
 *   gates       the configuration's and the task's commands in the worktree;
 *   merge       git merge --no-ff into the base branch (merges are
 *               serialized: one supervisor); a conflict leaves the branch
 *               intact and the task 'conflict' with the files.
 *
 * Every state change is committed to state.db before the action it enables
 * and every task transition is an audit record (task.transition). Nothing
 * here prints: the caller's hooks see task transitions and agent events. */
#ifndef BERNSTEIN_ORCH_RUN_H
#define BERNSTEIN_ORCH_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "adapter/events.h"
#include "orch/state.h"
#include "orch/worktree.h"
#include "util/clock.h"
#include "util/diag.h"

struct audit_chain;
struct control_peer;
struct control_request;
struct catalog;
struct orch_config;
struct plan;
struct redact;

#define ORCH_WORKTREES_DIR ".bernstein/worktrees"
/* In the host environment: "off" makes every unsandboxed tree a `git
 * worktree add` whatever checkout: says, and says so (docs/runs.md). */
#define RUN_OVERLAY_ENV	   "BERNSTEIN_OVERLAY"
#define ORCH_STATE_DB	   ".bernstein/state.db"
#define ORCH_LOCK_FILE	   ".bernstein/run.lock"
#define ORCH_BRANCH_PREFIX "bernstein/"
#define ORCH_ACTOR	   "bernstein"
#define ORCH_ADDED_MAX	   64 /* tasks `bernstein add-task` adds to one execution of a run */

struct orch_hooks {
	/* A task changed state (t is the row as committed; from is the old state). */
	void (*on_task)(void *userdata, const struct task_row *t, enum task_state from);
	/* A normalized event of a task's agent (json: its events.jsonl line).
	 * ev and json are redacted; rd (NULL: no secrets) holds the task's
	 * secrets, for anything the caller derives from them before printing
	 * (a description that turns control bytes into spaces could spell a
	 * secret again). */
	void (*on_event)(void *userdata, const struct task_row *t, const struct event *ev,
			 const char *json, size_t len, struct redact *rd);
	/* Something worth telling that is not a state change. */
	void (*on_warning)(void *userdata, const char *task_id, const char *msg);
	/* The execution has started: it listens on its control socket (or
	 * said why it cannot, with on_warning), once, before the first
	 * dispatch. Optional. */
	void (*on_started)(void *userdata);
	void *userdata;
};

struct orch_env {
	const char *repo; /* absolute: the top of the main checkout */
	const struct catalog *cat;
	const struct orch_config *cfg;
	struct state *st;
	struct audit_chain *chain;    /* required for runs (every decision is anchored) */
	const char *const *host_env;  /* KEY=VALUE, NULL-terminated: for the agents' allow-list */
	const char *const *git_env;   /* for git and gates: PATH, HOME, LC_ALL... */
	struct git_identity identity; /* of bernstein's commits and merges */
	const char *self_exe;	      /* this binary: built-in adapters */
	const char *audit_key_path;   /* never readable by a sandboxed agent; NULL unknown */
	const char *allowed_api_key_envs;
	unsigned parallel;     /* 0: the configuration's */
	const char *only_task; /* run only this task (resume TASK); NULL all */
	bool locked;	       /* the caller holds ORCH_LOCK_FILE (orch_lock_take()) */
	const struct clock *clk;
	struct orch_hooks hooks;
	double max_cost_usd; /* > 0: run/resume --max-cost-usd, the budget's cost cap */
	/* checkout: overlay as a non-root user: this process entered a user +
	 * mount namespace of its own for its overlays (the caller did,
	 * checkout_overlay_userns_enter()); else why it could not (recorded
	 * with the fallback), NULL when not tried */
	bool overlay_userns;
	const char *overlay_userns_why;
};

struct orch_summary {
	char run_id[64];
	enum run_state state;		/* of the run: all its tasks */
	size_t counts[_TASK_STATE_MAX]; /* the tasks of this execution (resume TASK: one) */
	size_t n_tasks;
	bool cancelled;	      /* SIGINT/SIGTERM/SIGHUP (or `bernstein stop --force`) stopped it */
	bool stopped;	      /* `bernstein stop` drained it: tasks not started are pending */
	bool budget_exceeded; /* the budget's cap was reached: no new attempt started */
};

/* Take ORCH_LOCK_FILE of repo (flock; the kernel drops it when the
 * process dies, kill -9 included): *ret_fd keeps it until closed. -EBUSY
 * when another bernstein holds it. A run takes it before it writes
 * anything (state.db, the audit chain) and keeps it to the end; then set
 * orch_env.locked. While it is held no git of a bernstein runs in repo,
 * which is what lets an execution treat the lock files bernstein's git
 * left as stale (docs/runs.md, "After a crash"). */
int orch_lock_take(const char *repo, int *ret_fd, struct diag *reterr);

/* Record a new run of plan (plan_path: as given, for the record): the run
 * row and its tasks (pending) in one transaction, base = the checked-out
 * branch and commit of e->repo, and run.started in the audit chain. The
 * run's id into run_id (at least 64 bytes). -ENOTSUP when HEAD is detached
 * (nothing recorded). The caller holds the lock (e->locked; else -EINVAL
 * and nothing is written). */
int orch_run_create(struct orch_env *e, const struct plan *plan, const char *plan_path,
		    char *run_id, size_t size, struct diag *reterr);

/* Run every task of run_id that can still run, until none can. Holds
 * ORCH_LOCK_FILE (taken here unless e->locked; -EBUSY when another
 * bernstein runs this repository). First it repairs what a killed
 * bernstein left in git (stale lock files, a half-done merge, worktrees of
 * finished tasks): -EBUSY naming a lock file that is not provably a dead
 * bernstein's. Returns 0 with the summary (the run's state says how it
 * went), or a negative errno when the run could not go on (state.db,
 * audit, git). */
int orch_run_execute(struct orch_env *e, const char *run_id, struct orch_summary *ret,
		     struct diag *reterr);

/* A control request (orch/control.h) to a run that is not live: cancel
 * (pending, blocked or interrupted tasks), retry, add_task. The caller
 * holds the run lock (e->locked). reply gets what the live run would
 * reply; a request the run refuses (no such task, a state it does not
 * apply to, an invalid task) is a reply with "ok": false and 0. After a
 * retry or an added task the run is interrupted again: `bernstein resume`
 * (orch_resume_prepare(), orch_run_execute()) carries it out. A negative
 * errno when state.db or the audit chain failed (reterr). Audited as a
 * control.request record of who, as on a live run. */
int orch_control_offline(struct orch_env *e, const char *run_id, const struct control_request *req,
			 const struct control_peer *who, json_t *reply, struct diag *reterr);

/* What `bernstein resume` would do for one task. */
enum resume_action {
	RESUME_NATIVE,	 /* "native": the agent's own session, resumed */
	RESUME_FALLBACK, /* "fallback": a fresh session with recovered context */
	RESUME_START,	 /* "start": never started; runs as planned */
	RESUME_COMPLETE, /* "complete": the agent finished; completion goes on */
	RESUME_MERGE,	 /* "merge": the merge was under way; done once */
	_RESUME_ACTION_MAX,
};
const char *resume_action_to_string(enum resume_action a);

struct resume_item {
	char *task_id;
	enum task_state state; /* its state now */
	enum resume_action action;
	char *adapter;		/* NULL when not routed yet */
	char *agent_session_id; /* native: the session resumed */
};

struct resume_plan {
	char run_id[64];
	struct resume_item *v;
	size_t n;
	/* the run never finished (killed after its last task settled): an
	 * execution still has to clean up, even with nothing to resume */
	bool unfinished;
};
void resume_plan_release(struct resume_plan *p);

/* Find the run to resume (run_or_task: a run id, a task id of the latest
 * run, or NULL: the latest run) and what would be resumed. -ENOENT when
 * there is no such run or task. With apply, the state is changed so that
 * orch_run_execute() carries it out: interrupted and crashed attempts are
 * closed and their tasks made pending again with what resume needs. A
 * task id resumes only that task. -EBUSY when the run is still running
 * (unless e->locked: the caller holds the lock). */
int orch_resume_prepare(struct orch_env *e, const char *run_or_task, bool apply,
			struct resume_plan *ret, struct diag *reterr);

#endif
