/* Text helpers for the runner: bytes from files, commands and servers made
 * safe for JSON. (Secrets are kept out of what the runner writes by
 * util/redact.h.) */
#ifndef BERNSTEIN_RUNNER_TEXT_H
#define BERNSTEIN_RUNNER_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/sbuf.h"

/* Append n bytes of s to out as valid UTF-8: every invalid or truncated
 * sequence and every NUL becomes U+FFFD. Returns 0 or -ENOBUFS (out's cap;
 * out then holds a prefix that is still valid UTF-8). */
int text_add_utf8(struct sbuf *out, const char *s, size_t n);

#endif
