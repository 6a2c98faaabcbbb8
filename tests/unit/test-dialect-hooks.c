/* The hooks dialect (adapter/dialect-hooks.c): the real hook payloads of
 * Claude Code 2.1.332 (tests/data/samples/claude.hooks*.jsonl: a file write,
 * a resume, a tool that fails, an HTTP 400) and made-up ones for the other
 * events, mapped to normalized events and an outcome; and the payload line
 * `bernstein hook-post` builds from whatever a hook gets on stdin. */
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

#define MAX_RECS 64

struct rec {
	enum event_kind kind;
	uint64_t line;
	char *type, *session_id, *model, *text, *tool_name, *tool_id, *tool_args, *tool_output;
	char *status, *message, *error_kind, *reason;
	bool is_error, permission_denied;
	int http;
};

struct recorder {
	struct rec r[MAX_RECS];
	unsigned n;
	struct outcome_inputs tally;
	struct dialect_state st;
};

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void record(void *userdata, const struct event *ev)
{
	struct recorder *rc = userdata;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j = NULL;
	struct rec *r;

	outcome_observe(&rc->tally, ev);
	assert_true(rc->n < MAX_RECS);
	assert_string_equal(ev->dialect, "hooks");
	r = &rc->r[rc->n++];
	r->kind = ev->kind;
	r->line = ev->line;
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
	r->reason = dup_or_null(ev->reason);
	r->is_error = ev->is_error;
	r->permission_denied = ev->permission_denied;
	r->http = ev->http_status;
	/* every event is one strict JSON line */
	assert_int_equal(event_to_json(ev, 0, &sb), 0);
	assert_int_equal(json_parse_strict("event", sb.buf, sb.len, &j, NULL), 0);
	json_decref(j);
	sbuf_release(&sb);
}

static void rec_init(struct recorder *rc)
{
	memset(rc, 0, sizeof(*rc));
	dialect_state_init(&rc->st, DIALECT_HOOKS);
	outcome_inputs_init(&rc->tally, DIALECT_HOOKS);
}

static void rec_release(struct recorder *rc)
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
		free(r->reason);
	}
	dialect_state_release(&rc->st);
}

static int feed(struct recorder *rc, const char *line)
{
	struct event_sink sink = {record, rc};
	struct diag d;

	diag_clear(&d);
	return dialect_feed_line(&rc->st, line, strlen(line), &sink, &d);
}

/* Feed every line of a sample file. */
static void feed_file(struct recorder *rc, const char *name)
{
	char path[4096];
	char *buf = NULL, *p, *nl;
	size_t len;

	(void)snprintf(path, sizeof(path), "%s/tests/data/samples/%s", getenv("SRCDIR"), name);
	if (read_file_capped(path, 1 << 20, &buf, &len) < 0)
		fail_msg("cannot read %s", path);
	for (p = buf; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p) - 1;
		else
			*nl = '\0';
		assert_int_equal(feed(rc, p), 0);
		if (!nl[1])
			break;
	}
	free(buf);
}

/* "session_started tool_call tool_result result" */
static void assert_kinds(const struct recorder *rc, const char *want)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	unsigned i;

	for (i = 0; i < rc->n; i++)
		(void)sbuf_addf(&sb, "%s%s", i ? " " : "", event_kind_to_string(rc->r[i].kind));
	if (strcmp(sb.buf, want) != 0)
		fail_msg("kinds:\n  got  %s\n  want %s", sb.buf, want);
	sbuf_release(&sb);
}

static enum outcome classify(struct recorder *rc, int exit_code, char *why, size_t size)
{
	rc->tally.exit_code = exit_code;
	return outcome_classify_why(&rc->tally, why, size);
}

/* ---- the real samples ---- */

static void test_sample_write(void **state)
{
	struct recorder rc;
	char why[256];

	(void)state;
	rec_init(&rc);
	feed_file(&rc, "claude.hooks.jsonl");
	/* SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd */
	assert_int_equal(rc.st.line_no, 6);
	assert_kinds(&rc, "session_started tool_call tool_result result");
	assert_string_equal(rc.r[0].session_id, "1ddbc2d3-9e48-431f-b864-f3f21ec23748");
	assert_string_equal(rc.r[0].type, "SessionStart");
	assert_int_equal(rc.r[0].line, 1);
	assert_string_equal(rc.r[1].tool_name, "Write");
	assert_string_equal(rc.r[1].tool_id, "toolu_e2e_1");
	assert_string_equal(rc.r[1].tool_args,
			    "{\"file_path\":\"/home/user/repo/hello.txt\",\"content\":\"hi\\n\"}");
	assert_int_equal(rc.r[1].line, 3);
	assert_string_equal(rc.r[2].tool_id, "toolu_e2e_1");
	assert_string_equal(rc.r[2].tool_name, "Write");
	assert_false(rc.r[2].is_error);
	assert_non_null(strstr(rc.r[2].tool_output, "\"type\":\"create\""));
	assert_string_equal(rc.r[3].status, "Stop");
	assert_false(rc.r[3].is_error);
	assert_string_equal(rc.r[3].text, "Created hello.txt.");
	assert_true(rc.st.terminal_seen);
	assert_int_equal(classify(&rc, 0, why, sizeof(why)), OUTCOME_COMPLETED);
	rec_release(&rc);
}

static void test_sample_resume(void **state)
{
	struct recorder rc;

	(void)state;
	rec_init(&rc);
	feed_file(&rc, "claude.hooks.resume.jsonl");
	/* the resumed session is announced with the same id */
	assert_kinds(&rc, "session_started result");
	assert_string_equal(rc.r[0].session_id, "1ddbc2d3-9e48-431f-b864-f3f21ec23748");
	assert_string_equal(rc.r[1].text, "Second turn.");
	rec_release(&rc);
}

static void test_sample_toolfail(void **state)
{
	struct recorder rc;

	(void)state;
	rec_init(&rc);
	feed_file(&rc, "claude.hooks.toolfail.jsonl");
	assert_kinds(&rc, "session_started tool_call tool_result result");
	assert_string_equal(rc.r[2].tool_name, "Read");
	assert_true(rc.r[2].is_error);
	assert_false(rc.r[2].permission_denied);
	assert_non_null(strstr(rc.r[2].tool_output, "File does not exist."));
	assert_false(rc.r[3].is_error);
	rec_release(&rc);
}

/* The API answered 400: StopFailure, the run failed whatever the exit. */
static void test_sample_error400(void **state)
{
	struct recorder rc;
	char why[256];

	(void)state;
	rec_init(&rc);
	feed_file(&rc, "claude.hooks.error400.jsonl");
	assert_kinds(&rc, "session_started error result");
	assert_string_equal(rc.r[1].error_kind, "unknown");
	assert_int_equal(rc.r[1].http, 400);
	assert_string_equal(rc.r[1].message, "API Error: 400 fake-llm: bad request (e2e)");
	assert_true(rc.r[2].is_error);
	assert_string_equal(rc.r[2].status, "StopFailure");
	assert_int_equal(rc.r[2].http, 400);
	assert_int_equal(classify(&rc, 0, why, sizeof(why)), OUTCOME_FAILED);
	assert_non_null(strstr(why, "HTTP 400"));
	rec_release(&rc);
}

/* ---- the other events ---- */

static void test_made_up_events(void **state)
{
	struct recorder rc;
	char why[256];

	(void)state;
	rec_init(&rc);
	/* "event" instead of hook_event_name, no session id */
	assert_int_equal(
		feed(&rc,
		     "{\"event\":\"Notification\",\"message\":\"Claude needs your permission to use Bash\"}"),
		0);
	assert_int_equal(
		feed(&rc,
		     "{\"hook_event_name\":\"SessionStart\",\"session_id\":\"s-1\",\"source\":\"startup\",\"model\":\"claude-sonnet-4-6\"}"),
		0);
	/* a PostToolUse whose PreToolUse was not posted announces the call */
	assert_int_equal(
		feed(&rc,
		     "{\"hook_event_name\":\"PostToolUse\",\"session_id\":\"s-1\",\"tool_name\":\"Bash\",\"tool_use_id\":\"t1\",\"tool_input\":{\"command\":\"ls\"},\"tool_response\":\"a\\nb\\n\"}"),
		0);
	assert_int_equal(
		feed(&rc, "{\"hook_event_name\":\"PermissionRequest\",\"tool_name\":\"Bash\"}"), 0);
	assert_int_equal(
		feed(&rc,
		     "{\"hook_event_name\":\"PermissionDenied\",\"tool_name\":\"Write\",\"tool_use_id\":\"t2\",\"reason\":\"denied by policy\"}"),
		0);
	assert_int_equal(feed(&rc, "{\"hook_event_name\":\"SubagentStop\",\"session_id\":\"s-2\"}"),
			 0);
	assert_int_equal(feed(&rc, "{\"hook_event_name\":\"TeammateIdle\"}"), 0);
	assert_int_equal(feed(&rc, "{\"session_id\":\"s-1\"}"), 0);
	assert_int_equal(feed(&rc, ""), 0); /* blank: skipped */
	assert_int_equal(
		feed(&rc,
		     "{\"hook_event_name\":\"StopFailure\",\"error\":\"rate_limit\",\"last_assistant_message\":\"API Error: 429 rate limited; retry after 30 seconds\"}"),
		0);
	assert_kinds(
		&rc,
		"warning session_started tool_call tool_result warning tool_result unknown unknown error rate_limited result");
	assert_string_equal(rc.r[0].message, "Claude needs your permission to use Bash");
	assert_string_equal(rc.r[1].model, "claude-sonnet-4-6");
	assert_string_equal(rc.r[2].tool_name, "Bash");
	assert_string_equal(rc.r[2].tool_args, "{\"command\":\"ls\"}");
	assert_string_equal(rc.r[3].tool_output, "a\nb\n");
	assert_string_equal(rc.r[4].message, "PermissionRequest: Bash");
	assert_true(rc.r[5].permission_denied);
	assert_true(rc.r[5].is_error);
	assert_string_equal(rc.r[5].tool_output, "denied by policy");
	assert_string_equal(rc.r[6].reason, "unknown hook event");
	assert_string_equal(rc.r[6].type, "TeammateIdle");
	assert_string_equal(rc.r[7].reason, "no hook_event_name");
	assert_string_equal(rc.r[8].error_kind, "rate_limit");
	assert_int_equal(rc.r[8].http, 429);
	assert_true(rc.r[10].is_error);
	assert_int_equal(classify(&rc, 0, why, sizeof(why)), OUTCOME_RATE_LIMITED);
	/* one session, the first id */
	assert_string_equal(rc.st.session_id, "s-1");
	rec_release(&rc);
}

static void test_malformed(void **state)
{
	struct recorder rc;
	struct event_sink sink;
	struct diag d;

	(void)state;
	rec_init(&rc);
	sink.emit = record;
	sink.userdata = &rc;
	diag_clear(&d);
	assert_int_equal(dialect_feed_line(&rc.st, "not json", 8, &sink, &d), -EBADMSG);
	assert_string_equal(d.file, "hooks");
	assert_int_equal(d.line, 1);
	assert_int_equal(feed(&rc, "[1,2]"), -EBADMSG);
	assert_int_equal(feed(&rc, "{\"hook_event_name\":\"Stop\",\"hook_event_name\":\"Stop\"}"),
			 -EBADMSG);
	assert_kinds(&rc, "unknown unknown unknown");
	assert_false(rc.st.terminal_seen);
	rec_release(&rc);
}

/* ---- the payload line of hook-post ---- */

static char *payload(const char *in, size_t len, const char *event)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j = NULL;

	assert_int_equal(dialect_hooks_payload(in, len, event, &sb), 0);
	/* one line, a strict JSON object */
	assert_true(sb.len >= 3);
	assert_int_equal(sb.buf[sb.len - 1], '\n');
	assert_null(memchr(sb.buf, '\n', sb.len - 1));
	assert_true(sb.len - 1 <= DIALECT_HOOKS_LINE_MAX);
	assert_int_equal(json_parse_strict("p", sb.buf, sb.len, &j, NULL), 0);
	assert_true(json_is_object(j));
	json_decref(j);
	sb.buf[--sb.len] = '\0';
	return sbuf_detach(&sb, NULL);
}

#define P(in, ev) payload((in), strlen(in), (ev))

static void test_payload(void **state)
{
	char *s;

	(void)state;
	/* a pretty-printed object becomes one compact line, key order kept */
	s = P("{\n  \"session_id\": \"x\",\n  \"hook_event_name\": \"Stop\"\n}\n", "Other");
	assert_string_equal(s, "{\"session_id\":\"x\",\"hook_event_name\":\"Stop\"}");
	free(s);
	/* --event names an event the payload does not */
	s = P("{\"session_id\":\"x\"}", "Stop");
	assert_string_equal(s, "{\"session_id\":\"x\",\"hook_event_name\":\"Stop\"}");
	free(s);
	s = P("{\"event\":\"Stop\"}", "Other");
	assert_string_equal(s, "{\"event\":\"Stop\"}");
	free(s);
	/* nothing on stdin */
	s = payload("", 0, "SessionStart");
	assert_string_equal(s, "{\"hook_event_name\":\"SessionStart\"}");
	free(s);
	s = P(" \n\t", NULL);
	assert_string_equal(s, "{}");
	free(s);
	/* other JSON, not JSON, invalid UTF-8, NUL bytes */
	s = P("[1, 2]", "Stop");
	assert_string_equal(s, "{\"payload\":[1,2],\"hook_event_name\":\"Stop\"}");
	free(s);
	s = P("agent finished\n", "Stop");
	assert_string_equal(s, "{\"raw\":\"agent finished\\n\",\"hook_event_name\":\"Stop\"}");
	free(s);
	s = P("bad \xff\xfe bytes", NULL);
	assert_string_equal(s, "{\"raw\":\"bad ?? bytes\"}");
	free(s);
	s = payload("a\0b", 3, NULL);
	assert_string_equal(s, "{\"raw\":\"a?b\"}");
	free(s);
	s = P("{\"m\":\"a\\u0000b\"}", NULL); /* a reader would refuse \u0000 */
	assert_string_equal(s, "{\"raw\":\"{\\\"m\\\":\\\"a\\\\u0000b\\\"}\"}");
	free(s);
	/* control characters are escaped: still one line */
	s = P("{\"m\":\"a\\nb\\u001b[31m\"}", NULL);
	assert_string_equal(s, "{\"m\":\"a\\nb\\u001B[31m\"}");
	free(s);
}

static void test_payload_caps(void **state)
{
	size_t big = 3 * EVENT_FIELD_MAX, i;
	struct sbuf in = SBUF_INIT(SIZE_MAX);
	json_t *j = NULL;
	char *s;

	(void)state;
	/* one long string: cut to EVENT_FIELD_MAX at a UTF-8 boundary */
	(void)sbuf_adds(&in, "{\"hook_event_name\":\"PostToolUse\",\"tool_response\":\"");
	for (i = 0; i < big / 2; i++)
		(void)sbuf_adds(&in, "\xc3\xa9"); /* é */
	(void)sbuf_adds(&in, "\"}");
	s = payload(in.buf, in.len, NULL);
	assert_int_equal(json_parse_strict("p", s, strlen(s), &j, NULL), 0);
	assert_true(json_is_true(json_object_get(j, "bernstein_truncated")));
	assert_int_equal(json_string_length(json_object_get(j, "tool_response")), EVENT_FIELD_MAX);
	json_decref(j);
	free(s);

	/* many long strings: cut to 4 KiB */
	sbuf_reset(&in);
	(void)sbuf_adds(&in, "{\"hook_event_name\":\"PostToolUse\",\"a\":[");
	for (i = 0; i < 8; i++) {
		size_t k;

		(void)sbuf_adds(&in, i ? ",\"" : "\"");
		for (k = 0; k < EVENT_FIELD_MAX; k++)
			(void)sbuf_addc(&in, 'x');
		(void)sbuf_adds(&in, "\"");
	}
	(void)sbuf_adds(&in, "]}");
	s = payload(in.buf, in.len, NULL);
	assert_int_equal(json_parse_strict("p", s, strlen(s), &j, NULL), 0);
	assert_int_equal(json_string_length(json_array_get(json_object_get(j, "a"), 7)), 4096);
	json_decref(j);
	free(s);

	/* a huge array of small values: only the names are kept */
	sbuf_reset(&in);
	(void)sbuf_adds(
		&in,
		"{\"hook_event_name\":\"PostToolUse\",\"session_id\":\"s\",\"tool_use_id\":\"t\",\"a\":[");
	for (i = 0; i < 200000; i++)
		(void)sbuf_adds(&in, i ? ",1" : "1");
	(void)sbuf_adds(&in, "]}");
	s = payload(in.buf, in.len, "Ignored");
	assert_string_equal(
		s,
		"{\"hook_event_name\":\"PostToolUse\",\"session_id\":\"s\",\"tool_use_id\":\"t\",\"bernstein_truncated\":true}");
	free(s);
	sbuf_release(&in);
}

/* What hook-post sends reads back as the event it names. */
static void test_payload_then_dialect(void **state)
{
	struct recorder rc;
	char *s;

	(void)state;
	rec_init(&rc);
	s = P("{\"session_id\":\"s-9\",\"last_assistant_message\":\"done\"}", "Stop");
	assert_int_equal(feed(&rc, s), 0);
	free(s);
	assert_kinds(&rc, "session_started result");
	assert_string_equal(rc.r[1].text, "done");
	rec_release(&rc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_write),
		cmocka_unit_test(test_sample_resume),
		cmocka_unit_test(test_sample_toolfail),
		cmocka_unit_test(test_sample_error400),
		cmocka_unit_test(test_made_up_events),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_payload),
		cmocka_unit_test(test_payload_caps),
		cmocka_unit_test(test_payload_then_dialect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
