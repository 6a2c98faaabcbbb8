/* adapter/lasterr: the agent's own last error, from real streams (each
 * dialect's failing line fed through its reader) and real stderr texts of the
 * pinned CLIs, and the one-line form (control bytes, UTF-8, the cut). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/dialect.h"
#include "adapter/lasterr.h"

static void observe_fn(void *userdata, const struct event *ev)
{
	lasterr_observe(userdata, ev);
}

/* Feed stdout lines through dialect d's reader and stderr lines (prefixed
 * "2>") to lasterr; the result's text. */
static const char *feed(enum dialect d, const char *const *lines, char *buf, size_t size)
{
	struct lasterr le;
	struct dialect_state st;
	const struct event_sink sink = {.emit = observe_fn, .userdata = &le};
	size_t i;

	lasterr_init(&le, d);
	dialect_state_init(&st, d);
	for (i = 0; lines[i]; i++) {
		if (strncmp(lines[i], "2>", 2) == 0)
			lasterr_stderr(&le, lines[i] + 2, strlen(lines[i] + 2));
		else
			(void)dialect_feed_line(&st, lines[i], strlen(lines[i]), &sink, NULL);
	}
	return lasterr_text(&le, buf, size);
}

static void test_claude_not_logged_in(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\",\"model\":\"m\"}",
		"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Not logged in \\u00b7 Please run /login\"}]},\"session_id\":\"s1\"}",
		"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Not logged in \\u00b7 Please run /login\",\"session_id\":\"s1\"}",
		NULL,
	};
	char buf[LASTERR_MAX + 64];

	(void)state;
	assert_string_equal(feed(DIALECT_CLAUDE, lines, buf, sizeof(buf)),
			    "Not logged in \xc2\xb7 Please run /login");
}

static void test_http_status(void **state)
{
	/* claude: the status is in the result; the text does not say it */
	static const char *const claude[] = {
		"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"api_error_status\":401,\"result\":\"Invalid API key\"}",
		NULL,
	};
	/* opencode: an APIError with its statusCode */
	static const char *const opencode[] = {
		"{\"type\":\"error\",\"sessionID\":\"ses_1\",\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"Too Many Requests\",\"statusCode\":429,\"isRetryable\":false}}}",
		NULL,
	};
	/* codex: the message already carries the status: not repeated */
	static const char *const codex[] = {
		"{\"type\":\"thread.started\",\"thread_id\":\"t1\"}",
		"{\"type\":\"error\",\"message\":\"Reconnecting... 1/5\"}",
		"{\"type\":\"turn.failed\",\"error\":{\"message\":\"unexpected status 500 Internal Server Error: boom\"}}",
		NULL,
	};
	char buf[LASTERR_MAX + 64];

	(void)state;
	assert_string_equal(feed(DIALECT_CLAUDE, claude, buf, sizeof(buf)),
			    "HTTP 401: Invalid API key");
	assert_non_null(strstr(feed(DIALECT_OPENCODE, opencode, buf, sizeof(buf)), "429"));
	assert_string_equal(feed(DIALECT_CODEX, codex, buf, sizeof(buf)),
			    "unexpected status 500 Internal Server Error: boom");
}

static void test_stderr(void **state)
{
	/* gemini 0.61 without a key: exit 41, nothing on stdout */
	static const char *const gemini[] = {
		"2>YOLO mode is enabled. All tool calls will be automatically approved.",
		"2>When using Gemini API, you must specify the GEMINI_API_KEY environment variable.",
		"2>Update your environment and try again (no reload needed if using .env)!",
		NULL,
	};
	/* pi 0.73 without a key: the error, a blank line, its hint */
	static const char *const pi[] = {
		"2>No API key found for the selected model.",
		"2>",
		"2>Use /login to log into a provider via OAuth or API key. See:",
		"2>  /x/docs/providers.md",
		NULL,
	};
	/* a stream error wins over stderr; a stack frame is not the error */
	static const char *const both[] = {
		"2>Error: connect ECONNREFUSED 127.0.0.1:9",
		"2>    at TCPConnectWrap.afterConnect (node:net:1555:16)",
		"{\"type\":\"error\",\"message\":\"stream error: 503\"}",
		NULL,
	};
	char buf[LASTERR_MAX + 64];

	(void)state;
	assert_string_equal(
		feed(DIALECT_GEMINI, gemini, buf, sizeof(buf)),
		"When using Gemini API, you must specify the GEMINI_API_KEY environment variable.");
	assert_string_equal(
		feed(DIALECT_PI, pi, buf, sizeof(buf)),
		"No API key found for the selected model. Use /login to log into a provider via OAuth or API key. See:");
	assert_string_equal(feed(DIALECT_CODEX, both, buf, sizeof(buf)), "stream error: 503");
	{
		static const char *const quiet[] = {
			"2>Reading additional input from stdin...",
			"{\"type\":\"thread.started\",\"thread_id\":\"t\"}", NULL};

		assert_string_equal(feed(DIALECT_CODEX, quiet, buf, sizeof(buf)), "");
	}
}

static void test_oneline(void **state)
{
	char buf[16], big[LASTERR_MAX + 1], in[1024];
	size_t i;

	(void)state;
	/* escapes, C1, newlines and runs of blanks: one space; ends trimmed */
	assert_string_equal(lasterr_oneline("\n a\x1b[31mb\r\n\tc\xc2\x9b"
					    "d ",
					    17, big, sizeof(big)),
			    "a [31mb c d");
	/* invalid UTF-8 is '?' */
	assert_string_equal(lasterr_oneline("a\xff\xc3z", 4, big, sizeof(big)), "a??z");
	/* cut with "..." inside the size, never inside a character */
	assert_string_equal(lasterr_oneline("abcdefghijklmnopqrstuvwxyz", 26, buf, sizeof(buf)),
			    "abcdefghijkl...");
	assert_string_equal(
		lasterr_oneline("abcdefghij\xc3\xa9\xc3\xa9\xc3\xa9", 16, buf, sizeof(buf)),
		"abcdefghij\xc3\xa9...");
	assert_string_equal(lasterr_oneline(NULL, 5, buf, sizeof(buf)), "");
	for (i = 0; i < sizeof(in); i++)
		in[i] = (char)('a' + i % 26);
	(void)lasterr_oneline(in, sizeof(in), big, sizeof(big));
	assert_int_equal(strlen(big), LASTERR_MAX);
	assert_string_equal(big + LASTERR_MAX - 3, "...");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claude_not_logged_in),
		cmocka_unit_test(test_http_status),
		cmocka_unit_test(test_stderr),
		cmocka_unit_test(test_oneline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
