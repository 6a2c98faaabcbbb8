/* The mock agent (src/orch/mock.c): the instruction parser (every
 * instruction, bad arguments, lexical confinement, line/column of errors)
 * and the runner in a scratch directory (files, events, confinement by the
 * kernel, once-markers, sessions and resume, git commits, exit statuses).
 * Events are read back from a memfd and checked as JSON. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter/session.h"
#include "orch/mock.h"
#include "util/fsutil.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

static char root[PATH_MAX], work[PATH_MAX], home[PATH_MAX], outside[PATH_MAX];

/* ---- parsing ----------------------------------------------------------------- */

static int parse(const char *prompt, struct mock_script *s, struct diag *d)
{
	memset(d, 0, sizeof(*d));
	return mock_parse(prompt, strlen(prompt), "/home/agent", s, d);
}

/* The prompt must be refused with err at line:col, the message holding what. */
static void refused(const char *prompt, int err, unsigned line, unsigned col, const char *what)
{
	struct mock_script s;
	struct diag d;
	int r = parse(prompt, &s, &d);

	if (r != err)
		fail_msg("'%s': %d, expected %d (%s)", prompt, r, err, d.msg);
	assert_string_equal(d.file, "prompt");
	if (line && d.line != line)
		fail_msg("'%s': line %u, expected %u", prompt, d.line, line);
	if (col && d.col != col)
		fail_msg("'%s': column %u, expected %u (%s)", prompt, d.col, col, d.msg);
	if (!strstr(d.msg, what))
		fail_msg("'%s': '%s' does not say '%s'", prompt, d.msg, what);
	mock_script_release(&s);
}

static void test_parse_every_instruction(void **state)
{
	static const char prompt[] = "Please do the following.\n"
				     "write a.txt hello  world\n"
				     "  append dir/b.txt more text\n"
				     "\tdelete old.txt\n"
				     "commit add the files\n"
				     "say all done\n"
				     "sleep 0.25\n"
				     "hang\n"
				     "fail\n"
				     "fail it broke\n"
				     "exit 7\n"
				     "rate-limit\n"
				     "rate-limit 2.5\n"
				     "once .marker rate-limit 0\n"
				     "once ~/m/x say once only\n"
				     "once /home/agent/y exit 0\n"
				     "usage 120 45\n"
				     "session sess-1\n"
				     "session sess-2\n"
				     "write empty.txt\n";
	struct mock_script s;
	struct diag d;
	const struct mock_instr *v;

	(void)state;
	assert_int_equal(parse(prompt, &s, &d), 0);
	assert_int_equal(s.n, 19);
	v = s.v;
	assert_int_equal(v[0].op, MOCK_WRITE);
	assert_int_equal(v[0].line, 2);
	assert_string_equal(v[0].path, "a.txt");
	assert_string_equal(v[0].text, "hello  world"); /* inner blanks kept */
	assert_int_equal(v[0].text_len, 12);
	assert_null(v[0].marker);
	assert_int_equal(v[1].op, MOCK_APPEND);
	assert_string_equal(v[1].path, "dir/b.txt");
	assert_string_equal(v[1].text, "more text");
	assert_int_equal(v[2].op, MOCK_DELETE);
	assert_string_equal(v[2].path, "old.txt");
	assert_int_equal(v[3].op, MOCK_COMMIT);
	assert_string_equal(v[3].text, "add the files");
	assert_int_equal(v[4].op, MOCK_SAY);
	assert_string_equal(v[4].text, "all done");
	assert_int_equal(v[5].op, MOCK_SLEEP);
	assert_true(v[5].seconds == 0.25);
	assert_int_equal(v[6].op, MOCK_HANG);
	assert_int_equal(v[7].op, MOCK_FAIL);
	assert_null(v[7].text);
	assert_int_equal(v[8].op, MOCK_FAIL);
	assert_string_equal(v[8].text, "it broke");
	assert_int_equal(v[9].op, MOCK_EXIT);
	assert_int_equal(v[9].a, 7);
	assert_int_equal(v[10].op, MOCK_RATE_LIMIT);
	assert_true(v[10].seconds == MOCK_RATE_LIMIT_DEF);
	assert_true(v[11].seconds == 2.5);
	assert_int_equal(v[12].op, MOCK_RATE_LIMIT);
	assert_string_equal(v[12].marker, ".marker");
	assert_int_equal(v[12].marker_base, MOCK_BASE_WORKDIR);
	assert_true(v[12].seconds == 0);
	assert_int_equal(v[13].op, MOCK_SAY);
	assert_string_equal(v[13].marker, "m/x");
	assert_int_equal(v[13].marker_base, MOCK_BASE_HOME);
	assert_string_equal(v[13].text, "once only");
	assert_int_equal(v[14].op, MOCK_EXIT);
	assert_string_equal(v[14].marker, "y");
	assert_int_equal(v[14].marker_base, MOCK_BASE_HOME);
	assert_int_equal(v[15].op, MOCK_USAGE);
	assert_int_equal(v[15].a, 120);
	assert_int_equal(v[15].b, 45);
	assert_int_equal(v[16].op, MOCK_SESSION);
	assert_string_equal(v[16].text, "sess-1");
	assert_string_equal(s.session_id, "sess-1"); /* the first one counts */
	assert_int_equal(v[18].op, MOCK_WRITE);
	assert_string_equal(v[18].text, "");
	assert_int_equal(v[18].text_len, 0);
	mock_script_release(&s);
	mock_script_release(&s); /* released twice: harmless */
}

static void test_parse_prose(void **state)
{
	/* prose, capitalised keywords, keyword prefixes, CRLF and trailing
	 * blanks; a NUL byte on a prose line is fine */
	static const char prompt[] = "Write a.txt is not an instruction\r\n"
				     "writer a.txt neither\n"
				     "- write b.txt nor this\n"
				     "   \n"
				     "\n"
				     "say crlf line \t\r\n"
				     "sayhello\n"
				     "prose with a \0 byte\n"
				     "hang";
	struct mock_script s;
	struct diag d = {0};

	(void)state;
	assert_int_equal(mock_parse(prompt, sizeof(prompt) - 1, NULL, &s, &d), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.v[0].op, MOCK_SAY);
	assert_int_equal(s.v[0].line, 6);
	assert_string_equal(s.v[0].text, "crlf line");
	assert_int_equal(s.v[1].op, MOCK_HANG);
	assert_int_equal(s.v[1].line, 9);
	assert_null(s.session_id);
	mock_script_release(&s);

	/* a recovered-context prefix (orch/run.c's fallback resume) */
	assert_int_equal(
		parse("## Resume context\n"
		      "A previous attempt at this task (attempt 1, adapter mock) ended early (timed_out). Continue from where it stopped.\n"
		      "- prior_adapter_session_id: s-1\n"
		      "- files changed so far: a.txt\n"
		      "- final message: write a.txt done\n"
		      "### Last events\n"
		      "- tool_call: write_file\n"
		      "- error: fail now\n"
		      "\n"
		      "## Task\n"
		      "write b.txt ok\n",
		      &s, &d),
		0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0].path, "b.txt");
	assert_int_equal(s.v[0].line, 11);
	mock_script_release(&s);

	assert_int_equal(parse("", &s, &d), 0);
	assert_int_equal(s.n, 0);
	mock_script_release(&s);
	assert_int_equal(mock_parse(NULL, 0, NULL, &s, &d), 0);
	assert_int_equal(s.n, 0);
	mock_script_release(&s);
}

static void test_parse_bad_args(void **state)
{
	(void)state;
	refused("write", -EINVAL, 1, 6, "write: missing PATH");
	refused("ok\n  append", -EINVAL, 2, 9, "append: missing PATH");
	refused("delete", -EINVAL, 1, 7, "delete: missing PATH");
	refused("delete a b", -EINVAL, 1, 10, "unexpected argument 'b'");
	refused("commit", -EINVAL, 1, 7, "commit: missing MESSAGE");
	refused("commit   ", -EINVAL, 1, 7, "commit: missing MESSAGE");
	refused("sleep", -EINVAL, 1, 6, "sleep: missing SECONDS");
	refused("sleep abc", -EINVAL, 1, 7, "not a number of seconds");
	refused("sleep -1", -EINVAL, 1, 7, "not a number of seconds");
	refused("sleep 1e3", -EINVAL, 1, 7, "not a number of seconds");
	refused("sleep 1.2.3", -EINVAL, 1, 7, "not a number of seconds");
	refused("sleep .", -EINVAL, 1, 7, "not a number of seconds");
	refused("sleep inf", -EINVAL, 1, 7, "not a number of seconds");
	refused("sleep 86401", -EINVAL, 1, 7, "not a number of seconds");
	refused("sleep 1 2", -EINVAL, 1, 9, "unexpected argument '2'");
	refused("hang now", -EINVAL, 1, 6, "hang: unexpected argument 'now'");
	refused("exit", -EINVAL, 1, 5, "exit: missing N");
	refused("exit 256", -EINVAL, 1, 6, "not an exit status");
	refused("exit -1", -EINVAL, 1, 6, "not an exit status");
	refused("exit x", -EINVAL, 1, 6, "not an exit status");
	refused("exit 99999999999999999999", -EINVAL, 1, 6, "not an exit status");
	refused("exit 1 2", -EINVAL, 1, 8, "unexpected argument");
	refused("rate-limit soon", -EINVAL, 1, 12, "rate-limit: 'soon'");
	refused("rate-limit 1 2", -EINVAL, 1, 14, "unexpected argument");
	refused("usage", -EINVAL, 1, 6, "missing IN and OUT");
	refused("usage 1", -EINVAL, 1, 8, "missing OUT");
	refused("usage a 1", -EINVAL, 1, 7, "'a' is not a token count");
	refused("usage 1 -2", -EINVAL, 1, 9, "'-2' is not a token count");
	refused("usage 1 2 3", -EINVAL, 1, 11, "unexpected argument");
	refused("session", -EINVAL, 1, 8, "session: missing ID");
	refused("session a/b", -EINVAL, 1, 9, "holds a '/'");
	refused("session ..", -EINVAL, 1, 9, "'..'");
	refused("session -x", -EINVAL, 1, 9, "starts with '-'");
	refused("session a b", -EINVAL, 1, 11, "unexpected argument");
	refused("once", -EINVAL, 1, 5, "once: missing MARKER");
	refused("once m", -EINVAL, 1, 7, "missing the instruction");
	refused("once m dance", -EINVAL, 1, 8, "'dance' is not an instruction");
	refused("once m once n say x", -EINVAL, 1, 8, "'once' is not an instruction");
	refused("once m exit 300", -EINVAL, 1, 13, "not an exit status");
}

/* mock_parse on a buffer with NULs (refused() takes C strings) */
static void test_parse_nul(void **state)
{
	static const char p1[] = "write a\0b x";
	static const char p2[] = "once m\0 say x";
	struct mock_script s;
	struct diag d = {0};

	(void)state;
	assert_int_equal(mock_parse(p1, sizeof(p1) - 1, NULL, &s, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "NUL byte"));
	assert_int_equal(d.col, 8);
	mock_script_release(&s);
	assert_int_equal(mock_parse(p2, sizeof(p2) - 1, NULL, &s, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "NUL byte"));
	mock_script_release(&s);
}

static void test_parse_confinement(void **state)
{
	(void)state;
	refused("write /etc/passwd x", -EPERM, 1, 7, "absolute paths are not allowed");
	refused("append ../x y", -EPERM, 1, 8, "escapes the run workdir");
	refused("delete a/../../x", -EPERM, 1, 8, "escapes the run workdir");
	refused("write ./.. x", -EPERM, 1, 7, "escapes the run workdir");
	refused("say ok\nwrite sub/../.. x", -EPERM, 2, 7, "escapes");
	refused("once ../m say x", -EPERM, 1, 6, "escapes the run workdir");
	refused("once /etc/m say x", -EPERM, 1, 6, "outside the workdir and outside HOME");
	refused("once /home/agentX/m say x", -EPERM, 1, 6, "outside HOME");
	refused("once /home/agent say x", -EPERM, 1, 6, "outside HOME");
	refused("once ~/../m say x", -EPERM, 1, 6, "escapes");
	refused("once ~/ say x", -EINVAL, 1, 6, "empty path");
	refused("once m write /x y", -EPERM, 1, 14, "absolute paths");

	/* an absolute marker without a HOME is refused */
	{
		struct mock_script s;
		struct diag d = {0};

		assert_int_equal(mock_parse("once /home/agent/m hang", 23, NULL, &s, &d), -EPERM);
		mock_script_release(&s);
		/* a trailing slash on HOME does not matter */
		assert_int_equal(mock_parse("once /h/m hang", 14, "/h/", &s, &d), 0);
		assert_string_equal(s.v[0].marker, "m");
		mock_script_release(&s);
		/* HOME "/" cannot hold markers */
		assert_int_equal(mock_parse("once /m hang", 12, "/", &s, &d), -EPERM);
		mock_script_release(&s);
	}
	/* legitimate paths */
	{
		struct mock_script s;
		struct diag d;

		assert_int_equal(
			parse("write a/./b/../c.txt x\ndelete ./x\nonce a/../m hang", &s, &d), 0);
		assert_int_equal(s.n, 3);
		mock_script_release(&s);
	}
}

static void test_parse_cap(void **state)
{
	struct mock_script s;
	struct diag d = {0};
	size_t n = MOCK_MAX_INSTRUCTIONS + 1, i;
	char *p = malloc(n * 5 + 1);

	(void)state;
	assert_non_null(p);
	for (i = 0; i < n; i++)
		memcpy(p + i * 5, "hang\n", 5);
	assert_int_equal(mock_parse(p, n * 5, NULL, &s, &d), -E2BIG);
	assert_int_equal(d.line, MOCK_MAX_INSTRUCTIONS + 1);
	mock_script_release(&s);
	assert_int_equal(mock_parse(p, (n - 1) * 5, NULL, &s, &d), 0);
	assert_int_equal(s.n, MOCK_MAX_INSTRUCTIONS);
	mock_script_release(&s);
	free(p);
}

static void test_names_and_ids(void **state)
{
	char a[SESSION_UUID_LEN + 1], b[SESSION_UUID_LEN + 1], c[SESSION_UUID_LEN + 1];
	struct diag d;
	int i;

	(void)state;
	for (i = 0; i < _MOCK_OP_MAX; i++) {
		const char *name = mock_op_to_string((enum mock_op)i);

		assert_non_null(name);
		assert_int_equal(mock_op_from_string(name, strlen(name)), i);
	}
	assert_null(mock_op_to_string(_MOCK_OP_MAX));
	assert_null(mock_op_to_string(_MOCK_OP_INVALID));
	assert_int_equal(mock_op_from_string("once", 4), _MOCK_OP_INVALID);
	assert_int_equal(mock_op_from_string("writ", 4), _MOCK_OP_INVALID);

	assert_int_equal(mock_session_id_check("abc-1.2_3", &d), 0);
	assert_int_equal(mock_session_id_check("819ea001-cdcb-46b3-8cd8-3ed48e47f3a7", &d), 0);
	assert_int_equal(mock_session_id_check("", &d), -EINVAL);
	assert_int_equal(mock_session_id_check("a b", &d), -EINVAL);
	assert_int_equal(mock_session_id_check("a/b", &d), -EINVAL);
	assert_int_equal(mock_session_id_check(".", &d), -EINVAL);
	assert_int_equal(mock_session_id_check("..", &d), -EINVAL);
	{
		char long_id[MOCK_SESSION_ID_MAX + 2];

		memset(long_id, 'x', sizeof(long_id) - 1);
		long_id[sizeof(long_id) - 1] = '\0';
		assert_int_equal(mock_session_id_check(long_id, &d), -EINVAL);
		long_id[MOCK_SESSION_ID_MAX] = '\0';
		assert_int_equal(mock_session_id_check(long_id, &d), 0);
	}

	/* the default session id: a UUID, a function of the prompt bytes */
	mock_session_default("write a.txt hi", 14, a);
	mock_session_default("write a.txt hi", 14, b);
	mock_session_default("write a.txt ho", 14, c);
	assert_true(session_id_is_uuid(a));
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	mock_session_default("", 0, b);
	assert_true(session_id_is_uuid(b));
	mock_session_default("x\0y", 3, c);
	mock_session_default("x\0z", 3, b);
	assert_string_not_equal(b, c); /* bytes after a NUL count */
}

/* ---- running ----------------------------------------------------------------- */

static void rm_rf(const char *path)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", path, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

static int run_git(const char *dir, const char *a1, const char *a2, const char *a3, const char *a4)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			(void)dup2(fd, 1);
			(void)dup2(fd, 2);
		}
		execlp("git", "git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", a1, a2,
		       a3, a4, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int setup(void **state)
{
	(void)state;
	(void)snprintf(root, sizeof(root), "/tmp/bernstein-mock-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	(void)snprintf(work, sizeof(work), "%s/work", root);
	(void)snprintf(home, sizeof(home), "%s/home", root);
	(void)snprintf(outside, sizeof(outside), "%s/outside", root);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rm_rf(root);
	return 0;
}

/* A fresh work, home and outside directory for each test. */
static int fresh(void **state)
{
	(void)state;
	rm_rf(work);
	rm_rf(home);
	rm_rf(outside);
	if (mkdir(work, 0755) < 0 || mkdir(home, 0700) < 0 || mkdir(outside, 0755) < 0)
		return -1;
	return 0;
}

struct events {
	json_t *v[64];
	size_t n;
};

static void events_release(struct events *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		json_decref(e->v[i]);
	e->n = 0;
}

struct runopts {
	const char *resume, *session;
	bool no_home;
};

/* Parse and run prompt in work; returns the exit status and the events. */
static int run_full(const char *prompt, const struct runopts *ro, struct events *ev)
{
	struct mock_script s;
	struct mock_opts o = {0};
	struct diag d = {0};
	char def[SESSION_UUID_LEN + 1];
	char *out = NULL, *line, *save = NULL;
	size_t out_len = 0;
	int r, mfd = memfd_create("mock-events", MFD_CLOEXEC);

	assert_true(mfd >= 0);
	o.workdir = work;
	o.workdir_fd = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(o.workdir_fd >= 0);
	o.home = ro && ro->no_home ? NULL : home;
	o.home_fd = o.home ? open(home, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	o.out_fd = mfd;
	o.resume_id = ro ? ro->resume : NULL;
	o.session_id = ro ? ro->session : NULL;
	mock_session_default(prompt, strlen(prompt), def);
	o.default_session_id = def;
	o.path_env = "/usr/bin:/bin";
	r = mock_parse(prompt, strlen(prompt), o.home, &s, &d);
	if (r < 0)
		r = mock_refuse(&o, r, &d);
	else
		r = mock_run(&s, &o);
	mock_script_release(&s);
	close_fdp(&o.workdir_fd);
	close_fdp(&o.home_fd);

	assert_int_equal(lseek(mfd, 0, SEEK_SET), 0);
	assert_int_equal(read_fd_capped(mfd, 1 << 20, &out, &out_len), 0);
	close_fdp(&mfd);
	ev->n = 0;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_error_t je;
		json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &je);

		if (!j)
			fail_msg("not JSON: '%s': %s", line, je.text);
		assert_true(ev->n < 64);
		ev->v[ev->n++] = j;
	}
	free(out);
	return r;
}

static int run(const char *prompt, struct events *ev)
{
	return run_full(prompt, NULL, ev);
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	if (!s)
		fail_msg("no string '%s'", key);
	return s;
}

static const char *type_of(const struct events *e, size_t i)
{
	assert_true(i < e->n);
	return str(e->v[i], "type");
}

/* The events' types joined with '|'. */
static void assert_types(const struct events *e, const char *want)
{
	char got[1024] = "";
	size_t i;

	for (i = 0; i < e->n; i++) {
		size_t n = strlen(got);

		(void)snprintf(got + n, sizeof(got) - n, "%s%s", i ? "|" : "", type_of(e, i));
	}
	if (strcmp(got, want) != 0)
		fail_msg("events '%s', expected '%s'", got, want);
}

static char *slurp(const char *dir, const char *name)
{
	char p[PATH_MAX * 2];
	char *buf = NULL;
	size_t len;

	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (read_file_capped(p, 1 << 20, &buf, &len) < 0)
		return NULL;
	return buf;
}

static bool exists(const char *dir, const char *name)
{
	char p[PATH_MAX * 2];
	struct stat st;

	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

static void assert_file(const char *dir, const char *name, const char *want)
{
	char *got = slurp(dir, name);

	if (!got)
		fail_msg("'%s/%s' missing", dir, name);
	assert_string_equal(got, want);
	free(got);
}

static void test_run_files(void **state)
{
	struct events e;
	char uuid[SESSION_UUID_LEN + 1];
	static const char prompt[] = "Do it.\n"
				     "write a.txt hello world\n"
				     "append a.txt second\n"
				     "append new/deep/b.txt fresh\n"
				     "write gone.txt x\n"
				     "delete gone.txt\n"
				     "delete missing.txt\n"
				     "say done with files\n"
				     "usage 10 3\n"
				     "session ignored-at-runtime\n";

	(void)state;
	assert_int_equal(run(prompt, &e), 0);
	assert_file(work, "a.txt", "hello world\nsecond\n");
	assert_file(work, "new/deep/b.txt", "fresh\n");
	assert_false(exists(work, "gone.txt"));
	assert_types(
		&e,
		"start|tool_call|tool_result|tool_call|tool_result|tool_call|tool_result|tool_call|tool_result|tool_call|tool_result|tool_call|tool_result|progress|usage|completion");
	/* the session instruction names the session */
	assert_string_equal(str(e.v[0], "session_id"), "ignored-at-runtime");
	assert_string_equal(str(e.v[0], "model"), "mock");
	assert_string_equal(str(e.v[1], "name"), "write_file");
	assert_string_equal(str(e.v[1], "call_id"), "mock-1");
	assert_string_equal(str(json_object_get(e.v[1], "args"), "path"), "a.txt");
	assert_string_equal(str(e.v[2], "call_id"), "mock-1");
	assert_string_equal(str(e.v[2], "status"), "ok");
	assert_string_equal(str(e.v[2], "output"), "wrote 12 bytes to a.txt");
	assert_string_equal(str(e.v[3], "name"), "append_file");
	assert_string_equal(str(e.v[4], "output"), "appended 7 bytes to a.txt");
	assert_string_equal(str(e.v[9], "name"), "delete_file");
	assert_string_equal(str(e.v[10], "status"), "ok");
	/* a missing file is a tool error the agent lives with */
	assert_string_equal(str(e.v[12], "status"), "error");
	assert_non_null(strstr(str(e.v[12], "error"), "missing.txt"));
	assert_string_equal(str(e.v[13], "message"), "done with files");
	assert_int_equal(json_integer_value(json_object_get(e.v[14], "input_tokens")), 10);
	assert_int_equal(json_integer_value(json_object_get(e.v[14], "output_tokens")), 3);
	assert_string_equal(str(e.v[15], "status"), "done");
	assert_string_equal(str(e.v[15], "summary"), "carried out 9 instructions");
	events_release(&e);

	/* the session is recorded under HOME */
	assert_true(exists(home, ".mock/sessions/ignored-at-runtime"));

	/* without a session instruction: the id derived from the prompt */
	assert_int_equal(fresh(state), 0);
	assert_int_equal(run("write x.txt y", &e), 0);
	mock_session_default("write x.txt y", 13, uuid);
	assert_string_equal(str(e.v[0], "session_id"), uuid);
	assert_true(exists(home, ".mock/sessions"));
	events_release(&e);
	/* overwrite truncates */
	assert_int_equal(run("write x.txt z", &e), 0);
	assert_file(work, "x.txt", "z\n");
	events_release(&e);
	/* nothing at all: start and completion */
	assert_int_equal(run("just prose", &e), 0);
	assert_types(&e, "start|completion");
	assert_string_equal(str(e.v[1], "summary"), "carried out 0 instructions");
	events_release(&e);
}

static void test_run_failures(void **state)
{
	struct events e;

	(void)state;
	assert_int_equal(run("write a.txt 1\nfail it broke\nwrite b.txt 2", &e), 1);
	assert_types(&e, "start|tool_call|tool_result|error");
	assert_string_equal(str(e.v[3], "kind"), "fail");
	assert_string_equal(str(e.v[3], "message"), "it broke");
	assert_true(exists(work, "a.txt"));
	assert_false(exists(work, "b.txt"));
	events_release(&e);

	assert_int_equal(run("fail", &e), 1);
	assert_string_equal(str(e.v[1], "message"), "failed as instructed");
	events_release(&e);

	assert_int_equal(run("say bye\nexit 7\nsay never", &e), 7);
	assert_types(&e, "start|progress");
	events_release(&e);
	assert_int_equal(run("exit 0", &e), 0);
	assert_types(&e, "start"); /* no completion */
	events_release(&e);

	assert_int_equal(run("rate-limit 2.5", &e), 1);
	assert_types(&e, "start|error");
	assert_string_equal(str(e.v[1], "kind"), "rate_limit");
	assert_int_equal(json_integer_value(json_object_get(e.v[1], "http_status")), 429);
	assert_int_equal(json_integer_value(json_object_get(e.v[1], "retry_after_s")), 3);
	assert_non_null(strstr(str(e.v[1], "message"), "retry after 3 seconds"));
	events_release(&e);
	assert_int_equal(run("rate-limit", &e), 1);
	assert_int_equal(json_integer_value(json_object_get(e.v[1], "retry_after_s")), 1);
	events_release(&e);

	/* a parse error: start, then the error; nothing runs */
	assert_int_equal(run("write a.txt x\nsleep soon", &e), 2);
	assert_types(&e, "start|error");
	assert_string_equal(str(e.v[1], "kind"), "syntax");
	assert_non_null(strstr(str(e.v[1], "message"), "prompt:2:7: sleep: 'soon'"));
	events_release(&e);
	assert_int_equal(fresh(state), 0);
	assert_int_equal(run("write a.txt x\nwrite /etc/x y", &e), 2);
	assert_string_equal(str(e.v[1], "kind"), "path_refused");
	assert_false(exists(work, "a.txt"));
	events_release(&e);

	/* sleep sleeps (a little) */
	assert_int_equal(run("sleep 0.01\nsay woke", &e), 0);
	assert_types(&e, "start|progress|completion");
	events_release(&e);

	/* a directory in the way of a write: an I/O failure, exit 1 */
	assert_int_equal(mkdir(outside, 0755) == 0 || errno == EEXIST, 1);
	{
		char p[PATH_MAX * 2];

		(void)snprintf(p, sizeof(p), "%s/adir", work);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	assert_int_equal(run("write adir x", &e), 1);
	assert_types(&e, "start|tool_call|tool_result|error");
	assert_string_equal(str(e.v[2], "status"), "error");
	assert_string_equal(str(e.v[3], "kind"), "runtime");
	events_release(&e);
	/* and a directory is not deleted */
	assert_int_equal(run("delete adir", &e), 1);
	assert_string_equal(str(e.v[3], "kind"), "runtime");
	assert_true(exists(work, "adir"));
	events_release(&e);
}

/* Symlinks that lead out of the workdir are refused by the kernel. */
static void test_run_confinement(void **state)
{
	struct events e;
	char p[PATH_MAX * 2], target[PATH_MAX * 2];
	static const char *const escapes[] = {
		"write link_dir/x.txt pwned",	  "append link_file pwned",
		"write link_rel/y.txt pwned",	  "delete link_dir/victim.txt",
		"write link_dir/new/z.txt pwned", "once link_dir/m say x",
	};
	size_t i;

	(void)state;
	(void)snprintf(p, sizeof(p), "%s/victim.txt", outside);
	{
		FILE *f = fopen(p, "we");

		assert_non_null(f);
		(void)fputs("safe\n", f);
		(void)fclose(f);
	}
	(void)snprintf(p, sizeof(p), "%s/link_dir", work);
	assert_int_equal(symlink(outside, p), 0);
	(void)snprintf(p, sizeof(p), "%s/link_file", work);
	(void)snprintf(target, sizeof(target), "%s/victim.txt", outside);
	assert_int_equal(symlink(target, p), 0);
	(void)snprintf(p, sizeof(p), "%s/link_rel", work);
	assert_int_equal(symlink("../outside", p), 0);
	for (i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
		int r = run(escapes[i], &e);

		if (r != 2)
			fail_msg("'%s': exit %d, expected 2", escapes[i], r);
		assert_string_equal(type_of(&e, e.n - 1), "error");
		assert_string_equal(str(e.v[e.n - 1], "kind"), "path_refused");
		assert_non_null(strstr(str(e.v[e.n - 1], "message"), "escapes the run workdir"));
		events_release(&e);
	}
	assert_file(outside, "victim.txt", "safe\n");
	assert_false(exists(outside, "x.txt"));
	assert_false(exists(outside, "y.txt"));
	assert_false(exists(outside, "new"));
	assert_false(exists(outside, "m"));

	/* deleting the symlink itself removes the link, not its target */
	assert_int_equal(run("delete link_file", &e), 0);
	assert_false(exists(work, "link_file"));
	assert_file(outside, "victim.txt", "safe\n");
	events_release(&e);
	/* a symlink inside the workdir is followed */
	(void)snprintf(p, sizeof(p), "%s/inner", work);
	assert_int_equal(mkdir(p, 0755), 0);
	(void)snprintf(p, sizeof(p), "%s/link_in", work);
	assert_int_equal(symlink("inner", p), 0);
	assert_int_equal(run("write link_in/f.txt ok", &e), 0);
	assert_file(work, "inner/f.txt", "ok\n");
	events_release(&e);
}

static void test_run_once(void **state)
{
	struct events e;
	static const char prompt[] = "once .rl rate-limit 0\nwrite done.txt yes";
	static const char home_prompt[] = "once ~/markers/a say first\nsay always";

	(void)state;
	assert_int_equal(run(prompt, &e), 1);
	assert_types(&e, "start|error");
	assert_string_equal(str(e.v[1], "kind"), "rate_limit");
	assert_true(exists(work, ".rl"));
	assert_false(exists(work, "done.txt"));
	events_release(&e);
	/* the second attempt skips it */
	assert_int_equal(run(prompt, &e), 0);
	assert_types(&e, "start|tool_call|tool_result|completion");
	assert_string_equal(str(e.v[3], "summary"), "carried out 1 instruction");
	assert_true(exists(work, "done.txt"));
	events_release(&e);

	/* markers under HOME, also as an absolute path */
	assert_int_equal(run(home_prompt, &e), 0);
	assert_types(&e, "start|progress|progress|completion");
	assert_string_equal(str(e.v[1], "message"), "first");
	assert_true(exists(home, "markers/a"));
	assert_false(exists(work, "markers"));
	events_release(&e);
	assert_int_equal(run(home_prompt, &e), 0);
	assert_types(&e, "start|progress|completion");
	assert_string_equal(str(e.v[1], "message"), "always");
	events_release(&e);
	{
		char abs_prompt[PATH_MAX * 2 + 64];

		(void)snprintf(abs_prompt, sizeof(abs_prompt), "once %s/markers/a say first\n",
			       home);
		assert_int_equal(run(abs_prompt, &e), 0);
		assert_types(&e, "start|completion");
		events_release(&e);
	}
	/* without HOME a ~ marker is refused at run time */
	{
		struct runopts ro = {.no_home = true};

		assert_int_equal(run_full("once ~/z say x", &ro, &e), 2);
		assert_string_equal(str(e.v[e.n - 1], "kind"), "path_refused");
		events_release(&e);
	}
}

static void test_run_sessions(void **state)
{
	struct events e;
	struct runopts ro = {0};

	(void)state;
	/* --session-id names the session when no instruction does */
	ro.session = "given-1";
	assert_int_equal(run_full("write a.txt 1", &ro, &e), 0);
	assert_string_equal(str(e.v[0], "session_id"), "given-1");
	assert_true(exists(home, ".mock/sessions/given-1"));
	events_release(&e);
	/* the instruction wins over --session-id */
	assert_int_equal(run_full("session named\nsay x", &ro, &e), 0);
	assert_string_equal(str(e.v[0], "session_id"), "named");
	events_release(&e);
	/* a bad --session-id */
	ro.session = "a/b";
	assert_int_equal(run_full("say x", &ro, &e), 2);
	assert_types(&e, "error");
	assert_string_equal(str(e.v[0], "kind"), "syntax");
	events_release(&e);

	/* resume a known session: announced, "resumed", then the follow-up */
	memset(&ro, 0, sizeof(ro));
	ro.resume = "given-1";
	assert_int_equal(run_full("session other\nappend a.txt 2", &ro, &e), 0);
	assert_types(&e, "start|progress|tool_call|tool_result|completion");
	assert_string_equal(str(e.v[0], "session_id"), "given-1"); /* resume wins */
	assert_string_equal(str(e.v[1], "message"), "resumed session given-1");
	assert_file(work, "a.txt", "1\n2\n");
	assert_false(exists(home, ".mock/sessions/other"));
	events_release(&e);
	/* an unknown one */
	ro.resume = "nope";
	assert_int_equal(run_full("append a.txt 3", &ro, &e), 1);
	assert_types(&e, "start|error");
	assert_string_equal(str(e.v[1], "kind"), "session_unknown");
	assert_non_null(strstr(str(e.v[1], "message"), "unknown session 'nope'"));
	assert_file(work, "a.txt", "1\n2\n");
	events_release(&e);
	/* no HOME: cannot be found */
	ro.resume = "given-1";
	ro.no_home = true;
	assert_int_equal(run_full("say x", &ro, &e), 1);
	assert_string_equal(str(e.v[1], "kind"), "session_unknown");
	events_release(&e);
	/* a fresh run without HOME still works (nothing recorded) */
	memset(&ro, 0, sizeof(ro));
	ro.no_home = true;
	assert_int_equal(run_full("say x", &ro, &e), 0);
	events_release(&e);
	/* a bad resume id */
	memset(&ro, 0, sizeof(ro));
	ro.resume = "..";
	assert_int_equal(run_full("say x", &ro, &e), 2);
	assert_types(&e, "error");
	events_release(&e);
}

static void test_run_commit(void **state)
{
	struct events e;
	char p[PATH_MAX * 2];
	char *log = NULL;
	FILE *f;

	(void)state;
	if (run_git(work, "init", "-q", ".", NULL) != 0)
		skip();
	(void)snprintf(p, sizeof(p), "%s/.bernstein", work);
	assert_int_equal(mkdir(p, 0755), 0);
	(void)snprintf(p, sizeof(p), "%s/.bernstein/private", work);
	f = fopen(p, "we");
	assert_non_null(f);
	(void)fclose(f);

	assert_int_equal(run("write a.txt hi\ncommit add a.txt\ncommit again", &e), 0);
	assert_types(
		&e,
		"start|tool_call|tool_result|tool_call|tool_result|tool_call|tool_result|completion");
	assert_string_equal(str(e.v[3], "name"), "git_commit");
	assert_string_equal(str(json_object_get(e.v[3], "args"), "message"), "add a.txt");
	assert_string_equal(str(e.v[4], "status"), "ok");
	assert_string_equal(str(e.v[4], "output"), "committed");
	assert_string_equal(str(e.v[6], "output"), "nothing to commit");
	events_release(&e);
	/* the commit holds a.txt, not .bernstein, by mock */
	(void)snprintf(p, sizeof(p), "%s/log.txt", root);
	{
		pid_t pid = fork();
		int st;

		assert_true(pid >= 0);
		if (pid == 0) {
			int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

			(void)dup2(fd, 1);
			execlp("git", "git", "-C", work, "log", "--format=%an <%ae> %s",
			       "--name-only", (char *)NULL);
			_exit(127);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
	}
	log = slurp(root, "log.txt");
	assert_non_null(log);
	assert_string_equal(log, "mock <mock@localhost> add a.txt\n\na.txt\n");
	free(log);

	/* outside a repository: a failed tool, exit 1 */
	assert_int_equal(fresh(state), 0);
	assert_int_equal(run("commit nothing here", &e), 1);
	assert_types(&e, "start|tool_call|tool_result|error");
	assert_string_equal(str(e.v[3], "kind"), "runtime");
	assert_non_null(strstr(str(e.v[3], "message"), "git commit failed"));
	events_release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_every_instruction),
		cmocka_unit_test(test_parse_prose),
		cmocka_unit_test(test_parse_bad_args),
		cmocka_unit_test(test_parse_nul),
		cmocka_unit_test(test_parse_confinement),
		cmocka_unit_test(test_parse_cap),
		cmocka_unit_test(test_names_and_ids),
		cmocka_unit_test_setup(test_run_files, fresh),
		cmocka_unit_test_setup(test_run_failures, fresh),
		cmocka_unit_test_setup(test_run_confinement, fresh),
		cmocka_unit_test_setup(test_run_once, fresh),
		cmocka_unit_test_setup(test_run_sessions, fresh),
		cmocka_unit_test_setup(test_run_commit, fresh),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
