/* The opencode dialect: opencode run --format json. Every event carries
 * sessionID; the first one announces the session.
 *
 *   step_start            -> nothing
 *   text                  -> text (part.text)
 *   reasoning             -> nothing
 *   tool_use              -> tool_call unless announced (part.tool,
 *                            part.callID, part.state.input); with
 *                            part.state.status "completed" also tool_result
 *                            (state.output), with "error" a failed one
 *                            (state.error); "pending"/"running" only announce
 *   step_finish           -> usage (steps add up: tokens.input/output,
 *                            tokens.cache.read, cost); with part.reason
 *                            "stop" also result (success): opencode has no
 *                            final event, its last step stops
 *   error                 -> error (error.name, error.data.message,
 *                            error.data.statusCode) + rate_limited
 *   anything else         -> unknown */
#include <jansson.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/banned.h"

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void opencode_tool(struct dialect_state *st, const struct event_sink *sink,
			  const json_t *part, const char *type)
{
	json_t *state = dj_obj(part, "state");
	const char *status = state ? dj_str(state, "status") : NULL;
	const char *id = dj_str(part, "callID");
	const char *name = dj_str(part, "tool");

	if (!dialect_tool_announced(st, id))
		dialect_tool_call(st, sink, type, name, id,
				  state ? json_object_get(state, "input") : NULL);
	if (streq(status, "completed"))
		dialect_tool_result(st, sink, type, name, id, dj_str(state, "output"), false);
	else if (streq(status, "error"))
		dialect_tool_result(st, sink, type, name, id, dj_str(state, "error"), true);
}

static void opencode_step_finish(struct dialect_state *st, const struct event_sink *sink,
				 const json_t *part, const char *type)
{
	json_t *tokens = dj_obj(part, "tokens");

	if (tokens || dj_real(part, "cost") >= 0) {
		json_t *cache = tokens ? dj_obj(tokens, "cache") : NULL;

		dialect_usage_add(st, tokens ? dj_int(tokens, "input") : -1,
				  tokens ? dj_int(tokens, "output") : -1,
				  cache ? dj_int(cache, "read") : -1, dj_real(part, "cost"));
		dialect_usage_emit(st, sink, type);
	}
	if (streq(dj_str(part, "reason"), "stop")) {
		struct event ev;

		event_init(&ev, EVENT_RESULT);
		ev.type = type;
		ev.status = "stop";
		dialect_emit(st, sink, &ev);
	}
}

static void opencode_error(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			   const char *type)
{
	json_t *err = dj_obj(o, "error");
	json_t *data = err ? dj_obj(err, "data") : NULL;
	const char *name = err ? dj_str(err, "name") : NULL;
	const char *msg = data ? dj_str(data, "message") : NULL;
	const char *body = data ? dj_str(data, "responseBody") : NULL;
	int64_t code = data ? dj_int(data, "statusCode") : EVENT_UNSET;
	int http = code > 0 && code < 1000 ? (int)code : 0;

	if (!msg)
		msg = name ? name : "error";
	if (!http)
		http = ratelimit_http_status(msg, strlen(msg), false);
	/* the response headers are not searched: every reply of a provider
	 * carries x-ratelimit-* headers */
	dialect_error(st, sink, type, msg, name, http,
		      body && ratelimit_text_matches(body, strlen(body)));
}

int dialect_opencode_feed_line(struct dialect_state *st, const char *line, size_t len,
			       const struct event_sink *sink, struct diag *reterr)
{
	json_t *o = NULL;
	json_t *part;
	const char *type;
	int r;

	r = dialect_json_line(st, line, len, sink, reterr, &o);
	if (r <= 0)
		return r;
	type = dj_str(o, "type");
	part = dj_obj(o, "part");
	dialect_session(st, sink, type, dj_str(o, "sessionID"), NULL);
	if (!type)
		dialect_unknown(st, sink, NULL, line, len, "no type");
	else if (streq(type, "step_start") || streq(type, "reasoning"))
		; /* nothing new */
	else if (streq(type, "text"))
		dialect_text(st, sink, type, part ? dj_str(part, "text") : NULL, false);
	else if (streq(type, "tool_use") && part)
		opencode_tool(st, sink, part, type);
	else if (streq(type, "step_finish") && part)
		opencode_step_finish(st, sink, part, type);
	else if (streq(type, "error"))
		opencode_error(st, sink, o, type);
	else
		dialect_unknown(st, sink, type, line, len, "unknown event type");
	json_decref(o);
	return 0;
}
