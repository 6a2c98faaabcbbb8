/* adapter/events + adapter/dialect*: every real sample stream of the six CLIs
 * (tests/data/samples/, recorded against a fake LLM server) through its
 * dialect: the session id captured, tool calls and results, the final usage,
 * the outcome with the recorded exit code (error400-exit-codes.txt); the
 * text-signals grammar of anchor-adapters.md section 4.1; malformed lines
 * (garbage, truncated JSON, duplicate keys, 2 MB and 5 MB lines) that never
 * stop the stream; structured rate limits of each dialect; the events.jsonl
 * serialization (one golden line per kind, escaping, caps). */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/dialect.h"
#include "adapter/events.h"
#include "adapter/outcome.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

/* ---- a recording sink ---------------------------------------------------------- */

#define MAX_RECS 512

struct rec {
	enum event_kind kind;
	uint64_t line;
	int stream;
	char *type, *session_id, *model, *text, *tool_name, *tool_id, *tool_args, *tool_output;
	char *status, *message, *error_kind, *signal, *payload, *reason;
	bool is_error, permission_denied, delta;
	int64_t in, out, cached, turns, denials;
	double cost;
	int http;
	struct ratelimit_hint hint;
	char *json; /* event_to_json() of it */
};

struct recorder {
	struct rec r[MAX_RECS];
	unsigned n;
	struct outcome_inputs tally;
};

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void record(void *userdata, const struct event *ev)
{
	struct recorder *rc = userdata;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct rec *r;
	json_t *j = NULL;

	outcome_observe(&rc->tally, ev);
	assert_true(rc->n < MAX_RECS);
	r = &rc->r[rc->n++];
	r->kind = ev->kind;
	r->line = ev->line;
	r->stream = ev->stream;
	r->type = dup_or_null(ev->type);
	r->session_id = dup_or_null(ev->session_id);
	r->model = dup_or_null(ev->model);
	r->text = dup_or_null(ev->text);
	r->tool_name = dup_or_null(ev->tool_name);
	r->tool_id = dup_or_null(ev->tool_id);
	r->tool_args = dup_or_null(ev->tool_args);
	r->tool_output = dup_or_null(ev->tool_output);
	r->status = dup_or_null(ev->status);
	r->message = dup_or_null(ev->message);
	r->error_kind = dup_or_null(ev->error_kind);
	r->signal = dup_or_null(ev->signal);
	r->payload = dup_or_null(ev->payload);
	r->reason = dup_or_null(ev->reason);
	r->is_error = ev->is_error;
	r->permission_denied = ev->permission_denied;
	r->delta = ev->delta;
	r->in = ev->input_tokens;
	r->out = ev->output_tokens;
	r->cached = ev->cached_tokens;
	r->turns = ev->num_turns;
	r->denials = ev->permission_denials;
	r->cost = ev->cost_usd;
	r->http = ev->http_status;
	r->hint = ev->hint;
	assert_non_null(ev->dialect);

	/* every event serializes to one line that is one strict JSON object
	 * with the right kind */
	assert_int_equal(event_to_json(ev, 0, &sb), 0);
	assert_true(sb.len > 2);
	assert_int_equal(sb.buf[sb.len - 1], '\n');
	assert_null(memchr(sb.buf, '\n', sb.len - 1));
	assert_int_equal(json_parse_strict("event", sb.buf, sb.len, &j, NULL), 0);
	assert_true(json_is_object(j));
	assert_string_equal(json_string_value(json_object_get(j, "kind")),
			    event_kind_to_string(ev->kind));
	assert_string_equal(json_string_value(json_object_get(j, "dialect")), ev->dialect);
	json_decref(j);
	r->json = sbuf_detach(&sb, NULL);
}

static void recorder_init(struct recorder *rc, enum dialect d)
{
	memset(rc, 0, sizeof(*rc));
	outcome_inputs_init(&rc->tally, d);
}

static void recorder_release(struct recorder *rc)
{
	unsigned i;

	for (i = 0; i < rc->n; i++) {
		struct rec *r = &rc->r[i];

		free(r->type);
		free(r->session_id);
		free(r->model);
		free(r->text);
		free(r->tool_name);
		free(r->tool_id);
		free(r->tool_args);
		free(r->tool_output);
		free(r->status);
		free(r->message);
		free(r->error_kind);
		free(r->signal);
		free(r->payload);
		free(r->reason);
		free(r->json);
	}
	rc->n = 0;
}

static unsigned count(const struct recorder *rc, enum event_kind k)
{
	unsigned i, n = 0;

	for (i = 0; i < rc->n; i++)
		n += rc->r[i].kind == k;
	return n;
}

static const struct rec no_rec; /* returned, after a failure, when none */

/* The first / last event of kind k; the test fails when there is none. */
static const struct rec *first(const struct recorder *rc, enum event_kind k)
{
	unsigned i;

	for (i = 0; i < rc->n; i++)
		if (rc->r[i].kind == k)
			return &rc->r[i];
	fail_msg("no %s event", event_kind_to_string(k));
	return &no_rec;
}

static const struct rec *last(const struct recorder *rc, enum event_kind k)
{
	unsigned i;

	for (i = rc->n; i > 0; i--)
		if (rc->r[i - 1].kind == k)
			return &rc->r[i - 1];
	fail_msg("no %s event", event_kind_to_string(k));
	return &no_rec;
}

/* Feed text line by line (the supervisor's framing: no newline, NUL after). */
static int feed_text(struct dialect_state *st, const char *text, size_t len,
		     const struct event_sink *sink, int *ret_bad)
{
	size_t b = 0;
	int lines = 0, bad = 0;

	while (b < len) {
		const char *nl = memchr(text + b, '\n', len - b);
		size_t e = nl ? (size_t)(nl - text) : len;
		char *line = xstrndup(text + b, e - b);
		struct diag d;

		if (dialect_feed_line(st, line, e - b, sink, &d) < 0)
			bad++;
		free(line);
		lines++;
		b = e + 1;
	}
	if (ret_bad)
		*ret_bad = bad;
	return lines;
}

static void feed1(struct dialect_state *st, const char *line, const struct event_sink *sink)
{
	struct diag d;

	assert_int_equal(dialect_feed_line(st, line, strlen(line), sink, &d), 0);
}

/* ---- the samples ------------------------------------------------------------------ */

static const char *srcdir(void)
{
	const char *s = getenv("SRCDIR");

	return s && s[0] ? s : ".";
}

static char *read_sample(const char *name, size_t *ret_len)
{
	char path[4096];
	char *text = NULL;
	int r;

	(void)snprintf(path, sizeof(path), "%s/tests/data/samples/%s", srcdir(), name);
	r = read_file_capped(path, 16 << 20, &text, ret_len);
	if (r < 0)
		fail_msg("cannot read '%s': %s (is SRCDIR set?)", path, strerror(-r));
	return text;
}

/* The exit code the CLI gave for its error400 run, from the recorded file. */
static int recorded_exit(const char *cli)
{
	size_t len;
	char *text = read_sample("error400-exit-codes.txt", &len);
	char *p = text;
	int code = -1;

	while (p && *p) {
		char name[64];
		int c;

		if (sscanf(p, "%63s %d", name, &c) == 2 && strcmp(name, cli) == 0)
			code = c;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	free(text);
	if (code < 0)
		fail_msg("no exit code recorded for '%s'", cli);
	return code;
}

struct sample {
	const char *file;
	const char *dialect; /* as a profile names it */
	const char *cli;     /* in error400-exit-codes.txt */
	const char *session_id;
	unsigned tool_calls;
	int64_t in, out; /* final usage; -1: no usage event */
	bool error400;
	int http; /* of the failure */
	const char *first_tool;
	const char *final_text;
};

static const struct sample samples[] = {
	/* claude */
	{"claude.jsonl", "claude", "claude", "819ea001-cdcb-46b3-8cd8-3ed48e47f3a7", 1, 200, 40,
	 false, 0, "Write", "Done: I wrote hello.txt."},
	{"claude.resume.jsonl", "claude", "claude", "819ea001-cdcb-46b3-8cd8-3ed48e47f3a7", 1, 200,
	 40, false, 0, "Write", "Done: I wrote second.txt."},
	{"claude.edit.jsonl", "claude", "claude", "7ac635b2-12b8-4db7-aa82-0d16f648b406", 3, 400,
	 80, false, 0, NULL, "Done: edited greeting.txt and rewrote existing.txt."},
	{"claude.error400.jsonl", "claude", "claude", "55208fe9-acbb-4d59-9f5c-bac7a629b81c", 0, 0,
	 0, true, 400, NULL, NULL},
	/* qwen 0.15.10 and 0.24.4, read by the claude dialect */
	{"qwen.jsonl", "qwen", "qwen", "13dcd496-61f2-458c-be93-47917b1547ec", 1, 200, 40, false, 0,
	 "write_file", "Done: I wrote hello.txt."},
	{"qwen.resume.jsonl", "qwen", "qwen", "13dcd496-61f2-458c-be93-47917b1547ec", 1, 400, 80,
	 false, 0, "write_file", "Done: I wrote second.txt."},
	{"qwen.edit.jsonl", "qwen", "qwen", "3eec9c6e-52e8-4eed-afa9-1830632db53f", 3, 400, 80,
	 false, 0, NULL, NULL},
	{"qwen.error400.jsonl", "qwen", "qwen", "f54a4ec0-86f3-4b46-8940-4a934ddfef16", 0, 0, 0,
	 true, 400, NULL, NULL},
	{"qwen-0.24.4.jsonl", "qwen", "qwen-0.24.4", "e22863fa-aad0-48d7-87dc-f07a19089d95", 1, 200,
	 40, false, 0, "write_file", "Done: I wrote hello.txt."},
	{"qwen-0.24.4.error400.jsonl", "qwen", "qwen-0.24.4",
	 "06292bac-1c62-43e1-8448-2af342a44b17", 0, 0, 0, true, 400, NULL, NULL},
	/* codex */
	{"codex.jsonl", "codex", "codex", "01a22bfe-1e40-7b61-96bd-ebca889cdaff", 1, 200, 40, false,
	 0, "file_change", "Done: I wrote hello.txt."},
	{"codex.resume.jsonl", "codex", "codex", "01a22bfe-1e40-7b61-96bd-ebca889cdaff", 1, 400, 80,
	 false, 0, "file_change", "Done: I wrote second.txt."},
	{"codex.edit.jsonl", "codex", "codex", "01a22bfe-2384-71d3-88fa-f993b759aac5", 3, 400, 80,
	 false, 0, "command_execution", "Done: edited greeting.txt and rewrote existing.txt."},
	{"codex.error400.jsonl", "codex", "codex", "01a22bff-116c-7550-960a-d9226e600256", 0, -1,
	 -1, true, 0, NULL, NULL},
	/* gemini */
	{"gemini.jsonl", "gemini", "gemini", "f18bb92c-f524-46cf-8d09-79fca79a3d6a", 1, 200, 40,
	 false, 0, "write_file", "Done: I wrote hello.txt."},
	{"gemini.resume.jsonl", "gemini", "gemini", "f18bb92c-f524-46cf-8d09-79fca79a3d6a", 1, 200,
	 40, false, 0, "write_file", "Done: I wrote second.txt."},
	{"gemini.edit.jsonl", "gemini", "gemini", "6ef9f406-124d-43c0-92a6-bc90ae3475ee", 3, 400,
	 80, false, 0, "read_file", "Done: edited greeting.txt and rewrote existing.txt."},
	{"gemini.error400.jsonl", "gemini", "gemini", "fb3c3c6d-e2d9-4fde-9961-5ba35d2fe3b2", 0, 0,
	 0, true, 400, NULL, NULL},
	/* opencode */
	{"opencode.jsonl", "opencode", "opencode", "ses_dd40182baffenKRHFQe08ewayE", 1, 200, 40,
	 false, 0, "write", "Done: I wrote hello.txt."},
	{"opencode.resume.jsonl", "opencode", "opencode", "ses_dd40182baffenKRHFQe08ewayE", 1, 200,
	 40, false, 0, "write", NULL},
	{"opencode.edit.jsonl", "opencode", "opencode", "ses_dd4015be9ffekwioPr0Lrqtw5g", 3, 400,
	 80, false, 0, "read", NULL},
	{"opencode.error400.jsonl", "opencode", "opencode", "ses_dd400d36effeCguEJAj9oBd3a4", 0, -1,
	 -1, true, 400, NULL, NULL},
	/* pi */
	{"pi.jsonl", "pi", "pi", "01a22bfe-b747-7653-8d41-95a297e9876d", 1, 200, 40, false, 0,
	 "write", "Done: I wrote hello.txt."},
	{"pi.resume.jsonl", "pi", "pi", "01a22bfe-b747-7653-8d41-95a297e9876d", 1, 200, 40, false,
	 0, "write", NULL},
	{"pi.edit.jsonl", "pi", "pi", "01a22bfe-c44f-700b-80fb-3067cc83ffc8", 3, 400, 80, false, 0,
	 "read", NULL},
	{"pi.error400.jsonl", "pi", "pi", "01a22bff-39de-7402-95cb-014cecc1bcd2", 0, 0, 0, true,
	 400, NULL, NULL},
};

static enum outcome classify_with(const struct outcome_inputs *tally, int exit_code, bool changed)
{
	struct outcome_inputs in = *tally;
	char why[256];
	enum outcome o;

	in.exit_code = exit_code;
	outcome_set_changes(&in, changed, true);
	o = outcome_classify_why(&in, why, sizeof(why));
	assert_true(why[0] != '\0');
	return o;
}

static void check_sample(const struct sample *s)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct dialect_state st;
	struct event_sink sink = {record, rc};
	enum dialect d = dialect_from_string(s->dialect);
	const struct rec *sess, *res;
	size_t len;
	char *text = read_sample(s->file, &len);
	int lines, bad;
	unsigned i, tool_results = 0;

	print_message("# %s\n", s->file);
	assert_true(d >= 0);
	recorder_init(rc, d);
	dialect_state_init(&st, d);
	lines = feed_text(&st, text, len, &sink, &bad);
	assert_true(lines > 0);
	assert_int_equal(bad, 0);
	assert_int_equal(st.bad_lines, 0);
	assert_int_equal(st.line_no, (uint64_t)lines);
	/* every type in the real streams is known */
	assert_int_equal(count(rc, EVENT_UNKNOWN), 0);

	/* the agent's own session id, once, first */
	assert_int_equal(count(rc, EVENT_SESSION_STARTED), 1);
	sess = first(rc, EVENT_SESSION_STARTED);
	assert_ptr_equal(sess, &rc->r[0]);
	assert_string_equal(sess->session_id, s->session_id);
	assert_string_equal(st.session_id, s->session_id);
	assert_int_equal(sess->line, 1);

	/* tool calls and their results pair up */
	assert_int_equal(count(rc, EVENT_TOOL_CALL), s->tool_calls);
	for (i = 0; i < rc->n; i++) {
		if (rc->r[i].kind != EVENT_TOOL_RESULT)
			continue;
		tool_results++;
		assert_non_null(rc->r[i].tool_id);
		assert_false(rc->r[i].is_error);
		assert_non_null(rc->r[i].tool_name); /* from the call when the result lacks it */
	}
	assert_int_equal(tool_results, s->tool_calls);
	if (s->first_tool) {
		const struct rec *call = first(rc, EVENT_TOOL_CALL);
		json_t *args = NULL;

		assert_string_equal(call->tool_name, s->first_tool);
		assert_non_null(call->tool_id);
		assert_non_null(call->tool_args);
		assert_int_equal(json_parse_strict("args", call->tool_args, strlen(call->tool_args),
						   &args, NULL),
				 0);
		assert_true(json_is_object(args));
		json_decref(args);
	}

	/* the final usage */
	if (s->in < 0) {
		assert_int_equal(count(rc, EVENT_USAGE), 0);
	} else {
		const struct rec *usage = last(rc, EVENT_USAGE);

		assert_int_equal(usage->in, s->in);
		assert_int_equal(usage->out, s->out);
	}

	/* the text the model said last */
	if (s->final_text) {
		assert_string_equal(last(rc, EVENT_TEXT)->text, s->final_text);
	}

	/* the terminal result, and the outcome */
	res = count(rc, EVENT_RESULT) ? last(rc, EVENT_RESULT) : NULL;
	if (!s->error400) {
		assert_int_equal(count(rc, EVENT_RESULT), 1);
		assert_non_null(res);
		assert_false(res ? res->is_error : true);
		assert_int_equal(count(rc, EVENT_ERROR), 0);
		assert_int_equal(count(rc, EVENT_RATE_LIMITED), 0);
		assert_true(st.terminal_seen);
		assert_int_equal(classify_with(&rc->tally, 0, true), OUTCOME_COMPLETED);
		/* the same run with an untouched worktree did nothing */
		assert_int_equal(classify_with(&rc->tally, 0, false), OUTCOME_NO_CHANGES);
		/* a success result does not excuse a non-zero exit */
		assert_int_equal(classify_with(&rc->tally, 1, true), OUTCOME_FAILED);
	} else {
		int codes[] = {0, 1, 2, 41, 130, 144, 255};
		int exit_code = recorded_exit(s->cli);

		print_message("#   recorded exit code %d\n", exit_code);
		if (res) {
			assert_true(res->is_error);
			assert_non_null(res->message);
			assert_int_equal(res->http, s->http);
		} else {
			/* opencode has no terminal event: its error event says it */
			assert_true(count(rc, EVENT_ERROR) > 0);
			assert_int_equal(first(rc, EVENT_ERROR)->http, s->http);
		}
		assert_int_equal(count(rc, EVENT_RATE_LIMITED), 0);
		assert_int_equal(classify_with(&rc->tally, exit_code, false), OUTCOME_FAILED);
		/* whatever the exit code */
		for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
			assert_int_equal(classify_with(&rc->tally, codes[i], false),
					 OUTCOME_FAILED);
	}
	recorder_release(rc);
	free(rc);
	free(text);
}

static void test_samples(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		check_sample(&samples[i]);
}

/* Sample details that the table does not cover. */
static void test_sample_details(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;
	const struct rec *r;
	size_t len;
	char *text;

	(void)state;
	/* claude: model, cost, turns, denials, is_error with subtype success */
	text = read_sample("claude.jsonl", &len);
	recorder_init(rc, DIALECT_CLAUDE);
	dialect_state_init(&st, DIALECT_CLAUDE);
	(void)feed_text(&st, text, len, &sink, NULL);
	assert_string_equal(first(rc, EVENT_SESSION_STARTED)->model, "claude-sonnet-4-5");
	r = last(rc, EVENT_USAGE);
	assert_true(r->cost > 0.0011 && r->cost < 0.0013);
	assert_int_equal(r->cached, 0);
	r = last(rc, EVENT_RESULT);
	assert_string_equal(r->status, "success");
	assert_int_equal(r->turns, 2);
	assert_int_equal(r->denials, 0);
	assert_string_equal(r->text, "Done: I wrote hello.txt.");
	assert_non_null(strstr(first(rc, EVENT_TOOL_CALL)->tool_args,
			       "\"file_path\":\"/home/user/repo/hello.txt\""));
	assert_string_equal(first(rc, EVENT_TOOL_RESULT)->tool_name, "Write");
	recorder_release(rc);
	free(text);

	text = read_sample("claude.error400.jsonl", &len);
	recorder_init(rc, DIALECT_CLAUDE);
	dialect_state_init(&st, DIALECT_CLAUDE);
	(void)feed_text(&st, text, len, &sink, NULL);
	r = last(rc, EVENT_RESULT);
	assert_string_equal(r->status, "success"); /* what claude says ... */
	assert_true(r->is_error);		   /* ... and what it means */
	assert_int_equal(count(rc, EVENT_ERROR), 1);
	assert_int_equal(first(rc, EVENT_ERROR)->http, 400);
	assert_int_equal(count(rc, EVENT_TEXT), 0); /* the error text is not model output */
	recorder_release(rc);
	free(text);

	/* qwen 0.15.10: success, is_error false, result "[API Error: 400 ...]" */
	text = read_sample("qwen.error400.jsonl", &len);
	recorder_init(rc, DIALECT_CLAUDE);
	dialect_state_init(&st, DIALECT_CLAUDE);
	(void)feed_text(&st, text, len, &sink, NULL);
	r = last(rc, EVENT_RESULT);
	assert_string_equal(r->status, "success");
	assert_true(r->is_error);
	assert_string_equal(r->message, "[API Error: 400 fakellm: scripted invalid request]");
	recorder_release(rc);
	free(text);

	/* codex: the inner provider message, not the JSON wrapper */
	text = read_sample("codex.error400.jsonl", &len);
	recorder_init(rc, DIALECT_CODEX);
	dialect_state_init(&st, DIALECT_CODEX);
	(void)feed_text(&st, text, len, &sink, NULL);
	assert_string_equal(first(rc, EVENT_ERROR)->message, "fakellm: scripted invalid request");
	assert_string_equal(first(rc, EVENT_ERROR)->error_kind, "invalid_request_error");
	assert_string_equal(last(rc, EVENT_RESULT)->message, "fakellm: scripted invalid request");
	recorder_release(rc);
	free(text);

	/* codex: a command's output and exit code */
	text = read_sample("codex.edit.jsonl", &len);
	recorder_init(rc, DIALECT_CODEX);
	dialect_state_init(&st, DIALECT_CODEX);
	(void)feed_text(&st, text, len, &sink, NULL);
	r = first(rc, EVENT_TOOL_RESULT);
	assert_string_equal(r->tool_output, "hello world\nsecond line\n");
	assert_string_equal(rc->r[0].type, "thread.started");
	recorder_release(rc);
	free(text);

	/* gemini: the user's prompt echo is not text; deltas are marked */
	text = read_sample("gemini.jsonl", &len);
	recorder_init(rc, DIALECT_GEMINI);
	dialect_state_init(&st, DIALECT_GEMINI);
	(void)feed_text(&st, text, len, &sink, NULL);
	assert_int_equal(count(rc, EVENT_TEXT), 1);
	assert_true(first(rc, EVENT_TEXT)->delta);
	assert_string_equal(first(rc, EVENT_SESSION_STARTED)->model, "gemini-2.5-pro");
	recorder_release(rc);
	free(text);

	/* opencode: steps add up, the "stop" step is the end */
	text = read_sample("opencode.edit.jsonl", &len);
	recorder_init(rc, DIALECT_OPENCODE);
	dialect_state_init(&st, DIALECT_OPENCODE);
	(void)feed_text(&st, text, len, &sink, NULL);
	assert_int_equal(count(rc, EVENT_USAGE), 4);
	assert_int_equal(first(rc, EVENT_USAGE)->in, 100);
	assert_int_equal(last(rc, EVENT_RESULT)->line, 12);
	assert_string_equal(last(rc, EVENT_RESULT)->status, "stop");
	recorder_release(rc);
	free(text);

	/* pi: exit 0 on an API error; the stream says stopReason error */
	text = read_sample("pi.error400.jsonl", &len);
	recorder_init(rc, DIALECT_PI);
	dialect_state_init(&st, DIALECT_PI);
	(void)feed_text(&st, text, len, &sink, NULL);
	r = first(rc, EVENT_ERROR);
	assert_non_null(r);
	assert_string_equal(r->message, "400 fakellm: scripted invalid request");
	assert_int_equal(r->http, 400);
	r = last(rc, EVENT_RESULT);
	assert_string_equal(r->status, "error");
	assert_true(r->is_error);
	assert_int_equal(r->line, 9);
	recorder_release(rc);
	free(text);

	free(rc);
}

/* ---- text signals ------------------------------------------------------------------ */

struct signal_case {
	const char *line;
	int is_signal;
	enum text_signal kind;
	const char *payload_key; /* a key the payload must have, or NULL */
};

static const struct signal_case signal_cases[] = {
	{"BERNSTEIN:COMPLETED", 1, TEXT_SIGNAL_COMPLETED, NULL},
	{"  BERNSTEIN:COMPLETED  \r", 1, TEXT_SIGNAL_COMPLETED, NULL},
	{"BERNSTEIN: COMPLETED", 1, TEXT_SIGNAL_COMPLETED, NULL},
	{"BERNSTEIN:COMPLETED {}", 1, TEXT_SIGNAL_COMPLETED, NULL},
	{"BERNSTEIN:COMPLETED\t{\"summary\":\"ok\"}", 1, TEXT_SIGNAL_COMPLETED, "summary"},
	{"BERNSTEIN:FAILED {\"reason\": \"tests fail\"}", 1, TEXT_SIGNAL_FAILED, "reason"},
	{"BERNSTEIN:QUESTION {\"question\":\"which?\",\"options\":[\"a\",\"b\"],\"id\":\"q1\"}", 1,
	 TEXT_SIGNAL_QUESTION, "options"},
	{"BERNSTEIN:PLAN_DRAFT {\"markdown\":\"# plan\",\"path\":null}", 1, TEXT_SIGNAL_PLAN_DRAFT,
	 "markdown"},
	{"BERNSTEIN:PLAN_READY   {\"path\": \".sdd/plan.md\"}  ", 1, TEXT_SIGNAL_PLAN_READY,
	 "path"},
	{"BERNSTEIN:BLOCKED {\"reason\":\"need a key\",\"hint\":null}", 1, TEXT_SIGNAL_BLOCKED,
	 "hint"},
	{"BERNSTEIN:completed", 0, 0, NULL}, /* kinds are case-sensitive */
	{"bernstein:COMPLETED", 0, 0, NULL}, /* so is the prefix */
	{"Bernstein:COMPLETED", 0, 0, NULL},
	{"BERNSTEIN:", 0, 0, NULL}, /* empty body */
	{"BERNSTEIN:    ", 0, 0, NULL},
	{"BERNSTEIN:DONE", 0, 0, NULL}, /* unknown kind */
	{"BERNSTEIN:COMPLETEDX", 0, 0, NULL},
	{"BERNSTEIN :COMPLETED", 0, 0, NULL},
	{"xBERNSTEIN:COMPLETED", 0, 0, NULL},
	{"say BERNSTEIN:COMPLETED", 0, 0, NULL},
	{"BERNSTEIN:FAILED [1,2]", 0, 0, NULL}, /* payload must be an object */
	{"BERNSTEIN:FAILED \"reason\"", 0, 0, NULL},
	{"BERNSTEIN:FAILED {bad", 0, 0, NULL}, /* payload must be JSON */
	{"BERNSTEIN:COMPLETED {} trailing", 0, 0, NULL},
	{"BERNSTEIN:FAILED {\"a\":1,\"a\":2}", 0, 0, NULL}, /* strict: duplicate keys */
	{"", 0, 0, NULL},
	{"COMPLETED", 0, 0, NULL},
};

static void test_signal_grammar(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(signal_cases) / sizeof(signal_cases[0]); i++) {
		const struct signal_case *c = &signal_cases[i];
		enum text_signal kind = _TEXT_SIGNAL_INVALID;
		json_t *payload = NULL;
		int r = dialect_text_signals_parse(c->line, strlen(c->line), &kind, &payload);

		print_message("# '%s'\n", c->line);
		assert_int_equal(r, c->is_signal);
		if (!r) {
			assert_null(payload);
			continue;
		}
		assert_int_equal(kind, c->kind);
		assert_true(json_is_object(payload));
		if (c->payload_key)
			assert_non_null(json_object_get(payload, c->payload_key));
		else
			assert_int_equal(json_object_size(payload), 0);
		json_decref(payload);
	}
	assert_string_equal(dialect_text_signals_kind_name(TEXT_SIGNAL_PLAN_READY), "PLAN_READY");
	assert_null(dialect_text_signals_kind_name(_TEXT_SIGNAL_MAX));
}

static void test_signal_stream(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;
	const struct rec *r;

	(void)state;
	recorder_init(rc, DIALECT_TEXT_SIGNALS);
	dialect_state_init(&st, DIALECT_TEXT_SIGNALS);
	feed1(&st, "working on it", &sink);
	feed1(&st, "", &sink); /* blank: nothing */
	feed1(&st, "BERNSTEIN:QUESTION {\"question\":\"which db?\",\"id\":\"q1\"}", &sink);
	feed1(&st, "BERNSTEIN:completed", &sink); /* not a signal: text */
	feed1(&st, "BERNSTEIN:COMPLETED {\"summary\":\"all done\"}", &sink);
	assert_int_equal(rc->n, 4);
	assert_int_equal(rc->r[0].kind, EVENT_TEXT);
	assert_string_equal(rc->r[0].text, "working on it");
	assert_int_equal(rc->r[1].kind, EVENT_SIGNAL);
	assert_string_equal(rc->r[1].signal, "QUESTION");
	assert_string_equal(rc->r[1].payload, "{\"id\":\"q1\",\"question\":\"which db?\"}");
	assert_int_equal(rc->r[1].line, 3);
	assert_int_equal(rc->r[2].kind, EVENT_TEXT);
	r = &rc->r[3];
	assert_int_equal(r->kind, EVENT_RESULT);
	assert_false(r->is_error);
	assert_string_equal(r->status, "COMPLETED");
	assert_string_equal(r->text, "all done");
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_COMPLETED);
	recorder_release(rc);

	/* FAILED is terminal and wins over exit 0 */
	recorder_init(rc, DIALECT_TEXT_SIGNALS);
	dialect_state_init(&st, DIALECT_TEXT_SIGNALS);
	feed1(&st, "BERNSTEIN:FAILED {\"reason\":\"tests fail\"}", &sink);
	r = last(rc, EVENT_RESULT);
	assert_true(r->is_error);
	assert_string_equal(r->message, "tests fail");
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_FAILED);
	recorder_release(rc);

	/* no signal at all: the exit decides (the terminal signal is advisory) */
	recorder_init(rc, DIALECT_TEXT_SIGNALS);
	dialect_state_init(&st, DIALECT_TEXT_SIGNALS);
	feed1(&st, "did the thing", &sink);
	assert_false(rc->tally.terminal_expected);
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_COMPLETED);
	rc->tally.exit_code = 3;
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_FAILED);
	recorder_release(rc);
	free(rc);
}

static void test_plain_dialects(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;
	enum dialect ds[] = {DIALECT_NONE, DIALECT_POLL_PTY};
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		recorder_init(rc, ds[i]);
		dialect_state_init(&st, ds[i]);
		feed1(&st, "{\"type\":\"result\"}", &sink); /* not parsed: text */
		feed1(&st, "BERNSTEIN:COMPLETED", &sink);   /* not parsed: text */
		feed1(&st, "line with CR\r", &sink);
		assert_int_equal(rc->n, 3);
		assert_int_equal(count(rc, EVENT_TEXT), 3);
		assert_string_equal(rc->r[0].text, "{\"type\":\"result\"}");
		assert_string_equal(rc->r[2].text, "line with CR");
		assert_int_equal(rc->r[2].line, 3);
		assert_int_equal(outcome_classify(&rc->tally), OUTCOME_COMPLETED);
		recorder_release(rc);
	}
	free(rc);
}

/* ---- malformed input never stops the stream ------------------------------------------ */

static const char *const init_lines[] = {
	[DIALECT_CLAUDE] = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"S1\"}",
	[DIALECT_CODEX] = "{\"type\":\"thread.started\",\"thread_id\":\"S1\"}",
	[DIALECT_GEMINI] = "{\"type\":\"init\",\"session_id\":\"S1\",\"model\":\"m\"}",
	[DIALECT_OPENCODE] = "{\"type\":\"step_start\",\"sessionID\":\"S1\",\"part\":{}}",
	[DIALECT_PI] = "{\"type\":\"session\",\"id\":\"S1\"}",
	[DIALECT_RUNNER] = "{\"type\":\"start\",\"session_id\":\"S1\",\"model\":\"m\"}",
};

static const char *const end_lines[] = {
	[DIALECT_CLAUDE] = "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}",
	[DIALECT_CODEX] = "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1}}",
	[DIALECT_GEMINI] = "{\"type\":\"result\",\"status\":\"success\"}",
	[DIALECT_OPENCODE] =
		"{\"type\":\"step_finish\",\"sessionID\":\"S1\",\"part\":{\"reason\":\"stop\"}}",
	[DIALECT_PI] =
		"{\"type\":\"agent_end\",\"messages\":[{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"stop\"}]}",
	[DIALECT_RUNNER] = "{\"type\":\"completion\",\"status\":\"done\",\"summary\":\"ok\"}",
};

static void test_malformed_lines(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;
	size_t big = 2u << 20, huge = 5u << 20;
	char *garbage = xmalloc(big + 1), *bigjson = xmalloc(big + 64),
	     *hugeline = xmalloc(huge + 1);
	int d;

	(void)state;
	memset(garbage, 'x', big);
	garbage[big] = '\0';
	(void)snprintf(bigjson, 64, "{\"type\":\"zzz_unknown\",\"pad\":\"");
	memset(bigjson + strlen(bigjson), 'y', big - 40);
	bigjson[strlen("{\"type\":\"zzz_unknown\",\"pad\":\"") + big - 40] = '\0';
	memcpy(bigjson + strlen(bigjson), "\"}", 3);
	memset(hugeline, '{', huge);
	hugeline[huge] = '\0';

	for (d = DIALECT_CLAUDE; d <= DIALECT_RUNNER; d++) {
		struct {
			const char *line;
			size_t len;
			int r;
		} bad[] = {
			{"hello, not json", 0, -EBADMSG},
			{"{\"type\":\"result\"", 0, -EBADMSG},		  /* truncated */
			{"{\"type\":\"a\",\"type\":\"b\"}", 0, -EBADMSG}, /* duplicate keys */
			{"[1,2,3]", 0, -EBADMSG},			  /* not an object */
			{"\"type\"", 0, -EBADMSG},
			{"{\"type\":\"x\"} trailing", 0, -EBADMSG},
			{"{\"type\":\"a\0b\"}", 14, -EBADMSG}, /* a NUL byte in the line */
			{garbage, big, -EBADMSG},
			{hugeline, huge, -ENOBUFS},
			{"{\"no_type\":1}", 0, 0},
			{"{\"type\":42}", 0, 0},
			{"{\"type\":\"zzz_unknown\"}", 0, 0},
			{bigjson, 0, 0},
			{"   ", 0, 0},
		};
		size_t i;

		print_message("# %s\n", dialect_to_string((enum dialect)d));
		recorder_init(rc, (enum dialect)d);
		dialect_state_init(&st, (enum dialect)d);
		feed1(&st, init_lines[d], &sink);
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			size_t len = bad[i].len ? bad[i].len : strlen(bad[i].line);
			struct diag diag;
			unsigned before = rc->n;
			int r;

			diag_clear(&diag);
			r = dialect_feed_line(&st, bad[i].line, len, &sink, &diag);
			assert_int_equal(r, bad[i].r);
			if (i == sizeof(bad) / sizeof(bad[0]) - 1) {
				assert_int_equal(rc->n, before); /* blank: nothing */
				continue;
			}
			/* kept, as unknown, with the line number */
			assert_true(rc->n > before);
			assert_int_equal(rc->r[before].kind, EVENT_UNKNOWN);
			assert_int_equal(rc->r[before].line, i + 2);
			assert_non_null(rc->r[before].reason);
			if (r < 0) {
				assert_string_equal(diag.file, "stdout");
				assert_int_equal(diag.line, i + 2);
				assert_true(diag.msg[0] != '\0');
			}
		}
		/* the stream goes on */
		feed1(&st, end_lines[d], &sink);
		assert_string_equal(first(rc, EVENT_SESSION_STARTED)->session_id, "S1");
		assert_int_equal(count(rc, EVENT_SESSION_STARTED), 1);
		assert_non_null(last(rc, EVENT_RESULT));
		assert_false(last(rc, EVENT_RESULT)->is_error);
		assert_int_equal(st.bad_lines, 9);
		assert_int_equal(outcome_classify(&rc->tally), OUTCOME_COMPLETED);
		recorder_release(rc);
	}
	/* the text dialects take the same lines as text */
	for (d = DIALECT_TEXT_SIGNALS; d <= DIALECT_NONE; d++) {
		struct diag diag;

		recorder_init(rc, (enum dialect)d);
		dialect_state_init(&st, (enum dialect)d);
		assert_int_equal(dialect_feed_line(&st, garbage, big, &sink, &diag), 0);
		assert_int_equal(dialect_feed_line(&st, hugeline, huge, &sink, &diag), -ENOBUFS);
		assert_int_equal(
			dialect_feed_line(&st, "{\"type\":\"a\",\"type\":\"b\"}", 23, &sink, &diag),
			0);
		assert_int_equal(rc->r[0].kind, EVENT_TEXT);
		assert_non_null(strstr(rc->r[0].json, "\"truncated\":true"));
		assert_int_equal(rc->r[1].kind, EVENT_UNKNOWN);
		assert_int_equal(rc->r[2].kind, EVENT_TEXT);
		recorder_release(rc);
	}
	free(garbage);
	free(bigjson);
	free(hugeline);
	free(rc);
}

static void test_without_sink(void **state)
{
	struct dialect_state st;
	int d;

	(void)state;
	/* a NULL sink drops events; the state still follows */
	for (d = 0; d < _DIALECT_MAX; d++) {
		dialect_state_init(&st, (enum dialect)d);
		if (d <= DIALECT_RUNNER) {
			assert_int_equal(dialect_feed_line(&st, init_lines[d],
							   strlen(init_lines[d]), NULL, NULL),
					 0);
			assert_string_equal(st.session_id, "S1");
			assert_int_equal(dialect_feed_line(&st, "oops", 4, NULL, NULL), -EBADMSG);
		}
		assert_int_equal(dialect_feed_line(&st, NULL, 0, NULL, NULL), 0);
		assert_true(st.events >= (d <= DIALECT_RUNNER ? 2u : 0u));
	}
	st.dialect = (enum dialect)99;
	assert_int_equal(dialect_feed_line(&st, "x", 1, NULL, NULL), -EINVAL);
}

/* ---- rate limits in each dialect's structured errors -------------------------------------- */

struct rl_case {
	enum dialect d;
	const char *lines[4];
	int http;
	int64_t retry_after_s;
	int64_t reset_at_s;
	int exit_code;
	enum outcome outcome;
};

static const struct rl_case rl_cases[] = {
	{DIALECT_CLAUDE,
	 {"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}",
	  "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"api_error_status\":429,\"result\":\"API Error: 429 {\\\"type\\\":\\\"rate_limit_error\\\"}\"}"},
	 429,
	 -1,
	 -1,
	 1,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_CLAUDE,
	 {"{\"type\":\"assistant\",\"session_id\":\"s\",\"error\":\"rate_limit\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"API Error: Request rejected (429)\"}]}}",
	  "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true}"},
	 0,
	 -1,
	 -1,
	 1,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_CLAUDE,
	 {"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Claude AI usage limit reached|1748404800\"}"},
	 0,
	 -1,
	 1748404800,
	 1,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_CLAUDE,
	 {"{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true,\"result\":\"You've hit your limit \\u00b7 resets 3pm (Europe/Berlin)\"}"},
	 0,
	 -1,
	 -1,
	 1,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_CODEX,
	 {"{\"type\":\"thread.started\",\"thread_id\":\"t\"}",
	  "{\"type\":\"error\",\"message\":\"exceeded retry limit, last status: 429 Too Many Requests\"}",
	  "{\"type\":\"turn.failed\",\"error\":{\"message\":\"exceeded retry limit, last status: 429 Too Many Requests\"}}"},
	 429,
	 -1,
	 -1,
	 1,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_CODEX,
	 {"{\"type\":\"turn.failed\",\"error\":{\"message\":\"You've hit your usage limit. Try again in 2 days 3 hours.\"}}"},
	 0,
	 2 * 86400 + 3 * 3600,
	 -1,
	 1,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_GEMINI,
	 {"{\"type\":\"result\",\"status\":\"error\",\"error\":{\"type\":\"unknown\",\"message\":\"[API Error: {\\\"error\\\":{\\\"code\\\":429,\\\"message\\\":\\\"Resource has been exhausted. Please retry in 27.9s.\\\",\\\"status\\\":\\\"RESOURCE_EXHAUSTED\\\"}}]\"}}"},
	 429,
	 28,
	 -1,
	 144,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_OPENCODE,
	 {"{\"type\":\"error\",\"sessionID\":\"o\",\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"Too Many Requests\",\"statusCode\":429,\"responseHeaders\":{\"retry-after\":\"30\"}}}}"},
	 429,
	 -1,
	 -1,
	 1,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_PI,
	 {"{\"type\":\"session\",\"id\":\"p\"}",
	  "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"429 Rate limit reached. Retry-After: 20\"}}",
	  "{\"type\":\"agent_end\",\"messages\":[{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"429 Rate limit reached\"}]}"},
	 429,
	 20,
	 -1,
	 0,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_RUNNER,
	 {"{\"type\":\"start\",\"session_id\":\"r\",\"model\":\"m\"}",
	  "{\"type\":\"error\",\"kind\":\"rate_limit\",\"message\":\"RateLimitError: slow down\"}"},
	 0,
	 -1,
	 -1,
	 4,
	 OUTCOME_RATE_LIMITED},
	{DIALECT_NONE,
	 {"Error: 429 Too Many Requests, try again in 30 seconds"},
	 429,
	 30,
	 -1,
	 1,
	 OUTCOME_RATE_LIMITED},
	/* a rate-limit line in a run that then succeeds does not make it one */
	{DIALECT_NONE,
	 {"retrying after rate limit (resets in 5s)", "done"},
	 0,
	 5,
	 -1,
	 0,
	 OUTCOME_COMPLETED},
	{DIALECT_TEXT_SIGNALS,
	 {"usage limit reached, resets at 10:30 pm", "BERNSTEIN:FAILED {\"reason\":\"quota\"}"},
	 0,
	 -1,
	 -1,
	 0,
	 OUTCOME_RATE_LIMITED},
};

static void test_rate_limits(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(rl_cases) / sizeof(rl_cases[0]); i++) {
		const struct rl_case *c = &rl_cases[i];
		const struct rec *r;

		print_message("# case %zu (%s)\n", i, dialect_to_string(c->d));
		recorder_init(rc, c->d);
		dialect_state_init(&st, c->d);
		for (k = 0; k < 4 && c->lines[k]; k++)
			feed1(&st, c->lines[k], &sink);
		r = first(rc, EVENT_RATE_LIMITED);
		assert_non_null(r);
		assert_int_equal(r->http, c->http);
		assert_int_equal(r->hint.retry_after_s, c->retry_after_s);
		assert_int_equal(r->hint.reset_at_s, c->reset_at_s);
		rc->tally.exit_code = c->exit_code;
		assert_int_equal(outcome_classify(&rc->tally), c->outcome);
		recorder_release(rc);
	}
	/* time of day */
	recorder_init(rc, DIALECT_NONE);
	dialect_state_init(&st, DIALECT_NONE);
	feed1(&st, "You've hit your limit - resets 3pm", &sink);
	assert_int_equal(first(rc, EVENT_RATE_LIMITED)->hint.reset_hour, 15);
	assert_non_null(strstr(first(rc, EVENT_RATE_LIMITED)->json, "\"reset_time\":\"15:00\""));
	recorder_release(rc);

	/* model text talking about rate limits is not a rate limit */
	recorder_init(rc, DIALECT_CLAUDE);
	dialect_state_init(&st, DIALECT_CLAUDE);
	feed1(&st,
	      "{\"type\":\"assistant\",\"session_id\":\"s\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"I added rate limit handling for HTTP 429 Too Many Requests.\"}]}}",
	      &sink);
	feed1(&st, "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}", &sink);
	assert_int_equal(count(rc, EVENT_RATE_LIMITED), 0);
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_COMPLETED);
	recorder_release(rc);

	/* a 400 with the usual x-ratelimit-* response headers is not one */
	recorder_init(rc, DIALECT_OPENCODE);
	dialect_state_init(&st, DIALECT_OPENCODE);
	feed1(&st,
	      "{\"type\":\"error\",\"sessionID\":\"o\",\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"bad request\",\"statusCode\":400,\"responseHeaders\":{\"x-ratelimit-remaining-requests\":\"99\"},\"responseBody\":\"{}\"}}}",
	      &sink);
	assert_int_equal(count(rc, EVENT_RATE_LIMITED), 0);
	assert_int_equal(first(rc, EVENT_ERROR)->http, 400);
	assert_string_equal(first(rc, EVENT_ERROR)->error_kind, "APIError");
	rc->tally.exit_code = 1;
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_FAILED);
	recorder_release(rc);

	/* stderr lines */
	recorder_init(rc, DIALECT_CODEX);
	dialect_state_init(&st, DIALECT_CODEX);
	assert_int_equal(
		dialect_feed_stderr(&st, "Reading additional input from stdin...", 38, &sink), 0);
	assert_int_equal(rc->n, 0);
	assert_int_equal(dialect_feed_stderr(&st, "ERROR: 429 Too Many Requests; Retry-After: 12",
					     45, &sink),
			 0);
	assert_int_equal(rc->n, 1);
	assert_int_equal(rc->r[0].kind, EVENT_RATE_LIMITED);
	assert_int_equal(rc->r[0].stream, 2);
	assert_int_equal(rc->r[0].line, 2);
	assert_int_equal(rc->r[0].hint.retry_after_s, 12);
	assert_non_null(strstr(rc->r[0].json, "\"stream\":\"stderr\""));
	assert_int_equal(st.line_no, 0);
	recorder_release(rc);
	free(rc);
}

/* ---- the rarer event types of each dialect --------------------------------------------- */

static void test_other_types(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;

	(void)state;
	recorder_init(rc, DIALECT_CLAUDE);
	dialect_state_init(&st, DIALECT_CLAUDE);
	feed1(&st,
	      "{\"type\":\"system\",\"subtype\":\"api_retry\",\"attempt\":2,\"max_retries\":10,\"error_status\":429,\"error\":\"rate_limit\",\"session_id\":\"s\"}",
	      &sink);
	feed1(&st, "{\"type\":\"system\",\"subtype\":\"api_retry\"}", &sink);
	feed1(&st, "{\"type\":\"system\",\"subtype\":\"error\",\"message\":\"boom\"}", &sink);
	feed1(&st, "{\"type\":\"system\",\"subtype\":\"compact_boundary\"}", &sink);
	feed1(&st, "{\"type\":\"stream_event\",\"event\":{}}", &sink);
	feed1(&st,
	      "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\"},{\"type\":\"text\",\"text\":\"\"}]}}",
	      &sink);
	assert_string_equal(first(rc, EVENT_SESSION_STARTED)->session_id, "s");
	assert_null(first(rc, EVENT_SESSION_STARTED)->model);
	assert_string_equal(first(rc, EVENT_WARNING)->message, "API retry 2 of 10: rate_limit");
	assert_int_equal(first(rc, EVENT_WARNING)->http, 429);
	assert_string_equal(last(rc, EVENT_WARNING)->message, "API retry");
	assert_int_equal(first(rc, EVENT_RATE_LIMITED)->http, 429);
	assert_int_equal(count(rc, EVENT_RATE_LIMITED), 1);
	assert_string_equal(first(rc, EVENT_ERROR)->message, "boom");
	assert_string_equal(first(rc, EVENT_UNKNOWN)->type, "system");
	assert_int_equal(first(rc, EVENT_UNKNOWN)->line, 4);
	assert_int_equal(count(rc, EVENT_TEXT), 0); /* thinking and empty text are not output */
	recorder_release(rc);

	/* codex: a failed command, an MCP call, an error item, an unknown item */
	recorder_init(rc, DIALECT_CODEX);
	dialect_state_init(&st, DIALECT_CODEX);
	feed1(&st,
	      "{\"type\":\"item.completed\",\"item\":{\"id\":\"c1\",\"type\":\"command_execution\",\"command\":\"false\",\"aggregated_output\":\"\",\"exit_code\":1,\"status\":\"failed\"}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"item.started\",\"item\":{\"id\":\"m1\",\"type\":\"mcp_tool_call\",\"server\":\"gw\",\"tool\":\"search\",\"arguments\":{\"q\":\"x\"},\"status\":\"in_progress\"}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"item.completed\",\"item\":{\"id\":\"m1\",\"type\":\"mcp_tool_call\",\"tool\":\"search\",\"status\":\"failed\",\"error\":{\"message\":\"no gateway\"}}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"item.completed\",\"item\":{\"id\":\"e1\",\"type\":\"error\",\"message\":\"model fell back\"}}",
	      &sink);
	feed1(&st, "{\"type\":\"item.completed\",\"item\":{\"id\":\"z\",\"type\":\"zzz\"}}", &sink);
	feed1(&st, "{\"type\":\"item.completed\",\"item\":{}}", &sink);
	assert_int_equal(count(rc, EVENT_TOOL_CALL), 2); /* c1 announced by its result */
	assert_true(first(rc, EVENT_TOOL_RESULT)->is_error);
	assert_string_equal(first(rc, EVENT_TOOL_CALL)->tool_args, "{\"command\":\"false\"}");
	assert_string_equal(last(rc, EVENT_TOOL_CALL)->tool_name, "search");
	assert_string_equal(last(rc, EVENT_TOOL_CALL)->tool_args, "{\"q\":\"x\"}");
	assert_true(last(rc, EVENT_TOOL_RESULT)->is_error);
	assert_string_equal(last(rc, EVENT_TOOL_RESULT)->tool_output, "no gateway");
	assert_string_equal(first(rc, EVENT_WARNING)->message, "model fell back");
	assert_int_equal(count(rc, EVENT_UNKNOWN), 2);
	recorder_release(rc);

	/* gemini: error events by severity; a failed tool */
	recorder_init(rc, DIALECT_GEMINI);
	dialect_state_init(&st, DIALECT_GEMINI);
	feed1(&st, "{\"type\":\"error\",\"severity\":\"warning\",\"message\":\"slow\"}", &sink);
	feed1(&st, "{\"type\":\"error\",\"severity\":\"error\",\"message\":\"Error 503\"}", &sink);
	assert_string_equal(first(rc, EVENT_WARNING)->message, "slow");
	assert_int_equal(first(rc, EVENT_ERROR)->http, 503);
	recorder_release(rc);

	/* opencode: a running tool announces once; a failed one */
	recorder_init(rc, DIALECT_OPENCODE);
	dialect_state_init(&st, DIALECT_OPENCODE);
	feed1(&st,
	      "{\"type\":\"tool_use\",\"sessionID\":\"o\",\"part\":{\"tool\":\"bash\",\"callID\":\"k1\",\"state\":{\"status\":\"running\",\"input\":{\"command\":\"ls\"}}}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"tool_use\",\"sessionID\":\"o\",\"part\":{\"tool\":\"bash\",\"callID\":\"k1\",\"state\":{\"status\":\"error\",\"error\":\"Permission denied\"}}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"step_finish\",\"sessionID\":\"o\",\"part\":{\"reason\":\"tool-calls\",\"tokens\":{\"input\":5,\"output\":1,\"cache\":{\"read\":2}},\"cost\":0.5}}",
	      &sink);
	assert_int_equal(count(rc, EVENT_TOOL_CALL), 1);
	assert_true(first(rc, EVENT_TOOL_RESULT)->is_error);
	assert_true(first(rc, EVENT_TOOL_RESULT)->permission_denied);
	assert_int_equal(last(rc, EVENT_USAGE)->cached, 2);
	assert_true(last(rc, EVENT_USAGE)->cost == 0.5);
	assert_int_equal(count(rc, EVENT_RESULT), 0); /* not the last step */
	recorder_release(rc);

	/* pi: a retry notice */
	recorder_init(rc, DIALECT_PI);
	dialect_state_init(&st, DIALECT_PI);
	feed1(&st,
	      "{\"type\":\"auto_retry_start\",\"attempt\":1,\"errorMessage\":\"429 rate limit\"}",
	      &sink);
	feed1(&st, "{\"type\":\"agent_end\",\"messages\":[]}", &sink);
	assert_int_equal(first(rc, EVENT_WARNING)->http, 429);
	assert_int_equal(count(rc, EVENT_RATE_LIMITED), 1);
	assert_true(last(rc, EVENT_RESULT)->is_error); /* no assistant message at all */
	recorder_release(rc);
	free(rc);
}

/* ---- permission refusals ------------------------------------------------------------- */

static void test_permission(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;

	(void)state;
	recorder_init(rc, DIALECT_CLAUDE);
	dialect_state_init(&st, DIALECT_CLAUDE);
	feed1(&st,
	      "{\"type\":\"assistant\",\"session_id\":\"s\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Write\",\"input\":{\"file_path\":\"/r/a\"}}]}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"is_error\":true,\"content\":\"Claude requested permissions to write to /r/a, but you haven't granted it yet.\"}]}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"I could not write\",\"permission_denials\":[{\"tool_name\":\"Write\",\"tool_use_id\":\"t1\"}]}",
	      &sink);
	assert_true(first(rc, EVENT_TOOL_RESULT)->permission_denied);
	assert_true(first(rc, EVENT_TOOL_RESULT)->is_error);
	assert_string_equal(first(rc, EVENT_TOOL_RESULT)->tool_name, "Write");
	assert_int_equal(last(rc, EVENT_RESULT)->denials, 1);
	outcome_set_changes(&rc->tally, false, true);
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_PERMISSION_BLOCKED);
	/* it got something written after all */
	outcome_set_changes(&rc->tally, true, true);
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_COMPLETED);
	recorder_release(rc);

	/* an ordinary tool failure is not a refusal */
	recorder_init(rc, DIALECT_GEMINI);
	dialect_state_init(&st, DIALECT_GEMINI);
	feed1(&st,
	      "{\"type\":\"tool_result\",\"tool_id\":\"x\",\"status\":\"error\",\"error\":{\"type\":\"x\",\"message\":\"File not found: a.txt\"}}",
	      &sink);
	assert_true(first(rc, EVENT_TOOL_RESULT)->is_error);
	assert_false(first(rc, EVENT_TOOL_RESULT)->permission_denied);
	assert_string_equal(first(rc, EVENT_TOOL_RESULT)->tool_output, "File not found: a.txt");
	recorder_release(rc);
	free(rc);
}

/* ---- the runner's lines (anchor section 6) ---------------------------------------------- */

static void test_runner(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;
	const struct rec *r;

	(void)state;
	recorder_init(rc, DIALECT_RUNNER);
	dialect_state_init(&st, DIALECT_RUNNER);
	feed1(&st,
	      "{\"type\":\"start\",\"session_id\":\"run-1\",\"model\":\"gpt-5\",\"sandbox_provider\":\"unix_local\"}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"progress\",\"message\":\"builtin tools active: read_file, write_file\",\"tool_source\":\"builtin\"}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"tool_call\",\"name\":\"write_file\",\"args\":{\"path\":\"a.txt\",\"bytes\":3},\"tool_source\":\"builtin\",\"invocation_id\":\"i1\"}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"tool_result\",\"name\":\"write_file\",\"status\":\"ok\",\"bytes\":3,\"tool_source\":\"builtin\",\"invocation_id\":\"i1\"}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"usage\",\"input_tokens\":120,\"output_tokens\":30,\"tool_calls\":1,\"model\":\"gpt-5\",\"cost_usd\":0.25,\"priced\":true}",
	      &sink);
	/* the runner of src/runner/ names the id call_id, and reports retries */
	feed1(&st,
	      "{\"type\":\"tool_call\",\"tool_source\":\"gateway\",\"name\":\"gw__search\",\"call_id\":\"c2\",\"turn\":2,\"args\":{\"q\":\"x\"}}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"tool_result\",\"tool_source\":\"gateway\",\"name\":\"gw__search\",\"call_id\":\"c2\",\"status\":\"error\",\"error\":\"boom\",\"output\":\"error: boom\"}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"progress\",\"message\":\"retrying in 2.5 s (attempt 1 of 4 failed; Retry-After): HTTP 429\",\"retry\":true,\"http_status\":429,\"wait_ms\":2500}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"progress\",\"message\":\"retrying in 1.0 s (attempt 2 of 4 failed): HTTP 503\",\"retry\":true,\"http_status\":503,\"wait_ms\":1000}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"completion\",\"status\":\"done\",\"summary\":\"wrote a.txt\",\"turns\":3,\"finish_reason\":\"stop\"}",
	      &sink);
	assert_string_equal(first(rc, EVENT_SESSION_STARTED)->session_id, "run-1");
	assert_string_equal(first(rc, EVENT_SESSION_STARTED)->model, "gpt-5");
	assert_string_equal(first(rc, EVENT_TEXT)->text,
			    "builtin tools active: read_file, write_file");
	r = first(rc, EVENT_TOOL_CALL);
	assert_string_equal(r->tool_id, "i1");
	assert_string_equal(r->tool_args, "{\"path\":\"a.txt\",\"bytes\":3}");
	assert_false(first(rc, EVENT_TOOL_RESULT)->is_error);
	r = last(rc, EVENT_USAGE);
	assert_int_equal(r->in, 120);
	assert_int_equal(r->out, 30);
	assert_true(r->cost == 0.25);
	assert_string_equal(last(rc, EVENT_RESULT)->text, "wrote a.txt");
	assert_int_equal(last(rc, EVENT_RESULT)->turns, 3);
	assert_string_equal(last(rc, EVENT_TOOL_CALL)->tool_id, "c2");
	assert_true(last(rc, EVENT_TOOL_RESULT)->is_error);
	assert_string_equal(last(rc, EVENT_TOOL_RESULT)->tool_output, "error: boom");
	assert_int_equal(count(rc, EVENT_TEXT), 1); /* retries are not text */
	assert_int_equal(count(rc, EVENT_WARNING), 2);
	assert_int_equal(last(rc, EVENT_WARNING)->http, 503);
	assert_int_equal(count(rc, EVENT_RATE_LIMITED), 1);
	assert_int_equal(first(rc, EVENT_RATE_LIMITED)->hint.retry_after_s, 3);
	outcome_set_changes(&rc->tally, true, true);
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_COMPLETED);
	recorder_release(rc);

	recorder_init(rc, DIALECT_RUNNER);
	dialect_state_init(&st, DIALECT_RUNNER);
	feed1(&st, "{\"type\":\"start\",\"session_id\":\"run-2\",\"model\":\"m\"}", &sink);
	feed1(&st,
	      "{\"type\":\"error\",\"kind\":\"config_invalid\",\"message\":\"api_key_env 'GITHUB_TOKEN' is not an allowed credential variable name\"}",
	      &sink);
	feed1(&st,
	      "{\"type\":\"error\",\"kind\":\"http\",\"message\":\"bad request\",\"http_status\":400,\"attempts\":1}",
	      &sink);
	assert_string_equal(first(rc, EVENT_ERROR)->error_kind, "config_invalid");
	assert_int_equal(last(rc, EVENT_ERROR)->http, 400);
	assert_int_equal(count(rc, EVENT_RATE_LIMITED), 0);
	rc->tally.exit_code = 2;
	assert_int_equal(outcome_classify(&rc->tally), OUTCOME_FAILED);
	recorder_release(rc);
	free(rc);
}

/* ---- serialization ---------------------------------------------------------------------- */

static char *to_json(const struct event *ev, int64_t ts)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	assert_int_equal(event_to_json(ev, ts, &sb), 0);
	return sbuf_detach(&sb, NULL);
}

static void expect_json(const struct event *ev, int64_t ts, const char *want)
{
	char *got = to_json(ev, ts);

	assert_string_equal(got, want);
	free(got);
}

static void test_serialize_golden(void **state)
{
	struct event ev;

	(void)state;
	event_init(&ev, EVENT_SESSION_STARTED);
	ev.dialect = "claude";
	ev.line = 1;
	ev.type = "system";
	ev.session_id = "819ea001";
	ev.model = "claude-sonnet-4-5";
	expect_json(
		&ev, 1796034443107000000LL,
		"{\"ts\":\"2026-11-30T10:27:23.107000Z\",\"kind\":\"session_started\",\"dialect\":\"claude\",\"line\":1,\"type\":\"system\",\"session_id\":\"819ea001\",\"model\":\"claude-sonnet-4-5\"}\n");

	event_init(&ev, EVENT_TEXT);
	ev.dialect = "gemini";
	ev.line = 5;
	ev.text = "Done.\n";
	ev.delta = true;
	expect_json(
		&ev, 0,
		"{\"kind\":\"text\",\"dialect\":\"gemini\",\"line\":5,\"text\":\"Done.\\n\",\"delta\":true}\n");

	event_init(&ev, EVENT_TOOL_CALL);
	ev.dialect = "codex";
	ev.line = 3;
	ev.tool_id = "item_0";
	ev.tool_name = "command_execution";
	ev.tool_args = "{\n  \"command\": \"ls\"\n}"; /* re-dumped on one line */
	expect_json(
		&ev, 0,
		"{\"kind\":\"tool_call\",\"dialect\":\"codex\",\"line\":3,\"tool_id\":\"item_0\",\"tool_name\":\"command_execution\",\"args\":{\"command\":\"ls\"}}\n");
	ev.tool_args = "not json {";
	expect_json(
		&ev, 0,
		"{\"kind\":\"tool_call\",\"dialect\":\"codex\",\"line\":3,\"tool_id\":\"item_0\",\"tool_name\":\"command_execution\",\"args\":\"not json {\"}\n");

	event_init(&ev, EVENT_TOOL_RESULT);
	ev.dialect = "claude";
	ev.line = 3;
	ev.tool_id = "t1";
	ev.tool_name = "Write";
	ev.is_error = true;
	ev.permission_denied = true;
	ev.tool_output = "denied";
	expect_json(
		&ev, 0,
		"{\"kind\":\"tool_result\",\"dialect\":\"claude\",\"line\":3,\"tool_id\":\"t1\",\"tool_name\":\"Write\",\"is_error\":true,\"permission_denied\":true,\"output\":\"denied\"}\n");

	event_init(&ev, EVENT_USAGE);
	ev.dialect = "claude";
	ev.line = 5;
	ev.input_tokens = 200;
	ev.output_tokens = 40;
	ev.cached_tokens = 0;
	ev.cost_usd = 0.0012000000000000001;
	expect_json(
		&ev, 0,
		"{\"kind\":\"usage\",\"dialect\":\"claude\",\"line\":5,\"input_tokens\":200,\"output_tokens\":40,\"cached_tokens\":0,\"cost_usd\":0.0012000000000000001}\n");

	event_init(&ev, EVENT_RATE_LIMITED);
	ev.dialect = "codex";
	ev.line = 4;
	ev.http_status = 429;
	ev.hint.retry_after_s = 30;
	ev.hint.reset_at_s = 1748404800;
	ev.hint.reset_hour = 22;
	ev.hint.reset_minute = 0;
	ev.message = "slow down";
	expect_json(
		&ev, 0,
		"{\"kind\":\"rate_limited\",\"dialect\":\"codex\",\"line\":4,\"http_status\":429,\"retry_after_s\":30,\"reset_at\":\"2025-05-28T04:00:00Z\",\"reset_time\":\"22:00\",\"message\":\"slow down\"}\n");

	event_init(&ev, EVENT_RESULT);
	ev.dialect = "claude";
	ev.line = 3;
	ev.type = "result";
	ev.status = "success";
	ev.is_error = true;
	ev.http_status = 400;
	ev.num_turns = 1;
	ev.duration_ms = 449;
	ev.permission_denials = 0;
	ev.message = "API Error: 400";
	expect_json(
		&ev, 0,
		"{\"kind\":\"result\",\"dialect\":\"claude\",\"line\":3,\"type\":\"result\",\"status\":\"success\",\"is_error\":true,\"http_status\":400,\"num_turns\":1,\"duration_ms\":449,\"permission_denials\":0,\"message\":\"API Error: 400\"}\n");

	event_init(&ev, EVENT_ERROR);
	ev.dialect = "opencode";
	ev.line = 1;
	ev.error_kind = "APIError";
	ev.http_status = 400;
	ev.message = "bad";
	expect_json(
		&ev, 0,
		"{\"kind\":\"error\",\"dialect\":\"opencode\",\"line\":1,\"error_kind\":\"APIError\",\"http_status\":400,\"message\":\"bad\"}\n");

	event_init(&ev, EVENT_WARNING);
	ev.dialect = "codex";
	ev.message = "w";
	expect_json(&ev, 0, "{\"kind\":\"warning\",\"dialect\":\"codex\",\"message\":\"w\"}\n");

	event_init(&ev, EVENT_SIGNAL);
	ev.dialect = "text-signals";
	ev.line = 2;
	ev.type = "BLOCKED";
	ev.signal = "BLOCKED";
	ev.payload = "{\"reason\":\"need a key\"}";
	expect_json(
		&ev, 0,
		"{\"kind\":\"signal\",\"dialect\":\"text-signals\",\"line\":2,\"type\":\"BLOCKED\",\"signal\":\"BLOCKED\",\"payload\":{\"reason\":\"need a key\"}}\n");

	event_init(&ev, EVENT_UNKNOWN);
	ev.dialect = "pi";
	ev.line = 7;
	ev.stream = 1;
	ev.type = "compaction";
	ev.reason = "unknown event type";
	ev.raw = "{\"type\":\"compaction\"}xyz";
	ev.raw_len = 21;
	expect_json(
		&ev, 0,
		"{\"kind\":\"unknown\",\"dialect\":\"pi\",\"line\":7,\"type\":\"compaction\",\"reason\":\"unknown event type\",\"raw\":\"{\\\"type\\\":\\\"compaction\\\"}\"}\n");
}

static void test_serialize_escaping(void **state)
{
	struct event ev;
	struct sbuf sb = SBUF_INIT(SIZE_MAX), tiny = SBUF_INIT(16);
	char *big = xmalloc(EVENT_FIELD_MAX + 100);
	char *got;
	json_t *j = NULL;

	(void)state;
	event_init(&ev, EVENT_TEXT);
	ev.dialect = "none";
	/* quotes, backslash, controls, an escape sequence, valid and invalid UTF-8 */
	ev.text = "a\"b\\c\x01\x1b[31m\xc3\xa9\xff\xe2\x82\xac\xed\xa0\x80z";
	got = to_json(&ev, 0);
	assert_string_equal(
		got,
		"{\"kind\":\"text\",\"dialect\":\"none\",\"text\":\"a\\\"b\\\\c\\u0001\\u001b[31m\xc3\xa9\\ufffd\xe2\x82\xac\\ufffd\\ufffd\\ufffdz\"}\n");
	assert_int_equal(json_parse_strict("x", got, strlen(got), &j, NULL), 0);
	json_decref(j);
	free(got);

	/* long fields are cut at a character boundary, and say so */
	memset(big, 'a', EVENT_FIELD_MAX - 1);
	memcpy(big + EVENT_FIELD_MAX - 1, "\xe2\x82\xac", 3); /* a euro sign across the cap */
	big[EVENT_FIELD_MAX + 2] = '\0';
	ev.text = big;
	assert_int_equal(event_to_json(&ev, 0, &sb), 0);
	assert_non_null(strstr(sb.buf, "\"truncated\":true"));
	assert_null(strstr(sb.buf, "\\ufffd"));
	assert_int_equal(json_parse_strict("x", sb.buf, sb.len, &j, NULL), 0);
	assert_int_equal(strlen(json_string_value(json_object_get(j, "text"))),
			 EVENT_FIELD_MAX - 1);
	json_decref(j);
	sbuf_release(&sb);

	/* a full buffer: -ENOBUFS and nothing appended */
	assert_int_equal(sbuf_adds(&tiny, "keep"), 0);
	ev.text = "0123456789abcdef";
	assert_int_equal(event_to_json(&ev, 0, &tiny), -ENOBUFS);
	assert_string_equal(tiny.buf, "keep");
	sbuf_release(&tiny);

	/* an invalid kind */
	ev.kind = _EVENT_KIND_MAX;
	assert_int_equal(event_to_json(&ev, 0, &sb), -EINVAL);
	sbuf_release(&sb);
	free(big);
}

static void test_names_and_describe(void **state)
{
	struct event ev;
	char buf[128];
	int k;

	(void)state;
	for (k = 0; k < _EVENT_KIND_MAX; k++)
		assert_int_equal(event_kind_from_string(event_kind_to_string((enum event_kind)k)),
				 k);
	assert_int_equal(event_kind_from_string("nope"), _EVENT_KIND_INVALID);
	assert_int_equal(event_kind_from_string(NULL), _EVENT_KIND_INVALID);
	assert_null(event_kind_to_string(_EVENT_KIND_MAX));
	for (k = 0; k < _DIALECT_MAX; k++)
		assert_int_equal(dialect_from_string(dialect_to_string((enum dialect)k)), k);
	assert_int_equal(dialect_from_string("qwen"), DIALECT_CLAUDE);
	assert_int_equal(dialect_from_string("Claude"), _DIALECT_INVALID);
	assert_null(dialect_to_string(_DIALECT_MAX));
	assert_true(dialect_has_terminal(DIALECT_PI));
	assert_false(dialect_has_terminal(DIALECT_TEXT_SIGNALS));
	assert_false(dialect_has_terminal(DIALECT_NONE));

	event_init(&ev, EVENT_TOOL_CALL);
	ev.tool_name = "Write";
	ev.tool_args = "{\"a\":1}";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "tool call Write {\"a\":1}");
	event_init(&ev, EVENT_TEXT);
	ev.text = "red \x1b[31mtext\nnext";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "red  [31mtext next");
	event_init(&ev, EVENT_RESULT);
	ev.is_error = true;
	ev.status = "error";
	ev.message = "boom";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "result: failed (error): boom");
	event_init(&ev, EVENT_USAGE);
	ev.input_tokens = 5;
	ev.output_tokens = 7;
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "usage: 5 in, 7 out");
	assert_string_equal(event_describe(&ev, buf, 6), "usage");

	/* every kind, with and without its optional parts */
	event_init(&ev, EVENT_SESSION_STARTED);
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "session ?");
	ev.session_id = "s1";
	ev.model = "m";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "session s1 (model m)");
	event_init(&ev, EVENT_TEXT);
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "");
	event_init(&ev, EVENT_TOOL_CALL);
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "tool call ? ");
	event_init(&ev, EVENT_TOOL_RESULT);
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "tool result ?: ok");
	ev.tool_id = "t9";
	ev.is_error = true;
	ev.tool_output = "";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "tool result t9: error");
	ev.tool_name = "Bash";
	ev.permission_denied = true;
	ev.tool_output = "no";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "tool result Bash: denied: no");
	event_init(&ev, EVENT_USAGE);
	ev.input_tokens = -3;
	ev.cost_usd = 0.5;
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "usage: 0 in, 0 out, $0.5000");
	event_init(&ev, EVENT_RATE_LIMITED);
	ev.hint.retry_after_s = -1;
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "rate limited: ");
	ev.hint.retry_after_s = 30;
	ev.message = "slow down";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)),
			    "rate limited (retry in 30 s): slow down");
	event_init(&ev, EVENT_RESULT);
	ev.message = "not said on success";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "result: success");
	event_init(&ev, EVENT_ERROR);
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "error: ");
	ev.http_status = 529;
	ev.message = "overloaded";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "error (HTTP 529): overloaded");
	event_init(&ev, EVENT_WARNING);
	ev.message = "careful";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "warning: careful");
	event_init(&ev, EVENT_SIGNAL);
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "signal ? {}");
	ev.signal = "QUESTION";
	ev.payload = "{\"q\":1}";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "signal QUESTION {\"q\":1}");
	event_init(&ev, EVENT_UNKNOWN);
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "unknown");
	ev.type = "turn.x";
	ev.reason = "unknown event type";
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)),
			    "unknown 'turn.x' (unknown event type)");
	event_init(&ev, EVENT_TEXT);
	ev.kind = _EVENT_KIND_MAX;
	assert_string_equal(event_describe(&ev, buf, sizeof(buf)), "?");
	assert_null(event_describe(&ev, NULL, 0));
}

static void test_oversized_and_liveness(void **state)
{
	struct recorder *rc = xcalloc(1, sizeof(*rc));
	struct event_sink sink = {record, rc};
	struct dialect_state st;
	struct dialect_liveness l;

	(void)state;
	recorder_init(rc, DIALECT_CLAUDE);
	dialect_state_init(&st, DIALECT_CLAUDE);
	feed1(&st, init_lines[DIALECT_CLAUDE], &sink);
	assert_int_equal(dialect_feed_oversized(&st, 1, "{\"type\":", 8, 5000000, &sink), 0);
	feed1(&st, end_lines[DIALECT_CLAUDE], &sink);
	assert_int_equal(rc->r[1].kind, EVENT_WARNING);
	assert_int_equal(rc->r[1].line, 2);
	assert_non_null(strstr(rc->r[1].message, "5000000"));
	assert_int_equal(last(rc, EVENT_RESULT)->line, 3);
	assert_int_equal(dialect_feed_oversized(&st, 2, "x", 1, 9, &sink), 0);
	assert_int_equal(last(rc, EVENT_WARNING)->stream, 2);
	assert_int_equal(st.err_line_no, 1);
	recorder_release(rc);
	free(rc);

	dialect_liveness_init(&l, 1000);
	assert_int_equal(dialect_liveness_idle_ms(&l, 1500), 500);
	assert_true(dialect_liveness_observe(&l, 10, 1600));
	assert_int_equal(dialect_liveness_idle_ms(&l, 1700), 100);
	assert_false(dialect_liveness_observe(&l, 10, 5000)); /* no growth */
	assert_int_equal(dialect_liveness_idle_ms(&l, 5000), 3400);
	assert_true(dialect_liveness_observe(&l, 11, 6000));
	assert_int_equal(dialect_liveness_idle_ms(&l, 6000), 0);
	assert_int_equal(dialect_liveness_idle_ms(&l, 10), 0); /* clock behind: 0 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_sample_details),
		cmocka_unit_test(test_signal_grammar),
		cmocka_unit_test(test_signal_stream),
		cmocka_unit_test(test_plain_dialects),
		cmocka_unit_test(test_malformed_lines),
		cmocka_unit_test(test_without_sink),
		cmocka_unit_test(test_rate_limits),
		cmocka_unit_test(test_other_types),
		cmocka_unit_test(test_permission),
		cmocka_unit_test(test_runner),
		cmocka_unit_test(test_serialize_golden),
		cmocka_unit_test(test_serialize_escaping),
		cmocka_unit_test(test_names_and_describe),
		cmocka_unit_test(test_oversized_and_liveness),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
