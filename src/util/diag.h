/* Error context: filled only on failure, printed only by cli/.
 * Printed as  FILE:LINE:COL: MESSAGE  (line/col omitted when 0). */
#ifndef BERNSTEIN_UTIL_DIAG_H
#define BERNSTEIN_UTIL_DIAG_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>

struct diag {
	char file[PATH_MAX];
	unsigned line, col;
	char msg[512];
};

/* Each accepts a NULL diag (the caller does not want context). */
void diag_set(struct diag *d, const char *file, unsigned line, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void diag_vset(struct diag *d, const char *file, unsigned line, unsigned col, const char *fmt,
	       va_list ap) __attribute__((format(printf, 5, 0)));
void diag_clear(struct diag *d);
/* Prefix the message with more context: "what: <old message>". */
void diag_prefix(struct diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Render "file:line:col: msg" into buf (always NUL-terminated). */
const char *diag_format(const struct diag *d, char *buf, size_t size);

/* Every problem found (a plan's, a profile's or a catalogue's checks), each
 * a diag; cli/ prints them with diag_format(). */
struct diag_list {
	struct diag *v;
	size_t n, alloc;
	size_t max;	/* at most this many kept (0: no cap) */
	size_t dropped; /* problems beyond max, counted, not kept */
};
#define DIAG_LIST_INIT(cap)                                                                        \
	{                                                                                          \
		.v = NULL, .n = 0, .alloc = 0, .max = (cap), .dropped = 0                          \
	}
/* Append a copy of d (or count it in dropped). l may be NULL. */
void diag_list_add(struct diag_list *l, const struct diag *d);
/* Order by line, then column; stable: problems at the same position keep
 * the order they were found in. */
void diag_list_sort(struct diag_list *l);
/* Free and empty the list (its cap stays). l may be NULL. */
void diag_list_release(struct diag_list *l);

#endif
