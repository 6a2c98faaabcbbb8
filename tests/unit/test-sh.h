/* Running shell commands from unit tests that build real git repositories:
 * `/bin/sh -c CMD` (or CMD itself when it has no shell syntax: half the
 * processes) in a directory with exactly the given environment, stdout
 * captured. Header-only, static: each test program includes it once. */
#ifndef BERNSTEIN_TESTS_UNIT_TEST_SH_H
#define BERNSTEIN_TESTS_UNIT_TEST_SH_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* name in /usr/local/bin, /usr/bin or /bin into buf. */
static bool find_exe(const char *name, char *buf, size_t size)
{
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin", NULL};
	size_t i;

	for (i = 0; dirs[i]; i++) {
		(void)snprintf(buf, size, "%s/%s", dirs[i], name);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

/* Run `/bin/sh -c CMD` in dir with env; returns the exit status (or -1) and,
 * with out, stdout (caller frees, trailing newlines removed). */
static int vsh_env(const char *const *env, const char *dir, char **out, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static int vsh_env(const char *const *env, const char *dir, char **out, const char *fmt, va_list ap)
{
	char cmd[8192];
	int p[2], st;
	pid_t pid;

	assert_true(vsnprintf(cmd, sizeof(cmd), fmt, ap) < (int)sizeof(cmd));
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	{
		const char *shv[] = {"/bin/sh", "-c", cmd, NULL};
		const char *const *argv = shv;
		char words[sizeof(cmd)], exe[PATH_MAX];
		const char *wv[32];
		posix_spawn_file_actions_t fa;

		/* A command without shell syntax runs without a shell: half the
		 * processes, which matters on a loaded machine. */
		if (!strpbrk(cmd, "|&;<>()$`\\\"'*?[]#~={}!\n\t")) {
			size_t n = 0;
			char *w, *save = NULL;

			memcpy(words, cmd, sizeof(words));
			for (w = strtok_r(words, " ", &save); w && n < 31;
			     w = strtok_r(NULL, " ", &save))
				wv[n++] = w;
			wv[n] = NULL;
			if (n > 0 && n < 31 && find_exe(wv[0], exe, sizeof(exe))) {
				wv[0] = exe;
				argv = wv;
			}
		}
		assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
		assert_int_equal(posix_spawn_file_actions_adddup2(&fa, p[1], 1), 0);
		if (dir)
			assert_int_equal(posix_spawn_file_actions_addchdir_np(&fa, dir), 0);
		assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL,
					     (char *const *)(uintptr_t)argv,
					     (char *const *)(uintptr_t)env),
				 0);
		posix_spawn_file_actions_destroy(&fa);
	}
	close(p[1]);
	{
		char buf[4096];
		size_t len = 0, alloc = 0;
		char *s = NULL;
		ssize_t n;

		while ((n = read(p[0], buf, sizeof(buf))) != 0) {
			if (n < 0) {
				assert_int_equal(errno, EINTR);
				continue;
			}
			if (len + (size_t)n + 1 > alloc) {
				alloc = (len + (size_t)n + 1) * 2;
				char *ns = realloc(s, alloc);

				assert_non_null(ns);
				s = ns;
			}
			memcpy(s + len, buf, (size_t)n);
			len += (size_t)n;
		}
		close(p[0]);
		if (!s)
			s = calloc(1, 1);
		assert_non_null(s);
		s[len] = '\0';
		while (len && s[len - 1] == '\n')
			s[--len] = '\0';
		if (out)
			*out = s;
		else
			free(s);
	}
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
