/* What a killed bernstein left in git, made right before any git of this
 * execution runs (run-internal.h, docs/runs.md "After a crash"). */
#include "orch/run-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "proc/holders.h"
#include "util/fsutil.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define REPAIR_HELD_WAIT_MS 10000 /* a lock a surviving git child still has open */
#define REPAIR_POLL_MS	    50
#define SHARED_STALE_NS	    2000000000LL /* packed-refs.lock etc.: older than this, unheld */
#define SAME_TRANSACTION_NS 1000000000LL

/* Lock files git left in this repository, made right before any git of
 * this execution runs (docs/runs.md, "After a crash"). The run lock is
 * held: no git of a bernstein runs here, so
 *   - bernstein's own (its branches' ref locks, its worktrees' and clones'
 *     locks) are stale as soon as no process has them open (a git child of
 *     the dead bernstein may outlive it a moment: waited for);
 *   - packed-refs.lock, config.lock, shallow.lock (held by any git only for
 *     a write; packed-refs.lock without the file open) are stale when
 *     nobody has them open and they are older than the lock taking, or
 *     were taken with a stale ref lock of bernstein's (same_transaction());
 *   - the main checkout's index.lock, HEAD.lock and refs/heads/BASE.lock
 *     may be the user's git's (a commit waiting in the editor has its index
 *     lock without the file open): with a merge of this run recorded as
 *     under way, its recovery decides (git_merge_recover()); otherwise they
 *     must go away by themselves, else -EBUSY naming the file.
 * Every removal is reported as a warning. */
/* Whether the shared lock v[k] was taken by the same killed git as one of
 * bernstein's ref locks (a ref transaction takes packed-refs.lock right
 * after the locks of its refs: `git branch -D` of empty task branches). */
static bool same_transaction(const struct git_lock *v, size_t n, size_t k)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int64_t d = v[i].mtime_ns - v[k].mtime_ns;

		if (v[i].kind == GIT_LOCK_OURS && strstr(v[i].path, "/refs/heads/") &&
		    d < SAME_TRANSACTION_NS && d > -SAME_TRANSACTION_NS)
			return true;
	}
	return false;
}

int run_repair_locks(struct loop *l, int64_t locked_ns, struct diag *reterr)
{
	struct orch_env *e = l->e;
	struct git_lock *v = NULL;
	bool *done = NULL, journaled = false;
	const char **paths = NULL;
	pid_t *holders = NULL;
	/* waits for other processes, and file times: the real clocks */
	const struct clock *real = clock_system();
	uint64_t start = real->mono_ms(real);
	size_t n = 0, i, left;
	int r;

	r = worktree_locks_find(e->repo, ORCH_WORKTREES_DIR, ORCH_BRANCH_PREFIX, l->run.base_branch,
				e->git_env, &v, &n, reterr);
	if (r < 0 || n == 0)
		goto out;
	for (i = 0; i < l->n; i++)
		if (l->t[i].row.state == TASK_MERGING && l->t[i].row.merge_commit)
			journaled = true;
	done = xcalloc(n, sizeof(*done));
	paths = xcalloc(n, sizeof(*paths));
	holders = xcalloc(n, sizeof(*holders));
	for (i = 0; i < n; i++)
		paths[i] = v[i].path;
	for (;;) {
		uint64_t waited = real->mono_ms(real) - start;
		bool late = waited >= WORKTREE_LOCK_WAIT_MS,
		     very_late = waited >= REPAIR_HELD_WAIT_MS;
		struct stat st;

		if (proc_file_holders(paths, n, holders) < 0)
			memset(holders, 0, n * sizeof(*holders));
		for (i = 0, left = 0; i < n; i++) {
			if (done[i])
				continue;
			if (lstat(v[i].path, &st) < 0 ||
			    (v[i].kind == GIT_LOCK_MERGE && journaled)) {
				done[i] = true;
				continue;
			}
			if (!holders[i] && (v[i].kind == GIT_LOCK_OURS ||
					    (v[i].kind == GIT_LOCK_SHARED &&
					     (v[i].mtime_ns < locked_ns - SHARED_STALE_NS ||
					      same_transaction(v, n, i))))) {
				r = git_lock_remove(&v[i], reterr);
				if (r < 0)
					goto out;
				run_warn(l, NULL,
					 "removed '%s', a lock file a killed git left behind",
					 v[i].path);
				done[i] = true;
				continue;
			}
			if (v[i].kind == GIT_LOCK_SHARED && late) {
				run_warn(
					l, NULL,
					"'%s' exists: another git is running here, or one was killed (remove the file if no git is running), ignoring",
					v[i].path);
				done[i] = true;
				continue;
			}
			if ((v[i].kind == GIT_LOCK_MERGE && late) ||
			    (v[i].kind == GIT_LOCK_OURS && very_late)) {
				if (holders[i])
					diag_set(
						reterr, v[i].path, 0, 0,
						"exists and process %ld has it open: another git is running in this repository",
						(long)holders[i]);
				else
					diag_set(
						reterr, v[i].path, 0, 0,
						"exists: another git is running in this repository, or one was killed (remove the file if no git is running; after a bernstein killed while merging, 'bernstein resume' repairs it)");
				r = -EBUSY;
				goto out;
			}
			left++;
		}
		if (left == 0)
			break;
		{
			struct timespec ts = {.tv_sec = 0, .tv_nsec = REPAIR_POLL_MS * 1000000L};

			(void)nanosleep(&ts, NULL);
		}
	}
	r = 0;
out:
	git_locks_free(v, n);
	free(done);
	free(paths);
	free(holders);
	return r;
}

/* Worktrees a killed `git worktree add` left half made (a repair of one
 * killed in turn included): removed now, before any other git runs -- a
 * half-made worktree's null HEAD makes `git fetch` into the repository
 * fail -- and made again when their task is dispatched. */
void run_repair_worktrees(struct loop *l)
{
	struct diag d;
	size_t n = 0;

	diag_clear(&d);
	if (worktree_repair(l->e->repo, ORCH_WORKTREES_DIR, l->e->git_env, &n, &d) < 0)
		run_warn(l, NULL, "cannot repair the half-made worktrees: %s", d.msg);
	else if (n)
		run_warn(l, NULL, "removed %zu half-made worktree(s) a killed git left behind", n);
}

/* Worktrees a killed bernstein did not get to remove: those of this run's
 * tasks that are merged or no_changes (a crash between the state commit and
 * the removal, or inside `git worktree remove`), and the ones set aside
 * (run_set_aside()). Kept, as always: those of failed, refused, conflicted or
 * blocked tasks, and of tasks done with merge: none. */
void run_cleanup_worktrees(struct loop *l)
{
	char *dir = agentrun_path(l->e->repo, ORCH_WORKTREES_DIR);
	struct dirent *de;
	size_t i, n = strlen(CHECKOUT_ASIDE_SUFFIX);
	DIR *d;

	for (i = 0; i < l->n; i++) {
		struct otask *t = &l->t[i];
		struct stat st;

		/* those whose removal was due: merged, or no_changes (merge:
		 * none keeps a done task's worktree) */
		if (!t->row.worktree || lstat(t->row.worktree, &st) < 0 ||
		    !(t->row.state == TASK_NO_CHANGES ||
		      (t->row.state == TASK_DONE &&
		       (t->row.merge_commit ||
			(t->row.reason && strcmp(t->row.reason, "already merged") == 0)))))
			continue;
		run_remove_worktree(l, t, false);
	}
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char *p;
		int r;

		if (len <= n || strcmp(de->d_name + len - n, CHECKOUT_ASIDE_SUFFIX) != 0)
			continue;
		p = agentrun_path(dir, de->d_name);
		r = rmtree_beneath(p);
		if (r < 0)
			run_warn(l, NULL, "cannot remove '%s': %s", p, strerror(-r));
		l->prune_worktrees = true;
		free(p);
	}
	if (d)
		(void)closedir(d);
	free(dir);
}
