/* proc/git.h: the hardened command line and environment of bernstein's git. */
#include <errno.h>
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

#include "proc/git.h"
#include "util/strvec.h"

static int has(const struct strvec *v, const char *s)
{
	return strvec_find(v, s) >= 0;
}

/* "-c KEY=..." for key, or NULL. */
static const char *config_of(const struct strvec *v, const char *key)
{
	size_t i, n = strlen(key);

	for (i = 0; i + 1 < v->nr; i++)
		if (strcmp(v->v[i], "-c") == 0 && strncmp(v->v[i + 1], key, n) == 0 &&
		    v->v[i + 1][n] == '=')
			return v->v[i + 1] + n + 1;
	return NULL;
}

static void test_argv(void **state)
{
	struct strvec a = STRVEC_INIT, w = STRVEC_INIT;

	(void)state;
	git_harden_argv(&a, 0);
	assert_string_equal(a.v[0], "--no-pager");
	/* the keys that run a program, each set to something that runs nothing */
	assert_string_equal(config_of(&a, "core.fsmonitor"), "false");
	assert_string_equal(config_of(&a, "core.hooksPath"), "/dev/null");
	assert_string_equal(config_of(&a, "core.pager"), "cat");
	assert_string_equal(config_of(&a, "credential.helper"), "");
	assert_string_equal(config_of(&a, "core.askPass"), "");
	assert_string_equal(config_of(&a, "commit.gpgSign"), "false");
	assert_string_equal(config_of(&a, "merge.verifySignatures"), "false");
	assert_string_equal(config_of(&a, "submodule.recurse"), "false");
	assert_string_equal(config_of(&a, "protocol.allow"), "never");
	assert_string_equal(config_of(&a, "protocol.file.allow"), "always");
	assert_string_equal(config_of(&a, "safe.bareRepository"), "explicit");
	assert_null(config_of(&a, "status.showUntrackedFiles"));
	/* every option comes in pairs after --no-pager */
	assert_int_equal(a.nr % 2, 1);
	git_harden_argv(&w, GIT_HARDEN_WRITE);
	assert_string_equal(config_of(&w, "status.showUntrackedFiles"), "normal");
	strvec_clear(&a);
	strvec_clear(&w);
}

static void test_env(void **state)
{
	static const char *const base[] = {
		"PATH=/usr/bin:/bin",
		"HOME=/home/u",
		"GIT_DIR=/evil",
		"GIT_CONFIG_PARAMETERS='core.fsmonitor'='evil'",
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=core.fsmonitor",
		"GIT_CONFIG_VALUE_0=evil",
		"GIT_EXTERNAL_DIFF=evil",
		"GIT_SSH_COMMAND=evil",
		"GIT_EXEC_PATH=/evil",
		"PAGER=evil",
		"EDITOR=evil",
		"VISUAL=evil",
		"SSH_ASKPASS=evil",
		"LC_ALL=de_DE.UTF-8",
		"LANGUAGE=de",
		"BERNSTEIN_GIT_REPO=/repo",
		"TMPDIR=/tmp",
		"NOEQUALS",
		NULL,
	};
	struct strvec e = STRVEC_INIT;
	size_t i;

	(void)state;
	git_harden_env(base, GIT_HARDEN_READ, "BERNSTEIN_GIT_", &e);
	assert_true(has(&e, "PATH=/usr/bin:/bin"));
	assert_true(has(&e, "HOME=/home/u"));
	assert_true(has(&e, "TMPDIR=/tmp"));
	for (i = 0; i < e.nr; i++) {
		const char *v = e.v[i];

		assert_null(strstr(v, "evil"));
		assert_false(strncmp(v, "BERNSTEIN_", 10) == 0);
		assert_false(strcmp(v, "NOEQUALS") == 0);
	}
	assert_true(has(&e, "LC_ALL=C"));
	assert_false(has(&e, "LC_ALL=de_DE.UTF-8"));
	assert_true(has(&e, "GIT_TERMINAL_PROMPT=0"));
	assert_true(has(&e, "GIT_ASKPASS="));
	assert_true(has(&e, "GIT_EDITOR=true"));
	assert_true(has(&e, "GIT_PAGER=cat"));
	assert_true(has(&e, "GIT_OPTIONAL_LOCKS=0"));
	strvec_clear(&e);
	git_harden_env(NULL, 0, NULL, &e);
	assert_false(has(&e, "GIT_OPTIONAL_LOCKS=0"));
	assert_true(has(&e, "LC_ALL=C"));
	strvec_clear(&e);
	assert_true(git_env_dropped("GIT_ANYTHING=x"));
	assert_true(git_env_dropped("PAGER=less"));
	assert_false(git_env_dropped("PAGERX=less"));
	assert_false(git_env_dropped("HOME=/h"));
}

static void test_find(void **state)
{
	char dir[] = "/tmp/bernstein-test-git.XXXXXX", path[256], cwd[4096];
	char *got = NULL;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/git", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	(void)fputs("#!/bin/sh\nexit 0\n", f);
	(void)fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	/* relative and empty entries are never searched */
	assert_int_equal(git_find(".", &got), -ENOENT);
	assert_int_equal(git_find(":", &got), -ENOENT);
	assert_int_equal(git_find("", &got), -ENOENT);
	assert_int_equal(git_find(NULL, &got), -ENOENT);
	assert_int_equal(git_find("./:sub:", &got), -ENOENT);
	/* an absolute entry is */
	assert_int_equal(git_find(dir, &got), 0);
	assert_string_equal(got, path);
	free(got);
	got = NULL;
	{
		char both[600];

		(void)snprintf(both, sizeof(both), ".::%s", dir);
		assert_int_equal(git_find(both, &got), 0);
		assert_string_equal(got, path);
		free(got);
	}
	assert_int_equal(chdir(cwd), 0);
	(void)unlink(path);
	(void)rmdir(dir);
}

static void test_prepare(void **state)
{
	static const char *const base[] = {"PATH=/nonexistent:/usr/bin:/bin", "GIT_DIR=/evil",
					   NULL};
	static const char *const args[] = {"status", "-z", NULL};
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;

	(void)state;
	assert_int_equal(git_prepare("/some/dir", base, GIT_HARDEN_READ, args, &argv, &env), 0);
	assert_true(argv.v[0][0] == '/');
	assert_non_null(strstr(argv.v[0], "/git"));
	assert_string_equal(argv.v[1], "--no-pager");
	assert_string_equal(argv.v[argv.nr - 4], "-C");
	assert_string_equal(argv.v[argv.nr - 3], "/some/dir");
	assert_string_equal(argv.v[argv.nr - 2], "status");
	assert_string_equal(argv.v[argv.nr - 1], "-z");
	assert_false(has(&env, "GIT_DIR=/evil"));
	assert_true(has(&env, "GIT_OPTIONAL_LOCKS=0"));
	strvec_clear(&argv);
	strvec_clear(&env);
	{
		static const char *const nopath[] = {"HOME=/h", NULL};

		assert_int_equal(git_prepare("/d", nopath, 0, args, &argv, &env), -ENOENT);
	}
	strvec_clear(&argv);
	strvec_clear(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_prepare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
