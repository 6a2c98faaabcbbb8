/* The supervisor's hooks channel (proc/supervise.h, spec.listen_fd;
 * proc/usock.h) with real processes: the fake agent posting lines to the
 * socket (several connections, a line split over writes, an unfinished last
 * line, an oversized line, posts just before the agent exits), `bernstein
 * hook-post` run by an agent's shell, a socket path longer than sun_path,
 * the listening fd never reaching the agent, the socket lines kept out of the
 * log; and the liveness the supervisor records for a timeout. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/supervise.h"
#include "proc/usock.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

static const char *fake_agent;
static const char *bernstein;
static char tmpdir[256];

struct task {
	struct strvec argv; /* the whole argv (argv[0] absolute) */
	struct strvec env;
	const char *sock_path; /* listen here; NULL = no hooks channel */
	const char *log_path;
	size_t max_line;
	uint64_t timeout_ms;
	int listen_fd; /* the fd number handed over, for the leak check */
	bool started;
	/* results */
	struct sbuf out, hooks; /* lines, each + "\n" */
	unsigned oversized_hooks;
	uint64_t oversized_total;
	struct proc result;
	bool exited;
};

static void task_init(struct task *t)
{
	memset(t, 0, sizeof(*t));
	strvec_init(&t->argv);
	strvec_init(&t->env);
	strvec_push(&t->env, "PATH=/usr/bin:/bin");
	strvec_push(&t->env, "LC_ALL=C");
	/* a sanitized bernstein hook-post needs its options (the env is built
	 * from scratch) */
	if (getenv("ASAN_OPTIONS"))
		strvec_pushf(&t->env, "ASAN_OPTIONS=%s", getenv("ASAN_OPTIONS"));
	if (getenv("UBSAN_OPTIONS"))
		strvec_pushf(&t->env, "UBSAN_OPTIONS=%s", getenv("UBSAN_OPTIONS"));
	sbuf_init(&t->out, SIZE_MAX);
	sbuf_init(&t->hooks, SIZE_MAX);
	t->listen_fd = -1;
}

static void task_release(struct task *t)
{
	strvec_clear(&t->argv);
	strvec_clear(&t->env);
	sbuf_release(&t->out);
	sbuf_release(&t->hooks);
	free(t->result.path);
	free(t->result.start_error);
}

static void fake(struct task *t, ...)
{
	const char *a;
	va_list ap;

	strvec_push(&t->argv, fake_agent);
	va_start(ap, t);
	while ((a = va_arg(ap, const char *)))
		strvec_push(&t->argv, a);
	va_end(ap);
}

static int next_task(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct task *t = ctx;
	struct diag d;

	if (t->started)
		return 0;
	t->started = true;
	strvec_pushv(&spec->argv, t->argv.v);
	strvec_pushv(&spec->env, t->env.v);
	spec->timeout_ms = t->timeout_ms;
	spec->kill_grace_ms = 500;
	spec->max_line = t->max_line;
	spec->log_path = t->log_path;
	if (t->sock_path) {
		if (usock_listen(t->sock_path, &spec->listen_fd, &d) < 0)
			fail_msg("usock_listen: %s", d.msg);
		t->listen_fd = spec->listen_fd;
	}
	*ret_task = t;
	return 1;
}

static void on_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	struct task *t = task;

	(void)ctx;
	assert_int_equal(line[len], '\0');
	if (stream == PROC_STREAM_SOCKET) {
		(void)sbuf_add(&t->hooks, line, len);
		(void)sbuf_addc(&t->hooks, '\n');
	} else if (stream == 1) {
		(void)sbuf_add(&t->out, line, len);
		(void)sbuf_addc(&t->out, '\n');
	}
}

static void on_oversized(void *ctx, void *task, int stream, const char *head, size_t head_len,
			 uint64_t total)
{
	struct task *t = task;

	(void)ctx;
	(void)head;
	assert_int_equal(stream, PROC_STREAM_SOCKET);
	assert_int_equal(head_len, t->max_line);
	t->oversized_hooks++;
	t->oversized_total = total;
	(void)sbuf_addf(&t->hooks, "<oversized %llu>\n", (unsigned long long)total);
}

static void on_exit_cb(void *ctx, void *task, const struct proc *p)
{
	struct task *t = task;

	(void)ctx;
	t->exited = true;
	t->result = *p;
	t->result.path = p->path ? xstrdup(p->path) : NULL;
	t->result.start_error = p->start_error ? xstrdup(p->start_error) : NULL;
}

static const struct supervisor_ops ops = {
	.next_task = next_task,
	.on_line = on_line,
	.on_oversized = on_oversized,
	.on_exit = on_exit_cb,
};

static void run(struct task *t)
{
	struct supervisor_opts o = {.max_parallel = 1};
	struct diag d;

	diag_clear(&d);
	assert_int_equal(supervise_run(&ops, t, &o, &d), 0);
	assert_true(t->exited);
	/* the supervisor took the listening fd and closed it */
	if (t->listen_fd >= 0)
		assert_true(fcntl(t->listen_fd, F_GETFD) < 0 && errno == EBADF);
}

static char *path_in_tmp(const char *name)
{
	char *p = NULL;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s", tmpdir, name);
	p = sbuf_detach(&sb, NULL);
	return p;
}

/* ---- tests ---- */

static void test_fake_agent_posts(void **state)
{
	char *sock = path_in_tmp("h1.sock"), *log = path_in_tmp("h1.log");
	char *logged = NULL;
	size_t n;
	struct task t;

	(void)state;
	task_init(&t);
	t.sock_path = sock;
	t.log_path = log;
	/* two lines on one connection, a line in two writes, an unfinished last
	 * line, stdout in between, and the agent exits right after its last post */
	fake(&t, "emit", "{\"type\":\"a\"}", "hook-post", sock, "{\"n\":1}\\n{\"n\":2}\\n",
	     "hook-post", sock, "{\"n\":3}", "emit", "{\"type\":\"b\"}", "hook-post", sock,
	     "{\"n\":4}\\n", NULL);
	run(&t);
	assert_int_equal(t.result.exit_code, 0);
	assert_string_equal(t.out.buf, "{\"type\":\"a\"}\n{\"type\":\"b\"}\n");
	assert_string_equal(t.hooks.buf, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n");
	/* the log has the agent's output only */
	assert_int_equal(read_file_capped(log, 1 << 20, &logged, &n), 0);
	assert_string_equal(logged, "{\"type\":\"a\"}\n{\"type\":\"b\"}\n");
	free(logged);
	/* the agent's fds: 0 1 2 only (the listening socket stayed with us) */
	(void)unlink(sock);
	task_release(&t);
	free(sock);
	free(log);
}

static void test_listen_fd_not_inherited(void **state)
{
	char *sock = path_in_tmp("h2.sock");
	struct task t;

	(void)state;
	task_init(&t);
	t.sock_path = sock;
	fake(&t, "dump-fds", NULL);
	run(&t);
	assert_string_equal(t.out.buf, "fds 0 1 2\n");
	(void)unlink(sock);
	task_release(&t);
	free(sock);
}

static void test_oversized_and_many(void **state)
{
	char *sock = path_in_tmp("h3.sock"), big[200];
	struct task t;
	unsigned i;

	(void)state;
	task_init(&t);
	t.sock_path = sock;
	t.max_line = 64;
	memset(big, 'x', 150);
	memcpy(big + 150, "\\nsmall\\n", 10);
	strvec_push(&t.argv, fake_agent);
	strvec_push(&t.argv, "hook-post");
	strvec_push(&t.argv, sock);
	strvec_push(&t.argv, big);
	/* more connections, one after the other, than may be open at once */
	for (i = 0; i < PROC_MAX_SOCKET_CONNS + 8; i++) {
		strvec_push(&t.argv, "hook-post");
		strvec_push(&t.argv, sock);
		strvec_pushf(&t.argv, "{\"i\":%u}\\n", i);
	}
	run(&t);
	assert_int_equal(t.oversized_hooks, 1);
	assert_int_equal(t.oversized_total, 150);
	/* in the order they were posted */
	{
		struct sbuf want = SBUF_INIT(SIZE_MAX);

		(void)sbuf_adds(&want, "<oversized 150>\nsmall\n");
		for (i = 0; i < PROC_MAX_SOCKET_CONNS + 8; i++)
			(void)sbuf_addf(&want, "{\"i\":%u}\n", i);
		assert_string_equal(t.hooks.buf, want.buf);
		sbuf_release(&want);
	}
	(void)unlink(sock);
	task_release(&t);
	free(sock);
}

/* An agent's hook command: `bernstein hook-post` from a shell. */
static void test_hook_post_command(void **state)
{
	char *sock = path_in_tmp("h4.sock");
	struct task t;

	(void)state;
	task_init(&t);
	t.sock_path = sock;
	strvec_pushf(&t.env, "BERNSTEIN_HOOK_SOCKET=%s", sock);
	strvec_push(&t.argv, "/bin/sh");
	strvec_push(&t.argv, "-c");
	strvec_pushf(
		&t.argv,
		"printf '{\\n  \"session_id\": \"s-1\", \"tool_name\": \"Write\"\\n}\\n' | '%s' hook-post --event PreToolUse --socket '%s' && printf 'not json' | '%s' hook-post --event Stop && echo posted",
		bernstein, sock, bernstein);
	run(&t);
	assert_int_equal(t.result.exit_code, 0);
	assert_string_equal(t.out.buf, "posted\n"); /* hook-post printed nothing */
	assert_string_equal(
		t.hooks.buf,
		"{\"session_id\":\"s-1\",\"tool_name\":\"Write\",\"hook_event_name\":\"PreToolUse\"}\n{\"raw\":\"not json\",\"hook_event_name\":\"Stop\"}\n");
	(void)unlink(sock);
	task_release(&t);
	free(sock);
}

/* A socket path longer than sun_path (107 bytes) works both ways. */
static void test_long_socket_path(void **state)
{
	struct sbuf dir = SBUF_INIT(SIZE_MAX);
	char *sock;
	struct task t;

	(void)state;
	(void)sbuf_addf(&dir, "%s/", tmpdir);
	while (dir.len < 150)
		(void)sbuf_adds(&dir, "deep-directory-name/");
	assert_int_equal(mkdir_p(dir.buf, 0700), 0);
	(void)sbuf_adds(&dir, "hooks.sock");
	sock = sbuf_detach(&dir, NULL);
	assert_true(strlen(sock) > 108);

	task_init(&t);
	t.sock_path = sock;
	strvec_push(&t.argv, "/bin/sh");
	strvec_push(&t.argv, "-c");
	strvec_pushf(&t.argv, "echo '{\"a\":1}' | '%s' hook-post --socket '%s'", bernstein, sock);
	run(&t);
	assert_int_equal(t.result.exit_code, 0);
	assert_string_equal(t.hooks.buf, "{\"a\":1}\n");
	assert_int_equal(unlink(sock), 0);
	task_release(&t);
	free(sock);
}

/* hook-post fails with 1, never 2, and says why on stderr. */
static void test_hook_post_failures(void **state)
{
	char *missing = path_in_tmp("nobody-listens.sock");
	struct task t;

	(void)state;
	task_init(&t);
	strvec_push(&t.argv, "/bin/sh");
	strvec_push(&t.argv, "-c");
	strvec_pushf(
		&t.argv,
		"for a in \"--socket %s\" \"--bogus\" \"--event bad/name --socket x\" \"\" \"--socket x extra\"; do echo '{}' | '%s' hook-post $a 2>/dev/null; echo \"rc=$?\"; done",
		missing, bernstein);
	run(&t);
	assert_string_equal(t.out.buf, "rc=1\nrc=1\nrc=1\nrc=1\nrc=1\n");
	task_release(&t);
	free(missing);
}

/* The deadline records how long the output had been still: the deadline
 * fired at last_output_ms + timeout_idle_ms, which is at least start +
 * timeout (no bound above: a loaded machine wakes late). */
static void test_timeout_liveness(void **state)
{
	struct task t;

	(void)state;
	task_init(&t);
	t.timeout_ms = 3000; /* room for a slow (sanitized) start before "x" */
	fake(&t, "emit", "x", "sleep", "20000", NULL);
	run(&t);
	assert_true(t.result.timed_out);
	assert_int_equal(t.result.output_bytes, 2);
	assert_true(t.result.last_output_ms >= t.result.start_ms);
	assert_true(t.result.timeout_idle_ms > 0);
	assert_true(t.result.last_output_ms + t.result.timeout_idle_ms >=
		    t.result.start_ms + t.timeout_ms);
	task_release(&t);

	/* nothing at all: idle since the start */
	task_init(&t);
	t.timeout_ms = 300;
	fake(&t, "sleep", "20000", NULL);
	run(&t);
	assert_true(t.result.timed_out);
	assert_int_equal(t.result.output_bytes, 0);
	assert_int_equal(t.result.last_output_ms, 0);
	assert_true(t.result.timeout_idle_ms >= 300);
	task_release(&t);
}

static void test_usock_listen_refuses_a_file(void **state)
{
	char *path = path_in_tmp("not-a-socket");
	struct diag d;
	int fd = -1;

	(void)state;
	assert_int_equal(atomic_write_file(path, "x", 1, 0600), 0);
	assert_int_equal(usock_listen(path, &fd, &d), -EEXIST);
	assert_non_null(strstr(d.msg, "not a socket"));
	assert_int_equal(fd, -1);
	(void)unlink(path);
	free(path);
}

static int setup(void **state)
{
	(void)state;
	fake_agent = getenv("FAKE_AGENT");
	bernstein = getenv("BERNSTEIN");
	if (!fake_agent || !bernstein) {
		fprintf(stderr, "FAKE_AGENT and BERNSTEIN must be set\n");
		return -1;
	}
	(void)snprintf(tmpdir, sizeof(tmpdir), "%s/bernstein-hooks-XXXXXX",
		       getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fake_agent_posts),
		cmocka_unit_test(test_listen_fd_not_inherited),
		cmocka_unit_test(test_oversized_and_many),
		cmocka_unit_test(test_hook_post_command),
		cmocka_unit_test(test_long_socket_path),
		cmocka_unit_test(test_hook_post_failures),
		cmocka_unit_test(test_timeout_liveness),
		cmocka_unit_test(test_usock_listen_refuses_a_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
