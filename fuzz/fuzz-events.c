/* Fuzz target for the dialect readers (adapter/dialect.h). The first byte
 * picks the dialect (modulo the number of dialects); the rest is split at
 * newlines into lines, as the supervisor frames them, and every line goes to
 * dialect_feed_line() and to dialect_feed_stderr(). Properties, besides never
 * crashing:
 *   - a line returns 0, -EBADMSG or -ENOBUFS, and a negative return comes
 *     with a located diagnostic;
 *   - every event serializes (event_to_json) to one line that parses back,
 *     strictly, as a JSON object of the same kind; event_describe() never
 *     leaves a control byte;
 *   - the state counts every line, announces at most one session, and the
 *     outcome of the tally is a valid outcome. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/dialect.h"
#include "adapter/events.h"
#include "adapter/outcome.h"
#include "adapter/ratelimit.h"
#include "fuzz/fuzz.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/banned.h"

struct seen {
	struct outcome_inputs tally;
	unsigned sessions;
};

static void on_event(void *userdata, const struct event *ev)
{
	struct seen *s = userdata;
	struct sbuf sb = SBUF_INIT(8u << 20);
	char human[256];
	json_t *j = NULL;
	size_t i;

	if (event_to_json(ev, 1, &sb) != 0 || sb.len < 2 || sb.buf[sb.len - 1] != '\n' ||
	    memchr(sb.buf, '\n', sb.len - 1))
		__builtin_trap();
	if (json_parse_strict("event", sb.buf, sb.len, &j, NULL) < 0 || !json_is_object(j) ||
	    !json_is_string(json_object_get(j, "kind")) ||
	    strcmp(json_string_value(json_object_get(j, "kind")), event_kind_to_string(ev->kind)))
		__builtin_trap();
	json_decref(j);
	sbuf_release(&sb);

	(void)event_describe(ev, human, sizeof(human));
	for (i = 0; human[i]; i++)
		if ((unsigned char)human[i] < 0x20)
			__builtin_trap();
	if (ev->kind == EVENT_SESSION_STARTED)
		s->sessions++;
	outcome_observe(&s->tally, ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dialect_state st;
	struct seen s;
	struct event_sink sink = {on_event, &s};
	enum dialect d;
	const char *text;
	size_t pos = 0, len;
	uint64_t lines = 0;
	char why[256];
	enum outcome o;

	if (size < 1)
		return 0;
	d = (enum dialect)(data[0] % _DIALECT_MAX);
	text = (const char *)data + 1;
	len = size - 1;
	dialect_state_init(&st, d);
	memset(&s, 0, sizeof(s));
	outcome_inputs_init(&s.tally, d);

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		size_t n = end - pos;
		char *line = malloc(n + 1);
		struct ratelimit_hint hint;
		struct diag diag;
		int r;

		if (!line)
			return 0;
		memcpy(line, text + pos, n);
		line[n] = '\0';
		diag_clear(&diag);
		r = dialect_feed_line(&st, line, n, &sink, &diag);
		if (r != 0 && r != -EBADMSG && r != -ENOBUFS)
			__builtin_trap();
		if (r < 0 && (!diag.msg[0] || diag.line != st.line_no))
			__builtin_trap();
		(void)dialect_feed_stderr(&st, line, n, &sink);
		(void)ratelimit_parse_hint(line, n, &hint);
		(void)ratelimit_http_status(line, n, true);
		free(line);
		lines++;
		pos = end + 1;
	}
	if (st.line_no != lines || st.err_line_no != lines || s.sessions > 1)
		__builtin_trap();
	s.tally.exit_code = data[0] >> 4;
	o = outcome_classify_why(&s.tally, why, sizeof(why));
	if ((int)o < 0 || o >= _OUTCOME_MAX || !why[0])
		__builtin_trap();
	dialect_state_release(&st);
	return 0;
}
