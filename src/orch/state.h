/* The run state store: runs, tasks and attempts in SQLite at
 * <repo>/.bernstein/state.db (docs/state.md has the schema, every column and
 * the durability contract).
 *
 * - WAL mode, STRICT tables, foreign keys on, busy_timeout 5000 ms,
 *   synchronous=NORMAL; the schema is migrated by PRAGMA user_version when a
 *   writer opens the file (one transaction per migration).
 * - Only the supervisor loop writes. Every write function commits before it
 *   returns (or, inside state_begin()/state_commit(), state_commit() does),
 *   so the caller calls the API first and acts afterwards: a crash at any
 *   point leaves the last committed state, never a half-written one.
 * - Readers (`bernstein status`) open with STATE_READONLY, which works while a
 *   writer is active and sees only committed data.
 * - Timestamps are ISO-8601 UTC strings made by the caller
 *   (clock_iso8601_utc()); nothing here reads the clock.
 *
 * Errors are negative errno values with sqlite's message in the diag (file =
 * the database path): -EIO generic, -EBUSY locked (after busy_timeout),
 * -ENOSPC disk full, -EBADMSG not a database / corrupt / a stored value this
 * code cannot read, -EPROTO schema newer than this code, -EROFS a write on a
 * read-only handle, -EEXIST primary key taken, -ENOENT no such row (or, on
 * insert, a missing parent row: foreign key), -EINVAL a bad argument or a
 * value the schema rejects (NOT NULL, CHECK, type). */
#ifndef BERNSTEIN_ORCH_STATE_H
#define BERNSTEIN_ORCH_STATE_H

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"

/* The schema version this code writes (PRAGMA user_version). */
#define STATE_SCHEMA_VERSION 7

/* A NULL in a nullable INTEGER column. A REAL column uses NaN. Initialise
 * rows with *_ROW_INIT (or *_row_init()) so unset numbers stay NULL; a
 * zero-filled row stores 0. */
#define STATE_NULL_INT INT64_MIN

enum state_open_flags {
	STATE_READONLY = 1 << 0, /* never writes, never migrates */
	STATE_CREATE = 1 << 1,	 /* create the file if it is missing (not its directory) */
};

enum task_state {
	TASK_PENDING,	  /* "pending": waiting for dependencies or a slot */
	TASK_RUNNING,	  /* "running": an attempt is live */
	TASK_COMPLETING,  /* "completing": the agent ended; collecting its work, gates */
	TASK_MERGING,	  /* "merging": merging into the base branch */
	TASK_DONE,	  /* "done": merged (or artifact recorded) */
	TASK_FAILED,	  /* "failed" */
	TASK_REFUSED,	  /* "refused": routing refused it (receipt_hash) */
	TASK_CONFLICT,	  /* "conflict": the merge conflicted (conflicts lists the files) */
	TASK_BLOCKED,	  /* "blocked": a dependency did not finish */
	TASK_INTERRUPTED, /* "interrupted": bernstein stopped, timeout or rate limit; resumable */
	TASK_NO_CHANGES,  /* "no_changes": the agent finished and changed nothing */
	TASK_CANCELLED,	  /* "cancelled": `bernstein cancel`; its worktree is kept */
	TASK_REVIEW,	  /* "review": gates passed (merge: review); approve or reject */
	TASK_REBASING,	  /* "rebasing": its merge conflicted; rebased onto the base in its
			   * own tree, then its gates again (on_conflict: rebase|resolve) */
	TASK_RESOLVING,	  /* "resolving": the rebase conflicted too; a resolver agent works
			   * in its tree, then its gates again (on_conflict: resolve) */
	_TASK_STATE_MAX,
	_TASK_STATE_INVALID = -EINVAL,
};

enum run_state {
	RUN_RUNNING,	 /* "running" */
	RUN_DONE,	 /* "done" */
	RUN_FAILED,	 /* "failed" */
	RUN_INTERRUPTED, /* "interrupted" */
	_RUN_STATE_MAX,
	_RUN_STATE_INVALID = -EINVAL,
};

/* The names above; NULL for a value out of range. */
const char *task_state_to_string(enum task_state s);
enum task_state task_state_from_string(const char *s); /* _TASK_STATE_INVALID if unknown */
const char *run_state_to_string(enum run_state s);
enum run_state run_state_from_string(const char *s); /* _RUN_STATE_INVALID if unknown */

/* Rows. Every char * is NULL (SQL NULL) or a NUL-terminated string owned by
 * the row: the *_get functions allocate them, *_row_release() frees them.
 * The insert/update functions only read the row. */
struct run_row {
	char *id; /* required */
	char *plan_path;
	char *plan_hash;
	char *name;
	char *repo; /* required */
	char *base_branch;
	char *base_commit;
	enum run_state state;
	int64_t parallel; /* STATE_NULL_INT = NULL */
	char *created_at;
	char *updated_at;
	int64_t supervisor_pid; /* STATE_NULL_INT = NULL (no live supervisor) */
};
#define RUN_ROW_INIT                                                                               \
	{                                                                                          \
		.state = RUN_RUNNING, .parallel = STATE_NULL_INT, .supervisor_pid = STATE_NULL_INT \
	}

struct task_row {
	char *run_id; /* required */
	char *id;     /* required */
	int64_t idx;  /* position in the plan; state_tasks_get() orders by it */
	char *title;
	char *role;
	char *prompt;
	char *spec; /* JSON (checked by the schema) */
	enum task_state state;
	char *adapter;
	char *profile_hash;
	int64_t attempts; /* a count, never NULL */
	char *retry_at;
	char *outcome;
	char *reason;
	char *receipt_hash;
	char *branch;
	char *worktree;
	char *session;
	char *agent_session_id;
	char *head_commit;
	char *merge_commit;
	char *conflicts; /* JSON list (checked by the schema) */
	char *artifact_sha256;
	char *updated_at;
	char *feedback; /* `bernstein reject --feedback`: for the next attempt's prompt */
};
#define TASK_ROW_INIT                                                                              \
	{                                                                                          \
		.state = TASK_PENDING                                                              \
	}

struct attempt_row {
	char *run_id;  /* required */
	char *task_id; /* required */
	int64_t n;     /* 1, 2, ... */
	char *session;
	char *adapter;
	char *profile_hash;
	int64_t pid; /* STATE_NULL_INT = NULL */
	char *agent_session_id;
	char *resumed_from;
	char *resume_kind; /* "native", "fallback" or NULL (checked by the schema) */
	char *started_at;
	char *ended_at;
	char *outcome;
	int64_t exit_code; /* STATE_NULL_INT = NULL (still running) */
	char *reason;
	int64_t input_tokens;  /* STATE_NULL_INT = NULL (not reported) */
	int64_t output_tokens; /* STATE_NULL_INT = NULL */
	double cost_usd;       /* NaN = NULL */
	char *last_event;
	char *agent_error;     /* the agent's own last error, one line (adapter/lasterr.h) */
	char *model;	       /* the model that answered (the agent's word, else the one asked) */
	int64_t cached_tokens; /* cached input tokens; STATE_NULL_INT = NULL (not reported) */
	char *cost_source;     /* "agent" (it reported cost_usd), "pricing" (computed), NULL */
};
#define ATTEMPT_ROW_INIT                                                                           \
	{                                                                                          \
		.pid = STATE_NULL_INT, .exit_code = STATE_NULL_INT,                                \
		.input_tokens = STATE_NULL_INT, .output_tokens = STATE_NULL_INT, .cost_usd = NAN,  \
		.cached_tokens = STATE_NULL_INT                                                    \
	}

void run_row_init(struct run_row *r);
void task_row_init(struct task_row *t);
void attempt_row_init(struct attempt_row *a);
/* Free the strings and reset the row to its *_ROW_INIT value. NULL is fine. */
void run_row_release(struct run_row *r);
void task_row_release(struct task_row *t);
void attempt_row_release(struct attempt_row *a);
/* Release n rows and free the array. v may be NULL. */
void run_rows_free(struct run_row *v, size_t n);
void task_rows_free(struct task_row *v, size_t n);
void attempt_rows_free(struct attempt_row *v, size_t n);

struct state;

/* Open (with STATE_CREATE: create) the database at path. A writer enables WAL
 * and migrates an older schema; a reader (STATE_READONLY) does neither: it
 * reads an older schema as the current one, with NULL for the columns it
 * lacks (-ENOENT if the file has none yet). A schema newer than STATE_SCHEMA_VERSION gives -EPROTO
 * and a file that is not a SQLite database -EBADMSG, both without touching the file. A missing file
 * without STATE_CREATE gives -ENOENT. */
int state_open(const char *path, unsigned flags, struct state **ret, struct diag *reterr);
/* Close; an open transaction is rolled back. Returns NULL; NULL is fine. */
struct state *state_close(struct state *st);
const char *state_path(const struct state *st);

/* An explicit transaction around several calls (a writer's is BEGIN
 * IMMEDIATE: it takes the write lock at once; a reader's gives one consistent
 * snapshot). Nothing is durable until state_commit() returns 0. Nesting is
 * -EINVAL. If state_commit() fails the transaction may still be open: call
 * state_rollback(), which is a no-op (0) without a transaction. */
int state_begin(struct state *st, struct diag *reterr);
int state_commit(struct state *st, struct diag *reterr);
int state_rollback(struct state *st, struct diag *reterr);

/* Runs. state_run_latest() is the run inserted last, state_run_list() all in
 * insertion order (*ret NULL when there are none). set_state/set_pid change
 * the column and updated_at = now; -ENOENT if the run does not exist.
 * set_pid takes a pid > 0 or STATE_NULL_INT (clears it). */
int state_run_insert(struct state *st, const struct run_row *r, struct diag *reterr);
int state_run_get(struct state *st, const char *run_id, struct run_row *ret, struct diag *reterr);
int state_run_latest(struct state *st, struct run_row *ret, struct diag *reterr);
int state_run_list(struct state *st, struct run_row **ret, size_t *ret_n, struct diag *reterr);
int state_run_set_state(struct state *st, const char *run_id, enum run_state s, const char *now,
			struct diag *reterr);
int state_run_set_pid(struct state *st, const char *run_id, int64_t pid, const char *now,
		      struct diag *reterr);
/* The exit code of the run's last execution (0..255, as `run` or `resume`
 * exited; STATE_NULL_INT: NULL, one is going or none ended): set by the CLI
 * when an execution ends, cleared when one starts. get: *ret is
 * STATE_NULL_INT for NULL, and for a reader of a schema older than 3. */
int state_run_set_exit(struct state *st, const char *run_id, int64_t code, const char *now,
		       struct diag *reterr);
int state_run_get_exit(struct state *st, const char *run_id, int64_t *ret, struct diag *reterr);
/* The run's budget (docs/runs.md, "Budgets"): a JSON object as text, or
 * NULL for none; set when the run is created and by `resume
 * --max-cost-usd`. get: *ret is malloc'ed (NULL: none, and for a reader of
 * a schema older than 5). */
int state_run_set_budget(struct state *st, const char *run_id, const char *budget, const char *now,
			 struct diag *reterr);
int state_run_get_budget(struct state *st, const char *run_id, char **ret, struct diag *reterr);
/* A plan's own hooks: and notify: ({"hooks": {...}, "notify": {...}}, no
 * secret: a plan's notify takes only webhook_env), set when the run is
 * created (NULL: the plan has none, nothing written); and the hooks due
 * that have not run ([{"task", "hook", "event"}], "[]" for NULL), set as
 * they fall due and run (docs/runs.md, "Hooks"). get: *ret malloc'ed, NULL
 * for none (and for a reader of a schema older than 7). */
int state_run_set_hooks(struct state *st, const char *run_id, const char *hooks, const char *now,
			struct diag *reterr);
int state_run_get_hooks(struct state *st, const char *run_id, char **ret, struct diag *reterr);
int state_run_set_hooks_due(struct state *st, const char *run_id, const char *due, const char *now,
			    struct diag *reterr);
int state_run_get_hooks_due(struct state *st, const char *run_id, char **ret, struct diag *reterr);

/* Goal mode (docs/goal-mode.md): a plan a planner generated, kept under its
 * generation's id (the directory under .bernstein/plans/) with its hash;
 * record is the detail of its plan.generated audit record, a JSON object as
 * text (goal, planner adapter/model/profile hash, rounds, drafts, what
 * --allow let through). get: the latest record of plan_hash in *ret
 * (malloc'ed), NULL when no generated plan has that hash (and for a reader
 * of a schema older than 6). */
int state_generated_put(struct state *st, const char *gen, const char *plan_hash,
			const char *record, const char *now, struct diag *reterr);
int state_generated_get(struct state *st, const char *plan_hash, char **ret, struct diag *reterr);

/* Tasks, keyed by (run_id, id). Insert many inside state_begin()/state_commit()
 * (one commit instead of one per task). state_tasks_get() orders
 * by idx, then id. state_task_update() rewrites every column of the row with
 * that key, updated_at = now (t->updated_at when now is NULL), but a NULL
 * prompt or spec keeps the recorded one (the run loop drops them from the
 * tasks that wait or have ended); -ENOENT if there is no such row. */
int state_task_insert(struct state *st, const struct task_row *t, struct diag *reterr);
/* The number of run_id's tasks in each state (ret indexed by enum
 * task_state), counted by SQLite: what a view of a run of many tasks shows
 * without loading them. */
int state_task_counts(struct state *st, const char *run_id, size_t ret[_TASK_STATE_MAX],
		      struct diag *reterr);
int state_tasks_get(struct state *st, const char *run_id, struct task_row **ret, size_t *ret_n,
		    struct diag *reterr);
int state_task_get(struct state *st, const char *run_id, const char *task_id, struct task_row *ret,
		   struct diag *reterr);
/* The ids of run_id's tasks in state_tasks_get()'s order, into *ret (an
 * initialised strvec the caller clears): what a reader of a run of many
 * tasks walks, one state_task_get() at a time, without holding every row
 * (issue #24). */
struct strvec;
int state_task_ids(struct state *st, const char *run_id, struct strvec *ret, struct diag *reterr);
int state_task_update(struct state *st, const struct task_row *t, const char *now,
		      struct diag *reterr);

/* Attempts, keyed by (run_id, task_id, n); the task must exist.
 * state_attempt_update() rewrites every column (-ENOENT if there is no such
 * row); state_attempts_get() orders by n. */
int state_attempt_insert(struct state *st, const struct attempt_row *a, struct diag *reterr);
int state_attempt_update(struct state *st, const struct attempt_row *a, struct diag *reterr);
int state_attempts_get(struct state *st, const char *run_id, const char *task_id,
		       struct attempt_row **ret, size_t *ret_n, struct diag *reterr);

#endif
