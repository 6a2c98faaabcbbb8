#include "util/diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

void diag_vset(struct diag *d, const char *file, unsigned line, unsigned col, const char *fmt,
	       va_list ap)
{
	if (!d)
		return;
	(void)snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
	d->line = line;
	d->col = col;
	(void)vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
}

void diag_set(struct diag *d, const char *file, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vset(d, file, line, col, fmt, ap);
	va_end(ap);
}

void diag_clear(struct diag *d)
{
	if (!d)
		return;
	d->file[0] = '\0';
	d->line = d->col = 0;
	d->msg[0] = '\0';
}

void diag_prefix(struct diag *d, const char *fmt, ...)
{
	char pre[256], old[sizeof(d->msg)];
	va_list ap;

	if (!d)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, d->msg, sizeof(old));
	if (snprintf(d->msg, sizeof(d->msg), "%s: %s", pre, old) >= (int)sizeof(d->msg))
		d->msg[sizeof(d->msg) - 1] = '\0'; /* truncated on purpose */
}

const char *diag_format(const struct diag *d, char *buf, size_t size)
{
	if (!d->file[0])
		(void)snprintf(buf, size, "%s", d->msg);
	else if (d->line && d->col)
		(void)snprintf(buf, size, "%s:%u:%u: %s", d->file, d->line, d->col, d->msg);
	else if (d->line)
		(void)snprintf(buf, size, "%s:%u: %s", d->file, d->line, d->msg);
	else
		(void)snprintf(buf, size, "%s: %s", d->file, d->msg);
	return buf;
}

void diag_list_add(struct diag_list *l, const struct diag *d)
{
	if (!l)
		return;
	if (l->max && l->n >= l->max) {
		l->dropped++;
		return;
	}
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? st_mult(l->alloc, 2) : 8;
		l->v = xrealloc(l->v, st_mult(l->alloc, sizeof(*l->v)));
	}
	l->v[l->n++] = *d;
}

static int diag_before(const struct diag *a, const struct diag *b)
{
	return a->line < b->line || (a->line == b->line && a->col < b->col);
}

void diag_list_sort(struct diag_list *l)
{
	size_t i, j;

	for (i = 1; i < l->n; i++) {
		struct diag d = l->v[i];

		for (j = i; j > 0 && diag_before(&d, &l->v[j - 1]); j--)
			l->v[j] = l->v[j - 1];
		l->v[j] = d;
	}
}

void diag_list_release(struct diag_list *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = l->alloc = l->dropped = 0;
}
