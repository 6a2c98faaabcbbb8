/* The run state store in SQLite (state.h, docs/state.md). Every statement is
 * prepared once with bound parameters and kept in struct state; no SQL text
 * is ever built from a value. */
#include "orch/state.h"

#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fsutil.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define STATE_BUSY_TIMEOUT_MS 5000

/* migrations[i] takes the schema from version i to version i + 1, in one
 * transaction together with the PRAGMA user_version that records it. Append
 * only: a shipped migration never changes. */
static const char *const migrations[] = {
	/* version 1 */
	"CREATE TABLE runs (\n"
	"  id TEXT NOT NULL PRIMARY KEY,\n"
	"  plan_path TEXT,\n"
	"  plan_hash TEXT,\n"
	"  name TEXT,\n"
	"  repo TEXT NOT NULL,\n"
	"  base_branch TEXT,\n"
	"  base_commit TEXT,\n"
	"  state TEXT NOT NULL,\n"
	"  parallel INTEGER,\n"
	"  created_at TEXT,\n"
	"  updated_at TEXT,\n"
	"  supervisor_pid INTEGER\n"
	") STRICT;\n"
	"CREATE TABLE tasks (\n"
	"  run_id TEXT NOT NULL REFERENCES runs(id),\n"
	"  id TEXT NOT NULL,\n"
	"  idx INTEGER NOT NULL,\n"
	"  title TEXT,\n"
	"  role TEXT,\n"
	"  prompt TEXT,\n"
	"  spec TEXT CHECK (spec IS NULL OR (json_valid(spec) AND json_type(spec) = 'object')),\n"
	"  state TEXT NOT NULL,\n"
	"  adapter TEXT,\n"
	"  profile_hash TEXT,\n"
	"  attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),\n"
	"  retry_at TEXT,\n"
	"  outcome TEXT,\n"
	"  reason TEXT,\n"
	"  receipt_hash TEXT,\n"
	"  branch TEXT,\n"
	"  worktree TEXT,\n"
	"  session TEXT,\n"
	"  agent_session_id TEXT,\n"
	"  head_commit TEXT,\n"
	"  merge_commit TEXT,\n"
	"  conflicts TEXT CHECK (conflicts IS NULL OR\n"
	"                        (json_valid(conflicts) AND json_type(conflicts) = 'array')),\n"
	"  artifact_sha256 TEXT,\n"
	"  updated_at TEXT,\n"
	"  PRIMARY KEY (run_id, id)\n"
	") STRICT;\n"
	"CREATE TABLE attempts (\n"
	"  run_id TEXT NOT NULL,\n"
	"  task_id TEXT NOT NULL,\n"
	"  n INTEGER NOT NULL,\n"
	"  session TEXT,\n"
	"  adapter TEXT,\n"
	"  profile_hash TEXT,\n"
	"  pid INTEGER,\n"
	"  agent_session_id TEXT,\n"
	"  resumed_from TEXT,\n"
	"  resume_kind TEXT CHECK (resume_kind IN ('native', 'fallback')),\n"
	"  started_at TEXT,\n"
	"  ended_at TEXT,\n"
	"  outcome TEXT,\n"
	"  exit_code INTEGER,\n"
	"  reason TEXT,\n"
	"  input_tokens INTEGER,\n"
	"  output_tokens INTEGER,\n"
	"  cost_usd REAL,\n"
	"  last_event TEXT,\n"
	"  PRIMARY KEY (run_id, task_id, n),\n"
	"  FOREIGN KEY (run_id, task_id) REFERENCES tasks(run_id, id)\n"
	") STRICT;\n",
	/* version 2: the agent's own last error (adapter/lasterr.h) */
	"ALTER TABLE attempts ADD COLUMN agent_error TEXT;\n",
	/* version 3 (detach): the exit code of a run's last execution (`run`,
	 * `resume`), NULL while one goes: what `bernstein attach` ends with */
	"ALTER TABLE runs ADD COLUMN exit_code INTEGER;\n",
	/* version 4: review (merge: review): what the reviewer asked of the
	 * next attempt (`bernstein reject --feedback`) */
	"ALTER TABLE tasks ADD COLUMN feedback TEXT;\n",
	/* version 5 (cost): an attempt's model, cached input tokens and where
	 * its cost came from; a run's budget (docs/runs.md, "Budgets") */
	"ALTER TABLE attempts ADD COLUMN model TEXT;\n"
	"ALTER TABLE attempts ADD COLUMN cached_tokens INTEGER;\n"
	"ALTER TABLE attempts ADD COLUMN cost_source TEXT\n"
	"  CHECK (cost_source IS NULL OR cost_source IN ('agent', 'pricing'));\n"
	"ALTER TABLE runs ADD COLUMN budget TEXT\n"
	"  CHECK (budget IS NULL OR (json_valid(budget) AND json_type(budget) = 'object'));\n",
	/* version 6 (goal mode): each plan a planner generated, by its hash: the
	 * detail of its plan.generated audit record (docs/goal-mode.md) */
	"CREATE TABLE generated_plans (\n"
	"  gen TEXT NOT NULL PRIMARY KEY,\n"
	"  plan_hash TEXT NOT NULL,\n"
	"  record TEXT NOT NULL CHECK (json_valid(record) AND json_type(record) = 'object'),\n"
	"  created_at TEXT\n"
	") STRICT;\n"
	"CREATE INDEX generated_plans_hash ON generated_plans(plan_hash);\n",
	/* version 7 (hooks2): a plan's own hooks: and notify: (JSON {hooks,
	 * notify}), and the hooks due that have not run yet (JSON [{task,
	 * hook, event}]: what resume runs after a kill; docs/runs.md, "Hooks") */
	"ALTER TABLE runs ADD COLUMN hooks TEXT\n"
	"  CHECK (hooks IS NULL OR (json_valid(hooks) AND json_type(hooks) = 'object'));\n"
	"ALTER TABLE runs ADD COLUMN hooks_due TEXT\n"
	"  CHECK (hooks_due IS NULL OR (json_valid(hooks_due) AND json_type(hooks_due) = 'array'));\n",
};

/* SQLite's page cache per connection, in KiB (PRAGMA cache_size = -N) */
#define STATE_CACHE_KB "1024"

_Static_assert(ARRAY_SIZE(migrations) == STATE_SCHEMA_VERSION, "one migration per schema version");

/* Column lists shared by the INSERT, UPDATE and SELECT statements: the bind
 * and read functions below walk them in this order. */
#define RUN_COLS                                                                                   \
	"id, plan_path, plan_hash, name, repo, base_branch, base_commit, state, parallel, "        \
	"created_at, updated_at, supervisor_pid"
#define TASK_COLS                                                                                  \
	"run_id, id, idx, title, role, prompt, spec, state, adapter, profile_hash, attempts, "     \
	"retry_at, outcome, reason, receipt_hash, branch, worktree, session, agent_session_id, "   \
	"head_commit, merge_commit, conflicts, artifact_sha256, updated_at, feedback"
/* A version 1, 2 or 3 database, opened read-only: no feedback yet. */
#define TASK_COLS_V3                                                                               \
	"run_id, id, idx, title, role, prompt, spec, state, adapter, profile_hash, attempts, "     \
	"retry_at, outcome, reason, receipt_hash, branch, worktree, session, agent_session_id, "   \
	"head_commit, merge_commit, conflicts, artifact_sha256, updated_at, NULL"
#define ATTEMPT_COLS                                                                               \
	"run_id, task_id, n, session, adapter, profile_hash, pid, agent_session_id, "              \
	"resumed_from, resume_kind, started_at, ended_at, outcome, exit_code, reason, "            \
	"input_tokens, output_tokens, cost_usd, last_event, agent_error, model, cached_tokens, "   \
	"cost_source"
/* A version 1 database, opened read-only: no agent_error yet. */
#define ATTEMPT_COLS_V1                                                                            \
	"run_id, task_id, n, session, adapter, profile_hash, pid, agent_session_id, "              \
	"resumed_from, resume_kind, started_at, ended_at, outcome, exit_code, reason, "            \
	"input_tokens, output_tokens, cost_usd, last_event, NULL, NULL, NULL, NULL"
/* A version 2, 3 or 4 database, opened read-only: no model, cached tokens, cost source. */
#define ATTEMPT_COLS_V4                                                                            \
	"run_id, task_id, n, session, adapter, profile_hash, pid, agent_session_id, "              \
	"resumed_from, resume_kind, started_at, ended_at, outcome, exit_code, reason, "            \
	"input_tokens, output_tokens, cost_usd, last_event, agent_error, NULL, NULL, NULL"

enum stmt_id {
	STMT_BEGIN_WRITE,
	STMT_BEGIN_READ,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_RUN_INSERT,
	STMT_RUN_GET,
	STMT_RUN_LATEST,
	STMT_RUN_LIST,
	STMT_RUN_SET_STATE,
	STMT_RUN_SET_PID,
	STMT_TASK_INSERT,
	STMT_TASKS_GET,
	STMT_TASK_GET,
	STMT_TASK_UPDATE,
	STMT_ATTEMPT_INSERT,
	STMT_ATTEMPT_UPDATE,
	STMT_ATTEMPTS_GET,
	STMT_ATTEMPTS_GET_V1,
	STMT_RUN_SET_EXIT,
	STMT_RUN_GET_EXIT,
	STMT_TASKS_GET_V3,
	STMT_TASK_GET_V3,
	STMT_ATTEMPTS_GET_V4,
	STMT_RUN_SET_BUDGET,
	STMT_RUN_GET_BUDGET,
	STMT_GENERATED_PUT,
	STMT_GENERATED_GET,
	STMT_TASK_COUNTS,
	STMT_RUN_SET_HOOKS,
	STMT_RUN_GET_HOOKS,
	STMT_RUN_SET_HOOKS_DUE,
	STMT_RUN_GET_HOOKS_DUE,
	STMT_TASK_IDS,
	_STMT_MAX,
};

static const char *const stmt_sql[_STMT_MAX] = {
	[STMT_BEGIN_WRITE] = "BEGIN IMMEDIATE",
	[STMT_BEGIN_READ] = "BEGIN DEFERRED",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
	[STMT_RUN_INSERT] =
		"INSERT INTO runs (" RUN_COLS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[STMT_RUN_GET] = "SELECT " RUN_COLS " FROM runs WHERE id = ?",
	[STMT_RUN_LATEST] = "SELECT " RUN_COLS " FROM runs ORDER BY rowid DESC LIMIT 1",
	[STMT_RUN_LIST] = "SELECT " RUN_COLS " FROM runs ORDER BY rowid",
	[STMT_RUN_SET_STATE] = "UPDATE runs SET state = ?, updated_at = ? WHERE id = ?",
	[STMT_RUN_SET_PID] = "UPDATE runs SET supervisor_pid = ?, updated_at = ? WHERE id = ?",
	[STMT_TASK_INSERT] =
		"INSERT INTO tasks (" TASK_COLS
		") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[STMT_TASKS_GET] = "SELECT " TASK_COLS " FROM tasks WHERE run_id = ? ORDER BY idx, id",
	[STMT_TASK_GET] = "SELECT " TASK_COLS " FROM tasks WHERE run_id = ? AND id = ?",
	/* The key columns are bound last (?24, ?25), the rest in TASK_COLS order. */
	[STMT_TASK_UPDATE] =
		"UPDATE tasks SET idx = ?, title = ?, role = ?, prompt = COALESCE(?, prompt), spec = COALESCE(?, spec), state = ?, adapter = ?, profile_hash = ?, attempts = ?, retry_at = ?, outcome = ?, reason = ?, receipt_hash = ?, branch = ?, worktree = ?, session = ?, agent_session_id = ?, head_commit = ?, merge_commit = ?, conflicts = ?, artifact_sha256 = ?, updated_at = ?, feedback = ? WHERE run_id = ? AND id = ?",
	[STMT_ATTEMPT_INSERT] =
		"INSERT INTO attempts (" ATTEMPT_COLS
		") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[STMT_ATTEMPT_UPDATE] =
		"UPDATE attempts SET session = ?, adapter = ?, profile_hash = ?, pid = ?, agent_session_id = ?, resumed_from = ?, resume_kind = ?, started_at = ?, ended_at = ?, outcome = ?, exit_code = ?, reason = ?, input_tokens = ?, output_tokens = ?, cost_usd = ?, last_event = ?, agent_error = ?, model = ?, cached_tokens = ?, cost_source = ? WHERE run_id = ? AND task_id = ? AND n = ?",
	[STMT_ATTEMPTS_GET] =
		"SELECT " ATTEMPT_COLS " FROM attempts WHERE run_id = ? AND task_id = ? ORDER BY n",
	[STMT_ATTEMPTS_GET_V1] = "SELECT " ATTEMPT_COLS_V1
				 " FROM attempts WHERE run_id = ? AND task_id = ? ORDER BY n",
	[STMT_RUN_SET_EXIT] = "UPDATE runs SET exit_code = ?, updated_at = ? WHERE id = ?",
	[STMT_RUN_GET_EXIT] = "SELECT exit_code FROM runs WHERE id = ?",
	[STMT_TASKS_GET_V3] =
		"SELECT " TASK_COLS_V3 " FROM tasks WHERE run_id = ? ORDER BY idx, id",
	[STMT_TASK_GET_V3] = "SELECT " TASK_COLS_V3 " FROM tasks WHERE run_id = ? AND id = ?",
	[STMT_ATTEMPTS_GET_V4] = "SELECT " ATTEMPT_COLS_V4
				 " FROM attempts WHERE run_id = ? AND task_id = ? ORDER BY n",
	[STMT_RUN_SET_BUDGET] = "UPDATE runs SET budget = ?, updated_at = ? WHERE id = ?",
	[STMT_RUN_GET_BUDGET] = "SELECT budget FROM runs WHERE id = ?",
	[STMT_GENERATED_PUT] =
		"INSERT OR REPLACE INTO generated_plans (gen, plan_hash, record, created_at) VALUES (?, ?, ?, ?)",
	[STMT_GENERATED_GET] =
		"SELECT record FROM generated_plans WHERE plan_hash = ? ORDER BY rowid DESC LIMIT 1",
	[STMT_TASK_COUNTS] = "SELECT state, count(*) FROM tasks WHERE run_id = ? GROUP BY state",
	[STMT_RUN_SET_HOOKS] = "UPDATE runs SET hooks = ?, updated_at = ? WHERE id = ?",
	[STMT_RUN_GET_HOOKS] = "SELECT hooks FROM runs WHERE id = ?",
	[STMT_RUN_SET_HOOKS_DUE] = "UPDATE runs SET hooks_due = ?, updated_at = ? WHERE id = ?",
	[STMT_RUN_GET_HOOKS_DUE] = "SELECT hooks_due FROM runs WHERE id = ?",
	[STMT_TASK_IDS] = "SELECT id FROM tasks WHERE run_id = ? ORDER BY idx, id",
};

struct state {
	sqlite3 *db;
	char *path;
	bool readonly;
	int64_t version; /* the schema version read at open (a reader reads older ones too) */
	bool in_tx;	 /* state_begin() succeeded and no commit/rollback since */
	sqlite3_stmt *stmt[_STMT_MAX];
};

static const char *const task_state_names[_TASK_STATE_MAX] = {
	[TASK_PENDING] = "pending",
	[TASK_RUNNING] = "running",
	[TASK_COMPLETING] = "completing",
	[TASK_MERGING] = "merging",
	[TASK_DONE] = "done",
	[TASK_FAILED] = "failed",
	[TASK_REFUSED] = "refused",
	[TASK_CONFLICT] = "conflict",
	[TASK_BLOCKED] = "blocked",
	[TASK_INTERRUPTED] = "interrupted",
	[TASK_NO_CHANGES] = "no_changes",
	[TASK_CANCELLED] = "cancelled",
	[TASK_REVIEW] = "review",
	[TASK_REBASING] = "rebasing",
	[TASK_RESOLVING] = "resolving",
};

static const char *const run_state_names[_RUN_STATE_MAX] = {
	[RUN_RUNNING] = "running",
	[RUN_DONE] = "done",
	[RUN_FAILED] = "failed",
	[RUN_INTERRUPTED] = "interrupted",
};

const char *task_state_to_string(enum task_state s)
{
	if ((int)s < 0 || s >= _TASK_STATE_MAX)
		return NULL;
	return task_state_names[s];
}

enum task_state task_state_from_string(const char *s)
{
	int i;

	if (!s)
		return _TASK_STATE_INVALID;
	for (i = 0; i < _TASK_STATE_MAX; i++)
		if (strcmp(task_state_names[i], s) == 0)
			return (enum task_state)i;
	return _TASK_STATE_INVALID;
}

const char *run_state_to_string(enum run_state s)
{
	if ((int)s < 0 || s >= _RUN_STATE_MAX)
		return NULL;
	return run_state_names[s];
}

enum run_state run_state_from_string(const char *s)
{
	int i;

	if (!s)
		return _RUN_STATE_INVALID;
	for (i = 0; i < _RUN_STATE_MAX; i++)
		if (strcmp(run_state_names[i], s) == 0)
			return (enum run_state)i;
	return _RUN_STATE_INVALID;
}

/* ---- rows ---- */

void run_row_init(struct run_row *r)
{
	*r = (struct run_row)RUN_ROW_INIT;
}

void task_row_init(struct task_row *t)
{
	*t = (struct task_row)TASK_ROW_INIT;
}

void attempt_row_init(struct attempt_row *a)
{
	*a = (struct attempt_row)ATTEMPT_ROW_INIT;
}

void run_row_release(struct run_row *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->plan_path);
	free(r->plan_hash);
	free(r->name);
	free(r->repo);
	free(r->base_branch);
	free(r->base_commit);
	free(r->created_at);
	free(r->updated_at);
	run_row_init(r);
}

void task_row_release(struct task_row *t)
{
	if (!t)
		return;
	free(t->run_id);
	free(t->id);
	free(t->title);
	free(t->role);
	free(t->prompt);
	free(t->spec);
	free(t->adapter);
	free(t->profile_hash);
	free(t->retry_at);
	free(t->outcome);
	free(t->reason);
	free(t->receipt_hash);
	free(t->branch);
	free(t->worktree);
	free(t->session);
	free(t->agent_session_id);
	free(t->head_commit);
	free(t->merge_commit);
	free(t->conflicts);
	free(t->artifact_sha256);
	free(t->feedback);
	free(t->updated_at);
	task_row_init(t);
}

void attempt_row_release(struct attempt_row *a)
{
	if (!a)
		return;
	free(a->run_id);
	free(a->task_id);
	free(a->session);
	free(a->adapter);
	free(a->profile_hash);
	free(a->agent_session_id);
	free(a->resumed_from);
	free(a->resume_kind);
	free(a->started_at);
	free(a->ended_at);
	free(a->outcome);
	free(a->reason);
	free(a->last_event);
	free(a->agent_error);
	free(a->model);
	free(a->cost_source);
	attempt_row_init(a);
}

void run_rows_free(struct run_row *v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		run_row_release(&v[i]);
	free(v);
}

void task_rows_free(struct task_row *v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		task_row_release(&v[i]);
	free(v);
}

void attempt_rows_free(struct attempt_row *v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		attempt_row_release(&v[i]);
	free(v);
}

/* ---- errors ---- */

/* A sqlite result code as a negative errno (state.h lists the mapping). */
static int sqlite_errno(sqlite3 *db, int rc)
{
	int sys = db ? sqlite3_system_errno(db) : 0;

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EBADMSG;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
	case SQLITE_MISUSE:
		return -EINVAL;
	case SQLITE_CONSTRAINT:
		switch (rc) {
		case SQLITE_CONSTRAINT_PRIMARYKEY:
		case SQLITE_CONSTRAINT_UNIQUE:
			return -EEXIST;
		case SQLITE_CONSTRAINT_FOREIGNKEY:
			return -ENOENT;
		default:
			return -EINVAL;
		}
	case SQLITE_CANTOPEN:
		return sys > 0 ? -sys : -EIO;
	case SQLITE_IOERR:
		return sys == ENOSPC || sys == EDQUOT ? -ENOSPC : -EIO;
	default:
		return -EIO;
	}
}

/* Fill the diag with "<what>: <sqlite's message>" and return the errno. */
static int state_fail(struct state *st, int rc, struct diag *reterr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int state_fail(struct state *st, int rc, struct diag *reterr, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	diag_set(reterr, st->path, 0, 0, "%s: %s", what, st->db ? sqlite3_errmsg(st->db) : "");
	return sqlite_errno(st->db, rc);
}

static int state_need_writer(struct state *st, struct diag *reterr)
{
	if (!st->readonly)
		return 0;
	diag_set(reterr, st->path, 0, 0, "state database is open read-only");
	return -EROFS;
}

static int state_arg_missing(struct state *st, const char *what, struct diag *reterr)
{
	diag_set(reterr, st->path, 0, 0, "%s is missing", what);
	return -EINVAL;
}

/* ---- statements ---- */

static int state_stmt(struct state *st, enum stmt_id id, sqlite3_stmt **ret, struct diag *reterr)
{
	int rc;

	if (!st->stmt[id]) {
		rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					&st->stmt[id], NULL);
		if (rc != SQLITE_OK)
			return state_fail(st, rc, reterr, "cannot prepare a statement");
	}
	*ret = st->stmt[id];
	return 0;
}

/* Ready a cached statement for use: it is always left reset with no bindings. */
static void stmt_done(sqlite3_stmt *s)
{
	(void)sqlite3_reset(s);
	(void)sqlite3_clear_bindings(s);
}

/* Binding walks the parameters in order and keeps the first error. */
struct binder {
	sqlite3_stmt *s;
	int i;
	int rc;
};

static void bind_text(struct binder *b, const char *v)
{
	if (b->rc != SQLITE_OK)
		return;
	b->i++;
	b->rc = v ? sqlite3_bind_text(b->s, b->i, v, -1, SQLITE_STATIC)
		  : sqlite3_bind_null(b->s, b->i);
}

static void bind_int(struct binder *b, int64_t v)
{
	if (b->rc != SQLITE_OK)
		return;
	b->i++;
	b->rc = v == STATE_NULL_INT ? sqlite3_bind_null(b->s, b->i)
				    : sqlite3_bind_int64(b->s, b->i, (sqlite3_int64)v);
}

static void bind_real(struct binder *b, double v)
{
	if (b->rc != SQLITE_OK)
		return;
	b->i++;
	b->rc = isnan(v) ? sqlite3_bind_null(b->s, b->i) : sqlite3_bind_double(b->s, b->i, v);
}

/* Run a bound INSERT/UPDATE to completion. In autocommit mode the statement
 * is its own transaction and SQLITE_DONE means it is committed. Returns the
 * number of rows changed or a negative errno (the caller fills the diag). */
static int stmt_write(struct state *st, sqlite3_stmt *s, int bind_rc, int *ret_rc)
{
	int rc = bind_rc;

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	*ret_rc = rc;
	return rc == SQLITE_OK ? sqlite3_changes(st->db) : sqlite_errno(st->db, rc);
}

/* Columns are read in the order of the *_COLS lists. */
struct reader {
	sqlite3_stmt *s;
	int i;
	bool oom;
};

static char *col_text(struct reader *r)
{
	int i = r->i++;
	const unsigned char *t;

	if (sqlite3_column_type(r->s, i) == SQLITE_NULL)
		return NULL;
	t = sqlite3_column_text(r->s, i);
	if (!t) {
		r->oom = true;
		return NULL;
	}
	return xstrndup((const char *)t, (size_t)sqlite3_column_bytes(r->s, i));
}

static int64_t col_int(struct reader *r)
{
	int i = r->i++;

	if (sqlite3_column_type(r->s, i) == SQLITE_NULL)
		return STATE_NULL_INT;
	return (int64_t)sqlite3_column_int64(r->s, i);
}

static double col_real(struct reader *r)
{
	int i = r->i++;

	if (sqlite3_column_type(r->s, i) == SQLITE_NULL)
		return NAN;
	return sqlite3_column_double(r->s, i);
}

static int read_run(struct state *st, sqlite3_stmt *s, struct run_row *ret, struct diag *reterr)
{
	struct run_row r = RUN_ROW_INIT;
	struct reader rd = {.s = s};
	char *state = NULL;
	int err = 0;

	r.id = col_text(&rd);
	r.plan_path = col_text(&rd);
	r.plan_hash = col_text(&rd);
	r.name = col_text(&rd);
	r.repo = col_text(&rd);
	r.base_branch = col_text(&rd);
	r.base_commit = col_text(&rd);
	state = col_text(&rd);
	r.parallel = col_int(&rd);
	r.created_at = col_text(&rd);
	r.updated_at = col_text(&rd);
	r.supervisor_pid = col_int(&rd);
	if (rd.oom) {
		err = state_fail(st, SQLITE_NOMEM, reterr, "cannot read run");
		goto out;
	}
	r.state = run_state_from_string(state);
	if ((int)r.state < 0) {
		diag_set(reterr, st->path, 0, 0, "run '%s' has an unknown state '%s'",
			 r.id ? r.id : "", state ? state : "");
		err = -EBADMSG;
		goto out;
	}
	*ret = r;
	r = (struct run_row)RUN_ROW_INIT;
out:
	run_row_release(&r);
	free(state);
	return err;
}

static int read_task(struct state *st, sqlite3_stmt *s, struct task_row *ret, struct diag *reterr)
{
	struct task_row t = TASK_ROW_INIT;
	struct reader rd = {.s = s};
	char *state = NULL;
	int err = 0;

	t.run_id = col_text(&rd);
	t.id = col_text(&rd);
	t.idx = col_int(&rd);
	t.title = col_text(&rd);
	t.role = col_text(&rd);
	t.prompt = col_text(&rd);
	t.spec = col_text(&rd);
	state = col_text(&rd);
	t.adapter = col_text(&rd);
	t.profile_hash = col_text(&rd);
	t.attempts = col_int(&rd);
	t.retry_at = col_text(&rd);
	t.outcome = col_text(&rd);
	t.reason = col_text(&rd);
	t.receipt_hash = col_text(&rd);
	t.branch = col_text(&rd);
	t.worktree = col_text(&rd);
	t.session = col_text(&rd);
	t.agent_session_id = col_text(&rd);
	t.head_commit = col_text(&rd);
	t.merge_commit = col_text(&rd);
	t.conflicts = col_text(&rd);
	t.artifact_sha256 = col_text(&rd);
	t.updated_at = col_text(&rd);
	t.feedback = col_text(&rd);
	if (rd.oom) {
		err = state_fail(st, SQLITE_NOMEM, reterr, "cannot read task");
		goto out;
	}
	t.state = task_state_from_string(state);
	if ((int)t.state < 0) {
		diag_set(reterr, st->path, 0, 0, "task '%s' of run '%s' has an unknown state '%s'",
			 t.id ? t.id : "", t.run_id ? t.run_id : "", state ? state : "");
		err = -EBADMSG;
		goto out;
	}
	*ret = t;
	t = (struct task_row)TASK_ROW_INIT;
out:
	task_row_release(&t);
	free(state);
	return err;
}

static int read_attempt(struct state *st, sqlite3_stmt *s, struct attempt_row *ret,
			struct diag *reterr)
{
	struct attempt_row a = ATTEMPT_ROW_INIT;
	struct reader rd = {.s = s};

	a.run_id = col_text(&rd);
	a.task_id = col_text(&rd);
	a.n = col_int(&rd);
	a.session = col_text(&rd);
	a.adapter = col_text(&rd);
	a.profile_hash = col_text(&rd);
	a.pid = col_int(&rd);
	a.agent_session_id = col_text(&rd);
	a.resumed_from = col_text(&rd);
	a.resume_kind = col_text(&rd);
	a.started_at = col_text(&rd);
	a.ended_at = col_text(&rd);
	a.outcome = col_text(&rd);
	a.exit_code = col_int(&rd);
	a.reason = col_text(&rd);
	a.input_tokens = col_int(&rd);
	a.output_tokens = col_int(&rd);
	a.cost_usd = col_real(&rd);
	a.last_event = col_text(&rd);
	a.agent_error = col_text(&rd);
	a.model = col_text(&rd);
	a.cached_tokens = col_int(&rd);
	a.cost_source = col_text(&rd);
	if (rd.oom) {
		attempt_row_release(&a);
		return state_fail(st, SQLITE_NOMEM, reterr, "cannot read attempt");
	}
	*ret = a;
	return 0;
}

/* ---- open, migrate, close ---- */

static int state_exec(struct state *st, const char *sql, const char *what, struct diag *reterr)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return state_fail(st, rc, reterr, "%s", what);
	return 0;
}

/* One-row, one-column pragma read as an integer or, with ret_text, text. */
static int state_pragma(struct state *st, const char *sql, int64_t *ret_int, char *ret_text,
			size_t text_size, struct diag *reterr)
{
	sqlite3_stmt *s = NULL;
	int rc, err = 0;

	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			if (ret_int)
				*ret_int = (int64_t)sqlite3_column_int64(s, 0);
			if (ret_text) {
				const unsigned char *t = sqlite3_column_text(s, 0);
				(void)snprintf(ret_text, text_size, "%s", t ? (const char *)t : "");
			}
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			rc = SQLITE_ERROR; /* a pragma this sqlite does not know */
		}
	}
	if (rc != SQLITE_OK) {
		err = rc == SQLITE_NOTADB ? -EBADMSG : sqlite_errno(st->db, rc);
		if (err == -EBADMSG)
			diag_set(reterr, st->path, 0, 0, "not a SQLite state database: %s",
				 sqlite3_errmsg(st->db));
		else
			err = state_fail(st, rc, reterr, "cannot run '%s'", sql);
	}
	(void)sqlite3_finalize(s);
	return err;
}

static int state_migrate(struct state *st, struct diag *reterr)
{
	char sql[64];
	int64_t v = 0;
	int r;
	int target;

	for (target = 1; target <= STATE_SCHEMA_VERSION; target++) {
		r = state_exec(st, "BEGIN IMMEDIATE", "cannot lock the state database to migrate",
			       reterr);
		if (r < 0)
			return r;
		/* Re-read under the lock: another writer may have migrated. */
		r = state_pragma(st, "PRAGMA user_version", &v, NULL, 0, reterr);
		if (r < 0)
			goto fail;
		if (v >= target) {
			r = state_exec(st, "COMMIT", "cannot commit", reterr);
			if (r < 0)
				goto fail;
			continue;
		}
		r = state_exec(st, migrations[target - 1], "cannot migrate the state database",
			       reterr);
		if (r < 0) {
			diag_prefix(reterr, "schema version %d", target);
			goto fail;
		}
		(void)snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", target);
		r = state_exec(st, sql, "cannot record the schema version", reterr);
		if (r < 0)
			goto fail;
		r = state_exec(st, "COMMIT", "cannot commit the migration", reterr);
		if (r < 0)
			goto fail;
	}
	return 0;
fail:
	if (!sqlite3_get_autocommit(st->db))
		(void)sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

int state_open(const char *path, unsigned flags, struct state **ret, struct diag *reterr)
{
	static const char *const db_suffixes[] = {"", "-wal", "-shm", "-journal"};
	struct state *st = NULL;
	struct stat sb;
	char mode[16];
	int64_t version = 0;
	int oflags, rc, r;
	size_t i;

	if (!path || !*path || !ret) {
		diag_set(reterr, path ? path : "", 0, 0, "no state database path");
		return -EINVAL;
	}
	if ((flags & STATE_READONLY) && (flags & STATE_CREATE)) {
		diag_set(reterr, path, 0, 0, "cannot create a state database read-only");
		return -EINVAL;
	}
	if (!(flags & STATE_CREATE) && stat(path, &sb) < 0) {
		r = -errno;
		diag_set(reterr, path, 0, 0, "cannot open state database: %s", strerror(-r));
		return r;
	}

	/* SQLite opens these itself and would block on a FIFO (or read a
	 * device): each must be a regular file or absent. */
	for (i = 0; i < ARRAY_SIZE(db_suffixes); i++) {
		char f[PATH_MAX];

		if (snprintf(f, sizeof(f), "%s%s", path, db_suffixes[i]) >= (int)sizeof(f)) {
			diag_set(reterr, path, 0, 0, "cannot open state database: %s",
				 strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
		r = regular_or_absent(f);
		if (r < 0) {
			diag_set(reterr, f, 0, 0, "cannot open state database: %s",
				 file_strerror(r));
			return r;
		}
	}

	st = xcalloc(1, sizeof(*st));
	st->path = xstrdup(path);
	st->readonly = flags & STATE_READONLY;
	if (st->readonly)
		oflags = SQLITE_OPEN_READONLY;
	else
		oflags = SQLITE_OPEN_READWRITE | ((flags & STATE_CREATE) ? SQLITE_OPEN_CREATE : 0);
	rc = sqlite3_open_v2(path, &st->db, oflags, NULL);
	if (rc != SQLITE_OK) {
		r = state_fail(st, rc, reterr, "cannot open state database");
		goto out;
	}
	(void)sqlite3_extended_result_codes(st->db, 1);
	(void)sqlite3_busy_timeout(st->db, STATE_BUSY_TIMEOUT_MS);
	/* No writable_schema tricks and no shadow-table writes from SQL. */
	(void)sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);

	/* Read the version before changing anything, so a foreign or newer
	 * file is refused untouched. */
	r = state_pragma(st, "PRAGMA user_version", &version, NULL, 0, reterr);
	if (r < 0)
		goto out;
	if (version > STATE_SCHEMA_VERSION) {
		diag_set(
			reterr, path, 0, 0,
			"state database has schema version %lld, newer than this bernstein supports (%d): use a newer bernstein",
			(long long)version, STATE_SCHEMA_VERSION);
		r = -EPROTO;
		goto out;
	}
	if (version < 0) {
		diag_set(reterr, path, 0, 0, "state database has an invalid schema version %lld",
			 (long long)version);
		r = -EBADMSG;
		goto out;
	}
	r = state_exec(st, "PRAGMA foreign_keys = ON", "cannot enable foreign keys", reterr);
	if (r < 0)
		goto out;
	/* the page cache (and a sort's memory) at STATE_CACHE_KB, not SQLite's
	 * 2 MB: a run of many tasks walks state.db row by row (issue #24) */
	r = state_exec(st, "PRAGMA cache_size = -" STATE_CACHE_KB, "cannot set the cache size",
		       reterr);
	if (r < 0)
		goto out;

	if (st->readonly) {
		if (version == 0) {
			diag_set(reterr, path, 0, 0, "state database has no schema yet");
			r = -ENOENT;
			goto out;
		}
		/* an older version reads as the current one with NULL for what it lacks */
		st->version = version;
	} else {
		r = state_pragma(st, "PRAGMA journal_mode = WAL", NULL, mode, sizeof(mode), reterr);
		if (r < 0)
			goto out;
		if (strcmp(mode, "wal") != 0) {
			diag_set(reterr, path, 0, 0,
				 "cannot put the state database in WAL mode (journal mode '%s')",
				 mode);
			r = -EIO;
			goto out;
		}
		r = state_exec(st, "PRAGMA synchronous = NORMAL", "cannot set synchronous", reterr);
		if (r < 0)
			goto out;
		if (version < STATE_SCHEMA_VERSION) {
			r = state_migrate(st, reterr);
			if (r < 0)
				goto out;
		}
		st->version = STATE_SCHEMA_VERSION; /* a writer has the current schema */
	}

	*ret = st;
	st = NULL;
	r = 0;
out:
	state_close(st);
	return r;
}

struct state *state_close(struct state *st)
{
	size_t i;

	if (!st)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(st->stmt); i++)
		(void)sqlite3_finalize(st->stmt[i]);
	/* An open transaction is rolled back by the close. */
	(void)sqlite3_close_v2(st->db);
	free(st->path);
	free(st);
	return NULL;
}

const char *state_path(const struct state *st)
{
	return st->path;
}

/* ---- transactions ---- */

static int state_tx_step(struct state *st, enum stmt_id id, const char *what, struct diag *reterr)
{
	sqlite3_stmt *s = NULL;
	int r, rc;

	r = state_stmt(st, id, &s, reterr);
	if (r < 0)
		return r;
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		r = state_fail(st, rc, reterr, "%s", what);
		stmt_done(s);
		return r;
	}
	stmt_done(s);
	return 0;
}

int state_begin(struct state *st, struct diag *reterr)
{
	int r;

	if (st->in_tx || !sqlite3_get_autocommit(st->db)) {
		diag_set(reterr, st->path, 0, 0, "a transaction is already open");
		return -EINVAL;
	}
	r = state_tx_step(st, st->readonly ? STMT_BEGIN_READ : STMT_BEGIN_WRITE,
			  "cannot begin a transaction", reterr);
	if (r < 0)
		return r;
	st->in_tx = true;
	return 0;
}

int state_commit(struct state *st, struct diag *reterr)
{
	int r;

	if (!st->in_tx) {
		diag_set(reterr, st->path, 0, 0, "no transaction is open");
		return -EINVAL;
	}
	if (sqlite3_get_autocommit(st->db)) {
		/* sqlite rolled it back after an error (disk full, I/O). */
		st->in_tx = false;
		diag_set(reterr, st->path, 0, 0,
			 "the transaction was rolled back after an earlier error");
		return -EIO;
	}
	r = state_tx_step(st, STMT_COMMIT, "cannot commit", reterr);
	if (r < 0)
		return r; /* still open (e.g. -EBUSY): the caller rolls back or retries */
	st->in_tx = false;
	return 0;
}

int state_rollback(struct state *st, struct diag *reterr)
{
	int r = 0;

	if (!sqlite3_get_autocommit(st->db))
		r = state_tx_step(st, STMT_ROLLBACK, "cannot roll back", reterr);
	if (r == 0)
		st->in_tx = false;
	return r;
}

/* ---- runs ---- */

static bool run_state_valid(enum run_state s)
{
	return (int)s >= 0 && s < _RUN_STATE_MAX;
}

static bool task_state_valid(enum task_state s)
{
	return (int)s >= 0 && s < _TASK_STATE_MAX;
}

int state_run_insert(struct state *st, const struct run_row *r, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int n, rc, err;

	err = state_need_writer(st, reterr);
	if (err < 0)
		return err;
	if (!r->id)
		return state_arg_missing(st, "run id", reterr);
	if (!run_state_valid(r->state)) {
		diag_set(reterr, st->path, 0, 0, "run '%s': invalid state %d", r->id,
			 (int)r->state);
		return -EINVAL;
	}
	err = state_stmt(st, STMT_RUN_INSERT, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, r->id);
	bind_text(&b, r->plan_path);
	bind_text(&b, r->plan_hash);
	bind_text(&b, r->name);
	bind_text(&b, r->repo);
	bind_text(&b, r->base_branch);
	bind_text(&b, r->base_commit);
	bind_text(&b, run_state_to_string(r->state));
	bind_int(&b, r->parallel);
	bind_text(&b, r->created_at);
	bind_text(&b, r->updated_at);
	bind_int(&b, r->supervisor_pid);
	n = stmt_write(st, s, b.rc, &rc);
	if (n < 0)
		n = state_fail(st, rc, reterr, "cannot insert run '%s'", r->id);
	stmt_done(s);
	return n < 0 ? n : 0;
}

/* Step a bound single-row SELECT: 0 and *ret filled, -ENOENT, or an error. */
static int select_one(struct state *st, sqlite3_stmt *s, int bind_rc,
		      int (*read)(struct state *, sqlite3_stmt *, void *, struct diag *), void *ret,
		      const char *what, const char *key, struct diag *reterr)
{
	int rc = bind_rc, r;

	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		r = read(st, s, ret, reterr);
	else if (rc == SQLITE_DONE) {
		diag_set(reterr, st->path, 0, 0, "no %s '%s'", what, key);
		r = -ENOENT;
	} else
		r = state_fail(st, rc, reterr, "cannot read %s '%s'", what, key);
	stmt_done(s);
	return r;
}

/* Step a bound SELECT to the end, reading every row into a growing array of
 * elements of size elem. */
static int select_all(struct state *st, sqlite3_stmt *s, int bind_rc,
		      int (*read)(struct state *, sqlite3_stmt *, void *, struct diag *),
		      size_t elem, void (*release)(void *), void **ret, size_t *ret_n,
		      const char *what, struct diag *reterr)
{
	char *v = NULL;
	size_t n = 0, alloc = 0, i;
	int rc = bind_rc, r = 0;

	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		rc = sqlite3_step(s);
		if (rc != SQLITE_ROW)
			break;
		if (n == alloc) {
			alloc = alloc ? st_mult(alloc, 2) : 8;
			v = xrealloc(v, st_mult(alloc, elem));
		}
		r = read(st, s, v + n * elem, reterr);
		if (r < 0)
			goto out;
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = state_fail(st, rc, reterr, "cannot read %s", what);
		goto out;
	}
	*ret = v;
	*ret_n = n;
	v = NULL;
	n = 0;
out:
	stmt_done(s);
	for (i = 0; i < n; i++)
		release(v + i * elem);
	free(v);
	return r;
}

static int read_run_v(struct state *st, sqlite3_stmt *s, void *ret, struct diag *reterr)
{
	return read_run(st, s, ret, reterr);
}

static int read_task_v(struct state *st, sqlite3_stmt *s, void *ret, struct diag *reterr)
{
	return read_task(st, s, ret, reterr);
}

static int read_attempt_v(struct state *st, sqlite3_stmt *s, void *ret, struct diag *reterr)
{
	return read_attempt(st, s, ret, reterr);
}

static void run_row_release_v(void *p)
{
	run_row_release(p);
}

static void task_row_release_v(void *p)
{
	task_row_release(p);
}

static void attempt_row_release_v(void *p)
{
	attempt_row_release(p);
}

int state_run_get(struct state *st, const char *run_id, struct run_row *ret, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int err;

	if (!run_id)
		return state_arg_missing(st, "run id", reterr);
	err = state_stmt(st, STMT_RUN_GET, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, run_id);
	return select_one(st, s, b.rc, read_run_v, ret, "run", run_id, reterr);
}

int state_run_latest(struct state *st, struct run_row *ret, struct diag *reterr)
{
	sqlite3_stmt *s = NULL;
	int err, rc;

	err = state_stmt(st, STMT_RUN_LATEST, &s, reterr);
	if (err < 0)
		return err;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		err = read_run(st, s, ret, reterr);
	else if (rc == SQLITE_DONE) {
		diag_set(reterr, st->path, 0, 0, "no runs yet");
		err = -ENOENT;
	} else
		err = state_fail(st, rc, reterr, "cannot read the latest run");
	stmt_done(s);
	return err;
}

int state_run_list(struct state *st, struct run_row **ret, size_t *ret_n, struct diag *reterr)
{
	sqlite3_stmt *s = NULL;
	void *v = NULL;
	int err;

	err = state_stmt(st, STMT_RUN_LIST, &s, reterr);
	if (err < 0)
		return err;
	err = select_all(st, s, SQLITE_OK, read_run_v, sizeof(struct run_row), run_row_release_v,
			 &v, ret_n, "runs", reterr);
	if (err == 0)
		*ret = v;
	return err;
}

/* UPDATE runs SET <col> = ?1, updated_at = ?2 WHERE id = ?3 */
static int run_update(struct state *st, enum stmt_id id, const char *run_id, const char *text,
		      int64_t num, const char *now, const char *what, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int n, rc, err;

	err = state_need_writer(st, reterr);
	if (err < 0)
		return err;
	if (!run_id)
		return state_arg_missing(st, "run id", reterr);
	err = state_stmt(st, id, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	if (text)
		bind_text(&b, text);
	else
		bind_int(&b, num);
	bind_text(&b, now);
	bind_text(&b, run_id);
	n = stmt_write(st, s, b.rc, &rc);
	if (n < 0)
		n = state_fail(st, rc, reterr, "cannot set the %s of run '%s'", what, run_id);
	else if (n == 0) {
		diag_set(reterr, st->path, 0, 0, "no run '%s'", run_id);
		n = -ENOENT;
	}
	stmt_done(s);
	return n < 0 ? n : 0;
}

int state_run_set_state(struct state *st, const char *run_id, enum run_state s, const char *now,
			struct diag *reterr)
{
	if (!run_state_valid(s)) {
		diag_set(reterr, st->path, 0, 0, "run '%s': invalid state %d", run_id ? run_id : "",
			 (int)s);
		return -EINVAL;
	}
	return run_update(st, STMT_RUN_SET_STATE, run_id, run_state_to_string(s), 0, now, "state",
			  reterr);
}

int state_run_set_pid(struct state *st, const char *run_id, int64_t pid, const char *now,
		      struct diag *reterr)
{
	if (pid <= 0 && pid != STATE_NULL_INT) {
		diag_set(reterr, st->path, 0, 0, "run '%s': invalid supervisor pid %lld",
			 run_id ? run_id : "", (long long)pid);
		return -EINVAL;
	}
	return run_update(st, STMT_RUN_SET_PID, run_id, NULL, pid, now, "supervisor pid", reterr);
}

int state_run_set_exit(struct state *st, const char *run_id, int64_t code, const char *now,
		       struct diag *reterr)
{
	if ((code < 0 || code > 255) && code != STATE_NULL_INT) {
		diag_set(reterr, st->path, 0, 0, "run '%s': invalid exit code %lld",
			 run_id ? run_id : "", (long long)code);
		return -EINVAL;
	}
	return run_update(st, STMT_RUN_SET_EXIT, run_id, NULL, code, now, "exit code", reterr);
}

int state_run_get_exit(struct state *st, const char *run_id, int64_t *ret, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int64_t v = STATE_NULL_INT;
	int rc, err;

	if (!run_id)
		return state_arg_missing(st, "run id", reterr);
	if (st->version < 3) { /* a reader of an older schema: no column, NULL */
		*ret = STATE_NULL_INT;
		return 0;
	}
	err = state_stmt(st, STMT_RUN_GET_EXIT, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, run_id);
	rc = b.rc == SQLITE_OK ? sqlite3_step(s) : b.rc;
	if (rc == SQLITE_ROW) {
		if (sqlite3_column_type(s, 0) != SQLITE_NULL)
			v = (int64_t)sqlite3_column_int64(s, 0);
		err = 0;
	} else if (rc == SQLITE_DONE) {
		diag_set(reterr, st->path, 0, 0, "no run '%s'", run_id);
		err = -ENOENT;
	} else {
		err = state_fail(st, rc, reterr, "cannot read the exit code of run '%s'", run_id);
	}
	stmt_done(s);
	if (err == 0)
		*ret = v;
	return err;
}

/* The one text column of the first row statement id selects for key into
 * *ret (malloc'ed, NULL for SQL NULL): 0, -ENOENT without a row (*ret
 * NULL, no diag), or the error. */
static int select_text(struct state *st, enum stmt_id id, const char *key, const char *what,
		       char **ret, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	char *v = NULL;
	int rc, err;

	*ret = NULL;
	err = state_stmt(st, id, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, key);
	rc = b.rc == SQLITE_OK ? sqlite3_step(s) : b.rc;
	if (rc == SQLITE_ROW) {
		struct reader rd = {.s = s};

		v = col_text(&rd);
		err = rd.oom ? state_fail(st, SQLITE_NOMEM, reterr, "cannot read the %s", what) : 0;
	} else if (rc == SQLITE_DONE) {
		err = -ENOENT;
	} else {
		err = state_fail(st, rc, reterr, "cannot read the %s of '%s'", what, key);
	}
	stmt_done(s);
	if (err == 0)
		*ret = v;
	else
		free(v);
	return err;
}

int state_run_set_budget(struct state *st, const char *run_id, const char *budget, const char *now,
			 struct diag *reterr)
{
	return run_update(st, STMT_RUN_SET_BUDGET, run_id, budget, STATE_NULL_INT, now, "budget",
			  reterr);
}

/* A text column of a run that schema version since added (runs.budget 5,
 * runs.hooks and runs.hooks_due 7): text or NULL; NULL for a reader of an
 * older schema, which has no such column. */
static int run_text_get(struct state *st, enum stmt_id id, int since, const char *run_id,
			const char *what, char **ret, struct diag *reterr)
{
	int r;

	*ret = NULL;
	if (!run_id)
		return state_arg_missing(st, "run id", reterr);
	if (st->readonly && st->version < since)
		return 0;
	r = select_text(st, id, run_id, what, ret, reterr);
	if (r == -ENOENT)
		diag_set(reterr, st->path, 0, 0, "no run '%s'", run_id);
	return r;
}

int state_run_get_budget(struct state *st, const char *run_id, char **ret, struct diag *reterr)
{
	return run_text_get(st, STMT_RUN_GET_BUDGET, 5, run_id, "budget", ret, reterr);
}

int state_run_set_hooks(struct state *st, const char *run_id, const char *hooks, const char *now,
			struct diag *reterr)
{
	if (!hooks)
		return 0; /* NULL stays NULL (run_update binds text only) */
	return run_update(st, STMT_RUN_SET_HOOKS, run_id, hooks, STATE_NULL_INT, now, "hooks",
			  reterr);
}

int state_run_get_hooks(struct state *st, const char *run_id, char **ret, struct diag *reterr)
{
	return run_text_get(st, STMT_RUN_GET_HOOKS, 7, run_id, "hooks", ret, reterr);
}

int state_run_set_hooks_due(struct state *st, const char *run_id, const char *due, const char *now,
			    struct diag *reterr)
{
	return run_update(st, STMT_RUN_SET_HOOKS_DUE, run_id, due ? due : "[]", STATE_NULL_INT, now,
			  "hooks due", reterr);
}

int state_run_get_hooks_due(struct state *st, const char *run_id, char **ret, struct diag *reterr)
{
	return run_text_get(st, STMT_RUN_GET_HOOKS_DUE, 7, run_id, "hooks due", ret, reterr);
}

/* ---- generated plans (goal mode) ---- */

int state_generated_put(struct state *st, const char *gen, const char *plan_hash,
			const char *record, const char *now, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int n, rc, err;

	err = state_need_writer(st, reterr);
	if (err < 0)
		return err;
	if (!gen || !plan_hash || !record)
		return state_arg_missing(st, "generated plan", reterr);
	err = state_stmt(st, STMT_GENERATED_PUT, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, gen);
	bind_text(&b, plan_hash);
	bind_text(&b, record);
	bind_text(&b, now);
	n = stmt_write(st, s, b.rc, &rc);
	if (n < 0)
		n = state_fail(st, rc, reterr, "cannot record generated plan '%s'", gen);
	stmt_done(s);
	return n < 0 ? n : 0;
}

int state_generated_get(struct state *st, const char *plan_hash, char **ret, struct diag *reterr)
{
	int r;

	*ret = NULL;
	if (!plan_hash)
		return state_arg_missing(st, "plan hash", reterr);
	if (st->readonly && st->version < 6) /* a reader of an older schema: none */
		return 0;
	r = select_text(st, STMT_GENERATED_GET, plan_hash, "generated plan", ret, reterr);
	return r == -ENOENT ? 0 : r;
}

/* ---- tasks ---- */

static int task_check(struct state *st, const struct task_row *t, struct diag *reterr)
{
	if (!t->run_id)
		return state_arg_missing(st, "task run id", reterr);
	if (!t->id)
		return state_arg_missing(st, "task id", reterr);
	if (!task_state_valid(t->state)) {
		diag_set(reterr, st->path, 0, 0, "task '%s': invalid state %d", t->id,
			 (int)t->state);
		return -EINVAL;
	}
	return 0;
}

/* Bind every column after the key, in TASK_COLS order. */
static void bind_task_body(struct binder *b, const struct task_row *t, const char *updated_at)
{
	bind_int(b, t->idx);
	bind_text(b, t->title);
	bind_text(b, t->role);
	bind_text(b, t->prompt);
	bind_text(b, t->spec);
	bind_text(b, task_state_to_string(t->state));
	bind_text(b, t->adapter);
	bind_text(b, t->profile_hash);
	bind_int(b, t->attempts);
	bind_text(b, t->retry_at);
	bind_text(b, t->outcome);
	bind_text(b, t->reason);
	bind_text(b, t->receipt_hash);
	bind_text(b, t->branch);
	bind_text(b, t->worktree);
	bind_text(b, t->session);
	bind_text(b, t->agent_session_id);
	bind_text(b, t->head_commit);
	bind_text(b, t->merge_commit);
	bind_text(b, t->conflicts);
	bind_text(b, t->artifact_sha256);
	bind_text(b, updated_at);
	bind_text(b, t->feedback);
}

int state_task_insert(struct state *st, const struct task_row *t, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int n, rc, err;

	err = state_need_writer(st, reterr);
	if (err < 0)
		return err;
	err = task_check(st, t, reterr);
	if (err < 0)
		return err;
	err = state_stmt(st, STMT_TASK_INSERT, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, t->run_id);
	bind_text(&b, t->id);
	bind_task_body(&b, t, t->updated_at);
	n = stmt_write(st, s, b.rc, &rc);
	if (n < 0)
		n = state_fail(st, rc, reterr, "cannot insert task '%s' of run '%s'", t->id,
			       t->run_id);
	stmt_done(s);
	return n < 0 ? n : 0;
}

int state_tasks_get(struct state *st, const char *run_id, struct task_row **ret, size_t *ret_n,
		    struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	void *v = NULL;
	int err;

	if (!run_id)
		return state_arg_missing(st, "run id", reterr);
	err = state_stmt(st, st->readonly && st->version < 4 ? STMT_TASKS_GET_V3 : STMT_TASKS_GET,
			 &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, run_id);
	err = select_all(st, s, b.rc, read_task_v, sizeof(struct task_row), task_row_release_v, &v,
			 ret_n, "tasks", reterr);
	if (err == 0)
		*ret = v;
	return err;
}

int state_task_counts(struct state *st, const char *run_id, size_t ret[_TASK_STATE_MAX],
		      struct diag *reterr)
{
	size_t counts[_TASK_STATE_MAX] = {0};
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int err, rc;

	if (!run_id)
		return state_arg_missing(st, "run id", reterr);
	err = state_stmt(st, STMT_TASK_COUNTS, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, run_id);
	rc = b.rc;
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		const char *name;
		enum task_state ts;

		rc = sqlite3_step(s);
		if (rc != SQLITE_ROW)
			break;
		name = (const char *)sqlite3_column_text(s, 0);
		ts = name ? task_state_from_string(name) : _TASK_STATE_INVALID;
		if ((int)ts >= 0 && ts < _TASK_STATE_MAX && sqlite3_column_int64(s, 1) > 0)
			counts[ts] += (size_t)sqlite3_column_int64(s, 1);
	}
	stmt_done(s);
	if (rc != SQLITE_DONE)
		return state_fail(st, rc, reterr, "cannot count the tasks of run '%s'", run_id);
	memcpy(ret, counts, sizeof(counts));
	return 0;
}

int state_task_ids(struct state *st, const char *run_id, struct strvec *ret, struct diag *reterr)
{
	struct strvec v = STRVEC_INIT;
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int err, rc;

	if (!run_id)
		return state_arg_missing(st, "run id", reterr);
	err = state_stmt(st, STMT_TASK_IDS, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, run_id);
	rc = b.rc;
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		const char *id;

		rc = sqlite3_step(s);
		if (rc != SQLITE_ROW)
			break;
		id = (const char *)sqlite3_column_text(s, 0);
		if (!id) {
			rc = SQLITE_CORRUPT; /* the schema says NOT NULL */
			break;
		}
		strvec_push(&v, id);
	}
	stmt_done(s);
	if (rc != SQLITE_DONE) {
		strvec_clear(&v);
		return state_fail(st, rc, reterr, "cannot list the tasks of run '%s'", run_id);
	}
	*ret = v;
	return 0;
}

int state_task_get(struct state *st, const char *run_id, const char *task_id, struct task_row *ret,
		   struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int err;

	if (!run_id || !task_id)
		return state_arg_missing(st, run_id ? "task id" : "run id", reterr);
	err = state_stmt(st, st->readonly && st->version < 4 ? STMT_TASK_GET_V3 : STMT_TASK_GET, &s,
			 reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, run_id);
	bind_text(&b, task_id);
	return select_one(st, s, b.rc, read_task_v, ret, "task", task_id, reterr);
}

int state_task_update(struct state *st, const struct task_row *t, const char *now,
		      struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int n, rc, err;

	err = state_need_writer(st, reterr);
	if (err < 0)
		return err;
	err = task_check(st, t, reterr);
	if (err < 0)
		return err;
	err = state_stmt(st, STMT_TASK_UPDATE, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_task_body(&b, t, now ? now : t->updated_at);
	bind_text(&b, t->run_id);
	bind_text(&b, t->id);
	n = stmt_write(st, s, b.rc, &rc);
	if (n < 0)
		n = state_fail(st, rc, reterr, "cannot update task '%s' of run '%s'", t->id,
			       t->run_id);
	else if (n == 0) {
		diag_set(reterr, st->path, 0, 0, "no task '%s' in run '%s'", t->id, t->run_id);
		n = -ENOENT;
	}
	stmt_done(s);
	return n < 0 ? n : 0;
}

/* ---- attempts ---- */

static int attempt_check(struct state *st, const struct attempt_row *a, struct diag *reterr)
{
	if (!a->run_id)
		return state_arg_missing(st, "attempt run id", reterr);
	if (!a->task_id)
		return state_arg_missing(st, "attempt task id", reterr);
	if (a->n == STATE_NULL_INT)
		return state_arg_missing(st, "attempt number", reterr);
	return 0;
}

/* Every column after the key, in ATTEMPT_COLS order. */
static void bind_attempt_body(struct binder *b, const struct attempt_row *a)
{
	bind_text(b, a->session);
	bind_text(b, a->adapter);
	bind_text(b, a->profile_hash);
	bind_int(b, a->pid);
	bind_text(b, a->agent_session_id);
	bind_text(b, a->resumed_from);
	bind_text(b, a->resume_kind);
	bind_text(b, a->started_at);
	bind_text(b, a->ended_at);
	bind_text(b, a->outcome);
	bind_int(b, a->exit_code);
	bind_text(b, a->reason);
	bind_int(b, a->input_tokens);
	bind_int(b, a->output_tokens);
	bind_real(b, a->cost_usd);
	bind_text(b, a->last_event);
	bind_text(b, a->agent_error);
	bind_text(b, a->model);
	bind_int(b, a->cached_tokens);
	bind_text(b, a->cost_source);
}

int state_attempt_insert(struct state *st, const struct attempt_row *a, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int n, rc, err;

	err = state_need_writer(st, reterr);
	if (err < 0)
		return err;
	err = attempt_check(st, a, reterr);
	if (err < 0)
		return err;
	err = state_stmt(st, STMT_ATTEMPT_INSERT, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, a->run_id);
	bind_text(&b, a->task_id);
	bind_int(&b, a->n);
	bind_attempt_body(&b, a);
	n = stmt_write(st, s, b.rc, &rc);
	if (n < 0)
		n = state_fail(st, rc, reterr,
			       "cannot insert attempt %lld of task '%s' of run '%s'",
			       (long long)a->n, a->task_id, a->run_id);
	stmt_done(s);
	return n < 0 ? n : 0;
}

int state_attempt_update(struct state *st, const struct attempt_row *a, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	int n, rc, err;

	err = state_need_writer(st, reterr);
	if (err < 0)
		return err;
	err = attempt_check(st, a, reterr);
	if (err < 0)
		return err;
	err = state_stmt(st, STMT_ATTEMPT_UPDATE, &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_attempt_body(&b, a);
	bind_text(&b, a->run_id);
	bind_text(&b, a->task_id);
	bind_int(&b, a->n);
	n = stmt_write(st, s, b.rc, &rc);
	if (n < 0)
		n = state_fail(st, rc, reterr,
			       "cannot update attempt %lld of task '%s' of run '%s'",
			       (long long)a->n, a->task_id, a->run_id);
	else if (n == 0) {
		diag_set(reterr, st->path, 0, 0, "no attempt %lld of task '%s' in run '%s'",
			 (long long)a->n, a->task_id, a->run_id);
		n = -ENOENT;
	}
	stmt_done(s);
	return n < 0 ? n : 0;
}

int state_attempts_get(struct state *st, const char *run_id, const char *task_id,
		       struct attempt_row **ret, size_t *ret_n, struct diag *reterr)
{
	struct binder b = {0};
	sqlite3_stmt *s = NULL;
	void *v = NULL;
	int err;

	if (!run_id || !task_id)
		return state_arg_missing(st, run_id ? "task id" : "run id", reterr);
	err = state_stmt(st,
			 st->readonly && st->version < 2   ? STMT_ATTEMPTS_GET_V1
			 : st->readonly && st->version < 5 ? STMT_ATTEMPTS_GET_V4
							   : STMT_ATTEMPTS_GET,
			 &s, reterr);
	if (err < 0)
		return err;
	b.s = s;
	bind_text(&b, run_id);
	bind_text(&b, task_id);
	err = select_all(st, s, b.rc, read_attempt_v, sizeof(struct attempt_row),
			 attempt_row_release_v, &v, ret_n, "attempts", reterr);
	if (err == 0)
		*ret = v;
	return err;
}
