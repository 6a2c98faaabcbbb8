/* bernstein onboard record|derive|replay: turn a drafted capability profile
 * into a replayable golden transcript (docs/onboarding.md, issue #8). The
 * flow lives in onboard/; this file parses options, finds the profile,
 * writes the files and prints the per-case report. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/profile.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "onboard/evidence.h"
#include "onboard/heldout.h"
#include "onboard/onboard.h"
#include "onboard/transcript.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

#define DEFAULT_GOLDEN_DIR "tests/golden"
#define TIMEOUT_MAX_S	   (7.0 * 24 * 3600)
#define EVIDENCE_SUFFIX	   ".evidence.yaml"

const char onboard_summary[] = "record, derive and replay onboarding transcripts";

const char onboard_help[] =
	"Onboarding turns a drafted capability profile into evidence: one known-good\n"
	"smoke run of the agent, three held-out cases derived from it, and a golden\n"
	"transcript that replays them. Every run is supervised and bounded (a scratch\n"
	"directory, a normalised environment, a timeout); no output, environment value\n"
	"or user name is stored. See docs/onboarding.md.\n"
	"\n"
	"  1. bernstein onboard record PROFILE --smoke-prompt P --smoke-model M\n"
	"  2. review and commit tests/golden/NAME.yaml and NAME.evidence.yaml\n"
	"  3. bernstein onboard replay tests/golden/NAME.yaml   (in CI)\n";

enum {
	OPT_SMOKE_PROMPT = 256,
	OPT_SMOKE_MODEL,
	OPT_GOLDEN_DIR,
	OPT_NAME,
	OPT_TIMEOUT,
	OPT_PROFILE,
	OPT_JSON,
};

/* ---- helpers ---- */

static bool looks_like_path(const char *s)
{
	size_t n = strlen(s);

	return strchr(s, '/') || (n > 5 && strcmp(s + n - 5, ".yaml") == 0);
}

/* PROFILE: a path to a profile file (it has a '/' or ends in .yaml), or an
 * adapter name of the catalogue. *ret_owned is set when the profile was
 * loaded from a file (the caller frees it); *ret_cat keeps a catalogue
 * profile alive. Returns 0 or the exit code. */
static int find_profile(struct cli_ctx *ctx, const char *arg, struct catalog **ret_cat,
			struct profile **ret_owned, const struct profile **ret)
{
	const struct registry_entry *e;
	struct profile *p = NULL;
	struct diag d;
	int r;

	if (looks_like_path(arg)) {
		diag_clear(&d);
		r = profile_load_file(arg, &p, &d);
		if (r < 0)
			return cli_diag(
				ctx, r == -EINVAL || r == -EFBIG ? BEXIT_INVALID : BEXIT_ENV, &d);
		*ret_owned = p;
		*ret = p;
		return 0;
	}
	r = catalog_paths_load(ctx, ret_cat);
	if (r)
		return r;
	e = catalog_find(*ret_cat, arg);
	if (!e)
		return cli_usage_error(
			ctx,
			"unknown adapter '%s' (a name from 'bernstein adapters list' or a profile file)",
			arg);
	if (!e->profile)
		return cli_usage_error(ctx, "adapter '%s' has no capability profile to onboard",
				       arg);
	*ret = e->profile;
	return 0;
}

/* The scratch parent: $TMPDIR when absolute, else /tmp. */
static const char *tmp_dir(const struct cli_ctx *ctx)
{
	const char *t = cli_getenv(ctx, "TMPDIR");

	return t && t[0] == '/' ? t : "/tmp";
}

static void base_opts(struct cli_ctx *ctx, struct onboard_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->host_env = (const char *const *)ctx->envp;
	o->tmp_dir = tmp_dir(ctx);
}

/* A string as one JSON token on one line (quotes, escapes). */
static void print_quoted(FILE *f, const char *s)
{
	json_t *j = cli_jstr(s);
	char *t = json_dumps(j, JSON_ENCODE_ANY);

	(void)fputs(t ? t : "\"?\"", f);
	free(t);
	json_decref(j);
}

static void print_argv(FILE *f, const char *const *v, size_t n)
{
	size_t i;

	(void)fputc('[', f);
	for (i = 0; i < n; i++) {
		if (i)
			(void)fputs(", ", f);
		print_quoted(f, v[i]);
	}
	(void)fputc(']', f);
}

static json_t *jargv(const char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		(void)json_array_append_new(a, cli_jstr(v[i]));
	return a;
}

static json_t *result_json(const struct onboard_result *res)
{
	json_t *o = json_object();

	cli_jset(o, "status", cli_jstr(onboard_status_to_string(res->status)));
	cli_jset(o, "passed", json_boolean(res->status == ONBOARD_PASSED));
	cli_jset(o, "exit_code", res->exit_code >= 0 ? json_integer(res->exit_code) : json_null());
	cli_jset(o, "duration_ms", json_integer((json_int_t)res->duration_ms));
	cli_jset(o, "message", cli_jstr(res->message));
	return o;
}

static void print_result(FILE *f, const char *what, const struct onboard_result *res)
{
	if (res->status == ONBOARD_PASSED)
		(void)fprintf(f, "%s: passed (%s, %llu ms)\n", what, res->message,
			      (unsigned long long)res->duration_ms);
	else
		(void)fprintf(f, "%s: FAILED %s: %s\n", what, onboard_status_to_string(res->status),
			      res->message);
}

static int exit_for_errno(int r)
{
	switch (r) {
	case -ECANCELED:
		return BEXIT_INTERRUPTED;
	case -EINVAL:
	case -ENOTSUP:
	case -EFBIG:
		return BEXIT_INVALID;
	case -EPROTO:
		return BEXIT_BUG;
	default:
		return BEXIT_ENV;
	}
}

/* ---- onboard record ---- */

static const struct option record_options[] = {
	{"smoke-prompt", required_argument, NULL, OPT_SMOKE_PROMPT},
	{"smoke-model", required_argument, NULL, OPT_SMOKE_MODEL},
	{"golden-dir", required_argument, NULL, OPT_GOLDEN_DIR},
	{"name", required_argument, NULL, OPT_NAME},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"json", no_argument, NULL, OPT_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int write_yaml(struct cli_ctx *ctx, const char *path, const struct sbuf *sb)
{
	int r = atomic_write_file(path, sb->buf, sb->len, 0644);

	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot write '%s': %s", path, strerror(-r));
	return 0;
}

/* Write the evidence and the transcript of a passed recording. */
static int record_write(struct cli_ctx *ctx, const struct onboard_record *rec, const char *dir,
			const char *tpath, const char *epath)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int r;

	r = mkdir_p(dir, 0755);
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot create '%s': %s", dir, strerror(-r));
	r = evidence_emit(rec->evidence, &sb);
	if (r < 0) {
		sbuf_release(&sb);
		return cli_error(ctx, BEXIT_INVALID, "cannot write the evidence: %s",
				 r == -EINVAL ? "a string is not valid UTF-8" : strerror(-r));
	}
	r = write_yaml(ctx, epath, &sb);
	sbuf_reset(&sb);
	if (r == 0) {
		r = transcript_emit(rec->transcript, &sb);
		if (r < 0)
			r = cli_error(ctx, BEXIT_INVALID, "cannot write the transcript: %s",
				      r == -EINVAL ? "a string is not valid UTF-8" : strerror(-r));
		else
			r = write_yaml(ctx, tpath, &sb);
	}
	sbuf_release(&sb);
	return r;
}

static void record_report_text(struct cli_ctx *ctx, const struct onboard_record *rec)
{
	char what[64];
	unsigned k;

	if (rec->smoke_ran) {
		print_result(ctx->out, "smoke", &rec->smoke);
		if (rec->evidence) {
			(void)fprintf(ctx->out, "  argv: ");
			print_argv(ctx->out, rec->evidence->argv.v, rec->evidence->argv.n);
			(void)fputc('\n', ctx->out);
		}
	}
	if (!rec->heldout_ran)
		return;
	(void)fprintf(ctx->out, "held-out cases (seed %s):\n", rec->heldout.seed);
	for (k = 0; k < HELDOUT_CASES; k++) {
		(void)snprintf(what, sizeof(what), "case %u (%s)", k + 1,
			       heldout_variant_name(rec->heldout.cases[k].variant));
		print_result(ctx->out, what, &rec->results[k]);
	}
}

static json_t *record_report_json(const struct onboard_record *rec, const char *name,
				  const char *tpath, const char *epath)
{
	json_t *o = json_object(), *cases = json_array();
	unsigned k;

	cli_jset(o, "name", cli_jstr(name));
	cli_jset(o, "passed", json_boolean(rec->passed));
	cli_jset(o, "smoke", rec->smoke_ran ? result_json(&rec->smoke) : json_null());
	if (rec->smoke_ran && rec->evidence) {
		json_t *s = json_object_get(o, "smoke");

		cli_jset(s, "argv", jargv(rec->evidence->argv.v, rec->evidence->argv.n));
		cli_jset(s, "env_names",
			 jargv(rec->evidence->env_names.v, rec->evidence->env_names.n));
		cli_jset(s, "duration_bucket",
			 cli_jstr(duration_bucket_to_string(rec->evidence->duration)));
	}
	cli_jset(o, "seed", rec->heldout_ran ? cli_jstr(rec->heldout.seed) : json_null());
	for (k = 0; rec->heldout_ran && k < HELDOUT_CASES; k++) {
		const struct heldout_case *c = &rec->heldout.cases[k];
		json_t *j = result_json(&rec->results[k]);

		cli_jset(j, "step_index", json_integer(k));
		cli_jset(j, "variant", cli_jstr(heldout_variant_name(c->variant)));
		cli_jset(j, "prompt", cli_jstr(c->prompt));
		cli_jset(j, "model", cli_jstr(c->model));
		cli_jset(j, "inner_argv", cli_jlist(&c->argv));
		(void)json_array_append_new(cases, j);
	}
	cli_jset(o, "cases", cases);
	cli_jset(o, "transcript", cli_jstr(rec->passed ? tpath : NULL));
	cli_jset(o, "evidence", cli_jstr(rec->passed ? epath : NULL));
	return o;
}

static int cmd_onboard_record(int argc, char **argv, struct cli_ctx *ctx)
{
	const char *prompt = NULL, *model = NULL, *dir = DEFAULT_GOLDEN_DIR, *name = NULL;
	struct onboard_record_request req = {0};
	struct onboard_record rec;
	struct onboard_opts opts;
	struct catalog *cat = NULL;
	struct profile *owned = NULL;
	const struct profile *p = NULL;
	char *tpath = NULL, *epath = NULL;
	uint64_t timeout_ms = 0;
	struct diag d;
	int c, r, code;

	onboard_record_init(&rec);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", record_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_SMOKE_PROMPT:
			prompt = optarg;
			break;
		case OPT_SMOKE_MODEL:
			model = optarg;
			break;
		case OPT_GOLDEN_DIR:
			dir = optarg;
			break;
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_TIMEOUT:
			if (cli_parse_seconds(optarg, TIMEOUT_MAX_S, NULL, &timeout_ms) < 0)
				return cli_usage_error(ctx, "invalid --timeout '%s' (seconds, > 0)",
						       optarg);
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing PROFILE (an adapter name or a profile file)");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	if (!prompt)
		return cli_usage_error(ctx, "missing --smoke-prompt");
	if (!model)
		return cli_usage_error(ctx, "missing --smoke-model");
	if (!dir[0])
		return cli_usage_error(ctx, "empty --golden-dir");
	if (name && !transcript_name_valid(name))
		return cli_usage_error(
			ctx, "invalid --name '%s' ([A-Za-z0-9][A-Za-z0-9_.-]*, at most %d bytes)",
			name, TRANSCRIPT_MAX_NAME);

	code = find_profile(ctx, argv[optind], &cat, &owned, &p);
	if (code)
		goto out;
	if (!name)
		name = p->name;
	if (asprintf(&tpath, "%s/%s.yaml", dir, name) < 0 ||
	    asprintf(&epath, "%s/%s%s", dir, name, EVIDENCE_SUFFIX) < 0)
		BUG("asprintf failed");

	base_opts(ctx, &opts);
	opts.timeout_ms = timeout_ms;
	req.profile = p;
	req.name = name;
	req.smoke_prompt = prompt;
	req.smoke_model = model;
	req.opts = &opts;
	(void)fflush(ctx->out);
	diag_clear(&d);
	r = onboard_record_run(&req, &rec, &d);
	if (r < 0 && r != -ECANCELED) {
		code = cli_diag(ctx, exit_for_errno(r), &d);
		goto out;
	}
	if (r == -ECANCELED)
		rec.passed = false;
	if (rec.passed) {
		code = record_write(ctx, &rec, dir, tpath, epath);
		if (code)
			goto out;
	}
	if (ctx->json) {
		code = cli_print_json(ctx, record_report_json(&rec, name, tpath, epath));
		if (code)
			goto out;
	} else {
		record_report_text(ctx, &rec);
		if (rec.passed)
			(void)fprintf(ctx->out, "recorded: %s (%zu steps)\nevidence: %s\n", tpath,
				      rec.transcript->n_steps, epath);
		else if (r != -ECANCELED)
			(void)fprintf(ctx->out, "not recorded: %s; nothing written\n",
				      rec.smoke.status != ONBOARD_PASSED
					      ? "the smoke run failed"
					      : "a held-out case failed");
	}
	if (r == -ECANCELED)
		code = cli_error(ctx, BEXIT_INTERRUPTED, "interrupted; nothing written");
	else
		code = rec.passed ? BEXIT_OK : BEXIT_FAILED;
out:
	onboard_record_release(&rec);
	profile_free(owned);
	catalog_free(cat);
	free(tpath);
	free(epath);
	return code;
}

/* ---- onboard derive ---- */

static const struct option derive_options[] = {
	{"profile", required_argument, NULL, OPT_PROFILE},
	{"smoke-prompt", required_argument, NULL, OPT_SMOKE_PROMPT},
	{"smoke-model", required_argument, NULL, OPT_SMOKE_MODEL},
	{"json", no_argument, NULL, OPT_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int derive_print(struct cli_ctx *ctx, const struct heldout *h)
{
	unsigned k;

	if (ctx->json) {
		json_t *o = json_object(), *cases = json_array();

		cli_jset(o, "seed", cli_jstr(h->seed));
		for (k = 0; k < HELDOUT_CASES; k++) {
			const struct heldout_case *c = &h->cases[k];
			json_t *j = json_object();

			cli_jset(j, "step_index", json_integer(k));
			cli_jset(j, "variant", cli_jstr(heldout_variant_name(c->variant)));
			cli_jset(j, "prompt", cli_jstr(c->prompt));
			cli_jset(j, "model", cli_jstr(c->model));
			cli_jset(j, "inner_argv", cli_jlist(&c->argv));
			(void)json_array_append_new(cases, j);
		}
		cli_jset(o, "cases", cases);
		return cli_print_json(ctx, o);
	}
	(void)fprintf(ctx->out, "seed: %s\n", h->seed);
	for (k = 0; k < HELDOUT_CASES; k++) {
		const struct heldout_case *c = &h->cases[k];

		(void)fprintf(ctx->out, "case %u (%s):\n  prompt: ", k + 1,
			      heldout_variant_name(c->variant));
		print_quoted(ctx->out, c->prompt);
		(void)fprintf(ctx->out, "\n  model: ");
		if (c->model)
			print_quoted(ctx->out, c->model);
		else
			(void)fputs("null", ctx->out);
		(void)fprintf(ctx->out, "\n  argv: ");
		print_argv(ctx->out, c->argv.v, c->argv.nr);
		(void)fputc('\n', ctx->out);
	}
	return 0;
}

static int cmd_onboard_derive(int argc, char **argv, struct cli_ctx *ctx)
{
	const char *prompt = NULL, *model = NULL, *profile_arg = NULL;
	struct recorded_invocation inv;
	struct arena arena = ARENA_INIT;
	struct evidence *ev = NULL;
	struct catalog *cat = NULL;
	struct profile *owned = NULL;
	const struct profile *p = NULL;
	struct heldout h;
	struct diag d;
	int c, r, code;

	heldout_init(&h);
	arena_init(&arena, 4096);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", derive_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			code = cli_help(ctx);
			goto out;
		case OPT_PROFILE:
			profile_arg = optarg;
			break;
		case OPT_SMOKE_PROMPT:
			prompt = optarg;
			break;
		case OPT_SMOKE_MODEL:
			model = optarg;
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		case ':':
			code = cli_missing_value(ctx, argv);
			goto out;
		default:
			code = cli_unknown_option(ctx, argv);
			goto out;
		}
	}
	if (optind >= argc)
		code = cli_usage_error(ctx, "missing EVIDENCE (the .evidence.yaml file)");
	else if (optind + 1 < argc)
		code = cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	else if (!profile_arg)
		code = cli_usage_error(ctx, "missing --profile");
	else if (!prompt)
		code = cli_usage_error(ctx, "missing --smoke-prompt");
	else if (!model)
		code = cli_usage_error(ctx, "missing --smoke-model");
	else
		code = 0;
	if (code)
		goto out;

	diag_clear(&d);
	r = evidence_load_file(argv[optind], &ev, &d);
	if (r < 0) {
		code = cli_diag(ctx, r == -EINVAL || r == -EFBIG ? BEXIT_INVALID : BEXIT_ENV, &d);
		goto out;
	}
	code = find_profile(ctx, profile_arg, &cat, &owned, &p);
	if (code)
		goto out;
	diag_clear(&d);
	r = transcript_invocation_from_profile(p, &arena, &inv, &d);
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_INVALID, &d);
		goto out;
	}
	diag_clear(&d);
	r = heldout_derive(ev, &inv, prompt, profile_model(p, model), &h, &d);
	if (r < 0) {
		if (!d.file[0])
			(void)snprintf(d.file, sizeof(d.file), "%s", argv[optind]);
		code = cli_diag(ctx, BEXIT_INVALID, &d);
		goto out;
	}
	code = derive_print(ctx, &h);
out:
	heldout_release(&h);
	evidence_free(ev);
	profile_free(owned);
	catalog_free(cat);
	arena_release(&arena);
	return code;
}

/* ---- onboard replay ---- */

static const struct option replay_options[] = {
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"json", no_argument, NULL, OPT_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int cmd_onboard_replay(int argc, char **argv, struct cli_ctx *ctx)
{
	struct onboard_result *results = NULL;
	struct onboard_case *cases = NULL;
	struct transcript *t = NULL;
	struct onboard_opts opts;
	const char *why = NULL;
	uint64_t timeout_ms = 0;
	size_t i, npassed = 0;
	struct diag d;
	bool passed;
	int c, r, code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", replay_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_TIMEOUT:
			if (cli_parse_seconds(optarg, TIMEOUT_MAX_S, NULL, &timeout_ms) < 0)
				return cli_usage_error(ctx, "invalid --timeout '%s' (seconds, > 0)",
						       optarg);
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing TRANSCRIPT (a transcript YAML file)");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);

	diag_clear(&d);
	r = transcript_load_file(argv[optind], &t, &d);
	if (r < 0)
		return cli_diag(ctx, r == -EINVAL || r == -EFBIG ? BEXIT_INVALID : BEXIT_ENV, &d);

	base_opts(ctx, &opts);
	opts.timeout_ms = timeout_ms;
	cases = xcalloc(t->n_steps ? t->n_steps : 1, sizeof(*cases));
	results = xcalloc(t->n_steps ? t->n_steps : 1, sizeof(*results));
	for (i = 0; i < t->n_steps; i++) {
		cases[i].prompt = t->steps[i].prompt;
		cases[i].model = t->steps[i].model;
		cases[i].expected = &t->steps[i].inner_argv;
	}
	r = 0;
	if (t->n_steps) {
		(void)fflush(ctx->out);
		diag_clear(&d);
		r = onboard_run(&t->inv, cases, t->n_steps, &opts, results, &d);
		if (r < 0 && r != -ECANCELED) {
			code = cli_diag(ctx, exit_for_errno(r), &d);
			goto out;
		}
	} else {
		why = "the transcript has no steps (an empty case list is a failure)";
	}
	for (i = 0; i < t->n_steps; i++)
		if (results[i].status == ONBOARD_PASSED)
			npassed++;
	passed = t->n_steps > 0 && npassed == t->n_steps && r >= 0;

	if (ctx->json) {
		json_t *o = json_object(), *steps = json_array();

		cli_jset(o, "transcript_name", cli_jstr(t->name));
		cli_jset(o, "adapter_class", cli_jstr(t->adapter_class));
		cli_jset(o, "file", cli_jstr(argv[optind]));
		cli_jset(o, "passed", json_boolean(passed));
		cli_jset(o, "reason", cli_jstr(why));
		for (i = 0; i < t->n_steps; i++) {
			json_t *j = result_json(&results[i]);

			cli_jset(j, "step_index", json_integer((json_int_t)i));
			(void)json_array_append_new(steps, j);
		}
		cli_jset(o, "steps", steps);
		code = cli_print_json(ctx, o);
		if (code)
			goto out;
	} else {
		char what[32];

		for (i = 0; i < t->n_steps; i++) {
			(void)snprintf(what, sizeof(what), "step %zu", i + 1);
			print_result(ctx->out, what, &results[i]);
		}
		if (why)
			(void)fprintf(ctx->out, "replay '%s': failed: %s\n", t->name, why);
		else
			(void)fprintf(ctx->out, "replay '%s': %s (%zu of %zu steps passed)\n",
				      t->name, passed ? "passed" : "failed", npassed, t->n_steps);
	}
	if (r == -ECANCELED)
		code = cli_error(ctx, BEXIT_INTERRUPTED, "interrupted");
	else
		code = passed ? BEXIT_OK : BEXIT_FAILED;
out:
	free(cases);
	free(results);
	transcript_free(t);
	return code;
}

/* ---- the group ---- */

const struct cmd onboard_cmds[] = {
	{"record", cmd_onboard_record, NULL, 0,
	 "run a smoke case and three held-out cases, write the transcript",
	 "PROFILE --smoke-prompt P --smoke-model M\n"
	 "       [--golden-dir DIR] [--name NAME] [--timeout S] [--json]",
	 "Onboards the agent of PROFILE (an adapter name from the catalogue, or a path to a\n"
	 "profile YAML file, e.g. a draft): runs one smoke invocation with P and M, keeps\n"
	 "its evidence, derives three held-out cases from it (as 'onboard derive' does),\n"
	 "runs them, and when all four passed writes DIR/NAME.yaml (the transcript) and\n"
	 "DIR/NAME.evidence.yaml. When any case fails nothing is written.\n"
	 "\n"
	 "Each case runs in a fresh scratch directory under $TMPDIR (removed after),\n"
	 "supervised with a timeout, stdin on /dev/null, with only PATH, LANG, LC_ALL,\n"
	 "HOME (the scratch one), TERM=dumb, CI=1, NO_COLOR=1 and the profile's\n"
	 "env_passthrough variables. Its output is discarded; only the exit status\n"
	 "counts. This is not a network sandbox. The files hold the argv with the\n"
	 "binary as declared, environment NAMES, the exit code and a duration bucket:\n"
	 "no output, no values, no user name.\n"
	 "\n"
	 "options:\n"
	 "  --smoke-prompt P  the known-good prompt (required)\n"
	 "  --smoke-model M   the model, an alias of the profile or a model id (required)\n"
	 "  --golden-dir DIR  where the files go (default tests/golden; created if missing)\n"
	 "  --name NAME       the transcript's name and file stem (default: the profile's\n"
	 "                    name)\n"
	 "  --timeout S       per case: SIGTERM to its process group after S seconds,\n"
	 "                    SIGKILL 2 s later (default 120)\n"
	 "  --json            the report as JSON: smoke, cases, seed, transcript, evidence\n"
	 "\n"
	 "Exit: 0 recorded, 1 a case failed (nothing written), 2 usage or unknown\n"
	 "adapter, 3 invalid profile or one the recorded-profile adapter cannot express\n"
	 "(a prompt file, a builtin), 4 I/O problem, 130 interrupted.\n"},
	{"derive", cmd_onboard_derive, NULL, 0, "print the three held-out cases of a smoke run",
	 "EVIDENCE --profile PROFILE --smoke-prompt P --smoke-model M [--json]",
	 "Derives the three held-out cases from a smoke run's evidence (the\n"
	 ".evidence.yaml that 'onboard record' writes), the profile's invocation and\n"
	 "the smoke prompt and model. Nothing runs. The same inputs always give the same\n"
	 "three cases: a SHA-256 seed over them picks three of eight prompt variants\n"
	 "(multi-line, quotes, unicode, padded, shell metacharacters, tab, flag-like,\n"
	 "prefixed); the model is the smoke model. The evidence must be of a passed run\n"
	 "of exactly this invocation, prompt and model.\n"
	 "\n"
	 "options:\n"
	 "  --profile PROFILE  an adapter name or a profile file (required)\n"
	 "  --smoke-prompt P   the smoke run's prompt (required)\n"
	 "  --smoke-model M    the smoke run's model, alias or id (required)\n"
	 "  --json             {\"seed\", \"cases\": [{\"prompt\", \"model\", \"inner_argv\",\n"
	 "                     \"variant\", \"step_index\"}]}\n"
	 "\n"
	 "Exit: 0 printed, 2 usage or unknown adapter, 3 invalid evidence or profile, or\n"
	 "evidence that does not fit them, 4 the file cannot be read.\n"},
	{"replay", cmd_onboard_replay, NULL, 0, "run every step of a transcript and report",
	 "TRANSCRIPT [--timeout S] [--json]",
	 "Rehydrates the recorded invocation of TRANSCRIPT (a YAML file with exactly\n"
	 "name, adapter_class, ctor_kwargs and steps) and attempts every step, in order,\n"
	 "supervised like 'onboard record'. A step passes when the invocation builds\n"
	 "exactly its inner_argv and the agent exits 0. Anything else fails the step and\n"
	 "is never skipped: argv_mismatch, exit_nonzero, timed_out (124),\n"
	 "missing_binary (127), exec_error, signaled (128+N). A transcript without\n"
	 "steps fails. Output is discarded after the exit check.\n"
	 "\n"
	 "options:\n"
	 "  --timeout S  per step, as for record (default 120)\n"
	 "  --json       {\"transcript_name\", \"adapter_class\", \"passed\", \"reason\",\n"
	 "               \"steps\": [{\"step_index\", \"passed\", \"status\", \"exit_code\",\n"
	 "               \"duration_ms\", \"message\"}]}\n"
	 "\n"
	 "Exit: 0 every step passed, 1 a step failed or there are none, 2 usage,\n"
	 "3 invalid transcript (FILE:LINE:COL), 4 I/O problem, 130 interrupted.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
