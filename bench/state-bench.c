/* State store benchmark (src/orch/state.c): N task updates through
 * state_task_update(), each its own committed transaction, against a
 * baseline measured in the same run: a bare prepared sqlite UPDATE of two
 * columns on the same database (WAL, synchronous=NORMAL), also one commit
 * each. Also printed for reference: the same N updates inside one
 * transaction, and the bare UPDATE with synchronous=FULL (what surviving a
 * power loss, not just a crash, would cost per commit).
 * Target: under 500 us per committed update (a task makes about six state
 * changes in the 5 ms orchestration budget of issue 6). It asserts nothing
 * about wall-clock time (exit 1 only if something cannot run).
 *
 * usage: state-bench [-n N] [DIR]     (DIR: where to put the scratch
 *        database; default a fresh directory under $TMPDIR or /tmp) */
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orch/state.h"

#define TARGET_US 500.0

static double now_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, const struct diag *d)
{
	(void)fprintf(stderr, "state-bench: %s: %s: %s\n", what, d->file, d->msg);
	return 1;
}

/* N updates of one task via the API; in_tx: all inside one transaction. */
static int bench_api(struct state *st, struct task_row *t, long n, int in_tx, double *ret_us)
{
	struct diag d;
	char ts[64];
	double t0;
	long i;

	t0 = now_s();
	if (in_tx && state_begin(st, &d) < 0)
		return fail("begin", &d);
	for (i = 0; i < n; i++) {
		t->attempts = i;
		t->state = (enum task_state)(i % _TASK_STATE_MAX);
		(void)snprintf(ts, sizeof(ts), "2026-01-01T00:00:%02ld.%06ldZ", (i / 1000000) % 60,
			       i % 1000000);
		if (state_task_update(st, t, ts, &d) < 0)
			return fail("update", &d);
	}
	if (in_tx && state_commit(st, &d) < 0)
		return fail("commit", &d);
	*ret_us = (now_s() - t0) * 1e6 / (double)n;
	return 0;
}

/* The baseline: a bare prepared UPDATE, autocommit, on its own connection. */
static int bench_raw(const char *path, const char *sync, long n, double *ret_us)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	char ts[64], sql[64];
	double t0;
	long i;
	int rc = SQLITE_OK;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		goto fail;
	(void)sqlite3_busy_timeout(db, 5000);
	(void)snprintf(sql, sizeof(sql), "PRAGMA synchronous = %s", sync);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(
		    db,
		    "UPDATE tasks SET attempts = ?, updated_at = ? WHERE run_id = 'bench' AND id = 'task'",
		    -1, &s, NULL) != SQLITE_OK)
		goto fail;
	t0 = now_s();
	for (i = 0; i < n && rc == SQLITE_OK; i++) {
		(void)snprintf(ts, sizeof(ts), "2026-01-01T00:00:00.%06ldZ", i % 1000000);
		(void)sqlite3_bind_int64(s, 1, i);
		(void)sqlite3_bind_text(s, 2, ts, -1, SQLITE_STATIC);
		rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		(void)sqlite3_reset(s);
	}
	if (rc != SQLITE_OK)
		goto fail;
	*ret_us = (now_s() - t0) * 1e6 / (double)n;
	(void)sqlite3_finalize(s);
	(void)sqlite3_close(db);
	return 0;
fail:
	(void)fprintf(stderr, "state-bench: baseline: %s\n", db ? sqlite3_errmsg(db) : "no memory");
	(void)sqlite3_finalize(s);
	(void)sqlite3_close(db);
	return 1;
}

static void cleanup(const char *dir, const char *db, int made_dir)
{
	char p[PATH_MAX + 32];

	(void)unlink(db);
	(void)snprintf(p, sizeof(p), "%s-wal", db);
	(void)unlink(p);
	(void)snprintf(p, sizeof(p), "%s-shm", db);
	(void)unlink(p);
	if (made_dir)
		(void)rmdir(dir);
}

int main(int argc, char **argv)
{
	struct run_row run = RUN_ROW_INIT;
	struct task_row task = TASK_ROW_INIT;
	char dir[PATH_MAX], db[PATH_MAX + 16];
	double api_us = 0, raw_us = 0, tx_us = 0, full_us = 0;
	struct state *st = NULL;
	struct diag d;
	const char *tmp;
	long n = 1000;
	int made_dir = 0, opt, r = 1;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n')
			goto usage;
		n = strtol(optarg, NULL, 10);
		if (n <= 0)
			goto usage;
	}
	if (argc - optind > 1)
		goto usage;
	if (optind < argc) {
		(void)snprintf(dir, sizeof(dir), "%s", argv[optind]);
	} else {
		tmp = getenv("TMPDIR");
		(void)snprintf(dir, sizeof(dir), "%s/state-bench.XXXXXX",
			       tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir)) {
			(void)fprintf(stderr, "state-bench: mkdtemp: %s\n", strerror(errno));
			return 1;
		}
		made_dir = 1;
	}
	(void)snprintf(db, sizeof(db), "%s/state.db", dir);
	(void)unlink(db);

	if (state_open(db, STATE_CREATE, &st, &d) < 0) {
		r = fail("open", &d);
		goto out;
	}
	run.id = (char *)(uintptr_t) "bench";
	run.repo = (char *)(uintptr_t) "/bench";
	task.run_id = run.id;
	task.id = (char *)(uintptr_t) "task";
	task.prompt = (char *)(uintptr_t) "do the thing, then the other thing";
	task.spec = (char *)(uintptr_t) "{\"requires\":[\"capability:edit\"],\"timeout\":600}";
	if (state_run_insert(st, &run, &d) < 0 || state_task_insert(st, &task, &d) < 0) {
		r = fail("insert", &d);
		goto out;
	}

	if (bench_api(st, &task, n, 0, &api_us) || bench_raw(db, "NORMAL", n, &raw_us) ||
	    bench_api(st, &task, n, 1, &tx_us) || bench_raw(db, "FULL", n, &full_us))
		goto out;

	printf("state task update, %ld updates, one commit each (WAL, synchronous=NORMAL)\n", n);
	printf("  state_task_update:        %8.1f us/update\n", api_us);
	printf("  baseline (bare UPDATE):   %8.1f us/update\n", raw_us);
	printf("  ratio:                    %8.2fx\n", raw_us > 0 ? api_us / raw_us : 0.0);
	printf("  target:                   < %.0f us/update: %s\n", TARGET_US,
	       api_us < TARGET_US ? "met" : "MISSED");
	printf("  for reference: all in one transaction %.1f us/update; bare UPDATE with synchronous=FULL %.1f us/update\n",
	       tx_us, full_us);
	r = 0;
out:
	state_close(st);
	cleanup(dir, db, made_dir);
	return r;
usage:
	(void)fprintf(stderr, "usage: state-bench [-n N] [DIR]\n");
	return 2;
}
