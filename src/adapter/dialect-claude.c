/* The claude dialect: Claude Code's and Qwen Code's stream-json
 * (claude -p --output-format stream-json --verbose; qwen -o stream-json).
 *
 *   system/init      -> session_started (session_id, model)
 *   system/api_retry -> warning (+ rate_limited when it is one)
 *   system/error     -> error
 *   assistant        -> text per text block, tool_call per tool_use block;
 *                       a provider error shown as text ("API Error: 400 ...",
 *                       is_api_error_message) -> error (+ rate_limited)
 *   user             -> tool_result per tool_result block
 *   result           -> usage (run totals), rate_limited when it is one, result
 *   stream_event     -> nothing (partial-message deltas; the whole message follows)
 *   anything else    -> unknown
 * The first session_id seen on any event announces the session if system/init
 * did not. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/sbuf.h"
#include "util/banned.h"

static void claude_assistant(struct dialect_state *st, const struct event_sink *sink,
			     const json_t *o, const char *type)
{
	json_t *msg = dj_obj(o, "message");
	json_t *content = msg ? dj_arr(msg, "content") : NULL;
	bool api_error = dj_true(o, "is_api_error_message");
	const char *err = dj_str(o, "error"); /* "rate_limit", "authentication_failed"... */
	int64_t status = dj_int(o, "api_error_status");
	int http = status > 0 && status < 1000 ? (int)status : 0;
	bool error_said = false;
	json_t *b;
	size_t i;

	json_array_foreach(content, i, b)
	{
		const char *bt = dj_str(b, "type");

		if (!bt)
			continue;
		if (strcmp(bt, "text") == 0) {
			const char *t = dj_str(b, "text");

			if (t && (api_error || dialect_is_api_error_text(t))) {
				int h = http ? http : ratelimit_http_status(t, strlen(t), false);

				dialect_error(st, sink, type, t, err ? err : "api_error", h,
					      err && strcmp(err, "rate_limit") == 0);
				error_said = true;
			} else {
				dialect_text(st, sink, type, t, false);
			}
		} else if (strcmp(bt, "tool_use") == 0 || strcmp(bt, "server_tool_use") == 0 ||
			   strcmp(bt, "mcp_tool_use") == 0) {
			dialect_tool_call(st, sink, type, dj_str(b, "name"), dj_str(b, "id"),
					  json_object_get(b, "input"));
		}
		/* thinking, redacted_thinking: not output */
	}
	if (api_error && !error_said)
		dialect_error(st, sink, type, "API error", err ? err : "api_error", http,
			      err && strcmp(err, "rate_limit") == 0);
}

static void claude_user(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			const char *type)
{
	json_t *msg = dj_obj(o, "message");
	json_t *content = msg ? dj_arr(msg, "content") : NULL;
	json_t *b;
	size_t i;

	json_array_foreach(content, i, b)
	{
		struct sbuf text = SBUF_INIT(EVENT_FIELD_MAX + 1);
		const char *bt = dj_str(b, "type");

		if (!bt || strcmp(bt, "tool_result") != 0)
			continue;
		dialect_content_text(json_object_get(b, "content"), &text);
		dialect_tool_result(st, sink, type, NULL, dj_str(b, "tool_use_id"), text.buf,
				    dj_true(b, "is_error"));
		sbuf_release(&text);
	}
}

static void claude_result(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			  const char *type)
{
	struct sbuf errors = SBUF_INIT(EVENT_FIELD_MAX + 1);
	const char *subtype = dj_str(o, "subtype");
	const char *text = dj_str(o, "result");
	json_t *err = dj_obj(o, "error");
	json_t *usage = dj_obj(o, "usage");
	json_t *denials = dj_arr(o, "permission_denials");
	int64_t status = dj_int(o, "api_error_status");
	int http = status > 0 && status < 1000 ? (int)status : 0;
	bool is_error = dj_true(o, "is_error");
	const char *message = NULL;
	struct event ev;

	if (subtype && strncmp(subtype, "error", 5) == 0)
		is_error = true;
	if (http >= 400)
		is_error = true;
	/* qwen 0.15 says success, is_error false, result "[API Error: 400 ...]" */
	if (dialect_is_api_error_text(text))
		is_error = true;
	if (is_error) {
		if (err)
			message = dj_str(err, "message");
		if (!message && dj_arr(o, "errors")) {
			dialect_content_text(dj_arr(o, "errors"), &errors);
			if (errors.len)
				message = errors.buf;
		}
		if (!message)
			message = text;
		if (!message)
			message = subtype ? subtype : "the agent reported an error";
		if (!http)
			http = ratelimit_http_status(message, strlen(message), false);
	}
	if (usage)
		dialect_usage_set(st, dj_int(usage, "input_tokens"), dj_int(usage, "output_tokens"),
				  dj_int(usage, "cache_read_input_tokens"),
				  dj_real(o, "total_cost_usd"));
	else if (dj_real(o, "total_cost_usd") >= 0)
		dialect_usage_set(st, -1, -1, -1, dj_real(o, "total_cost_usd"));
	dialect_usage_emit(st, sink, type);
	if (is_error)
		(void)dialect_rate_check(st, sink, type, message, http, false);

	event_init(&ev, EVENT_RESULT);
	ev.type = type;
	ev.status = subtype;
	ev.is_error = is_error;
	ev.http_status = is_error ? http : 0;
	ev.num_turns = dj_int(o, "num_turns");
	ev.duration_ms = dj_int(o, "duration_ms");
	ev.permission_denials = denials ? (int64_t)json_array_size(denials) : EVENT_UNSET;
	ev.text = text;
	ev.message = message;
	dialect_emit(st, sink, &ev);
	sbuf_release(&errors);
}

static void claude_system(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			  const char *type, const char *line, size_t len)
{
	const char *subtype = dj_str(o, "subtype");

	if (subtype && strcmp(subtype, "init") == 0) {
		/* announced by the caller with the model */
		return;
	}
	if (subtype && strcmp(subtype, "api_retry") == 0) {
		int64_t status = dj_int(o, "error_status");
		int http = status > 0 && status < 1000 ? (int)status : 0;
		const char *err = dj_str(o, "error");
		struct event ev;
		char msg[256];

		int64_t attempt = dj_int(o, "attempt"), max = dj_int(o, "max_retries");

		if (attempt >= 0 && max >= 0)
			(void)snprintf(msg, sizeof(msg), "API retry %lld of %lld%s%s",
				       (long long)attempt, (long long)max, err ? ": " : "",
				       err ? err : "");
		else
			(void)snprintf(msg, sizeof(msg), "API retry%s%s", err ? ": " : "",
				       err ? err : "");
		event_init(&ev, EVENT_WARNING);
		ev.type = type;
		ev.message = msg;
		ev.http_status = http;
		dialect_emit(st, sink, &ev);
		(void)dialect_rate_check(st, sink, type, err, http,
					 err && strcmp(err, "rate_limit") == 0);
		return;
	}
	if (subtype && strcmp(subtype, "error") == 0) {
		const char *m = dj_str(o, "message");

		dialect_error(st, sink, type, m ? m : "system error", "system", 0, false);
		return;
	}
	dialect_unknown(st, sink, type, line, len, "unknown system subtype");
}

int dialect_claude_feed_line(struct dialect_state *st, const char *line, size_t len,
			     const struct event_sink *sink, struct diag *reterr)
{
	json_t *o = NULL;
	const char *type;
	int r;

	r = dialect_json_line(st, line, len, sink, reterr, &o);
	if (r <= 0)
		return r;
	type = dj_str(o, "type");
	if (type && strcmp(type, "system") == 0 && dj_str(o, "subtype") &&
	    strcmp(dj_str(o, "subtype"), "init") == 0)
		dialect_session(st, sink, type, dj_str(o, "session_id"), dj_str(o, "model"));
	else
		dialect_session(st, sink, type, dj_str(o, "session_id"), NULL);

	if (!type)
		dialect_unknown(st, sink, NULL, line, len, "no type");
	else if (strcmp(type, "assistant") == 0)
		claude_assistant(st, sink, o, type);
	else if (strcmp(type, "user") == 0)
		claude_user(st, sink, o, type);
	else if (strcmp(type, "result") == 0)
		claude_result(st, sink, o, type);
	else if (strcmp(type, "system") == 0)
		claude_system(st, sink, o, type, line, len);
	else if (strcmp(type, "stream_event") != 0)
		dialect_unknown(st, sink, type, line, len, "unknown event type");
	json_decref(o);
	return 0;
}
