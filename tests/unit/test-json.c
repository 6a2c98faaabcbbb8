#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/fsutil.h"
#include "util/json.h"
#include "util/xalloc.h"

/* ---- helpers ------------------------------------------------------------- */

static json_t *load_flags(const char *text, size_t flags)
{
	json_error_t err;
	json_t *v =
		json_loadb(text, strlen(text),
			   JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | flags, &err);

	if (!v)
		fail_msg("test input does not parse: %s: %s", err.text, text);
	return v;
}

static json_t *load(const char *text)
{
	return load_flags(text, 0);
}

/* Canonicalize text with fn; returns 0 and the output in *ret (caller frees)
 * or the negative errno. */
static int canon_text_flags(int (*fn)(const json_t *, struct sbuf *), const char *text,
			    size_t flags, char **ret)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *v = load_flags(text, flags);
	int r = fn(v, &sb);

	json_decref(v);
	if (r < 0) {
		assert_int_equal(sb.len, 0); /* nothing half-written */
		sbuf_release(&sb);
		return r;
	}
	*ret = sbuf_detach(&sb, NULL);
	return 0;
}

static int canon_text(int (*fn)(const json_t *, struct sbuf *), const char *text, char **ret)
{
	return canon_text_flags(fn, text, 0, ret);
}

static void expect(int (*fn)(const json_t *, struct sbuf *), const char *text, const char *want)
{
	char *got = NULL;
	int r = canon_text(fn, text, &got);

	if (r < 0)
		fail_msg("canonicalizing %s failed: %s", text, strerror(-r));
	if (strcmp(got, want) != 0)
		fail_msg("input %s\n  got  %s\n  want %s", text, got, want);
	free(got);
}

static void expect_err(int (*fn)(const json_t *, struct sbuf *), const char *text, int err)
{
	char *got = NULL;
	int r = canon_text(fn, text, &got);

	if (r != err)
		fail_msg("input %s: got %d (%s), want %d", text, r, r ? "error" : got, err);
}

static char *read_data(const char *name, size_t *ret_len)
{
	const char *top = getenv("SRCDIR");
	char path[4096];
	char *data = NULL;
	int r;

	(void)snprintf(path, sizeof(path), "%s/tests/data/json/%s", top ? top : ".", name);
	r = read_file_capped(path, 16 << 20, &data, ret_len);
	if (r < 0)
		fail_msg("cannot read '%s': %s (is SRCDIR set?)", path, strerror(-r));
	return data;
}

/* ---- RFC 8785 examples, written out by hand ------------------------------ */

/* RFC 8785 section 3.2.2 (input) and 3.2.3/3.2.4 (canonical output). */
static void test_jcs_rfc_sample(void **state)
{
	static const char in[] =
		"{\n"
		"  \"numbers\": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n"
		"  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
		"  \"literals\": [null, true, false]\n"
		"}";
	static const char want[] =
		"{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";

	(void)state;
	expect(json_canon_jcs, in, want);
}

/* RFC 8785 section 3.2.3: properties sorted by UTF-16 code units. */
static void test_jcs_rfc_sorting(void **state)
{
	static const char in[] =
		"{\"\\u20ac\": \"Euro Sign\", \"\\r\": \"Carriage Return\", \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\", \"1\": \"One\", \"\\ud83d\\ude00\": \"Emoji: Grinning Face\", \"\\u0080\": \"Control\", \"\\u00f6\": \"Latin Small Letter O With Diaeresis\"}";
	static const char want[] =
		"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\",\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\",\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}";

	(void)state;
	expect(json_canon_jcs, in, want);
}

/* U+E000..U+FFFF sort after the surrogates of U+10000.. in UTF-16 (JCS) but
 * before them in code point order (Python). */
static void test_key_order_utf16_vs_codepoint(void **state)
{
	static const char in[] =
		"{\"\\ue000\": 1, \"\\ud83d\\ude00\": 2, \"\\uffff\": 3, \"\\ud7ff\": 4, \"z\": 5, \"\": 6, \"zz\": 7}";

	(void)state;
	expect(json_canon_jcs, in,
	       "{\"\":6,\"z\":5,\"zz\":7,\"\xed\x9f\xbf\":4,\"\xf0\x9f\x98\x80\":2,\"\xee\x80\x80\":1,\"\xef\xbf\xbf\":3}");
	expect(json_canon_py, in,
	       "{\"\": 6, \"z\": 5, \"zz\": 7, \"\\ud7ff\": 4, \"\\ue000\": 1, \"\\uffff\": 3, \"\\ud83d\\ude00\": 2}");
}

/* RFC 8785 appendix B: IEEE-754 bits and their ECMAScript form. */
static void test_jcs_rfc_numbers(void **state)
{
	static const struct {
		uint64_t bits;
		const char *want;
	} tab[] = {
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(tab); i++) {
		double d;
		json_t *v;

		memcpy(&d, &tab[i].bits, sizeof(d));
		v = json_real(d);
		assert_non_null(v);
		sbuf_reset(&sb);
		assert_int_equal(json_canon_jcs(v, &sb), 0);
		if (strcmp(sb.buf, tab[i].want) != 0)
			fail_msg("%016" PRIx64 ": got %s want %s", tab[i].bits, sb.buf,
				 tab[i].want);
		json_decref(v);
	}
	sbuf_release(&sb);
}

/* Hand-picked: the ECMAScript notation switches and Python's repr rules. */
static void test_numbers_by_hand(void **state)
{
	(void)state;
	expect(json_canon_jcs, "[1.0, -1.0, 100.0, 1e21, 1e20, 123e18, 1e-6, 1e-7, 1.5e-7]",
	       "[1,-1,100,1e+21,100000000000000000000,123000000000000000000,0.000001,1e-7,1.5e-7]");
	expect(json_canon_jcs, "[-0.0, 0.0, -0, 0.5, 12.5, 1234.5678e3]",
	       "[0,0,0,0.5,12.5,1234567.8]");
	expect(json_canon_jcs, "[9007199254740992, -9007199254740992, 9007199254740991]",
	       "[9007199254740992,-9007199254740992,9007199254740991]");
	expect(json_canon_py, "[1.0, -0.0, 0.0, 100.0, 1e16, 1.5e16, 1e15, 0.0001, 0.00001]",
	       "[1.0, -0.0, 0.0, 100.0, 1e+16, 1.5e+16, 1000000000000000.0, 0.0001, 1e-05]");
	expect(json_canon_py, "[5e-324, 1.7976931348623157e308, 123.456, 1e100, 1.25e-100]",
	       "[5e-324, 1.7976931348623157e+308, 123.456, 1e+100, 1.25e-100]");
	expect(json_canon_py, "[0, -0, 9223372036854775807, -9223372036854775808, 12]",
	       "[0, 0, 9223372036854775807, -9223372036854775808, 12]");
}

static void test_jcs_refuses_unsafe_integers(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *v;

	(void)state;
	expect_err(json_canon_jcs, "9007199254740993", -ERANGE);
	expect_err(json_canon_jcs, "-9007199254740993", -ERANGE);
	expect_err(json_canon_jcs, "{\"a\": [1, 2, {\"b\": 9223372036854775807}]}", -ERANGE);
	expect_err(json_canon_jcs, "-9223372036854775808", -ERANGE);
	/* The same value as a real is fine: it is a double already. */
	expect(json_canon_jcs, "9007199254740993.0", "9007199254740992");
	/* Python keeps every int. */
	expect(json_canon_py, "9007199254740993", "9007199254740993");

	/* Output already in the buffer survives a failure. */
	assert_int_equal(sbuf_adds(&sb, "keep"), 0);
	v = json_integer(INT64_C(1) << 60);
	assert_int_equal(json_canon_jcs(v, &sb), -ERANGE);
	assert_string_equal(sb.buf, "keep");
	json_decref(v);
	sbuf_release(&sb);
}

/* ---- strings ------------------------------------------------------------- */

static void test_string_escapes(void **state)
{
	(void)state;
	expect(json_canon_jcs, "\"\\b\\t\\n\\f\\r\\u0000\\u0001\\u001f\\u0020\\\"\\\\/\"",
	       "\"\\b\\t\\n\\f\\r\\u0000\\u0001\\u001f \\\"\\\\/\"");
	expect(json_canon_py, "\"\\b\\t\\n\\f\\r\\u0000\\u0001\\u001f\\u0020\\\"\\\\/\"",
	       "\"\\b\\t\\n\\f\\r\\u0000\\u0001\\u001f \\\"\\\\/\"");
	/* JCS keeps U+007F, U+2028 and everything non-ASCII as UTF-8. */
	expect(json_canon_jcs, "\"\\u007f\\u0080\\u00e9\\u2028\\ud83d\\ude00\"",
	       "\"\x7f\xc2\x80\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\"");
	/* Python (ensure_ascii) escapes U+007F too, in lowercase hex, and uses a
	 * surrogate pair above the BMP. */
	expect(json_canon_py, "\"\\u007f\\u0080\\u00E9\\u2028\\ud83d\\ude00 caf\xc3\xa9\"",
	       "\"\\u007f\\u0080\\u00e9\\u2028\\ud83d\\ude00 caf\\u00e9\"");
	expect(json_canon_py, "\"\\uABCD\\uFFFF\\uDBFF\\uDFFF\"",
	       "\"\\uabcd\\uffff\\udbff\\udfff\"");
	expect(json_canon_py, "\"\"", "\"\"");
	expect(json_canon_jcs, "\"\"", "\"\"");
}

static void test_string_with_nul(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *v = json_stringn("a\0b", 3);

	(void)state;
	assert_non_null(v);
	assert_int_equal(json_canon_jcs(v, &sb), 0);
	assert_int_equal(sb.len, 10);
	assert_memory_equal(sb.buf, "\"a\\u0000b\"", 10);
	sbuf_reset(&sb);
	assert_int_equal(json_canon_py(v, &sb), 0);
	assert_string_equal(sb.buf, "\"a\\u0000b\"");
	json_decref(v);
	sbuf_release(&sb);
}

static void test_invalid_utf8_refused(void **state)
{
	static const char *bad[] = {
		"\xc3",		    /* truncated */
		"\xc0\xaf",	    /* overlong '/' */
		"\xe0\x80\xaf",	    /* overlong */
		"\xed\xa0\x80",	    /* UTF-16 surrogate D800 */
		"\xf4\x90\x80\x80", /* above U+10FFFF */
		"\xff",		    /* never valid */
		"ok\x80",	    /* stray continuation */
		"\xe2\x82",	    /* truncated euro */
	};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
		json_t *o = json_object();

		assert_int_equal(
			json_object_setn_new_nocheck(o, bad[i], strlen(bad[i]), json_true()), 0);
		assert_int_equal(json_canon_jcs(s, &sb), -EINVAL);
		assert_int_equal(json_canon_py(s, &sb), -EINVAL);
		assert_int_equal(json_canon_jcs(o, &sb), -EINVAL);
		assert_int_equal(json_canon_py(o, &sb), -EINVAL);
		assert_int_equal(sb.len, 0);
		json_decref(s);
		json_decref(o);
	}
	sbuf_release(&sb);
}

/* ---- structure, caps and limits ------------------------------------------ */

static void test_containers(void **state)
{
	(void)state;
	expect(json_canon_jcs, "[]", "[]");
	expect(json_canon_jcs, "{}", "{}");
	expect(json_canon_py, "[]", "[]");
	expect(json_canon_py, "{}", "{}");
	expect(json_canon_jcs, " { \"b\" : [ 1 , { } , [ ] ] , \"a\" : null } ",
	       "{\"a\":null,\"b\":[1,{},[]]}");
	expect(json_canon_py, " { \"b\" : [ 1 , { } , [ ] ] , \"a\" : null } ",
	       "{\"a\": null, \"b\": [1, {}, []]}");
	expect(json_canon_py, "[true,false,null]", "[true, false, null]");
}

static void test_cap_gives_enobufs(void **state)
{
	static const char in[] = "{\"key\": \"a fairly long string value\", \"n\": [1.5, 2, 3]}";
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *v = load(in);
	size_t full, cap;

	(void)state;
	assert_int_equal(json_canon_jcs(v, &sb), 0);
	full = sb.len;
	sbuf_release(&sb);
	for (cap = 0; cap < full; cap++) {
		struct sbuf small = SBUF_INIT(cap);

		assert_int_equal(json_canon_jcs(v, &small), -ENOBUFS);
		assert_int_equal(small.len, 0);
		sbuf_release(&small);
	}
	{
		struct sbuf exact = SBUF_INIT(full);

		assert_int_equal(json_canon_jcs(v, &exact), 0);
		assert_int_equal(exact.len, full);
		sbuf_release(&exact);
	}
	json_decref(v);
}

static void test_depth_and_cycles(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *a = json_array(), *b = json_array(), *top, *cur;
	int i;

	(void)state;
	/* a -> b -> a */
	assert_int_equal(json_array_append(a, b), 0);
	assert_int_equal(json_array_append(b, a), 0);
	assert_int_equal(json_canon_jcs(a, &sb), -ELOOP);
	assert_int_equal(json_canon_py(a, &sb), -ELOOP);
	assert_int_equal(sb.len, 0);
	assert_int_equal(json_array_clear(b), 0);
	json_decref(a);
	json_decref(b);

	/* 2000 levels (jansson's parser allows 2048) are fine. */
	top = json_array();
	cur = top;
	for (i = 1; i < 2000; i++) {
		json_t *n = json_array();

		assert_int_equal(json_array_append_new(cur, n), 0);
		cur = n;
	}
	assert_int_equal(json_canon_jcs(top, &sb), 0);
	assert_int_equal(sb.len, 4000);
	sbuf_reset(&sb);
	assert_int_equal(json_canon_py(top, &sb), 0);
	assert_int_equal(sb.len, 4000);
	sbuf_reset(&sb);
	/* Far deeper is refused. */
	for (; i < 5000; i++) {
		json_t *n = json_array();

		assert_int_equal(json_array_append_new(cur, n), 0);
		cur = n;
	}
	assert_int_equal(json_canon_jcs(top, &sb), -ELOOP);
	json_decref(top);
	sbuf_release(&sb);
}

static void test_null_value(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)state;
	assert_int_equal(json_canon_jcs(NULL, &sb), -EINVAL);
	assert_int_equal(json_canon_py(NULL, &sb), -EINVAL);
	sbuf_release(&sb);
}

/* ---- generated vectors ---------------------------------------------------- */

/* Each line: {"in": JSON text, "out": expected} or {"in": ..., "error": "ERANGE"};
 * also checks that the canonical form is a fixed point. JCS output is re-read
 * with every number as a double (its data model): a real of 2^53 or more is
 * written in integer form ("1e20" -> 100000000000000000000), which jansson
 * would otherwise read as an out-of-range integer. */
static void run_vectors(const char *file, int (*fn)(const json_t *, struct sbuf *))
{
	size_t len, n = 0;
	char *data = read_data(file, &len);
	char *line = data, *nl;

	for (; *line; line = nl + 1) {
		json_t *rec, *jin, *jout, *jerr;
		char *got = NULL, *again = NULL;
		int r;

		nl = strchr(line, '\n');
		if (!nl) {
			fail_msg("%s: last line lacks a newline", file);
			break;
		}
		*nl = '\0';
		rec = load(line);
		jin = json_object_get(rec, "in");
		jout = json_object_get(rec, "out");
		jerr = json_object_get(rec, "error");
		assert_true(json_is_string(jin));
		r = canon_text(fn, json_string_value(jin), &got);
		if (jerr) {
			assert_string_equal(json_string_value(jerr), "ERANGE");
			if (r != -ERANGE)
				fail_msg("%s: %s: want ERANGE, got %d", file,
					 json_string_value(jin), r);
		} else {
			if (r < 0)
				fail_msg("%s: %s: %s", file, json_string_value(jin), strerror(-r));
			assert_true(json_is_string(jout));
			if (strcmp(got, json_string_value(jout)) != 0)
				fail_msg("%s: input %s\n  got  %s\n  want %s", file,
					 json_string_value(jin), got, json_string_value(jout));
			assert_int_equal(
				canon_text_flags(fn, got,
						 fn == json_canon_jcs ? JSON_DECODE_INT_AS_REAL : 0,
						 &again),
				0);
			assert_string_equal(again, got);
		}
		free(got);
		free(again);
		json_decref(rec);
		n++;
	}
	assert_true(n >= 100);
	free(data);
}

static void test_py_vectors(void **state)
{
	(void)state;
	run_vectors("py-vectors.jsonl", json_canon_py);
}

static void test_jcs_vectors(void **state)
{
	(void)state;
	run_vectors("jcs-vectors.jsonl", json_canon_jcs);
}

/* numbers.txt: "BITS JCS PY" per line (node's and Python's text of a double). */
static void test_number_vectors(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t len, n = 0;
	char *data = read_data("numbers.txt", &len);
	char *line = data, *nl;

	(void)state;
	for (; *line; line = nl + 1) {
		char hex[17], es[64], py[64];
		uint64_t bits;
		double d;
		json_t *v;

		nl = strchr(line, '\n');
		if (!nl) {
			fail_msg("numbers.txt: last line lacks a newline");
			break;
		}
		*nl = '\0';
		if (sscanf(line, "%16s %63s %63s", hex, es, py) != 3)
			fail_msg("numbers.txt: bad line '%s'", line);
		bits = strtoull(hex, NULL, 16);
		memcpy(&d, &bits, sizeof(d));
		v = json_real(d);
		assert_non_null(v);
		sbuf_reset(&sb);
		assert_int_equal(json_canon_jcs(v, &sb), 0);
		if (strcmp(sb.buf, es) != 0)
			fail_msg("%s: jcs got %s want %s", hex, sb.buf, es);
		sbuf_reset(&sb);
		assert_int_equal(json_canon_py(v, &sb), 0);
		if (strcmp(sb.buf, py) != 0)
			fail_msg("%s: py got %s want %s", hex, sb.buf, py);
		json_decref(v);
		n++;
	}
	assert_true(n >= 1000);
	free(data);
	sbuf_release(&sb);
}

/* ---- parse and pretty ----------------------------------------------------- */

static void test_parse_strict(void **state)
{
	struct diag d;
	json_t *v = NULL, *sentinel = (json_t *)&d;
	char buf[1024];

	(void)state;
	assert_int_equal(json_parse_strict("x.json", "{\"a\": [1, 2]}", 13, &v, &d), 0);
	assert_true(json_is_object(v));
	json_decref(v);

	/* Any value, and len bounds the input (no NUL needed). */
	assert_int_equal(json_parse_strict("x.json", "42 trailing", 2, &v, NULL), 0);
	assert_int_equal(json_integer_value(v), 42);
	json_decref(v);

	v = sentinel;
	diag_clear(&d);
	assert_int_equal(json_parse_strict("x.json", "{\"a\":1,\"a\":2}", 13, &v, &d), -EBADMSG);
	assert_ptr_equal(v, sentinel); /* untouched on failure */
	assert_string_equal(diag_format(&d, buf, sizeof(buf)),
			    "x.json:1:10: duplicate object key near '\"a\"'");

	assert_int_equal(json_parse_strict("in", "[1] [2]", 7, &v, &d), -EBADMSG);
	assert_string_equal(diag_format(&d, buf, sizeof(buf)),
			    "in:1:5: end of file expected near '['");

	assert_int_equal(json_parse_strict("f", "[1,\n 2,\n x]", 11, &v, &d), -EBADMSG);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 2);
	assert_string_equal(d.file, "f");
	assert_non_null(strstr(d.msg, "invalid token"));

	assert_int_equal(json_parse_strict("e", "", 0, &v, &d), -EBADMSG);
	assert_int_equal(d.line, 1);
	assert_int_equal(json_parse_strict("e", "[NaN]", 5, &v, NULL), -EBADMSG);
	assert_int_equal(json_parse_strict("e", "\"\\ud800\"", 8, &v, NULL), -EBADMSG);
	assert_ptr_equal(v, sentinel);
}

static void test_dump_pretty(void **state)
{
	json_t *v = load("{\"b\": [1, 2.5], \"a\": {\"\\u00e9\": \"\\u20ac\"}, \"c\": []}");
	char *s = json_dump_pretty(v);

	(void)state;
	assert_non_null(s);
	assert_string_equal(s, "{\n"
			       "  \"a\": {\n"
			       "    \"\xc3\xa9\": \"\xe2\x82\xac\"\n"
			       "  },\n"
			       "  \"b\": [\n"
			       "    1,\n"
			       "    2.5\n"
			       "  ],\n"
			       "  \"c\": []\n"
			       "}\n");
	free(s);
	json_decref(v);

	v = json_string("scalar");
	s = json_dump_pretty(v);
	assert_string_equal(s, "\"scalar\"\n");
	free(s);
	json_decref(v);
	assert_null(json_dump_pretty(NULL));
}

/* ---- json_write_pretty: jansson's json_dumps, byte for byte ------------- */

/* v written by both; they must agree, on success and on failure. */
static void assert_pretty_same(const json_t *v, int precision, bool any)
{
	size_t flags = JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(precision) |
		       (any ? JSON_ENCODE_ANY : 0);
	char *ref = json_dumps(v, flags);
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	int r;

	(void)sbuf_adds(&out, "prefix:"); /* appended to, and kept on failure */
	r = json_write_pretty(v, precision, any, &out);
	if (!ref) {
		assert_true(r < 0);
		assert_string_equal(out.buf, "prefix:");
	} else {
		if (r < 0)
			fail_msg("json_write_pretty failed (%d) where jansson wrote: %s", r, ref);
		if (strcmp(out.buf + 7, ref) != 0)
			fail_msg("json_write_pretty:\n%s\njansson:\n%s", out.buf + 7, ref);
	}
	free(ref); /* jansson's default allocator is malloc */
	sbuf_release(&out);
}

static void test_write_pretty_vectors(void **state)
{
	static const char *const texts[] = {
		"{}",
		"[]",
		"{\"a\": {}, \"b\": [], \"c\": [{}], \"d\": [[]]}",
		"{\"adapters\": [{\"name\": \"x\", \"builtin\": false, \"binary\": null}]}",
		/* key order: bytes, then length; upper case, digits, UTF-8 */
		"{\"b\": 1, \"a\": 2, \"ab\": 3, \"A\": 4, \"a0\": 5, \"\u00e9\": 6, \"\": 7,"
		" \"\u20ac\": 8, \"z\": 9, \"a b\": 10, \"_\": 11, \"~\": 12}",
		/* escapes: every control, quotes, backslash, slash, DEL, non-ASCII */
		"[\"\\u0000\\u0001\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f \\\" \\\\ / \\u007f\","
		" \"\u00e9\u20ac\\ud83d\\ude00\", \"\", \"plain text\", \"tab\\tend\\n\"]",
		/* numbers */
		"[0, -1, 1, 9223372036854775807, -9223372036854775808, 42]",
		"[0.0, -0.0, 0.1, 1.5, -2.25, 1e300, 1e-300, 123456789012345678.0, 1e15, 1e16,"
		" 1e17, 1e-5, 0.0001, 3.141592653589793, 2.5e-7, 100.0, 1.0e21, 5e-324]",
		"[true, false, null, [true], {\"k\": null}]",
		/* deep and wide */
		"{\"a\": {\"b\": {\"c\": {\"d\": {\"e\": {\"f\": {\"g\": {\"h\": {\"i\":"
		" {\"j\": {\"k\": {\"l\": {\"m\": {\"n\": {\"o\": {\"p\": {\"q\": [1]}}}}}}}}}}}}}}}}}",
		"{\"k01\": 1, \"k02\": 2, \"k03\": 3, \"k04\": 4, \"k05\": 5, \"k06\": 6,"
		" \"k07\": 7, \"k08\": 8, \"k09\": 9, \"k10\": 10, \"k11\": 11, \"k12\": 12,"
		" \"k13\": 13, \"k14\": 14, \"k15\": 15, \"k16\": 16, \"k17\": 17, \"k18\": 18,"
		" \"K\": 0, \"k\": 0, \"k1\": 0, \"k100\": 0}",
	};
	json_t *v;
	size_t i;
	int prec;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(texts); i++) {
		v = load(texts[i]);
		for (prec = 0; prec <= 17; prec += 5)
			assert_pretty_same(v, prec, false);
		assert_pretty_same(v, 15, true);
		json_decref(v);
	}
	/* scalars: only with any, as json_dumps */
	v = json_string("scalar \x01");
	assert_pretty_same(v, 15, false);
	assert_pretty_same(v, 15, true);
	json_decref(v);
	v = json_real(0.1 + 0.2);
	assert_pretty_same(v, 15, true);
	assert_pretty_same(v, 17, true);
	json_decref(v);
	v = json_integer(-7);
	assert_pretty_same(v, 15, true);
	json_decref(v);
	/* a NUL inside a string, and a key with one */
	v = json_object();
	json_object_set_new(v, "s", json_stringn("a\0b", 3));
	assert_int_equal(json_object_setn_new(v, "k\0z", 3, json_true()), 0);
	assert_int_equal(json_object_setn_new(v, "k", 1, json_false()), 0);
	assert_pretty_same(v, 15, false);
	json_decref(v);
	/* invalid UTF-8 (only a nocheck string can hold it): both fail */
	v = json_array();
	json_array_append_new(v, json_string_nocheck("bad \xff byte"));
	assert_pretty_same(v, 15, false);
	json_decref(v);
	v = json_object();
	json_object_set_new(v, "ok", json_string_nocheck("cut \xe2\x82"));
	assert_pretty_same(v, 15, false);
	json_decref(v);
	assert_int_equal(json_write_pretty(NULL, 15, true, &(struct sbuf)SBUF_INIT(16)), -EINVAL);
}

/* Random trees, from a fixed seed: any difference from jansson prints the
 * two texts. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

static void rnd_text(char *buf, size_t size)
{
	static const char *const parts[] = {"a",
					    "b",
					    "Z",
					    "0",
					    " ",
					    "\"",
					    "\\",
					    "/",
					    "\n",
					    "\t",
					    "\x01",
					    "\x1f",
					    "\x7f",
					    "\xc3\xa9",
					    "\xe2\x82\xac",
					    "\xf0\x9f\x98\x80",
					    "name",
					    "-"};
	size_t n = rnd(6), i, o = 0;

	for (i = 0; i < n; i++) {
		const char *p = parts[rnd(ARRAY_SIZE(parts))];
		size_t l = strlen(p);

		if (o + l >= size)
			break;
		memcpy(buf + o, p, l);
		o += l;
	}
	buf[o] = '\0';
}

// NOLINTNEXTLINE(misc-no-recursion)
static json_t *rnd_value(unsigned depth)
{
	char text[64];
	json_t *v;
	size_t i, n;

	switch (depth >= 5 ? 2 + rnd(6) : rnd(8)) {
	case 0:
		v = json_object();
		for (i = 0, n = rnd(depth ? 22 : 5); i < n; i++) {
			rnd_text(text, sizeof(text));
			json_object_set_new(v, text, rnd_value(depth + 1));
		}
		return v;
	case 1:
		v = json_array();
		for (i = 0, n = rnd(5); i < n; i++)
			json_array_append_new(v, rnd_value(depth + 1));
		return v;
	case 2:
	case 3:
		rnd_text(text, sizeof(text));
		return json_string(text);
	case 4:
		return json_integer((json_int_t)rnd(2000000) - 1000000);
	case 5:
		return json_real(((double)rnd(2000000) - 1000000) / (double)(1 + rnd(100000)));
	case 6:
		return rnd(2) ? json_true() : json_false();
	default:
		return json_null();
	}
}

/* v streamed through a json_writer (its keys sorted as jansson does). */
// NOLINTNEXTLINE(misc-no-recursion)
static void stream(struct json_writer *w, const json_t *v)
{
	json_t *o = (json_t *)(uintptr_t)v; // NOLINT(performance-no-int-to-ptr)
	const char *keys[64], *k;
	size_t n, i, j;
	void *it;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n = 0;
		for (it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
			assert_true(n < ARRAY_SIZE(keys));
			keys[n++] = json_object_iter_key(it);
		}
		for (i = 1; i < n; i++)
			for (j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
				k = keys[j];
				keys[j] = keys[j - 1];
				keys[j - 1] = k;
			}
		json_writer_object(w);
		for (i = 0; i < n; i++) {
			json_writer_key(w, keys[i]);
			stream(w, json_object_get(v, keys[i]));
		}
		json_writer_object_end(w);
		return;
	case JSON_ARRAY:
		json_writer_array(w);
		for (i = 0; i < json_array_size(v); i++)
			stream(w, json_array_get(v, i));
		json_writer_array_end(w);
		return;
	case JSON_STRING:
		json_writer_str(w, json_string_value(v));
		return;
	case JSON_INTEGER:
		json_writer_int(w, json_integer_value(v));
		return;
	case JSON_TRUE:
	case JSON_FALSE:
		json_writer_bool(w, json_is_true(v));
		return;
	case JSON_NULL:
	case JSON_REAL: /* not generated below */
	default:
		json_writer_null(w);
		return;
	}
}

/* A tree without reals or NULs: the streamed text is json_write_pretty()'s. */
static void assert_stream_same(const json_t *v)
{
	struct sbuf a = SBUF_INIT(SIZE_MAX), b = SBUF_INIT(SIZE_MAX);
	struct json_writer w;

	(void)sbuf_adds(&b, "kept");
	assert_int_equal(json_write_pretty(v, 15, true, &a), 0);
	json_writer_init(&w, &b);
	stream(&w, v);
	assert_int_equal(json_writer_finish(&w), 0);
	if (strcmp(a.buf, b.buf + 4) != 0)
		fail_msg("streamed:\n%s\njson_write_pretty:\n%s", b.buf + 4, a.buf);
	sbuf_release(&a);
	sbuf_release(&b);
}

static void test_writer(void **state)
{
	static const char *const texts[] = {
		"{}",
		"[]",
		"{\"a\": {}, \"b\": [], \"c\": [{}], \"d\": [[]]}",
		"{\"adapters\": [{\"binary\": \"x\", \"builtin\": false, \"display_name\": \"X\","
		" \"name\": \"x\"}, {\"binary\": null, \"builtin\": true, \"display_name\": \"m\","
		" \"name\": \"m\"}]}",
		"[\"\\u0001\\t\\\"\\\\\u00e9\", 0, -9223372036854775808, 9223372036854775807, null]",
		"\"scalar\"",
		"17",
	};
	struct sbuf out = SBUF_INIT(SIZE_MAX), small = SBUF_INIT(8);
	struct json_writer w;
	json_t *v;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(texts); i++) {
		v = load(texts[i]);
		assert_stream_same(v);
		json_decref(v);
	}
	/* strings as json_str_lossy() makes them: invalid UTF-8 becomes '?' */
	json_writer_init(&w, &out);
	json_writer_array(&w);
	json_writer_str(&w, "ok \xc3\xa9");
	json_writer_str(&w, "bad \xff\xc3");
	json_writer_str(&w, NULL);
	json_writer_array_end(&w);
	assert_int_equal(json_writer_finish(&w), 0);
	assert_string_equal(out.buf, "[\n  \"ok \xc3\xa9\",\n  \"bad ??\",\n  null\n]");
	sbuf_release(&out);
	/* errors stick, and leave the buffer as it was */
	(void)sbuf_adds(&out, "before");
	json_writer_init(&w, &out);
	for (i = 0; i < JSON_WRITER_MAX_DEPTH + 1; i++)
		json_writer_array(&w);
	json_writer_str(&w, "lost");
	assert_int_equal(json_writer_finish(&w), -ELOOP);
	assert_string_equal(out.buf, "before");
	sbuf_release(&out);
	json_writer_init(&w, &small);
	json_writer_array(&w);
	json_writer_str(&w, "longer than eight bytes");
	json_writer_array_end(&w);
	assert_int_equal(json_writer_finish(&w), -ENOBUFS);
	assert_int_equal(small.len, 0);
	sbuf_release(&small);
}

// NOLINTNEXTLINE(misc-no-recursion)
static bool json_dumps_has_real(const json_t *v)
{
	json_t *o = (json_t *)(uintptr_t)v; // NOLINT(performance-no-int-to-ptr)
	size_t i;
	void *it;

	if (json_is_real(v))
		return true;
	for (i = 0; json_is_array(v) && i < json_array_size(v); i++)
		if (json_dumps_has_real(json_array_get(v, i)))
			return true;
	for (it = json_is_object(v) ? json_object_iter(o) : NULL; it;
	     it = json_object_iter_next(o, it))
		if (json_dumps_has_real(json_object_iter_value(it)))
			return true;
	return false;
}

static void test_write_pretty_random(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 3000; i++) {
		json_t *v = rnd_value(0);

		assert_pretty_same(v, 15, false);
		assert_pretty_same(v, 15, true);
		json_decref(v);
	}
	for (i = 0; i < 1000; i++) {
		json_t *v = rnd_value(0);

		if (!json_dumps_has_real(v))
			assert_stream_same(v);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jcs_rfc_sample),
		cmocka_unit_test(test_jcs_rfc_sorting),
		cmocka_unit_test(test_key_order_utf16_vs_codepoint),
		cmocka_unit_test(test_jcs_rfc_numbers),
		cmocka_unit_test(test_numbers_by_hand),
		cmocka_unit_test(test_jcs_refuses_unsafe_integers),
		cmocka_unit_test(test_string_escapes),
		cmocka_unit_test(test_string_with_nul),
		cmocka_unit_test(test_invalid_utf8_refused),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_cap_gives_enobufs),
		cmocka_unit_test(test_depth_and_cycles),
		cmocka_unit_test(test_null_value),
		cmocka_unit_test(test_py_vectors),
		cmocka_unit_test(test_jcs_vectors),
		cmocka_unit_test(test_number_vectors),
		cmocka_unit_test(test_parse_strict),
		cmocka_unit_test(test_dump_pretty),
		cmocka_unit_test(test_write_pretty_vectors),
		cmocka_unit_test(test_write_pretty_random),
		cmocka_unit_test(test_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
