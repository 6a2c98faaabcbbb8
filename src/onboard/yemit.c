/* Double-quoted YAML scalars; see yemit.h. */
#include "onboard/yemit.h"

#include <errno.h>
#include <stdint.h>

#include "util/banned.h"

/* Decode one code point at s[0, len). Returns its length (1..4), or 0 when
 * the bytes there are not valid UTF-8. */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *ret)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80) {
		*ret = s[0];
		return 1;
	}
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		n = 2;
		cp = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		n = 3;
		cp = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	*ret = cp;
	return n;
}

bool yemit_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		n = utf8_next(p + i, len - i, &cp);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

/* Written as is inside double quotes: printable for YAML and not a line
 * break or BOM. */
static bool literal_ok(uint32_t cp)
{
	if (cp >= 0x20 && cp <= 0x7E)
		return cp != '"' && cp != '\\';
	if (cp < 0xA0)
		return false; /* C0, DEL, C1 (U+0085 included) */
	if (cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF)
		return false;
	return true;
}

int yemit_str(struct sbuf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0, i = 0, n, start = out->len;
	uint32_t cp;
	int r;

	while (p[len])
		len++;
	if (!yemit_utf8_valid(s, len))
		return -EINVAL;
	r = sbuf_addc(out, '"');
	while (r >= 0 && i < len) {
		n = utf8_next(p + i, len - i, &cp);
		if (literal_ok(cp))
			r = sbuf_add(out, p + i, n);
		else if (cp == '"')
			r = sbuf_adds(out, "\\\"");
		else if (cp == '\\')
			r = sbuf_adds(out, "\\\\");
		else if (cp == '\t')
			r = sbuf_adds(out, "\\t");
		else if (cp == '\n')
			r = sbuf_adds(out, "\\n");
		else if (cp == '\r')
			r = sbuf_adds(out, "\\r");
		else
			r = sbuf_addf(out, "\\u%04X", (unsigned)cp); /* all < U+10000 */
		i += n;
	}
	if (r >= 0)
		r = sbuf_addc(out, '"');
	if (r < 0)
		sbuf_setlen(out, start);
	return r < 0 ? r : 0;
}

int yemit_str_or_null(struct sbuf *out, const char *s)
{
	return s ? yemit_str(out, s) : sbuf_adds(out, "null");
}

int yemit_list(struct sbuf *out, unsigned indent, const char *key, const char *const *v, size_t n)
{
	size_t i;
	int r;

	r = sbuf_addf(out, "%*s%s:", (int)indent, "", key);
	if (r >= 0 && n == 0)
		return sbuf_adds(out, " []\n");
	if (r >= 0)
		r = sbuf_addc(out, '\n');
	for (i = 0; r >= 0 && i < n; i++) {
		r = sbuf_addf(out, "%*s- ", (int)indent + 2, "");
		if (r >= 0)
			r = yemit_str(out, v[i]);
		if (r >= 0)
			r = sbuf_addc(out, '\n');
	}
	return r < 0 ? r : 0;
}
