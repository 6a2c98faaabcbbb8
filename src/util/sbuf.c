#include "util/sbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

char sbuf_empty[1];

void sbuf_init(struct sbuf *sb, size_t max)
{
	sb->buf = sbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->max = max;
}

static int sbuf_grow(struct sbuf *sb, size_t extra)
{
	size_t want, n;

	if (extra > sb->max || sb->len > sb->max - extra)
		return -ENOBUFS;
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	n = sb->alloc ? sb->alloc : 64;
	while (n < want)
		n = n > SIZE_MAX / 2 ? want : n * 2;
	if (sb->max != SIZE_MAX && n > sb->max + 1)
		n = sb->max + 1;
	if (sb->alloc == 0) {
		sb->buf = xmalloc(n);
		sb->buf[0] = '\0';
	} else {
		sb->buf = xrealloc(sb->buf, n);
	}
	sb->alloc = n;
	return 0;
}

int sbuf_add(struct sbuf *sb, const void *data, size_t n)
{
	int r = sbuf_grow(sb, n);

	if (r < 0)
		return r;
	if (n)
		memcpy(sb->buf + sb->len, data, n);
	sb->len += n;
	if (sb->alloc)
		sb->buf[sb->len] = '\0';
	return 0;
}

int sbuf_adds(struct sbuf *sb, const char *s)
{
	return sbuf_add(sb, s, strlen(s));
}

int sbuf_addc(struct sbuf *sb, char c)
{
	return sbuf_add(sb, &c, 1);
}

int sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n, r;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	r = sbuf_grow(sb, (size_t)n);
	if (r < 0)
		return r;
	(void)vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int sbuf_addf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = sbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return r;
}

void sbuf_reset(struct sbuf *sb)
{
	sb->len = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

void sbuf_release(struct sbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	sbuf_init(sb, sb->max);
}

char *sbuf_detach(struct sbuf *sb, size_t *ret_len)
{
	char *p;

	if (ret_len)
		*ret_len = sb->len;
	p = sb->alloc ? sb->buf : xstrdup("");
	sbuf_init(sb, sb->max);
	return p;
}

char *sbuf_strf(const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	va_list ap;

	va_start(ap, fmt);
	(void)sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	return sbuf_detach(&sb, NULL);
}

void sbuf_setlen(struct sbuf *sb, size_t len)
{
	if (len > sb->len)
		BUG("sbuf_setlen beyond length: %zu > %zu", len, sb->len);
	sb->len = len;
	if (sb->alloc)
		sb->buf[len] = '\0';
}

void sbuf_rtrim(struct sbuf *sb)
{
	size_t n = sb->len;

	while (n && (sb->buf[n - 1] == ' ' || sb->buf[n - 1] == '\t' || sb->buf[n - 1] == '\n' ||
		     sb->buf[n - 1] == '\r'))
		n--;
	sbuf_setlen(sb, n);
}

bool str_all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}
