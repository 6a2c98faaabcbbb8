#include "cli/output.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/xalloc.h"

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
	json_t *j;
	char *copy;
	size_t i;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	copy = xstrdup(s);
	for (i = 0; copy[i]; i++)
		if ((unsigned char)copy[i] >= 0x80)
			copy[i] = '?';
	j = json_string(copy);
	free(copy);
	return j ? j : json_null();
}

void cli_jset(json_t *o, const char *key, json_t *v)
{
	(void)json_object_set_new(o, key, v ? v : json_null());
}

json_t *cli_jlist(const struct strvec *sv)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < sv->nr; i++)
		(void)json_array_append_new(a, cli_jstr(sv->v[i]));
	return a;
}

int cli_print_json(struct cli_ctx *ctx, json_t *root)
{
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);

	json_decref(root);
	if (!s)
		return cli_error(ctx, BEXIT_BUG, "cannot serialise JSON output");
	(void)fputs(s, ctx->out);
	(void)fputc('\n', ctx->out);
	free(s);
	return 0;
}
