/* Fuzz target for the strict YAML loader: load with small limits, walk the
 * tree, run the schema check and every getter on every map, free. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/yaml.h"

/* A checker: any value it sees once its type is right; reports on "bad". */
static int not_bad(struct ycheck *c, const struct ynode *v, const char *path)
{
	if (v->kind == YNODE_SCALAR && strcmp(v->str, "bad") == 0)
		return ycheck_problem(c, v, path, "'bad' is not allowed");
	return 0;
}

static const struct yfield strategy_fields[] = {
	{"resume", YT_STR, YF_REQUIRED, NULL, not_bad},
	{"workers", YT_INT, 0, NULL, NULL},
	{"old", YT_ANY, YF_IGNORED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield nested_fields[] = {
	{"name", YT_STR, YF_REQUIRED, NULL, not_bad},
	{"args", YT_STRLIST, 0, NULL, NULL},
	{"strategy", YT_MAP, 0, strategy_fields, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield fields[] = {
	{"name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"binary", YT_STR, 0, NULL, NULL},
	{"args", YT_STRLIST, 0, NULL, NULL},
	{"max_parallel_workers", YT_INT, 0, NULL, NULL},
	{"vision", YT_BOOL, 0, NULL, NULL},
	{"strategy", YT_MAP, 0, NULL, NULL},
	{"steps", YT_SEQ, 0, NULL, NULL},
	{"extra", YT_ANY, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const char *const modes[] = {"flag", "flag-pair", "subcommand", "unsupported", NULL};

/* The every-problem checker: each problem counted, the list capped, each
 * problem at a position in the document. */
static void check_every_problem(const struct ydoc *doc, const struct ynode *n)
{
	struct diag_list l = DIAG_LIST_INIT(8);
	struct ycheck c = YCHECK_INIT(doc, YCHECK_FIELD, &l, NULL);
	char p[YAML_PATH_MAX];
	const char *s = NULL, **list = NULL;
	struct diag d;
	double x = 0;
	int64_t v = 0;
	size_t i, len = 0;
	int e = 0, r;

	r = yaml_check(&c, n, nested_fields, "fuzz");
	if ((r == 0) != (c.found == 0) || l.n + l.dropped != c.found)
		abort();
	for (i = 0; i < l.n; i++)
		if (l.v[i].line == 0 || strcmp(l.v[i].file, doc->name) != 0)
			abort();
	diag_list_release(&l);
	for (i = 0; i < n->n && i < 32; i++) {
		const struct ynode *it = n->items[i];

		yaml_path_key(p, sizeof(p), "fuzz", n->keys[i]->str);
		(void)yaml_value_str(doc, it, p, true, &s, &d);
		(void)yaml_value_number(doc, it, p, 0, true, 1e6, &x, &d);
		(void)yaml_value_int(doc, it, p, -5, INT64_MAX, &v, &d);
		(void)yaml_value_enum(doc, it, p, modes, &e, &d);
		if (yaml_value_strlist((struct arena *)(uintptr_t)&doc->arena, doc, it, p, &list,
				       &len, &d) == 0 &&
		    list[len] != NULL)
			abort();
	}
}

static size_t visit(const struct ydoc *doc, const struct ynode *n, unsigned depth)
{
	struct diag d;
	const char *s = NULL, **list = NULL;
	size_t count = 1, i, len = 0;
	int64_t v = 0;
	bool b = false;
	int e = 0;

	if (!n || depth > 64)
		abort(); /* the loader's depth limit must hold */
	(void)ynode_describe(n);
	(void)ynode_is_null(n);
	(void)ynode_bool(n, &b);
	(void)ynode_int(n, &v);
	if (n->kind == YNODE_SCALAR) {
		if (!n->str || strlen(n->str) != n->len)
			abort(); /* scalars are NUL-terminated and NUL-free */
		return count;
	}
	if (n->kind == YNODE_MAP) {
		(void)yaml_check_map(doc, n, fields, "fuzz", &d);
		check_every_problem(doc, n);
		/* ynode_get is linear: exercise the getters on the first keys only */
		for (i = 0; i < n->n && i < 32; i++) {
			const char *key = n->keys[i]->str;

			if (ynode_get(n, key) != n->items[i])
				abort(); /* keys are unique */
			(void)yaml_get_str(doc, n, key, &s, &d);
			(void)yaml_get_bool(doc, n, key, &b, &d);
			(void)yaml_get_int(doc, n, key, -5, 1000, &v, &d);
			(void)yaml_get_enum(doc, n, key, modes, &e, &d);
			if (yaml_get_strlist(doc, n, key, &list, &len, &d) == 0 && list &&
			    list[len] != NULL)
				abort();
		}
		for (i = 0; i < n->n; i++)
			count += visit(doc, n->keys[i], depth + 1);
	}
	for (i = 0; i < n->n; i++)
		count += visit(doc, n->items[i], depth + 1);
	return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct yaml_limits lim = {.max_bytes = 64 * 1024, .max_depth = 16, .max_nodes = 5000};
	struct ydoc *doc = NULL;
	struct diag d;
	int r;

	r = yaml_load_buf("fuzz.yaml", (const char *)data, size, &lim, &doc, &d);
	if (r < 0) {
		if (doc || (r != -EINVAL && r != -EFBIG))
			abort();
		return 0;
	}
	if (!doc || !doc->root)
		abort();
	if (visit(doc, doc->root, 0) > lim.max_nodes)
		abort();
	(void)yaml_check_map(doc, doc->root, fields, "fuzz", &d);
	ydoc_free(doc);
	return 0;
}
