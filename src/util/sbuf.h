/* Growable, NUL-terminated byte buffer with a hard cap (git strbuf + curl dynbuf).
 * Growth past .max fails with -ENOBUFS and leaves the buffer unchanged; growth
 * within the cap uses xrealloc, so OOM aborts. */
#ifndef BERNSTEIN_UTIL_SBUF_H
#define BERNSTEIN_UTIL_SBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern char sbuf_empty[];

struct sbuf {
	char *buf; /* never NULL; always NUL-terminated */
	size_t len;
	size_t alloc; /* private; 0 while buf == sbuf_empty */
	size_t max;   /* cap in bytes excluding the NUL; SIZE_MAX = unbounded */
};

#define SBUF_INIT(cap)                                                                             \
	{                                                                                          \
		.buf = sbuf_empty, .len = 0, .alloc = 0, .max = (cap)                              \
	}

void sbuf_init(struct sbuf *sb, size_t max);
int sbuf_add(struct sbuf *sb, const void *data, size_t n);
int sbuf_adds(struct sbuf *sb, const char *s);
int sbuf_addc(struct sbuf *sb, char c);
int sbuf_addf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void sbuf_reset(struct sbuf *sb);
void sbuf_release(struct sbuf *sb);
/* Caller owns the result (free()); the buffer is back to empty. */
char *sbuf_detach(struct sbuf *sb, size_t *ret_len);
/* A new string formatted as printf() would (caller frees; never NULL). */
char *sbuf_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sbuf_setlen(struct sbuf *sb, size_t len);
void sbuf_rtrim(struct sbuf *sb);

/* Whether s is one or more ASCII digits and nothing else. */
bool str_all_digits(const char *s);

#endif
