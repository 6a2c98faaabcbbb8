/* The embedded catalogue as the binary holds it equals the parsed one: the
 * compiled tree of pricing.yaml (scripts/catalog-compile.c,
 * util/ycompiled.h) equals, node by node (kind, position, bytes, style,
 * order), what util/yaml.c makes of the embedded bytes, and the catalogue
 * catalog_add_embedded() makes (static tables and profiles,
 * scripts/catalog-static.c; the prices from the tree) equals the one loaded
 * by parsing, table by table and profile by profile (canonical bytes and
 * hash, origins; test-catalog-static.c compares the static data field by
 * field). A broken compiled blob is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/catalog.h"
#include "adapter/pricing.h"
#include "adapter/profile.h"
#include "util/yaml.h"
#include "util/ycompiled.h"

static void assert_same_node(const struct ynode *a, const struct ynode *b)
{
	size_t i;

	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->line, b->line);
	assert_int_equal(a->col, b->col);
	assert_int_equal(a->n, b->n);
	if (a->kind == YNODE_SCALAR) {
		assert_int_equal(a->len, b->len);
		assert_memory_equal(a->str, b->str, a->len + 1); /* and the NUL */
		assert_int_equal(a->plain, b->plain);
		return;
	}
	for (i = 0; i < a->n; i++) {
		if (a->kind == YNODE_MAP)
			assert_same_node(a->keys[i], b->keys[i]);
		assert_same_node(a->items[i], b->items[i]);
	}
}

static size_t count_nodes(const struct ynode *n)
{
	size_t i, c = 1;

	for (i = 0; n->kind != YNODE_SCALAR && i < n->n; i++)
		c += count_nodes(n->items[i]) +
		     (n->kind == YNODE_MAP ? count_nodes(n->keys[i]) : 0);
	return c;
}

/* The embedded pricing.yaml has a tree, and the tree is the parse; no
 * other file has one (the profiles and the other tables are static data,
 * test-catalog-static.c; the contracts are parsed from their bytes). */
static void test_trees_equal_parse(void **state)
{
	const struct catalog_file *f;
	size_t yaml_files = 0, trees = 0, nodes = 0, others = 0;

	(void)state;
	for (f = catalog_embedded; f->name; f++) {
		const struct catalog_tree *t;
		struct ydoc *parsed = NULL, *compiled = NULL;
		struct diag d;
		size_t n = strlen(f->name);

		if (n <= 5 || strcmp(f->name + n - 5, ".yaml") != 0)
			continue;
		if (strcmp(f->name, CATALOG_PRICING_FILE) != 0) {
			assert_null(catalog_compiled_find(f->name));
			others++;
			continue;
		}
		yaml_files++;
		t = catalog_compiled_find(f->name);
		if (!t)
			fail_msg("'%s' has no compiled tree", f->name);
		memset(&d, 0, sizeof(d));
		if (yaml_load_buf(f->name, (const char *)f->data, f->len, NULL, &parsed, &d) < 0)
			fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
		assert_int_equal(catalog_compiled_doc(t, &compiled, &d), 0);
		assert_same_node(parsed->root, compiled->root);
		/* the file's range holds its tree and nothing else */
		assert_int_equal(count_nodes(compiled->root), t->count);
		nodes += t->count;
		ydoc_free(parsed);
		ydoc_free(compiled);
	}
	for (trees = 0; catalog_compiled[trees].name; trees++)
		if (trees)
			assert_true(strcmp(catalog_compiled[trees - 1].name,
					   catalog_compiled[trees].name) < 0);
	assert_int_equal(trees, yaml_files);
	assert_true(others >= 39 + 5); /* the profiles, the other tables */
	assert_int_equal(yaml_files, 1);
	assert_int_equal(nodes, catalog_compiled_data.n_nodes);
	assert_null(catalog_compiled_find("no-such.yaml"));
}

static void assert_same_origin(const struct catalog_origin *a, const struct catalog_origin *b)
{
	assert_string_equal(a->file, b->file);
	assert_int_equal(a->line, b->line);
	assert_int_equal(a->col, b->col);
}

static void assert_same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void assert_same_decl(const struct strategy_decl *a, const struct strategy_decl *b)
{
	int i;

	assert_memory_equal(&a->strategy, &b->strategy, sizeof(a->strategy));
	assert_memory_equal(a->axis_declared, b->axis_declared, sizeof(a->axis_declared));
	for (i = 0; i < _AXIS_MAX; i++)
		if (a->axis_declared[i])
			assert_same_origin(&a->axis_origin[i], &b->axis_origin[i]);
	assert_same_origin(&a->origin, &b->origin);
	assert_same_str(a->note, b->note);
}

static void assert_same_profile(const struct profile *a, const struct profile *b)
{
	size_t la = 0, lb = 0;
	const char *ca = profile_canonical_bytes(a, &la), *cb = profile_canonical_bytes(b, &lb);

	assert_string_equal(a->source, b->source);
	assert_string_equal(a->name, b->name);
	assert_int_equal(la, lb);
	assert_memory_equal(ca, cb, la);
	assert_string_equal(profile_hash(a), profile_hash(b));
	assert_same_origin(&a->origin, &b->origin);
}

/* The catalogue from the trees is the catalogue from the parse. */
static void test_catalogue_equal_parse(void **state)
{
	struct catalog *a = catalog_new(), *b = catalog_new();
	struct diag d;
	size_t i, j;

	(void)state;
	memset(&d, 0, sizeof(d));
	if (catalog_add_embedded(a, &d) < 0 || catalog_add_embedded_parsed(b, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	/* the embedded profiles are static data (test-catalog-static.c), not
	 * loaded: the catalogue owns none */
	assert_int_equal(a->n_profiles, 0);
	assert_true(b->n_profiles >= 39);
	assert_int_equal(a->n_rows, b->n_rows);
	for (i = 0; i < a->n_rows; i++) {
		assert_string_equal(a->rows[i]->name, b->rows[i]->name);
		assert_same_decl(&a->rows[i]->decl, &b->rows[i]->decl);
	}
	assert_int_equal(a->n_entries, b->n_entries);
	for (i = 0; i < a->n_entries; i++) {
		const struct registry_entry *x = a->entries[i], *y = b->entries[i];

		assert_string_equal(x->name, y->name);
		assert_string_equal(x->display_name, y->display_name);
		assert_same_str(x->binary, y->binary);
		assert_int_equal(x->builtin, y->builtin);
		for (j = 0; x->version_args[j] || y->version_args[j]; j++)
			assert_same_str(x->version_args[j], y->version_args[j]);
		assert_int_equal(!x->strategy, !y->strategy);
		if (x->strategy)
			assert_same_decl(x->strategy, y->strategy);
		assert_same_origin(&x->origin, &y->origin);
		assert_int_equal(!x->profile, !y->profile);
		if (x->profile)
			assert_same_profile(x->profile, y->profile);
		assert_int_equal(x->layer, y->layer);
	}
	assert_int_equal(a->n_multimodal, b->n_multimodal);
	for (i = 0; i < a->n_multimodal; i++) {
		assert_string_equal(a->multimodal[i]->name, b->multimodal[i]->name);
		assert_int_equal(a->multimodal[i]->vision, b->multimodal[i]->vision);
		assert_same_origin(&a->multimodal[i]->origin, &b->multimodal[i]->origin);
	}
	assert_int_equal(a->n_use_cases, b->n_use_cases);
	for (i = 0; i < a->n_use_cases; i++) {
		assert_string_equal(a->use_cases[i]->name, b->use_cases[i]->name);
		assert_string_equal(a->use_cases[i]->summary, b->use_cases[i]->summary);
		assert_string_equal(a->use_cases[i]->install, b->use_cases[i]->install);
		assert_same_origin(&a->use_cases[i]->origin, &b->use_cases[i]->origin);
	}
	assert_int_equal(a->n_roles, b->n_roles);
	for (i = 0; i < a->n_roles; i++) {
		assert_string_equal(a->roles[i]->name, b->roles[i]->name);
		assert_string_equal(a->roles[i]->preamble, b->roles[i]->preamble);
		assert_same_origin(&a->roles[i]->origin, &b->roles[i]->origin);
	}
	{
		size_t na = 0, nb = 0;
		const struct pricing_row *const *pa = catalog_pricing_rows(a, &na);
		const struct pricing_row *const *pb = catalog_pricing_rows(b, &nb);

		assert_int_equal(na, nb);
		assert_true(na > 0);
		for (i = 0; i < na; i++) {
			const struct pricing_row *x = pa[i], *y = pb[i];

			assert_string_equal(x->model, y->model);
			for (j = 0; x->aliases[j] || y->aliases[j]; j++)
				assert_same_str(x->aliases[j], y->aliases[j]);
			assert_memory_equal(&x->input, &y->input, sizeof(x->input));
			assert_memory_equal(&x->output, &y->output, sizeof(x->output));
			assert_memory_equal(&x->cache_read, &y->cache_read, sizeof(x->cache_read));
			assert_memory_equal(&x->cache_write, &y->cache_write,
					    sizeof(x->cache_write));
			assert_same_str(x->date, y->date);
			assert_same_str(x->source, y->source);
			assert_string_equal(x->file, y->file);
			assert_int_equal(x->line, y->line);
			assert_int_equal(x->col, y->col);
		}
	}
	/* and both pass the whole-catalogue gates alike */
	if (catalog_validate(a, NULL, NULL, &d) < 0 || catalog_validate(b, NULL, NULL, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	catalog_free(a);
	catalog_free(b);
}

static const char blob_pool[] = "k\0v";

static const struct ycnode blob_template[3] = {
	{.line = 1, .col = 1, .kids = 0, .n = 1, .kind = YNODE_MAP},
	{.line = 1, .col = 4, .str = 2, .len = 1, .kind = YNODE_SCALAR, .plain = 1},
	{.line = 1, .col = 1, .str = 0, .len = 1, .kind = YNODE_SCALAR, .plain = 1},
};
static struct ycnode blob_nodes[3];
static uint32_t blob_kids[2];

/* {k: v} as nodes 0..2, with one thing broken by how (0: nothing). */
static int load_blob(int how, size_t first, size_t count)
{
	struct ycompiled c = {blob_nodes, blob_kids, blob_pool, 3, 2, sizeof(blob_pool)};
	struct ydoc *doc = NULL;
	int r;

	memcpy(blob_nodes, blob_template, sizeof(blob_nodes));
	blob_kids[0] = 1;
	blob_kids[1] = 2;
	if (how == 1)
		blob_kids[0] = 0; /* a node its own child: a cycle */
	else if (how == 2)
		blob_nodes[1].str = 3; /* past the pool */
	else if (how == 3)
		blob_nodes[0].kids = 1; /* past kids[] */
	r = ydoc_from_compiled("blob", &c, first, count, &doc);
	if (r == 0)
		assert_string_equal(ynode_get(doc->root, "k")->str, "v");
	ydoc_free(doc);
	return r;
}

/* A broken blob (an index out of range, a child before its parent) is
 * refused, never followed. */
static void test_broken_blob_refused(void **state)
{
	(void)state;
	assert_int_equal(load_blob(0, 0, 3), 0);
	assert_int_equal(load_blob(0, 0, 2), -EINVAL);
	assert_int_equal(load_blob(0, 2, 2), -EINVAL);
	assert_int_equal(load_blob(1, 0, 3), -EINVAL);
	assert_int_equal(load_blob(2, 0, 3), -EINVAL);
	assert_int_equal(load_blob(3, 0, 3), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trees_equal_parse),
		cmocka_unit_test(test_catalogue_equal_parse),
		cmocka_unit_test(test_broken_blob_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
