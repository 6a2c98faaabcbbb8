/* Fuzz target for the relay's parser of a Slurm node's messages
 * (orch/remote.c): every line a node sends is input an agent on that node
 * could forge. Properties, besides never crashing:
 *   - on success the kind is one of the six, and its fields obey it: a
 *     hello has a 64-hex token and a node name without control characters;
 *     out, err and error have a text; pushed has NULL or a 40/64-hex id;
 *     exit has a code in 0..255 and no text;
 *   - a bundle chunk decodes to at most REMOTE_BUNDLE_CHUNK bytes, and
 *     encoding them again gives the very base64 that came (one encoding
 *     per input);
 *   - on failure the return is -EBADMSG with a message, and *ret is
 *     untouched;
 *   - the same bytes as `git bundle list-heads` output are accepted only
 *     as exactly one line "ID refs/heads/BRANCH", its id 40 or 64 hex. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz/fuzz.h"
#include "orch/remote.h"
#include "util/banned.h"

static bool hex_of(const char *s, size_t n)
{
	size_t i;

	if (strlen(s) != n)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct remote_msg m, sentinel;
	struct diag d = {0};
	size_t i;
	int r;

	/* a HOME file's path: accepted only relative and without a climb */
	{
		char *rel = malloc(size + 1);

		if (!rel)
			return 0;
		memcpy(rel, data, size);
		rel[size] = '\0';
		if (remote_home_path_ok(rel) &&
		    (rel[0] == '/' || strstr(rel, "//") || strcmp(rel, "..") == 0 ||
		     strncmp(rel, "../", 3) == 0 || strstr(rel, "/../") ||
		     (strlen(rel) >= 3 && strcmp(rel + strlen(rel) - 3, "/..") == 0)))
			abort();
		free(rel);
	}
	/* as the refs of a node's bundle */
	{
		static const char branch[] = "bernstein/t-1";
		char *out = malloc(size + 1), sha[65];
		struct diag hd = {0};

		if (!out)
			return 0;
		memcpy(out, data, size);
		out[size] = '\0';
		if (remote_bundle_heads(out, branch, sha, &hd) == 0) {
			size_t n = strlen(sha);
			const char *line = out + strspn(out, "\n");

			if ((n != 40 && n != 64) || !hex_of(sha, n) || strncmp(line, sha, n) != 0 ||
			    strncmp(line + n, " refs/heads/bernstein/t-1", 25) != 0)
				abort();
		} else if (!hd.msg[0]) {
			abort();
		}
		free(out);
	}
	memset(&m, 0x5a, sizeof(m));
	sentinel = m;
	r = remote_msg_parse((const char *)data, size, &m, &d);
	if (r < 0) {
		if (r != -EBADMSG || !d.msg[0] || memcmp(&m, &sentinel, sizeof(m)) != 0)
			abort();
		return 0;
	}
	if (r != 0)
		abort();
	switch (m.kind) {
	case REMOTE_MSG_HELLO:
		if (!m.text || !hex_of(m.text, REMOTE_TOKEN_HEX) || !m.node || strlen(m.node) > 255)
			abort();
		for (i = 0; m.node[i]; i++)
			if ((unsigned char)m.node[i] < 0x20 || m.node[i] == 0x7f)
				abort();
		break;
	case REMOTE_MSG_OUT:
	case REMOTE_MSG_ERR:
	case REMOTE_MSG_ERROR:
		if (!m.text || m.node)
			abort();
		break;
	case REMOTE_MSG_PUSHED:
		if (m.text && !hex_of(m.text, 40) && !hex_of(m.text, 64))
			abort();
		break;
	case REMOTE_MSG_EXIT:
		if (m.code < 0 || m.code > 255 || m.text)
			abort();
		break;
	case REMOTE_MSG_BUNDLE: {
		json_t *o = json_loadb((const char *)data, size, 0, NULL);
		const char *came = json_string_value(json_object_get(o, "bundle"));
		char *again;

		if (!m.text || m.len > REMOTE_BUNDLE_CHUNK || m.text[m.len] != '\0' || !came)
			abort();
		again = remote_b64_encode(m.text, m.len);
		if (strcmp(again, came) != 0)
			abort();
		free(again);
		json_decref(o);
		break;
	}
	default:
		abort();
	}
	remote_msg_release(&m);
	return 0;
}
