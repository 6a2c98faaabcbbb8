/* Dialect registry, dispatch and the helpers every reader shares. */
#include "adapter/dialect.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/acp.h"
#include "adapter/dialect-internal.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

static const char *const dialect_names[_DIALECT_MAX] = {
	[DIALECT_CLAUDE] = "claude",
	[DIALECT_CODEX] = "codex",
	[DIALECT_GEMINI] = "gemini",
	[DIALECT_OPENCODE] = "opencode",
	[DIALECT_PI] = "pi",
	[DIALECT_RUNNER] = "runner",
	[DIALECT_TEXT_SIGNALS] = "text-signals",
	[DIALECT_POLL_PTY] = "poll-pty",
	[DIALECT_NONE] = "none",
	[DIALECT_HOOKS] = "hooks",
	[DIALECT_ACP] = "acp",
};

const char *dialect_to_string(enum dialect d)
{
	if ((int)d < 0 || d >= _DIALECT_MAX)
		return NULL;
	return dialect_names[d];
}

enum dialect dialect_from_string(const char *s)
{
	int i;

	if (!s)
		return _DIALECT_INVALID;
	if (strcmp(s, "qwen") == 0)
		return DIALECT_CLAUDE;
	for (i = 0; i < _DIALECT_MAX; i++)
		if (strcmp(dialect_names[i], s) == 0)
			return (enum dialect)i;
	return _DIALECT_INVALID;
}

bool dialect_has_terminal(enum dialect d)
{
	switch (d) {
	case DIALECT_CLAUDE:
	case DIALECT_CODEX:
	case DIALECT_GEMINI:
	case DIALECT_OPENCODE:
	case DIALECT_PI:
	case DIALECT_RUNNER:
	case DIALECT_ACP:
		return true;
	default:
		return false;
	}
}

void dialect_state_init(struct dialect_state *st, enum dialect d)
{
	memset(st, 0, sizeof(*st));
	st->dialect = d;
	st->stream_name = d == DIALECT_HOOKS ? "hooks" : "stdout";
	st->input_tokens = EVENT_UNSET;
	st->output_tokens = EVENT_UNSET;
	st->cached_tokens = EVENT_UNSET;
	st->cost_usd = -1;
}

void dialect_state_release(struct dialect_state *st)
{
	if (st)
		dialect_state_init(st, st->dialect);
}

int dialect_feed_line(struct dialect_state *st, const char *line, size_t len,
		      const struct event_sink *sink, struct diag *reterr)
{
	switch (st->dialect) {
	case DIALECT_CLAUDE:
		return dialect_claude_feed_line(st, line, len, sink, reterr);
	case DIALECT_CODEX:
		return dialect_codex_feed_line(st, line, len, sink, reterr);
	case DIALECT_GEMINI:
		return dialect_gemini_feed_line(st, line, len, sink, reterr);
	case DIALECT_OPENCODE:
		return dialect_opencode_feed_line(st, line, len, sink, reterr);
	case DIALECT_PI:
		return dialect_pi_feed_line(st, line, len, sink, reterr);
	case DIALECT_RUNNER:
		return dialect_runner_feed_line(st, line, len, sink, reterr);
	case DIALECT_HOOKS:
		return dialect_hooks_feed_line(st, line, len, sink, reterr);
	case DIALECT_TEXT_SIGNALS:
		return dialect_text_signals_feed_line(st, line, len, sink, reterr);
	case DIALECT_POLL_PTY:
		if (st->pty_screen)
			return dialect_pty_feed_line(st, line, len, sink, reterr);
		return dialect_plain_feed_line(st, line, len, sink, reterr);
	case DIALECT_NONE:
		return dialect_plain_feed_line(st, line, len, sink, reterr);
	case DIALECT_ACP:
		return dialect_acp_feed_line(st, line, len, sink, reterr);
	default:
		diag_set(reterr, st->stream_name, 0, 0, "invalid dialect %d", (int)st->dialect);
		return -EINVAL;
	}
}

/* A NUL-terminated copy of at most max bytes of line. */
static char *line_copy(const char *line, size_t len, size_t max)
{
	return xstrndup(line ? line : "", len > max ? max : len);
}

int dialect_feed_stderr(struct dialect_state *st, const char *line, size_t len,
			const struct event_sink *sink)
{
	st->err_line_no++;
	if (line && len && ratelimit_text_matches(line, len)) {
		char *msg = line_copy(line, len, EVENT_FIELD_MAX);
		struct event ev;

		event_init(&ev, EVENT_RATE_LIMITED);
		ev.stream = 2;
		ev.message = msg;
		ev.http_status = ratelimit_http_status(msg, strlen(msg), false);
		(void)ratelimit_parse_hint(msg, strlen(msg), &ev.hint);
		dialect_emit(st, sink, &ev);
		free(msg);
	}
	return 0;
}

int dialect_feed_oversized(struct dialect_state *st, int stream, const char *head, size_t head_len,
			   uint64_t total, const struct event_sink *sink)
{
	struct event ev;
	char msg[160];

	(void)head;
	(void)head_len;
	if (stream == 2)
		st->err_line_no++;
	else
		st->line_no++;
	(void)snprintf(
		msg, sizeof(msg),
		"line of %llu bytes is longer than the line cap; its head is in agent.log, ignoring",
		(unsigned long long)total);
	event_init(&ev, EVENT_WARNING);
	ev.stream = stream == 2 ? 2 : 1;
	ev.message = msg;
	dialect_emit(st, sink, &ev);
	return 0;
}

/* ---- liveness -------------------------------------------------------------------- */

void dialect_liveness_init(struct dialect_liveness *l, uint64_t now_ms)
{
	l->bytes = 0;
	l->last_growth_ms = now_ms;
}

bool dialect_liveness_observe(struct dialect_liveness *l, uint64_t total_bytes, uint64_t now_ms)
{
	if (total_bytes <= l->bytes)
		return false;
	l->bytes = total_bytes;
	l->last_growth_ms = now_ms;
	return true;
}

uint64_t dialect_liveness_idle_ms(const struct dialect_liveness *l, uint64_t now_ms)
{
	return now_ms > l->last_growth_ms ? now_ms - l->last_growth_ms : 0;
}

/* ---- shared helpers ------------------------------------------------------------------ */

static bool is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

void dialect_emit(struct dialect_state *st, const struct event_sink *sink, struct event *ev)
{
	ev->dialect = dialect_to_string(st->dialect);
	if (!ev->line)
		ev->line = ev->stream == 2 ? st->err_line_no : st->line_no;
	if (ev->kind == EVENT_RESULT)
		st->terminal_seen = true;
	st->events++;
	if (sink && sink->emit)
		sink->emit(sink->userdata, ev);
}

int dialect_json_line(struct dialect_state *st, const char *line, size_t len,
		      const struct event_sink *sink, struct diag *reterr, json_t **ret)
{
	struct diag jd;
	json_t *o = NULL;
	size_t i;
	int r;

	st->line_no++;
	if (!line)
		len = 0;
	for (i = 0; i < len && is_blank((unsigned char)line[i]); i++)
		;
	if (i == len)
		return 0;
	if (len > DIALECT_MAX_LINE) {
		dialect_unknown(st, sink, NULL, line, len, "line too long");
		diag_set(reterr, st->stream_name, (unsigned)st->line_no, 0,
			 "line of %zu bytes is longer than %u bytes, kept as unknown", len,
			 DIALECT_MAX_LINE);
		st->bad_lines++;
		return -ENOBUFS;
	}
	diag_clear(&jd);
	r = json_parse_strict(st->stream_name, line, len, &o, &jd);
	if (r < 0) {
		char reason[600];
		char *copy = line_copy(line, len, EVENT_FIELD_MAX);

		(void)snprintf(reason, sizeof(reason), "not JSON: %s", jd.msg);
		dialect_unknown(st, sink, NULL, line, len, reason);
		/* a CLI's plain diagnostics on stdout may still say "rate limited" */
		(void)dialect_rate_check(st, sink, NULL, copy, 0, false);
		free(copy);
		diag_set(reterr, st->stream_name, (unsigned)st->line_no, jd.col,
			 "not JSON: %s, kept as unknown", jd.msg);
		st->bad_lines++;
		return -EBADMSG;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		dialect_unknown(st, sink, NULL, line, len, "not a JSON object");
		diag_set(reterr, st->stream_name, (unsigned)st->line_no, 1,
			 "not a JSON object, kept as unknown");
		st->bad_lines++;
		return -EBADMSG;
	}
	*ret = o;
	return 1;
}

void dialect_session(struct dialect_state *st, const struct event_sink *sink, const char *type,
		     const char *session_id, const char *model)
{
	struct event ev;
	size_t n;

	if (st->session_announced || !session_id || !session_id[0])
		return;
	n = strlen(session_id);
	if (n >= sizeof(st->session_id))
		n = sizeof(st->session_id) - 1;
	memcpy(st->session_id, session_id, n);
	st->session_id[n] = '\0';
	st->session_announced = true;
	event_init(&ev, EVENT_SESSION_STARTED);
	ev.type = type;
	ev.session_id = st->session_id;
	ev.model = model;
	dialect_emit(st, sink, &ev);
}

void dialect_unknown(struct dialect_state *st, const struct event_sink *sink, const char *type,
		     const char *line, size_t len, const char *reason)
{
	struct event ev;

	event_init(&ev, EVENT_UNKNOWN);
	ev.type = type;
	ev.reason = reason;
	ev.raw = line ? line : "";
	ev.raw_len = line ? (len > EVENT_RAW_MAX ? EVENT_RAW_MAX : len) : 0;
	dialect_emit(st, sink, &ev);
}

void dialect_text(struct dialect_state *st, const struct event_sink *sink, const char *type,
		  const char *text, bool delta)
{
	struct event ev;

	if (!text || !text[0])
		return;
	event_init(&ev, EVENT_TEXT);
	ev.type = type;
	ev.text = text;
	ev.delta = delta;
	dialect_emit(st, sink, &ev);
}

static char *dump_json(const json_t *v)
{
	char *d, *copy;

	if (!v)
		return NULL;
	d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!d)
		return NULL;
	copy = xstrdup(d);
	{
		json_malloc_t jmalloc;
		json_free_t jfree;

		json_get_alloc_funcs(&jmalloc, &jfree);
		jfree(d);
	}
	return copy;
}

static void copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The slot of a remembered tool call, or -1. */
static int find_tool(const struct dialect_state *st, const char *id)
{
	size_t n;
	unsigned i;

	if (!id || !id[0])
		return -1;
	n = strlen(id);
	if (n >= DIALECT_ID_MAX)
		n = DIALECT_ID_MAX - 1;
	for (i = 0; i < DIALECT_TOOL_IDS; i++)
		if (st->tool_ids[i][0] && strncmp(st->tool_ids[i], id, n) == 0 &&
		    st->tool_ids[i][n] == '\0')
			return (int)i;
	return -1;
}

static void remember_tool(struct dialect_state *st, const char *id, const char *name)
{
	unsigned slot;

	if (!id || !id[0] || find_tool(st, id) >= 0)
		return;
	slot = st->tool_ids_next % DIALECT_TOOL_IDS;
	copy_cut(st->tool_ids[slot], sizeof(st->tool_ids[slot]), id);
	copy_cut(st->tool_names[slot], sizeof(st->tool_names[slot]), name);
	st->tool_ids_next++;
}

bool dialect_tool_announced(const struct dialect_state *st, const char *id)
{
	return find_tool(st, id) >= 0;
}

const char *dialect_tool_name(const struct dialect_state *st, const char *id)
{
	int i = find_tool(st, id);

	return i >= 0 && st->tool_names[i][0] ? st->tool_names[i] : NULL;
}

void dialect_tool_call(struct dialect_state *st, const struct event_sink *sink, const char *type,
		       const char *name, const char *id, const json_t *args)
{
	struct event ev;
	char *dumped = dump_json(args);

	event_init(&ev, EVENT_TOOL_CALL);
	ev.type = type;
	ev.tool_name = name;
	ev.tool_id = id;
	ev.tool_args = dumped;
	dialect_emit(st, sink, &ev);
	remember_tool(st, id, name);
	free(dumped);
}

static bool ci_contains(const char *s, const char *w)
{
	size_t n, m = strlen(w), i, k;

	if (!s)
		return false;
	n = strlen(s);
	for (i = 0; i + m <= n; i++) {
		for (k = 0; k < m; k++) {
			int c = (unsigned char)s[i + k];

			if (c >= 'A' && c <= 'Z')
				c += 'a' - 'A';
			if (c != (unsigned char)w[k])
				break;
		}
		if (k == m)
			return true;
	}
	return false;
}

/* How the agents word a refused tool call (permission system, sandbox, or
 * the OS refusing a confined write). */
static const char *const refusal_phrases[] = {
	"haven't granted",   "have not granted",	"requested permission",
	"permission denied", "operation not permitted", "user denied",
	"user rejected",     "rejected by the user",	"read-only sandbox",
	"blocked by",
};

static bool reads_like_refusal(const char *output)
{
	size_t i;

	for (i = 0; i < sizeof(refusal_phrases) / sizeof(refusal_phrases[0]); i++)
		if (ci_contains(output, refusal_phrases[i]))
			return true;
	return false;
}

void dialect_tool_result(struct dialect_state *st, const struct event_sink *sink, const char *type,
			 const char *name, const char *id, const char *output, bool is_error)
{
	struct event ev;

	event_init(&ev, EVENT_TOOL_RESULT);
	ev.type = type;
	ev.tool_name = name ? name : dialect_tool_name(st, id);
	ev.tool_id = id;
	ev.tool_output = output;
	ev.is_error = is_error;
	ev.permission_denied = is_error && reads_like_refusal(output);
	dialect_emit(st, sink, &ev);
}

static int64_t add_or_keep(int64_t total, int64_t v)
{
	if (v < 0)
		return total;
	return total < 0 ? v : total + v;
}

void dialect_usage_add(struct dialect_state *st, int64_t in, int64_t out, int64_t cached,
		       double cost)
{
	st->have_usage = true;
	st->input_tokens = add_or_keep(st->input_tokens, in);
	st->output_tokens = add_or_keep(st->output_tokens, out);
	st->cached_tokens = add_or_keep(st->cached_tokens, cached);
	if (cost >= 0)
		st->cost_usd = st->cost_usd < 0 ? cost : st->cost_usd + cost;
}

void dialect_usage_set(struct dialect_state *st, int64_t in, int64_t out, int64_t cached,
		       double cost)
{
	st->have_usage = true;
	if (in >= 0)
		st->input_tokens = in;
	if (out >= 0)
		st->output_tokens = out;
	if (cached >= 0)
		st->cached_tokens = cached;
	if (cost >= 0)
		st->cost_usd = cost;
}

void dialect_usage_emit(struct dialect_state *st, const struct event_sink *sink, const char *type)
{
	struct event ev;

	if (!st->have_usage)
		return;
	event_init(&ev, EVENT_USAGE);
	ev.type = type;
	ev.input_tokens = st->input_tokens;
	ev.output_tokens = st->output_tokens;
	ev.cached_tokens = st->cached_tokens;
	ev.cost_usd = st->cost_usd;
	dialect_emit(st, sink, &ev);
}

bool dialect_rate_check(struct dialect_state *st, const struct event_sink *sink, const char *type,
			const char *message, int http_status, bool force)
{
	size_t n = message ? strlen(message) : 0;
	struct event ev;

	if (!force && http_status != 429 && !(n && ratelimit_text_matches(message, n)))
		return false;
	event_init(&ev, EVENT_RATE_LIMITED);
	ev.type = type;
	ev.message = message;
	ev.http_status = http_status ? http_status : ratelimit_http_status(message, n, false);
	if (n)
		(void)ratelimit_parse_hint(message, n, &ev.hint);
	dialect_emit(st, sink, &ev);
	return true;
}

void dialect_error(struct dialect_state *st, const struct event_sink *sink, const char *type,
		   const char *message, const char *kind, int http_status, bool rate_limited)
{
	struct event ev;

	event_init(&ev, EVENT_ERROR);
	ev.type = type;
	ev.message = message ? message : "";
	ev.error_kind = kind;
	ev.http_status = http_status;
	dialect_emit(st, sink, &ev);
	(void)dialect_rate_check(st, sink, type, message, http_status, rate_limited);
}

/* ---- JSON accessors ---------------------------------------------------------------- */

const char *dj_str(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int64_t dj_int(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		return i < 0 ? EVENT_UNSET : (int64_t)i;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		if (isfinite(d) && d >= 0 && d < 9.2e18)
			return (int64_t)d;
	}
	return EVENT_UNSET;
}

double dj_real(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	double d;

	if (!json_is_number(v))
		return -1.0;
	d = json_number_value(v);
	return isfinite(d) && d >= 0 ? d : -1.0;
}

bool dj_true(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

json_t *dj_obj(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_object(v) ? v : NULL;
}

json_t *dj_arr(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_array(v) ? v : NULL;
}

void dialect_sbuf_head(struct sbuf *sb, const char *s, size_t n)
{
	size_t room = sb->max > sb->len ? sb->max - sb->len : 0;

	if (n > room)
		n = room;
	if (n)
		(void)sbuf_add(sb, s, n);
}

const char *dialect_content_text(const json_t *content, struct sbuf *sb)
{
	size_t i;
	json_t *b;

	if (json_is_string(content)) {
		dialect_sbuf_head(sb, json_string_value(content), json_string_length(content));
		return sb->buf;
	}
	if (!json_is_array(content))
		return sb->buf;
	json_array_foreach(content, i, b)
	{
		const char *t = dj_str(b, "text");

		if (!t && json_is_string(b))
			t = json_string_value(b);
		if (!t)
			continue;
		if (sb->len)
			dialect_sbuf_head(sb, "\n", 1);
		dialect_sbuf_head(sb, t, strlen(t));
	}
	return sb->buf;
}

bool dialect_is_api_error_text(const char *s)
{
	if (!s)
		return false;
	while (*s == ' ' || *s == '\n' || *s == '\t')
		s++;
	if (*s == '[')
		s++;
	return strncmp(s, "API Error:", 10) == 0 || strncmp(s, "API Error (", 11) == 0;
}
