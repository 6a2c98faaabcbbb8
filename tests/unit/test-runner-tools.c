/* The builtin tools (src/runner/tools.c) and restricted exec
 * (src/runner/rexec.c): an adversarial confinement corpus (every case must
 * stay inside the workdir; the legitimate ones must work), a symlink swapped
 * in and out by a racing thread while the tools run thousands of times, and
 * a restricted-exec corpus. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runner/rexec.h"
#include "runner/tools.h"
#include "util/beneath.h"
#include "util/sbuf.h"

/* Paths here are short temp paths; the buffers are PATH_MAX-sized. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define SECRET	   "TOP-SECRET-OUTSIDE"
#define GIT_CONFIG "[core]\n\tbare = false\n"

static char root[PATH_MAX], work[PATH_MAX], outside[PATH_MAX];
static struct tools *tools;

static void put(const char *dir, const char *name, const char *content)
{
	char p[PATH_MAX * 2];
	FILE *f;

	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "we");
	assert_non_null(f);
	(void)fputs(content, f);
	(void)fclose(f);
}

static void link_in(const char *target, const char *name)
{
	char p[PATH_MAX * 2];

	(void)snprintf(p, sizeof(p), "%s/%s", work, name);
	if (symlink(target, p) < 0)
		fail_msg("symlink %s -> %s: %s", p, target, strerror(errno));
}

static int setup(void **state)
{
	char p[PATH_MAX * 2], abs_in[PATH_MAX * 2];
	static const char *const env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", "ONLY_VAR=1", NULL};
	struct tools_config tc = {0};
	struct diag d = {0};

	(void)state;
	(void)snprintf(root, sizeof(root), "/tmp/bernstein-tools-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	(void)snprintf(work, sizeof(work), "%s/work", root);
	(void)snprintf(outside, sizeof(outside), "%s/outside", root);
	if (mkdir(work, 0755) < 0 || mkdir(outside, 0755) < 0)
		return -1;
	put(outside, "secret.txt", SECRET "\n");
	put(outside, "f", SECRET "\n");
	put(work, "a.txt", "A\n");
	(void)snprintf(p, sizeof(p), "%s/sub", work);
	(void)mkdir(p, 0755);
	(void)snprintf(p, sizeof(p), "%s/sub/deeper", work);
	(void)mkdir(p, 0755);
	(void)snprintf(p, sizeof(p), "%s/sub", work);
	put(p, "b.txt", "B\n");
	(void)snprintf(p, sizeof(p), "%s/race_dir", work);
	(void)mkdir(p, 0755);
	put(p, "f", "SAFE\n");
	link_in("a.txt", "link_in");
	link_in("sub", "link_sub");
	(void)snprintf(abs_in, sizeof(abs_in), "%s/a.txt", work);
	link_in(abs_in, "link_abs_in");
	link_in("/etc", "link_etc");
	link_in("/etc/passwd", "link_etc_passwd");
	link_in("../outside/secret.txt", "link_out_rel");
	link_in("..", "link_parent");
	link_in("../outside", "link_dir_out");
	link_in("loop2", "loop1");
	link_in("loop1", "loop2");
	link_in("self_loop", "self_loop");
	link_in("/proc/self/root", "link_proc");
	link_in("../..", "sub/up");
	link_in("../a.txt", "sub/up_ok");
	/* git's and bernstein's metadata: a repository, a nested one, a linked
	 * worktree's .git file, bernstein's state, and links into them */
	(void)snprintf(p, sizeof(p), "%s/.git", work);
	(void)mkdir(p, 0755);
	put(p, "config", GIT_CONFIG);
	(void)snprintf(p, sizeof(p), "%s/.git/hooks", work);
	(void)mkdir(p, 0755);
	(void)snprintf(p, sizeof(p), "%s/nested", work);
	(void)mkdir(p, 0755);
	(void)snprintf(p, sizeof(p), "%s/nested/.git", work);
	(void)mkdir(p, 0755);
	put(p, "config", GIT_CONFIG);
	(void)snprintf(p, sizeof(p), "%s/linked", work);
	(void)mkdir(p, 0755);
	put(p, ".git", "gitdir: /elsewhere/.git/worktrees/linked\n");
	(void)snprintf(p, sizeof(p), "%s/.bernstein", work);
	(void)mkdir(p, 0755);
	put(p, "state.db", "STATE\n");
	put(work, ".gitignore", "*.o\n");
	link_in(".git", "gx");
	link_in(".git/config", "gcfg");
	link_in("nested/.git", "gnested");
	link_in(".bernstein", "gbern");
	link_in("gx", "gx2");
	(void)snprintf(p, sizeof(p), "%s/fifo", work);
	if (mkfifo(p, 0644) < 0)
		return -1;
	{
		char src[PATH_MAX * 2];

		(void)snprintf(src, sizeof(src), "%s/secret.txt", outside);
		(void)snprintf(p, sizeof(p), "%s/hard", work);
		if (link(src, p) < 0)
			return -1;
	}
	tc.workdir = work;
	tc.allow_run_command = true;
	tc.path_env = "/usr/bin:/bin";
	tc.cmd_env = env;
	tc.cmd_timeout_ms = 1000;
	tc.max_cmd_output = 1000;
	return tools_open(&tc, &tools, &d);
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 32];
	pid_t pid;

	(void)state;
	tools = tools_free(tools);
	/* rm -rf without a shell */
	(void)snprintf(cmd, sizeof(cmd), "%s", root);
	pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	return 0;
}

/* Run a tool with JSON arguments; return the outcome. */
static struct tool_outcome call(const char *name, const char *args)
{
	struct tool_outcome o = {0};

	assert_int_equal(tools_call(tools, name, args, &o), 0);
	assert_non_null(o.output);
	assert_non_null(o.details);
	assert_non_null(o.args);
	/* whatever happened, nothing from outside leaks into the output */
	if (strstr(o.output, SECRET))
		fail_msg("%s %s leaked the outside secret: %s", name, args, o.output);
	return o;
}

static void read_path_json(const char *path_json, bool want_ok, const char *want)
{
	struct sbuf args = SBUF_INIT(SIZE_MAX);
	struct tool_outcome o;

	(void)sbuf_addf(&args, "{\"path\": %s}", path_json);
	o = call("read_file", args.buf);
	if (o.ok != want_ok)
		fail_msg("read_file %.200s: ok=%d, want %d (%s)", path_json, o.ok, want_ok,
			 o.output);
	if (want && !strstr(o.output, want))
		fail_msg("read_file %.200s: '%s' lacks '%s'", path_json, o.output, want);
	tool_outcome_release(&o);
	sbuf_release(&args);
}

static void read_quoted(const char *path, bool want_ok, const char *want)
{
	struct sbuf q = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&q, "\"%s\"", path);
	read_path_json(q.buf, want_ok, want);
	sbuf_release(&q);
}

static void read_ok(const char *path, const char *want)
{
	read_quoted(path, true, want);
}

static void read_denied(const char *path, const char *want)
{
	read_quoted(path, false, want);
}

static bool exists_outside(const char *name)
{
	char p[PATH_MAX * 2];
	struct stat st;

	(void)snprintf(p, sizeof(p), "%s/%s", outside, name);
	return lstat(p, &st) == 0;
}

static void test_legitimate_paths(void **state)
{
	struct tool_outcome o;

	(void)state;
	read_ok("a.txt", "A");
	read_ok("./a.txt", "A");
	read_ok("sub/b.txt", "B");
	read_ok("sub//b.txt", "B");
	read_ok("sub/../a.txt", "A");
	read_ok("sub/deeper/../../a.txt", "A");
	read_ok("link_in", "A");
	read_ok("link_sub/b.txt", "B");
	read_ok("sub/up_ok", "A");
	read_ok("race_dir/f", "SAFE");
	o = call("list_dir", "{}");
	assert_true(o.ok);
	assert_non_null(strstr(o.output, "a.txt\n"));
	assert_non_null(strstr(o.output, "sub/\n"));
	assert_non_null(strstr(o.output, "link_sub\n")); /* a symlink is listed, not followed */
	assert_true(strstr(o.output, "a.txt") < strstr(o.output, "sub/")); /* sorted */
	tool_outcome_release(&o);
	o = call("list_dir", "{\"path\": \"sub\"}");
	assert_true(o.ok);
	assert_string_equal(o.output, "b.txt\ndeeper/\nup\nup_ok\n");
	assert_int_equal(json_integer_value(json_object_get(o.details, "count")), 4);
	tool_outcome_release(&o);
	o = call("list_dir", "{\"path\": \"link_sub\"}");
	assert_true(o.ok);
	tool_outcome_release(&o);
	o = call("write_file", "{\"path\": \"new/deep/dir/x.txt\", \"content\": \"X\"}");
	assert_true(o.ok);
	assert_int_equal(json_integer_value(json_object_get(o.details, "bytes")), 1);
	/* the event shows the size, not the content */
	assert_null(json_object_get(o.args, "content"));
	assert_int_equal(json_integer_value(json_object_get(o.args, "bytes")), 1);
	tool_outcome_release(&o);
	read_ok("new/deep/dir/x.txt", "X");
	o = call("write_file", "{\"path\": \"link_sub/via_link.txt\", \"content\": \"V\"}");
	assert_true(o.ok);
	tool_outcome_release(&o);
	read_ok("sub/via_link.txt", "V");
	o = call("write_file", "{\"path\": \"a.txt\", \"content\": \"short\"}");
	assert_true(o.ok);
	tool_outcome_release(&o);
	read_ok("a.txt", "short");
	o = call("write_file", "{\"path\": \"a.txt\", \"content\": \"A\\n\"}");
	tool_outcome_release(&o);
	/* non-ASCII names are names */
	o = call("write_file", "{\"path\": \"caf\\u00e9/\\u2603.txt\", \"content\": \"snow\"}");
	assert_true(o.ok);
	tool_outcome_release(&o);
	read_ok("caf\xc3\xa9/\xe2\x98\x83.txt", "snow");
}

static void test_escapes_read(void **state)
{
	char p[PATH_MAX * 2];

	(void)state;
	read_denied("", "empty path");
	read_denied("/etc/passwd", "absolute paths are not allowed");
	(void)snprintf(p, sizeof(p), "%s/a.txt", work);
	read_denied(p, "absolute paths are not allowed"); /* even into the workdir */
	read_denied("../outside/secret.txt", "escapes the run workdir");
	read_denied("..", "escapes the run workdir");
	read_denied("../", "escapes the run workdir");
	read_denied("sub/../../outside/secret.txt", "escapes the run workdir");
	read_denied("sub/../..", "escapes the run workdir");
	read_denied("a.txt/../../outside/secret.txt", "escapes the run workdir");
	read_denied("./../outside/f", "escapes the run workdir");
	read_denied("link_etc/passwd", "escapes the run workdir");
	read_denied("link_etc_passwd", "escapes the run workdir");
	read_denied("link_out_rel", "escapes the run workdir");
	read_denied("link_parent/outside/secret.txt", "escapes the run workdir");
	read_denied("link_dir_out/secret.txt", "escapes the run workdir");
	read_denied("link_dir_out", "escapes the run workdir");
	read_denied("sub/up/outside/secret.txt", "escapes the run workdir");
	read_denied("link_proc/etc/passwd", "escapes the run workdir");
	read_denied("/proc/self/root/etc/passwd", "absolute paths");
	read_denied("loop1", "symlink loop");
	read_denied("self_loop", "symlink loop");
	/* an absolute symlink is refused even when it points inside (deliberate) */
	read_denied("link_abs_in", "escapes the run workdir");
	read_denied("fifo", "not a regular file"); /* and it did not hang */
	read_denied("sub", "is a directory");
	read_denied("missing.txt", "No such file");
	read_denied("link_in/", "Not a directory");
	/* a second name of a file may lie outside: it is not followed out */
	read_denied("hard", "more than one hard link");
	read_denied("~/.bashrc", "No such file"); /* no tilde expansion */
}

static void test_escapes_odd_names(void **state)
{
	struct sbuf big = SBUF_INIT(SIZE_MAX);
	size_t i;

	(void)state;
	/* Unicode lookalikes of '.' and '/' are plain names, not escapes */
	read_denied("\xe2\x80\xa4\xe2\x80\xa4/outside/secret.txt", "No such file"); /* U+2024 */
	read_denied("\xef\xbc\x8e\xef\xbc\x8e/outside/secret.txt", "No such file"); /* U+FF0E */
	read_denied("..\xe2\x88\x95outside\xe2\x88\x95secret.txt", "No such file"); /* U+2215 */
	read_denied("\xef\xbc\x8f"
		    "etc/passwd",
		    "No such file");				    /* U+FF0F */
	read_denied("..\\\\outside\\\\secret.txt", "No such file"); /* backslashes */
	read_denied("%2e%2e/outside/secret.txt", "No such file");
	read_denied("...", "No such file");
	read_denied(". ./outside/secret.txt", "No such file");
	/* NUL bytes: the JSON layer refuses them; the primitive does too */
	read_path_json("\"a.txt\\u0000../../outside/secret.txt\"", false, "not a JSON object");
	{
		struct diag d = {0};

		assert_int_equal(tools_open_beneath(AT_FDCWD, "a.txt\0/../x", 11, O_RDONLY, 0, &d),
				 -EINVAL);
		assert_non_null(strstr(d.msg, "NUL"));
	}
	/* very long paths */
	for (i = 0; i < 3000; i++)
		(void)sbuf_adds(&big, "a/");
	(void)sbuf_adds(&big, "x");
	read_denied(big.buf, "longer than");
	sbuf_reset(&big);
	for (i = 0; i < 300; i++)
		(void)sbuf_addc(&big, 'n');
	read_denied(big.buf, "component is longer");
	sbuf_reset(&big);
	/* deep '..' that climbs back inside only after leaving: refused lexically */
	for (i = 0; i < 50; i++)
		(void)sbuf_adds(&big, "../");
	(void)sbuf_adds(&big, "etc/passwd");
	read_denied(big.buf, "escapes");
	sbuf_release(&big);
	/* wrong argument types */
	read_path_json("5", false, "needs a string 'path'");
	read_path_json("null", false, "needs a string 'path'");
	{
		struct tool_outcome o = call("read_file", "not json");

		assert_false(o.ok);
		tool_outcome_release(&o);
		o = call("read_file", "[\"a.txt\"]");
		assert_false(o.ok);
		tool_outcome_release(&o);
	}
}

static void test_escapes_write(void **state)
{
	struct tool_outcome o;
	char p[PATH_MAX * 2];
	char *content = NULL;
	FILE *f;
	static const char *const bad[] = {
		"{\"path\": \"../evil.txt\", \"content\": \"E\"}",
		"{\"path\": \"link_dir_out/evil.txt\", \"content\": \"E\"}",
		"{\"path\": \"link_dir_out/newdir/evil.txt\", \"content\": \"E\"}",
		"{\"path\": \"link_out_rel\", \"content\": \"E\"}",
		"{\"path\": \"link_parent/outside/evil.txt\", \"content\": \"E\"}",
		"{\"path\": \"sub/up/outside/evil.txt\", \"content\": \"E\"}",
		"{\"path\": \"link_etc/evil\", \"content\": \"E\"}",
		"{\"path\": \"/tmp/evil.txt\", \"content\": \"E\"}",
		"{\"path\": \"hard\", \"content\": \"E\"}",
		"{\"path\": \"fifo\", \"content\": \"E\"}",
		"{\"path\": \"sub\", \"content\": \"E\"}",
		"{\"path\": \"loop1/x\", \"content\": \"E\"}",
		"{\"path\": \"a.txt\"}",
		"{\"path\": \"ok.txt\", \"content\": 5}",
		NULL,
	};
	size_t i, len;
	long n;

	(void)state;
	for (i = 0; bad[i]; i++) {
		o = call("write_file", bad[i]);
		if (o.ok)
			fail_msg("write_file %s succeeded", bad[i]);
		assert_non_null(json_object_get(o.details, "error"));
		tool_outcome_release(&o);
	}
	assert_false(exists_outside("evil.txt"));
	assert_false(exists_outside("newdir"));
	(void)snprintf(p, sizeof(p), "%s/evil.txt", root);
	assert_true(access(p, F_OK) < 0);
	/* the hard-linked secret is untouched */
	(void)snprintf(p, sizeof(p), "%s/secret.txt", outside);
	f = fopen(p, "re");
	assert_non_null(f);
	content = calloc(1, 64);
	n = (long)fread(content, 1, 63, f);
	(void)fclose(f);
	assert_true(n > 0);
	len = strlen(content);
	assert_int_equal(len, strlen(SECRET "\n"));
	assert_string_equal(content, SECRET "\n");
	free(content);
	/* listings */
	o = call("list_dir", "{\"path\": \"link_etc\"}");
	assert_false(o.ok);
	tool_outcome_release(&o);
	o = call("list_dir", "{\"path\": \"..\"}");
	assert_false(o.ok);
	tool_outcome_release(&o);
	o = call("list_dir", "{\"path\": \"link_dir_out\"}");
	assert_false(o.ok);
	assert_null(strstr(o.output, "secret.txt"));
	tool_outcome_release(&o);
	o = call("list_dir", "{\"path\": \"a.txt\"}");
	assert_false(o.ok);
	tool_outcome_release(&o);
}

/* ---- the race: a symlink flipped between inside and outside ---------------- */

static atomic_int stop_race;

static void *flipper(void *arg)
{
	char link[PATH_MAX * 2], tmp_in[PATH_MAX * 2], tmp_out[PATH_MAX * 2];

	(void)arg;
	(void)snprintf(link, sizeof(link), "%s/race", work);
	(void)snprintf(tmp_in, sizeof(tmp_in), "%s/.race_in", work);
	(void)snprintf(tmp_out, sizeof(tmp_out), "%s/.race_out", work);
	while (!atomic_load(&stop_race)) {
		struct timespec pause = {0, 200000};

		/* atomic swaps: rename a prepared symlink over "race", so the
		 * name always exists, pointing inside or outside */
		(void)unlink(tmp_in);
		(void)!symlink("race_dir", tmp_in);
		(void)rename(tmp_in, link);
		(void)nanosleep(&pause, NULL);
		(void)unlink(tmp_out);
		(void)!symlink("../outside", tmp_out);
		(void)rename(tmp_out, link);
		(void)nanosleep(&pause, NULL);
	}
	return NULL;
}

static void test_symlink_race(void **state)
{
	pthread_t th;
	unsigned i, ok_reads = 0, denied = 0, escapes = 0, missing = 0;
	char p[PATH_MAX * 2];

	(void)state;
	atomic_store(&stop_race, 0);
	/* "race" exists from the start and is only ever replaced atomically, so
	 * write_file never finds it missing (and never creates it as a directory) */
	link_in("race_dir", "race");
	assert_int_equal(pthread_create(&th, NULL, flipper, NULL), 0);
	for (i = 0; i < 5000; i++) {
		struct tool_outcome o = call("read_file", "{\"path\": \"race/f\"}");

		if (o.ok) {
			assert_string_equal(o.output, "SAFE\n");
			ok_reads++;
		} else {
			if (strstr(o.output, "escapes"))
				escapes++;
			else if (strstr(o.output, "No such file"))
				missing++;
			else
				print_message("# refused: %s\n", o.output);
			denied++;
		}
		tool_outcome_release(&o);
		if (i % 4 == 0) {
			o = call("write_file", "{\"path\": \"race/w.txt\", \"content\": \"W\"}");
			tool_outcome_release(&o);
			o = call("write_file",
				 "{\"path\": \"race/sub/w.txt\", \"content\": \"W\"}");
			tool_outcome_release(&o);
			o = call("list_dir", "{\"path\": \"race\"}");
			tool_outcome_release(&o);
		}
	}
	atomic_store(&stop_race, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* zero escapes: nothing written outside, nothing read from outside */
	assert_false(exists_outside("w.txt"));
	assert_false(exists_outside("sub"));
	(void)snprintf(p, sizeof(p), "%s/race_dir/w.txt", work);
	/* the race was real: both outcomes happened */
	print_message("# race: %u reads inside, %u refused (%u escapes, %u missing)\n", ok_reads,
		      denied, escapes, missing);
	assert_true(ok_reads > 0);
	assert_true(denied > 0);
	assert_int_equal(missing, 0);
}

/* ---- restricted exec -------------------------------------------------------- */

static void test_rexec_names(void **state)
{
	static const char *const rejected[] = {
		"",
		"/bin/ls",
		"./ls",
		"bin/ls",
		"../ls",
		"ls/",
		"sh",
		"bash",
		"dash",
		"zsh",
		"fish",
		"ksh",
		"csh",
		"tcsh",
		"busybox",
		"toybox",
		"env",
		"python",
		"python3",
		"python3.11",
		"python2.7",
		"pypy3",
		"perl",
		"perl5.36",
		"ruby",
		"ruby3.1",
		"node",
		"nodejs",
		"node18",
		"php",
		"php8.2",
		"lua5.4",
		"awk",
		"gawk",
		"xargs",
		"timeout",
		"nohup",
		"setsid",
		"nice",
		"stdbuf",
		"sudo",
		"su",
		"doas",
		"pkexec",
		"chroot",
		"unshare",
		"nsenter",
		"strace",
		"dd",
		"mkfs",
		"mkfs.ext4",
		"shutdown",
		"reboot",
		"init",
		"systemctl",
		"-rf",
		".",
		"..",
		"ls\n",
		"ls\x1b[0m",
		"ld-linux-x86-64.so.2",
		NULL,
	};
	static const char *const allowed[] = {
		"ls",	"cat",	    "echo",	"grep",	 "git",		"make", "cc",
		"true", "false",    "printenv", "sed",	 "sort",	"head", "wc",
		"diff", "pythonic", "shx",	"envoy", "nodemon-ish", NULL,
	};
	char longname[400];
	struct diag d;
	size_t i;

	(void)state;
	for (i = 0; rejected[i]; i++) {
		memset(&d, 0, sizeof(d));
		if (rexec_check_name(rejected[i], &d) == 0)
			fail_msg("'%s' was allowed", rejected[i]);
		assert_true(d.msg[0] != '\0');
	}
	for (i = 0; allowed[i]; i++)
		if (rexec_check_name(allowed[i], &d) != 0)
			fail_msg("'%s' was refused: %s", allowed[i], d.msg);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(rexec_check_name(longname, &d), -EINVAL);
}

static void test_rexec_resolve(void **state)
{
	char bin[PATH_MAX * 2], p[PATH_MAX * 2], path_env[PATH_MAX * 3];
	char *out = NULL;
	struct diag d = {0};

	(void)state;
	assert_int_equal(rexec_resolve("ls", "/usr/bin:/bin", work, &out, &d), 0);
	assert_true(out[0] == '/');
	assert_non_null(strstr(out, "/ls"));
	free(out);
	out = NULL;
	assert_true(rexec_resolve("no-such-command-xyz", "/usr/bin:/bin", work, &out, &d) < 0);
	assert_non_null(strstr(d.msg, "not found on PATH"));
	/* a harmless-looking name that is a symlink to a shell */
	(void)snprintf(bin, sizeof(bin), "%s/bin", root);
	(void)mkdir(bin, 0755);
	(void)snprintf(p, sizeof(p), "%s/innocent", bin);
	assert_int_equal(symlink("/bin/bash", p), 0);
	(void)snprintf(path_env, sizeof(path_env), "%s:/usr/bin:/bin", bin);
	assert_int_equal(rexec_resolve("innocent", path_env, work, &out, &d), -EPERM);
	assert_non_null(strstr(d.msg, "resolves to 'bash'"));
	/* relative PATH entries are ignored: a workdir file is never a command */
	put(work, "mytool", "#!/bin/sh\necho pwned\n");
	(void)snprintf(p, sizeof(p), "%s/mytool", work);
	(void)chmod(p, 0755);
	assert_true(rexec_resolve("mytool", ".:/usr/bin:/bin", work, &out, &d) < 0);
	assert_true(rexec_resolve("mytool", ":/usr/bin", work, &out, &d) < 0);
	/* so are absolute PATH entries inside the workdir */
	(void)snprintf(path_env, sizeof(path_env), "%s:/usr/bin:/bin", work);
	assert_true(rexec_resolve("mytool", path_env, work, &out, &d) < 0);
	/* and a PATH dir symlinked into the workdir */
	(void)snprintf(p, sizeof(p), "%s/wlink", root);
	assert_int_equal(symlink(work, p), 0);
	(void)snprintf(path_env, sizeof(path_env), "%s/wlink:/usr/bin", root);
	assert_true(rexec_resolve("mytool", path_env, work, &out, &d) < 0);
	assert_null(out);
}

static void test_run_command(void **state)
{
	struct tool_outcome o;
	static const char *const refused[] = {
		"{\"argv\": \"ls -l\"}",
		"{\"command\": \"ls -l\"}",
		"{\"argv\": []}",
		"{\"argv\": [5]}",
		"{\"argv\": [\"ls\", 5]}",
		"{\"argv\": [\"sh\", \"-c\", \"echo pwned\"]}",
		"{\"argv\": [\"bash\", \"-c\", \"echo pwned\"]}",
		"{\"argv\": [\"/bin/sh\", \"-c\", \"echo pwned\"]}",
		"{\"argv\": [\"python3\", \"-c\", \"print('pwned')\"]}",
		"{\"argv\": [\"env\", \"sh\", \"-c\", \"echo pwned\"]}",
		"{\"argv\": [\"timeout\", \"5\", \"sh\", \"-c\", \"echo pwned\"]}",
		"{\"argv\": [\"xargs\", \"echo\", \"pwned\"]}",
		"{\"argv\": [\"busybox\", \"sh\"]}",
		"{\"argv\": [\"./mytool\"]}",
		"{\"argv\": [\"mytool\"]}",
		"{\"argv\": [\"a\\u0000b\"]}",
		"{}",
		NULL,
	};
	size_t i;

	(void)state;
	put(work, "mytool", "#!/bin/sh\necho pwned\n");
	for (i = 0; refused[i]; i++) {
		o = call("run_command", refused[i]);
		if (o.ok || strstr(o.output, "pwned"))
			fail_msg("run_command %s ran: %s", refused[i], o.output);
		assert_non_null(strstr(o.output, "error: "));
		tool_outcome_release(&o);
	}

	o = call("run_command", "{\"argv\": [\"echo\", \"hello\", \"$HOME\", \"a b\", \"*\"]}");
	assert_true(o.ok);
	/* no interpolation, no globbing, no word splitting */
	assert_non_null(strstr(o.output, "exit_code=0\nstdout:\nhello $HOME a b *\n"));
	assert_int_equal(json_integer_value(json_object_get(o.details, "exit_code")), 0);
	tool_outcome_release(&o);

	o = call("run_command", "{\"argv\": [\"cat\", \"a.txt\"]}"); /* cwd is the workdir */
	assert_true(o.ok);
	assert_non_null(strstr(o.output, "stdout:\nA\n"));
	tool_outcome_release(&o);

	o = call("run_command", "{\"argv\": [\"cat\"]}"); /* stdin is /dev/null: no hang */
	assert_true(o.ok);
	tool_outcome_release(&o);

	o = call("run_command", "{\"argv\": [\"false\"]}");
	assert_false(o.ok);
	assert_non_null(strstr(o.output, "exit_code=1"));
	assert_int_equal(json_integer_value(json_object_get(o.details, "exit_code")), 1);
	tool_outcome_release(&o);

	o = call("run_command", "{\"argv\": [\"ls\", \"no-such-file\"]}");
	assert_false(o.ok);
	assert_non_null(strstr(o.output, "stderr:\n"));
	assert_non_null(strstr(o.output, "no-such-file"));
	tool_outcome_release(&o);

	/* the environment is exactly the one given (never the runner's) */
	o = call("run_command", "{\"argv\": [\"printenv\"]}");
	assert_true(o.ok);
	assert_non_null(strstr(o.output, "ONLY_VAR=1\n"));
	assert_null(strstr(o.output, "HOME="));
	tool_outcome_release(&o);

	/* timeout: killed, reported */
	o = call("run_command", "{\"argv\": [\"sleep\", \"30\"]}");
	assert_false(o.ok);
	assert_true(json_is_true(json_object_get(o.details, "timed_out")));
	assert_non_null(strstr(o.output, "timed out"));
	tool_outcome_release(&o);

	/* capped output */
	o = call("run_command", "{\"argv\": [\"seq\", \"1\", \"100000\"]}");
	assert_true(o.ok);
	assert_non_null(strstr(o.output, "[truncated: "));
	assert_true(strlen(o.output) < 3000);
	tool_outcome_release(&o);
}

static void test_run_command_withheld(void **state)
{
	struct tools_config tc = {0};
	struct tools *t = NULL;
	struct tool_outcome o = {0};
	struct diag d = {0};
	json_t *specs;
	size_t i;

	(void)state;
	tc.workdir = work;
	assert_int_equal(tools_open(&tc, &t, &d), 0);
	assert_false(tools_has(t, "run_command"));
	assert_true(tools_has(t, "read_file"));
	assert_int_equal(tools_call(t, "run_command", "{\"argv\": [\"ls\"]}", &o), -ENOENT);
	assert_int_equal(tools_call(t, "no_such_tool", "{}", &o), -ENOENT);
	specs = tools_specs(t);
	assert_int_equal(json_array_size(specs), 3);
	for (i = 0; i < 3; i++)
		assert_string_not_equal(
			json_string_value(json_object_get(json_array_get(specs, i), "name")),
			"run_command");
	json_decref(specs);
	specs = tools_specs(tools);
	assert_int_equal(json_array_size(specs), 4);
	json_decref(specs);
	t = tools_free(t);
	tc.workdir = "/nonexistent/dir";
	assert_int_equal(tools_open(&tc, &t, &d), -ENOENT);
}

/* ---- .git and .bernstein ---------------------------------------------------- */

static void test_git_names(void **state)
{
	static const char *const git[] = {
		".git",
		".GIT",
		".Git",
		".gIT",
		".git.",
		".git ",
		".git. . ",
		".git::$INDEX_ALLOCATION",
		"git~1",
		"GIT~1",
		".g\xe2\x80\x8cit",
		"\xef\xbb\xbf.git",
		".git\xe2\x80\x8f",
		NULL,
	};
	static const char *const not_git[] = {
		"git",	 ".gitignore", ".gitattributes", ".gitmodules",
		"x.git", ".git2",      "git~2",		 ".gi",
		"",	 "..git",      ".g it",		 ".bernstein",
		NULL,
	};
	static const char *const bern[] = {
		".bernstein", ".BERNSTEIN", ".bernstein.", "bernst~1", ".bern\xe2\x80\x8dstein",
		NULL};
	static const char *const not_bern[] = {".bernstein-write-1", "bernstein", ".bernsteins",
					       ".git", NULL};
	struct diag d = {0};
	size_t i;

	(void)state;
	for (i = 0; git[i]; i++)
		if (!beneath_is_git_name(git[i], strlen(git[i])))
			fail_msg("'%s' is not taken for .git", git[i]);
	for (i = 0; not_git[i]; i++)
		if (beneath_is_git_name(not_git[i], strlen(not_git[i])))
			fail_msg("'%s' is taken for .git", not_git[i]);
	for (i = 0; bern[i]; i++)
		assert_true(beneath_is_bernstein_name(bern[i], strlen(bern[i])));
	for (i = 0; not_bern[i]; i++)
		assert_false(beneath_is_bernstein_name(not_bern[i], strlen(not_bern[i])));
	assert_int_equal(beneath_check_names("a/.GIT/b", 8, BENEATH_NO_GIT, &d), -EPERM);
	assert_non_null(strstr(d.msg, "git directory"));
	assert_int_equal(beneath_check_names("a/.GIT/b", 8, BENEATH_NO_BERNSTEIN, &d), 0);
	assert_int_equal(beneath_check_names("x/.bernstein", 12, BENEATH_NO_BERNSTEIN, &d), -EPERM);
	assert_int_equal(beneath_check_names(".gitignore", 10, BENEATH_NO_GIT, &d), 0);
}

static void file_is(const char *rel, const char *want)
{
	char p[PATH_MAX * 2], buf[256] = {0};
	FILE *f;

	(void)snprintf(p, sizeof(p), "%s/%s", work, rel);
	f = fopen(p, "re");
	assert_non_null(f);
	(void)!fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f);
	assert_string_equal(buf, want);
}

static bool exists_in_work(const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;

	(void)snprintf(p, sizeof(p), "%s/%s", work, rel);
	return lstat(p, &st) == 0;
}

static void test_git_dir_refused(void **state)
{
	static const char *const git_paths[] = {
		".git/config",
		".git",
		".git/",
		"./.git/config",
		".GIT/config",
		".git./config",
		"git~1/config",
		".g\xe2\x80\x8cit/config",
		"sub/../.git/config",
		"a.txt/../.git/config",
		"gx/config",
		"gx2/config",
		"gcfg",
		"gnested/config",
		"nested/.git/config",
		"linked/.git",
		NULL,
	};
	static const char *const bern_paths[] = {".bernstein/state.db", "gbern/state.db",
						 ".BERNSTEIN/state.db", NULL};
	struct sbuf args = SBUF_INIT(SIZE_MAX);
	struct tool_outcome o;
	size_t i;

	(void)state;
	for (i = 0; git_paths[i]; i++) {
		read_denied(git_paths[i], "inside a git directory");
		sbuf_reset(&args);
		(void)sbuf_addf(&args, "{\"path\": \"%s\", \"content\": \"[core] fsmonitor = x\"}",
				git_paths[i]);
		o = call("write_file", args.buf);
		if (o.ok || !strstr(o.output, "inside a git directory"))
			fail_msg("write_file %s: %s", git_paths[i], o.output);
		tool_outcome_release(&o);
		sbuf_reset(&args);
		(void)sbuf_addf(&args, "{\"path\": \"%s\"}", git_paths[i]);
		o = call("list_dir", args.buf);
		assert_false(o.ok);
		tool_outcome_release(&o);
	}
	for (i = 0; bern_paths[i]; i++)
		read_denied(bern_paths[i], ".bernstein");
	/* new files and directories through a link into .git: nothing created */
	o = call("write_file", "{\"path\": \"gx/hooks/pre-commit\", \"content\": \"x\"}");
	assert_false(o.ok);
	tool_outcome_release(&o);
	o = call("write_file", "{\"path\": \"gx/newdir/f\", \"content\": \"x\"}");
	assert_false(o.ok);
	tool_outcome_release(&o);
	o = call("write_file", "{\"path\": \"gbern/new.db\", \"content\": \"x\"}");
	assert_false(o.ok);
	tool_outcome_release(&o);
	assert_false(exists_in_work(".git/hooks/pre-commit"));
	assert_false(exists_in_work(".git/newdir"));
	assert_false(exists_in_work(".bernstein/new.db"));
	file_is(".git/config", GIT_CONFIG);
	file_is("nested/.git/config", GIT_CONFIG);
	file_is(".bernstein/state.db", "STATE\n");
	/* the listing does not show them; files named like them are files */
	o = call("list_dir", "{}");
	assert_true(o.ok);
	assert_null(strstr(o.output, ".git/"));
	assert_null(strstr(o.output, ".bernstein"));
	assert_non_null(strstr(o.output, ".gitignore\n"));
	assert_non_null(strstr(o.output, "gx\n")); /* the link's own name */
	tool_outcome_release(&o);
	o = call("list_dir", "{\"path\": \"nested\"}");
	assert_true(o.ok);
	assert_string_equal(o.output, "");
	tool_outcome_release(&o);
	read_ok(".gitignore", "*.o");
	o = call("write_file", "{\"path\": \".gitignore\", \"content\": \"*.a\\n\"}");
	assert_true(o.ok);
	tool_outcome_release(&o);
	read_ok(".gitignore", "*.a");
	sbuf_release(&args);
}

static void test_git_dir_allowed(void **state)
{
	struct tools_config tc = {0};
	struct tools *t = NULL;
	struct tool_outcome o = {0};
	struct diag d = {0};

	(void)state;
	tc.workdir = work;
	tc.allow_git_dir = true;
	assert_int_equal(tools_open(&tc, &t, &d), 0);
	assert_int_equal(tools_call(t, "read_file", "{\"path\": \"gx/config\"}", &o), 0);
	assert_true(o.ok);
	assert_string_equal(o.output, GIT_CONFIG);
	tool_outcome_release(&o);
	assert_int_equal(tools_call(t, "write_file",
				    "{\"path\": \".git/description\", \"content\": \"d\\n\"}", &o),
			 0);
	assert_true(o.ok);
	tool_outcome_release(&o);
	file_is(".git/description", "d\n");
	assert_int_equal(tools_call(t, "list_dir", "{}", &o), 0);
	assert_non_null(strstr(o.output, ".git/\n"));
	assert_null(strstr(o.output, ".bernstein"));
	tool_outcome_release(&o);
	/* bernstein's own state stays refused */
	assert_int_equal(tools_call(t, "read_file", "{\"path\": \".bernstein/state.db\"}", &o), 0);
	assert_false(o.ok);
	tool_outcome_release(&o);
	t = tools_free(t);
}

/* ---- run_command leaves nothing behind ----------------------------------- */

/* Processes whose argv holds marker (read from /proc/PID/cmdline). */
static unsigned marked(const char *marker)
{
	struct dirent *de;
	unsigned n = 0;
	DIR *d = opendir("/proc");

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char p[300], buf[4096];
		ssize_t len, i;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		(void)snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		(void)close(fd);
		if (len <= 0)
			continue;
		for (i = 0; i < len; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[len] = '\0';
		if (strstr(buf, marker))
			n++;
	}
	(void)closedir(d);
	return n;
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void test_run_command_reaps(void **state)
{
	static const char *const env[] = {"PATH=/usr/bin:/bin", NULL};
	const char *fake = getenv("FAKE_AGENT");
	struct tools_config tc = {0};
	struct tools *t = NULL;
	struct tool_outcome o = {0};
	struct diag d = {0};
	char dir[PATH_MAX], path_env[PATH_MAX + 32], beat[PATH_MAX * 2], args[PATH_MAX * 3];
	struct timespec ts = {0, 100 * 1000000};
	const char *slash;
	off_t before;

	(void)state;
	if (!fake || !(slash = strrchr(fake, '/'))) {
		skip();
		return;
	}
	(void)snprintf(dir, sizeof(dir), "%.*s", (int)(slash - fake), fake);
	(void)snprintf(path_env, sizeof(path_env), "%s:/usr/bin:/bin", dir);
	tc.workdir = work;
	tc.allow_run_command = true;
	tc.path_env = path_env;
	tc.cmd_env = env;
	tc.cmd_timeout_ms = 1000;
	assert_int_equal(tools_open(&tc, &t, &d), 0);

	/* a double fork, setsid, TERM ignored: gone when the tool returns */
	(void)snprintf(beat, sizeof(beat), "%s/beat-ended", root);
	(void)snprintf(args, sizeof(args), "{\"argv\": [\"fake-agent\", \"daemon\", \"%s\"]}",
		       beat);
	assert_int_equal(tools_call(t, "run_command", args, &o), 0);
	assert_true(o.ok);
	tool_outcome_release(&o);
	assert_int_equal(marked(beat), 0);
	before = size_of(beat);
	(void)nanosleep(&ts, NULL); /* observing: the file no longer grows */
	assert_true(size_of(beat) == before);

	/* the same from a command that is killed at its timeout */
	(void)snprintf(beat, sizeof(beat), "%s/beat-timeout", root);
	(void)snprintf(args, sizeof(args),
		       "{\"argv\": [\"fake-agent\", \"daemon\", \"%s\", \"sleep\", \"60000\"]}",
		       beat);
	assert_int_equal(tools_call(t, "run_command", args, &o), 0);
	assert_false(o.ok);
	assert_true(json_is_true(json_object_get(o.details, "timed_out")));
	tool_outcome_release(&o);
	assert_int_equal(marked(beat), 0);
	before = size_of(beat);
	(void)nanosleep(&ts, NULL);
	assert_true(size_of(beat) == before);
	t = tools_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_legitimate_paths),     cmocka_unit_test(test_escapes_read),
		cmocka_unit_test(test_escapes_odd_names),    cmocka_unit_test(test_escapes_write),
		cmocka_unit_test(test_symlink_race),	     cmocka_unit_test(test_rexec_names),
		cmocka_unit_test(test_rexec_resolve),	     cmocka_unit_test(test_run_command),
		cmocka_unit_test(test_run_command_withheld), cmocka_unit_test(test_git_names),
		cmocka_unit_test(test_git_dir_refused),	     cmocka_unit_test(test_git_dir_allowed),
		cmocka_unit_test(test_run_command_reaps),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
