#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/xalloc.h"
#include "util/yaml.h"

/* ---- helpers ---- */

static struct ydoc *load_ok(const char *text)
{
	struct ydoc *doc = NULL;
	struct diag d = {0};
	int r = yaml_load_buf("t.yaml", text, strlen(text), NULL, &doc, &d);

	if (r < 0)
		fail_msg("unexpected failure %d: %u:%u: %s", r, d.line, d.col, d.msg);
	assert_non_null(doc);
	assert_non_null(doc->root);
	return doc;
}

/* Load text, expect rc, line:col and a message containing want. */
static void expect_fail_lim(const char *text, size_t len, const struct yaml_limits *lim, int rc,
			    unsigned line, unsigned col, const char *want)
{
	struct ydoc *doc = (struct ydoc *)0x1; /* must stay untouched */
	struct diag d = {0};
	int r = yaml_load_buf("t.yaml", text, len, lim, &doc, &d);

	if (r != rc)
		fail_msg("expected %d, got %d (%u:%u: %s) for <%s>", rc, r, d.line, d.col, d.msg,
			 text);
	assert_ptr_equal(doc, (struct ydoc *)0x1);
	assert_string_equal(d.file, "t.yaml");
	if (d.line != line || d.col != col)
		fail_msg("expected %u:%u, got %u:%u: %s", line, col, d.line, d.col, d.msg);
	if (!strstr(d.msg, want))
		fail_msg("message '%s' lacks '%s'", d.msg, want);
}

static void expect_fail(const char *text, unsigned line, unsigned col, const char *want)
{
	expect_fail_lim(text, strlen(text), NULL, -EINVAL, line, col, want);
}

static const struct ynode *key_at(const struct ynode *map, size_t i)
{
	assert_int_equal(map->kind, YNODE_MAP);
	assert_true(i < map->n);
	return map->keys[i];
}

static void assert_pos(const struct ynode *n, unsigned line, unsigned col)
{
	assert_non_null(n);
	if (n->line != line || n->col != col)
		fail_msg("node '%s' at %u:%u, expected %u:%u", n->str ? n->str : "(collection)",
			 n->line, n->col, line, col);
}

static const char *data_path(char *buf, size_t size, const char *name)
{
	const char *src = getenv("SRCDIR");

	(void)snprintf(buf, size, "%s/tests/data/yaml/%s", src ? src : ".", name);
	return buf;
}

/* ---- loading valid documents ---- */

static void test_valid_nested(void **state)
{
	struct ydoc *doc = load_ok("# profile\n"
				   "name: claude\n"
				   "args:\n"
				   "  - --print\n"
				   "  - \"quoted\"\n"
				   "strategy: {resume: flag, workers: 4}\n"
				   "block: |\n"
				   "  line one\n"
				   "  line two\n"
				   "empty:\n");
	const struct ynode *root = doc->root, *args, *strat;

	(void)state;
	assert_int_equal(root->kind, YNODE_MAP);
	assert_pos(root, 2, 1);
	assert_int_equal(root->n, 5);
	assert_string_equal(key_at(root, 0)->str, "name");
	assert_pos(key_at(root, 0), 2, 1);
	assert_string_equal(root->items[0]->str, "claude");
	assert_int_equal(root->items[0]->len, 6);
	assert_true(root->items[0]->plain);
	assert_pos(root->items[0], 2, 7);

	args = ynode_get(root, "args");
	assert_ptr_equal(args, root->items[1]);
	assert_int_equal(args->kind, YNODE_SEQ);
	assert_pos(args, 4, 3);
	assert_int_equal(args->n, 2);
	assert_string_equal(args->items[0]->str, "--print");
	assert_pos(args->items[0], 4, 5);
	assert_string_equal(args->items[1]->str, "quoted");
	assert_false(args->items[1]->plain);
	assert_pos(args->items[1], 5, 5);

	strat = ynode_get(root, "strategy");
	assert_int_equal(strat->kind, YNODE_MAP);
	assert_pos(strat, 6, 11);
	assert_int_equal(strat->n, 2);
	assert_string_equal(ynode_get(strat, "resume")->str, "flag");
	assert_pos(ynode_get(strat, "workers"), 6, 35);
	assert_string_equal(ynode_describe(ynode_get(strat, "workers")), "an integer");

	assert_string_equal(ynode_get(root, "block")->str, "line one\nline two\n");
	assert_false(ynode_get(root, "block")->plain);
	assert_true(ynode_is_null(ynode_get(root, "empty")));
	assert_null(ynode_get(root, "missing"));
	assert_null(ynode_get(args, "name")); /* not a map */
	doc = ydoc_free(doc);
	assert_null(doc);
}

static void test_root_kinds_and_empty(void **state)
{
	static const char *const empties[] = {"", "# only a comment\n", "\n\n", "---\n",
					      "--- \n...\n"};
	struct ydoc *doc;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(empties); i++) {
		doc = load_ok(empties[i]);
		assert_int_equal(doc->root->kind, YNODE_MAP);
		assert_int_equal(doc->root->n, 0);
		ydoc_free(doc);
	}
	doc = load_ok("[a, b]\n");
	assert_int_equal(doc->root->kind, YNODE_SEQ);
	assert_int_equal(doc->root->n, 2);
	ydoc_free(doc);
	doc = load_ok("just text\n");
	assert_int_equal(doc->root->kind, YNODE_SCALAR);
	assert_string_equal(doc->root->str, "just text");
	ydoc_free(doc);
	doc = load_ok("--- ~\n"); /* an explicit null stays a null */
	assert_int_equal(doc->root->kind, YNODE_SCALAR);
	assert_true(ynode_is_null(doc->root));
	ydoc_free(doc);
	doc = load_ok("\xef\xbb\xbf"
		      "a: 1\n"); /* a BOM does not shift columns */
	assert_pos(key_at(doc->root, 0), 1, 1);
	ydoc_free(doc);
	assert_null(ydoc_free(NULL));
}

static void test_scalar_resolution(void **state)
{
	struct ydoc *doc = load_ok("n1:\n"
				   "n2: ~\n"
				   "n3: null\n"
				   "n4: Null\n"
				   "n5: NULL\n"
				   "q1: \"\"\n"
				   "q2: 'null'\n"
				   "b1: true\n"
				   "b2: False\n"
				   "b3: TRUE\n"
				   "s1: yes\n"
				   "s2: off\n"
				   "s3: \"true\"\n"
				   "s4: '12'\n"
				   "s5: 0x1f\n"
				   "s6: 1.5\n"
				   "s7: nULL\n"
				   "i1: 42\n"
				   "i2: -7\n"
				   "i3: +8\n"
				   "i4: 9223372036854775807\n"
				   "i5: -9223372036854775808\n"
				   "o1: 9223372036854775808\n"
				   "o2: -9223372036854775809\n"
				   "o3: 99999999999999999999999\n"
				   "x1: +\n");
	const struct ynode *r = doc->root;
	int64_t v = 123;
	bool b = false;

	(void)state;
	assert_true(ynode_is_null(ynode_get(r, "n1")));
	assert_true(ynode_is_null(ynode_get(r, "n2")));
	assert_true(ynode_is_null(ynode_get(r, "n3")));
	assert_true(ynode_is_null(ynode_get(r, "n4")));
	assert_true(ynode_is_null(ynode_get(r, "n5")));
	assert_false(ynode_is_null(ynode_get(r, "q1")));
	assert_false(ynode_is_null(ynode_get(r, "q2")));
	assert_false(ynode_is_null(ynode_get(r, "s7")));
	assert_false(ynode_is_null(r));
	assert_string_equal(ynode_describe(ynode_get(r, "n2")), "null");
	assert_string_equal(ynode_describe(ynode_get(r, "q1")), "a string");

	assert_int_equal(ynode_bool(ynode_get(r, "b1"), &b), 0);
	assert_true(b);
	assert_int_equal(ynode_bool(ynode_get(r, "b2"), &b), 0);
	assert_false(b);
	assert_int_equal(ynode_bool(ynode_get(r, "b3"), &b), 0);
	assert_true(b);
	assert_string_equal(ynode_describe(ynode_get(r, "b1")), "a boolean");
	assert_int_equal(ynode_bool(ynode_get(r, "s1"), &b), -EINVAL);
	assert_int_equal(ynode_bool(ynode_get(r, "s2"), &b), -EINVAL);
	assert_int_equal(ynode_bool(ynode_get(r, "s3"), &b), -EINVAL);
	assert_true(b); /* untouched on failure */
	assert_string_equal(ynode_describe(ynode_get(r, "s1")), "a string");
	assert_string_equal(ynode_describe(ynode_get(r, "s3")), "a string");

	assert_int_equal(ynode_int(ynode_get(r, "i1"), &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(ynode_int(ynode_get(r, "i2"), &v), 0);
	assert_int_equal(v, -7);
	assert_int_equal(ynode_int(ynode_get(r, "i3"), &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(ynode_int(ynode_get(r, "i4"), &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(ynode_int(ynode_get(r, "i5"), &v), 0);
	assert_true(v == INT64_MIN);
	v = 5;
	assert_int_equal(ynode_int(ynode_get(r, "o1"), &v), -ERANGE);
	assert_int_equal(ynode_int(ynode_get(r, "o2"), &v), -ERANGE);
	assert_int_equal(ynode_int(ynode_get(r, "o3"), &v), -ERANGE);
	assert_int_equal(ynode_int(ynode_get(r, "s4"), &v), -EINVAL);
	assert_int_equal(ynode_int(ynode_get(r, "s5"), &v), -EINVAL);
	assert_int_equal(ynode_int(ynode_get(r, "s6"), &v), -EINVAL);
	assert_int_equal(ynode_int(ynode_get(r, "x1"), &v), -EINVAL);
	assert_int_equal(ynode_int(r, &v), -EINVAL);
	assert_int_equal(v, 5);
	assert_string_equal(ynode_describe(ynode_get(r, "s4")), "a string");
	assert_string_equal(ynode_describe(ynode_get(r, "x1")), "a string");
	assert_string_equal(ynode_describe(r), "a mapping");
	ydoc_free(doc);
}

/* ---- rejections ---- */

static void test_reject_anchors_aliases_tags(void **state)
{
	(void)state;
	expect_fail("a: &x 1\n", 1, 4, "anchors and aliases are not allowed");
	expect_fail("a: 1\nb: &m\n  c: 2\n", 2, 4, "anchors and aliases are not allowed");
	expect_fail("- &s [1]\n", 1, 3, "anchors and aliases are not allowed");
	expect_fail("a: 1\nb: *x\n", 2, 4, "anchors and aliases are not allowed");
	expect_fail("a: !!str 1\n", 1, 4, "tags are not allowed");
	expect_fail("a: !foo {}\n", 1, 4, "tags are not allowed");
	expect_fail("x:\n  - ! y\n", 2, 5, "tags are not allowed");
	expect_fail("%TAG !e! tag:example.com,2000:\n---\na: 1\n", 1, 1, "tags are not allowed");
}

static void test_reject_keys(void **state)
{
	(void)state;
	expect_fail("a: 1\nb: 2\na: 3\n", 3, 1, "duplicate key 'a'");
	expect_fail("a: 1\nb: 2\na: 3\n", 3, 1, "first defined at line 1");
	expect_fail("m:\n  x: 1\n  'x': 2\n", 3, 3, "duplicate key 'x' (first defined at line 2");
	expect_fail("{a: 1, b: 2, a: 3}", 1, 14, "duplicate key 'a'");
	expect_fail("? [a, b]\n: 1\n", 1, 3, "non-scalar mapping keys are not allowed");
	expect_fail("{[a]: 1}\n", 1, 2, "non-scalar mapping keys are not allowed");
	expect_fail("base: {a: 1}\n<<: {b: 2}\n", 2, 1, "merge keys are not allowed");
	expect_fail("x:\n  <<: 1\n", 2, 3, "merge keys are not allowed");
}

static void test_duplicate_in_large_map(void **state)
{
	size_t i, n = 5000, cap = n * 16 + 32, off = 0;
	char *text = malloc(cap);
	struct ydoc *doc;
	unsigned dup_line = (unsigned)n + 1;
	char want[64];

	(void)state;
	assert_non_null(text);
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(text + off, cap - off, "key%zu: %zu\n", i, i);
	doc = load_ok(text);
	assert_int_equal(doc->root->n, n);
	assert_string_equal(ynode_get(doc->root, "key4321")->str, "4321");
	ydoc_free(doc);
	(void)snprintf(text + off, cap - off, "key2500: again\n");
	(void)snprintf(want, sizeof(want), "duplicate key 'key2500' (first defined at line 2501");
	expect_fail(text, dup_line, 1, want);
	free(text);
}

static void test_reject_structure(void **state)
{
	struct yaml_limits lim = {.max_depth = 3};
	const char *deep4 = "a:\n  b:\n    c:\n      d: 1\n";
	const char *flow4 = "[[[[x]]]]";

	(void)state;
	expect_fail("a: 1\n---\nb: 2\n", 2, 1, "more than one document");
	expect_fail("---\na: 1\n--- \nb: 2\n", 3, 1, "more than one document");
	expect_fail_lim(deep4, strlen(deep4), &lim, -EINVAL, 4, 7, "nesting deeper than 3");
	expect_fail_lim(flow4, strlen(flow4), &lim, -EINVAL, 1, 4, "nesting deeper than 3");
	lim.max_depth = 4;
	{
		struct ydoc *doc = NULL;

		assert_int_equal(yaml_load_buf("t.yaml", flow4, strlen(flow4), &lim, &doc, NULL),
				 0);
		ydoc_free(doc);
	}
	lim = (struct yaml_limits){.max_nodes = 5};
	/* map, a, 1, b, [ -> 5 nodes; the sixth (x) is too many */
	expect_fail_lim("a: 1\nb: [x]\n", 12, &lim, -EINVAL, 2, 5, "too many nodes");
	lim = (struct yaml_limits){.max_bytes = 10};
	expect_fail_lim("a: 1\nb: 22\n", 11, &lim, -EFBIG, 0, 0, "file is larger than 10 bytes");
}

static void test_reject_bad_bytes(void **state)
{
	static const char nul[] = "a: 1\nb: x\0y\n";
	static const char nul_escape[] = "a: 1\nb: \"x\\0y\"\n";

	(void)state;
	expect_fail_lim(nul, sizeof(nul) - 1, NULL, -EINVAL, 2, 5, "NUL bytes are not allowed");
	expect_fail(nul_escape, 2, 4, "NUL characters are not allowed");
	expect_fail("a: 1\nb: \xff\n", 2, 4, "invalid leading UTF-8 octet");
	expect_fail("a: \xc3(\n", 1, 5, "invalid trailing UTF-8 octet");
	expect_fail("a: 1\nb: \x01\n", 2, 4, "control characters are not allowed");
	/* positions after a byte order mark are still counted from the first character */
	expect_fail_lim("\xef\xbb\xbf"
			"a: x\0\n",
			8, NULL, -EINVAL, 1, 5, "NUL bytes are not allowed");
	expect_fail("\xef\xbb\xbf"
		    "a: \xff\n",
		    1, 4, "invalid leading UTF-8 octet");
	expect_fail("\xef\xbb\xbf"
		    "a: @\n",
		    1, 4, "found character that cannot start any token");
}

static void test_reject_syntax(void **state)
{
	(void)state;
	expect_fail("a: @x\n", 1, 4, "found character that cannot start any token");
	expect_fail("a:\n\tb: 1\n", 2, 1, "found character that cannot start any token");
	expect_fail("a: b: c\n", 1, 5, "mapping values are not allowed in this context");
	expect_fail("a: [1, 2\n", 2, 1, "did not find expected ',' or ']'");
	expect_fail("a: [1, 2\n", 2, 1, "while parsing a flow sequence at line 1, column 4");
	expect_fail("a: \"abc\n", 2, 1, "found unexpected end of stream");
	expect_fail("- a\nb: 1\n", 2, 1, "did not find expected '-' indicator");
}

static void test_diag_untouched_on_success(void **state)
{
	struct diag d;
	struct ydoc *doc = NULL;

	(void)state;
	memset(&d, 0, sizeof(d));
	(void)snprintf(d.msg, sizeof(d.msg), "sentinel");
	d.line = 77;
	assert_int_equal(yaml_load_buf("t.yaml", "a: 1\n", 5, NULL, &doc, &d), 0);
	assert_string_equal(d.msg, "sentinel");
	assert_int_equal(d.line, 77);
	ydoc_free(doc);
	/* and a NULL diag is fine on failure */
	doc = NULL;
	assert_int_equal(yaml_load_buf("t.yaml", "a: *x\n", 6, NULL, &doc, NULL), -EINVAL);
	assert_null(doc);
}

/* ---- getters ---- */

static void test_getters(void **state)
{
	static const char *const modes[] = {"flag", "flag-pair", "subcommand", "unsupported", NULL};
	struct ydoc *doc = load_ok("name: claude\n"
				   "ver: 12\n"
				   "nul: ~\n"
				   "on: true\n"
				   "yes_str: yes\n"
				   "workers: 8\n"
				   "zero: 0\n"
				   "huge: 123456789012345678901234\n"
				   "resume: subcommand\n"
				   "bad_resume: flagg\n"
				   "args: [a, \"b\", 3]\n"
				   "bad_args:\n"
				   "  - a\n"
				   "  - {x: 1}\n"
				   "empty_args: []\n"
				   "map: {k: v}\n");
	const struct ynode *r = doc->root;
	const char *s = "default", **list = NULL;
	size_t n = 99;
	int64_t v = -1;
	bool b = false;
	int e = -1;
	struct diag d = {0};

	(void)state;
	/* strings */
	assert_int_equal(yaml_get_str(doc, r, "absent", &s, &d), 0);
	assert_string_equal(s, "default");
	assert_int_equal(yaml_get_str(doc, r, "name", &s, &d), 0);
	assert_string_equal(s, "claude");
	assert_int_equal(yaml_get_str(doc, r, "ver", &s, &d), 0); /* a plain 12 is a fine string */
	assert_string_equal(s, "12");
	assert_int_equal(yaml_get_str(doc, r, "nul", &s, &d), -EINVAL);
	assert_string_equal(d.msg, "'nul': expected a string, got null");
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 6);
	assert_string_equal(d.file, "t.yaml");
	assert_int_equal(yaml_get_str(doc, r, "map", &s, &d), -EINVAL);
	assert_string_equal(d.msg, "'map': expected a string, got a mapping");
	assert_string_equal(s, "12");

	/* booleans */
	assert_int_equal(yaml_get_bool(doc, r, "absent", &b, &d), 0);
	assert_false(b);
	assert_int_equal(yaml_get_bool(doc, r, "on", &b, &d), 0);
	assert_true(b);
	assert_int_equal(yaml_get_bool(doc, r, "yes_str", &b, &d), -EINVAL);
	assert_string_equal(d.msg, "'yes_str': expected a boolean, got a string");
	assert_int_equal(d.line, 5);

	/* integers */
	assert_int_equal(yaml_get_int(doc, r, "absent", 1, 1024, &v, &d), 0);
	assert_int_equal(v, -1);
	assert_int_equal(yaml_get_int(doc, r, "workers", 1, 1024, &v, &d), 0);
	assert_int_equal(v, 8);
	assert_int_equal(yaml_get_int(doc, r, "zero", 1, 1024, &v, &d), -EINVAL);
	assert_string_equal(d.msg, "'zero': 0 is out of range (1..1024)");
	assert_int_equal(d.line, 7);
	assert_int_equal(d.col, 7);
	assert_int_equal(yaml_get_int(doc, r, "name", 1, 1024, &v, &d), -EINVAL);
	assert_string_equal(d.msg, "'name': expected an integer, got a string");
	assert_int_equal(yaml_get_int(doc, r, "huge", INT64_MIN, INT64_MAX, &v, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "'huge': integer out of range"));
	assert_int_equal(d.line, 8);
	assert_int_equal(v, 8);

	/* enums */
	assert_int_equal(yaml_get_enum(doc, r, "absent", modes, &e, &d), 0);
	assert_int_equal(e, -1);
	assert_int_equal(yaml_get_enum(doc, r, "resume", modes, &e, &d), 0);
	assert_int_equal(e, 2);
	assert_int_equal(yaml_get_enum(doc, r, "bad_resume", modes, &e, &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"'bad_resume': unknown value 'flagg' (expected one of: flag, flag-pair, subcommand, unsupported)");
	assert_int_equal(d.line, 10);
	assert_int_equal(d.col, 13);
	assert_int_equal(yaml_get_enum(doc, r, "args", modes, &e, &d), -EINVAL);
	assert_string_equal(d.msg, "'args': expected a string, got a sequence");
	assert_int_equal(e, 2);

	/* string lists */
	assert_int_equal(yaml_get_strlist(doc, r, "absent", &list, &n, &d), 0);
	assert_null(list);
	assert_int_equal(n, 99);
	assert_int_equal(yaml_get_strlist(doc, r, "args", &list, &n, &d), 0);
	assert_int_equal(n, 3);
	assert_string_equal(list[0], "a");
	assert_string_equal(list[1], "b");
	assert_string_equal(list[2], "3");
	assert_null(list[3]);
	assert_int_equal(yaml_get_strlist(doc, r, "empty_args", &list, &n, &d), 0);
	assert_int_equal(n, 0);
	assert_null(list[0]);
	list = NULL;
	assert_int_equal(yaml_get_strlist(doc, r, "bad_args", &list, &n, &d), -EINVAL);
	assert_string_equal(d.msg, "'bad_args' item 2: expected a string, got a mapping");
	assert_int_equal(d.line, 14);
	assert_int_equal(d.col, 5);
	assert_null(list);
	assert_int_equal(yaml_get_strlist(doc, r, "name", &list, &n, &d), -EINVAL);
	assert_string_equal(d.msg, "'name': expected a list of strings, got a string");

	/* lookups on something that is not a map find nothing */
	assert_int_equal(yaml_get_str(doc, ynode_get(r, "args"), "name", &s, &d), 0);
	ydoc_free(doc);
}

/* ---- yaml_check_map ---- */

static const struct yfield profile_fields[] = {
	{"name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"binary", YT_STR, YF_REQUIRED, NULL, NULL},
	{"args", YT_STRLIST, 0, NULL, NULL},
	{"max_parallel_workers", YT_INT, 0, NULL, NULL},
	{"vision", YT_BOOL, 0, NULL, NULL},
	{"strategy", YT_MAP, 0, NULL, NULL},
	{"extra", YT_ANY, 0, NULL, NULL},
	{"steps", YT_SEQ, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int check_text(const char *text, struct diag *d)
{
	struct ydoc *doc = load_ok(text);
	int r = yaml_check_map(doc, doc->root, profile_fields, "profile", d);

	ydoc_free(doc);
	return r;
}

static void test_check_map(void **state)
{
	struct diag d = {0};

	(void)state;
	assert_int_equal(check_text("name: a\nbinary: b\nargs: [x]\nmax_parallel_workers: 3\n"
				    "vision: false\nstrategy: {}\nextra: [1, {a: b}]\nsteps: []\n",
				    &d),
			 0);
	assert_int_equal(check_text("name: a\nbinary: b\nargz: [x]\n", &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"unknown key 'argz' in profile (expected one of: name, binary, args, max_parallel_workers, vision, strategy, extra, steps)");
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 1);

	assert_int_equal(check_text("# c\n\nname: a\nargs: []\n", &d), -EINVAL);
	assert_string_equal(d.msg, "profile: missing required key 'binary'");
	assert_int_equal(d.line, 3); /* at the map itself */
	assert_int_equal(d.col, 1);

	assert_int_equal(check_text("name: a\nbinary: b\nmax_parallel_workers: many\n", &d),
			 -EINVAL);
	assert_string_equal(d.msg, "'max_parallel_workers': expected an integer, got a string");
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 23);

	assert_int_equal(
		check_text("name: a\nbinary: b\nmax_parallel_workers: 99999999999999999999\n", &d),
		-EINVAL);
	assert_non_null(strstr(d.msg, "integer out of range"));

	assert_int_equal(check_text("name: a\nbinary: b\nvision: \"true\"\n", &d), -EINVAL);
	assert_string_equal(d.msg, "'vision': expected a boolean, got a string");
	assert_int_equal(check_text("name: a\nbinary: b\nstrategy: [x]\n", &d), -EINVAL);
	assert_string_equal(d.msg, "'strategy': expected a mapping, got a sequence");
	assert_int_equal(check_text("name: a\nbinary: b\nsteps: x\n", &d), -EINVAL);
	assert_string_equal(d.msg, "'steps': expected a sequence, got a string");
	assert_int_equal(check_text("name:\nbinary: b\n", &d), -EINVAL);
	assert_string_equal(d.msg, "'name': expected a string, got null");
	assert_int_equal(check_text("name: a\nbinary: b\nargs: [x, [y]]\n", &d), -EINVAL);
	assert_string_equal(d.msg, "'args' item 2: expected a string, got a sequence");
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 11);

	/* first problem in document order wins; key problems before missing keys */
	assert_int_equal(check_text("vision: 1\nnope: 2\n", &d), -EINVAL);
	assert_string_equal(d.msg, "'vision': expected a boolean, got an integer");
	assert_int_equal(check_text("nope: 2\nvision: 1\n", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "unknown key 'nope'"));

	/* not a map at all */
	assert_int_equal(check_text("- a\n- b\n", &d), -EINVAL);
	assert_string_equal(d.msg, "profile: expected a mapping, got a sequence");
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 1);
	assert_int_equal(check_text("scalar\n", &d), -EINVAL);
	assert_string_equal(d.msg, "profile: expected a mapping, got a string");
}

static void test_user_strings_are_escaped(void **state)
{
	struct diag d = {0};
	char longkey[300];

	(void)state;
	assert_int_equal(check_text("name: a\nbinary: b\n\"bad\\x1b[31m\\nkey\": 1\n", &d),
			 -EINVAL);
	assert_non_null(strstr(d.msg, "unknown key 'bad\\x1b[31m\\nkey'"));
	assert_null(strchr(d.msg, '\x1b'));
	assert_null(strchr(d.msg, '\n'));

	memset(longkey, 'k', sizeof(longkey));
	memcpy(longkey + sizeof(longkey) - 5, ": 1\n", 5);
	assert_int_equal(check_text(longkey, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "kkk...' in profile"));
	assert_true(strlen(d.msg) < 400);
}

static void test_yaml_diag_and_names(void **state)
{
	struct ydoc *doc = load_ok("a:\n  b: c\n");
	struct diag d = {0};

	(void)state;
	yaml_diag(doc, ynode_get(doc->root, "a"), &d, "custom %d", 7);
	assert_string_equal(d.file, "t.yaml");
	assert_int_equal(d.line, 2);
	assert_int_equal(d.col, 3);
	assert_string_equal(d.msg, "custom 7");
	yaml_diag(doc, ynode_get(doc->root, "a"), NULL, "ignored"); /* NULL diag is fine */
	assert_string_equal(ytype_name(YT_INT), "an integer");
	assert_string_equal(ytype_name(YT_STRLIST), "a list of strings");
	assert_string_equal(ynode_describe(NULL), "nothing");
	ydoc_free(doc);
}

/* ---- the broken-file corpus, loaded by path ---- */

static void expect_file_fail(const char *name, int rc, unsigned line, unsigned col,
			     const char *want)
{
	char path[4096];
	struct ydoc *doc = NULL;
	struct diag d = {0};
	int r = yaml_load_file(data_path(path, sizeof(path), name), NULL, &doc, &d);

	if (r != rc)
		fail_msg("%s: expected %d, got %d (%u:%u: %s)", name, rc, r, d.line, d.col, d.msg);
	assert_null(doc);
	assert_string_equal(d.file, path);
	if (d.line != line || d.col != col)
		fail_msg("%s: expected %u:%u, got %u:%u: %s", name, line, col, d.line, d.col,
			 d.msg);
	if (!strstr(d.msg, want))
		fail_msg("%s: message '%s' lacks '%s'", name, d.msg, want);
}

static void test_corpus(void **state)
{
	char path[4096];
	struct ydoc *doc = NULL;
	struct diag d = {0};
	static const struct yfield fields[] = {
		{"name", YT_STR, YF_REQUIRED, NULL, NULL},
		{"binary", YT_STR, YF_REQUIRED, NULL, NULL},
		{"max_parallel_workers", YT_INT, 0, NULL, NULL},
		{NULL, 0, 0, NULL, NULL},
	};

	(void)state;
	expect_file_fail("alias.yaml", -EINVAL, 3, 7, "anchors and aliases are not allowed");
	expect_file_fail("anchor.yaml", -EINVAL, 2, 11, "anchors and aliases are not allowed");
	expect_file_fail("duplicate-key.yaml", -EINVAL, 7, 3,
			 "duplicate key 'resume' (first defined at line 5");
	expect_file_fail("truncated.yaml", -EINVAL, 3, 24, "found unexpected end of stream");
	expect_file_fail("tab-indent.yaml", -EINVAL, 3, 1,
			 "found character that cannot start any token");
	expect_file_fail("two-documents.yaml", -EINVAL, 3, 1, "more than one document");
	expect_file_fail("deep.yaml", -EINVAL, 33, 65, "nesting deeper than 32");
	expect_file_fail("does-not-exist.yaml", -ENOENT, 0, 0, "cannot read file");

	/* garbage: rejected with a position, whatever the bytes are */
	assert_int_equal(
		yaml_load_file(data_path(path, sizeof(path), "garbage.bin"), NULL, &doc, &d),
		-EINVAL);
	assert_null(doc);
	assert_true(d.line >= 1 && d.col >= 1);
	assert_true(strlen(d.msg) > 0);

	/* deep.yaml loads with a higher depth limit */
	{
		struct yaml_limits lim = {.max_depth = 40};

		assert_int_equal(
			yaml_load_file(data_path(path, sizeof(path), "deep.yaml"), &lim, &doc, &d),
			0);
		assert_int_equal(doc->root->kind, YNODE_MAP);
		doc = ydoc_free(doc);
	}

	/* wrong-type.yaml loads, then fails the schema check */
	assert_int_equal(
		yaml_load_file(data_path(path, sizeof(path), "wrong-type.yaml"), NULL, &doc, &d),
		0);
	assert_int_equal(yaml_check_map(doc, doc->root, fields, "profile", &d), -EINVAL);
	assert_string_equal(d.file, path);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 23);
	assert_string_equal(d.msg, "'max_parallel_workers': expected an integer, got a string");
	ydoc_free(doc);
}

static void test_file_too_large(void **state)
{
	char dir[] = "/tmp/bernstein-yaml-XXXXXX", path[128];
	static char chunk[65536];
	struct ydoc *doc = NULL;
	struct diag d = {0};
	size_t i;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/big.yaml", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	memset(chunk, '#', sizeof(chunk));
	for (i = 0; i < sizeof(chunk); i += 64)
		chunk[i] = '\n';
	for (i = 0; i < 160; i++) /* 10 MiB of comments */
		assert_int_equal(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
	assert_int_equal(close(fd), 0);

	assert_int_equal(yaml_load_file(path, NULL, &doc, &d), -EFBIG);
	assert_null(doc);
	assert_string_equal(d.file, path);
	assert_string_equal(d.msg, "file is larger than 1048576 bytes");
	{
		/* with a limit above its size the same file is an empty document */
		struct yaml_limits lim = {.max_bytes = 11 << 20};

		assert_int_equal(yaml_load_file(path, &lim, &doc, &d), 0);
		assert_int_equal(doc->root->kind, YNODE_MAP);
		assert_int_equal(doc->root->n, 0);
		doc = ydoc_free(doc);
	}
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_nested),
		cmocka_unit_test(test_root_kinds_and_empty),
		cmocka_unit_test(test_scalar_resolution),
		cmocka_unit_test(test_reject_anchors_aliases_tags),
		cmocka_unit_test(test_reject_keys),
		cmocka_unit_test(test_duplicate_in_large_map),
		cmocka_unit_test(test_reject_structure),
		cmocka_unit_test(test_reject_bad_bytes),
		cmocka_unit_test(test_reject_syntax),
		cmocka_unit_test(test_diag_untouched_on_success),
		cmocka_unit_test(test_getters),
		cmocka_unit_test(test_check_map),
		cmocka_unit_test(test_user_strings_are_escaped),
		cmocka_unit_test(test_yaml_diag_and_names),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_file_too_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
