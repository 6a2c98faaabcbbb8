/* bernstein run | resume | status | logs | demo: the orchestrator's commands
 * (docs/runs.md). The work is in orch/run.h; this file finds the repository,
 * loads the configuration, the catalogue, state.db and the audit chain, and
 * shows what happens: a live table on a terminal, one line per change
 * otherwise, JSON lines with --json. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/dialect.h"
#include "adapter/pricing.h"
#include "audit/audit.h"
#include "cli/audit-setup.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/goal-gen.h"
#include "cli/cost-report.h"
#include "cli/detach.h"
#include "cli/output.h"
#include "cli/repo-config.h"
#include "cli/logs-view.h"
#include "cli/run-report.h"
#include "cli/run-session.h"
#include "cli/serve.h"
#include "orch/agentrun.h"
#include "orch/checkout.h"
#include "orch/config.h"
#include "orch/context.h"
#include "orch/lifecycle.h"
#include "orch/plan.h"
#include "orch/run.h"
#include "orch/state.h"
#include "orch/worktree.h"
#include "proc/contain.h"
#include "proc/git.h"
#include "proc/probe.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/redact.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define AUDIT_DIR	 ".bernstein/audit"
#define IDENTITY_NAME	 "bernstein"
#define IDENTITY_EMAIL	 "bernstein@localhost"
#define DESCRIBE_MAX	 160
#define LOG_FOLLOW_MS	 300
#define TABLE_MAX_ROWS	 512 /* rows kept: the tasks at work and the window's ended ones */
#define TABLE_WINDOW	 20  /* rows shown when the terminal's height is unknown */
#define TABLE_REDRAW_MS	 100 /* at most ten frames a second */
#define ALLOWED_KEYS_VAR "BERNSTEIN_ALLOWED_API_KEY_ENVS"
#define PARALLEL_MAX	 256
#define DEMO_PLAN_NAME	 "plan.yaml"
#define GIT_INIT_TIMEOUT 30000

/* ---- the environment of a run ---- */

static void push_env(struct session *s, const char *name)
{
	const char *v = cli_getenv(s->ctx, name);

	if (v)
		strvec_pushf(&s->git_env, "%s=%s", name, v);
}

void session_release(struct session *s)
{
	size_t i;

	for (i = 0; i < s->n_rows; i++) {
		free(s->rows[i].id);
		free(s->rows[i].adapter);
		free(s->rows[i].state);
		free(s->rows[i].last);
		free(s->rows[i].model);
	}
	free(s->rows);
	free(s->run_id);
	s->chain = audit_close(s->chain);
	s->st = state_close(s->st);
	s->cfg = orch_config_free(s->cfg);
	catalog_free(s->cat);
	s->cat = NULL;
	strvec_clear(&s->git_env);
	free(s->repo);
	s->repo = NULL;
	if (s->lock_fd >= 0)
		(void)close(s->lock_fd);
	s->lock_fd = -1;
	if (s->detach_fd >= 0)
		(void)close(s->detach_fd);
	s->detach_fd = -1;
}

/* Exit code for an errno from the orchestrator. */
int exit_for(int r)
{
	switch (r) {
	case -EINVAL:
		return BEXIT_INVALID;
	case -EBADMSG:
	case -EKEYREJECTED:
		return BEXIT_AUDIT;
	default:
		return BEXIT_ENV;
	}
}

/* Find the repository and open what a run needs. readonly: state only.
 * Otherwise the run lock is taken before anything is written (state.db,
 * the audit chain): a second `run` or `resume` is refused (exit 4) having
 * recorded nothing. */
/* checkout: overlay (or auto on a repository that big) as a non-root
 * user: a user + mount namespace of the run's own where it may mount its
 * overlays (orch/checkout.h, docs/runs.md "Overlay checkouts without
 * root"), entered before the run starts a thread or a child that must see
 * them. Not entered: why, given with the fallback the run then records. */
static void overlay_userns(struct session *s)
{
	const char *knob = cli_getenv(s->ctx, RUN_OVERLAY_ENV);
	enum checkout_mode m = s->cfg->checkout;
	uint32_t files = 0;
	struct diag d;

	if (geteuid() == 0 || m == CHECKOUT_MODE_WORKTREE || m == CHECKOUT_MODE_REFLINK ||
	    (knob && strcmp(knob, "off") == 0))
		return;
	if (m == CHECKOUT_MODE_AUTO && (checkout_overlay_repo_files(s->repo, &files) < 0 ||
					files < CHECKOUT_OVERLAY_AUTO_FILES))
		return;
	diag_clear(&d);
	if (checkout_overlay_userns_enter(s->repo, &d) == 0) {
		s->env.overlay_userns = true;
		return;
	}
	(void)snprintf(s->overlay_userns_why, sizeof(s->overlay_userns_why), "%s", d.msg);
	s->env.overlay_userns_why = s->overlay_userns_why;
}

int session_open(struct session *s, struct cli_ctx *ctx, bool readonly, bool need_chain,
		 const char *key_file)
{
	char *db = NULL, *auditdir = NULL;
	struct diag d;
	ssize_t n;
	int r, code = 0;

	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->key_file = key_file;
	s->lock_fd = -1;
	s->detach_fd = -1;
	s->git_env = (struct strvec)STRVEC_INIT;
	push_env(s, "PATH");
	push_env(s, "HOME");
	push_env(s, "TMPDIR");
	push_env(s, "LANG");
	strvec_push(&s->git_env, "LC_ALL=C");
	strvec_push(&s->git_env, "GIT_TERMINAL_PROMPT=0");
	diag_clear(&d);
	if (!getcwd(s->cwd, sizeof(s->cwd)))
		return cli_error(ctx, BEXIT_ENV, "cannot get the current directory: %s",
				 strerror(errno));
	r = git_toplevel(s->cwd, (const char *const *)s->git_env.v, &s->repo, &d);
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "'%s' is not inside a git repository: %s", s->cwd,
				 d.msg[0] ? d.msg : strerror(-r));
	/* git in any other directory runs in a task's tree (orch/worktree.h) */
	strvec_pushf(&s->git_env, "%s=%s", WORKTREE_GIT_REPO_ENV, s->repo);
	db = agentrun_path(s->repo, ORCH_STATE_DB);
	if (readonly) {
		r = state_open(db, STATE_READONLY, &s->st, &d);
		if (r == -ENOENT) {
			code = cli_error(
				ctx, BEXIT_USAGE,
				"no runs in '%s' yet (start one with 'bernstein run PLAN')",
				s->repo);
			goto out;
		}
		if (r < 0) {
			code = cli_diag(
				ctx, r == -EBADMSG || r == -EPROTO ? BEXIT_INVALID : BEXIT_ENV, &d);
			goto out;
		}
		goto out;
	}
	code = repo_config_load(ctx, s->repo, &s->cfg);
	if (code)
		goto out;
	code = catalog_paths_load(ctx, &s->cat);
	if (code)
		goto out;
	if (need_chain)
		overlay_userns(s);
	{
		char dir[PATH_MAX];

		path_dirname(db, dir, sizeof(dir));
		r = mkdir_p(dir, 0755);
		if (r < 0) {
			code = cli_error(ctx, BEXIT_ENV, "cannot create '%s': %s", dir,
					 strerror(-r));
			goto out;
		}
	}
	/* The run lock before anything is written: a second run refused here
	 * (exit 4) leaves no trace in state.db or the chain. */
	r = orch_lock_take(s->repo, &s->lock_fd, &d);
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	/* Then the chain: over a broken one (exit 5) nothing is written, not
	 * even state.db (audit_open() checks its end). */
	if (need_chain) {
		auditdir = agentrun_path(s->repo, AUDIT_DIR);
		code = audit_setup_open(ctx, auditdir, key_file, &s->chain);
		if (code)
			goto out;
		if (audit_setup_key_path(ctx, key_file, s->key_path, sizeof(s->key_path), NULL) ==
		    0)
			s->env.audit_key_path = s->key_path;
		/* before a new attempt: what a dead bernstein left in its
		 * cgroups (after kill -9 of it and of its keeper) */
		cli_contain_sweep(ctx);
	}
	r = state_open(db, STATE_CREATE, &s->st, &d);
	if (r < 0) {
		code = cli_diag(ctx, r == -EBADMSG || r == -EPROTO ? BEXIT_INVALID : BEXIT_ENV, &d);
		goto out;
	}
	n = readlink("/proc/self/exe", s->self_exe, sizeof(s->self_exe) - 1);
	if (n <= 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot find this executable: %s",
				 strerror(errno));
		goto out;
	}
	s->self_exe[n] = '\0';
	s->env.repo = s->repo;
	s->env.locked = true;
	s->env.cat = s->cat;
	s->env.cfg = s->cfg;
	s->env.st = s->st;
	s->env.chain = s->chain;
	s->env.host_env = (const char *const *)ctx->envp;
	s->env.git_env = (const char *const *)s->git_env.v;
	s->env.identity.name = IDENTITY_NAME;
	s->env.identity.email = IDENTITY_EMAIL;
	s->env.self_exe = s->self_exe;
	s->env.allowed_api_key_envs = cli_getenv(ctx, ALLOWED_KEYS_VAR);
	s->env.clk = clock_system();
out:
	free(db);
	free(auditdir);
	return code;
}

/* ---- the display ---- */

static void row_free(struct row *r)
{
	free(r->id);
	free(r->adapter);
	free(r->state);
	free(r->last);
	free(r->model);
}

/* Row i leaves the table: its usage goes to the run's sums. */
static void row_drop(struct session *s, size_t i)
{
	struct row *r = &s->rows[i];

	s->gone_tokens += r->done_tokens + (r->tokens > 0 ? r->tokens : 0);
	s->gone_cost += r->done_cost + (r->cost > 0 ? r->cost : 0);
	s->gone_unknown = s->gone_unknown || r->done_unknown || (r->tokens > 0 && r->cost < 0);
	s->gone_any = s->gone_any || r->done_tokens || r->tokens >= 0 || r->cost >= 0;
	row_free(r);
	memmove(r, r + 1, (s->n_rows - i - 1) * sizeof(*r));
	s->n_rows--;
}

/* The rows the window shows: the terminal's height less the lines around
 * them (counts, header, "more", TOTAL, the cursor's), at least 3. */
static size_t window_of(struct session *s)
{
	struct winsize ws;

	if (s->window)
		return s->window;
	s->window = TABLE_WINDOW;
	if (ioctl(fileno(s->ctx->out), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
		s->window = ws.ws_row > 8 ? (size_t)ws.ws_row - 5 : 3;
	return s->window;
}

/* A row made by an event before its task's state was seen is at work. */
static enum task_state row_state(const struct row *r)
{
	return r->state ? task_state_from_string(r->state) : TASK_RUNNING;
}

/* The rows a window needs, and no more: a pending task has none (the
 * counts say how many wait), an ended one keeps its row while it is among
 * the window's last ended, so the table's memory does not grow with the
 * run. Invalidates row pointers: only where none is held. */
static void rows_settle(struct session *s)
{
	size_t i, ended = 0;

	for (i = 0; i < s->n_rows; i++) {
		struct row *r = &s->rows[i];
		enum task_state st = row_state(r);

		if (st == TASK_PENDING || (int)st < 0) {
			row_drop(s, i--);
			continue;
		}
		if (lifecycle_terminal(st)) {
			if (!r->ended)
				r->ended = ++s->ended_seq;
			ended++;
		} else {
			r->ended = 0;
		}
	}
	while (ended > window_of(s)) {
		size_t oldest = SIZE_MAX;

		for (i = 0; i < s->n_rows; i++)
			if (s->rows[i].ended &&
			    (oldest == SIZE_MAX || s->rows[i].ended < s->rows[oldest].ended))
				oldest = i;
		row_drop(s, oldest);
		ended--;
	}
}

static struct row *row_for(struct session *s, const char *id)
{
	size_t i;

	for (i = 0; i < s->n_rows; i++)
		if (strcmp(s->rows[i].id, id) == 0)
			return &s->rows[i];
	if (s->n_rows >= TABLE_MAX_ROWS)
		rows_settle(s);
	if (s->n_rows >= TABLE_MAX_ROWS)
		return NULL;
	s->rows = xrealloc(s->rows, (s->n_rows + 1) * sizeof(*s->rows));
	memset(&s->rows[s->n_rows], 0, sizeof(*s->rows));
	s->rows[s->n_rows].id = xstrdup(id);
	s->rows[s->n_rows].tokens = -1;
	s->rows[s->n_rows].cost = -1;
	return &s->rows[s->n_rows++];
}

struct row *session_row(struct session *s, const char *id)
{
	return row_for(s, id);
}

static void fmt_elapsed(const struct row *r, int64_t now_ns, char *buf, size_t size)
{
	int64_t end = r->ended_ns ? r->ended_ns : now_ns, s;

	if (!r->started_ns) {
		(void)snprintf(buf, size, "-");
		return;
	}
	s = (end - r->started_ns) / 1000000000;
	(void)snprintf(buf, size, "%" PRId64 ":%02" PRId64, s / 60, s % 60);
}

static void draw_row(FILE *f, const struct row *r, int64_t now_ns)
{
	char el[32], tok[32];

	fmt_elapsed(r, now_ns, el, sizeof(el));
	if (r->tokens >= 0)
		(void)snprintf(tok, sizeof(tok), "%" PRId64, r->tokens);
	else
		(void)snprintf(tok, sizeof(tok), "-");
	(void)fprintf(f, "%-24.24s %-12.12s %-12.12s %7s %9s  %.60s\n", r->id,
		      r->adapter ? r->adapter : "-", r->state ? r->state : "-", el, tok,
		      r->last ? r->last : "");
}

/* "tasks: 3 running, 95 pending, 2 done (100)" from state.db; 1 line or 0. */
static size_t draw_counts(struct session *s, FILE *f)
{
	size_t counts[_TASK_STATE_MAX], i, total = 0;
	bool first = true;

	if (!s->run_id || !s->st || state_task_counts(s->st, s->run_id, counts, NULL) < 0)
		return 0;
	(void)fprintf(f, "tasks:");
	for (i = 0; i < _TASK_STATE_MAX; i++) {
		if (!counts[i])
			continue;
		(void)fprintf(f, "%s %zu %s", first ? "" : ",", counts[i],
			      task_state_to_string((enum task_state)i));
		total += counts[i];
		first = false;
	}
	(void)fprintf(f, " (%zu)\n", total);
	return 1;
}

/* The window: the tasks at work in the order they started, then the last
 * ended, newest first; at most s->window rows. */
static size_t draw_rows(struct session *s, FILE *f, int64_t now_ns)
{
	size_t i, shown = 0, hidden = 0;
	uint64_t below = UINT64_MAX;

	for (i = 0; i < s->n_rows; i++) {
		if (s->rows[i].ended)
			continue;
		if (shown < window_of(s)) {
			draw_row(f, &s->rows[i], now_ns);
			shown++;
		} else {
			hidden++;
		}
	}
	while (shown < window_of(s)) {
		size_t best = SIZE_MAX;

		for (i = 0; i < s->n_rows; i++)
			if (s->rows[i].ended && s->rows[i].ended < below &&
			    (best == SIZE_MAX || s->rows[i].ended > s->rows[best].ended))
				best = i;
		if (best == SIZE_MAX)
			break;
		draw_row(f, &s->rows[best], now_ns);
		below = s->rows[best].ended;
		shown++;
	}
	if (hidden) {
		(void)fprintf(f, "... %zu more at work\n", hidden);
		shown++;
	}
	return shown;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void draw_now(struct session *s)
{
	FILE *f = s->ctx->out;
	int64_t now_ns = clock_system()->now_ns(clock_system());
	size_t i;

	rows_settle(s);
	s->drawn_ms = mono_ms();
	if (s->drawn)
		(void)fprintf(f, "\033[%zuA", s->drawn);
	(void)fprintf(f, "\033[J");
	s->drawn = draw_counts(s, f);
	(void)fprintf(f, "%-24s %-12s %-12s %7s %9s  %s\n", "TASK", "ADAPTER", "STATE", "ELAPSED",
		      "TOKENS", "LAST EVENT");
	s->drawn += 1 + draw_rows(s, f, now_ns);
	{
		int64_t tokens = s->gone_tokens;
		double cost = s->gone_cost;
		bool unknown = s->gone_unknown, any = s->gone_any;

		for (i = 0; i < s->n_rows; i++) {
			const struct row *r = &s->rows[i];

			tokens += r->done_tokens + (r->tokens > 0 ? r->tokens : 0);
			cost += r->done_cost + (r->cost > 0 ? r->cost : 0);
			unknown = unknown || r->done_unknown || (r->tokens > 0 && r->cost < 0);
			any = any || r->done_tokens || r->tokens >= 0 || r->cost >= 0;
		}
		if (any) {
			if (unknown && cost == 0) /* nothing priced yet: unknown, never $0 */
				(void)fprintf(f, "%-24s %-12s %-12s %7s %9" PRId64 "  cost ?\n",
					      "TOTAL", "", "", "", tokens);
			else
				(void)fprintf(f,
					      "%-24s %-12s %-12s %7s %9" PRId64 "  cost $%.4f%s\n",
					      "TOTAL", "", "", "", tokens, cost,
					      unknown ? " + unknown" : "");
			s->drawn++;
		}
	}
	(void)fflush(f);
}

/* At most TABLE_REDRAW_MS apart: a run of many tasks changes faster than a
 * terminal can show (session_draw_final() draws the last state). */
static void draw(struct session *s)
{
	if (s->drawn && mono_ms() - s->drawn_ms < TABLE_REDRAW_MS)
		return;
	draw_now(s);
}

/* A usage event of r's attempt: its tokens, and its cost (the agent's, else
 * priced for the model it announced). */
void session_row_usage(struct session *s, struct row *r, const struct event *ev)
{
	struct pricing_usage u;
	double c = 0;

	if (ev->kind == EVENT_SESSION_STARTED && ev->model && !r->model)
		r->model = xstrdup(ev->model);
	if (ev->kind != EVENT_USAGE)
		return;
	if (ev->input_tokens >= 0 || ev->output_tokens >= 0)
		r->tokens = (ev->input_tokens > 0 ? ev->input_tokens : 0) +
			    (ev->output_tokens > 0 ? ev->output_tokens : 0);
	if (ev->cost_usd >= 0) {
		r->cost = ev->cost_usd;
		return;
	}
	pricing_usage_from(dialect_from_string(ev->dialect), ev->input_tokens, ev->output_tokens,
			   ev->cached_tokens, &u);
	r->cost = pricing_cost(catalog_pricing(s->cat, r->model), &u, &c) == 0 ? c : -1;
}

/* A new attempt of r starts: the last one's usage goes to the sums. */
static void row_next_attempt(struct row *r)
{
	if (r->tokens > 0)
		r->done_tokens += r->tokens;
	if (r->cost >= 0)
		r->done_cost += r->cost;
	else if (r->tokens > 0)
		r->done_unknown = true;
	r->tokens = -1;
	r->cost = -1;
	free(r->model);
	r->model = NULL;
}

void session_draw(struct session *s)
{
	draw(s);
}

void session_draw_final(struct session *s)
{
	if (s->tty)
		draw_now(s);
}

void session_record_exit(struct session *s, const char *run_id, int code)
{
	char ts[40] = "";

	(void)clock_iso8601_utc(clock_system()->now_ns(clock_system()), ts, sizeof(ts));
	(void)state_run_set_exit(s->st, run_id, code < 0 ? STATE_NULL_INT : code, ts, NULL);
}

void print_json_line(struct cli_ctx *ctx, json_t *o)
{
	char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	if (line)
		(void)fprintf(ctx->out, "%s\n", line);
	free(line);
	(void)fflush(ctx->out);
	json_decref(o);
}

static void on_task(void *userdata, const struct task_row *t, enum task_state from)
{
	struct session *s = userdata;
	struct row *r = row_for(s, t->id);

	if (!s->run_id && t->run_id)
		s->run_id = xstrdup(t->run_id);
	int64_t now_ns = clock_system()->now_ns(clock_system());

	if (r) {
		free(r->state);
		r->state = xstrdup(task_state_to_string(t->state));
		if (t->adapter) {
			free(r->adapter);
			r->adapter = xstrdup(t->adapter);
		}
		if (t->state == TASK_RUNNING) {
			row_next_attempt(r);
			r->started_ns = now_ns;
			r->ended_ns = 0;
		} else if (t->state != TASK_PENDING && r->started_ns && !r->ended_ns &&
			   t->state != TASK_COMPLETING && t->state != TASK_MERGING &&
			   t->state != TASK_REBASING && t->state != TASK_RESOLVING) {
			r->ended_ns = now_ns;
		}
		if (t->reason && t->state != TASK_RUNNING) {
			free(r->last);
			r->last = xstrdup(run_report_short_reason(t->reason));
		}
	}
	if (s->ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "type", cli_jstr("task"));
		cli_jset(o, "task", cli_jstr(t->id));
		cli_jset(o, "from", cli_jstr(task_state_to_string(from)));
		cli_jset(o, "state", cli_jstr(task_state_to_string(t->state)));
		cli_jset(o, "reason", cli_jstr(t->reason));
		cli_jset(o, "adapter", cli_jstr(t->adapter));
		cli_jset(o, "attempt", json_integer(t->attempts));
		if (t->receipt_hash)
			cli_jset(o, "receipt_hash", cli_jstr(t->receipt_hash));
		if (t->merge_commit)
			cli_jset(o, "merge_commit", cli_jstr(t->merge_commit));
		if (t->conflicts)
			cli_jset(o, "conflicts", json_loads(t->conflicts, 0, NULL));
		print_json_line(s->ctx, o);
	} else if (s->tty) {
		draw(s);
	} else {
		(void)fprintf(s->ctx->out, "%s: %s -> %s%s%s%s\n", t->id,
			      task_state_to_string(from), task_state_to_string(t->state),
			      t->adapter ? " [" : "", t->adapter ? t->adapter : "",
			      t->adapter ? "]" : "");
		if (t->reason && t->state != TASK_RUNNING)
			(void)fprintf(s->ctx->out, "  %s\n", t->reason);
		(void)fflush(s->ctx->out);
	}
}

static void on_event(void *userdata, const struct task_row *t, const struct event *ev,
		     const char *json, size_t len, struct redact *rd)
{
	struct session *s = userdata;
	struct row *r = row_for(s, t->id);
	struct sbuf desc = SBUF_INIT(SIZE_MAX);
	char buf[DESCRIBE_MAX];

	/* ev is redacted; its description turns control bytes into spaces,
	 * which could spell a secret again */
	(void)event_describe(ev, buf, sizeof(buf));
	(void)redact_apply(rd, buf, strlen(buf), 0, &desc);
	(void)snprintf(buf, sizeof(buf), "%s", desc.buf);
	sbuf_release(&desc);
	if (r) {
		free(r->last);
		r->last = xstrdup(buf);
		session_row_usage(s, r, ev);
	}
	if (s->ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "type", cli_jstr("event"));
		cli_jset(o, "task", cli_jstr(t->id));
		cli_jset(o, "event", json_loadb(json, len, 0, NULL));
		print_json_line(s->ctx, o);
	} else if (s->tty) {
		draw(s);
	} else if (s->ctx->verbosity >= 0) {
		(void)fprintf(s->ctx->out, "%s: %s\n", t->id, buf);
		(void)fflush(s->ctx->out);
	}
}

static void on_warning(void *userdata, const char *task_id, const char *msg)
{
	struct session *s = userdata;

	if (s->ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "type", cli_jstr("warning"));
		cli_jset(o, "task", cli_jstr(task_id));
		cli_jset(o, "message", cli_jstr(msg));
		print_json_line(s->ctx, o);
		return;
	}
	if (s->tty)
		s->drawn = 0; /* the warning scrolls the table away: draw anew below */
	cli_warn(s->ctx, "%s%s%s", task_id ? task_id : "", task_id ? ": " : "", msg);
}

/* The execution listens on its control socket: a detached run's caller
 * may go (cli/detach.h). */
static void on_started(void *userdata)
{
	detach_started(userdata);
}

void hooks_attach(struct session *s)
{
	s->tty = !s->ctx->json && isatty(fileno(s->ctx->out));
	s->env.hooks.on_task = on_task;
	s->env.hooks.on_event = on_event;
	s->env.hooks.on_warning = on_warning;
	s->env.hooks.on_started = on_started;
	s->env.hooks.userdata = s;
}

/* ---- the end of a run ---- */

/* The exit code of `run`, `resume` and `demo` from the tasks this execution
 * ran (docs/exit-codes.md): 0 all done or no_changes, 6 refusals and
 * nothing else wrong, 1 any task failed, conflicted, blocked or left
 * unfinished (interrupted, a merge postponed), 130 interrupted. */
int summary_exit(const struct orch_summary *sum)
{
	/* the budget held work back: its own code (a run that got everything
	 * done on its last cent is done) */
	if (sum->budget_exceeded && sum->state != RUN_DONE)
		return BEXIT_BUDGET;
	return run_report_exit(sum->counts, sum->cancelled);
}

/* The run's tokens and cost (every attempt, earlier executions too), and
 * its budget: a line each, or "cost" and "budget" in o. */
static void summary_cost(struct session *s, const struct orch_summary *sum, json_t *o)
{
	struct cost_total t;
	struct orch_budget b;
	bool has_budget;
	char money[48];

	if (cost_run_total(s->st, sum->run_id, &t, NULL) < 0)
		return;
	has_budget = cost_report_budget(s->st, sum->run_id, &b);
	if (o) {
		cli_jset(o, "cost", cost_total_json(&t));
		cli_jset(o, "budget", has_budget ? cost_report_budget_json(&b, &t) : NULL);
		cli_jset(o, "budget_exceeded", json_boolean(sum->budget_exceeded));
		return;
	}
	if (t.any_usage)
		(void)fprintf(s->ctx->out,
			      "  cost:    %" PRId64 " tokens (%" PRId64 " in, %" PRId64
			      " out), %s  (bernstein cost %s)\n",
			      cost_total_tokens(&t), t.input_tokens, t.output_tokens,
			      cost_report_money(&t, money, sizeof(money)), sum->run_id);
	if (has_budget) {
		(void)fprintf(s->ctx->out, "  ");
		cost_report_budget_line(s->ctx->out, &b, &t);
		(void)fputc('\n', s->ctx->out);
	}
	if (sum->budget_exceeded)
		(void)fprintf(
			s->ctx->out,
			"  budget exceeded: %s; 'bernstein resume %s --max-cost-usd N' goes on with a higher cap\n",
			b.on_exceed == BUDGET_STOP
				? "the running agents were stopped and no new attempt started"
				: "no new attempt started, the running ones finished",
			sum->run_id);
}

/* The tasks this execution showed that failed, and why (cli/run-report.h). */
static void summary_problems(struct session *s, const struct orch_summary *sum, json_t *o)
{
	const char **ids = xcalloc(s->n_rows + 1, sizeof(*ids));
	size_t i;

	for (i = 0; i < s->n_rows; i++)
		ids[i] = s->rows[i].id;
	run_report_problems(s->ctx, s->st, sum->run_id, ids, s->n_rows, o);
	free(ids);
}

void print_summary(struct session *s, const struct orch_summary *sum)
{
	struct cli_ctx *ctx = s->ctx;
	size_t i;

	session_draw_final(s); /* the table's last frame: the throttle may have skipped it */
	if (ctx->json) {
		json_t *o = json_object(), *c = json_object();

		cli_jset(o, "type", cli_jstr("run"));
		cli_jset(o, "run", cli_jstr(sum->run_id));
		cli_jset(o, "state", cli_jstr(run_state_to_string(sum->state)));
		cli_jset(o, "cancelled", json_boolean(sum->cancelled));
		for (i = 0; i < _TASK_STATE_MAX; i++)
			if (sum->counts[i])
				cli_jset(c, task_state_to_string((enum task_state)i),
					 json_integer((json_int_t)sum->counts[i]));
		cli_jset(o, "tasks", c);
		cli_jset(o, "exit_code", json_integer(summary_exit(sum)));
		summary_cost(s, sum, o);
		summary_problems(s, sum, o);
		print_json_line(ctx, o);
		return;
	}
	(void)fprintf(ctx->out, "run %s: %s (", sum->run_id, run_state_to_string(sum->state));
	{
		bool first = true;

		for (i = 0; i < _TASK_STATE_MAX; i++) {
			if (!sum->counts[i])
				continue;
			(void)fprintf(ctx->out, "%s%zu %s", first ? "" : ", ", sum->counts[i],
				      task_state_to_string((enum task_state)i));
			first = false;
		}
	}
	(void)fprintf(ctx->out, ")\n");
	summary_cost(s, sum, NULL);
	summary_problems(s, sum, NULL);
	(void)fprintf(ctx->out,
		      "  status:  bernstein status %s\n"
		      "  logs:    %s/%s/%s/\n"
		      "  audit:   bernstein audit verify%s%s  (%s/%s)\n",
		      sum->run_id, s->repo, AGENTRUN_RUNS_DIR, sum->run_id,
		      s->key_file ? " --key-file " : "", s->key_file ? s->key_file : "", s->repo,
		      AUDIT_DIR);
	if (sum->counts[TASK_REVIEW])
		(void)fprintf(
			ctx->out,
			"  review:  bernstein diff TASK, then approve TASK or reject TASK --feedback ...\n");
	/* tasks that wait only for a review: resume has nothing to do for them */
	/* (held back by the budget: its line above says how to go on) */
	if (sum->state == RUN_INTERRUPTED && !sum->budget_exceeded &&
	    (!sum->counts[TASK_REVIEW] || sum->counts[TASK_PENDING] || sum->counts[TASK_RUNNING] ||
	     sum->counts[TASK_COMPLETING] || sum->counts[TASK_MERGING] ||
	     sum->counts[TASK_INTERRUPTED] || sum->counts[TASK_BLOCKED]))
		(void)fprintf(ctx->out, "  resume:  bernstein resume %s\n", sum->run_id);
}

/* ---- bernstein run ---- */

enum {
	OPT_JSON = 256,
	OPT_PARALLEL,
	OPT_DRY_RUN,
	OPT_KEY_FILE,
	OPT_FOLLOW,
	OPT_RUN,
	OPT_ATTEMPT,
	OPT_EVENTS,
	OPT_KEEP,
	OPT_RAW,
	OPT_DETACH,
	OPT_PLAIN,
	OPT_MAX_COST,
	OPT_GOAL,
	OPT_YES,
	OPT_SERVE,
};

/* --max-cost-usd: a number > 0 */
static int parse_max_cost(struct cli_ctx *ctx, const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > BUDGET_MAX_COST_USD)
		return cli_usage_error(ctx, "--max-cost-usd: '%s' is not an amount of USD above 0",
				       s);
	*ret = v;
	return 0;
}

static int parse_parallel(struct cli_ctx *ctx, const char *s, unsigned *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > PARALLEL_MAX)
		return cli_usage_error(ctx, "--parallel: '%s' is not a number from 1 to %d", s,
				       PARALLEL_MAX);
	*ret = (unsigned)v;
	return 0;
}

/* Load the plan, check the checkout, record the run and execute it. */
static int run_plan_file(struct session *s, const char *plan_path, unsigned parallel,
			 const char *want_hash)
{
	struct cli_ctx *ctx = s->ctx;
	struct plan *plan = NULL;
	struct diag_list issues = PLAN_ISSUES_INIT;
	struct orch_summary sum;
	char run_id[64], abspath[PATH_MAX];
	bool clean = false;
	struct diag d;
	size_t i;
	int r, code;

	diag_clear(&d);
	r = plan_load_file(plan_path, s->env.allowed_api_key_envs, &plan, &issues);
	if (r < 0) {
		for (i = 0; i < issues.n; i++)
			(void)cli_diag(ctx, BEXIT_INVALID, &issues.v[i]);
		code = r == -EINVAL || r == -EFBIG ? BEXIT_INVALID : BEXIT_ENV;
		if (issues.n == 0)
			code = cli_error(ctx, code, "cannot load plan '%s': %s", plan_path,
					 strerror(-r));
		diag_list_release(&issues);
		return code;
	}
	diag_list_release(&issues);
	if (want_hash && strcmp(plan_hash(plan), want_hash) != 0) {
		/* run --goal: the file changed since it was checked and confirmed */
		code = cli_error(
			ctx, BEXIT_INVALID,
			"plan '%s' changed after it was generated and confirmed; refusing it",
			plan_path);
		goto out;
	}
	/* context_files: confined to the repository (orch/context.h) */
	{
		int fd = open(s->repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0 && context_check_plan(plan, fd, &issues) > 0) {
			for (i = 0; i < issues.n; i++)
				(void)cli_diag(ctx, BEXIT_INVALID, &issues.v[i]);
			diag_list_release(&issues);
			(void)close(fd);
			code = BEXIT_INVALID;
			goto out;
		}
		if (fd >= 0)
			(void)close(fd);
		diag_list_release(&issues);
	}
	r = git_is_clean(s->repo, s->env.git_env, &clean, &d);
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	if (!clean) {
		code = cli_error(
			ctx, BEXIT_ENV,
			"'%s' has uncommitted changes to tracked files; bernstein merges finished tasks into the checked-out branch, so commit or stash them first",
			s->repo);
		goto out;
	}
	if (!realpath(plan_path, abspath))
		(void)snprintf(abspath, sizeof(abspath), "%s", plan_path);
	s->env.parallel = parallel;
	r = orch_run_create(&s->env, plan, abspath, run_id, sizeof(run_id), &d);
	if (r < 0) {
		code = cli_diag(ctx, exit_for(r), &d);
		goto out;
	}
	code = detach_log(s, run_id); /* run --detach: its output into run.log */
	if (code)
		goto out;
	if (!ctx->json && !s->tty)
		(void)fprintf(ctx->out, "run %s: %zu task%s of plan '%s'\n", run_id, plan->n,
			      plan->n == 1 ? "" : "s", plan->name);
	/* recorded in state.db, which the run reads: the parsed plan (its YAML
	 * tree, some 600 bytes a task) is not kept for the run's length */
	plan = plan_free(plan);
	free(s->run_id);
	s->run_id = xstrdup(run_id); /* the table's counts; its tasks wait: no rows */
	if (s->tty)
		draw(s);
	r = orch_run_execute(&s->env, run_id, &sum, &d);
	if (r < 0) {
		code = r == -EBUSY ? cli_diag(ctx, BEXIT_ENV, &d) : cli_diag(ctx, exit_for(r), &d);
		if (!ctx->json)
			(void)fprintf(ctx->err,
				      "%s: the run stopped; 'bernstein resume %s' goes on\n",
				      ctx->progname, run_id);
		session_record_exit(s, run_id, code);
		goto out;
	}
	print_summary(s, &sum);
	code = summary_exit(&sum);
	session_record_exit(s, run_id, code);
out:
	plan_free(plan);
	return code;
}

static const struct option run_options[] = {
	{"goal", required_argument, NULL, OPT_GOAL},
	{"yes", no_argument, NULL, OPT_YES},
	{"planner", required_argument, NULL, GOAL_OPT_PLANNER},
	{"planner-model", required_argument, NULL, GOAL_OPT_PLANNER_MODEL},
	{"rounds", required_argument, NULL, GOAL_OPT_ROUNDS},
	{"allow", required_argument, NULL, GOAL_OPT_ALLOW},
	{"set", required_argument, NULL, GOAL_OPT_SET},
	{"planner-timeout", required_argument, NULL, GOAL_OPT_PLANNER_TIMEOUT},
	{"planner-sandbox", required_argument, NULL, GOAL_OPT_PLANNER_SANDBOX},
	{"detach", no_argument, NULL, OPT_DETACH},
	{"max-cost-usd", required_argument, NULL, OPT_MAX_COST},
	{"parallel", required_argument, NULL, OPT_PARALLEL},
	{"json", no_argument, NULL, OPT_JSON},
	{"key-file", required_argument, NULL, OPT_KEY_FILE},
	{"serve", optional_argument, NULL, OPT_SERVE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

/* run --goal: the plan generated, shown and confirmed (docs/goal-mode.md).
 * 0 with the plan's path, else the exit code. */
static int goal_plan(struct cli_ctx *ctx, struct goal_opts *go, bool yes, char **ret_plan,
		     char *hash)
{
	struct strvec shown = STRVEC_INIT;
	bool tty = isatty(STDIN_FILENO) && isatty(fileno(ctx->err));
	char answer[16];
	size_t i;
	int code;

	if (!yes && !tty)
		return cli_usage_error(
			ctx,
			"--goal without a terminal needs --yes (nothing is run that was not confirmed)");
	go->quiet = ctx->json;
	code = goal_generate(ctx, go, ret_plan, hash, &shown);
	if (code)
		goto out;
	if (yes) {
		if (!ctx->json && shown.nr)
			(void)fprintf(ctx->out,
				      "confirmed by --yes, with what --allow let through\n");
		goto out;
	}
	(void)fprintf(ctx->err, "%s",
		      shown.nr ? "these commands of the plan run on this host:\n" : "");
	for (i = 0; i < shown.nr; i++)
		(void)fprintf(ctx->err, "  %s\n", shown.v[i]);
	(void)fprintf(ctx->err, "run this plan (%s)? [y/N] ", *ret_plan);
	(void)fflush(ctx->err);
	if (!fgets(answer, sizeof(answer), stdin) || (answer[0] != 'y' && answer[0] != 'Y')) {
		code = cli_error(ctx, BEXIT_FAILED, "not confirmed; the plan is kept in '%s'",
				 *ret_plan);
		free(*ret_plan);
		*ret_plan = NULL;
	}
out:
	strvec_clear(&shown);
	return code;
}

int cmd_run(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	struct goal_opts go;
	unsigned parallel = 0;
	const char *key_file = NULL, *plan_arg = NULL;
	char *goal_file = NULL, goal_hash[SHA256_HEX_LEN + 1] = "";
	bool detach = false, child = false, yes = false, serve = false;
	const char *serve_listen = NULL;
	double max_cost = 0;
	int c, code, detach_fd = -1;

	goal_opts_init(&go);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", run_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			code = cli_help(ctx);
			goto done;
		case OPT_DETACH:
			detach = true;
			break;
		case OPT_SERVE:
			serve = true;
			serve_listen = optarg;
			break;
		case OPT_PARALLEL:
			code = parse_parallel(ctx, optarg, &parallel);
			if (code)
				goto done;
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		case OPT_KEY_FILE:
			key_file = optarg;
			break;
		case OPT_MAX_COST:
			code = parse_max_cost(ctx, optarg, &max_cost);
			if (code)
				goto done;
			break;
		case OPT_GOAL:
			go.goal = optarg;
			break;
		case OPT_YES:
			yes = true;
			break;
		case GOAL_OPT_PLANNER:
		case GOAL_OPT_PLANNER_MODEL:
		case GOAL_OPT_ROUNDS:
		case GOAL_OPT_ALLOW:
		case GOAL_OPT_SET:
		case GOAL_OPT_PLANNER_TIMEOUT:
		case GOAL_OPT_PLANNER_SANDBOX:
			code = goal_opt(ctx, c, optarg, &go);
			if (code >= 0)
				goto done;
			break;
		default:
			code = cli_option_error(ctx, argv, run_options, "");
			goto done;
		}
	}
	if (go.goal) {
		if (!go.goal[0]) {
			code = cli_usage_error(ctx, "--goal: the goal is empty");
			goto done;
		}
		if (optind < argc) {
			code = cli_usage_error(ctx, "--goal or a PLAN, not both ('%s')",
					       argv[optind]);
			goto done;
		}
		if (detach) {
			code = cli_usage_error(
				ctx, "--goal cannot --detach (the plan is confirmed first)");
			goto done;
		}
		go.key_file = key_file;
		code = goal_plan(ctx, &go, yes, &goal_file, goal_hash);
		if (code)
			goto done;
		plan_arg = goal_file;
	} else {
		if (yes || go.planner || go.model || go.allow || go.sets.nr) {
			code = cli_usage_error(ctx, "--yes and the planner options go with --goal");
			goto done;
		}
		if (optind >= argc) {
			code = cli_usage_error(ctx, "missing the plan file (or --goal GOAL)");
			goto done;
		}
		if (optind + 1 < argc) {
			code = cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
			goto done;
		}
		plan_arg = argv[optind];
	}
	if (detach) {
		/* the caller gets the exit code here; the child goes on below */
		code = detach_fork(ctx, &child, &detach_fd);
		if (!child)
			goto done;
	}
	code = session_open(&s, ctx, false, true, key_file);
	s.detach_fd = detach_fd;
	s.env.max_cost_usd = max_cost;
	/* the server beside the run: after the run lock, before the run is a
	 * child subreaper (cli/serve.h) */
	if (code == 0 && serve)
		code = serve_start_beside(ctx, serve_listen, getpid());
	if (code == 0) {
		hooks_attach(&s);
		code = run_plan_file(&s, plan_arg, parallel, goal_hash[0] ? goal_hash : NULL);
	}
	session_release(&s);
done:
	free(goal_file);
	goal_opts_release(&go);
	return code;
}

/* ---- bernstein resume ---- */

static const struct option resume_options[] = {
	{"detach", no_argument, NULL, OPT_DETACH},
	{"max-cost-usd", required_argument, NULL, OPT_MAX_COST},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"json", no_argument, NULL, OPT_JSON},
	{"parallel", required_argument, NULL, OPT_PARALLEL},
	{"key-file", required_argument, NULL, OPT_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

void print_resume_plan(struct cli_ctx *ctx, const struct resume_plan *rp, bool dry)
{
	size_t i;

	if (ctx->json) {
		json_t *o = json_object(), *a = json_array();

		cli_jset(o, "type", cli_jstr("resume"));
		cli_jset(o, "run", cli_jstr(rp->run_id));
		cli_jset(o, "dry_run", json_boolean(dry));
		for (i = 0; i < rp->n; i++) {
			json_t *t = json_object();

			cli_jset(t, "task", cli_jstr(rp->v[i].task_id));
			cli_jset(t, "state", cli_jstr(task_state_to_string(rp->v[i].state)));
			cli_jset(t, "action", cli_jstr(resume_action_to_string(rp->v[i].action)));
			cli_jset(t, "adapter", cli_jstr(rp->v[i].adapter));
			cli_jset(t, "agent_session_id", cli_jstr(rp->v[i].agent_session_id));
			(void)json_array_append_new(a, t);
		}
		cli_jset(o, "tasks", a);
		print_json_line(ctx, o);
		return;
	}
	(void)fprintf(ctx->out, "%s run %s:\n", dry ? "would resume" : "resuming", rp->run_id);
	for (i = 0; i < rp->n; i++) {
		const struct resume_item *it = &rp->v[i];

		(void)fprintf(ctx->out, "  %-24s %-12s %s", it->task_id,
			      task_state_to_string(it->state), resume_action_to_string(it->action));
		if (it->action == RESUME_NATIVE)
			(void)fprintf(ctx->out, " (%s session %s)", it->adapter ? it->adapter : "?",
				      it->agent_session_id ? it->agent_session_id : "?");
		else if (it->action == RESUME_FALLBACK)
			(void)fprintf(ctx->out, " (fresh session with recovered context)");
		(void)fputc('\n', ctx->out);
	}
}

/* resume moved nothing: say why; exit 2 (docs/exit-codes.md) */
static int nothing_to_resume(struct session *s, const struct resume_plan *rp, bool dry)
{
	char why[512];

	run_report_nothing_to_resume(s->st, rp->run_id, why, sizeof(why));
	if (s->ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "type", cli_jstr("resume"));
		cli_jset(o, "run", cli_jstr(rp->run_id));
		cli_jset(o, "dry_run", json_boolean(dry));
		cli_jset(o, "tasks", json_array());
		cli_jset(o, "nothing_to_resume", cli_jstr(why));
		print_json_line(s->ctx, o);
	} else {
		(void)fprintf(s->ctx->out, "nothing to resume in run %s: %s\n", rp->run_id, why);
	}
	return BEXIT_USAGE;
}

int cmd_resume(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	struct resume_plan rp = {0};
	struct orch_summary sum;
	const char *key_file = NULL, *which = NULL;
	unsigned parallel = 0;
	bool dry = false, detach = false, child = false;
	double max_cost = 0;
	struct diag d;
	int c, r, code, detach_fd = -1;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", resume_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_DETACH:
			detach = true;
			break;
		case OPT_DRY_RUN:
			dry = true;
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		case OPT_PARALLEL:
			code = parse_parallel(ctx, optarg, &parallel);
			if (code)
				return code;
			break;
		case OPT_KEY_FILE:
			key_file = optarg;
			break;
		case OPT_MAX_COST:
			code = parse_max_cost(ctx, optarg, &max_cost);
			if (code)
				return code;
			break;
		default:
			return cli_option_error(ctx, argv, resume_options, "");
		}
	}
	if (optind < argc)
		which = argv[optind++];
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	if (detach && dry)
		return cli_usage_error(ctx, "--detach and --dry-run do not go together");
	if (detach) {
		code = detach_fork(ctx, &child, &detach_fd);
		if (!child)
			return code;
	}
	code = session_open(&s, ctx, false, !dry, key_file);
	s.detach_fd = detach_fd;
	if (code) {
		session_release(&s);
		return code == BEXIT_INVALID ? 3 : code;
	}
	hooks_attach(&s);
	diag_clear(&d);
	r = orch_resume_prepare(&s.env, which, !dry, &rp, &d);
	if (r == -ENOENT) {
		code = cli_diag(ctx, 2, &d);
		goto out;
	}
	if (r == -EBUSY) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	if (r < 0) {
		code = cli_diag(ctx, 3, &d);
		goto out;
	}
	/* a run killed after its last task settled still gets an execution:
	 * it removes what the killed one left (lock files, worktrees, empty
	 * branches) and records the end of the run */
	if (rp.n == 0 && !rp.unfinished) {
		code = nothing_to_resume(&s, &rp, dry);
		goto out;
	}
	if (!dry) {
		code = detach_log(&s, rp.run_id); /* resume --detach: into run.log */
		if (code)
			goto out;
	}
	print_resume_plan(ctx, &rp, dry);
	if (dry) {
		code = 0;
		goto out;
	}
	s.env.parallel = parallel;
	s.env.max_cost_usd = max_cost;
	session_record_exit(&s, rp.run_id, -1); /* this execution's, when it ends */
	r = orch_run_execute(&s.env, rp.run_id, &sum, &d);
	if (r < 0) {
		code = cli_diag(ctx, exit_for(r), &d);
		session_record_exit(&s, rp.run_id, code);
		goto out;
	}
	print_summary(&s, &sum);
	/* as `run`: 0 only when every task resumed is done (or no_changes) */
	code = summary_exit(&sum);
	session_record_exit(&s, rp.run_id, code);
out:
	resume_plan_release(&rp);
	session_release(&s);
	return code;
}

/* ---- bernstein status ---- */

static const struct option status_options[] = {
	{"follow", no_argument, NULL, 'f'},
	{"plain", no_argument, NULL, OPT_PLAIN},
	{"json", no_argument, NULL, OPT_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

/* The sandbox tier t got (recorded in its spec when it was routed), or
 * NULL before that. The caller frees. */
static char *task_tier(const struct task_row *t)
{
	json_t *spec = t->spec ? json_loads(t->spec, 0, NULL) : NULL;
	const char *s = json_string_value(json_object_get(spec, "sandbox_tier"));
	char *r = s ? xstrdup(s) : NULL;

	json_decref(spec);
	return r;
}

static json_t *task_json(struct state *st, const struct task_row *t)
{
	json_t *o = json_object();
	char *tier = task_tier(t);

	cli_jset(o, "id", cli_jstr(t->id));
	cli_jset(o, "title", cli_jstr(t->title));
	cli_jset(o, "role", cli_jstr(t->role));
	cli_jset(o, "state", cli_jstr(task_state_to_string(t->state)));
	cli_jset(o, "adapter", cli_jstr(t->adapter));
	cli_jset(o, "sandbox", cli_jstr(tier));
	free(tier);
	cli_jset(o, "profile_hash", cli_jstr(t->profile_hash));
	cli_jset(o, "attempts", json_integer(t->attempts));
	cli_jset(o, "outcome", cli_jstr(t->outcome));
	cli_jset(o, "reason", cli_jstr(t->reason));
	cli_jset(o, "receipt_hash", cli_jstr(t->receipt_hash));
	cli_jset(o, "branch", cli_jstr(t->branch));
	cli_jset(o, "worktree", cli_jstr(t->worktree));
	cli_jset(o, "session", cli_jstr(t->session));
	cli_jset(o, "agent_session_id", cli_jstr(t->agent_session_id));
	cli_jset(o, "merge_commit", cli_jstr(t->merge_commit));
	cli_jset(o, "conflicts", t->conflicts ? json_loads(t->conflicts, 0, NULL) : json_null());
	cli_jset(o, "artifact_sha256", cli_jstr(t->artifact_sha256));
	cli_jset(o, "retry_at", cli_jstr(t->retry_at));
	cli_jset(o, "updated_at", cli_jstr(t->updated_at));
	run_report_task_json(st, t, o);
	{
		struct cost_total c;

		cost_report_task(st, t, &c);
		cli_jset(o, "usage", cost_total_json(&c));
	}
	return o;
}

/* The run's recorded budget has a cap reached. */
static bool budget_reached(struct state *st, const char *run_id)
{
	struct orch_budget b;
	struct cost_total t;

	return cost_report_budget(st, run_id, &b) && cost_run_total(st, run_id, &t, NULL) == 0 &&
	       cost_report_budget_reached(&b, &t);
}

/* The plan.generated record of the run's plan when a planner generated it
 * (goal mode), else NULL. */
static json_t *run_goal(struct state *st, const struct run_row *run)
{
	char *text = NULL;
	json_t *o = NULL;
	struct diag d;

	diag_clear(&d);
	if (run->plan_hash && state_generated_get(st, run->plan_hash, &text, &d) == 0 && text)
		o = json_loads(text, 0, NULL);
	free(text);
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* status's "goal:" line for a generated plan: the goal's first line (its
 * control bytes as '?'), the planner and its rounds. */
static void status_goal(struct cli_ctx *ctx, struct state *st, const struct run_row *run)
{
	json_t *g = run_goal(st, run);
	const char *goal, *model, *planner, *nl;
	char *first;

	if (!g)
		return;
	goal = json_string_value(json_object_get(g, "goal"));
	model = json_string_value(json_object_get(g, "planner_model"));
	nl = goal ? strchr(goal, '\n') : NULL;
	first = goal ? xstrndup(goal, nl ? (size_t)(nl - goal) : strlen(goal)) : xstrdup("-");
	(void)fputs("goal: ", ctx->out);
	cli_put_safe(ctx->out, first, false);
	(void)fprintf(ctx->out, "%s (planned by ", nl ? " ..." : "");
	planner = json_string_value(json_object_get(g, "planner_adapter"));
	cli_put_safe(ctx->out, planner ? planner : "-", false);
	if (model) {
		(void)fputs(", model ", ctx->out);
		cli_put_safe(ctx->out, model, false);
	}
	(void)fprintf(ctx->out, ", %" JSON_INTEGER_FORMAT " round%s)\n",
		      json_integer_value(json_object_get(g, "rounds")),
		      json_integer_value(json_object_get(g, "rounds")) == 1 ? "" : "s");
	free(first);
	json_decref(g);
}

/* status's text: the run's line (exit: ", exit N (words)" or ""), then a
 * line per task, then the run's tokens and cost (and budget) */
static void status_table(struct cli_ctx *ctx, struct state *st, const struct run_row *run,
			 const char *exit, const struct task_row *tasks, size_t n)
{
	struct cost_total total, c;
	struct orch_budget b;
	char money[48];
	size_t i;

	(void)fprintf(ctx->out, "run %s (%s): %s%s, base %s @ %.12s, started %s\n", run->id,
		      run->name ? run->name : "-", run_state_to_string(run->state), exit,
		      run->base_branch ? run->base_branch : "-",
		      run->base_commit ? run->base_commit : "-",
		      run->created_at ? run->created_at : "-");
	status_goal(ctx, st, run);
	(void)fprintf(ctx->out, "%-24s %-12s %-12s %-9s %8s %9s %10s  %s\n", "TASK", "ADAPTER",
		      "STATE", "SANDBOX", "ATTEMPTS", "TOKENS", "COST", "REASON");
	memset(&total, 0, sizeof(total));
	for (i = 0; i < n; i++) {
		const struct task_row *t = &tasks[i];
		char *tier = task_tier(t), tok[32] = "-";

		cost_report_task(st, t, &c);
		cost_total_sum(&total, &c);
		if (c.any_usage)
			(void)snprintf(tok, sizeof(tok), "%" PRId64, cost_total_tokens(&c));
		(void)fprintf(
			ctx->out, "%-24.24s %-12.12s %-12.12s %-9.9s %8" PRId64 " %9s %10s  %s\n",
			t->id, t->adapter ? t->adapter : "-", task_state_to_string(t->state),
			tier ? tier : "-", t->attempts, tok,
			cost_report_money(&c, money, sizeof(money)), t->reason ? t->reason : "");
		free(tier);
	}
	(void)fprintf(ctx->out,
		      "total: %" PRId64 " tokens (%" PRId64 " in, %" PRId64 " out), cost %s\n",
		      cost_total_tokens(&total), total.input_tokens, total.output_tokens,
		      cost_report_money(&total, money, sizeof(money)));
	if (cost_report_budget(st, run->id, &b)) {
		cost_report_budget_line(ctx->out, &b, &total);
		(void)fputc('\n', ctx->out);
	}
}

int cmd_status(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	struct run_row run = RUN_ROW_INIT;
	struct task_row *tasks = NULL;
	size_t n = 0, i;
	char xbuf[64] = "";
	struct diag d;
	int c, r, code, exit_code;
	bool follow = false, plain = false;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fh", status_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case 'f':
			follow = true;
			break;
		case OPT_PLAIN:
			plain = true;
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		default:
			return cli_option_error(ctx, argv, status_options, "");
		}
	}
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	if (plain && !follow)
		return cli_usage_error(ctx, "--plain goes with -f");
	/* status -f is attach: one code path (cmd-attach.c) */
	if (follow)
		return follow_run(ctx, optind < argc ? argv[optind] : NULL, plain);
	code = session_open(&s, ctx, true, false, NULL);
	if (code) {
		session_release(&s);
		return code;
	}
	diag_clear(&d);
	run_row_init(&run);
	r = optind < argc ? state_run_get(s.st, argv[optind], &run, &d)
			  : state_run_latest(s.st, &run, &d);
	if (r == -ENOENT) {
		code = cli_error(ctx, BEXIT_USAGE, optind < argc ? "no run '%s'" : "no runs yet%s",
				 optind < argc ? argv[optind] : "");
		goto out;
	}
	if (r >= 0)
		r = state_tasks_get(s.st, run.id, &tasks, &n, &d);
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	{
		size_t counts[_TASK_STATE_MAX] = {0};

		for (i = 0; i < n; i++)
			if ((int)tasks[i].state >= 0 && tasks[i].state < _TASK_STATE_MAX)
				counts[tasks[i].state]++;
		/* what `run` or `resume` exited with, by their rule; none while it runs */
		exit_code = run.state == RUN_RUNNING ? -1 : run_report_exit(counts, false);
		/* as `run`: work left undone at the budget's cap is 7 */
		if (exit_code > 0 && run.state != RUN_DONE && budget_reached(s.st, run.id))
			exit_code = BEXIT_BUDGET;
	}
	if (ctx->json) {
		json_t *o = json_object(), *a = json_array();

		cli_jset(o, "run", cli_jstr(run.id));
		cli_jset(o, "exit_code", exit_code >= 0 ? json_integer(exit_code) : NULL);
		cli_jset(o, "name", cli_jstr(run.name));
		cli_jset(o, "state", cli_jstr(run_state_to_string(run.state)));
		cli_jset(o, "plan", cli_jstr(run.plan_path));
		cli_jset(o, "plan_hash", cli_jstr(run.plan_hash));
		cli_jset(o, "goal", run_goal(s.st, &run));
		cli_jset(o, "base_branch", cli_jstr(run.base_branch));
		cli_jset(o, "base_commit", cli_jstr(run.base_commit));
		cli_jset(o, "created_at", cli_jstr(run.created_at));
		cli_jset(o, "updated_at", cli_jstr(run.updated_at));
		for (i = 0; i < n; i++)
			(void)json_array_append_new(a, task_json(s.st, &tasks[i]));
		cli_jset(o, "tasks", a);
		{
			struct cost_total t;
			struct orch_budget b;

			if (cost_run_total(s.st, run.id, &t, NULL) == 0) {
				cli_jset(o, "usage", cost_total_json(&t));
				cli_jset(o, "budget",
					 cost_report_budget(s.st, run.id, &b)
						 ? cost_report_budget_json(&b, &t)
						 : NULL);
			}
		}
		code = cli_print_json(ctx, o);
		goto out;
	}
	if (exit_code >= 0)
		(void)snprintf(xbuf, sizeof(xbuf), ", exit %d (%s)", exit_code,
			       run_report_exit_words(exit_code));
	status_table(ctx, s.st, &run, xbuf, tasks, n);
	code = 0;
out:
	task_rows_free(tasks, n);
	run_row_release(&run);
	session_release(&s);
	return code;
}

/* ---- bernstein logs ---- */

static const struct option logs_options[] = {
	{"follow", no_argument, NULL, 'f'},
	{"run", required_argument, NULL, OPT_RUN},
	{"attempt", required_argument, NULL, OPT_ATTEMPT},
	{"events", no_argument, NULL, OPT_EVENTS},
	{"json", no_argument, NULL, OPT_JSON},
	{"raw", no_argument, NULL, OPT_RAW},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

/* Copy path from *off to its end onto out; 0 or -errno. */
static int copy_from(FILE *out, const char *path, off_t *off)
{
	char buf[65536];
	int fd = open_regular(path, O_RDONLY, 0); /* a FIFO there would hang */
	ssize_t n;

	if (fd < 0)
		return fd;
	if (lseek(fd, *off, SEEK_SET) < 0) {
		(void)close(fd);
		return -errno;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		(void)fwrite(buf, 1, (size_t)n, out);
		*off += n;
	}
	(void)close(fd);
	(void)fflush(out);
	return 0;
}

/* The next part of a log: agent.log and events.jsonl as they are, or
 * events.jsonl as readable lines (final: its last line even without a newline). */
static int logs_read(FILE *out, const char *path, off_t *off, bool readable, bool final)
{
	return readable ? logs_view_events(out, path, off, final) : copy_from(out, path, off);
}

int cmd_logs(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	struct run_row run = RUN_ROW_INIT;
	struct task_row t = TASK_ROW_INIT;
	const char *run_id = NULL, *task_id;
	bool follow = false;
	enum { LOGS_READABLE, LOGS_RAW, LOGS_JSON } mode = LOGS_READABLE;
	long attempt = 0;
	char *path = NULL;
	off_t off = 0;
	struct diag d;
	int c, r, code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fh", logs_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case 'f':
			follow = true;
			break;
		case OPT_RUN:
			run_id = optarg;
			break;
		case OPT_ATTEMPT: {
			char *end;

			errno = 0;
			attempt = strtol(optarg, &end, 10);
			if (errno || *end || attempt < 1)
				return cli_usage_error(ctx, "--attempt: '%s' is not a number >= 1",
						       optarg);
			break;
		}
		case OPT_EVENTS: /* the name before --json */
		case OPT_JSON:
			mode = LOGS_JSON;
			break;
		case OPT_RAW:
			mode = LOGS_RAW;
			break;
		default:
			return cli_option_error(ctx, argv, logs_options, "");
		}
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing the task id");
	task_id = argv[optind++];
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	code = session_open(&s, ctx, true, false, NULL);
	if (code) {
		session_release(&s);
		return code;
	}
	diag_clear(&d);
	run_row_init(&run);
	task_row_init(&t);
	r = run_id ? state_run_get(s.st, run_id, &run, &d) : state_run_latest(s.st, &run, &d);
	if (r == -ENOENT) {
		code = cli_error(ctx, BEXIT_USAGE, "no run '%s'", run_id ? run_id : "(none yet)");
		goto out;
	}
	if (r >= 0)
		r = state_task_get(s.st, run.id, task_id, &t, &d);
	if (r == -ENOENT) {
		code = cli_error(ctx, BEXIT_USAGE, "run '%s' has no task '%s'", run.id, task_id);
		goto out;
	}
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	if (!t.session || t.attempts < 1) {
		code = cli_error(ctx, BEXIT_FAILED, "task '%s' has not run yet (%s)", task_id,
				 task_state_to_string(t.state));
		goto out;
	}
	if (attempt == 0)
		attempt = (long)t.attempts;
	{
		struct sbuf sb = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&sb, "%s/%s/%s/%s/%ld/%s", s.repo, AGENTRUN_RUNS_DIR, run.id,
				t.session, attempt,
				mode == LOGS_RAW ? "agent.log" : "events.jsonl");
		path = sbuf_detach(&sb, NULL);
	}
	for (;;) {
		r = logs_read(ctx->out, path, &off, mode == LOGS_READABLE, !follow);
		if (r < 0 && r != -ENOENT) {
			code = cli_error(ctx, BEXIT_ENV, "cannot read '%s': %s", path,
					 file_strerror(r));
			goto out;
		}
		if (!follow)
			break;
		task_row_release(&t);
		task_row_init(&t);
		if (state_task_get(s.st, run.id, task_id, &t, NULL) < 0 ||
		    (t.state != TASK_RUNNING && t.state != TASK_PENDING) ||
		    t.attempts != (int64_t)attempt) {
			(void)logs_read(ctx->out, path, &off, mode == LOGS_READABLE, true);
			break;
		}
		{
			struct timespec ts = {.tv_sec = 0, .tv_nsec = LOG_FOLLOW_MS * 1000000L};

			(void)nanosleep(&ts, NULL);
		}
	}
	if (r == -ENOENT && !follow) {
		code = cli_error(ctx, BEXIT_FAILED, "no log at '%s'", path);
		goto out;
	}
	code = 0;
out:
	free(path);
	task_row_release(&t);
	run_row_release(&run);
	session_release(&s);
	return code;
}

/* ---- bernstein demo ---- */

static const char demo_plan[] =
	"# The demo plan of 'bernstein demo' (and 'make run'): three tasks on the\n"
	"# offline mock adapter. greeting and farewell run in parallel, each in its\n"
	"# own worktree; notes waits for both. See docs/plans.md and docs/mock.md.\n"
	"name: demo\n"
	"adapter: mock\n"
	"tasks:\n"
	"  - title: write the greeting\n"
	"    id: greeting\n"
	"    prompt: |\n"
	"      Write the greeting.\n"
	"      write greeting.txt Hello from bernstein\n"
	"      say wrote greeting.txt\n"
	"  - title: write the farewell\n"
	"    id: farewell\n"
	"    prompt: |\n"
	"      Write the farewell.\n"
	"      write farewell.txt Goodbye from bernstein\n"
	"      say wrote farewell.txt\n"
	"  - title: write the notes\n"
	"    id: notes\n"
	"    depends_on: [greeting, farewell]\n"
	"    gates: [{name: both-files, run: \"test -s greeting.txt && test -s farewell.txt\"}]\n"
	"    prompt: |\n"
	"      Both files are merged; describe them.\n"
	"      write NOTES.md greeting.txt and farewell.txt were written by two mock agents\n"
	"      commit add the notes\n";

/* demo --goal: the goal the mock planner gets. Its first line is the goal
 * a person would write; the mock agent carries out the instruction lines
 * below it (docs/mock.md), which write the plan file a real planner would
 * write: the demo plan's tasks, in flow style, without the gate (a
 * generated plan may hold no command: docs/goal-mode.md, "The policy"). */
static const char demo_goal[] =
	"Write a greeting and a farewell in two files, then notes about both.\n"
	"write bernstein-plan.yaml name: demo-goal\n"
	"append bernstein-plan.yaml adapter: mock\n"
	"append bernstein-plan.yaml tasks:\n"
	"append bernstein-plan.yaml - {id: greeting, title: write the greeting, prompt: \"Write the greeting.\\nwrite greeting.txt Hello from bernstein\\nsay wrote greeting.txt\\n\"}\n"
	"append bernstein-plan.yaml - {id: farewell, title: write the farewell, prompt: \"Write the farewell.\\nwrite farewell.txt Goodbye from bernstein\\nsay wrote farewell.txt\\n\"}\n"
	"append bernstein-plan.yaml - {id: notes, title: write the notes, depends_on: [greeting, farewell], files: [NOTES.md], prompt: \"Both files are merged; describe them.\\nwrite NOTES.md greeting.txt and farewell.txt were written by two mock agents\\ncommit add the notes\\n\"}\n";

static const char demo_readme[] =
	"# bernstein demo\n\nA scratch repository for 'bernstein demo'.\n";

static const struct option demo_options[] = {
	{"json", no_argument, NULL, OPT_JSON},
	{"goal", no_argument, NULL, OPT_GOAL},
	{"parallel", required_argument, NULL, OPT_PARALLEL},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int demo_git(struct cli_ctx *ctx, const char *dir, const char *const *args)
{
	struct strvec base = STRVEC_INIT, argv = STRVEC_INIT, env = STRVEC_INIT, full = STRVEC_INIT;
	struct probe pr = {0};
	struct probe_opts o = {0};
	const char *v;
	int r;

	strvec_push(&full, "-c");
	strvec_push(&full, "user.name=" IDENTITY_NAME);
	strvec_push(&full, "-c");
	strvec_push(&full, "user.email=" IDENTITY_EMAIL);
	strvec_pushv(&full, args);
	if ((v = cli_getenv(ctx, "PATH")) != NULL)
		strvec_pushf(&base, "PATH=%s", v);
	if ((v = cli_getenv(ctx, "HOME")) != NULL)
		strvec_pushf(&base, "HOME=%s", v);
	if (git_prepare(dir, (const char *const *)base.v, GIT_HARDEN_WRITE,
			(const char *const *)full.v, &argv, &env) < 0) {
		r = cli_error(ctx, BEXIT_ENV, "git not found on PATH");
		goto out;
	}
	pr.binary = argv.v[0];
	pr.args = (const char **)argv.v + 1;
	o.env = env.v;
	o.timeout_ms = GIT_INIT_TIMEOUT;
	o.max_output = 1u << 20;
	o.max_parallel = 1;
	r = probe_run(&pr, 1, &o);
	if (r < 0 || pr.status != PROBE_OK)
		r = cli_error(ctx, BEXIT_ENV, "git %s in '%s' failed%s%.*s", args[0], dir,
			      pr.output_len ? ": " : "",
			      (int)(pr.output_len > 400 ? 400 : pr.output_len),
			      pr.output ? pr.output : "");
	else
		r = 0;
out:
	probe_release(&pr);
	strvec_clear(&base);
	strvec_clear(&argv);
	strvec_clear(&env);
	strvec_clear(&full);
	return r;
}

static bool dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	if (!d)
		return false;
	while (empty && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = false;
	(void)closedir(d);
	return empty;
}

static void demo_problem(void *userdata, const char *file, unsigned line, const char *msg)
{
	struct cli_ctx *ctx = userdata;

	(void)fprintf(ctx->err, "%s: %s:%u: %s\n", ctx->progname, file, line, msg);
}

/* After the demo's run (run_code its exit code): verify its audit chain.
 * "verified" is printed only for a demo that worked and a chain without a
 * problem; a failed run is reported as such (its chain still checked). */
static int demo_verify(struct cli_ctx *ctx, const char *dir, const char *keyfile, int run_code)
{
	struct audit_verify_stats vs = {0};
	char *key = NULL, *auditdir = agentrun_path(dir, AUDIT_DIR);
	size_t keylen = 0;
	struct diag d;
	int r, code;

	diag_clear(&d);
	r = audit_key_load(keyfile, false, &key, &keylen, NULL, &d);
	if (r == -ENOENT && run_code) {
		/* the run stopped before its first record (its error was
		 * printed): nothing to verify */
		code = run_code;
		goto out;
	}
	if (r >= 0)
		r = audit_verify(auditdir, key, keylen, demo_problem, ctx, &vs, &d);
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_AUDIT, &d);
	} else if (vs.problems) {
		code = cli_error(ctx, BEXIT_AUDIT, "the audit chain has %" PRIu64 " problem(s)",
				 vs.problems);
	} else if (run_code) {
		code = cli_error(
			ctx, run_code,
			"the demo failed (exit %d): see 'bernstein -C %s status'; its audit chain (%" PRIu64
			" records) has no problem",
			run_code, dir, vs.records);
	} else if (!ctx->json) {
		code = 0;
		(void)fprintf(ctx->out,
			      "audit chain: %" PRIu64 " records, verified (%s)\n"
			      "look at:     git -C %s log --graph --oneline\n"
			      "             bernstein -C %s status\n",
			      vs.records, auditdir, dir, dir);
	} else {
		json_t *o = json_object();

		code = 0;
		cli_jset(o, "type", cli_jstr("demo"));
		cli_jset(o, "dir", cli_jstr(dir));
		cli_jset(o, "audit_records", json_integer((json_int_t)vs.records));
		cli_jset(o, "audit_verified", json_true());
		print_json_line(ctx, o);
	}
out:
	key = audit_key_free(key, keylen);
	free(auditdir);
	return code;
}

/* The demo's scratch repository in dir: README.md, .gitignore and (but for
 * --goal, where the planner writes it) the demo plan, committed. */
static int demo_repo(struct cli_ctx *ctx, const char *dir, bool goal)
{
	static const char *const init[] = {"init", "-q", "-b", "main", NULL};
	static const char *const add[] = {"add", "-A", NULL};
	static const char *const commit[] = {"commit", "-q", "-m", "demo: initial commit", NULL};
	static const char gi[] = ".bernstein/\n";
	char *p;
	int r, code;

	p = agentrun_path(dir, "README.md");
	r = atomic_write_file(p, demo_readme, strlen(demo_readme), 0644);
	free(p);
	if (r >= 0) {
		p = agentrun_path(dir, ".gitignore");
		r = atomic_write_file(p, gi, strlen(gi), 0644);
		free(p);
	}
	if (r >= 0 && !goal) {
		p = agentrun_path(dir, DEMO_PLAN_NAME);
		r = atomic_write_file(p, demo_plan, strlen(demo_plan), 0644);
		free(p);
	}
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot write into '%s': %s", dir, strerror(-r));
	code = demo_git(ctx, dir, init);
	if (!code)
		code = demo_git(ctx, dir, add);
	if (!code)
		code = demo_git(ctx, dir, commit);
	return code;
}

/* The demo's directory: DIR (created, must be empty) or a new one under
 * TMPDIR, resolved into dir. */
static int demo_dir(struct cli_ctx *ctx, const char *arg, char dir[PATH_MAX])
{
	char real[PATH_MAX];
	const char *tmp;
	int r;

	if (arg) {
		(void)snprintf(dir, PATH_MAX, "%s", arg);
		r = mkdir_p(dir, 0755);
		if (r < 0)
			return cli_error(ctx, BEXIT_ENV, "cannot create '%s': %s", dir,
					 strerror(-r));
		if (!dir_is_empty(dir))
			return cli_error(ctx, BEXIT_USAGE,
					 "'%s' is not empty; the demo needs a new directory", dir);
	} else {
		tmp = cli_getenv(ctx, "TMPDIR");
		(void)snprintf(dir, PATH_MAX, "%s/bernstein-demo.XXXXXX",
			       tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			return cli_error(ctx, BEXIT_ENV, "cannot create a scratch directory: %s",
					 strerror(errno));
	}
	if (!realpath(dir, real))
		return cli_error(ctx, BEXIT_ENV, "cannot resolve '%s': %s", dir, strerror(errno));
	memcpy(dir, real, PATH_MAX);
	return 0;
}

/* demo --goal: the mock agent plans (docs/goal-mode.md); 0 with the
 * generated plan's path and hash, else the exit code. */
static int demo_goal_plan(struct cli_ctx *ctx, const char *keyfile, char **ret_plan, char *hash)
{
	struct goal_opts go;
	int code;

	goal_opts_init(&go);
	go.goal = demo_goal;
	go.planner = "mock";
	go.key_file = keyfile;
	go.quiet = ctx->json;
	if (!ctx->json)
		(void)fprintf(
			ctx->out,
			"goal:   %.*s\n"
			"        (the mock planner carries out the instruction lines under it,\n"
			"         writing the plan a real planner would write: docs/goal-mode.md)\n",
			(int)strcspn(demo_goal, "\n"), demo_goal);
	(void)fflush(ctx->out);
	code = goal_generate(ctx, &go, ret_plan, hash, NULL);
	goal_opts_release(&go);
	return code;
}

int cmd_demo(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s = {0};
	char dir[PATH_MAX], keyfile[PATH_MAX + 32], *plan = NULL, hash[SHA256_HEX_LEN + 1] = "";
	unsigned parallel = 0;
	bool goal = false;
	int c, code, run_code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", demo_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_JSON:
			ctx->json = true;
			break;
		case OPT_GOAL:
			goal = true;
			break;
		case OPT_PARALLEL:
			code = parse_parallel(ctx, optarg, &parallel);
			if (code)
				return code;
			break;
		default:
			return cli_option_error(ctx, argv, demo_options, "");
		}
	}
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	code = demo_dir(ctx, optind < argc ? argv[optind] : NULL, dir);
	if (!code)
		code = demo_repo(ctx, dir, goal);
	if (code)
		return code;
	if (chdir(dir) < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot change to '%s': %s", dir, strerror(errno));
	if (!ctx->json)
		(void)fprintf(ctx->out, "demo repository: %s\n", dir);
	/* the demo's own audit key: the user's is not touched */
	(void)snprintf(keyfile, sizeof(keyfile), "%s/.bernstein/audit.key", dir);
	if (goal) {
		code = demo_goal_plan(ctx, keyfile, &plan, hash);
		if (code)
			return code;
	}
	code = session_open(&s, ctx, false, true, keyfile);
	if (code) {
		session_release(&s);
		free(plan);
		return code;
	}
	hooks_attach(&s);
	run_code = run_plan_file(&s, plan ? plan : DEMO_PLAN_NAME, parallel, plan ? hash : NULL);
	s.chain = audit_close(s.chain);
	code = demo_verify(ctx, dir, keyfile, run_code);
	session_release(&s);
	free(plan);
	return code;
}

/* ---- the texts of the command table (commands.c) ---- */

const char cmd_demo_summary[] = "run the demo plan in a scratch repository, offline";
const char cmd_demo_usage[] = "[DIR] [--goal] [--parallel N] [--json]";
const char cmd_demo_help[] =
	"Creates a scratch git repository (DIR, or a new directory under $TMPDIR), runs\n"
	"a demo plan of three tasks on the offline mock adapter (two in parallel, one\n"
	"after both, with a gate), merges them, verifies the audit chain and prints where\n"
	"to look. Uses its own audit key inside DIR. 'make run' runs it.\n"
	"\n"
	"options:\n"
	"  --goal        goal mode, offline: the mock agent is the planner and writes\n"
	"                the plan from a goal (as 'bernstein run --goal' would with a\n"
	"                real agent: checked, recorded as plan.generated), then it runs\n"
	"                (docs/goal-mode.md)\n"
	"  --parallel N  agents at once\n"
	"  --json        JSON lines\n"
	"\n"
	"Exit codes as 'bernstein run' (a failed run is reported as such, never as\n"
	"verified), and 5 when the audit chain does not verify.\n";

const char cmd_logs_summary[] = "print what a task's agent did";
const char cmd_logs_usage[] = "TASK [-f] [--run RUN] [--attempt N] [--raw | --json]";
const char cmd_logs_help[] =
	"Prints what the agent of the task's latest attempt in the latest run (or RUN)\n"
	"did, as its normalized events, one line each: the time, the kind and the text\n"
	"(a tool call with its arguments, a tool result with ok, error or denied, an\n"
	"error with its HTTP status). Secrets are redacted.\n"
	"\n"
	"options:\n"
	"  -f, --follow      keep printing while the attempt runs\n"
	"  --run RUN         a run other than the latest\n"
	"  --attempt N       an earlier attempt\n"
	"  --raw             the agent's own output as it printed it (agent.log)\n"
	"  --json            the normalized events as JSON lines (events.jsonl; also\n"
	"                    --events)\n"
	"\n"
	"Exit: 0, 1 the task has no log yet, 2 usage or unknown run/task, 4 I/O.\n";

const char cmd_resume_summary[] = "finish an interrupted run";
const char cmd_resume_usage[] =
	"[RUN|TASK] [--detach | --dry-run] [--json] [--parallel N] [--max-cost-usd N]";
const char cmd_resume_help[] =
	"Resumes the latest run (or RUN, or only TASK of the latest run): every task\n"
	"that was interrupted (bernstein killed, timeout, rate limit) continues. When\n"
	"its adapter resumes natively, the agent's recorded session goes on in the same\n"
	"worktree and agent HOME; otherwise a fresh session starts with the recovered\n"
	"context (what the previous attempt did, the files it changed, its final\n"
	"message) in front of the prompt. A merge that was under way is finished once,\n"
	"never twice. Tasks that never started run as planned. See docs/runs.md.\n"
	"\n"
	"Before anything runs, what a killed bernstein left in git is repaired: stale\n"
	"lock files of its git, half-made worktrees, a merge stopped half way (the\n"
	"checkout put back, then the merge made again). A lock file it cannot prove\n"
	"stale is never removed: resume stops with exit 4 naming it.\n"
	"\n"
	"options:\n"
	"  --detach        in the background, as 'bernstein run --detach'\n"
	"  --dry-run       show what would be resumed and how; change nothing\n"
	"  --json          JSON lines\n"
	"  --parallel N    agents at once (default: the run's)\n"
	"  --max-cost-usd N  the run's budget cap in USD from now on (recorded with the\n"
	"                  run); what it spent before counts (docs/runs.md, \"Budgets\")\n"
	"\n"
	"Exit (as 'bernstein run', for the tasks resumed): 0 every one done (or\n"
	"no_changes), 1 a task failed, conflicted, was blocked or is unfinished (a\n"
	"merge postponed), 2 nothing to resume (or no such run or task), 3 state\n"
	"unreadable, 4 environment (another bernstein holds the run lock, a lock file\n"
	"that is not bernstein's, I/O), 5 the audit chain is broken, 6 tasks refused\n"
	"by routing and nothing else went wrong, 7 the budget is (still) reached,\n"
	"130 interrupted.\n";

const char cmd_run_summary[] = "run a plan of tasks on agents in parallel worktrees";
const char cmd_run_usage[] =
	"PLAN [--detach] [--serve[=ADDR]] [--parallel N] [--max-cost-usd N] [--json]\n"
	"       --goal GOAL [--yes] [--planner ADAPTER] [--planner-model M] [--rounds N]\n"
	"       [--allow CLASS]... [--set KEY=VALUE]... [--planner-timeout S]\n"
	"       [--planner-sandbox landlock|none] [options]";
const char cmd_run_help[] =
	"Runs the tasks of PLAN (plan.yaml; see docs/plans.md) in this repository: each\n"
	"task is routed to an adapter by its capability requirements (a refusal is\n"
	"recorded with its receipt), runs headless in its own worktree\n"
	"(.bernstein/worktrees/SESSION, branch bernstein/SESSION), is checked by its\n"
	"gates and merged (--no-ff) into the checked-out branch (with merge: review in\n"
	"bernstein.yaml it waits for 'bernstein approve'; with merge: pr its branch is\n"
	"pushed and a pull request opened). State is kept in\n"
	".bernstein/state.db, logs in .bernstein/runs/RUN/, every decision in the\n"
	"audit chain. On a terminal a live table shows the tasks; otherwise one line\n"
	"per change, or JSON lines with --json. Settings come from bernstein.yaml\n"
	"(docs/configuration.md). The checkout must have no uncommitted changes to\n"
	"tracked files.\n"
	"\n"
	"options:\n"
	"  --detach         run in the background (a session of its own, output in\n"
	"                   .bernstein/runs/RUN/run.log); prints the run and returns\n"
	"                   once it has started ('bernstein attach' follows it; with\n"
	"                   --json: {\"run\", \"pid\", \"log\"}); an error before that is\n"
	"                   reported here with its exit code\n"
	"  --serve[=ADDR:PORT]\n"
	"                   the HTTP API and dashboard beside the run ('bernstein\n"
	"                   serve', default 127.0.0.1:8052; docs/api.md); it prints\n"
	"                   its URL with the token and stops when the run does\n"
	"  --parallel N     agents at once (default: bernstein.yaml's parallel, 4)\n"
	"  --max-cost-usd N the budget's cost cap in USD (over budget.max_cost_usd of\n"
	"                   the plan and bernstein.yaml): at the cap no new attempt\n"
	"                   starts (docs/runs.md, \"Budgets\"); 'bernstein cost' shows it\n"
	"  --json           JSON lines: {\"type\": \"task\"|\"event\"|\"warning\"|\"run\", ...}\n"
	"  --key-file FILE  the audit key (default: see 'bernstein audit key')\n"
	"\n"
	"goal mode (docs/goal-mode.md): instead of PLAN, --goal GOAL has a planner agent\n"
	"write the plan first, exactly as 'bernstein plan generate' does (the same\n"
	"checks and policy, drafts under .bernstein/plans/), shows it and asks before\n"
	"running it; without a terminal --yes is required. --yes confirms the plan but\n"
	"never lets a gate, hook, setup command or weaker sandbox of the planner's\n"
	"through: only --allow CLASS does, and each such command is shown verbatim.\n"
	"  --goal GOAL          the goal to plan and run\n"
	"  --yes                run the generated plan without asking\n"
	"  --planner ADAPTER    the planner's adapter (default: bernstein.yaml's adapter)\n"
	"  --planner-model M    the planner's model\n"
	"  --rounds N           drafts asked for at most (default 3)\n"
	"  --allow CLASS        gates, setup, sandbox, endpoints or budget (see\n"
	"                       'bernstein plan generate -h')\n"
	"  --set KEY=VALUE      the planner's sampling/endpoint slots (base_url=URL, ...)\n"
	"  --planner-timeout S  the limit of each planner session (default 1800)\n"
	"  --planner-sandbox landlock|none  the planner confined by Landlock (default\n"
	"                       where the kernel has it) or not ('plan generate -h')\n"
	"\n"
	"Exit: 0 every task done (or no_changes), 1 a task failed, conflicted, was\n"
	"blocked or is unfinished (a merge postponed), 2 usage, 3 invalid plan or\n"
	"bernstein.yaml, 4 environment (not a git repository, uncommitted changes,\n"
	"another run active, a lock file of another git, I/O), 5 audit chain broken,\n"
	"6 tasks refused by routing (and nothing else went wrong), 7 the budget's cap\n"
	"was reached with work left ('bernstein resume --max-cost-usd N' goes on), 130\n"
	"interrupted ('bernstein resume' goes on). --goal: 3 no valid plan after N\n"
	"rounds, 1 the plan was not confirmed.\n";

const char cmd_status_summary[] = "show a run's tasks and their states";
const char cmd_status_usage[] = "[RUN] [-f [--plain]] [--json]";
const char cmd_status_help[] =
	"Shows the latest run (or RUN) from .bernstein/state.db: each task's adapter,\n"
	"state, attempts and the reason of its last change: for an agent that failed,\n"
	"what it said went wrong; for a failed gate, the path of its log; the tokens\n"
	"and cost of its attempts, the run's total and its budget ('bernstein cost'\n"
	"breaks them down). --json adds agent_error, gate_log and usage to each task,\n"
	"usage and budget to the run; for a plan a planner generated (goal mode), the\n"
	"goal and the planner (goal in --json). The first line gives the exit code\n"
	"'bernstein run' gives for the run's tasks as they are (exit_code in --json;\n"
	"none while the run is going). Works while a run is going.\n"
	"\n"
	"options:\n"
	"  -f, --follow   follow the run to its end: the same as 'bernstein attach'\n"
	"                 (its output and exit codes; --plain: lines on a terminal)\n"
	"  --json         one object (with -f: JSON lines)\n"
	"\n"
	"Exit: 0, 2 no such run (or none yet), 3 state unreadable, 4 I/O.\n";
