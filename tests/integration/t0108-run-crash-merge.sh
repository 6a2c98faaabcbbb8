#!/bin/sh
# kill -9 inside the merge into the main checkout (three points), the
# removal of a merged task's worktree and the deletion of empty branches,
# then `bernstein resume`: every task ends done, merged exactly once, the
# main checkout clean, no lock file and no worktree left behind, exit 0
# (issue #14, class 4). And a full disk in the middle of a merge
# (RLIMIT_FSIZE on git): the checkout is left byte for byte as it was, the
# task waits in merging and resume merges it once there is room (class 6).
# How a step is interrupted: tests/integration/stall-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0108 kill -9 inside the merge and cleanup steps, a full disk, then resume"
. "$SRCDIR/tests/integration/stall-lib.sh"

N=0
# the merge into the main checkout, files written, index not committed
crash_at "merge, files written" 'merge --no-ff|read-tree -m -u' 'rename:*index.lock'
# the merge, killed between two files of the checkout
crash_at "merge, half the files" 'merge --no-ff|read-tree -m -u' 'create:*a2.txt'
# the merge, checkout done, the branch about to move
crash_at "merge, branch update" 'merge --no-ff|update-ref' 'rename:*refs/heads/main.lock'
# the removal of a merged task's worktree, half the files gone
crash_at "worktree remove" 'worktree remove' 'unlink:*/sub/a2.txt'
# the deletion of the empty branches at the end, inside its ref transaction
crash_at "branch -D" 'branch -D' 'unlink:*refs/heads/bernstein/idle-*'

# ---- a full disk in the middle of a merge (class 6) ----
N=$((N + 1))
new_repo none
cat >"$W/plan.yaml" <<'EOF'
name: full
tasks:
  - title: big
    prompt: "echo changed > base.txt; mkdir -p data; head -c 1000000 /dev/zero | tr '\\0' x > data/big.bin"
EOF
printf 'mine, untracked\n' >"$W/notes.txt"
printf 'mine, ignored\n' >"$W/build.log"
git -C "$W" add plan.yaml >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m plan >/dev/null 2>&1
snapshot()
{
	(cd "$W" && git status --porcelain --ignored &&
		find . -path ./.git -prune -o -path ./.bernstein -prune -o -type f -print |
		LC_ALL=C sort | xargs sha256sum && git rev-parse HEAD && git diff --cached --stat)
}
snapshot >"$T/before"
rm -f "$T/stall.once"
printf '%s\n%s\n%s\n' 'merge --no-ff|read-tree -m -u' '-' 'fsize 256' >"$T/stall.conf"
(cd "$W" && bern run plan.yaml) </dev/null >"$T/stdout" 2>"$T/stderr"
RC=$?
check "full disk: the run exits 1 (the merge could not be made)" [ "$RC" -eq 1 ]
snapshot >"$T/after"
expect_same_file "$T/before" "$T/after" "full disk: the checkout is byte for byte as before"
run "$BERNSTEIN" -C "$W" status
expect_stdout_contains "merging" "full disk: the task waits in merging"
expect_stdout_contains "merge postponed" "full disk: with the reason"
: >"$T/stall.conf"
(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
RC=$?
check "full disk: resume with space back exits 0" [ "$RC" -eq 0 ]
check "full disk: the task is merged once" sh -c \
	"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/big-') -eq 1 ]"
check "full disk: its files are there" sh -c "[ \$(wc -c <'$W/data/big.bin') -eq 1000000 ] &&
	grep -q changed '$W/base.txt'"
check "full disk: the user's files are untouched" sh -c \
	"grep -q untracked '$W/notes.txt' && grep -q ignored '$W/build.log'"

test_done
