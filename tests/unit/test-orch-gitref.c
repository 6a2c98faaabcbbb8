/* orch/gitref: git refs read from the "files" ref store without git, against
 * real repositories made in a mkdtemp dir with real git. Every answer that
 * gitref_read gives is compared with `git rev-parse --verify -q`: an object
 * id must be git's, -ENOENT must be a ref git does not have either, and what
 * git and this module would read differently must be -ENOTSUP (the caller
 * then asks git). The ref files are written by agents, so hostile content is
 * planted in them: FIFOs (which must not block), symlinks, oversized files,
 * garbage, symbolic ref loops. Every git call runs with HOME=<the temp dir>,
 * GIT_CONFIG_NOSYSTEM=1 and GIT_CEILING_DIRECTORIES, so no user or system git
 * config leaks in. */
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
#include <unistd.h>

#include <cmocka.h>

#include "orch/gitref.h"
#include "test-sh.h"
#include "util/strvec.h"

#define TEST_PATH "/usr/local/bin:/usr/bin:/bin"
#define GITC	  "git -c user.name=Setup -c user.email=setup@example.invalid"

struct fx {
	char root[PATH_MAX]; /* the temp dir (real path) */
	char repo[PATH_MAX]; /* root/repo: on 'main', one commit, no packed-refs */
	struct strvec env;
};

/* ---- helpers ---------------------------------------------------------------- */

/* Run `/bin/sh -c CMD` in dir; returns the exit status (or -1) and, with out,
 * stdout (caller frees, trailing newlines removed). */
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

/* A command in f->repo that must succeed. */
static void shrun(struct fx *f, const char *cmd)
{
	if (sh(f, f->repo, NULL, "%s", cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

/* `git rev-parse --verify -q REF` in dir: its output (caller frees), or NULL
 * when git has no such ref. */
static char *git_rev(struct fx *f, const char *dir, const char *ref)
{
	char *out = NULL;
	int r = sh(f, dir, &out, "git rev-parse --verify -q '%s'", ref);

	if (r != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* gitref_read(dir, ref) answers, and the answer is git's. */
static void same_in(struct fx *f, const char *dir, const char *ref, size_t width)
{
	char oid[GITREF_OID_MAX + 1], *want = git_rev(f, dir, ref);

	if (!want)
		fail_msg("git has no ref '%s'", ref);
	assert_int_equal(strlen(want), width);
	memset(oid, 'x', sizeof(oid));
	assert_int_equal(gitref_read(dir, ref, oid), 0);
	assert_string_equal(oid, want);
	free(want);
}

static void same(struct fx *f, const char *ref)
{
	same_in(f, f->repo, ref, 40);
}

/* Neither git nor gitref_read knows ref. */
static void missing(struct fx *f, const char *ref)
{
	char oid[GITREF_OID_MAX + 1], *got = git_rev(f, f->repo, ref);

	if (got)
		fail_msg("git has '%s' at %s", ref, got);
	assert_int_equal(gitref_read(f->repo, ref, oid), -ENOENT);
}

/* gitref_read leaves ref to git. */
static void notsup(struct fx *f, const char *ref)
{
	char oid[GITREF_OID_MAX + 1];

	assert_int_equal(gitref_read(f->repo, ref, oid), -ENOTSUP);
}

/* notsup(), for a ref git cannot read either. */
static void notsup_git_fails(struct fx *f, const char *ref)
{
	char *got = git_rev(f, f->repo, ref);

	if (got)
		fail_msg("git reads '%s' as %s", ref, got);
	notsup(f, ref);
}

static char *rpath(const struct fx *f, const char *rel)
{
	static char p[4][PATH_MAX];
	static unsigned k;
	char *s = p[k++ % 4];

	assert_true(snprintf(s, PATH_MAX, "%s/%s", f->repo, rel) < PATH_MAX);
	return s;
}

/* Write content (len bytes) to repo/rel, replacing what is there. */
static void put_n(const struct fx *f, const char *rel, const char *content, size_t len)
{
	const char *path = rpath(f, rel);
	FILE *fp;

	(void)unlink(path);
	fp = fopen(path, "we");
	assert_non_null(fp);
	assert_int_equal(fwrite(content, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static void put(const struct fx *f, const char *rel, const char *content)
{
	put_n(f, rel, content, strlen(content));
}

static char *slurp(const struct fx *f, const char *rel)
{
	const char *path = rpath(f, rel);
	char *buf = calloc(1, 1 << 16);
	FILE *fp = fopen(path, "re");

	assert_non_null(buf);
	assert_non_null(fp);
	assert_true(fread(buf, 1, (1 << 16) - 1, fp) < (1 << 16) - 1);
	fclose(fp);
	return buf;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("gitref_read blocked (a FIFO?)");
}

/* ---- fixture ---------------------------------------------------------------- */

static char tmpl_root[PATH_MAX];

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
	char tmpl[] = "/tmp/bernstein-gitref-tmpl-XXXXXX";

	(void)state;
	memset(&f, 0, sizeof(f));
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, tmpl_root));
	fx_env(&f.env, tmpl_root);
	assert_int_equal(
		sh(&f, tmpl_root, NULL,
		   "git init -q -b main repo && cd repo && echo a > a.txt && git add . && " GITC
		   " commit -q -m base"),
		0);
	strvec_clear(&f.env);
	return 0;
}

static int group_teardown(void **state)
{
	struct fx f;

	(void)state;
	memset(&f, 0, sizeof(f));
	fx_env(&f.env, tmpl_root);
	assert_int_equal(sh(&f, NULL, NULL, "rm -rf '%s'", tmpl_root), 0);
	strvec_clear(&f.env);
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char tmpl[] = "/tmp/bernstein-gitref-XXXXXX";

	assert_non_null(f);
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, f->root));
	assert_true(snprintf(f->repo, sizeof(f->repo), "%s/repo", f->root) < PATH_MAX);
	fx_env(&f->env, f->root);
	assert_int_equal(sh(f, NULL, NULL, "cp -a '%s/repo' '%s'", tmpl_root, f->repo), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	assert_int_equal(sh(f, NULL, NULL, "rm -rf '%s'", f->root), 0);
	assert_false(exists(f->root));
	strvec_clear(&f->env);
	free(f);
	return 0;
}

/* ---- gitref_read against git ------------------------------------------------ */

static void test_loose_and_head(void **state)
{
	struct fx *f = *state;

	assert_false(exists(rpath(f, ".git/packed-refs")));
	same(f, "refs/heads/main");
	same(f, "HEAD"); /* "ref: refs/heads/main", followed */
	shrun(f, "git checkout -q -b a/b && " GITC " commit -q --allow-empty -m ab");
	assert_true(exists(rpath(f, ".git/refs/heads/a/b")));
	same(f, "refs/heads/a/b");
	same(f, "HEAD");
	shrun(f, "git tag light");
	same(f, "refs/tags/light");
	/* a detached HEAD holds the object id itself */
	shrun(f, "git checkout -q --detach main");
	same(f, "HEAD");
	/* a symbolic ref other than HEAD */
	shrun(f, "git symbolic-ref refs/heads/alias refs/heads/a/b");
	same(f, "refs/heads/alias");
}

static void test_packed(void **state)
{
	struct fx *f = *state;
	char *old, *now, *packed, line[256];

	shrun(f, "git branch a/b && git branch side && " GITC " tag -a v1 -m v1 && git tag light");
	shrun(f, "git pack-refs --all");
	assert_false(exists(rpath(f, ".git/refs/heads/main")));
	assert_false(exists(rpath(f, ".git/refs/heads/a/b")));
	assert_false(exists(rpath(f, ".git/refs/tags/v1")));
	packed = slurp(f, ".git/packed-refs");
	assert_non_null(strstr(packed, "\n^")); /* the annotated tag's peeled line */
	free(packed);
	same(f, "refs/heads/main");
	same(f, "refs/heads/a/b");
	same(f, "refs/tags/v1"); /* the tag object, not the commit it peels to */
	same(f, "refs/tags/light");
	same(f, "HEAD");
	missing(f, "refs/heads/nope");
	missing(f, "refs/heads/main/below"); /* nothing loose, nothing packed */
	missing(f, "refs/heads/a");

	/* a new commit makes main loose again; the stale packed line stays */
	old = git_rev(f, f->repo, "refs/heads/main");
	assert_non_null(old);
	shrun(f, GITC " commit -q --allow-empty -m two");
	assert_true(exists(rpath(f, ".git/refs/heads/main")));
	packed = slurp(f, ".git/packed-refs");
	(void)snprintf(line, sizeof(line), "%s refs/heads/main\n", old);
	assert_non_null(strstr(packed, line));
	free(packed);
	same(f, "refs/heads/main");
	same(f, "HEAD");
	now = git_rev(f, f->repo, "refs/heads/main");
	assert_non_null(now);
	assert_string_not_equal(now, old);
	/* main is a file now: a ref below it is looked up in packed-refs */
	missing(f, "refs/heads/main/below");
	free(old);
	free(now);

	/* a directory at a loose ref's path: the packed one */
	shrun(f, "mkdir -p .git/refs/heads/side/x");
	same(f, "refs/heads/side");
}

static void test_missing(void **state)
{
	struct fx *f = *state;

	assert_false(exists(rpath(f, ".git/packed-refs")));
	missing(f, "refs/heads/nope");
	missing(f, "refs/tags/nope");
	missing(f, "refs/heads/main/below"); /* ENOTDIR: main is a file */
	missing(f, "refs/nope/deeper/still");
	shrun(f, "git branch a/b");
	missing(f, "refs/heads/a"); /* a directory */

	/* HEAD on an unborn branch: HEAD names it, it does not exist */
	shrun(f, "git symbolic-ref HEAD refs/heads/unborn");
	missing(f, "HEAD");
	shrun(f, "git symbolic-ref HEAD refs/heads/main");

	shrun(f, "git pack-refs --all");
	assert_true(exists(rpath(f, ".git/packed-refs")));
	missing(f, "refs/heads/nope");
	missing(f, "refs/heads/a");
	same(f, "refs/heads/a/b");

	/* an empty packed-refs, and one with only the header */
	put(f, ".git/packed-refs", "");
	missing(f, "refs/heads/a/b");
	put(f, ".git/packed-refs", "# pack-refs with: peeled fully-peeled sorted \n");
	missing(f, "refs/heads/a/b");
	missing(f, "refs/heads/main"); /* it was packed too */
}

static void test_foreign_stores(void **state)
{
	struct fx *f = *state;
	char oid[GITREF_OID_MAX + 1], wt[PATH_MAX], sep[PATH_MAX], link[PATH_MAX],
		git_dir[PATH_MAX], *same_git;

	/* a linked worktree: .git is a "gitdir:" file */
	shrun(f, "git worktree add -q ../wt -b wtb");
	assert_true(snprintf(wt, sizeof(wt), "%s/wt", f->root) < (int)sizeof(wt));
	assert_int_equal(gitref_read(wt, "refs/heads/main", oid), -ENOTSUP);
	assert_int_equal(gitref_read(wt, "HEAD", oid), -ENOTSUP);
	/* the main checkout still reads, its branch made by worktree add too */
	same(f, "refs/heads/wtb");
	same(f, "HEAD");

	/* git init --separate-git-dir: .git is a file too */
	assert_int_equal(sh(f, f->root, NULL,
			    "git init -q -b main --separate-git-dir=sep.git sep && cd sep && " GITC
			    " commit -q --allow-empty -m s"),
			 0);
	assert_true(snprintf(sep, sizeof(sep), "%s/sep", f->root) < (int)sizeof(sep));
	same_git = git_rev(f, sep, "refs/heads/main");
	assert_non_null(same_git); /* git reads it */
	free(same_git);
	assert_int_equal(gitref_read(sep, "refs/heads/main", oid), -ENOTSUP);

	/* .git a symlink to a real git dir */
	assert_true(snprintf(link, sizeof(link), "%s/link", f->root) < (int)sizeof(link));
	assert_true(snprintf(git_dir, sizeof(git_dir), "%s/.git", link) < (int)sizeof(git_dir));
	assert_int_equal(mkdir(link, 0700), 0);
	assert_int_equal(symlink(rpath(f, ".git"), git_dir), 0);
	assert_int_equal(gitref_read(link, "refs/heads/main", oid), -ENOTSUP);

	/* no repository at all */
	assert_int_equal(gitref_read(f->root, "refs/heads/main", oid), -ENOTSUP);

	/* the reftable store; a commondir file */
	assert_int_equal(mkdir(rpath(f, ".git/reftable"), 0700), 0);
	notsup(f, "refs/heads/main");
	notsup(f, "HEAD");
	assert_int_equal(rmdir(rpath(f, ".git/reftable")), 0);
	same(f, "refs/heads/main");
	put(f, ".git/reftable", "");
	notsup(f, "refs/heads/main");
	assert_int_equal(unlink(rpath(f, ".git/reftable")), 0);
	put(f, ".git/commondir", "..\n");
	notsup(f, "refs/heads/main");
	assert_int_equal(unlink(rpath(f, ".git/commondir")), 0);
	same(f, "refs/heads/main");
}

static void test_hostile_loose(void **state)
{
	struct fx *f = *state;
	char main_oid[GITREF_OID_MAX + 1], up[64], buf[GITREF_LOOSE_MAX + 64], *got;
	size_t i;

	got = git_rev(f, f->repo, "refs/heads/main");
	assert_non_null(got);
	assert_int_equal(strlen(got), 40);
	memcpy(main_oid, got, 41);
	free(got);

	/* a FIFO must not block the reader (nobody ever writes to it) */
	assert_int_equal(mkfifo(rpath(f, ".git/refs/heads/fifo"), 0600), 0);
	signal(SIGALRM, on_alarm);
	alarm(30);
	notsup(f, "refs/heads/fifo");
	alarm(0);

	/* a symlink at the ref's path (git follows it; this leaves it to git),
	 * and a dangling one */
	assert_int_equal(symlink("main", rpath(f, ".git/refs/heads/link")), 0);
	notsup(f, "refs/heads/link");
	assert_int_equal(symlink("/nonexistent/x", rpath(f, ".git/refs/heads/dangling")), 0);
	notsup(f, "refs/heads/dangling");

	/* bigger than GITREF_LOOSE_MAX: the object id, then padding */
	memset(buf, '\n', sizeof(buf));
	memcpy(buf, main_oid, 40);
	put_n(f, ".git/refs/heads/big", buf, GITREF_LOOSE_MAX + 1);
	notsup(f, "refs/heads/big");
	put_n(f, ".git/refs/heads/big", buf, GITREF_LOOSE_MAX);
	notsup(f, "refs/heads/big"); /* read, but not one line */

	put(f, ".git/refs/heads/garbage", "hello world\n");
	notsup_git_fails(f, "refs/heads/garbage");
	put(f, ".git/refs/heads/empty", "");
	notsup_git_fails(f, "refs/heads/empty");

	/* upper-case hex: git reads it, this does not */
	for (i = 0; main_oid[i]; i++)
		up[i] = main_oid[i] >= 'a' && main_oid[i] <= 'f' ? (char)(main_oid[i] - 32)
								 : main_oid[i];
	up[i] = '\n';
	up[i + 1] = '\0';
	put(f, ".git/refs/heads/upper", up);
	notsup(f, "refs/heads/upper");

	/* 39 and 41 hex digits */
	(void)snprintf(buf, sizeof(buf), "%.39s\n", main_oid);
	put(f, ".git/refs/heads/short", buf);
	notsup_git_fails(f, "refs/heads/short");
	(void)snprintf(buf, sizeof(buf), "%sa\n", main_oid);
	put(f, ".git/refs/heads/long", buf);
	notsup_git_fails(f, "refs/heads/long");

	/* what git would read but this module's grammar does not */
	(void)snprintf(buf, sizeof(buf), "%s\r\n", main_oid);
	put(f, ".git/refs/heads/crlf", buf);
	notsup(f, "refs/heads/crlf");
	(void)snprintf(buf, sizeof(buf), "%s \n", main_oid);
	put(f, ".git/refs/heads/space", buf);
	notsup(f, "refs/heads/space");
	(void)snprintf(buf, sizeof(buf), "%s\nextra\n", main_oid);
	put(f, ".git/refs/heads/twolines", buf);
	notsup(f, "refs/heads/twolines");
	(void)snprintf(buf, sizeof(buf), "%s", main_oid);
	buf[10] = '\0';
	put_n(f, ".git/refs/heads/nul", buf, 40);
	notsup_git_fails(f, "refs/heads/nul");
	/* without the newline is fine */
	put(f, ".git/refs/heads/nonl", main_oid);
	same(f, "refs/heads/nonl");

	/* symbolic refs to bad names, to HEAD */
	put(f, ".git/refs/heads/bad1", "ref: refs/heads/bad..name\n");
	notsup_git_fails(f, "refs/heads/bad1");
	put(f, ".git/refs/heads/bad2", "ref: refs/heads/dot.\n");
	put(f, ".git/refs/heads/dot.", "ref: refs/heads/main\n");
	notsup_git_fails(f, "refs/heads/bad2");
	put(f, ".git/refs/heads/bad3", "ref: ../../config\n");
	notsup_git_fails(f, "refs/heads/bad3");
	put(f, ".git/refs/heads/bad4", "ref: refs/heads/a b\n");
	notsup_git_fails(f, "refs/heads/bad4");
	put(f, ".git/refs/heads/tohead", "ref: HEAD\n");
	notsup(f, "refs/heads/tohead");

	/* names refused before any file is opened */
	notsup(f, "refs/heads/dot.");
	notsup(f, "refs/heads/../../config");
	notsup(f, "main");
	notsup(f, "refs/heads/main.lock");

	/* a loop, a self loop */
	put(f, ".git/refs/heads/la", "ref: refs/heads/lb\n");
	put(f, ".git/refs/heads/lb", "ref: refs/heads/la\n");
	notsup_git_fails(f, "refs/heads/la");
	put(f, ".git/refs/heads/self", "ref: refs/heads/self\n");
	notsup_git_fails(f, "refs/heads/self");

	/* a chain: sN points at s(N-1), s1 at main. git reads GITREF_MAX_DEPTH
	 * files at most (s4 -> s3 -> s2 -> s1 -> main); one more is refused by
	 * both */
	put(f, ".git/refs/heads/s1", "ref: refs/heads/main\n");
	for (i = 2; i <= GITREF_MAX_DEPTH + 1; i++) {
		char name[64], content[64];

		(void)snprintf(name, sizeof(name), ".git/refs/heads/s%zu", i);
		(void)snprintf(content, sizeof(content), "ref: refs/heads/s%zu\n", i - 1);
		put(f, name, content);
	}
	for (i = 1; i <= GITREF_MAX_DEPTH + 1; i++) {
		char name[64];

		(void)snprintf(name, sizeof(name), "refs/heads/s%zu", i);
		if (i < GITREF_MAX_DEPTH)
			same(f, name);
		else
			notsup_git_fails(f, name);
	}
	/* HEAD -> s3 -> s2 -> s1 -> main is 5 files too */
	shrun(f, "git symbolic-ref HEAD refs/heads/s3");
	same(f, "HEAD");
	shrun(f, "git symbolic-ref HEAD refs/heads/s4");
	notsup_git_fails(f, "HEAD");

	/* a FIFO as HEAD; no HEAD */
	assert_int_equal(unlink(rpath(f, ".git/HEAD")), 0);
	notsup(f, "HEAD");
	assert_int_equal(mkfifo(rpath(f, ".git/HEAD"), 0600), 0);
	alarm(30);
	notsup(f, "HEAD");
	alarm(0);
}

static void test_hostile_packed(void **state)
{
	struct fx *f = *state;
	char *o = git_rev(f, f->repo, "refs/heads/main"), buf[4096], zero[41];
	static const char hdr[] = "# pack-refs with: peeled fully-peeled sorted \n";
	int fd;

	assert_non_null(o);
	memset(zero, '0', 40);
	zero[40] = '\0';
	zero[39] = '3';
	/* refs/heads/main is loose: every lookup below is of a packed-only ref */

	/* a well-formed file with a peeled line after a tag */
	(void)snprintf(buf, sizeof(buf), "%s%s refs/heads/p1\n%s refs/tags/t1\n^%s\n", hdr, o, zero,
		       o);
	put(f, ".git/packed-refs", buf);
	same(f, "refs/heads/p1");
	missing(f, "refs/heads/p2");

	/* a malformed line before or after the ref: git's answer depends on
	 * where its binary search lands, so neither is read */
	(void)snprintf(buf, sizeof(buf), "%s%s refs/heads/p1\ngarbage line\n%s refs/heads/p2\n",
		       hdr, o, o);
	put(f, ".git/packed-refs", buf);
	notsup(f, "refs/heads/p1");
	notsup(f, "refs/heads/p2");
	notsup(f, "refs/heads/nope");
	same(f, "refs/heads/main"); /* loose: packed-refs is not read */

	/* a name twice: git may find either */
	(void)snprintf(buf, sizeof(buf), "%s%s refs/heads/p1\n%s refs/heads/p1\n", hdr, o, zero);
	put(f, ".git/packed-refs", buf);
	notsup(f, "refs/heads/p1");

	/* unsorted (git's binary search misses p1) */
	(void)snprintf(buf, sizeof(buf), "%s%s refs/heads/zz\n%s refs/heads/p1\n", hdr, o, o);
	put(f, ".git/packed-refs", buf);
	notsup(f, "refs/heads/p1");

	/* no newline at the end: git stops with "unterminated line" */
	(void)snprintf(buf, sizeof(buf), "%s%s refs/heads/p1", hdr, o);
	put(f, ".git/packed-refs", buf);
	notsup_git_fails(f, "refs/heads/p1");

	/* "\r\n": the name is "refs/heads/p1\r", which git does not find either */
	(void)snprintf(buf, sizeof(buf), "%s%s refs/heads/p1\r\n", hdr, o);
	put(f, ".git/packed-refs", buf);
	missing(f, "refs/heads/p1");

	/* a peeled line first, a peeled line of another width */
	(void)snprintf(buf, sizeof(buf), "%s^%s\n%s refs/heads/p1\n", hdr, o, o);
	put(f, ".git/packed-refs", buf);
	notsup(f, "refs/heads/p1");
	(void)snprintf(buf, sizeof(buf), "%s%s refs/tags/t1\n^%s%s\n", hdr, o, o,
		       "000000000000000000000000");
	put(f, ".git/packed-refs", buf);
	notsup(f, "refs/tags/t1");

	/* a comment line after the header; an unknown header */
	(void)snprintf(buf, sizeof(buf), "%s# hi\n%s refs/heads/p1\n", hdr, o);
	put(f, ".git/packed-refs", buf);
	notsup(f, "refs/heads/p1");
	(void)snprintf(buf, sizeof(buf), "# something else\n%s refs/heads/p1\n", o);
	put(f, ".git/packed-refs", buf);
	notsup_git_fails(f, "refs/heads/p1");

	/* no header at all is fine (git's older files) */
	(void)snprintf(buf, sizeof(buf), "%s refs/heads/p1\n", o);
	put(f, ".git/packed-refs", buf);
	same(f, "refs/heads/p1");

	/* a FIFO, a symlink, a directory as packed-refs */
	assert_int_equal(unlink(rpath(f, ".git/packed-refs")), 0);
	assert_int_equal(mkfifo(rpath(f, ".git/packed-refs"), 0600), 0);
	signal(SIGALRM, on_alarm);
	alarm(30);
	notsup(f, "refs/heads/p1");
	alarm(0);
	assert_int_equal(unlink(rpath(f, ".git/packed-refs")), 0);
	put(f, ".git/elsewhere", buf);
	assert_int_equal(symlink("elsewhere", rpath(f, ".git/packed-refs")), 0);
	notsup(f, "refs/heads/p1");
	assert_int_equal(unlink(rpath(f, ".git/packed-refs")), 0);
	assert_int_equal(mkdir(rpath(f, ".git/packed-refs"), 0700), 0);
	notsup(f, "refs/heads/p1");
	assert_int_equal(rmdir(rpath(f, ".git/packed-refs")), 0);

	/* bigger than GITREF_PACKED_MAX (sparse) */
	put(f, ".git/packed-refs", buf);
	fd = open(rpath(f, ".git/packed-refs"), O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)GITREF_PACKED_MAX + 1), 0);
	close(fd);
	notsup(f, "refs/heads/p1");
	free(o);
}

static void test_sha256(void **state)
{
	struct fx *f = *state;
	char dir[PATH_MAX], oid[GITREF_OID_MAX + 1], *packed;

	if (sh(f, f->root, NULL,
	       "git init -q -b main --object-format=sha256 r256 && cd r256 && " GITC
	       " commit -q --allow-empty -m x") != 0)
		skip(); /* a git without SHA-256 */
	assert_true(snprintf(dir, sizeof(dir), "%s/r256", f->root) < (int)sizeof(dir));
	same_in(f, dir, "refs/heads/main", 64);
	same_in(f, dir, "HEAD", 64);
	assert_int_equal(sh(f, dir, NULL,
			    "git branch side && " GITC " tag -a v1 -m v1 && git pack-refs --all"),
			 0);
	memcpy(f->repo, dir, sizeof(dir));
	packed = slurp(f, ".git/packed-refs");
	assert_non_null(strstr(packed, "\n^"));
	free(packed);
	same_in(f, dir, "refs/heads/side", 64);
	same_in(f, dir, "refs/tags/v1", 64);
	same_in(f, dir, "HEAD", 64);
	assert_int_equal(gitref_read(dir, "refs/heads/nope", oid), -ENOENT);
}

/* ---- the parsers on their own ----------------------------------------------- */

#define H40 "0123456789abcdef0123456789abcdef01234567"
#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int loose(const char *s, size_t n, char *oid, char *target)
{
	return gitref_parse_loose(s, n, oid, target, 64);
}

static void test_parse_loose(void **state)
{
	char oid[GITREF_OID_MAX + 1], target[64];

	(void)state;
	assert_int_equal(loose(H40 "\n", 41, oid, target), 1);
	assert_string_equal(oid, H40);
	assert_int_equal(loose(H40, 40, oid, target), 1); /* no newline */
	assert_string_equal(oid, H40);
	assert_int_equal(loose(H64 "\n", 65, oid, target), 1);
	assert_string_equal(oid, H64);
	assert_int_equal(loose("ref: refs/heads/main\n", 21, oid, target), 2);
	assert_string_equal(target, "refs/heads/main");
	assert_int_equal(loose("ref: refs/heads/main", 20, oid, target), 2);
	assert_string_equal(target, "refs/heads/main");
	assert_int_equal(loose("ref: HEAD\n", 10, oid, target), 2);
	assert_string_equal(target, "HEAD");

	assert_int_equal(loose("", 0, oid, target), -EBADMSG);
	assert_int_equal(loose("\n", 1, oid, target), -EBADMSG);
	assert_int_equal(loose(H40 "\n\n", 42, oid, target), -EBADMSG);
	assert_int_equal(loose(H40 "\r\n", 42, oid, target), -EBADMSG);
	assert_int_equal(loose(H40 " \n", 42, oid, target), -EBADMSG);
	assert_int_equal(loose(H40 "\0\n", 42, oid, target), -EBADMSG);
	assert_int_equal(loose("0123\0"
			       "56789abcdef0123456789abcdef01234567\n",
			       41, oid, target),
			 -EBADMSG);
	assert_int_equal(loose(H40 "0\n", 42, oid, target), -EBADMSG); /* 41 */
	assert_int_equal(loose(H40 "0\n", 40, oid, target), 1);	       /* the first 40 */
	assert_int_equal(loose(H40, 39, oid, target), -EBADMSG);       /* 39 */
	assert_int_equal(loose(H64 "0", 65, oid, target), -EBADMSG);   /* 65 */
	assert_int_equal(loose("0123456789ABCDEF0123456789abcdef01234567", 40, oid, target),
			 -EBADMSG);
	assert_int_equal(loose("g123456789abcdef0123456789abcdef01234567", 40, oid, target),
			 -EBADMSG);
	assert_int_equal(loose("ref: \n", 6, oid, target), -EBADMSG);
	assert_int_equal(loose("ref: ", 5, oid, target), -EBADMSG);
	assert_int_equal(loose("ref:refs/heads/main\n", 20, oid, target), -EBADMSG);
	assert_int_equal(loose("ref: refs/heads/main \n", 22, oid, target), -EBADMSG);
	assert_int_equal(loose("ref: refs/heads/main\r\n", 22, oid, target), -EBADMSG);
	assert_int_equal(loose("ref: refs/heads/ma\0in\n", 22, oid, target), -EBADMSG);
	assert_int_equal(loose("ref: refs/heads/../x\n", 21, oid, target), -EBADMSG);
	assert_int_equal(loose("ref: main\n", 10, oid, target), -EBADMSG);
	assert_int_equal(loose("ref: refs/heads/main\nref: refs/heads/x\n", 39, oid, target),
			 -EBADMSG);

	/* the target buffer: exactly enough, one byte short */
	assert_int_equal(gitref_parse_loose("ref: refs/heads/main", 20, oid, target, 16), 2);
	assert_string_equal(target, "refs/heads/main");
	assert_int_equal(gitref_parse_loose("ref: refs/heads/main", 20, oid, target, 15), -EBADMSG);
}

static int lookup_packed(const char *s, const char *name, char *oid)
{
	return gitref_parse_packed(s, strlen(s), name, oid);
}

static void test_parse_packed(void **state)
{
	static const char good[] =
		"# pack-refs with: peeled fully-peeled sorted \n" H40 " refs/heads/a/b\n" H40
		" refs/heads/main\n" H40 " refs/tags/v1\n^" H40 "\n";
	char oid[GITREF_OID_MAX + 1];

	(void)state;
	assert_int_equal(lookup_packed(good, "refs/heads/main", oid), 1);
	assert_string_equal(oid, H40);
	assert_int_equal(lookup_packed(good, "refs/tags/v1", oid), 1);
	assert_int_equal(lookup_packed(good, "refs/heads/a/b", oid), 1);
	assert_int_equal(lookup_packed(good, "refs/heads/a", oid), 0);
	assert_int_equal(lookup_packed(good, "refs/heads/mai", oid), 0);
	assert_int_equal(lookup_packed(good, "refs/heads/main2", oid), 0);
	assert_int_equal(lookup_packed(good, "HEAD", oid), 0);

	/* empty; only a header; 64-hex ids */
	assert_int_equal(gitref_parse_packed("", 0, "refs/heads/main", oid), 0);
	assert_int_equal(lookup_packed("# pack-refs with: peeled fully-peeled sorted \n",
				       "refs/heads/x", oid),
			 0);
	assert_int_equal(lookup_packed("# pack-refs with: peeled", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(lookup_packed(H64 " refs/heads/x\n" H64 " refs/tags/y\n^" H64 "\n",
				       "refs/tags/y", oid),
			 1);
	assert_string_equal(oid, H64);

	/* mixed widths, in either order, and in a peeled line */
	assert_int_equal(
		lookup_packed(H40 " refs/heads/x\n" H64 " refs/heads/y\n", "refs/heads/x", oid),
		-EBADMSG);
	assert_int_equal(
		lookup_packed(H64 " refs/heads/x\n" H40 " refs/heads/y\n", "refs/heads/y", oid),
		-EBADMSG);
	assert_int_equal(lookup_packed(H40 " refs/tags/x\n^" H64 "\n", "refs/tags/x", oid),
			 -EBADMSG);

	/* the whole file is checked, before and after the line looked up */
	assert_int_equal(
		lookup_packed(H40 " refs/heads/x\n" H40 " refs/heads/y\n", "refs/heads/y", oid), 1);
	assert_int_equal(lookup_packed(H40 " refs/heads/x\nbad\n" H40 " refs/heads/y\n",
				       "refs/heads/x", oid),
			 -EBADMSG);
	assert_int_equal(
		lookup_packed(H40 " refs/heads/x\n" H40 " refs/heads/y", "refs/heads/x", oid),
		-EBADMSG); /* no final newline */
	assert_int_equal(lookup_packed(H40 " refs/heads/x\r\n", "refs/heads/x", oid),
			 0); /* "x\r" */
	assert_int_equal(lookup_packed(H40 " refs/heads/x\n\n", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(
		lookup_packed(H40 " refs/heads/y\n" H40 " refs/heads/x\n", "refs/heads/x", oid),
		-EBADMSG); /* unsorted */
	assert_int_equal(
		lookup_packed(H40 " refs/heads/x\n" H40 " refs/heads/x\n", "refs/heads/x", oid),
		-EBADMSG); /* twice */
	assert_int_equal(
		lookup_packed(H40 " refs/heads/x\n" H40 " refs/heads/x/y\n", "refs/heads/x", oid),
		1); /* a prefix sorts first */
	assert_int_equal(lookup_packed(H40 " refs/heads/x\n# c\n", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(
		lookup_packed("# other header\n" H40 " refs/heads/x\n", "refs/heads/x", oid),
		-EBADMSG);
	assert_int_equal(lookup_packed("^" H40 "\n" H40 " refs/heads/x\n", "refs/heads/x", oid),
			 -EBADMSG);
	assert_int_equal(
		lookup_packed(H40 " refs/tags/x\n^" H40 "\n^" H40 "\n", "refs/tags/x", oid),
		-EBADMSG);
	assert_int_equal(lookup_packed(H40 " refs/tags/x\n^" H40 " \n", "refs/tags/x", oid),
			 -EBADMSG);
	assert_int_equal(lookup_packed(H40 "  refs/heads/x\n", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(lookup_packed(H40 " refs/heads/x y\n", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(lookup_packed(H40 "\n", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(lookup_packed(H40 " \n", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(lookup_packed(H40 "0 refs/heads/x\n", "refs/heads/x", oid), -EBADMSG);
	assert_int_equal(lookup_packed("0123456789ABCDEF0123456789abcdef01234567 refs/heads/x\n",
				       "refs/heads/x", oid),
			 -EBADMSG);
	{
		static const char nul[] = H40 " refs/heads/x\0y\n";

		assert_int_equal(gitref_parse_packed(nul, sizeof(nul) - 1, "refs/heads/x", oid),
				 -EBADMSG);
	}
	/* a name this module does not read is checked but never found */
	assert_int_equal(lookup_packed(H40 " refs/heads/\xc3\xa9\n", "refs/heads/x", oid), 0);
	assert_int_equal(lookup_packed(H40 " refs/heads/x..y\n", "refs/heads/x..y", oid), 0);
}

/* ---- names ------------------------------------------------------------------ */

static void test_name_ok(void **state)
{
	static const char *const good[] = {"HEAD",
					   "refs/heads/main",
					   "refs/heads/a/b",
					   "refs/tags/v1.0",
					   "refs/x",
					   "refs/heads/feat-1_2+3",
					   "refs/heads/a./b",
					   "refs/heads/a.b",
					   "refs/heads/-x",
					   "refs/heads/lock",
					   "refs/heads/x.lock2",
					   "refs/remotes/origin/HEAD",
					   NULL};
	static const char *const bad[] = {"",
					  "HEAD ",
					  "head",
					  "main",
					  "refs",
					  "refs/",
					  "refs//x",
					  "refs/heads/",
					  "refs/heads//x",
					  "refs/heads/a..b",
					  "refs/heads/..",
					  "refs/heads/.x",
					  "refs/.heads/x",
					  "refs/heads/x.lock",
					  "refs/heads/x.lock/y",
					  "refs/heads/x.",
					  "refs/heads/x@{1}",
					  "refs/heads/@{",
					  "refs/heads/a b",
					  "refs/heads/a\tb",
					  "refs/heads/\xc3\xa9",
					  "refs/heads/a~1",
					  "refs/heads/a^",
					  "refs/heads/a:b",
					  "refs/heads/a?",
					  "refs/heads/a*",
					  "refs/heads/a[",
					  "refs/heads/a\\b",
					  "refs/heads/a\nb",
					  "/refs/heads/x",
					  "refs/heads/x/",
					  "FETCH_HEAD",
					  "refs/heads/@",
					  NULL};
	char longname[1100];
	size_t i;

	(void)state;
	for (i = 0; good[i]; i++)
		if (!gitref_name_ok(good[i]))
			fail_msg("refused '%s'", good[i]);
	for (i = 0; bad[i]; i++)
		if (gitref_name_ok(bad[i]))
			fail_msg("accepted '%s'", bad[i]);
	assert_false(gitref_name_ok(NULL));
	memcpy(longname, "refs/heads/", 11);
	memset(longname + 11, 'x', 1024 - 11);
	longname[1024] = '\0';
	assert_true(gitref_name_ok(longname));
	longname[1024] = 'x';
	longname[1025] = '\0';
	assert_false(gitref_name_ok(longname));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_loose),
		cmocka_unit_test(test_parse_packed),
		cmocka_unit_test(test_name_ok),
		cmocka_unit_test_setup_teardown(test_loose_and_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_packed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_stores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_loose, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_packed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sha256, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
