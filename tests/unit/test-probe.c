/* proc/probe: PATH search, ANSI stripping, and bounded probes of real child
 * processes. The fake binaries are small #!/bin/sh scripts generated into a
 * temp dir at setup; PATH for the probes is that dir plus /usr/bin:/bin. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/probe.h"
#include "util/clock.h"

static char tmp[64];
static char path_env[256];

/* ---- helpers ---------------------------------------------------------------- */

static void tpath(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", tmp, name);

	assert_true(n > 0 && (size_t)n < size);
}

static void write_file(const char *name, const void *data, size_t len, mode_t mode)
{
	char p[256];
	FILE *f;

	tpath(p, sizeof(p), name);
	f = fopen(p, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, mode), 0);
}

/* A #!/bin/sh script; "@D@" in body is replaced by the temp dir. */
static void write_script(const char *name, const char *body)
{
	char text[4096];
	size_t o = 0;
	const char *b;
	int n;

	n = snprintf(text, sizeof(text), "#!/bin/sh\n");
	o = (size_t)n;
	for (b = body; *b; b++) {
		if (strncmp(b, "@D@", 3) == 0) {
			n = snprintf(text + o, sizeof(text) - o, "%s", tmp);
			assert_true(n > 0 && (size_t)n < sizeof(text) - o);
			o += (size_t)n;
			b += 2;
			continue;
		}
		assert_true(o + 1 < sizeof(text));
		text[o++] = *b;
	}
	text[o] = '\0';
	write_file(name, text, o, 0755);
}

static uint64_t mono_now(void)
{
	return clock_system()->mono_ms(clock_system());
}

static void nap_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	(void)closedir(d);
	return n;
}

static pid_t read_pidfile(const char *name)
{
	char p[256], buf[32] = {0};
	FILE *f;
	long v;

	tpath(p, sizeof(p), name);
	f = fopen(p, "re");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	(void)fclose(f);
	v = strtol(buf, NULL, 10);
	assert_true(v > 1);
	return (pid_t)v;
}

/* Gone or a zombie (killed, waiting for init to reap it). */
static bool pid_dead(pid_t pid)
{
	char p[64], buf[512];
	FILE *f;
	char *rp;
	bool dead;

	(void)snprintf(p, sizeof(p), "/proc/%ld/stat", (long)pid);
	f = fopen(p, "re");
	if (!f)
		return true;
	if (!fgets(buf, sizeof(buf), f)) {
		(void)fclose(f);
		return true;
	}
	(void)fclose(f);
	rp = strrchr(buf, ')');
	dead = !rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X';
	return dead;
}

/* Poll with a deadline: true once pid is dead. */
static bool wait_dead(pid_t pid, uint64_t ms)
{
	uint64_t end = mono_now() + ms;

	while (mono_now() < end) {
		if (pid_dead(pid))
			return true;
		nap_ms(10);
	}
	return pid_dead(pid);
}

/* Copy the blank-delimited word following key in s (which must be there). */
static void word_after(const char *s, const char *key, char *buf, size_t size)
{
	const char *p = strstr(s, key);
	size_t n = 0;

	assert_non_null(p);
	p += strlen(key);
	while (p[n] && !strchr(" \t\n", p[n]))
		n++;
	assert_true(n > 0 && n < size);
	memcpy(buf, p, n);
	buf[n] = '\0';
}

static long num_after(const char *s, const char *key)
{
	char w[32], *end;
	long v;

	word_after(s, key, w, sizeof(w));
	errno = 0;
	v = strtol(w, &end, 10);
	assert_int_equal(errno, 0);
	assert_int_equal(*end, '\0');
	return v;
}

static void probe1(struct probe *p, const char *bin, const char *const *args,
		   const struct probe_opts *o)
{
	memset(p, 0, sizeof(*p));
	p->binary = bin;
	p->args = args;
	assert_int_equal(probe_run(p, 1, o), 0);
	assert_non_null(p->output);
	assert_int_equal(p->output[p->output_len], '\0');
}

static struct probe_opts opts(void)
{
	struct probe_opts o = {.path_env = path_env, .timeout_ms = 5000};

	return o;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	static const unsigned char junk[] = {0x00, 0x01, 0x02, 0xfe, 0xff, 0x13, 0x37, 0x42,
					     0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70};
	char p[256];

	(void)state;
	(void)snprintf(tmp, sizeof(tmp), "/tmp/bernstein-probe-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	(void)snprintf(path_env, sizeof(path_env), "%s:/usr/bin:/bin", tmp);
	tpath(p, sizeof(p), "sub");
	if (mkdir(p, 0755) < 0)
		return -1;
	tpath(p, sizeof(p), "bp-dir");
	if (mkdir(p, 0755) < 0)
		return -1;

	write_script("bp-ok", "echo 'tool 1.2.3'\n");
	write_script("sub/bp-ok", "echo 'shadowed'\n");
	write_script("sub/bp-dir", "echo 'from sub'\n");
	write_script("sub/bp-noexec2", "echo 'from sub'\n");
	write_file("bp-noexec", "#!/bin/sh\necho no\n", 18, 0644);
	write_file("bp-noexec2", "#!/bin/sh\necho no\n", 18, 0644);
	write_file("bp-junk", junk, sizeof(junk), 0755);
	write_script("bp-argv", "echo \"argc=$# 1=$1 2=$2 0=$0\"\n");
	write_script("bp-ansi", "printf '\\n  \\n\\033[1;32mtool\\033[0m v2.0.1\\r\\n' >&2\n");
	write_script("bp-exit3", "echo 'error: unknown flag' >&2\nexit 3\n");
	write_script("bp-segv", "ulimit -c 0\nkill -SEGV $$\necho unreachable\n");
	write_script("bp-hang", "trap '' TERM\n/bin/sleep 30 &\necho $! > @D@/hang.pid\n"
				"echo started\nwait\n");
	write_script("bp-slow", "echo started\nexec /bin/sleep 30\n");
	write_script("bp-gc", "/bin/sleep 30 &\necho $! > @D@/gc.pid\necho 'tool 9'\nexit 0\n");
	/* wait (bounded) until the grandchild has its own session, so it is
	 * not caught by the group kill at exit while still in our group */
	write_script("bp-escape", "/usr/bin/setsid /bin/sleep 30 &\ngc=$!\necho $gc > @D@/esc.pid\n"
				  "i=0\nwhile [ $i -lt 500 ]; do\n"
				  "  read -r l < /proc/$gc/stat; set -- $l\n"
				  "  [ \"$6\" = \"$gc\" ] && break\n"
				  "  /bin/sleep 0.01; i=$((i + 1))\ndone\n"
				  "echo 'tool 10'\nexit 0\n");
	write_script("bp-flood", "/usr/bin/head -c 10000000 /dev/zero | /usr/bin/tr '\\0' x\n"
				 "echo done >&2\n");
	write_script("bp-par", ": > @D@/run.$$\n/bin/sleep 0.1\nset -- @D@/run.*\nn=$#\n"
			       "/bin/rm -f @D@/run.$$\necho \"n=$n\"\n");
	write_script(
		"bp-env",
		"echo \"secret=[$SECRET] ci=[$CI] term=[$TERM] lang=[$LANG] nocolor=[$NO_COLOR] foo=[$FOO] home=[$HOME]\"\n");
	write_script("bp-path", "echo \"path=[$PATH]\"\n");
	write_script(
		"bp-ids",
		"read -r line < /proc/$$/stat\nset -- $line\n"
		"if [ -e /proc/$$/fd/200 ]; then fd=leaked; else fd=closed; fi\n"
		"echo \"pid=$$ pgrp=$5 sid=$6 fd200=$fd stdin=$(/usr/bin/readlink /proc/$$/fd/0)\"\n"
		"while read -r k v; do case $k in SigBlk:|SigIgn:) echo \"$k $v\";; esac; done < /proc/$$/status\n");
	write_script("bp-silent", "exit 0\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- path_search -------------------------------------------------------------- */

static void test_path_found_first_wins(void **state)
{
	char want[256], pe[512], *r = NULL;

	(void)state;
	tpath(want, sizeof(want), "bp-ok");
	(void)snprintf(pe, sizeof(pe), "/nonexistent:%s:%s/sub", tmp, tmp);
	assert_int_equal(path_search("bp-ok", pe, &r), 0);
	assert_string_equal(r, want);
	free(r);
	/* a trailing '/' in an element does not double up */
	(void)snprintf(pe, sizeof(pe), "%s/", tmp);
	assert_int_equal(path_search("bp-ok", pe, &r), 0);
	assert_string_equal(r, want);
	free(r);
}

static void test_path_not_found(void **state)
{
	char *r = NULL;

	(void)state;
	assert_int_equal(path_search("bp-missing", path_env, &r), -ENOENT);
	assert_null(r);
	assert_int_equal(path_search("bp-ok", "/nonexistent:/also/not", &r), -ENOENT);
	assert_null(r);
	assert_int_equal(path_search("", path_env, &r), -EINVAL);
	assert_null(r);
}

static void test_path_non_executable(void **state)
{
	char pe[512], want[256], *r = NULL;

	(void)state;
	assert_int_equal(path_search("bp-noexec", path_env, &r), -EACCES);
	assert_null(r);
	/* a non-executable match does not stop the search */
	(void)snprintf(pe, sizeof(pe), "%s:%s/sub", tmp, tmp);
	tpath(want, sizeof(want), "sub/bp-noexec2");
	assert_int_equal(path_search("bp-noexec2", pe, &r), 0);
	assert_string_equal(r, want);
	free(r);
}

static void test_path_directory_skipped(void **state)
{
	char pe[512], want[256], *r = NULL;

	(void)state;
	(void)snprintf(pe, sizeof(pe), "%s:%s/sub", tmp, tmp);
	tpath(want, sizeof(want), "sub/bp-dir");
	assert_int_equal(path_search("bp-dir", pe, &r), 0);
	assert_string_equal(r, want);
	free(r);
	r = NULL;
	/* only a directory: not found (not "not executable") */
	assert_int_equal(path_search("bp-dir", tmp, &r), -ENOENT);
	assert_null(r);
}

static void test_path_empty(void **state)
{
	char cwd[4096], *r = NULL;

	(void)state;
	assert_int_equal(path_search("bp-ok", "", &r), -ENOENT);
	assert_int_equal(path_search("bp-ok", NULL, &r), -ENOENT);
	assert_null(r);

	/* an empty element is the current directory */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(tmp), 0);
	assert_int_equal(path_search("bp-ok", "/nonexistent:", &r), 0);
	assert_string_equal(r, "./bp-ok");
	free(r);
	assert_int_equal(path_search("bp-ok", "::/nonexistent", &r), 0);
	assert_string_equal(r, "./bp-ok");
	free(r);
	assert_int_equal(chdir(cwd), 0);
}

static void test_path_with_slash(void **state)
{
	char p[256], *r = NULL;

	(void)state;
	tpath(p, sizeof(p), "bp-ok");
	assert_int_equal(path_search(p, NULL, &r), 0); /* PATH not consulted */
	assert_string_equal(r, p);
	free(r);
	r = NULL;
	tpath(p, sizeof(p), "bp-noexec");
	assert_int_equal(path_search(p, path_env, &r), -EACCES);
	tpath(p, sizeof(p), "bp-dir");
	assert_int_equal(path_search(p, path_env, &r), -EACCES);
	tpath(p, sizeof(p), "bp-missing");
	assert_int_equal(path_search(p, path_env, &r), -ENOENT);
	/* "sub/bp-ok" is relative to the cwd, not searched on PATH */
	assert_int_equal(path_search("sub/bp-ok", path_env, &r), -ENOENT);
	assert_null(r);
}

/* ---- ansi_strip --------------------------------------------------------------- */

static void check_strip(const char *in, size_t inlen, const char *want)
{
	char buf[256];
	size_t n;

	assert_true(inlen < sizeof(buf));
	memcpy(buf, in, inlen);
	buf[inlen] = 'Z'; /* ansi_strip NUL-terminates at the new length */
	n = ansi_strip(buf, inlen);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(buf, want, n);
	assert_int_equal(buf[n], '\0');
}

#define STRIP(in, want) check_strip((in), sizeof(in) - 1, (want))

static void test_ansi_strip(void **state)
{
	(void)state;
	STRIP("plain text", "plain text");
	STRIP("", "");
	STRIP("\033[1;32mgreen\033[0m", "green");
	STRIP("\033[38;5;196mX\033[m Y", "X Y");
	STRIP("a\033[2Kb\033[?25hc", "abc");
	STRIP("\033]0;window title\007text", "text");
	STRIP("\033]8;;http://x.y/\033\\link\033]8;;\033\\", "link");
	STRIP("a\033=b\033>c\033Md", "abcd");
	STRIP("\033(Bx\033)0y", "xy");	       /* charset designation (nF) */
	STRIP("50%\r100%\r\n", "50%100%\r\n"); /* lone CR dropped, CRLF kept */
	STRIP("abc\033", "abc");	       /* trailing lone ESC */
	STRIP("abc\033[12;3", "abc");	       /* unterminated CSI */
	STRIP("a\033[1\nb", "a\nb");	       /* CSI aborted by a control byte */
	STRIP("x\033]unterminated", "x");      /* unterminated OSC runs to the end */
	STRIP("\033P1$r0m\033\\ok", "ok");     /* DCS */
	STRIP("caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"); /* UTF-8 untouched */
	assert_int_equal(ansi_strip(NULL, 0), 0);
}

static void test_status_names(void **state)
{
	int i, j;

	(void)state;
	for (i = 0; i < _PROBE_STATUS_MAX; i++) {
		assert_non_null(probe_status_name((enum probe_status)i));
		assert_string_not_equal(probe_status_name((enum probe_status)i), "invalid");
		for (j = 0; j < i; j++)
			assert_string_not_equal(probe_status_name((enum probe_status)i),
						probe_status_name((enum probe_status)j));
	}
	assert_string_equal(probe_status_name(_PROBE_STATUS_MAX), "invalid");
	assert_string_equal(probe_status_name(PROBE_OK), "ok");
	assert_string_equal(probe_status_name(PROBE_TIMED_OUT), "timed-out");
}

/* ---- probe_run ---------------------------------------------------------------- */

static void test_probe_ok(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	char want[256];

	(void)state;
	probe1(&p, "bp-ok", NULL, &o);
	assert_int_equal(p.status, PROBE_OK);
	assert_int_equal(p.exit_code, 0);
	assert_string_equal(p.first_line, "tool 1.2.3");
	assert_string_equal(p.output, "tool 1.2.3\n");
	assert_int_equal(p.output_len, 11);
	assert_false(p.output_truncated);
	tpath(want, sizeof(want), "bp-ok");
	assert_string_equal(p.resolved, want);
	probe_release(&p);
	assert_null(p.output);
	assert_null(p.first_line);
	assert_null(p.resolved);
	probe_release(&p); /* idempotent */
	probe_release(NULL);
}

static void test_probe_argv(void **state)
{
	static const char *const args[] = {"-V", "two words", NULL};
	struct probe_opts o = opts();
	struct probe p;
	char want[512];

	(void)state;
	probe1(&p, "bp-argv", NULL, &o);
	(void)snprintf(want, sizeof(want), "argc=1 1=--version 2= 0=%s/bp-argv", tmp);
	assert_string_equal(p.first_line, want);
	probe_release(&p);

	probe1(&p, "bp-argv", args, &o);
	(void)snprintf(want, sizeof(want), "argc=2 1=-V 2=two words 0=%s/bp-argv", tmp);
	assert_string_equal(p.first_line, want);
	probe_release(&p);
}

static void test_probe_ansi_stderr(void **state)
{
	struct probe_opts o = opts();
	struct probe p;

	(void)state;
	probe1(&p, "bp-ansi", NULL, &o);
	assert_int_equal(p.status, PROBE_OK);
	assert_string_equal(p.first_line, "tool v2.0.1");
	/* the raw output keeps the escapes */
	assert_non_null(strstr(p.output, "\033[1;32m"));
	probe_release(&p);
}

static void test_probe_exit_nonzero(void **state)
{
	struct probe_opts o = opts();
	struct probe p;

	(void)state;
	probe1(&p, "bp-exit3", NULL, &o);
	assert_int_equal(p.status, PROBE_EXIT_NONZERO);
	assert_int_equal(p.exit_code, 3);
	assert_string_equal(p.first_line, "error: unknown flag");
	probe_release(&p);
}

static void test_probe_signaled(void **state)
{
	struct probe_opts o = opts();
	struct probe p;

	(void)state;
	probe1(&p, "bp-segv", NULL, &o);
	assert_int_equal(p.status, PROBE_SIGNALED);
	assert_int_equal(p.term_signal, SIGSEGV);
	assert_null(p.first_line); /* no output at all */
	assert_int_equal(p.output_len, 0);
	probe_release(&p);
}

static void test_probe_timeout_term_ignored(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	uint64_t t0 = mono_now(), wall;
	pid_t gc;

	(void)state;
	o.timeout_ms = 300;
	probe1(&p, "bp-hang", NULL, &o);
	wall = mono_now() - t0;
	assert_int_equal(p.status, PROBE_TIMED_OUT);
	assert_int_equal(p.term_signal, SIGKILL); /* TERM ignored: escalated */
	assert_true(p.elapsed_ms >= 300 + 500);
	assert_true(wall < 10000);
	assert_string_equal(p.first_line, "started");
	/* the whole group went: the backgrounded sleep too */
	gc = read_pidfile("hang.pid");
	assert_true(wait_dead(gc, 5000));
	probe_release(&p);
}

static void test_probe_timeout_term(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	uint64_t t0 = mono_now();

	(void)state;
	o.timeout_ms = 300;
	probe1(&p, "bp-slow", NULL, &o);
	assert_int_equal(p.status, PROBE_TIMED_OUT);
	assert_int_equal(p.term_signal, SIGTERM);
	assert_true(p.elapsed_ms >= 300);
	assert_true(mono_now() - t0 < 10000);
	assert_string_equal(p.first_line, "started");
	probe_release(&p);
}

static uint64_t fake_ms;

static uint64_t fake_mono(const struct clock *c)
{
	(void)c;
	fake_ms += 1000; /* time flies: every reading is a second later */
	return fake_ms;
}

static void test_probe_uses_injected_clock(void **state)
{
	struct clock ck = {.mono_ms = fake_mono};
	struct probe_opts o = opts();
	struct probe p;
	uint64_t t0 = mono_now();

	(void)state;
	o.clock = &ck;
	o.timeout_ms = 10000; /* ten fake seconds pass in a few loop turns */
	probe1(&p, "bp-slow", NULL, &o);
	assert_int_equal(p.status, PROBE_TIMED_OUT);
	assert_true(p.elapsed_ms >= 10000);
	assert_true(mono_now() - t0 < 5000); /* the real clock would still be waiting */
	probe_release(&p);
}

static void test_probe_grandchild_killed(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	uint64_t t0 = mono_now();
	pid_t gc;

	(void)state;
	probe1(&p, "bp-gc", NULL, &o);
	assert_int_equal(p.status, PROBE_OK);
	assert_string_equal(p.first_line, "tool 9");
	assert_true(mono_now() - t0 < 10000);
	gc = read_pidfile("gc.pid");
	assert_true(wait_dead(gc, 5000));
	probe_release(&p);
}

static void test_probe_escaped_grandchild_not_waited_for(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	uint64_t t0 = mono_now(), wall;
	pid_t gc;

	(void)state;
	probe1(&p, "bp-escape", NULL, &o);
	wall = mono_now() - t0;
	gc = read_pidfile("esc.pid");
	/* it left our process group, still holds stdout, and is still alive:
	 * the probe returned because the drain time was up, not at EOF */
	assert_false(pid_dead(gc));
	(void)kill(gc, SIGKILL);
	assert_int_equal(p.status, PROBE_OK);
	assert_string_equal(p.first_line, "tool 10");
	assert_true(wall < 10000);
	assert_true(p.elapsed_ms < 5000);
	assert_true(wait_dead(gc, 5000));
	probe_release(&p);
}

static void test_probe_flood_truncated(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	uint64_t t0 = mono_now();
	size_t i;

	(void)state;
	o.max_output = 4096;
	probe1(&p, "bp-flood", NULL, &o);
	assert_int_equal(p.status, PROBE_OK);
	assert_true(p.output_truncated);
	/* 4096 bytes of stdout, a separating newline, then stderr */
	assert_int_equal(p.output_len, 4096 + 1 + 5);
	for (i = 0; i < 4096; i++)
		assert_int_equal(p.output[i], 'x');
	assert_string_equal(p.output + 4096, "\ndone\n");
	assert_true(mono_now() - t0 < 10000);
	probe_release(&p);
}

static void test_probe_parallel(void **state)
{
	enum { N = 40 };
	struct probe_opts o = opts();
	struct probe p[N];
	uint64_t t0 = mono_now(), wall;
	int i, maxn = 0;

	(void)state;
	o.max_parallel = 8;
	memset(p, 0, sizeof(p));
	for (i = 0; i < N; i++)
		p[i].binary = "bp-par";
	assert_int_equal(probe_run(p, N, &o), 0);
	wall = mono_now() - t0;
	for (i = 0; i < N; i++) {
		int n;

		assert_int_equal(p[i].status, PROBE_OK);
		assert_non_null(p[i].first_line);
		n = (int)num_after(p[i].first_line, "n=");
		/* each script counted the marker files of the scripts alive with it */
		assert_true(n >= 1 && n <= 8);
		if (n > maxn)
			maxn = n;
		probe_release(&p[i]);
	}
	assert_true(maxn >= 2); /* they did run concurrently */
	/* 40 runs of 100 ms, at most 8 at a time: at least 5 rounds */
	assert_true(wall >= 500);
	assert_true(wall < 10000);
}

static void test_probe_enoexec(void **state)
{
	struct probe_opts o = opts();
	struct probe p;

	(void)state;
	/* glibc's posix_spawn has no shell fallback: ENOEXEC comes back from
	 * the call itself, so this is a spawn failure, not an exit code 127 */
	probe1(&p, "bp-junk", NULL, &o);
	assert_int_equal(p.status, PROBE_SPAWN_FAILED);
	assert_int_equal(p.spawn_errno, ENOEXEC);
	assert_non_null(p.resolved);
	assert_null(p.first_line);
	probe_release(&p);
}

static void test_probe_not_found_and_not_executable(void **state)
{
	struct probe_opts o = opts();
	struct probe p[3];
	uint64_t t0 = mono_now();

	(void)state;
	memset(p, 0, sizeof(p));
	p[0].binary = "bp-missing";
	p[1].binary = "bp-noexec";
	p[2].binary = NULL;
	assert_int_equal(probe_run(p, 3, &o), 0);
	assert_int_equal(p[0].status, PROBE_NOT_FOUND);
	assert_null(p[0].resolved);
	assert_string_equal(p[0].output, "");
	assert_null(p[0].first_line);
	assert_int_equal(p[1].status, PROBE_SPAWN_FAILED);
	assert_int_equal(p[1].spawn_errno, EACCES);
	assert_int_equal(p[2].status, PROBE_NOT_FOUND);
	assert_true(mono_now() - t0 < 1000); /* nothing was spawned or waited for */
	probe_release(&p[0]);
	probe_release(&p[1]);
	probe_release(&p[2]);

	/* no PATH at all */
	o.path_env = NULL;
	probe1(&p[0], "bp-ok", NULL, &o);
	assert_int_equal(p[0].status, PROBE_NOT_FOUND);
	probe_release(&p[0]);
}

static void test_probe_env_default(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	char want[512];

	(void)state;
	assert_int_equal(setenv("SECRET", "hunter2", 1), 0);
	assert_int_equal(setenv("FOO", "parent", 1), 0);
	probe1(&p, "bp-env", NULL, &o);
	assert_string_equal(
		p.first_line,
		"secret=[] ci=[1] term=[dumb] lang=[C.UTF-8] nocolor=[1] foo=[] home=[]");
	probe_release(&p);
	probe1(&p, "bp-path", NULL, &o);
	(void)snprintf(want, sizeof(want), "path=[%s]", path_env);
	assert_string_equal(p.first_line, want);
	probe_release(&p);
	(void)unsetenv("SECRET");
	(void)unsetenv("FOO");
}

static void test_probe_env_given(void **state)
{
	static const char *const env[] = {"FOO=bar", "HOME=/somewhere", NULL};
	struct probe_opts o = opts();
	struct probe p;

	(void)state;
	assert_int_equal(setenv("SECRET", "hunter2", 1), 0);
	o.env = env;
	probe1(&p, "bp-env", NULL, &o);
	assert_string_equal(
		p.first_line,
		"secret=[] ci=[] term=[] lang=[] nocolor=[] foo=[bar] home=[/somewhere]");
	probe_release(&p);
	(void)unsetenv("SECRET");
}

static void test_probe_child_isolation(void **state)
{
	struct probe_opts o = opts();
	struct probe p;
	sigset_t block, old;
	struct sigaction ign = {.sa_handler = SIG_IGN}, oldsa;
	long pid, pgrp, sid;
	char fd200[16], stdin_path[64], blk[32], ignl[32];
	int fd;

	(void)state;
	/* a parent fd without CLOEXEC, a blocked and an ignored signal */
	fd = dup2(0, 200);
	assert_int_equal(fd, 200);
	(void)sigemptyset(&block);
	(void)sigaddset(&block, SIGUSR1);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old), 0);
	assert_int_equal(sigaction(SIGUSR2, &ign, &oldsa), 0);

	probe1(&p, "bp-ids", NULL, &o);

	assert_int_equal(sigaction(SIGUSR2, &oldsa, NULL), 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	(void)close(fd);

	assert_int_equal(p.status, PROBE_OK);
	pid = num_after(p.output, "pid=");
	pgrp = num_after(p.output, "pgrp=");
	sid = num_after(p.output, "sid=");
	word_after(p.output, "fd200=", fd200, sizeof(fd200));
	word_after(p.output, "stdin=", stdin_path, sizeof(stdin_path));
	word_after(p.output, "SigBlk: ", blk, sizeof(blk));
	word_after(p.output, "SigIgn: ", ignl, sizeof(ignl));
	assert_true(pid > 1);
	assert_int_equal(pgrp, pid); /* own process group ... */
	assert_int_equal(sid, pid);  /* ... and session */
	assert_string_equal(fd200, "closed");
	assert_string_equal(stdin_path, "/dev/null");
	assert_string_equal(blk, "0000000000000000");
	/* glibc 2.36's posix_spawn leaves its two internal signals (32 SIGCANCEL,
	 * 33 SIGSETXID: bits 31 and 32) at SIG_IGN in the child; a glibc program
	 * reinstalls them at start-up. Every other signal must be at default,
	 * SIGUSR2 in particular. */
	assert_int_equal(strtoull(ignl, NULL, 16) & ~0x180000000ULL, 0);
	probe_release(&p);
}

static void test_probe_no_fd_leak(void **state)
{
	static const char *const bins[] = {"bp-ok",   "bp-missing", "bp-junk",	 "bp-noexec",
					   "bp-slow", "bp-gc",	    "bp-silent", "bp-exit3"};
	enum { N = sizeof(bins) / sizeof(bins[0]) };
	struct probe_opts o = opts();
	struct probe p[N];
	int before, after;
	size_t i;

	(void)state;
	memset(p, 0, sizeof(p));
	for (i = 0; i < N; i++)
		p[i].binary = bins[i];
	o.timeout_ms = 200;
	o.max_parallel = 3;
	before = count_fds();
	assert_int_equal(probe_run(p, N, &o), 0);
	after = count_fds();
	assert_int_equal(before, after);
	assert_int_equal(p[0].status, PROBE_OK);
	assert_int_equal(p[1].status, PROBE_NOT_FOUND);
	assert_int_equal(p[2].status, PROBE_SPAWN_FAILED);
	assert_int_equal(p[3].status, PROBE_SPAWN_FAILED);
	assert_int_equal(p[4].status, PROBE_TIMED_OUT);
	assert_int_equal(p[5].status, PROBE_OK);
	assert_int_equal(p[6].status, PROBE_OK);
	assert_null(p[6].first_line);
	assert_int_equal(p[7].status, PROBE_EXIT_NONZERO);
	for (i = 0; i < N; i++)
		probe_release(&p[i]);
}

static void test_probe_run_args(void **state)
{
	(void)state;
	assert_int_equal(probe_run(NULL, 0, NULL), 0);
	assert_int_equal(probe_run(NULL, 1, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_found_first_wins),
		cmocka_unit_test(test_path_not_found),
		cmocka_unit_test(test_path_non_executable),
		cmocka_unit_test(test_path_directory_skipped),
		cmocka_unit_test(test_path_empty),
		cmocka_unit_test(test_path_with_slash),
		cmocka_unit_test(test_ansi_strip),
		cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_probe_ok),
		cmocka_unit_test(test_probe_argv),
		cmocka_unit_test(test_probe_ansi_stderr),
		cmocka_unit_test(test_probe_exit_nonzero),
		cmocka_unit_test(test_probe_signaled),
		cmocka_unit_test(test_probe_timeout_term_ignored),
		cmocka_unit_test(test_probe_timeout_term),
		cmocka_unit_test(test_probe_uses_injected_clock),
		cmocka_unit_test(test_probe_grandchild_killed),
		cmocka_unit_test(test_probe_escaped_grandchild_not_waited_for),
		cmocka_unit_test(test_probe_flood_truncated),
		cmocka_unit_test(test_probe_parallel),
		cmocka_unit_test(test_probe_enoexec),
		cmocka_unit_test(test_probe_not_found_and_not_executable),
		cmocka_unit_test(test_probe_env_default),
		cmocka_unit_test(test_probe_env_given),
		cmocka_unit_test(test_probe_child_isolation),
		cmocka_unit_test(test_probe_no_fd_leak),
		cmocka_unit_test(test_probe_run_args),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
