/* bernstein integrations list: one line of copy per agent, what it is good
 * for and how to install it (catalog/use-cases.yaml). */
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
#include "util/xalloc.h"

static int cmd_integrations_list(int argc, char **argv, struct cli_ctx *ctx)
{
	struct catalog *cat = NULL;
	size_t i, w = strlen("agent");
	int r = 0;

	r = cli_json_args(argc, argv, ctx);
	if (r >= 0)
		return r;
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	r = catalog_paths_load(ctx, &cat);
	if (r)
		return r;
	if (ctx->json) {
		json_t *root = json_object(), *arr = json_array();
		char *s;

		for (i = 0; i < cat->n_entries; i++) {
			const struct registry_entry *e = cat->entries[i];
			const struct use_case *u = catalog_use_case(cat, e->name);
			json_t *o = json_object();

			(void)json_object_set_new(o, "name", json_string(e->name));
			(void)json_object_set_new(o, "display_name", json_string(e->display_name));
			(void)json_object_set_new(o, "binary",
						  e->binary ? json_string(e->binary) : json_null());
			(void)json_object_set_new(o, "builtin", json_boolean(e->builtin));
			(void)json_object_set_new(o, "summary",
						  u ? json_string(u->summary) : json_null());
			(void)json_object_set_new(o, "install",
						  u ? json_string(u->install) : json_null());
			(void)json_object_set_new(
				o, "profile",
				e->profile ? json_string(profile_shape_to_string(e->profile->shape))
					   : json_null());
			(void)json_array_append_new(arr, o);
		}
		(void)json_object_set_new(root, "integrations", arr);
		s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
		json_decref(root);
		if (!s) {
			r = cli_error(ctx, BEXIT_BUG, "cannot serialise JSON output");
			goto out;
		}
		(void)fprintf(ctx->out, "%s\n", s);
		free(s);
		goto out;
	}
	for (i = 0; i < cat->n_entries; i++)
		if (strlen(cat->entries[i]->name) > w)
			w = strlen(cat->entries[i]->name);
	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];
		const struct use_case *u = catalog_use_case(cat, e->name);

		if (u)
			(void)fprintf(ctx->out, "%-*s  %s (install: %s)\n", (int)w, e->name,
				      u->summary, u->install);
		else
			(void)fprintf(ctx->out, "%-*s  %s\n", (int)w, e->name, e->display_name);
	}
out:
	catalog_free(cat);
	return r;
}

const struct cmd integrations_cmds[] = {
	{"list", cmd_integrations_list, NULL, 0,
	 "what each agent is good for and how to install it", "[--json]",
	 "Prints one line per adapter of the catalogue: its name, what it is good for and\n"
	 "how to install it (catalog/use-cases.yaml, overridable like the rest of the\n"
	 "catalogue). An adapter without copy shows its display name.\n"
	 "\n"
	 "options:\n"
	 "  --json       {\"integrations\": [{\"name\", \"display_name\", \"binary\", \"builtin\",\n"
	 "               \"summary\", \"install\", \"profile\"}]} (\"profile\": factory, module\n"
	 "               or null)\n"
	 "  -h, --help   this text\n"
	 "\n"
	 "Exit codes: 0 ok, 2 bad usage, 3 invalid catalogue.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
