/* The hooks dialect: lifecycle payloads an agent's hooks post to the local
 * endpoint bernstein owns (`bernstein hook-post`, one JSON object a line),
 * named as Claude Code names its hook events (hook_event_name; "event" is
 * accepted as well, as Bernstein's hook receiver does). Real payloads of
 * Claude Code 2.1.332 are in tests/data/samples/claude.hooks*.jsonl.
 *
 *   any payload's session_id -> session_started (the first one; SessionStart's
 *                              model when it names one)
 *   PreToolUse               -> tool_call (tool_use_id, tool_name, tool_input)
 *   PostToolUse              -> tool_call unless announced, tool_result
 *                              (tool_response: a string, or its JSON)
 *   PostToolUseFailure       -> tool_call unless announced, failed tool_result
 *                              (error / error_message)
 *   PermissionDenied         -> failed tool_result, permission_denied
 *   PermissionRequest,
 *   Notification             -> warning (the agent waits for a human)
 *   Stop                     -> result (success; last_assistant_message as text)
 *   StopFailure              -> error (+ rate_limited), result (failed)
 *   SessionStart, UserPromptSubmit, SessionEnd, SubagentStart, SubagentStop,
 *   PreCompact, PostCompact  -> nothing more
 *   anything else            -> unknown */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "adapter/ratelimit.h"
#include "util/xalloc.h"
#include "util/banned.h"

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const char *const quiet_events[] = {
	"SessionStart", "UserPromptSubmit", "SessionEnd",  "SubagentStart",
	"SubagentStop", "PreCompact",	    "PostCompact", NULL,
};

static bool is_quiet(const char *name)
{
	size_t i;

	for (i = 0; quiet_events[i]; i++)
		if (strcmp(quiet_events[i], name) == 0)
			return true;
	return false;
}

/* The tool's output: a string as is, anything else as compact JSON. */
static char *response_text(const json_t *v)
{
	if (!v || json_is_null(v))
		return NULL;
	if (json_is_string(v))
		return xstrndup(json_string_value(v), json_string_length(v));
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
}

static void hooks_tool(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
		       const char *name, bool failed)
{
	const char *tool = dj_str(o, "tool_name");
	const char *id = dj_str(o, "tool_use_id");
	char *out;

	if (!id || !dialect_tool_announced(st, id))
		dialect_tool_call(st, sink, name, tool, id, json_object_get(o, "tool_input"));
	if (failed) {
		const char *err = dj_str(o, "error");

		out = xstrdup(err			   ? err
			      : dj_str(o, "error_message") ? dj_str(o, "error_message")
							   : "the tool failed");
	} else {
		out = response_text(json_object_get(o, "tool_response"));
		if (!out)
			out = response_text(json_object_get(o, "tool_output"));
	}
	dialect_tool_result(st, sink, name, tool, id, out, failed);
	free(out);
}

static void hooks_denied(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			 const char *name)
{
	const char *reason = dj_str(o, "reason");
	struct event ev;

	event_init(&ev, EVENT_TOOL_RESULT);
	ev.type = name;
	ev.tool_name = dj_str(o, "tool_name");
	ev.tool_id = dj_str(o, "tool_use_id");
	if (!ev.tool_name)
		ev.tool_name = dialect_tool_name(st, ev.tool_id);
	ev.tool_output = reason ? reason : "permission denied";
	ev.is_error = true;
	ev.permission_denied = true;
	dialect_emit(st, sink, &ev);
}

static void hooks_warning(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
			  const char *name)
{
	const char *msg = dj_str(o, "message");
	char buf[256];
	struct event ev;

	if (!msg) {
		const char *tool = dj_str(o, "tool_name");

		(void)snprintf(buf, sizeof(buf), "%s%s%s", name, tool ? ": " : "",
			       tool ? tool : "");
		msg = buf;
	}
	event_init(&ev, EVENT_WARNING);
	ev.type = name;
	ev.message = msg;
	dialect_emit(st, sink, &ev);
}

static void hooks_stop(struct dialect_state *st, const struct event_sink *sink, const json_t *o,
		       const char *name, bool failed)
{
	const char *text = dj_str(o, "last_assistant_message");
	struct event ev;

	event_init(&ev, EVENT_RESULT);
	ev.type = name;
	ev.status = name;
	ev.is_error = failed;
	if (failed) {
		/* "error" (2.1.332: "unknown", "rate_limit", ...) or "error_type" */
		const char *kind =
			dj_str(o, "error") ? dj_str(o, "error") : dj_str(o, "error_type");
		const char *msg = dj_str(o, "error_message") ? dj_str(o, "error_message") : text;
		bool rate = streq(kind, "rate_limit");
		int http = msg ? ratelimit_http_status(msg, strlen(msg), false) : 0;

		dialect_error(st, sink, name, msg ? msg : "the turn ended with an API error",
			      kind ? kind : "api_error", http, rate);
		ev.message = msg ? msg : kind;
		ev.http_status = http;
	} else {
		ev.text = text;
	}
	dialect_emit(st, sink, &ev);
}

int dialect_hooks_feed_line(struct dialect_state *st, const char *line, size_t len,
			    const struct event_sink *sink, struct diag *reterr)
{
	const char *name;
	json_t *o = NULL;
	int r;

	r = dialect_json_line(st, line, len, sink, reterr, &o);
	if (r <= 0)
		return r;
	name = dj_str(o, "hook_event_name");
	if (!name)
		name = dj_str(o, "event");
	if (!name) {
		dialect_unknown(st, sink, NULL, line, len, "no hook_event_name");
		json_decref(o);
		return 0;
	}
	dialect_session(st, sink, name, dj_str(o, "session_id"),
			streq(name, "SessionStart") ? dj_str(o, "model") : NULL);
	if (streq(name, "PreToolUse")) {
		dialect_tool_call(st, sink, name, dj_str(o, "tool_name"), dj_str(o, "tool_use_id"),
				  json_object_get(o, "tool_input"));
	} else if (streq(name, "PostToolUse")) {
		hooks_tool(st, sink, o, name, false);
	} else if (streq(name, "PostToolUseFailure")) {
		hooks_tool(st, sink, o, name, true);
	} else if (streq(name, "PermissionDenied")) {
		hooks_denied(st, sink, o, name);
	} else if (streq(name, "PermissionRequest") || streq(name, "Notification")) {
		hooks_warning(st, sink, o, name);
	} else if (streq(name, "Stop")) {
		hooks_stop(st, sink, o, name, false);
	} else if (streq(name, "StopFailure")) {
		hooks_stop(st, sink, o, name, true);
	} else if (!is_quiet(name)) {
		dialect_unknown(st, sink, name, line, len, "unknown hook event");
	}
	json_decref(o);
	return 0;
}

/* ---- the payload a hook command sends ---- */

/* s as a JSON string: NUL bytes become '?' (a reader refuses \u0000), and
 * when s is not valid UTF-8, so does every non-ASCII byte. */
static json_t *lossy_string(const char *s, size_t n)
{
	char *copy = xmalloc(n + 1);
	json_t *v;
	size_t i;

	for (i = 0; i < n; i++)
		copy[i] = s[i] ? s[i] : '?';
	copy[n] = '\0';
	v = json_stringn(copy, n);
	if (!v) {
		for (i = 0; i < n; i++)
			if ((unsigned char)copy[i] >= 0x80)
				copy[i] = '?';
		v = json_stringn(copy, n);
	}
	free(copy);
	return v ? v : json_string("");
}

/* Cut every string of v longer than max bytes (at a UTF-8 boundary).
 * Returns whether anything was cut. */
static bool cut_strings(json_t *v, size_t max)
{
	bool cut = false;
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_string(v) && json_string_length(v) > max) {
		const char *s = json_string_value(v);
		size_t n = max;

		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		return json_string_setn(v, s, n) == 0;
	}
	if (json_is_object(v)) {
		json_object_foreach(v, key, x) cut |= cut_strings(x, max);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) cut |= cut_strings(x, max);
	}
	return cut;
}

/* A payload that is not JSON (cut by hook-post's stdin cap, say): keep the
 * names it starts with, "KEY": "VALUE" with a plain VALUE of at most 256
 * bytes, for KEY of keep_keys. */
static const char *const keep_keys[] = {"hook_event_name", "event",	  "session_id",
					"tool_name",	   "tool_use_id", NULL};

static void salvage(json_t *o, const char *buf, size_t len)
{
	size_t i;

	for (i = 0; keep_keys[i]; i++) {
		char pat[32];
		size_t plen = (size_t)snprintf(pat, sizeof(pat), "\"%s\"", keep_keys[i]);
		const char *p = memmem(buf, len, pat, plen), *end = buf + len, *q, *close;

		if (!p)
			continue;
		for (q = p + plen; q < end && (*q == ' ' || *q == '\t'); q++)
			;
		if (q >= end || *q++ != ':')
			continue;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q >= end || *q++ != '"')
			continue;
		close = memchr(q, '"', (size_t)(end - q) < 257 ? (size_t)(end - q) : 257);
		if (!close || close == q || memchr(q, '\\', (size_t)(close - q)))
			continue;
		(void)json_object_set_new(o, keep_keys[i], lossy_string(q, (size_t)(close - q)));
	}
}

static char *dump_line(const json_t *o, size_t *ret_len)
{
	char *s = json_dumps(o, JSON_COMPACT);

	*ret_len = s ? strlen(s) : 0;
	return s;
}

int dialect_hooks_payload(const char *buf, size_t len, const char *event, struct sbuf *out)
{
	json_t *o = NULL, *v;
	char *line = NULL;
	size_t i = 0, n = 0;
	int r;

	while (i < len && strchr(" \t\r\n", buf[i]) && buf[i])
		i++;
	if (i < len) {
		v = json_loadb(buf, len, JSON_DECODE_ANY, NULL);
		if (json_is_object(v)) {
			o = v;
		} else {
			o = json_object();
			if (v)
				(void)json_object_set_new(o, "payload", v);
			else {
				(void)json_object_set_new(
					o, "raw",
					lossy_string(buf, len > EVENT_FIELD_MAX ? EVENT_FIELD_MAX
										: len));
				salvage(o, buf, len);
			}
		}
	} else {
		o = json_object();
	}
	if (event && *event && !json_is_string(json_object_get(o, "hook_event_name")) &&
	    !json_is_string(json_object_get(o, "event")))
		(void)json_object_set_new(o, "hook_event_name", lossy_string(event, strlen(event)));

	if (cut_strings(o, EVENT_FIELD_MAX))
		(void)json_object_set_new(o, "bernstein_truncated", json_true());
	line = dump_line(o, &n);
	if (line && n > DIALECT_HOOKS_LINE_MAX) {
		free(line);
		(void)cut_strings(o, 4096);
		(void)json_object_set_new(o, "bernstein_truncated", json_true());
		line = dump_line(o, &n);
	}
	if (!line || n > DIALECT_HOOKS_LINE_MAX) {
		/* still too big (a huge array): keep what names the event */
		json_t *small = json_object();

		for (i = 0; keep_keys[i]; i++)
			if (json_is_string(json_object_get(o, keep_keys[i])))
				(void)json_object_set(small, keep_keys[i],
						      json_object_get(o, keep_keys[i]));
		(void)json_object_set_new(small, "bernstein_truncated", json_true());
		free(line);
		line = dump_line(small, &n);
		json_decref(small);
	}
	json_decref(o);
	if (!line)
		return -ENOMEM; /* jansson could not allocate */
	r = sbuf_add(out, line, n);
	if (r >= 0)
		r = sbuf_add(out, "\n", 1);
	free(line);
	return r;
}
