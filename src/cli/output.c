#include "cli/output.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/contract.h"
#include "util/json.h"

int cli_unknown_option(struct cli_ctx *ctx, char **argv)
{
	/* a long option's code (>= 256: --json=x) is no character to show */
	if (optopt > 0 && optopt < 256)
		return cli_usage_error(ctx, "unknown option '-%c'", optopt);
	return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
}

int cli_json_args(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case 'j':
			ctx->json = true;
			break;
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	return -1;
}

int cli_json_only_args(int argc, char **argv, struct cli_ctx *ctx, const char *name)
{
	int r = cli_json_args(argc, argv, ctx);

	if (r >= 0)
		return r;
	if (optind < argc)
		return cli_usage_error(ctx, "'%s' takes no arguments", name);
	return -1;
}

int cli_missing_value(struct cli_ctx *ctx, char **argv)
{
	return cli_usage_error(ctx, "option '%s' requires a value", argv[optind - 1]);
}

json_t *cli_jstr(const char *s)
{
	return json_str_lossy(s);
}

void cli_jset(json_t *o, const char *key, json_t *v)
{
	json_obj_set(o, key, v);
}

json_t *cli_jlist(const struct strvec *sv)
{
	return json_strvec(sv);
}

/* Reals with 15 significant digits: 0.2 prints as 0.2, not as the 17-digit
 * 0.20000000000000001 of jansson's default (every double a user wrote in a
 * YAML or on a command line has at most 15). */
int cli_print_json(struct cli_ctx *ctx, json_t *root)
{
	/* json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS |
	 * JSON_REAL_PRECISION(15)), byte for byte, in a fraction of its time */
	struct sbuf s = SBUF_INIT(SIZE_MAX);
	int r = json_write_pretty(root, 15, false, &s);

	json_decref(root);
	if (r < 0 || sbuf_addc(&s, '\n') < 0) {
		sbuf_release(&s);
		return cli_error(ctx, BEXIT_BUG, "cannot serialise JSON output");
	}
	(void)fwrite(s.buf, 1, s.len, ctx->out);
	sbuf_release(&s);
	return 0;
}

int cli_option_error(struct cli_ctx *ctx, char **argv, const struct option *opts,
		     const char *short_with_arg)
{
	const struct option *o;

	if (optopt > 0 && optopt < 256 && strchr(short_with_arg, optopt))
		return cli_missing_value(ctx, argv);
	/* glibc names a long option whose value is missing by its code */
	for (o = opts; optopt >= 256 && o->name; o++)
		if (o->val == optopt && !o->flag && o->has_arg == required_argument)
			return cli_missing_value(ctx, argv);
	if (optopt == 0 && optind > 0 && argv[optind - 1] &&
	    strncmp(argv[optind - 1], "--", 2) == 0) {
		const struct option *op;
		const char *a = argv[optind - 1] + 2;

		for (op = opts; op->name; op++)
			if (op->has_arg && strcmp(op->name, a) == 0)
				return cli_missing_value(ctx, argv);
	}
	return cli_unknown_option(ctx, argv);
}

int cli_parse_seconds(const char *s, double max_s, double *ret_s, uint64_t *ret_ms)
{
	char *end;
	double v;

	if (!*s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > max_s)
		return -EINVAL;
	if (ret_s)
		*ret_s = v;
	if (ret_ms) {
		*ret_ms = (uint64_t)(v * 1000.0 + 0.5);
		if (*ret_ms == 0)
			*ret_ms = 1;
	}
	return 0;
}

json_t *cli_contract_result_json(const struct contract_result *r)
{
	json_t *o = json_object();

	cli_jset(o, "adapter", cli_jstr(r->adapter ? r->adapter : ""));
	cli_jset(o, "binary", cli_jstr(r->binary ? r->binary : ""));
	cli_jset(o, "binary_installed", json_boolean(r->binary_installed));
	cli_jset(o, "help_exit_code", json_integer(r->help_exit_code));
	cli_jset(o, "capability_failures", cli_jlist(&r->capability_failures));
	cli_jset(o, "model_failures", cli_jlist(&r->model_failures));
	cli_jset(o, "models_checked", json_boolean(r->models_checked));
	cli_jset(o, "skipped_reason", cli_jstr(r->skipped_reason ? r->skipped_reason : ""));
	cli_jset(o, "runtime_failure", cli_jstr(r->runtime_failure ? r->runtime_failure : ""));
	cli_jset(o, "passed", json_boolean(contract_result_passed(r)));
	cli_jset(o, "verdict", cli_jstr(contract_verdict_to_string(contract_result_verdict(r))));
	return o;
}

void cli_put_safe(FILE *f, const char *s, bool lines)
{
	const unsigned char *c;

	for (c = (const unsigned char *)s; *c; c++)
		(void)fputc((*c < 0x20 && !(lines && *c == '\n')) || *c == 0x7f ? '?' : *c, f);
}
