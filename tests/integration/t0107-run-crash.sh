#!/bin/sh
# kill -9 inside the git steps that make a task's checkout and commit its
# work, then `bernstein resume`: every task ends done, merged exactly once,
# the main checkout clean, no lock file and no worktree left behind, exit 0
# (issue #14, class 4). The merge and cleanup steps: t0108. How a step is
# interrupted: tests/integration/stall-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0107 kill -9 inside worktree, clone and commit steps, then resume"
. "$SRCDIR/tests/integration/stall-lib.sh"

N=0
# git worktree add -b: its `git branch` child stopped holding the new
# branch's ref lock
crash_at "worktree add, branch lock" 'worktree add' 'rename:*refs/heads/bernstein/*.lock'
# its `git symbolic-ref` child: the worktree registered, locked
# "initializing", HEAD still the null id of a half-made worktree
crash_at "worktree add, HEAD not set" 'worktree add' 'rename:*worktrees/*/HEAD.lock'
# its `git reset --hard` child: the files written, the index lock left
crash_at "worktree add, checkout" 'worktree add' 'rename:*worktrees/*/index.lock'
# bernstein's commit of the agent's work: the commit made, the branch not moved
crash_at "commit" 'commit -q --no-verify' 'rename:*refs/heads/bernstein/*.lock'
if [ "$LANDLOCK" = yes ]; then
	# sandboxed tasks: the clone (beside its place), its checkout (confined
	# git), the fetch of its branch into the main repository
	crash_at "clone" 'clone --shared' 'rename:*clone-tmp/.git/config.lock' landlock
	crash_at "clone checkout" 'checkout -q -f -b' 'rename:*index.lock' landlock
	crash_at "fetch from the clone" 'fetch -q --no-tags' \
		'rename:*refs/heads/bernstein/*.lock' landlock
else
	skip "sandboxed steps (clone, its checkout, fetch)" "the kernel has no Landlock"
fi

test_done
