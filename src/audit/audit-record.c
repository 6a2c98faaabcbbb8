/* One chain record: parse and check a line, or build a new one. The MAC is
 * HMAC-SHA256(key, prev_hmac || json_canon_py(record without "hmac")). */
#include "audit/audit-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/hash.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* Python's ensure_ascii turns one byte into up to six ("\u007f"), so the
 * canonical form of a line that fits AUDIT_LINE_MAX fits this. */
#define CANON_MAX ((size_t)AUDIT_LINE_MAX * 6 + 64)

void audit_scratch_init(struct audit_scratch *s)
{
	sbuf_init(&s->canon, CANON_MAX);
	sbuf_init(&s->payload, CANON_MAX);
}

void audit_scratch_release(struct audit_scratch *s)
{
	sbuf_release(&s->canon);
	sbuf_release(&s->payload);
}

bool audit_hex64(const char *s, size_t n)
{
	size_t i;

	if (!s || n != AUDIT_HMAC_HEX_LEN)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

void audit_hmac_copy(char dst[AUDIT_HMAC_HEX_LEN + 1], const char *src)
{
	memcpy(dst, src, AUDIT_HMAC_HEX_LEN);
	dst[AUDIT_HMAC_HEX_LEN] = '\0';
}

/* HMAC over prev || a || b (the payload may come in two pieces). */
static int mac_hex(struct hash_hmac *mac, const char *prev, size_t prevlen, const char *a,
		   size_t alen, const char *b, size_t blen, char hex[AUDIT_HMAC_HEX_LEN + 1])
{
	const void *parts[3] = {prev, a, b};
	size_t lens[3] = {prevlen, alen, blen};
	uint8_t md[SHA256_LEN];
	int r;

	if (!mac)
		return -EIO;
	r = hash_hmac_compute(mac, parts, lens, 3, md);
	if (r < 0)
		return r;
	hash_hex(md, sizeof(md), hex);
	return 0;
}

void audit_record_release(struct audit_record *r)
{
	json_decref(r->obj);
	r->obj = NULL;
}

/* The end of the JSON value starting at s[i] in canonical text (well formed,
 * no whitespace but the separators, strings escaped). */
static size_t skip_value(const char *s, size_t len, size_t i)
{
	unsigned depth = 0;

	for (; i < len; i++) {
		switch (s[i]) {
		case '"':
			for (i++; i < len && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			if (depth == 0)
				return i + 1;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return i; /* the end of the enclosing object */
			if (--depth == 0)
				return i + 1;
			break;
		case ',':
			if (depth == 0)
				return i;
			break;
		default:
			break;
		}
	}
	return len;
}

/* The top-level member of the canonical object text s whose canonical key
 * text (with the quotes and ": ") is key: its bytes [*ret_start, *ret_end).
 * 0 when there is none. */
static int find_member(const char *s, size_t len, const char *key, size_t *ret_start,
		       size_t *ret_end)
{
	size_t i = 1, start, end, keylen = strlen(key);

	if (len < 2 || s[0] != '{')
		return 0;
	while (i < len && s[i] == '"') {
		start = i;
		i = skip_value(s, len, i); /* the key */
		if (i + 2 > len || s[i] != ':')
			return 0;
		end = skip_value(s, len, i + 2);
		if (i + 2 - start == keylen && memcmp(s + start, key, keylen) == 0) {
			*ret_start = start;
			*ret_end = end;
			return 1;
		}
		if (end >= len || s[end] != ',')
			return 0;
		i = end + 2;
	}
	return 0;
}

/* The bytes to cut from the canonical text of an object to drop its
 * top-level "hmac" member, with one of its ", " separators: json_canon_py()
 * joins members with ", ", so the rest is exactly the canonical form of the
 * object without it. */
static int find_hmac_member(const char *s, size_t len, size_t *ret_a, size_t *ret_b)
{
	size_t start, end;

	if (!find_member(s, len, "\"hmac\": ", &start, &end))
		return 0;
	if (start > 1) { /* ", " before it */
		*ret_a = start - 2;
		*ret_b = end;
	} else if (end < len && s[end] == ',') { /* first: ", " after it */
		*ret_a = start;
		*ret_b = end + 2;
	} else { /* the only member */
		*ret_a = start;
		*ret_b = end;
	}
	return 1;
}

/* The fast path: line is canonical; only the MAC is left to compute. */
static int check_fast(struct hash_hmac *mac, const char *line, size_t len,
		      const struct audit_canon *fc, struct audit_record *ret)
{
	int r;

	ret->kind = AUDIT_RECORD_OBJECT;
	ret->fast = true;
	ret->canonical = true;
	ret->prev = fc->prev;
	ret->prevlen = fc->prevlen;
	ret->hmac = fc->hmac;
	ret->hmaclen = fc->hmaclen;
	r = mac_hex(mac, fc->prev, fc->prevlen, line, fc->cut_a, line + fc->cut_b, len - fc->cut_b,
		    ret->computed);
	if (r < 0)
		return r;
	ret->mac_ok = ret->hmaclen == AUDIT_HMAC_HEX_LEN &&
		      hash_equal(ret->computed, ret->hmac, AUDIT_HMAC_HEX_LEN);
	return 0;
}

int audit_record_check(struct audit_scratch *s, struct hash_hmac *mac, const char *line, size_t len,
		       unsigned flags, struct audit_record *ret)
{
	struct audit_canon fc;
	json_error_t err;
	size_t a, b;
	json_t *v;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!(flags & AUDIT_CHECK_NO_FAST) && audit_canon_scan(line, len, &fc))
		return check_fast(mac, line, len, &fc, ret);
	/* Python's json.loads accepts "\u0000" and takes the last of duplicate
	 * keys (the line is then non-canonical); do the same. */
	ret->obj = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (!ret->obj) {
		ret->kind = AUDIT_RECORD_INVALID_JSON;
		(void)snprintf(ret->error, sizeof(ret->error), "%s (column %d)", err.text,
			       err.column);
		return 0;
	}
	if (!json_is_object(ret->obj)) {
		ret->kind = AUDIT_RECORD_NOT_OBJECT;
		return 0;
	}
	ret->kind = AUDIT_RECORD_OBJECT;

	sbuf_reset(&s->canon);
	r = json_canon_py(ret->obj, &s->canon);
	ret->canonical = r == 0 && s->canon.len == len && memcmp(s->canon.buf, line, len) == 0;

	v = json_object_get(ret->obj, "prev_hmac");
	if (json_is_string(v)) {
		ret->prev = json_string_value(v);
		ret->prevlen = json_string_length(v);
	}
	v = json_object_get(ret->obj, "hmac");
	if (json_is_string(v)) {
		ret->hmac = json_string_value(v);
		ret->hmaclen = json_string_length(v);
	}
	if (r < 0)
		return 0; /* not serialisable: computed stays "" */
	/* The payload is the canonical form without "hmac": cut the member
	 * out of the text rather than serialise a second time. */
	a = b = s->canon.len;
	if (v && !find_hmac_member(s->canon.buf, s->canon.len, &a, &b)) {
		/* Cannot happen with json_canon_py() output; if it ever does,
		 * serialise a copy without the member (the slow way). */
		json_t *copy = json_copy(ret->obj);

		(void)json_object_del(copy, "hmac");
		sbuf_reset(&s->payload);
		r = json_canon_py(copy, &s->payload);
		json_decref(copy);
		if (r < 0)
			return 0;
		r = mac_hex(mac, ret->prev ? ret->prev : "", ret->prevlen, s->payload.buf,
			    s->payload.len, "", 0, ret->computed);
	} else {
		r = mac_hex(mac, ret->prev ? ret->prev : "", ret->prevlen, s->canon.buf, a,
			    s->canon.buf + b, s->canon.len - b, ret->computed);
	}
	if (r < 0)
		return r;
	ret->mac_ok = ret->hmaclen == AUDIT_HMAC_HEX_LEN &&
		      hash_equal(ret->computed, ret->hmac, AUDIT_HMAC_HEX_LEN);
	return 0;
}

bool audit_record_chainable(const struct audit_record *r)
{
	return r->kind == AUDIT_RECORD_OBJECT && r->canonical && audit_hex64(r->hmac, r->hmaclen);
}

static int set_string(json_t *o, const char *key, const char *value, struct diag *reterr)
{
	json_t *s = json_string(value ? value : "");

	if (!s) {
		diag_set(reterr, NULL, 0, 0, "audit record: '%s' is not valid UTF-8", key);
		return -EINVAL;
	}
	return json_object_set_new(o, key, s) < 0 ? -ENOMEM : 0;
}

static int canon_error(int r, struct diag *reterr)
{
	switch (r) {
	case -EDOM:
		diag_set(reterr, NULL, 0, 0, "audit record: details contain NaN or infinity");
		break;
	case -ELOOP:
		diag_set(reterr, NULL, 0, 0, "audit record: details are nested too deeply");
		break;
	case -ENOBUFS:
		diag_set(reterr, NULL, 0, 0, "audit record: longer than %d bytes", AUDIT_LINE_MAX);
		break;
	default:
		diag_set(reterr, NULL, 0, 0, "audit record: cannot serialise: %s", strerror(-r));
		break;
	}
	return r;
}

int audit_record_build(struct audit_scratch *s, struct hash_hmac *mac, const char *prev,
		       const char *timestamp, const char *event_type, const char *actor,
		       const char *resource_type, const char *resource_id, const json_t *details,
		       struct sbuf *line, char ret_hmac[AUDIT_HMAC_HEX_LEN + 1],
		       struct diag *reterr)
{
	char hex[AUDIT_HMAC_HEX_LEN + 1];
	json_t *o = NULL, *d = NULL;
	size_t at, end;
	int r;

	if (details && !json_is_object(details)) {
		diag_set(reterr, NULL, 0, 0, "audit record: details must be a JSON object");
		return -EINVAL;
	}
	o = json_object();
	d = details ? json_deep_copy(details) : json_object();
	if (!o || !d) {
		r = -ENOMEM;
		goto out;
	}
	r = json_object_set_new(o, "details", d) < 0 ? -ENOMEM : 0;
	d = NULL;
	if (r >= 0)
		r = set_string(o, "actor", actor, reterr);
	if (r >= 0)
		r = set_string(o, "event_type", event_type, reterr);
	if (r >= 0)
		r = set_string(o, "prev_hmac", prev, reterr);
	if (r >= 0)
		r = set_string(o, "resource_id", resource_id, reterr);
	if (r >= 0)
		r = set_string(o, "resource_type", resource_type, reterr);
	if (r >= 0)
		r = set_string(o, "timestamp", timestamp, reterr);
	if (r < 0)
		goto out;

	sbuf_reset(&s->payload);
	r = json_canon_py(o, &s->payload);
	if (r < 0) {
		r = canon_error(r, reterr);
		goto out;
	}
	r = mac_hex(mac, prev, strlen(prev), s->payload.buf, s->payload.len, "", 0, hex);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "audit record: HMAC-SHA256 failed");
		goto out;
	}
	/* The line is the payload with "hmac" inserted before "prev_hmac" (the
	 * next key in sort order; no record key lies between them). */
	if (!find_member(s->payload.buf, s->payload.len, "\"prev_hmac\": ", &at, &end))
		BUG("no \"prev_hmac\" in a record being built");
	if (s->payload.len + AUDIT_HMAC_HEX_LEN + 12 > AUDIT_LINE_MAX) {
		r = canon_error(-ENOBUFS, reterr);
		goto out;
	}
	r = sbuf_add(line, s->payload.buf, at);
	if (r >= 0)
		r = sbuf_addf(line, "\"hmac\": \"%s\", ", hex);
	if (r >= 0)
		r = sbuf_add(line, s->payload.buf + at, s->payload.len - at);
	if (r >= 0)
		r = sbuf_addc(line, '\n');
	if (r < 0) {
		r = canon_error(r, reterr);
		goto out;
	}
	memcpy(ret_hmac, hex, sizeof(hex));
out:
	json_decref(d);
	json_decref(o);
	return r;
}
