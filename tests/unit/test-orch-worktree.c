/* orch/worktree: git queries, worktrees and clones, bernstein's commits and
 * --no-ff merges, against real git repositories made in a mkdtemp dir.
 * Every git call (ours and the tests' own set-up commands) runs with
 * HOME=<the temp dir>, GIT_CONFIG_NOSYSTEM=1 and GIT_CEILING_DIRECTORIES, so
 * neither the user's nor the system's git config leaks in, and no git
 * identity exists except the one passed as struct git_identity. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
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

#include "orch/worktree.h"
#include "proc/landlock.h"
#include "test-procs.h"
#include "test-sh.h"
#include "util/strvec.h"

#define TEST_PATH "/usr/local/bin:/usr/bin:/bin"
#define GITC	  "git -c user.name=Setup -c user.email=setup@example.invalid"

static const struct git_identity ident = {"Bernstein Test", "bernstein@example.invalid"};

struct fx {
	char root[PATH_MAX]; /* the temp dir (real path) */
	char repo[PATH_MAX]; /* root/repo: main checkout on 'main', one commit */
	char base[64];	     /* its first commit */
	struct strvec env;   /* the environment passed to worktree.c */
};

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int sh(struct fx *f, const char *dir, char **out, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int sh(struct fx *f, const char *dir, char **out, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsh_env(f->env.v, dir, out, fmt, ap);
	va_end(ap);
	return r;
}

/* sh() that must succeed; returns its output (caller frees). */
static char *shok(struct fx *f, const char *dir, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static char *shok(struct fx *f, const char *dir, const char *fmt, ...)
{
	va_list ap;
	char *out = NULL;
	int r;

	va_start(ap, fmt);
	r = vsh_env(f->env.v, dir, &out, fmt, ap);
	va_end(ap);
	if (r != 0)
		fail_msg("command failed (%d): %s", r, fmt);
	return out;
}

static void shrun(struct fx *f, const char *dir, const char *cmd)
{
	free(shok(f, dir, "%s", cmd));
}

static void assert_out(struct fx *f, const char *dir, const char *cmd, const char *want)
{
	char *got = shok(f, dir, "%s", cmd);

	assert_string_equal(got, want);
	free(got);
}

static char *fpath(const struct fx *f, const char *rel)
{
	char *p = malloc(PATH_MAX);

	assert_non_null(p);
	assert_true(snprintf(p, PATH_MAX, "%s/%s", f->root, rel) < PATH_MAX);
	return p;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The strvec's elements sorted and joined with ',' into buf. */
static const char *joined(struct strvec *v, char *buf, size_t size)
{
	size_t i, o = 0;

	qsort(v->v, v->nr, sizeof(v->v[0]), cmp_str);
	buf[0] = '\0';
	for (i = 0; i < v->nr; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? "," : "", v->v[i]);
	return buf;
}

/* ---- fixture ---------------------------------------------------------------- */

/* The repository every test starts from, made once: 'main' with one commit. */
static char tmpl_root[PATH_MAX];
static char tmpl_base[64];

static void fx_env(struct strvec *env, const char *root)
{
	strvec_init(env);
	strvec_push(env, "PATH=" TEST_PATH);
	strvec_pushf(env, "HOME=%s", root);
	strvec_push(env, "LC_ALL=C");
	strvec_push(env, "GIT_CONFIG_NOSYSTEM=1");
	strvec_pushf(env, "GIT_CEILING_DIRECTORIES=%s", root);
}

static int group_setup(void **state)
{
	struct fx f;
	char tmpl[] = "/tmp/bernstein-wt-tmpl-XXXXXX";
	char *out;

	(void)state;
	memset(&f, 0, sizeof(f));
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, tmpl_root));
	fx_env(&f.env, tmpl_root);
	shrun(&f, tmpl_root,
	      "git init -q -b main repo && cd repo && printf 'one\\ntwo\\nthree\\n' > a.txt && echo b > b.txt && git add . && " GITC
	      " commit -q -m base");
	out = shok(&f, tmpl_root, "git -C repo rev-parse HEAD");
	assert_int_equal(strlen(out), 40);
	memcpy(tmpl_base, out, 41);
	free(out);
	strvec_clear(&f.env);
	return 0;
}

static int group_teardown(void **state)
{
	struct fx f;

	(void)state;
	memset(&f, 0, sizeof(f));
	fx_env(&f.env, tmpl_root);
	free(shok(&f, NULL, "rm -rf %s", tmpl_root));
	assert_false(exists(tmpl_root));
	strvec_clear(&f.env);
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char tmpl[] = "/tmp/bernstein-wt-XXXXXX";

	assert_non_null(f);
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, f->root));
	assert_true(snprintf(f->repo, sizeof(f->repo), "%s/repo", f->root) < PATH_MAX);
	fx_env(&f->env, f->root);
	free(shok(f, NULL, "cp -a %s/repo %s", tmpl_root, f->repo));
	memcpy(f->base, tmpl_base, sizeof(f->base));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	free(shok(f, NULL, "rm -rf %s", f->root));
	assert_false(exists(f->root));
	strvec_clear(&f->env);
	free(f);
	return 0;
}

#define FX struct fx *f = *state

/* ---- queries ---------------------------------------------------------------- */

static void test_toplevel(void **state)
{
	FX;
	struct diag d = {0};
	char *top = NULL, *sub = fpath(f, "repo/sub/dir"), *plain = fpath(f, "plain");

	assert_int_equal(git_toplevel(f->repo, f->env.v, &top, &d), 0);
	assert_string_equal(top, f->repo);
	free(top);
	top = NULL;

	shrun(f, f->repo, "mkdir -p sub/dir");
	assert_int_equal(git_toplevel(sub, f->env.v, &top, &d), 0);
	assert_string_equal(top, f->repo);
	free(top);
	top = NULL;

	/* not a repository: -ENOTDIR, never -ENOENT (that is "git missing") */
	shrun(f, f->root, "mkdir plain");
	assert_int_equal(git_toplevel(plain, f->env.v, &top, &d), -ENOTDIR);
	assert_null(top);
	assert_non_null(strstr(d.msg, "git rev-parse"));
	assert_non_null(strstr(d.msg, "not a git repository"));
	assert_string_equal(d.file, plain);

	/* variables that would point git elsewhere are not passed on */
	{
		struct strvec env = STRVEC_INIT;

		strvec_pushv(&env, f->env.v);
		strvec_push(&env, "GIT_DIR=/nonexistent/.git");
		strvec_push(&env, "GIT_WORK_TREE=/nonexistent");
		assert_int_equal(git_toplevel(f->repo, env.v, &top, &d), 0);
		assert_string_equal(top, f->repo);
		free(top);
		top = NULL;
		strvec_clear(&env);
	}

	/* a directory that does not exist */
	assert_int_equal(git_toplevel("/nonexistent/bernstein", f->env.v, &top, &d), -ENOTDIR);
	assert_null(top);
	free(sub);
	free(plain);
}

static void test_missing_git(void **state)
{
	FX;
	const char *empty_path[] = {"PATH=", "HOME=/", NULL};
	const char *bad_path[] = {"PATH=/nonexistent:/also/not", NULL};
	const char *no_path[] = {"HOME=/", NULL};
	struct strvec v = STRVEC_INIT;
	struct diag d = {0};
	char *s = NULL;
	bool b = false;

	assert_int_equal(git_toplevel(f->repo, empty_path, &s, &d), -ENOENT);
	assert_string_equal(d.msg, "git not found on PATH");
	memset(&d, 0, sizeof(d));
	assert_int_equal(git_head(f->repo, bad_path, &s, NULL, &d), -ENOENT);
	assert_string_equal(d.msg, "git not found on PATH");
	assert_int_equal(git_is_clean(f->repo, no_path, &b, &d), -ENOENT);
	assert_int_equal(git_is_clean(f->repo, NULL, &b, &d), -ENOENT);
	assert_int_equal(worktree_changes(f->repo, empty_path, &v, &d), -ENOENT);
	assert_int_equal(v.nr, 0);
	assert_null(s);
}

static void test_git_timeout(void **state)
{
	FX;
	struct strvec env = STRVEC_INIT;
	struct diag d = {0};
	char *s = NULL, *bin = fpath(f, "fakebin");
	char marker[32];
	uint64_t t0;

	/* a "git" that hangs, with a child of its own; the child is found by
	 * its argv (its pid may be one of the git's PID namespace) */
	(void)snprintf(marker, sizeof(marker), "100.%ld", (long)getpid());
	free(shok(
		f, f->root,
		"mkdir fakebin && printf '#!/bin/sh\\nsleep %s &\\nwait\\n' > fakebin/git && chmod +x fakebin/git",
		marker));
	strvec_pushf(&env, "PATH=%s:" TEST_PATH, bin);
	strvec_push(&env, WORKTREE_GIT_TIMEOUT_ENV "=300");
	t0 = mono_ms();
	assert_int_equal(git_toplevel(f->root, env.v, &s, &d), -ETIMEDOUT);
	assert_true(mono_ms() - t0 < 5000);
	assert_null(s);
	assert_non_null(strstr(d.msg, "timed out after 300 ms"));
	assert_non_null(strstr(d.msg, "git rev-parse"));
	/* everything it started was killed */
	assert_true(procs_wait_none(marker, 3000));

	/* the same git without the short deadline answers (here: exit 0, no output) */
	strvec_pop(&env);
	shrun(f, f->root, "printf '#!/bin/sh\\nexit 0\\n' > fakebin/git");
	assert_int_equal(git_toplevel(f->root, env.v, &s, &d), -ENOTDIR);
	strvec_clear(&env);
	free(bin);
}

static void test_head_and_rev_parse(void **state)
{
	FX;
	struct diag d = {0};
	char *branch = NULL, *commit = NULL, *s = NULL, *plain = fpath(f, "plain");
	char *empty = fpath(f, "empty");

	assert_int_equal(git_head(f->repo, f->env.v, &branch, &commit, &d), 0);
	assert_string_equal(branch, "main");
	assert_string_equal(commit, f->base);
	free(branch);
	free(commit);
	branch = commit = NULL;

	assert_int_equal(git_rev_parse(f->repo, "HEAD", f->env.v, &s, &d), 0);
	assert_string_equal(s, f->base);
	free(s);
	s = NULL;
	assert_int_equal(git_rev_parse(f->repo, "main", f->env.v, &s, &d), 0);
	assert_string_equal(s, f->base);
	free(s);
	s = NULL;
	/* an annotated tag peels to its commit */
	shrun(f, f->repo, GITC " tag -a -m t v1");
	assert_int_equal(git_rev_parse(f->repo, "v1", f->env.v, &s, &d), 0);
	assert_string_equal(s, f->base);
	free(s);
	s = NULL;

	assert_int_equal(git_rev_parse(f->repo, "no-such-rev", f->env.v, &s, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "no-such-rev"));
	assert_int_equal(git_rev_parse(f->repo, "HEAD:a.txt", f->env.v, &s, &d), -ENOENT);
	assert_int_equal(git_rev_parse(f->repo, "--all", f->env.v, &s, &d), -EINVAL);
	assert_int_equal(git_rev_parse(f->repo, "", f->env.v, &s, &d), -EINVAL);
	assert_null(s);

	/* detached HEAD: no branch */
	shrun(f, f->repo, "git checkout -q --detach");
	assert_int_equal(git_head(f->repo, f->env.v, &branch, &commit, &d), 0);
	assert_null(branch);
	assert_string_equal(commit, f->base);
	free(commit);
	commit = NULL;

	/* an unborn branch has no commit */
	shrun(f, f->root, "git init -q -b trunk empty");
	assert_int_equal(git_head(empty, f->env.v, &branch, &commit, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "no commit"));
	assert_null(branch);
	assert_null(commit);

	shrun(f, f->root, "mkdir plain");
	assert_int_equal(git_head(plain, f->env.v, &branch, &commit, &d), -ENOTDIR);
	assert_int_equal(git_rev_parse(plain, "HEAD", f->env.v, &s, &d), -ENOTDIR);
	free(plain);
	free(empty);
}

/* git_tracked(): a committed file yes; an ignored or untracked one, a
 * directory, a pattern-looking name no */
static void test_tracked(void **state)
{
	FX;
	struct diag d = {0};
	bool yes = false;

	shrun(f, f->repo,
	      "mkdir -p docs && echo d > docs/x.md && echo '.env' > .gitignore && echo S > .env && "
	      "echo u > untracked.txt && git add docs/x.md .gitignore && " GITC " commit -q -m t");
	assert_int_equal(git_tracked(f->repo, "a.txt", f->env.v, &yes, &d), 0);
	assert_true(yes);
	assert_int_equal(git_tracked(f->repo, "docs/x.md", f->env.v, &yes, &d), 0);
	assert_true(yes);
	assert_int_equal(git_tracked(f->repo, ".env", f->env.v, &yes, &d), 0);
	assert_false(yes);
	assert_int_equal(git_tracked(f->repo, "untracked.txt", f->env.v, &yes, &d), 0);
	assert_false(yes);
	assert_int_equal(git_tracked(f->repo, "docs", f->env.v, &yes, &d), 0);
	assert_false(yes);
	assert_int_equal(git_tracked(f->repo, "*.md", f->env.v, &yes, &d), 0);
	assert_false(yes);
	assert_int_equal(git_tracked(f->repo, "docs/*", f->env.v, &yes, &d), 0);
	assert_false(yes);
}

static void test_is_clean(void **state)
{
	FX;
	struct diag d = {0};
	bool clean = false;
	char *plain = fpath(f, "plain");

	assert_int_equal(git_is_clean(f->repo, f->env.v, &clean, &d), 0);
	assert_true(clean);

	/* untracked files and .bernstein/ do not count */
	shrun(f, f->repo,
	      "echo x > untracked.txt && mkdir -p .bernstein/runs && echo y > .bernstein/runs/log");
	clean = false;
	assert_int_equal(git_is_clean(f->repo, f->env.v, &clean, &d), 0);
	assert_true(clean);

	/* even a tracked file under .bernstein/ */
	shrun(f, f->repo,
	      "echo t > .bernstein/tracked && git add -f .bernstein/tracked && " GITC
	      " commit -q -m t && echo changed > .bernstein/tracked");
	clean = false;
	assert_int_equal(git_is_clean(f->repo, f->env.v, &clean, &d), 0);
	assert_true(clean);

	/* an unstaged change to a tracked file */
	shrun(f, f->repo, "echo more >> a.txt");
	assert_int_equal(git_is_clean(f->repo, f->env.v, &clean, &d), 0);
	assert_false(clean);
	shrun(f, f->repo, "git checkout -q a.txt");
	assert_int_equal(git_is_clean(f->repo, f->env.v, &clean, &d), 0);
	assert_true(clean);

	/* a staged one */
	shrun(f, f->repo, "git add untracked.txt");
	assert_int_equal(git_is_clean(f->repo, f->env.v, &clean, &d), 0);
	assert_false(clean);

	/* asked from a subdirectory, the whole tree counts */
	shrun(f, f->repo, "mkdir -p sub && echo s > sub/s && git reset -q && echo more >> a.txt");
	{
		char *sub = fpath(f, "repo/sub");

		clean = true;
		assert_int_equal(git_is_clean(sub, f->env.v, &clean, &d), 0);
		assert_false(clean);
		free(sub);
	}

	shrun(f, f->root, "mkdir plain");
	assert_int_equal(git_is_clean(plain, f->env.v, &clean, &d), -ENOTDIR);
	free(plain);
}

static void test_ancestor_and_branch(void **state)
{
	FX;
	struct diag d = {0};
	bool b = false;

	shrun(f, f->repo, "echo c >> a.txt && " GITC " commit -q -am second");
	assert_int_equal(git_is_ancestor(f->repo, f->base, "HEAD", f->env.v, &b, &d), 0);
	assert_true(b);
	assert_int_equal(git_is_ancestor(f->repo, "HEAD", f->base, f->env.v, &b, &d), 0);
	assert_false(b);
	assert_int_equal(git_is_ancestor(f->repo, "HEAD", "HEAD", f->env.v, &b, &d), 0);
	assert_true(b);
	assert_int_equal(git_is_ancestor(f->repo, "nope", "HEAD", f->env.v, &b, &d), -ENOENT);
	assert_int_equal(git_is_ancestor(f->repo, "HEAD", "nope", f->env.v, &b, &d), -ENOENT);

	assert_int_equal(git_branch_exists(f->repo, "main", f->env.v, &b, &d), 0);
	assert_true(b);
	assert_int_equal(git_branch_exists(f->repo, "bernstein/x", f->env.v, &b, &d), 0);
	assert_false(b);
	shrun(f, f->repo, "git branch bernstein/x");
	assert_int_equal(git_branch_exists(f->repo, "bernstein/x", f->env.v, &b, &d), 0);
	assert_true(b);
	/* a tag of that name is not a branch */
	shrun(f, f->repo, "git tag only-a-tag");
	assert_int_equal(git_branch_exists(f->repo, "only-a-tag", f->env.v, &b, &d), 0);
	assert_false(b);
	assert_int_equal(git_branch_exists(f->repo, "-D", f->env.v, &b, &d), -EINVAL);
}

/* ---- worktrees -------------------------------------------------------------- */

static void test_worktree_add_new(void **state)
{
	FX;
	struct diag d = {0};
	static char sentinel[] = "not set";
	char *wt = fpath(f, "repo/.bernstein/worktrees/s1"), *start = NULL;
	bool b = false;

	assert_false(exists(wt));
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_true(exists(wt));
	assert_out(f, wt, "git rev-parse HEAD", f->base);
	assert_out(f, wt, "git symbolic-ref HEAD", "refs/heads/bernstein/s1");
	assert_out(f, wt, "cat b.txt", "b");
	assert_int_equal(git_branch_exists(f->repo, "bernstein/s1", f->env.v, &b, &d), 0);
	assert_true(b);
	/* the main checkout is untouched and still clean */
	assert_out(f, f->repo, "git symbolic-ref HEAD", "refs/heads/main");
	assert_int_equal(git_is_clean(f->repo, f->env.v, &b, &d), 0);
	assert_true(b);

	/* a relative path is relative to repo; a base given by name */
	assert_int_equal(worktree_add(f->repo, ".bernstein/worktrees/s2", "bernstein/s2", "main",
				      f->env.v, &start, &d),
			 0);
	{
		char *wt2 = fpath(f, "repo/.bernstein/worktrees/s2");

		assert_out(f, wt2, "git symbolic-ref HEAD", "refs/heads/bernstein/s2");
		/* the branch was made here: where it starts */
		assert_non_null(start);
		assert_string_equal(start, f->base);
		free(start);
		start = sentinel;
		/* again: nothing made, so no start */
		assert_int_equal(
			worktree_add(f->repo, wt2, "bernstein/s2", "main", f->env.v, &start, &d),
			0);
		assert_null(start);
		free(wt2);
	}

	/* an unknown base */
	assert_int_equal(worktree_add(f->repo, ".bernstein/worktrees/s3", "bernstein/s3",
				      "0000000000000000000000000000000000000001", f->env.v, NULL,
				      &d),
			 -ENOENT);
	assert_int_equal(git_branch_exists(f->repo, "bernstein/s3", f->env.v, &b, &d), 0);
	assert_false(b);
	free(wt);
}

/* Run argv with env (as the supervisor would) and return its wait status. */
static int spawn_wait(const struct strvec *argv, const struct strvec *env)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st = -1;

	/* git's "HEAD is now at" on stdout would break this test's TAP */
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0), 0);
	assert_int_equal(posix_spawn(&pid, argv->v[0], &fa, NULL, (char *const *)(uintptr_t)argv->v,
				     (char *const *)(uintptr_t)env->v),
			 0);
	(void)posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* worktree_add()'s common case as a command a supervisor runs: the same
 * git invocation, and 0 when the case is not the simple one. */
static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
}

/* Another `git worktree add` of the same run, half way: its entry's
 * commondir still empty, which makes git 2.39's `worktree list` die. The
 * listing is asked again until the other add has written it (a child does
 * that 150 ms later), not reported as a failure to make the tree. */
static void test_worktree_add_beside_half_made(void **state)
{
	FX;
	struct diag d = {0};
	char *half = fpath(f, "repo/.git/worktrees/other");
	char *wt = fpath(f, "repo/.bernstein/worktrees/s9");
	char file[PATH_MAX + 32];
	pid_t pid;
	int st;

	{
		char *wts = fpath(f, "repo/.git/worktrees");

		(void)mkdir(wts, 0755);
		free(wts);
	}
	assert_int_equal(mkdir(half, 0755), 0);
	(void)snprintf(file, sizeof(file), "%s/gitdir", half);
	write_file(file, "/nonexistent/other/.git\n");
	(void)snprintf(file, sizeof(file), "%s/HEAD", half);
	write_file(file, "ref: refs/heads/main\n");
	(void)snprintf(file, sizeof(file), "%s/commondir", half);
	write_file(file, "");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct timespec ts = {0, 150000000L};
		int fd;

		(void)nanosleep(&ts, NULL);
		fd = open(file, O_WRONLY | O_TRUNC);
		if (fd < 0 || write(fd, "../..\n", 6) != 6)
			_exit(1);
		_exit(close(fd) < 0);
	}
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s9", f->base, f->env.v, NULL, &d), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_true(exists(wt));
	free(half);
	free(wt);
}

static void test_worktree_add_command(void **state)
{
	FX;
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	struct diag d = {0};
	char *wt = fpath(f, "repo/.bernstein/worktrees/c1");
	uint64_t timeout = 0;
	bool b = false, lc = false;
	size_t i;
	int st;

	assert_int_equal(worktree_add_command(f->repo, wt, "bernstein/c1", "main", f->env.v, &argv,
					      &env, &timeout, &d),
			 1);
	assert_true(argv.nr > 6);
	assert_true(argv.v[0][0] == '/');
	assert_string_equal(argv.v[argv.nr - 5], "add");
	assert_string_equal(argv.v[argv.nr - 3], "bernstein/c1");
	assert_string_equal(argv.v[argv.nr - 1], "main");
	assert_int_equal(timeout, WORKTREE_GIT_TIMEOUT_MS);
	for (i = 0; i < env.nr; i++)
		lc = lc || strcmp(env.v[i], "LC_ALL=C") == 0;
	assert_true(lc);
	assert_false(exists(wt));
	/* run it as a supervisor would */
	st = spawn_wait(&argv, &env);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_true(exists(wt));
	assert_out(f, wt, "git symbolic-ref HEAD", "refs/heads/bernstein/c1");
	assert_int_equal(git_branch_exists(f->repo, "bernstein/c1", f->env.v, &b, &d), 0);
	assert_true(b);
	strvec_clear(&argv);
	strvec_clear(&env);
	/* the path exists now: not the simple case */
	assert_int_equal(worktree_add_command(f->repo, wt, "bernstein/c1", "main", f->env.v, &argv,
					      &env, &timeout, &d),
			 0);
	assert_int_equal(argv.nr, 0);
	/* and a failed command leaves worktree_add() to repair: a taken
	 * branch at a new path is refused by git, then by worktree_add */
	{
		char *wt2 = fpath(f, "repo/.bernstein/worktrees/c2");

		assert_int_equal(worktree_add_command(f->repo, wt2, "bernstein/c1", "main",
						      f->env.v, &argv, &env, &timeout, &d),
				 1);
		st = spawn_wait(&argv, &env);
		assert_false(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		assert_int_equal(
			worktree_add(f->repo, wt2, "bernstein/c1", "main", f->env.v, NULL, &d),
			-EEXIST);
		strvec_clear(&argv);
		strvec_clear(&env);
		free(wt2);
	}
	assert_int_equal(worktree_add_command(f->repo, wt, "-x", "main", f->env.v, &argv, &env,
					      &timeout, &d),
			 -EINVAL);
	free(wt);
}

static void test_worktree_add_idempotent(void **state)
{
	FX;
	struct diag d = {0};
	char *wt = fpath(f, "wts/s1"), *wtfile = fpath(f, "wts/s1/agent-work.txt");
	char *head;

	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	/* the agent works: a commit and an uncommitted file */
	shrun(f, wt,
	      "echo w > committed.txt && git add . && " GITC
	      " commit -q -m agent && echo u > agent-work.txt");
	head = shok(f, wt, "git rev-parse HEAD");
	assert_string_not_equal(head, f->base);

	/* resume: same call, nothing changes (the base is not re-applied) */
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_true(exists(wtfile));
	assert_out(f, wt, "git rev-parse HEAD", head);
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '^worktree '", "2");
	/* through a different spelling of the same path */
	{
		char *alt = fpath(f, "wts/../wts/s1/");

		assert_int_equal(
			worktree_add(f->repo, alt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
		assert_true(exists(wtfile));
		free(alt);
	}

	/* crash between branch and worktree: the branch exists, no worktree */
	shrun(f, f->repo, "git worktree remove --force ../wts/s1");
	assert_false(exists(wt));
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_out(f, wt, "git rev-parse HEAD", head); /* the branch as it was, not base */
	assert_out(f, wt, "git symbolic-ref HEAD", "refs/heads/bernstein/s1");
	assert_out(f, wt, "cat committed.txt", "w");

	/* crash inside `git worktree add`: registered, locked "initializing", half
	 * checked out */
	shrun(f, f->repo,
	      "echo initializing > .git/worktrees/s1/locked && rm ../wts/s1/b.txt && rm .git/worktrees/s1/index");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_out(f, wt, "cat b.txt", "b");
	assert_out(f, wt, "git status --porcelain", "");
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '^locked' || true", "0");

	/* crash inside `git worktree add` before HEAD was set: locked, HEAD still
	 * the null id it starts with (detached), a stale HEAD.lock removed
	 * first by the caller: repaired all the same (it once was -EEXIST) */
	shrun(f, f->repo,
	      "echo initializing > .git/worktrees/s1/locked && echo 0000000000000000000000000000000000000000 > .git/worktrees/s1/HEAD");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_out(f, wt, "git rev-parse HEAD", head);
	assert_out(f, wt, "git status --porcelain", "");

	/* the repair of that killed in turn, after the unlock: HEAD null, no
	 * lock; and worse, half its admin files gone (git worktree remove
	 * refuses such a worktree: "validation failed") */
	shrun(f, f->repo,
	      "echo 0000000000000000000000000000000000000000 > .git/worktrees/s1/HEAD && rm -f .git/worktrees/s1/commondir");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_out(f, wt, "git rev-parse HEAD", head);
	assert_out(f, wt, "git status --porcelain", "");

	/* killed after writing the new worktree's .git file, before registering
	 * it: a directory holding nothing else */
	shrun(f, f->repo,
	      "git worktree remove --force ../wts/s1 && mkdir ../wts/s1 && echo 'gitdir: /nowhere' > ../wts/s1/.git");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_out(f, wt, "git rev-parse HEAD", head);

	/* the worktree directory deleted by hand: pruned and added again */
	shrun(f, f->root, "rm -rf wts/s1");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_out(f, wt, "git rev-parse HEAD", head);
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '^worktree '", "2");
	free(head);
	free(wt);
	free(wtfile);
}

static void test_worktree_add_conflicts(void **state)
{
	FX;
	struct diag d = {0};
	char *wt = fpath(f, "wts/s1"), *other = fpath(f, "wts/other"), *junk = fpath(f, "junk");
	char *empty = fpath(f, "emptydir"), *file = fpath(f, "afile");

	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	/* the path is a worktree on another branch */
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s2", f->base, f->env.v, NULL, &d),
			 -EEXIST);
	assert_non_null(strstr(d.msg, "bernstein/s1"));
	/* the branch is checked out elsewhere */
	assert_int_equal(worktree_add(f->repo, other, "bernstein/s1", f->base, f->env.v, NULL, &d),
			 -EEXIST);
	assert_non_null(strstr(d.msg, "checked out"));
	assert_int_equal(worktree_add(f->repo, other, "main", f->base, f->env.v, NULL, &d),
			 -EEXIST);
	/* the main checkout itself is not a task worktree, even on its own branch */
	assert_int_equal(worktree_add(f->repo, f->repo, "main", f->base, f->env.v, NULL, &d),
			 -EEXIST);
	assert_non_null(strstr(d.msg, "main working tree"));
	assert_false(exists(other));
	/* the path is taken by something else */
	shrun(f, f->root, "mkdir junk && echo j > junk/j && mkdir emptydir && echo > afile");
	assert_int_equal(worktree_add(f->repo, junk, "bernstein/j", f->base, f->env.v, NULL, &d),
			 -EEXIST);
	assert_int_equal(worktree_add(f->repo, file, "bernstein/j", f->base, f->env.v, NULL, &d),
			 -EEXIST);
	assert_out(f, f->repo, "git branch --list 'bernstein/j'", "");
	/* an empty directory is fine */
	assert_int_equal(worktree_add(f->repo, empty, "bernstein/e", f->base, f->env.v, NULL, &d),
			 0);
	assert_out(f, empty, "git symbolic-ref HEAD", "refs/heads/bernstein/e");
	/* a worktree whose .git file is gone: git forgets it, the files are kept
	 * and not taken over */
	shrun(f, wt, "rm .git && echo work > work.txt");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d),
			 -EEXIST);
	assert_out(f, wt, "cat work.txt", "work");
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '/wts/s1$' || true", "0");
	/* the branch's old worktree was deleted by hand: the stale registration
	 * is pruned and the branch checked out at the new path */
	shrun(f, f->root, "rm -rf wts/s1");
	assert_int_equal(worktree_add(f->repo, other, "bernstein/s1", f->base, f->env.v, NULL, &d),
			 0);
	assert_out(f, other, "git symbolic-ref HEAD", "refs/heads/bernstein/s1");
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '/wts/s1$' || true", "0");
	/* bad arguments */
	assert_int_equal(worktree_add(f->repo, other, "-b", f->base, f->env.v, NULL, &d), -EINVAL);
	assert_int_equal(worktree_add(f->repo, other, "x", "", f->env.v, NULL, &d), -EINVAL);
	free(wt);
	free(other);
	free(junk);
	free(empty);
	free(file);
}

static void test_clone_add_and_fetch(void **state)
{
	FX;
	struct diag d = {0};
	static char sentinel[] = "not set";
	char *c1 = fpath(f, "repo/.bernstein/worktrees/c1"), *start = NULL, *head = NULL;
	char *alt = fpath(f, "repo/.bernstein/worktrees/c1/.git/objects/info/alternates");
	bool b = true;
	struct stat st;

	assert_int_equal(worktree_clone_add(f->repo, ".bernstein/worktrees/c1", "bernstein/c1",
					    "main", f->env.v, &start, &d),
			 0);
	assert_non_null(start);
	assert_string_equal(start, f->base);
	free(start);
	/* its own .git directory, sharing the main object store */
	assert_int_equal(lstat(c1, &st), 0);
	assert_true(exists(alt));
	assert_int_equal(worktree_clone_check(c1, &d), 0);
	assert_out(f, c1, "git rev-parse --git-dir", ".git");
	assert_out(f, c1, "git symbolic-ref HEAD", "refs/heads/bernstein/c1");
	assert_out(f, c1, "git rev-parse HEAD", f->base);
	assert_out(f, c1, "cat b.txt", "b");
	/* the main repository has no such branch yet, and is untouched */
	assert_int_equal(git_branch_exists(f->repo, "bernstein/c1", f->env.v, &b, &d), 0);
	assert_false(b);
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c ^worktree", "1");

	/* the agent commits there itself, and leaves a file uncommitted */
	shrun(f, c1, "echo new > n.txt && git add n.txt && " GITC " commit -q -m agent");
	shrun(f, c1, "echo wip > wip.txt");
	head = shok(f, c1, "git rev-parse HEAD");
	/* resumed: found again, nothing made, nothing lost */
	start = sentinel;
	assert_int_equal(
		worktree_clone_add(f->repo, c1, "bernstein/c1", "main", f->env.v, &start, &d), 0);
	assert_null(start);
	assert_out(f, c1, "git rev-parse HEAD", head);
	assert_out(f, c1, "cat wip.txt", "wip");
	/* its HEAD moved elsewhere: back on the branch */
	shrun(f, c1, "git checkout -q main");
	assert_int_equal(
		worktree_clone_add(f->repo, c1, "bernstein/c1", "main", f->env.v, NULL, &d), 0);
	assert_out(f, c1, "git symbolic-ref HEAD", "refs/heads/bernstein/c1");

	/* the branch into the main repository */
	assert_int_equal(worktree_clone_fetch(f->repo, c1, "bernstein/c1", f->env.v, &d), 0);
	assert_out(f, f->repo, "git rev-parse refs/heads/bernstein/c1", head);
	assert_out(f, f->repo, "git symbolic-ref HEAD", "refs/heads/main");
	assert_out(f, f->repo, "git rev-parse HEAD", f->base);
	/* again, after the agent moved it (forced) */
	shrun(f, c1, GITC " commit -q --amend -m amended");
	free(head);
	head = shok(f, c1, "git rev-parse HEAD");
	assert_int_equal(worktree_clone_fetch(f->repo, c1, "bernstein/c1", f->env.v, &d), 0);
	assert_out(f, f->repo, "git rev-parse refs/heads/bernstein/c1", head);
	/* a branch the clone does not have */
	assert_true(worktree_clone_fetch(f->repo, c1, "bernstein/nope", f->env.v, &d) < 0);
	assert_int_equal(git_branch_exists(f->repo, "bernstein/nope", f->env.v, &b, &d), 0);
	assert_false(b);
	free(head);
	free(alt);
	free(c1);
}

static void test_clone_add_crashes_and_refusals(void **state)
{
	FX;
	struct diag d = {0};
	char *c2 = fpath(f, "repo/.bernstein/worktrees/c2");
	char *c3 = fpath(f, "repo/.bernstein/worktrees/c3");
	char *c3tmp = fpath(f, "repo/.bernstein/worktrees/c3.clone-tmp");
	char *w4 = fpath(f, "repo/.bernstein/worktrees/w4");
	char *full = fpath(f, "repo/.bernstein/worktrees/full");
	char *start = NULL;

	/* a crash between clone and checkout: the branch is made now */
	shrun(f, f->root, "git clone -q --shared -n repo repo/.bernstein/worktrees/c2");
	assert_int_equal(
		worktree_clone_add(f->repo, c2, "bernstein/c2", f->base, f->env.v, &start, &d), 0);
	assert_non_null(start);
	free(start);
	assert_out(f, c2, "git symbolic-ref HEAD", "refs/heads/bernstein/c2");
	assert_out(f, c2, "cat b.txt", "b");

	/* a crash inside git clone left the temporary clone: removed, redone */
	shrun(f, f->root,
	      "mkdir -p repo/.bernstein/worktrees/c3.clone-tmp/.git && ln -s /etc repo/.bernstein/worktrees/c3.clone-tmp/link");
	assert_int_equal(
		worktree_clone_add(f->repo, c3, "bernstein/c3", "main", f->env.v, NULL, &d), 0);
	assert_false(exists(c3tmp));
	assert_out(f, c3, "git symbolic-ref HEAD", "refs/heads/bernstein/c3");

	/* a git worktree at the path is not a clone */
	assert_int_equal(worktree_add(f->repo, w4, "bernstein/w4", "main", f->env.v, NULL, &d), 0);
	assert_int_equal(worktree_clone_check(w4, &d), -EPERM);
	assert_int_equal(
		worktree_clone_add(f->repo, w4, "bernstein/w4", "main", f->env.v, NULL, &d),
		-EEXIST);
	/* a directory with files, the main working tree, an unknown base */
	shrun(f, f->root,
	      "mkdir -p repo/.bernstein/worktrees/full && touch repo/.bernstein/worktrees/full/x");
	assert_int_equal(
		worktree_clone_add(f->repo, full, "bernstein/f", "main", f->env.v, NULL, &d),
		-EEXIST);
	assert_int_equal(
		worktree_clone_add(f->repo, f->repo, "bernstein/f", "main", f->env.v, NULL, &d),
		-EEXIST);
	assert_int_equal(worktree_clone_add(f->repo, ".bernstein/worktrees/c5", "bernstein/c5",
					    "0000000000000000000000000000000000000001", f->env.v,
					    NULL, &d),
			 -ENOENT);

	/* a clone whose .git points elsewhere is refused before git runs there */
	shrun(f, c3, "echo /somewhere > .git/commondir");
	assert_int_equal(worktree_clone_check(c3, &d), -EPERM);
	assert_int_equal(worktree_clone_fetch(f->repo, c3, "bernstein/c3", f->env.v, &d), -EPERM);
	shrun(f, c2, "rm -rf .git && ln -s ../../../.git .git");
	assert_int_equal(worktree_clone_check(c2, &d), -EPERM);

	/* asked to run confined: git runs under Landlock there, or, without
	 * Landlock, not at all (never unconfined) */
	{
		struct strvec env = STRVEC_INIT;
		bool clean = false;

		strvec_pushv(&env, f->env.v);
		strvec_pushf(&env, "%s=%s", WORKTREE_GIT_CONFINE_ENV, f->repo);
		if (landlock_abi_version() < 0) {
			assert_int_equal(git_is_clean(f->repo, env.v, &clean, &d), -EOPNOTSUPP);
		} else {
			assert_int_equal(git_is_clean(f->repo, env.v, &clean, &d), 0);
			assert_true(clean);
		}
		strvec_clear(&env);
	}
	free(c2);
	free(c3);
	free(c3tmp);
	free(w4);
	free(full);
}

static void test_worktree_remove(void **state)
{
	FX;
	struct diag d = {0};
	char *wt = fpath(f, "repo/.bernstein/worktrees/s1"), *plain = fpath(f, "plaindir");
	bool b = true;

	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	shrun(f, wt, "echo dirty >> a.txt && echo new > untracked.txt");
	/* keep the branch */
	assert_int_equal(worktree_remove(f->repo, wt, false, "bernstein/s1", f->env.v, &d), 0);
	assert_false(exists(wt));
	assert_int_equal(git_branch_exists(f->repo, "bernstein/s1", f->env.v, &b, &d), 0);
	assert_true(b);
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '^worktree '", "1");
	/* missing: 0, and now the branch goes */
	assert_int_equal(worktree_remove(f->repo, wt, true, "bernstein/s1", f->env.v, &d), 0);
	assert_int_equal(git_branch_exists(f->repo, "bernstein/s1", f->env.v, &b, &d), 0);
	assert_false(b);
	/* nothing at all: 0 */
	assert_int_equal(worktree_remove(f->repo, wt, true, "bernstein/s1", f->env.v, &d), 0);

	/* a worktree whose directory was deleted by hand, and a locked one */
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	shrun(f, f->repo, "rm -rf .bernstein/worktrees/s1");
	assert_int_equal(worktree_remove(f->repo, wt, true, "bernstein/s1", f->env.v, &d), 0);
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '^worktree '", "1");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	shrun(f, f->repo, "git worktree lock .bernstein/worktrees/s1");
	assert_int_equal(worktree_remove(f->repo, wt, true, "bernstein/s1", f->env.v, &d), 0);
	assert_false(exists(wt));
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '^worktree '", "1");

	/* an unregistered directory is left alone */
	shrun(f, f->root, "mkdir plaindir && echo p > plaindir/p");
	assert_int_equal(worktree_remove(f->repo, plain, false, NULL, f->env.v, &d), 0);
	assert_true(exists(plain));
	/* the main checkout is not a removable worktree */
	assert_int_equal(worktree_remove(f->repo, f->repo, false, NULL, f->env.v, &d), -EINVAL);
	assert_true(exists(f->repo));
	free(wt);
	free(plain);
}

/* The end of a task that changed nothing: remove only a clean worktree
 * (git's own check), whatever the user configured for untracked files; the
 * branch stays, then goes with others in one call. */
static void test_worktree_remove_clean_and_branches(void **state)
{
	FX;
	struct diag d = {0};
	char *wt = fpath(f, "repo/.bernstein/worktrees/s1");
	char *wt2 = fpath(f, "repo/.bernstein/worktrees/s2");
	const char *both[] = {"bernstein/s1", "bernstein/s2", "bernstein/never-made"};
	char *c = NULL;
	bool removed = true, b = false;

	/* a user who hides untracked files from git status */
	shrun(f, f->repo, "git config status.showUntrackedFiles no");
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	shrun(f, wt, "echo new > untracked.txt");
	assert_int_equal(worktree_remove_clean(f->repo, wt, f->env.v, &removed, &d), 0);
	assert_false(removed);
	assert_true(exists(wt));
	assert_out(f, wt, "cat untracked.txt", "new");
	/* a modified tracked file */
	shrun(f, wt, "rm untracked.txt && echo changed > b.txt");
	assert_int_equal(worktree_remove_clean(f->repo, wt, f->env.v, &removed, &d), 0);
	assert_false(removed);
	assert_out(f, wt, "cat b.txt", "changed");
	/* clean again (an ignored file does not count): removed, branch kept */
	shrun(f, wt, "git checkout -q -- b.txt && mkdir -p .bernstein && echo x > .bernstein/x");
	shrun(f, f->repo, "echo .bernstein/ > .git/info/exclude");
	assert_int_equal(worktree_remove_clean(f->repo, wt, f->env.v, &removed, &d), 0);
	assert_true(removed);
	assert_false(exists(wt));
	assert_int_equal(git_branch_exists(f->repo, "bernstein/s1", f->env.v, &b, &d), 0);
	assert_true(b);
	/* nothing there: 0, not removed */
	assert_int_equal(worktree_remove_clean(f->repo, wt, f->env.v, &removed, &d), 0);
	assert_false(removed);
	/* the main checkout is never removed */
	assert_int_equal(worktree_remove_clean(f->repo, f->repo, f->env.v, &removed, &d), 0);
	assert_false(removed);
	assert_true(exists(f->repo));

	/* git_branch_commit: from the ref files, and from git once packed */
	assert_int_equal(git_branch_commit(f->repo, "bernstein/s1", f->env.v, &c, &d), 0);
	assert_string_equal(c, f->base);
	free(c);
	c = NULL;
	shrun(f, f->repo, "git pack-refs --all");
	assert_int_equal(git_branch_commit(f->repo, "bernstein/s1", f->env.v, &c, &d), 0);
	assert_string_equal(c, f->base);
	free(c);
	c = NULL;
	assert_int_equal(git_branch_commit(f->repo, "bernstein/none", f->env.v, &c, &d), -ENOENT);
	assert_null(c);
	assert_int_equal(git_branch_commit(f->repo, "-x", f->env.v, &c, &d), -EINVAL);

	/* many branches in one call; one that does not exist is skipped */
	assert_int_equal(worktree_add(f->repo, wt2, "bernstein/s2", f->base, f->env.v, NULL, &d),
			 0);
	assert_int_equal(worktree_remove(f->repo, wt2, false, NULL, f->env.v, &d), 0);
	assert_int_equal(worktree_branches_delete(f->repo, both, 3, f->env.v, &d), 0);
	assert_int_equal(git_branch_exists(f->repo, "bernstein/s1", f->env.v, &b, &d), 0);
	assert_false(b);
	assert_int_equal(git_branch_exists(f->repo, "bernstein/s2", f->env.v, &b, &d), 0);
	assert_false(b);
	assert_out(f, f->repo, "git branch --list 'bernstein/*' | wc -l", "0");
	assert_int_equal(worktree_branches_delete(f->repo, both, 0, f->env.v, &d), 0);
	free(wt);
	free(wt2);
}

/* The content of path (caller frees), or NULL. */
static char *slurp(const char *path)
{
	char *buf = calloc(1, 8192);
	FILE *fp = fopen(path, "re");

	assert_non_null(buf);
	if (!fp) {
		free(buf);
		return NULL;
	}
	if (fread(buf, 1, 8191, fp) == 0)
		buf[0] = '\0';
	(void)fclose(fp);
	return buf;
}

/* Trees an agent wrote: with the trusted repository named in env, git runs
 * with the git directory bernstein knows, never the tree's own pointer, and
 * what the agent changed there is put back. */
static void test_agent_trees(void **state)
{
	FX;
	struct strvec env = STRVEC_INIT, v = STRVEC_INIT;
	struct diag d = {0};
	char *wt = fpath(f, "repo/.bernstein/worktrees/s1");
	char *gitfile = fpath(f, "repo/.bernstein/worktrees/s1/.git");
	char *other = fpath(f, "repo/other");
	char *c1 = fpath(f, "repo/.bernstein/worktrees/c1");
	char *c1cfg = fpath(f, "repo/.bernstein/worktrees/c1/.git/config");
	char *target = fpath(f, "target.txt");
	char want[2 * PATH_MAX], *got;
	bool committed = false;
	struct stat st;

	strvec_pushv(&env, f->env.v);
	strvec_pushf(&env, "%s=%s", WORKTREE_GIT_REPO_ENV, f->repo);
	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, env.v, NULL, &d), 0);
	(void)snprintf(want, sizeof(want), "gitdir: %s/.git/worktrees/s1\n", f->repo);

	/* the .git file swapped for another repository: never read, put back */
	shrun(f, wt,
	      "git init -q --bare ../evil.git && echo swapped > a.txt && printf 'gitdir: %s\\n' \"$PWD/../evil.git\" > .git");
	assert_int_equal(worktree_changes(wt, env.v, &v, &d), 0);
	assert_int_equal(v.nr, 1);
	assert_string_equal(v.v[0], "a.txt");
	strvec_clear(&v);
	got = slurp(gitfile);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);

	/* .git replaced by a directory: the work is committed where it belongs */
	shrun(f, wt, "rm .git && git init -q . && echo dir > d.txt");
	assert_int_equal(worktree_commit_all(wt, "m", &ident, env.v, &committed, &d), 0);
	assert_true(committed);
	assert_int_equal(lstat(gitfile, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_out(f, f->repo, "git log -1 --format=%s bernstein/s1", "m");
	assert_out(f, f->repo, "git show bernstein/s1:d.txt", "dir");
	assert_out(f, f->repo, "git show bernstein/s1:a.txt", "swapped");
	/* a symlink in its place (to a file that must stay as it is) */
	shrun(f, f->root, "echo keep > target.txt");
	assert_int_equal(unlink(gitfile), 0);
	assert_int_equal(symlink(target, gitfile), 0);
	assert_int_equal(worktree_changes(wt, env.v, &v, &d), 0);
	strvec_clear(&v);
	assert_int_equal(lstat(gitfile, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	got = slurp(target);
	assert_string_equal(got, "keep\n");
	free(got);
	/* and git worktree remove, which reads the pointer itself, works */
	shrun(f, wt, "printf 'gitdir: /nonexistent\\n' > .git");
	assert_int_equal(worktree_remove(f->repo, wt, false, NULL, env.v, &d), 0);
	assert_false(exists(wt));

	/* a directory that claims a worktree's git directory but is none */
	shrun(f, f->repo, "mkdir -p other && echo x > other/x.txt");
	shrun(f, other, "printf 'gitdir: %s/.git\\n' \"$(cd .. && pwd)\" > .git");
	assert_int_equal(worktree_changes(other, env.v, &v, &d), -EPERM);
	assert_non_null(strstr(d.msg, "neither a worktree"));
	assert_int_equal(v.nr, 0);

	/* a clone: its config is bernstein's from the start and stays so */
	assert_int_equal(worktree_clone_add(f->repo, c1, "bernstein/c1", f->base, env.v, NULL, &d),
			 0);
	got = slurp(c1cfg);
	assert_non_null(got);
	assert_non_null(strstr(got, "repositoryformatversion = 0"));
	assert_null(strstr(got, "[remote"));
	free(got);
	shrun(f, c1,
	      "echo c > c.txt && printf '[core]\\n\\tfsmonitor = evil\\n"
	      "[include]\\n\\tpath = /evil\\n' >> .git/config");
	assert_int_equal(worktree_changes(c1, env.v, &v, &d), 0);
	assert_int_equal(v.nr, 1);
	strvec_clear(&v);
	got = slurp(c1cfg);
	assert_null(strstr(got, "evil"));
	free(got);
	/* the config a symlink to a file outside: replaced, the file untouched */
	assert_int_equal(unlink(c1cfg), 0);
	assert_int_equal(symlink(target, c1cfg), 0);
	assert_int_equal(worktree_commit_all(c1, "c", &ident, env.v, &committed, &d), 0);
	assert_true(committed);
	assert_int_equal(lstat(c1cfg, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	got = slurp(target);
	assert_string_equal(got, "keep\n");
	free(got);
	/* a commondir: refused */
	shrun(f, c1, "printf '%s/.git\\n' \"$(cd ../../.. && pwd)\" > .git/commondir");
	assert_int_equal(worktree_changes(c1, env.v, &v, &d), -EPERM);
	assert_non_null(strstr(d.msg, "commondir"));

	strvec_clear(&env);
	free(wt);
	free(gitfile);
	free(other);
	free(c1);
	free(c1cfg);
	free(target);
}

static void test_worktree_changes(void **state)
{
	FX;
	struct strvec v = STRVEC_INIT;
	struct diag d = {0};
	char *wt = fpath(f, "repo/.bernstein/worktrees/s1"), buf[512];

	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_int_equal(worktree_changes(wt, f->env.v, &v, &d), 0);
	assert_int_equal(v.nr, 0);

	shrun(f, wt,
	      "echo more >> a.txt && rm b.txt && mkdir -p new/deep && echo n > new/deep/n.txt && echo s > staged.txt && git add staged.txt && mkdir -p .bernstein/runs && echo l > .bernstein/runs/log && x=$(git rev-parse --git-path info/exclude) && mkdir -p \"$(dirname \"$x\")\" && echo 'ignored*' >> \"$x\" && echo i > ignored.txt");
	assert_int_equal(worktree_changes(wt, f->env.v, &v, &d), 0);
	assert_string_equal(joined(&v, buf, sizeof(buf)), "a.txt,b.txt,new/deep/n.txt,staged.txt");
	strvec_clear(&v);

	/* a staged rename gives both paths; a name with a space and a newline */
	shrun(f, wt,
	      "git reset -q --hard && git clean -fdq && git mv b.txt 'c d.txt' && printf x > 'e\nf'");
	assert_int_equal(worktree_changes(wt, f->env.v, &v, &d), 0);
	assert_string_equal(joined(&v, buf, sizeof(buf)), "b.txt,c d.txt,e\nf");
	strvec_clear(&v);

	/* appended, not replaced */
	strvec_push(&v, "keep");
	assert_int_equal(worktree_changes(wt, f->env.v, &v, &d), 0);
	assert_int_equal(v.nr, 4);
	assert_string_equal(v.v[0], "keep");
	strvec_clear(&v);

	{
		char *plain = fpath(f, "plain");

		shrun(f, f->root, "mkdir plain");
		assert_int_equal(worktree_changes(plain, f->env.v, &v, &d), -ENOTDIR);
		assert_int_equal(v.nr, 0);
		free(plain);
	}
	free(wt);
}

static void test_commit_all(void **state)
{
	FX;
	struct diag d = {0};
	char *wt = fpath(f, "repo/.bernstein/worktrees/s1"), *s;
	bool committed = false;

	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	/* nothing to commit: no commit */
	committed = true;
	assert_int_equal(
		worktree_commit_all(wt, "bernstein: task s1", &ident, f->env.v, &committed, &d), 0);
	assert_false(committed);
	assert_out(f, wt, "git rev-parse HEAD", f->base);
	/* only .bernstein/ changed: still nothing */
	shrun(f, wt, "mkdir -p .bernstein/runs && echo l > .bernstein/runs/log");
	assert_int_equal(
		worktree_commit_all(wt, "bernstein: task s1", &ident, f->env.v, &committed, &d), 0);
	assert_false(committed);
	assert_out(f, wt, "git rev-parse HEAD", f->base);

	/* tracked edits, a deletion, untracked files; hooks that would refuse */
	shrun(f, wt,
	      "echo more >> a.txt && rm b.txt && mkdir -p src && echo n > src/new.c && hooks=$(git rev-parse --git-path hooks) && mkdir -p \"$hooks\" && printf '#!/bin/sh\\nexit 1\\n' > \"$hooks/pre-commit\" && cp \"$hooks/pre-commit\" \"$hooks/commit-msg\" && chmod +x \"$hooks\"/*");
	/* and a configured hooks directory with the same, and signing on */
	shrun(f, wt,
	      "mkdir -p ../hooks2 && cp \"$(git rev-parse --git-path hooks)/pre-commit\" ../hooks2/ && git config core.hooksPath \"$PWD/../hooks2\" && git config commit.gpgSign true");
	assert_int_equal(worktree_commit_all(wt, "bernstein: task s1\n\n# not a comment", &ident,
					     f->env.v, &committed, &d),
			 0);
	assert_true(committed);
	assert_out(f, wt, "git rev-list --count HEAD", "2");
	assert_out(
		f, wt, "git log -1 --format='%an <%ae>|%cn <%ce>'",
		"Bernstein Test <bernstein@example.invalid>|Bernstein Test <bernstein@example.invalid>");
	assert_out(f, wt, "git log -1 --format=%B", "bernstein: task s1\n\n# not a comment");
	assert_out(f, wt,
		   "git diff-tree --no-commit-id --name-status -r HEAD | sort | tr '\\t\\n' ' ;'",
		   "A src/new.c;D b.txt;M a.txt;");
	assert_out(f, wt, "git ls-tree -r --name-only HEAD | grep -c bernstein || true", "0");
	/* what is left is .bernstein/ only */
	assert_out(f, wt, "git status --porcelain --untracked-files=all", "?? .bernstein/runs/log");

	/* and again: nothing */
	s = shok(f, wt, "git rev-parse HEAD");
	assert_int_equal(worktree_commit_all(wt, "again", &ident, f->env.v, &committed, &d), 0);
	assert_false(committed);
	assert_out(f, wt, "git rev-parse HEAD", s);
	free(s);

	/* no identity, empty message */
	assert_int_equal(worktree_commit_all(wt, "m", NULL, f->env.v, &committed, &d), -EINVAL);
	{
		struct git_identity noname = {"", "x@y"};

		assert_int_equal(worktree_commit_all(wt, "m", &noname, f->env.v, &committed, &d),
				 -EINVAL);
	}
	assert_int_equal(worktree_commit_all(wt, "", &ident, f->env.v, &committed, &d), -EINVAL);
	free(wt);
}

static void test_commits_between_and_changed_files(void **state)
{
	FX;
	struct strvec v = STRVEC_INIT;
	struct diag d = {0};
	char *wt = fpath(f, "wts/s1"), buf[512];
	unsigned n = 99;

	assert_int_equal(worktree_add(f->repo, wt, "bernstein/s1", f->base, f->env.v, NULL, &d), 0);
	assert_int_equal(git_commits_between(f->repo, "main", "bernstein/s1", f->env.v, &n, &d), 0);
	assert_int_equal(n, 0);
	assert_int_equal(git_changed_files(f->repo, "main", "bernstein/s1", f->env.v, &v, &d), 0);
	assert_int_equal(v.nr, 0);

	shrun(f, wt,
	      "echo x > x.txt && git add x.txt && " GITC
	      " commit -q -m one && git mv b.txt moved.txt && " GITC " commit -q -m two");
	/* main moves on too (another file): not part of the branch's changes */
	shrun(f, f->repo, "echo m > main-only.txt && git add . && " GITC " commit -q -m main");
	assert_int_equal(git_commits_between(f->repo, "main", "bernstein/s1", f->env.v, &n, &d), 0);
	assert_int_equal(n, 2);
	assert_int_equal(git_commits_between(f->repo, "bernstein/s1", "main", f->env.v, &n, &d), 0);
	assert_int_equal(n, 1);
	assert_int_equal(git_changed_files(f->repo, "main", "bernstein/s1", f->env.v, &v, &d), 0);
	assert_string_equal(joined(&v, buf, sizeof(buf)), "b.txt,moved.txt,x.txt");
	strvec_clear(&v);

	assert_int_equal(git_commits_between(f->repo, "main", "nope", f->env.v, &n, &d), -ENOENT);
	assert_int_equal(git_commits_between(f->repo, "nope", "main", f->env.v, &n, &d), -ENOENT);
	assert_int_equal(git_changed_files(f->repo, "main", "nope", f->env.v, &v, &d), -ENOENT);
	assert_int_equal(v.nr, 0);
	free(wt);
}

/* ---- merging ---------------------------------------------------------------- */

/* A worktree on bernstein/NAME from base, with cmd run in it and committed. */
static void make_branch(struct fx *f, const char *name, const char *cmd)
{
	struct diag d = {0};
	char rel[128], br[128], *wt;
	bool committed = false;

	(void)snprintf(rel, sizeof(rel), "wts/%s", name);
	(void)snprintf(br, sizeof(br), "bernstein/%s", name);
	wt = fpath(f, rel);
	assert_int_equal(worktree_add(f->repo, wt, br, f->base, f->env.v, NULL, &d), 0);
	shrun(f, wt, cmd);
	assert_int_equal(worktree_commit_all(wt, br, &ident, f->env.v, &committed, &d), 0);
	assert_true(committed);
	free(wt);
}

static void test_merge_clean_no_ff(void **state)
{
	FX;
	struct strvec conflicts = STRVEC_INIT;
	struct diag d = {0};
	char *commit = NULL, *tip, *parents, want[200], *head;
	bool already = true;

	make_branch(f, "s1", "echo new > new.txt && echo more >> a.txt");
	tip = shok(f, f->repo, "git rev-parse bernstein/s1");
	/* a fast-forward is possible here; --no-ff still makes a merge commit */
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "Merge task s1", &ident,
					 f->env.v, &commit, &already, &conflicts, &d),
			 0);
	assert_non_null(commit);
	assert_false(already);
	assert_int_equal(conflicts.nr, 0);
	assert_out(f, f->repo, "git rev-parse HEAD", commit);
	assert_out(f, f->repo, "git symbolic-ref HEAD", "refs/heads/main");
	parents = shok(f, f->repo, "git rev-list --parents -n1 HEAD");
	(void)snprintf(want, sizeof(want), "%s %s %s", commit, f->base, tip);
	assert_string_equal(parents, want);
	assert_out(f, f->repo, "git log -1 --format='%s|%an|%ce'",
		   "Merge task s1|Bernstein Test|bernstein@example.invalid");
	assert_out(f, f->repo, "cat new.txt", "new");
	assert_out(f, f->repo, "git status --porcelain", "");
	free(parents);

	/* resume after a crash: already merged, nothing done */
	head = commit;
	commit = NULL;
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "Merge task s1", &ident,
					 f->env.v, &commit, &already, &conflicts, &d),
			 0);
	assert_true(already);
	assert_null(commit);
	assert_out(f, f->repo, "git rev-parse HEAD", head);
	assert_out(f, f->repo, "git rev-list --count HEAD", "3");
	free(head);
	free(tip);
	strvec_clear(&conflicts);
}

static void test_merge_two_branches_and_hooks_off(void **state)
{
	FX;
	struct diag d = {0};
	char *c1 = NULL, *c2 = NULL;
	bool already = true;

	make_branch(f, "s1", "echo one > one.txt");
	make_branch(f, "s2", "echo two > two.txt");
	/* hooks that would refuse the merge or leave a trace */
	shrun(f, f->repo,
	      "mkdir -p .git/hooks && printf '#!/bin/sh\\nexit 1\\n' > .git/hooks/pre-merge-commit && printf '#!/bin/sh\\ntouch hook-ran\\n' > .git/hooks/post-merge && chmod +x .git/hooks/*");
	/* repository config that would get in the way: --no-ff beats merge.ff=only,
	 * and no signing is attempted (there is no key) */
	shrun(f, f->repo,
	      "git config merge.ff only && git config commit.gpgSign true && git config user.signingKey no-such-key && git config gc.auto 1");
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m1", &ident, f->env.v,
					 &c1, &already, NULL, &d),
			 0);
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s2", "m2", &ident, f->env.v,
					 &c2, &already, NULL, &d),
			 0);
	assert_false(already);
	assert_string_not_equal(c1, c2);
	assert_out(f, f->repo, "git rev-parse HEAD^1", c1);
	assert_out(f, f->repo, "cat one.txt two.txt", "one\ntwo");
	assert_out(f, f->repo, "git rev-list --min-parents=2 --count HEAD", "2");
	assert_false(sh(f, f->repo, NULL, "test -e hook-ran") == 0);
	free(c1);
	free(c2);
}

static void test_merge_conflict_restores(void **state)
{
	FX;
	struct strvec conflicts = STRVEC_INIT;
	struct diag d = {0};
	char *commit = NULL, *head, *tip, buf[256];
	bool already = true;

	make_branch(
		f, "s1",
		"printf 'one\\nTWO-branch\\nthree\\n' > a.txt && echo branch > b.txt && echo ok > branch-only.txt");
	tip = shok(f, f->repo, "git rev-parse bernstein/s1");
	shrun(f, f->repo,
	      "printf 'one\\nTWO-main\\nthree\\n' > a.txt && echo main > b.txt && " GITC
	      " commit -q -am main-edit && echo untracked > u.txt && mkdir -p .bernstein && echo s > .bernstein/state");
	head = shok(f, f->repo, "git rev-parse HEAD");

	strvec_push(&conflicts, "pre-existing");
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "Merge s1", &ident,
					 f->env.v, &commit, &already, &conflicts, &d),
			 -EBUSY);
	assert_null(commit);
	assert_true(already); /* untouched on failure */
	assert_string_equal(joined(&conflicts, buf, sizeof(buf)), "a.txt,b.txt,pre-existing");
	assert_non_null(strstr(d.msg, "conflicts in 2 files"));
	/* exactly as before: HEAD, clean tracked files, no merge in progress,
	 * untracked and .bernstein/ files kept, branch intact */
	assert_out(f, f->repo, "git rev-parse HEAD", head);
	assert_out(f, f->repo, "git symbolic-ref HEAD", "refs/heads/main");
	assert_out(f, f->repo, "git status --porcelain --untracked-files=no", "");
	assert_int_not_equal(sh(f, f->repo, NULL, "git rev-parse -q --verify MERGE_HEAD"), 0);
	assert_out(f, f->repo, "cat a.txt", "one\nTWO-main\nthree");
	assert_out(f, f->repo, "cat u.txt .bernstein/state", "untracked\ns");
	assert_false(sh(f, f->repo, NULL, "test -e branch-only.txt") == 0);
	assert_out(f, f->repo, "git rev-parse bernstein/s1", tip);
	strvec_clear(&conflicts);

	/* the same again (a resumed run retrying): the same answer */
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "Merge s1", &ident,
					 f->env.v, &commit, &already, NULL, &d),
			 -EBUSY);
	assert_out(f, f->repo, "git rev-parse HEAD", head);
	free(head);
	free(tip);
}

/* ---- conflicts (run-conflict.c's git) ---- */

/* A task's tree rebased: clean, then conflicting (aborted, the branch as
 * it was); a merge left with markers, a resolution committed as a merge;
 * markers found in the commit whatever the file names; a tree left in the
 * middle of a rebase and of a merge put back. */
static void test_conflict_steps(void **state)
{
	FX;
	struct strvec paths = STRVEC_INIT, found = STRVEC_INIT;
	struct diag d = {0};
	char *wt = fpath(f, "wts/s1"), *tip, *onto, *head, buf[256];
	bool committed = false;

	make_branch(f, "s1", "printf 'one\\nTWO-branch\\nthree\\n' > a.txt");
	tip = shok(f, f->repo, "git rev-parse bernstein/s1");
	/* the base moves elsewhere: a clean rebase */
	shrun(f, f->repo, "echo c > c.txt && git add c.txt && " GITC " commit -q -m c");
	onto = shok(f, f->repo, "git rev-parse HEAD");
	assert_int_equal(worktree_rebase(wt, onto, &ident, f->env.v, &paths, &d), 0);
	assert_int_equal(paths.nr, 0);
	assert_int_equal(sh(f, f->repo, NULL, "git merge-base --is-ancestor %s bernstein/s1", onto),
			 0);
	assert_out(f, wt, "git log -1 --format=%ce", "bernstein@example.invalid");
	head = shok(f, f->repo, "git rev-parse bernstein/s1");
	/* the base changes the same line: the rebase conflicts, is aborted */
	shrun(f, f->repo,
	      "printf 'one\\nTWO-main\\nthree\\n' > a.txt && " GITC " commit -q -am main-edit");
	free(onto);
	onto = shok(f, f->repo, "git rev-parse HEAD");
	assert_int_equal(worktree_rebase(wt, onto, &ident, f->env.v, &paths, &d), -EBUSY);
	assert_string_equal(joined(&paths, buf, sizeof(buf)), "a.txt");
	assert_non_null(strstr(d.msg, "conflicts in 1 file"));
	assert_out(f, f->repo, "git rev-parse bernstein/s1", head);
	assert_out(f, wt, "git status --porcelain", "");
	assert_out(f, wt, "git symbolic-ref HEAD", "refs/heads/bernstein/s1");
	strvec_clear(&paths);

	/* the merge for a resolver: markers left, the merge in progress */
	assert_int_equal(worktree_merge_start(wt, onto, &ident, f->env.v, &paths, &d), 1);
	assert_string_equal(joined(&paths, buf, sizeof(buf)), "a.txt");
	assert_int_equal(sh(f, wt, NULL, "grep -q '^<<<<<<< ' a.txt"), 0);
	/* committed as it is: the markers are found in the commit */
	assert_int_equal(worktree_commit_merge(wt, "resolved?", &ident, f->env.v, &committed, &d),
			 0);
	assert_true(committed);
	free(head);
	head = shok(f, f->repo, "git rev-parse bernstein/s1");
	assert_out(f, f->repo, "git rev-list --parents -n1 bernstein/s1 | wc -w", "3");
	assert_int_equal(git_conflict_markers(f->repo, head, &paths, f->env.v, &found, &d), 1);
	assert_string_equal(joined(&found, buf, sizeof(buf)), "a.txt");
	strvec_clear(&found);

	/* odd names are literal pathspecs; "=======" alone is no marker */
	shrun(f, wt,
	      "printf 'x\\n>>>>>>> theirs\\n' > '-dash.txt' && printf 'a\\n=======\\n' > 'b *.txt' && "
	      "printf '<<<<<<<\\n' > 'c:d.txt' && git add -A && " GITC " commit -q -m odd");
	free(head);
	head = shok(f, wt, "git rev-parse HEAD");
	strvec_clear(&paths);
	strvec_push(&paths, "-dash.txt");
	strvec_push(&paths, "b *.txt");
	strvec_push(&paths, "c:d.txt");
	strvec_push(&paths, "*.txt");
	assert_int_equal(git_conflict_markers(f->repo, head, &paths, f->env.v, &found, &d), 1);
	assert_string_equal(joined(&found, buf, sizeof(buf)), "-dash.txt,c:d.txt");
	strvec_clear(&found);
	strvec_clear(&paths);
	strvec_push(&paths, "b *.txt");
	assert_int_equal(git_conflict_markers(f->repo, head, &paths, f->env.v, &found, &d), 0);
	assert_int_equal(found.nr, 0);
	strvec_clear(&paths);

	/* put back at tip from the middle of a merge, and of a rebase */
	shrun(f, wt, "git reset -q --hard HEAD~2");
	assert_int_equal(worktree_merge_start(wt, onto, &ident, f->env.v, &paths, &d), 1);
	strvec_clear(&paths);
	assert_int_equal(worktree_restore(wt, "bernstein/s1", tip, f->env.v, &d), 0);
	assert_out(f, f->repo, "git rev-parse bernstein/s1", tip);
	assert_out(f, wt, "git status --porcelain", "");
	assert_int_not_equal(sh(f, wt, NULL, "git rev-parse -q --verify MERGE_HEAD"), 0);
	assert_int_not_equal(sh(f, wt, NULL, GITC " rebase -q %s", onto), 0); /* stopped */
	assert_int_equal(sh(f, wt, NULL, "test -d \"$(git rev-parse --git-path rebase-merge)\""),
			 0);
	assert_int_equal(worktree_restore(wt, "bernstein/s1", tip, f->env.v, &d), 0);
	assert_int_not_equal(
		sh(f, wt, NULL, "test -d \"$(git rev-parse --git-path rebase-merge)\""), 0);
	assert_out(f, wt, "git symbolic-ref HEAD", "refs/heads/bernstein/s1");
	assert_out(f, f->repo, "git rev-parse bernstein/s1", tip);
	assert_out(f, wt, "git status --porcelain", "");
	/* bad arguments */
	assert_int_equal(worktree_rebase(wt, "-x", &ident, f->env.v, NULL, &d), -EINVAL);
	assert_int_equal(worktree_restore(wt, "-b", tip, f->env.v, &d), -EINVAL);
	free(head);
	free(onto);
	free(tip);
	free(wt);
}

static void test_merge_refusals(void **state)
{
	FX;
	struct diag d = {0};
	char *commit = NULL, *head;
	bool already = false;

	make_branch(f, "s1", "echo new > new.txt");
	head = shok(f, f->repo, "git rev-parse HEAD");

	/* wrong branch checked out */
	shrun(f, f->repo, "git checkout -q -b other");
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					 &commit, &already, NULL, &d),
			 -EXDEV);
	assert_non_null(strstr(d.msg, "'other'"));
	/* detached */
	shrun(f, f->repo, "git checkout -q --detach main");
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					 &commit, &already, NULL, &d),
			 -EXDEV);
	shrun(f, f->repo, "git checkout -q main");
	assert_out(f, f->repo, "git rev-parse HEAD", head);

	/* uncommitted changes to tracked files */
	shrun(f, f->repo, "echo dirty >> a.txt");
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					 &commit, &already, NULL, &d),
			 -EUCLEAN);
	assert_out(f, f->repo, "git rev-parse HEAD", head);
	assert_out(f, f->repo, "git status --porcelain", " M a.txt");
	shrun(f, f->repo, "git checkout -q a.txt");

	/* an untracked file the merge would overwrite */
	shrun(f, f->repo, "echo mine > new.txt");
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					 &commit, &already, NULL, &d),
			 -EUCLEAN);
	assert_non_null(strstr(d.msg, "would be overwritten"));
	assert_out(f, f->repo, "git rev-parse HEAD", head);
	assert_out(f, f->repo, "cat new.txt", "mine");
	assert_int_not_equal(sh(f, f->repo, NULL, "git rev-parse -q --verify MERGE_HEAD"), 0);
	shrun(f, f->repo, "rm new.txt");

	/* unknown branch, no identity */
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/nope", "m", &ident, f->env.v,
					 &commit, &already, NULL, &d),
			 -ENOENT);
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m", NULL, f->env.v,
					 &commit, &already, NULL, &d),
			 -EINVAL);
	assert_null(commit);
	assert_out(f, f->repo, "git rev-parse HEAD", head);

	/* and after all that it merges */
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					 &commit, &already, NULL, &d),
			 0);
	assert_non_null(commit);
	free(commit);
	free(head);
}

/* ---- crash recovery --------------------------------------------------------- */

/* An ignored file where the merge adds one: git would overwrite it, and an
 * undo could not give it back; refused, the file kept. */
static void test_merge_ignored_in_the_way(void **state)
{
	FX;
	struct diag d = {0};
	char *commit = NULL, *head;
	bool already = false;

	make_branch(f, "s1", "echo generated > x.gen");
	shrun(f, f->repo, "echo '*.gen' > .git/info/exclude && echo mine > x.gen");
	head = shok(f, f->repo, "git rev-parse HEAD");
	assert_int_equal(git_merge_no_ff(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					 &commit, &already, NULL, &d),
			 -EUCLEAN);
	assert_non_null(strstr(d.msg, "'x.gen' would be overwritten"));
	assert_out(f, f->repo, "cat x.gen", "mine");
	assert_out(f, f->repo, "git rev-parse HEAD", head);
	free(head);
}

/* A merge killed half way (some files written, index.lock left): recover
 * removes the lock as the merge's, puts the checkout back, and the merge
 * is made again; the untracked files of the user's stay. */
static void test_merge_recover_undoes(void **state)
{
	FX;
	struct diag d = {0};
	enum git_merge_found found = GIT_MERGE_DONE;
	char *commit = NULL, *head, *m;
	bool already = true;
	struct timespec now;
	int64_t since;

	make_branch(f, "s1", "echo changed > a.txt && mkdir -p new && echo n > new/n.txt");
	shrun(f, f->repo, "echo notes > notes.txt");
	head = shok(f, f->repo, "git rev-parse HEAD");
	clock_gettime(CLOCK_REALTIME, &now);
	since = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
	assert_int_equal(git_merge_prepare(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					   &commit, &already, NULL, &d),
			 0);
	assert_false(already);
	assert_out(f, f->repo, "git status --porcelain --untracked-files=no", "");
	/* what a killed read-tree leaves: files of the merge, its index.lock */
	shrun(f, f->repo,
	      "echo changed > a.txt && mkdir -p new && echo n > new/n.txt && : > .git/index.lock");
	assert_int_equal(
		git_merge_recover(f->repo, "main", commit, since, &ident, f->env.v, &found, &d), 0);
	assert_int_equal(found, GIT_MERGE_UNDONE);
	assert_false(sh(f, f->repo, NULL, "test -e .git/index.lock") == 0);
	assert_false(sh(f, f->repo, NULL, "test -e new") == 0);
	assert_out(f, f->repo, "git status --porcelain", "?? notes.txt");
	assert_out(f, f->repo, "git rev-parse HEAD", head);
	assert_int_equal(git_merge_apply(f->repo, "main", commit, &ident, f->env.v, &d), 0);
	assert_out(f, f->repo, "cat a.txt new/n.txt", "changed\nn");
	m = shok(f, f->repo, "git rev-parse HEAD");
	assert_string_equal(m, commit);
	/* killed after the branch moved: done, nothing more */
	assert_int_equal(
		git_merge_recover(f->repo, "main", commit, since, &ident, f->env.v, &found, &d), 0);
	assert_int_equal(found, GIT_MERGE_DONE);
	free(m);
	free(commit);
	free(head);
}

/* Killed between the files and the branch: the index and files are the
 * merge's, the branch is not moved yet; recover finishes it. A lock older
 * than the merge is not its: refused, named, left. */
static void test_merge_recover_finishes(void **state)
{
	FX;
	struct diag d = {0};
	enum git_merge_found found = GIT_MERGE_UNDONE;
	char *commit = NULL, *parent;
	bool already = true;
	struct timespec now;
	int64_t since;

	make_branch(f, "s1", "echo n > n.txt");
	parent = shok(f, f->repo, "git rev-parse HEAD");
	assert_int_equal(git_merge_prepare(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					   &commit, &already, NULL, &d),
			 0);
	shrun(f, f->repo, ": > .git/HEAD.lock && touch -d '2001-01-01' .git/HEAD.lock");
	clock_gettime(CLOCK_REALTIME, &now);
	since = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
	assert_int_equal(
		git_merge_recover(f->repo, "main", commit, since, &ident, f->env.v, &found, &d),
		-EBUSY);
	assert_non_null(strstr(d.file, "HEAD.lock"));
	assert_true(sh(f, f->repo, NULL, "test -e .git/HEAD.lock") == 0);
	shrun(f, f->repo, "rm .git/HEAD.lock");
	free(shok(f, f->repo, "git read-tree -m -u %s %s", parent, commit));
	assert_int_equal(
		git_merge_recover(f->repo, "main", commit, since, &ident, f->env.v, &found, &d), 0);
	assert_int_equal(found, GIT_MERGE_DONE);
	assert_out(f, f->repo, "git rev-parse HEAD^1", parent);
	assert_out(f, f->repo, "git status --porcelain", "");
	free(commit);
	free(parent);
}

/* The branch is the agent's: a path it adds below a tracked symlink of the
 * main checkout that leads out must never make bernstein touch what is
 * out there -- not when checking, not when undoing. */
static void test_merge_symlink_never_followed(void **state)
{
	FX;
	struct diag d = {0};
	enum git_merge_found found = GIT_MERGE_DONE;
	char *commit = NULL, *victim = fpath(f, "outside/evil.txt");
	bool already = true;

	shrun(f, f->root, "mkdir outside && echo precious > outside/evil.txt");
	shrun(f, f->repo, "ln -s ../outside out && git add out && " GITC " commit -q -m link");
	/* the branch replaces the symlink by a directory with the file */
	shrun(f, f->repo,
	      "git branch bernstein/s1 && git worktree add -q ../wts/s1 bernstein/s1 && cd ../wts/s1 && rm out && mkdir out && echo mine > out/evil.txt && git add -A && " GITC
	      " commit -q -m replace");
	assert_int_equal(git_merge_prepare(f->repo, "main", "bernstein/s1", "m", &ident, f->env.v,
					   &commit, &already, NULL, &d),
			 0);
	/* killed before read-tree replaced the symlink: undo must not follow it */
	assert_int_equal(
		git_merge_recover(f->repo, "main", commit, 0, &ident, f->env.v, &found, &d), 0);
	assert_int_equal(found, GIT_MERGE_UNDONE);
	assert_true(exists(victim));
	assert_int_equal(git_merge_apply(f->repo, "main", commit, &ident, f->env.v, &d), 0);
	assert_out(f, f->repo, "cat out/evil.txt", "mine");
	assert_out(f, f->root, "cat outside/evil.txt", "precious");
	free(victim);
	free(commit);
}

/* Stale lock files found and classified; a symlinked directory in a
 * clone's .git is not walked, and removal never follows one. */
static void test_locks_find(void **state)
{
	FX;
	struct git_lock *v = NULL;
	struct diag d = {0};
	size_t n = 0, i;
	int kinds[_GIT_LOCK_KIND_MAX] = {0};

	shrun(f, f->root, "mkdir -p elsewhere && : > elsewhere/victim.lock");
	shrun(f, f->repo,
	      "mkdir -p .git/refs/heads/bernstein .bernstein/worktrees/c1/.git/refs && : > .git/refs/heads/bernstein/s1.lock && : > .git/refs/heads/main.lock && : > .git/refs/heads/user.lock && : > .git/index.lock && : > .git/packed-refs.lock && : > .git/ORIG_HEAD.lock && : > .bernstein/worktrees/c1/.git/index.lock && ln -s ../../../../../elsewhere .bernstein/worktrees/c1/.git/refs/heads");
	assert_int_equal(worktree_locks_find(f->repo, ".bernstein/worktrees", "bernstein/", "main",
					     f->env.v, &v, &n, &d),
			 0);
	for (i = 0; i < n; i++) {
		kinds[v[i].kind]++;
		assert_null(strstr(v[i].path, "victim"));
		assert_null(strstr(v[i].path, "user.lock"));
		assert_null(strstr(v[i].path, "ORIG_HEAD"));
	}
	assert_int_equal(n, 5);
	assert_int_equal(kinds[GIT_LOCK_OURS], 2);
	assert_int_equal(kinds[GIT_LOCK_MERGE], 2);
	assert_int_equal(kinds[GIT_LOCK_SHARED], 1);
	for (i = 0; i < n; i++)
		assert_int_equal(git_lock_remove(&v[i], &d), 0);
	assert_false(sh(f, f->repo, NULL, "test -e .git/index.lock") == 0);
	assert_true(sh(f, f->root, NULL, "test -e elsewhere/victim.lock") == 0);
	git_locks_free(v, n);
}

/* worktree_repair(): half-made worktrees under the directory go (a null
 * HEAD breaks `git fetch` into the repository), the others stay. */
static void test_worktree_repair(void **state)
{
	FX;
	struct diag d = {0};
	char *a = fpath(f, "wts/a"), *b = fpath(f, "wts/b"), *c = fpath(f, "elsewhere/c");
	size_t n = 99;

	assert_int_equal(worktree_add(f->repo, a, "bernstein/a", f->base, f->env.v, NULL, &d), 0);
	assert_int_equal(worktree_add(f->repo, b, "bernstein/b", f->base, f->env.v, NULL, &d), 0);
	assert_int_equal(worktree_add(f->repo, c, "bernstein/c", f->base, f->env.v, NULL, &d), 0);
	shrun(f, f->repo,
	      "echo initializing > .git/worktrees/a/locked && echo 0000000000000000000000000000000000000000 > .git/worktrees/c/HEAD");
	assert_int_equal(worktree_repair(f->repo, "../wts", f->env.v, &n, &d), 0);
	assert_int_equal(n, 1);
	assert_false(exists(a));
	assert_true(exists(b));
	assert_true(exists(c)); /* not under the directory: not ours */
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c '^worktree '", "3");
	assert_int_equal(worktree_repair(f->repo, "../wts", f->env.v, &n, &d), 0);
	assert_int_equal(n, 0);
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_toplevel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_git, setup, teardown),
		cmocka_unit_test_setup_teardown(test_git_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_and_rev_parse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tracked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_is_clean, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ancestor_and_branch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_add_new, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_add_beside_half_made, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_worktree_add_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_add_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_add_conflicts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_add_and_fetch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_add_crashes_and_refusals, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_worktree_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_remove_clean_and_branches, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_worktree_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_trees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commits_between_and_changed_files, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_merge_clean_no_ff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_two_branches_and_hooks_off, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_merge_conflict_restores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_ignored_in_the_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_recover_undoes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_recover_finishes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_symlink_never_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locks_find, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_repair, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conflict_steps, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
