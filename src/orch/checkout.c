/* A task's checkout, one interface over its kinds (see checkout.h). */
#include "orch/checkout.h"
#include "orch/checkout-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* ---- a worktree of the main repository ---- */

static int wt_command(struct checkout *co, const char *base, struct strvec *ret_argv,
		      struct strvec *ret_env, uint64_t *ret_timeout_ms, struct diag *reterr)
{
	return worktree_add_command(co->repo, co->path, co->branch, base, co->git_env, ret_argv,
				    ret_env, ret_timeout_ms, reterr);
}

int checkout_wt_make(struct checkout *co, const char *base, bool made_by_command, char **ret_start,
		     struct diag *reterr)
{
	if (made_by_command)
		return 0;
	return worktree_add(co->repo, co->path, co->branch, base, co->git_env, ret_start, reterr);
}

static const char *wt_branch_home(const struct checkout *co)
{
	return co->repo;
}

static int wt_ahead(const struct checkout *co, const char *base, unsigned *ret, struct diag *reterr)
{
	return git_commits_between(co->repo, base, co->branch, co->git_env, ret, reterr);
}

static int wt_changed_files(const struct checkout *co, const char *base, struct strvec *ret,
			    struct diag *reterr)
{
	return git_changed_files(co->repo, base, co->branch, co->git_env, ret, reterr);
}

static int wt_publish(const struct checkout *co, const char *base, unsigned *ret_ahead,
		      char **ret_head, struct diag *reterr)
{
	unsigned ahead = 0;
	int r = wt_ahead(co, base, &ahead, reterr);

	if (r < 0)
		return r;
	*ret_ahead = ahead;
	if (git_rev_parse(co->repo, co->branch, co->git_env, ret_head, NULL) < 0)
		*ret_head = NULL;
	return 0;
}

/* Whether path/.git is a directory (a clone), not a worktree's .git file. */
static bool git_is_dir(const char *path)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct stat st;
	char *git;
	bool dir;

	(void)sbuf_addf(&sb, "%s/.git", path);
	git = sbuf_detach(&sb, NULL);
	dir = lstat(git, &st) == 0 && S_ISDIR(st.st_mode);
	free(git);
	return dir;
}

int checkout_wt_remove(const struct checkout *co, struct diag *reterr)
{
	struct stat st;
	struct diag d;
	int r;

	if (git_is_dir(co->path))
		return checkout_clone_remove(co, reterr);
	diag_clear(&d);
	if (worktree_remove(co->repo, co->path, false, NULL, co->git_env, &d) < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot remove the worktree '%s': %s", co->path,
			 d.msg);
		return -EIO;
	}
	/* what a `git worktree remove` killed half way left: no longer a
	 * worktree for git, which leaves such a directory alone */
	if (lstat(co->path, &st) == 0 && (r = rmtree_beneath(co->path)) < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot remove '%s': %s", co->path, strerror(-r));
		return r;
	}
	return 0;
}

const struct checkout_ops checkout_worktree_ops = {
	.noun = "worktree",
	.command = wt_command,
	.make = checkout_wt_make,
	.check = NULL,
	.branch_home = wt_branch_home,
	.ahead = wt_ahead,
	.changed_files = wt_changed_files,
	.publish = wt_publish,
	.set_aside = true,
	.remove = checkout_wt_remove,
};

/* ---- a worktree whose files are an overlay (checkout-overlay.c) ---- */

static const struct checkout_ops overlay_ops = {
	.noun = "overlay worktree",
	.command = NULL, /* made at once: constant time, no git checkout */
	.make = checkout_overlay_make,
	.check = NULL,
	.branch_home = wt_branch_home,
	.ahead = wt_ahead,
	.changed_files = wt_changed_files,
	.publish = wt_publish,
	.set_aside = false, /* a mount point is not renamed: removed whole */
	.remove = checkout_overlay_remove,
};

/* ---- a worktree whose files are reflink copies ---- */

const struct checkout_ops checkout_reflink_ops = {
	.noun = "reflink worktree",
	.command = NULL, /* made at once, by bernstein's own copier */
	.make = checkout_reflink_make,
	.check = NULL,
	.branch_home = wt_branch_home,
	.ahead = wt_ahead,
	.changed_files = wt_changed_files,
	.publish = wt_publish,
	.set_aside = false, /* its layer is named after the tree: removed whole */
	.remove = checkout_reflink_remove,
};

/* ---- a sandboxed task's clone ---- */

int checkout_clone_make(struct checkout *co, const char *base, bool made_by_command,
			char **ret_start, struct diag *reterr)
{
	(void)made_by_command; /* never: a clone has no command */
	return worktree_clone_add(co->repo, co->path, co->branch, base, checkout_git_env(co),
				  ret_start, reterr);
}

static int clone_check(const struct checkout *co, struct diag *reterr)
{
	return worktree_clone_check(co->path, reterr);
}

static const char *clone_branch_home(const struct checkout *co)
{
	return co->path;
}

/* Against the base branch's commit in the repository: the clone's own refs
 * are the agent's. */
static int clone_ahead(const struct checkout *co, const char *base, unsigned *ret,
		       struct diag *reterr)
{
	char *commit = NULL;
	int r;

	r = git_branch_commit(co->repo, base, co->git_env, &commit, reterr);
	if (r >= 0)
		r = git_commits_between(co->path, commit, co->branch, checkout_git_env(co), ret,
					reterr);
	free(commit);
	return r;
}

static int clone_changed_files(const struct checkout *co, const char *base, struct strvec *ret,
			       struct diag *reterr)
{
	char *commit = NULL;
	int r;

	r = git_branch_commit(co->repo, base, co->git_env, &commit, reterr);
	if (r >= 0)
		r = git_changed_files(co->path, commit, co->branch, checkout_git_env(co), ret,
				      reterr);
	free(commit);
	return r;
}

/* Only a branch with commits is fetched: no_changes leaves no branch
 * behind in the main repository; then it is counted there as any branch. */
static int clone_publish(const struct checkout *co, const char *base, unsigned *ret_ahead,
			 char **ret_head, struct diag *reterr)
{
	unsigned ahead = 0;
	int r = clone_ahead(co, base, &ahead, reterr);

	if (r >= 0 && ahead > 0) {
		r = worktree_clone_fetch(co->repo, co->path, co->branch, co->git_env, reterr);
		if (r >= 0)
			r = git_commits_between(co->repo, base, co->branch, co->git_env, &ahead,
						reterr);
	}
	if (r < 0)
		return r;
	*ret_ahead = ahead;
	*ret_head = NULL;
	if (ahead > 0 && git_rev_parse(co->repo, co->branch, co->git_env, ret_head, NULL) < 0)
		*ret_head = NULL;
	return 0;
}

/* Deleted without following what the agent planted. */
int checkout_clone_remove(const struct checkout *co, struct diag *reterr)
{
	int r = rmtree_beneath(co->path);

	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "cannot remove the clone '%s': %s", co->path,
			 strerror(-r));
	return r;
}

const struct checkout_ops checkout_clone_ops = {
	.noun = "clone",
	.command = NULL,
	.make = checkout_clone_make,
	.check = clone_check,
	.branch_home = clone_branch_home,
	.ahead = clone_ahead,
	.changed_files = clone_changed_files,
	.publish = clone_publish,
	.set_aside = false,
	.remove = checkout_clone_remove,
};

/* ---- a sandboxed task's clone whose files are an overlay ---- */

static const struct checkout_ops clone_overlay_ops = {
	.noun = "overlay clone",
	.command = NULL, /* made at once: constant time, no git checkout */
	.make = checkout_clone_overlay_make,
	.check = clone_check,
	.branch_home = clone_branch_home,
	.ahead = clone_ahead,
	.changed_files = clone_changed_files,
	.publish = clone_publish,
	.set_aside = false, /* a mount point is not renamed: removed whole */
	.remove = checkout_clone_overlay_remove,
};

/* ---- a sandboxed task's clone whose files are reflink copies ---- */

const struct checkout_ops checkout_reflink_clone_ops = {
	.noun = "reflink clone",
	.command = NULL, /* made at once, by bernstein's own copier */
	.make = checkout_reflink_clone_make,
	.check = clone_check,
	.branch_home = clone_branch_home,
	.ahead = clone_ahead,
	.changed_files = clone_changed_files,
	.publish = clone_publish,
	.set_aside = false, /* its layer is named after the tree: removed whole */
	.remove = checkout_reflink_clone_remove,
};

int checkout_make_as(struct checkout *co, const struct checkout_ops *ops, const char *base,
		     char **ret_start, const char *why, struct diag *reterr)
{
	free(co->fallback);
	co->fallback = xstrdup(why);
	co->ops = ops;
	return ops->make(co, base, false, ret_start, reterr);
}

/* ---- the interface ---- */

static const struct checkout_ops *const kinds[_CHECKOUT_KIND_MAX] = {
	[CHECKOUT_WORKTREE] = &checkout_worktree_ops,
	[CHECKOUT_OVERLAY] = &overlay_ops,
	[CHECKOUT_CLONE] = &checkout_clone_ops,
	[CHECKOUT_CLONE_OVERLAY] = &clone_overlay_ops,
	[CHECKOUT_REFLINK] = &checkout_reflink_ops,
	[CHECKOUT_CLONE_REFLINK] = &checkout_reflink_clone_ops,
};

void checkout_init(struct checkout *co)
{
	*co = (struct checkout)CHECKOUT_INIT;
}

void checkout_release(struct checkout *co)
{
	if (!co)
		return;
	free(co->path);
	free(co->branch);
	free(co->start);
	free(co->fallback);
	strvec_clear(&co->env);
	checkout_init(co);
}

void checkout_bind(struct checkout *co, enum checkout_kind kind, const char *repo,
		   const char *const *git_env, const char *path, const char *branch)
{
	const char *const *e;

	checkout_release(co);
	/* a tree an overlay checkout made stays one (unmounted, its layer
	 * removed) whatever the configuration says now; a sandboxed task's
	 * (or one whose layer says it holds a clone) an overlay clone */
	if (checkout_reflink_owns(repo, path))
		kind = checkout_overlay_owns_clone(repo, path) ? CHECKOUT_CLONE_REFLINK
							       : CHECKOUT_REFLINK;
	else if (checkout_overlay_owns(repo, path))
		kind = kind == CHECKOUT_CLONE || kind == CHECKOUT_CLONE_OVERLAY ||
				       checkout_overlay_owns_clone(repo, path)
			       ? CHECKOUT_CLONE_OVERLAY
			       : CHECKOUT_OVERLAY;
	co->ops = kinds[kind];
	co->repo = repo;
	co->git_env = git_env;
	co->path = xstrdup(path);
	co->branch = xstrdup(branch);
	if (kind == CHECKOUT_CLONE || kind == CHECKOUT_CLONE_OVERLAY ||
	    kind == CHECKOUT_CLONE_REFLINK) {
		/* git_env plus the entry that makes worktree.c run git in the
		 * clone confined to it (the agent controlled its config, hooks
		 * and refs) */
		for (e = git_env; e && *e; e++)
			strvec_push(&co->env, *e);
		strvec_pushf(&co->env, "%s=%s", WORKTREE_GIT_CONFINE_ENV, path);
	}
}

bool checkout_is_reflink(const struct checkout *co)
{
	return co->ops == &checkout_reflink_ops || co->ops == &checkout_reflink_clone_ops;
}

bool checkout_bound(const struct checkout *co)
{
	return co->ops != NULL;
}

const char *checkout_noun(const struct checkout *co)
{
	return co->ops->noun;
}

const char *const *checkout_git_env(const struct checkout *co)
{
	return co->env.nr ? (const char *const *)co->env.v : co->git_env;
}

int checkout_command(struct checkout *co, const char *base, struct strvec *ret_argv,
		     struct strvec *ret_env, uint64_t *ret_timeout_ms, struct diag *reterr)
{
	if (!co->ops->command)
		return 0;
	return co->ops->command(co, base, ret_argv, ret_env, ret_timeout_ms, reterr);
}

void checkout_command_ended(struct checkout *co)
{
	char *start = NULL;

	if (git_branch_commit(co->ops->branch_home(co), co->branch, checkout_git_env(co), &start,
			      NULL) == 0) {
		free(co->start);
		co->start = start;
	}
}

int checkout_make(struct checkout *co, const char *base, bool made_by_command, struct diag *reterr)
{
	char *made = NULL;
	int r = co->ops->make(co, base, made_by_command, &made, reterr);

	if (made) {
		free(co->start);
		co->start = made;
	}
	return r;
}

int checkout_check(const struct checkout *co, struct diag *reterr)
{
	return co->ops->check ? co->ops->check(co, reterr) : 0;
}

bool checkout_moved(const struct checkout *co)
{
	char *head = NULL;
	bool moved = true;

	if (co->start && git_branch_commit(co->ops->branch_home(co), co->branch,
					   checkout_git_env(co), &head, NULL) == 0)
		moved = strcmp(head, co->start) != 0;
	free(head);
	return moved;
}

int checkout_changes(const struct checkout *co, struct strvec *ret, struct diag *reterr)
{
	return worktree_changes(co->path, checkout_git_env(co), ret, reterr);
}

int checkout_changed_files(const struct checkout *co, const char *base, struct strvec *ret,
			   struct diag *reterr)
{
	return co->ops->changed_files(co, base, ret, reterr);
}

int checkout_ahead(const struct checkout *co, const char *base, unsigned *ret, struct diag *reterr)
{
	return co->ops->ahead(co, base, ret, reterr);
}

int checkout_commit(const struct checkout *co, const char *message, const struct git_identity *id,
		    bool *ret_committed, struct diag *reterr)
{
	return worktree_commit_all(co->path, message, id, checkout_git_env(co), ret_committed,
				   reterr);
}

int checkout_publish(const struct checkout *co, const char *base, unsigned *ret_ahead,
		     char **ret_head, struct diag *reterr)
{
	return co->ops->publish(co, base, ret_ahead, ret_head, reterr);
}

static char *aside_path(const struct checkout *co)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s" CHECKOUT_ASIDE_SUFFIX, co->path);
	return sbuf_detach(&sb, NULL);
}

int checkout_set_aside(const struct checkout *co)
{
	char *aside;
	int r = 0;

	if (!co->ops->set_aside)
		return -EOPNOTSUPP;
	aside = aside_path(co);
	(void)rmtree_beneath(aside);
	if (rename(co->path, aside) < 0)
		r = -errno;
	free(aside);
	return r;
}

int checkout_remove(const struct checkout *co, bool aside, struct diag *reterr)
{
	char *p;
	int r;

	if (!aside)
		return co->ops->remove(co, reterr);
	p = aside_path(co);
	r = rmtree_beneath(p);
	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "cannot remove '%s': %s", p, strerror(-r));
	free(p);
	return r;
}
