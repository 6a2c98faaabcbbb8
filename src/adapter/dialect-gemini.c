/* The gemini dialect: gemini -p ... -o stream-json.
 *
 *   init                    -> session_started (session_id, model)
 *   message role=assistant  -> text (delta: true when gemini streams chunks)
 *   message role=user       -> nothing (the prompt echoed)
 *   tool_use                -> tool_call (tool_name, tool_id, parameters)
 *   tool_result             -> tool_result (failed unless status "success";
 *                              output, or error.message)
 *   error                   -> warning (severity "warning") or error (+ rate_limited)
 *   result                  -> usage (stats totals), rate_limited when it is
 *                              one, result (failed unless status "success")
 *   anything else           -> unknown */
#include <jansson.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/banned.h"

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void gemini_result(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			  const char *type)
{
	const char *status = dj_str(o, "status");
	json_t *stats = dj_obj(o, "stats");
	json_t *err = dj_obj(o, "error");
	bool is_error = !streq(status, "success");
	const char *msg = NULL;
	struct event ev;
	int http = 0;

	if (stats) {
		dialect_usage_set(st, dj_int(stats, "input_tokens"), dj_int(stats, "output_tokens"),
				  dj_int(stats, "cached"), -1);
		dialect_usage_emit(st, sink, type);
	}
	if (is_error) {
		msg = err ? dj_str(err, "message") : NULL;
		if (!msg)
			msg = status ? status : "the agent reported an error";
		http = ratelimit_http_status(msg, strlen(msg), false);
		(void)dialect_rate_check(st, sink, type, msg, http, false);
	}
	event_init(&ev, EVENT_RESULT);
	ev.type = type;
	ev.status = status;
	ev.is_error = is_error;
	ev.http_status = http;
	ev.message = msg;
	ev.duration_ms = stats ? dj_int(stats, "duration_ms") : EVENT_UNSET;
	dialect_emit(st, sink, &ev);
}

int dialect_gemini_feed_line(struct dialect_state *st, const char *line, size_t len,
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
	} else if (streq(type, "init")) {
		dialect_session(st, sink, type, dj_str(o, "session_id"), dj_str(o, "model"));
	} else if (streq(type, "message")) {
		if (streq(dj_str(o, "role"), "assistant"))
			dialect_text(st, sink, type, dj_str(o, "content"), dj_true(o, "delta"));
	} else if (streq(type, "tool_use")) {
		dialect_tool_call(st, sink, type, dj_str(o, "tool_name"), dj_str(o, "tool_id"),
				  json_object_get(o, "parameters"));
	} else if (streq(type, "tool_result")) {
		json_t *err = dj_obj(o, "error");
		const char *out = dj_str(o, "output");

		if (!out && err)
			out = dj_str(err, "message");
		dialect_tool_result(st, sink, type, NULL, dj_str(o, "tool_id"), out,
				    !streq(dj_str(o, "status"), "success"));
	} else if (streq(type, "error")) {
		const char *msg = dj_str(o, "message");

		if (streq(dj_str(o, "severity"), "warning")) {
			struct event ev;

			event_init(&ev, EVENT_WARNING);
			ev.type = type;
			ev.message = msg ? msg : "warning";
			dialect_emit(st, sink, &ev);
		} else {
			dialect_error(st, sink, type, msg, dj_str(o, "severity"),
				      msg ? ratelimit_http_status(msg, strlen(msg), false) : 0,
				      false);
		}
	} else if (streq(type, "result")) {
		gemini_result(st, sink, o, type);
	} else {
		dialect_unknown(st, sink, type, line, len, "unknown event type");
	}
	json_decref(o);
	return 0;
}
