/* The codex dialect: codex exec --json.
 *
 *   thread.started             -> session_started (thread_id; resume takes it)
 *   turn.started               -> nothing
 *   item.started  (tool item)  -> tool_call
 *   item.completed agent_message -> text
 *   item.completed (tool item) -> tool_call unless announced, then tool_result
 *   item.completed error       -> warning (codex's non-fatal notices)
 *   item.* reasoning/todo_list, item.updated -> nothing
 *   turn.completed             -> usage (turns add up), result (success)
 *   turn.failed                -> rate_limited when it is one, result (error)
 *   error                      -> error (+ rate_limited)
 *   anything else              -> unknown
 * Tool items: command_execution (args {"command"}; failed when its status is
 * failed/declined or its exit code is not 0), file_change (args {"changes"}),
 * mcp_tool_call (args = its arguments), web_search (args {"query"}). Codex
 * often wraps the provider's JSON error body in the message; the inner
 * error.message is reported, the whole text is searched for rate limits. */
#include <jansson.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/sbuf.h"
#include "util/banned.h"

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static bool is_tool_item(const char *it)
{
	return streq(it, "command_execution") || streq(it, "file_change") ||
	       streq(it, "mcp_tool_call") || streq(it, "web_search");
}

/* The arguments of a tool item (new reference, or NULL). */
static json_t *item_args(const json_t *item, const char *it)
{
	json_t *args;

	if (streq(it, "mcp_tool_call")) {
		args = json_object_get(item, "arguments");
		return args ? json_incref(args) : NULL;
	}
	args = json_object();
	if (streq(it, "command_execution") && json_object_get(item, "command"))
		(void)json_object_set(args, "command", json_object_get(item, "command"));
	else if (streq(it, "file_change") && json_object_get(item, "changes"))
		(void)json_object_set(args, "changes", json_object_get(item, "changes"));
	else if (streq(it, "web_search") && json_object_get(item, "query"))
		(void)json_object_set(args, "query", json_object_get(item, "query"));
	return args;
}

static const char *item_name(const json_t *item, const char *it)
{
	if (streq(it, "mcp_tool_call") && dj_str(item, "tool"))
		return dj_str(item, "tool");
	return it;
}

static void codex_tool_result(struct dialect_state *st, const struct event_sink *sink,
			      const json_t *item, const char *it, const char *type)
{
	struct sbuf out = SBUF_INIT(EVENT_FIELD_MAX + 1);
	const char *status = dj_str(item, "status");
	bool is_error = streq(status, "failed") || streq(status, "declined");
	json_t *v;
	size_t i;

	if (streq(it, "command_execution")) {
		json_t *code = json_object_get(item, "exit_code");

		if (json_is_integer(code) && json_integer_value(code) != 0)
			is_error = true;
		if (dj_str(item, "aggregated_output"))
			dialect_sbuf_head(&out, dj_str(item, "aggregated_output"),
					  strlen(dj_str(item, "aggregated_output")));
	} else if (streq(it, "file_change")) {
		json_array_foreach(dj_arr(item, "changes"), i, v)
		{
			const char *kind = dj_str(v, "kind"), *path = dj_str(v, "path");

			if (out.len)
				dialect_sbuf_head(&out, "\n", 1);
			dialect_sbuf_head(&out, kind ? kind : "change",
					  strlen(kind ? kind : "change"));
			dialect_sbuf_head(&out, " ", 1);
			dialect_sbuf_head(&out, path ? path : "?", strlen(path ? path : "?"));
		}
	} else if (streq(it, "mcp_tool_call")) {
		json_t *err = dj_obj(item, "error");
		json_t *res = dj_obj(item, "result");

		if (err && dj_str(err, "message"))
			dialect_sbuf_head(&out, dj_str(err, "message"),
					  strlen(dj_str(err, "message")));
		else if (res)
			dialect_content_text(json_object_get(res, "content"), &out);
		if (err)
			is_error = true;
	}
	dialect_tool_result(st, sink, type, item_name(item, it), dj_str(item, "id"),
			    out.len ? out.buf : NULL, is_error);
	sbuf_release(&out);
}

static void codex_item(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
		       const char *type, bool completed, const char *line, size_t len)
{
	json_t *item = dj_obj(o, "item");
	const char *it = item ? dj_str(item, "type") : NULL;

	if (!it) {
		dialect_unknown(st, sink, type, line, len, "item without a type");
		return;
	}
	if (streq(it, "agent_message")) {
		if (completed)
			dialect_text(st, sink, type, dj_str(item, "text"), false);
		return;
	}
	if (streq(it, "reasoning") || streq(it, "todo_list"))
		return;
	if (streq(it, "error")) {
		struct event ev;

		if (!completed)
			return;
		event_init(&ev, EVENT_WARNING);
		ev.type = type;
		ev.message = dj_str(item, "message") ? dj_str(item, "message") : "error item";
		dialect_emit(st, sink, &ev);
		return;
	}
	if (!is_tool_item(it)) {
		dialect_unknown(st, sink, type, line, len, "unknown item type");
		return;
	}
	if (!dialect_tool_announced(st, dj_str(item, "id"))) {
		json_t *args = item_args(item, it);

		dialect_tool_call(st, sink, type, item_name(item, it), dj_str(item, "id"), args);
		json_decref(args);
	}
	if (completed)
		codex_tool_result(st, sink, item, it, type);
}

/* Codex puts the provider's JSON error body in its message: report the inner
 * error.message (and its type as the kind) when there is one. hold keeps the
 * parsed body alive; the caller json_decref()s it. */
static const char *unwrap(const char *msg, json_t **hold, const char **ret_kind)
{
	json_error_t jerr;
	json_t *body, *err;

	*hold = NULL;
	if (!msg || msg[0] != '{')
		return msg;
	body = json_loads(msg, JSON_REJECT_DUPLICATES, &jerr);
	err = body ? dj_obj(body, "error") : NULL;
	if (!err || !dj_str(err, "message")) {
		json_decref(body);
		return msg;
	}
	*hold = body;
	if (dj_str(err, "type"))
		*ret_kind = dj_str(err, "type");
	else if (dj_str(err, "code"))
		*ret_kind = dj_str(err, "code");
	return dj_str(err, "message");
}

static void codex_failed(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			 const char *type)
{
	json_t *err = dj_obj(o, "error");
	const char *raw = err ? dj_str(err, "message") : NULL;
	const char *kind = NULL, *msg;
	json_t *hold = NULL;
	struct event ev;
	int http;

	msg = unwrap(raw, &hold, &kind);
	if (!msg)
		msg = "turn failed";
	http = ratelimit_http_status(raw ? raw : msg, strlen(raw ? raw : msg), false);
	(void)dialect_rate_check(st, sink, type, raw ? raw : msg, http, false);
	event_init(&ev, EVENT_RESULT);
	ev.type = type;
	ev.status = "failed";
	ev.is_error = true;
	ev.http_status = http;
	ev.message = msg;
	dialect_emit(st, sink, &ev);
	json_decref(hold);
}

static void codex_error(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			const char *type)
{
	const char *raw = dj_str(o, "message");
	const char *kind = NULL, *msg;
	json_t *hold = NULL;
	int http;

	msg = unwrap(raw, &hold, &kind);
	if (!msg)
		msg = "error";
	http = ratelimit_http_status(raw ? raw : msg, strlen(raw ? raw : msg), false);
	dialect_error(st, sink, type, msg, kind, http,
		      raw && ratelimit_text_matches(raw, strlen(raw)));
	json_decref(hold);
}

int dialect_codex_feed_line(struct dialect_state *st, const char *line, size_t len,
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
	} else if (streq(type, "thread.started")) {
		dialect_session(st, sink, type, dj_str(o, "thread_id"), NULL);
	} else if (streq(type, "turn.started") || streq(type, "item.updated")) {
		/* nothing new */
	} else if (streq(type, "item.started")) {
		codex_item(st, sink, o, type, false, line, len);
	} else if (streq(type, "item.completed")) {
		codex_item(st, sink, o, type, true, line, len);
	} else if (streq(type, "turn.completed")) {
		json_t *u = dj_obj(o, "usage");
		struct event ev;

		if (u) {
			dialect_usage_add(st, dj_int(u, "input_tokens"), dj_int(u, "output_tokens"),
					  dj_int(u, "cached_input_tokens"), -1);
			dialect_usage_emit(st, sink, type);
		}
		event_init(&ev, EVENT_RESULT);
		ev.type = type;
		ev.status = "completed";
		dialect_emit(st, sink, &ev);
	} else if (streq(type, "turn.failed")) {
		codex_failed(st, sink, o, type);
	} else if (streq(type, "error")) {
		codex_error(st, sink, o, type);
	} else {
		dialect_unknown(st, sink, type, line, len, "unknown event type");
	}
	json_decref(o);
	return 0;
}
