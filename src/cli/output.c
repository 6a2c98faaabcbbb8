#include "cli/output.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/json.h"

int cli_unknown_option(struct cli_ctx *ctx, char **argv)
{
	if (optopt)
		return cli_usage_error(ctx, "unknown option '-%c'", optopt);
	return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
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
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));

	json_decref(root);
	if (!s)
		return cli_error(ctx, BEXIT_BUG, "cannot serialise JSON output");
	(void)fputs(s, ctx->out);
	(void)fputc('\n', ctx->out);
	free(s);
	return 0;
}
