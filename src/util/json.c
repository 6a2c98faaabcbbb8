/* Canonical JSON writers (RFC 8785 JCS and Python json.dumps(sort_keys=True))
 * and thin jansson helpers. See json.h and docs/canonical-json.md. */
#include "util/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* Nesting deeper than this is refused with -ELOOP. jansson's parser stops at
 * 2048 levels, so anything it parsed fits; a value built by hand with a cycle
 * (json_array_append(a, a)) ends here instead of overflowing the stack. */
#define JSON_CANON_MAX_DEPTH 4096

/* Integers beyond +-2^53 cannot round-trip through an IEEE double (JCS). */
#define JCS_MAX_SAFE_INT 9007199254740992LL

enum canon_style {
	CANON_JCS,
	CANON_PY,
};

/* ---- UTF-8 ------------------------------------------------------------- */

/* Decode one code point of strict UTF-8 (no overlongs, no surrogates, at most
 * U+10FFFF) at s[*i], advancing *i. */
static int utf8_next(const unsigned char *s, size_t len, size_t *i, uint32_t *ret_cp)
{
	size_t p = *i, n, k;
	uint32_t c = s[p], cp, min;

	if (c < 0x80) {
		*ret_cp = c;
		*i = p + 1;
		return 0;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 1;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 2;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 3;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return -EINVAL;
	}
	if (len - p - 1 < n)
		return -EINVAL;
	for (k = 1; k <= n; k++) {
		uint32_t cc = s[p + k];

		if ((cc & 0xc0) != 0x80)
			return -EINVAL;
		cp = (cp << 6) | (cc & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -EINVAL;
	*ret_cp = cp;
	*i = p + 1 + n;
	return 0;
}

size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t i = 0;
	uint32_t cp;

	return utf8_next(s, n, &i, &cp) < 0 ? 0 : i;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	uint32_t cp;

	while (i < len)
		if (utf8_next(u, len, &i, &cp) < 0)
			return false;
	return true;
}

/* Yields the UTF-16 code units of valid UTF-8, one at a time. */
struct u16_iter {
	const unsigned char *s;
	size_t len, i;
	uint16_t pending; /* low surrogate still to deliver, 0 if none */
};

/* 1 and *ret_unit set, or 0 at the end. The input was validated before. */
static int u16_iter_next(struct u16_iter *it, uint16_t *ret_unit)
{
	uint32_t cp;

	if (it->pending) {
		*ret_unit = it->pending;
		it->pending = 0;
		return 1;
	}
	if (it->i >= it->len)
		return 0;
	if (utf8_next(it->s, it->len, &it->i, &cp) < 0)
		BUG("unvalidated UTF-8 in a JSON key");
	if (cp >= 0x10000) {
		cp -= 0x10000;
		*ret_unit = (uint16_t)(0xd800 + (cp >> 10));
		it->pending = (uint16_t)(0xdc00 + (cp & 0x3ff));
	} else {
		*ret_unit = (uint16_t)cp;
	}
	return 1;
}

/* ---- object members ---------------------------------------------------- */

struct member {
	const char *key;
	size_t keylen;
	json_t *value;
};

/* RFC 8785 3.2.3: compare property names as arrays of UTF-16 code units. */
static int member_cmp_utf16(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	struct u16_iter ix = {.s = (const unsigned char *)x->key, .len = x->keylen};
	struct u16_iter iy = {.s = (const unsigned char *)y->key, .len = y->keylen};

	for (;;) {
		uint16_t ux = 0, uy = 0;
		int hx = u16_iter_next(&ix, &ux), hy = u16_iter_next(&iy, &uy);

		if (!hx || !hy)
			return hx - hy; /* the shorter (a prefix) sorts first */
		if (ux != uy)
			return ux < uy ? -1 : 1;
	}
}

/* Python str ordering is by code point, which for valid UTF-8 is byte order. */
static int member_cmp_bytes(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
	int c = n ? memcmp(x->key, y->key, n) : 0;

	if (c)
		return c;
	return (x->keylen > y->keylen) - (x->keylen < y->keylen);
}

/* ---- strings ----------------------------------------------------------- */

/* The letter of c's short escape ('"', '\\', b, f, n, r, t: "\\n"), or 0
 * when JSON has none for it. */
static char short_escape(uint32_t c)
{
	switch (c) {
	case '"':
	case '\\':
		return (char)c;
	case '\b':
		return 'b';
	case '\f':
		return 'f';
	case '\n':
		return 'n';
	case '\r':
		return 'r';
	case '\t':
		return 't';
	default:
		return 0;
	}
}

static int add_u_escape(struct sbuf *out, uint32_t unit)
{
	return sbuf_addf(out, "\\u%04" PRIx32, unit);
}

/* JCS: escape '"', '\\' and controls (short forms where they exist, else
 * \u00xx); every other character is written as its UTF-8 bytes.
 * Python (ensure_ascii): the same, plus every byte outside 0x20..0x7e as
 * \uxxxx, with a surrogate pair above the BMP. */
static int canon_string(const char *str, size_t len, enum canon_style style, struct sbuf *out)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0;
	int r;

	r = sbuf_addc(out, '"');
	if (r < 0)
		return r;
	while (i < len) {
		size_t at = i;
		char short_esc[3] = {'\\', 0, 0};
		const char *esc = NULL;
		uint32_t cp;

		r = utf8_next(s, len, &i, &cp);
		if (r < 0)
			return r;
		short_esc[1] = short_escape(cp);
		if (short_esc[1])
			esc = short_esc;
		if (!esc && cp >= 0x20 && (style == CANON_JCS || cp <= 0x7e)) {
			run += i - at; /* literal: flushed in one piece later */
			continue;
		}
		r = sbuf_add(out, str + at - run, run);
		if (r < 0)
			return r;
		run = 0;
		if (esc)
			r = sbuf_adds(out, esc);
		else if (cp < 0x10000)
			r = add_u_escape(out, cp);
		else {
			r = add_u_escape(out, 0xd800 + ((cp - 0x10000) >> 10));
			if (r >= 0)
				r = add_u_escape(out, 0xdc00 + ((cp - 0x10000) & 0x3ff));
		}
		if (r < 0)
			return r;
	}
	r = sbuf_add(out, str + i - run, run);
	if (r < 0)
		return r;
	return sbuf_addc(out, '"');
}

/* ---- numbers ----------------------------------------------------------- */

/* The shortest decimal MANT * 10^E10 that reads back as d (d finite, > 0):
 * the digits ECMAScript Number::toString and Python repr() both start from.
 *
 * At a given number of digits, the candidate printf("%.*e") rounds to is the
 * one closest to d (ties to even), so if any candidate of that length reads
 * back, that one does, except when d is a power of two: its rounding
 * interval is twice as wide above as below, and printf's candidate may lie
 * just outside the narrow lower half while the next one up is inside. So the
 * upper neighbour is tried too (and the lower one, which costs little).
 * "Some candidate of length p reads back" holds for every p from the
 * shortest length on, so the length is found by bisection over 1..17.
 * strtod() is given no radix character, so the locale does not matter. */
static bool decimal_reads_back(uint64_t mant, int e10, double d)
{
	char buf[48];

	(void)snprintf(buf, sizeof(buf), "%" PRIu64 "e%d", mant, e10);
	return strtod(buf, NULL) == d;
}

static bool digits_at(double d, int prec, uint64_t *ret_mant, int *ret_e10)
{
	char buf[64];
	const char *p;
	uint64_t mant = 0;
	int nd = 0, e10;

	(void)snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
	for (p = buf; *p && *p != 'e'; p++) {
		if (*p >= '0' && *p <= '9') {
			mant = mant * 10 + (uint64_t)(*p - '0');
			nd++;
		}
	}
	if (*p != 'e' || nd != prec)
		BUG("unexpected %%.*e output '%s'", buf);
	e10 = (int)strtol(p + 1, NULL, 10) - (nd - 1);
	if (!decimal_reads_back(mant, e10, d)) {
		if (decimal_reads_back(mant + 1, e10, d))
			mant++;
		else if (mant > 1 && decimal_reads_back(mant - 1, e10, d))
			mant--;
		else
			return false;
	}
	*ret_mant = mant;
	*ret_e10 = e10;
	return true;
}

static void shortest_digits(double d, uint64_t *ret_mant, int *ret_e10)
{
	uint64_t mant = 0;
	int lo = 1, hi = 17, e10 = 0;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (digits_at(d, mid, &mant, &e10))
			hi = mid;
		else
			lo = mid + 1;
	}
	if (!digits_at(d, lo, &mant, &e10))
		BUG("no round-trip decimal for %a", d);
	while (mant && mant % 10 == 0) {
		mant /= 10;
		e10++;
	}
	*ret_mant = mant;
	*ret_e10 = e10;
}

static int add_zeros(struct sbuf *out, int n)
{
	static const char zeros[] = "0000000000000000000000000000";
	int r = 0;

	while (n > 0 && r >= 0) {
		int chunk = n < (int)sizeof(zeros) - 1 ? n : (int)sizeof(zeros) - 1;

		r = sbuf_add(out, zeros, (size_t)chunk);
		n -= chunk;
	}
	return r;
}

/* Writes "[-]" and returns the shortest digits of |d| (d finite, nonzero) as
 * a string of k digits with d = 0.DIGITS * 10^n. */
static int real_prepare(double d, struct sbuf *out, char digits[24], int *ret_k, int *ret_n)
{
	uint64_t mant;
	int e10, k;

	if (d < 0) {
		int r = sbuf_addc(out, '-');

		if (r < 0)
			return r;
		d = -d;
	}
	shortest_digits(d, &mant, &e10);
	k = snprintf(digits, 24, "%" PRIu64, mant);
	*ret_k = k;
	*ret_n = e10 + k;
	return 0;
}

/* ECMAScript Number::toString(d), as RFC 8785 3.2.2.3 requires: with k
 * digits and d = 0.DIGITS * 10^n,
 *   k <= n <= 21      DIGITS then n-k zeros
 *   0 < n <= 21       DIGITS with the point after n digits
 *   -6 < n <= 0       "0." then -n zeros then DIGITS
 *   otherwise         D[.DDD]e(+|-)(n-1)                              */
static int canon_real_jcs(double d, struct sbuf *out)
{
	char digits[24];
	int k, n, r;

	if (!isfinite(d))
		return -EDOM;
	if (d == 0)
		return sbuf_addc(out, '0'); /* -0 too */
	r = real_prepare(d, out, digits, &k, &n);
	if (r < 0)
		return r;
	if (k <= n && n <= 21) {
		r = sbuf_adds(out, digits);
		return r < 0 ? r : add_zeros(out, n - k);
	}
	if (0 < n && n <= 21)
		return sbuf_addf(out, "%.*s.%s", n, digits, digits + n);
	if (-6 < n && n <= 0) {
		r = sbuf_adds(out, "0.");
		if (r >= 0)
			r = add_zeros(out, -n);
		return r < 0 ? r : sbuf_adds(out, digits);
	}
	if (k == 1)
		return sbuf_addf(out, "%se%c%d", digits, n - 1 < 0 ? '-' : '+', abs(n - 1));
	return sbuf_addf(out, "%c.%se%c%d", digits[0], digits + 1, n - 1 < 0 ? '-' : '+',
			 abs(n - 1));
}

/* Python repr(float) (float_repr_style 'short'): the same shortest digits;
 * exponent form when n <= -4 or n > 16 (D[.DDD]e(+|-)XX, at least two
 * exponent digits), else positional with at least one digit after the
 * point ("1.0", "0.0001", "-0.0"). */
static int canon_real_py(double d, struct sbuf *out)
{
	char digits[24];
	int k, n, r;

	if (!isfinite(d))
		return -EDOM;
	if (d == 0)
		return sbuf_adds(out, signbit(d) ? "-0.0" : "0.0");
	r = real_prepare(d, out, digits, &k, &n);
	if (r < 0)
		return r;
	if (n <= -4 || n > 16) {
		if (k == 1)
			return sbuf_addf(out, "%se%c%02d", digits, n - 1 < 0 ? '-' : '+',
					 abs(n - 1));
		return sbuf_addf(out, "%c.%se%c%02d", digits[0], digits + 1, n - 1 < 0 ? '-' : '+',
				 abs(n - 1));
	}
	if (n <= 0) {
		r = sbuf_adds(out, "0.");
		if (r >= 0)
			r = add_zeros(out, -n);
		return r < 0 ? r : sbuf_adds(out, digits);
	}
	if (n >= k) {
		r = sbuf_adds(out, digits);
		if (r >= 0)
			r = add_zeros(out, n - k);
		return r < 0 ? r : sbuf_adds(out, ".0");
	}
	return sbuf_addf(out, "%.*s.%s", n, digits, digits + n);
}

/* ---- values ------------------------------------------------------------ */

/* The writers recurse once per nesting level, bounded by JSON_CANON_MAX_DEPTH
 * (hence the misc-no-recursion suppressions). */

static int canon_value(const json_t *v, enum canon_style style, unsigned depth, struct sbuf *out);

// NOLINTNEXTLINE(misc-no-recursion)
static int canon_object(const json_t *v, enum canon_style style, unsigned depth, struct sbuf *out)
{
	/* jansson's iteration API takes a non-const object; it does not modify it. */
	json_t *obj = (json_t *)(uintptr_t)v; // NOLINT(performance-no-int-to-ptr)
	struct member *m = NULL;
	size_t n = json_object_size(v), i;
	void *it;
	int r;

	if (n == 0)
		return sbuf_adds(out, "{}");
	m = xcalloc(n, sizeof(*m));
	for (i = 0, it = json_object_iter(obj); it && i < n;
	     i++, it = json_object_iter_next(obj, it)) {
		m[i].key = json_object_iter_key(it);
		m[i].keylen = json_object_iter_key_len(it);
		m[i].value = json_object_iter_value(it);
		if (!utf8_valid(m[i].key, m[i].keylen)) {
			r = -EINVAL;
			goto out;
		}
	}
	if (i != n || it)
		BUG("json object of size %zu iterated differently", n);
	qsort(m, n, sizeof(*m), style == CANON_JCS ? member_cmp_utf16 : member_cmp_bytes);

	r = sbuf_addc(out, '{');
	for (i = 0; i < n && r >= 0; i++) {
		if (i > 0)
			r = sbuf_adds(out, style == CANON_JCS ? "," : ", ");
		if (r >= 0)
			r = canon_string(m[i].key, m[i].keylen, style, out);
		if (r >= 0)
			r = sbuf_adds(out, style == CANON_JCS ? ":" : ": ");
		if (r >= 0)
			r = canon_value(m[i].value, style, depth + 1, out);
	}
	if (r >= 0)
		r = sbuf_addc(out, '}');
out:
	free(m);
	return r;
}

// NOLINTNEXTLINE(misc-no-recursion)
static int canon_array(const json_t *v, enum canon_style style, unsigned depth, struct sbuf *out)
{
	size_t i, n = json_array_size(v);
	int r;

	r = sbuf_addc(out, '[');
	for (i = 0; i < n && r >= 0; i++) {
		if (i > 0)
			r = sbuf_adds(out, style == CANON_JCS ? "," : ", ");
		if (r >= 0)
			r = canon_value(json_array_get(v, i), style, depth + 1, out);
	}
	return r < 0 ? r : sbuf_addc(out, ']');
}

// NOLINTNEXTLINE(misc-no-recursion)
static int canon_value(const json_t *v, enum canon_style style, unsigned depth, struct sbuf *out)
{
	json_int_t iv;

	if (!v)
		return -EINVAL;
	if (depth >= JSON_CANON_MAX_DEPTH)
		return -ELOOP;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return canon_object(v, style, depth, out);
	case JSON_ARRAY:
		return canon_array(v, style, depth, out);
	case JSON_STRING:
		return canon_string(json_string_value(v), json_string_length(v), style, out);
	case JSON_INTEGER:
		iv = json_integer_value(v);
		if (style == CANON_JCS && (iv > JCS_MAX_SAFE_INT || iv < -JCS_MAX_SAFE_INT))
			return -ERANGE;
		return sbuf_addf(out, "%" JSON_INTEGER_FORMAT, iv);
	case JSON_REAL:
		if (style == CANON_JCS)
			return canon_real_jcs(json_real_value(v), out);
		return canon_real_py(json_real_value(v), out);
	case JSON_TRUE:
		return sbuf_adds(out, "true");
	case JSON_FALSE:
		return sbuf_adds(out, "false");
	case JSON_NULL:
		return sbuf_adds(out, "null");
	}
	return -EINVAL;
}

static int canon(const json_t *v, enum canon_style style, struct sbuf *out)
{
	size_t start = out->len;
	int r = canon_value(v, style, 0, out);

	if (r < 0)
		sbuf_setlen(out, start); /* nothing half-written on failure */
	return r < 0 ? r : 0;
}

int json_canon_jcs(const json_t *v, struct sbuf *out)
{
	return canon(v, CANON_JCS, out);
}

int json_canon_py(const json_t *v, struct sbuf *out)
{
	return canon(v, CANON_PY, out);
}

/* ---- jansson's indented output, without jansson ------------------------ */

/* What json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(p))
 * writes, byte for byte (tests/unit/test-json.c compares the two on every
 * kind of value and on random trees): every --json command prints through
 * it, and jansson's writer spent more on a pointer-keyed hash table of the
 * open containers, a qsort and one callback per fragment than on the text.
 * Reals are still written by jansson (rare, and its rounding is the
 * reference). */

/* sbuf_add() without its call where the buffer has room (the writer adds
 * a few bytes at a time). */
static inline int put(struct sbuf *sb, const char *d, size_t n)
{
	if (sb->alloc && n <= sb->max - sb->len && n < sb->alloc - sb->len) {
		memcpy(sb->buf + sb->len, d, n);
		sb->len += n;
		sb->buf[sb->len] = '\0';
		return 0;
	}
	return sbuf_add(sb, d, n);
}

static inline int put_char(struct sbuf *sb, char c)
{
	return put(sb, &c, 1);
}

/* '"', '\\' and controls escaped (the short forms jansson uses, else
 * \u00XX in upper case), everything else as its UTF-8 bytes; invalid UTF-8
 * fails as it fails jansson's writer. */
static int pretty_string(const char *str, size_t len, struct sbuf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)str;
	size_t i = 0, run = 0;
	int r = put_char(out, '"');

	while (r >= 0 && i < len) {
		unsigned char c = u[i];
		char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
		size_t elen = 2;

		if (c >= 0x80) {
			size_t n = utf8_seq(u + i, len - i);

			if (!n)
				return -EINVAL;
			i += n;
			continue;
		}
		if (c >= 0x20 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		esc[1] = short_escape(c);
		if (!esc[1]) {
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			elen = 6;
		}
		r = put(out, str + run, i - run);
		if (r >= 0)
			r = put(out, esc, elen);
		run = ++i;
	}
	if (r >= 0)
		r = put(out, str + run, i - run);
	return r < 0 ? r : put_char(out, '"');
}

/* A newline and depth levels of two spaces. */
static int pretty_indent(unsigned depth, struct sbuf *out)
{
	static const char spaces[] = "\n                                ";
	size_t n = 2 * (size_t)depth;
	int r = put(out, spaces, 1);

	while (r >= 0 && n > 0) {
		size_t k = n < sizeof(spaces) - 2 ? n : sizeof(spaces) - 2;

		r = put(out, spaces + 1, k);
		n -= k;
	}
	return r;
}

static int pretty_int(json_int_t v, struct sbuf *out)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return put(out, p, (size_t)(buf + sizeof(buf) - p));
}

static int pretty_real(const json_t *v, int precision, struct sbuf *out)
{
	json_malloc_t jmalloc;
	json_free_t jfree;
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(precision));
	int r;

	if (!s)
		return -EINVAL;
	r = put(out, s, strlen(s));
	json_get_alloc_funcs(&jmalloc, &jfree);
	jfree(s);
	return r;
}

static int pretty_value(const json_t *v, int precision, unsigned depth, struct sbuf *out);

// NOLINTNEXTLINE(misc-no-recursion)
static int pretty_object(const json_t *v, int precision, unsigned depth, struct sbuf *out)
{
	json_t *obj = (json_t *)(uintptr_t)v; // NOLINT(performance-no-int-to-ptr)
	struct member few[16], *m = few;
	size_t n = json_object_size(v), i, j;
	void *it;
	int r;

	if (n == 0)
		return put(out, "{}", 2);
	if (n > ARRAY_SIZE(few))
		m = xcalloc(n, sizeof(*m));
	for (i = 0, it = json_object_iter(obj); it && i < n;
	     i++, it = json_object_iter_next(obj, it)) {
		m[i].key = json_object_iter_key(it);
		m[i].keylen = json_object_iter_key_len(it);
		m[i].value = json_object_iter_value(it);
	}
	if (i != n || it)
		BUG("json object of size %zu iterated differently", n);
	if (n > ARRAY_SIZE(few)) {
		qsort(m, n, sizeof(*m), member_cmp_bytes);
	} else {
		for (i = 1; i < n; i++) /* jansson's order: bytes, then length */
			for (j = i; j > 0 && member_cmp_bytes(&m[j - 1], &m[j]) > 0; j--) {
				struct member t = m[j];

				m[j] = m[j - 1];
				m[j - 1] = t;
			}
	}
	r = put_char(out, '{');
	for (i = 0; i < n && r >= 0; i++) {
		r = i ? put_char(out, ',') : 0;
		if (r >= 0)
			r = pretty_indent(depth + 1, out);
		if (r >= 0)
			r = pretty_string(m[i].key, m[i].keylen, out);
		if (r >= 0)
			r = put(out, ": ", 2);
		if (r >= 0)
			r = pretty_value(m[i].value, precision, depth + 1, out);
	}
	if (r >= 0)
		r = pretty_indent(depth, out);
	if (r >= 0)
		r = put_char(out, '}');
	if (m != few)
		free(m);
	return r;
}

// NOLINTNEXTLINE(misc-no-recursion)
static int pretty_value(const json_t *v, int precision, unsigned depth, struct sbuf *out)
{
	size_t i, n;
	int r;

	if (!v)
		return -EINVAL;
	if (depth >= JSON_CANON_MAX_DEPTH)
		return -ELOOP;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return pretty_object(v, precision, depth, out);
	case JSON_ARRAY:
		n = json_array_size(v);
		if (n == 0)
			return put(out, "[]", 2);
		r = put_char(out, '[');
		for (i = 0; i < n && r >= 0; i++) {
			r = i ? put_char(out, ',') : 0;
			if (r >= 0)
				r = pretty_indent(depth + 1, out);
			if (r >= 0)
				r = pretty_value(json_array_get(v, i), precision, depth + 1, out);
		}
		if (r >= 0)
			r = pretty_indent(depth, out);
		return r < 0 ? r : put_char(out, ']');
	case JSON_STRING:
		return pretty_string(json_string_value(v), json_string_length(v), out);
	case JSON_INTEGER:
		return pretty_int(json_integer_value(v), out);
	case JSON_REAL:
		return pretty_real(v, precision, out);
	case JSON_TRUE:
		return put(out, "true", 4);
	case JSON_FALSE:
		return put(out, "false", 5);
	case JSON_NULL:
		return put(out, "null", 4);
	}
	return -EINVAL;
}

int json_write_pretty(const json_t *v, int precision, bool any, struct sbuf *out)
{
	size_t start = out->len;
	int r;

	if (!v || precision < 0 || precision > 31)
		return -EINVAL;
	if (!any && !json_is_object(v) && !json_is_array(v))
		return -EINVAL;
	r = pretty_value(v, precision, 0, out);
	if (r < 0)
		sbuf_setlen(out, start); /* nothing half-written on failure */
	return r < 0 ? r : 0;
}

/* ---- the same text, streamed ------------------------------------------- */

static void jw_fail(struct json_writer *w, int r)
{
	if (r < 0 && w->err == 0)
		w->err = r;
}

/* Before a value or a key: the separator and indentation of its container. */
static void jw_item(struct json_writer *w)
{
	unsigned d = w->depth;

	if (w->err)
		return;
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (d == 0) {
		if (w->done)
			jw_fail(w, -EINVAL); /* a second root */
		w->done = true;
		return;
	}
	if (w->is_obj[d - 1])
		BUG("json writer: a value without a key in an object");
	if (w->n[d - 1]++)
		jw_fail(w, put_char(w->out, ','));
	if (!w->err)
		jw_fail(w, pretty_indent(d, w->out));
}

void json_writer_init(struct json_writer *w, struct sbuf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->start = out->len;
}

static void jw_open(struct json_writer *w, bool obj)
{
	jw_item(w);
	if (w->err)
		return;
	if (w->depth == JSON_WRITER_MAX_DEPTH) {
		jw_fail(w, -ELOOP);
		return;
	}
	jw_fail(w, put_char(w->out, obj ? '{' : '['));
	w->is_obj[w->depth] = obj;
	w->n[w->depth] = 0;
	w->last_key[w->depth] = NULL;
	w->depth++;
}

static void jw_close(struct json_writer *w, bool obj)
{
	unsigned d = w->depth;

	if (w->err)
		return;
	if (d == 0 || w->is_obj[d - 1] != obj || w->after_key)
		BUG("json writer: unbalanced %s end", obj ? "object" : "array");
	w->depth--;
	if (w->n[d - 1])
		jw_fail(w, pretty_indent(d - 1, w->out));
	if (!w->err)
		jw_fail(w, put_char(w->out, obj ? '}' : ']'));
}

void json_writer_object(struct json_writer *w)
{
	jw_open(w, true);
}

void json_writer_object_end(struct json_writer *w)
{
	jw_close(w, true);
}

void json_writer_array(struct json_writer *w)
{
	jw_open(w, false);
}

void json_writer_array_end(struct json_writer *w)
{
	jw_close(w, false);
}

void json_writer_key(struct json_writer *w, const char *key)
{
	unsigned d = w->depth;
	struct member a, b;

	if (w->err)
		return;
	if (d == 0 || !w->is_obj[d - 1] || w->after_key)
		BUG("json writer: a key outside an object");
	/* jansson sorts the keys: the caller gives them in its order */
	b.key = key;
	b.keylen = strlen(key);
	if (w->last_key[d - 1]) {
		a.key = w->last_key[d - 1];
		a.keylen = strlen(a.key);
		if (member_cmp_bytes(&a, &b) >= 0)
			BUG("json writer: key '%s' after '%s'", key, a.key);
	}
	w->last_key[d - 1] = key;
	if (w->n[d - 1]++)
		jw_fail(w, put_char(w->out, ','));
	if (!w->err)
		jw_fail(w, pretty_indent(d, w->out));
	if (!w->err)
		jw_fail(w, pretty_string(key, b.keylen, w->out));
	if (!w->err)
		jw_fail(w, put(w->out, ": ", 2));
	w->after_key = true;
}

void json_writer_str(struct json_writer *w, const char *s)
{
	size_t len, i;
	char *copy;

	if (!s) {
		json_writer_null(w);
		return;
	}
	jw_item(w);
	if (w->err)
		return;
	len = strlen(s);
	if (utf8_valid(s, len)) {
		jw_fail(w, pretty_string(s, len, w->out));
		return;
	}
	copy = xstrdup(s); /* json_str_lossy()'s repair */
	for (i = 0; i < len; i++)
		if ((unsigned char)copy[i] >= 0x80)
			copy[i] = '?';
	jw_fail(w, pretty_string(copy, len, w->out));
	free(copy);
}

void json_writer_bool(struct json_writer *w, bool b)
{
	jw_item(w);
	if (!w->err)
		jw_fail(w, b ? put(w->out, "true", 4) : put(w->out, "false", 5));
}

void json_writer_null(struct json_writer *w)
{
	jw_item(w);
	if (!w->err)
		jw_fail(w, put(w->out, "null", 4));
}

void json_writer_int(struct json_writer *w, json_int_t v)
{
	jw_item(w);
	if (!w->err)
		jw_fail(w, pretty_int(v, w->out));
}

int json_writer_finish(struct json_writer *w)
{
	if (!w->err && (w->depth || w->after_key || !w->done))
		BUG("json writer: unfinished value");
	if (w->err)
		sbuf_setlen(w->out, w->start);
	return w->err;
}

/* ---- parsing and pretty output ----------------------------------------- */

int json_parse_strict(const char *name, const char *buf, size_t len, json_t **ret,
		      struct diag *reterr)
{
	json_error_t err;
	json_t *v;

	v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
	if (!v) {
		diag_set(reterr, name, err.line > 0 ? (unsigned)err.line : 0,
			 err.column > 0 ? (unsigned)err.column : 0, "%s", err.text);
		return -EBADMSG;
	}
	*ret = v;
	return 0;
}

char *json_dump_pretty(const json_t *v)
{
	json_malloc_t jmalloc;
	json_free_t jfree;
	char *s, *copy;
	size_t n;

	if (!v)
		return NULL;
	s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (!s)
		return NULL;
	n = strlen(s);
	copy = xmalloc(st_add(n, 2));
	memcpy(copy, s, n);
	copy[n] = '\n';
	copy[n + 1] = '\0';
	json_get_alloc_funcs(&jmalloc, &jfree);
	jfree(s); /* jansson's allocator, which may not be malloc */
	return copy;
}

json_t *json_str_lossy(const char *s)
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

void json_obj_set(json_t *o, const char *key, json_t *v)
{
	(void)json_object_set_new(o, key, v ? v : json_null());
}

json_t *json_strvec(const struct strvec *sv)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < sv->nr; i++)
		(void)json_array_append_new(a, json_str_lossy(sv->v[i]));
	return a;
}
