/* Secrets kept out of everything bernstein writes (docs/spawning.md,
 * "Secrets in the output"): the one redactor below the agent log, the event
 * stream, the runner's transcript and every printed line.
 *
 * A redactor holds a set of secret values and replaces, in a byte string,
 * every span that is a representation of one of them by REDACT_MARK:
 *   - its raw bytes;
 *   - any JSON string escaping of them, nested up to REDACT_DEPTH times: the
 *     input is also read as if its backslash escapes were decoded (\" \\ \/
 *     \b \f \n \r \t, \uXXXX with hex digits in either case, surrogate pairs),
 *     once, twice..., and a secret found in such a decoded view redacts the raw
 *     bytes it came from. This covers jansson's output with and without
 *     JSON_ENSURE_ASCII or JSON_ESCAPE_SLASH, Python's json.dumps (the audit
 *     chain), JCS, events.jsonl, JSON inside a JSON string (a tool call's
 *     arguments), and any other escaping an agent may choose;
 *   - for a secret that is not valid UTF-8, the forms lossy writers make of
 *     it (each invalid byte as U+FFFD; every non-ASCII byte as '?');
 *   - for a secret of several lines, each of its lines of at least REDACT_MIN
 *     bytes (a line-framed reader never sees the whole value);
 *   - for a secret that itself reads as JSON escapes (a literal backslash
 *     and 'n'), the text they spell, when it has REDACT_MIN bytes or more:
 *     a JSON writer writes that text as the secret.
 * Matches may overlap or nest (a secret inside another): the union of all of
 * them is redacted, each maximal run by one REDACT_MARK, so no piece of the
 * longer one survives. Secrets shorter than REDACT_MIN bytes are not looked
 * for: they would match everywhere (the callers warn about them).
 *
 * With REDACT_CUT the input is the head of a longer text whose rest is never
 * seen (an oversized line): a tail that could be the start of a secret (in
 * any view), or an escape the cut left incomplete, is redacted too.
 *
 * Time and memory are linear in the input: one Aho-Corasick pass over all
 * patterns per view; a decoded view is built only when the previous one
 * holds a backslash escape, and scanned only around its escapes.
 *
 * What a redactor cannot do: find a secret the writer encoded some other
 * way (base64, reversed, split over several lines or events), or the start
 * of a secret in text someone cut before it got here. A secret holding '['
 * or ']', or "REDACTED", can be spelt again by a REDACT_MARK and its
 * neighbours. */
#ifndef BERNSTEIN_UTIL_REDACT_H
#define BERNSTEIN_UTIL_REDACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/sbuf.h"

#define REDACT_MARK  "[REDACTED]"
#define REDACT_MIN   8 /* bytes: shorter secrets are not looked for */
#define REDACT_DEPTH 4 /* levels of JSON string escaping looked through */

enum redact_flags {
	REDACT_CUT = 1 << 0, /* the input is the head of a longer text */
};

struct redact;

/* An empty redactor (it redacts nothing until a secret is added). */
struct redact *redact_new(void);
/* Wipes the secrets from memory. NULL-safe; returns NULL. */
struct redact *redact_free(struct redact *rd);

/* Add a secret (copied). Returns true when it is new; false when it is
 * shorter than REDACT_MIN (it is not looked for) or was known already (as a
 * secret, or as a form of one: then its own forms are added). */
bool redact_add(struct redact *rd, const char *secret);
/* How many secrets are looked for (0 for NULL). */
size_t redact_count(const struct redact *rd);

/* Append s[0, len) to out with every representation of every secret
 * replaced. s may hold any bytes (NUL included). rd may be NULL (a plain
 * copy). Returns the number of REDACT_MARKs written, or -ENOBUFS when out's
 * cap is hit (out then holds a prefix of the result that ends before a
 * secret, never inside one). */
int redact_apply(struct redact *rd, const char *s, size_t len, unsigned flags, struct sbuf *out);
/* Does s[0, len) hold a representation of a secret? */
bool redact_found(struct redact *rd, const char *s, size_t len);

/* Redact every string and every object key in v, in place (a key that
 * becomes equal to another replaces it). A string redacted into invalid
 * UTF-8 gets U+FFFD for the broken bytes. Returns the number of strings and
 * keys changed. */
size_t redact_json(struct redact *rd, json_t *v);

#endif
