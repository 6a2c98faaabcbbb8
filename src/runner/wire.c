/* OpenAI Chat Completions and Responses wire formats (wire.h). */
#include "runner/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/sse.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

const char *wire_api_name(enum wire_api api)
{
	return api == WIRE_RESPONSES ? "responses" : "chat_completions";
}

const char *wire_api_path(enum wire_api api)
{
	return api == WIRE_RESPONSES ? "/responses" : "/chat/completions";
}

/* ---- requests ----------------------------------------------------------- */

static const char *item_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static json_t *chat_messages(const struct wire_params *p, const json_t *items)
{
	json_t *msgs = json_array(), *it;
	size_t i;

	if (p->system && *p->system)
		(void)json_array_append_new(
			msgs, json_pack("{s:s, s:s}", "role", "system", "content", p->system));
	json_array_foreach(items, i, it)
	{
		const char *role = item_str(it, "role");
		json_t *calls = json_object_get(it, "tool_calls");

		if (strcmp(role, "assistant") == 0) {
			json_t *m = json_object();
			const char *content = item_str(it, "content");

			(void)json_object_set_new(m, "role", json_string("assistant"));
			if (json_array_size(calls) > 0 && !*content)
				(void)json_object_set_new(m, "content", json_null());
			else
				(void)json_object_set_new(m, "content", json_string(content));
			if (json_array_size(calls) > 0) {
				json_t *tc = json_array(), *c;
				size_t k;

				json_array_foreach(calls, k, c)
				{
					(void)json_array_append_new(
						tc,
						json_pack("{s:s, s:s, s:{s:s, s:s}}", "id",
							  item_str(c, "id"), "type", "function",
							  "function", "name", item_str(c, "name"),
							  "arguments", item_str(c, "arguments")));
				}
				(void)json_object_set_new(m, "tool_calls", tc);
			}
			(void)json_array_append_new(msgs, m);
		} else if (strcmp(role, "tool") == 0) {
			(void)json_array_append_new(
				msgs, json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
						item_str(it, "tool_call_id"), "content",
						item_str(it, "content")));
		} else {
			(void)json_array_append_new(msgs,
						    json_pack("{s:s, s:s}", "role", "user",
							      "content", item_str(it, "content")));
		}
	}
	return msgs;
}

static json_t *responses_input(const json_t *items)
{
	json_t *in = json_array(), *it;
	size_t i;

	json_array_foreach(items, i, it)
	{
		const char *role = item_str(it, "role");

		if (strcmp(role, "assistant") == 0) {
			json_t *calls = json_object_get(it, "tool_calls"), *c;
			const char *content = item_str(it, "content");
			size_t k;

			if (*content)
				(void)json_array_append_new(
					in, json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "type",
						      "message", "role", "assistant", "content",
						      "type", "output_text", "text", content));
			json_array_foreach(calls, k, c)
			{
				(void)json_array_append_new(
					in, json_pack("{s:s, s:s, s:s, s:s}", "type",
						      "function_call", "call_id", item_str(c, "id"),
						      "name", item_str(c, "name"), "arguments",
						      item_str(c, "arguments")));
			}
		} else if (strcmp(role, "tool") == 0) {
			(void)json_array_append_new(
				in, json_pack("{s:s, s:s, s:s}", "type", "function_call_output",
					      "call_id", item_str(it, "tool_call_id"), "output",
					      item_str(it, "content")));
		} else {
			(void)json_array_append_new(in, json_pack("{s:s, s:s, s:[{s:s, s:s}]}",
								  "type", "message", "role", "user",
								  "content", "type", "input_text",
								  "text", item_str(it, "content")));
		}
	}
	return in;
}

static json_t *tool_defs(enum wire_api api, const json_t *tools)
{
	json_t *out = json_array(), *t;
	size_t i;

	json_array_foreach(tools, i, t)
	{
		json_t *params = json_object_get(t, "parameters");
		json_t *fn = json_object();

		(void)json_object_set_new(fn, "name", json_string(item_str(t, "name")));
		if (json_string_value(json_object_get(t, "description")))
			(void)json_object_set(fn, "description", json_object_get(t, "description"));
		if (params)
			(void)json_object_set(fn, "parameters", params);
		else
			(void)json_object_set_new(
				fn, "parameters",
				json_pack("{s:s, s:{}}", "type", "object", "properties"));
		if (api == WIRE_CHAT) {
			(void)json_array_append_new(
				out, json_pack("{s:s, s:o}", "type", "function", "function", fn));
		} else {
			(void)json_object_set_new(fn, "type", json_string("function"));
			(void)json_object_set_new(fn, "strict", json_false());
			(void)json_array_append_new(out, fn);
		}
	}
	return out;
}

json_t *wire_build_request(const struct wire_params *p, const json_t *items, const json_t *tools)
{
	json_t *req = json_object();

	(void)json_object_set_new(req, "model", json_string(p->model));
	if (p->api == WIRE_CHAT) {
		(void)json_object_set_new(req, "messages", chat_messages(p, items));
	} else {
		if (p->system && *p->system)
			(void)json_object_set_new(req, "instructions", json_string(p->system));
		(void)json_object_set_new(req, "input", responses_input(items));
		(void)json_object_set_new(req, "store", json_false());
	}
	if (tools && json_array_size(tools) > 0)
		(void)json_object_set_new(req, "tools", tool_defs(p->api, tools));
	(void)json_object_set_new(req, "stream", json_boolean(p->stream));
	if (p->stream && p->api == WIRE_CHAT)
		(void)json_object_set_new(req, "stream_options",
					  json_pack("{s:b}", "include_usage", 1));
	if (p->has_temperature)
		(void)json_object_set_new(req, "temperature", json_real(p->temperature));
	if (p->has_top_p)
		(void)json_object_set_new(req, "top_p", json_real(p->top_p));
	if (p->has_top_k)
		(void)json_object_set_new(req, "top_k", json_integer(p->top_k));
	if (p->has_max_tokens)
		(void)json_object_set_new(req,
					  p->api == WIRE_CHAT ? "max_tokens" : "max_output_tokens",
					  json_integer(p->max_tokens));
	return req;
}

/* ---- replies ------------------------------------------------------------ */

void wire_reply_release(struct wire_reply *r)
{
	size_t i;

	if (!r)
		return;
	free(r->text);
	for (i = 0; i < r->ncalls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].name);
		free(r->calls[i].arguments);
	}
	free(r->calls);
	free(r->finish);
	free(r->id);
	memset(r, 0, sizeof(*r));
}

static const char *kind_of(const json_t *v)
{
	if (!v)
		return "missing";
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

static int add_call(struct wire_reply *r, const char *id, size_t idlen, const char *name,
		    size_t namelen, const char *args, size_t argslen, struct diag *reterr)
{
	struct wire_call *c;

	if (r->ncalls >= WIRE_MAX_CALLS) {
		diag_set(reterr, NULL, 0, 0, "more than %d tool calls in one reply",
			 WIRE_MAX_CALLS);
		return -ENOBUFS;
	}
	if (!name || !namelen) {
		diag_set(reterr, NULL, 0, 0, "a tool call without a function name");
		return -EBADMSG;
	}
	if (namelen > WIRE_MAX_ID || idlen > WIRE_MAX_ID) {
		diag_set(reterr, NULL, 0, 0, "a tool call name or id longer than %d bytes",
			 WIRE_MAX_ID);
		return -ENOBUFS;
	}
	r->calls = xrealloc(r->calls, st_mult(r->ncalls + 1, sizeof(*r->calls)));
	c = &r->calls[r->ncalls];
	c->arguments_over = 0;
	if (argslen > WIRE_MAX_ARGS) {
		/* refused by the tool, not by the reply */
		c->arguments_over = argslen;
		args = NULL;
		argslen = 0;
	}
	if (id && idlen)
		c->id = xstrndup(id, idlen);
	else {
		char buf[32];

		(void)snprintf(buf, sizeof(buf), "call_%zu", r->ncalls + 1);
		c->id = xstrdup(buf);
	}
	c->name = xstrndup(name, namelen);
	c->arguments = args && argslen ? xstrndup(args, argslen) : xstrdup("{}");
	r->ncalls++;
	return 0;
}

/* The arguments of a call: a JSON string as the API says, or (some servers)
 * an object, which is serialised. */
static int call_args(const json_t *a, char **ret, size_t *ret_len)
{
	if (!a || json_is_null(a)) {
		*ret = xstrdup("{}");
		*ret_len = 2;
		return 0;
	}
	if (json_is_string(a)) {
		*ret = xstrndup(json_string_value(a), json_string_length(a));
		*ret_len = json_string_length(a);
		return 0;
	}
	if (json_is_object(a)) {
		char *s = json_dumps(a, JSON_COMPACT);

		if (!s)
			return -EBADMSG;
		*ret = xstrdup(s);
		*ret_len = strlen(s);
		free(s);
		return 0;
	}
	return -EBADMSG;
}

static int api_error(const json_t *err, struct diag *reterr)
{
	const char *msg = json_string_value(json_object_get(err, "message"));
	const char *code = json_string_value(json_object_get(err, "code"));
	const char *type = json_string_value(json_object_get(err, "type"));
	json_t *icode = json_object_get(err, "code");

	if (json_is_string(err))
		msg = json_string_value(err);
	diag_set(reterr, NULL, 0, 0, "the server reported an error: %s%s%s%s",
		 msg ? msg : "(no message)", code || type ? " (" : "",
		 code ? code : (type ? type : ""), code || type ? ")" : "");
	if ((code && (strstr(code, "rate_limit") || strstr(code, "429"))) ||
	    (type && (strstr(type, "rate_limit") || strstr(type, "429"))) ||
	    (json_is_integer(icode) && json_integer_value(icode) == 429))
		return -EBUSY;
	return -EPROTO;
}

static void usage_from(struct wire_reply *r, const json_t *u, const char *in, const char *out)
{
	json_t *i = json_object_get(u, in), *o = json_object_get(u, out);

	if (!json_is_object(u) || (!json_is_integer(i) && !json_is_integer(o)))
		return;
	r->has_usage = true;
	r->input_tokens = json_is_integer(i) ? json_integer_value(i) : 0;
	r->output_tokens = json_is_integer(o) ? json_integer_value(o) : 0;
}

static void set_str(char **dst, const json_t *v)
{
	const char *s = json_string_value(v);

	if (s && json_string_length(v) <= WIRE_MAX_ID) {
		free(*dst);
		*dst = xstrdup(s);
	}
}

/* content: a string, null, or (some servers) an array of {"type": "text", "text"}. */
static int chat_content(const json_t *c, struct sbuf *text, struct diag *reterr)
{
	size_t i;
	json_t *part;

	if (!c || json_is_null(c))
		return 0;
	if (json_is_string(c)) {
		if (sbuf_add(text, json_string_value(c), json_string_length(c)) < 0)
			goto big;
		return 0;
	}
	if (!json_is_array(c)) {
		diag_set(reterr, NULL, 0, 0, "message content is %s", kind_of(c));
		return -EBADMSG;
	}
	json_array_foreach(c, i, part)
	{
		json_t *t = json_object_get(part, "text");

		if (json_is_string(t) &&
		    sbuf_add(text, json_string_value(t), json_string_length(t)) < 0)
			goto big;
	}
	return 0;
big:
	diag_set(reterr, NULL, 0, 0, "reply text larger than %d bytes", WIRE_MAX_TEXT);
	return -ENOBUFS;
}

static int parse_chat(const json_t *root, struct wire_reply *r, struct diag *reterr)
{
	struct sbuf text = SBUF_INIT(WIRE_MAX_TEXT);
	json_t *choices, *choice, *msg, *calls, *c;
	size_t i;
	int rc;

	if (json_object_get(root, "error") && !json_is_null(json_object_get(root, "error")))
		return api_error(json_object_get(root, "error"), reterr);
	choices = json_object_get(root, "choices");
	if (!json_is_array(choices) || json_array_size(choices) == 0) {
		diag_set(reterr, NULL, 0, 0, "reply has no 'choices' (%s)", kind_of(choices));
		return -EBADMSG;
	}
	choice = json_array_get(choices, 0);
	msg = json_object_get(choice, "message");
	if (!json_is_object(msg)) {
		diag_set(reterr, NULL, 0, 0, "choices[0].message is %s", kind_of(msg));
		return -EBADMSG;
	}
	rc = chat_content(json_object_get(msg, "content"), &text, reterr);
	if (rc < 0)
		goto out;
	calls = json_object_get(msg, "tool_calls");
	if (calls && !json_is_null(calls) && !json_is_array(calls)) {
		diag_set(reterr, NULL, 0, 0, "message.tool_calls is %s", kind_of(calls));
		rc = -EBADMSG;
		goto out;
	}
	json_array_foreach(calls, i, c)
	{
		json_t *fn = json_object_get(c, "function"), *id = json_object_get(c, "id");
		json_t *name = json_object_get(fn, "name");
		char *args = NULL;
		size_t alen = 0;

		if (!json_is_string(name) || (id && !json_is_null(id) && !json_is_string(id))) {
			diag_set(reterr, NULL, 0, 0, "tool_calls[%zu]: no function name", i);
			rc = -EBADMSG;
			goto out;
		}
		if (call_args(json_object_get(fn, "arguments"), &args, &alen) < 0) {
			diag_set(reterr, NULL, 0, 0, "tool_calls[%zu]: arguments are not a string",
				 i);
			rc = -EBADMSG;
			goto out;
		}
		rc = add_call(r, json_string_value(id), json_string_length(id),
			      json_string_value(name), json_string_length(name), args, alen,
			      reterr);
		free(args);
		if (rc < 0)
			goto out;
	}
	set_str(&r->finish, json_object_get(choice, "finish_reason"));
	set_str(&r->id, json_object_get(root, "id"));
	usage_from(r, json_object_get(root, "usage"), "prompt_tokens", "completion_tokens");
	r->text = sbuf_detach(&text, NULL);
	rc = 0;
out:
	sbuf_release(&text);
	return rc;
}

/* A Responses output array (non-stream body, or response.completed). */
static int responses_output(const json_t *output, struct wire_reply *r, struct sbuf *text,
			    struct diag *reterr)
{
	json_t *item;
	size_t i;
	int rc;

	if (!json_is_array(output)) {
		diag_set(reterr, NULL, 0, 0, "response 'output' is %s", kind_of(output));
		return -EBADMSG;
	}
	json_array_foreach(output, i, item)
	{
		const char *type = json_string_value(json_object_get(item, "type"));

		if (!type)
			continue;
		if (strcmp(type, "message") == 0) {
			json_t *content = json_object_get(item, "content"), *part;
			size_t k;

			if (json_is_string(content) && sbuf_add(text, json_string_value(content),
								json_string_length(content)) < 0)
				goto big;
			json_array_foreach(content, k, part)
			{
				const char *pt = json_string_value(json_object_get(part, "type"));
				json_t *t = json_object_get(part, pt && strcmp(pt, "refusal") == 0
									  ? "refusal"
									  : "text");

				if (pt &&
				    (strcmp(pt, "output_text") == 0 || strcmp(pt, "refusal") == 0 ||
				     strcmp(pt, "text") == 0) &&
				    json_is_string(t) &&
				    sbuf_add(text, json_string_value(t), json_string_length(t)) < 0)
					goto big;
			}
		} else if (strcmp(type, "function_call") == 0) {
			json_t *id = json_object_get(item, "call_id"), *name;
			char *args = NULL;
			size_t alen = 0;

			if (!json_is_string(id))
				id = json_object_get(item, "id");
			name = json_object_get(item, "name");
			if (!json_is_string(name)) {
				diag_set(reterr, NULL, 0, 0,
					 "output[%zu]: function_call without a name", i);
				return -EBADMSG;
			}
			if (call_args(json_object_get(item, "arguments"), &args, &alen) < 0) {
				diag_set(reterr, NULL, 0, 0,
					 "output[%zu]: function_call arguments are not a string",
					 i);
				return -EBADMSG;
			}
			rc = add_call(r, json_string_value(id), json_string_length(id),
				      json_string_value(name), json_string_length(name), args, alen,
				      reterr);
			free(args);
			if (rc < 0)
				return rc;
		}
		/* reasoning, web_search_call, ...: not ours */
	}
	return 0;
big:
	diag_set(reterr, NULL, 0, 0, "reply text larger than %d bytes", WIRE_MAX_TEXT);
	return -ENOBUFS;
}

static int parse_responses(const json_t *root, struct wire_reply *r, struct diag *reterr)
{
	struct sbuf text = SBUF_INIT(WIRE_MAX_TEXT);
	const char *status = json_string_value(json_object_get(root, "status"));
	json_t *err = json_object_get(root, "error");
	int rc;

	if ((err && !json_is_null(err)) || (status && strcmp(status, "failed") == 0))
		return api_error(err && !json_is_null(err) ? err : root, reterr);
	rc = responses_output(json_object_get(root, "output"), r, &text, reterr);
	if (rc < 0)
		goto out;
	set_str(&r->finish, json_object_get(root, "status"));
	set_str(&r->id, json_object_get(root, "id"));
	usage_from(r, json_object_get(root, "usage"), "input_tokens", "output_tokens");
	r->text = sbuf_detach(&text, NULL);
out:
	sbuf_release(&text);
	return rc;
}

int wire_parse_body(enum wire_api api, const char *body, size_t len, struct wire_reply *ret,
		    struct diag *reterr)
{
	struct wire_reply r = {0};
	json_t *root = NULL;
	int rc;

	rc = json_parse_strict("reply", body, len, &root, reterr);
	if (rc < 0) {
		diag_prefix(reterr, "malformed reply");
		return -EBADMSG;
	}
	if (!json_is_object(root)) {
		diag_set(reterr, NULL, 0, 0, "malformed reply: %s, not an object", kind_of(root));
		json_decref(root);
		return -EBADMSG;
	}
	rc = api == WIRE_CHAT ? parse_chat(root, &r, reterr) : parse_responses(root, &r, reterr);
	json_decref(root);
	if (rc < 0) {
		wire_reply_release(&r);
		return rc;
	}
	*ret = r;
	return 0;
}

/* ---- streams ------------------------------------------------------------ */

void wire_stream_init(struct wire_stream *s, enum wire_api api)
{
	memset(s, 0, sizeof(*s));
	s->api = api;
	sbuf_init(&s->text, WIRE_MAX_TEXT);
}

void wire_stream_release(struct wire_stream *s)
{
	size_t i;

	if (!s)
		return;
	sbuf_release(&s->text);
	for (i = 0; i < s->ncalls; i++) {
		sbuf_release(&s->calls[i].id);
		sbuf_release(&s->calls[i].name);
		sbuf_release(&s->calls[i].args);
		free(s->calls[i].item_id);
	}
	free(s->calls);
	json_decref(s->final_output);
	wire_reply_release(&s->meta);
	memset(s, 0, sizeof(*s));
}

/* The accumulator for a call index (created on first sight). */
static struct wire_call_acc *acc_get(struct wire_stream *s, long index, bool create,
				     struct diag *reterr)
{
	struct wire_call_acc *a;
	size_t i;

	for (i = 0; i < s->ncalls; i++)
		if (s->calls[i].index == index)
			return &s->calls[i];
	if (!create)
		return NULL;
	if (s->ncalls >= WIRE_MAX_CALLS) {
		diag_set(reterr, NULL, 0, 0, "more than %d tool calls in one reply",
			 WIRE_MAX_CALLS);
		return NULL;
	}
	s->calls = xrealloc(s->calls, st_mult(s->ncalls + 1, sizeof(*s->calls)));
	a = &s->calls[s->ncalls++];
	memset(a, 0, sizeof(*a));
	sbuf_init(&a->id, WIRE_MAX_ID);
	sbuf_init(&a->name, WIRE_MAX_ID);
	sbuf_init(&a->args, WIRE_MAX_ARGS);
	a->index = index;
	return a;
}

static int acc_set(struct sbuf *sb, const json_t *v, struct diag *reterr)
{
	if (!json_is_string(v))
		return 0;
	sbuf_reset(sb);
	if (sbuf_add(sb, json_string_value(v), json_string_length(v)) < 0) {
		diag_set(reterr, NULL, 0, 0, "a streamed tool call field is over its cap");
		return -ENOBUFS;
	}
	return 0;
}

static int acc_append(struct sbuf *sb, const json_t *v, struct diag *reterr)
{
	if (!json_is_string(v))
		return 0;
	if (sbuf_add(sb, json_string_value(v), json_string_length(v)) < 0) {
		diag_set(reterr, NULL, 0, 0, "a streamed tool call is over its cap (%zu bytes)",
			 sb->max);
		return -ENOBUFS;
	}
	return 0;
}

/* A call's arguments past WIRE_MAX_ARGS: dropped (the memory too), and the
 * call marked; later deltas are only counted. */
static void args_over(struct wire_call_acc *a, size_t n)
{
	size_t max = a->args.max;

	a->args_over += a->args.len + n;
	sbuf_release(&a->args);
	sbuf_init(&a->args, max);
}

static void args_append(struct wire_call_acc *a, const json_t *v)
{
	if (!json_is_string(v))
		return;
	if (a->args_over) {
		a->args_over += json_string_length(v);
		return;
	}
	if (sbuf_add(&a->args, json_string_value(v), json_string_length(v)) < 0)
		args_over(a, json_string_length(v));
}

/* The whole arguments (a .done event, an output item): they replace the
 * deltas, over the cap or not. */
static void args_set(struct wire_call_acc *a, const json_t *v)
{
	if (!json_is_string(v))
		return;
	sbuf_reset(&a->args);
	a->args_over = 0;
	if (sbuf_add(&a->args, json_string_value(v), json_string_length(v)) < 0)
		args_over(a, json_string_length(v));
}

static int chat_chunk(struct wire_stream *s, const json_t *chunk, struct diag *reterr)
{
	json_t *choices = json_object_get(chunk, "choices"), *ch, *err;
	size_t i;
	int rc;

	err = json_object_get(chunk, "error");
	if (err && !json_is_null(err))
		return api_error(err, reterr);
	usage_from(&s->meta, json_object_get(chunk, "usage"), "prompt_tokens", "completion_tokens");
	if (!s->meta.id)
		set_str(&s->meta.id, json_object_get(chunk, "id"));
	if (choices && !json_is_null(choices) && !json_is_array(choices)) {
		diag_set(reterr, NULL, 0, 0, "malformed chunk: 'choices' is %s", kind_of(choices));
		return -EBADMSG;
	}
	json_array_foreach(choices, i, ch)
	{
		json_t *delta = json_object_get(ch, "delta"), *calls, *c;
		json_t *fr = json_object_get(ch, "finish_reason");
		size_t k;

		if (json_is_string(fr)) {
			s->saw_finish = true;
			set_str(&s->meta.finish, fr);
		}
		if (!delta || json_is_null(delta))
			continue;
		if (!json_is_object(delta)) {
			diag_set(reterr, NULL, 0, 0, "malformed chunk: 'delta' is %s",
				 kind_of(delta));
			return -EBADMSG;
		}
		rc = chat_content(json_object_get(delta, "content"), &s->text, reterr);
		if (rc < 0)
			return rc;
		calls = json_object_get(delta, "tool_calls");
		if (calls && !json_is_null(calls) && !json_is_array(calls)) {
			diag_set(reterr, NULL, 0, 0, "malformed chunk: 'tool_calls' is %s",
				 kind_of(calls));
			return -EBADMSG;
		}
		json_array_foreach(calls, k, c)
		{
			json_t *idx = json_object_get(c, "index"),
			       *fn = json_object_get(c, "function");
			long index = json_is_integer(idx) ? (long)json_integer_value(idx) : (long)k;
			struct wire_call_acc *a;

			if (!json_is_object(c) || index < 0 || index > 1000000) {
				diag_set(reterr, NULL, 0, 0,
					 "malformed chunk: bad tool call delta");
				return -EBADMSG;
			}
			a = acc_get(s, index, true, reterr);
			if (!a)
				return -ENOBUFS;
			if ((rc = acc_set(&a->id, json_object_get(c, "id"), reterr)) < 0)
				return rc;
			if (json_is_string(json_object_get(fn, "name")) && a->name.len == 0 &&
			    (rc = acc_set(&a->name, json_object_get(fn, "name"), reterr)) < 0)
				return rc;
			{
				json_t *args = json_object_get(fn, "arguments");

				if (json_is_object(args)) {
					char *d = json_dumps(args, JSON_COMPACT);
					json_t *ds = json_string(d ? d : "{}");

					free(d);
					args_set(a, ds);
					json_decref(ds);
				} else {
					args_append(a, args);
				}
			}
		}
	}
	return 0;
}

static long out_index(const json_t *ev)
{
	json_t *i = json_object_get(ev, "output_index");

	return json_is_integer(i) ? (long)json_integer_value(i) : -1;
}

/* The accumulator an arguments delta belongs to: by output_index, else item_id. */
static struct wire_call_acc *acc_for(struct wire_stream *s, const json_t *ev)
{
	const char *item_id = json_string_value(json_object_get(ev, "item_id"));

	if (!item_id && json_is_string(json_object_get(ev, "type")))
		item_id = json_string_value(json_object_get(ev, "id")); /* an output item */
	long idx = out_index(ev);
	size_t i;

	if (idx >= 0) {
		struct wire_call_acc *a = acc_get(s, idx, false, NULL);

		if (a)
			return a;
	}
	for (i = 0; item_id && i < s->ncalls; i++)
		if (s->calls[i].item_id && strcmp(s->calls[i].item_id, item_id) == 0)
			return &s->calls[i];
	return NULL;
}

static int responses_item(struct wire_stream *s, const json_t *ev, const json_t *item,
			  struct diag *reterr)
{
	const char *type = json_string_value(json_object_get(item, "type"));
	struct wire_call_acc *a;
	json_t *id;
	long idx = out_index(ev);
	int rc;

	if (!type || strcmp(type, "function_call") != 0)
		return 0;
	a = NULL;
	if (idx < 0) {
		/* no index: the slot of the same item id, else a fresh one */
		a = acc_for(s, item);
		idx = (long)s->ncalls + 1000000;
	}
	if (!a)
		a = acc_get(s, idx, true, reterr);
	if (!a)
		return -ENOBUFS;
	id = json_object_get(item, "call_id");
	if (!json_is_string(id))
		id = json_object_get(item, "id");
	if ((rc = acc_set(&a->id, id, reterr)) < 0 ||
	    (rc = acc_set(&a->name, json_object_get(item, "name"), reterr)) < 0)
		return rc;
	if (json_is_string(json_object_get(item, "id")) && !a->item_id)
		a->item_id = xstrdup(json_string_value(json_object_get(item, "id")));
	if (json_is_string(json_object_get(item, "arguments")) &&
	    (json_string_length(json_object_get(item, "arguments")) > 0 || a->args_done))
		args_set(a, json_object_get(item, "arguments"));
	return 0;
}

static int responses_event(struct wire_stream *s, const char *type, const json_t *ev,
			   struct diag *reterr)
{
	struct wire_call_acc *a;
	json_t *resp;

	if (strcmp(type, "response.output_text.delta") == 0 ||
	    strcmp(type, "response.refusal.delta") == 0) {
		if (acc_append(&s->text, json_object_get(ev, "delta"), reterr) < 0) {
			diag_set(reterr, NULL, 0, 0, "reply text larger than %d bytes",
				 WIRE_MAX_TEXT);
			return -ENOBUFS;
		}
		return 0;
	}
	if (strcmp(type, "response.output_item.added") == 0 ||
	    strcmp(type, "response.output_item.done") == 0)
		return responses_item(s, ev, json_object_get(ev, "item"), reterr);
	if (strcmp(type, "response.function_call_arguments.delta") == 0) {
		a = acc_for(s, ev);
		if (!a) {
			diag_set(reterr, NULL, 0, 0,
				 "malformed stream: arguments for an unknown function call");
			return -EBADMSG;
		}
		args_append(a, json_object_get(ev, "delta"));
		return 0;
	}
	if (strcmp(type, "response.function_call_arguments.done") == 0) {
		a = acc_for(s, ev);
		if (!a) {
			diag_set(reterr, NULL, 0, 0,
				 "malformed stream: arguments for an unknown function call");
			return -EBADMSG;
		}
		a->args_done = true;
		args_set(a, json_object_get(ev, "arguments"));
		return 0;
	}
	if (strcmp(type, "response.completed") == 0 || strcmp(type, "response.incomplete") == 0) {
		resp = json_object_get(ev, "response");
		s->done = true;
		if (!json_is_object(resp))
			return 0;
		usage_from(&s->meta, json_object_get(resp, "usage"), "input_tokens",
			   "output_tokens");
		set_str(&s->meta.finish, json_object_get(resp, "status"));
		set_str(&s->meta.id, json_object_get(resp, "id"));
		if (json_array_size(json_object_get(resp, "output")) > 0) {
			json_decref(s->final_output);
			s->final_output = json_incref(json_object_get(resp, "output"));
		}
		return 0;
	}
	if (strcmp(type, "response.failed") == 0) {
		resp = json_object_get(ev, "response");
		return api_error(json_object_get(resp, "error") ? json_object_get(resp, "error")
								: resp,
				 reterr);
	}
	if (strcmp(type, "error") == 0)
		return api_error(json_object_get(ev, "error") ? json_object_get(ev, "error") : ev,
				 reterr);
	return 0; /* response.created, in_progress, content_part.*, reasoning...: nothing */
}

/* An event the SSE parser dropped over its cap (wire.h). */
static int dropped_event(struct wire_stream *s, const char *event, struct diag *reterr)
{
	if (s->api == WIRE_RESPONSES && event &&
	    (strcmp(event, "response.completed") == 0 ||
	     strcmp(event, "response.incomplete") == 0)) {
		s->done = true; /* without its output: the deltas tell */
		s->dropped++;
		return 0;
	}
	if (s->api == WIRE_RESPONSES && event &&
	    (strcmp(event, "response.function_call_arguments.done") == 0 ||
	     strcmp(event, "response.output_item.done") == 0 ||
	     strcmp(event, "response.output_item.added") == 0)) {
		s->dropped++;
		return 0;
	}
	diag_set(reterr, NULL, 0, 0, "streamed %s %zu is larger than the stream cap of %d bytes",
		 s->api == WIRE_CHAT ? "chunk" : "event", s->chunks, SSE_DEFAULT_MAX_EVENT);
	return -ENOBUFS;
}

int wire_stream_event(struct wire_stream *s, const char *event, const char *data, size_t len,
		      struct diag *reterr)
{
	json_t *ev = NULL;
	int rc;

	s->chunks++;
	if (!data)
		return dropped_event(s, event, reterr);
	if (s->api == WIRE_CHAT && len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		s->done = true;
		return 0;
	}
	if (s->done && s->api == WIRE_CHAT) {
		diag_set(reterr, NULL, 0, 0, "malformed stream: data after [DONE]");
		return -EBADMSG;
	}
	rc = json_parse_strict("chunk", data, len, &ev, reterr);
	if (rc < 0) {
		diag_prefix(reterr, "malformed chunk %zu", s->chunks);
		return -EBADMSG;
	}
	if (!json_is_object(ev)) {
		diag_set(reterr, NULL, 0, 0, "malformed chunk %zu: %s, not an object", s->chunks,
			 kind_of(ev));
		json_decref(ev);
		return -EBADMSG;
	}
	if (s->api == WIRE_CHAT) {
		rc = chat_chunk(s, ev, reterr);
	} else {
		const char *type = json_string_value(json_object_get(ev, "type"));

		if (!type)
			type = event;
		rc = responses_event(s, type, ev, reterr);
	}
	json_decref(ev);
	return rc;
}

int wire_stream_finish(struct wire_stream *s, struct wire_reply *ret, struct diag *reterr)
{
	struct wire_reply r = {0};
	int rc;

	if (!s->done && !(s->api == WIRE_CHAT && s->saw_finish)) {
		diag_set(reterr, NULL, 0, 0,
			 "the stream ended before the reply was complete (after %zu events)",
			 s->chunks);
		return -EPIPE;
	}
	if (s->final_output) {
		struct sbuf text = SBUF_INIT(WIRE_MAX_TEXT);

		rc = responses_output(s->final_output, &r, &text, reterr);
		if (rc < 0) {
			sbuf_release(&text);
			wire_reply_release(&r);
			return rc;
		}
		/* Servers that stream text but leave the final output's text out:
		 * keep what the deltas said. */
		if (text.len == 0 && s->text.len > 0) {
			r.text = sbuf_detach(&s->text, NULL);
			sbuf_release(&text);
		} else {
			r.text = sbuf_detach(&text, NULL);
		}
	} else {
		for (size_t i = 0; i < s->ncalls; i++) {
			struct wire_call_acc *a = &s->calls[i];

			rc = add_call(&r, a->id.buf, a->id.len, a->name.buf, a->name.len,
				      a->args.buf, a->args.len, reterr);
			if (rc < 0) {
				wire_reply_release(&r);
				return rc;
			}
			/* arguments over the cap, or (an event was dropped) never seen */
			if (a->args_over || (s->dropped && !a->args.len && !a->args_done))
				r.calls[r.ncalls - 1].arguments_over =
					a->args_over ? a->args_over : (size_t)WIRE_MAX_ARGS + 1;
		}
		r.text = sbuf_detach(&s->text, NULL);
	}
	r.has_usage = s->meta.has_usage;
	r.input_tokens = s->meta.input_tokens;
	r.output_tokens = s->meta.output_tokens;
	r.finish = s->meta.finish ? xstrdup(s->meta.finish) : NULL;
	r.id = s->meta.id ? xstrdup(s->meta.id) : NULL;
	*ret = r;
	return 0;
}

/* ---- items -------------------------------------------------------------- */

json_t *wire_reply_to_item(const struct wire_reply *r)
{
	json_t *it = json_object();

	(void)json_object_set_new(it, "role", json_string("assistant"));
	(void)json_object_set_new(it, "content", json_string(r->text ? r->text : ""));
	if (r->ncalls) {
		json_t *calls = json_array();

		for (size_t i = 0; i < r->ncalls; i++)
			(void)json_array_append_new(calls, json_pack("{s:s, s:s, s:s}", "id",
								     r->calls[i].id, "name",
								     r->calls[i].name, "arguments",
								     r->calls[i].arguments));
		(void)json_object_set_new(it, "tool_calls", calls);
	}
	return it;
}

static bool is_str(const json_t *o, const char *key)
{
	return json_is_string(json_object_get(o, key));
}

int wire_items_check(const json_t *items, struct diag *reterr)
{
	json_t *it, *calls, *c;
	size_t i, k;
	json_t *open_ids = json_object();
	int rc = -EBADMSG;

	if (!json_is_array(items)) {
		diag_set(reterr, NULL, 0, 0, "'items' is %s, not an array", kind_of(items));
		goto out;
	}
	json_array_foreach(items, i, it)
	{
		const char *role = json_string_value(json_object_get(it, "role"));

		if (!json_is_object(it) || !role) {
			diag_set(reterr, NULL, 0, 0, "items[%zu]: not an object with a 'role'", i);
			goto out;
		}
		if (!is_str(it, "content")) {
			diag_set(reterr, NULL, 0, 0, "items[%zu]: 'content' is not a string", i);
			goto out;
		}
		if (strcmp(role, "user") == 0)
			continue;
		if (strcmp(role, "assistant") == 0) {
			calls = json_object_get(it, "tool_calls");
			if (calls && !json_is_array(calls)) {
				diag_set(reterr, NULL, 0, 0,
					 "items[%zu]: 'tool_calls' is not an array", i);
				goto out;
			}
			json_array_foreach(calls, k, c)
			{
				if (!is_str(c, "id") || !is_str(c, "name") ||
				    !is_str(c, "arguments")) {
					diag_set(
						reterr, NULL, 0, 0,
						"items[%zu].tool_calls[%zu]: needs string 'id', 'name' and 'arguments'",
						i, k);
					goto out;
				}
				(void)json_object_set_new(
					open_ids, json_string_value(json_object_get(c, "id")),
					json_true());
			}
			continue;
		}
		if (strcmp(role, "tool") == 0) {
			const char *id = json_string_value(json_object_get(it, "tool_call_id"));

			if (!id || !json_object_get(open_ids, id)) {
				diag_set(reterr, NULL, 0, 0,
					 "items[%zu]: a tool result for no earlier tool call", i);
				goto out;
			}
			continue;
		}
		diag_set(reterr, NULL, 0, 0, "items[%zu]: unknown role '%s'", i, role);
		goto out;
	}
	rc = 0;
out:
	json_decref(open_ids);
	return rc;
}
