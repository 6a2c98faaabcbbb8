/* The poll-pty screen driver (proc/ptydrive.h) without processes: bytes of
 * a scripted TUI in, report lines and keys out, at explicit times. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proc/ptydrive.h"
#include "util/sbuf.h"

static const struct ptydrive_conf base_conf = {
	.declared = true,
	.rows = 10,
	.cols = 40,
	.ready = "for shortcuts",
	.working = "esc to interrupt",
	.done = "Cooked for [0-9]+s",
	.ignore = {"^-+$"},
	.n_ignore = 1,
	.perms = {{.pattern = "Do you want", .allow = "1", .deny = "2"}},
	.n_perms = 1,
	.idle_done_ms = 1000,
	.paste = true,
	.exit_keys = "/exit",
	.exit_wait_ms = 500,
};

struct drv {
	struct ptydrive *d;
	struct sbuf lines, keys;
	uint64_t now;
};

static void drv_start(struct drv *t, const struct ptydrive_conf *c, bool allow)
{
	memset(t, 0, sizeof(*t));
	sbuf_init(&t->lines, SIZE_MAX);
	sbuf_init(&t->keys, SIZE_MAX);
	t->now = 1000;
	assert_int_equal(ptydrive_new(c, "write a.txt", allow, t->now, &t->d, NULL), 0);
}

static void drv_end(struct drv *t)
{
	t->d = ptydrive_free(t->d);
	sbuf_release(&t->lines);
	sbuf_release(&t->keys);
}

/* feed s, advance ms, step */
static enum ptydrive_action drv(struct drv *t, const char *s, uint64_t ms)
{
	if (s)
		ptydrive_feed(t->d, s, strlen(s));
	t->now += ms;
	return ptydrive_step(t->d, t->now, &t->lines, &t->keys);
}

#define CLEAR	     "\033[2J\033[H"
#define READY_SCREEN CLEAR "Fake 1.0\r\n\r\n----\r\n> \r\n----\r\n  ? for shortcuts"

static void test_turn(void **state)
{
	struct drv t;

	(void)state;
	drv_start(&t, &base_conf, true);
	/* nothing typed before the ready pattern shows */
	drv(&t, CLEAR "loading", 100);
	assert_int_equal(t.keys.len, 0);
	drv(&t, READY_SCREEN, 100);
	assert_string_equal(t.keys.buf, "\033[200~write a.txt\033[201~");
	assert_string_equal(t.lines.buf, "{\"pty\":\"status\",\"status\":\"ready\"}\n");
	sbuf_reset(&t.keys);
	sbuf_reset(&t.lines);
	/* the submit key after the delay */
	drv(&t, NULL, 100);
	assert_int_equal(t.keys.len, 0);
	drv(&t, NULL, PTYDRIVE_DEFAULT_SUBMIT_DELAY_MS);
	assert_string_equal(t.keys.buf, "\r");
	assert_string_equal(t.lines.buf, "{\"pty\":\"status\",\"status\":\"working\"}\n");
	sbuf_reset(&t.keys);
	sbuf_reset(&t.lines);
	/* working: not done even when still for long */
	drv(&t,
	    CLEAR
	    "Fake 1.0\r\n> write a.txt\r\n\r\n----\r\n> \r\n----\r\n  * Thinking (esc to interrupt)",
	    100);
	assert_int_equal(drv(&t, NULL, 5000), PTYDRIVE_NONE);
	assert_int_equal(t.lines.len, 0);
	/* the done line: the message, the result, done; the exit keys */
	drv(&t,
	    CLEAR
	    "Fake 1.0\r\n> write a.txt\r\n\033[1;32m* Done:\033[0m I wrote \xe4\xb8\xad.txt\r\n"
	    "* Cooked for 1s\r\n----\r\n> \r\n----\r\n  ? for shortcuts",
	    100);
	assert_string_equal(t.lines.buf,
			    "{\"pty\":\"text\",\"text\":\"* Done: I wrote \\u4E2D.txt\"}\n"
			    "{\"pty\":\"result\",\"ok\":true,\"by\":\"done\"}\n"
			    "{\"pty\":\"status\",\"status\":\"done\"}\n");
	assert_string_equal(t.keys.buf, "/exit");
	/* its submit key a while later, as for the prompt */
	sbuf_reset(&t.keys);
	drv(&t, NULL, PTYDRIVE_DEFAULT_SUBMIT_DELAY_MS);
	assert_string_equal(t.keys.buf, "\r");
	/* still there after exit_wait_ms: hang up */
	assert_int_equal(drv(&t, NULL, 100), PTYDRIVE_NONE);
	assert_int_equal(drv(&t, NULL, 400), PTYDRIVE_HANGUP);
	assert_int_equal(ptydrive_next_ms(t.d), 0);
	drv_end(&t);
}

static void test_permission_once_per_appearance(void **state)
{
	const char *dialog = CLEAR "Fake\r\n* Write(a.txt)\r\nDo you want to create a.txt? 1.Y 2.N";
	struct drv t;

	(void)state;
	drv_start(&t, &base_conf, false);
	drv(&t, READY_SCREEN, 100);
	drv(&t, NULL, PTYDRIVE_DEFAULT_SUBMIT_DELAY_MS);
	sbuf_reset(&t.keys);
	sbuf_reset(&t.lines);
	drv(&t, dialog, 100);
	assert_string_equal(t.keys.buf, "2");
	assert_string_equal(
		t.lines.buf,
		"{\"pty\":\"status\",\"status\":\"permission\"}\n"
		"{\"pty\":\"permission\",\"prompt\":\"Do you want to create a.txt? 1.Y 2.N"
		"\",\"answer\":\"deny\"}\n");
	/* the same dialog still up: not answered twice; never idle-done */
	sbuf_reset(&t.keys);
	sbuf_reset(&t.lines);
	drv(&t, NULL, 100);
	drv(&t, NULL, 5000);
	assert_int_equal(t.keys.len, 0);
	assert_int_equal(t.lines.len, 0);
	/* gone, then back: answered again */
	drv(&t, CLEAR "Fake\r\n* thinking (esc to interrupt)", 100);
	drv(&t, dialog, 100);
	assert_string_equal(t.keys.buf, "2");
	drv_end(&t);
}

static void test_idle_done_and_eof(void **state)
{
	struct ptydrive_conf c = base_conf;
	struct drv t;

	(void)state;
	c.done = NULL;
	c.exit_keys = NULL;
	drv_start(&t, &c, true);
	drv(&t, READY_SCREEN, 100);
	drv(&t, NULL, PTYDRIVE_DEFAULT_SUBMIT_DELAY_MS);
	sbuf_reset(&t.lines);
	/* changed since the submit, then still for idle_done_ms: done */
	drv(&t, CLEAR "Fake 1.0\r\nAnswer: 42\r\n----\r\n> \r\n----\r\n  ? for shortcuts", 100);
	assert_int_equal(drv(&t, NULL, 500), PTYDRIVE_NONE);
	assert_int_equal(t.lines.len, 0);
	/* no exit keys: hang up at once */
	assert_int_equal(drv(&t, NULL, 600), PTYDRIVE_NONE);
	assert_non_null(strstr(t.lines.buf, "\"by\":\"idle\""));
	assert_non_null(strstr(t.lines.buf, "{\"pty\":\"text\",\"text\":\"Answer: 42\"}"));
	assert_int_equal(drv(&t, NULL, 1), PTYDRIVE_HANGUP);
	sbuf_reset(&t.lines);
	ptydrive_eof(t.d, t.now, &t.lines);
	assert_string_equal(t.lines.buf, "{\"pty\":\"status\",\"status\":\"exited\"}\n");
	drv_end(&t);
}

static void test_eof_mid_turn_reports_what_was_said(void **state)
{
	struct drv t;

	(void)state;
	drv_start(&t, &base_conf, true);
	drv(&t, READY_SCREEN, 100);
	drv(&t, NULL, PTYDRIVE_DEFAULT_SUBMIT_DELAY_MS);
	drv(&t, CLEAR "Fake 1.0\r\n\033]0;title\007Traceback: boom\033[K\r\n", 100);
	sbuf_reset(&t.lines);
	ptydrive_eof(t.d, t.now, &t.lines);
	assert_string_equal(t.lines.buf, "{\"pty\":\"text\",\"text\":\"Traceback: boom\"}\n"
					 "{\"pty\":\"status\",\"status\":\"exited\"}\n");
	drv_end(&t);
}

static void test_terminal_queries_answered(void **state)
{
	struct drv t;

	(void)state;
	drv_start(&t, &base_conf, true);
	drv(&t, CLEAR "\033[3;5H\033[6n", 10);
	assert_string_equal(t.keys.buf, "\033[3;5R");
	drv_end(&t);
}

static void test_bad_pattern(void **state)
{
	struct ptydrive_conf c = base_conf;
	struct ptydrive *d = NULL;
	struct diag diag = {0};

	(void)state;
	c.perms[0].pattern = "Do (you";
	assert_int_equal(ptydrive_conf_check(&c, &diag), -EINVAL);
	assert_non_null(strstr(diag.msg, "permission[0].pattern: invalid pattern"));
	assert_int_equal(ptydrive_new(&c, "x", true, 0, &d, NULL), -EINVAL);
	assert_null(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turn),
		cmocka_unit_test(test_permission_once_per_appearance),
		cmocka_unit_test(test_idle_done_and_eof),
		cmocka_unit_test(test_eof_mid_turn_reports_what_was_said),
		cmocka_unit_test(test_terminal_queries_answered),
		cmocka_unit_test(test_bad_pattern),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
