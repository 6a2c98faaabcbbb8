/* bernstein adapters contract-check [NAME] [--json] [--timeout SECONDS] [--list]:
 * drift of the pinned upstream CLI contracts (catalog/contracts/NAME.yaml, with
 * user and repo overrides) against the installed binaries (docs/contracts.md).
 *
 * Exit codes mirror Bernstein's command: 0 every checked contract passed or was
 * skipped (binary not installed), 2 drift (a required flag, subcommand or model
 * is missing), 3 a runtime failure of an upstream CLI (its help printed
 * nothing, timed out or could not start: not drift) or an invalid contract
 * file. Drift wins over runtime failures. A usage error (unknown NAME) is also
 * 2, as everywhere in bernstein. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/contract.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "util/xalloc.h"

#define CONTRACT_EXIT_DRIFT   2
#define CONTRACT_EXIT_RUNTIME 3
#define MAX_TIMEOUT_S	      3600

static int parse_seconds(const char *s, uint64_t *ret_ms)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > MAX_TIMEOUT_S)
		return -EINVAL;
	*ret_ms = (uint64_t)(v * 1000.0 + 0.5);
	if (*ret_ms == 0)
		*ret_ms = 1;
	return 0;
}

/* Contract results render absent strings as "" (as Bernstein's to_dict does). */
static json_t *jstr(const char *s)
{
	return cli_jstr(s ? s : "");
}

static void print_list(FILE *f, const char *title, const struct strvec *sv)
{
	size_t i;

	if (!sv->nr)
		return;
	(void)fprintf(f, "%s:\n", title);
	for (i = 0; i < sv->nr; i++)
		(void)fprintf(f, "  - %s\n", sv->v[i]);
}

static void result_print(FILE *f, const struct contract_result *r)
{
	(void)fprintf(f, "adapter: %s\n", r->adapter);
	(void)fprintf(f, "binary: %s\n", r->binary);
	(void)fprintf(f, "installed: %s\n", r->binary_installed ? "yes" : "no");
	if (r->skipped_reason)
		(void)fprintf(f, "note: %s\n", r->skipped_reason);
	print_list(f, "capability failures", &r->capability_failures);
	print_list(f, "model failures", &r->model_failures);
	if (r->runtime_failure)
		(void)fprintf(f, "runtime failure: %s\n", r->runtime_failure);
	switch (contract_result_verdict(r)) {
	case CONTRACT_VERDICT_NOT_INSTALLED:
		(void)fprintf(f, "passed: skipped: not installed\n");
		break;
	case CONTRACT_VERDICT_SKIPPED:
		(void)fprintf(f, "passed: skipped\n");
		break;
	default:
		(void)fprintf(f, "passed: %s\n", contract_result_passed(r) ? "yes" : "no");
		break;
	}
}

static int list_contracts(struct cli_ctx *ctx, const struct contract_index *idx)
{
	size_t i;

	if (ctx->json) {
		json_t *o = json_object(), *a = json_array();

		for (i = 0; i < idx->n; i++)
			(void)json_array_append_new(a, jstr(idx->v[i].name));
		cli_jset(o, "count", json_integer((json_int_t)idx->n));
		cli_jset(o, "contracts", a);
		return cli_print_json(ctx, o);
	}
	for (i = 0; i < idx->n; i++)
		(void)fprintf(ctx->out, "%s\n", idx->v[i].name);
	return 0;
}

struct contract_check_args {
	const char *name; /* the one contract to check, NULL all */
	bool list;
	uint64_t timeout_ms;
};

/* -1 to go on, else the exit code (printed). */
static int contract_check_parse_args(int argc, char **argv, struct cli_ctx *ctx,
				     struct contract_check_args *a)
{
	enum { OPT_TIMEOUT = 256, OPT_LIST };
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"list", no_argument, NULL, OPT_LIST},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			ctx->json = true;
			break;
		case OPT_TIMEOUT:
			if (parse_seconds(optarg, &a->timeout_ms) < 0)
				return cli_usage_error(
					ctx,
					"invalid --timeout '%s' (seconds, more than 0 and at most %d)",
					optarg, MAX_TIMEOUT_S);
			break;
		case OPT_LIST:
			a->list = true;
			break;
		case 'h':
			return cli_help(ctx);
		default:
			if (optopt == OPT_TIMEOUT)
				return cli_usage_error(ctx, "option '%s' requires a value",
						       argv[optind - 1]);
			if (optopt)
				return cli_usage_error(ctx, "unknown option '-%c'", optopt);
			return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		a->name = argv[optind++];
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	if (a->list && a->name)
		return cli_usage_error(ctx, "--list takes no contract name");
	return -1;
}

/* Load the n selected contracts (the one named, else every one of idx)
 * into contracts[]. Returns 0 or the exit code (printed). */
static int load_contracts(struct cli_ctx *ctx, const struct contract_index *idx, const char *name,
			  struct contract **contracts, size_t n)
{
	struct diag d;
	size_t i;
	int r;

	diag_clear(&d);
	for (i = 0; i < n; i++) {
		const struct contract_entry *e = name ? contract_index_find(idx, name) : &idx->v[i];

		r = contract_index_load(e, &contracts[i], &d);
		if (r < 0)
			return cli_diag(ctx, cli_load_exit(r), &d);
	}
	return 0;
}

struct verdict_counts {
	size_t passed, drifted, broken, skipped;
};

static void verdict_count(struct verdict_counts *vc, const struct contract_result *res)
{
	switch (contract_result_verdict(res)) {
	case CONTRACT_VERDICT_PASSED:
		vc->passed++;
		break;
	case CONTRACT_VERDICT_DRIFTED:
		vc->drifted++;
		break;
	case CONTRACT_VERDICT_RUNTIME_FAILURE:
		vc->broken++;
		break;
	default:
		vc->skipped++;
		break;
	}
}

/* The summary after the results: a JSON document with them all (jarr,
 * taken), or a line of text. Returns code, or cli_print_json()'s failure. */
static int summary_print(struct cli_ctx *ctx, json_t *jarr, size_t n,
			 const struct verdict_counts *vc, int code)
{
	json_t *root, *summary;
	int r;

	if (!ctx->json) {
		(void)fprintf(
			ctx->out,
			"\ncontracts: %zu checked, %zu passed, %zu drifted, %zu runtime failures, %zu skipped\n",
			n, vc->passed, vc->drifted, vc->broken, vc->skipped);
		return code;
	}
	root = json_object();
	summary = json_object();
	cli_jset(summary, "checked", json_integer((json_int_t)n));
	cli_jset(summary, "passed", json_integer((json_int_t)vc->passed));
	cli_jset(summary, "drifted", json_integer((json_int_t)vc->drifted));
	cli_jset(summary, "runtime_failures", json_integer((json_int_t)vc->broken));
	cli_jset(summary, "skipped", json_integer((json_int_t)vc->skipped));
	cli_jset(summary, "exit_code", json_integer(code));
	cli_jset(root, "contracts", jarr);
	cli_jset(root, "summary", summary);
	r = cli_print_json(ctx, root);
	return r ? r : code;
}

/* Run the help commands of the n contracts, print each result and the
 * summary. Returns the exit code. */
static int check_and_print(struct cli_ctx *ctx, struct contract **contracts,
			   struct contract_result *results, size_t n, uint64_t timeout_ms)
{
	struct contract_check_opts copts = {.envp = (const char *const *)ctx->envp};
	struct verdict_counts vc = {0};
	json_t *jarr = NULL;
	size_t i, errors = 0;
	int r, code = 0;

	copts.help_timeout_ms = timeout_ms;
	r = contract_check_all((const struct contract *const *)contracts, n, &copts, results);
	if (r < 0) {
		(void)cli_error(ctx, CONTRACT_EXIT_RUNTIME, "cannot run the help commands: %s",
				strerror(-r));
		errors++;
	}
	if (ctx->json)
		jarr = json_array();
	for (i = 0; i < n; i++) {
		verdict_count(&vc, &results[i]);
		if (ctx->json) {
			(void)json_array_append_new(jarr, cli_contract_result_json(&results[i]));
		} else {
			if (i)
				(void)fputc('\n', ctx->out);
			result_print(ctx->out, &results[i]);
		}
	}
	if (vc.drifted)
		code = CONTRACT_EXIT_DRIFT;
	else if (vc.broken || errors)
		code = CONTRACT_EXIT_RUNTIME;
	return summary_print(ctx, jarr, n, &vc, code);
}

int cmd_adapters_contract_check(int argc, char **argv, struct cli_ctx *ctx)
{
	struct contract_check_args a = {.timeout_ms = CONTRACT_DEFAULT_HELP_TIMEOUT_MS};
	struct catalog_paths paths;
	struct contract_index *idx = NULL;
	struct contract **contracts = NULL;
	struct contract_result *results = NULL;
	size_t n = 0, i;
	struct diag d;
	int r, code;

	code = contract_check_parse_args(argc, argv, ctx, &a);
	if (code >= 0)
		return code;

	diag_clear(&d);
	catalog_paths_find(ctx, &paths);
	r = contract_index_build_dirs(paths.dirs, &idx, &d);
	catalog_paths_release(&paths);
	if (r < 0)
		return cli_diag(ctx, cli_load_exit(r), &d);
	if (a.list) {
		code = list_contracts(ctx, idx);
		goto out;
	}
	if (a.name && !contract_index_find(idx, a.name)) {
		code = cli_usage_error(ctx, "unknown contract '%s' (--list lists them)", a.name);
		goto out;
	}

	/* Load every selected contract first: an invalid file is exit 3
	 * before anything runs. */
	n = a.name ? 1 : idx->n;
	contracts = xcalloc(n ? n : 1, sizeof(*contracts));
	results = xcalloc(n ? n : 1, sizeof(*results));
	for (i = 0; i < n; i++)
		results[i] = (struct contract_result)CONTRACT_RESULT_INIT;
	code = load_contracts(ctx, idx, a.name, contracts, n);
	if (code == 0)
		code = check_and_print(ctx, contracts, results, n, a.timeout_ms);
out:
	for (i = 0; contracts && i < n; i++) {
		contract_free(contracts[i]);
		contract_result_release(&results[i]);
	}
	free(contracts);
	free(results);
	contract_index_free(idx);
	return code;
}
