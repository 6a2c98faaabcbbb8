/* What bernstein-serve makes of untrusted bytes before anything else sees
 * them (docs/api.md, "Security"): a request's path into segments, the id
 * rule every segment that names a run, task or session must pass before a
 * file path is made of it, and an events.jsonl line framed as one
 * Server-Sent Event. Free of libmicrohttpd, so fuzz/fuzz-serve-path.c
 * drives them directly. */
#ifndef BERNSTEIN_CLI_SERVE_PATH_H
#define BERNSTEIN_CLI_SERVE_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/sbuf.h"

#define SERVE_ID_MAX   128
#define SERVE_SEGS_MAX 8

/* [A-Za-z0-9][A-Za-z0-9_-]{0,127}: no dot, no slash, never a path. */
bool serve_id_ok(const char *s);

/* Split path ("/api/runs/X") at '/' into buf (size bytes), empty segments
 * dropped; segs[] points into buf. The count, or -ENAMETOOLONG (longer
 * than buf), -E2BIG (more than SERVE_SEGS_MAX segments). */
int serve_path_split(const char *path, char *buf, size_t size, char *segs[SERVE_SEGS_MAX]);

/* One event line (len bytes, no newline) appended to out as
 *   id: ATTEMPT:OFFSET\ndata: LINE\n\n
 * 0, or -EBADMSG for a line SSE cannot carry as one event (empty, or
 * holding a CR, LF or NUL, which would end the data line early and let the
 * rest pose as fields of its own), -ENOBUFS when out is full. */
int serve_sse_event(struct sbuf *out, int64_t attempt, long long offset, const char *line,
		    size_t len);

#endif
