/* bernstein adapters list | show NAME | check [NAME]: the catalogue's
 * adapters, their five-axis strategy declarations and whether their binaries
 * are installed (docs/capability-contract.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/catalog.h"
#include "adapter/contract.h"
#include "adapter/profile.h"
#include "adapter/strategy.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "proc/probe.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define DEFAULT_TIMEOUT_MS 5000
#define MAX_TIMEOUT_S	   3600

static json_t *strategy_json(const struct adapter_strategy *s)
{
	json_t *o = json_object();
	int a;

	for (a = 0; a < _AXIS_MAX; a++)
		cli_jset(o, axis_name((enum axis)a),
			 cli_jstr(axis_to_string((enum axis)a, axis_get(s, (enum axis)a))));
	return o;
}

/* A plain text table: columns separated by two spaces, the last one not
 * padded. cells is rows * ncol strings, row 0 the header. */
static void print_table(FILE *f, const char *const *cells, size_t rows, size_t ncol)
{
	size_t *w = xcalloc(ncol, sizeof(*w));
	size_t r, c;

	for (r = 0; r < rows; r++)
		for (c = 0; c < ncol; c++)
			if (strlen(cells[r * ncol + c]) > w[c])
				w[c] = strlen(cells[r * ncol + c]);
	for (r = 0; r < rows; r++) {
		for (c = 0; c < ncol; c++) {
			const char *cell = cells[r * ncol + c];

			if (c + 1 == ncol)
				(void)fprintf(f, "%s\n", cell);
			else
				(void)fprintf(f, "%-*s  ", (int)w[c], cell);
		}
	}
	free(w);
}

/* The undeclared-strategy error with every name (no diag size limit). */
static int conformance_error(struct cli_ctx *ctx, const struct catalog *cat,
			     const char *const *names)
{
	struct strvec missing = STRVEC_INIT;
	struct sbuf msg = SBUF_INIT(SIZE_MAX);
	size_t i, n;

	n = catalog_undeclared(cat, names, &missing);
	if (n == 0) {
		strvec_clear(&missing);
		return 0;
	}
	(void)sbuf_adds(&msg, CATALOG_UNDECLARED_MSG);
	for (i = 0; i < n; i++)
		(void)sbuf_addf(&msg, "%s%s", i ? ", " : "", missing.v[i]);
	if (ctx->json)
		(void)cli_error(ctx, BEXIT_INVALID, "%s", msg.buf);
	else
		(void)fprintf(ctx->err, "%s: %s\n", ctx->progname, msg.buf);
	sbuf_release(&msg);
	strvec_clear(&missing);
	return BEXIT_INVALID;
}

/* ---- adapters list ---- */

static int cmd_adapters_list(int argc, char **argv, struct cli_ctx *ctx)
{
	struct catalog *cat = NULL;
	int r;
	size_t i;

	r = cli_json_args(argc, argv, ctx);
	if (r >= 0)
		return r;
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	r = catalog_paths_load(ctx, &cat);
	if (r)
		return r;
	if (ctx->json) {
		/* streamed, in cli_print_json()'s format (keys in its order):
		 * the command every start-up benchmark runs */
		struct sbuf out = SBUF_INIT(SIZE_MAX);
		struct json_writer w;

		json_writer_init(&w, &out);
		json_writer_object(&w);
		json_writer_key(&w, "adapters");
		json_writer_array(&w);
		for (i = 0; i < cat->n_entries; i++) {
			const struct registry_entry *e = cat->entries[i];

			json_writer_object(&w);
			json_writer_key(&w, "binary");
			json_writer_str(&w, e->binary);
			json_writer_key(&w, "builtin");
			json_writer_bool(&w, e->builtin);
			json_writer_key(&w, "display_name");
			json_writer_str(&w, e->display_name);
			json_writer_key(&w, "name");
			json_writer_str(&w, e->name);
			json_writer_object_end(&w);
		}
		json_writer_array_end(&w);
		json_writer_object_end(&w);
		r = json_writer_finish(&w);
		if (r < 0 || sbuf_addc(&out, '\n') < 0)
			r = cli_error(ctx, BEXIT_BUG, "cannot serialise JSON output");
		else
			(void)fwrite(out.buf, 1, out.len, ctx->out);
		sbuf_release(&out);
	} else {
		const char **cells = xcalloc(st_mult(cat->n_entries + 1, 3), sizeof(*cells));

		cells[0] = "adapter";
		cells[1] = "display name";
		cells[2] = "binary";
		for (i = 0; i < cat->n_entries; i++) {
			const struct registry_entry *e = cat->entries[i];

			cells[(i + 1) * 3 + 0] = e->name;
			cells[(i + 1) * 3 + 1] = e->display_name;
			cells[(i + 1) * 3 + 2] = e->builtin ? "(built-in)" : e->binary;
		}
		print_table(ctx->out, cells, cat->n_entries + 1, 3);
		free((void *)cells);
		r = 0;
	}
	cat = catalog_free(cat);
	return r;
}

/* ---- adapters show ---- */

static const char *origin_text(const struct strategy_resolved *res, enum axis a, char *buf,
			       size_t size)
{
	const struct strategy_decl *d = res->decl;
	enum strategy_source src = res->axis_source[a];

	if (src == STRATEGY_SOURCE_DEFAULT || !d)
		return "default";
	(void)snprintf(buf, size, "%s %s:%u", strategy_source_name(src), d->axis_origin[a].file,
		       d->axis_origin[a].line);
	return buf;
}

/* The contract backing e's profile, or NULL (no profile, or unbacked). */
static const struct contract_entry *profile_contract(const struct catalog *cat,
						     const struct registry_entry *e)
{
	if (!e->profile || !cat->contracts)
		return NULL;
	return contract_index_find(cat->contracts, e->profile->contract);
}

static json_t *profile_json(const struct catalog *cat, const struct registry_entry *e)
{
	const struct contract_entry *ce = profile_contract(cat, e);
	json_t *o;

	if (!e->profile)
		return json_null();
	o = json_object();
	cli_jset(o, "file", cli_jstr(e->profile->source));
	cli_jset(o, "shape", cli_jstr(profile_shape_to_string(e->profile->shape)));
	cli_jset(o, "profile_hash", cli_jstr(profile_hash(e->profile)));
	cli_jset(o, "contract", cli_jstr(ce ? ce->name : NULL));
	cli_jset(o, "contract_file", cli_jstr(ce ? ce->source : NULL));
	return o;
}

static json_t *show_json(const struct catalog *cat, const struct registry_entry *e,
			 const struct strategy_resolved *res)
{
	json_t *o = json_object(), *src = json_object(), *origin = json_object();
	int a;

	cli_jset(o, "name", cli_jstr(e->name));
	cli_jset(o, "display_name", cli_jstr(e->display_name));
	cli_jset(o, "binary", cli_jstr(e->binary));
	cli_jset(o, "builtin", json_boolean(e->builtin));
	if (e->builtin) {
		cli_jset(o, "version_args", json_null());
	} else {
		json_t *args = json_array();
		const char *const *v;

		for (v = e->version_args; *v; v++)
			(void)json_array_append_new(args, cli_jstr(*v));
		cli_jset(o, "version_args", args);
	}
	cli_jset(origin, "file", cli_jstr(e->origin.file));
	cli_jset(origin, "line", json_integer(e->origin.line));
	cli_jset(o, "origin", origin);
	cli_jset(o, "strategy", strategy_json(&res->strategy));
	for (a = 0; a < _AXIS_MAX; a++) {
		json_t *s = json_object();
		enum strategy_source as = res->axis_source[a];

		cli_jset(s, "source", cli_jstr(strategy_source_name(as)));
		if (as != STRATEGY_SOURCE_DEFAULT && res->decl) {
			cli_jset(s, "file", cli_jstr(res->decl->axis_origin[a].file));
			cli_jset(s, "line", json_integer(res->decl->axis_origin[a].line));
		} else {
			cli_jset(s, "file", json_null());
			cli_jset(s, "line", json_null());
		}
		cli_jset(src, axis_name((enum axis)a), s);
	}
	cli_jset(o, "strategy_source", src);
	cli_jset(o, "resume_capability", cli_jstr(strategy_resume_capability(&res->strategy)));
	cli_jset(o, "declared", json_boolean(catalog_matrix_find(cat, e->name) != NULL));
	cli_jset(o, "note", cli_jstr(res->decl ? res->decl->note : NULL));
	cli_jset(o, "profile_hash", cli_jstr(e->profile ? profile_hash(e->profile) : NULL));
	cli_jset(o, "profile", profile_json(cat, e));
	return o;
}

static void show_text(FILE *f, const struct catalog *cat, const struct registry_entry *e,
		      const struct strategy_resolved *res)
{
	const char *label[_AXIS_MAX] = {
		"resume:", "dangerous mode:", "event channel:", "output mode:", "session state:"};
	char buf[PATH_MAX + 64];
	int a;

	(void)fprintf(f, "%-19s%s\n", "name:", e->name);
	(void)fprintf(f, "%-19s%s\n", "display name:", e->display_name);
	(void)fprintf(f, "%-19s%s\n", "binary:", e->builtin ? "(built-in)" : e->binary);
	if (!e->builtin) {
		const char *const *v;

		(void)fprintf(f, "%-19s", "version args:");
		for (v = e->version_args; *v; v++)
			(void)fprintf(f, "%s%s", v == e->version_args ? "" : " ", *v);
		(void)fputc('\n', f);
	}
	if (e->profile) {
		const struct contract_entry *ce = profile_contract(cat, e);

		(void)fprintf(f, "%-19s%s:%u (%s)\n", "profile:", e->origin.file, e->origin.line,
			      profile_shape_to_string(e->profile->shape));
		(void)fprintf(f, "%-19s%s\n", "profile hash:", profile_hash(e->profile));
		if (ce)
			(void)fprintf(f, "%-19s%s (%s)\n", "contract:", ce->name, ce->source);
		else
			(void)fprintf(f, "%-19s%s\n",
				      "contract:", "none (not backed by a contract)");
	} else {
		(void)fprintf(f, "%-19s%s:%u\n", "registry:", e->origin.file, e->origin.line);
	}
	for (a = 0; a < _AXIS_MAX; a++)
		(void)fprintf(f, "%-19s%-18s%s\n", label[a],
			      axis_to_string((enum axis)a, axis_get(&res->strategy, (enum axis)a)),
			      origin_text(res, (enum axis)a, buf, sizeof(buf)));
	(void)fprintf(f, "%-19s%s\n",
		      "resume capability:", strategy_resume_capability(&res->strategy));
	(void)fprintf(f, "%-19s%s\n", "declared:",
		      catalog_matrix_find(cat, e->name) ? "yes"
							: "no (missing from the strategy matrix)");
	if (res->decl && res->decl->note)
		(void)fprintf(f, "%-19s%s\n", "note:", res->decl->note);
}

static int cmd_adapters_show(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	struct catalog *cat = NULL;
	const struct registry_entry *e;
	struct strategy_resolved res;
	const char *name;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			return cli_help(ctx);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing adapter name");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	name = argv[optind];
	r = catalog_paths_load(ctx, &cat);
	if (r)
		return r;
	e = catalog_find(cat, name);
	if (!e) {
		cat = catalog_free(cat);
		return cli_usage_error(ctx, "unknown adapter '%s'", name);
	}
	(void)strategy_resolve(cat, e->name, NULL, &res);
	if (ctx->json)
		r = cli_print_json(ctx, show_json(cat, e, &res));
	else
		show_text(ctx->out, cat, e, &res);
	cat = catalog_free(cat);
	return r;
}

/* ---- adapters check ---- */

/* One distinct contract backing some row's profile, checked once. */
struct check_contract {
	const struct contract_entry *entry;
	struct contract *contract; /* owned */
	struct contract_result result;
};

/* The contract column's counts: those of `adapters contract-check`'s summary,
 * over the distinct contracts checked. */
struct contract_counts {
	bool ran; /* the contract help commands ran (not --no-probe) */
	size_t checked, passed, drifted, broken, skipped;
};

struct check_row {
	const struct registry_entry *e;
	struct strategy_resolved res;
	bool declared;
	bool probed;
	struct probe probe;
	const char *probe_name; /* "ok", "not-found", ..., "skipped" */
	char *binary_col;	/* owned */
	char *version_col;	/* owned */
	const char *version;	/* JSON version: the first line on success, else NULL */
	bool reachable, failed;
	const struct contract_entry *contract; /* backing its profile, or NULL */
	const struct contract_result *cres;    /* NULL when not checked */
	char *contract_col;		       /* owned */
};

static char *probe_version_col(const struct probe *p, double timeout_s, const char **ret_version)
{
	struct strvec t = STRVEC_INIT;
	char *r;

	*ret_version = NULL;
	switch (p->status) {
	case PROBE_OK:
		if (p->first_line && p->first_line[0]) {
			*ret_version = p->first_line;
			strvec_push(&t, p->first_line);
		} else {
			strvec_push(&t, "(n/a)");
		}
		break;
	case PROBE_NOT_FOUND:
		strvec_push(&t, "(n/a)");
		break;
	case PROBE_TIMED_OUT:
		strvec_pushf(&t, "(timed out after %gs)", timeout_s);
		break;
	case PROBE_EXIT_NONZERO:
		if (p->first_line && p->first_line[0])
			strvec_pushf(&t, "(exit %d: %s)", p->exit_code, p->first_line);
		else
			strvec_pushf(&t, "(exit %d)", p->exit_code);
		break;
	case PROBE_SIGNALED:
		strvec_pushf(&t, "(killed by signal %d)", p->term_signal);
		break;
	case PROBE_SPAWN_FAILED:
		strvec_pushf(&t, "(cannot run: %s)", strerror(p->spawn_errno));
		break;
	default:
		strvec_push(&t, "(n/a)");
		break;
	}
	r = xstrdup(t.v[0]);
	strvec_clear(&t);
	return r;
}

/* The contract column: "no contract", "(not checked)" (--no-probe), "ok",
 * "drift: N", "runtime failure", "not installed" or "skipped". */
static char *contract_col_text(const struct check_row *cr)
{
	struct strvec t = STRVEC_INIT;
	char *r;

	if (!cr->contract)
		strvec_push(&t, "no contract");
	else if (!cr->cres)
		strvec_push(&t, "(not checked)");
	else
		switch (contract_result_verdict(cr->cres)) {
		case CONTRACT_VERDICT_PASSED:
			strvec_push(&t, "ok");
			break;
		case CONTRACT_VERDICT_DRIFTED:
			strvec_pushf(&t, "drift: %zu",
				     cr->cres->capability_failures.nr +
					     cr->cres->model_failures.nr);
			break;
		case CONTRACT_VERDICT_RUNTIME_FAILURE:
			strvec_push(&t, "runtime failure");
			break;
		case CONTRACT_VERDICT_NOT_INSTALLED:
			strvec_push(&t, "not installed");
			break;
		default:
			strvec_push(&t, "skipped");
			break;
		}
	r = xstrdup(t.v[0]);
	strvec_clear(&t);
	return r;
}

/* null (no contract), or {name, file, status, result}: result holds the keys
 * of an `adapters contract-check --json` entry, null when not checked. */
static json_t *contract_json(const struct check_row *cr)
{
	const struct contract_result *r = cr->cres;
	json_t *o, *res;

	if (!cr->contract)
		return json_null();
	o = json_object();
	cli_jset(o, "name", cli_jstr(cr->contract->name));
	cli_jset(o, "file", cli_jstr(cr->contract->source));
	cli_jset(o, "status",
		 cli_jstr(r ? contract_verdict_to_string(contract_result_verdict(r))
			    : "not-checked"));
	if (!r) {
		cli_jset(o, "result", json_null());
		return o;
	}
	res = cli_contract_result_json(r);
	cli_jset(o, "result", res);
	return o;
}

static json_t *contract_counts_json(const struct contract_counts *cc)
{
	json_t *o;

	if (!cc->ran)
		return json_null();
	o = json_object();
	cli_jset(o, "checked", json_integer((json_int_t)cc->checked));
	cli_jset(o, "passed", json_integer((json_int_t)cc->passed));
	cli_jset(o, "drifted", json_integer((json_int_t)cc->drifted));
	cli_jset(o, "runtime_failures", json_integer((json_int_t)cc->broken));
	cli_jset(o, "skipped", json_integer((json_int_t)cc->skipped));
	return o;
}

static json_t *check_json(const struct check_row *rows, size_t n, const struct contract_counts *cc)
{
	json_t *root = json_object(), *arr = json_array(), *sum = json_object();
	size_t i, reachable = 0, declared = 0, failed = 0;

	for (i = 0; i < n; i++) {
		const struct check_row *cr = &rows[i];
		json_t *o = json_object();

		cli_jset(o, "name", cli_jstr(cr->e->name));
		cli_jset(o, "display_name", cli_jstr(cr->e->display_name));
		cli_jset(o, "binary", cli_jstr(cr->e->binary));
		cli_jset(o, "builtin", json_boolean(cr->e->builtin));
		cli_jset(o, "binary_path", cli_jstr(cr->probed ? cr->probe.resolved : NULL));
		cli_jset(o, "version", cli_jstr(cr->version));
		cli_jset(o, "probe", cli_jstr(cr->probe_name));
		cli_jset(o, "probe_detail", cr->failed ? cli_jstr(cr->version_col) : json_null());
		cli_jset(o, "strategy", strategy_json(&cr->res.strategy));
		cli_jset(o, "resume_capability",
			 cli_jstr(strategy_resume_capability(&cr->res.strategy)));
		cli_jset(o, "declared", json_boolean(cr->declared));
		cli_jset(o, "profile_hash",
			 cli_jstr(cr->e->profile ? profile_hash(cr->e->profile) : NULL));
		cli_jset(o, "contract", contract_json(cr));
		(void)json_array_append_new(arr, o);
		reachable += cr->reachable;
		declared += cr->declared;
		failed += cr->failed;
	}
	cli_jset(root, "adapters", arr);
	cli_jset(sum, "total", json_integer((json_int_t)n));
	cli_jset(sum, "reachable", json_integer((json_int_t)reachable));
	cli_jset(sum, "declared", json_integer((json_int_t)declared));
	cli_jset(sum, "failed", json_integer((json_int_t)failed));
	cli_jset(sum, "contracts", contract_counts_json(cc));
	cli_jset(root, "summary", sum);
	return root;
}

static void check_text(FILE *f, const struct check_row *rows, size_t n,
		       const struct contract_counts *cc)
{
	const size_t ncol = 1 + _AXIS_MAX + 3;
	const char **cells = xcalloc(st_mult(n + 1, ncol), sizeof(*cells));
	size_t i, reachable = 0, declared = 0, failed = 0;
	int a;

	cells[0] = "adapter";
	for (a = 0; a < _AXIS_MAX; a++)
		cells[1 + a] = axis_title((enum axis)a);
	cells[1 + _AXIS_MAX] = "contract";
	cells[2 + _AXIS_MAX] = "binary";
	cells[3 + _AXIS_MAX] = "version";
	for (i = 0; i < n; i++) {
		const struct check_row *cr = &rows[i];
		const char **row = cells + (i + 1) * ncol;

		row[0] = cr->e->name;
		for (a = 0; a < _AXIS_MAX; a++)
			row[1 + a] = axis_to_string((enum axis)a,
						    axis_get(&cr->res.strategy, (enum axis)a));
		row[1 + _AXIS_MAX] = cr->contract_col;
		row[2 + _AXIS_MAX] = cr->binary_col;
		row[3 + _AXIS_MAX] = cr->version_col;
		reachable += cr->reachable;
		declared += cr->declared;
		failed += cr->failed;
	}
	print_table(f, cells, n + 1, ncol);
	free((void *)cells);
	(void)fprintf(f, "\n%zu adapters - %zu reachable - %zu declared - %zu failed probes\n", n,
		      reachable, declared, failed);
	if (cc->ran)
		(void)fprintf(
			f,
			"contracts: %zu checked, %zu passed, %zu drifted, %zu runtime failures, %zu skipped\n",
			cc->checked, cc->passed, cc->drifted, cc->broken, cc->skipped);
}

/* The contract column: every distinct contract backing a row's profile is
 * checked once by contract_check_all(), exactly as `adapters contract-check`
 * checks it (help commands in parallel, each bounded by its deadline; a
 * timeout_ms of 0 keeps contract-check's defaults). Without run, only the
 * backing contracts are looked up. Returns 0 or an exit code (printed). */
static int check_contracts(struct cli_ctx *ctx, const struct catalog *cat, struct check_row *rows,
			   size_t n, bool run, uint64_t timeout_ms, struct check_contract **ret,
			   size_t *ret_n, struct contract_counts *counts)
{
	struct contract_check_opts copts = {.envp = (const char *const *)ctx->envp};
	struct check_contract *cc = xcalloc(n ? n : 1, sizeof(*cc));
	const struct contract **cs = NULL;
	struct contract_result *results = NULL;
	size_t i, j, ncc = 0;
	struct diag d;
	int r = 0;

	for (i = 0; i < n; i++) {
		rows[i].contract = profile_contract(cat, rows[i].e);
		if (!rows[i].contract)
			continue;
		for (j = 0; j < ncc && cc[j].entry != rows[i].contract; j++)
			;
		if (j == ncc) {
			cc[ncc].entry = rows[i].contract;
			cc[ncc++].result = (struct contract_result)CONTRACT_RESULT_INIT;
		}
	}
	*ret = cc;
	*ret_n = ncc;
	if (!run)
		return 0;

	diag_clear(&d);
	for (j = 0; j < ncc; j++)
		if ((r = contract_index_load(cc[j].entry, &cc[j].contract, &d)) < 0)
			return cli_diag(ctx, cli_load_exit(r), &d);
	cs = xcalloc(ncc ? ncc : 1, sizeof(*cs));
	results = xcalloc(ncc ? ncc : 1, sizeof(*results));
	for (j = 0; j < ncc; j++) {
		cs[j] = cc[j].contract;
		results[j] = (struct contract_result)CONTRACT_RESULT_INIT;
	}
	copts.help_timeout_ms = timeout_ms;
	copts.models_timeout_ms = timeout_ms;
	if (ncc) {
		r = contract_check_all(cs, ncc, &copts, results);
		if (r < 0) {
			r = cli_error(ctx, BEXIT_ENV, "cannot run the contract help commands: %s",
				      strerror(-r));
			for (j = 0; j < ncc; j++)
				contract_result_release(&results[j]);
			goto out;
		}
	}
	for (j = 0; j < ncc; j++) {
		cc[j].result = results[j]; /* ownership moved */
		switch (contract_result_verdict(&cc[j].result)) {
		case CONTRACT_VERDICT_PASSED:
			counts->passed++;
			break;
		case CONTRACT_VERDICT_DRIFTED:
			counts->drifted++;
			break;
		case CONTRACT_VERDICT_RUNTIME_FAILURE:
			counts->broken++;
			break;
		default:
			counts->skipped++;
			break;
		}
	}
	counts->ran = true;
	counts->checked = ncc;
	for (i = 0; i < n; i++)
		for (j = 0; rows[i].contract && j < ncc; j++)
			if (cc[j].entry == rows[i].contract)
				rows[i].cres = &cc[j].result;
out:
	free((void *)cs);
	free(results);
	return r;
}

/* Text in markdown: no table breaks, no line breaks, no raw HTML. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			(void)fputs("\\|", f);
		else if (*s == '<')
			(void)fputs("&lt;", f);
		else if (*s == '>')
			(void)fputs("&gt;", f);
		else if (*s == '\n')
			(void)fputc(' ', f);
		else
			(void)fputc(*s, f);
	}
}

static void md_cell(FILE *f, const char *s)
{
	(void)fputc(' ', f);
	md_text(f, s);
	(void)fputs(" |", f);
}

static void check_markdown(FILE *f, const struct check_row *rows, size_t n)
{
	size_t i;
	int a;
	bool notes = false;

	(void)fputs("| adapter | binary |", f);
	for (a = 0; a < _AXIS_MAX; a++)
		(void)fprintf(f, " %s |", axis_title((enum axis)a));
	(void)fputs("\n|---|---|", f);
	for (a = 0; a < _AXIS_MAX; a++)
		(void)fputs("---|", f);
	(void)fputc('\n', f);
	for (i = 0; i < n; i++) {
		const struct check_row *cr = &rows[i];
		char name[CATALOG_MAX_NAME + 8];

		(void)snprintf(name, sizeof(name), "`%s`", cr->e->name);
		(void)fputc('|', f);
		md_cell(f, name);
		md_cell(f, cr->e->builtin ? "(built-in)" : cr->e->binary);
		for (a = 0; a < _AXIS_MAX; a++)
			md_cell(f, axis_to_string((enum axis)a,
						  axis_get(&cr->res.strategy, (enum axis)a)));
		(void)fputc('\n', f);
		if (cr->res.decl && cr->res.decl->note)
			notes = true;
	}
	if (!notes)
		return;
	(void)fputs("\nNotes:\n\n", f);
	for (i = 0; i < n; i++) {
		const struct check_row *cr = &rows[i];

		if (!cr->res.decl || !cr->res.decl->note)
			continue;
		(void)fprintf(f, "- `%s`: ", cr->e->name);
		md_text(f, cr->res.decl->note);
		(void)fputc('\n', f);
	}
}

struct check_opts {
	const char *name; /* the one adapter to check, NULL all */
	bool strict, no_probe, markdown, timeout_set;
	uint64_t timeout_ms;
	double timeout_s;
};

/* -1 to go on, else the exit code (printed). */
static int check_parse_args(int argc, char **argv, struct cli_ctx *ctx, struct check_opts *o)
{
	enum { OPT_STRICT = 256, OPT_TIMEOUT, OPT_NO_PROBE, OPT_MARKDOWN };
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"no-probe", no_argument, NULL, OPT_NO_PROBE},
		{"markdown", no_argument, NULL, OPT_MARKDOWN},
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
		case OPT_STRICT:
			o->strict = true;
			break;
		case OPT_TIMEOUT:
			if (cli_parse_seconds(optarg, MAX_TIMEOUT_S, &o->timeout_s,
					      &o->timeout_ms) < 0)
				return cli_usage_error(
					ctx,
					"invalid --timeout '%s' (seconds, more than 0 and at most %d)",
					optarg, MAX_TIMEOUT_S);
			o->timeout_set = true;
			break;
		case OPT_NO_PROBE:
			o->no_probe = true;
			break;
		case OPT_MARKDOWN:
			o->markdown = true;
			break;
		case 'h':
			return cli_help(ctx);
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			if (optopt == OPT_TIMEOUT)
				return cli_missing_value(ctx, argv);
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind < argc)
		o->name = argv[optind++];
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	if (o->markdown && ctx->json)
		return cli_usage_error(ctx, "--markdown and --json cannot be combined");
	if (o->markdown)
		o->no_probe = true;
	return -1;
}

/* Probe the version of every row's binary that is not built in, all in
 * parallel; each probed row owns its probe. Returns 0 or an exit code
 * (printed). */
static int probe_rows(struct cli_ctx *ctx, struct check_row *rows, size_t n, uint64_t timeout_ms)
{
	struct probe *probes = xcalloc(n ? n : 1, sizeof(*probes));
	size_t *probe_row = xcalloc(n ? n : 1, sizeof(*probe_row));
	size_t np = 0, i;
	int r = 0;

	for (i = 0; i < n; i++) {
		if (rows[i].e->builtin)
			continue;
		probes[np].binary = rows[i].e->binary;
		probes[np].args = rows[i].e->version_args;
		probe_row[np++] = i;
	}
	if (np) {
		struct probe_opts po = {
			.path_env = cli_getenv(ctx, "PATH"),
			.env = NULL,
			.timeout_ms = timeout_ms,
			.max_output = 0,
			.max_parallel = (unsigned)(np < 256 ? np : 256),
			.clock = NULL,
		};

		r = probe_run(probes, np, &po);
		if (r < 0) {
			r = cli_error(ctx, BEXIT_ENV, "cannot probe the adapter binaries: %s",
				      strerror(-r));
			goto out;
		}
		for (i = 0; i < np; i++) {
			rows[probe_row[i]].probe = probes[i];
			rows[probe_row[i]].probed = true;
			memset(&probes[i], 0, sizeof(probes[i])); /* ownership moved */
		}
	}
out:
	for (i = 0; i < np; i++)
		probe_release(&probes[i]);
	free(probes);
	free(probe_row);
	return r;
}

/* A row's probe, binary and version columns, and whether it is reachable
 * or its probe failed. */
static void row_probe_cols(struct check_row *cr, double timeout_s)
{
	const struct probe *p = &cr->probe;

	if (cr->e->builtin) {
		cr->probe_name = "skipped";
		cr->binary_col = xstrdup("(built-in)");
		cr->version_col = xstrdup("(n/a)");
		cr->reachable = true;
		return;
	}
	if (!cr->probed) {
		cr->probe_name = "skipped";
		cr->binary_col = xstrdup("(not probed)");
		cr->version_col = xstrdup("(n/a)");
		return;
	}
	cr->probe_name = probe_status_name(p->status);
	cr->version_col = probe_version_col(p, timeout_s, &cr->version);
	if (p->resolved)
		cr->binary_col = xstrdup(p->resolved);
	else if (p->status == PROBE_NOT_FOUND)
		cr->binary_col = xstrdup("(not in PATH)");
	else
		cr->binary_col = xstrdup("(cannot run)");
	cr->reachable = p->status != PROBE_NOT_FOUND && p->resolved;
	cr->failed = p->status != PROBE_OK && p->status != PROBE_NOT_FOUND;
}

static void check_print(struct cli_ctx *ctx, const struct check_row *rows, size_t n,
			const struct contract_counts *counts, bool markdown)
{
	if (markdown)
		check_markdown(ctx->out, rows, n);
	else if (ctx->json)
		(void)cli_print_json(ctx, check_json(rows, n, counts));
	else
		check_text(ctx->out, rows, n, counts);
	(void)fflush(ctx->out);
}

static int cmd_adapters_check(int argc, char **argv, struct cli_ctx *ctx)
{
	struct check_opts o = {
		.timeout_ms = DEFAULT_TIMEOUT_MS,
		.timeout_s = DEFAULT_TIMEOUT_MS / 1000.0,
	};
	struct catalog *cat = NULL;
	struct check_row *rows = NULL;
	struct check_contract *ccs = NULL;
	struct contract_counts counts = {0};
	const char *names[2] = {NULL, NULL};
	size_t n = 0, nccs = 0, i, failed = 0;
	int r;

	r = check_parse_args(argc, argv, ctx, &o);
	if (r >= 0)
		return r;
	r = catalog_paths_load(ctx, &cat);
	if (r)
		return r;
	if (o.name) {
		const struct registry_entry *e = catalog_find(cat, o.name);

		if (!e) {
			cat = catalog_free(cat);
			return cli_usage_error(ctx, "unknown adapter '%s'", o.name);
		}
		names[0] = e->name;
		n = 1;
	} else {
		n = cat->n_entries;
	}

	rows = xcalloc(n ? n : 1, sizeof(*rows));
	for (i = 0; i < n; i++) {
		struct check_row *cr = &rows[i];

		cr->e = o.name ? catalog_find(cat, o.name) : cat->entries[i];
		(void)strategy_resolve(cat, cr->e->name, NULL, &cr->res);
		cr->declared = catalog_matrix_find(cat, cr->e->name) != NULL;
	}
	if (!o.no_probe) {
		r = probe_rows(ctx, rows, n, o.timeout_ms);
		if (r)
			goto out;
	}
	for (i = 0; i < n; i++) {
		row_probe_cols(&rows[i], o.timeout_s);
		failed += rows[i].failed;
	}

	/* After the version probes, not beside them: on a small machine a dozen
	 * agent CLIs starting at once would each take longer than a deadline. */
	r = check_contracts(ctx, cat, rows, n, !o.no_probe, o.timeout_set ? o.timeout_ms : 0, &ccs,
			    &nccs, &counts);
	if (r)
		goto out;
	for (i = 0; i < n; i++)
		rows[i].contract_col = contract_col_text(&rows[i]);
	check_print(ctx, rows, n, &counts, o.markdown);

	r = conformance_error(ctx, cat, o.name ? names : NULL);
	if (r == 0 && o.strict && (failed || counts.drifted || counts.broken))
		r = BEXIT_FAILED;
out:
	for (i = 0; i < n; i++) {
		probe_release(&rows[i].probe);
		free(rows[i].binary_col);
		free(rows[i].version_col);
		free(rows[i].contract_col);
	}
	for (i = 0; i < nccs; i++) {
		contract_free(ccs[i].contract);
		contract_result_release(&ccs[i].result);
	}
	free(ccs);
	free(rows);
	cat = catalog_free(cat);
	return r;
}

const struct cmd adapters_cmds[] = {
	{"list", cmd_adapters_list, NULL, 0, "list the adapters of the catalogue", "[--json]",
	 "Prints one line per registry adapter: its name, display name and binary\n"
	 "('(built-in)' for adapters served by bernstein itself).\n"
	 "\n"
	 "options:\n"
	 "  --json       {\"adapters\": [{\"name\", \"display_name\", \"binary\", \"builtin\"}]}\n"
	 "  -h, --help   this text\n"},
	{"show", cmd_adapters_show, NULL, 0, "show one adapter's declaration", "NAME [--json]",
	 "Prints the adapter's registry entry (its capability profile, with the\n"
	 "profile_hash and the contract backing it, or its registry.yaml entry) and its\n"
	 "strategy on the five axes, each with where it was declared (inline, matrix\n"
	 "FILE:LINE or default), the legacy resume view (native / fallback-fresh) and the\n"
	 "declaration's note. Nothing is run: strategy is declared, never probed.\n"
	 "\n"
	 "options:\n"
	 "  --json       the same as a JSON object (docs/capability-contract.md)\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 ok, 2 unknown adapter or bad usage, 3 invalid catalogue.\n"},
	{"check", cmd_adapters_check, NULL, 0, "strategy table and binary probe of every adapter",
	 "[NAME] [--json] [--strict] [--timeout SECONDS] [--no-probe] [--markdown]",
	 "Prints every adapter's (or NAME's) five-axis strategy, its contract\n"
	 "conformance, whether its binary is on PATH and the first line of\n"
	 "'BINARY --version' (probed in parallel, each bounded by the timeout), then\n"
	 "summary lines. A binary that is found but whose version command fails or\n"
	 "times out counts as a failed probe; a missing binary does not. The contract\n"
	 "column is 'adapters contract-check' of the contract backing the adapter's\n"
	 "profile (help commands in parallel, after the version probes): ok,\n"
	 "drift: N, runtime failure, not installed, skipped or no contract. Fails\n"
	 "with exit 3 (after the table) when a registry adapter has no row in the\n"
	 "strategy matrix.\n"
	 "\n"
	 "options:\n"
	 "  --json              stable JSON (docs/capability-contract.md)\n"
	 "  --strict            exit 1 when any probe failed or a contract drifted or\n"
	 "                      hit a runtime failure\n"
	 "  --timeout SECONDS   per-probe deadline (default 5 for version probes, 30\n"
	 "                      for contract help commands)\n"
	 "  --no-probe          declarations only, run nothing\n"
	 "  --markdown          the declarations as a markdown table (implies --no-probe)\n"
	 "  -h, --help          this text\n"
	 "\n"
	 "Exit codes: 0 ok (drift alone does not fail), 1 a probe failed or a contract\n"
	 "drifted or broke (--strict), 2 unknown adapter or bad usage, 3 invalid\n"
	 "catalogue or an undeclared adapter, 4 probing impossible.\n"},
	{"contract-check", cmd_adapters_contract_check, NULL, 0,
	 "check the pinned upstream CLI contracts for drift",
	 "[NAME] [--json] [--timeout SECONDS] [--list]",
	 "Runs each contract's help command (catalog/contracts/NAME.yaml, overridden by\n"
	 "the user and repo catalogues) in a minimal environment without credentials\n"
	 "and checks that it still advertises every required flag (token-bounded,\n"
	 "case-insensitive) and subcommand. Without NAME every contract is checked; a\n"
	 "binary that is not installed is skipped. See docs/contracts.md.\n"
	 "\n"
	 "options:\n"
	 "  --json              {\"contracts\": [...], \"summary\": {...}}\n"
	 "  --timeout SECONDS   deadline of each help command (default 30)\n"
	 "  --list              list the contract names and exit\n"
	 "  -h, --help          this text\n"
	 "\n"
	 "Exit codes: 0 passed or skipped, 2 drift (or bad usage, unknown NAME),\n"
	 "3 runtime failure of an upstream CLI (not drift) or an invalid contract.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
