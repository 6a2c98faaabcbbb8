/* Text helpers for the runner: bytes from files, commands and servers made
 * safe for JSON, and secrets kept out of everything the runner writes. */
#ifndef BERNSTEIN_RUNNER_TEXT_H
#define BERNSTEIN_RUNNER_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/sbuf.h"

#define TEXT_REDACTED "[REDACTED]"
/* Secrets shorter than this are not searched for (they would match
 * everywhere); an API key is far longer. */
#define TEXT_REDACT_MIN 8

/* Append n bytes of s to out as valid UTF-8: every invalid or truncated
 * sequence and every NUL becomes U+FFFD. Returns 0 or -ENOBUFS (out's cap;
 * out then holds a prefix that is still valid UTF-8). */
int text_add_utf8(struct sbuf *out, const char *s, size_t n);

/* Replace every occurrence of secret in sb with TEXT_REDACTED. Returns the
 * number of replacements (0 when secret is NULL or too short). The result
 * may exceed sb's cap: the buffer is rebuilt unbounded. */
size_t text_redact(struct sbuf *sb, const char *secret);

/* Does buf contain secret (with the same length rule)? */
bool text_contains_secret(const char *buf, size_t len, const char *secret);

#endif
