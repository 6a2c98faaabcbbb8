/* Allocation that aborts on out-of-memory (git, tmux). Buffers fed by untrusted
 * input are capped elsewhere (sbuf) and return -ENOBUFS instead. */
#ifndef BERNSTEIN_UTIL_XALLOC_H
#define BERNSTEIN_UTIL_XALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Overflow-checked nmemb * size; aborts on overflow. */
size_t st_mult(size_t a, size_t b);
size_t st_add(size_t a, size_t b);

/* free() for pointers typed const (strvec elements, arena-less strings). */
static inline void free_const(const void *p)
{
	free((void *)(uintptr_t)p);
}

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Broken invariants: abort with file:line (git's BUG()). */
#define BUG(...) bug_fl(__FILE__, __LINE__, __VA_ARGS__)
_Noreturn void bug_fl(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
