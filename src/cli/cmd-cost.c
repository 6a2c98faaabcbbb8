/* bernstein cost: the tokens and cost of a run's attempts, per task,
 * adapter, model or role, and the run's budget (docs/runs.md, "Cost"). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/cost-report.h"
#include "cli/exit.h"
#include "cli/output.h"
#include "cli/run-session.h"
#include "util/xalloc.h"

enum cost_by {
	COST_BY_TASK,
	COST_BY_ADAPTER,
	COST_BY_MODEL,
	COST_BY_ROLE,
	_COST_BY_MAX,
};

static const char *const by_names[_COST_BY_MAX] = {"task", "adapter", "model", "role"};

/* ---- shared with status and run ---- */

const char *cost_report_money(const struct cost_total *t, char *buf, size_t size)
{
	if (!t->any_usage)
		(void)snprintf(buf, size, "-");
	else if (!t->cost_known)
		(void)snprintf(buf, size, "?");
	else
		(void)snprintf(buf, size, "$%.4f%s", t->cost_usd, t->cost_unknown ? "+?" : "");
	return buf;
}

void cost_report_task(struct state *st, const struct task_row *t, struct cost_total *ret)
{
	struct attempt_row *v = NULL;
	size_t n = 0, i;

	memset(ret, 0, sizeof(*ret));
	if (state_attempts_get(st, t->run_id, t->id, &v, &n, NULL) < 0)
		return;
	for (i = 0; i < n; i++)
		cost_total_add(ret, &v[i]);
	attempt_rows_free(v, n);
}

bool cost_report_budget(struct state *st, const char *run_id, struct orch_budget *ret)
{
	char *text = NULL;
	json_t *o;
	bool ok;

	if (state_run_get_budget(st, run_id, &text, NULL) < 0 || !text)
		return false;
	o = json_loads(text, 0, NULL);
	ok = orch_budget_from_json(o, ret) == 0 && orch_budget_active(ret);
	json_decref(o);
	free(text);
	return ok;
}

bool cost_report_budget_reached(const struct orch_budget *b, const struct cost_total *t)
{
	return (b->max_cost_usd > 0 && t->cost_usd >= b->max_cost_usd) ||
	       (b->max_tokens > 0 && cost_total_tokens(t) >= b->max_tokens);
}

void cost_report_budget_line(FILE *f, const struct orch_budget *b, const struct cost_total *t)
{
	(void)fprintf(f, "budget:");
	if (b->max_cost_usd > 0)
		(void)fprintf(f, " $%.4f of $%.4f (%.0f%%)", t->cost_usd, b->max_cost_usd,
			      100.0 * t->cost_usd / b->max_cost_usd);
	if (b->max_tokens > 0)
		(void)fprintf(f, "%s %" PRId64 " of %" PRId64 " tokens (%.0f%%)",
			      b->max_cost_usd > 0 ? "," : "", cost_total_tokens(t), b->max_tokens,
			      100.0 * (double)cost_total_tokens(t) / (double)b->max_tokens);
	(void)fprintf(f, "; warn_at %g, on_exceed %s%s", b->warn_at,
		      budget_on_exceed_to_string(b->on_exceed),
		      cost_report_budget_reached(b, t) ? "; the cap is reached" : "");
}

json_t *cost_report_budget_json(const struct orch_budget *b, const struct cost_total *t)
{
	json_t *o = orch_budget_json(b);

	cli_jset(o, "spent_usd", json_real(t->cost_usd));
	cli_jset(o, "tokens", json_integer(cost_total_tokens(t)));
	cli_jset(o, "exceeded", json_boolean(cost_report_budget_reached(b, t)));
	return o;
}

/* ---- bernstein cost ---- */

struct group {
	char *key; /* NULL: unknown (no model, no role) */
	struct cost_total t;
};

struct groups {
	struct group *v;
	size_t n;
};

static struct cost_total *group_for(struct groups *g, const char *key)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		if ((!key && !g->v[i].key) || (key && g->v[i].key && strcmp(key, g->v[i].key) == 0))
			return &g->v[i].t;
	g->v = xrealloc(g->v, (g->n + 1) * sizeof(*g->v));
	memset(&g->v[g->n], 0, sizeof(g->v[g->n]));
	g->v[g->n].key = key ? xstrdup(key) : NULL;
	return &g->v[g->n++].t;
}

static void groups_release(struct groups *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		free(g->v[i].key);
	free(g->v);
}

/* Agent-controlled text (a model name) for a terminal: control bytes as '?'. */
static const char *printable(const char *s, char *buf, size_t size)
{
	size_t i;

	if (!s)
		return "-";
	(void)snprintf(buf, size, "%s", s);
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return buf;
}

static json_t *group_json(const char *key_name, const char *key, const struct cost_total *t)
{
	json_t *o = cost_total_json(t);

	cli_jset(o, key_name, cli_jstr(key));
	return o;
}

static void text_row(FILE *f, const char *key, const struct cost_total *t)
{
	char k[128], money[48];

	(void)fprintf(f, "%-28.28s %8zu %10" PRId64 " %10" PRId64 " %10" PRId64 " %12s\n",
		      printable(key, k, sizeof(k)), t->attempts, t->input_tokens, t->output_tokens,
		      t->cached_tokens, cost_report_money(t, money, sizeof(money)));
}

static const struct option cost_options[] = {
	{"by", required_argument, NULL, 'b'},
	{"json", no_argument, NULL, 'j'},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static const char *const by_heads[_COST_BY_MAX] = {"TASK", "ADAPTER", "MODEL", "ROLE"};

/* What `cost` shows of one run. */
struct report {
	enum cost_by by;
	struct groups g;
	struct cost_total total;
	struct orch_budget budget;
	bool has_budget;
};

static const char *group_key(enum cost_by by, const struct task_row *t, const struct attempt_row *a)
{
	switch (by) {
	case COST_BY_TASK:
		return t->id;
	case COST_BY_ROLE:
		return t->role;
	case COST_BY_MODEL:
		return a->model;
	case COST_BY_ADAPTER:
	case _COST_BY_MAX:
	default:
		return a->adapter;
	}
}

/* Every attempt of every task of run into rp's groups and total. */
static int collect(struct state *st, const char *run, struct report *rp, struct diag *reterr)
{
	struct task_row *tasks = NULL;
	size_t n = 0, i, j;
	int r;

	r = state_tasks_get(st, run, &tasks, &n, reterr);
	for (i = 0; r >= 0 && i < n; i++) {
		struct attempt_row *v = NULL;
		size_t m = 0;

		r = state_attempts_get(st, run, tasks[i].id, &v, &m, reterr);
		if (rp->by == COST_BY_TASK ||
		    rp->by == COST_BY_ROLE) /* every one, even unstarted */
			(void)group_for(&rp->g,
					rp->by == COST_BY_TASK ? tasks[i].id : tasks[i].role);
		for (j = 0; r >= 0 && j < m; j++) {
			cost_total_add(group_for(&rp->g, group_key(rp->by, &tasks[i], &v[j])),
				       &v[j]);
			cost_total_add(&rp->total, &v[j]);
		}
		attempt_rows_free(v, m);
	}
	task_rows_free(tasks, n);
	rp->has_budget = r >= 0 && cost_report_budget(st, run, &rp->budget);
	return r;
}

static int print_json(struct cli_ctx *ctx, const struct run_row *run, const struct report *rp)
{
	json_t *o = json_object(), *a = json_array();
	size_t i;

	cli_jset(o, "run", cli_jstr(run->id));
	cli_jset(o, "name", cli_jstr(run->name));
	cli_jset(o, "state", cli_jstr(run_state_to_string(run->state)));
	cli_jset(o, "by", cli_jstr(by_names[rp->by]));
	for (i = 0; i < rp->g.n; i++)
		(void)json_array_append_new(
			a, group_json(by_names[rp->by], rp->g.v[i].key, &rp->g.v[i].t));
	cli_jset(o, "groups", a);
	cli_jset(o, "total", cost_total_json(&rp->total));
	cli_jset(o, "budget",
		 rp->has_budget ? cost_report_budget_json(&rp->budget, &rp->total) : NULL);
	return cli_print_json(ctx, o);
}

static void print_text(struct cli_ctx *ctx, const struct run_row *run, const struct report *rp)
{
	const struct cost_total *t = &rp->total;
	char money[48];
	size_t i;

	(void)fprintf(ctx->out,
		      "run %s (%s): %s, %" PRId64 " tokens (%" PRId64 " in, %" PRId64
		      " out, %" PRId64 " cached), cost %s\n",
		      run->id, run->name ? run->name : "-", run_state_to_string(run->state),
		      cost_total_tokens(t), t->input_tokens, t->output_tokens, t->cached_tokens,
		      cost_report_money(t, money, sizeof(money)));
	if (t->cost_unknown)
		(void)fprintf(
			ctx->out,
			"  %zu attempt%s of unknown cost: the agent reported none and its model has no price (catalog/pricing.yaml)\n",
			t->cost_unknown, t->cost_unknown == 1 ? "" : "s");
	if (rp->has_budget) {
		cost_report_budget_line(ctx->out, &rp->budget, t);
		(void)fputc('\n', ctx->out);
	}
	(void)fprintf(ctx->out, "%-28s %8s %10s %10s %10s %12s\n", by_heads[rp->by], "ATTEMPTS",
		      "INPUT", "OUTPUT", "CACHED", "COST");
	for (i = 0; i < rp->g.n; i++)
		text_row(ctx->out, rp->g.v[i].key, &rp->g.v[i].t);
	text_row(ctx->out, "TOTAL", t);
}

static int parse_by(struct cli_ctx *ctx, const char *s, enum cost_by *ret)
{
	int i;

	for (i = 0; i < _COST_BY_MAX; i++)
		if (strcmp(by_names[i], s) == 0) {
			*ret = (enum cost_by)i;
			return 0;
		}
	return cli_usage_error(ctx, "--by: '%s' is not one of task, adapter, model, role", s);
}

int cmd_cost(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	struct run_row run = RUN_ROW_INIT;
	struct report rp;
	struct diag d;
	int c, r, code;

	memset(&rp, 0, sizeof(rp));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", cost_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case 'b':
			code = parse_by(ctx, optarg, &rp.by);
			if (code)
				return code;
			break;
		case 'j':
			ctx->json = true;
			break;
		default:
			return cli_option_error(ctx, argv, cost_options, "");
		}
	}
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	code = session_open(&s, ctx, true, false, NULL);
	if (code) {
		session_release(&s);
		return code;
	}
	diag_clear(&d);
	r = optind < argc ? state_run_get(s.st, argv[optind], &run, &d)
			  : state_run_latest(s.st, &run, &d);
	if (r == -ENOENT) {
		code = cli_error(ctx, BEXIT_USAGE, optind < argc ? "no run '%s'" : "no runs yet%s",
				 optind < argc ? argv[optind] : "");
		goto out;
	}
	if (r >= 0)
		r = collect(s.st, run.id, &rp, &d);
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		goto out;
	}
	code = 0;
	if (ctx->json)
		code = print_json(ctx, &run, &rp);
	else
		print_text(ctx, &run, &rp);
out:
	groups_release(&rp.g);
	run_row_release(&run);
	session_release(&s);
	return code;
}

const char cmd_cost_summary[] = "show the tokens and cost of a run, and its budget";
const char cmd_cost_usage[] = "[RUN] [--by task|adapter|model|role] [--json]";
const char cmd_cost_help[] =
	"Shows the tokens and cost of every attempt of the latest run (or RUN), added\n"
	"up per task (default), adapter, model or role, with the run's total and its\n"
	"budget. An attempt's cost is the one its agent reported (claude, opencode and\n"
	"pi report one), else its tokens at the prices of catalog/pricing.yaml for its\n"
	"model (overridable: docs/configuration.md, \"Pricing\"); an attempt whose model\n"
	"has no price has an unknown cost: '?' here, null in --json, never 0.\n"
	"Works while a run is going (ended attempts). See docs/runs.md, \"Cost\".\n"
	"\n"
	"options:\n"
	"  --by KEY   task (default), adapter, model or role\n"
	"  --json     {\"run\", \"by\", \"groups\": [{KEY, \"attempts\", \"input_tokens\",\n"
	"             \"output_tokens\", \"cached_tokens\", \"tokens\", \"cost_usd\",\n"
	"             \"cost_unknown_attempts\"}], \"total\": {...}, \"budget\": {...}|null}\n"
	"\n"
	"Exit: 0, 2 usage or no such run (or none yet), 3 state unreadable, 4 I/O.\n";
