/* The ACP client engine (see acp.h). */
#include "adapter/acp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/dialect-internal.h"
#include "util/beneath.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

static const char *const phase_names[_ACP_PHASE_MAX] = {
	[ACP_PHASE_IDLE] = "idle",
	[ACP_PHASE_INITIALIZE] = "initialize",
	[ACP_PHASE_LOAD] = "session/load",
	[ACP_PHASE_NEW] = "session/new",
	[ACP_PHASE_PROMPT] = "session/prompt",
	[ACP_PHASE_DONE] = "done",
	[ACP_PHASE_FAILED] = "failed",
};

const char *acp_phase_name(enum acp_phase p)
{
	if ((int)p < 0 || p >= _ACP_PHASE_MAX)
		return NULL;
	return phase_names[p];
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* ---- paths ---------------------------------------------------------------------- */

/* Normalise an absolute path lexically into sb: no '.', '..' resolved (never
 * above '/'), no repeated or trailing slash. */
static void normalise(const char *p, struct sbuf *sb)
{
	const char *s = p;

	sbuf_reset(sb);
	while (*s) {
		const char *e;
		size_t n;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchr(s, '/');
		n = e ? (size_t)(e - s) : strlen(s);
		if (n == 1 && s[0] == '.') {
			/* nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			char *slash = sb->len ? strrchr(sb->buf, '/') : NULL;

			if (slash) {
				sb->len = (size_t)(slash - sb->buf);
				sb->buf[sb->len] = '\0';
			}
		} else {
			(void)sbuf_add(sb, "/", 1);
			(void)sbuf_add(sb, s, n);
		}
		s += n;
	}
	if (!sb->len)
		(void)sbuf_add(sb, "/", 1);
}

bool acp_path_inside(const char *root, const char *path, char **ret_rel)
{
	struct sbuf r = SBUF_INIT(SIZE_MAX), p = SBUF_INIT(SIZE_MAX), tmp = SBUF_INIT(SIZE_MAX);
	bool inside = false;
	size_t n;

	if (!root || root[0] != '/' || !path || !path[0] || strlen(path) != strnlen(path, PATH_MAX))
		goto out;
	normalise(root, &r);
	if (path[0] == '/') {
		normalise(path, &p);
	} else {
		(void)sbuf_addf(&tmp, "%s/%s", r.buf, path);
		normalise(tmp.buf, &p);
	}
	n = r.len;
	if (n == 1) /* root is "/" */
		n = 0;
	if (strncmp(p.buf, r.buf, n) != 0 || (p.buf[n] != '\0' && p.buf[n] != '/'))
		goto out;
	inside = true;
	if (ret_rel)
		*ret_rel = xstrdup(p.buf[n] == '/' ? p.buf + n + 1 : p.buf + n);
out:
	sbuf_release(&r);
	sbuf_release(&p);
	sbuf_release(&tmp);
	return inside;
}

/* ---- the read-only half: session/update and the prompt's answer -------------------- */

static const char *text_of_content(const json_t *content, struct sbuf *sb)
{
	size_t i;
	json_t *c;

	/* a ContentBlock {type: text, text}, or ToolCallContent [{type: content,
	 * content: {type: text, text}} | {type: diff, path, ...}] */
	if (json_is_object(content)) {
		const char *t = dj_str(content, "text");

		if (t)
			dialect_sbuf_head(sb, t, strlen(t));
		else if (dj_obj(content, "content"))
			(void)text_of_content(dj_obj(content, "content"), sb);
		else if (streq(dj_str(content, "type"), "diff") && dj_str(content, "path")) {
			const char *path = dj_str(content, "path");

			dialect_sbuf_head(sb, "diff ", 5);
			dialect_sbuf_head(sb, path, strlen(path));
		}
		return sb->buf;
	}
	if (json_is_string(content)) {
		dialect_sbuf_head(sb, json_string_value(content), json_string_length(content));
		return sb->buf;
	}
	json_array_foreach(content, i, c)
	{
		size_t before = sb->len;

		if (sb->len)
			dialect_sbuf_head(sb, "\n", 1);
		(void)text_of_content(c, sb);
		if (sb->len == before + 1) /* nothing but the separator */
			sb->buf[--sb->len] = '\0';
	}
	return sb->buf;
}

static char *dump_compact(const json_t *v)
{
	return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
}

static void acp_signal(struct dialect_state *st, const struct event_sink *sink, const char *type,
		       const char *signal, const json_t *payload)
{
	char *p = dump_compact(payload);
	struct event ev;

	event_init(&ev, EVENT_SIGNAL);
	ev.type = type;
	ev.signal = signal;
	ev.payload = p ? p : "{}";
	dialect_emit(st, sink, &ev);
	free(p);
}

static void acp_warning(struct dialect_state *st, const struct event_sink *sink, const char *type,
			const char *msg)
{
	struct event ev;

	event_init(&ev, EVENT_WARNING);
	ev.type = type;
	ev.message = msg;
	dialect_emit(st, sink, &ev);
}

static const char *tool_name_of(const json_t *tc)
{
	const char *n = dj_str(tc, "title");

	if (!n || !n[0])
		n = dj_str(tc, "kind");
	return n ? n : "tool";
}

static void tool_result_of(struct dialect_state *st, const struct event_sink *sink,
			   const char *type, const json_t *tc)
{
	const char *status = dj_str(tc, "status");
	const char *id = dj_str(tc, "toolCallId");
	struct sbuf out = SBUF_INIT(EVENT_FIELD_MAX);
	char *raw = NULL;

	if (!streq(status, "completed") && !streq(status, "failed"))
		return;
	(void)text_of_content(json_object_get(tc, "content"), &out);
	if (!out.len && json_object_get(tc, "rawOutput")) {
		raw = dump_compact(json_object_get(tc, "rawOutput"));
		if (raw)
			dialect_sbuf_head(&out, raw, strlen(raw));
	}
	dialect_tool_result(st, sink, type, dialect_tool_name(st, id), id, out.buf,
			    streq(status, "failed"));
	free(raw);
	sbuf_release(&out);
}

/* Announce the tool call tc (a ToolCall or a ToolCallUpdate) unless it was. */
static void tool_announce(struct dialect_state *st, const struct event_sink *sink, const char *type,
			  const json_t *tc)
{
	const char *id = dj_str(tc, "toolCallId");

	if (id && dialect_tool_announced(st, id))
		return;
	dialect_tool_call(st, sink, type, tool_name_of(tc), id, json_object_get(tc, "rawInput"));
}

static void session_update(struct dialect_state *st, const struct event_sink *sink, const json_t *u,
			   const char *line, size_t len, struct sbuf *reply)
{
	const char *what = dj_str(u, "sessionUpdate");

	if (!what) {
		dialect_unknown(st, sink, NULL, line, len, "session/update without sessionUpdate");
	} else if (streq(what, "agent_message_chunk")) {
		struct sbuf t = SBUF_INIT(EVENT_FIELD_MAX);

		(void)text_of_content(json_object_get(u, "content"), &t);
		if (t.len) {
			dialect_text(st, sink, what, t.buf, true);
			if (reply)
				dialect_sbuf_head(reply, t.buf, t.len);
		}
		sbuf_release(&t);
	} else if (streq(what, "tool_call")) {
		tool_announce(st, sink, what, u);
		tool_result_of(st, sink, what, u);
	} else if (streq(what, "tool_call_update")) {
		const char *status = dj_str(u, "status");

		if (streq(status, "completed") || streq(status, "failed")) {
			tool_announce(st, sink, what, u);
			tool_result_of(st, sink, what, u);
		}
	} else if (streq(what, "plan")) {
		json_t *p = json_pack("{s:O?}", "entries", json_object_get(u, "entries"));

		acp_signal(st, sink, what, "PLAN", p);
		json_decref(p);
	} else if (streq(what, "usage_update")) {
		json_t *cost = dj_obj(u, "cost");

		if (cost && streq(dj_str(cost, "currency"), "USD") &&
		    dj_real(cost, "amount") >= 0) {
			dialect_usage_set(st, EVENT_UNSET, EVENT_UNSET, EVENT_UNSET,
					  dj_real(cost, "amount"));
			dialect_usage_emit(st, sink, what);
		}
	} else if (streq(what, "user_message_chunk") || streq(what, "agent_thought_chunk") ||
		   streq(what, "available_commands_update") || streq(what, "current_mode_update") ||
		   streq(what, "config_option_update") || streq(what, "session_info_update")) {
		/* nothing a run needs */
	} else {
		dialect_unknown(st, sink, what, line, len, "unknown session update");
	}
}

/* The prompt's answer: usage, then the terminal result. */
static void prompt_result(struct dialect_state *st, const struct event_sink *sink,
			  const json_t *res, const char *text)
{
	const char *stop = dj_str(res, "stopReason");
	json_t *usage = dj_obj(res, "usage");
	struct event ev;

	if (usage) {
		dialect_usage_set(st, dj_int(usage, "inputTokens"), dj_int(usage, "outputTokens"),
				  dj_int(usage, "cachedReadTokens"), -1);
		dialect_usage_emit(st, sink, "session/prompt");
	}
	event_init(&ev, EVENT_RESULT);
	ev.type = "session/prompt";
	ev.status = stop ? stop : "unknown";
	ev.is_error = !streq(stop, "end_turn");
	ev.text = text && text[0] ? text : NULL;
	if (ev.is_error)
		ev.message = streq(stop, "cancelled") ? "the turn was cancelled"
			     : stop		      ? "the turn ended early"
						      : "the answer has no stopReason";
	dialect_emit(st, sink, &ev);
}

int dialect_acp_feed_line(struct dialect_state *st, const char *line, size_t len,
			  const struct event_sink *sink, struct diag *reterr)
{
	json_t *o = NULL;
	const char *method;
	json_t *res;
	int r;

	r = dialect_json_line(st, line, len, sink, reterr, &o);
	if (r <= 0)
		return r;
	method = dj_str(o, "method");
	res = dj_obj(o, "result");
	if (streq(method, "session/update") && !json_object_get(o, "id")) {
		json_t *u = dj_obj(dj_obj(o, "params"), "update");

		if (u)
			session_update(st, sink, u, line, len, NULL);
		else
			dialect_unknown(st, sink, method, line, len,
					"session/update without update");
	} else if (!method && res && dj_str(res, "stopReason")) {
		prompt_result(st, sink, res, NULL);
	}
	json_decref(o);
	return 0;
}

/* ---- the engine ------------------------------------------------------------------- */

void acp_init(struct acp *a, const struct acp_opts *opts)
{
	memset(a, 0, sizeof(*a));
	a->o = *opts;
	a->cwd = xstrdup(opts->cwd ? opts->cwd : "/");
	a->prompt = xstrdup(opts->prompt ? opts->prompt : "");
	a->resume_id = opts->resume_id ? xstrdup(opts->resume_id) : NULL;
	a->o.cwd = a->cwd;
	a->o.prompt = a->prompt;
	a->o.resume_id = a->resume_id;
	a->mcp_servers = opts->mcp_servers && json_is_array(opts->mcp_servers)
				 ? json_deep_copy(opts->mcp_servers)
				 : json_array();
	a->o.mcp_servers = NULL;
	if (!a->o.max_frame)
		a->o.max_frame = ACP_MAX_FRAME;
	if (!a->o.max_file)
		a->o.max_file = ACP_MAX_FILE;
	a->next_id = 1;
	dialect_state_init(&a->st, DIALECT_ACP);
	a->out = (struct sbuf)SBUF_INIT(ACP_MAX_OUT);
	a->reply = (struct sbuf)SBUF_INIT(ACP_REPLY_MAX);
}

void acp_release(struct acp *a)
{
	if (!a)
		return;
	free(a->cwd);
	free(a->prompt);
	free(a->resume_id);
	json_decref(a->mcp_servers);
	sbuf_release(&a->out);
	sbuf_release(&a->reply);
	dialect_state_release(&a->st);
	memset(a, 0, sizeof(*a));
}

const char *acp_pending(const struct acp *a, size_t *ret_len)
{
	*ret_len = a->out.len;
	return a->out.buf;
}

void acp_consume(struct acp *a, size_t n)
{
	if (n >= a->out.len) {
		sbuf_reset(&a->out);
		return;
	}
	memmove(a->out.buf, a->out.buf + n, a->out.len - n);
	a->out.len -= n;
	a->out.buf[a->out.len] = '\0';
}

bool acp_finished(const struct acp *a)
{
	return a->phase == ACP_PHASE_DONE || a->phase == ACP_PHASE_FAILED;
}

/* Queue o (stolen) as one frame. */
static void send_frame(struct acp *a, json_t *o)
{
	char *s;

	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return;
	if (sbuf_add(&a->out, s, strlen(s)) < 0 || sbuf_add(&a->out, "\n", 1) < 0)
		a->out_overflow = true;
	free(s);
}

static void send_request(struct acp *a, const char *method, json_t *params)
{
	int64_t id = a->next_id++;

	a->pending_id = id;
	send_frame(a, json_pack("{s:I, s:s, s:o}", "id", (json_int_t)id, "method", method, "params",
				params ? params : json_object()));
}

static void send_result(struct acp *a, const json_t *id, json_t *result)
{
	send_frame(a, json_pack("{s:O, s:o}", "id", id, "result", result ? result : json_null()));
}

static void send_error(struct acp *a, const json_t *id, int code, const char *msg)
{
	send_frame(a, json_pack("{s:O, s:{s:i, s:s}}", "id", id ? id : json_null(), "error", "code",
				code, "message", msg));
}

/* The turn failed: an error event and a failed result; nothing more is asked. */
static void fail(struct acp *a, const struct event_sink *sink, const char *status, const char *kind,
		 const char *msg)
{
	struct event ev;

	if (acp_finished(a))
		return;
	dialect_error(&a->st, sink, kind, msg, kind, 0, false);
	event_init(&ev, EVENT_RESULT);
	ev.type = kind;
	ev.status = status;
	ev.is_error = true;
	ev.message = msg;
	dialect_emit(&a->st, sink, &ev);
	a->phase = ACP_PHASE_FAILED;
	a->pending_id = 0;
}

int acp_start(struct acp *a)
{
	json_t *caps;

	if (a->phase != ACP_PHASE_IDLE)
		return -EALREADY;
	caps = json_pack("{s:{s:b, s:b}, s:b}", "fs", "readTextFile", a->o.tree_fd >= 0,
			 "writeTextFile", a->o.tree_fd >= 0, "terminal", 0);
	send_request(a, "initialize",
		     json_pack("{s:i, s:o, s:{s:s, s:s}}", "protocolVersion", ACP_PROTOCOL_VERSION,
			       "clientCapabilities", caps, "clientInfo", "name", "bernstein",
			       "version", "0.1.0"));
	a->phase = ACP_PHASE_INITIALIZE;
	return 0;
}

void acp_frame_too_long(struct acp *a, uint64_t total, const struct event_sink *sink)
{
	char msg[128];

	a->st.line_no++;
	(void)snprintf(msg, sizeof(msg), "a frame of %llu bytes is longer than the line cap",
		       (unsigned long long)total);
	fail(a, sink, "protocol_error", "acp", msg);
}

int acp_cancel(struct acp *a)
{
	if (a->phase != ACP_PHASE_PROMPT || a->cancel_sent || !a->session_id[0])
		return 0;
	send_frame(a, json_pack("{s:s, s:{s:o}}", "method", "session/cancel", "params", "sessionId",
				json_str_lossy(a->session_id)));
	a->cancel_sent = true;
	return 1;
}

static void set_session(struct acp *a, const struct event_sink *sink, const char *id,
			const char *model)
{
	size_t n = strlen(id);

	if (n >= sizeof(a->session_id))
		n = sizeof(a->session_id) - 1;
	memcpy(a->session_id, id, n);
	a->session_id[n] = '\0';
	dialect_session(&a->st, sink, a->loaded ? "session/load" : "session/new", a->session_id,
			model);
}

static void send_session_new(struct acp *a)
{
	send_request(a, "session/new",
		     json_pack("{s:o, s:O}", "cwd", json_str_lossy(a->cwd), "mcpServers",
			       a->mcp_servers));
	a->phase = ACP_PHASE_NEW;
}

static void send_prompt(struct acp *a)
{
	sbuf_reset(&a->reply);
	send_request(a, "session/prompt",
		     json_pack("{s:o, s:[{s:s, s:o}]}", "sessionId", json_str_lossy(a->session_id),
			       "prompt", "type", "text", "text", json_str_lossy(a->prompt)));
	a->phase = ACP_PHASE_PROMPT;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	(void)snprintf(dst, size, "%s", src ? src : "");
}

static void on_initialized(struct acp *a, const struct event_sink *sink, const json_t *res)
{
	json_t *caps = dj_obj(res, "agentCapabilities");
	json_t *info = dj_obj(res, "agentInfo");
	json_t *pv = json_object_get(res, "protocolVersion");
	char msg[160];

	a->load_session = caps && dj_true(caps, "loadSession");
	a->protocol_version = json_is_integer(pv) ? (int)json_integer_value(pv) : 0;
	copy_str(a->agent_name, sizeof(a->agent_name), info ? dj_str(info, "name") : NULL);
	copy_str(a->agent_version, sizeof(a->agent_version), info ? dj_str(info, "version") : NULL);
	{
		json_t *p =
			json_pack("{s:i, s:b, s:s?, s:s?, s:O?}", "protocolVersion",
				  a->protocol_version, "loadSession", a->load_session, "name",
				  info ? dj_str(info, "name") : NULL, "version",
				  info ? dj_str(info, "version") : NULL, "agentCapabilities", caps);

		acp_signal(&a->st, sink, "initialize", "CAPABILITIES", p);
		json_decref(p);
	}
	if (a->protocol_version != ACP_PROTOCOL_VERSION) {
		(void)snprintf(msg, sizeof(msg),
			       "the agent speaks ACP protocol version %d, bernstein version %d",
			       a->protocol_version, ACP_PROTOCOL_VERSION);
		fail(a, sink, "protocol_error", "initialize", msg);
		return;
	}
	if (a->resume_id && a->load_session) {
		send_request(a, "session/load",
			     json_pack("{s:o, s:o, s:O}", "sessionId", json_str_lossy(a->resume_id),
				       "cwd", json_str_lossy(a->cwd), "mcpServers",
				       a->mcp_servers));
		a->phase = ACP_PHASE_LOAD;
		return;
	}
	if (a->resume_id)
		acp_warning(&a->st, sink, "initialize",
			    "the agent does not advertise loadSession: starting a fresh session");
	send_session_new(a);
}

static void on_response(struct acp *a, const struct event_sink *sink, const json_t *o,
			const char *line, size_t len)
{
	json_t *id = json_object_get(o, "id");
	json_t *err = dj_obj(o, "error");
	json_t *res = json_object_get(o, "result");
	char msg[512];

	if (!json_is_integer(id) || json_integer_value(id) != a->pending_id || !a->pending_id) {
		dialect_unknown(&a->st, sink, NULL, line, len, "an answer to no pending request");
		return;
	}
	a->pending_id = 0;
	if (err || (!res && a->phase != ACP_PHASE_LOAD)) {
		const char *m = err ? dj_str(err, "message") : NULL;
		int64_t code = err && json_is_integer(json_object_get(err, "code"))
				       ? (int64_t)json_integer_value(json_object_get(err, "code"))
				       : 0;

		(void)snprintf(msg, sizeof(msg), "%s failed: %s (%lld)", acp_phase_name(a->phase),
			       m ? m : "no result", (long long)code);
		if (a->phase == ACP_PHASE_LOAD) {
			/* the session cannot be loaded: a fresh one */
			acp_warning(&a->st, sink, "session/load", msg);
			send_session_new(a);
			return;
		}
		fail(a, sink, "error", acp_phase_name(a->phase), msg);
		return;
	}
	switch (a->phase) {
	case ACP_PHASE_INITIALIZE:
		on_initialized(a, sink, res);
		break;
	case ACP_PHASE_LOAD:
		a->loaded = true;
		set_session(a, sink, a->resume_id, NULL);
		send_prompt(a);
		break;
	case ACP_PHASE_NEW: {
		const char *sid = dj_str(res, "sessionId");
		json_t *models = dj_obj(res, "models");

		if (!sid || !sid[0]) {
			fail(a, sink, "protocol_error", "session/new",
			     "session/new answered without a sessionId");
			return;
		}
		set_session(a, sink, sid, models ? dj_str(models, "currentModelId") : NULL);
		send_prompt(a);
		break;
	}
	case ACP_PHASE_PROMPT:
		copy_str(a->stop_reason, sizeof(a->stop_reason), dj_str(res, "stopReason"));
		a->phase = ACP_PHASE_DONE;
		if (a->cancel_sent && streq(a->stop_reason, "cancelled")) {
			/* stopped by bernstein (a timeout, a cancel): what stopped it
			 * decides the outcome, not the agent's word for it */
			acp_warning(&a->st, sink, "session/prompt",
				    "the agent ended its turn after session/cancel");
			break;
		}
		prompt_result(&a->st, sink, res, a->reply.buf);
		break;
	default:
		dialect_unknown(&a->st, sink, NULL, line, len, "an answer to no pending request");
		break;
	}
}

/* ---- permissions ---- */

static void push_path(struct acp *a, json_t *paths, const char *p)
{
	(void)a;
	if (p && p[0])
		json_array_append_new(paths, json_str_lossy(p));
}

/* Every path the tool call names: locations, rawInput's path keys, diffs. */
static json_t *tool_paths(struct acp *a, const json_t *tc)
{
	static const char *const keys[] = {"path",	    "file_path", "filePath", "filepath",
					   "absolute_path", "dir_path",	 "directory"};
	json_t *paths = json_array();
	json_t *raw = dj_obj(tc, "rawInput");
	json_t *v;
	size_t i;

	for (i = 0; i < json_array_size(dj_arr(tc, "locations")); i++)
		push_path(a, paths, dj_str(json_array_get(dj_arr(tc, "locations"), i), "path"));
	for (i = 0; raw && i < sizeof(keys) / sizeof(keys[0]); i++)
		push_path(a, paths, dj_str(raw, keys[i]));
	for (i = 0; i < json_array_size(dj_arr(tc, "content")); i++) {
		v = json_array_get(dj_arr(tc, "content"), i);
		if (streq(dj_str(v, "type"), "diff"))
			push_path(a, paths, dj_str(v, "path"));
	}
	return paths;
}

/* Why a path may not be touched, or NULL. */
static const char *path_refusal(struct acp *a, const char *path)
{
	char *rel = NULL;
	const char *why = NULL;
	unsigned bflags = BENEATH_NO_BERNSTEIN | (a->o.allow_git ? 0 : BENEATH_NO_GIT);

	if (!acp_path_inside(a->cwd, path, &rel))
		why = "outside the task's tree";
	else if (rel[0] && beneath_check_names(rel, strlen(rel), bflags, NULL) < 0)
		why = "in .git or .bernstein";
	free(rel);
	return why;
}

/* The optionId of the first option of the first kind listed that is offered. */
static const char *pick_option(const json_t *options, const char *k1, const char *k2)
{
	const char *kinds[2] = {k1, k2};
	size_t i, k;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < json_array_size(options); i++) {
			const json_t *v = json_array_get(options, i);

			if (streq(dj_str(v, "kind"), kinds[k]) && dj_str(v, "optionId"))
				return dj_str(v, "optionId");
		}
	}
	return NULL;
}

static void on_permission(struct acp *a, const struct event_sink *sink, const json_t *id,
			  const json_t *params)
{
	json_t *tc = dj_obj(params, "toolCall");
	json_t *options = dj_arr(params, "options");
	const char *kind = tc ? dj_str(tc, "kind") : NULL;
	json_t *paths = tool_paths(a, tc);
	const char *why = NULL, *option;
	bool allow;
	json_t *v, *p;
	size_t i;

	if (tc)
		tool_announce(&a->st, sink, "session/request_permission", tc);
	if (a->o.dangerous) {
		allow = true;
		why = "dangerous mode";
	} else if (streq(kind, "execute") || streq(kind, "fetch")) {
		allow = false;
		why = streq(kind, "execute") ? "a command may act outside the tree"
					     : "a fetch leaves the tree";
	} else {
		allow = true;
		why = "inside the task's tree";
		json_array_foreach(paths, i, v)
		{
			const char *r = path_refusal(a, json_string_value(v));

			if (r) {
				allow = false;
				why = r;
				break;
			}
		}
	}
	option = allow ? pick_option(options, "allow_once", "allow_always")
		       : pick_option(options, "reject_once", "reject_always");
	if (option)
		send_result(a, id,
			    json_pack("{s:{s:s, s:s}}", "outcome", "outcome", "selected",
				      "optionId", option));
	else
		send_result(a, id, json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled"));
	if (allow && option)
		a->permissions_granted++;
	else
		a->permissions_refused++;
	p = json_pack("{s:s, s:s?, s:s?, s:s?, s:o, s:s, s:s?}", "decision",
		      allow && option ? "allow" : "refuse", "kind", kind, "title",
		      tc ? dj_str(tc, "title") : NULL, "tool_id",
		      tc ? dj_str(tc, "toolCallId") : NULL, "paths", paths, "reason",
		      option ? why : "no option of that kind was offered", "option", option);
	acp_signal(&a->st, sink, "session/request_permission", "PERMISSION", p);
	json_decref(p);
}

/* ---- fs ---- */

static int confined_rel(struct acp *a, const char *path, char **ret_rel, char *msg, size_t size)
{
	const char *why;

	if (a->o.tree_fd < 0) {
		(void)snprintf(msg, size, "file access is not offered");
		return -EPERM;
	}
	if (!path || path[0] != '/') {
		(void)snprintf(msg, size, "the path must be absolute");
		return -EINVAL;
	}
	why = path_refusal(a, path);
	if (why) {
		(void)snprintf(msg, size, "'%.*s' is %s", 512, path, why);
		return -EPERM;
	}
	if (!acp_path_inside(a->cwd, path, ret_rel) || !(*ret_rel)[0]) {
		free(*ret_rel);
		*ret_rel = NULL;
		(void)snprintf(msg, size, "'%.*s' is the tree itself", 512, path);
		return -EISDIR;
	}
	return 0;
}

static void fs_refused(struct acp *a, const struct event_sink *sink, const char *method,
		       const json_t *id, int code, const char *msg)
{
	char w[800];

	a->fs_refused++;
	send_error(a, id, code, msg);
	(void)snprintf(w, sizeof(w), "%s refused: %s", method, msg);
	acp_warning(&a->st, sink, method, w);
}

/* The lines [line, line + limit) (1-based; limit 0: all) of text. */
static void slice_lines(const char *text, size_t len, int64_t line, int64_t limit, size_t *ret_off,
			size_t *ret_len)
{
	size_t i = 0, start;
	int64_t n;

	for (n = 1; n < line && i < len; i++)
		if (text[i] == '\n')
			n++;
	start = i;
	if (limit > 0) {
		for (n = 0; i < len; i++)
			if (text[i] == '\n' && ++n == limit) {
				i++;
				break;
			}
	} else {
		i = len;
	}
	*ret_off = start;
	*ret_len = i - start;
}

static void on_fs_read(struct acp *a, const struct event_sink *sink, const json_t *id,
		       const json_t *params)
{
	const char *path = dj_str(params, "path");
	struct diag d = {0};
	char msg[700];
	char *rel = NULL, *buf = NULL;
	size_t total = 0, off, n;
	struct stat st;
	int fd = -1, r;
	ssize_t got;

	r = confined_rel(a, path, &rel, msg, sizeof(msg));
	if (r < 0) {
		fs_refused(a, sink, "fs/read_text_file", id,
			   r == -EINVAL ? ACP_ERR_INVALID_PARAMS : ACP_ERR_INTERNAL, msg);
		goto out;
	}
	fd = beneath_open(a->o.tree_fd, rel, strlen(rel), O_RDONLY | O_NONBLOCK, 0,
			  BENEATH_NO_BERNSTEIN | (a->o.allow_git ? 0 : BENEATH_NO_GIT), &d);
	if (fd == -ENOENT) {
		/* a file about to be created: gemini writes a new file only
		 * after reading it as "" */
		a->fs_reads++;
		send_result(a, id, json_pack("{s:s}", "content", ""));
		goto out;
	}
	if (fd < 0) {
		fs_refused(a, sink, "fs/read_text_file", id, ACP_ERR_INTERNAL,
			   d.msg[0] ? d.msg : strerror(-fd));
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
		fs_refused(a, sink, "fs/read_text_file", id, ACP_ERR_INTERNAL,
			   "not a regular file with one link");
		goto out;
	}
	buf = xmalloc(a->o.max_file + 1);
	while (total <= a->o.max_file) {
		got = read(fd, buf + total, a->o.max_file + 1 - total);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		total += (size_t)got;
	}
	if (total > a->o.max_file) {
		(void)snprintf(msg, sizeof(msg), "the file is larger than %zu bytes",
			       a->o.max_file);
		fs_refused(a, sink, "fs/read_text_file", id, ACP_ERR_INTERNAL, msg);
		goto out;
	}
	slice_lines(buf, total, dj_int(params, "line"), dj_int(params, "limit"), &off, &n);
	if (!utf8_valid(buf + off, n)) {
		fs_refused(a, sink, "fs/read_text_file", id, ACP_ERR_INTERNAL,
			   "the file is not UTF-8 text");
		goto out;
	}
	a->fs_reads++;
	send_result(a, id, json_pack("{s:s%}", "content", buf + off, n));
out:
	if (fd >= 0)
		(void)close(fd);
	free(buf);
	free(rel);
}

static void on_fs_write(struct acp *a, const struct event_sink *sink, const json_t *id,
			const json_t *params)
{
	const char *path = dj_str(params, "path");
	json_t *content = json_object_get(params, "content");
	struct diag d = {0};
	char msg[700];
	char *rel = NULL;
	size_t clen;
	int r;

	if (!json_is_string(content)) {
		fs_refused(a, sink, "fs/write_text_file", id, ACP_ERR_INVALID_PARAMS,
			   "content must be a string");
		return;
	}
	clen = json_string_length(content);
	r = confined_rel(a, path, &rel, msg, sizeof(msg));
	if (r < 0) {
		fs_refused(a, sink, "fs/write_text_file", id,
			   r == -EINVAL ? ACP_ERR_INVALID_PARAMS : ACP_ERR_INTERNAL, msg);
		goto out;
	}
	if (clen > a->o.max_file) {
		(void)snprintf(msg, sizeof(msg), "content is larger than %zu bytes", a->o.max_file);
		fs_refused(a, sink, "fs/write_text_file", id, ACP_ERR_INTERNAL, msg);
		goto out;
	}
	r = beneath_write(a->o.tree_fd, rel, json_string_value(content), clen,
			  BENEATH_NO_BERNSTEIN | (a->o.allow_git ? 0 : BENEATH_NO_GIT), &d);
	if (r < 0) {
		fs_refused(a, sink, "fs/write_text_file", id, ACP_ERR_INTERNAL,
			   d.msg[0] ? d.msg : strerror(-r));
		goto out;
	}
	a->fs_writes++;
	send_result(a, id, json_null());
	{
		json_t *p = json_pack("{s:s, s:I}", "path", rel, "bytes", (json_int_t)clen);

		acp_signal(&a->st, sink, "fs/write_text_file", "FS_WRITE", p);
		json_decref(p);
	}
out:
	free(rel);
}

static void on_request(struct acp *a, const struct event_sink *sink, const json_t *o,
		       const char *method)
{
	const json_t *id = json_object_get(o, "id");
	json_t *params = dj_obj(o, "params");
	char msg[300];

	if (streq(method, "session/request_permission")) {
		on_permission(a, sink, id, params);
	} else if (streq(method, "fs/read_text_file")) {
		on_fs_read(a, sink, id, params);
	} else if (streq(method, "fs/write_text_file")) {
		on_fs_write(a, sink, id, params);
	} else {
		send_error(a, id, ACP_ERR_METHOD_NOT_FOUND, "Method not found");
		(void)snprintf(msg, sizeof(msg),
			       "the agent called '%.200s', which bernstein does not serve", method);
		acp_warning(&a->st, sink, method, msg);
	}
}

/* A JSON-RPC 2.0 request, notification or answer (ids: numbers or strings). */
static bool jsonrpc_shaped(const json_t *o)
{
	const json_t *ver = json_object_get(o, "jsonrpc");
	const json_t *m = json_object_get(o, "method");
	const json_t *id = json_object_get(o, "id");

	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
		return false;
	if (m && !json_is_string(m))
		return false;
	if (id && !json_is_integer(id) && !json_is_string(id) && !json_is_null(id))
		return false;
	return m || id;
}

/* A frame that is not one: an unknown event and the turn's failure. */
static int bad_frame(struct acp *a, const struct event_sink *sink, const char *line, size_t len,
		     const char *reason, unsigned col, const char *what, struct diag *reterr)
{
	char msg[700];

	dialect_unknown(&a->st, sink, NULL, line, len, reason);
	(void)snprintf(msg, sizeof(msg), "malformed frame on line %llu: %s",
		       (unsigned long long)a->st.line_no, what);
	diag_set(reterr, a->st.stream_name, (unsigned)a->st.line_no, col, "%s", what);
	fail(a, sink, "protocol_error", "acp", msg);
	return -EBADMSG;
}

/* One well-formed frame: a request, a notification or an answer. */
static void dispatch(struct acp *a, const struct event_sink *sink, const json_t *o,
		     const char *line, size_t len)
{
	const char *method = dj_str(o, "method");
	const json_t *id = json_object_get(o, "id");

	if (method && id) {
		if (a->phase == ACP_PHASE_DONE)
			send_error(a, id, ACP_ERR_INVALID_REQUEST, "the turn is over");
		else
			on_request(a, sink, o, method);
	} else if (method) {
		json_t *u = dj_obj(dj_obj(o, "params"), "update");

		if (streq(method, "session/update") && u) {
			/* a loaded session's replay is history, not this run */
			if (a->phase != ACP_PHASE_LOAD)
				session_update(&a->st, sink, u, line, len, &a->reply);
		} else {
			dialect_unknown(&a->st, sink, method, line, len, "unknown notification");
		}
	} else {
		on_response(a, sink, o, line, len);
	}
}

int acp_feed_line(struct acp *a, const char *line, size_t len, const struct event_sink *sink,
		  struct diag *reterr)
{
	struct diag jd;
	json_t *o = NULL;
	char msg[128];
	size_t i;
	int r = 0;

	a->st.line_no++;
	if (!line)
		len = 0;
	for (i = 0; i < len && strchr(" \t\r\n\v\f", line[i]) && line[i]; i++)
		;
	if (i == len)
		return 0;
	if (acp_finished(a) && a->phase == ACP_PHASE_FAILED) {
		/* a failed conversation answers nothing more; its lines stay in agent.log */
		return 0;
	}
	if (len > a->o.max_frame) {
		dialect_unknown(&a->st, sink, NULL, line, len, "frame too long");
		(void)snprintf(msg, sizeof(msg), "a frame of %zu bytes is longer than %zu bytes",
			       len, a->o.max_frame);
		diag_set(reterr, a->st.stream_name, (unsigned)a->st.line_no, 0, "%s", msg);
		fail(a, sink, "protocol_error", "acp", msg);
		return -ENOBUFS;
	}
	diag_clear(&jd);
	r = json_parse_strict(a->st.stream_name, line, len, &o, &jd);
	if (r < 0)
		return bad_frame(a, sink, line, len, "not JSON", jd.col, jd.msg, reterr);
	if (!json_is_object(o)) {
		json_decref(o);
		return bad_frame(a, sink, line, len, "not a JSON object", 1, "not a JSON object",
				 reterr);
	}
	if (!jsonrpc_shaped(o)) {
		json_decref(o);
		return bad_frame(a, sink, line, len, "not a JSON-RPC 2.0 message", 1,
				 "not a JSON-RPC 2.0 message", reterr);
	}
	dispatch(a, sink, o, line, len);
	json_decref(o);
	if (a->out_overflow) {
		a->out_overflow = false;
		fail(a, sink, "protocol_error", "acp",
		     "the agent asked for more than bernstein queues for its stdin");
	}
	return 0;
}
