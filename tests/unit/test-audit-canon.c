/* The verifier's fast path (src/audit/audit-canon.c) against the full jansson
 * path: ordinary records take it, nothing non-canonical ever does, canonical
 * lines outside its subset fall back, and whenever it accepts a line, the
 * full path reaches the same verdict (checked on every single-byte mutation
 * of real chain lines and on many generated numbers). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit-internal.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/sbuf.h"

#define FUZZ_KEY "fuzz-key" /* the key of the chains in fuzz/corpus/audit/ */
#define HMAC_A	 "1111111111111111111111111111111111111111111111111111111111111111"
#define PREV_A	 "2222222222222222222222222222222222222222222222222222222222222222"

static struct hash_hmac *mac;
static struct audit_scratch sc;

static int setup(void **state)
{
	(void)state;
	audit_scratch_init(&sc);
	return hash_hmac_new(FUZZ_KEY, strlen(FUZZ_KEY), &mac);
}

static int teardown(void **state)
{
	(void)state;
	audit_scratch_release(&sc);
	mac = hash_hmac_free(mac);
	return 0;
}

/* The lines of fuzz/corpus/audit/NAME (without '\n'), in one buffer. */
struct lines {
	char *text;
	size_t n;
	const char *v[64];
	size_t len[64];
};

static void lines_load(struct lines *l, const char *name)
{
	const char *src = getenv("SRCDIR");
	char path[4096];
	size_t size = 0, i, start = 0;
	int r;

	memset(l, 0, sizeof(*l));
	(void)snprintf(path, sizeof(path), "%s/fuzz/corpus/audit/%s", src ? src : ".", name);
	r = read_file_capped(path, 1 << 20, &l->text, &size);
	if (r < 0)
		fail_msg("cannot read '%s': %s (is SRCDIR set?)", path, strerror(-r));
	for (i = 0; i < size && l->n < 64; i++) {
		if (l->text[i] != '\n')
			continue;
		l->v[l->n] = l->text + start;
		l->len[l->n] = i - start;
		l->n++;
		start = i + 1;
	}
}

static bool same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Check line both ways; fail unless the verdicts are identical. Returns
 * whether the fast path decided. */
static bool agree(const char *line, size_t len)
{
	struct audit_record f, s;
	bool fast;

	assert_int_equal(audit_record_check(&sc, mac, line, len, 0, &f), 0);
	assert_int_equal(audit_record_check(&sc, mac, line, len, AUDIT_CHECK_NO_FAST, &s), 0);
	assert_false(s.fast);
	fast = f.fast;
	if (f.kind != s.kind || f.canonical != s.canonical || !f.prev != !s.prev ||
	    !f.hmac != !s.hmac || (f.prev && !same_bytes(f.prev, f.prevlen, s.prev, s.prevlen)) ||
	    (f.hmac && !same_bytes(f.hmac, f.hmaclen, s.hmac, s.hmaclen)) ||
	    strcmp(f.computed, s.computed) != 0 || f.mac_ok != s.mac_ok ||
	    strcmp(f.error, s.error) != 0)
		fail_msg("fast (%d) and full path disagree on '%.*s'", fast, (int)len, line);
	audit_record_release(&f);
	audit_record_release(&s);
	return fast;
}

/* agree(), cheaply: the full path runs twice only when the scanner accepts
 * (otherwise audit_record_check() takes the full path anyway). */
static bool agree_if_fast(const char *line, size_t len)
{
	struct audit_canon c;

	if (!audit_canon_scan(line, len, &c))
		return false;
	return agree(line, len);
}

static bool scan(const char *line)
{
	struct audit_canon c;

	return audit_canon_scan(line, strlen(line), &c) == 1;
}

/* The full path's verdict on line: 1 canonical object, 0 a non-canonical
 * object, -1 not an object or not JSON. */
static int full_verdict(const char *line)
{
	struct audit_record s;
	int v;

	assert_int_equal(audit_record_check(&sc, mac, line, strlen(line), AUDIT_CHECK_NO_FAST, &s),
			 0);
	v = s.kind != AUDIT_RECORD_OBJECT ? -1 : s.canonical ? 1 : 0;
	audit_record_release(&s);
	return v;
}

/* "{"hmac": HMAC_A, "prev_hmac": PREV_A, "x": VALUE}" */
static void line_with(struct sbuf *sb, const char *value)
{
	sbuf_reset(sb);
	assert_int_equal(sbuf_addf(sb, "{\"hmac\": \"%s\", \"prev_hmac\": \"%s\", \"x\": %s}",
				   HMAC_A, PREV_A, value),
			 0);
}

/* ---- tests ---- */

/* Ordinary records (the bench's shape, every kind of value in the subset)
 * take the fast path, and their MACs verify. */
static void test_fast_path_taken(void **state)
{
	struct audit_record rec;
	struct lines l;
	size_t i;

	(void)state;
	lines_load(&l, "valid-fast.jsonl");
	assert_int_equal(l.n, 4);
	for (i = 0; i < l.n; i++) {
		assert_int_equal(audit_record_check(&sc, mac, l.v[i], l.len[i], 0, &rec), 0);
		if (!rec.fast)
			fail_msg("line %zu did not take the fast path", i + 1);
		assert_null(rec.obj);
		assert_true(rec.canonical);
		assert_true(rec.mac_ok);
		assert_int_equal(rec.hmaclen, 64);
		assert_int_equal(rec.prevlen, 64);
		audit_record_release(&rec);
		assert_true(agree(l.v[i], l.len[i]));
	}
	free(l.text);
}

/* The payload cut: "hmac" first, in the middle; prev/hmac located. */
static void test_scan_positions(void **state)
{
	static const char first[] = "{\"hmac\": \"h1\", \"prev_hmac\": \"p1\"}";
	static const char middle[] =
		"{\"a\": [1, {\"hmac\": 2}], \"hmac\": \"h2\", \"prev_hmac\": \"p2\", \"z\": \"\\\"hmac\\\": \"}";
	struct audit_canon c;
	char payload[256];

	(void)state;
	assert_int_equal(audit_canon_scan(first, strlen(first), &c), 1);
	assert_true(same_bytes(c.hmac, c.hmaclen, "h1", 2));
	assert_true(same_bytes(c.prev, c.prevlen, "p1", 2));
	(void)snprintf(payload, sizeof(payload), "%.*s%s", (int)c.cut_a, first, first + c.cut_b);
	assert_string_equal(payload, "{\"prev_hmac\": \"p1\"}");

	assert_int_equal(audit_canon_scan(middle, strlen(middle), &c), 1);
	assert_true(same_bytes(c.hmac, c.hmaclen, "h2", 2));
	assert_true(same_bytes(c.prev, c.prevlen, "p2", 2));
	(void)snprintf(payload, sizeof(payload), "%.*s%s", (int)c.cut_a, middle, middle + c.cut_b);
	assert_string_equal(
		payload,
		"{\"a\": [1, {\"hmac\": 2}], \"prev_hmac\": \"p2\", \"z\": \"\\\"hmac\\\": \"}");
	assert_true(agree(first, strlen(first)));
	assert_true(agree(middle, strlen(middle)));
}

/* A byte that must be escaped, at every offset of a long string (the
 * scanner skips plain bytes a word at a time), is always noticed; the
 * edges of the plain range are not. */
static void test_special_bytes_anywhere(void **state)
{
	static const unsigned char special[] = {0x00, 0x01, 0x1f, 0x7f, 0x80,
						0xc3, 0xff, '"',  '\\'};
	static const unsigned char plain[] = {0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7e, 'x'};
	char value[40], line[300];
	size_t off, k, n;
	struct audit_canon c;

	(void)state;
	for (off = 0; off < 24; off++) {
		for (k = 0; k < sizeof(special) + sizeof(plain); k++) {
			bool bad = k < sizeof(special);

			memset(value, 'x', 24);
			value[off] = (char)(bad ? special[k] : plain[k - sizeof(special)]);
			n = (size_t)snprintf(line, sizeof(line),
					     "{\"hmac\": \"%s\", \"prev_hmac\": \"%s\", \"x\": \"",
					     HMAC_A, PREV_A);
			memcpy(line + n, value, 24);
			memcpy(line + n + 24, "\"}", 2);
			n += 26;
			if (audit_canon_scan(line, n, &c) != !bad)
				fail_msg("byte 0x%02x at offset %zu: scanner says %d",
					 value[off] & 0xff, off, !bad);
			if (!bad)
				assert_true(agree(line, n));
		}
	}
}

/* Not canonical, or not JSON: never accepted by the scanner (and, as a
 * check of the table itself, refused by the full path too). */
static void test_not_canonical_never_fast(void **state)
{
	static const char *const values[] = {
		"1.50",
		"01",
		"-0",
		"00.5",
		"1.",
		".5",
		"+1",
		"1e5",
		"1E+05",
		"1.0e5",
		"10000000000000000.0", /* Python: 1e+16 */
		"0.00001",	       /* Python: 1e-05 */
		"0.10000000000000001", /* Python: 0.1 */
		"1.0000000000000000",
		"\"\\u00E9\"", /* uppercase hex */
		"\"\\/\"",     /* Python does not escape '/' */
		"\"\\u0041\"", /* printable ASCII is written as is */
		"\"\\u000a\"", /* has a short escape */
		"\"\\u0022\"",
		"\"\\u005c\"",
		"\"\xc3\xa9\"", /* raw UTF-8: Python escapes it */
		"\"\x7f\"",
		"\"a\tb\"",
		"\"\\ud83d\"", /* lone surrogates: not JSON for jansson */
		"\"\\ude00\"",
		"\"\\ud83d\\u0041\"",
		"\"\\ud83d\\ue000\"",
		"\"\\ud83d\\udbff\"",
		"\"\\udbff\\ud800\"",
		"\"\\x41\"",
		"\"\\u12\"",
		"tru",
		"nul",
		"True",
		"[1,2]",
		"[1 , 2]",
		"{\"b\": 1, \"a\": 2}",
		"{\"a\": 1, \"a\": 2}",
		"{\"a\":1}",
		"{ }",
		"[ ]",
		"\"unterminated",
	};
	static const char *const lines[] = {
		"{\"hmac\": \"" HMAC_A "\",  \"prev_hmac\": \"" PREV_A "\"}",
		"{\"hmac\": \"" HMAC_A "\",\"prev_hmac\": \"" PREV_A "\"}",
		"{\"hmac\":\"" HMAC_A "\", \"prev_hmac\": \"" PREV_A "\"}",
		"{\"hmac\": \"" HMAC_A "\", \"prev_hmac\": \"" PREV_A "\"} ",
		" {\"hmac\": \"" HMAC_A "\", \"prev_hmac\": \"" PREV_A "\"}",
		"{\"hmac\": \"" HMAC_A "\", \"prev_hmac\": \"" PREV_A "\"}}",
		"{\"hmac\": \"" HMAC_A "\", \"prev_hmac\": \"" PREV_A "\"",
		"{\"prev_hmac\": \"" PREV_A "\", \"hmac\": \"" HMAC_A "\"}",
		"{\"hmac\": \"" HMAC_A "\", \"hmac\": \"" HMAC_A "\", \"prev_hmac\": \"" PREV_A
		"\"}",
		"{\"hmac\": \"" HMAC_A "\", \"prev_hmac\": \"" PREV_A "\", \"a\": 1}",
	};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		line_with(&sb, values[i]);
		if (scan(sb.buf) || full_verdict(sb.buf) == 1)
			fail_msg("value %s: scanner %d, full path %d", values[i], scan(sb.buf),
				 full_verdict(sb.buf));
	}
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (scan(lines[i]) || full_verdict(lines[i]) == 1)
			fail_msg("line %s: scanner %d, full path %d", lines[i], scan(lines[i]),
				 full_verdict(lines[i]));
	sbuf_release(&sb);
}

/* Canonical, but outside the subset: the scanner says "don't know" and the
 * full path verifies them. */
static void test_outside_subset_falls_back(void **state)
{
	static const char *const values[] = {
		"1e-05",
		"1e+16",
		"2.5e-300",
		"1.7976931348623157e+308",
		"1234567890123456.0",  /* 16 digits */
		"0.1234567890123456",  /* 16 significant digits */
		"1234567890123456789", /* 19 digits */
		"-9223372036854775807",
		"\"\\u0000\"",
		"{\"\\u00e9\": 1}", /* a key with an escape */
		"{\"a\\\"b\": 1}",  /* ... */
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", /* deep */
	};
	static const char *const lines[] = {
		"{\"hmac\": 1, \"prev_hmac\": \"" PREV_A "\"}",
		"{\"hmac\": \"" HMAC_A "\", \"prev_hmac\": null}",
		"{\"hmac\": \"\\u00e9\", \"prev_hmac\": \"" PREV_A "\"}",
		"{\"hmac\": \"" HMAC_A "\"}",
		"{\"prev_hmac\": \"" PREV_A "\"}",
		"{}",
	};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		line_with(&sb, values[i]);
		if (scan(sb.buf) || full_verdict(sb.buf) != 1)
			fail_msg("value %s: scanner %d, full path %d", values[i], scan(sb.buf),
				 full_verdict(sb.buf));
		assert_false(agree(sb.buf, sb.len));
	}
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		if (scan(lines[i]) || full_verdict(lines[i]) != 1)
			fail_msg("line %s: scanner %d, full path %d", lines[i], scan(lines[i]),
				 full_verdict(lines[i]));
		assert_false(agree(lines[i], strlen(lines[i])));
	}
	sbuf_release(&sb);
}

/* Whether pos is inside one of the 64-digit MACs of line s, away from its
 * edges: mutations there are all alike (an HMAC or prev_hmac mismatch), so
 * only the edges are tried (this keeps the test fast under ASan). */
static bool inside_mac(const char *s, size_t n, size_t pos)
{
	static const char *const keys[] = {"\"hmac\": \"", "\"prev_hmac\": \""};
	size_t k;

	for (k = 0; k < 2; k++) {
		const char *at = memmem(s, n, keys[k], strlen(keys[k]));
		size_t start;

		if (!at)
			continue;
		start = (size_t)(at - s) + strlen(keys[k]);
		if (pos > start + 2 && pos + 2 < start + 64)
			return true;
	}
	return false;
}

/* Every single-byte deletion, insertion, replacement and swap of real chain
 * lines: whenever the scanner accepts the result, the full path agrees. */
static void test_mutations_agree(void **state)
{
	static const char alphabet[] = "019.-eE\"\\u/ ,:{}[]an\x7f\x01\t\xe9\x80";
	static const char *const files[] = {"valid-fast.jsonl", "valid-tricky.jsonl"};
	unsigned long mutants = 0, accepted = 0;
	size_t f, i, pos, k;
	char *buf;

	(void)state;
	buf = malloc(8192);
	assert_non_null(buf);
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct lines l;

		lines_load(&l, files[f]);
		for (i = 0; i < l.n; i++) {
			const char *s = l.v[i];
			size_t n = l.len[i];

			assert_true(n + 2 < 8192);
			for (pos = 0; pos <= n; pos++) {
				if (inside_mac(s, n, pos))
					continue;
				if (pos < n) { /* delete */
					memcpy(buf, s, pos);
					memcpy(buf + pos, s + pos + 1, n - pos - 1);
					accepted += agree_if_fast(buf, n - 1);
					mutants++;
				}
				if (pos + 1 < n) { /* swap */
					memcpy(buf, s, n);
					buf[pos] = s[pos + 1];
					buf[pos + 1] = s[pos];
					accepted += agree_if_fast(buf, n);
					mutants++;
				}
				for (k = 0; k < sizeof(alphabet) - 1; k++) {
					/* insert */
					memcpy(buf, s, pos);
					buf[pos] = alphabet[k];
					memcpy(buf + pos + 1, s + pos, n - pos);
					accepted += agree_if_fast(buf, n + 1);
					mutants++;
					if (pos == n || s[pos] == alphabet[k])
						continue;
					/* replace */
					memcpy(buf, s, n);
					buf[pos] = alphabet[k];
					accepted += agree_if_fast(buf, n);
					mutants++;
				}
			}
		}
		free(l.text);
	}
	free(buf);
	/* the fast path was really exercised, on mutants too */
	print_message("# %lu mutants, %lu taken by the fast path\n", mutants, accepted);
	assert_true(accepted > 5000);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Numbers: Python's repr() of many doubles across the fast range and its
 * edges (the full path's own canonical text), and random decimal strings.
 * The scanner must accept the short ones and agree with the full path on
 * everything it accepts. */
static void test_numbers_agree(void **state)
{
	struct sbuf num = SBUF_INIT(SIZE_MAX), sb = SBUF_INIT(SIZE_MAX);
	unsigned long fast_reprs = 0, short_reprs = 0, i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		/* a mantissa of 1..17 digits times 10^-8..10^17, either sign */
		uint64_t m = rng() % 100000000000000000ULL;
		int digits = 1 + (int)(rng() % 17), e = (int)(rng() % 26) - 8, d;
		double x;
		json_t *v;

		for (d = 17; d > digits; d--)
			m /= 10;
		x = (double)m;
		for (d = 0; d < (e < 0 ? -e : e); d++)
			x = e < 0 ? x / 10 : x * 10;
		if (rng() & 1)
			x = -x;
		v = json_real(x);
		sbuf_reset(&num);
		assert_int_equal(json_canon_py(v, &num), 0);
		json_decref(v);
		line_with(&sb, num.buf);
		if (agree_if_fast(sb.buf, sb.len))
			fast_reprs++;
		/* positional, <= 15 significant digits: inside the subset */
		if (!strchr(num.buf, 'e') && strlen(num.buf) <= 15)
			short_reprs++;
		if (!strchr(num.buf, 'e') && strlen(num.buf) <= 15 && !scan(sb.buf))
			fail_msg("repr %s not taken by the fast path", num.buf);
	}
	assert_true(short_reprs > 400);
	assert_true(fast_reprs >= short_reprs);
	for (i = 0; i < 50000; i++) {
		/* [-]I[.F] with 0..18 digits each, random digits */
		char text[48];
		size_t n = 0, ni = rng() % 19, nf = rng() % 19, k;

		if (rng() & 1)
			text[n++] = '-';
		for (k = 0; k < ni; k++)
			text[n++] = (char)('0' + (rng() % 4 == 0 ? 0 : rng() % 10));
		if (rng() % 4) {
			text[n++] = '.';
			for (k = 0; k < nf; k++)
				text[n++] = (char)('0' + (rng() % 4 == 0 ? 0 : rng() % 10));
		}
		text[n] = '\0';
		line_with(&sb, text);
		(void)agree_if_fast(sb.buf, sb.len);
	}
	sbuf_release(&num);
	sbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast_path_taken),
		cmocka_unit_test(test_scan_positions),
		cmocka_unit_test(test_special_bytes_anywhere),
		cmocka_unit_test(test_not_canonical_never_fast),
		cmocka_unit_test(test_outside_subset_falls_back),
		cmocka_unit_test(test_mutations_agree),
		cmocka_unit_test(test_numbers_agree),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
