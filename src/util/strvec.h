/* NULL-terminated vector of owned strings (git strvec); .v is always valid for
 * proc_spawn and execve. */
#ifndef BERNSTEIN_UTIL_STRVEC_H
#define BERNSTEIN_UTIL_STRVEC_H

#include <stddef.h>

extern const char *strvec_empty[];

struct strvec {
	const char **v; /* never NULL; v[nr] == NULL */
	size_t nr;
	size_t alloc;
};

#define STRVEC_INIT                                                                                \
	{                                                                                          \
		.v = strvec_empty, .nr = 0, .alloc = 0                                             \
	}

void strvec_init(struct strvec *sv);
const char *strvec_push(struct strvec *sv, const char *s);
const char *strvec_pushf(struct strvec *sv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void strvec_pushv(struct strvec *sv, const char *const *v);
void strvec_pop(struct strvec *sv);
void strvec_clear(struct strvec *sv);
/* Sort lexicographically (byte order), e.g. an environment. */
void strvec_sort(struct strvec *sv);
/* Index of the first element equal to s, or -1. */
long strvec_find(const struct strvec *sv, const char *s);

#endif
