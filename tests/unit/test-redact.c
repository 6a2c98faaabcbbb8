/* util/redact: every representation of a secret bernstein may write (raw,
 * JSON-escaped by jansson with and without JSON_ENSURE_ASCII and
 * JSON_ESCAPE_SLASH, Python's canonical JSON, JCS, events.jsonl, nested JSON
 * strings, any \u spelling, lossy UTF-8 forms), overlapping secrets, heads
 * of cut lines, binary input, and long adversarial inputs (linear time: a
 * quadratic matcher does not finish within the test's timeout). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/events.h"
#include "util/json.h"
#include "util/redact.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

/* A key with what JSON escapes: '"', '\', '/', a tab, a newline-free
 * control byte, DEL, non-ASCII (2, 3 and 4 bytes) and U+2028. */
static const char KEY[] = "sk-\"q\\b/\tc\x01\x7f\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80-redact-0123";

/* ---- helpers ---- */

static char *red_flags(struct redact *rd, const char *s, size_t len, unsigned flags, int *ret_n)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int n = redact_apply(rd, s, len, flags, &sb);

	assert_true(n >= 0);
	if (ret_n)
		*ret_n = n;
	return sbuf_detach(&sb, NULL);
}

static char *red(struct redact *rd, const char *s)
{
	return red_flags(rd, s, strlen(s), 0, NULL);
}

static struct redact *with(const char *secret)
{
	struct redact *rd = redact_new();

	assert_true(redact_add(rd, secret));
	return rd;
}

/* s as a JSON string, dumped with flags (caller frees). */
static char *jdump(const char *s, size_t flags)
{
	json_t *j = json_string(s);
	char *d;

	assert_non_null(j);
	d = json_dumps(j, JSON_ENCODE_ANY | flags);
	assert_non_null(d);
	json_decref(j);
	return d;
}

/* text redacted must not hold the secret in any form, must hold the mark,
 * and, when text was JSON, must still be JSON whose value lacks the key. */
static void check_clean(struct redact *rd, const char *text, bool json)
{
	char *out = red(rd, text);

	assert_non_null(strstr(out, REDACT_MARK));
	assert_false(redact_found(rd, out, strlen(out)));
	assert_null(strstr(out, KEY));
	if (json) {
		json_t *v = json_loads(out, JSON_DECODE_ANY, NULL);
		char *again;

		assert_non_null(v);
		again = json_dumps(v, JSON_ENCODE_ANY);
		assert_false(redact_found(rd, again, strlen(again)));
		free(again);
		json_decref(v);
	}
	free(out);
}

/* text redacted holds the mark and no form of any secret. */
static void check_clean_any(struct redact *rd, const char *text)
{
	char *out = red(rd, text);

	assert_non_null(strstr(out, REDACT_MARK));
	assert_false(redact_found(rd, out, strlen(out)));
	free(out);
}

/* ---- tests ---- */

static void test_raw(void **state)
{
	struct redact *rd = with("sk-abcdef123456");
	char *out;
	int n;

	(void)state;
	out = red(rd, "key sk-abcdef123456 and again sk-abcdef123456!");
	assert_string_equal(out, "key [REDACTED] and again [REDACTED]!");
	free(out);
	out = red_flags(rd, "nothing here", 12, 0, &n);
	assert_string_equal(out, "nothing here");
	assert_int_equal(n, 0);
	free(out);
	out = red(rd, "sk-abcdef123456");
	assert_string_equal(out, REDACT_MARK);
	free(out);
	assert_true(redact_found(rd, "xsk-abcdef123456x", 17));
	assert_false(redact_found(rd, "sk-abcdef12345", 14));
	redact_free(rd);

	/* no redactor, no secrets: a copy */
	out = red(NULL, "sk-abcdef123456");
	assert_string_equal(out, "sk-abcdef123456");
	free(out);
	assert_false(redact_found(NULL, "x", 1));
	assert_int_equal(redact_count(NULL), 0);
}

static void test_short_and_duplicate(void **state)
{
	struct redact *rd = redact_new();
	char *out;

	(void)state;
	assert_false(redact_add(rd, "1234567")); /* REDACT_MIN - 1 */
	assert_false(redact_add(rd, ""));
	assert_false(redact_add(rd, NULL));
	assert_true(redact_add(rd, "12345678"));
	assert_false(redact_add(rd, "12345678"));
	assert_int_equal(redact_count(rd), 1);
	out = red(rd, "a 1234567 b 12345678 c");
	assert_string_equal(out, "a 1234567 b [REDACTED] c");
	free(out);
	redact_free(rd);

	/* a secret that is a form of another (a line of it) keeps its own forms */
	rd = redact_new();
	assert_true(redact_add(rd, "first-line-secret\nsecond-line-secret"));
	assert_false(redact_add(rd, "second-line-secret"));
	assert_false(redact_add(rd, "second-line-secret"));
	assert_true(redact_add(rd, "sk-lit\\n-escape-secret"));
	assert_int_equal(redact_count(rd), 2);
	out = red(rd, "x second-line-secret y sk-lit\n-escape-secret z");
	assert_string_equal(out, "x [REDACTED] y [REDACTED] z");
	free(out);
	redact_free(rd);
}

static void test_jansson_forms(void **state)
{
	static const size_t flags[] = {
		0,
		JSON_ENSURE_ASCII,
		JSON_ESCAPE_SLASH,
		JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH,
	};
	struct redact *rd = with(KEY);
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		json_t *o = json_pack("{s:s, s:[s], s:s}", "text", KEY, "list", KEY, "k", "v");
		char *d = json_dumps(o, JSON_COMPACT | flags[i]);
		char *s = jdump(KEY, flags[i]);

		assert_null(strstr(d, KEY)); /* the raw form is not what is written */
		check_clean(rd, d, true);
		check_clean(rd, s, true);
		free(s);
		free(d);
		json_decref(o);
	}
	redact_free(rd);
}

static void test_canonical_forms(void **state)
{
	struct redact *rd = with(KEY);
	json_t *o = json_pack("{s:s, s:s}", "details", KEY, "x", "y");
	struct sbuf py = SBUF_INIT(SIZE_MAX), jcs = SBUF_INIT(SIZE_MAX);
	struct sbuf ev_json = SBUF_INIT(SIZE_MAX);
	struct event ev;

	(void)state;
	assert_int_equal(json_canon_py(o, &py), 0);
	assert_int_equal(json_canon_jcs(o, &jcs), 0);
	check_clean(rd, py.buf, true);
	check_clean(rd, jcs.buf, true);
	/* events.jsonl's own writer (lowercase \u00XX) */
	event_init(&ev, EVENT_TEXT);
	ev.text = KEY;
	ev.dialect = "claude";
	assert_int_equal(event_to_json(&ev, 0, &ev_json), 0);
	check_clean(rd, ev_json.buf, true);
	sbuf_release(&py);
	sbuf_release(&jcs);
	sbuf_release(&ev_json);
	json_decref(o);
	redact_free(rd);
}

static void test_nested(void **state)
{
	struct redact *rd = with(KEY);
	char *cur = xstrdup(KEY), *next;
	int level;

	(void)state;
	/* a JSON string of a JSON string of ... the key */
	for (level = 1; level <= REDACT_DEPTH; level++) {
		next = jdump(cur, level % 2 ? JSON_ENSURE_ASCII : 0);
		free(cur);
		cur = next;
		check_clean(rd, cur, true);
	}
	free(cur);
	redact_free(rd);
}

static void test_any_spelling(void **state)
{
	struct redact *rd = with("sk-ABCdef/0123456");
	const char *in = "\"\\u0073\\u006B-\\u0041BC\\u0064ef\\/0123456\"";
	char *out;

	(void)state;
	out = red(rd, in);
	assert_string_equal(out, "\"[REDACTED]\"");
	free(out);
	redact_free(rd);
}

static void test_overlapping(void **state)
{
	struct redact *rd = redact_new();
	char *out;

	(void)state;
	assert_true(redact_add(rd, "abcdefgh12"));
	assert_true(redact_add(rd, "defgh12345"));
	assert_true(redact_add(rd, "secretvalue"));
	assert_true(redact_add(rd, "the-secretvalue-long"));
	out = red(rd, "<abcdefgh12345>");
	assert_string_equal(out, "<[REDACTED]>");
	free(out);
	out = red(rd, "x the-secretvalue-long y secretvalue z");
	assert_string_equal(out, "x [REDACTED] y [REDACTED] z");
	free(out);
	/* the shorter one first, inside the longer one, then the longer */
	out = red(rd, "secretvalue-long the-secretvalue-long");
	assert_string_equal(out, "[REDACTED]-long [REDACTED]");
	free(out);
	redact_free(rd);

	/* a periodic secret in a run of its letter: one span */
	rd = with("aaaaaaaa");
	out = red(rd, "baaaaaaaaaaaaab");
	assert_string_equal(out, "b[REDACTED]b");
	free(out);
	out = red(rd, "baaaaaaab");
	assert_string_equal(out, "baaaaaaab");
	free(out);
	redact_free(rd);
}

/* Every head of "<<" FORM ">>" (a line cut at every byte) with REDACT_CUT:
 * no prefix of the form survives. */
static void cut_everywhere(struct redact *rd, const char *form)
{
	size_t flen = strlen(form), k;
	char *text = xmalloc(flen + 5), *out;

	(void)snprintf(text, flen + 5, "<<%s>>", form);
	for (k = 0; k <= flen + 4; k++) {
		out = red_flags(rd, text, k, REDACT_CUT, NULL);
		if (k <= 2)
			assert_memory_equal(out, text, k);
		else if (k <= flen + 2)
			assert_string_equal(out, "<<" REDACT_MARK);
		else
			assert_string_equal(out, k == flen + 3 ? "<<" REDACT_MARK ">"
							       : "<<" REDACT_MARK ">>");
		free(out);
	}
	/* without REDACT_CUT a head keeps its tail */
	out = red_flags(rd, text, 6, 0, NULL);
	assert_memory_equal(out, text, 6);
	free(out);
	free(text);
}

static void test_cut(void **state)
{
	struct redact *rd = with(KEY);
	char *s;

	(void)state;
	cut_everywhere(rd, KEY);
	/* the escaped forms without the string's quotes */
	s = jdump(KEY, 0);
	s[strlen(s) - 1] = '\0';
	cut_everywhere(rd, s + 1);
	free(s);
	s = jdump(KEY, JSON_ENSURE_ASCII);
	s[strlen(s) - 1] = '\0';
	cut_everywhere(rd, s + 1);
	free(s);
	redact_free(rd);
}

static void test_binary(void **state)
{
	static const char bin_secret[] = "bin\xff\xfe-secret-\x80value";
	struct redact *rd = redact_new();
	char in[4096], *out;
	size_t i;
	int count;
	uint32_t x = 12345;
	json_t *j;
	struct sbuf ev_json = SBUF_INIT(SIZE_MAX);
	struct event ev;

	(void)state;
	assert_true(redact_add(rd, "nul-around-secret"));
	assert_true(redact_add(rd, bin_secret));
	for (i = 0; i < sizeof(in); i++) {
		x = x * 1103515245u + 12345u;
		in[i] = (char)(x >> 16);
	}
	memcpy(in + 100, "nul-around-secret", 17);
	in[99] = '\0';
	in[117] = '\0';
	memcpy(in + 2000, bin_secret, sizeof(bin_secret) - 1);
	out = red_flags(rd, in, sizeof(in), 0, &count);
	assert_true(count >= 2);
	assert_false(redact_found(rd, out, strlen(out)));
	assert_memory_equal(out + 100, REDACT_MARK, strlen(REDACT_MARK));
	assert_memory_equal(out, in, 100);
	free(out);

	/* the lossy forms writers make of a key that is not UTF-8 */
	out = red(rd, "a bin?\x3f-secret-?value b"); /* "??-" would be a trigraph */
	assert_string_equal(out, "a [REDACTED] b");
	free(out);
	out = red(rd, "a bin\xef\xbf\xbd\xef\xbf\xbd-secret-\xef\xbf\xbdvalue b");
	assert_string_equal(out, "a [REDACTED] b");
	free(out);
	j = json_str_lossy(bin_secret);
	out = json_dumps(j, JSON_ENCODE_ANY);
	check_clean_any(rd, out);
	free(out);
	json_decref(j);
	event_init(&ev, EVENT_TEXT);
	ev.text = bin_secret;
	ev.dialect = "x";
	assert_int_equal(event_to_json(&ev, 0, &ev_json), 0);
	check_clean_any(rd, ev_json.buf);
	sbuf_release(&ev_json);
	redact_free(rd);
}

static void test_multiline_secret(void **state)
{
	struct redact *rd = with("-----BEGIN KEY-----\nMIIEvQIBADANBg\nshort\n-----END KEY-----");
	char *out;

	(void)state;
	out = red(rd, "line: MIIEvQIBADANBg");
	assert_string_equal(out, "line: [REDACTED]");
	free(out);
	out = red(rd, "short");
	assert_string_equal(out, "short");
	free(out);
	redact_free(rd);
}

/* A value with a literal backslash-n in it: the text with a newline there is
 * what any JSON writer writes as the value itself. */
static void test_escapes_in_secret(void **state)
{
	struct redact *rd = with("sk-lit\\n-escape-secret");
	json_t *v = json_pack("{s:s}", "text", "sk-lit\n-escape-secret");
	char *out, *d;

	(void)state;
	out = red(rd, "x sk-lit\n-escape-secret y");
	assert_string_equal(out, "x [REDACTED] y");
	free(out);
	(void)redact_json(rd, v);
	d = json_dumps(v, JSON_COMPACT);
	assert_null(strstr(d, "sk-lit"));
	free(d);
	json_decref(v);
	redact_free(rd);
}

static void test_cap(void **state)
{
	struct redact *rd = with("sk-abcdef123456");
	struct sbuf sb = SBUF_INIT(12);

	(void)state;
	assert_int_equal(redact_apply(rd, "ab sk-abcdef123456 cd", 21, 0, &sb), -ENOBUFS);
	assert_null(strstr(sb.buf, "sk-"));
	sbuf_release(&sb);
	redact_free(rd);
}

static void test_json_tree(void **state)
{
	struct redact *rd = with(KEY);
	json_t *v = json_pack("{s:s, s:{s:i, s:s}, s:[s, s, i], s:s}", "text", KEY, KEY, "n", 1,
			      "inner", "x", "list", "plain", KEY, 3, "args", "");
	char *args = jdump(KEY, JSON_ENSURE_ASCII), *d;
	size_t n;

	(void)state;
	/* a JSON document in a string (a tool call's arguments) */
	(void)json_object_set_new(v, "args", json_string(args));
	n = redact_json(rd, v);
	assert_int_equal(n, 4);
	d = json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT);
	assert_false(redact_found(rd, d, strlen(d)));
	assert_non_null(json_object_get(v, REDACT_MARK));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, REDACT_MARK), "n")),
			 1);
	assert_string_equal(json_string_value(json_object_get(v, "text")), REDACT_MARK);
	free(d);
	free(args);
	json_decref(v);
	redact_free(rd);
}

/* Long inputs: each of these is quadratic for a matcher that restarts its
 * search per match or per secret, and must finish here. */
static void test_long_inputs(void **state)
{
	const size_t big = 8u << 20;
	struct redact *rd = redact_new();
	char *in = xmalloc(big + 1), *out;
	size_t i;
	int n;

	(void)state;
	assert_true(redact_add(rd, "aaaaaaaa"));
	assert_true(redact_add(rd, "sk-long-0123456789"));
	assert_true(
		redact_add(rd, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"));

	/* one secret everywhere, another only at the end */
	memset(in, 'a', big);
	memcpy(in + big - 18, "sk-long-0123456789", 18);
	out = red_flags(rd, in, big, 0, &n);
	assert_string_equal(out, REDACT_MARK);
	free(out);

	/* near misses of a long secret, over and over */
	for (i = 0; i + 64 <= big; i += 64)
		memset(in + i, 'z', 63), in[i + 63] = 'y';
	out = red_flags(rd, in, big, REDACT_CUT, &n);
	assert_int_equal(n, 0);
	free(out);

	/* backslashes: every level of decoding has work */
	memset(in, '\\', big);
	out = red_flags(rd, in, big, REDACT_CUT, &n);
	free(out);
	for (i = 0; i + 6 <= big; i += 6)
		memcpy(in + i, "\\u0061", 6);
	out = red_flags(rd, in, big - big % 6, 0, &n);
	assert_int_equal(n, 1);
	free(out);

	/* short lines, many calls: the scratch stays small */
	for (i = 0; i < 100000; i++) {
		out = red_flags(rd, "a line of text with \\\"quotes\\\" sk-long-0123456789", 50, 0,
				&n);
		assert_int_equal(n, 1);
		free(out);
	}
	free(in);
	redact_free(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw),
		cmocka_unit_test(test_short_and_duplicate),
		cmocka_unit_test(test_jansson_forms),
		cmocka_unit_test(test_canonical_forms),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_any_spelling),
		cmocka_unit_test(test_overlapping),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_multiline_secret),
		cmocka_unit_test(test_escapes_in_secret),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_json_tree),
		cmocka_unit_test(test_long_inputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
