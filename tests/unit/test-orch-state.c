/* The SQLite state store (src/orch/state.c) on real database files in a
 * fresh temp directory per test. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "orch/state.h"
#include "util/strvec.h"

struct fx {
	char dir[PATH_MAX];
	char db[PATH_MAX + 16];
};

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	(void)snprintf(f->dir, sizeof(f->dir), "%s/test-orch-state.XXXXXX",
		       tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	(void)snprintf(f->db, sizeof(f->db), "%s/state.db", f->dir);
	*state = f;
	return 0;
}

/* Remove every file the test left (the database, -wal, -shm, others), then
 * the directory: a failure here fails the test. */
static int teardown(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;
	int r = 0;

	d = opendir(f->dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		(void)snprintf(p, sizeof(p), "%s/%s", f->dir, de->d_name);
		if (unlink(p) < 0)
			r = -1;
	}
	(void)closedir(d);
	if (rmdir(f->dir) < 0)
		r = -1;
	free(f);
	return r;
}

static void path_in(const struct fx *f, const char *name, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s/%s", f->dir, name);
}

#define assert_str_or_null(a, b)                                                                   \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_)                                                                    \
			assert_ptr_equal(a_, b_);                                                  \
		else                                                                               \
			assert_string_equal(a_, b_);                                               \
	} while (0)

static void assert_run_equal(const struct run_row *a, const struct run_row *b)
{
	assert_str_or_null(a->id, b->id);
	assert_str_or_null(a->plan_path, b->plan_path);
	assert_str_or_null(a->plan_hash, b->plan_hash);
	assert_str_or_null(a->name, b->name);
	assert_str_or_null(a->repo, b->repo);
	assert_str_or_null(a->base_branch, b->base_branch);
	assert_str_or_null(a->base_commit, b->base_commit);
	assert_int_equal(a->state, b->state);
	assert_true(a->parallel == b->parallel);
	assert_str_or_null(a->created_at, b->created_at);
	assert_str_or_null(a->updated_at, b->updated_at);
	assert_true(a->supervisor_pid == b->supervisor_pid);
}

static void assert_task_equal(const struct task_row *a, const struct task_row *b)
{
	assert_str_or_null(a->run_id, b->run_id);
	assert_str_or_null(a->id, b->id);
	assert_true(a->idx == b->idx);
	assert_str_or_null(a->title, b->title);
	assert_str_or_null(a->role, b->role);
	assert_str_or_null(a->prompt, b->prompt);
	assert_str_or_null(a->spec, b->spec);
	assert_int_equal(a->state, b->state);
	assert_str_or_null(a->adapter, b->adapter);
	assert_str_or_null(a->profile_hash, b->profile_hash);
	assert_true(a->attempts == b->attempts);
	assert_str_or_null(a->retry_at, b->retry_at);
	assert_str_or_null(a->outcome, b->outcome);
	assert_str_or_null(a->reason, b->reason);
	assert_str_or_null(a->receipt_hash, b->receipt_hash);
	assert_str_or_null(a->branch, b->branch);
	assert_str_or_null(a->worktree, b->worktree);
	assert_str_or_null(a->session, b->session);
	assert_str_or_null(a->agent_session_id, b->agent_session_id);
	assert_str_or_null(a->head_commit, b->head_commit);
	assert_str_or_null(a->merge_commit, b->merge_commit);
	assert_str_or_null(a->conflicts, b->conflicts);
	assert_str_or_null(a->artifact_sha256, b->artifact_sha256);
	assert_str_or_null(a->updated_at, b->updated_at);
	assert_str_or_null(a->feedback, b->feedback);
}

static void assert_attempt_equal(const struct attempt_row *a, const struct attempt_row *b)
{
	assert_str_or_null(a->run_id, b->run_id);
	assert_str_or_null(a->task_id, b->task_id);
	assert_true(a->n == b->n);
	assert_str_or_null(a->session, b->session);
	assert_str_or_null(a->adapter, b->adapter);
	assert_str_or_null(a->profile_hash, b->profile_hash);
	assert_true(a->pid == b->pid);
	assert_str_or_null(a->agent_session_id, b->agent_session_id);
	assert_str_or_null(a->resumed_from, b->resumed_from);
	assert_str_or_null(a->resume_kind, b->resume_kind);
	assert_str_or_null(a->started_at, b->started_at);
	assert_str_or_null(a->ended_at, b->ended_at);
	assert_str_or_null(a->outcome, b->outcome);
	assert_true(a->exit_code == b->exit_code);
	assert_str_or_null(a->reason, b->reason);
	assert_true(a->input_tokens == b->input_tokens);
	assert_true(a->output_tokens == b->output_tokens);
	if (isnan(a->cost_usd) || isnan(b->cost_usd))
		assert_true(isnan(a->cost_usd) && isnan(b->cost_usd));
	else
		assert_true(a->cost_usd == b->cost_usd);
	assert_str_or_null(a->last_event, b->last_event);
	assert_str_or_null(a->agent_error, b->agent_error);
	assert_str_or_null(a->model, b->model);
	assert_true(a->cached_tokens == b->cached_tokens);
	assert_str_or_null(a->cost_source, b->cost_source);
}

/* A run row pointing at string literals (never released). */
static struct run_row run_fixture(const char *id, const char *created_at)
{
	struct run_row r = RUN_ROW_INIT;

	r.id = (char *)(uintptr_t)id;
	r.repo = (char *)(uintptr_t) "/srv/repo";
	r.created_at = (char *)(uintptr_t)created_at;
	r.updated_at = (char *)(uintptr_t)created_at;
	return r;
}

static struct task_row task_fixture(const char *run_id, const char *id, int64_t idx)
{
	struct task_row t = TASK_ROW_INIT;

	t.run_id = (char *)(uintptr_t)run_id;
	t.id = (char *)(uintptr_t)id;
	t.idx = idx;
	return t;
}

#define S(lit) ((char *)(uintptr_t)(lit))

/* What schema versions 5 (cost), 6 (goal mode) and 7 (hooks2) added,
 * dropped to make an older database. */
#define V5_DROP                                                                                    \
	"ALTER TABLE runs DROP COLUMN hooks; ALTER TABLE runs DROP COLUMN hooks_due; "             \
	"ALTER TABLE attempts DROP COLUMN model; ALTER TABLE attempts DROP COLUMN cached_tokens; " \
	"ALTER TABLE attempts DROP COLUMN cost_source; ALTER TABLE runs DROP COLUMN budget; "      \
	"DROP TABLE generated_plans; "

static struct state *open_ok(const char *path, unsigned flags)
{
	struct state *st = NULL;
	struct diag d;
	int r;

	r = state_open(path, flags, &st, &d);
	if (r < 0)
		print_error("state_open: %s\n", d.msg);
	assert_int_equal(r, 0);
	assert_non_null(st);
	return st;
}

/* Raw sqlite access to look behind the API. */
static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(
		sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
		SQLITE_OK);
	(void)sqlite3_extended_result_codes(db, 1);
	return db;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		print_error("%s: %s\n", sql, err ? err : "?");
	sqlite3_free(err);
	assert_int_equal(sqlite3_errcode(db), SQLITE_OK);
}

/* The first column of the first row as an integer (text in buf if given). */
static int64_t raw_query(sqlite3 *db, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *s = NULL;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW) {
		v = sqlite3_column_int64(s, 0);
		if (buf) {
			const unsigned char *t = sqlite3_column_text(s, 0);
			(void)snprintf(buf, size, "%s", t ? (const char *)t : "(null)");
		}
	}
	(void)sqlite3_finalize(s);
	return v;
}

static int64_t file_user_version(const char *path)
{
	sqlite3 *db = raw_open(path);
	int64_t v = raw_query(db, "PRAGMA user_version", NULL, 0);

	(void)sqlite3_close(db);
	return v;
}

static void write_bytes(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static bool file_exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

/* ---- enums ---- */

static void test_state_names(void **state)
{
	static const char *const tasks[] = {"pending", "running",     "completing", "merging",
					    "done",    "failed",      "refused",    "conflict",
					    "blocked", "interrupted", "no_changes", "cancelled",
					    "review",  "rebasing",    "resolving"};
	static const char *const runs[] = {"running", "done", "failed", "interrupted"};
	size_t i;

	(void)state;
	assert_int_equal(_TASK_STATE_MAX, sizeof(tasks) / sizeof(tasks[0]));
	for (i = 0; i < sizeof(tasks) / sizeof(tasks[0]); i++) {
		assert_string_equal(task_state_to_string((enum task_state)i), tasks[i]);
		assert_int_equal(task_state_from_string(tasks[i]), (int)i);
	}
	assert_int_equal(_RUN_STATE_MAX, sizeof(runs) / sizeof(runs[0]));
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		assert_string_equal(run_state_to_string((enum run_state)i), runs[i]);
		assert_int_equal(run_state_from_string(runs[i]), (int)i);
	}
	assert_int_equal(task_state_from_string("Pending"), _TASK_STATE_INVALID);
	assert_int_equal(task_state_from_string(""), _TASK_STATE_INVALID);
	assert_int_equal(task_state_from_string(NULL), _TASK_STATE_INVALID);
	assert_int_equal(run_state_from_string("pending"), _RUN_STATE_INVALID);
	assert_null(task_state_to_string(_TASK_STATE_MAX));
	assert_null(task_state_to_string(_TASK_STATE_INVALID));
	assert_null(run_state_to_string(_RUN_STATE_MAX));
	assert_null(run_state_to_string(_RUN_STATE_INVALID));
}

/* ---- open, create, migrate ---- */

static void test_create_open_reopen(void **state)
{
	struct fx *f = *state;
	struct run_row r = run_fixture("r1", "2026-01-01T00:00:00.000000Z"), got = RUN_ROW_INIT;
	struct state *st = NULL;
	struct diag d;
	char mode[32];
	sqlite3 *db;

	/* Missing file, no STATE_CREATE: -ENOENT and nothing created. */
	assert_int_equal(state_open(f->db, 0, &st, &d), -ENOENT);
	assert_null(st);
	assert_string_equal(d.file, f->db);
	assert_false(file_exists(f->db));
	assert_int_equal(state_open(f->db, STATE_READONLY, &st, &d), -ENOENT);
	assert_int_equal(state_open(f->db, STATE_READONLY | STATE_CREATE, &st, &d), -EINVAL);
	assert_false(file_exists(f->db));

	st = open_ok(f->db, STATE_CREATE);
	assert_string_equal(state_path(st), f->db);
	assert_int_equal(state_run_insert(st, &r, NULL), 0);
	st = state_close(st);
	assert_null(st);

	/* The file: WAL, schema version 1, three STRICT tables. */
	db = raw_open(f->db);
	assert_int_equal(raw_query(db, "PRAGMA user_version", NULL, 0), STATE_SCHEMA_VERSION);
	(void)raw_query(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "wal");
	assert_int_equal(
		raw_query(
			db,
			"SELECT count(*) FROM pragma_table_list WHERE strict = 1 AND name IN ('runs', 'tasks', 'attempts')",
			NULL, 0),
		3);
	(void)sqlite3_close(db);

	/* Reopen without STATE_CREATE (and again with it): the data is there. */
	st = open_ok(f->db, 0);
	assert_int_equal(state_run_get(st, "r1", &got, NULL), 0);
	assert_run_equal(&got, &r);
	run_row_release(&got);
	st = state_close(st);
	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_get(st, "r1", &got, NULL), 0);
	run_row_release(&got);
	state_close(st);
	assert_null(state_close(NULL));
}

static void test_open_bad_paths(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX + 64];
	struct state *st = NULL;
	struct diag d;

	assert_int_equal(state_open("", STATE_CREATE, &st, &d), -EINVAL);
	assert_int_equal(state_open(NULL, STATE_CREATE, &st, &d), -EINVAL);
	/* A directory is not a database file. */
	assert_int_equal(state_open(f->dir, 0, &st, &d), -EISDIR);
	assert_string_equal(d.file, f->dir);
	/* Its directory must exist: the store does not create it. */
	path_in(f, "no-such-dir/state.db", p, sizeof(p));
	assert_int_equal(state_open(p, STATE_CREATE, &st, &d), -ENOENT);
	assert_string_equal(d.file, p);
	assert_null(st);
}

static void test_not_a_database(void **state)
{
	static const char junk[] =
		"this is not a sqlite database, just some text that is long enough to fill a header and then some more bytes here.\n";
	struct fx *f = *state;
	char wal[PATH_MAX + 32], back[sizeof(junk)];
	struct state *st = NULL;
	struct diag d;
	int fd;

	write_bytes(f->db, junk, sizeof(junk) - 1);
	assert_int_equal(state_open(f->db, 0, &st, &d), -EBADMSG);
	assert_null(st);
	assert_string_equal(d.file, f->db);
	assert_non_null(strstr(d.msg, "not a SQLite"));
	assert_int_equal(state_open(f->db, STATE_CREATE, &st, &d), -EBADMSG);
	assert_int_equal(state_open(f->db, STATE_READONLY, &st, &d), -EBADMSG);

	/* Untouched: same bytes, no WAL file. */
	fd = open(f->db, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, back, sizeof(back)), (ssize_t)sizeof(junk) - 1);
	(void)close(fd);
	assert_memory_equal(back, junk, sizeof(junk) - 1);
	(void)snprintf(wal, sizeof(wal), "%s-wal", f->db);
	assert_false(file_exists(wal));
}

static void test_future_version_refused(void **state)
{
	struct fx *f = *state;
	struct state *st = NULL;
	struct diag d;
	char mode[32];
	sqlite3 *db;

	db = raw_open(f->db);
	raw_exec(db, "CREATE TABLE runs (id TEXT); PRAGMA user_version = 999;");
	(void)sqlite3_close(db);

	assert_int_equal(state_open(f->db, 0, &st, &d), -EPROTO);
	assert_null(st);
	assert_string_equal(d.file, f->db);
	assert_non_null(strstr(d.msg, "schema version 999"));
	assert_non_null(strstr(d.msg, "newer"));
	assert_int_equal(state_open(f->db, STATE_READONLY, &st, &d), -EPROTO);

	/* Refused untouched: still version 999, still not WAL. */
	db = raw_open(f->db);
	assert_int_equal(raw_query(db, "PRAGMA user_version", NULL, 0), 999);
	(void)raw_query(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "delete");
	(void)sqlite3_close(db);
}

static void test_v0_migrated(void **state)
{
	struct fx *f = *state;
	struct run_row r = run_fixture("r1", NULL);
	char empty[PATH_MAX + 16];
	struct state *st = NULL;
	struct diag d;
	sqlite3 *db;

	/* A version-0 database with an unrelated table. */
	db = raw_open(f->db);
	raw_exec(db, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('kept');");
	(void)sqlite3_close(db);
	assert_int_equal(file_user_version(f->db), 0);

	/* A reader neither migrates nor accepts it. */
	assert_int_equal(state_open(f->db, STATE_READONLY, &st, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "no schema"));
	assert_int_equal(file_user_version(f->db), 0);

	st = open_ok(f->db, 0);
	assert_int_equal(state_run_insert(st, &r, NULL), 0);
	st = state_close(st);
	db = raw_open(f->db);
	assert_int_equal(raw_query(db, "PRAGMA user_version", NULL, 0), STATE_SCHEMA_VERSION);
	assert_int_equal(raw_query(db, "SELECT count(*) FROM runs", NULL, 0), 1);
	assert_int_equal(raw_query(db, "SELECT count(*) FROM notes WHERE x = 'kept'", NULL, 0), 1);
	(void)sqlite3_close(db);

	/* An empty (zero-byte) file is a version-0 database too. */
	path_in(f, "empty.db", empty, sizeof(empty));
	write_bytes(empty, "", 0);
	st = open_ok(empty, 0);
	state_close(st);
	assert_int_equal(file_user_version(empty), STATE_SCHEMA_VERSION);
	/* ...and now a reader takes it. */
	st = open_ok(empty, STATE_READONLY);
	state_close(st);
}

static void test_failed_migration_rolls_back(void **state)
{
	struct fx *f = *state;
	struct state *st = NULL;
	struct diag d;
	sqlite3 *db;
	int r;

	/* "attempts" exists already, so the migration's third CREATE fails
	 * after the first two succeeded. */
	db = raw_open(f->db);
	raw_exec(db, "CREATE TABLE attempts (x TEXT);");
	(void)sqlite3_close(db);

	r = state_open(f->db, 0, &st, &d);
	assert_true(r < 0);
	assert_null(st);
	assert_string_equal(d.file, f->db);
	assert_non_null(strstr(d.msg, "schema version 1"));
	assert_non_null(strstr(d.msg, "attempts"));

	/* All of it rolled back: no runs or tasks table, still version 0. */
	db = raw_open(f->db);
	assert_int_equal(raw_query(db, "PRAGMA user_version", NULL, 0), 0);
	assert_int_equal(
		raw_query(db, "SELECT count(*) FROM sqlite_schema WHERE name IN ('runs', 'tasks')",
			  NULL, 0),
		0);
	(void)sqlite3_close(db);
}

/* A version 1 database (before attempts.agent_error): a reader reads it
 * with agent_error NULL, a writer migrates it in place, keeping every row. */
static void test_v1_read_and_migrated(void **state)
{
	struct fx *f = *state;
	struct run_row run = run_fixture("run", NULL);
	struct task_row task = task_fixture("run", "t1", 0);
	struct attempt_row a = ATTEMPT_ROW_INIT, *list = NULL;
	struct state *st;
	size_t n = 0;
	sqlite3 *db;

	a.run_id = S("run");
	a.task_id = S("t1");
	a.n = 1;
	a.outcome = S("failed");
	a.reason = S("exited with code 41 without its terminal event");
	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &run, NULL), 0);
	assert_int_equal(state_task_insert(st, &task, NULL), 0);
	assert_int_equal(state_attempt_insert(st, &a, NULL), 0);
	st = state_close(st);
	/* back to what version 1 wrote */
	db = raw_open(f->db);
	raw_exec(db, "ALTER TABLE attempts DROP COLUMN agent_error; ALTER TABLE runs DROP COLUMN "
		     "exit_code; ALTER TABLE tasks DROP COLUMN feedback; " V5_DROP
		     "PRAGMA user_version = 1;");
	(void)sqlite3_close(db);

	st = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_attempts_get(st, "run", "t1", &list, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_attempt_equal(&list[0], &a);
	assert_null(list[0].agent_error);
	attempt_rows_free(list, n);
	st = state_close(st);
	assert_int_equal(file_user_version(f->db), 1);

	st = open_ok(f->db, 0);
	assert_int_equal(file_user_version(f->db), STATE_SCHEMA_VERSION);
	a.agent_error = S(
		"When using Gemini API, you must specify the GEMINI_API_KEY environment variable.");
	assert_int_equal(state_attempt_update(st, &a, NULL), 0);
	assert_int_equal(state_attempts_get(st, "run", "t1", &list, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_attempt_equal(&list[0], &a);
	attempt_rows_free(list, n);
	state_close(st);
}

/* A version 3 database (before review's feedback) reads with NULL
 * feedback, and migrates to one that keeps it. */
static void test_v3_read_and_migrated(void **state)
{
	struct fx *f = *state;
	struct run_row run = run_fixture("run", NULL);
	struct task_row task = task_fixture("run", "t1", 0), got = TASK_ROW_INIT;
	struct state *st;
	sqlite3 *db;

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &run, NULL), 0);
	assert_int_equal(state_task_insert(st, &task, NULL), 0);
	st = state_close(st);
	db = raw_open(f->db);
	raw_exec(db, "ALTER TABLE tasks DROP COLUMN feedback; " V5_DROP "PRAGMA user_version = 3;");
	(void)sqlite3_close(db);

	st = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_task_get(st, "run", "t1", &got, NULL), 0);
	assert_null(got.feedback);
	task_row_release(&got);
	st = state_close(st);
	assert_int_equal(file_user_version(f->db), 3);

	st = open_ok(f->db, 0);
	assert_int_equal(file_user_version(f->db), STATE_SCHEMA_VERSION);
	task.feedback = S("add a test");
	assert_int_equal(state_task_update(st, &task, NULL, NULL), 0);
	assert_int_equal(state_task_get(st, "run", "t1", &got, NULL), 0);
	assert_string_equal(got.feedback, "add a test");
	task_row_release(&got);
	state_close(st);
}

/* ---- rows ---- */

static void test_run_roundtrip(void **state)
{
	struct fx *f = *state;
	struct run_row full = RUN_ROW_INIT, sparse = RUN_ROW_INIT, got = RUN_ROW_INIT;
	struct run_row *list = NULL;
	struct state *st;
	struct diag d;
	size_t n = 99;

	full.id = S("20260101-abc");
	full.plan_path = S("/srv/repo/plans/Ünïcødé ✓ 日本語.yaml");
	full.plan_hash = S("sha256:0123456789abcdef");
	full.name = S("demo \"quoted\" 'single' ; DROP TABLE runs; --");
	full.repo = S("/srv/repo");
	full.base_branch = S("main");
	full.base_commit = S("0123456789abcdef0123456789abcdef01234567");
	full.state = RUN_INTERRUPTED;
	full.parallel = 4;
	full.created_at = S("2026-01-01T00:00:00.000001Z");
	full.updated_at = S("2026-01-01T00:00:01.000000Z");
	full.supervisor_pid = 4242;

	sparse.id = S("sparse");
	sparse.repo = S("/r");

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_latest(st, &got, &d), -ENOENT);
	assert_int_equal(state_run_list(st, &list, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(list);

	assert_int_equal(state_run_insert(st, &full, NULL), 0);
	assert_int_equal(state_run_insert(st, &sparse, NULL), 0);
	assert_int_equal(state_run_get(st, full.id, &got, NULL), 0);
	assert_run_equal(&got, &full);
	run_row_release(&got);
	assert_int_equal(state_run_get(st, "sparse", &got, NULL), 0);
	assert_run_equal(&got, &sparse);
	assert_null(got.plan_path);
	assert_true(got.parallel == STATE_NULL_INT);
	assert_true(got.supervisor_pid == STATE_NULL_INT);
	run_row_release(&got);
	assert_null(got.id); /* released rows are reset */
	run_row_release(NULL);

	/* the run's exit code, read back through the writer itself (a writer
	 * knows its schema: it used to read every v3+ column as NULL) */
	{
		int64_t code = 0;

		assert_int_equal(state_run_get_exit(st, full.id, &code, NULL), 0);
		assert_true(code == STATE_NULL_INT);
		assert_int_equal(state_run_set_exit(st, full.id, 7, full.updated_at, NULL), 0);
		assert_int_equal(state_run_get_exit(st, full.id, &code, NULL), 0);
		assert_int_equal(code, 7);
	}

	/* Errors. */
	assert_int_equal(state_run_get(st, "nope", &got, &d), -ENOENT);
	assert_string_equal(d.file, f->db);
	assert_non_null(strstr(d.msg, "'nope'"));
	assert_int_equal(state_run_insert(st, &full, &d), -EEXIST);
	assert_non_null(strstr(d.msg, "UNIQUE"));
	sparse.id = S("no-repo");
	sparse.repo = NULL;
	assert_int_equal(state_run_insert(st, &sparse, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "NOT NULL"));
	sparse.id = NULL;
	sparse.repo = S("/r");
	assert_int_equal(state_run_insert(st, &sparse, &d), -EINVAL);
	sparse.id = S("bad-state");
	sparse.state = _RUN_STATE_MAX;
	assert_int_equal(state_run_insert(st, &sparse, &d), -EINVAL);
	assert_int_equal(state_run_get(st, "bad-state", &got, NULL), -ENOENT);

	/* set_state, set_pid */
	assert_int_equal(state_run_set_state(st, "sparse", RUN_DONE, "2026-02-02T00:00:00Z", NULL),
			 0);
	assert_int_equal(state_run_set_pid(st, "sparse", 77, "2026-02-03T00:00:00Z", NULL), 0);
	assert_int_equal(state_run_get(st, "sparse", &got, NULL), 0);
	assert_int_equal(got.state, RUN_DONE);
	assert_true(got.supervisor_pid == 77);
	assert_string_equal(got.updated_at, "2026-02-03T00:00:00Z");
	assert_string_equal(got.repo, "/r"); /* other columns untouched */
	run_row_release(&got);
	assert_int_equal(
		state_run_set_pid(st, "sparse", STATE_NULL_INT, "2026-02-04T00:00:00Z", NULL), 0);
	assert_int_equal(state_run_get(st, "sparse", &got, NULL), 0);
	assert_true(got.supervisor_pid == STATE_NULL_INT);
	assert_int_equal(got.state, RUN_DONE);
	run_row_release(&got);
	assert_int_equal(state_run_set_state(st, "nope", RUN_DONE, "t", &d), -ENOENT);
	assert_int_equal(state_run_set_pid(st, "nope", 5, "t", &d), -ENOENT);
	assert_int_equal(state_run_set_state(st, "sparse", _RUN_STATE_INVALID, "t", &d), -EINVAL);
	assert_int_equal(state_run_set_pid(st, "sparse", 0, "t", &d), -EINVAL);
	assert_int_equal(state_run_set_pid(st, "sparse", -3, "t", &d), -EINVAL);

	/* latest = inserted last, whatever created_at says; list in insertion order. */
	struct run_row older = run_fixture("older", "2020-01-01T00:00:00.000000Z");
	assert_int_equal(state_run_insert(st, &older, NULL), 0);
	assert_int_equal(state_run_latest(st, &got, NULL), 0);
	assert_string_equal(got.id, "older");
	run_row_release(&got);
	assert_int_equal(state_run_list(st, &list, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(list[0].id, full.id);
	assert_run_equal(&list[0], &full);
	assert_string_equal(list[1].id, "sparse");
	assert_string_equal(list[2].id, "older");
	run_rows_free(list, n);
	run_rows_free(NULL, 0);
	state_close(st);
}

static void test_task_roundtrip(void **state)
{
	struct fx *f = *state;
	struct run_row run = run_fixture("run", "2026-01-01T00:00:00.000000Z");
	struct task_row full = TASK_ROW_INIT, got = TASK_ROW_INIT, t;
	struct task_row *list = NULL;
	struct state *st;
	struct diag d;
	size_t n = 99;

	full.run_id = S("run");
	full.id = S("t-ü");
	full.idx = 2;
	full.title = S("Ünïcødé title ✓");
	full.role = S("backend");
	full.prompt = S("line one\nline \"two\"\t'three'\n日本語 🎻\n'); DROP TABLE tasks; --");
	full.spec =
		S("{\"requires\":[\"capability:vision\"],\"depends_on\":[\"a\"],\"timeout\":600}");
	full.state = TASK_CONFLICT;
	full.adapter = S("claude");
	full.profile_hash = S("sha256:aa");
	full.attempts = 3;
	full.retry_at = S("2026-01-01T00:05:00.000000Z");
	full.outcome = S("completed");
	full.reason = S("merge conflict in 2 files");
	full.receipt_hash = S("sha256:bb");
	full.branch = S("bernstein/s1");
	full.worktree = S("/srv/repo/.bernstein/worktrees/s1");
	full.session = S("s1");
	full.agent_session_id = S("9f0c-uuid");
	full.head_commit = S("1111111111111111111111111111111111111111");
	full.merge_commit = NULL;
	full.conflicts = S("[\"src/a.c\",\"docs/ü.md\"]");
	full.artifact_sha256 = S("cafe");
	full.feedback = S("Use the existing helper.\n'; DROP TABLE tasks; --");
	full.updated_at = S("2026-01-01T00:00:02.000000Z");

	st = open_ok(f->db, STATE_CREATE);
	/* The parent run must exist (foreign key). */
	assert_int_equal(state_task_insert(st, &full, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "FOREIGN KEY"));
	assert_int_equal(state_run_insert(st, &run, NULL), 0);
	assert_int_equal(state_tasks_get(st, "run", &list, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(list);

	/* Several tasks in one transaction, out of idx order. */
	assert_int_equal(state_begin(st, NULL), 0);
	assert_int_equal(state_task_insert(st, &full, NULL), 0);
	t = task_fixture("run", "b", 1);
	assert_int_equal(state_task_insert(st, &t, NULL), 0);
	t = task_fixture("run", "z", 0);
	assert_int_equal(state_task_insert(st, &t, NULL), 0);
	t = task_fixture("run", "a", 1);
	assert_int_equal(state_task_insert(st, &t, NULL), 0);
	assert_int_equal(state_commit(st, NULL), 0);

	assert_int_equal(state_task_get(st, "run", "t-ü", &got, NULL), 0);
	assert_task_equal(&got, &full);
	task_row_release(&got);
	assert_int_equal(state_task_get(st, "run", "a", &got, NULL), 0);
	assert_task_equal(&got, &t); /* all NULL but the key, idx, state, attempts 0 */
	assert_null(got.title);
	assert_true(got.attempts == 0);
	task_row_release(&got);

	assert_int_equal(state_tasks_get(st, "run", &list, &n, NULL), 0);
	assert_int_equal(n, 4);
	assert_string_equal(list[0].id, "z");
	assert_string_equal(list[1].id, "a");
	assert_string_equal(list[2].id, "b");
	assert_string_equal(list[3].id, "t-ü");
	assert_task_equal(&list[3], &full);
	task_rows_free(list, n);
	assert_int_equal(state_tasks_get(st, "other-run", &list, &n, NULL), 0);
	assert_int_equal(n, 0);

	/* The whole row is rewritten; updated_at = now. */
	full.state = TASK_DONE;
	full.attempts = 4;
	full.title = NULL;
	full.outcome = S("no_changes");
	full.merge_commit = S("2222222222222222222222222222222222222222");
	full.conflicts = S("[]");
	full.retry_at = NULL;
	full.idx = 9;
	assert_int_equal(state_task_update(st, &full, "2026-01-01T00:09:00.000000Z", NULL), 0);
	assert_int_equal(state_task_get(st, "run", "t-ü", &got, NULL), 0);
	full.updated_at = S("2026-01-01T00:09:00.000000Z");
	assert_task_equal(&got, &full);
	task_row_release(&got);
	/* now == NULL keeps the row's own updated_at. */
	full.updated_at = S("2026-01-01T00:10:00.000000Z");
	full.state = TASK_INTERRUPTED;
	assert_int_equal(state_task_update(st, &full, NULL, NULL), 0);
	assert_int_equal(state_task_get(st, "run", "t-ü", &got, NULL), 0);
	assert_task_equal(&got, &full);
	task_row_release(&got);

	/* Errors. */
	assert_int_equal(state_task_get(st, "run", "nope", &got, &d), -ENOENT);
	assert_int_equal(state_task_insert(st, &full, &d), -EEXIST);
	t = task_fixture("run", "nope", 0);
	assert_int_equal(state_task_update(st, &t, "now", &d), -ENOENT);
	assert_non_null(strstr(d.msg, "'nope'"));
	t = task_fixture("run", "badspec", 0);
	t.spec = S("{not json");
	assert_int_equal(state_task_insert(st, &t, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "CHECK"));
	t.spec = S("[1, 2]"); /* valid JSON, but not an object */
	assert_int_equal(state_task_insert(st, &t, &d), -EINVAL);
	t.spec = NULL;
	t.conflicts = S("{\"a\":1}"); /* not a list */
	assert_int_equal(state_task_insert(st, &t, &d), -EINVAL);
	t.conflicts = NULL;
	t.attempts = -1;
	assert_int_equal(state_task_insert(st, &t, &d), -EINVAL);
	t.attempts = 0;
	t.state = _TASK_STATE_MAX;
	assert_int_equal(state_task_insert(st, &t, &d), -EINVAL);
	t.state = TASK_PENDING;
	t.id = NULL;
	assert_int_equal(state_task_insert(st, &t, &d), -EINVAL);
	assert_int_equal(state_task_get(st, "run", "badspec", &got, NULL), -ENOENT);
	t = task_fixture("run", "a", 1);
	t.state = _TASK_STATE_INVALID;
	assert_int_equal(state_task_update(st, &t, "now", &d), -EINVAL);
	state_close(st);

	/* Nothing was lost to the quotes in the prompt. */
	sqlite3 *db = raw_open(f->db);
	assert_int_equal(raw_query(db, "SELECT count(*) FROM tasks", NULL, 0), 4);
	(void)sqlite3_close(db);
}

/* A run's task ids in state_tasks_get()'s order (idx, then id), without
 * their rows: what the run loop and the cost summary walk (issue #24). */
static void test_task_ids(void **state)
{
	struct fx *f = *state;
	struct run_row run = run_fixture("run", NULL);
	struct strvec ids = STRVEC_INIT;
	struct state *st;
	struct task_row t;
	const char *want[] = {"z", "a", "b", "c"};
	size_t i;

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &run, NULL), 0);
	assert_int_equal(state_task_ids(st, "run", &ids, NULL), 0);
	assert_int_equal(ids.nr, 0);
	t = task_fixture("run", "c", 2);
	assert_int_equal(state_task_insert(st, &t, NULL), 0);
	t = task_fixture("run", "b", 1);
	assert_int_equal(state_task_insert(st, &t, NULL), 0);
	t = task_fixture("run", "z", 0);
	assert_int_equal(state_task_insert(st, &t, NULL), 0);
	t = task_fixture("run", "a", 1);
	assert_int_equal(state_task_insert(st, &t, NULL), 0);
	assert_int_equal(state_task_ids(st, "run", &ids, NULL), 0);
	assert_int_equal(ids.nr, 4);
	for (i = 0; i < 4; i++)
		assert_string_equal(ids.v[i], want[i]);
	strvec_clear(&ids);
	assert_int_equal(state_task_ids(st, "nosuch", &ids, NULL), 0);
	assert_int_equal(ids.nr, 0);
	st = state_close(st);
	/* a reader walks them alike */
	st = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_task_ids(st, "run", &ids, NULL), 0);
	assert_int_equal(ids.nr, 4);
	assert_string_equal(ids.v[3], "c");
	strvec_clear(&ids);
	(void)state_close(st);
}

static void test_run_budget(void **state)
{
	struct fx *f = *state;
	struct run_row run = run_fixture("run", NULL);
	struct state *st;
	char *b = S("x");
	struct diag d;

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &run, NULL), 0);
	assert_int_equal(state_run_get_budget(st, "run", &b, NULL), 0);
	assert_null(b); /* none */
	assert_int_equal(state_run_set_budget(st, "run", "{\"max_cost_usd\":2.5}", "t", NULL), 0);
	assert_int_equal(state_run_get_budget(st, "run", &b, NULL), 0);
	assert_string_equal(b, "{\"max_cost_usd\":2.5}");
	free(b);
	/* only a JSON object */
	assert_int_equal(state_run_set_budget(st, "run", "[1]", "t", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "CHECK"));
	assert_int_equal(state_run_set_budget(st, "nosuch", "{}", "t", &d), -ENOENT);
	assert_int_equal(state_run_get_budget(st, "nosuch", &b, &d), -ENOENT);
	assert_int_equal(state_run_set_budget(st, "run", NULL, "t", NULL), 0);
	assert_int_equal(state_run_get_budget(st, "run", &b, NULL), 0);
	assert_null(b);
	st = state_close(st);
	/* a reader sees it too */
	st = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_run_get_budget(st, "run", &b, NULL), 0);
	assert_null(b);
	(void)state_close(st);
}

/* Schema 7: a run's plan hooks (a JSON object, NULL by default) and the
 * hooks due (a JSON array; NULL sets "[]"). */
static void test_run_hooks(void **state)
{
	struct fx *f = *state;
	struct run_row run = run_fixture("run", NULL);
	struct state *st;
	char *v = S("x");
	struct diag d;

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &run, NULL), 0);
	assert_int_equal(state_run_get_hooks(st, "run", &v, NULL), 0);
	assert_null(v);
	assert_int_equal(state_run_get_hooks_due(st, "run", &v, NULL), 0);
	assert_null(v);
	assert_int_equal(state_run_set_hooks(st, "run", "{\"hooks\":{}}", "t", NULL), 0);
	assert_int_equal(state_run_get_hooks(st, "run", &v, NULL), 0);
	assert_string_equal(v, "{\"hooks\":{}}");
	free(v);
	assert_int_equal(state_run_set_hooks(st, "run", "[1]", "t", &d), -EINVAL);
	assert_int_equal(state_run_set_hooks_due(st, "run", "{}", "t", &d), -EINVAL);
	assert_int_equal(state_run_set_hooks_due(st, "run", "[{\"task\":\"a\"}]", "t", NULL), 0);
	assert_int_equal(state_run_get_hooks_due(st, "run", &v, NULL), 0);
	assert_string_equal(v, "[{\"task\":\"a\"}]");
	free(v);
	assert_int_equal(state_run_set_hooks_due(st, "run", NULL, "t", NULL), 0);
	assert_int_equal(state_run_get_hooks_due(st, "run", &v, NULL), 0);
	assert_string_equal(v, "[]");
	free(v);
	assert_int_equal(state_run_set_hooks_due(st, "nosuch", "[]", "t", &d), -ENOENT);
	(void)state_close(st);
}

/* Goal mode: a generated plan's record by its hash, the latest one winning;
 * a reader of a version 5 database (no table) finds none. */
static void test_generated_plans(void **state)
{
	struct fx *f = *state;
	struct state *st;
	char *rec = S("x");
	struct diag d;
	sqlite3 *db;

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_generated_get(st, "h1", &rec, NULL), 0);
	assert_null(rec);
	assert_int_equal(state_generated_put(st, "gen-1", "h1", "{\"goal\":\"a\"}", "t", NULL), 0);
	assert_int_equal(state_generated_put(st, "gen-2", "h2", "{\"goal\":\"b\"}", "t", NULL), 0);
	assert_int_equal(state_generated_put(st, "gen-3", "h1", "{\"goal\":\"c\"}", "t", NULL), 0);
	assert_int_equal(state_generated_get(st, "h1", &rec, NULL), 0);
	assert_string_equal(rec, "{\"goal\":\"c\"}");
	free(rec);
	assert_int_equal(state_generated_get(st, "h2", &rec, NULL), 0);
	assert_string_equal(rec, "{\"goal\":\"b\"}");
	free(rec);
	/* only a JSON object; every field needed */
	assert_int_equal(state_generated_put(st, "gen-4", "h4", "[1]", "t", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "CHECK"));
	assert_int_equal(state_generated_put(st, "gen-4", NULL, "{}", "t", &d), -EINVAL);
	assert_int_equal(state_generated_get(st, NULL, &rec, &d), -EINVAL);
	st = state_close(st);
	/* a reader sees it */
	st = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_generated_put(st, "gen-5", "h5", "{}", "t", &d), -EROFS);
	assert_int_equal(state_generated_get(st, "h2", &rec, NULL), 0);
	assert_string_equal(rec, "{\"goal\":\"b\"}");
	free(rec);
	st = state_close(st);
	/* a version 5 database read as it is: no record, no error */
	db = raw_open(f->db);
	raw_exec(db, "DROP TABLE generated_plans; ALTER TABLE runs DROP COLUMN hooks; "
		     "ALTER TABLE runs DROP COLUMN hooks_due; PRAGMA user_version = 5;");
	(void)sqlite3_close(db);
	st = open_ok(f->db, STATE_READONLY);
	rec = S("x");
	assert_int_equal(state_generated_get(st, "h2", &rec, NULL), 0);
	assert_null(rec);
	st = state_close(st);
	/* a writer migrates it, and the table is there again, empty */
	st = open_ok(f->db, 0);
	assert_int_equal(file_user_version(f->db), STATE_SCHEMA_VERSION);
	assert_int_equal(state_generated_get(st, "h2", &rec, NULL), 0);
	assert_null(rec);
	(void)state_close(st);
}

static void test_attempt_roundtrip(void **state)
{
	struct fx *f = *state;
	struct run_row run = run_fixture("run", NULL);
	struct task_row task = task_fixture("run", "t1", 0);
	struct attempt_row a1 = ATTEMPT_ROW_INIT, a2 = ATTEMPT_ROW_INIT, bad;
	struct attempt_row *list = NULL, init;
	struct state *st;
	struct diag d;
	size_t n = 99;

	attempt_row_init(&init);
	assert_true(init.pid == STATE_NULL_INT && init.exit_code == STATE_NULL_INT);
	assert_true(isnan(init.cost_usd));

	a1.run_id = S("run");
	a1.task_id = S("t1");
	a1.n = 1;
	a1.session = S("s1");
	a1.adapter = S("codex");
	a1.profile_hash = S("sha256:cc");
	a1.pid = 31337;
	a1.agent_session_id = S("sess-ü");
	a1.resumed_from = NULL;
	a1.resume_kind = NULL;
	a1.started_at = S("2026-01-01T00:00:00.000000Z");
	a1.ended_at = S("2026-01-01T00:01:00.000000Z");
	a1.outcome = S("rate_limited");
	a1.exit_code = 0; /* 0, not NULL */
	a1.reason = S("HTTP 429 ✗");
	a1.input_tokens = 0;
	a1.output_tokens = 123456789012LL;
	a1.cost_usd = 0.0;
	a1.last_event = S("{\"kind\":\"result\"}");
	a1.agent_error = S("HTTP 401: invalid x-api-key");
	a1.model = S("gpt-5");
	a1.cached_tokens = 4096;
	a1.cost_source = S("pricing");

	a2.run_id = S("run");
	a2.task_id = S("t1");
	a2.n = 2;
	a2.resumed_from = S("s1");
	a2.resume_kind = S("native");

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &run, NULL), 0);
	/* The task must exist (foreign key on run_id, task_id). */
	assert_int_equal(state_attempt_insert(st, &a1, &d), -ENOENT);
	assert_int_equal(state_task_insert(st, &task, NULL), 0);
	assert_int_equal(state_attempts_get(st, "run", "t1", &list, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(list);

	assert_int_equal(state_attempt_insert(st, &a2, NULL), 0);
	assert_int_equal(state_attempt_insert(st, &a1, NULL), 0);
	assert_int_equal(state_attempts_get(st, "run", "t1", &list, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_attempt_equal(&list[0], &a1);
	assert_attempt_equal(&list[1], &a2);
	assert_true(list[1].exit_code == STATE_NULL_INT);
	assert_true(list[1].input_tokens == STATE_NULL_INT);
	assert_true(list[1].cached_tokens == STATE_NULL_INT);
	assert_null(list[1].model);
	assert_true(isnan(list[1].cost_usd));
	assert_true(list[0].exit_code == 0);
	assert_true(list[0].cost_usd == 0.0);
	attempt_rows_free(list, n);
	attempt_rows_free(NULL, 0);

	/* Update rewrites every non-key column. */
	a2.pid = 99;
	a2.ended_at = S("2026-01-01T00:02:00.000000Z");
	a2.outcome = S("completed");
	a2.exit_code = 137;
	a2.input_tokens = 10;
	a2.output_tokens = 20;
	a2.cost_usd = 0.0125;
	a2.resume_kind = S("fallback");
	a2.last_event = S("done");
	assert_int_equal(state_attempt_update(st, &a2, NULL), 0);
	assert_int_equal(state_attempts_get(st, "run", "t1", &list, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_attempt_equal(&list[1], &a2);
	assert_attempt_equal(&list[0], &a1);
	attempt_rows_free(list, n);
	a2.cost_usd = NAN; /* back to NULL */
	a2.exit_code = STATE_NULL_INT;
	assert_int_equal(state_attempt_update(st, &a2, NULL), 0);
	assert_int_equal(state_attempts_get(st, "run", "t1", &list, &n, NULL), 0);
	assert_attempt_equal(&list[1], &a2);
	attempt_rows_free(list, n);

	/* Errors. */
	assert_int_equal(state_attempt_insert(st, &a1, &d), -EEXIST);
	bad = a1;
	bad.n = 3;
	assert_int_equal(state_attempt_update(st, &bad, &d), -ENOENT);
	bad.resume_kind = S("bogus");
	assert_int_equal(state_attempt_insert(st, &bad, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "CHECK"));
	bad.resume_kind = NULL;
	bad.cost_source = S("guess");
	assert_int_equal(state_attempt_insert(st, &bad, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "CHECK"));
	bad.cost_source = NULL;
	bad.n = STATE_NULL_INT;
	assert_int_equal(state_attempt_insert(st, &bad, &d), -EINVAL);
	bad.n = 3;
	bad.task_id = S("no-such-task");
	assert_int_equal(state_attempt_insert(st, &bad, &d), -ENOENT);
	assert_int_equal(state_attempts_get(st, "run", "no-such-task", &list, &n, NULL), 0);
	assert_int_equal(n, 0);
	state_close(st);
}

static void test_invalid_utf8_and_long_text(void **state)
{
	struct fx *f = *state;
	struct run_row r = run_fixture("bytes", NULL), got = RUN_ROW_INIT;
	struct state *st;
	char *big;
	size_t len = 1 << 20;

	big = malloc(len + 1);
	assert_non_null(big);
	memset(big, 'x', len);
	big[len] = '\0';
	r.name = S("\xff\xfe not UTF-8 \xc3");
	r.plan_path = big;
	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &r, NULL), 0);
	assert_int_equal(state_run_get(st, "bytes", &got, NULL), 0);
	assert_string_equal(got.name, r.name);
	assert_int_equal(strlen(got.plan_path), len);
	assert_run_equal(&got, &r);
	run_row_release(&got);
	state_close(st);
	free(big);
}

/* ---- transactions, readers, crashes ---- */

static void test_transactions(void **state)
{
	struct fx *f = *state;
	struct run_row a = run_fixture("a", NULL), b = run_fixture("b", NULL), got = RUN_ROW_INIT;
	struct state *st;
	struct diag d;

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_commit(st, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "no transaction"));
	assert_int_equal(state_rollback(st, NULL), 0); /* no-op */

	assert_int_equal(state_begin(st, NULL), 0);
	assert_int_equal(state_begin(st, &d), -EINVAL);
	assert_int_equal(state_run_insert(st, &a, NULL), 0);
	assert_int_equal(state_run_get(st, "a", &got, NULL), 0); /* visible to itself */
	run_row_release(&got);
	assert_int_equal(state_rollback(st, NULL), 0);
	assert_int_equal(state_run_get(st, "a", &got, NULL), -ENOENT);

	/* A failed statement inside a transaction does not end it. */
	assert_int_equal(state_begin(st, NULL), 0);
	assert_int_equal(state_run_insert(st, &a, NULL), 0);
	assert_int_equal(state_run_insert(st, &a, NULL), -EEXIST);
	assert_int_equal(state_run_insert(st, &b, NULL), 0);
	assert_int_equal(state_commit(st, NULL), 0);
	assert_int_equal(state_commit(st, &d), -EINVAL);
	state_close(st);

	/* Committed means on disk for the next opener. */
	st = open_ok(f->db, 0);
	assert_int_equal(state_run_get(st, "a", &got, NULL), 0);
	run_row_release(&got);
	assert_int_equal(state_run_get(st, "b", &got, NULL), 0);
	run_row_release(&got);
	/* Closing with an open transaction rolls it back. */
	assert_int_equal(state_begin(st, NULL), 0);
	struct run_row c = run_fixture("c", NULL);
	assert_int_equal(state_run_insert(st, &c, NULL), 0);
	state_close(st);
	st = open_ok(f->db, 0);
	assert_int_equal(state_run_get(st, "c", &got, NULL), -ENOENT);
	state_close(st);
}

static void test_reader_while_writer_active(void **state)
{
	struct fx *f = *state;
	struct run_row r1 = run_fixture("r1", NULL), r2 = run_fixture("r2", NULL),
		       r3 = run_fixture("r3", NULL), got = RUN_ROW_INIT;
	struct task_row t = task_fixture("r1", "t", 0), tgot = TASK_ROW_INIT;
	struct attempt_row a = ATTEMPT_ROW_INIT;
	struct run_row *list = NULL;
	struct state *w, *rd;
	struct diag d;
	size_t n;

	w = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(w, &r1, NULL), 0);
	assert_int_equal(state_task_insert(w, &t, NULL), 0);

	/* The writer holds an open write transaction with uncommitted changes. */
	assert_int_equal(state_begin(w, NULL), 0);
	assert_int_equal(state_run_insert(w, &r2, NULL), 0);
	t.state = TASK_RUNNING;
	assert_int_equal(state_task_update(w, &t, "now", NULL), 0);

	rd = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_run_get(rd, "r1", &got, NULL), 0);
	run_row_release(&got);
	assert_int_equal(state_run_get(rd, "r2", &got, NULL), -ENOENT);
	assert_int_equal(state_task_get(rd, "r1", "t", &tgot, NULL), 0);
	assert_int_equal(tgot.state, TASK_PENDING);
	task_row_release(&tgot);
	assert_int_equal(state_run_list(rd, &list, &n, NULL), 0);
	assert_int_equal(n, 1);
	run_rows_free(list, n);

	/* A reader never writes. */
	assert_int_equal(state_run_insert(rd, &r3, &d), -EROFS);
	assert_string_equal(d.file, f->db);
	assert_int_equal(state_run_set_state(rd, "r1", RUN_DONE, "now", &d), -EROFS);
	assert_int_equal(state_run_set_pid(rd, "r1", 1, "now", &d), -EROFS);
	assert_int_equal(state_task_insert(rd, &t, &d), -EROFS);
	assert_int_equal(state_task_update(rd, &t, "now", &d), -EROFS);
	a.run_id = S("r1");
	a.task_id = S("t");
	a.n = 1;
	assert_int_equal(state_attempt_insert(rd, &a, &d), -EROFS);
	assert_int_equal(state_attempt_update(rd, &a, &d), -EROFS);

	assert_int_equal(state_commit(w, NULL), 0);
	assert_int_equal(state_run_get(rd, "r2", &got, NULL), 0);
	run_row_release(&got);
	assert_int_equal(state_task_get(rd, "r1", "t", &tgot, NULL), 0);
	assert_int_equal(tgot.state, TASK_RUNNING);
	task_row_release(&tgot);

	/* A reader's transaction is one snapshot. */
	assert_int_equal(state_begin(rd, NULL), 0);
	assert_int_equal(state_run_list(rd, &list, &n, NULL), 0);
	assert_int_equal(n, 2);
	run_rows_free(list, n);
	assert_int_equal(state_run_insert(w, &r3, NULL), 0);
	assert_int_equal(state_run_get(rd, "r3", &got, NULL), -ENOENT);
	assert_int_equal(state_commit(rd, NULL), 0);
	assert_int_equal(state_run_get(rd, "r3", &got, NULL), 0);
	run_row_release(&got);

	state_close(w);
	/* A reader alone (no writer open) works too. */
	assert_int_equal(state_run_latest(rd, &got, NULL), 0);
	assert_string_equal(got.id, "r3");
	run_row_release(&got);
	state_close(rd);
	rd = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_run_get(rd, "r3", &got, NULL), 0);
	run_row_release(&got);
	state_close(rd);
}

static void test_writer_busy(void **state)
{
	struct fx *f = *state;
	struct run_row r = run_fixture("r", NULL), q = run_fixture("q", NULL);
	struct state *w1, *w2;
	struct timespec t0, t1;
	struct diag d;
	double secs;

	w1 = open_ok(f->db, STATE_CREATE);
	w2 = open_ok(f->db, 0);
	assert_int_equal(state_begin(w1, NULL), 0);
	assert_int_equal(state_run_insert(w1, &r, NULL), 0);
	/* w2 waits busy_timeout (5 s) for the lock, then gives up. */
	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t0), 0);
	assert_int_equal(state_run_insert(w2, &q, &d), -EBUSY);
	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t1), 0);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(secs >= 4.5);
	assert_string_equal(d.file, f->db);
	assert_int_equal(state_commit(w1, NULL), 0);
	assert_int_equal(state_run_insert(w2, &q, NULL), 0);
	state_close(w1);
	state_close(w2);
}

/* The child writes, commits, starts a transaction, changes more and dies
 * without committing: by _exit (how), or by SIGKILL. Exit codes 10+ report a
 * failure before the crash point. */
static void crash_child(const char *db, int how)
{
	struct run_row r = run_fixture("committed", NULL), u = run_fixture("uncommitted", NULL);
	struct task_row t = task_fixture("committed", "t", 0);
	struct state *st = NULL;
	int i;

	if (state_open(db, STATE_CREATE, &st, NULL) < 0)
		_exit(10);
	if (state_run_insert(st, &r, NULL) < 0 || state_task_insert(st, &t, NULL) < 0)
		_exit(11);
	for (i = 1; i <= 50; i++) {
		t.attempts = i;
		if (state_task_update(st, &t, "now", NULL) < 0)
			_exit(12);
	}
	if (state_begin(st, NULL) < 0)
		_exit(13);
	if (state_run_insert(st, &u, NULL) < 0)
		_exit(14);
	t.attempts = 51;
	t.state = TASK_DONE;
	if (state_task_update(st, &t, "later", NULL) < 0)
		_exit(15);
	if (how == SIGKILL)
		(void)raise(SIGKILL);
	_exit(0);
}

static void crash_and_check(struct fx *f, int how)
{
	struct run_row got = RUN_ROW_INIT, again = run_fixture("after", NULL);
	struct task_row t = TASK_ROW_INIT;
	struct state *st;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		crash_child(f->db, how);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (how == SIGKILL) {
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), SIGKILL);
	} else {
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}

	/* A reader first (recovers from the WAL without writing), then a writer. */
	st = open_ok(f->db, STATE_READONLY);
	assert_int_equal(state_run_get(st, "uncommitted", &got, NULL), -ENOENT);
	assert_int_equal(state_task_get(st, "committed", "t", &t, NULL), 0);
	assert_true(t.attempts == 50);
	task_row_release(&t);
	state_close(st);

	st = open_ok(f->db, 0);
	assert_int_equal(state_run_get(st, "committed", &got, NULL), 0);
	run_row_release(&got);
	assert_int_equal(state_run_get(st, "uncommitted", &got, NULL), -ENOENT);
	assert_int_equal(state_task_get(st, "committed", "t", &t, NULL), 0);
	assert_true(t.attempts == 50);
	assert_int_equal(t.state, TASK_PENDING);
	assert_string_equal(t.updated_at, "now");
	task_row_release(&t);
	/* The dead writer's lock is gone. */
	assert_int_equal(state_run_insert(st, &again, NULL), 0);
	state_close(st);
}

static void test_crash_exit_mid_transaction(void **state)
{
	crash_and_check(*state, 0);
}

static void test_crash_kill_mid_transaction(void **state)
{
	crash_and_check(*state, SIGKILL);
}

/* ---- schema ---- */

static void test_strict_types(void **state)
{
	struct fx *f = *state;
	struct run_row got = RUN_ROW_INIT;
	struct task_row tgot = TASK_ROW_INIT;
	struct state *st;
	struct diag d;
	sqlite3 *db;
	static const char *const bad[] = {
		"INSERT INTO runs (id, repo, state, parallel) VALUES ('x', '/r', 'running', 'four')",
		"INSERT INTO runs (id, repo, state, parallel) VALUES ('x', '/r', 'running', 1.5)",
		"INSERT INTO runs (id, repo, state) VALUES ('x', x'2f72', 'running')",
		"INSERT INTO runs (id, repo, state, supervisor_pid) VALUES ('x', '/r', 'running', x'00')",
		"INSERT INTO tasks (run_id, id, idx, state) VALUES ('r', 't', 'first', 'pending')",
		"INSERT INTO attempts (run_id, task_id, n, cost_usd) VALUES ('r', 't', 1, 'free')",
	};
	size_t i;

	st = open_ok(f->db, STATE_CREATE);
	state_close(st);

	db = raw_open(f->db);
	raw_exec(db, "INSERT INTO runs (id, repo, state) VALUES ('r', '/r', 'running')");
	raw_exec(db, "INSERT INTO tasks (run_id, id, idx, state) VALUES ('r', 't', 0, 'pending')");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = sqlite3_exec(db, bad[i], NULL, NULL, NULL);

		if (rc != SQLITE_CONSTRAINT_DATATYPE)
			print_error("%s: %d %s\n", bad[i], rc, sqlite3_errmsg(db));
		assert_int_equal(rc, SQLITE_CONSTRAINT_DATATYPE);
	}
	/* A lossless conversion is fine in STRICT: '7' into INTEGER. */
	raw_exec(db, "UPDATE runs SET parallel = '7' WHERE id = 'r'");
	assert_int_equal(raw_query(db, "SELECT typeof(parallel) = 'integer' FROM runs", NULL, 0),
			 1);
	/* A value this code does not know is reported, not guessed. */
	raw_exec(db, "INSERT INTO runs (id, repo, state) VALUES ('weird', '/r', 'paused')");
	raw_exec(db, "UPDATE tasks SET state = 'sleeping'");
	(void)sqlite3_close(db);

	st = open_ok(f->db, 0);
	assert_int_equal(state_run_get(st, "r", &got, NULL), 0);
	assert_true(got.parallel == 7);
	run_row_release(&got);
	assert_int_equal(state_run_get(st, "weird", &got, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "'paused'"));
	assert_null(got.id); /* untouched on failure */
	assert_int_equal(state_task_get(st, "r", "t", &tgot, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "'sleeping'"));
	struct run_row *list = NULL;
	size_t n = 42;
	assert_int_equal(state_run_list(st, &list, &n, &d), -EBADMSG);
	assert_null(list);
	assert_int_equal(n, 42);
	state_close(st);
}

/* Every file sqlite opened for us is close-on-exec. */
static void test_fds_cloexec(void **state)
{
	struct fx *f = *state;
	struct run_row r = run_fixture("r", NULL);
	char link[PATH_MAX + 64], target[PATH_MAX + 1];
	struct state *st, *rd;
	struct dirent *de;
	unsigned found = 0;
	DIR *d;

	st = open_ok(f->db, STATE_CREATE);
	assert_int_equal(state_run_insert(st, &r, NULL), 0);
	rd = open_ok(f->db, STATE_READONLY);
	d = opendir("/proc/self/fd");
	assert_non_null(d);
	while ((de = readdir(d))) {
		ssize_t len;
		int fd, fl;

		if (de->d_name[0] == '.')
			continue;
		(void)snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		if (strncmp(target, f->dir, strlen(f->dir)) != 0)
			continue;
		fd = (int)strtol(de->d_name, NULL, 10);
		fl = fcntl(fd, F_GETFD);
		if (!(fl & FD_CLOEXEC))
			print_error("fd %d (%s) is not close-on-exec\n", fd, target);
		assert_true(fl & FD_CLOEXEC);
		found++;
	}
	(void)closedir(d);
	assert_true(found >= 3); /* at least the database, -wal and -shm */
	state_close(rd);
	state_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_names),
		cmocka_unit_test_setup_teardown(test_create_open_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_bad_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_database, setup, teardown),
		cmocka_unit_test_setup_teardown(test_future_version_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v0_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_migration_rolls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_read_and_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v3_read_and_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attempt_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_hooks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generated_plans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_utf8_and_long_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_while_writer_active, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_exit_mid_transaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_kill_mid_transaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strict_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fds_cloexec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_ids, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
