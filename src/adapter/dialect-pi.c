/* The pi dialect: pi -p ... --mode json.
 *
 *   session                      -> session_started (id)
 *   agent_start, turn_start, turn_end, message_start, message_update,
 *   tool_execution_update        -> nothing (the whole message follows)
 *   message_end role=assistant   -> text per text block; usage (messages add
 *                                   up: usage.input/output/cacheRead,
 *                                   usage.cost.total); stopReason "error" or
 *                                   "aborted" -> error (errorMessage; its
 *                                   leading HTTP status) + rate_limited
 *   message_end other roles      -> nothing
 *   tool_execution_start         -> tool_call (toolName, toolCallId, args)
 *   tool_execution_end           -> tool_result (result.content text, isError)
 *   auto_retry_start             -> warning (+ rate_limited)
 *   agent_end                    -> result: failed when the last assistant
 *                                   message stopped with "error"/"aborted"
 *                                   (pi exits 0 on an API error)
 *   anything else                -> unknown */
#include <jansson.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/sbuf.h"
#include "util/banned.h"

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static bool failed_stop(const char *reason)
{
	return streq(reason, "error") || streq(reason, "aborted");
}

static int error_status(const char *msg)
{
	return msg ? ratelimit_http_status(msg, strlen(msg), true) : 0;
}

static void pi_message_end(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			   const char *type)
{
	json_t *msg = dj_obj(o, "message");
	json_t *usage, *b;
	const char *stop;
	size_t i;

	if (!msg || !streq(dj_str(msg, "role"), "assistant"))
		return;
	json_array_foreach(dj_arr(msg, "content"), i, b)
	{
		if (streq(dj_str(b, "type"), "text"))
			dialect_text(st, sink, type, dj_str(b, "text"), false);
	}
	usage = dj_obj(msg, "usage");
	if (usage) {
		json_t *cost = dj_obj(usage, "cost");

		dialect_usage_add(st, dj_int(usage, "input"), dj_int(usage, "output"),
				  dj_int(usage, "cacheRead"), cost ? dj_real(cost, "total") : -1);
		dialect_usage_emit(st, sink, type);
	}
	stop = dj_str(msg, "stopReason");
	if (failed_stop(stop)) {
		const char *em = dj_str(msg, "errorMessage");

		dialect_error(st, sink, type, em ? em : stop, stop, error_status(em), false);
	}
}

static void pi_agent_end(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			 const char *type)
{
	struct sbuf text = SBUF_INIT(EVENT_FIELD_MAX + 1);
	json_t *msgs = dj_arr(o, "messages");
	json_t *last = NULL, *m;
	const char *stop = NULL, *em = NULL;
	struct event ev;
	size_t i;

	json_array_foreach(msgs, i, m)
	{
		if (streq(dj_str(m, "role"), "assistant"))
			last = m;
	}
	if (last) {
		json_t *b;

		stop = dj_str(last, "stopReason");
		em = dj_str(last, "errorMessage");
		json_array_foreach(dj_arr(last, "content"), i, b)
		{
			if (!streq(dj_str(b, "type"), "text") || !dj_str(b, "text"))
				continue;
			if (text.len)
				dialect_sbuf_head(&text, "\n", 1);
			dialect_sbuf_head(&text, dj_str(b, "text"), strlen(dj_str(b, "text")));
		}
	}
	event_init(&ev, EVENT_RESULT);
	ev.type = type;
	ev.status = stop;
	ev.is_error = !last || failed_stop(stop);
	if (ev.is_error) {
		ev.message = em ? em : (last ? stop : "no assistant message");
		ev.http_status = error_status(em);
	}
	ev.text = text.len ? text.buf : NULL;
	dialect_emit(st, sink, &ev);
	sbuf_release(&text);
}

int dialect_pi_feed_line(struct dialect_state *st, const char *line, size_t len,
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
	} else if (streq(type, "session")) {
		dialect_session(st, sink, type, dj_str(o, "id"), NULL);
	} else if (streq(type, "agent_start") || streq(type, "turn_start") ||
		   streq(type, "turn_end") || streq(type, "message_start") ||
		   streq(type, "message_update") || streq(type, "tool_execution_update")) {
		/* nothing new */
	} else if (streq(type, "message_end")) {
		pi_message_end(st, sink, o, type);
	} else if (streq(type, "tool_execution_start")) {
		dialect_tool_call(st, sink, type, dj_str(o, "toolName"), dj_str(o, "toolCallId"),
				  json_object_get(o, "args"));
	} else if (streq(type, "tool_execution_end")) {
		struct sbuf out = SBUF_INIT(EVENT_FIELD_MAX + 1);
		json_t *res = json_object_get(o, "result");

		if (json_is_object(res))
			dialect_content_text(json_object_get(res, "content"), &out);
		else
			dialect_content_text(res, &out);
		dialect_tool_result(st, sink, type, dj_str(o, "toolName"), dj_str(o, "toolCallId"),
				    out.len ? out.buf : NULL, dj_true(o, "isError"));
		sbuf_release(&out);
	} else if (streq(type, "auto_retry_start")) {
		const char *em = dj_str(o, "errorMessage");
		struct event ev;

		event_init(&ev, EVENT_WARNING);
		ev.type = type;
		ev.message = em ? em : "retrying";
		ev.http_status = error_status(em);
		dialect_emit(st, sink, &ev);
		(void)dialect_rate_check(st, sink, type, em, error_status(em), false);
	} else if (streq(type, "agent_end")) {
		pi_agent_end(st, sink, o, type);
	} else {
		dialect_unknown(st, sink, type, line, len, "unknown event type");
	}
	json_decref(o);
	return 0;
}
