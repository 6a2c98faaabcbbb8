/* The control channel (src/orch/control.h) without a run: who may ask (the
 * peer check against real processes: this test, a child of it, a stranger
 * uid, an invisible pid), and a listening socket driven with control_poll():
 * a request carried out and replied to, a malformed one refused with a
 * reply, a client's reply read by control_call(). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "orch/control.h"
#include "util/fsutil.h"
#include "util/xalloc.h"

static void test_peer_allowed(void **state)
{
	struct control_peer p = {.uid = geteuid(), .pid = getpid()};
	char why[256];
	pid_t child;

	(void)state;
	/* a process that is not below the run (a pid no process has): allowed */
	assert_true(control_peer_allowed(&p, geteuid(), 999999, why, sizeof(why)));
	assert_string_equal(why, "");
	/* a child of the run: refused */
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	p.pid = child;
	assert_false(control_peer_allowed(&p, geteuid(), getpid(), why, sizeof(why)));
	assert_non_null(strstr(why, "one of the run's own"));
	(void)kill(child, SIGKILL);
	(void)waitpid(child, NULL, 0);
	/* another uid (not root): refused */
	p.pid = getpid();
	p.uid = 4242;
	assert_false(control_peer_allowed(&p, 4343, 999999, why, sizeof(why)));
	assert_non_null(strstr(why, "uid 4242 is not the run's user"));
	/* root may ask anyone's run */
	p.uid = 0;
	assert_true(control_peer_allowed(&p, 4343, 999999, why, sizeof(why)));
	/* a pid not visible here */
	p.pid = 0;
	assert_false(control_peer_allowed(&p, 0, 999999, why, sizeof(why)));
}

static void handler(void *ctx, const struct control_request *req, const struct control_peer *who,
		    json_t *reply)
{
	int *calls = ctx;

	(*calls)++;
	assert_int_equal(req->op, CONTROL_CANCEL);
	assert_int_equal(who->uid, geteuid());
	json_object_set_new(reply, "seen", json_string(req->tasks[0]));
}

static void test_socket(void **state)
{
	char dir[] = "/tmp/test-control-XXXXXX";
	struct control_request req;
	struct control *c = NULL;
	struct diag d = {0};
	json_t *reply = NULL;
	char *path;
	int calls = 0, status;
	pid_t child;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(control_listen(dir, "RUN", NULL, &c, &d), 0);
	path = control_socket_path(dir, "RUN");
	/* the client is a child (not a descendant of the "run": this test
	 * process is, so the run's pid is given as another) -- here the check
	 * uses getpid(): the child would be refused, so ask from a grandchild
	 * whose parent exits, re-parented to init */
	control_request_init(&req);
	req.op = CONTROL_CANCEL;
	req.tasks = xcalloc(2, sizeof(char *));
	req.tasks[0] = xstrdup("spin");
	req.n_tasks = 1;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pid_t g = fork();

		if (g != 0)
			_exit(g > 0 ? 0 : 1);
		(void)usleep(100000); /* the parent is gone: re-parented */
		if (control_call(path, &req, 5000, &reply, NULL) < 0)
			_exit(2);
		_exit(json_is_true(json_object_get(reply, "ok")) &&
				      strcmp(json_string_value(json_object_get(reply, "seen")),
					     "spin") == 0
			      ? 0
			      : 3);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	/* serve until the grandchild's request came */
	{
		int i;

		for (i = 0; i < 200 && calls == 0; i++) {
			assert_int_equal(control_poll(c, handler, &calls, &d), 0);
			(void)usleep(10000);
		}
	}
	assert_int_equal(calls, 1);
	control_request_release(&req);
	c = control_close(c);
	assert_int_equal(access(path, F_OK), -1);
	free(path);
	(void)rmtree_beneath(dir);
}

/* approve and reject: what they carry, and what is refused. */
static void test_parse_review(void **state)
{
	struct control_request req;
	struct diag d = {0};
	char *big, *dump;
	size_t n;

	(void)state;
#define PARSE(s) control_request_parse((s), strlen(s), &req, &d)
	assert_int_equal(PARSE("{\"op\": \"approve\", \"tasks\": [\"a\", \"b\"]}"), 0);
	assert_int_equal(req.op, CONTROL_APPROVE);
	assert_int_equal(req.n_tasks, 2);
	assert_null(req.head);
	control_request_release(&req);
	assert_int_equal(
		PARSE("{\"op\": \"approve\", \"tasks\": [\"a\"], \"head\": \"8acb42837af5f826663a5e9924173ee6bb6b3eaa\"}"),
		0);
	assert_string_equal(req.head, "8acb42837af5f826663a5e9924173ee6bb6b3eaa");
	dump = control_request_dump(&req);
	assert_non_null(strstr(dump, "\"head\":\"8acb42837af5f826663a5e9924173ee6bb6b3eaa\""));
	free(dump);
	control_request_release(&req);
	/* a head for two tasks, or not a commit id */
	assert_int_equal(
		PARSE("{\"op\": \"approve\", \"tasks\": [\"a\", \"b\"], \"head\": \"8acb42837af5f826663a5e9924173ee6bb6b3eaa\"}"),
		-EBADMSG);
	assert_int_equal(PARSE("{\"op\": \"approve\", \"tasks\": [\"a\"], \"head\": \"HEAD~1\"}"),
			 -EBADMSG);
	assert_non_null(strstr(d.msg, "not a commit id"));
	/* reject: one task, feedback required, bounded, no NUL */
	assert_int_equal(
		PARSE("{\"op\": \"reject\", \"tasks\": [\"a\"], \"feedback\": \"--help\\nmore\"}"),
		0);
	assert_int_equal(req.op, CONTROL_REJECT);
	assert_string_equal(req.feedback, "--help\nmore");
	control_request_release(&req);
	assert_int_equal(PARSE("{\"op\": \"reject\", \"tasks\": [\"a\"]}"), -EBADMSG);
	assert_non_null(strstr(d.msg, "feedback: missing"));
	assert_int_equal(
		PARSE("{\"op\": \"reject\", \"tasks\": [\"a\", \"b\"], \"feedback\": \"x\"}"),
		-EBADMSG);
	assert_int_equal(
		PARSE("{\"op\": \"reject\", \"tasks\": [\"a\"], \"feedback\": \"a\\u0000b\"}"),
		-EBADMSG);
	assert_int_equal(PARSE("{\"op\": \"reject\", \"tasks\": [\"a\"], \"feedback\": \"\"}"),
			 -EBADMSG);
	n = CONTROL_FEEDBACK_MAX + 64;
	big = xmalloc(n + 128);
	(void)snprintf(big, n + 128,
		       "{\"op\": \"reject\", \"tasks\": [\"a\"], \"feedback\": \"%0*d\"}",
		       (int)CONTROL_FEEDBACK_MAX + 1, 0);
	assert_int_equal(PARSE(big), -EBADMSG);
	assert_non_null(strstr(d.msg, "too long"));
	free(big);
#undef PARSE
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peer_allowed),
		cmocka_unit_test(test_socket),
		cmocka_unit_test(test_parse_review),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
