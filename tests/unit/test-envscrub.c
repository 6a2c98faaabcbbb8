/* util/envscrub.c and cli_environ_take(): the copy is exact, the original
 * strings are zeroed, and in a real process (this test re-executed with a
 * canary in its environment) /proc/PID/environ shows only NUL bytes, getenv()
 * still finds the variables, and the process and a fork of it (as the group
 * keeper is) are not dumpable. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "util/envscrub.h"

#define CANARY	   "canary-envscrub-5f1c0e"
#define CHILD_FLAG "--scrub-child"

static void assert_zeroed(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(p[i], 0);
}

static void test_copy_and_zero(void **state)
{
	char a[] = "PATH=/usr/bin:/bin", b[] = "SECRET_TOKEN=" CANARY, c[] = "PATH=/other";
	char d[] = "no-equals-sign", e[] = "";
	char *envp[] = {a, b, c, d, e, NULL};
	char *const before[] = {a, b, c, d, e};
	char **copy;
	size_t i;

	(void)state;
	copy = envscrub_take(envp);
	assert_string_equal(copy[0], "PATH=/usr/bin:/bin");
	assert_string_equal(copy[1], "SECRET_TOKEN=" CANARY);
	assert_string_equal(copy[2], "PATH=/other"); /* duplicates kept, in order */
	assert_string_equal(copy[3], "no-equals-sign");
	assert_string_equal(copy[4], "");
	assert_null(copy[5]);
	for (i = 0; i < 5; i++) {
		assert_ptr_equal(envp[i], before[i]); /* the array is left alone */
		assert_true(copy[i] != envp[i]);
	}
	assert_zeroed(a, sizeof(a));
	assert_zeroed(b, sizeof(b));
	assert_zeroed(c, sizeof(c));
	assert_zeroed(d, sizeof(d));
	free(copy); /* one allocation */
}

static void test_empty(void **state)
{
	char *none[] = {NULL};
	char **copy;

	(void)state;
	copy = envscrub_take(NULL);
	assert_null(copy[0]);
	free(copy);
	copy = envscrub_take(none);
	assert_null(copy[0]);
	free(copy);
}

/* One entry pointing into another: both copied whole before anything is
 * zeroed, and all of it zeroed. */
static void test_overlap(void **state)
{
	char block[] = "A=xB=y";
	char *envp[] = {block + 3, block, NULL};
	char **copy;

	(void)state;
	copy = envscrub_take(envp);
	assert_string_equal(copy[0], "B=y");
	assert_string_equal(copy[1], "A=xB=y");
	assert_zeroed(block, sizeof(block));
	free(copy);
}

static size_t read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n < size) {
		ssize_t r = read(fd, buf + n, size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	return n;
}

/* What a child of bernstein sees of /proc/pid/environ: as root (who may read
 * a non-dumpable process's entries) only NUL bytes, as another uid nothing. */
static void assert_environ_hidden(pid_t pid)
{
	char path[64], buf[65536];
	size_t n;
	int fd;

	(void)snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		assert_int_not_equal(geteuid(), 0);
		assert_int_equal(errno, EACCES);
		return;
	}
	n = read_all(fd, buf, sizeof(buf));
	(void)close(fd);
	assert_true(n >= sizeof("SECRET_TOKEN=" CANARY));
	assert_null(memmem(buf, n, CANARY, strlen(CANARY)));
	assert_zeroed(buf, n);
}

static void test_process(void **state)
{
	static const char *const pass[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
	static char exe[] = "/proc/self/exe", flag[] = CHILD_FLAG;
	static char path[] = "PATH=/usr/bin:/bin", secret[] = "SECRET_TOKEN=" CANARY,
		    tz[] = "TZ=UTC";
	char *argv[] = {exe, flag, NULL};
	char *envp[8] = {path, secret, tz};
	char line[64];
	int in[2], out[2], st;
	long grandchild = 0;
	size_t i, ne = 3, n;
	pid_t pid;

	(void)state;
	for (i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
		const char *v = getenv(pass[i]);
		char *kv;

		if (!v)
			continue;
		kv = malloc(strlen(pass[i]) + strlen(v) + 2);
		assert_non_null(kv);
		(void)snprintf(kv, strlen(pass[i]) + strlen(v) + 2, "%s=%s", pass[i], v);
		envp[ne++] = kv;
	}
	envp[ne] = NULL;
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)dup2(in[0], 0);
		(void)dup2(out[1], 1);
		(void)execve(argv[0], argv, envp);
		_exit(127);
	}
	(void)close(in[0]);
	(void)close(out[1]);
	n = read_all(out[0], line, sizeof(line) - 1);
	line[n] = '\0';
	assert_int_equal(sscanf(line, "ready %ld", &grandchild), 1);
	assert_environ_hidden(pid);
	assert_environ_hidden((pid_t)grandchild);
	(void)close(in[1]); /* the child and its fork exit */
	(void)close(out[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (i = 3; i < ne; i++)
		free(envp[i]);
}

/* The re-executed test: take the environment as bernstein's main() does,
 * check what must still work, fork once, report "ready PID" (and close
 * stdout), wait for EOF on stdin. Exit 0 when all held. */
static int child_main(char **envp)
{
	char **env = cli_environ_take(envp), buf[1];
	const char *v = getenv("SECRET_TOKEN");
	int bad = 0, st;
	pid_t pid;

	if (!v || strcmp(v, CANARY) != 0 || env != environ)
		bad |= 1;
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		bad |= 2;
	pid = fork();
	if (pid < 0)
		return 3;
	if (pid == 0) {
		/* a fork without exec, as the group keeper: stays so */
		(void)close(1);
		if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
			_exit(4);
		while (read(0, buf, 1) > 0)
			;
		_exit(0);
	}
	(void)printf("ready %ld\n", (long)pid);
	(void)fflush(stdout);
	(void)close(1);
	while (read(0, buf, 1) > 0)
		;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		bad |= 8;
	return bad;
}

int main(int argc, char **argv, char **envp)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_and_zero),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_process),
	};

	if (argc == 2 && strcmp(argv[1], CHILD_FLAG) == 0)
		return child_main(envp);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
