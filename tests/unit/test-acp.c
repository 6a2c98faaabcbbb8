/* The ACP client engine (adapter/acp.c): the conversation a real agent has
 * with it (frames as gemini, qwen and opencode send them,
 * research/acp-and-pty.md), the permission policy, fs/ * confined to a real
 * directory, unknown methods, malformed frames, cancel and resume. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter/acp.h"
#include "adapter/dialect.h"
#include "adapter/events.h"
#include "adapter/outcome.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

struct fixture {
	char dir[64];	  /* the tree */
	char outside[96]; /* a directory beside it */
	int dirfd;
	struct acp a;
	struct sbuf events; /* every event as its JSON line */
	unsigned n_events;
	struct outcome_inputs tally;
	struct event_sink sink;
};

static void record(void *userdata, const struct event *ev)
{
	struct fixture *f = userdata;

	assert_string_equal(ev->dialect, "acp");
	outcome_observe(&f->tally, ev);
	assert_int_equal(event_to_json(ev, 0, &f->events), 0);
	f->n_events++;
}

static void start(struct fixture *f, bool dangerous, const char *resume, const json_t *mcp)
{
	struct acp_opts o = {0};

	memset(f, 0, sizeof(*f));
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/test-acp-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	(void)snprintf(f->outside, sizeof(f->outside), "%s-out", f->dir);
	assert_int_equal(mkdir(f->outside, 0700), 0);
	f->dirfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->dirfd >= 0);
	f->events = (struct sbuf)SBUF_INIT(SIZE_MAX);
	outcome_inputs_init(&f->tally, DIALECT_ACP);
	f->sink.emit = record;
	f->sink.userdata = f;
	o.cwd = f->dir;
	o.tree_fd = f->dirfd;
	o.dangerous = dangerous;
	o.prompt = "Create hello.txt";
	o.resume_id = resume;
	o.mcp_servers = mcp;
	acp_init(&f->a, &o);
	assert_int_equal(acp_start(&f->a), 0);
	assert_int_equal(acp_start(&f->a), -EALREADY);
}

static void finish(struct fixture *f)
{
	char cmd[256];

	acp_release(&f->a);
	sbuf_release(&f->events);
	(void)close(f->dirfd);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", f->dir, f->outside);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
}

/* The next queued frame, parsed (caller decrefs); NULL when none. */
static json_t *next_frame(struct fixture *f)
{
	size_t len;
	const char *p = acp_pending(&f->a, &len);
	const char *nl;
	json_t *o;

	if (!len)
		return NULL;
	nl = memchr(p, '\n', len);
	assert_non_null(nl);
	o = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "jsonrpc")), "2.0");
	acp_consume(&f->a, (size_t)(nl - p) + 1);
	return o;
}

/* The next queued frame is there; it is dropped. */
static void skip_frame(struct fixture *f)
{
	json_t *o = next_frame(f);

	assert_non_null(o);
	json_decref(o);
}

static json_int_t expect_request(struct fixture *f, const char *method)
{
	json_t *o = next_frame(f);
	json_int_t id;

	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "method")), method);
	id = json_integer_value(json_object_get(o, "id"));
	assert_true(id > 0);
	json_decref(o);
	return id;
}

static void feed(struct fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void feed(struct fixture *f, const char *fmt, ...)
{
	char line[8192];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	assert_int_equal(acp_feed_line(&f->a, line, strlen(line), &f->sink, NULL), 0);
}

static bool has_event(const struct fixture *f, const char *needle)
{
	return strstr(f->events.buf, needle) != NULL;
}

/* initialize and session/new answered: the prompt is in flight. */
static void up_to_prompt(struct fixture *f, bool load_session)
{
	json_int_t id = expect_request(f, "initialize");

	feed(f,
	     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"protocolVersion\":1,"
	     "\"agentCapabilities\":{\"loadSession\":%s},\"agentInfo\":{\"name\":\"fake\","
	     "\"version\":\"1.0\"},\"authMethods\":[]}}",
	     (long long)id, load_session ? "true" : "false");
	if (f->a.resume_id && load_session)
		return;
	id = expect_request(f, "session/new");
	feed(f,
	     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"sessionId\":\"S1\","
	     "\"models\":{\"currentModelId\":\"fake-model\"}}}",
	     (long long)id);
	assert_int_equal(f->a.phase, ACP_PHASE_PROMPT);
}

static void test_conversation(void **state)
{
	struct fixture f;
	json_t *o, *params;
	json_int_t id;

	(void)state;
	start(&f, false, NULL, NULL);
	o = next_frame(&f);
	params = json_object_get(o, "params");
	assert_int_equal(json_integer_value(json_object_get(params, "protocolVersion")), 1);
	assert_true(json_is_true(json_object_get(
		json_object_get(json_object_get(params, "clientCapabilities"), "fs"),
		"writeTextFile")));
	assert_true(json_is_false(
		json_object_get(json_object_get(params, "clientCapabilities"), "terminal")));
	feed(&f,
	     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"protocolVersion\":1,"
	     "\"agentCapabilities\":{\"loadSession\":true}}}",
	     (long long)json_integer_value(json_object_get(o, "id")));
	json_decref(o);
	assert_true(f.a.load_session);
	assert_true(has_event(&f, "\"signal\":\"CAPABILITIES\""));

	o = next_frame(&f);
	assert_string_equal(json_string_value(json_object_get(o, "method")), "session/new");
	params = json_object_get(o, "params");
	assert_string_equal(json_string_value(json_object_get(params, "cwd")), f.dir);
	assert_true(json_is_array(json_object_get(params, "mcpServers")));
	assert_int_equal(json_array_size(json_object_get(params, "mcpServers")), 0);
	id = json_integer_value(json_object_get(o, "id"));
	json_decref(o);
	feed(&f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"sessionId\":\"sess-1\"}}",
	     (long long)id);
	assert_true(has_event(&f, "\"kind\":\"session_started\""));
	assert_true(has_event(&f, "\"session_id\":\"sess-1\""));

	o = next_frame(&f);
	assert_string_equal(json_string_value(json_object_get(o, "method")), "session/prompt");
	params = json_object_get(o, "params");
	assert_string_equal(json_string_value(json_object_get(params, "sessionId")), "sess-1");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(params, "prompt"), 0), "text")),
			    "Create hello.txt");
	id = json_integer_value(json_object_get(o, "id"));
	json_decref(o);

	/* opencode's sequence */
	feed(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		 "\"sess-1\",\"update\":{\"sessionUpdate\":\"available_commands_update\","
		 "\"availableCommands\":[]}}}");
	feed(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		 "\"sess-1\",\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"t1\","
		 "\"title\":\"write\",\"kind\":\"edit\",\"status\":\"pending\",\"rawInput\":{}}}}");
	feed(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		 "\"sess-1\",\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":"
		 "\"t1\",\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":"
		 "{\"type\":\"text\",\"text\":\"Wrote file successfully.\"}}]}}}");
	feed(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		 "\"sess-1\",\"update\":{\"sessionUpdate\":\"plan\",\"entries\":[{\"content\":"
		 "\"write it\",\"priority\":\"high\",\"status\":\"completed\"}]}}}");
	feed(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		 "\"sess-1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		 "{\"type\":\"text\",\"text\":\"Done: I wrote hello.txt.\"}}}}");
	assert_false(acp_finished(&f.a));
	feed(&f,
	     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"stopReason\":\"end_turn\",\"usage\":"
	     "{\"inputTokens\":12,\"outputTokens\":5,\"totalTokens\":17}}}",
	     (long long)id);
	assert_true(acp_finished(&f.a));
	assert_int_equal(f.a.phase, ACP_PHASE_DONE);
	assert_null(next_frame(&f));
	assert_true(has_event(&f, "\"kind\":\"tool_call\",\"dialect\":\"acp\""));
	assert_true(has_event(&f, "\"tool_name\":\"write\""));
	assert_true(has_event(&f, "\"output\":\"Wrote file successfully.\""));
	assert_true(has_event(&f, "\"signal\":\"PLAN\""));
	assert_true(has_event(&f, "\"text\":\"Done: I wrote hello.txt.\",\"delta\":true"));
	assert_true(has_event(&f, "\"input_tokens\":12"));
	assert_true(has_event(&f, "\"kind\":\"result\""));
	assert_true(has_event(&f, "\"status\":\"end_turn\",\"is_error\":false"));
	assert_true((f.tally.results > 0));
	assert_false(f.tally.result_is_error);
	assert_false(has_event(&f, "\"kind\":\"unknown\""));
	finish(&f);
}

/* The answer to the permission request with id 7, parsed. */
static json_t *permission(struct fixture *f, const char *tool_call, const char *options)
{
	json_t *o;

	feed(f,
	     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/request_permission\",\"params\":"
	     "{\"sessionId\":\"S1\",\"toolCall\":%s,\"options\":%s}}",
	     tool_call, options);
	o = next_frame(f);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 7);
	return o;
}

static const char *outcome_option(const json_t *o)
{
	const json_t *out = json_object_get(json_object_get(o, "result"), "outcome");
	const char *kind = json_string_value(json_object_get(out, "outcome"));

	if (kind && strcmp(kind, "cancelled") == 0)
		return "cancelled";
	return json_string_value(json_object_get(out, "optionId"));
}

#define GEMINI_OPTIONS                                                                             \
	"[{\"optionId\":\"proceed_always\",\"name\":\"Always\",\"kind\":\"allow_always\"},"        \
	"{\"optionId\":\"proceed_once\",\"name\":\"Once\",\"kind\":\"allow_once\"},"               \
	"{\"optionId\":\"cancel\",\"name\":\"No\",\"kind\":\"reject_once\"}]"

static void test_permission_policy(void **state)
{
	struct fixture f;
	char tc[1024];
	json_t *o;

	(void)state;
	start(&f, false, NULL, NULL);
	up_to_prompt(&f, true);
	skip_frame(&f); /* the prompt */

	/* gemini's edit of a file in the tree (the call is announced here) */
	(void)snprintf(
		tc, sizeof(tc),
		"{\"toolCallId\":\"w1\",\"status\":\"pending\",\"title\":\"WriteFile\","
		"\"kind\":\"edit\",\"content\":[{\"type\":\"diff\",\"path\":\"%s/hello.txt\","
		"\"oldText\":\"\",\"newText\":\"hi\"}],\"locations\":[{\"path\":\"%s/hello.txt\"}]}",
		f.dir, f.dir);
	o = permission(&f, tc, GEMINI_OPTIONS);
	assert_string_equal(outcome_option(o), "proceed_once");
	json_decref(o);
	assert_true(has_event(&f, "\"tool_name\":\"WriteFile\""));
	assert_true(has_event(&f, "\"decision\":\"allow\""));

	/* a relative path is the tree's */
	o = permission(&f,
		       "{\"toolCallId\":\"w2\",\"kind\":\"edit\",\"rawInput\":{\"file_path\":"
		       "\"sub/x.txt\"}}",
		       GEMINI_OPTIONS);
	assert_string_equal(outcome_option(o), "proceed_once");
	json_decref(o);

	/* outside the tree, and climbing out */
	(void)snprintf(
		tc, sizeof(tc),
		"{\"toolCallId\":\"w3\",\"kind\":\"edit\",\"locations\":[{\"path\":\"%s/a\"},"
		"{\"path\":\"%s/x\"}]}",
		f.dir, f.outside);
	o = permission(&f, tc, GEMINI_OPTIONS);
	assert_string_equal(outcome_option(o), "cancel");
	json_decref(o);
	assert_true(has_event(&f, "\"decision\":\"refuse\""));
	assert_true(has_event(&f, "outside the task's tree"));
	(void)snprintf(tc, sizeof(tc),
		       "{\"toolCallId\":\"w4\",\"kind\":\"edit\",\"locations\":[{\"path\":"
		       "\"%s/../etc/passwd\"}]}",
		       f.dir);
	o = permission(&f, tc, GEMINI_OPTIONS);
	assert_string_equal(outcome_option(o), "cancel");
	json_decref(o);

	/* git's metadata is not the agent's to write */
	(void)snprintf(tc, sizeof(tc),
		       "{\"toolCallId\":\"w5\",\"kind\":\"edit\",\"locations\":[{\"path\":"
		       "\"%s/.git/config\"}]}",
		       f.dir);
	o = permission(&f, tc, GEMINI_OPTIONS);
	assert_string_equal(outcome_option(o), "cancel");
	json_decref(o);
	assert_true(has_event(&f, "in .git or .bernstein"));

	/* a command may act anywhere: refused without dangerous mode */
	o = permission(&f, "{\"toolCallId\":\"x1\",\"kind\":\"execute\",\"title\":\"rm -rf /\"}",
		       "[{\"optionId\":\"allow\",\"kind\":\"allow_once\",\"name\":\"a\"},"
		       "{\"optionId\":\"rej\",\"kind\":\"reject_always\",\"name\":\"r\"}]");
	assert_string_equal(outcome_option(o), "rej");
	json_decref(o);

	/* no reject option offered: the request is cancelled */
	o = permission(&f, "{\"toolCallId\":\"x2\",\"kind\":\"fetch\"}",
		       "[{\"optionId\":\"allow\",\"kind\":\"allow_once\",\"name\":\"a\"}]");
	assert_string_equal(outcome_option(o), "cancelled");
	json_decref(o);
	assert_int_equal(f.a.permissions_granted, 2);
	assert_int_equal(f.a.permissions_refused, 5);
	finish(&f);

	/* dangerous mode allows everything */
	start(&f, true, NULL, NULL);
	up_to_prompt(&f, false);
	skip_frame(&f);
	o = permission(&f, "{\"toolCallId\":\"x1\",\"kind\":\"execute\"}",
		       "[{\"optionId\":\"all\",\"kind\":\"allow_always\",\"name\":\"a\"},"
		       "{\"optionId\":\"rej\",\"kind\":\"reject_once\",\"name\":\"r\"}]");
	assert_string_equal(outcome_option(o), "all");
	json_decref(o);
	finish(&f);
}

static json_t *fs_call(struct fixture *f, const char *method, const char *params_fmt, ...)
	__attribute__((format(printf, 3, 4)));

static json_t *fs_call(struct fixture *f, const char *method, const char *params_fmt, ...)
{
	char params[4096];
	va_list ap;

	va_start(ap, params_fmt);
	(void)vsnprintf(params, sizeof(params), params_fmt, ap);
	va_end(ap);
	feed(f, "{\"jsonrpc\":\"2.0\",\"id\":\"r-9\",\"method\":\"%s\",\"params\":%s}", method,
	     params);
	return next_frame(f);
}

static void test_fs(void **state)
{
	struct fixture f;
	char path[256], *text = NULL;
	size_t len;
	json_t *o;

	(void)state;
	start(&f, false, NULL, NULL);
	up_to_prompt(&f, true);
	json_decref(next_frame(&f));

	/* a missing file reads as "" (gemini writes a new file only then) */
	o = fs_call(&f, "fs/read_text_file", "{\"sessionId\":\"S1\",\"path\":\"%s/hello.txt\"}",
		    f.dir);
	assert_string_equal(json_string_value(json_object_get(o, "id")), "r-9");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(o, "result"), "content")), "");
	json_decref(o);

	o = fs_call(
		&f, "fs/write_text_file",
		"{\"sessionId\":\"S1\",\"path\":\"%s/sub/hello.txt\",\"content\":\"a\\nb\\nc\\n\"}",
		f.dir);
	assert_true(json_is_null(json_object_get(o, "result")));
	json_decref(o);
	(void)snprintf(path, sizeof(path), "%s/sub/hello.txt", f.dir);
	assert_int_equal(read_file_capped(path, 4096, &text, &len), 0);
	assert_string_equal(text, "a\nb\nc\n");
	free(text);
	assert_true(has_event(&f, "\"signal\":\"FS_WRITE\""));

	o = fs_call(&f, "fs/read_text_file",
		    "{\"sessionId\":\"S1\",\"path\":\"%s/sub/hello.txt\",\"line\":2,\"limit\":1}",
		    f.dir);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(o, "result"), "content")), "b\n");
	json_decref(o);

	/* outside the tree: refused, nothing written */
	o = fs_call(&f, "fs/write_text_file",
		    "{\"sessionId\":\"S1\",\"path\":\"%s/evil.txt\",\"content\":\"x\"}", f.outside);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "error"), "code")),
			 ACP_ERR_INTERNAL);
	json_decref(o);
	(void)snprintf(path, sizeof(path), "%s/evil.txt", f.outside);
	assert_int_equal(access(path, F_OK), -1);
	assert_true(has_event(&f, "fs/write_text_file refused"));

	/* a symlink in the tree that leads out: the kernel refuses it */
	(void)snprintf(path, sizeof(path), "%s/link", f.dir);
	assert_int_equal(symlink(f.outside, path), 0);
	o = fs_call(&f, "fs/write_text_file",
		    "{\"sessionId\":\"S1\",\"path\":\"%s/link/evil.txt\",\"content\":\"x\"}",
		    f.dir);
	assert_non_null(json_object_get(o, "error"));
	json_decref(o);
	(void)snprintf(path, sizeof(path), "%s/evil.txt", f.outside);
	assert_int_equal(access(path, F_OK), -1);

	/* .git is refused, and a relative path is not a path */
	o = fs_call(&f, "fs/write_text_file",
		    "{\"sessionId\":\"S1\",\"path\":\"%s/.git/config\",\"content\":\"x\"}", f.dir);
	assert_non_null(json_object_get(o, "error"));
	json_decref(o);
	o = fs_call(&f, "fs/read_text_file", "{\"sessionId\":\"S1\",\"path\":\"hello.txt\"}");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "error"), "code")),
			 ACP_ERR_INVALID_PARAMS);
	json_decref(o);
	assert_int_equal(f.a.fs_writes, 1);
	assert_int_equal(f.a.fs_refused, 4);
	finish(&f);
}

static void test_unknown_method(void **state)
{
	struct fixture f;
	json_t *o;

	(void)state;
	start(&f, false, NULL, NULL);
	up_to_prompt(&f, true);
	json_decref(next_frame(&f));
	feed(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"t-1\",\"method\":\"terminal/create\",\"params\":"
		 "{\"command\":\"sh\"}}");
	o = next_frame(&f);
	assert_string_equal(json_string_value(json_object_get(o, "id")), "t-1");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "error"), "code")),
			 ACP_ERR_METHOD_NOT_FOUND);
	json_decref(o);
	assert_true(has_event(&f, "terminal/create"));
	/* an unknown notification is kept, and answered by nothing */
	feed(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"x/progress\",\"params\":{}}");
	assert_null(next_frame(&f));
	assert_false(acp_finished(&f.a));
	finish(&f);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"not json at all",
		"[1,2]",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"result\":{}}",
		"{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}",
		"{\"jsonrpc\":\"2.0\"}",
		"{\"jsonrpc\":\"2.0\",\"method\":5}",
	};
	struct diag d;
	struct fixture f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		start(&f, false, NULL, NULL);
		json_decref(next_frame(&f));
		diag_clear(&d);
		assert_int_equal(acp_feed_line(&f.a, bad[i], strlen(bad[i]), &f.sink, &d),
				 -EBADMSG);
		assert_true(d.msg[0] != '\0');
		assert_true(acp_finished(&f.a));
		assert_int_equal(f.a.phase, ACP_PHASE_FAILED);
		assert_true(has_event(&f, "\"status\":\"protocol_error\",\"is_error\":true"));
		assert_true((f.tally.results > 0));
		assert_true(f.tally.result_is_error);
		/* nothing more is answered */
		feed(&f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"fs/read_text_file\","
			 "\"params\":{}}");
		assert_null(next_frame(&f));
		finish(&f);
	}
	/* blank lines are not frames */
	start(&f, false, NULL, NULL);
	feed(&f, "   ");
	assert_false(acp_finished(&f.a));
	finish(&f);
}

static void test_oversized(void **state)
{
	struct acp a;
	struct acp_opts o = {.cwd = "/tmp", .tree_fd = -1, .prompt = "p", .max_frame = 16};
	const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\"}";

	(void)state;
	acp_init(&a, &o);
	assert_int_equal(acp_start(&a), 0);
	assert_int_equal(acp_feed_line(&a, line, strlen(line), NULL, NULL), -ENOBUFS);
	assert_true(acp_finished(&a));
	acp_release(&a);
}

static void test_error_answer(void **state)
{
	struct fixture f;
	json_int_t id;

	(void)state;
	start(&f, false, NULL, NULL);
	id = expect_request(&f, "initialize");
	feed(&f,
	     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"protocolVersion\":1,"
	     "\"agentCapabilities\":{}}}",
	     (long long)id);
	id = expect_request(&f, "session/new");
	feed(&f,
	     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32000,\"message\":"
	     "\"Gemini API key is missing or not configured.\"}}",
	     (long long)id);
	assert_true(acp_finished(&f.a));
	assert_true(has_event(&f, "Gemini API key is missing"));
	assert_true(f.tally.result_is_error);
	/* an answer nobody asked for is kept as unknown */
	feed(&f, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}");
	finish(&f);
}

static void test_cancel(void **state)
{
	struct fixture f;
	json_int_t id;
	json_t *o;

	(void)state;
	start(&f, false, NULL, NULL);
	assert_int_equal(acp_cancel(&f.a), 0); /* no turn yet */
	up_to_prompt(&f, true);
	id = expect_request(&f, "session/prompt");
	assert_int_equal(acp_cancel(&f.a), 1);
	assert_int_equal(acp_cancel(&f.a), 0);
	o = next_frame(&f);
	assert_string_equal(json_string_value(json_object_get(o, "method")), "session/cancel");
	assert_null(json_object_get(o, "id"));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(o, "params"), "sessionId")),
		"S1");
	json_decref(o);
	feed(&f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"stopReason\":\"cancelled\"}}",
	     (long long)id);
	assert_true(acp_finished(&f.a));
	/* bernstein stopped it: no result of the agent's decides the outcome */
	assert_false(has_event(&f, "\"kind\":\"result\""));
	assert_true(has_event(&f, "ended its turn after session/cancel"));
	assert_int_equal(f.tally.results, 0);
	finish(&f);

	/* a turn the agent cancelled by itself is a failed result */
	start(&f, false, NULL, NULL);
	up_to_prompt(&f, true);
	id = expect_request(&f, "session/prompt");
	feed(&f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"stopReason\":\"cancelled\"}}",
	     (long long)id);
	assert_true(has_event(&f, "\"status\":\"cancelled\",\"is_error\":true"));
	finish(&f);
}

static void test_resume(void **state)
{
	struct fixture f;
	json_int_t id;
	json_t *o, *mcp;

	(void)state;
	/* advertised: session/load, its replay is not this run's, then the prompt */
	mcp = json_pack("[{s:s, s:s, s:[], s:[]}]", "name", "docs", "command", "/bin/true", "args",
			"env");
	start(&f, false, "old-session", mcp);
	json_decref(mcp);
	up_to_prompt(&f, true);
	o = next_frame(&f);
	assert_string_equal(json_string_value(json_object_get(o, "method")), "session/load");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(o, "params"), "sessionId")),
		"old-session");
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(json_object_get(json_object_get(o, "params"), "mcpServers"),
				       0),
			"name")),
		"docs");
	id = json_integer_value(json_object_get(o, "id"));
	json_decref(o);
	feed(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		 "\"old-session\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\","
		 "\"content\":{\"type\":\"text\",\"text\":\"OLD REPLY\"}}}}");
	feed(&f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":null}", (long long)id);
	assert_false(has_event(&f, "OLD REPLY"));
	assert_true(f.a.loaded);
	assert_true(has_event(&f, "\"session_id\":\"old-session\""));
	o = next_frame(&f);
	assert_string_equal(json_string_value(json_object_get(o, "method")), "session/prompt");
	json_decref(o);
	finish(&f);

	/* the load fails (gemini in the same minute): a fresh session */
	start(&f, false, "old-session", NULL);
	up_to_prompt(&f, true);
	id = expect_request(&f, "session/load");
	feed(&f,
	     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32603,\"message\":"
	     "\"Internal error\"}}",
	     (long long)id);
	assert_false(acp_finished(&f.a));
	assert_true(has_event(&f, "session/load failed"));
	expect_request(&f, "session/new");
	finish(&f);

	/* not advertised: a warning and a fresh session */
	start(&f, false, "old-session", NULL);
	up_to_prompt(&f, false);
	assert_true(has_event(&f, "does not advertise loadSession"));
	finish(&f);
}

static void test_path_inside(void **state)
{
	char *rel = NULL;

	(void)state;
	assert_true(acp_path_inside("/w/t", "/w/t/a/b", &rel));
	assert_string_equal(rel, "a/b");
	free(rel);
	assert_true(acp_path_inside("/w/t/", "/w/t//a/./c/../b", &rel));
	assert_string_equal(rel, "a/b");
	free(rel);
	assert_true(acp_path_inside("/w/t", "x.txt", &rel));
	assert_string_equal(rel, "x.txt");
	free(rel);
	assert_true(acp_path_inside("/w/t", "/w/t", &rel));
	assert_string_equal(rel, "");
	free(rel);
	assert_false(acp_path_inside("/w/t", "/w/tx/a", NULL));
	assert_false(acp_path_inside("/w/t", "/w/t/../u", NULL));
	assert_false(acp_path_inside("/w/t", "../u/a", NULL));
	assert_false(acp_path_inside("/w/t", "", NULL));
	assert_false(acp_path_inside("rel", "/a", NULL));
}

/* The read-only reader of a transcript. */
static void test_reader(void **state)
{
	struct fixture f;
	struct dialect_state st;
	const char *lines[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"something_new\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}}",
	};
	size_t i;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.events = (struct sbuf)SBUF_INIT(SIZE_MAX);
	outcome_inputs_init(&f.tally, DIALECT_ACP);
	f.sink.emit = record;
	f.sink.userdata = &f;
	assert_string_equal(dialect_to_string(DIALECT_ACP), "acp");
	assert_int_equal(dialect_from_string("acp"), DIALECT_ACP);
	assert_true(dialect_has_terminal(DIALECT_ACP));
	dialect_state_init(&st, DIALECT_ACP);
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_int_equal(dialect_feed_line(&st, lines[i], strlen(lines[i]), &f.sink, NULL),
				 0);
	assert_int_equal(dialect_feed_line(&st, "junk", 4, &f.sink, NULL), -EBADMSG);
	assert_true(has_event(&f, "\"text\":\"hi\""));
	assert_true(has_event(&f, "\"type\":\"something_new\""));
	assert_true((f.tally.results > 0));
	assert_false(f.tally.result_is_error);
	sbuf_release(&f.events);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conversation), cmocka_unit_test(test_permission_policy),
		cmocka_unit_test(test_fs),	     cmocka_unit_test(test_unknown_method),
		cmocka_unit_test(test_malformed),    cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_error_answer), cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_resume),	     cmocka_unit_test(test_path_inside),
		cmocka_unit_test(test_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
