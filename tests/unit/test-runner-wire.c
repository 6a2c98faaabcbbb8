/* The SSE parser (src/runner/sse.c), the OpenAI wire formats
 * (src/runner/wire.c), Retry-After (src/runner/llm.c), and the
 * text helpers (src/runner/text.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runner/events.h"
#include "runner/llm.h"
#include "runner/sse.h"
#include "runner/text.h"
#include "runner/wire.h"
#include "util/redact.h"
#include "util/sbuf.h"

/* ---- SSE ---------------------------------------------------------------- */

struct collected {
	struct sbuf log; /* "event|data\n" per event */
	int stop_at;	 /* return an error at this event number (1-based), 0 = never */
	int n;
};

static int collect(void *userdata, const char *event, const char *data, size_t len)
{
	struct collected *c = userdata;

	c->n++;
	(void)sbuf_addf(&c->log, "%s|", event);
	if (!data) {
		/* dropped over a cap */
		assert_int_equal(len, 0);
		(void)sbuf_adds(&c->log, "(dropped)\n");
		return c->stop_at && c->n == c->stop_at ? -ECANCELED : 0;
	}
	(void)sbuf_add(&c->log, data, len);
	(void)sbuf_addc(&c->log, '\n');
	assert_int_equal(data[len], '\0');
	return c->stop_at && c->n == c->stop_at ? -ECANCELED : 0;
}

/* Feed input in pieces of size step (0 = all at once); return the log. */
static char *run_sse(const char *input, size_t len, size_t step, int *ret_finish)
{
	struct collected c = {.log = SBUF_INIT(SIZE_MAX)};
	struct sse_parser p;
	size_t i;

	sse_init(&p, 0, 0, collect, &c);
	if (!step)
		step = len ? len : 1;
	for (i = 0; i < len; i += step)
		assert_int_equal(sse_feed(&p, input + i, len - i < step ? len - i : step), 0);
	*ret_finish = sse_finish(&p);
	sse_release(&p);
	return sbuf_detach(&c.log, NULL);
}

static void expect_sse(const char *input, const char *want, int want_finish)
{
	size_t len = strlen(input), step;
	int fin;

	/* the same events whatever the chunking */
	for (step = 0; step <= len + 1; step = step ? step * 2 + 1 : 1) {
		char *got = run_sse(input, len, step, &fin);

		if (strcmp(got, want) != 0)
			fail_msg("step %zu: input '%s': got '%s', want '%s'", step, input, got,
				 want);
		assert_int_equal(fin, want_finish);
		free(got);
	}
}

static void test_sse_basic(void **state)
{
	(void)state;
	expect_sse("data: hello\n\n", "message|hello\n", 0);
	expect_sse("event: ping\ndata: {\"a\":1}\n\n", "ping|{\"a\":1}\n", 0);
	expect_sse("data:no-space\n\n", "message|no-space\n", 0);
	expect_sse("data:  two-spaces\n\n", "message| two-spaces\n", 0);
	expect_sse("data: a\ndata: b\n\n", "message|a\nb\n", 0);
	expect_sse("data\n\n", "message|\n", 0); /* a bare data field: empty data line */
	expect_sse(": comment\n\ndata: x\n\n", "message|x\n", 0);
	expect_sse("event: e\n\n", "", 0); /* no data: not dispatched */
	expect_sse("id: 7\nretry: 100\nfoo: bar\ndata: y\n\n", "message|y\n", 0);
	/* the event type resets after each event */
	expect_sse("event: a\ndata: 1\n\ndata: 2\n\n", "a|1\nmessage|2\n", 0);
}

static void test_sse_line_ends(void **state)
{
	(void)state;
	expect_sse("data: a\r\n\r\n", "message|a\n", 0);
	expect_sse("data: a\r\rdata: b\r\r", "message|a\nmessage|b\n", 0);
	expect_sse("data: a\r\ndata: b\n\r\n", "message|a\nb\n", 0);
	expect_sse("\xef\xbb\xbf"
		   "data: bom\n\n",
		   "message|bom\n", 0);
	/* only a leading BOM is dropped */
	expect_sse("data: \xef\xbb\xbfx\n\n", "message|\xef\xbb\xbfx\n", 0);
}

static void test_sse_unterminated(void **state)
{
	(void)state;
	/* an event without its blank line is discarded, and finish says so */
	expect_sse("data: a\n\ndata: cut", "message|a\n", 1);
	expect_sse("data: a\n", "", 1);
	expect_sse("data: a\n\n: trailing comment", "message|a\n", 0);
	expect_sse("", "", 0);
}

static void test_sse_caps_and_stop(void **state)
{
	struct collected c = {.log = SBUF_INIT(SIZE_MAX)};
	struct sse_parser p;
	char big[200];

	(void)state;
	memset(big, 'x', sizeof(big));
	/* a data line past the line cap drops its event (named), not the stream */
	sse_init(&p, 64, 128, collect, &c);
	assert_int_equal(sse_feed(&p, "event: big\ndata: ", 17), 0);
	assert_int_equal(sse_feed(&p, big, sizeof(big)), 0);
	assert_int_equal(sse_feed(&p, "\ndata: more\n\n", 13), 0);
	/* one chunk with the whole long line, then a long comment: skipped */
	assert_int_equal(sse_feed(&p, "data: ", 6), 0);
	assert_int_equal(sse_feed(&p, big, sizeof(big)), 0);
	assert_int_equal(sse_feed(&p, "\n\n:", 3), 0);
	assert_int_equal(sse_feed(&p, big, sizeof(big)), 0);
	assert_int_equal(sse_feed(&p, "\ndata: ok\n\n", 11), 0);
	assert_int_equal(sse_finish(&p), 0);
	assert_string_equal(c.log.buf, "big|(dropped)\nmessage|(dropped)\nmessage|ok\n");
	assert_int_equal(p.dropped, 2);
	sse_release(&p);
	sbuf_reset(&c.log);

	sse_init(&p, 64, 100, collect, &c);
	/* data lines of 50 within the line cap, over the event cap: dropped */
	assert_int_equal(sse_feed(&p, "data: 0123456789012345678901234567890123456789\n", 47), 0);
	assert_int_equal(sse_feed(&p, "data: 0123456789012345678901234567890123456789\n", 47), 0);
	assert_int_equal(sse_feed(&p, "data: 0123456789012345678901234567890123456789\n", 47), 0);
	assert_int_equal(sse_feed(&p, "\ndata: next\n\n", 13), 0);
	assert_string_equal(c.log.buf, "message|(dropped)\nmessage|next\n");
	/* a long line at the very end, without its line end */
	assert_int_equal(sse_feed(&p, "data: ", 6), 0);
	assert_int_equal(sse_feed(&p, big, sizeof(big)), 0);
	assert_int_equal(sse_finish(&p), 1); /* an event was left unterminated */
	sse_release(&p);
	sbuf_reset(&c.log);

	c.stop_at = 2;
	c.n = 0;
	sse_init(&p, 0, 0, collect, &c);
	assert_int_equal(sse_feed(&p, "data: 1\n\ndata: 2\n\ndata: 3\n\n", 27), -ECANCELED);
	assert_int_equal(c.n, 2);
	sse_release(&p);
	sbuf_release(&c.log);
}

/* ---- wire: requests ----------------------------------------------------- */

static json_t *items_fixture(void)
{
	json_error_t e;
	json_t *v = json_loads(
		"[{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\":   [{\"id\": \"c1\", \"name\": \"read_file\", \"arguments\": \"{\\\"path\\\":\\\"a\\\"}\"}]}, {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"name\": \"read_file\", \"content\": \"A\"}, {\"role\": \"assistant\", \"content\": \"ok\"}]",
		0, &e);

	assert_non_null(v);
	return v;
}

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
}

static void test_build_chat(void **state)
{
	struct wire_params p = {.api = WIRE_CHAT, .model = "m", .system = "sys", .stream = true};
	json_t *items = items_fixture(), *tools, *req;
	json_error_t e;
	char *s;

	(void)state;
	tools = json_loads(
		"[{\"name\": \"read_file\", \"description\": \"d\", \"parameters\": {\"type\": \"object\"}}]",
		0, &e);
	p.has_temperature = true;
	p.temperature = 0.5;
	p.has_top_k = true;
	p.top_k = 3;
	p.has_max_tokens = true;
	p.max_tokens = 99;
	req = wire_build_request(&p, items, tools);
	s = dump(req);
	assert_string_equal(
		s,
		"{\"max_tokens\":99,\"messages\":[{\"content\":\"sys\",\"role\":\"system\"},{\"content\":\"hi\",\"role\":\"user\"},{\"content\":null,\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\",\"name\":\"read_file\"},\"id\":\"c1\",\"type\":\"function\"}]},{\"content\":\"A\",\"role\":\"tool\",\"tool_call_id\":\"c1\"},{\"content\":\"ok\",\"role\":\"assistant\"}],\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"temperature\":0.5,\"tools\":[{\"function\":{\"description\":\"d\",\"name\":\"read_file\",\"parameters\":{\"type\":\"object\"}},\"type\":\"function\"}],\"top_k\":3}");
	free(s);
	json_decref(req);
	/* nothing optional set: nothing optional sent */
	p = (struct wire_params){.api = WIRE_CHAT, .model = "m"};
	req = wire_build_request(&p, items, NULL);
	assert_null(json_object_get(req, "temperature"));
	assert_null(json_object_get(req, "top_p"));
	assert_null(json_object_get(req, "top_k"));
	assert_null(json_object_get(req, "max_tokens"));
	assert_null(json_object_get(req, "tools"));
	assert_null(json_object_get(req, "stream_options"));
	assert_true(json_is_false(json_object_get(req, "stream")));
	json_decref(req);
	json_decref(tools);
	json_decref(items);
}

static void test_build_responses(void **state)
{
	struct wire_params p = {.api = WIRE_RESPONSES, .model = "gpt", .system = "sys"};
	json_t *items = items_fixture(), *req;
	json_error_t e;
	json_t *tools = json_loads("[{\"name\": \"t\"}]", 0, &e);
	char *s;

	(void)state;
	p.has_top_p = true;
	p.top_p = 0.25;
	p.has_max_tokens = true;
	p.max_tokens = 7;
	req = wire_build_request(&p, items, tools);
	s = dump(req);
	assert_string_equal(
		s,
		"{\"input\":[{\"content\":[{\"text\":\"hi\",\"type\":\"input_text\"}],\"role\":\"user\",\"type\":\"message\"},{\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\",\"call_id\":\"c1\",\"name\":\"read_file\",\"type\":\"function_call\"},{\"call_id\":\"c1\",\"output\":\"A\",\"type\":\"function_call_output\"},{\"content\":[{\"text\":\"ok\",\"type\":\"output_text\"}],\"role\":\"assistant\",\"type\":\"message\"}],\"instructions\":\"sys\",\"max_output_tokens\":7,\"model\":\"gpt\",\"store\":false,\"stream\":false,\"tools\":[{\"name\":\"t\",\"parameters\":{\"properties\":{},\"type\":\"object\"},\"strict\":false,\"type\":\"function\"}],\"top_p\":0.25}");
	free(s);
	json_decref(req);
	json_decref(tools);
	json_decref(items);
}

/* ---- wire: replies ------------------------------------------------------ */

static int parse(enum wire_api api, const char *body, struct wire_reply *r, struct diag *d)
{
	memset(r, 0, sizeof(*r));
	memset(d, 0, sizeof(*d));
	return wire_parse_body(api, body, strlen(body), r, d);
}

static void test_parse_chat(void **state)
{
	struct wire_reply r;
	struct diag d;

	(void)state;
	assert_int_equal(
		parse(WIRE_CHAT,
		      "{\"id\": \"x\", \"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": \"hello\"}, \"finish_reason\": \"stop\"}], \"usage\": {\"prompt_tokens\": 11, \"completion_tokens\": 4}}",
		      &r, &d),
		0);
	assert_string_equal(r.text, "hello");
	assert_int_equal(r.ncalls, 0);
	assert_true(r.has_usage);
	assert_int_equal(r.input_tokens, 11);
	assert_int_equal(r.output_tokens, 4);
	assert_string_equal(r.finish, "stop");
	assert_string_equal(r.id, "x");
	wire_reply_release(&r);

	assert_int_equal(
		parse(WIRE_CHAT,
		      "{\"choices\": [{\"message\": {\"content\": null, \"tool_calls\": [{\"id\": \"a\", \"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}},{\"type\": \"function\", \"function\": {\"name\": \"g\", \"arguments\": {\"y\": 2}}},{\"id\": \"c\", \"function\": {\"name\": \"h\"}}]}}]}",
		      &r, &d),
		0);
	assert_string_equal(r.text, "");
	assert_int_equal(r.ncalls, 3);
	assert_string_equal(r.calls[0].id, "a");
	assert_string_equal(r.calls[0].name, "f");
	assert_string_equal(r.calls[0].arguments, "{\"x\": 1}");
	assert_string_equal(r.calls[1].id, "call_2"); /* missing id: made up */
	assert_string_equal(r.calls[1].arguments, "{\"y\":2}");
	assert_string_equal(r.calls[2].arguments, "{}");
	assert_false(r.has_usage);
	wire_reply_release(&r);

	/* content as a list of parts */
	assert_int_equal(
		parse(WIRE_CHAT,
		      "{\"choices\": [{\"message\": {\"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]}}]}",
		      &r, &d),
		0);
	assert_string_equal(r.text, "ab");
	wire_reply_release(&r);

	assert_int_equal(parse(WIRE_CHAT, "not json", &r, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "malformed reply"));
	assert_int_equal(parse(WIRE_CHAT, "[]", &r, &d), -EBADMSG);
	assert_int_equal(parse(WIRE_CHAT, "{}", &r, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "choices"));
	assert_int_equal(parse(WIRE_CHAT, "{\"choices\": []}", &r, &d), -EBADMSG);
	assert_int_equal(parse(WIRE_CHAT, "{\"choices\": [{\"message\": 3}]}", &r, &d), -EBADMSG);
	assert_int_equal(
		parse(WIRE_CHAT,
		      "{\"choices\": [{\"message\": {\"tool_calls\": [{\"function\": {}}]}}]}", &r,
		      &d),
		-EBADMSG);
	assert_int_equal(
		parse(WIRE_CHAT,
		      "{\"choices\": [{\"message\": {\"tool_calls\": [{\"function\": {\"name\": \"f\", \"arguments\": 5}}]}}]}",
		      &r, &d),
		-EBADMSG);
	assert_int_equal(parse(WIRE_CHAT,
			       "{\"error\": {\"message\": \"bad key\", \"code\": \"x\"}}", &r, &d),
			 -EPROTO);
	assert_non_null(strstr(d.msg, "bad key"));
	assert_int_equal(
		parse(WIRE_CHAT,
		      "{\"error\": {\"message\": \"slow down\", \"type\": \"rate_limit_exceeded\"}}",
		      &r, &d),
		-EBUSY);
}

static void test_parse_responses(void **state)
{
	struct wire_reply r;
	struct diag d;

	(void)state;
	assert_int_equal(
		parse(WIRE_RESPONSES,
		      "{\"id\": \"resp_1\", \"status\": \"completed\", \"output\": [{\"type\": \"reasoning\", \"summary\": []},{\"type\": \"message\", \"role\": \"assistant\", \"content\": [{\"type\": \"output_text\", \"text\": \"Hel\"}, {\"type\": \"output_text\", \"text\": \"lo\"}]},{\"type\": \"function_call\", \"id\": \"fc_1\", \"call_id\": \"call_9\", \"name\": \"list_dir\", \"arguments\": \"{}\"}], \"usage\": {\"input_tokens\": 3, \"output_tokens\": 2}}",
		      &r, &d),
		0);
	assert_string_equal(r.text, "Hello");
	assert_int_equal(r.ncalls, 1);
	assert_string_equal(r.calls[0].id, "call_9");
	assert_string_equal(r.calls[0].name, "list_dir");
	assert_string_equal(r.finish, "completed");
	assert_int_equal(r.input_tokens, 3);
	wire_reply_release(&r);

	assert_int_equal(
		parse(WIRE_RESPONSES,
		      "{\"status\": \"failed\", \"error\": {\"message\": \"boom\", \"code\": \"server_error\"}}",
		      &r, &d),
		-EPROTO);
	assert_non_null(strstr(d.msg, "boom"));
	assert_int_equal(parse(WIRE_RESPONSES, "{\"output\": 3}", &r, &d), -EBADMSG);
	assert_int_equal(
		parse(WIRE_RESPONSES,
		      "{\"output\": [{\"type\": \"function_call\", \"arguments\": \"{}\"}]}", &r,
		      &d),
		-EBADMSG);
}

/* Feed SSE text through the parser into a wire stream. */
struct feed {
	struct wire_stream s;
	struct diag d;
};

static int feed_event(void *userdata, const char *event, const char *data, size_t len)
{
	struct feed *f = userdata;

	return wire_stream_event(&f->s, event, data, len, &f->d);
}

static int stream(enum wire_api api, const char *sse, struct wire_reply *r, struct diag *d)
{
	struct feed f;
	struct sse_parser p;
	size_t len = strlen(sse), i;
	int rc = 0;

	memset(&f, 0, sizeof(f));
	memset(r, 0, sizeof(*r));
	wire_stream_init(&f.s, api);
	sse_init(&p, 0, 0, feed_event, &f);
	for (i = 0; i < len && rc == 0; i += 7)
		rc = sse_feed(&p, sse + i, len - i < 7 ? len - i : 7);
	if (rc == 0)
		rc = sse_finish(&p) < 0 ? -EIO : 0;
	if (rc == 0)
		rc = wire_stream_finish(&f.s, r, &f.d);
	*d = f.d;
	sse_release(&p);
	wire_stream_release(&f.s);
	return rc;
}

static void test_stream_chat(void **state)
{
	struct wire_reply r;
	struct diag d;

	(void)state;
	assert_int_equal(
		stream(WIRE_CHAT,
		       "data: {\"id\": \"c\", \"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\", \"content\": \"\"}}]}\n\n"
		       "data: {\"choices\": [{\"delta\": {\"content\": \"Hel\"}}]}\n\n"
		       "data: {\"choices\": [{\"delta\": {\"content\": \"lo\"}}]}\n\n"
		       "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 0, \"id\": \"call_a\", \"type\": \"function\", \"function\": {\"name\": \"write_file\", \"arguments\": \"\"}}]}}]}\n\n"
		       "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 1, \"id\": \"call_b\", \"function\": {\"name\": \"list_dir\", \"arguments\": \"{}\"}}]}}]}\n\n"
		       "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 0, \"function\": {\"arguments\": \"{\\\"pa\"}}]}}]}\n\n"
		       "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 0, \"function\": {\"arguments\": \"th\\\": 1}\"}}]}}]}\n\n"
		       "data: {\"choices\": [{\"delta\": {}, \"finish_reason\": \"tool_calls\"}]}\n\n"
		       "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 5, \"completion_tokens\": 6}}\n\n"
		       "data: [DONE]\n\n",
		       &r, &d),
		0);
	assert_string_equal(r.text, "Hello");
	assert_int_equal(r.ncalls, 2);
	assert_string_equal(r.calls[0].id, "call_a");
	assert_string_equal(r.calls[0].name, "write_file");
	assert_string_equal(r.calls[0].arguments, "{\"path\": 1}");
	assert_string_equal(r.calls[1].name, "list_dir");
	assert_string_equal(r.finish, "tool_calls");
	assert_true(r.has_usage);
	assert_int_equal(r.output_tokens, 6);
	wire_reply_release(&r);

	/* a finish_reason without [DONE] is complete enough */
	assert_int_equal(
		stream(WIRE_CHAT,
		       "data: {\"choices\": [{\"delta\": {\"content\": \"x\"}, \"finish_reason\": \"stop\"}]}\n\n",
		       &r, &d),
		0);
	assert_string_equal(r.text, "x");
	wire_reply_release(&r);

	/* cut before any end */
	assert_int_equal(stream(WIRE_CHAT,
				"data: {\"choices\": [{\"delta\": {\"content\": \"x\"}}]}\n\n", &r,
				&d),
			 -EPIPE);
	assert_non_null(strstr(d.msg, "ended before"));
	/* a malformed chunk */
	assert_int_equal(stream(WIRE_CHAT,
				"data: {\"choices\": [{\"delta\": {\"content\": \"bro\n\n", &r, &d),
			 -EBADMSG);
	assert_non_null(strstr(d.msg, "malformed chunk 1"));
	assert_int_equal(stream(WIRE_CHAT, "data: [1]\n\n", &r, &d), -EBADMSG);
	assert_int_equal(stream(WIRE_CHAT, "data: {\"choices\": 5}\n\n", &r, &d), -EBADMSG);
	assert_int_equal(stream(WIRE_CHAT, "data: [DONE]\n\ndata: {}\n\n", &r, &d), -EBADMSG);
	/* an error object in the stream */
	assert_int_equal(
		stream(WIRE_CHAT, "data: {\"error\": {\"message\": \"overloaded\"}}\n\n", &r, &d),
		-EPROTO);
	assert_non_null(strstr(d.msg, "overloaded"));
	assert_int_equal(stream(WIRE_CHAT,
				"data: {\"error\": {\"message\": \"x\", \"code\": 429}}\n\n", &r,
				&d),
			 -EBUSY);
	/* a tool call delta with no name ever */
	assert_int_equal(
		stream(WIRE_CHAT,
		       "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 0, \"function\": {\"arguments\": \"{}\"}}]}}]}\n\ndata: [DONE]\n\n",
		       &r, &d),
		-EBADMSG);
}

static void test_stream_responses(void **state)
{
	static const char ok[] =
		"event: response.created\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r1\", \"status\": \"in_progress\", \"output\": []}}\n\n"
		"event: response.output_item.added\ndata: {\"type\": \"response.output_item.added\", \"output_index\": 0, \"item\": {\"id\": \"msg_1\", \"type\": \"message\", \"content\": []}}\n\n"
		"event: response.output_text.delta\ndata: {\"type\": \"response.output_text.delta\", \"item_id\": \"msg_1\", \"output_index\": 0, \"delta\": \"Hi \"}\n\n"
		"event: response.output_text.delta\ndata: {\"type\": \"response.output_text.delta\", \"item_id\": \"msg_1\", \"output_index\": 0, \"delta\": \"there\"}\n\n"
		"event: response.output_item.added\ndata: {\"type\": \"response.output_item.added\", \"output_index\": 1, \"item\": {\"id\": \"fc_1\", \"type\": \"function_call\", \"call_id\": \"call_1\", \"name\": \"read_file\", \"arguments\": \"\"}}\n\n"
		"event: response.function_call_arguments.delta\ndata: {\"type\": \"response.function_call_arguments.delta\", \"item_id\": \"fc_1\", \"output_index\": 1, \"delta\": \"{\\\"path\\\"\"}\n\n"
		"event: response.function_call_arguments.delta\ndata: {\"type\": \"response.function_call_arguments.delta\", \"item_id\": \"fc_1\", \"output_index\": 1, \"delta\": \": \\\"a\\\"}\"}\n\n"
		"event: response.completed\ndata: {\"type\": \"response.completed\", \"response\": {\"id\": \"r1\", \"status\": \"completed\", \"output\": [], \"usage\": {\"input_tokens\": 9, \"output_tokens\": 8}}}\n\n";
	struct wire_reply r;
	struct diag d;

	(void)state;
	/* completed without a final output: the deltas count */
	assert_int_equal(stream(WIRE_RESPONSES, ok, &r, &d), 0);
	assert_string_equal(r.text, "Hi there");
	assert_int_equal(r.ncalls, 1);
	assert_string_equal(r.calls[0].id, "call_1");
	assert_string_equal(r.calls[0].name, "read_file");
	assert_string_equal(r.calls[0].arguments, "{\"path\": \"a\"}");
	assert_int_equal(r.input_tokens, 9);
	assert_string_equal(r.finish, "completed");
	assert_string_equal(r.id, "r1");
	wire_reply_release(&r);

	/* the final output wins over the deltas when present */
	assert_int_equal(
		stream(WIRE_RESPONSES,
		       "data: {\"type\": \"response.output_text.delta\", \"delta\": \"draft\"}\n\n"
		       "data: {\"type\": \"response.completed\", \"response\": {\"status\": \"completed\", \"output\": [{\"type\": \"message\", \"content\": [{\"type\": \"output_text\", \"text\": \"final\"}]}]}}\n\n",
		       &r, &d),
		0);
	assert_string_equal(r.text, "final");
	assert_false(r.has_usage);
	wire_reply_release(&r);

	/* no response.completed */
	assert_int_equal(
		stream(WIRE_RESPONSES,
		       "data: {\"type\": \"response.output_text.delta\", \"delta\": \"x\"}\n\n", &r,
		       &d),
		-EPIPE);
	assert_int_equal(
		stream(WIRE_RESPONSES,
		       "data: {\"type\": \"response.failed\", \"response\": {\"error\": {\"message\": \"quota\", \"code\": \"rate_limit_exceeded\"}}}\n\n",
		       &r, &d),
		-EBUSY);
	assert_int_equal(
		stream(WIRE_RESPONSES,
		       "event: error\ndata: {\"type\": \"error\", \"message\": \"bad\"}\n\n", &r,
		       &d),
		-EPROTO);
	assert_int_equal(
		stream(WIRE_RESPONSES,
		       "data: {\"type\": \"response.function_call_arguments.delta\", \"output_index\": 4, \"delta\": \"{}\"}\n\n",
		       &r, &d),
		-EBADMSG);
	assert_int_equal(stream(WIRE_RESPONSES, "data: {\"type\": \"response.out\n\n", &r, &d),
			 -EBADMSG);
}

/* ---- arguments over the cap -------------------------------------------- */

static int stream_caps(enum wire_api api, const char *sse, size_t len, size_t cap,
		       struct wire_reply *r, struct diag *d)
{
	struct feed f;
	struct sse_parser p;
	size_t i;
	int rc = 0;

	memset(&f, 0, sizeof(f));
	memset(r, 0, sizeof(*r));
	wire_stream_init(&f.s, api);
	sse_init(&p, cap, cap, feed_event, &f);
	for (i = 0; i < len && rc == 0; i += 4096)
		rc = sse_feed(&p, sse + i, len - i < 4096 ? len - i : 4096);
	if (rc == 0)
		rc = sse_finish(&p) < 0 ? -EIO : 0;
	if (rc == 0)
		rc = wire_stream_finish(&f.s, r, &f.d);
	*d = f.d;
	sse_release(&p);
	wire_stream_release(&f.s);
	return rc;
}

#define FC_ADDED                                                                                   \
	"event: response.output_item.added\ndata: {\"type\": \"response.output_item.added\", "     \
	"\"output_index\": 0, \"item\": {\"id\": \"fc_1\", \"type\": \"function_call\", "          \
	"\"call_id\": \"call_1\", \"name\": \"write_file\", \"arguments\": \"\"}}\n\n"
#define FC_DELTA(d)                                                                                \
	"event: response.function_call_arguments.delta\ndata: {\"type\": "                         \
	"\"response.function_call_arguments.delta\", \"item_id\": \"fc_1\", \"output_index\": 0, " \
	"\"delta\": \"" d "\"}\n\n"

static void test_args_over_cap(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX), pad = SBUF_INIT(SIZE_MAX);
	struct wire_reply r;
	struct diag d = {0};
	size_t i;

	(void)state;
	/* a plain body whose call's arguments are over the cap: the call stays,
	 * without its arguments, marked for the tool to refuse */
	(void)sbuf_adds(
		&sb,
		"{\"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"write_file\", \"arguments\": \"");
	for (i = 0; i <= WIRE_MAX_ARGS / 64; i++)
		(void)sbuf_adds(&sb,
				"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	(void)sbuf_adds(
		&sb,
		"\"}}, {\"id\": \"c2\", \"type\": \"function\", \"function\": {\"name\": \"read_file\", \"arguments\": \"{}\"}}]}, \"finish_reason\": \"tool_calls\"}]}");
	assert_int_equal(wire_parse_body(WIRE_CHAT, sb.buf, sb.len, &r, &d), 0);
	assert_int_equal(r.ncalls, 2);
	assert_string_equal(r.calls[0].name, "write_file");
	assert_string_equal(r.calls[0].arguments, "{}");
	assert_true(r.calls[0].arguments_over > WIRE_MAX_ARGS);
	assert_int_equal(r.calls[1].arguments_over, 0);
	wire_reply_release(&r);

	/* Responses, streamed: the .done, output_item.done and response.completed
	 * lines are over a (small) SSE cap and dropped; the deltas tell */
	sbuf_reset(&sb);
	for (i = 0; i < 400; i++)
		(void)sbuf_addc(&pad, 'p');
	(void)sbuf_adds(&sb, FC_ADDED FC_DELTA("{\\\"path\\\": \\\"a\\\"}"));
	(void)sbuf_addf(
		&sb,
		"event: response.function_call_arguments.done\ndata: {\"type\": \"response.function_call_arguments.done\", \"item_id\": \"fc_1\", \"output_index\": 0, \"arguments\": \"%s\"}\n\n",
		pad.buf);
	(void)sbuf_addf(
		&sb,
		"event: response.completed\ndata: {\"type\": \"response.completed\", \"response\": {\"status\": \"completed\", \"output\": [{\"pad\": \"%s\"}]}}\n\n",
		pad.buf);
	assert_int_equal(stream_caps(WIRE_RESPONSES, sb.buf, sb.len, 256, &r, &d), 0);
	assert_int_equal(r.ncalls, 1);
	assert_string_equal(r.calls[0].arguments, "{\"path\": \"a\"}");
	assert_int_equal(r.calls[0].arguments_over, 0);
	assert_false(r.has_usage); /* it was in the dropped completion */
	wire_reply_release(&r);

	/* only a dropped output_item.done carried the arguments: marked over */
	sbuf_reset(&sb);
	(void)sbuf_adds(&sb, FC_ADDED);
	(void)sbuf_addf(
		&sb,
		"event: response.output_item.done\ndata: {\"type\": \"response.output_item.done\", \"output_index\": 0, \"item\": {\"id\": \"fc_1\", \"type\": \"function_call\", \"call_id\": \"call_1\", \"name\": \"write_file\", \"arguments\": \"%s\"}}\n\n"
		"event: response.completed\ndata: {\"type\": \"response.completed\"}\n\n",
		pad.buf);
	assert_int_equal(stream_caps(WIRE_RESPONSES, sb.buf, sb.len, 256, &r, &d), 0);
	assert_int_equal(r.ncalls, 1);
	assert_true(r.calls[0].arguments_over > 0);
	wire_reply_release(&r);

	/* any other dropped event, and a dropped chat chunk, end the reply */
	sbuf_reset(&sb);
	(void)sbuf_addf(&sb, "data: {\"choices\": [{\"delta\": {\"content\": \"%s\"}}]}\n\n",
			pad.buf);
	assert_int_equal(stream_caps(WIRE_CHAT, sb.buf, sb.len, 256, &r, &d), -ENOBUFS);
	assert_non_null(strstr(d.msg, "larger than the stream cap"));
	sbuf_reset(&sb);
	(void)sbuf_adds(&sb, FC_ADDED);
	(void)sbuf_addf(
		&sb,
		"event: response.output_text.delta\ndata: {\"type\": \"response.output_text.delta\", \"delta\": \"%s\"}\n\n",
		pad.buf);
	assert_int_equal(stream_caps(WIRE_RESPONSES, sb.buf, sb.len, 256, &r, &d), -ENOBUFS);
	sbuf_release(&sb);
	sbuf_release(&pad);
}

static void test_items_check(void **state)
{
	json_error_t e;
	json_t *items = items_fixture(), *bad;
	struct diag d;

	(void)state;
	assert_int_equal(wire_items_check(items, &d), 0);
	json_decref(items);
	bad = json_loads("[{\"role\": \"tool\", \"tool_call_id\": \"zz\", \"content\": \"x\"}]", 0,
			 &e);
	assert_int_equal(wire_items_check(bad, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "no earlier tool call"));
	json_decref(bad);
	bad = json_loads("[{\"role\": \"system\", \"content\": \"x\"}]", 0, &e);
	assert_int_equal(wire_items_check(bad, &d), -EBADMSG);
	json_decref(bad);
	bad = json_loads("[{\"role\": \"user\", \"content\": 1}]", 0, &e);
	assert_int_equal(wire_items_check(bad, &d), -EBADMSG);
	json_decref(bad);
	bad = json_loads("{}", 0, &e);
	assert_int_equal(wire_items_check(bad, &d), -EBADMSG);
	json_decref(bad);
}

/* ---- llm helpers ---------------------------------------------------------- */

static void test_retry_after(void **state)
{
	uint64_t ms = 0;

	(void)state;
	assert_int_equal(llm_parse_retry_after("2", 0, &ms), 0);
	assert_int_equal(ms, 2000);
	assert_int_equal(llm_parse_retry_after(" 0 ", 0, &ms), 0);
	assert_int_equal(ms, 0);
	/* Wed, 21 Oct 2015 07:28:00 GMT = 1445412480 */
	assert_int_equal(llm_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470, &ms),
			 0);
	assert_int_equal(ms, 10000);
	assert_int_equal(
		llm_parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", 1445412477, &ms), 0);
	assert_int_equal(ms, 3000);
	assert_int_equal(llm_parse_retry_after("Wed Oct 21 07:28:00 2015", 1445412479, &ms), 0);
	assert_int_equal(ms, 1000);
	/* a date in the past: no wait */
	assert_int_equal(llm_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490, &ms),
			 0);
	assert_int_equal(ms, 0);
	assert_int_equal(llm_parse_retry_after("soon", 0, &ms), -EINVAL);
	assert_int_equal(llm_parse_retry_after("-1", 0, &ms), -EINVAL);
	assert_int_equal(llm_parse_retry_after("1.5", 0, &ms), -EINVAL);
	assert_int_equal(llm_parse_retry_after("", 0, &ms), -EINVAL);
	assert_int_equal(llm_parse_retry_after(NULL, 0, &ms), -EINVAL);
	assert_int_equal(llm_parse_retry_after("99999999999999999999", 0, &ms), 0);
	assert_true(ms >= 999999999000ULL);
}

/* ---- text ------------------------------------------------------------------ */

static void test_utf8(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)state;
	assert_int_equal(text_add_utf8(&sb, "a\xc3\xa9z", 4), 0);
	assert_string_equal(sb.buf, "a\xc3\xa9z");
	sbuf_reset(&sb);
	assert_int_equal(text_add_utf8(&sb,
				       "a\xff"
				       "b\0c",
				       5),
			 0);
	assert_string_equal(sb.buf, "a\xef\xbf\xbd"
				    "b\xef\xbf\xbd"
				    "c");
	sbuf_reset(&sb);
	/* overlong, surrogate, truncated */
	assert_int_equal(text_add_utf8(&sb, "\xc0\xaf\xed\xa0\x80\xe2\x82", 7), 0);
	assert_null(memchr(sb.buf, 0xc0, sb.len));
	{
		json_t *v = json_stringn(sb.buf, sb.len); /* jansson accepts it: valid UTF-8 */

		assert_non_null(v);
		json_decref(v);
	}
	sbuf_release(&sb);
}

/* events_serialise() redacts every string and key, JSON inside a string
 * included, and leaves a document that still parses. */
static void test_redact(void **state)
{
	static const char key[] = "sk-\"secret\\123";
	struct redact *rd = redact_new();
	json_t *args = json_pack("{s:s}", "path", key), *ev;
	char *args_text = json_dumps(args, JSON_COMPACT | JSON_ENSURE_ASCII), *line;
	size_t len = 0;

	(void)state;
	assert_true(redact_add(rd, key));
	ev = json_pack("{s:s, s:s, s:s, s:{s:i}}", "type", "tool_call", "message", key, "arguments",
		       args_text, key, "n", 1);
	line = events_serialise(ev, rd, false, &len);
	assert_non_null(line);
	assert_int_equal(line[len - 1], '\n');
	assert_false(redact_found(rd, line, len));
	assert_non_null(strstr(line, "[REDACTED]"));
	json_decref(ev);
	ev = json_loads(line, 0, NULL);
	assert_non_null(ev);
	assert_string_equal(json_string_value(json_object_get(ev, "message")), "[REDACTED]");
	assert_non_null(json_object_get(ev, "[REDACTED]"));
	json_decref(ev);
	free(line);
	free(args_text);
	json_decref(args);
	redact_free(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sse_basic),
		cmocka_unit_test(test_sse_line_ends),
		cmocka_unit_test(test_sse_unterminated),
		cmocka_unit_test(test_sse_caps_and_stop),
		cmocka_unit_test(test_build_chat),
		cmocka_unit_test(test_build_responses),
		cmocka_unit_test(test_parse_chat),
		cmocka_unit_test(test_parse_responses),
		cmocka_unit_test(test_stream_chat),
		cmocka_unit_test(test_stream_responses),
		cmocka_unit_test(test_items_check),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_redact),
		cmocka_unit_test(test_args_over_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
