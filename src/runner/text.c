/* UTF-8 sanitising (text.h). */
#include "runner/text.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "util/json.h"
#include "util/banned.h"

int text_add_utf8(struct sbuf *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, start = 0;

	while (i < n) {
		/* a NUL is replaced as an invalid byte is */
		size_t k = u[i] ? utf8_seq(u + i, n - i) : 0;

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
