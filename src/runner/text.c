/* UTF-8 sanitising (text.h). */
#include "runner/text.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "util/banned.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return c ? 1 : 0;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

int text_add_utf8(struct sbuf *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, start = 0;

	while (i < n) {
		size_t k = utf8_seq(u + i, n - i);

		if (k > 0) {
			i += k;
			continue;
		}
		if (sbuf_add(out, s + start, i - start) < 0 || sbuf_add(out, "\xef\xbf\xbd", 3) < 0)
			return -ENOBUFS;
		i++;
		start = i;
	}
	if (sbuf_add(out, s + start, i - start) < 0)
		return -ENOBUFS;
	return 0;
}
