/* bernstein profiles validate FILE... | hash NAME: users' own capability
 * profiles through all three gates, and the content address of a profile
 * (docs/profile-format.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/catalog.h"
#include "adapter/profile.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "util/json.h"
#include "util/xalloc.h"

/* ---- profiles validate ---- */

/* "field 'a.b': rest" -> field "a.b" (in buf), message rest. */
static const char *split_field(const char *msg, char *buf, size_t size, const char **ret_rest)
{
	const char *q;
	size_t n;

	*ret_rest = msg;
	if (strncmp(msg, "field '", 7) != 0)
		return NULL;
	q = strstr(msg + 7, "': ");
	if (!q)
		return NULL;
	n = (size_t)(q - (msg + 7));
	if (n >= size)
		return NULL;
	memcpy(buf, msg + 7, n);
	buf[n] = '\0';
	*ret_rest = q + 3;
	return buf;
}

static json_t *issue_json(const struct diag *d)
{
	json_t *o = json_object();
	char field[256];
	const char *rest, *f = split_field(d->msg, field, sizeof(field), &rest);

	(void)json_object_set_new(o, "file", cli_jstr(d->file));
	(void)json_object_set_new(o, "line", d->line ? json_integer(d->line) : json_null());
	(void)json_object_set_new(o, "column", d->col ? json_integer(d->col) : json_null());
	(void)json_object_set_new(o, "field", cli_jstr(f));
	(void)json_object_set_new(o, "message", cli_jstr(rest));
	return o;
}

/* The catalogue the files are checked against: the usual layers, or the
 * embedded catalogue alone when those do not load (the file being fixed may
 * be one of them). */
static int validate_catalog(struct cli_ctx *ctx, struct catalog **ret)
{
	struct catalog_paths paths;
	char buf[sizeof(((struct diag *)NULL)->file) + sizeof(((struct diag *)NULL)->msg) + 16];
	struct diag d;
	int r;

	diag_clear(&d);
	catalog_paths_find(ctx, &paths);
	r = catalog_load_dirs(paths.dirs, ret, &d);
	catalog_paths_release(&paths);
	if (r >= 0)
		return 0;
	if (!ctx->json)
		cli_warn(
			ctx,
			"the catalogue does not load (%s); checking against the embedded catalogue alone",
			diag_format(&d, buf, sizeof(buf)));
	diag_clear(&d);
	r = catalog_load(NULL, NULL, ret, &d);
	if (r < 0)
		return cli_diag(ctx, BEXIT_BUG, &d);
	return 0;
}

static int cmd_profiles_validate(int argc, char **argv, struct cli_ctx *ctx)
{
	struct catalog *cat = NULL;
	json_t *files = NULL;
	size_t nvalid = 0, ninvalid = 0, nunreadable = 0;
	int i, r;

	r = cli_json_args(argc, argv, ctx);
	if (r >= 0)
		return r;
	if (optind >= argc)
		return cli_usage_error(ctx, "missing profile file");
	r = validate_catalog(ctx, &cat);
	if (r)
		return r;
	if (ctx->json)
		files = json_array();
	for (i = optind; i < argc; i++) {
		struct diag_list is = PROFILE_ISSUES_INIT;
		struct profile *p = NULL;
		struct diag d;
		size_t k;

		diag_clear(&d);
		r = profile_load_file(argv[i], &p, &d);
		if (r < 0 && cli_load_exit(r) == BEXIT_ENV)
			nunreadable++;
		if (r < 0)
			diag_list_add(&is, &d);
		else
			(void)catalog_check_profile(cat, p, CATALOG_CHECK_STANDALONE, &is);
		if (is.n)
			ninvalid++;
		else
			nvalid++;
		if (ctx->json) {
			json_t *o = json_object(), *errs = json_array();

			(void)json_object_set_new(o, "file", cli_jstr(argv[i]));
			(void)json_object_set_new(o, "valid", json_boolean(is.n == 0));
			(void)json_object_set_new(o, "name", cli_jstr(p ? p->name : NULL));
			(void)json_object_set_new(
				o, "shape", cli_jstr(p ? profile_shape_to_string(p->shape) : NULL));
			(void)json_object_set_new(
				o, "profile_hash",
				cli_jstr(p && is.n == 0 ? profile_hash(p) : NULL));
			for (k = 0; k < is.n; k++)
				(void)json_array_append_new(errs, issue_json(&is.v[k]));
			(void)json_object_set_new(o, "errors", errs);
			(void)json_array_append_new(files, o);
		} else if (is.n == 0) {
			(void)fprintf(ctx->out, "%s: ok: profile '%s' (%s), profile_hash %s\n",
				      argv[i], p->name, profile_shape_to_string(p->shape),
				      profile_hash(p));
		} else {
			char buf[sizeof(d.file) + sizeof(d.msg) + 16];

			for (k = 0; k < is.n; k++)
				(void)fprintf(ctx->err, "%s\n",
					      diag_format(&is.v[k], buf, sizeof(buf)));
		}
		diag_list_release(&is);
		profile_free(p);
	}
	if (ctx->json) {
		json_t *root = json_object(), *sum = json_object();

		(void)json_object_set_new(root, "files", files);
		(void)json_object_set_new(sum, "total",
					  json_integer((json_int_t)(nvalid + ninvalid)));
		(void)json_object_set_new(sum, "valid", json_integer((json_int_t)nvalid));
		(void)json_object_set_new(sum, "invalid", json_integer((json_int_t)ninvalid));
		(void)json_object_set_new(root, "summary", sum);
		r = cli_print_json(ctx, root);
		if (r)
			goto out;
	}
	/* a file that cannot be read (missing, a FIFO...) is 4, and wins */
	r = nunreadable ? BEXIT_ENV : ninvalid ? BEXIT_INVALID : 0;
out:
	catalog_free(cat);
	return r;
}

/* ---- profiles hash ---- */

static int cmd_profiles_hash(int argc, char **argv, struct cli_ctx *ctx)
{
	struct catalog *cat = NULL;
	const struct registry_entry *e;
	const struct profile *p;
	const char *name;
	int r;

	r = cli_json_args(argc, argv, ctx);
	if (r >= 0)
		return r;
	if (optind >= argc)
		return cli_usage_error(ctx, "missing profile name");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	name = argv[optind];
	r = catalog_paths_load(ctx, &cat);
	if (r)
		return r;
	e = catalog_find(cat, name);
	if (!e) {
		catalog_free(cat);
		return cli_usage_error(ctx, "unknown adapter '%s'", name);
	}
	p = e->profile;
	if (!p) {
		r = cli_error(
			ctx, BEXIT_USAGE,
			"adapter '%s' has no capability profile (it is a registry.yaml entry, %s:%u)",
			name, e->origin.file, e->origin.line);
		catalog_free(cat);
		return r;
	}
	if (ctx->json) {
		json_t *root = json_object(), *canon = NULL;
		size_t canon_len;
		const char *canon_bytes = profile_canonical_bytes(p, &canon_len);
		struct diag d;

		diag_clear(&d);
		if (json_parse_strict("canonical", canon_bytes, canon_len, &canon, &d) < 0) {
			r = cli_error(ctx, BEXIT_BUG, "cannot re-read the canonical form: %s",
				      d.msg);
			json_decref(root);
			goto out;
		}
		(void)json_object_set_new(root, "name", cli_jstr(p->name));
		(void)json_object_set_new(root, "source", cli_jstr(p->source));
		(void)json_object_set_new(root, "profile_hash", cli_jstr(profile_hash(p)));
		(void)json_object_set_new(root, "canonical_json", cli_jstr(canon_bytes));
		(void)json_object_set_new(root, "canonical", canon);
		r = cli_print_json(ctx, root);
	} else {
		(void)fprintf(ctx->out, "%s\n", profile_hash(p));
		r = 0;
	}
out:
	catalog_free(cat);
	return r;
}

const struct cmd profiles_cmds[] = {
	{"validate", cmd_profiles_validate, NULL, 0, "check profile files through all three gates",
	 "FILE... [--json]",
	 "Loads each FILE (profiles/NAME.yaml: NAME must equal its 'name:') and checks it\n"
	 "against the catalogue, as if it were installed there:\n"
	 "  1. construction-time validation: unknown, duplicate or missing keys, wrong\n"
	 "     types, blank names, empty flags, no way to deliver the prompt,\n"
	 "     max_parallel_workers < 1, unknown axis values or placeholders, a\n"
	 "     resume strategy without its spelling...;\n"
	 "  2. the contract cross-check: no binary, subcommand or flag that its\n"
	 "     contract (contracts/NAME.yaml, or 'contract:') does not carry;\n"
	 "  3. registry integration: a strategy-matrix row for its name, no vision\n"
	 "     that multimodal.yaml does not grant, no registry.yaml entry beside it.\n"
	 "Each problem is one line on stderr, FILE:LINE:COL: field 'x': message; a\n"
	 "valid file gets 'FILE: ok: ...' with its profile_hash on stdout.\n"
	 "\n"
	 "options:\n"
	 "  --json       {\"files\": [{\"file\", \"valid\", \"name\", \"shape\",\n"
	 "               \"profile_hash\", \"errors\": [{\"file\", \"line\", \"column\",\n"
	 "               \"field\", \"message\"}]}], \"summary\": {...}}\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 every file is valid, 2 bad usage, 3 a file is invalid, 4 a file\n"
	 "cannot be read (4 wins over 3).\n"},
	{"hash", cmd_profiles_hash, NULL, 0, "print a profile's content address", "NAME [--json]",
	 "Prints the profile_hash of adapter NAME's capability profile: SHA-256 over the\n"
	 "RFC 8785 canonical JSON of the normalized profile (every key present, defaults\n"
	 "filled in, notes left out; docs/profile-format.md).\n"
	 "\n"
	 "options:\n"
	 "  --json       {\"name\", \"source\", \"profile_hash\", \"canonical_json\" (the exact\n"
	 "               bytes hashed), \"canonical\" (the same as an object)}\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 ok, 2 unknown adapter or one without a profile, 3 invalid\n"
	 "catalogue.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
