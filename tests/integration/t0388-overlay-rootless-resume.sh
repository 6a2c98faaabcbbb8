#!/bin/sh
# checkout: overlay as a non-root user across kill -9 and resume: the run's
# overlays live in its own user + mount namespace (its uid mapped to
# itself: /proc/PID/uid_map of the running bernstein; its capability
# bounding set empty), never visible
# outside (the running task's tree is an empty directory there); kill -9
# takes the namespace and its mounts down with its last process; resume,
# as the same user, enters a namespace of its own again and mounts the
# task's layer again (its first attempt's files are there, a deleted lower
# file stays deleted: the userxattr whiteout), the task finishes and is
# merged once; nothing is left.
. "$SRCDIR/tests/integration/rootless-lib.sh"

rootless_begin "t0388 overlay checkouts as a non-root user: kill -9 and resume"

MARK="rootless-resume-$$"
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
      if [ -f first.txt ]; then cp first.txt seen-first.txt; ls src/deep/er > ls-again.txt; fi;
      awk -v d="\$PWD" '\$5 == d && / - overlay /' /proc/self/mountinfo | grep -q . && echo yes > mounted.txt;
      echo attempt > first.txt;
      rm -f src/deep/er/f3.c;
      echo running > $T/slow.started;
      while [ ! -f $T/go ]; do sleep 0.1; done
  - title: quick
    prompt: "echo quick > quick.txt"
EOF2
commit_all base
rootless_own

(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" \
	$AS "$BERNSTEIN" run plan.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
check "the slow task's agent started" wait_until "[ -f '$T/slow.started' ]"
check "the quick task was merged" wait_until "git -C '$W' log --merges --oneline main | grep -q ."
check "the running bernstein maps its uid to itself only" \
	sh -c "[ \"\$(tr -s ' ' <'/proc/$BG/uid_map' | sed 's/^ //')\" = '$RL_UID $RL_UID 1' ]"
check "with an empty capability bounding set (nothing it starts gains one)" \
	grep -q '^CapBnd:[[:space:]]*0000000000000000$' "/proc/$BG/status"
check "in a mount namespace of its own" \
	sh -c "[ \"\$(readlink /proc/$BG/ns/mnt)\" != \"\$(readlink /proc/self/ns/mnt)\" ]"
SLOWTREE=$(ls -d "$W"/.bernstein/worktrees/slow-* 2>/dev/null | head -n 1)
check "outside it the running task's tree is not mounted" \
	sh -c "[ -n '$SLOWTREE' ] && [ -z \"\$(overlay_mounts '$T')\" ] && [ ! -e '$SLOWTREE/shared.txt' ]"
check "root sees the tree mounted inside the namespace" \
	sh -c "nsenter -t $BG -U -m --preserve-credentials cat /proc/self/mountinfo | grep -q ' $SLOWTREE .* - overlay '"
check "another process of the user cannot open the namespace (bernstein is non-dumpable)" \
	sh -c "! $AS readlink /proc/$BG/ns/mnt >/dev/null 2>&1"
check "its layer holds the agent's file" \
	sh -c "grep -qx attempt '$W'/.bernstein/overlay/task/slow-*/upper/first.txt"
kill -9 "$BG"
wait "$BG" 2>/dev/null
check "its agent went with it" wait_no_procs "$MARK"

touch "$T/go"
rm -f "$T/slow.started"
expect_exit 0 "$KEY" $AS "$BERNSTEIN" resume
check "the slow task ran again" test -f "$T/slow.started"
check "its second attempt saw the first attempt's file (the layer mounted again)" \
	grep -qx attempt "$W/seen-first.txt"
check "and not the lower file the first attempt deleted (its whiteout kept)" \
	sh -c "grep -qx f2.c '$W/ls-again.txt' && ! grep -qx f3.c '$W/ls-again.txt'"
check "its tree was an overlay again" grep -qx yes "$W/mounted.txt"
check "each changing task merged exactly once" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 2 ]"
check "the deletion is merged" test ! -e "$W/src/deep/er/f3.c"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "no base checkout is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/base' 2>/dev/null)\" ]"
check "git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"
run "$KEY" $AS "$BERNSTEIN" audit show --event-type checkout.fallback --json
check "no fallback was recorded" sh -c "! grep -q fallback '$T/stdout'"
run "$KEY" $AS "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain survived the crash"

test_done
