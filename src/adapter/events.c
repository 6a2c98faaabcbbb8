#include "adapter/events.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/redact.h"
#include "util/json.h"
#include "util/banned.h"

static const char *const kind_names[_EVENT_KIND_MAX] = {
	[EVENT_SESSION_STARTED] = "session_started",
	[EVENT_TEXT] = "text",
	[EVENT_TOOL_CALL] = "tool_call",
	[EVENT_TOOL_RESULT] = "tool_result",
	[EVENT_USAGE] = "usage",
	[EVENT_RATE_LIMITED] = "rate_limited",
	[EVENT_RESULT] = "result",
	[EVENT_ERROR] = "error",
	[EVENT_WARNING] = "warning",
	[EVENT_SIGNAL] = "signal",
	[EVENT_UNKNOWN] = "unknown",
};

const char *event_kind_to_string(enum event_kind k)
{
	if ((int)k < 0 || k >= _EVENT_KIND_MAX)
		return NULL;
	return kind_names[k];
}

enum event_kind event_kind_from_string(const char *s)
{
	int i;

	if (!s)
		return _EVENT_KIND_INVALID;
	for (i = 0; i < _EVENT_KIND_MAX; i++)
		if (strcmp(kind_names[i], s) == 0)
			return (enum event_kind)i;
	return _EVENT_KIND_INVALID;
}

void event_init(struct event *ev, enum event_kind kind)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->stream = 1;
	ev->input_tokens = EVENT_UNSET;
	ev->output_tokens = EVENT_UNSET;
	ev->cached_tokens = EVENT_UNSET;
	ev->cost_usd = -1;
	ev->num_turns = EVENT_UNSET;
	ev->duration_ms = EVENT_UNSET;
	ev->permission_denials = EVENT_UNSET;
	ratelimit_hint_init(&ev->hint);
}

/* ---- a small JSON writer: fixed key order, capped strings ------------------- */

struct jw {
	struct sbuf *out;
	int r;
	bool first;
	bool truncated;
};

static void jw_add(struct jw *w, const char *s, size_t n)
{
	if (w->r == 0)
		w->r = sbuf_add(w->out, s, n);
}

static void jw_adds(struct jw *w, const char *s)
{
	jw_add(w, s, strlen(s));
}

/* A JSON string of the n bytes at s, cut at cap bytes of input. */
static void jw_string(struct jw *w, const char *s, size_t n, size_t cap)
{
	const unsigned char *p = (const unsigned char *)s;
	bool cut = n > cap;
	size_t i = 0;

	if (cut) {
		n = cap;
		w->truncated = true;
	}
	jw_add(w, "\"", 1);
	while (i < n && w->r == 0) {
		size_t run = i, len;

		/* copy plain bytes in one go */
		while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' &&
		       p[run] != '\\')
			run++;
		if (run > i) {
			jw_add(w, s + i, run - i);
			i = run;
			continue;
		}
		if (p[i] < 0x80) {
			char esc[8];

			switch (p[i]) {
			case '"':
				jw_add(w, "\\\"", 2);
				break;
			case '\\':
				jw_add(w, "\\\\", 2);
				break;
			case '\n':
				jw_add(w, "\\n", 2);
				break;
			case '\r':
				jw_add(w, "\\r", 2);
				break;
			case '\t':
				jw_add(w, "\\t", 2);
				break;
			case '\b':
				jw_add(w, "\\b", 2);
				break;
			case '\f':
				jw_add(w, "\\f", 2);
				break;
			case '\0':
				/* valid JSON, but most readers refuse a NUL in a string */
				jw_add(w, "\\ufffd", 6);
				break;
			default:
				(void)snprintf(esc, sizeof(esc), "\\u%04x", p[i]);
				jw_add(w, esc, 6);
				break;
			}
			i++;
			continue;
		}
		len = utf8_seq(p + i, n - i);
		if (len == 0) {
			/* invalid, unless it is a sequence the cap cut short */
			if (!cut || i + 4 <= n)
				jw_add(w, "\\ufffd", 6);
			i++;
			continue;
		}
		jw_add(w, s + i, len);
		i += len;
	}
	jw_add(w, "\"", 1);
}

static void jw_key(struct jw *w, const char *k)
{
	if (!w->first)
		jw_add(w, ",", 1);
	w->first = false;
	jw_string(w, k, strlen(k), SIZE_MAX);
	jw_add(w, ":", 1);
}

static void jw_str(struct jw *w, const char *k, const char *v, size_t cap)
{
	if (!v)
		return;
	jw_key(w, k);
	jw_string(w, v, strlen(v), cap);
}

static void jw_int(struct jw *w, const char *k, int64_t v)
{
	char num[32];

	jw_key(w, k);
	(void)snprintf(num, sizeof(num), "%" PRId64, v);
	jw_adds(w, num);
}

static void jw_opt_int(struct jw *w, const char *k, int64_t v)
{
	if (v >= 0)
		jw_int(w, k, v);
}

static void jw_bool(struct jw *w, const char *k, bool v)
{
	jw_key(w, k);
	jw_adds(w, v ? "true" : "false");
}

/* The shortest %g form that reads back as the same double. */
static void jw_double(struct jw *w, const char *k, double v)
{
	char num[40];
	int prec;

	jw_key(w, k);
	if (!isfinite(v)) {
		jw_adds(w, "null");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		(void)snprintf(num, sizeof(num), "%.*g", prec, v);
		if (strtod(num, NULL) == v)
			break;
	}
	jw_adds(w, num);
}

/* A JSON value given as text: embedded as JSON (re-dumped compact, so no raw
 * newline can split the line) when it parses and fits, else as a string. */
static void jw_json(struct jw *w, const char *k, const char *v)
{
	json_error_t err;
	json_t *j = NULL;
	size_t n;

	if (!v)
		return;
	n = strlen(v);
	if (n <= EVENT_FIELD_MAX)
		j = json_loadb(v, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
	if (j) {
		char *d = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

		json_decref(j);
		if (d) {
			json_free_t jfree;
			json_malloc_t jmalloc;

			jw_key(w, k);
			jw_adds(w, d);
			json_get_alloc_funcs(&jmalloc, &jfree);
			jfree(d);
			return;
		}
	}
	jw_key(w, k);
	jw_string(w, v, n, EVENT_FIELD_MAX);
}

static void jw_hint(struct jw *w, const struct ratelimit_hint *h)
{
	if (h->retry_after_s >= 0)
		jw_int(w, "retry_after_s", h->retry_after_s);
	if (h->reset_at_s >= 0) {
		char iso[40];

		/* seconds precision is all an agent ever gives */
		if (clock_iso8601_utc(h->reset_at_s * 1000000000, iso, sizeof(iso))) {
			char *dot = strchr(iso, '.');

			if (dot) {
				dot[0] = 'Z';
				dot[1] = '\0';
			}
			jw_str(w, "reset_at", iso, SIZE_MAX);
		}
	}
	if (h->reset_hour >= 0) {
		char tod[32];

		(void)snprintf(tod, sizeof(tod), "%02d:%02d", h->reset_hour,
			       h->reset_minute > 0 ? h->reset_minute : 0);
		jw_str(w, "reset_time", tod, SIZE_MAX);
	}
}

int event_to_json(const struct event *ev, int64_t ts_ns, struct sbuf *out)
{
	struct jw w = {.out = out, .r = 0, .first = true, .truncated = false};
	size_t old_len = out->len;
	const char *kind = event_kind_to_string(ev->kind);

	if (!kind)
		return -EINVAL;
	jw_add(&w, "{", 1);
	if (ts_ns > 0) {
		char iso[40];

		if (clock_iso8601_utc(ts_ns, iso, sizeof(iso)))
			jw_str(&w, "ts", iso, SIZE_MAX);
	}
	jw_str(&w, "kind", kind, SIZE_MAX);
	jw_str(&w, "dialect", ev->dialect, SIZE_MAX);
	if (ev->line)
		jw_int(&w, "line", (int64_t)ev->line);
	if (ev->stream == 2)
		jw_str(&w, "stream", "stderr", SIZE_MAX);
	jw_str(&w, "type", ev->type, 256);

	switch (ev->kind) {
	case EVENT_SESSION_STARTED:
		jw_str(&w, "session_id", ev->session_id, 1024);
		jw_str(&w, "model", ev->model, 256);
		break;
	case EVENT_TEXT:
		jw_str(&w, "text", ev->text ? ev->text : "", EVENT_FIELD_MAX);
		if (ev->delta)
			jw_bool(&w, "delta", true);
		break;
	case EVENT_TOOL_CALL:
		jw_str(&w, "tool_id", ev->tool_id, 1024);
		jw_str(&w, "tool_name", ev->tool_name, 1024);
		jw_json(&w, "args", ev->tool_args);
		break;
	case EVENT_TOOL_RESULT:
		jw_str(&w, "tool_id", ev->tool_id, 1024);
		jw_str(&w, "tool_name", ev->tool_name, 1024);
		jw_bool(&w, "is_error", ev->is_error);
		if (ev->permission_denied)
			jw_bool(&w, "permission_denied", true);
		jw_str(&w, "output", ev->tool_output, EVENT_FIELD_MAX);
		break;
	case EVENT_USAGE:
		jw_opt_int(&w, "input_tokens", ev->input_tokens);
		jw_opt_int(&w, "output_tokens", ev->output_tokens);
		jw_opt_int(&w, "cached_tokens", ev->cached_tokens);
		if (ev->cost_usd >= 0)
			jw_double(&w, "cost_usd", ev->cost_usd);
		break;
	case EVENT_RATE_LIMITED:
		if (ev->http_status)
			jw_int(&w, "http_status", ev->http_status);
		jw_hint(&w, &ev->hint);
		jw_str(&w, "message", ev->message, EVENT_FIELD_MAX);
		break;
	case EVENT_RESULT:
		jw_str(&w, "status", ev->status, 256);
		jw_bool(&w, "is_error", ev->is_error);
		if (ev->http_status)
			jw_int(&w, "http_status", ev->http_status);
		jw_opt_int(&w, "num_turns", ev->num_turns);
		jw_opt_int(&w, "duration_ms", ev->duration_ms);
		jw_opt_int(&w, "permission_denials", ev->permission_denials);
		jw_str(&w, "text", ev->text, EVENT_FIELD_MAX);
		jw_str(&w, "message", ev->message, EVENT_FIELD_MAX);
		jw_json(&w, "payload", ev->payload);
		break;
	case EVENT_ERROR:
		jw_str(&w, "error_kind", ev->error_kind, 256);
		if (ev->http_status)
			jw_int(&w, "http_status", ev->http_status);
		jw_str(&w, "message", ev->message ? ev->message : "", EVENT_FIELD_MAX);
		break;
	case EVENT_WARNING:
		jw_str(&w, "message", ev->message ? ev->message : "", EVENT_FIELD_MAX);
		break;
	case EVENT_SIGNAL:
		jw_str(&w, "signal", ev->signal, 256);
		jw_json(&w, "payload", ev->payload ? ev->payload : "{}");
		break;
	case EVENT_UNKNOWN:
		jw_str(&w, "reason", ev->reason, 1024);
		if (ev->raw) {
			jw_key(&w, "raw");
			jw_string(&w, ev->raw, ev->raw_len, EVENT_RAW_MAX);
		}
		break;
	default:
		break;
	}
	if (w.truncated)
		jw_bool(&w, "truncated", true);
	jw_add(&w, "}\n", 2);
	if (w.r < 0)
		sbuf_setlen(out, old_len);
	return w.r;
}

/* ---- human-readable ------------------------------------------------------------ */

/* The string fields of struct event (raw, with its length, aside). */
static const size_t event_strings[] = {
	offsetof(struct event, type),	    offsetof(struct event, session_id),
	offsetof(struct event, model),	    offsetof(struct event, text),
	offsetof(struct event, tool_name),  offsetof(struct event, tool_id),
	offsetof(struct event, tool_args),  offsetof(struct event, tool_output),
	offsetof(struct event, status),	    offsetof(struct event, message),
	offsetof(struct event, error_kind), offsetof(struct event, signal),
	offsetof(struct event, payload),    offsetof(struct event, reason),
};

#define N_STRINGS (sizeof(event_strings) / sizeof(event_strings[0]))

static const char *field_get(const struct event *ev, size_t off)
{
	return *(const char *const *)(const void *)((const char *)ev + off);
}

static void field_set(struct event *ev, size_t off, const char *s)
{
	*(const char **)(void *)((char *)ev + off) = s;
}

int event_redact(const struct event *ev, struct redact *rd, struct sbuf *buf, struct event *ret)
{
	size_t at[N_STRINGS], i, raw_at = 0, raw_len = 0;
	int n, count = 0;

	*ret = *ev;
	if (redact_count(rd) == 0)
		return 0;
	sbuf_reset(buf);
	for (i = 0; i < N_STRINGS; i++) {
		const char *s = field_get(ev, event_strings[i]);

		at[i] = buf->len;
		if (!s)
			continue;
		n = redact_apply(rd, s, strlen(s), 0, buf);
		if (n < 0 || sbuf_addc(buf, '\0') < 0)
			return -ENOBUFS;
		count += n;
	}
	if (ev->raw) {
		raw_at = buf->len;
		n = redact_apply(rd, ev->raw, ev->raw_len, 0, buf);
		if (n < 0 || sbuf_addc(buf, '\0') < 0)
			return -ENOBUFS;
		raw_len = buf->len - 1 - raw_at;
		count += n;
	}
	/* the buffer is complete: point into it */
	for (i = 0; i < N_STRINGS; i++)
		if (field_get(ev, event_strings[i]))
			field_set(ret, event_strings[i], buf->buf + at[i]);
	if (ev->raw) {
		ret->raw = buf->buf + raw_at;
		ret->raw_len = raw_len;
	}
	return count;
}

/* ---- event_describe(): one writer of buf (size > 0) per kind ---- */

static const char *or_else(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

static void describe_session_started(const struct event *ev, char *buf, size_t size)
{
	(void)snprintf(buf, size, "session %s%s%s%s", or_else(ev->session_id, "?"),
		       ev->model ? " (model " : "", or_else(ev->model, ""), ev->model ? ")" : "");
}

static void describe_text(const struct event *ev, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s", or_else(ev->text, ""));
}

static void describe_tool_call(const struct event *ev, char *buf, size_t size)
{
	(void)snprintf(buf, size, "tool call %s %s", or_else(ev->tool_name, "?"),
		       or_else(ev->tool_args, ""));
}

static void describe_tool_result(const struct event *ev, char *buf, size_t size)
{
	const char *status = "ok";

	if (ev->is_error)
		status = ev->permission_denied ? "denied" : "error";
	(void)snprintf(buf, size, "tool result %s: %s%s%s",
		       or_else(ev->tool_name, or_else(ev->tool_id, "?")), status,
		       ev->tool_output && ev->tool_output[0] ? ": " : "",
		       or_else(ev->tool_output, ""));
}

static void describe_usage(const struct event *ev, char *buf, size_t size)
{
	char extra[64] = "";

	if (ev->cost_usd >= 0)
		(void)snprintf(extra, sizeof(extra), ", $%.4f", ev->cost_usd);
	(void)snprintf(buf, size, "usage: %" PRId64 " in, %" PRId64 " out%s",
		       ev->input_tokens > 0 ? ev->input_tokens : 0,
		       ev->output_tokens > 0 ? ev->output_tokens : 0, extra);
}

static void describe_rate_limited(const struct event *ev, char *buf, size_t size)
{
	char extra[64] = "";

	if (ev->hint.retry_after_s >= 0)
		(void)snprintf(extra, sizeof(extra), " (retry in %" PRId64 " s)",
			       ev->hint.retry_after_s);
	(void)snprintf(buf, size, "rate limited%s: %s", extra, or_else(ev->message, ""));
}

static void describe_result(const struct event *ev, char *buf, size_t size)
{
	bool say_message = ev->is_error && ev->message;

	(void)snprintf(buf, size, "result: %s%s%s%s%s", ev->is_error ? "failed" : "success",
		       ev->status ? " (" : "", or_else(ev->status, ""), ev->status ? ")" : "",
		       say_message ? ": " : "");
	if (say_message) {
		size_t len = strlen(buf);

		(void)snprintf(buf + len, size - len, "%s", ev->message);
	}
}

static void describe_error(const struct event *ev, char *buf, size_t size)
{
	char extra[64] = "";

	if (ev->http_status)
		(void)snprintf(extra, sizeof(extra), " (HTTP %d)", ev->http_status);
	(void)snprintf(buf, size, "error%s: %s", extra, or_else(ev->message, ""));
}

static void describe_warning(const struct event *ev, char *buf, size_t size)
{
	(void)snprintf(buf, size, "warning: %s", or_else(ev->message, ""));
}

static void describe_signal(const struct event *ev, char *buf, size_t size)
{
	(void)snprintf(buf, size, "signal %s %s", or_else(ev->signal, "?"),
		       or_else(ev->payload, "{}"));
}

static void describe_unknown(const struct event *ev, char *buf, size_t size)
{
	(void)snprintf(buf, size, "unknown%s%s%s%s", ev->type ? " '" : "", or_else(ev->type, ""),
		       ev->type ? "'" : "", ev->reason ? " (" : "");
	if (ev->reason) {
		size_t len = strlen(buf);

		(void)snprintf(buf + len, size - len, "%s)", ev->reason);
	}
}

typedef void event_describe_fn(const struct event *ev, char *buf, size_t size);

static event_describe_fn *const describers[_EVENT_KIND_MAX] = {
	[EVENT_SESSION_STARTED] = describe_session_started,
	[EVENT_TEXT] = describe_text,
	[EVENT_TOOL_CALL] = describe_tool_call,
	[EVENT_TOOL_RESULT] = describe_tool_result,
	[EVENT_USAGE] = describe_usage,
	[EVENT_RATE_LIMITED] = describe_rate_limited,
	[EVENT_RESULT] = describe_result,
	[EVENT_ERROR] = describe_error,
	[EVENT_WARNING] = describe_warning,
	[EVENT_SIGNAL] = describe_signal,
	[EVENT_UNKNOWN] = describe_unknown,
};

const char *event_describe(const struct event *ev, char *buf, size_t size)
{
	size_t i;

	if (!buf || size == 0)
		return buf;
	if (ev->kind >= 0 && ev->kind < _EVENT_KIND_MAX && describers[ev->kind])
		describers[ev->kind](ev, buf, size);
	else
		(void)snprintf(buf, size, "?");
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = ' ';
	return buf;
}
