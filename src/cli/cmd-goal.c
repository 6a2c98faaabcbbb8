/* bernstein plan generate GOAL: a planner agent writes a plan, bernstein
 * checks it (the plan loader, dispatch's static gates and goal mode's
 * policy) and asks again with the exact problems, up to N rounds
 * (docs/goal-mode.md).
 *
 * The planner is one agent session run exactly as `bernstein spawn` runs
 * one (this binary's spawn command: the supervisor, the adapter's profile,
 * its dialect, its private HOME, resume), in a scratch clone of the
 * repository at HEAD (.bernstein/plans/GEN/view): what it changes there is
 * never merged; only the plan file it writes is read. Every draft is kept
 * as .bernstein/plans/GEN/draft-N.yaml. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/profile.h"
#include "adapter/strategy.h"
#include "adapter/usable.h"
#include "audit/audit.h"
#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/catalog-paths.h"
#include "cli/goal-gen.h"
#include "cli/output.h"
#include "cli/plan-gates.h"
#include "cli/repo-config.h"
#include "cli/run-session.h"
#include "orch/agentrun.h"
#include "orch/config.h"
#include "orch/confine.h"
#include "orch/goal.h"
#include "orch/plan.h"
#include "orch/state.h"
#include "orch/worktree.h"
#include "proc/capture.h"
#include "proc/landlock.h"
#include "route/requirements.h"
#include "route/select.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/randid.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define GEN_DIR		  ".bernstein/plans"
#define PLANNER_OUT_MAX	  ((size_t)64 << 20)
#define PLANNER_ERR_MAX	  ((size_t)64 << 10)
#define PLANNER_TIMEOUT_S 1800.0
#define PROBLEMS_MAX	  ((size_t)64 << 10)
#define ALLOWED_KEYS_VAR  "BERNSTEIN_ALLOWED_API_KEY_ENVS"

static const struct option gen_options[] = {
	{"output", required_argument, NULL, 'o'},
	{"planner", required_argument, NULL, GOAL_OPT_PLANNER},
	{"model", required_argument, NULL, 'm'},
	{"rounds", required_argument, NULL, GOAL_OPT_ROUNDS},
	{"allow", required_argument, NULL, GOAL_OPT_ALLOW},
	{"set", required_argument, NULL, GOAL_OPT_SET},
	{"timeout", required_argument, NULL, GOAL_OPT_PLANNER_TIMEOUT},
	{"planner-sandbox", required_argument, NULL, GOAL_OPT_PLANNER_SANDBOX},
	{"json", no_argument, NULL, 'j'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

void goal_opts_init(struct goal_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rounds = GOAL_ROUNDS_DEFAULT;
	o->sets = (struct strvec)STRVEC_INIT;
	o->timeout_s = PLANNER_TIMEOUT_S;
	o->sandbox = GOAL_SANDBOX_AUTO;
}

void goal_opts_release(struct goal_opts *o)
{
	strvec_clear(&o->sets);
}

int goal_opt(struct cli_ctx *ctx, int c, const char *arg, struct goal_opts *o)
{
	struct diag d;
	char *end;

	switch (c) {
	case GOAL_OPT_PLANNER:
		o->planner = arg;
		return -1;
	case GOAL_OPT_PLANNER_MODEL:
		o->model = arg;
		return -1;
	case GOAL_OPT_ROUNDS: {
		unsigned long v = strtoul(arg, &end, 10);

		if (*end || end == arg || v < 1 || v > GOAL_ROUNDS_MAX)
			return cli_usage_error(ctx, "--rounds must be 1..%d, not '%s'",
					       GOAL_ROUNDS_MAX, arg);
		o->rounds = (unsigned)v;
		return -1;
	}
	case GOAL_OPT_ALLOW:
		diag_clear(&d);
		if (goal_allow_parse(arg, &o->allow, &d) < 0)
			return cli_usage_error(ctx, "--allow: %s", d.msg);
		return -1;
	case GOAL_OPT_SET:
		strvec_push(&o->sets, arg);
		return -1;
	case GOAL_OPT_PLANNER_TIMEOUT:
		o->timeout_s = strtod(arg, &end);
		if (*end || end == arg || !(o->timeout_s > 0) || o->timeout_s > 86400)
			return cli_usage_error(
				ctx, "the planner's timeout must be 0 < S <= 86400, not '%s'", arg);
		return -1;
	case GOAL_OPT_PLANNER_SANDBOX:
		if (strcmp(arg, "landlock") == 0)
			o->sandbox = GOAL_SANDBOX_LANDLOCK;
		else if (strcmp(arg, "none") == 0)
			o->sandbox = GOAL_SANDBOX_NONE;
		else
			return cli_usage_error(
				ctx,
				"the planner's sandbox must be landlock or none, not '%s' (docs/goal-mode.md, \"Its view\")",
				arg);
		return -1;
	default:
		return cli_usage_error(ctx, "bad option");
	}
}

static int parse_args(int argc, char **argv, struct cli_ctx *ctx, struct goal_opts *o)
{
	int c, code;

	optind = 0;
	while ((c = getopt_long(argc, argv, "o:m:h", gen_options, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'm':
			o->model = optarg;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			return cli_help(ctx);
		default:
			code = goal_opt(ctx, c, optarg, o);
			if (code >= 0)
				return code;
		}
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing GOAL");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "one GOAL only (quote it), not '%s'", argv[optind + 1]);
	o->goal = argv[optind];
	if (!o->goal[0])
		return cli_usage_error(ctx, "the GOAL is empty");
	return -1;
}

/* The adapters a generated plan may name: those of the catalogue usable
 * here (built in, or installed with their credentials). */
static void usable_adapters(struct cli_ctx *ctx, const struct catalog *cat,
			    const struct orch_config *cfg, struct strvec *out)
{
	struct usable_env env = repo_usable_env(ctx);
	size_t i;

	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];
		const struct orch_endpoint *ep;
		struct usable u;

		if (!e->profile)
			continue;
		if (e->builtin || !e->binary) {
			strvec_push(out, e->name);
			continue;
		}
		ep = orch_config_endpoint(cfg, NULL, e->name);
		env.extra_key_env = ep ? ep->api_key_env : NULL;
		usable_check(e, &env, &u);
		if (u.usable)
			strvec_push(out, e->name);
		usable_release(&u);
	}
	strvec_sort(out);
}

struct planner_result {
	bool ran;	  /* the spawn command ran to its end */
	int exit_code;	  /* of `bernstein spawn` */
	char *outcome;	  /* the typed outcome, or NULL */
	char *session_id; /* the agent's session, or NULL */
	char *why;	  /* when it did not run */
};

static void planner_result_release(struct planner_result *p)
{
	free(p->outcome);
	free(p->session_id);
	free(p->why);
	memset(p, 0, sizeof(*p));
}

/* The last `"kind": "outcome"` line of spawn --json. */
static void read_outcome(const struct sbuf *out, struct planner_result *res)
{
	const char *end = out->buf + out->len, *p;

	while (end > out->buf) {
		json_t *o;

		p = end;
		while (p > out->buf && p[-1] != '\n')
			p--;
		o = json_loadb(p, (size_t)(end - p), 0, NULL);
		if (o && json_is_object(o) && json_is_string(json_object_get(o, "kind")) &&
		    strcmp(json_string_value(json_object_get(o, "kind")), "outcome") == 0) {
			const char *s = json_string_value(json_object_get(o, "outcome"));

			res->outcome = s ? xstrdup(s) : NULL;
			s = json_string_value(json_object_get(o, "session_id"));
			res->session_id = s ? xstrdup(s) : NULL;
			json_decref(o);
			return;
		}
		json_decref(o);
		end = p > out->buf ? p - 1 : p;
	}
}

/* What spawn said went wrong on stderr: its last "bernstein: " line (a
 * usage error is followed by "see 'bernstein spawn -h'"), else its last
 * line. Caller frees. */
static char *spawn_error(const struct sbuf *err)
{
	const char *p = err->buf, *end = err->buf + err->len, *best = NULL, *last = NULL;
	size_t best_n = 0, last_n = 0;

	for (; p < end; p++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n > 0) {
			last = p;
			last_n = n;
		}
		if (n > 11 && strncmp(p, "bernstein: ", 11) == 0) {
			best = p + 11;
			best_n = n - 11;
		}
		p += n; /* the newline: the loop steps over it */
	}
	if (!best) {
		best = last;
		best_n = last_n;
	}
	return best ? xstrndup(best, best_n) : NULL;
}

/* The Landlock rules of a confined planner (computed once per generation):
 * `bernstein spawn` and its agent may write only beneath the view (spawn
 * keeps the session, its files and the agent's private HOME there), the
 * generation's TMPDIR and /dev/null, and the profile's login files; read the
 * system, the agent's installation, this bernstein, the objects the view
 * borrows, the generation's directory (the prompt) and the user's catalogue
 * overrides (the planner's profile may be one). Never the main checkout,
 * the user's HOME or the audit key (orch/confine.h). */
struct planner_cage {
	bool on;
	char *tmp; /* its TMPDIR */
	struct strvec rw, ro;
};

static void cage_release(struct planner_cage *c)
{
	free(c->tmp);
	strvec_clear(&c->rw);
	strvec_clear(&c->ro);
}

/* --set KEY=... among the planner's own --set options */
static bool set_given(const struct goal_opts *o, const char *key)
{
	size_t i, n = strlen(key);

	for (i = 0; i < o->sets.nr; i++)
		if (strncmp(o->sets.v[i], key, n) == 0 && o->sets.v[i][n] == '=')
			return true;
	return false;
}

/* The planner's endpoint: its adapter's endpoints: entry of your
 * bernstein.yaml (the working copy's, not the view's), each slot unless
 * --set or -m gives it (docs/goal-mode.md) */
static void planner_endpoint(const struct goal_opts *o, const struct orch_config *cfg,
			     const char *adapter, struct strvec *argv)
{
	const struct orch_endpoint *ep = cfg ? orch_config_endpoint(cfg, NULL, adapter) : NULL;

	if (!ep)
		return;
	if (ep->base_url && !set_given(o, "base_url")) {
		strvec_push(argv, "--set");
		strvec_pushf(argv, "base_url=%s", ep->base_url);
	}
	if (ep->api_key_env && !set_given(o, "api_key_env")) {
		strvec_push(argv, "--set");
		strvec_pushf(argv, "api_key_env=%s", ep->api_key_env);
	}
	if (ep->model && !o->model) {
		strvec_push(argv, "-m");
		strvec_push(argv, ep->model);
	}
}

static int run_planner(struct cli_ctx *ctx, const char *self_exe, const struct goal_opts *o,
		       const struct orch_config *cfg, const char *adapter, const char *view,
		       const char *prompt_file, const char *resume, const struct planner_cage *cage,
		       struct planner_result *res)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture c;
	struct capture_opts co = {0};
	char tbuf[32];
	size_t i;
	int r;

	memset(&c, 0, sizeof(c));
	strvec_push(&spec.argv, self_exe);
	strvec_push(&spec.argv, "spawn");
	strvec_push(&spec.argv, adapter);
	strvec_push(&spec.argv, "-C");
	strvec_push(&spec.argv, view);
	strvec_push(&spec.argv, "--prompt-file");
	strvec_push(&spec.argv, prompt_file);
	strvec_push(&spec.argv, "--json");
	(void)snprintf(tbuf, sizeof(tbuf), "%g", o->timeout_s);
	strvec_push(&spec.argv, "--timeout");
	strvec_push(&spec.argv, tbuf);
	if (o->model) {
		strvec_push(&spec.argv, "-m");
		strvec_push(&spec.argv, o->model);
	}
	if (resume) {
		strvec_push(&spec.argv, "--resume");
		strvec_push(&spec.argv, resume);
	}
	for (i = 0; i < o->sets.nr; i++) {
		strvec_push(&spec.argv, "--set");
		strvec_push(&spec.argv, o->sets.v[i]);
	}
	planner_endpoint(o, cfg, adapter, &spec.argv);
	if (cage->on) {
		for (i = 0; ctx->envp[i]; i++)
			if (strncmp(ctx->envp[i], "TMPDIR=", 7) != 0 &&
			    strncmp(ctx->envp[i], "BERNSTEIN_CONTAIN=", 18) != 0)
				strvec_push(&spec.env, ctx->envp[i]);
		strvec_pushf(&spec.env, "TMPDIR=%s", cage->tmp);
		/* the caged spawn cannot make cgroups (nor should it touch
		 * bernstein's): this capture contains the whole tree, spawn
		 * and agent, from outside the cage */
		strvec_push(&spec.env, "BERNSTEIN_CONTAIN=pgroup");
		strvec_pushv(&spec.shim.landlock_rw, (const char *const *)cage->rw.v);
		strvec_pushv(&spec.shim.landlock_ro, (const char *const *)cage->ro.v);
		spec.shim.landlock_best_effort = false;
	} else {
		strvec_pushv(&spec.env, (const char *const *)ctx->envp);
	}
	spec.cwd = view;
	c.spec = &spec;
	/* spawn enforces --timeout itself; this is the backstop */
	c.timeout_ms = (uint64_t)((o->timeout_s + 60) * 1000);
	c.kill_grace_ms = 5000;
	c.max_out = PLANNER_OUT_MAX;
	c.max_err = PLANNER_ERR_MAX;
	c.tail_err = true;
	r = proc_capture(&c, 1, &co);
	proc_spec_release(&spec);
	if (r == 0 && c.start_result < 0) {
		res->why = xstrdup(c.start_error ? c.start_error : "cannot start");
		r = c.start_result;
	}
	if (r == 0) {
		res->ran = true;
		res->exit_code = c.exit_code;
		read_outcome(&c.out, res);
		if (ctx->verbosity > 0 && c.err.len)
			(void)fprintf(ctx->err, "%s", c.err.buf);
		if (!res->outcome && c.err.len)
			res->why = spawn_error(&c.err);
	}
	capture_release(&c);
	return r;
}

/* Text the planner chose (titles, problems quoting its values) on a
 * terminal: each control byte as '?' (but a newline with lines). */
static char *join2(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *s = xmalloc(n);

	(void)snprintf(s, n, "%s/%s", a, b);
	return s;
}

struct gen_state;
static int planner_cage(struct cli_ctx *ctx, struct gen_state *g, const struct goal_opts *o);

struct gen_state {
	struct session s;
	struct strvec adapters;
	struct strvec adapter_caps; /* what each offers (requirements_offered_describe) */
	struct strvec shown;	    /* the allowed commands, verbatim */
	struct strvec drafts;	    /* repository-relative */
	struct sbuf problems;
	char gen[64];
	char *dir, *view, *rel_dir;
	struct plan *plan;
	const char *adapter;
	bool can_resume; /* the planner's strategy resumes a session */
	struct planner_cage cage;
	char *session_id; /* the planner's session, resumed in later rounds */
	struct sbuf summary, prompt;
};

/* What each usable adapter offers, as capability tokens (the planner may
 * require them), parallel to g->adapters. */
static void adapter_caps(struct gen_state *g)
{
	size_t i;

	for (i = 0; i < g->adapters.nr; i++) {
		const struct registry_entry *e = catalog_find(g->s.cat, g->adapters.v[i]);
		struct sbuf sb = SBUF_INIT(4096);
		struct strategy_resolved sr;

		if (e && e->profile) {
			(void)catalog_profile_strategy(g->s.cat, e->profile, &sr);
			(void)requirements_offered_describe(e->profile, &sr.strategy, &sb);
		}
		strvec_push(&g->adapter_caps, sb.buf ? sb.buf : "");
		sbuf_release(&sb);
	}
}

/* goal_policy's tracked(): the path is a file git tracks in the repository
 * (a git that fails says no). */
static bool draft_tracked(void *ctx, const char *path)
{
	const struct gen_state *g = ctx;
	bool yes = false;

	return git_tracked(g->s.repo, path, (const char *const *)g->s.git_env.v, &yes, NULL) == 0 &&
	       yes;
}

/* The routing preflight on each task of a draft: the task's adapter (when
 * it names one) or any usable adapter must meet its requirements, else the
 * problem at the task, with the axes nobody meets, as the run would refuse
 * it (docs/routing.md). */
static void route_draft(struct gen_state *g, const char *rel, const struct plan *p,
			struct diag_list *is)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct plan_task *t = &p->tasks[i];
		const char *one[] = {t->adapter, NULL};
		struct select_input in = {
			.cat = g->s.cat,
			.req = &t->req,
			.candidates = t->adapter ? one : (const char *const *)g->adapters.v,
		};
		struct selection sel = {0};
		struct sbuf axes = SBUF_INIT(1024);
		struct diag d;
		int r;

		diag_clear(&d);
		r = select_adapter(&in, &sel, &d);
		if (r == -ENOTSUP) {
			(void)requirements_axes_describe(sel.unmet, &axes);
			if (t->adapter)
				diag_set(
					&d, rel, t->line, t->col,
					"task '%s': adapter '%s' does not meet its requirements (unmet: %s); routing would refuse it",
					t->id, t->adapter, axes.buf ? axes.buf : "-");
			else
				diag_set(
					&d, rel, t->line, t->col,
					"task '%s': no usable adapter meets its requirements (unmet: %s); routing would refuse it",
					t->id, axes.buf ? axes.buf : "-");
			diag_list_add(is, &d);
		}
		sbuf_release(&axes);
		selection_release(&sel);
	}
}

/* Check one draft: the loader, dispatch's static gates, the policy. 0 valid;
 * -EINVAL with the problems in g->problems (one per line). */
static int check_draft(struct gen_state *g, struct cli_ctx *ctx, const struct goal_opts *o,
		       const char *rel, const char *text, size_t len)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct goal_policy pol = {.allow = o->allow,
				  .adapters = (const char *const *)g->adapters.v,
				  .tracked = draft_tracked,
				  .tracked_ctx = g};
	struct plan *p = NULL;
	const char *allow_envs = cli_getenv(ctx, ALLOWED_KEYS_VAR);
	size_t i;
	int r;

	sbuf_reset(&g->problems);
	strvec_clear(&g->shown);
	r = plan_load_buf(rel, text, len, allow_envs, &p, &is);
	if (r == 0) {
		/* plan validate's gates, the endpoints' included */
		(void)plan_gates_check(p, g->s.cat, allow_envs, &is);
		route_draft(g, rel, p, &is);
	}
	(void)goal_policy_check(rel, text, len, &pol, &is, &g->shown);
	diag_list_sort(&is);
	for (i = 0; i < is.n; i++) {
		char buf[sizeof(is.v[i].file) + sizeof(is.v[i].msg) + 32];

		(void)sbuf_addf(&g->problems, "%s\n", diag_format(&is.v[i], buf, sizeof(buf)));
	}
	if (is.dropped)
		(void)sbuf_addf(&g->problems, "%s: ... and %zu more problems\n", rel, is.dropped);
	if (r == -EFBIG && is.n == 0)
		(void)sbuf_addf(&g->problems, "%s: the plan is larger than 1 MiB\n", rel);
	if (r == 0 && is.n == 0) {
		g->plan = p;
		diag_list_release(&is);
		return 0;
	}
	plan_free(p);
	diag_list_release(&is);
	return -EINVAL;
}

/* The detail of plan.generated, also what state.db keeps of the plan. */
static json_t *generated_record(struct gen_state *g, const struct goal_opts *o, const char *output,
				unsigned rounds)
{
	const struct registry_entry *e = catalog_find(g->s.cat, g->adapter);
	json_t *det = json_object(), *arr;
	char abuf[128];
	size_t i;

	cli_jset(det, "goal", cli_jstr(o->goal));
	cli_jset(det, "plan_hash", cli_jstr(plan_hash(g->plan)));
	cli_jset(det, "plan_file", cli_jstr(output));
	cli_jset(det, "planner_adapter", cli_jstr(g->adapter));
	cli_jset(det, "planner_model", cli_jstr(o->model));
	cli_jset(det, "planner_profile_hash",
		 cli_jstr(e && e->profile ? profile_hash(e->profile) : NULL));
	cli_jset(det, "rounds", json_integer(rounds));
	cli_jset(det, "policy", cli_jstr("tasks-only"));
	cli_jset(det, "allowed_classes", cli_jstr(goal_allow_format(o->allow, abuf, sizeof(abuf))));
	arr = json_array();
	for (i = 0; i < g->shown.nr; i++)
		(void)json_array_append_new(arr, cli_jstr(g->shown.v[i]));
	cli_jset(det, "allowed", arr);
	arr = json_array();
	for (i = 0; i < g->drafts.nr; i++)
		(void)json_array_append_new(arr, cli_jstr(g->drafts.v[i]));
	cli_jset(det, "drafts", arr);
	return det;
}

/* plan.generated in the audit chain, then the same record in state.db
 * (under the generation's id), so `status` can say which goal a run's plan
 * came from. */
static int record_generated(struct gen_state *g, const struct goal_opts *o, const char *output,
			    unsigned rounds, struct diag *d)
{
	json_t *det = generated_record(g, o, output, rounds);
	char ts[40], *text = NULL;
	int r;

	r = audit_append(g->s.chain, "plan.generated", ORCH_ACTOR, "plan", plan_hash(g->plan), det,
			 d);
	if (r >= 0) {
		text = json_dumps(det, JSON_COMPACT | JSON_SORT_KEYS);
		(void)clock_iso8601_utc(clock_system()->now_ns(clock_system()), ts, sizeof(ts));
		r = text ? state_generated_put(g->s.st, g->gen, plan_hash(g->plan), text, ts, d)
			 : -ENOMEM;
	}
	free(text);
	json_decref(det);
	return r;
}

static void print_result(struct cli_ctx *ctx, struct gen_state *g, const char *output)
{
	size_t i;

	(void)fprintf(ctx->out, "plan: %s (%zu task%s, hash %s)\n", output, g->plan->n,
		      g->plan->n == 1 ? "" : "s", plan_hash(g->plan));
	for (i = 0; i < g->plan->n; i++) {
		const struct plan_task *t = &g->plan->tasks[i];

		(void)fprintf(ctx->out, "  %-24s %-10s %-14s ", t->id, t->role,
			      t->adapter ? t->adapter : "-");
		cli_put_safe(ctx->out, t->title, false);
		(void)fputc('\n', ctx->out);
	}
	if (g->shown.nr) {
		(void)fprintf(ctx->out, "allowed by --allow, verbatim (each runs on this host):\n");
		for (i = 0; i < g->shown.nr; i++)
			(void)fprintf(ctx->out, "  %s\n", g->shown.v[i]);
	}
}

static json_t *result_json(struct gen_state *g, const char *output, unsigned rounds, bool ok)
{
	json_t *o = json_object(), *a = json_array();
	size_t i;

	cli_jset(o, "valid", json_boolean(ok));
	cli_jset(o, "plan_file", cli_jstr(ok ? output : NULL));
	cli_jset(o, "plan_hash", cli_jstr(ok ? plan_hash(g->plan) : NULL));
	cli_jset(o, "tasks", ok ? json_integer((json_int_t)g->plan->n) : json_null());
	cli_jset(o, "rounds", json_integer(rounds));
	for (i = 0; i < g->drafts.nr; i++)
		(void)json_array_append_new(a, cli_jstr(g->drafts.v[i]));
	cli_jset(o, "drafts", a);
	a = json_array();
	for (i = 0; ok && i < g->shown.nr; i++)
		(void)json_array_append_new(a, cli_jstr(g->shown.v[i]));
	cli_jset(o, "allowed", a);
	cli_jset(o, "problems", cli_jstr(ok ? "" : g->problems.buf));
	return o;
}

/* The planner's adapter, the usable adapters, the directory of this
 * generation and the planner's view (a scratch clone of HEAD), and the
 * repository summary. 0 or the exit code. */
static int gen_prepare(struct cli_ctx *ctx, struct gen_state *g, const struct goal_opts *o)
{
	const struct registry_entry *e;
	char *branch = NULL, *commit = NULL, *start = NULL, br[128];
	struct strvec env = STRVEC_INIT;
	struct diag d;
	int r, code = 0;

	g->adapter = o->planner;
	if (!g->adapter && g->s.cfg->adapter && strcmp(g->s.cfg->adapter, "auto") != 0)
		g->adapter = g->s.cfg->adapter;
	if (!g->adapter)
		return cli_usage_error(
			ctx,
			"no planner: give --planner ADAPTER (bernstein.yaml's adapter is auto)");
	e = catalog_find(g->s.cat, g->adapter);
	if (!e)
		return cli_usage_error(ctx, "unknown planner adapter '%s'", g->adapter);
	if (e->profile) {
		struct strategy_resolved sr;

		(void)catalog_profile_strategy(g->s.cat, e->profile, &sr);
		/* without resume, spawn would start afresh: the whole prompt again */
		g->can_resume = sr.strategy.resume != RESUME_UNSUPPORTED;
	}
	usable_adapters(ctx, g->s.cat, g->s.cfg, &g->adapters);
	adapter_caps(g);
	randid_run(g->gen, sizeof(g->gen), clock_system()->now_ns(clock_system()));
	g->rel_dir = join2(GEN_DIR, g->gen);
	g->dir = join2(g->s.repo, g->rel_dir);
	g->view = join2(g->dir, "view");
	r = mkdir_p(g->dir, 0700);
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot create '%s': %s", g->dir, strerror(-r));
	diag_clear(&d);
	r = git_head(g->s.repo, (const char *const *)g->s.git_env.v, &branch, &commit, &d);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot read HEAD of '%s': %s", g->s.repo,
				 d.msg[0] ? d.msg : strerror(-r));
		goto out;
	}
	/* no agent has touched the fresh clone yet: bernstein's git in it needs
	 * no confinement (Landlock) at this point, unlike a task's clone later */
	strvec_pushv(&env, (const char *const *)g->s.git_env.v);
	(void)snprintf(br, sizeof(br), "bernstein/planner-%s", g->gen);
	r = worktree_clone_add(g->s.repo, g->view, br, commit, (const char *const *)env.v, &start,
			       &d);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot make the planner's view '%s': %s", g->view,
				 d.msg[0] ? d.msg : strerror(-r));
		goto out;
	}
	{
		char *pf = join2(g->view, GOAL_PLAN_FILE);

		(void)unlink(pf); /* a tracked file of that name is not a draft */
		free(pf);
	}
	if (goal_repo_summary(g->view, &g->summary) < 0)
		cli_warn(ctx, "the repository summary is cut");
	code = planner_cage(ctx, g, o);
out:
	strvec_clear(&env);
	free(branch);
	free(commit);
	free(start);
	return code;
}

/* The cage's rules from the task sandbox's policy (orch/confine.h), for
 * the planner's adapter: 0 or the exit code. */
static int cage_rules(struct cli_ctx *ctx, struct gen_state *g)
{
	const struct registry_entry *e = catalog_find(g->s.cat, g->adapter);
	const char *path_env = cli_getenv(ctx, "PATH");
	struct confine_policy p = CONFINE_POLICY_INIT;
	struct catalog_paths cp;
	char bin[PATH_MAX], *objects = NULL;
	struct confine_input in = {
		.kind = SANDBOX_KIND_LANDLOCK,
		.repo = g->s.repo,
		.user_home = cli_getenv(ctx, "HOME"),
		.audit_key = g->s.key_path[0] ? g->s.key_path : NULL,
		.tree = g->view,
		.home = g->view, /* spawn's private HOMEs are beneath the view */
		.tmp = g->cage.tmp,
		.self_exe = g->s.self_exe,
		.path_env = path_env,
	};
	struct diag d;
	int r;

	diag_clear(&d);
	if (e && e->binary && !e->builtin)
		in.binary = confine_find_program(path_env, e->binary, bin, sizeof(bin));
	if (e && e->profile) {
		in.decl = &e->profile->runtime.sandbox;
		in.login = &e->profile->runtime.login;
	}
	r = worktree_repo_objects(g->s.repo, (const char *const *)g->s.git_env.v, &objects, &d);
	in.objects = objects;
	if (r >= 0)
		r = confine_policy_build(&in, &p, &d);
	free(objects);
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot confine the planner: %s", d.msg);
	strvec_pushv(&g->cage.rw, (const char *const *)p.rw.v);
	strvec_pushv(&g->cage.rw, (const char *const *)p.login_src.v); /* each file alone */
	strvec_pushv(&g->cage.ro, (const char *const *)p.ro.v);
	strvec_push(&g->cage.ro, g->dir); /* the prompt files */
	/* the built-in runner, beside this binary (openai_agents) */
	if (cli_sibling_path("bernstein-runner", bin, sizeof(bin)) == 0 && access(bin, X_OK) == 0)
		strvec_push(&g->cage.ro, bin);
	catalog_paths_find(ctx, &cp);
	if (cp.user_dir && access(cp.user_dir, F_OK) == 0)
		strvec_push(&g->cage.ro, cp.user_dir);
	catalog_paths_release(&cp);
	confine_policy_release(&p);
	return 0;
}

/* --planner-sandbox: the planner confined by Landlock where the kernel has
 * it (docs/goal-mode.md, "Its view"). 0 or the exit code. */
static int planner_cage(struct cli_ctx *ctx, struct gen_state *g, const struct goal_opts *o)
{
	int r;

	if (o->sandbox == GOAL_SANDBOX_NONE)
		return 0;
	if (landlock_abi_version() < 0) {
		if (o->sandbox == GOAL_SANDBOX_LANDLOCK)
			return cli_error(
				ctx, BEXIT_ENV,
				"--planner-sandbox landlock: the kernel does not support Landlock (the planner is not run unconfined)");
		if (!ctx->json)
			(void)fprintf(
				ctx->err,
				"the planner runs unconfined: the kernel does not support Landlock\n");
		return 0;
	}
	g->cage.tmp = join2(g->dir, "tmp");
	r = mkdir_p(g->cage.tmp, 0700);
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot create '%s': %s", g->cage.tmp,
				 strerror(-r));
	r = cage_rules(ctx, g);
	if (r == 0)
		g->cage.on = true;
	return r;
}

/* The planner's file (a regular file, not a link it planted) into the
 * draft rel (repository-relative). 0, -ENOENT when there is none, else the
 * exit code of a write error (> 0). */
static int take_draft(struct cli_ctx *ctx, struct gen_state *g, const char *rel, char **ret,
		      size_t *ret_len)
{
	char *pf = join2(g->view, GOAL_PLAN_FILE), *abs = NULL;
	struct stat st;
	int r;

	if (lstat(pf, &st) == 0 && S_ISREG(st.st_mode))
		r = read_file_capped(pf, PLAN_MAX_BYTES + 1, ret, ret_len);
	else
		r = -ENOENT;
	free(pf);
	if (r < 0)
		return -ENOENT;
	abs = join2(g->s.repo, rel);
	r = atomic_replace_file(abs, *ret, *ret_len, 0600);
	free(abs);
	if (r < 0) {
		free(*ret);
		*ret = NULL;
		return cli_error(ctx, BEXIT_ENV, "cannot write '%s': %s", rel, strerror(-r));
	}
	strvec_push(&g->drafts, rel);
	return 0;
}

/* One round: the prompt, the planner, its draft checked. 0 valid, -1 not
 * (the problems in g->problems), else the exit code. */
static int gen_round(struct cli_ctx *ctx, struct gen_state *g, const struct goal_opts *o,
		     unsigned round)
{
	struct goal_prompt gp = {
		.goal = o->goal,
		.summary = g->summary.buf,
		.adapters = (const char *const *)g->adapters.v,
		.adapter_caps = (const char *const *)g->adapter_caps.v,
		.plan_file = GOAL_PLAN_FILE,
		.problems = round > 1 ? g->problems.buf : NULL,
		.resumed = round > 1 && g->session_id && g->can_resume,
	};
	struct planner_result res = {0};
	char name[64], *pfile = NULL, *draft = NULL, *text = NULL;
	size_t len = 0;
	int r, code = -1;

	sbuf_reset(&g->prompt);
	(void)goal_prompt_build(&gp, &g->prompt);
	(void)snprintf(name, sizeof(name), "prompt-%u.txt", round);
	pfile = join2(g->dir, name);
	r = atomic_replace_file(pfile, g->prompt.buf, g->prompt.len, 0600);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot write '%s': %s", pfile, strerror(-r));
		goto out;
	}
	if (!ctx->json)
		(void)fprintf(ctx->err, "round %u/%u: %s plans%s\n", round, o->rounds, g->adapter,
			      gp.resumed ? " (its session resumed)" : "");
	r = run_planner(ctx, g->s.self_exe, o, g->s.cfg, g->adapter, g->view, pfile,
			gp.resumed ? g->session_id : NULL, &g->cage, &res);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot run the planner: %s",
				 res.why ? res.why : strerror(-r));
		goto out;
	}
	if (res.session_id && !g->session_id)
		g->session_id = xstrdup(res.session_id);
	if (!res.outcome && (res.exit_code == BEXIT_USAGE || res.exit_code == BEXIT_ENV ||
			     res.exit_code == BEXIT_INVALID)) {
		/* spawn refused before any agent ran: asking again cannot help */
		code = cli_error(ctx, res.exit_code == BEXIT_ENV ? BEXIT_ENV : BEXIT_USAGE,
				 "the planner '%s' cannot run: %s", g->adapter,
				 res.why ? res.why : "bernstein spawn refused it");
		goto out;
	}
	(void)snprintf(name, sizeof(name), "draft-%u.yaml", round);
	draft = join2(g->rel_dir, name);
	r = take_draft(ctx, g, draft, &text, &len);
	if (r > 0) {
		code = r;
		goto out;
	}
	if (r == 0) {
		code = check_draft(g, ctx, o, draft, text, len) == 0 ? 0 : -1;
	} else {
		sbuf_reset(&g->problems);
		(void)sbuf_addf(&g->problems,
				"%s: the planner wrote no plan file (outcome %s%s%s)\n",
				GOAL_PLAN_FILE, res.outcome ? res.outcome : "unknown",
				res.why ? ": " : "", res.why ? res.why : "");
	}
	if (code < 0 && (!ctx->json || o->quiet))
		cli_put_safe(ctx->err, g->problems.buf, true);
out:
	free(text);
	free(draft);
	free(pfile);
	planner_result_release(&res);
	return code;
}

/* The valid plan to its place, plan.generated, the result shown. 0 or the
 * exit code. */
static int gen_finish(struct cli_ctx *ctx, struct gen_state *g, const struct goal_opts *o,
		      unsigned round, char **ret_output)
{
	char *output = o->output ? xstrdup(o->output) : join2(g->rel_dir, "plan.yaml");
	char *abs = join2(g->s.repo, g->drafts.v[g->drafts.nr - 1]), *text = NULL;
	char *absout = o->output ? NULL : join2(g->s.repo, output);
	size_t len = 0;
	struct diag d;
	int r, code = 0;

	r = read_file_capped(abs, PLAN_MAX_BYTES + 1, &text, &len);
	if (r == 0)
		r = atomic_write_file(absout ? absout : output, text, len, 0644);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot write '%s': %s", output, strerror(-r));
		goto out;
	}
	diag_clear(&d);
	r = record_generated(g, o, output, round, &d);
	if (r < 0) {
		code = cli_diag(ctx, exit_for(r), &d);
		goto out;
	}
	if (ctx->json && !o->quiet)
		code = cli_print_json(ctx, result_json(g, output, round, true));
	else if (!ctx->json)
		print_result(ctx, g, output);
	if (code == 0) {
		*ret_output = output;
		output = NULL;
	}
out:
	free(output);
	free(abs);
	free(absout);
	free(text);
	return code;
}

int goal_generate(struct cli_ctx *ctx, const struct goal_opts *o, char **ret_plan,
		  char ret_hash[SHA256_HEX_LEN + 1], struct strvec *shown)
{
	struct gen_state g;
	unsigned round;
	int code;

	memset(&g, 0, sizeof(g));
	g.adapters = (struct strvec)STRVEC_INIT;
	g.adapter_caps = (struct strvec)STRVEC_INIT;
	g.shown = (struct strvec)STRVEC_INIT;
	g.drafts = (struct strvec)STRVEC_INIT;
	g.cage.rw = (struct strvec)STRVEC_INIT;
	g.cage.ro = (struct strvec)STRVEC_INIT;
	g.problems = (struct sbuf)SBUF_INIT(PROBLEMS_MAX);
	g.summary = (struct sbuf)SBUF_INIT(GOAL_PROMPT_MAX);
	g.prompt = (struct sbuf)SBUF_INIT(GOAL_PROMPT_MAX);
	g.s.lock_fd = -1;
	g.s.detach_fd = -1;
	code = session_open(&g.s, ctx, false, true, o->key_file);
	if (code)
		goto done;
	code = gen_prepare(ctx, &g, o);
	if (code)
		goto done;
	code = -1;
	for (round = 1; round <= o->rounds && code < 0; round++)
		code = gen_round(ctx, &g, o, round);
	round--;
	if (code > 0)
		goto done;
	if (code < 0) {
		if (ctx->json && !o->quiet) {
			code = cli_print_json(ctx, result_json(&g, NULL, o->rounds, false));
			if (code)
				goto done;
		} else {
			(void)fprintf(
				ctx->err,
				"bernstein: no valid plan after %u round%s; the drafts are in %s/\n",
				o->rounds, o->rounds == 1 ? "" : "s", g.rel_dir);
		}
		code = BEXIT_INVALID;
		goto done;
	}
	code = gen_finish(ctx, &g, o, round, ret_plan);
	if (code)
		goto done;
	if (shown)
		strvec_pushv(shown, (const char *const *)g.shown.v);
	(void)snprintf(ret_hash, SHA256_HEX_LEN + 1, "%s", plan_hash(g.plan));
done:
	free(g.session_id);
	free(g.dir);
	free(g.view);
	cage_release(&g.cage);
	free(g.rel_dir);
	plan_free(g.plan);
	strvec_clear(&g.adapters);
	strvec_clear(&g.adapter_caps);
	strvec_clear(&g.shown);
	strvec_clear(&g.drafts);
	sbuf_release(&g.problems);
	sbuf_release(&g.summary);
	sbuf_release(&g.prompt);
	session_release(&g.s);
	return code;
}

int cmd_plan_generate(int argc, char **argv, struct cli_ctx *ctx)
{
	struct goal_opts o;
	char *plan = NULL, hash[SHA256_HEX_LEN + 1];
	int code;

	goal_opts_init(&o);
	code = parse_args(argc, argv, ctx, &o);
	if (code < 0)
		code = goal_generate(ctx, &o, &plan, hash, NULL);
	free(plan);
	goal_opts_release(&o);
	return code;
}
