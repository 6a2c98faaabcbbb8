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

#endif
