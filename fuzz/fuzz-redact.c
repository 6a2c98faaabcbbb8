/* Fuzz target for the redactor (util/redact.h). The input is
 *   FLAGS SECRET1 NUL SECRET2 NUL SECRET3 NUL TEXT
 * (fewer NULs, fewer secrets; FLAGS bit 0: REDACT_CUT, bits 1-2: the jansson
 * flags of the embedded forms). Checked, for TEXT and for TEXT with every
 * secret embedded in it as jansson writes it (a JSON string, with and
 * without JSON_ENSURE_ASCII / JSON_ESCAPE_SLASH) and nested once more:
 *   - no representation of any secret survives: the output holds no secret,
 *     and the redactor finds nothing in it (raw or in any decoded view);
 *   - with REDACT_CUT, the output does not end with the start of a secret;
 *   - redact_json on TEXT (when it parses) leaves no secret in any string or
 *     key, and none in the whole document unless a secret holds a '"' (it
 *     can be spelt across two strings) or reads as escapes of a text shorter
 *     than REDACT_MIN (that text, not looked for, is written as the secret).
 * A secret with '[' or ']' in it, or "REDACTED", may be re-formed by the
 * mark itself and is left out of the property (redact.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/redact.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define MAX_SECRETS 3

static bool mark_safe(const char *s)
{
	return !strpbrk(s, "[]") && !strstr(s, "REDACTED");
}

/* Could a JSON writer spell s from a string the redactor does not look for:
 * s reads as JSON escapes whose text is shorter than REDACT_MIN (or that
 * jansson cannot read back to tell)? */
static bool short_decoded(const char *s)
{
	char *cur = xstrndup(s, strlen(s));
	bool bad = false;
	int level;

	for (level = 0; level < REDACT_DEPTH && strchr(cur, '\\'); level++) {
		struct sbuf q = SBUF_INIT(SIZE_MAX);
		json_t *v;

		(void)sbuf_addf(&q, "\"%s\"", cur);
		v = json_loadb(q.buf, q.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		sbuf_release(&q);
		if (!v || json_string_length(v) < REDACT_MIN ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			json_decref(v);
			bad = true;
			break;
		}
		free(cur);
		cur = xstrndup(json_string_value(v), json_string_length(v));
		json_decref(v);
	}
	free(cur);
	return bad;
}

static void check(struct redact *rd, char **sec, size_t n_sec, const char *text, size_t len,
		  unsigned flags)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	size_t i, k, sl;

	if (redact_apply(rd, text, len, flags, &out) < 0)
		__builtin_trap();
	if (redact_found(rd, out.buf, out.len))
		__builtin_trap();
	for (i = 0; i < n_sec; i++) {
		sl = strlen(sec[i]);
		if (memmem(out.buf, out.len, sec[i], sl))
			__builtin_trap();
		if (!(flags & REDACT_CUT))
			continue;
		for (k = 1; k < sl && k <= out.len; k++)
			if (memcmp(out.buf + out.len - k, sec[i], k) == 0)
				__builtin_trap();
	}
	sbuf_release(&out);
}

/* No string or key of v holds a secret. */
static void check_json(struct redact *rd, json_t *v)
{
	size_t i;
	void *it;

	if (json_is_string(v) && redact_found(rd, json_string_value(v), json_string_length(v)))
		__builtin_trap();
	for (i = 0; i < json_array_size(v); i++)
		check_json(rd, json_array_get(v, i));
	for (it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
		const char *key = json_object_iter_key(it);

		if (redact_found(rd, key, strlen(key)))
			__builtin_trap();
		check_json(rd, json_object_iter_value(it));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t jflags[] = {0, JSON_ENSURE_ASCII, JSON_ESCAPE_SLASH,
					JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH};
	struct redact *rd;
	char *sec[MAX_SECRETS];
	size_t n_sec = 0, i, pos = 1;
	const char *text;
	size_t len;
	unsigned flags;
	bool safe = true, spellable = false;
	struct sbuf mix = SBUF_INIT(SIZE_MAX);
	json_t *v;

	if (size < 1)
		return 0;
	flags = data[0] & 1 ? REDACT_CUT : 0;
	rd = redact_new();
	while (n_sec < MAX_SECRETS && pos < size) {
		const uint8_t *nul = memchr(data + pos, 0, size - pos);

		if (!nul)
			break;
		sec[n_sec] = xstrndup((const char *)data + pos, (size_t)(nul - (data + pos)));
		pos = (size_t)(nul - data) + 1;
		if (!redact_add(rd, sec[n_sec])) {
			free(sec[n_sec]);
			continue;
		}
		if (!mark_safe(sec[n_sec]))
			safe = false;
		if (strchr(sec[n_sec], '"') || short_decoded(sec[n_sec]))
			spellable = true;
		n_sec++;
	}
	text = (const char *)data + pos;
	len = size - pos;

	if (safe) {
		check(rd, sec, n_sec, text, len, flags);

		/* every secret as jansson writes it, and nested once more */
		(void)sbuf_add(&mix, text, len);
		for (i = 0; i < n_sec; i++) {
			json_t *s = json_string(sec[i]);
			char *d = s ? json_dumps(s, JSON_ENCODE_ANY | jflags[(data[0] >> 1) & 3])
				    : NULL;
			json_t *s2 = d ? json_string(d) : NULL;
			char *d2 = s2 ? json_dumps(s2, JSON_ENCODE_ANY) : NULL;

			if (d)
				(void)sbuf_adds(&mix, d);
			(void)sbuf_add(&mix, text, len);
			if (d2)
				(void)sbuf_adds(&mix, d2);
			free(d2);
			json_decref(s2);
			free(d);
			json_decref(s);
		}
		check(rd, sec, n_sec, mix.buf, mix.len, 0);
		check(rd, sec, n_sec, mix.buf, mix.len, REDACT_CUT);

		v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (v) {
			char *d;

			(void)redact_json(rd, v);
			check_json(rd, v);
			/* the whole document, unless a secret has JSON's syntax
			 * in it, or escapes that spell a text too short to look
			 * for */
			d = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			if (d && !spellable && redact_found(rd, d, strlen(d)))
				__builtin_trap();
			free(d);
			json_decref(v);
		}
	} else {
		/* no property, but no crash, leak or overflow either */
		struct sbuf out = SBUF_INIT(SIZE_MAX);

		(void)redact_apply(rd, text, len, flags, &out);
		sbuf_release(&out);
	}

	sbuf_release(&mix);
	for (i = 0; i < n_sec; i++)
		free(sec[i]);
	redact_free(rd);
	return 0;
}
