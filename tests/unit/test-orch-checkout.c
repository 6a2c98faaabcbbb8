/* orch/checkout: a task's worktree and a sandboxed task's clone through the
 * one interface the run loop uses (make, git environment, changes, commit,
 * commits over the base, publish, set aside, remove), against real git
 * repositories made in a mkdtemp dir. Every git call runs with HOME=<the
 * temp dir>, GIT_CONFIG_NOSYSTEM=1 and GIT_CEILING_DIRECTORIES, and the
 * environment a run gives worktree.c (BERNSTEIN_GIT_REPO = the main
 * checkout). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "orch/checkout.h"
#include "proc/landlock.h"
#include "test-sh.h"
#include "util/strvec.h"

#define TEST_PATH "/usr/local/bin:/usr/bin:/bin"
#define GITC	  "git -c user.name=Setup -c user.email=setup@example.invalid"

static const struct git_identity ident = {"Bernstein Test", "bernstein@example.invalid"};

struct fx {
	char root[PATH_MAX];   /* the temp dir (real path) */
	char repo[PATH_MAX];   /* root/repo: main checkout on 'main', one commit */
	char path[PATH_MAX];   /* repo/.bernstein/worktrees/s1: the checkout */
	char base[64];	       /* main's commit */
	struct strvec env;     /* the tests' shell commands */
	struct strvec git_env; /* what the run gives worktree.c */
	struct checkout co;
};

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

static void assert_out(struct fx *f, const char *dir, const char *cmd, const char *want)
{
	char *got = shok(f, dir, "%s", cmd);

	assert_string_equal(got, want);
	free(got);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static bool has_branch(struct fx *f, const char *branch)
{
	bool b = false;
	struct diag d;

	assert_int_equal(
		git_branch_exists(f->repo, branch, (const char *const *)f->git_env.v, &b, &d), 0);
	return b;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char tmpl[] = "/tmp/bernstein-co-XXXXXX";
	char *out;

	assert_non_null(f);
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, f->root));
	assert_true(snprintf(f->repo, sizeof(f->repo), "%s/repo", f->root) < PATH_MAX);
	assert_true(snprintf(f->path, sizeof(f->path), "%s/.bernstein/worktrees/s1", f->repo) <
		    PATH_MAX);
	strvec_init(&f->env);
	strvec_push(&f->env, "PATH=" TEST_PATH);
	strvec_pushf(&f->env, "HOME=%s", f->root);
	strvec_push(&f->env, "LC_ALL=C");
	strvec_push(&f->env, "GIT_CONFIG_NOSYSTEM=1");
	strvec_pushf(&f->env, "GIT_CEILING_DIRECTORIES=%s", f->root);
	strvec_init(&f->git_env);
	strvec_pushv(&f->git_env, f->env.v);
	strvec_pushf(&f->git_env, "%s=%s", WORKTREE_GIT_REPO_ENV, f->repo);
	free(shok(
		f, f->root,
		"git init -q -b main repo && cd repo && echo a > a.txt && printf '.bernstein/\\n' > .gitignore && git add . && " GITC
		" commit -q -m base"));
	out = shok(f, f->repo, "git rev-parse HEAD");
	assert_int_equal(strlen(out), 40);
	memcpy(f->base, out, 41);
	free(out);
	checkout_init(&f->co);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	checkout_release(&f->co);
	/* an overlay a failed test left mounted: down before rm -rf */
	free(shok(
		f, NULL,
		"for m in $(awk -v d=%s/ 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo); do umount -l \"$m\"; done; true",
		f->root));
	free(shok(f, NULL, "rm -rf %s", f->root));
	assert_false(exists(f->root));
	strvec_clear(&f->env);
	strvec_clear(&f->git_env);
	free(f);
	return 0;
}

#define FX struct fx *f = *state

static void bind(struct fx *f, enum checkout_kind kind)
{
	checkout_bind(&f->co, kind, f->repo, (const char *const *)f->git_env.v, f->path,
		      "bernstein/s1");
	assert_true(checkout_bound(&f->co));
}

/* The agent's work: a file changed, one added. */
static void agent_writes(struct fx *f)
{
	free(shok(f, f->path, "echo changed > a.txt && echo new > n.txt"));
}

/* ---- a worktree ---- */

static void test_worktree(void **state)
{
	FX;
	struct checkout *co = &f->co;
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT, files = STRVEC_INIT;
	char aside[PATH_MAX + 16], *head = NULL, *tip;
	uint64_t timeout = 0;
	bool committed = false;
	unsigned ahead = 99;
	struct diag d;

	checkout_init(co);
	assert_false(checkout_bound(co));
	bind(f, CHECKOUT_WORKTREE);
	assert_string_equal(checkout_noun(co), "worktree");
	/* git in a worktree runs with the run's environment, nothing added */
	assert_ptr_equal(checkout_git_env(co), f->git_env.v);
	/* made by a command the supervisor runs */
	assert_int_equal(checkout_command(co, "main", &argv, &env, &timeout, &d), 1);
	assert_true(argv.nr > 3);
	assert_true(timeout > 0);
	strvec_clear(&argv);
	strvec_clear(&env);
	assert_null(co->start);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	assert_non_null(co->start);
	assert_string_equal(co->start, f->base);
	assert_int_equal(checkout_check(co, &d), 0);
	assert_false(checkout_moved(co));
	/* a worktree's branch is the repository's from the start */
	assert_true(has_branch(f, "bernstein/s1"));

	agent_writes(f);
	assert_int_equal(checkout_changes(co, &files, &d), 0);
	assert_int_equal(files.nr, 2);
	strvec_clear(&files);
	assert_int_equal(checkout_commit(co, "work", &ident, &committed, &d), 0);
	assert_true(committed);
	assert_true(checkout_moved(co));
	assert_int_equal(checkout_ahead(co, "main", &ahead, &d), 0);
	assert_int_equal(ahead, 1);
	assert_int_equal(checkout_changed_files(co, "main", &files, &d), 0);
	assert_int_equal(files.nr, 2);
	strvec_clear(&files);
	assert_int_equal(checkout_publish(co, "main", &ahead, &head, &d), 0);
	assert_int_equal(ahead, 1);
	assert_non_null(head);
	tip = shok(f, f->repo, "git rev-parse refs/heads/bernstein/s1");
	assert_string_equal(head, tip);
	free(tip);
	free(head);

	/* removed: the tree, not the branch */
	assert_int_equal(checkout_remove(co, false, &d), 0);
	assert_false(exists(f->path));
	assert_true(has_branch(f, "bernstein/s1"));
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c ^worktree", "1");
	(void)snprintf(aside, sizeof(aside), "%s" CHECKOUT_ASIDE_SUFFIX, f->path);
	assert_false(exists(aside));
}

/* A clean worktree goes aside in one rename, and its files later. */
static void test_worktree_set_aside(void **state)
{
	FX;
	struct checkout *co = &f->co;
	char aside[PATH_MAX + 16];
	struct diag d;

	bind(f, CHECKOUT_WORKTREE);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	(void)snprintf(aside, sizeof(aside), "%s" CHECKOUT_ASIDE_SUFFIX, f->path);
	assert_int_equal(checkout_set_aside(co), 0);
	assert_false(exists(f->path));
	assert_true(exists(aside));
	assert_int_equal(checkout_remove(co, true, &d), 0);
	assert_false(exists(aside));
}

/* Made by the supervised command: checkout_make() adds nothing, and the
 * start is read from the branch. */
static void test_worktree_by_command(void **state)
{
	FX;
	struct checkout *co = &f->co;
	struct diag d;

	bind(f, CHECKOUT_WORKTREE);
	free(shok(f, f->repo, "git worktree add -q -b bernstein/s1 %s main", f->path));
	checkout_command_ended(co);
	assert_non_null(co->start);
	assert_string_equal(co->start, f->base);
	assert_int_equal(checkout_make(co, "main", true, &d), 0);
	assert_string_equal(co->start, f->base);
	assert_false(checkout_moved(co));
}

/* ---- a clone ---- */

static void test_clone(void **state)
{
	FX;
	struct checkout *co = &f->co;
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT, files = STRVEC_INIT;
	const char *const *genv;
	char confine[PATH_MAX + 64], *head = NULL, *tip;
	uint64_t timeout = 0;
	bool committed = false, found = false;
	unsigned ahead = 99;
	struct diag d;
	size_t i;

	if (landlock_abi_version() < 0)
		skip(); /* git in a clone runs confined, or not at all */
	bind(f, CHECKOUT_CLONE);
	assert_string_equal(checkout_noun(co), "clone");
	/* git in the clone runs confined to it */
	genv = checkout_git_env(co);
	(void)snprintf(confine, sizeof(confine), "%s=%s", WORKTREE_GIT_CONFINE_ENV, f->path);
	for (i = 0; genv[i]; i++)
		found = found || strcmp(genv[i], confine) == 0;
	assert_true(found);
	/* no command: made in the loop */
	assert_int_equal(checkout_command(co, "main", &argv, &env, &timeout, &d), 0);
	assert_int_equal(argv.nr, 0);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	assert_non_null(co->start);
	assert_string_equal(co->start, f->base);
	assert_int_equal(checkout_check(co, &d), 0);
	assert_false(checkout_moved(co));
	/* the branch is the clone's alone until it is published */
	assert_false(has_branch(f, "bernstein/s1"));
	/* a clone is not set aside: it goes whole */
	assert_int_equal(checkout_set_aside(co), -EOPNOTSUPP);
	assert_true(exists(f->path));

	/* nothing done: nothing published, no empty branch in the repository */
	assert_int_equal(checkout_publish(co, "main", &ahead, &head, &d), 0);
	assert_int_equal(ahead, 0);
	assert_null(head);
	assert_false(has_branch(f, "bernstein/s1"));

	agent_writes(f);
	assert_int_equal(checkout_changes(co, &files, &d), 0);
	assert_int_equal(files.nr, 2);
	strvec_clear(&files);
	assert_int_equal(checkout_commit(co, "work", &ident, &committed, &d), 0);
	assert_true(committed);
	assert_true(checkout_moved(co));
	assert_int_equal(checkout_ahead(co, "main", &ahead, &d), 0);
	assert_int_equal(ahead, 1);
	assert_int_equal(checkout_changed_files(co, "main", &files, &d), 0);
	assert_int_equal(files.nr, 2);
	strvec_clear(&files);
	assert_false(has_branch(f, "bernstein/s1"));
	assert_int_equal(checkout_publish(co, "main", &ahead, &head, &d), 0);
	assert_int_equal(ahead, 1);
	assert_non_null(head);
	tip = shok(f, f->path, "git rev-parse HEAD");
	assert_string_equal(head, tip);
	free(tip);
	free(head);
	/* the user's branch did not move */
	assert_out(f, f->repo, "git rev-parse refs/heads/main", f->base);

	assert_int_equal(checkout_remove(co, false, &d), 0);
	assert_false(exists(f->path));
	assert_true(has_branch(f, "bernstein/s1"));
}

/* A clone whose .git the agent replaced: no git runs there. */
static void test_clone_tampered(void **state)
{
	FX;
	struct checkout *co = &f->co;
	struct diag d;

	if (landlock_abi_version() < 0)
		skip();
	bind(f, CHECKOUT_CLONE);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	free(shok(f, f->path, "rm -rf .git && ln -s ../../../.git .git"));
	assert_int_equal(checkout_check(co, &d), -EPERM);
	assert_int_equal(checkout_remove(co, false, &d), 0);
	assert_false(exists(f->path));
	/* the symlink was not followed */
	assert_true(exists(f->repo));
	assert_out(f, f->repo, "git rev-parse HEAD", f->base);
}

/* ---- an overlay worktree ---- */

/* What /proc/self/mountinfo says is mounted at path: its fstype, or "". */
static char *mounted(struct fx *f, const char *path)
{
	return shok(
		f, NULL,
		"awk -v d=%s '$5 == d { split($0, a, \" - \"); split(a[2], b, \" \"); t = b[1] } END { print t }' /proc/self/mountinfo",
		path);
}

static bool overlay_here(struct fx *f)
{
	struct diag d;

	if (checkout_overlay_probe(f->repo, &d) == 0)
		return true;
	print_message("overlay not mountable here (%s): skipped\n", d.msg);
	return false;
}

static void test_overlay(void **state)
{
	FX;
	struct checkout *co = &f->co;
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT, files = STRVEC_INIT;
	char layer[PATH_MAX + 64], base[PATH_MAX + 128], *head = NULL, *t;
	uint64_t timeout = 0;
	bool committed = false;
	unsigned ahead = 99;
	size_t n = 99;
	struct diag d;

	if (!overlay_here(f))
		skip();
	(void)snprintf(layer, sizeof(layer), "%s/" CHECKOUT_OVERLAY_DIR "/task/s1", f->repo);
	(void)snprintf(base, sizeof(base), "%s/" CHECKOUT_OVERLAY_DIR "/base/%s/tree", f->repo,
		       f->base);
	bind(f, CHECKOUT_OVERLAY);
	assert_string_equal(checkout_noun(co), "overlay worktree");
	/* made at once, by no command */
	assert_int_equal(checkout_command(co, "main", &argv, &env, &timeout, &d), 0);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	assert_null(co->fallback);
	assert_string_equal(co->start, f->base);
	t = mounted(f, f->path);
	assert_string_equal(t, "overlay");
	free(t);
	assert_true(exists(base));
	assert_true(checkout_overlay_owns(f->repo, f->path));
	/* the base's files, and git sees nothing changed */
	assert_out(f, f->path, "cat a.txt", "a");
	assert_int_equal(checkout_changes(co, &files, &d), 0);
	assert_int_equal(files.nr, 0);
	/* made again (a resume): nothing changes */
	assert_int_equal(checkout_make(co, "main", false, &d), 0);

	agent_writes(f);
	assert_out(f, base, "cat a.txt", "a"); /* the shared lower layer */
	assert_int_equal(checkout_changes(co, &files, &d), 0);
	assert_int_equal(files.nr, 2);
	strvec_clear(&files);
	assert_int_equal(checkout_commit(co, "work", &ident, &committed, &d), 0);
	assert_true(committed);
	assert_int_equal(checkout_publish(co, "main", &ahead, &head, &d), 0);
	assert_int_equal(ahead, 1);
	free(head);
	/* not set aside (a mount point): removed whole */
	assert_int_equal(checkout_set_aside(co), -EOPNOTSUPP);
	assert_int_equal(checkout_remove(co, false, &d), 0);
	t = mounted(f, f->path);
	assert_string_equal(t, "");
	free(t);
	assert_false(exists(f->path));
	assert_false(exists(layer));
	assert_true(has_branch(f, "bernstein/s1"));
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c ^worktree",
		   "2"); /* + base */
	/* the base goes once no layer uses it */
	assert_int_equal(checkout_overlay_gc(f->repo, (const char *const *)f->git_env.v, &n, &d),
			 0);
	assert_int_equal(n, 1);
	assert_false(exists(base));
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c ^worktree", "1");
}

/* A sandboxed task's clone whose files are an overlay: the clone's .git in
 * the upper layer, the shared base below; git there confined, the branch
 * the clone's until published; a crash's clone-tmp redone; bound again as
 * what it is whatever kind is asked; removed whole. */
static void test_clone_overlay(void **state)
{
	FX;
	struct checkout *co = &f->co;
	struct strvec files = STRVEC_INIT;
	char layer[PATH_MAX + 64], p[PATH_MAX + 128], *head = NULL, *t;
	bool committed = false;
	unsigned ahead = 99;
	size_t n = 99;
	struct diag d;

	if (landlock_abi_version() < 0 || !overlay_here(f))
		skip();
	(void)snprintf(layer, sizeof(layer), "%s/" CHECKOUT_OVERLAY_DIR "/task/s1", f->repo);
	/* what a crash inside an earlier `git clone` left */
	(void)snprintf(p, sizeof(p), "%s/clone-tmp/.git", layer);
	free(shok(f, NULL, "mkdir -p %s && echo junk > %s/HEAD", p, p));
	bind(f, CHECKOUT_CLONE_OVERLAY);
	assert_string_equal(checkout_noun(co), "overlay clone");
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	assert_null(co->fallback);
	assert_string_equal(co->start, f->base);
	t = mounted(f, f->path);
	assert_string_equal(t, "overlay");
	free(t);
	(void)snprintf(p, sizeof(p), "%s/upper/.git/HEAD", layer);
	assert_true(exists(p)); /* the clone's own .git, in the layer */
	(void)snprintf(p, sizeof(p), "%s/clone-tmp", layer);
	assert_false(exists(p));
	assert_int_equal(checkout_check(co, &d), 0);
	assert_out(f, f->path, "cat a.txt", "a");
	assert_int_equal(checkout_changes(co, &files, &d), 0);
	assert_int_equal(files.nr, 0);
	assert_false(checkout_moved(co));
	assert_false(has_branch(f, "bernstein/s1"));
	/* made again (a resume): nothing changes */
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	/* bound again as any kind: an overlay clone (its layer says so) */
	bind(f, CHECKOUT_WORKTREE);
	assert_string_equal(checkout_noun(co), "overlay clone");
	bind(f, CHECKOUT_CLONE);
	assert_string_equal(checkout_noun(co), "overlay clone");

	agent_writes(f);
	assert_int_equal(checkout_changes(co, &files, &d), 0);
	assert_int_equal(files.nr, 2);
	strvec_clear(&files);
	assert_int_equal(checkout_commit(co, "work", &ident, &committed, &d), 0);
	assert_true(committed);
	assert_int_equal(checkout_ahead(co, "main", &ahead, &d), 0);
	assert_int_equal(ahead, 1);
	assert_false(has_branch(f, "bernstein/s1"));
	assert_int_equal(checkout_publish(co, "main", &ahead, &head, &d), 0);
	assert_int_equal(ahead, 1);
	assert_non_null(head);
	free(head);
	assert_true(has_branch(f, "bernstein/s1"));
	assert_out(f, f->repo, "git rev-parse refs/heads/main", f->base);
	/* the agent replaced its .git: no git runs there, removal still works */
	free(shok(f, f->path, "rm -rf .git && ln -s ../../../.git .git"));
	assert_int_equal(checkout_check(co, &d), -EPERM);
	assert_int_equal(checkout_set_aside(co), -EOPNOTSUPP);
	assert_int_equal(checkout_remove(co, false, &d), 0);
	t = mounted(f, f->path);
	assert_string_equal(t, "");
	free(t);
	assert_false(exists(f->path));
	assert_false(exists(layer));
	assert_true(exists(f->repo));
	assert_out(f, f->repo, "git rev-parse HEAD", f->base);
	assert_int_equal(checkout_overlay_gc(f->repo, (const char *const *)f->git_env.v, &n, &d),
			 0);
	assert_int_equal(n, 1);
	assert_out(f, f->repo, "git worktree list --porcelain | grep -c ^worktree", "1");
}

/* Something other than the task's overlay mounted on its tree: removal
 * refuses (it unmounts only its own), and leaves the layer. */
static void test_overlay_foreign_mount(void **state)
{
	FX;
	struct checkout *co = &f->co;
	char layer[PATH_MAX + 64];
	struct diag d;

	if (!overlay_here(f))
		skip();
	(void)snprintf(layer, sizeof(layer), "%s/" CHECKOUT_OVERLAY_DIR "/task/s1", f->repo);
	bind(f, CHECKOUT_OVERLAY);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	free(shok(f, NULL, "mount -t tmpfs tmpfs %s", f->path));
	diag_clear(&d);
	assert_int_equal(checkout_remove(co, false, &d), -EPERM);
	assert_non_null(strstr(d.msg, "something other than its overlay is mounted there"));
	assert_true(exists(layer));
	free(shok(f, NULL, "umount %s", f->path));
	assert_int_equal(checkout_remove(co, false, &d), 0);
	assert_false(exists(layer));
}

/* In a child: a new user namespace (root mapped to root) owning a new
 * mount namespace, as checkout-userns.c makes one (there with the user's
 * own ids), then checkout_make(). Its exit status: 0 made, 2 refused with
 * the message of a layer made outside, 3 not in a user namespace, 4
 * another failure, 5 the namespace could not be made. */
static int make_in_userns(struct fx *f)
{
	struct diag d;
	pid_t pid = fork();
	int st = 0, r;

	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *m;

		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			_exit(5);
		if (!(m = fopen("/proc/self/uid_map", "w")) || fputs("0 0 1\n", m) < 0 ||
		    fclose(m) != 0)
			_exit(5);
		if (!(m = fopen("/proc/self/setgroups", "w")) || fputs("deny", m) < 0 ||
		    fclose(m) != 0)
			_exit(5);
		if (!(m = fopen("/proc/self/gid_map", "w")) || fputs("0 0 1\n", m) < 0 ||
		    fclose(m) != 0)
			_exit(5);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(5);
		if (!checkout_overlay_in_userns())
			_exit(3);
		diag_clear(&d);
		r = checkout_make(&f->co, "main", false, &d);
		if (r == -EPERM && strstr(d.msg, "it was made outside one"))
			_exit(2);
		_exit(r == 0 ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* A layer keeps the xattrs it was made with: one made in a user namespace
 * (overlayfs there keeps its whiteouts in user.overlay.*: `userxattr`,
 * recorded in the layer) is mounted with userxattr again outside; one made
 * outside (trusted.overlay.*, unreadable in a user namespace) is refused
 * there rather than mounted with its deletions lost. */
static void test_overlay_userns_layer(void **state)
{
	FX;
	struct checkout *co = &f->co;
	char marker[PATH_MAX + 64];
	struct diag d;
	char *t;
	int st;

	if (!overlay_here(f))
		skip();
	assert_false(checkout_overlay_in_userns());
	(void)snprintf(marker, sizeof(marker), "%s/" CHECKOUT_OVERLAY_DIR "/task/s1/userxattr",
		       f->repo);
	bind(f, CHECKOUT_OVERLAY);
	/* made in a user namespace: recorded; its mount went with the child */
	st = make_in_userns(f);
	if (st == 5) {
		print_message("no user namespace here: skipped\n");
		skip();
	}
	assert_int_equal(st, 0);
	assert_true(exists(marker));
	t = mounted(f, f->path);
	assert_string_equal(t, "");
	free(t);
	/* mounted again outside: with userxattr */
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	t = shok(f, NULL, "awk -v d=%s '$5 == d' /proc/self/mountinfo", f->path);
	assert_non_null(strstr(t, "userxattr"));
	free(t);
	assert_int_equal(checkout_remove(co, false, &d), 0);
	assert_false(exists(marker));

	/* made outside, taken down (a reboot), then made again inside */
	bind(f, CHECKOUT_OVERLAY);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	assert_false(exists(marker));
	free(shok(f, NULL, "umount %s", f->path));
	assert_int_equal(make_in_userns(f), 2);
	assert_int_equal(checkout_make(co, "main", false, &d), 0);
	t = shok(f, NULL, "awk -v d=%s '$5 == d' /proc/self/mountinfo", f->path);
	assert_null(strstr(t, "userxattr"));
	free(t);
	assert_int_equal(checkout_remove(co, false, &d), 0);
}

/* checkout: auto reads the number of files from the index header. */
static void test_overlay_repo_files(void **state)
{
	FX;
	uint32_t n = 0;

	assert_int_equal(checkout_overlay_repo_files(f->repo, &n), 0);
	assert_int_equal(n, 2); /* a.txt, .gitignore */
	/* 25,000 entries of one blob, no file written */
	free(shok(
		f, f->repo,
		"b=$(git hash-object -w a.txt) && awk -v b=$b 'BEGIN { for (i = 0; i < 25000; i++) printf \"100644 %%s\\tmany/f%%d\\n\", b, i }' | git update-index --index-info"));
	assert_int_equal(checkout_overlay_repo_files(f->repo, &n), 0);
	assert_int_equal(n, 25002);
	assert_true(n >= CHECKOUT_OVERLAY_AUTO_FILES);
	/* a repository without an index of its own: not a number */
	free(shok(f, f->repo, "rm .git/index"));
	assert_int_equal(checkout_overlay_repo_files(f->repo, &n), -ENOENT);
	free(shok(f, f->repo, "printf 'XXXX\\0\\0\\0\\2\\0\\0\\0\\1' > .git/index"));
	assert_int_equal(checkout_overlay_repo_files(f->repo, &n), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_worktree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_set_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worktree_by_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_tampered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_foreign_mount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_userns_layer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_repo_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_overlay, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
