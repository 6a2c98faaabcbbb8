/* JSON over jansson, plus two canonical writers.
 *
 * json_canon_jcs(): RFC 8785 (JSON Canonicalization Scheme): object members
 *   sorted by their UTF-16 code units, no whitespace, strings escaped with the
 *   minimal ECMAScript rules (\b \t \n \f \r \" \\ and \u00XX for other
 *   controls, everything else literal UTF-8), numbers in ECMAScript
 *   Number.prototype.toString form (integers outside +-2^53 are rejected
 *   with -ERANGE, since they cannot round-trip through an IEEE double).
 *   Used for content addresses (profile_hash, receipt_hash).
 *
 * json_canon_py(): Python's json.dumps(obj, sort_keys=True) with the default
 *   separators (", " and ": ") and ensure_ascii=True: keys sorted by code point,
 *   non-ASCII as \uXXXX (surrogate pairs above the BMP), floats in repr() form
 *   ("1.0", "1e-05", "1e+16", "Infinity" refused with -EDOM), integers as is.
 *   Used by the audit chain (byte-compatible with Bernstein's).
 *
 * Both return 0 and append to out, or a negative errno (-EINVAL for invalid
 * UTF-8 in a string, -ENOBUFS if out's cap is hit). */
#ifndef BERNSTEIN_UTIL_JSON_H
#define BERNSTEIN_UTIL_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "util/diag.h"
#include "util/sbuf.h"

int json_canon_jcs(const json_t *v, struct sbuf *out);
int json_canon_py(const json_t *v, struct sbuf *out);

/* Parse exactly one JSON value from buf (duplicate keys rejected, trailing
 * data rejected). name is used in diagnostics: "name:1:17: <jansson text>". */
int json_parse_strict(const char *name, const char *buf, size_t len, json_t **ret,
		      struct diag *reterr);

/* Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF):
 * utf8_seq(): the length (1..4) of the valid sequence at s (n > 0 bytes
 * there), 0 if invalid; utf8_valid(): whether all of s[0, n) is. */
size_t utf8_seq(const unsigned char *s, size_t n);
bool utf8_valid(const char *s, size_t n);

/* Pretty, stable output for --json: 2-space indent, sorted keys, UTF-8,
 * trailing newline. Caller frees with free(). */
char *json_dump_pretty(const json_t *v);
/* Appends exactly what json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS |
 * JSON_REAL_PRECISION(precision) [| JSON_ENCODE_ANY when any]) returns,
 * faster (cli_print_json()). 0, or -EINVAL where json_dumps() fails (a
 * scalar without any, invalid UTF-8), -ELOOP past 4096 levels (a cycle),
 * sbuf's -ENOBUFS; out is unchanged on failure. */
int json_write_pretty(const json_t *v, int precision, bool any, struct sbuf *out);

/* The text json_write_pretty() writes, streamed: no tree is built (a
 * command printing a long list, such as adapters list, spent more on
 * building and freeing jansson's objects than on the text). The caller
 * gives each object's keys in jansson's sorted order (bytes, then length;
 * a key out of order is a BUG()), and the key strings stay valid until
 * their object ends. Strings are written as json_str_lossy() would make
 * them (NULL: null). Errors (sbuf's cap, nesting past
 * JSON_WRITER_MAX_DEPTH) stick: json_writer_finish() returns the first,
 * and leaves out as it was before json_writer_init(). */
#define JSON_WRITER_MAX_DEPTH 32
struct json_writer {
	struct sbuf *out;
	size_t start;
	unsigned depth;
	bool after_key, done;
	bool is_obj[JSON_WRITER_MAX_DEPTH];
	size_t n[JSON_WRITER_MAX_DEPTH];
	const char *last_key[JSON_WRITER_MAX_DEPTH];
	int err;
};
void json_writer_init(struct json_writer *w, struct sbuf *out);
void json_writer_object(struct json_writer *w);
void json_writer_object_end(struct json_writer *w);
void json_writer_array(struct json_writer *w);
void json_writer_array_end(struct json_writer *w);
void json_writer_key(struct json_writer *w, const char *key);
void json_writer_str(struct json_writer *w, const char *s);
void json_writer_bool(struct json_writer *w, bool b);
void json_writer_null(struct json_writer *w);
void json_writer_int(struct json_writer *w, json_int_t v);
int json_writer_finish(struct json_writer *w);

/* Building output objects. json_str_lossy(): a JSON string of s, or null for
 * NULL; bytes that are not valid UTF-8 make every non-ASCII byte '?'.
 * json_obj_set(): set (stealing v; NULL becomes null). json_strvec(): an
 * array of the strings of sv (struct strvec, util/strvec.h). */
struct strvec;
json_t *json_str_lossy(const char *s);
void json_obj_set(json_t *o, const char *key, json_t *v);
json_t *json_strvec(const struct strvec *sv);

#endif
