/* bernstein-serve's parsing of untrusted bytes (see serve-path.h). */
#include "cli/serve-path.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/banned.h"

bool serve_id_ok(const char *s)
{
	size_t i;

	if (!s || !s[0])
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];
		bool alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		if (i == SERVE_ID_MAX || (!alnum && (i == 0 || (c != '-' && c != '_'))))
			return false;
	}
	return true;
}

int serve_path_split(const char *path, char *buf, size_t size, char *segs[SERVE_SEGS_MAX])
{
	size_t len = strlen(path), n = 0;
	char *p, *save = NULL;

	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (n == SERVE_SEGS_MAX)
			return -E2BIG;
		segs[n++] = p;
	}
	return (int)n;
}

int serve_sse_event(struct sbuf *out, int64_t attempt, long long offset, const char *line,
		    size_t len)
{
	if (len == 0 || memchr(line, '\r', len) || memchr(line, '\n', len) ||
	    memchr(line, '\0', len))
		return -EBADMSG;
	if (sbuf_addf(out, "id: %" PRId64 ":%lld\ndata: ", attempt, offset) < 0 ||
	    sbuf_add(out, line, len) < 0 || sbuf_add(out, "\n\n", 2) < 0)
		return -ENOBUFS;
	return 0;
}
