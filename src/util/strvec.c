#include "util/strvec.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/sbuf.h"
#include "util/xalloc.h"

const char *strvec_empty[] = {NULL};

void strvec_init(struct strvec *sv)
{
	sv->v = strvec_empty;
	sv->nr = 0;
	sv->alloc = 0;
}

static void strvec_push_nodup(struct strvec *sv, char *s)
{
	if (sv->nr + 2 > sv->alloc) {
		size_t n = sv->alloc ? st_mult(sv->alloc, 2) : 8;

		if (sv->v == strvec_empty)
			sv->v = NULL;
		sv->v = xrealloc((void *)sv->v, st_mult(n, sizeof(*sv->v)));
		sv->alloc = n;
	}
	sv->v[sv->nr++] = s;
	sv->v[sv->nr] = NULL;
}

const char *strvec_push(struct strvec *sv, const char *s)
{
	char *d = xstrdup(s);

	strvec_push_nodup(sv, d);
	return d;
}

const char *strvec_pushf(struct strvec *sv, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	va_list ap;
	char *d;

	va_start(ap, fmt);
	(void)sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	d = sbuf_detach(&sb, NULL);
	strvec_push_nodup(sv, d);
	return d;
}

void strvec_pushv(struct strvec *sv, const char *const *v)
{
	for (; v && *v; v++)
		strvec_push(sv, *v);
}

void strvec_pop(struct strvec *sv)
{
	if (!sv->nr)
		return;
	free_const(sv->v[--sv->nr]);
	sv->v[sv->nr] = NULL;
}

void strvec_clear(struct strvec *sv)
{
	size_t i;

	if (sv->v != strvec_empty) {
		for (i = 0; i < sv->nr; i++)
			free_const(sv->v[i]);
		free((void *)sv->v);
	}
	strvec_init(sv);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void strvec_sort(struct strvec *sv)
{
	if (sv->nr > 1)
		qsort((void *)sv->v, sv->nr, sizeof(*sv->v), cmp_str);
}

long strvec_find(const struct strvec *sv, const char *s)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (strcmp(sv->v[i], s) == 0)
			return (long)i;
	return -1;
}
