/* A push parser for Server-Sent Events (the WHATWG "event stream" format), as
 * the OpenAI APIs stream replies:
 *
 *   event: response.output_text.delta
 *   data: {"type": "response.output_text.delta", "delta": "Hel"}
 *   <blank line>
 *
 * Bytes go in as they arrive, in chunks of any size; each complete event is
 * handed to a callback. Lines end in LF, CRLF or CR (a CR at the end of one
 * chunk and an LF at the start of the next count as one line end). A leading
 * UTF-8 BOM is dropped; lines starting with ':' are comments; "data" lines are
 * joined with LF; "event" sets the type (default "message"); "id" sets the
 * last event id; "retry" and unknown fields are ignored. An event whose data
 * is empty is not dispatched. At the end of the stream an unterminated event
 * is discarded (as the spec says), but sse_finish() reports whether one was
 * pending.
 *
 * Both the line and an event's data are capped. An event whose data goes
 * past a cap (a data line longer than the line cap, or data lines adding up
 * to more than the event cap) is dropped, not fatal: the callback gets it
 * with data NULL and len 0, so the caller can decide (a Responses stream can
 * do without its long response.completed; see wire.h), and the parser goes
 * on. Other lines past the line cap (a comment, an unknown field) are
 * skipped. The defaults leave room for a tool call's arguments at the
 * wire.h cap (WIRE_MAX_ARGS), escaped once more inside a chunk. */
#ifndef BERNSTEIN_RUNNER_SSE_H
#define BERNSTEIN_RUNNER_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/sbuf.h"

#define SSE_DEFAULT_MAX_LINE  (72 * 1024 * 1024)
#define SSE_DEFAULT_MAX_EVENT (72 * 1024 * 1024)
#define SSE_MAX_EVENT_NAME    128

/* One event. data is NUL-terminated (it may contain no NUL: data with a NUL
 * byte is passed with its length), or NULL (len 0) for an event dropped over
 * a cap. Return 0 to go on, a negative errno to stop: sse_feed() returns it. */
typedef int sse_event_fn(void *userdata, const char *event, const char *data, size_t len);

struct sse_parser {
	struct sbuf line;
	struct sbuf data;
	char event[SSE_MAX_EVENT_NAME + 1];
	char last_id[SSE_MAX_EVENT_NAME + 1];
	bool has_data;	 /* at least one data line in the current event */
	bool cr_pending; /* the previous chunk ended in CR */
	bool started;	 /* past the (optional) BOM */
	bool line_over;	 /* the current line went past the cap: the rest is skipped */
	bool drop_event; /* the current event's data went past a cap */
	size_t dropped;	 /* events dropped so far */
	int error;	 /* sticky error, 0 when fine */
	size_t events;	 /* dispatched so far */
	sse_event_fn *fn;
	void *userdata;
};

/* max_line / max_event 0 = the defaults above. */
void sse_init(struct sse_parser *p, size_t max_line, size_t max_event, sse_event_fn *fn,
	      void *userdata);
int sse_feed(struct sse_parser *p, const char *buf, size_t n);
/* End of stream: a final line without a line end is processed, then returns
 * 0, or 1 when an event was left without its terminating blank line (so the
 * caller can tell a cut stream), or the sticky error. */
int sse_finish(struct sse_parser *p);
void sse_release(struct sse_parser *p);

#endif
