/* bernstein plan validate|show, config validate|show and init: the inputs
 * of a run, checked before anything runs (docs/plans.md,
 * docs/configuration.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/credential.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/repo-config.h"
#include "cli/plan-gates.h"
#include "orch/autoroute.h"
#include "orch/config.h"
#include "orch/plan.h"
#include "orch/spec.h"
#include "route/autopick.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

static const char *allowed_envs(const struct cli_ctx *ctx)
{
	return cli_getenv(ctx, CREDENTIAL_HOST_ALLOW_ENV);
}

/* A loader's failure: 4 when the file could not be read, 3 when it is
 * invalid (too large included). */
static int load_exit(int r)
{
	return r == -EINVAL || r == -EFBIG ? BEXIT_INVALID : BEXIT_ENV;
}

static json_t *diag_json(const struct diag *d)
{
	json_t *o = json_object();

	cli_jset(o, "file", cli_jstr(d->file));
	cli_jset(o, "line", d->line ? json_integer(d->line) : json_null());
	cli_jset(o, "column", d->col ? json_integer(d->col) : json_null());
	cli_jset(o, "message", cli_jstr(d->msg));
	return o;
}

static void print_issues(struct cli_ctx *ctx, const char *file, const struct diag_list *is)
{
	char buf[sizeof(((struct diag *)NULL)->file) + sizeof(((struct diag *)NULL)->msg) + 32];
	size_t i;

	for (i = 0; i < is->n; i++)
		(void)fprintf(ctx->err, "%s\n", diag_format(&is->v[i], buf, sizeof(buf)));
	if (is->dropped)
		(void)fprintf(ctx->err, "%s: ... and %zu more problems\n", file, is->dropped);
}

/* ---- plan validate ---- */

static int quiet_config(struct cli_ctx *ctx, const char *repo, struct orch_config **ret);

/* The hooks and notify a run of p gets (docs/configuration.md, "Hooks"):
 * each hook the plan's, else bernstein.yaml's, with where it came from
 * ({NAME: {run, timeout, from}}), notify the plan's whole, else
 * bernstein.yaml's ({..., from}); a role's replace them for its tasks
 * (`config show`). NULL in *ret_hooks / *ret_notify when none. */
static void effective_hooks(struct cli_ctx *ctx, const struct plan *p, json_t **ret_hooks,
			    json_t **ret_notify)
{
	struct catalog_paths paths;
	struct orch_config *cfg = NULL;
	struct orch_hookset hs;
	json_t *h;
	int i;

	memset(&hs, 0, sizeof(hs));
	catalog_paths_find(ctx, &paths);
	if (paths.repo && quiet_config(ctx, paths.repo, &cfg) < 0)
		cfg = NULL; /* a broken bernstein.yaml is run's to report */
	if (cfg)
		hs = cfg->hooks;
	orch_hooks_merge(&hs, &p->hooks);
	h = orch_hooks_json(&hs);
	for (i = 0; h && i < _HOOK_KIND_MAX; i++) {
		json_t *o = json_object_get(h, hook_kind_to_string((enum hook_kind)i));

		if (o)
			cli_jset(o, "from",
				 cli_jstr(p->hooks.h[i].run ? "plan" : ORCH_CONFIG_FILE));
	}
	*ret_hooks = h;
	*ret_notify =
		orch_notify_json(p->notify.set ? &p->notify : (cfg ? &cfg->notify : &p->notify));
	if (*ret_notify)
		cli_jset(*ret_notify, "from", cli_jstr(p->notify.set ? "plan" : ORCH_CONFIG_FILE));
	orch_config_free(cfg);
	catalog_paths_release(&paths);
}

/* "  hooks: NAME (plan), NAME (bernstein.yaml)" and "  notify: ... (plan)"
 * under a valid plan that gives hooks or notify of its own */
static void print_hooks(struct cli_ctx *ctx, const struct plan *p)
{
	json_t *h = NULL, *n = NULL, *o;
	const char *name, *sep = "";

	if (!orch_hooks_any(&p->hooks) && !p->notify.set)
		return;
	effective_hooks(ctx, p, &h, &n);
	if (h) {
		(void)fprintf(ctx->out, "  hooks:");
		json_object_foreach(h, name, o)
		{
			(void)fprintf(ctx->out, "%s %s (%s)", sep, name,
				      json_string_value(json_object_get(o, "from")));
			sep = ",";
		}
		(void)fprintf(ctx->out, "\n");
	}
	if (n)
		(void)fprintf(ctx->out, "  notify: %s\n",
			      json_string_value(json_object_get(n, "from")));
	json_decref(h);
	json_decref(n);
}

static int cmd_plan_validate(int argc, char **argv, struct cli_ctx *ctx)
{
	struct catalog *cat = NULL;
	json_t *files = NULL;
	size_t nvalid = 0, ninvalid = 0, nunreadable = 0;
	int i, r;

	r = cli_json_args(argc, argv, ctx);
	if (r >= 0)
		return r;
	if (optind >= argc)
		return cli_usage_error(ctx, "missing plan file");
	if (ctx->json)
		files = json_array();
	for (i = optind; i < argc; i++) {
		struct diag_list is = PLAN_ISSUES_INIT;
		struct plan *p = NULL;

		r = plan_load_file(argv[i], allowed_envs(ctx), &p, &is);
		/* the gates dispatch runs (the catalogue read once) */
		if (r == 0 && !cat) {
			r = catalog_paths_load(ctx, &cat);
			if (r) {
				plan_free(p);
				diag_list_release(&is);
				json_decref(files);
				return r;
			}
		}
		if (r == 0 && plan_gates_check(p, cat, allowed_envs(ctx), &is) > 0) {
			r = -EINVAL;
			plan_free(p);
			p = NULL;
		}
		if (r == 0)
			nvalid++;
		else if (load_exit(r) == BEXIT_INVALID)
			ninvalid++;
		else
			nunreadable++;
		if (ctx->json) {
			json_t *o = json_object(), *errs = json_array();
			size_t k;

			cli_jset(o, "file", cli_jstr(argv[i]));
			cli_jset(o, "valid", json_boolean(r == 0));
			cli_jset(o, "readable",
				 json_boolean(r == 0 || load_exit(r) == BEXIT_INVALID));
			cli_jset(o, "name", cli_jstr(p ? p->name : NULL));
			cli_jset(o, "form", cli_jstr(p ? plan_form_to_string(p->form) : NULL));
			cli_jset(o, "tasks", p ? json_integer((json_int_t)p->n) : json_null());
			cli_jset(o, "plan_hash", cli_jstr(p ? plan_hash(p) : NULL));
			if (p) {
				json_t *h = NULL, *n = NULL;

				effective_hooks(ctx, p, &h, &n);
				/* only when there are any (a plan without keeps
				 * its old answer) */
				if (h)
					cli_jset(o, "hooks", h);
				if (n)
					cli_jset(o, "notify", n);
			}
			for (k = 0; k < is.n; k++)
				(void)json_array_append_new(errs, diag_json(&is.v[k]));
			cli_jset(o, "errors", errs);
			cli_jset(o, "more_errors", json_integer((json_int_t)is.dropped));
			(void)json_array_append_new(files, o);
		} else if (r == 0) {
			(void)fprintf(ctx->out, "%s: ok (%zu task%s)\n", argv[i], p->n,
				      p->n == 1 ? "" : "s");
			print_hooks(ctx, p);
		} else {
			print_issues(ctx, argv[i], &is);
		}
		diag_list_release(&is);
		plan_free(p);
	}
	catalog_free(cat);
	if (ctx->json) {
		json_t *root = json_object(), *sum = json_object();
		size_t total = nvalid + ninvalid + nunreadable;

		cli_jset(root, "files", files);
		cli_jset(sum, "total", json_integer((json_int_t)total));
		cli_jset(sum, "valid", json_integer((json_int_t)nvalid));
		cli_jset(sum, "invalid", json_integer((json_int_t)ninvalid));
		cli_jset(sum, "unreadable", json_integer((json_int_t)nunreadable));
		cli_jset(root, "summary", sum);
		r = cli_print_json(ctx, root);
		if (r)
			return r;
	}
	if (nunreadable)
		return BEXIT_ENV;
	return ninvalid ? BEXIT_INVALID : BEXIT_OK;
}

/* ---- plan show ---- */

static void deps_text(const struct plan *p, const struct plan_task *t, struct sbuf *sb)
{
	size_t j;

	sbuf_reset(sb);
	for (j = 0; j < t->n_deps; j++)
		(void)sbuf_addf(sb, "%s%s", j ? "," : "", p->tasks[t->deps[j].index].id);
	if (!sb->len)
		(void)sbuf_adds(sb, "-");
}

/* What adapter: auto would choose for the tasks of a plan that name no
 * adapter (nor does their role), with this repository's bernstein.yaml,
 * catalogue and environment now: per task "auto (NAME)" or "auto (none
 * usable)"; NULL for a task whose adapter is not auto's to choose. */
struct auto_view {
	char **label;  /* per task, or NULL (owned) */
	char **chosen; /* per task: the name, or NULL (owned) */
	size_t n;
};

static void auto_view_release(struct auto_view *v)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		free(v->label[i]);
		free(v->chosen[i]);
	}
	free(v->label);
	free(v->chosen);
}

static void auto_view_task(const struct catalog *cat, const struct autopick *ap,
			   const struct plan_task *t, struct auto_view *v, size_t i)
{
	struct select_input in = {
		.cat = cat, .req = &t->req, .candidates = (const char *const *)ap->usable.v};
	struct selection sel = {0};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (select_adapter(&in, &sel, NULL) == 0 && sel.chosen) {
		(void)sbuf_addf(&sb, "auto (%s)", sel.chosen->name);
		v->chosen[i] = xstrdup(sel.chosen->name);
	} else {
		(void)sbuf_adds(&sb, ap->usable.nr ? "auto (none meets the task)"
						   : "auto (none usable)");
	}
	v->label[i] = sbuf_detach(&sb, NULL);
	selection_release(&sel);
}

static char *join(const char *dir, const char *name);

/* <repo>/bernstein.yaml, the defaults when it is missing; nothing printed. */
static int quiet_config(struct cli_ctx *ctx, const char *repo, struct orch_config **ret)
{
	char *path = join(repo, ORCH_CONFIG_FILE);
	struct diag d;
	int r;

	diag_clear(&d);
	r = orch_config_load(path, allowed_envs(ctx), ret, &d);
	if (r == -ENOENT) {
		*ret = orch_config_new_default();
		r = 0;
	}
	free(path);
	return r;
}

static void auto_view_compute(struct cli_ctx *ctx, const struct plan *p, struct auto_view *v)
{
	struct usable_env env = repo_usable_env(ctx);
	struct autoroute_task at = {.plan_endpoints = &p->endpoints};
	struct autopick ap = AUTOPICK_INIT;
	struct catalog_paths paths;
	struct orch_config *cfg = NULL;
	struct catalog *cat = NULL;
	struct diag d;
	size_t i;

	v->n = p->n;
	v->label = xcalloc(p->n ? p->n : 1, sizeof(*v->label));
	v->chosen = xcalloc(p->n ? p->n : 1, sizeof(*v->chosen));
	diag_clear(&d);
	catalog_paths_find(ctx, &paths);
	/* a broken bernstein.yaml or catalogue is for run to report: no view */
	if (!paths.repo || quiet_config(ctx, paths.repo, &cfg) < 0 ||
	    strcmp(cfg->adapter, ORCH_ADAPTER_AUTO) != 0 ||
	    catalog_load_dirs(paths.dirs, &cat, &d) < 0)
		goto out;
	at.cfg = cfg;
	/* the key variable of each agent's endpoint counts (the plan's entry,
	 * else bernstein.yaml's) */
	autopick_prepare(cat, (const char *const *)cfg->auto_order.v, &env, autoroute_key_env,
			 (void *)(uintptr_t)&at, &ap);
	for (i = 0; i < p->n; i++) {
		const struct role_policy *rp = orch_config_role(cfg, p->tasks[i].role);

		if (!p->tasks[i].adapter && !(rp && rp->adapter))
			auto_view_task(cat, &ap, &p->tasks[i], v, i);
	}
out:
	autopick_release(&ap);
	catalog_free(cat);
	orch_config_free(cfg);
	catalog_paths_release(&paths);
}

static void print_plan(struct cli_ctx *ctx, const struct plan *p, const struct auto_view *av)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int wid = 2, wrole = 4, wad = 7, wdep = 10;
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct plan_task *t = &p->tasks[i];
		int n;

		if ((n = (int)strlen(t->id)) > wid)
			wid = n;
		if ((n = (int)strlen(t->role)) > wrole)
			wrole = n;
		if (t->adapter && (n = (int)strlen(t->adapter)) > wad)
			wad = n;
		if (av->label[i] && (n = (int)strlen(av->label[i])) > wad)
			wad = n;
		deps_text(p, t, &sb);
		if ((int)sb.len > wdep)
			wdep = (int)sb.len;
	}
	(void)fprintf(ctx->out, "plan: %s (%s form, %zu task%s)\n", p->name,
		      plan_form_to_string(p->form), p->n, p->n == 1 ? "" : "s");
	(void)fprintf(ctx->out, "file: %s\nplan_hash: %s\n\n", p->source, plan_hash(p));
	(void)fprintf(ctx->out, "%-*s  %-*s  %-*s  %-*s  %s\n", wid, "ID", wrole, "ROLE", wad,
		      "ADAPTER", wdep, "DEPENDS_ON", "TITLE");
	for (i = 0; i < p->n; i++) {
		const struct plan_task *t = &p->tasks[i];

		deps_text(p, t, &sb);
		(void)fprintf(ctx->out, "%-*s  %-*s  %-*s  %-*s  %s\n", wid, t->id, wrole, t->role,
			      wad,
			      t->adapter     ? t->adapter
			      : av->label[i] ? av->label[i]
					     : "-",
			      wdep, sb.buf, t->title);
	}
	sbuf_release(&sb);
}

static int cmd_plan_show(int argc, char **argv, struct cli_ctx *ctx)
{
	struct auto_view av = {0};
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	int r;

	r = cli_json_args(argc, argv, ctx);
	if (r >= 0)
		return r;
	if (optind >= argc)
		return cli_usage_error(ctx, "missing plan file");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	r = plan_load_file(argv[optind], allowed_envs(ctx), &p, &is);
	if (r < 0) {
		if (ctx->json) {
			r = cli_diag(ctx, load_exit(r), &is.v[0]);
		} else {
			print_issues(ctx, argv[optind], &is);
			r = load_exit(r);
		}
		goto out;
	}
	auto_view_compute(ctx, p, &av);
	if (ctx->json) {
		json_t *j = spec_plan_json(p), *tasks = json_object_get(j, "tasks");
		size_t i;

		for (i = 0; i < p->n; i++)
			if (av.label[i])
				cli_jset(json_array_get(tasks, i), "auto_choice",
					 av.chosen[i] ? cli_jstr(av.chosen[i]) : json_null());
		r = cli_print_json(ctx, j);
		goto out;
	}
	print_plan(ctx, p, &av);
	r = BEXIT_OK;
out:
	auto_view_release(&av);
	diag_list_release(&is);
	plan_free(p);
	return r;
}

const struct cmd plan_cmds[] = {
	{"validate", cmd_plan_validate, NULL, 0, "check plan files and report every problem",
	 "PLAN... [--json]",
	 "Loads each PLAN (plan.yaml: the tasks form, or Bernstein's stages/steps form)\n"
	 "and reports every problem, not only the first, each as one line on stderr,\n"
	 "PLAN:LINE:COL: message, in file order: unknown keys and wrong types, a missing\n"
	 "title or prompt, duplicate titles and ids, unknown roles, a capability: token\n"
	 "that does not parse, dangling dependencies and dependency cycles (named, as\n"
	 "a -> b -> a). A valid plan gets 'PLAN: ok (N tasks)' on stdout. An\n"
	 "api_key_env (sampling:, endpoints:) must be a known provider key or listed\n"
	 "in BERNSTEIN_ALLOWED_API_KEY_ENVS; an endpoints: entry must name an adapter\n"
	 "of the catalogue that takes an endpoint. See docs/plans.md.\n"
	 "\n"
	 "options:\n"
	 "  --json       {\"files\": [{\"file\", \"valid\", \"readable\", \"name\", \"form\",\n"
	 "               \"tasks\", \"plan_hash\", \"errors\": [{\"file\", \"line\", \"column\",\n"
	 "               \"message\"}], \"more_errors\"}], \"summary\": {...}}\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 every plan is valid, 2 bad usage, 3 a plan is invalid, 4 a plan\n"
	 "cannot be read.\n"},
	{"show", cmd_plan_show, NULL, 0, "print a plan's resolved tasks in order", "PLAN [--json]",
	 "Loads PLAN and prints its tasks in file order with the ids they run under\n"
	 "(an 'id:', else a slug of the title), role, adapter ('-': the run decides,\n"
	 "from role_model_policy, routing or bernstein.yaml's adapter; 'auto (NAME)':\n"
	 "the agent bernstein.yaml's adapter: auto would take now, or 'auto (none\n"
	 "usable)') and the ids each depends on (for the stages form: every step of\n"
	 "the stages its stage depends on). plan_hash is the SHA-256 of the file's\n"
	 "bytes.\n"
	 "\n"
	 "options:\n"
	 "  --json       {\"name\", \"form\", \"file\", \"plan_hash\", \"tasks\": [{\"id\",\n"
	 "               \"title\", \"role\", \"adapter\", \"model\", \"depends_on\", \"requires\",\n"
	 "               \"prompt\", \"artifact\", \"timeout\", \"gates\", \"sampling\", ...,\n"
	 "               \"auto_choice\"}]} (auto_choice: only for tasks auto decides)\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 ok, 2 bad usage, 3 invalid plan (every problem printed as by\n"
	 "'plan validate'; with --json the first, as an error object on stderr), 4 the\n"
	 "plan cannot be read.\n"},
	{"generate", cmd_plan_generate, NULL, CMD_LOAD_LIBS,
	 "have a planner agent write a plan for a goal",
	 "GOAL [-o FILE] [--planner ADAPTER] [-m MODEL] [--rounds N] [--allow CLASS]...\n"
	 "       [--set KEY=VALUE]... [--timeout S] [--planner-sandbox landlock|none] [--json]",
	 "A planner agent (any adapter; the built-in runner against any OpenAI-compatible\n"
	 "endpoint is the cheapest) splits GOAL into tasks and writes a plan. It runs as\n"
	 "'bernstein spawn' runs an agent, in a scratch clone of HEAD\n"
	 "(.bernstein/plans/GEN/view), confined to it by Landlock where the kernel has\n"
	 "it (writes only there; the main checkout, your HOME and the audit key\n"
	 "unreadable), told the goal, a bounded summary of the\n"
	 "repository, the usable adapters and the roles, and the plan schema. It writes\n"
	 "the plan as the file bernstein-plan.yaml (a file, not its final message: a\n"
	 "file is checked at exact lines and columns and can be fixed in place).\n"
	 "\n"
	 "Each draft is kept as .bernstein/plans/GEN/draft-N.yaml and checked like\n"
	 "'plan validate' checks a plan, and against goal mode's policy: a generated\n"
	 "plan may only hold tasks. Gates, hooks, worktree_setup, sandbox: none|auto,\n"
	 "network: full, limits, endpoints, sampling base_url/api_key_env, budget and\n"
	 "mcp servers are refused, as is an adapter that is not usable here. Every\n"
	 "problem (FILE:LINE:COL: message) goes back to the planner, whose session is\n"
	 "resumed where its adapter can, up to N rounds. The valid plan is written to\n"
	 "FILE and recorded in the audit chain (plan.generated). Nothing of it runs:\n"
	 "run it with 'bernstein run FILE'. See docs/goal-mode.md.\n"
	 "\n"
	 "options:\n"
	 "  -o, --output FILE   where the valid plan goes (default:\n"
	 "                      .bernstein/plans/GEN/plan.yaml); replaced if it exists\n"
	 "  --planner ADAPTER   the planner's adapter (default: bernstein.yaml's adapter\n"
	 "                      when it names one)\n"
	 "  -m, --model MODEL   the planner's model\n"
	 "  --rounds N          drafts asked for at most (1..10, default 3)\n"
	 "  --allow CLASS       let a class through the policy: gates, setup, sandbox,\n"
	 "                      endpoints, budget (comma-separated or repeated); each\n"
	 "                      command it lets through is shown verbatim\n"
	 "  --set KEY=VALUE     the planner's sampling/endpoint slots, as for spawn\n"
	 "                      (base_url=URL, api_key_env=VAR, temperature=0.2, ...)\n"
	 "  --timeout S         the limit of each planner session (default 1800)\n"
	 "  --planner-sandbox landlock|none\n"
	 "                      landlock: the planner confined, or not run (exit 4);\n"
	 "                      none: unconfined, as 'bernstein spawn'. Default:\n"
	 "                      landlock where the kernel has it, else none (said)\n"
	 "  --json              {\"valid\", \"plan_file\", \"plan_hash\", \"tasks\",\n"
	 "                      \"rounds\", \"drafts\", \"allowed\", \"problems\"}\n"
	 "  -h, --help          this text\n"
	 "\n"
	 "Exit codes: 0 a valid plan was written, 2 bad usage (or a planner that cannot\n"
	 "run), 3 no valid plan after N rounds (the last problems on stderr), 4 an\n"
	 "environment problem (git, the run lock, I/O), 5 the audit chain is broken.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};

/* ---- config validate | show ---- */

/* Load FILE (the command's argument) or ./bernstein.yaml. With the default
 * file missing, *ret gets the defaults and *ret_missing is set. Returns -1
 * to go on, else the exit code (the error printed). */
static int load_config(struct cli_ctx *ctx, const char *file, struct orch_config **ret,
		       bool *ret_missing, struct diag *ret_d, bool report)
{
	const char *path = file ? file : ORCH_CONFIG_FILE;
	struct diag d;
	int r;

	diag_clear(&d);
	*ret_missing = false;
	r = orch_config_load(path, allowed_envs(ctx), ret, &d);
	if (r == -ENOENT && !file) {
		*ret = orch_config_new_default();
		*ret_missing = true;
		return -1;
	}
	if (r < 0) {
		*ret_d = d;
		if (report)
			return cli_diag(ctx, load_exit(r), &d);
		return load_exit(r);
	}
	return -1;
}

static int config_args(int argc, char **argv, struct cli_ctx *ctx, const char **ret_file)
{
	int r = cli_json_args(argc, argv, ctx);

	if (r >= 0)
		return r;
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	*ret_file = optind < argc ? argv[optind] : NULL;
	return -1;
}

static int cmd_config_validate(int argc, char **argv, struct cli_ctx *ctx)
{
	struct orch_config *c = NULL;
	const char *file = NULL, *shown;
	bool missing;
	struct diag d;
	int r;

	r = config_args(argc, argv, ctx, &file);
	if (r >= 0)
		return r;
	shown = file ? file : ORCH_CONFIG_FILE;
	diag_clear(&d);
	r = load_config(ctx, file, &c, &missing, &d, !ctx->json);
	if (r < 0 && c->endpoints.n) {
		/* endpoints: each adapter known and taking its endpoint */
		struct diag_list is = PLAN_ISSUES_INIT;
		struct catalog *cat = NULL;

		r = catalog_paths_load(ctx, &cat);
		if (r) {
			orch_config_free(c);
			return r;
		}
		if (plan_gates_endpoints(&c->endpoints, c->source, cat, allowed_envs(ctx), &is)) {
			d = is.v[0];
			r = BEXIT_INVALID;
			if (!ctx->json)
				print_issues(ctx, shown, &is);
		} else {
			r = -1;
		}
		diag_list_release(&is);
		catalog_free(cat);
	}
	if (ctx->json) {
		json_t *o = json_object();
		int pr;

		cli_jset(o, "file", cli_jstr(shown));
		cli_jset(o, "exists", json_boolean(r < 0 ? !missing : r == BEXIT_INVALID));
		cli_jset(o, "valid", json_boolean(r < 0));
		cli_jset(o, "error", r < 0 ? json_null() : diag_json(&d));
		pr = cli_print_json(ctx, o);
		orch_config_free(c);
		if (pr)
			return pr;
		return r < 0 ? BEXIT_OK : r;
	}
	if (r >= 0) {
		orch_config_free(c);
		return r;
	}
	if (missing)
		(void)fprintf(ctx->out, "%s: not found: the defaults apply\n", shown);
	else
		(void)fprintf(ctx->out, "%s: ok\n", shown);
	orch_config_free(c);
	return BEXIT_OK;
}

static int cmd_config_show(int argc, char **argv, struct cli_ctx *ctx)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct orch_config *c = NULL;
	const char *file = NULL;
	bool missing;
	struct diag d;
	int r;

	r = config_args(argc, argv, ctx, &file);
	if (r >= 0)
		return r;
	r = load_config(ctx, file, &c, &missing, &d, true);
	if (r >= 0)
		return r;
	if (ctx->json) {
		r = cli_print_json(ctx, orch_config_json(c));
		orch_config_free(c);
		return r;
	}
	if (orch_config_to_yaml(c, &sb) < 0) {
		orch_config_free(c);
		return cli_error(ctx, BEXIT_BUG, "cannot render the configuration");
	}
	if (missing)
		(void)fprintf(ctx->out, "# effective configuration: the defaults (no %s)\n",
			      ORCH_CONFIG_FILE);
	else
		(void)fprintf(ctx->out, "# effective configuration: %s with the defaults\n",
			      c->source);
	(void)fputs(sb.buf, ctx->out);
	sbuf_release(&sb);
	orch_config_free(c);
	return BEXIT_OK;
}

const struct cmd config_cmds[] = {
	{"validate", cmd_config_validate, NULL, 0, "check bernstein.yaml", "[FILE] [--json]",
	 "Loads FILE (default: ./bernstein.yaml) strictly: an unknown key, a wrong type\n"
	 "or a value out of range is reported as FILE:LINE:COL: field 'PATH': message.\n"
	 "An api_key_env (role_model_policy, endpoints) must be a known provider key or\n"
	 "listed in BERNSTEIN_ALLOWED_API_KEY_ENVS; an endpoints: entry must name an\n"
	 "adapter of the catalogue that takes an endpoint. Without FILE, a missing\n"
	 "./bernstein.yaml is fine: the defaults apply. See docs/configuration.md.\n"
	 "\n"
	 "options:\n"
	 "  --json       {\"file\", \"exists\", \"valid\", \"error\": null or {\"file\", \"line\",\n"
	 "               \"column\", \"message\"}}\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 valid (or no ./bernstein.yaml), 2 bad usage, 3 invalid, 4 FILE\n"
	 "cannot be read.\n"},
	{"show", cmd_config_show, NULL, 0, "print the effective configuration", "[FILE] [--json]",
	 "Prints the configuration a run would use: FILE (default: ./bernstein.yaml, or\n"
	 "the defaults when it does not exist) with every key it leaves out filled in\n"
	 "with its default, as bernstein.yaml text that loads back to the same values\n"
	 "(the built-in mode profiles in a comment), or as JSON with --json.\n"
	 "\n"
	 "options:\n"
	 "  --json       every key, plus \"source\" (the file, or null for the defaults)\n"
	 "               and the built-in modes with \"builtin\": true\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 ok, 2 bad usage, 3 invalid, 4 FILE cannot be read.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};

/* ---- init ---- */

const char init_usage[] = "[-C DIR] [--force] [--json]";
const char init_help[] =
	"Writes a commented bernstein.yaml into DIR (default: the current directory):\n"
	"every key with its default and what it does, ready to edit. Then makes sure\n"
	".gitignore ignores .bernstein/ (the run state, worktrees and audit chain):\n"
	"the line is appended once (the file is created when missing); running init\n"
	"again adds nothing. An existing bernstein.yaml is never overwritten without\n"
	"--force.\n"
	"\n"
	"options:\n"
	"  -C DIR       write into DIR instead of the current directory\n"
	"  --force      replace an existing bernstein.yaml\n"
	"  --json       {\"config\", \"overwritten\", \"gitignore\", \"gitignore_action\":\n"
	"               \"created\" | \"appended\" | \"unchanged\"}\n"
	"  -h, --help   this text\n"
	"\n"
	"Exit codes: 0 written, 1 bernstein.yaml exists (use --force), 2 bad usage,\n"
	"4 DIR is not a directory or a file cannot be written.\n";

#define GITIGNORE_LINE	    ".bernstein/"
#define GITIGNORE_MAX_BYTES ((size_t)4 * 1024 * 1024)

/* Does .gitignore text already ignore .bernstein/ (a line, blanks and a
 * CR trimmed, of .bernstein, .bernstein/, /.bernstein or /.bernstein/)? */
static bool ignores_state(const char *text)
{
	static const char *const forms[] = {".bernstein", ".bernstein/", "/.bernstein",
					    "/.bernstein/", NULL};
	const char *line = text;

	while (*line) {
		size_t n = strcspn(line, "\n"), s = 0, e = n, i;

		while (s < e && (line[s] == ' ' || line[s] == '\t'))
			s++;
		while (e > s && (line[e - 1] == ' ' || line[e - 1] == '\t' || line[e - 1] == '\r'))
			e--;
		for (i = 0; forms[i]; i++)
			if (strlen(forms[i]) == e - s && memcmp(line + s, forms[i], e - s) == 0)
				return true;
		line += n;
		if (*line == '\n')
			line++;
	}
	return false;
}

/* Append .bernstein/ to path unless it already ignores it. *ret_action is
 * "created", "appended" or "unchanged". 0 or -errno. */
static int update_gitignore(const char *path, const char **ret_action)
{
	char *text = NULL;
	size_t len = 0;
	struct sbuf add = SBUF_INIT(SIZE_MAX);
	int fd = -1, r;
	bool created = false;

	r = read_file_capped(path, GITIGNORE_MAX_BYTES, &text, &len);
	if (r == -ENOENT) {
		created = true;
	} else if (r < 0) {
		return r;
	} else if (ignores_state(text)) {
		*ret_action = "unchanged";
		goto out;
	}
	if (len && text[len - 1] != '\n')
		(void)sbuf_addc(&add, '\n');
	(void)sbuf_adds(&add, GITIGNORE_LINE "\n");
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, add.buf, add.len);
	if (r < 0)
		goto out;
	if (close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto out;
	}
	fd = -1;
	*ret_action = created ? "created" : "appended";
	r = 0;
out:
	close_fdp(&fd);
	sbuf_release(&add);
	free(text);
	return r;
}

static char *join(const char *dir, const char *name)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (!dir)
		(void)sbuf_adds(&sb, name);
	else
		(void)sbuf_addf(&sb, "%s%s%s", dir,
				dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	return sbuf_detach(&sb, NULL);
}

/* The commented example plan `init` writes beside bernstein.yaml (never over
 * an existing file): valid as it is (`bernstein plan validate`). */
static const char example_plan[] =
	"# An example plan (docs/plans.md): copy it, edit the tasks, then\n"
	"#   bernstein plan validate plan.yaml && bernstein run plan.yaml\n"
	"# Each task runs in its own git worktree, from HEAD; what it changes is\n"
	"# merged into your branch (--no-ff) when its gates pass.\n"
	"name: example\n"
	"# adapter: claude        # the plan's default agent (bernstein doctor lists the usable ones)\n"
	"tasks:\n"
	"  - title: add a greeting\n"
	"    prompt: \"Create hello.txt containing 'hello'.\"\n"
	"  - title: document it\n"
	"    prompt: \"Mention hello.txt in README.md.\"\n"
	"    depends_on: [add a greeting]   # starts after that one is merged\n"
	"    # gates: [{name: test, run: \"make test\"}]   # commands that must pass before the merge\n";

/* Write dir's plan.example.yaml unless something is there: *ret_written. */
static int write_example_plan(const char *dir, char **ret_path, bool *ret_written)
{
	char *path = join(dir, "plan.example.yaml");
	struct stat st;
	int r = 0;

	*ret_written = false;
	if (lstat(path, &st) < 0) {
		r = atomic_write_file(path, example_plan, strlen(example_plan), 0644);
		*ret_written = r >= 0;
	}
	*ret_path = path;
	return r;
}

/* One comment line of init's adapter choice: "# adapter: NAME   # why". */
static void init_comment(struct sbuf *sb, const char *name, const char *why)
{
	size_t at = sb->len, i;

	(void)sbuf_addf(sb, "# adapter: %-9s # %s", name, why);
	for (i = at; i < sb->len; i++)
		if (sb->buf[i] == '\n' || sb->buf[i] == '\r')
			sb->buf[i] = ' ';
	(void)sbuf_adds(sb, "\n");
}

/* bernstein.yaml as init writes it: the template with, as its adapter, the
 * first agent of the default auto: list usable here (adapter/usable.h), the
 * others in comments with why; auto when none is. *ret_adapter: the one
 * written (caller frees). */
static char *init_config_text(struct cli_ctx *ctx, char **ret_adapter)
{
	static const char line[] = "\nadapter: auto\n";
	const char *at = strstr(orch_config_template(), line);
	struct usable_env env = repo_usable_env(ctx);
	struct autopick ap = AUTOPICK_INIT;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct catalog_paths paths;
	struct catalog *cat = NULL;
	struct diag d;
	size_t i;

	diag_clear(&d);
	catalog_paths_find(ctx, &paths);
	/* a broken override is for doctor and run to report: init writes auto */
	if (at && catalog_load_dirs(paths.dirs, &cat, &d) >= 0)
		autopick_prepare(cat, orch_auto_default, &env, NULL, NULL, &ap);
	catalog_paths_release(&paths);
	if (!ap.usable.nr) {
		(void)sbuf_adds(&sb, orch_config_template());
		*ret_adapter = xstrdup(ORCH_ADAPTER_AUTO);
		goto out;
	}
	(void)sbuf_add(&sb, orch_config_template(), (size_t)(at + 1 - orch_config_template()));
	(void)sbuf_addf(&sb, "adapter: %s\n", ap.usable.v[0]);
	for (i = 1; i < ap.usable.nr; i++)
		init_comment(&sb, ap.usable.v[i], "also usable here");
	for (i = 0; i < ap.skipped.nr; i++) {
		struct sbuf why = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&why, "not usable here: %s", ap.why.v[i]);
		init_comment(&sb, ap.skipped.v[i], why.buf);
		sbuf_release(&why);
	}
	init_comment(&sb, ORCH_ADAPTER_AUTO,
		     "the first usable agent of 'auto:' below, at each dispatch");
	(void)sbuf_adds(&sb, at + strlen(line));
	*ret_adapter = xstrdup(ap.usable.v[0]);
out:
	autopick_release(&ap);
	catalog_free(cat);
	return sbuf_detach(&sb, NULL);
}

int cmd_init(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'},
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	const char *dir = NULL, *action = NULL;
	char *cfg = NULL, *ign = NULL, *plan = NULL, *text = NULL, *adapter = NULL;
	bool force = false, existed, plan_written = false;
	struct stat st;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hC:", opts, NULL)) != -1) {
		switch (c) {
		case 'C':
			dir = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			return cli_help(ctx);
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	if (dir && stat(dir, &st) < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot use directory '%s': %s", dir,
				 strerror(errno));
	if (dir && !S_ISDIR(st.st_mode))
		return cli_error(ctx, BEXIT_ENV, "cannot use directory '%s': not a directory", dir);
	cfg = join(dir, ORCH_CONFIG_FILE);
	ign = join(dir, ".gitignore");
	existed = lstat(cfg, &st) == 0;
	if (existed && !force) {
		r = cli_error(ctx, BEXIT_FAILED,
			      "'%s' already exists: not overwriting it (--force replaces it)", cfg);
		goto out;
	}
	text = init_config_text(ctx, &adapter);
	r = atomic_write_file(cfg, text, strlen(text), 0644);
	if (r < 0) {
		r = cli_error(ctx, BEXIT_ENV, "cannot write '%s': %s", cfg, strerror(-r));
		goto out;
	}
	r = update_gitignore(ign, &action);
	if (r < 0) {
		r = cli_error(ctx, BEXIT_ENV, "wrote '%s', but cannot update '%s': %s", cfg, ign,
			      strerror(-r));
		goto out;
	}
	r = write_example_plan(dir, &plan, &plan_written);
	if (r < 0) {
		r = cli_error(ctx, BEXIT_ENV, "wrote '%s', but cannot write '%s': %s", cfg, plan,
			      strerror(-r));
		goto out;
	}
	if (ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "config", cli_jstr(cfg));
		cli_jset(o, "overwritten", json_boolean(existed));
		cli_jset(o, "adapter", cli_jstr(adapter));
		cli_jset(o, "gitignore", cli_jstr(ign));
		cli_jset(o, "gitignore_action", cli_jstr(action));
		cli_jset(o, "example_plan", cli_jstr(plan));
		cli_jset(o, "example_plan_written", json_boolean(plan_written));
		r = cli_print_json(ctx, o);
		goto out;
	}
	(void)fprintf(ctx->out, "%s %s: every key with its default, commented\n",
		      existed ? "overwrote" : "wrote", cfg);
	if (strcmp(adapter, ORCH_ADAPTER_AUTO) == 0)
		(void)fprintf(
			ctx->out,
			"adapter: auto: no agent is usable here yet ('bernstein doctor' says what each lacks)\n");
	else
		(void)fprintf(ctx->out, "adapter: %s, the first agent usable here\n", adapter);
	if (strcmp(action, "unchanged") == 0)
		(void)fprintf(ctx->out, "%s already ignores .bernstein/\n", ign);
	else
		(void)fprintf(ctx->out,
			      "%s %s: ignores .bernstein/ (run state, worktrees, audit)\n",
			      strcmp(action, "created") == 0 ? "created" : "updated", ign);
	if (plan_written)
		(void)fprintf(ctx->out, "wrote %s: a commented example plan\n", plan);
	(void)fprintf(ctx->out,
		      "next: edit it, then check it with 'bernstein config validate %s'\n", cfg);
	r = BEXIT_OK;
out:
	free(cfg);
	free(ign);
	free(plan);
	free(text);
	free(adapter);
	return r;
}
