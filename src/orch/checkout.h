/* A task's checkout: the tree its agent works in and the branch its work
 * goes on, behind one interface for every kind (docs/runs.md, "Layout";
 * docs/worktrees.md). The run loop makes, inspects, commits, publishes and
 * removes a checkout without asking which kind it is; the kind is chosen
 * once, when the checkout is bound to its task (a sandboxed task gets a
 * clone).
 *
 *   CHECKOUT_WORKTREE  a `git worktree` of the main repository: its branch
 *                      is a branch of the repository from the start
 *   CHECKOUT_CLONE     a clone of its own that shares the repository's object
 *                      store (worktree_clone_add()): a sandboxed agent's. Its
 *                      config, hooks and refs are the agent's, so every git
 *                      call there runs confined to it (WORKTREE_GIT_CONFINE_ENV
 *                      in checkout_git_env()), is made only after
 *                      checkout_check() found it still a clone bernstein made,
 *                      and its branch reaches the repository only through
 *                      checkout_publish() (a fetch of that one branch): the
 *                      agent's refs never move the user's branches.
 *
 *   CHECKOUT_OVERLAY   a worktree made in constant time whatever the size of
 *                      the repository (checkout-overlay.c, docs/runs.md
 *                      "Overlay checkouts"): `git worktree add
 *                      --no-checkout`, then an overlay mount on its path
 *                      whose lower layer is a read-only checkout of the base
 *                      commit shared by every task on it
 *                      (CHECKOUT_OVERLAY_DIR/base/COMMIT/tree) and whose
 *                      upper layer is the task's own directory
 *                      (CHECKOUT_OVERLAY_DIR/task/NAME/upper); the base
 *                      checkout's index is copied in, so git sees only the
 *                      task's edits. Otherwise a worktree: its branch lives
 *                      in the repository, merged as any. When the overlay
 *                      cannot be mounted (no privilege, no overlayfs, a path
 *                      overlay options cannot carry), checkout_make() makes
 *                      a plain worktree instead and says why in
 *                      co->fallback.
 *
 *   CHECKOUT_CLONE_OVERLAY  a sandboxed task's clone made in constant time
 *                      (checkout-overlay.c, docs/runs.md "Overlay checkouts
 *                      of sandboxed tasks"): the overlay of CHECKOUT_OVERLAY
 *                      mounted on the tree, whose upper layer holds the
 *                      clone's own .git directory (`git clone --shared
 *                      --no-checkout`, the base checkout's index copied in).
 *                      Otherwise a CHECKOUT_CLONE: confined git, published by
 *                      fetch. Falls back to a plain clone as CHECKOUT_OVERLAY
 *                      does to a worktree.
 *
 *   CHECKOUT_REFLINK   a worktree whose files are reflink copies of the
 *                      shared base checkout's (checkout-reflink.c,
 *                      docs/runs.md "Reflink checkouts"): where an overlay
 *                      cannot be mounted and the file system shares extents
 *                      (FICLONE: XFS, btrfs, bcachefs). `git worktree add
 *                      --no-checkout`, then every file of the base
 *                      checkout's index cloned in and the index copied with
 *                      the new files' stat data, so git sees it clean
 *                      without reading a file. Then a plain worktree; its
 *                      layer (CHECKOUT_OVERLAY_DIR/task/NAME, with a
 *                      `reflink` file) only says how far it was made. An
 *                      overlay checkout refused becomes one (co->fallback
 *                      says so), and one refused FICLONE a plain worktree.
 *
 *   CHECKOUT_CLONE_REFLINK  a sandboxed task's clone made so: `git clone
 *                      --shared --no-checkout` beside the tree, the same
 *                      copier into it, its .git/index the patched one, then
 *                      renamed into place. Then a CHECKOUT_CLONE (confined
 *                      git, published by fetch). An overlay clone refused
 *                      becomes one; one refused FICLONE a plain clone.
 *
 * A sixth kind (a checkout on another machine) is another table of the
 * operations in checkout.c: what the loop calls does not change.
 *
 * The repository, its git environment, the path and the branch are fixed at
 * checkout_bind(); the functions below take the run's base branch where
 * they need it. Errors are worktree.h's (negative errno, reterr filled on
 * failure only). Nothing here prints or keeps anything of the loop's. */
#ifndef BERNSTEIN_ORCH_CHECKOUT_H
#define BERNSTEIN_ORCH_CHECKOUT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "orch/worktree.h"
#include "util/diag.h"
#include "util/strvec.h"

enum checkout_kind {
	CHECKOUT_WORKTREE,
	CHECKOUT_CLONE,
	CHECKOUT_OVERLAY,
	CHECKOUT_CLONE_OVERLAY,
	CHECKOUT_REFLINK,
	CHECKOUT_CLONE_REFLINK,
	_CHECKOUT_KIND_MAX,
	_CHECKOUT_KIND_INVALID = -EINVAL,
};

struct checkout_ops;

struct checkout {
	const struct checkout_ops *ops; /* NULL: not bound */
	const char *repo;		/* the main checkout (borrowed) */
	const char *const *git_env;	/* git's environment there (borrowed) */
	char *path;			/* the tree */
	char *branch;			/* the task's branch */
	struct strvec env;		/* git's environment in the tree, when it differs */
	/* the commit this execution made the branch at; NULL when the branch
	 * came from an earlier execution (a resume): then git is asked */
	char *start;
	/* an overlay checkout made as a plain worktree instead: why (one
	 * line, set by checkout_make(); NULL otherwise) */
	char *fallback;
};

#define CHECKOUT_INIT                                                                              \
	{                                                                                          \
		.ops = NULL, .env = STRVEC_INIT                                                    \
	}

/* the overlay kind's directory, relative to the repository: base/COMMIT/
 * (the shared checkouts) and task/NAME/ (each task's layer) */
#define CHECKOUT_OVERLAY_DIR ".bernstein/overlay"
/* checkout: auto takes the overlay kind from this many files in the
 * repository's index on (docs/configuration.md) */
#define CHECKOUT_OVERLAY_AUTO_FILES 20000u

/* what a tree set aside is called: PATH.removing (checkout_set_aside()) */
#define CHECKOUT_ASIDE_SUFFIX ".removing"

void checkout_init(struct checkout *co);
void checkout_release(struct checkout *co);

/* co (initialised, or released) is the checkout of kind at path on branch,
 * of the main checkout repo, whose git runs with git_env (borrowed: they
 * outlive co). Nothing is made or read yet. */
void checkout_bind(struct checkout *co, enum checkout_kind kind, const char *repo,
		   const char *const *git_env, const char *path, const char *branch);
bool checkout_bound(const struct checkout *co);

/* "worktree" or "clone": for messages. */
const char *checkout_noun(const struct checkout *co);

/* The environment for git in the tree (a clone's: confined to it). */
const char *const *checkout_git_env(const struct checkout *co);

/* The command that makes the checkout from base (a branch of the main
 * checkout) when it can be made by a supervised child beside other work:
 * 1 with its argv, environment and deadline (worktree_add_command()); 0
 * when it is made by checkout_make() alone. After the command exited 0,
 * checkout_command_ended(); after anything else checkout_make() repairs. */
int checkout_command(struct checkout *co, const char *base, struct strvec *ret_argv,
		     struct strvec *ret_env, uint64_t *ret_timeout_ms, struct diag *reterr);
void checkout_command_ended(struct checkout *co);

/* Make the checkout from base now, idempotent for resume (worktree_add(),
 * worktree_clone_add()); made_by_command: the command of checkout_command()
 * made it already. co->start is set when the branch was made now. */
int checkout_make(struct checkout *co, const char *base, bool made_by_command, struct diag *reterr);

/* Whether git may run in the tree: a clone must still be one bernstein made
 * (worktree_clone_check(); -EPERM with the reason). No git process. */
int checkout_check(const struct checkout *co, struct diag *reterr);

/* Whether the branch moved from co->start (true when there is no start, or
 * git cannot tell): read from the ref files where the branch lives. */
bool checkout_moved(const struct checkout *co);

/* The files changed in the tree (worktree_changes()), appended to *ret. */
int checkout_changes(const struct checkout *co, struct strvec *ret, struct diag *reterr);

/* The files the branch changed since it left base (git_changed_files()),
 * appended to *ret. */
int checkout_changed_files(const struct checkout *co, const char *base, struct strvec *ret,
			   struct diag *reterr);

/* The commits the branch has over base, asked where the branch lives. */
int checkout_ahead(const struct checkout *co, const char *base, unsigned *ret, struct diag *reterr);

/* Everything in the tree committed on the branch (worktree_commit_all()). */
int checkout_commit(const struct checkout *co, const char *message, const struct git_identity *id,
		    bool *ret_committed, struct diag *reterr);

/* The branch brought into the main checkout's repository, where the merge
 * takes it: *ret_ahead its commits over base there, and *ret_head its
 * commit (caller frees; NULL when it cannot be read, or when a clone's
 * branch had nothing to bring: no empty branch is left in the
 * repository). */
int checkout_publish(const struct checkout *co, const char *base, unsigned *ret_ahead,
		     char **ret_head, struct diag *reterr);

/* The tree (clean, its branch unmoved: nothing to keep) moved out of the
 * way in one rename, to PATH.removing; checkout_remove(co, true) deletes
 * it. -EOPNOTSUPP for a kind that is not set aside (a clone: removed
 * whole later). */
int checkout_set_aside(const struct checkout *co);

/* The tree removed (set aside before: the moved-aside copy), without
 * following anything the agent planted; the branch stays. reterr says what
 * could not be removed. */
int checkout_remove(const struct checkout *co, bool aside, struct diag *reterr);

/* Whether co is (now) a reflink checkout: an overlay refused may have
 * become one at checkout_make(). */
bool checkout_is_reflink(const struct checkout *co);

/* ---- the reflink kind (checkout-reflink.c) ---- */

/* Whether a file under repo's CHECKOUT_OVERLAY_DIR can be cloned (FICLONE)
 * into the directory a tree at path is made in (created when missing): 0,
 * or the negative errno with the reason in reterr. */
int checkout_reflink_probe(const char *repo, const char *path, struct diag *reterr);

/* Whether path is a tree a reflink checkout made (its layer says so). */
bool checkout_reflink_owns(const char *repo, const char *path);

/* ---- the overlay kind (checkout-overlay.c) ---- */

/* Whether this process may mount an overlay under repo's
 * CHECKOUT_OVERLAY_DIR: one mount and unmount of an empty one. 0, or the
 * negative errno with the reason in reterr. */
int checkout_overlay_probe(const char *repo, struct diag *reterr);

/* Whether this process is outside the initial user namespace (its
 * overlays are mounted with `userxattr`). */
bool checkout_overlay_in_userns(void);

/* Overlays without root (checkout-userns.c, docs/runs.md "Overlay
 * checkouts without root"): this process, not root, enters a new user
 * namespace mapping its uid and gid to themselves and a mount namespace
 * that one owns (mounts private), where it may mount overlays; every
 * child it starts afterwards lives there. Tried in a child first
 * (checkout_overlay_probe() under repo): 0 entered; else the negative
 * errno, why in reterr, and this process is as it was. Call it before any
 * thread is started (unshare(2) refuses a threaded process). */
int checkout_overlay_userns_enter(const char *repo, struct diag *reterr);

/* The number of entries of repo's index (its header; no git process), for
 * checkout: auto. -errno when it cannot be read (a repository that is
 * itself a linked worktree, no index yet). */
int checkout_overlay_repo_files(const char *repo, uint32_t *ret);

/* Whether path is a tree an overlay checkout made (its task layer
 * exists): such a tree is removed as one whatever kind it is bound as. */
bool checkout_overlay_owns(const char *repo, const char *path);
/* Whether that layer is a sandboxed task's (its upper layer a clone:
 * CHECKOUT_CLONE_OVERLAY). */
bool checkout_overlay_owns_clone(const char *repo, const char *path);

/* The shared base checkouts no task layer uses any more (and no overlay
 * mount has as its lower layer) removed: *ret_n (may be NULL) how many.
 * Errors say which could not be removed; the others are removed still. */
int checkout_overlay_gc(const char *repo, const char *const *git_env, size_t *ret_n,
			struct diag *reterr);

#endif
