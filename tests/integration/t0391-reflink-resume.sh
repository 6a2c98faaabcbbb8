#!/bin/sh
# Reflink checkouts across kill -9 and resume, on a real XFS (reflink=1,
# loop-mounted by the test), with `checkout: reflink`: a tree that was
# whole when bernstein was killed (its layer's `populated` marker) is used
# as it is by the resumed task (the first attempt's file is still there); a
# tree left half made (simulated: the marker and some files deleted, a
# symlink out of the repository planted where a file was) is emptied and
# made again from the base checkout without following the symlink; every
# task is merged once and nothing is left under .bernstein/overlay.
. "$SRCDIR/tests/integration/reflink-lib.sh"

reflink_begin "t0391 reflink checkouts: kill -9 and resume"

MARK="reflink-resume-$$"
OUT=$T/outside
mkdir -p "$OUT" && printf 'keep\n' >"$OUT/keep.txt"
tail_agent
cat >"$W/bernstein.yaml" <<'EOF2'
adapter: tail
parallel: 4
retry_backoff: 0
checkout: reflink
EOF2
cat >"$W/plan.yaml" <<EOF2
name: crash
tasks:
  - title: slow
    prompt: >-
      : $MARK;
      git status --porcelain > status-at-start.txt;
      if [ -f first.txt ]; then cp first.txt seen-first.txt; fi;
      test -f src/deep/er/f3.c && test ! -L src/deep/er/f4.c && grep -qx 'file 4' src/deep/er/f4.c && echo whole > whole-seen.txt;
      echo attempt > first.txt;
      echo running > $T/slow.started;
      while [ ! -f $T/go ]; do sleep 0.1; done
  - title: quick
    prompt: "echo quick > quick.txt"
  - title: idle
    prompt: "true"
EOF2
commit_all base

bg_run()
{
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" \
		"$BERNSTEIN" run "$1") </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BG=$!
}

bg_run plan.yaml
check "the slow task's agent started" wait_until "[ -f '$T/slow.started' ]"
check "the quick task was merged" wait_until "git -C '$W' log --merges --oneline main | grep -q ."
check "the other trees were removed before the kill" \
	wait_until "[ \$(ls '$W/.bernstein/overlay/task' | wc -l) -eq 1 ]"
kill -9 "$BG"
wait "$BG" 2>/dev/null
LAYER=$(ls -d "$W"/.bernstein/overlay/task/*)
check "the running task's tree was a reflink tree, whole" \
	sh -c "test -f '$LAYER/reflink' && test -f '$LAYER/populated'"

touch "$T/go"
rm -f "$T/slow.started"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "the slow task ran again" test -f "$T/slow.started"
check "its second attempt found the first attempt's file (the whole tree used as it was)" \
	grep -qx attempt "$W/seen-first.txt"
check "each changing task merged exactly once" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 2 ]"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "no base checkout is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/base' 2>/dev/null)\" ]"
check "git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"

# ---- a tree left half made: made again from scratch ----
rm -f "$T/go" "$T/slow.started"
sed 's/^name: crash/name: again/; s/quick.txt/quick2.txt/; s/seen-first.txt/seen-again.txt/; s/whole-seen.txt/whole-again.txt/; s/status-at-start.txt/status-again.txt/' \
	"$W/plan.yaml" >"$W/again.yaml"
git_q rm -q seen-first.txt whole-seen.txt status-at-start.txt first.txt
commit_all again
bg_run again.yaml
check "again: the slow task's agent started" wait_until "[ -f '$T/slow.started' ]"
check "again: the other trees were removed before the kill" \
	wait_until "[ \$(ls '$W/.bernstein/overlay/task' | wc -l) -eq 1 ]"
kill -9 "$BG"
wait "$BG" 2>/dev/null
TREE=$(ls -d "$W"/.bernstein/worktrees/slow-*)
LAYER=$W/.bernstein/overlay/task/${TREE##*/}
check "again: the killed task's tree is a reflink tree, whole" test -f "$LAYER/populated"
# what a crash half way through the copy leaves: no marker, files missing;
# and a symlink out of the repository where a file was
rm -f "$LAYER/populated" "$TREE/src/deep/er/f3.c" "$TREE/src/deep/er/f4.c" "$TREE/first.txt" \
	"$TREE/whole-again.txt"
ln -s "$OUT/keep.txt" "$TREE/src/deep/er/f4.c"
rm -f "$T/slow.started"
touch "$T/go"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "again: the slow task ran again" test -f "$T/slow.started"
check "again: its tree was made whole again (the symlink replaced by the file)" \
	grep -qx whole "$W/whole-again.txt"
check "again: git status saw the new tree clean" \
	sh -c "[ -z \"\$(grep -v -e status-again.txt '$W/status-again.txt')\" ]"
check "again: the planted symlink was not followed" \
	sh -c "[ \"\$(cat '$OUT/keep.txt')\" = keep ] && [ \$(ls -A '$OUT' | wc -l) -eq 1 ]"
check "again: each changing task merged exactly once" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 4 ]"
check "again: nothing is left under .bernstein/overlay" \
	sh -c "[ -z \"\$(find '$W/.bernstein/overlay' -mindepth 2)\" ]"
check "again: git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"

# ---- a whole tree deleted by hand while bernstein was down: made again ----
rm -f "$T/go" "$T/slow.started"
sed 's/^name: crash/name: third/; s/quick.txt/quick3.txt/; s/seen-first.txt/seen-third.txt/; s/whole-seen.txt/whole-third.txt/; s/status-at-start.txt/status-third.txt/' \
	"$W/plan.yaml" >"$W/third.yaml"
git_q rm -q seen-again.txt whole-again.txt status-again.txt first.txt
commit_all third
bg_run third.yaml
check "third: the slow task's agent started" wait_until "[ -f '$T/slow.started' ]"
kill -9 "$BG"
wait "$BG" 2>/dev/null
TREE=$(ls -d "$W"/.bernstein/worktrees/slow-*)
rm -rf "$TREE"
rm -f "$T/slow.started"
touch "$T/go"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "third: the slow task ran again" test -f "$T/slow.started"
check "third: in a tree made whole again" grep -qx whole "$W/whole-third.txt"
check "third: git status saw it clean" \
	sh -c "[ -z \"\$(grep -v -e status-third.txt '$W/status-third.txt')\" ]"
check "third: nothing is left under .bernstein/overlay" \
	sh -c "[ -z \"\$(find '$W/.bernstein/overlay' -mindepth 2)\" ]"
check "no agent is left" sh -c "! pgrep -f '[r]eflink-resume-$$'"
run "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain survived the crashes"

test_done
