/* The plain dialects, poll-pty and none: no parsing. Every non-blank line is
 * an EVENT_TEXT (a trailing '\r' dropped); a line that matches the rate-limit
 * needles (adapter/ratelimit.h) is also an EVENT_RATE_LIMITED. The outcome
 * of such a run rests on its exit (adapter/outcome.h), which is why a
 * rate-limit line only decides anything when the run failed. */
#include <stdlib.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/xalloc.h"
#include "util/banned.h"

static bool blank_line(const char *line, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!strchr(" \t\r\n\v\f", line[i]) || line[i] == '\0')
			return false;
	return true;
}

int dialect_plain_text(struct dialect_state *st, const char *line, size_t len,
		       const struct event_sink *sink, struct diag *reterr)
{
	char *text;

	if (!line || blank_line(line, len))
		return 0;
	if (len > DIALECT_MAX_LINE) {
		dialect_unknown(st, sink, NULL, line, len, "line too long");
		diag_set(reterr, st->stream_name, (unsigned)st->line_no, 0,
			 "line of %zu bytes is longer than %u bytes, kept as unknown", len,
			 DIALECT_MAX_LINE);
		st->bad_lines++;
		return -ENOBUFS;
	}
	if (len && line[len - 1] == '\r')
		len--;
	text = xstrndup(line, len > EVENT_FIELD_MAX + 1 ? EVENT_FIELD_MAX + 1 : len);
	dialect_text(st, sink, NULL, text, false);
	(void)dialect_rate_check(st, sink, NULL, text, 0, false);
	free(text);
	return 0;
}

int dialect_plain_feed_line(struct dialect_state *st, const char *line, size_t len,
			    const struct event_sink *sink, struct diag *reterr)
{
	st->line_no++;
	return dialect_plain_text(st, line, len, sink, reterr);
}

/* ---- poll-pty in a terminal: the screen driver's reports ----
 *
 * With runtime.pty the agent's bytes never reach a dialect: the supervisor
 * keeps its screen (proc/ptydrive.h) and hands over the driver's own NDJSON
 * reports, one object with "pty" each:
 *   status      -> signal STATUS {"status": ...}
 *   permission  -> signal PERMISSION {"prompt","answer"}; a denied one is
 *                  also a refused tool_result (the outcome's permission
 *                  rule counts it)
 *   text        -> text (+ rate_limited when it reads like one)
 *   result      -> result (success: the screen said the turn is over) */
static void pty_signal(struct dialect_state *st, const struct event_sink *sink, const char *type,
		       const char *signal, json_t *o)
{
	struct event ev;
	char *payload;

	(void)json_object_del(o, "pty");
	payload = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	event_init(&ev, EVENT_SIGNAL);
	ev.type = type;
	ev.signal = signal;
	ev.payload = payload;
	dialect_emit(st, sink, &ev);
	free(payload);
}

int dialect_pty_feed_line(struct dialect_state *st, const char *line, size_t len,
			  const struct event_sink *sink, struct diag *reterr)
{
	json_t *o = NULL;
	const char *kind;
	struct event ev;
	int r;

	r = dialect_json_line(st, line, len, sink, reterr, &o);
	if (r <= 0)
		return r;
	kind = dj_str(o, "pty");
	if (!kind) {
		dialect_unknown(st, sink, NULL, line, len, "no \"pty\" member");
	} else if (strcmp(kind, "text") == 0 && dj_str(o, "text")) {
		dialect_text(st, sink, "text", dj_str(o, "text"), false);
		(void)dialect_rate_check(st, sink, "text", dj_str(o, "text"), 0, false);
	} else if (strcmp(kind, "status") == 0) {
		pty_signal(st, sink, "status", "STATUS", o);
	} else if (strcmp(kind, "permission") == 0) {
		bool denied = dj_str(o, "answer") && strcmp(dj_str(o, "answer"), "deny") == 0;
		char *prompt = xstrdup(dj_str(o, "prompt") ? dj_str(o, "prompt") : "");

		pty_signal(st, sink, "permission", "PERMISSION", o);
		if (denied) {
			event_init(&ev, EVENT_TOOL_RESULT);
			ev.type = "permission";
			ev.tool_name = "permission prompt";
			ev.tool_output = prompt;
			ev.is_error = true;
			ev.permission_denied = true;
			dialect_emit(st, sink, &ev);
		}
		free(prompt);
	} else if (strcmp(kind, "result") == 0) {
		event_init(&ev, EVENT_RESULT);
		ev.type = "result";
		ev.is_error = !dj_true(o, "ok");
		ev.status = ev.is_error ? "error" : "success";
		ev.message = dj_str(o, "by");
		dialect_emit(st, sink, &ev);
	} else {
		dialect_unknown(st, sink, kind, line, len, "unknown pty report");
	}
	json_decref(o);
	return 0;
}
