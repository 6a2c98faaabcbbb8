/* Git for the orchestrator: the main checkout, per-task worktrees and
 * clones, bernstein's own commits and --no-ff merges (docs/worktrees.md).
 * (The gates run under the supervisor, src/orch/run-complete.c; a task's
 * worktree or clone is used through orch/checkout.h.)
 *
 * Every git call is `git -C DIR ...` run with proc_spawn (proc/spawn.h), in
 * its own process group, stdin on /dev/null, a wall-clock deadline after
 * which the group gets SIGTERM and then SIGKILL, and a cap on the output it
 * may print. Nothing here reads the process environment: env is the complete
 * environment for git (KEY=VALUE strings, NULL-terminated; NULL = empty); git
 * is looked up on the absolute entries of its PATH. Every call is hardened
 * as proc/git.h says (no hook, fsmonitor, pager, editor, askpass, signing,
 * submodule recursion or remote transport of any configuration; no GIT_*
 * variable of env reaches git; LC_ALL=C, since git's messages are parsed),
 * and a call in a task's tree (WORKTREE_GIT_REPO_ENV below) runs with the git
 * directory bernstein knows, never with the tree's own .git pointer.
 *
 * The timeout of each git call is WORKTREE_GIT_TIMEOUT_MS, or the value of a
 * BERNSTEIN_GIT_TIMEOUT_MS=<ms> entry in env (consumed here, never passed to
 * git).
 *
 * Errors (negative errno, and reterr names the git command and the tail of
 * its stderr; reterr->file is the directory the call was about):
 *   -ENOENT     git is not on env's PATH ("git not found on PATH"); also an
 *               unknown revision or branch where a function says so, so check
 *               git once up front (git_toplevel) to tell the two apart
 *   -ENOTDIR    the directory is not inside a git work tree (or does not
 *               exist, or is not a directory)
 *   -EPERM      git refuses the repository (safe.directory "dubious ownership"),
 *               or a task's tree is neither a worktree of the trusted repository
 *               nor a clone bernstein made (the reason in reterr)
 *   -ETIMEDOUT  git ran past its deadline and was killed
 *   -ENOBUFS    git printed more than WORKTREE_GIT_MAX_OUTPUT bytes
 *   -EINVAL     a bad argument (empty, or a revision/branch starting with '-')
 *   -EIO        git failed in some other way (exit code and stderr in reterr)
 *
 * Nothing here serializes anything: merges into the main checkout (and any
 * two calls that write the same repository's refs or index) must be issued
 * one at a time by the caller -- bernstein's single supervisor loop. Worktree
 * creation for different tasks touches only their own branch and
 * .git/worktrees entry, but it too is meant to run from that one loop. */
#ifndef BERNSTEIN_ORCH_WORKTREE_H
#define BERNSTEIN_ORCH_WORKTREE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/strvec.h"

#define WORKTREE_GIT_TIMEOUT_MS	 300000u /* one git call; a hang guard, not a budget */
#define WORKTREE_GIT_TIMEOUT_ENV "BERNSTEIN_GIT_TIMEOUT_MS"
/* In env: git calls whose directory is this one run confined by Landlock to
 * it (read-write there and /dev/null, read-only elsewhere): what bernstein
 * runs in a sandboxed task's clone, whose config, hooks and refs the agent
 * controlled. Consumed, never passed to git. */
#define WORKTREE_GIT_CONFINE_ENV "BERNSTEIN_GIT_CONFINE"
/* In env: the top of the trusted main checkout. A git call in any other
 * directory is a call in a task's tree, which an agent controlled: its git
 * directory is found and checked as the "trees an agent controlled" part
 * of worktree.c says (a worktree of this repository, through its
 * administrative directory; or a clone bernstein made, its config restored),
 * and git runs with --git-dir and --work-tree, never from the tree's own .git
 * pointer. Without it, git discovers the repository from the directory as
 * usual. Consumed, never passed to git. */
#define WORKTREE_GIT_REPO_ENV "BERNSTEIN_GIT_REPO"
/* Every entry of env starting with this is bernstein's and never reaches git
 * (nor a gate). */
#define WORKTREE_GIT_ENV_PREFIX "BERNSTEIN_GIT_"
#define WORKTREE_GIT_MAX_OUTPUT (64u << 20)  /* stdout of one git call */
#define WORKTREE_MESSAGE_MAX	(64u << 10)  /* a commit or merge message */
#define WORKTREE_STATE_DIR	".bernstein" /* never committed, never counted as a change */

/* Who bernstein's commits and merges are by: `-c user.name=NAME -c
 * user.email=EMAIL` (a fresh CI machine has no identity configured). Both
 * must be non-empty. Borrowed. */
struct git_identity {
	const char *name, *email;
};

/* The top of the work tree containing dir (`rev-parse --show-toplevel`),
 * caller frees. -ENOTDIR when dir is not in a git work tree. */
int git_toplevel(const char *dir, const char *const *env, char **ret, struct diag *reterr);

/* The files the repository's .worktreeinclude names (gitignore patterns,
 * Claude Code's convention): untracked files of repo's work tree that
 * match a pattern and that git ignores, relative paths into ret. Nothing
 * when there is no .worktreeinclude (or it is not a regular file). */
int git_worktreeinclude(const char *repo, const char *const *env, struct strvec *ret,
			struct diag *reterr);

/* The checked-out branch of repo (short name, "main"; *ret_branch = NULL when
 * HEAD is detached) and HEAD's commit id. Either out-pointer may be NULL;
 * caller frees. -ENOENT when HEAD has no commit yet (an unborn branch). */
int git_head(const char *repo, const char *const *env, char **ret_branch, char **ret_commit,
	     struct diag *reterr);

/* Whether path (relative to the top of repo) is a file git tracks (in the
 * index; a directory is not one). */
int git_tracked(const char *repo, const char *path, const char *const *env, bool *ret,
		struct diag *reterr);

/* The full commit id rev names (peeled: a tag gives its commit), caller
 * frees. -ENOENT when rev names no commit. */
int git_rev_parse(const char *repo, const char *rev, const char *const *env, char **ret,
		  struct diag *reterr);

/* Whether the work tree at repo has no changes to tracked files, staged or
 * not; untracked files and anything under .bernstein/ do not count. */
int git_is_clean(const char *repo, const char *const *env, bool *ret, struct diag *reterr);

/* Whether commit a is an ancestor of (or equal to) commit b. -ENOENT when a
 * or b names no commit. */
int git_is_ancestor(const char *repo, const char *a, const char *b, const char *const *env,
		    bool *ret, struct diag *reterr);

/* Whether refs/heads/BRANCH exists. Like git_branch_commit(), read from the
 * ref files without a git process when it can (orch/gitref.h). */
int git_branch_exists(const char *repo, const char *branch, const char *const *env, bool *ret,
		      struct diag *reterr);

/* The commit refs/heads/BRANCH points to (hex, caller frees); -ENOENT when
 * there is no such branch. Read from repo's ref files when they are a store
 * orch/gitref.h reads (no git process: this is on every task's path), else
 * from `git rev-parse`. From the ref files the id is not checked to name a
 * commit (an agent can write any id there): compare it with an id git gave,
 * do not hand it on as a commit. */
int git_branch_commit(const char *repo, const char *branch, const char *const *env, char **ret,
		      struct diag *reterr);

/* A worktree at path (relative paths are relative to repo; parent
 * directories are created) on a NEW branch made at base_commit. Idempotent,
 * for resume after a crash:
 *   - path already is a worktree on branch: 0, nothing changes (its files,
 *     committed or not, are kept); base_commit is not checked;
 *   - the branch exists but no worktree has it (a crash between the two):
 *     the worktree is added on the existing branch, wherever it points;
 *   - path is registered but half made (a crash inside `git worktree add`:
 *     locked "initializing") or its directory is gone: it is removed or
 *     pruned and added again on the branch.
 * -EEXIST when path is a worktree on another branch, when the branch is
 * checked out in another worktree, or when path exists and is not an empty
 * directory; -ENOENT when base_commit names no commit. With ret_start
 * (may be NULL): when this call made the branch, the commit it starts at
 * (caller frees), else NULL -- also when it cannot tell without asking git. */
int worktree_add(const char *repo, const char *path, const char *branch, const char *base_commit,
		 const char *const *env, char **ret_start, struct diag *reterr);

/* worktree_add() with `git worktree add --no-checkout`: the branch and
 * the worktree's registration and .git file, no file of the tree and no
 * index (orch/checkout.h, kind overlay, puts them there). The same
 * idempotence for resume. */
int worktree_add_no_checkout(const char *repo, const char *path, const char *branch,
			     const char *base_commit, const char *const *env, char **ret_start,
			     struct diag *reterr);

/* worktree_add()'s common case as a command for the caller to run (a
 * supervisor running it beside other work instead of waiting for it): when
 * path does not exist yet (its parent is created), 1 with the argv and the
 * environment of `git -C repo worktree add -b branch PATH base_commit`, as
 * worktree_add() would run it, in *ret_argv and *ret_env (empty, initialised
 * strvecs: they are replaced), and its
 * deadline in *ret_timeout_ms; 0 when the case is not the simple one. Exit 0
 * of the command is worktree_add()'s success; after anything else (a failed
 * or killed command, a taken branch) call worktree_add(), whose general path
 * repairs what it left. */
int worktree_add_command(const char *repo, const char *path, const char *branch,
			 const char *base_commit, const char *const *env, struct strvec *ret_argv,
			 struct strvec *ret_env, uint64_t *ret_timeout_ms, struct diag *reterr);

/* `git worktree remove --force` (twice forced when locked: the worktree's
 * uncommitted and untracked files are lost), then with delete_branch
 * `git branch -D branch`. A path that is not a registered worktree, and a
 * branch that does not exist, are not errors (0); an unregistered directory
 * at path is left alone. A registered worktree whose directory is gone is
 * pruned. */
int worktree_remove(const char *repo, const char *path, bool delete_branch, const char *branch,
		    const char *const *env, struct diag *reterr);

/* `git branch -D branch` when it exists (0 when it does not). */
int worktree_branch_delete(const char *repo, const char *branch, const char *const *env,
			   struct diag *reterr);

/* The same for n branches in one git process (those that do not exist are
 * skipped). */
int worktree_branches_delete(const char *repo, const char *const *branches, size_t n,
			     const char *const *env, struct diag *reterr);

/* Remove the worktree at path only if it is clean: `git worktree remove`
 * without --force, which refuses a worktree with modified, staged or
 * untracked files (ignored files do not count; a worktree with submodules is
 * always refused). *ret_removed says which; a refusal is 0 with false and the
 * worktree untouched, so the caller goes on to look at it. The branch stays.
 * One git process instead of a `git status` and a forced remove: the common
 * end of a task that changed nothing. */
int worktree_remove_clean(const char *repo, const char *path, const char *const *env,
			  bool *ret_removed, struct diag *reterr);

/* A sandboxed task's checkout: a clone of repo at path (relative paths are
 * relative to repo; parent directories are created) that shares repo's
 * object store (`git clone --shared --no-checkout`: alternates, read-only),
 * with its own .git, on a NEW branch made at base_commit (resolved in repo).
 * The clone is made beside path and renamed into place, so a clone at path
 * is whole. Idempotent like worktree_add(), for resume:
 *   - path is a clone with the branch: 0 (checked out again if its HEAD
 *     moved elsewhere; its files, committed or not, are kept);
 *   - path is a clone without the branch (a crash between clone and
 *     checkout): the branch is made and checked out (forced: no agent ran);
 *   - a leftover PATH.clone-tmp of a crash inside `git clone` is removed.
 * -EEXIST when path is the main working tree, is not a clone (a worktree's
 * .git file, see worktree_clone_check()) or exists and is not an empty
 * directory; -ENOENT when base_commit names no commit. ret_start as in
 * worktree_add(). Pass an env with WORKTREE_GIT_CONFINE_ENV = path to run
 * the git calls inside the clone confined. */
int worktree_clone_add(const char *repo, const char *path, const char *branch,
		       const char *base_commit, const char *const *env, char **ret_start,
		       struct diag *reterr);

/* A clone of repo at path (absent or an empty directory) without a file
 * checked out: `git clone --shared --no-checkout`, then refs/heads/BRANCH
 * made at commit (an id) and named by its HEAD. It has no index: the
 * overlay kind of clone copies one in (checkout-overlay.c). Run only where
 * no agent ran: git runs there unconfined. */
int worktree_clone_bare(const char *repo, const char *path, const char *branch, const char *commit,
			const char *const *env, struct diag *reterr);

/* Whether clone looks like a clone bernstein made, before git is run in it:
 * .git a real directory (not a symlink, not a worktree's .git file), and no
 * .git/commondir or .git/gitdir (which would point git at another
 * repository). -EPERM (with the reason) otherwise; no git process. */
int worktree_clone_check(const char *clone, struct diag *reterr);

/* Bring a clone's branch into repo: `git fetch --no-tags CLONE
 * +refs/heads/BRANCH:refs/heads/BRANCH` run in repo (bernstein's write
 * options), after worktree_clone_check(). The branch in repo is made or
 * moved to where the clone's is. -EIO (git's message) when the clone has no
 * such branch. */
int worktree_clone_fetch(const char *repo, const char *clone, const char *branch,
			 const char *const *env, struct diag *reterr);

/* The paths changed in the worktree wt relative to its HEAD: staged,
 * unstaged and untracked (each untracked file, not its directory; ignored
 * files do not count), relative to wt's top, excluding .bernstein/. A rename
 * gives both paths. Appended to *ret (an initialised strvec) on success. */
int worktree_changes(const char *wt, const char *const *env, struct strvec *ret,
		     struct diag *reterr);

/* `git add -A` of everything but .bernstein/, then, when anything is staged,
 * one commit with message by id (hooks off). *ret_committed says whether a
 * commit was made; an empty change set is 0 with false. */
int worktree_commit_all(const char *wt, const char *message, const struct git_identity *id,
			const char *const *env, bool *ret_committed, struct diag *reterr);

/* The number of commits reachable from branch and not from base
 * (`rev-list --count base..branch`). -ENOENT when either names no commit. */
int git_commits_between(const char *repo, const char *base, const char *branch,
			const char *const *env, unsigned *ret, struct diag *reterr);

/* The files changed between the merge base of base and branch, and branch
 * (`diff --name-only --no-renames base...branch`: a rename gives both paths).
 * Appended to *ret (an initialised strvec) on success. -ENOENT when either
 * names no commit. */
int git_changed_files(const char *repo, const char *base, const char *branch,
		      const char *const *env, struct strvec *ret, struct diag *reterr);

/* Merge branch into the main checkout at repo, whose HEAD must be the branch
 * `into` (else -EXDEV, nothing done): git_merge_prepare() then
 * git_merge_apply() (below). A merge commit with two parents is made even
 * when a fast-forward was possible, by id, hooks off.
 *   - 0, *ret_commit = the merge commit (caller frees), *ret_already = false;
 *   - branch is already an ancestor of HEAD (a resumed run that merged before
 *     it crashed): 0, *ret_commit = NULL, *ret_already = true, nothing done;
 *   - a conflict: -EBUSY, the conflicting paths appended to *ret_conflicts
 *     (when non-NULL); the checkout was never touched, branch is untouched;
 *   - -EUCLEAN: the checkout has uncommitted changes to tracked files, or a
 *     file (untracked or ignored) where the merge would write one; nothing
 *     done;
 *   - -ENOENT: branch names no commit;
 *   - git_merge_apply()'s errors, the checkout as it was.
 * The caller serializes merges (see the top of this file). */
int git_merge_no_ff(const char *repo, const char *into, const char *branch, const char *message,
		    const struct git_identity *id, const char *const *env, char **ret_commit,
		    bool *ret_already, struct strvec *ret_conflicts, struct diag *reterr);

/* ---- crash recovery (docs/worktrees.md, "After a crash") ---- */

/* How long a git step waits for a lock file another git holds (index.lock
 * of the main checkout, a lock a surviving git child still has open) before
 * giving up on it. */
#define WORKTREE_LOCK_WAIT_MS 3000u

/* Lock files git leaves when it is killed (`kill -9`, a crash, power loss):
 * FILE.lock beside the file it was about to replace. Whose they can be: */
enum git_lock_kind {
	/* bernstein's alone: refs/heads/PREFIX..., the admin directory of a
	 * worktree under wt_dir (.git/worktrees/ID/), a clone under wt_dir */
	GIT_LOCK_OURS,
	/* what a merge into the main checkout takes, and the user's git as
	 * well: the main index.lock, HEAD.lock and refs/heads/BASE.lock */
	GIT_LOCK_MERGE,
	/* packed-refs.lock, config.lock, shallow.lock: any git, and only for
	 * the moment of a write */
	GIT_LOCK_SHARED,
	_GIT_LOCK_KIND_MAX,
};

struct git_lock {
	char *path; /* absolute, for messages: ROOT/REL */
	char *root; /* the git directory it was found in (a clone's .git...) */
	char *rel;  /* its path below root */
	enum git_lock_kind kind;
	int64_t mtime_ns; /* CLOCK_REALTIME */
};

/* The lock files in repo's git directories (the main one, its common
 * directory's refs/, .git/worktrees/ID/ and every clone under wt_dir, a
 * directory relative to repo): *ret (caller frees with git_locks_free()).
 * Locks of refs and worktrees that are neither bernstein's nor the merge's
 * (another branch, a worktree of the user's) are not listed. Nothing is
 * removed; directories are walked without following symlinks, and at most
 * a bounded number of entries (a clone's .git is the agent's). */
int worktree_locks_find(const char *repo, const char *wt_dir, const char *branch_prefix,
			const char *base_branch, const char *const *env, struct git_lock **ret,
			size_t *ret_n, struct diag *reterr);
void git_locks_free(struct git_lock *v, size_t n);

/* Remove the lock file l: its directory opened beneath l->root (no
 * symlink followed, even one swapped in since it was found: a clone's
 * .git is the agent's), the file unlinked there. 0 also when it is gone. */
int git_lock_remove(const struct git_lock *l, struct diag *reterr);

/* The worktrees under wt_dir (relative to repo) that `git worktree add`
 * did not finish -- still locked "initializing", or HEAD still the null
 * id (which breaks a `git fetch` into repo: "bad object") -- removed: their
 * directories deleted (no agent ran there), their registrations pruned.
 * *ret_n (may be NULL): how many. */
int worktree_repair(const char *repo, const char *wt_dir, const char *const *env, size_t *ret_n,
		    struct diag *reterr);

/* `git worktree prune`: forget worktrees whose directories are gone. */
int worktree_prune(const char *repo, const char *const *env, struct diag *reterr);

/* A --no-ff merge in steps a crash can interrupt anywhere; git_merge_no_ff()
 * is the three together.
 *
 * git_merge_prepare: the merge commit of branch into the branch `into`
 * checked out at repo, made without touching the checkout, the index or a
 * ref (`git merge-tree --write-tree`, then `git commit-tree` by id with two
 * parents, HEAD and the branch tip): *ret_commit (caller frees). Checked
 * first, as git_merge_no_ff() says: -EXDEV, already merged (0, *ret_already,
 * *ret_commit = NULL), -EUCLEAN (uncommitted changes to tracked files, or a
 * file -- untracked or ignored -- where the merge would write one), -EBUSY
 * (a conflict: the paths appended to *ret_conflicts), -ENOENT, -EINVAL;
 * -EOPNOTSUPP when git is older than 2.38 (no merge-tree --write-tree). */
int git_merge_prepare(const char *repo, const char *into, const char *branch, const char *message,
		      const struct git_identity *id, const char *const *env, char **ret_commit,
		      bool *ret_already, struct strvec *ret_conflicts, struct diag *reterr);

/* git_merge_apply: move the checkout at repo and its branch `into` from
 * commit's first parent to commit (made by git_merge_prepare()): `git
 * update-index --refresh`, `git read-tree -m -u PARENT COMMIT` (index and
 * files), `git update-ref HEAD COMMIT PARENT`. Call it right after
 * git_merge_prepare() or git_merge_recover(), which checked the checkout
 * (here only HEAD and the files the merge adds are checked again; git
 * refuses a tracked change in the way itself). When it fails, the checkout
 * is exactly as before (the files the merge wrote removed or put back:
 * git_merge_recover()'s undo), and:
 *   -ESTALE   `into` is no longer at the parent (nothing done; prepare again)
 *   -EXDEV    the checkout is not on `into` (nothing done)
 *   -EAGAIN   another git holds the main index.lock (waited
 *             WORKTREE_LOCK_WAIT_MS; nothing done)
 *   -EUCLEAN  a change, or a file, where the merge writes (nothing done)
 *   -ENOSPC   the disk (or the file size limit) was full
 *   -EIO      git failed otherwise
 * When the checkout could not be put back, reterr says so ("... could not
 * be undone") and git_merge_recover() can finish the job later. */
int git_merge_apply(const char *repo, const char *into, const char *commit,
		    const struct git_identity *id, const char *const *env, struct diag *reterr);

enum git_merge_found {
	GIT_MERGE_UNDONE, /* `into` at the parent, the checkout clean: apply again */
	GIT_MERGE_DONE,	  /* `into` is at commit: the merge is complete */
	GIT_MERGE_MOVED,  /* `into` is elsewhere and the checkout clean: prepare again */
};

/* After a crash while git_merge_apply(repo, into, commit) ran (the caller
 * recorded commit, and since_ns, the time, before it started): what is
 * there, and the checkout put right. Lock files of the main checkout
 * (index.lock, HEAD.lock, refs/heads/INTO.lock) are removed only as the
 * merge's own: no process has them open (waited WORKTREE_LOCK_WAIT_MS for
 * one that does) and they are not older than since_ns, else -EBUSY naming
 * the file. With `into` at the parent: an index that is already commit's,
 * with the files, is finished (update-ref: DONE); an index still at the
 * parent has the files the merge wrote removed or put back (UNDONE) --
 * only when every changed path (tracked or not) is one the merge writes,
 * else -EUCLEAN naming a path that is not. */
int git_merge_recover(const char *repo, const char *into, const char *commit, int64_t since_ns,
		      const struct git_identity *id, const char *const *env,
		      enum git_merge_found *ret, struct diag *reterr);

/* The object store of the trusted repository repo (its common git
 * directory's objects/, canonical), which a task's clone borrows through
 * alternates: a sandboxed agent reads it (orch/confine.h). Caller frees. */
int worktree_repo_objects(const char *repo, const char *const *env, char **ret,
			  struct diag *reterr);

/* ---- review and pull requests (docs/runs.md, "Review and pull requests") */

/* The best common ancestor of a and b (commits or branches). -ENOENT
 * when there is none. */
int git_merge_base(const char *repo, const char *a, const char *b, const char *const *env,
		   char **ret, struct diag *reterr);

enum git_diff_kind {
	GIT_DIFF_PATCH,	  /* the patch */
	GIT_DIFF_STAT,	  /* --stat */
	GIT_DIFF_NUMSTAT, /* --numstat -z: ADDED\tDELETED\tPATH\0 (- - for binary) */
};

/* `git diff FROM TO` in the repository, no external diff or textconv
 * driver (a .gitattributes the agent wrote selects none): the output
 * (caller frees; *ret_len its bytes, at most WORKTREE_GIT_MAX_OUTPUT). */
int git_diff_range(const char *repo, const char *from, const char *to, enum git_diff_kind kind,
		   const char *const *env, char **ret, size_t *ret_len, struct diag *reterr);

/* remote.NAME.url of the repository (-ENOENT: no such remote). */
int git_remote_url(const char *repo, const char *name, const char *const *env, char **ret,
		   struct diag *reterr);

/* `git push URL COMMIT:refs/heads/BRANCH` from the repository (never from
 * a task's tree): hardened as every git of bernstein's, with https and ssh
 * allowed (GIT_HARDEN_PUSH), ssh being `ssh` and the credential helpers
 * those of the user's global configuration only. Not forced: a branch the
 * remote has elsewhere is refused by the remote. */
int git_push_commit(const char *repo, const char *url, const char *commit, const char *branch,
		    const char *const *env, struct diag *reterr);

/* ---- conflicts (docs/runs.md, "Conflicts") ---- */

/* The task's tree wt put back on its branch at commit, whatever a killed
 * bernstein left there: a rebase or a merge in progress aborted (their
 * state files removed when git cannot abort them), HEAD the branch again,
 * then `git reset --hard COMMIT` (the branch moves to commit; untracked
 * files stay). */
int worktree_restore(const char *wt, const char *branch, const char *commit, const char *const *env,
		     struct diag *reterr);

/* `git rebase ONTO` of the branch checked out in the task's tree wt (no
 * autostash, autosquash, update-refs or hook; commits that become empty
 * dropped), by id. 0: rebased (or already on onto); -EBUSY: it stopped on a
 * conflict, the paths appended to *ret_conflicts (may be NULL), and it was
 * aborted: the branch and the tree as before; -EIO: it failed otherwise
 * (aborted too). */
int worktree_rebase(const char *wt, const char *onto, const struct git_identity *id,
		    const char *const *env, struct strvec *ret_conflicts, struct diag *reterr);

/* `git merge --no-ff --no-commit COMMIT` in the task's tree wt: 0 when it
 * merged cleanly (not committed yet), 1 when it conflicts (the paths
 * appended to *ret_conflicts, the markers left in the files, the merge in
 * progress), < 0 on failure. */
int worktree_merge_start(const char *wt, const char *commit, const struct git_identity *id,
			 const char *const *env, struct strvec *ret_conflicts, struct diag *reterr);

/* Everything in wt committed: with a merge in progress the merge commit
 * (even when the tree equals HEAD), else as worktree_commit_all(). */
int worktree_commit_merge(const char *wt, const char *message, const struct git_identity *id,
			  const char *const *env, bool *ret_committed, struct diag *reterr);

/* The subjects of the commits of from..to (newest first, at most max),
 * appended to *ret. */
int git_log_subjects(const char *repo, const char *from, const char *to, unsigned max,
		     const char *const *env, struct strvec *ret, struct diag *reterr);

/* The paths among paths whose file in commit (read from the object store
 * of repo, never from a tree) still has a conflict marker line (one that
 * starts with 7 '<' or '>' followed by a blank or its end): 1 and the
 * paths appended to *ret, 0 none. */
int git_conflict_markers(const char *repo, const char *commit, const struct strvec *paths,
			 const char *const *env, struct strvec *ret, struct diag *reterr);

/* One git step in dir (`git -C dir args...`) hardened as the top of this
 * file says, its output unread: 0, or the error (git's message in reterr).
 * write: bernstein's write options (GIT_HARDEN_WRITE). */
int worktree_git_step(const char *dir, const char *const *env, bool write, const char *const *args,
		      struct diag *reterr);

#endif
