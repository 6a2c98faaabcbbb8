/* The event connection's messages (orch/remote.h). */
#include "orch/remote.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util/xalloc.h"
#include "util/banned.h"

void remote_msg_release(struct remote_msg *m)
{
	if (!m)
		return;
	free(m->text);
	free(m->node);
	memset(m, 0, sizeof(*m));
}

static bool all_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

static int bad(struct diag *reterr, const char *what)
{
	diag_set(reterr, NULL, 0, 0, "bad message from the node: %s", what);
	return -EBADMSG;
}

/* A string member's value, copied; NULL when it is no string. */
static char *str_of(const json_t *v)
{
	return json_is_string(v) ? xstrndup(json_string_value(v), json_string_length(v)) : NULL;
}

/* {"token", "node"} */
static int parse_hello(const json_t *o, struct remote_msg *m, struct diag *reterr)
{
	const json_t *node = json_object_get(o, "node");
	size_t i;

	m->kind = REMOTE_MSG_HELLO;
	m->text = str_of(json_object_get(o, "token"));
	m->node = str_of(node);
	if (json_object_size(o) != 2 || !m->text || !m->node ||
	    strlen(m->text) != REMOTE_TOKEN_HEX || !all_hex(m->text, REMOTE_TOKEN_HEX) ||
	    strlen(m->node) != json_string_length(node) || strlen(m->node) > 255)
		return bad(reterr, "a hello is {\"token\": 64 hex digits, \"node\": a name}");
	for (i = 0; m->node[i]; i++)
		if ((unsigned char)m->node[i] < 0x20 || m->node[i] == 0x7f)
			return bad(reterr, "a node name holds a control character");
	return 0;
}

static const char b64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *remote_b64_encode(const void *data, size_t n)
{
	const unsigned char *p = data;
	char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		*o++ = b64_digits[p[i] >> 2];
		*o++ = b64_digits[(p[i] & 3) << 4 | p[i + 1] >> 4];
		*o++ = b64_digits[(p[i + 1] & 15) << 2 | p[i + 2] >> 6];
		*o++ = b64_digits[p[i + 2] & 63];
	}
	if (i < n) {
		*o++ = b64_digits[p[i] >> 2];
		if (i + 1 < n) {
			*o++ = b64_digits[(p[i] & 3) << 4 | p[i + 1] >> 4];
			*o++ = b64_digits[(p[i + 1] & 15) << 2];
		} else {
			*o++ = b64_digits[(p[i] & 3) << 4];
			*o++ = '=';
		}
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64_digits, c) : NULL;

	return p ? (int)(p - b64_digits) : -1;
}

/* Strict base64 (padding, no blanks) of at most REMOTE_BUNDLE_CHUNK bytes:
 * the bytes (NUL after them) and their count, or NULL. */
static char *b64_decode(const char *s, size_t n, size_t *ret_len)
{
	size_t i, o = 0, pad = 0;
	char *out;

	if (n == 0 || n % 4 || n / 4 * 3 > REMOTE_BUNDLE_CHUNK)
		return NULL;
	if (s[n - 1] == '=')
		pad = s[n - 2] == '=' ? 2 : 1;
	out = xmalloc(n / 4 * 3 + 1);
	for (i = 0; i < n; i += 4) {
		int v[4], k;
		bool last = i + 4 == n;

		for (k = 0; k < 4; k++) {
			v[k] = last && k >= 4 - (int)pad ? 0 : b64_val(s[i + k]);
			if (v[k] < 0) {
				free(out);
				return NULL;
			}
		}
		/* the bits padding drops must be zero: one encoding per input */
		if (last && ((pad == 2 && (v[1] & 15)) || (pad == 1 && (v[2] & 3)))) {
			free(out);
			return NULL;
		}
		out[o++] = (char)(v[0] << 2 | v[1] >> 4);
		if (!last || pad < 2)
			out[o++] = (char)((v[1] & 15) << 4 | v[2] >> 2);
		if (!last || pad < 1)
			out[o++] = (char)((v[2] & 3) << 6 | v[3]);
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

int remote_bundle_heads(const char *out, const char *branch, char ret_sha[65], struct diag *reterr)
{
	const char *line = out, *nl, *sp;
	size_t n = 0;

	while (*line) {
		size_t len, idn;

		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		if (len) {
			sp = memchr(line, ' ', len);
			idn = sp ? (size_t)(sp - line) : 0;
			if (!sp || (idn != 40 && idn != 64) ||
			    strncmp(sp + 1, "refs/heads/", 11) != 0 ||
			    strlen(branch) != len - idn - 12 ||
			    strncmp(sp + 12, branch, len - idn - 12) != 0) {
				diag_set(reterr, NULL, 0, 0,
					 "the node's bundle holds '%.*s', not only refs/heads/%s",
					 (int)(len > 200 ? 200 : len), line, branch);
				return -EBADMSG;
			}
			{
				char id[65];

				memcpy(id, line, idn);
				id[idn] = '\0';
				if (!all_hex(id, idn)) {
					diag_set(reterr, NULL, 0, 0,
						 "the node's bundle names a malformed commit id");
					return -EBADMSG;
				}
				memcpy(ret_sha, id, idn + 1);
			}
			n++;
		}
		line += len + (nl ? 1 : 0);
	}
	if (n != 1) {
		diag_set(reterr, NULL, 0, 0, "the node's bundle holds %zu refs, not one", n);
		return -EBADMSG;
	}
	return 0;
}

/* The one key of a message after the hello. */
static int parse_body(const char *key, const json_t *v, struct remote_msg *m, struct diag *reterr)
{
	if (strcmp(key, "out") == 0 || strcmp(key, "err") == 0 || strcmp(key, "error") == 0) {
		m->kind = strcmp(key, "out") == 0   ? REMOTE_MSG_OUT
			  : strcmp(key, "err") == 0 ? REMOTE_MSG_ERR
						    : REMOTE_MSG_ERROR;
		m->text = str_of(v);
		return m->text ? 0 : bad(reterr, "a line is a string");
	}
	if (strcmp(key, "pushed") == 0) {
		m->kind = REMOTE_MSG_PUSHED;
		if (json_is_null(v))
			return 0;
		m->text = str_of(v);
		if (!m->text || !((strlen(m->text) == 40 && all_hex(m->text, 40)) ||
				  (strlen(m->text) == 64 && all_hex(m->text, 64))))
			return bad(reterr, "pushed is a commit id or null");
		return 0;
	}
	if (strcmp(key, "bundle") == 0) {
		m->kind = REMOTE_MSG_BUNDLE;
		if (!json_is_string(v) ||
		    !(m->text = b64_decode(json_string_value(v), json_string_length(v), &m->len)))
			return bad(reterr, "a bundle is base64 of at most 1 MiB");
		return 0;
	}
	if (strcmp(key, "exit") == 0) {
		json_int_t c = json_integer_value(v);

		m->kind = REMOTE_MSG_EXIT;
		if (!json_is_integer(v) || c < 0 || c > 255)
			return bad(reterr, "exit is an integer in 0..255");
		m->code = (int)c;
		return 0;
	}
	return bad(reterr, "unknown key");
}

int remote_msg_parse(const char *line, size_t len, struct remote_msg *ret, struct diag *reterr)
{
	struct remote_msg m = {.kind = _REMOTE_MSG_KIND_INVALID};
	json_error_t je;
	json_t *o;
	int r;

	if (len > REMOTE_LINE_MAX)
		return bad(reterr, "line too long");
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return bad(reterr, "not JSON");
	if (!json_is_object(o))
		r = bad(reterr, "not an object");
	else if (json_object_get(o, "token"))
		r = parse_hello(o, &m, reterr);
	else if (json_object_size(o) != 1)
		r = bad(reterr, "not exactly one key");
	else
		r = parse_body(json_object_iter_key(json_object_iter(o)),
			       json_object_iter_value(json_object_iter(o)), &m, reterr);
	json_decref(o);
	if (r < 0) {
		remote_msg_release(&m);
		return r;
	}
	*ret = m;
	return 0;
}

int remote_token(char buf[REMOTE_TOKEN_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[REMOTE_TOKEN_HEX / 2];
	size_t i, got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	for (i = 0; i < sizeof(raw); i++) {
		buf[2 * i] = hex[raw[i] >> 4];
		buf[2 * i + 1] = hex[raw[i] & 15];
	}
	buf[REMOTE_TOKEN_HEX] = '\0';
	return 0;
}

bool remote_token_equal(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b), i;
	unsigned char d = na != nb;

	for (i = 0; i < REMOTE_TOKEN_HEX; i++)
		d |= (unsigned char)((i < na ? a[i] : 0) ^ (i < nb ? b[i] : 0));
	return d == 0;
}

bool remote_home_path_ok(const char *rel)
{
	const char *c = rel;

	if (!rel || !*rel || *rel == '/' || strlen(rel) >= REMOTE_HOME_PATH_MAX)
		return false;
	while (*c) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/' && !*++c)
			return false;
	}
	return true;
}
