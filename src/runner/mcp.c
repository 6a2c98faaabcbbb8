/* MCP client over stdio (mcp.h). */
#include "runner/mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/spawn.h"
#include "runner/text.h"
#include "util/fsutil.h"
#include "util/rpcwire.h"
#include "util/json.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

struct mcp_client {
	char *name;
	struct proc proc;
	int in_fd;	  /* the server's stdin (non-blocking), -1 when closed */
	struct rpcwire w; /* rfd = proc.out_fd (owned by proc), wfd = in_fd */
	uint64_t timeout_ms;
	json_int_t next_id;
	char info[256];
	bool dead;
};

static uint64_t mono_ms(void)
{
	return rpcwire_now_ms();
}

/* ---- the client ---- */

static int send_msg(struct mcp_client *c, json_t *msg, uint64_t deadline, struct diag *reterr)
{
	int r;

	c->w.wfd = c->in_fd;
	r = rpcwire_send(&c->w, msg, deadline);
	if (r == -EINVAL) {
		diag_set(reterr, NULL, 0, 0, "mcp '%s': cannot serialise a message", c->name);
		return r;
	}
	if (r < 0) {
		c->dead = true;
		diag_set(reterr, NULL, 0, 0, "mcp '%s': cannot write to the server: %s", c->name,
			 r == -ETIMEDOUT ? "timed out" : strerror(-r));
	}
	return r;
}

/* The next complete line (without the newline) into *ret (owned), waiting
 * until deadline. */
static int read_line(struct mcp_client *c, char **ret, size_t *ret_len, uint64_t deadline,
		     struct diag *reterr)
{
	int r;

	c->w.rfd = c->proc.out_fd;
	r = rpcwire_read_line(&c->w, ret, ret_len, deadline);
	if (r == -EPIPE) {
		c->dead = true;
		diag_set(reterr, NULL, 0, 0, "mcp '%s': the server closed its output", c->name);
	} else if (r == -ENOBUFS) {
		c->dead = true;
		diag_set(reterr, NULL, 0, 0, "mcp '%s': a message is larger than %zu bytes",
			 c->name, c->w.rbuf.max);
	} else if (r == -ETIMEDOUT) {
		diag_set(reterr, NULL, 0, 0, "mcp '%s': no answer from the server in time",
			 c->name);
	} else if (r < 0) {
		c->dead = true;
		diag_set(reterr, NULL, 0, 0, "mcp '%s': read: %s", c->name, strerror(-r));
	}
	return r;
}

/* A request from the server: answer it. */
static int answer_server(struct mcp_client *c, const json_t *msg, uint64_t deadline,
			 struct diag *reterr)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *reply;
	int r;

	if (method && strcmp(method, "ping") == 0)
		reply = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id",
				  json_object_get(msg, "id"), "result");
	else
		reply = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
				  json_object_get(msg, "id"), "error", "code", -32601, "message",
				  "method not found");
	if (!reply)
		return 0;
	r = send_msg(c, reply, deadline, reterr);
	json_decref(reply);
	return r;
}

/* One request; *ret gets the result (owned). */
static int request(struct mcp_client *c, const char *method, json_t *params, uint64_t timeout_ms,
		   json_t **ret, struct diag *reterr)
{
	uint64_t deadline = mono_ms() + (timeout_ms ? timeout_ms : c->timeout_ms);
	json_int_t id = ++c->next_id;
	json_t *msg;
	int r;

	if (c->dead) {
		diag_set(reterr, NULL, 0, 0, "mcp '%s': the server is gone", c->name);
		return -EPIPE;
	}
	msg = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
	if (params)
		(void)json_object_set(msg, "params", params);
	r = send_msg(c, msg, deadline, reterr);
	json_decref(msg);
	if (r < 0)
		return r;
	for (;;) {
		struct diag d = {0};
		json_t *m = NULL, *mid;
		char *line = NULL;
		size_t len = 0;

		r = read_line(c, &line, &len, deadline, reterr);
		if (r < 0)
			return r;
		if (len == 0 || (len == 1 && line[0] == '\r')) {
			free(line);
			continue;
		}
		r = json_parse_strict("mcp", line, len, &m, &d);
		free(line);
		if (r < 0 || !json_is_object(m)) {
			json_decref(m);
			c->dead = true;
			diag_set(reterr, NULL, 0, 0,
				 "mcp '%s': the server sent a malformed message%s%s", c->name,
				 d.msg[0] ? ": " : "", d.msg);
			return -EBADMSG;
		}
		mid = json_object_get(m, "id");
		if (json_object_get(m, "method")) {
			if (mid && !json_is_null(mid))
				r = answer_server(c, m, deadline, reterr);
			json_decref(m);
			if (r < 0)
				return r;
			continue; /* a notification or a server request */
		}
		if (!json_is_integer(mid) || json_integer_value(mid) != id) {
			json_decref(m);
			continue; /* a stale answer (a request that timed out) */
		}
		if (json_object_get(m, "error")) {
			json_t *e = json_object_get(m, "error");
			const char *em = json_string_value(json_object_get(e, "message"));

			diag_set(reterr, NULL, 0, 0, "mcp '%s': %s failed: %s (%lld)", c->name,
				 method, em ? em : "no message",
				 (long long)json_integer_value(json_object_get(e, "code")));
			json_decref(m);
			return -EPROTO;
		}
		if (!json_is_object(json_object_get(m, "result"))) {
			json_decref(m);
			diag_set(reterr, NULL, 0, 0,
				 "mcp '%s': %s: the answer has no result object", c->name, method);
			return -EBADMSG;
		}
		*ret = json_incref(json_object_get(m, "result"));
		json_decref(m);
		return 0;
	}
}

int mcp_start(const struct mcp_spec *spec, struct mcp_client **ret, struct diag *reterr)
{
	struct proc_spec ps = PROC_SPEC_INIT;
	struct mcp_client *c;
	json_t *params = NULL, *result = NULL, *note = NULL, *si;
	int in[2] = {-1, -1};
	int r;

	c = xcalloc(1, sizeof(*c));
	c->name = xstrdup(spec->name ? spec->name : "mcp");
	c->proc = (struct proc)PROC_INIT;
	c->in_fd = -1;
	rpcwire_init(&c->w, -1, -1, spec->max_message);
	c->timeout_ms = spec->timeout_ms ? spec->timeout_ms : MCP_DEFAULT_TIMEOUT_MS;

	if (pipe2(in, O_CLOEXEC) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "mcp '%s': pipe: %s", c->name, strerror(errno));
		goto fail;
	}
	strvec_push(&ps.argv, spec->path);
	if (spec->args)
		strvec_pushv(&ps.argv, spec->args);
	if (spec->env)
		strvec_pushv(&ps.env, spec->env);
	ps.cwd = spec->cwd;
	ps.stdin_fd = in[0];
	in[0] = -1;
	ps.flags = SPAWN_NEW_SESSION | SPAWN_PIPE_STDOUT;
	r = proc_spawn(&ps, &c->proc, reterr);
	proc_spec_release(&ps);
	if (r < 0) {
		diag_prefix(reterr, "mcp '%s'", c->name);
		goto fail;
	}
	c->in_fd = in[1];
	in[1] = -1;
	if (fcntl(c->in_fd, F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}

	params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_PROTOCOL_VERSION,
			   "capabilities", "clientInfo", "name", "bernstein", "version",
			   spec->client_version ? spec->client_version : "0");
	r = request(c, "initialize", params, 0, &result, reterr);
	if (r < 0)
		goto fail;
	si = json_object_get(result, "serverInfo");
	(void)snprintf(c->info, sizeof(c->info), "%s%s%s",
		       json_string_value(json_object_get(si, "name"))
			       ? json_string_value(json_object_get(si, "name"))
			       : "",
		       json_string_value(json_object_get(si, "version")) ? " " : "",
		       json_string_value(json_object_get(si, "version"))
			       ? json_string_value(json_object_get(si, "version"))
			       : "");
	note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
	r = send_msg(c, note, mono_ms() + c->timeout_ms, reterr);
	if (r < 0)
		goto fail;
	json_decref(params);
	json_decref(result);
	json_decref(note);
	*ret = c;
	return 0;
fail:
	close_fdp(&in[0]);
	close_fdp(&in[1]);
	json_decref(params);
	json_decref(result);
	json_decref(note);
	mcp_stop(c);
	return r;
}

int mcp_list_tools(struct mcp_client *c, json_t **ret, struct diag *reterr)
{
	json_t *all = json_array(), *cursor = NULL;
	int pages, r = 0;

	for (pages = 0; pages < 64; pages++) {
		json_t *params = NULL, *result = NULL, *tools, *t, *next;
		size_t i;

		if (cursor)
			params = json_pack("{s:O}", "cursor", cursor);
		r = request(c, "tools/list", params, 0, &result, reterr);
		json_decref(params);
		if (r < 0)
			break;
		tools = json_object_get(result, "tools");
		if (!json_is_array(tools)) {
			diag_set(reterr, NULL, 0, 0, "mcp '%s': tools/list: no 'tools' array",
				 c->name);
			json_decref(result);
			r = -EBADMSG;
			break;
		}
		json_array_foreach(tools, i, t)
		{
			if (!json_is_string(json_object_get(t, "name")) ||
			    json_string_length(json_object_get(t, "name")) == 0)
				continue;
			if (json_array_size(all) >= MCP_MAX_TOOLS) {
				diag_set(reterr, NULL, 0, 0, "mcp '%s': more than %d tools",
					 c->name, MCP_MAX_TOOLS);
				json_decref(result);
				r = -ENOBUFS;
				goto out;
			}
			(void)json_array_append(all, t);
		}
		next = json_object_get(result, "nextCursor");
		json_decref(cursor);
		cursor =
			json_is_string(next) && json_string_length(next) ? json_incref(next) : NULL;
		json_decref(result);
		if (!cursor)
			break;
	}
out:
	json_decref(cursor);
	if (r < 0) {
		json_decref(all);
		return r;
	}
	*ret = all;
	return 0;
}

int mcp_call_tool(struct mcp_client *c, const char *name, const json_t *arguments,
		  uint64_t timeout_ms, json_t **ret_result, struct diag *reterr)
{
	json_t *params = json_pack("{s:s}", "name", name);
	int r;

	(void)json_object_set_new(params, "arguments",
				  json_is_object(arguments) ? json_deep_copy(arguments)
							    : json_object());
	r = request(c, "tools/call", params, timeout_ms, ret_result, reterr);
	json_decref(params);
	return r;
}

const char *mcp_server_info(const struct mcp_client *c)
{
	return c->info;
}

struct mcp_client *mcp_stop(struct mcp_client *c)
{
	int st;

	if (!c)
		return NULL;
	close_fdp(&c->in_fd);
	if (c->proc.pid > 0) {
		bool reaped = false;
		int sig = 0;

		/* stdin closed: a well-behaved server exits; then TERM, then KILL */
		for (uint64_t until = mono_ms() + 2000;;) {
			pid_t w = waitpid(c->proc.pid, &st, WNOHANG);
			struct timespec ts = {0, 20 * 1000000};

			if (w == c->proc.pid || (w < 0 && errno == ECHILD)) {
				reaped = true;
				break;
			}
			if (mono_ms() >= until) {
				if (sig == SIGKILL)
					break;
				sig = sig == 0 ? SIGTERM : SIGKILL;
				(void)proc_kill_group(&c->proc, sig);
				until = mono_ms() + 1000;
			}
			(void)nanosleep(&ts, NULL);
		}
		(void)proc_kill_group(&c->proc, SIGKILL); /* stragglers of its group */
		if (!reaped)
			while (waitpid(c->proc.pid, &st, 0) < 0 && errno == EINTR)
				;
	}
	proc_release(&c->proc);
	rpcwire_release(&c->w);
	free(c->name);
	free(c);
	return NULL;
}

int mcp_result_text(const json_t *result, struct sbuf *out, bool *ret_is_error)
{
	json_t *content = json_object_get(result, "content"), *part;
	size_t i;
	int r = 0;

	*ret_is_error = json_is_true(json_object_get(result, "isError"));
	json_array_foreach(content, i, part)
	{
		const char *type = json_string_value(json_object_get(part, "type"));
		json_t *text = json_object_get(part, "text");

		if (i > 0 && sbuf_addc(out, '\n') < 0)
			return -ENOBUFS;
		if (type && strcmp(type, "text") == 0 && json_is_string(text)) {
			r = text_add_utf8(out, json_string_value(text), json_string_length(text));
		} else if (type && strcmp(type, "resource") == 0) {
			json_t *res = json_object_get(part, "resource");
			json_t *rt = json_object_get(res, "text");

			if (json_is_string(rt))
				r = text_add_utf8(out, json_string_value(rt),
						  json_string_length(rt));
			else
				r = sbuf_addf(
					out, "[resource %s]",
					json_string_value(json_object_get(res, "uri"))
						? json_string_value(json_object_get(res, "uri"))
						: "");
		} else {
			const char *mime = json_string_value(json_object_get(part, "mimeType"));

			r = sbuf_addf(out, "[%s%s%s]", type ? type : "content", mime ? " " : "",
				      mime ? mime : "");
		}
		if (r < 0)
			return -ENOBUFS;
	}
	if (json_array_size(content) == 0 && json_object_get(result, "structuredContent")) {
		char *s = json_dumps(json_object_get(result, "structuredContent"),
				     JSON_COMPACT | JSON_ENCODE_ANY);

		if (s) {
			r = sbuf_adds(out, s);
			free(s);
		}
	}
	return r < 0 ? -ENOBUFS : 0;
}
