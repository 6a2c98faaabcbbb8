/* What cmd-run.c shares with the other commands of a run (cmd-control.c):
 * the opened repository, state, catalogue and audit chain of a run, and how
 * a run's end is shown. */
#ifndef BERNSTEIN_CLI_RUN_SESSION_H
#define BERNSTEIN_CLI_RUN_SESSION_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/cli.h"
#include "orch/run.h"
#include "util/strvec.h"

/* ---- the environment of a run ---- */

struct session {
	struct cli_ctx *ctx;
	char cwd[PATH_MAX];
	char *repo;
	char self_exe[PATH_MAX];
	char key_path[PATH_MAX]; /* the audit key, kept out of every sandbox */
	struct strvec git_env;
	struct catalog *cat;
	struct orch_config *cfg;
	struct state *st;
	struct audit_chain *chain;
	const char *key_file; /* --key-file, or NULL: the default key */
	int lock_fd;	      /* ORCH_LOCK_FILE, held (orch_lock_take()); -1 none */
	struct orch_env env;
	char overlay_userns_why[512]; /* env.overlay_userns_why's */
	/* the display */
	bool tty;
	size_t drawn; /* lines of the live table on screen */
	/* a window, not a row per task: the tasks at work, then the last ended
	 * ones, at most window rows (from the terminal's height); the run's
	 * counts by state come from state.db (run_id), and the usage of the
	 * tasks no longer shown is kept in the sums below */
	struct row *rows;
	size_t n_rows;
	size_t window;
	char *run_id;
	uint64_t ended_seq;
	int64_t drawn_ms; /* when last drawn (throttle) */
	int64_t gone_tokens;
	double gone_cost;
	bool gone_unknown, gone_any;
	/* run --detach, in the detached process: the pipe to the caller until
	 * the run listens (cli/detach.h); -1 none */
	int detach_fd;
};

struct row {
	char *id;
	char *adapter;
	char *state;
	char *last;
	int64_t started_ns;
	int64_t ended_ns;
	int64_t tokens; /* this attempt's input + output; -1 none reported */
	/* the live table's footer (the run's total): this attempt's cost (< 0
	 * unknown), the model it announced, and the earlier attempts' sums */
	double cost;
	char *model;
	int64_t done_tokens;
	double done_cost;
	bool done_unknown;
	uint64_t ended; /* the order it ended in (s->ended_seq); 0 at work */
};

/* Find the repository and open what a run needs. readonly: state only.
 * Otherwise the run lock is taken before anything is written (state.db,
 * the audit chain): a second `run` or `resume` is refused (exit 4) having
 * recorded nothing. 0 or the exit code (the error printed). */
int session_open(struct session *s, struct cli_ctx *ctx, bool readonly, bool need_chain,
		 const char *key_file);
void session_release(struct session *s);
/* The display of a run's tasks and events (a table, lines or JSON lines). */
void hooks_attach(struct session *s);
/* The live table's row of task id (made when new; NULL past the table's
 * size), and the table drawn anew. */
struct row *session_row(struct session *s, const char *id);
/* A session_started or usage event of r's attempt: the model it announced,
 * its tokens and cost (the agent's, else priced with s->cat; unknown
 * without a catalogue) for the live table's footer. */
void session_row_usage(struct session *s, struct row *r, const struct event *ev);
void session_draw(struct session *s);
/* The same now, whatever the throttle (the run's last state). */
void session_draw_final(struct session *s);
/* The exit code of run_id's execution in state.db (what `attach` ends
 * with); code < 0 clears it (an execution starts). Failures are ignored. */
void session_record_exit(struct session *s, const char *run_id, int code);
/* Follow run_arg (NULL: the latest) to its end: `attach`, `status -f`
 * (cmd-attach.c). The exit code. */
int follow_run(struct cli_ctx *ctx, const char *run_arg, bool plain);
/* Exit code for an errno from the orchestrator. */
int exit_for(int r);
int summary_exit(const struct orch_summary *sum);
void print_summary(struct session *s, const struct orch_summary *sum);
void print_resume_plan(struct cli_ctx *ctx, const struct resume_plan *rp, bool dry);
/* One compact JSON line on ctx->out (o is consumed). */
void print_json_line(struct cli_ctx *ctx, json_t *o);

#endif
