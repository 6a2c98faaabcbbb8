/* The runner dialect: the event lines of bernstein's built-in runner (the
 * openai_agents adapter; anchor-adapters.md section 6, src/runner/).
 *
 *   start        -> session_started (session_id, model)
 *   progress     -> text (message); with "retry": true a warning instead
 *                   (http_status, wait_ms), + rate_limited for a 429
 *   tool_call    -> tool_call (name, call_id or invocation_id, args)
 *   tool_result  -> tool_result (failed when status is "error"; output or error)
 *   usage        -> usage (run totals: input_tokens, output_tokens, cost_usd)
 *   completion   -> result (success when status is "done"; summary as text,
 *                   turns)
 *   error        -> error (kind, http_status, message) + rate_limited (kind
 *                   "rate_limit", HTTP 429, or the message says so)
 *   anything else -> unknown */
#include <jansson.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/banned.h"

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const char *call_id(const json_t *o)
{
	return dj_str(o, "call_id") ? dj_str(o, "call_id") : dj_str(o, "invocation_id");
}

/* The HTTP status the event states, else one found in the message. */
static int http_of(const json_t *o, const char *msg)
{
	int64_t v = dj_int(o, "http_status");

	if (v > 0 && v < 1000)
		return (int)v;
	return msg ? ratelimit_http_status(msg, strlen(msg), false) : 0;
}

static void runner_retry(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			 const char *type)
{
	const char *msg = dj_str(o, "message");
	int64_t wait_ms = dj_int(o, "wait_ms");
	struct event ev;

	event_init(&ev, EVENT_WARNING);
	ev.type = type;
	ev.message = msg ? msg : "retrying";
	ev.http_status = http_of(o, msg);
	dialect_emit(st, sink, &ev);
	if (ev.http_status == 429 || (msg && ratelimit_text_matches(msg, strlen(msg)))) {
		event_init(&ev, EVENT_RATE_LIMITED);
		ev.type = type;
		ev.message = msg;
		ev.http_status = http_of(o, msg);
		if (msg)
			(void)ratelimit_parse_hint(msg, strlen(msg), &ev.hint);
		if (wait_ms >= 0)
			ev.hint.retry_after_s = (wait_ms + 999) / 1000;
		dialect_emit(st, sink, &ev);
	}
}

int dialect_runner_feed_line(struct dialect_state *st, const char *line, size_t len,
			     const struct event_sink *sink, struct diag *reterr)
{
	json_t *o = NULL;
	const char *type;
	int r;

	r = dialect_json_line(st, line, len, sink, reterr, &o);
	if (r <= 0)
		return r;
	type = dj_str(o, "type");
	if (!type) {
		dialect_unknown(st, sink, NULL, line, len, "no type");
	} else if (streq(type, "start")) {
		dialect_session(st, sink, type, dj_str(o, "session_id"), dj_str(o, "model"));
	} else if (streq(type, "progress")) {
		if (dj_true(o, "retry"))
			runner_retry(st, sink, o, type);
		else
			dialect_text(st, sink, type, dj_str(o, "message"), false);
	} else if (streq(type, "tool_call")) {
		dialect_tool_call(st, sink, type, dj_str(o, "name"), call_id(o),
				  json_object_get(o, "args"));
	} else if (streq(type, "tool_result")) {
		const char *out = dj_str(o, "output");

		if (!out)
			out = dj_str(o, "error");
		dialect_tool_result(st, sink, type, dj_str(o, "name"), call_id(o), out,
				    streq(dj_str(o, "status"), "error"));
	} else if (streq(type, "usage")) {
		dialect_usage_set(st, dj_int(o, "input_tokens"), dj_int(o, "output_tokens"), -1,
				  dj_real(o, "cost_usd"));
		dialect_usage_emit(st, sink, type);
	} else if (streq(type, "completion")) {
		const char *status = dj_str(o, "status");
		struct event ev;

		event_init(&ev, EVENT_RESULT);
		ev.type = type;
		ev.status = status;
		ev.is_error = !streq(status, "done");
		ev.text = dj_str(o, "summary");
		ev.num_turns = dj_int(o, "turns");
		if (ev.is_error)
			ev.message = status ? status : "completion without a status";
		dialect_emit(st, sink, &ev);
	} else if (streq(type, "error")) {
		const char *msg = dj_str(o, "message");
		const char *kind = dj_str(o, "kind");

		dialect_error(st, sink, type, msg, kind, http_of(o, msg),
			      streq(kind, "rate_limit"));
	} else {
		dialect_unknown(st, sink, type, line, len, "unknown event type");
	}
	json_decref(o);
	return 0;
}
