/* Writing the YAML of onboarding files (transcripts, evidence): every string
 * is a double-quoted scalar, so no value can change type or shape on the way
 * back (a prompt "true", "null", "- x" or "a: b" stays a string). What YAML
 * would read differently is escaped: '"', '\', C0 and C1 controls, DEL, the
 * Unicode line breaks (U+0085, U+2028, U+2029), U+FEFF and the
 * non-characters U+FFFE/U+FFFF, as \t \n \r \" \\ or \uXXXX. Everything else
 * is written as its UTF-8 bytes. The output reads back byte-identical with
 * util/yaml.h (libyaml) and with PyYAML's safe_load. */
#ifndef BERNSTEIN_ONBOARD_YEMIT_H
#define BERNSTEIN_ONBOARD_YEMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/sbuf.h"

/* s is valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF). */
bool yemit_utf8_valid(const char *s, size_t len);

/* Append s as a double-quoted scalar. -EINVAL when s is not valid UTF-8
 * (nothing appended), -ENOBUFS at out's cap. */
int yemit_str(struct sbuf *out, const char *s);
/* s, or plain null for NULL. */
int yemit_str_or_null(struct sbuf *out, const char *s);
/* "KEY:" then the list: " []" when empty, else one "- STR" line per item,
 * indented by indent + 2 spaces; ends with a newline. indent is the
 * indentation of the key. */
int yemit_list(struct sbuf *out, unsigned indent, const char *key, const char *const *v, size_t n);

#endif
