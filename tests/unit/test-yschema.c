/* util/yschema: the one schema checker and the typed value getters. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/yschema.h"

static struct ydoc *load(const char *text)
{
	struct ydoc *doc = NULL;
	struct diag d = {0};

	if (yaml_load_buf("t.yaml", text, strlen(text), NULL, &doc, &d) < 0)
		fail_msg("load failed: %u:%u: %s", d.line, d.col, d.msg);
	return doc;
}

/* The list holds exactly want[] (each "L:C: MESSAGE"), in order. */
static void expect_list(const struct diag_list *l, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		char got[700];

		if (i >= l->n)
			fail_msg("problem %zu missing: %s", i, want[i]);
		(void)snprintf(got, sizeof(got), "%u:%u: %s", l->v[i].line, l->v[i].col,
			       l->v[i].msg);
		assert_string_equal(l->v[i].file, "t.yaml");
		assert_string_equal(got, want[i]);
	}
	if (l->n != i)
		fail_msg("%zu problems, expected %zu (extra: %s)", l->n, i, l->v[i].msg);
}

/* A checker: the value must not be "bad". */
static int not_bad(struct ycheck *c, const struct ynode *v, const char *path)
{
	if (v->kind == YNODE_SCALAR && strcmp(v->str, "bad") == 0)
		return ycheck_problem(c, v, path, "'bad' is not allowed");
	return 0;
}

static const struct yfield inner_fields[] = {
	{"port", YT_INT, YF_REQUIRED, NULL, NULL},
	{"host", YT_STR, 0, NULL, not_bad},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield top_fields[] = {
	{"name", YT_STR, YF_REQUIRED, NULL, NULL}, {"count", YT_INT, 0, NULL, NULL},
	{"flag", YT_BOOL, 0, NULL, NULL},	   {"tags", YT_STRLIST, 0, NULL, NULL},
	{"server", YT_MAP, 0, inner_fields, NULL}, {"legacy", YT_STR, YF_IGNORED, NULL, NULL},
	{"kind", YT_STR, YF_REQUIRED, NULL, NULL}, {NULL, 0, 0, NULL, NULL},
};

static const char bad_doc[] = "name: [1]\n"
			      "count: 1.5\n"
			      "colour: red\n"
			      "tags: [a, {x: 1}, b, ~]\n"
			      "server: {host: bad, extra: 1}\n"
			      "legacy: 3\n"
			      "flag: yes\n";

static void test_every_problem_in(void **state)
{
	static const char *const want[] = {
		"1:7: 'name': expected a string, got a sequence",
		"2:8: 'count': expected an integer, got a number",
		"3:1: unknown key 'colour' in thing (expected one of: name, count, flag, tags, server, kind)",
		"4:11: 'tags' item 2: expected a string, got a mapping",
		"4:22: 'tags' item 4: expected a string, got null",
		"5:16: field 'thing.server.host': 'bad' is not allowed",
		"5:21: unknown key 'extra' in thing.server (expected one of: port, host)",
		"5:9: thing.server: missing required key 'port'",
		"7:7: 'flag': expected a boolean, got a string",
		"1:1: thing: missing required key 'kind'",
		NULL,
	};
	struct ydoc *doc = load(bad_doc);
	struct diag_list l = DIAG_LIST_INIT(0);
	struct diag first = {0};
	struct ycheck c = YCHECK_INIT(doc, YCHECK_IN, &l, &first);

	(void)state;
	assert_int_equal(yaml_check(&c, doc->root, top_fields, "thing"), -EINVAL);
	expect_list(&l, want);
	assert_int_equal(c.found, l.n);
	assert_string_equal(first.msg, want[0] + strlen("1:7: "));
	assert_int_equal(first.line, 1);
	diag_list_release(&l);
	ydoc_free(doc);
}

static void test_every_problem_field(void **state)
{
	static const char *const want[] = {
		"1:7: field 'name': expected a string, got a sequence",
		"2:8: field 'count': expected an integer, got a number",
		"3:1: field 'colour': unknown key (expected one of: name, count, flag, tags, server, kind)",
		"4:11: field 'tags[1]': expected a string, got a mapping",
		"4:22: field 'tags[3]': expected a string, got null",
		"5:16: field 'server.host': 'bad' is not allowed",
		"5:21: field 'server.extra': unknown key (expected one of: port, host)",
		"5:9: field 'server.port': missing (required)",
		"7:7: field 'flag': expected a boolean, got a string",
		"1:1: field 'kind': missing (required)",
		NULL,
	};
	struct ydoc *doc = load(bad_doc);
	struct diag_list l = DIAG_LIST_INIT(0);
	struct ycheck c = YCHECK_INIT(doc, YCHECK_FIELD, &l, NULL);

	(void)state;
	assert_int_equal(yaml_check(&c, doc->root, top_fields, ""), -EINVAL);
	expect_list(&l, want);
	diag_list_release(&l);
	ydoc_free(doc);
}

static void test_clean_and_capped(void **state)
{
	struct ydoc *doc = load("name: x\nkind: y\nserver: {port: 80, host: ok}\nlegacy: [1]\n");
	struct diag_list l = DIAG_LIST_INIT(2);
	struct diag first = {0};
	struct ycheck c = YCHECK_INIT(doc, YCHECK_IN, &l, &first);

	(void)state;
	assert_int_equal(yaml_check(&c, doc->root, top_fields, "thing"), 0);
	assert_int_equal(c.found, 0);
	assert_string_equal(first.msg, ""); /* untouched on success */
	ydoc_free(doc);

	/* a capped list still counts every problem */
	doc = load("a: 1\nb: 2\nc: 3\n");
	c = (struct ycheck)YCHECK_INIT(doc, YCHECK_IN, &l, NULL);
	assert_int_equal(yaml_check(&c, doc->root, inner_fields, "x"), -EINVAL);
	assert_int_equal(c.found, 4);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.dropped, 2);
	diag_list_release(&l);
	ydoc_free(doc);
}

static void test_not_a_map(void **state)
{
	struct ydoc *doc = load("- 1\n");
	struct diag d = {0};
	struct ycheck c = YCHECK_INIT(doc, YCHECK_FIELD, NULL, &d);

	(void)state;
	assert_int_equal(yaml_check_map(doc, doc->root, top_fields, "thing", &d), -EINVAL);
	assert_string_equal(d.msg, "thing: expected a mapping, got a sequence");
	assert_int_equal(yaml_check(&c, doc->root, top_fields, "x.y"), -EINVAL);
	assert_string_equal(d.msg, "field 'x.y': expected a mapping, got a sequence");
	ydoc_free(doc);
}

static void test_check_keys(void **state)
{
	static const char *const keys[] = {"a", "b", NULL};
	static const char *const ignored[] = {"old", NULL};
	struct ydoc *doc = load("a: 1\nold: 2\n\"c\\n'\": 3\nb: [x]\n");
	struct diag_list l = DIAG_LIST_INIT(0);
	struct ycheck c = YCHECK_INIT(doc, YCHECK_IN, &l, NULL);

	(void)state;
	assert_int_equal(yaml_check_keys(&c, doc->root, keys, ignored, "tasks[0]"), -EINVAL);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.v[0].line, 3);
	assert_string_equal(l.v[0].msg,
			    "unknown key 'c\\n\\'' in tasks[0] (expected one of: a, b)");
	diag_list_release(&l);
	c.found = 0;
	assert_int_equal(yaml_check_keys(&c, doc->root, keys,
					 (const char *const[]){"old", "c\n'", NULL}, "t"),
			 0);
	ydoc_free(doc);
}

static void test_long_key_list(void **state)
{
	static const char *const keys[] = {
		"k00000000000000000000", "k01000000000000000000", "k02000000000000000000",
		"k03000000000000000000", "k04000000000000000000", "k05000000000000000000",
		"k06000000000000000000", "k07000000000000000000", "k08000000000000000000",
		"k09000000000000000000", "k10000000000000000000", "k11000000000000000000",
		"k12000000000000000000", "k13000000000000000000", "k14000000000000000000",
		"k15000000000000000000", "k16000000000000000000", "k17000000000000000000",
		"k18000000000000000000", "k19000000000000000000", NULL,
	};
	struct ydoc *doc = load("zz: 1\n");
	struct diag d = {0};
	struct ycheck c = YCHECK_INIT(doc, YCHECK_IN, NULL, &d);
	size_t n;

	(void)state;
	assert_int_equal(yaml_check_keys(&c, doc->root, keys, NULL, "m"), -EINVAL);
	n = strlen(d.msg);
	assert_true(n > 4);
	assert_string_equal(d.msg + n - 4, "...)");
	ydoc_free(doc);
}

static void test_values(void **state)
{
	struct ydoc *doc = load("s: hi\nnul: ~\nempty: ''\nf: 0.5\nbig: 1e999\ni: 7\n"
				"l: [a, b]\nbadl: [a, '']\ne: llm\n");
	const struct ynode *r = doc->root;
	const char *s = "untouched", **v = NULL;
	struct diag d = {0};
	double x = -1;
	int64_t i = -1;
	size_t n = 0;
	int e = -1;

	(void)state;
	assert_int_equal(yaml_value_str(doc, ynode_get(r, "s"), "s", false, &s, &d), 0);
	assert_string_equal(s, "hi");
	assert_int_equal(yaml_value_str(doc, ynode_get(r, "nul"), "nul", true, &s, &d), 0);
	assert_null(s);
	assert_int_equal(yaml_value_str(doc, ynode_get(r, "nul"), "a.nul", false, &s, &d), -EINVAL);
	assert_string_equal(d.msg, "field 'a.nul': expected a string, got null");
	assert_int_equal(yaml_value_str(doc, ynode_get(r, "empty"), "e", false, &s, &d), -EINVAL);
	assert_string_equal(d.msg, "field 'e': empty string");

	assert_int_equal(yaml_value_number(doc, ynode_get(r, "f"), "f", 0, true, 1, &x, &d), 0);
	assert_true(x == 0.5);
	assert_int_equal(yaml_value_number(doc, ynode_get(r, "f"), "f", 1, false, INFINITY, &x, &d),
			 -EINVAL);
	assert_string_equal(d.msg, "field 'f': 0.5 is out of range (expected a number >= 1)");
	assert_int_equal(yaml_value_number(doc, ynode_get(r, "big"), "big", 0, false, 1, &x, &d),
			 -EINVAL);
	assert_string_equal(d.msg, "field 'big': number out of range");
	assert_int_equal(yaml_value_number(doc, ynode_get(r, "s"), "s", 0, true, 1, &x, &d),
			 -EINVAL);
	assert_string_equal(d.msg, "field 's': expected a number > 0 and <= 1, got a string");

	assert_int_equal(yaml_value_int(doc, ynode_get(r, "i"), "i", 0, 10, &i, &d), 0);
	assert_int_equal(i, 7);
	assert_int_equal(yaml_value_int(doc, ynode_get(r, "i"), "i", 8, 10, &i, &d), -EINVAL);
	assert_string_equal(d.msg, "field 'i': 7 is out of range (8..10)");
	assert_int_equal(yaml_value_int(doc, ynode_get(r, "i"), "i", 8, INT64_MAX, &i, &d),
			 -EINVAL);
	assert_string_equal(d.msg, "field 'i': 7 is out of range (expected >= 8)");
	assert_int_equal(yaml_value_int(doc, ynode_get(r, "f"), "f", 0, 1, &i, &d), -EINVAL);
	assert_string_equal(d.msg, "field 'f': expected an integer, got a number");
	assert_int_equal(i, 7);

	assert_int_equal(yaml_value_strlist(&doc->arena, doc, ynode_get(r, "l"), "l", &v, &n, &d),
			 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[1], "b");
	assert_null(v[2]);
	assert_int_equal(
		yaml_value_strlist(&doc->arena, doc, ynode_get(r, "badl"), "badl", &v, &n, &d),
		-EINVAL);
	assert_string_equal(d.msg, "field 'badl[1]': empty string");
	assert_int_equal(d.line, 8);

	assert_int_equal(yaml_value_enum(doc, ynode_get(r, "e"), "e",
					 (const char *const[]){"full", "llm", NULL}, &e, &d),
			 0);
	assert_int_equal(e, 1);
	assert_int_equal(yaml_value_enum(doc, ynode_get(r, "s"), "x.e",
					 (const char *const[]){"full", "llm", NULL}, &e, &d),
			 -EINVAL);
	assert_string_equal(d.msg, "field 'x.e': unknown value 'hi' (expected one of: full, llm)");
	ydoc_free(doc);
}

static void test_paths_and_quote(void **state)
{
	char b[YAML_PATH_MAX], q[80], big[200];

	(void)state;
	assert_string_equal(yaml_path_key(b, sizeof(b), "", "a"), "a");
	assert_string_equal(yaml_path_key(b, sizeof(b), "a", "b"), "a.b");
	assert_string_equal(yaml_path_index(b, sizeof(b), "a.b", 3), "a.b[3]");
	assert_string_equal(yaml_path_index(b, sizeof(b), "", 0), "[0]");
	assert_string_equal(yaml_path_index(b, sizeof(b), "x", 1234567), "x[1234567]");
	assert_string_equal(yaml_path_index(b, sizeof(b), "x", SIZE_MAX),
			    SIZE_MAX == UINT64_MAX ? "x[18446744073709551615]" : "x[4294967295]");
	/* cut like snprintf */
	assert_string_equal(yaml_path_index(b, 5, "abc", 42), "abc[");
	assert_string_equal(yaml_path_index(b, 3, "abcdef", 7), "ab");
	assert_string_equal(yaml_path_index(b, 1, "abc", 7), "");
	assert_string_equal(yaml_quote(q, sizeof(q), "a\nb"), "a?b");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(strlen(yaml_quote(q, sizeof(q), big)), 67);
}

/* ---- yaml_named_map ---- */

static bool lower_only(const char *s)
{
	for (; *s; s++)
		if (*s < 'a' || *s > 'z')
			return false;
	return true;
}

struct seen {
	char names[4][16];
	char paths[4][32];
	size_t n;
};

/* Records each entry; a value "stop" fails at the value. */
static int record(void *ctx, const struct ydoc *doc, size_t i, const struct ynode *k,
		  const struct ynode *v, const char *path, struct diag *reterr)
{
	struct seen *s = ctx;

	assert_int_equal(i, s->n);
	if (v->kind == YNODE_SCALAR && strcmp(v->str, "stop") == 0)
		return yaml_field_err(doc, v, reterr, path, "stopped");
	(void)snprintf(s->names[s->n], sizeof(s->names[0]), "%s", k->str);
	(void)snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", path);
	s->n++;
	return 0;
}

static const struct ynamed named = {
	.what = "a mapping of things",
	.name_ok = lower_only,
	.kind = "thing",
	.expect = "[a-z]+, at most " YAML_STRINGIFY(16) " bytes",
	.entry = record,
};

static void test_named_map(void **state)
{
	struct ydoc *doc = load("ok: {a: 1, b: {c: 2}}\n"
				"empty: {}\n"
				"list: [a]\n"
				"badname: {a: 1, B2: 2}\n"
				"stops: {a: 1, b: stop, c: 3}\n");
	const struct ynode *r = doc->root;
	struct seen s = {0};
	struct diag d = {0};

	(void)state;
	assert_int_equal(yaml_named_map(doc, ynode_get(r, "ok"), "x.ok", &named, &s, &d), 2);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "a");
	assert_string_equal(s.paths[0], "x.ok.a");
	assert_string_equal(s.names[1], "b");
	assert_string_equal(s.paths[1], "x.ok.b");

	s.n = 0;
	assert_int_equal(yaml_named_map(doc, ynode_get(r, "empty"), "empty", &named, &s, &d), 0);
	assert_int_equal(s.n, 0);

	assert_int_equal(yaml_named_map(doc, ynode_get(r, "list"), "list", &named, &s, &d),
			 -EINVAL);
	assert_string_equal(d.msg, "field 'list': expected a mapping of things, got a sequence");
	assert_string_equal(d.file, "t.yaml");
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 7);

	assert_int_equal(yaml_named_map(doc, NULL, "none", &named, &s, &d), -EINVAL);
	assert_string_equal(d.msg, "field 'none': expected a mapping of things, got nothing");

	/* the name at the key, before its entry is called */
	s.n = 0;
	assert_int_equal(yaml_named_map(doc, ynode_get(r, "badname"), "badname", &named, &s, &d),
			 -EINVAL);
	assert_string_equal(
		d.msg,
		"field 'badname.B2': invalid thing name 'B2' (expected [a-z]+, at most 16 bytes)");
	assert_int_equal(d.line, 4);
	assert_int_equal(d.col, 17);
	assert_int_equal(s.n, 1);

	/* the entry's problem stops the walk */
	s.n = 0;
	assert_int_equal(yaml_named_map(doc, ynode_get(r, "stops"), "stops", &named, &s, &d),
			 -EINVAL);
	assert_string_equal(d.msg, "field 'stops.b': stopped");
	assert_int_equal(d.line, 5);
	assert_int_equal(d.col, 18);
	assert_int_equal(s.n, 1);
	ydoc_free(doc);
}

/* Every name goes when name_ok is NULL; a repeated name never reaches the
 * walker (the loader refuses it). */
static void test_named_map_any_name(void **state)
{
	static const struct ynamed any = {.what = "a mapping", .entry = record};
	struct ydoc *doc = load("m: {A-1: x, 'b c': y}\n");
	struct ydoc *dup = NULL;
	struct seen s = {0};
	struct diag d = {0};
	static const char twice[] = "m: {a: 1, a: 2}\n";

	(void)state;
	assert_int_equal(yaml_named_map(doc, ynode_get(doc->root, "m"), "m", &any, &s, &d), 2);
	assert_string_equal(s.paths[1], "m.b c");
	ydoc_free(doc);
	assert_int_equal(yaml_load_buf("t.yaml", twice, strlen(twice), NULL, &dup, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "duplicate key 'a'"));
	assert_null(dup);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_problem_in), cmocka_unit_test(test_every_problem_field),
		cmocka_unit_test(test_clean_and_capped), cmocka_unit_test(test_not_a_map),
		cmocka_unit_test(test_check_keys),	 cmocka_unit_test(test_long_key_list),
		cmocka_unit_test(test_values),		 cmocka_unit_test(test_paths_and_quote),
		cmocka_unit_test(test_named_map),	 cmocka_unit_test(test_named_map_any_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
