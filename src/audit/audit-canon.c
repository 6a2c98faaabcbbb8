/* The verifier's fast path: one pass over a line that accepts it only when it
 * is certainly byte-identical to json_canon_py() of the object jansson would
 * parse from it, without parsing or serialising anything. It knows a subset
 * of the canonical form, the one every chain writer produces for ordinary
 * records, and answers "don't know" for everything else, which then takes
 * the full jansson path (audit-record.c). So it can only make verification
 * faster, never change a verdict; fuzz/fuzz-audit.c checks that both paths
 * agree on every input.
 *
 * The subset:
 *   - an object at the top; objects and arrays nested at most
 *     CANON_MAX_DEPTH deep; members joined by ", ", key and value by ": ",
 *     "{}" and "[]" when empty, no other whitespace;
 *   - object keys without escapes (bytes 0x20..0x7e but '"' and '\\'),
 *     strictly increasing in byte order (sorted, no duplicates: for ASCII,
 *     byte order is Python's code point order);
 *   - strings of bytes 0x20..0x7e with the escapes Python writes: \" \\ \b
 *     \f \n \r \t, and \u with four lowercase hex digits for every other
 *     control character but U+0000, for U+007F..U+FFFF but surrogates, and
 *     a high + low surrogate pair for the rest;
 *   - integers "0" or -?[1-9][0-9]* of at most 18 digits (well inside the
 *     64-bit range jansson parses);
 *   - reals -?I.F without an exponent, as Python's repr() writes them, with
 *     at most 15 significant digits and 1e-4 <= |x| < 1e15 (or 0.0, -0.0):
 *     I is "0" or has no leading zero, F is "0" or ends in a nonzero digit.
 *     A decimal of at most 15 significant digits is the only one of at
 *     most 15 digits that reads as its double (DBL_DIG), so it is that
 *     double's shortest round-trip form: exactly what repr() prints, and
 *     repr() prints it positionally in that range;
 *   - true, false, null;
 *   - top-level "prev_hmac" and "hmac" members whose values are strings
 *     without escapes (their bytes are the values). */
#include "audit/audit-internal.h"

#include <stdint.h>
#include <string.h>

#include "util/banned.h"

#define CANON_MAX_DEPTH 32

/* Bytes that stand for themselves inside a canonical string. */
static bool plain_byte(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
}

/* Whether one of the 8 bytes of w is not plain_byte(): below 0x20, above
 * 0x7e, '"' or '\\' (the exact "has less / has more / has zero byte"
 * tests of Sean Anderson's bit hacks; no false negatives or positives). */
static bool word_special(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');

	return (((w - ones * 0x20) & ~w) | ((w + ones * (127 - 0x7e)) | w) | ((q - ones) & ~q) |
		((b - ones) & ~b)) &
	       highs;
}

/* The end of the run of plain bytes at s[p]: 8 at a time, then one by one. */
static size_t skip_plain(const char *s, size_t len, size_t p)
{
	uint64_t w;

	while (len - p >= 8) {
		memcpy(&w, s + p, sizeof(w));
		if (word_special(w))
			break;
		p += 8;
	}
	while (p < len && plain_byte((unsigned char)s[p]))
		p++;
	return p;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Four lowercase hex digits at s[i]: the value, or -1. */
static long hex4(const char *s, size_t len, size_t i)
{
	long v = 0;
	size_t k;

	if (i > len || len - i < 4)
		return -1;
	for (k = 0; k < 4; k++) {
		char c = s[i + k];

		if (c >= '0' && c <= '9')
			v = v * 16 + (c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (c - 'a' + 10);
		else
			return -1;
	}
	return v;
}

/* Whether Python escapes code point u (< 0x10000, not a surrogate) as \uXXXX
 * (rather than writing it or a short escape). U+0000 is left out of the
 * subset (jansson refuses it in keys). */
static bool u_escaped(long u)
{
	switch (u) {
	case 0:
	case '\b':
	case '\t':
	case '\n':
	case '\f':
	case '\r':
		return false;
	default:
		return u < 0x20 || u > 0x7e;
	}
}

/* The string whose opening quote is s[*i]: *i moves past its closing quote.
 * *ret_plain says whether it has no escapes. false: outside the subset. */
static bool scan_string(const char *s, size_t len, size_t *i, bool *ret_plain)
{
	size_t p = *i + 1;
	bool plain = true;
	long u, lo;

	for (;;) {
		p = skip_plain(s, len, p);
		if (p >= len)
			return false;
		if (s[p] == '"')
			break;
		if (s[p] != '\\' || p + 1 >= len)
			return false; /* a control or non-ASCII byte: not canonical */
		plain = false;
		switch (s[p + 1]) {
		case '"':
		case '\\':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't':
			p += 2;
			continue;
		case 'u':
			break;
		default:
			return false; /* "\/" among others */
		}
		u = hex4(s, len, p + 2);
		if (u < 0)
			return false;
		p += 6;
		if (u >= 0xd800 && u <= 0xdbff) {
			if (p + 1 >= len || s[p] != '\\' || s[p + 1] != 'u')
				return false;
			lo = hex4(s, len, p + 2);
			if (lo < 0xdc00 || lo > 0xdfff)
				return false;
			p += 6;
		} else if ((u >= 0xdc00 && u <= 0xdfff) || !u_escaped(u)) {
			return false;
		}
	}
	*i = p + 1;
	*ret_plain = plain;
	return true;
}

/* The count of digits from s[p]. */
static size_t digits_at(const char *s, size_t len, size_t p)
{
	size_t q;

	for (q = p; q < len && is_digit(s[q]); q++)
		;
	return q - p;
}

static bool exponent_at(const char *s, size_t len, size_t p)
{
	return p < len && (s[p] == 'e' || s[p] == 'E');
}

/* Whether I.F, I the ipn digits at s[ip] and F the fpn (> 0) digits at
 * s[fp], is a decimal inside the subset. */
static bool decimal_in_subset(const char *s, size_t ip, size_t ipn, size_t fp, size_t fpn)
{
	size_t z;

	if (fpn == 1 && s[fp] == '0')
		return ipn <= 15; /* I.0: at most 15 digits, below 1e15 */
	if (s[fp + fpn - 1] == '0')
		return false; /* a trailing zero repr() would not write */
	if (ipn == 1 && s[ip] == '0') {
		/* 0.F: at most three zeros after the point (>= 1e-4) */
		for (z = 0; s[fp + z] == '0'; z++)
			;
		return z <= 3 && fpn - z <= 15;
	}
	return ipn + fpn <= 15;
}

/* The number at s[*i]: *i moves past it. false: outside the subset (see the
 * top of the file for the forms inside). */
static bool scan_number(const char *s, size_t len, size_t *i)
{
	size_t p = *i, ip, ipn, fp, fpn;
	bool neg = false;

	if (s[p] == '-') {
		neg = true;
		p++;
	}
	ip = p;
	ipn = digits_at(s, len, ip);
	p += ipn;
	if (ipn == 0 || (ipn > 1 && s[ip] == '0'))
		return false;
	if (exponent_at(s, len, p))
		return false;
	if (p >= len || s[p] != '.') {
		/* an integer; "-0" reads as 0, written "0" */
		if (ipn > 18 || (neg && s[ip] == '0'))
			return false;
		*i = p;
		return true;
	}
	fp = ++p;
	fpn = digits_at(s, len, fp);
	p += fpn;
	if (fpn == 0 || exponent_at(s, len, p) || !decimal_in_subset(s, ip, ipn, fp, fpn))
		return false;
	*i = p;
	return true;
}

static bool scan_literal(const char *s, size_t len, size_t *i)
{
	static const char *const lits[] = {"true", "false", "null"};
	size_t k;

	for (k = 0; k < sizeof(lits) / sizeof(lits[0]); k++) {
		size_t n = strlen(lits[k]);

		if (len - *i >= n && memcmp(s + *i, lits[k], n) == 0) {
			*i += n;
			return true;
		}
	}
	return false;
}

struct frame {
	bool object;
	bool empty;	 /* no member or element yet */
	const char *key; /* the previous key (objects) */
	size_t keylen;
};

/* Key a sorts strictly before key b (bytes; a prefix first). */
static bool key_before(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;

	return c < 0 || (c == 0 && alen < blen);
}

static bool sep_at(const char *s, size_t len, size_t i, char c)
{
	return len - i >= 2 && s[i] == c && s[i + 1] == ' ';
}

enum top_member {
	TOP_OTHER,
	TOP_PREV,
	TOP_HMAC,
};

struct top_value {
	enum top_member which; /* a top-level "prev_hmac" or "hmac" member */
	size_t kstart, vstart; /* where its key and value start */
};

/* The next member of the object (key, ": ", value) or element of the array
 * on top of the stack at s[*i]. 1: a scalar value was scanned; 2: a
 * container was opened (pushed); 0: outside the subset. *top describes a
 * top-level "prev_hmac" or "hmac" member, whose value must be a string
 * without escapes. */
static int scan_member(const char *s, size_t len, size_t *i, struct frame *st, size_t *depth,
		       struct top_value *top)
{
	struct frame *f = &st[*depth - 1];
	size_t p = *i;
	bool plain;

	top->which = TOP_OTHER;
	if (f->object) {
		const char *key;
		size_t keylen;

		top->kstart = p;
		if (s[p] != '"' || !scan_string(s, len, &p, &plain) || !plain)
			return 0;
		key = s + top->kstart + 1;
		keylen = p - top->kstart - 2;
		if (!f->empty && !key_before(f->key, f->keylen, key, keylen))
			return 0;
		f->key = key;
		f->keylen = keylen;
		if (!sep_at(s, len, p, ':'))
			return 0;
		p += 2;
		if (*depth == 1 && keylen == 4 && memcmp(key, "hmac", 4) == 0)
			top->which = TOP_HMAC;
		else if (*depth == 1 && keylen == 9 && memcmp(key, "prev_hmac", 9) == 0)
			top->which = TOP_PREV;
	}
	f->empty = false;
	if (p >= len || (top->which != TOP_OTHER && s[p] != '"'))
		return 0;
	top->vstart = p;
	switch (s[p]) {
	case '{':
	case '[':
		if (*depth == CANON_MAX_DEPTH)
			return 0;
		st[(*depth)++] = (struct frame){.object = s[p] == '{', .empty = true};
		*i = p + 1;
		return 2;
	case '"':
		if (!scan_string(s, len, &p, &plain) || (top->which != TOP_OTHER && !plain))
			return 0;
		break;
	case 't':
	case 'f':
	case 'n':
		if (!scan_literal(s, len, &p))
			return 0;
		break;
	default:
		if ((s[p] != '-' && !is_digit(s[p])) || !scan_number(s, len, &p))
			return 0;
		break;
	}
	*i = p;
	return 1;
}

int audit_canon_scan(const char *s, size_t len, struct audit_canon *ret)
{
	struct frame st[CANON_MAX_DEPTH];
	size_t depth = 0, i = 0, hmac_start = 0, hmac_end = 0;
	const char *prev = NULL, *hmac = NULL;
	size_t prevlen = 0, hmaclen = 0;
	struct top_value top;

	if (len < 2 || s[0] != '{')
		return 0;
	st[depth++] = (struct frame){.object = true, .empty = true};
	i = 1;
	while (depth > 0) {
		struct frame *f = &st[depth - 1];

		if (i >= len)
			return 0;
		if (f->empty && s[i] == (f->object ? '}' : ']')) {
			i++;
			depth--;
		} else {
			int r = scan_member(s, len, &i, st, &depth, &top);

			if (r <= 0)
				return 0;
			if (r == 2)
				continue; /* a container opened: its first member next */
			if (top.which == TOP_PREV) {
				prev = s + top.vstart + 1;
				prevlen = i - top.vstart - 2;
			} else if (top.which == TOP_HMAC) {
				hmac = s + top.vstart + 1;
				hmaclen = i - top.vstart - 2;
				hmac_start = top.kstart;
				hmac_end = i;
			}
		}
		/* After a value, or a container just closed: ", " and the next
		 * one, or the end of the enclosing containers. */
		while (depth > 0) {
			f = &st[depth - 1];
			if (sep_at(s, len, i, ',')) {
				i += 2;
				break;
			}
			if (i < len && s[i] == (f->object ? '}' : ']')) {
				i++;
				depth--;
				continue;
			}
			return 0;
		}
	}
	if (i != len || !prev || !hmac)
		return 0;
	ret->prev = prev;
	ret->prevlen = prevlen;
	ret->hmac = hmac;
	ret->hmaclen = hmaclen;
	/* Drop the "hmac" member with one of its ", " separators (as
	 * audit-record.c's find_hmac_member() does on canonical text). */
	if (hmac_start > 1) {
		ret->cut_a = hmac_start - 2;
		ret->cut_b = hmac_end;
	} else if (hmac_end < len && s[hmac_end] == ',') {
		ret->cut_a = hmac_start;
		ret->cut_b = hmac_end + 2;
	} else {
		ret->cut_a = hmac_start;
		ret->cut_b = hmac_end;
	}
	return 1;
}
