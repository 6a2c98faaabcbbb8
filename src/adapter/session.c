/* Agent session ids (session.h). */
#include "adapter/session.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/hash.h"
#include "util/banned.h"

int session_id_derive(const char *conversation_id, const char *adapter,
		      char out[SESSION_UUID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	const void *parts[2];
	size_t lens[2];
	uint8_t mac[SHA256_LEN];
	size_t i, o = 0;
	int r;

	if (!conversation_id || !*conversation_id || !adapter || !*adapter)
		return -EINVAL;
	parts[0] = SESSION_NAMESPACE_PREFIX;
	lens[0] = strlen(SESSION_NAMESPACE_PREFIX);
	parts[1] = adapter;
	lens[1] = strlen(adapter);
	r = hash_hmac_sha256(conversation_id, strlen(conversation_id), parts, lens, 2, mac);
	if (r < 0)
		return r;
	mac[6] = (uint8_t)((mac[6] & 0x0F) | 0x50);
	mac[8] = (uint8_t)((mac[8] & 0x3F) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[mac[i] >> 4];
		out[o++] = hex[mac[i] & 0x0F];
	}
	out[o] = '\0';
	return 0;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool session_id_is_uuid(const char *s)
{
	size_t i;

	if (!s || strlen(s) != SESSION_UUID_LEN)
		return false;
	for (i = 0; i < SESSION_UUID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
		} else if (!is_hex(s[i])) {
			return false;
		}
	}
	return true;
}

int session_id_check(const char *id, struct diag *reterr)
{
	size_t i, n;

	if (!id || !*id) {
		diag_set(reterr, NULL, 0, 0, "session id is empty");
		return -EINVAL;
	}
	n = strlen(id);
	if (n > SESSION_ID_MAX) {
		diag_set(reterr, NULL, 0, 0, "session id is too long (%zu bytes, at most %d)", n,
			 SESSION_ID_MAX);
		return -EINVAL;
	}
	if (id[0] == '-') {
		diag_set(reterr, NULL, 0, 0, "session id '%s' starts with '-'", id);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)id[i];

		if (c <= 0x20 || c >= 0x7f) {
			diag_set(
				reterr, NULL, 0, 0,
				"session id holds a blank, a control or a non-ASCII byte (0x%02x at offset %zu)",
				c, i);
			return -EINVAL;
		}
	}
	return 0;
}
