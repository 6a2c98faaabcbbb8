#!/bin/sh
# checkout: overlay across kill -9 and resume: the overlay of a task that was
# running is left mounted by a killed bernstein (found in mountinfo); taken
# down as a reboot would, resume mounts it again from the task's layer (its
# first attempt's files are there), the task finishes and is merged once;
# after the run no mount, layer or base checkout of the repository is left.
. "$SRCDIR/tests/integration/overlay-lib.sh"

overlay_begin "t0371 overlay checkouts: kill -9 and resume"

if ! unshare -m sh -c 'd=$(mktemp -d) && mkdir $d/l $d/u $d/w $d/m &&
	mount -t overlay overlay -o lowerdir=$d/l,upperdir=$d/u,workdir=$d/w $d/m' 2>/dev/null; then
	skip "overlayfs cannot be mounted here (t0372 tests the fallback)"
	test_done
fi

MARK="overlay-resume-$$"
# the shell agent, but what it runs is the task part of its prompt: a
# resumed attempt's prompt starts with the recovered context (prose)
tail_agent
cat >"$W/bernstein.yaml" <<'EOF2'
adapter: tail
parallel: 4
retry_backoff: 0
checkout: overlay
EOF2
cat >"$W/plan.yaml" <<EOF2
name: crash
tasks:
  - title: slow
    prompt: >-
      : $MARK;
      if [ -f first.txt ]; then cp first.txt seen-first.txt; fi;
      awk -v d="\$PWD" '\$5 == d && / - overlay /' /proc/self/mountinfo | grep -q . && echo yes > mounted.txt;
      echo attempt > first.txt;
      echo running > $T/slow.started;
      while [ ! -f $T/go ]; do sleep 0.1; done
  - title: quick
    prompt: "echo quick > quick.txt"
  - title: idle
    prompt: "true"
EOF2
commit_all base

(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" \
	"$BERNSTEIN" run plan.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
check "the slow task's agent started" wait_until "[ -f '$T/slow.started' ]"
check "the quick task was merged" wait_until "git -C '$W' log --merges --oneline main | grep -q ."
check "the idle task became no_changes" \
	wait_until "'$BERNSTEIN' -C '$W' status --json | grep -q '\"state\": \"no_changes\"'"
# the finished tasks' trees go once they are settled (their state is
# recorded first): wait for that, then kill
check "the other trees were removed before the kill" \
	wait_until "[ \$(ls '$W/.bernstein/overlay/task' | wc -l) -eq 1 ]"
kill -9 "$BG"
wait "$BG" 2>/dev/null
SLOW=$(overlay_mounts "$W")
check "kill -9 left the running task's overlay mounted (one mount)" \
	sh -c "[ \$(printf '%s\n' '$SLOW' | grep -c .) -eq 1 ]"
# a reboot takes the mount down; the layer stays on disk
umount -l "$SLOW"
check "the tree is no longer mounted" test -z "$(overlay_mounts "$W")"

touch "$T/go"
rm -f "$T/slow.started"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "the slow task ran again" test -f "$T/slow.started"
check "its second attempt saw the first attempt's file (the layer mounted again)" \
	grep -qx attempt "$W/seen-first.txt"
check "its tree was an overlay again" grep -qx yes "$W/mounted.txt"
check "each changing task merged exactly once" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 2 ]"
check "no overlay mount is left" test -z "$(overlay_mounts "$W")"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "no base checkout is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/base' 2>/dev/null)\" ]"
check "git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"
check "no agent is left" sh -c "! pgrep -f '[o]verlay-resume-$$'"

# ---- kill -9, and resume with the mount still there ----
rm -f "$T/go" "$T/slow.started"
sed 's/^name: crash/name: again/; s/quick.txt/quick2.txt/; s/seen-first.txt/seen-again.txt/' \
	"$W/plan.yaml" >"$W/again.yaml"
commit_all again
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" \
	"$BERNSTEIN" run again.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
check "again: the slow task's agent started" wait_until "[ -f '$T/slow.started' ]"
kill -9 "$BG"
wait "$BG" 2>/dev/null
check "again: its overlay is left mounted" test -n "$(overlay_mounts "$W")"
touch "$T/go"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "again: the first attempt's file was seen through the same mount" \
	grep -qx attempt "$W/seen-again.txt"
check "again: no overlay mount is left" test -z "$(overlay_mounts "$W")"
check "again: no layer nor base checkout is left" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' '$W/.bernstein/overlay/base' | grep -v :)\" ]"
check "again: git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"
run "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain survived the crashes"

test_done
