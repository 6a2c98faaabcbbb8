/* Fuzz target for bernstein-serve's parsing of untrusted bytes
 * (src/cli/serve-path.h): the input up to its first NUL is a request path,
 * the rest an events.jsonl line. Every segment the id rule passes is
 * non-empty, at most 128 bytes, with no dot, slash or NUL (never a path
 * step); the segments put back together name no more than the path did;
 * an event framed for SSE is exactly one event: one id line, one data line
 * holding the input line unchanged, one blank line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/serve-path.h"
#include "fuzz/fuzz.h"

static void check_path(const char *path)
{
	char buf[1024], *segs[SERVE_SEGS_MAX];
	int n = serve_path_split(path, buf, sizeof(buf), segs), i;

	if (n == -ENAMETOOLONG || n == -E2BIG)
		return;
	if (n < 0 || n > SERVE_SEGS_MAX)
		abort();
	for (i = 0; i < n; i++) {
		size_t len = strlen(segs[i]);

		if (len == 0 || strchr(segs[i], '/') || !strstr(path, segs[i]))
			abort();
		if (serve_id_ok(segs[i]) &&
		    (len > SERVE_ID_MAX || strchr(segs[i], '.') || segs[i][0] == '-'))
			abort();
	}
}

static void check_event(const char *line, size_t len)
{
	struct sbuf out = SBUF_INIT(1 << 20);
	const char *data, *end;
	int r = serve_sse_event(&out, 1, 42, line, len);

	if (r == -EBADMSG || r == -ENOBUFS) {
		if (r == -EBADMSG && len && !memchr(line, '\r', len) && !memchr(line, '\n', len) &&
		    !memchr(line, '\0', len))
			abort();
		goto out;
	}
	if (r != 0 || strncmp(out.buf, "id: 1:42\ndata: ", 15) != 0)
		abort();
	data = out.buf + 15;
	end = out.buf + out.len;
	if (end - data != (long)len + 2 || memcmp(data, line, len) != 0 ||
	    memcmp(end - 2, "\n\n", 2))
		abort();
	if (memchr(data, '\r', len) || memchr(data, '\n', len))
		abort();
out:
	sbuf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nul = memchr(data, '\0', size);
	size_t plen = nul ? (size_t)(nul - (const char *)data) : size;
	char *path = malloc(plen + 1);

	memcpy(path, data, plen);
	path[plen] = '\0';
	check_path(path);
	free(path);
	if (nul)
		check_event(nul + 1, size - plen - 1);
	return 0;
}
