/* Fuzz target for the hooks channel (adapter/dialect-hooks.c): what an
 * agent's hook command hands `bernstein hook-post` on stdin, and what reaches
 * the supervisor's socket. The input goes whole through
 * dialect_hooks_payload() (with an event name taken from its first bytes),
 * and the line it builds, plus every line of the input as is, goes to the
 * hooks dialect. Properties, besides never crashing:
 *   - the payload is one line, at most DIALECT_HOOKS_LINE_MAX bytes, that
 *     parses strictly as a JSON object, and the dialect reads it with 0;
 *   - a raw line returns 0, -EBADMSG or -ENOBUFS, a negative return with a
 *     located diagnostic;
 *   - every event serializes to one JSON line of its kind, and at most one
 *     session is announced. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/dialect.h"
#include "adapter/events.h"
#include "fuzz/fuzz.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/banned.h"

static void on_event(void *userdata, const struct event *ev)
{
	unsigned *sessions = userdata;
	struct sbuf sb = SBUF_INIT(8u << 20);
	json_t *j = NULL;

	if (event_to_json(ev, 1, &sb) != 0 || sb.len < 2 || sb.buf[sb.len - 1] != '\n' ||
	    memchr(sb.buf, '\n', sb.len - 1))
		__builtin_trap();
	if (json_parse_strict("event", sb.buf, sb.len, &j, NULL) < 0 || !json_is_object(j) ||
	    strcmp(json_string_value(json_object_get(j, "kind")), event_kind_to_string(ev->kind)))
		__builtin_trap();
	json_decref(j);
	sbuf_release(&sb);
	if (ev->kind == EVENT_SESSION_STARTED)
		(*sessions)++;
}

static void feed(struct dialect_state *st, const char *line, size_t n,
		 const struct event_sink *sink, bool must_read)
{
	struct diag d;
	int r;

	diag_clear(&d);
	r = dialect_feed_line(st, line, n, sink, &d);
	if (must_read && r != 0)
		__builtin_trap();
	if (r != 0 && r != -EBADMSG && r != -ENOBUFS)
		__builtin_trap();
	if (r < 0 && (!d.msg[0] || d.line != st->line_no))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	struct dialect_state st;
	unsigned sessions = 0;
	struct event_sink sink = {on_event, &sessions};
	const char *text = (const char *)data;
	char event[16];
	size_t pos = 0, ev_len;
	json_t *j = NULL;

	/* the event name: up to the first NUL within 15 bytes, when there is one */
	ev_len = strnlen(text, size < sizeof(event) ? size : sizeof(event) - 1);
	memcpy(event, text, ev_len);
	event[ev_len] = '\0';

	if (dialect_hooks_payload(text, size, ev_len < size ? event : NULL, &out) != 0)
		__builtin_trap();
	if (out.len < 3 || out.buf[out.len - 1] != '\n' || memchr(out.buf, '\n', out.len - 1) ||
	    out.len - 1 > DIALECT_HOOKS_LINE_MAX)
		__builtin_trap();
	if (json_parse_strict("payload", out.buf, out.len, &j, NULL) < 0 || !json_is_object(j))
		__builtin_trap();
	json_decref(j);

	dialect_state_init(&st, DIALECT_HOOKS);
	feed(&st, out.buf, out.len - 1, &sink, true);
	sbuf_release(&out);

	while (pos < size) {
		const char *nl = memchr(text + pos, '\n', size - pos);
		size_t end = nl ? (size_t)(nl - text) : size;
		size_t n = end - pos;
		char *line = malloc(n + 1);

		if (!line)
			return 0;
		memcpy(line, text + pos, n);
		line[n] = '\0';
		feed(&st, line, n, &sink, false);
		free(line);
		pos = end + 1;
	}
	if (sessions > 1)
		__builtin_trap();
	dialect_state_release(&st);
	return 0;
}
