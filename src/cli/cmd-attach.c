/* bernstein attach [RUN] (and `status -f`, the same code): follow a run
 * another process executes (docs/runs.md, "Detached runs").
 *
 * Nothing here talks to the run: the viewer reads what the run commits,
 * state.db (read-only: the tasks, the run's state and exit code) and each
 * task's events.jsonl, every FOLLOW_POLL_MS, and shows it as `run` does: a
 * live table on a terminal, one line per task change and per event
 * otherwise (--plain), JSON lines with --json. It ends when the run's
 * execution ends, with the exit code that execution recorded, or when no
 * process holds the run lock any more (a killed run: exit 1, and the
 * resume command). Ctrl-C stops the viewer only. Files the agents could
 * have replaced (events.jsonl) are opened without following a symlink,
 * never a FIFO, and parsed as untrusted text. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter/event-view.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/detach.h"
#include "cli/output.h"
#include "cli/run-report.h"
#include "cli/run-session.h"
#include "orch/agentrun.h"
#include "orch/cost.h"
#include "orch/run.h"
#include "orch/state.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

#define FOLLOW_POLL_MS 200
#define EVENT_LINE_MAX ((size_t)1 << 20) /* longer lines are skipped */
#define VIEW_MAX       512

/* Ctrl-C: stop following (the run goes on). */
static volatile sig_atomic_t arg_follow_stop;

static void on_sigint(int sig)
{
	(void)sig;
	arg_follow_stop = 1;
}

/* What the viewer has shown of one task. */
struct ftask {
	char *id;
	enum task_state state;
	int64_t attempt; /* whose events.jsonl is being read */
	off_t off;	 /* read up to here */
	struct sbuf part;
	bool skipping; /* a line over EVENT_LINE_MAX */
};

struct follow {
	struct session *s;
	const char *run_id;
	struct ftask *t;
	size_t n;
	bool changed; /* redraw the table */
};

static struct ftask *ftask_for(struct follow *f, const struct task_row *row, bool *ret_new)
{
	size_t i;

	*ret_new = false;
	for (i = 0; i < f->n; i++)
		if (strcmp(f->t[i].id, row->id) == 0)
			return &f->t[i];
	f->t = xrealloc(f->t, (f->n + 1) * sizeof(*f->t));
	memset(&f->t[f->n], 0, sizeof(*f->t));
	f->t[f->n].id = xstrdup(row->id);
	f->t[f->n].state = row->state;
	sbuf_init(&f->t[f->n].part, EVENT_LINE_MAX);
	*ret_new = true;
	return &f->t[f->n++];
}

/* An integer field of an events.jsonl object, EVENT_UNSET when absent. */
static int64_t jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : EVENT_UNSET;
}

/* A session_started or usage line (events.jsonl) for the table's footer. */
static void usage_of_line(struct session *s, struct row *r, const json_t *o)
{
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const json_t *cost = json_object_get(o, "cost_usd");
	struct event ev;

	if (!kind || (strcmp(kind, "usage") != 0 && strcmp(kind, "session_started") != 0))
		return;
	event_init(&ev, strcmp(kind, "usage") == 0 ? EVENT_USAGE : EVENT_SESSION_STARTED);
	ev.dialect = json_string_value(json_object_get(o, "dialect"));
	ev.model = json_string_value(json_object_get(o, "model"));
	ev.input_tokens = jint(o, "input_tokens");
	ev.output_tokens = jint(o, "output_tokens");
	ev.cached_tokens = jint(o, "cached_tokens");
	ev.cost_usd = json_is_number(cost) ? json_number_value(cost) : -1;
	session_row_usage(s, r, &ev);
}

/* One events.jsonl line of task row. */
static void show_event(struct follow *f, const struct task_row *row, const char *line, size_t len)
{
	struct cli_ctx *ctx = f->s->ctx;
	char view[VIEW_MAX];
	json_t *ev;

	if (ctx->json) {
		ev = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
		if (json_is_object(ev)) {
			json_t *o = json_object();

			cli_jset(o, "type", cli_jstr("event"));
			cli_jset(o, "task", cli_jstr(row->id));
			cli_jset(o, "event", ev);
			print_json_line(ctx, o);
		} else {
			json_decref(ev);
		}
		return;
	}
	if (event_view_line(line, len, view, sizeof(view)) == 0)
		return;
	if (!f->s->tty) {
		(void)fprintf(ctx->out, "%s: %s\n", row->id, view);
		(void)fflush(ctx->out);
		return;
	}
	{
		struct row *r = session_row(f->s, row->id);

		if (!r)
			return;
		free(r->last);
		/* without its time ("HH:MM:SS "): the table has ELAPSED */
		r->last = xstrdup(strlen(view) > 9 ? view + 9 : view);
		ev = json_loadb(line, len, 0, NULL);
		usage_of_line(f->s, r, ev);
		json_decref(ev);
		f->changed = true;
	}
}

/* The footer's sums of row's earlier attempts, from state.db: attach may
 * have started after them, or missed the last usage line of one (written
 * after it last read the file). The latest attempt's own usage starts
 * unknown and comes from its events. */
static void seed_earlier(struct session *s, const struct task_row *row)
{
	struct row *r = s->tty ? session_row(s, row->id) : NULL;
	struct attempt_row *a = NULL;
	struct cost_total t;
	size_t n = 0, i;

	if (!r || state_attempts_get(s->st, row->run_id, row->id, &a, &n, NULL) < 0)
		return;
	memset(&t, 0, sizeof(t));
	for (i = 0; i < n; i++)
		if (a[i].n < row->attempts)
			cost_total_add(&t, &a[i]);
	attempt_rows_free(a, n);
	r->done_tokens = cost_total_tokens(&t);
	r->done_cost = t.cost_usd;
	r->done_unknown = t.cost_unknown > 0;
	r->tokens = -1;
	r->cost = -1;
	free(r->model);
	r->model = NULL;
}

/* What was added to the events.jsonl of row's latest attempt. */
static void read_events(struct follow *f, struct ftask *ft, const struct task_row *row)
{
	char *path, chunk[65536];
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct stat st;
	ssize_t n;
	int fd;

	if (!row->session || row->attempts < 1)
		return;
	if (ft->attempt != row->attempts) {
		ft->attempt = row->attempts;
		ft->off = 0;
		ft->skipping = false;
		sbuf_reset(&ft->part);
		seed_earlier(f->s, row);
	}
	(void)sbuf_addf(&sb, "%s/%s/%s/%s/%" PRId64 "/events.jsonl", f->s->repo, AGENTRUN_RUNS_DIR,
			f->run_id, row->session, row->attempts);
	path = sbuf_detach(&sb, NULL);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || lseek(fd, ft->off, SEEK_SET) < 0) {
		(void)close(fd);
		return;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		const char *p = chunk, *end = chunk + n;

		ft->off += n;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t k = (size_t)((nl ? nl : end) - p);

			if (!ft->skipping && sbuf_add(&ft->part, p, k) < 0) {
				ft->skipping = true;
				sbuf_reset(&ft->part);
			}
			if (!nl)
				break;
			if (!ft->skipping && ft->part.len)
				show_event(f, row, ft->part.buf, ft->part.len);
			ft->skipping = false;
			sbuf_reset(&ft->part);
			p = nl + 1;
		}
	}
	(void)close(fd);
}

/* One look at the run: task changes, then new events. */
static int poll_once(struct follow *f, bool first, struct task_row **ret_rows, size_t *ret_n)
{
	struct session *s = f->s;
	struct task_row *rows = NULL;
	size_t n = 0, i;
	int r;

	r = state_tasks_get(s->st, f->run_id, &rows, &n, NULL);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		const struct task_row *row = &rows[i];
		bool fresh;
		struct ftask *ft = ftask_for(f, row, &fresh);

		if (first || fresh) {
			struct row *tr = s->tty ? session_row(s, row->id) : NULL;

			if (tr) {
				free(tr->state);
				tr->state = xstrdup(task_state_to_string(row->state));
				free(tr->adapter);
				tr->adapter = row->adapter ? xstrdup(row->adapter) : NULL;
				f->changed = true;
			} else if (!s->tty && row->state != TASK_PENDING) {
				s->env.hooks.on_task(s, row, TASK_PENDING);
			}
			ft->state = row->state;
		} else if (ft->state != row->state) {
			s->env.hooks.on_task(s, row, ft->state);
			ft->state = row->state;
		}
		read_events(f, ft, row);
	}
	if (f->changed && s->tty)
		session_draw(s);
	f->changed = false;
	*ret_rows = rows;
	*ret_n = n;
	return 0;
}

/* The end: the run's state, its tasks and the exit code. */
static int show_end(struct follow *f, const struct run_row *run, const struct task_row *rows,
		    size_t n, int code, bool live)
{
	struct cli_ctx *ctx = f->s->ctx;
	size_t counts[_TASK_STATE_MAX] = {0}, i;
	const char **ids = xcalloc(n + 1, sizeof(*ids));
	json_t *o = NULL, *c = NULL;
	bool first = true;

	session_draw_final(f->s); /* the table's last frame: the throttle may have skipped it */
	for (i = 0; i < n; i++) {
		ids[i] = rows[i].id;
		if ((int)rows[i].state >= 0 && rows[i].state < _TASK_STATE_MAX)
			counts[rows[i].state]++;
	}
	if (ctx->json) {
		o = json_object();
		c = json_object();
		cli_jset(o, "type", cli_jstr("run"));
		cli_jset(o, "run", cli_jstr(run->id));
		cli_jset(o, "state", cli_jstr(run_state_to_string(run->state)));
		cli_jset(o, "live", json_boolean(live));
		for (i = 0; i < _TASK_STATE_MAX; i++)
			if (counts[i])
				cli_jset(c, task_state_to_string((enum task_state)i),
					 json_integer((json_int_t)counts[i]));
		cli_jset(o, "tasks", c);
		cli_jset(o, "exit_code", json_integer(code));
		run_report_problems(ctx, f->s->st, run->id, ids, n, o);
		print_json_line(ctx, o);
		free(ids);
		return code;
	}
	(void)fprintf(ctx->out, "run %s: %s (", run->id, run_state_to_string(run->state));
	for (i = 0; i < _TASK_STATE_MAX; i++) {
		if (!counts[i])
			continue;
		(void)fprintf(ctx->out, "%s%zu %s", first ? "" : ", ", counts[i],
			      task_state_to_string((enum task_state)i));
		first = false;
	}
	(void)fprintf(ctx->out, "), exit %d (%s)\n", code, run_report_exit_words(code));
	run_report_problems(ctx, f->s->st, run->id, ids, n, NULL);
	free(ids);
	(void)fflush(ctx->out);
	if (!live)
		return cli_error(
			ctx, code,
			"run %s is not live: no bernstein executes it (killed?); 'bernstein resume %s' goes on",
			run->id, run->id);
	return code;
}

/* The exit code of the run's execution that ended: recorded, else (an
 * older bernstein ran it) by the tasks' states. */
static int end_code(struct follow *f, const struct task_row *rows, size_t n)
{
	size_t counts[_TASK_STATE_MAX] = {0}, i;
	int64_t code = STATE_NULL_INT;

	if (state_run_get_exit(f->s->st, f->run_id, &code, NULL) == 0 && code != STATE_NULL_INT)
		return (int)code;
	for (i = 0; i < n; i++)
		if ((int)rows[i].state >= 0 && rows[i].state < _TASK_STATE_MAX)
			counts[rows[i].state]++;
	return run_report_exit(counts, false);
}

static void follow_release(struct follow *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		free(f->t[i].id);
		sbuf_release(&f->t[i].part);
	}
	free(f->t);
}

/* Follow until the end; returns the exit code. */
static int follow_loop(struct follow *f)
{
	struct session *s = f->s;
	struct run_row run = RUN_ROW_INIT;
	struct task_row *rows = NULL;
	size_t n = 0;
	bool first = true;
	int code = -1, r;

	while (code < 0) {
		int64_t exit_code = STATE_NULL_INT;
		int held = detach_lock_held(s->repo, NULL);

		task_rows_free(rows, n);
		rows = NULL;
		n = 0;
		run_row_release(&run);
		run_row_init(&run);
		/* the run's row before its tasks: what it says of its end, the
		 * tasks (committed before it) show too */
		r = state_run_get(s->st, f->run_id, &run, NULL);
		if (r >= 0)
			r = state_run_get_exit(s->st, f->run_id, &exit_code, NULL);
		if (r >= 0)
			r = poll_once(f, first, &rows, &n);
		if (r < 0) {
			code = cli_error(s->ctx, BEXIT_ENV, "cannot read run '%s' in state.db: %s",
					 f->run_id, strerror(-r));
			break;
		}
		first = false;
		if (run.state != RUN_RUNNING && (exit_code != STATE_NULL_INT || held == 0)) {
			code = show_end(f, &run, rows, n, end_code(f, rows, n), true);
			break;
		}
		if (held == 0) {
			code = show_end(f, &run, rows, n, BEXIT_FAILED, false);
			break;
		}
		if (arg_follow_stop) {
			if (!s->ctx->json)
				(void)fprintf(
					s->ctx->err,
					"%s: stopped following run %s; it goes on ('bernstein attach %s' follows it again, 'bernstein stop' stops it)\n",
					s->ctx->progname, f->run_id, f->run_id);
			code = BEXIT_INTERRUPTED;
			break;
		}
		{
			struct timespec ts = {.tv_sec = 0, .tv_nsec = FOLLOW_POLL_MS * 1000000L};

			(void)nanosleep(&ts, NULL);
		}
	}
	task_rows_free(rows, n);
	run_row_release(&run);
	return code;
}

int follow_run(struct cli_ctx *ctx, const char *run_arg, bool plain)
{
	struct session s;
	struct run_row run = RUN_ROW_INIT;
	struct follow f = {0};
	struct sigaction sa, old;
	struct diag d;
	int r, code;

	code = session_open(&s, ctx, true, false, NULL);
	if (code) {
		session_release(&s);
		return code;
	}
	hooks_attach(&s);
	if (plain)
		s.tty = false;
	if (s.tty) { /* the table's footer prices tokens: the catalogue, if it loads */
		struct catalog_paths cp;

		catalog_paths_find(ctx, &cp);
		diag_clear(&d);
		if (catalog_load(cp.user_dir, cp.repo_dir, &s.cat, &d) < 0)
			s.cat = NULL;
		catalog_paths_release(&cp);
	}
	diag_clear(&d);
	run_row_init(&run);
	r = run_arg ? state_run_get(s.st, run_arg, &run, &d) : state_run_latest(s.st, &run, &d);
	if (r == -ENOENT) {
		code = cli_error(ctx, BEXIT_USAGE, run_arg ? "no run '%s'" : "no runs yet%s",
				 run_arg ? run_arg : "");
		goto out;
	}
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	f.s = &s;
	f.run_id = run.id;
	s.run_id = xstrdup(run.id); /* the live table's counts */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	(void)sigemptyset(&sa.sa_mask);
	arg_follow_stop = 0;
	(void)sigaction(SIGINT, &sa, &old);
	if (!ctx->json)
		(void)fprintf(ctx->err,
			      "%s: following run %s; Ctrl-C stops following, not the run\n",
			      ctx->progname, run.id);
	code = follow_loop(&f);
	(void)sigaction(SIGINT, &old, NULL);
out:
	follow_release(&f);
	run_row_release(&run);
	session_release(&s);
	return code;
}

enum {
	OPT_JSON = 256,
	OPT_PLAIN,
};

static const struct option attach_options[] = {
	{"json", no_argument, NULL, OPT_JSON},
	{"plain", no_argument, NULL, OPT_PLAIN},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

int cmd_attach(int argc, char **argv, struct cli_ctx *ctx)
{
	bool plain = false;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", attach_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_JSON:
			ctx->json = true;
			break;
		case OPT_PLAIN:
			plain = true;
			break;
		default:
			return cli_option_error(ctx, argv, attach_options, "");
		}
	}
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	return follow_run(ctx, optind < argc ? argv[optind] : NULL, plain);
}

const char cmd_attach_summary[] = "follow a live run (a detached one) to its end";
const char cmd_attach_usage[] = "[RUN] [--plain | --json]";
const char cmd_attach_help[] =
	"Follows the latest run (or RUN) while another bernstein executes it (one\n"
	"started with 'bernstein run --detach', or in another terminal): the live\n"
	"table on a terminal, else one line per task change and per agent event, and\n"
	"at the end the run's state and exit code. It reads state.db and the tasks'\n"
	"event logs; it never changes the run. Ctrl-C stops following, not the run\n"
	"('bernstein stop' stops the run). 'bernstein status -f' is the same.\n"
	"\n"
	"options:\n"
	"  --plain   lines, not the table, even on a terminal\n"
	"  --json    JSON lines as 'bernstein run --json' prints them: {\"type\":\n"
	"            \"task\"|\"event\"|\"run\", ...}\n"
	"\n"
	"Exit: the exit code of the run's execution once it ends (as 'bernstein run'\n"
	"would have exited: 0, 1, 5, 6, 130...); 1 when no bernstein executes it any\n"
	"more and it did not end (killed: 'bernstein resume' goes on); 2 no such run;\n"
	"4 state unreadable; 130 Ctrl-C (the run goes on).\n";
