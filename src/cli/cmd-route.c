/* bernstein route: pick the adapter for a task's capability requirements, or
 * print the refusal receipt (docs/routing.md). Without --candidates the
 * preference: list of the repository's bernstein.yaml orders the candidates.
 * With --audit the decision is anchored in the audit chain
 * (.bernstein/audit); without it nothing is written and no key is needed. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/catalog.h"
#include "audit/audit.h"
#include "cli/audit-setup.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/repo-config.h"
#include "orch/config.h"
#include "route/requirements.h"
#include "route/route.h"
#include "route/select.h"
#include "util/sbuf.h"
#include "util/strvec.h"

/* Split a comma-separated --candidates value onto names. */
static int add_names(struct cli_ctx *ctx, const char *arg, struct strvec *names)
{
	const char *p = arg;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n == 0)
			return cli_usage_error(ctx, "empty adapter name in --candidates '%s'", arg);
		strvec_pushf(names, "%.*s", (int)n, p);
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static json_t *candidates_json(const struct selection *s)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < s->n_considered; i++) {
		const struct select_candidate *c = &s->considered[i];
		json_t *o = json_object();

		cli_jset(o, "adapter", cli_jstr(c->name));
		cli_jset(o, "profile_hash", cli_jstr(c->profile_hash));
		cli_jset(o, "unmet", requirements_axes_json(c->unmet));
		(void)json_array_append_new(arr, o);
	}
	return arr;
}

/* The bernstein.yaml preference the selection used (cfg NULL: none). */
static json_t *preference_json(const struct orch_config *cfg)
{
	json_t *o, *arr;
	size_t i;

	if (!cfg)
		return json_null();
	o = json_object();
	arr = json_array();
	for (i = 0; i < cfg->preference.nr; i++)
		(void)json_array_append_new(arr, cli_jstr(cfg->preference.v[i]));
	cli_jset(o, "adapters", arr);
	cli_jset(o, "source", cli_jstr(cfg->source));
	return o;
}

static void print_preference(struct cli_ctx *ctx, const struct orch_config *cfg)
{
	size_t i;

	if (!cfg)
		return;
	(void)fputs("preference: ", ctx->out);
	for (i = 0; i < cfg->preference.nr; i++)
		(void)fprintf(ctx->out, "%s%s", i ? ", " : "", cfg->preference.v[i]);
	(void)fprintf(ctx->out, " (from %s)\n", cfg->source);
}

static json_t *audit_json(const struct selection *s, struct audit_chain *chain)
{
	json_t *o;

	if (!s->recorded)
		return json_null();
	o = json_object();
	cli_jset(o, "event_type",
		 json_string(s->chosen ? ROUTE_EVENT_SELECTION : ROUTE_EVENT_REFUSAL));
	cli_jset(o, "count", json_integer((json_int_t)audit_chain_count(chain)));
	cli_jset(o, "hmac", json_string(audit_chain_last_hmac(chain)));
	return o;
}

static void print_recorded(struct cli_ctx *ctx, const struct selection *s,
			   struct audit_chain *chain)
{
	if (!s->recorded)
		return;
	(void)fprintf(ctx->out, "recorded: %s (audit record %llu)\n",
		      s->chosen ? ROUTE_EVENT_SELECTION : ROUTE_EVENT_REFUSAL,
		      (unsigned long long)audit_chain_count(chain));
}

static int print_selection(struct cli_ctx *ctx, const struct selection *s,
			   const struct requirements *req, const struct orch_config *pref,
			   struct audit_chain *chain)
{
	const struct select_candidate *c = s->chosen;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "selected", json_true());
		cli_jset(o, "adapter", cli_jstr(c->name));
		cli_jset(o, "profile_hash", cli_jstr(c->profile_hash));
		cli_jset(o, "requirements", json_deep_copy(s->requirements));
		cli_jset(o, "order", json_string(select_order_to_string(s->order)));
		cli_jset(o, "preference", preference_json(pref));
		cli_jset(o, "considered", candidates_json(s));
		cli_jset(o, "audit", audit_json(s, chain));
		return cli_print_json(ctx, o);
	}
	(void)requirements_describe(req, &sb);
	(void)fprintf(ctx->out, "adapter: %s\n", c->name);
	if (c->profile_hash)
		(void)fprintf(ctx->out, "profile_hash: %s\n", c->profile_hash);
	else
		(void)fputs("profile_hash: none (no capability profile: nothing to anchor)\n",
			    ctx->out);
	(void)fprintf(ctx->out, "requirements: %s\n", sb.buf);
	(void)fprintf(ctx->out, "order: %s (%zu considered)\n", select_order_to_string(s->order),
		      s->n_considered);
	print_preference(ctx, pref);
	print_recorded(ctx, s, chain);
	sbuf_release(&sb);
	return BEXIT_OK;
}

static int print_refusal(struct cli_ctx *ctx, const struct selection *s,
			 const struct requirements *req, const struct orch_config *pref,
			 struct audit_chain *chain)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i, width = 0;
	int r;

	if (ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "selected", json_false());
		cli_jset(o, "order", json_string(select_order_to_string(s->order)));
		cli_jset(o, "preference", preference_json(pref));
		cli_jset(o, "receipt", selection_receipt(s));
		cli_jset(o, "receipt_hash", json_string(s->receipt_hash));
		cli_jset(o, "audit", audit_json(s, chain));
		r = cli_print_json(ctx, o);
		return r ? r : BEXIT_REFUSED;
	}
	(void)requirements_describe(req, &sb);
	(void)fputs("capability mismatch: no adapter satisfies the task\n", ctx->out);
	(void)fprintf(ctx->out, "requirements: %s\n", sb.buf);
	(void)fprintf(ctx->out, "order: %s (%zu considered)\n", select_order_to_string(s->order),
		      s->n_considered);
	print_preference(ctx, pref);
	for (i = 0; i < s->n_considered; i++)
		if (strlen(s->considered[i].name) > width)
			width = strlen(s->considered[i].name);
	for (i = 0; i < s->n_considered; i++) {
		const struct select_candidate *c = &s->considered[i];

		sbuf_reset(&sb);
		(void)requirements_axes_describe(c->unmet, &sb);
		(void)fprintf(ctx->out, "  %-*s  %s  unmet: %s\n", (int)width, c->name,
			      c->profile_hash ? c->profile_hash : "(no profile)", sb.buf);
	}
	sbuf_reset(&sb);
	(void)requirements_axes_describe(s->unmet, &sb);
	(void)fprintf(ctx->out, "unmet: %s\n", sb.len ? sb.buf : "-");
	(void)fprintf(ctx->out, "receipt_hash: %s\n", s->receipt_hash);
	print_recorded(ctx, s, chain);
	sbuf_release(&sb);
	return BEXIT_REFUSED;
}

/* The repository's bernstein.yaml (the repository as for the catalogue's
 * repository layer), into *ret when it sets a preference: every name must be
 * in the catalogue, as a run requires. 0, or the exit code (printed): 3 for
 * an invalid file or an unknown name, 4 for an unreadable file. */
static int load_preference(struct cli_ctx *ctx, const struct catalog *cat, struct orch_config **ret)
{
	struct catalog_paths paths;
	struct orch_config *cfg = NULL;
	size_t i;
	int r = 0;

	catalog_paths_find(ctx, &paths);
	if (paths.repo)
		r = repo_config_load(ctx, paths.repo, &cfg);
	catalog_paths_release(&paths);
	if (r || !cfg || cfg->preference.nr == 0)
		goto out;
	for (i = 0; i < cfg->preference.nr; i++) {
		if (!catalog_find(cat, cfg->preference.v[i])) {
			r = cli_error(
				ctx, BEXIT_INVALID,
				"%s: field 'preference[%zu]': unknown adapter '%s' (not in the catalogue; see 'bernstein adapters list')",
				cfg->source, i, cfg->preference.v[i]);
			goto out;
		}
	}
	*ret = cfg;
	cfg = NULL;
out:
	orch_config_free(cfg);
	return r;
}

int cmd_route(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"requires", required_argument, NULL, 'r'},
		{"candidates", required_argument, NULL, 'c'},
		{"audit", no_argument, NULL, 'a'},
		{"run-id", required_argument, NULL, 'i'},
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	struct requirements req = REQUIREMENTS_INIT;
	struct strvec names = STRVEC_INIT;
	struct select_input in = {0};
	struct selection sel = {0};
	struct audit_chain *chain = NULL;
	struct catalog *cat = NULL;
	struct orch_config *pref = NULL; /* bernstein.yaml, when its preference applies */
	bool audit = false, have_candidates = false;
	const char *run_id = "";
	struct diag d;
	size_t i;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			r = requirements_add(&req, optarg, &d);
			if (r < 0) {
				r = cli_diag(ctx, BEXIT_INVALID, &d);
				goto out;
			}
			if (r == 0)
				cli_warn(
					ctx,
					"'%s' is not a capability: requirement (skill addressing), ignoring",
					optarg);
			break;
		case 'c':
			have_candidates = true;
			r = add_names(ctx, optarg, &names);
			if (r)
				goto out;
			break;
		case 'a':
			audit = true;
			break;
		case 'i':
			run_id = optarg;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			r = cli_help(ctx);
			goto out;
		case ':':
			r = cli_missing_value(ctx, argv);
			goto out;
		default:
			r = cli_unknown_option(ctx, argv);
			goto out;
		}
	}
	if (optind < argc) {
		r = cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	r = catalog_paths_load(ctx, &cat);
	if (r)
		goto out;
	/* Unknown names are a usage error, found before anything is written. */
	for (i = 0; i < names.nr; i++) {
		if (!catalog_find(cat, names.v[i])) {
			r = cli_usage_error(ctx, "unknown adapter '%s' in --candidates",
					    names.v[i]);
			goto out;
		}
	}
	/* an explicit list wins: bernstein.yaml is not read at all then */
	if (!have_candidates) {
		r = load_preference(ctx, cat, &pref);
		if (r)
			goto out;
	}
	if (audit) {
		r = audit_setup_open(ctx, AUDIT_SETUP_DEFAULT_DIR, NULL, &chain);
		if (r)
			goto out;
	}
	in.cat = cat;
	in.req = &req;
	in.candidates = have_candidates ? (const char *const *)names.v : NULL;
	in.preference = pref ? (const char *const *)pref->preference.v : NULL;
	r = route_and_record(&in, chain, run_id, &sel, &d);
	if (r == 0)
		r = print_selection(ctx, &sel, &req, pref, chain);
	else if (r == -ENOTSUP)
		r = print_refusal(ctx, &sel, &req, pref, chain);
	else if (r == -EINVAL && !chain)
		r = cli_diag(ctx, BEXIT_USAGE, &d);
	else
		r = audit_setup_chain_error(ctx, r, &d);
out:
	selection_release(&sel);
	audit_close(chain);
	orch_config_free(pref);
	catalog_free(cat);
	strvec_clear(&names);
	return r;
}
