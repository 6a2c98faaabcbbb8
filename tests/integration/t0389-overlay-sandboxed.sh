#!/bin/sh
# checkout: overlay for sandboxed tasks (sandbox: landlock, and bwrap and
# container where they are installed): each task's tree is its own clone whose files are an
# overlay mount (lower: the shared base checkout, upper: the task's layer
# holding the clone's .git directory). Checked from inside the agents: the
# tree is an overlay mount with a .git directory of its own (no commondir),
# git there sees only the task's edits, and writing the lower layer or the
# main repository's .git fails. Then: edits, a new file and a deletion
# merged once; no_changes; a dependent task on the moved base branch (its
# clone brought from the shared base by `git read-tree -m -u`, confined); kill -9 and resume (the layer mounted again, the
# first attempt's file and commit kept); nothing left after the runs (no
# mount, no layer, no base checkout, no clone); a failed task's tree kept
# mounted and removed by `worktrees gc --force`; where mount(2) is refused
# a plain clone, the reason said once.
. "$SRCDIR/tests/integration/overlay-lib.sh"

overlay_begin "t0389 overlay checkouts of sandboxed tasks"

if ! unshare -m sh -c 'd=$(mktemp -d) && mkdir $d/l $d/u $d/w $d/m &&
	mount -t overlay overlay -o lowerdir=$d/l,upperdir=$d/u,workdir=$d/w $d/m' 2>/dev/null; then
	skip "overlayfs cannot be mounted here (t0372 tests the fallback)"
	test_done
fi
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	skip "no Landlock here"
	test_done
fi

# the shell agent, but what it runs is the task part of its prompt: a
# resumed attempt's prompt starts with the recovered context (prose)
tail_agent

# what the agent finds out about its tree, into FILE.txt: "overlay" when
# its tree is an overlay mount, "gitdir" when .git is a directory of its
# own (a clone, no commondir), "lower-denied" when writing the lower layer
# fails, "repo-denied" when writing the main .git fails
probe()
{
	printf '%s' "awk -v d=\"\$PWD\" '\$5 == d && / - overlay /' /proc/self/mountinfo | grep -q . && echo overlay > $1.txt;
      test -d .git && test ! -L .git && test ! -e .git/commondir && echo gitdir >> $1.txt;
      low=\$(awk -v d=\"\$PWD\" '\$5 == d' /proc/self/mountinfo | sed -n 's/.*lowerdir=\\([^,]*\\).*/\\1/p');
      if [ -n \"\$low\" ] && ! (echo evil > \"\$low/shared.txt\") 2>/dev/null && ! (echo evil > \"\$low/evil.txt\") 2>/dev/null; then echo lower-denied >> $1.txt; fi;
      if ! (echo evil > $W/.git/evil) 2>/dev/null && ! git -C $W update-ref refs/heads/evil HEAD 2>/dev/null; then echo repo-denied >> $1.txt; fi"
}

# ---- one run per tier: edits, a new file, a deletion, no_changes ----
TIERS=landlock
command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true 2>/dev/null && TIERS="$TIERS bwrap"
if command -v crun >/dev/null 2>&1 || command -v runc >/dev/null 2>&1; then
	TIERS="$TIERS container"
fi
N=0
for TIER in $TIERS; do
	N=$((N + 1))
	printf 'adapter: tail\nparallel: 4\ncheckout: overlay\nsandbox: %s\n' "$TIER" >"$W/bernstein.yaml"
	cat >"$W/$TIER.yaml" <<EOF2
name: $TIER
tasks:
  - title: edit
    prompt: >-
      $(probe "$TIER-edit");
      echo $TIER > shared.txt;
      git status --porcelain > $TIER-status.txt
  - title: add
    prompt: "echo new > src/deep/er/new-$TIER.c; rm src/deep/er/f$N.c"
  - title: nothing
    prompt: "cat shared.txt src/deep/er/f8.c > /dev/null"
  - title: later
    depends_on: [edit, add]
    prompt: >-
      git status --porcelain > $TIER-later-status.txt;
      cat shared.txt src/deep/er/new-$TIER.c > $TIER-later-saw.txt;
      test ! -e src/deep/er/f$N.c && echo gone >> $TIER-later-saw.txt
EOF2
	commit_all "$TIER"
	expect_exit 0 "$KEY" "$BERNSTEIN" run "$TIER.yaml"
	check "$TIER: the task's tree was an overlay mount" grep -qx overlay "$W/$TIER-edit.txt"
	check "$TIER: with a .git directory of its own" grep -qx gitdir "$W/$TIER-edit.txt"
	check "$TIER: the agent could not write the lower layer" grep -qx lower-denied "$W/$TIER-edit.txt"
	check "$TIER: the agent could not write the main repository's .git" \
		grep -qx repo-denied "$W/$TIER-edit.txt"
	check "$TIER: no file planted in the main .git" test ! -e "$W/.git/evil"
	check "$TIER: no branch planted in the main repository" \
		sh -c "! git -C '$W' rev-parse -q --verify refs/heads/evil"
	check "$TIER: git in the tree saw only the task's edits" \
		sh -c "grep -v -e '$TIER-' '$W/$TIER-status.txt' | tr -d '\n' | grep -qx ' M shared.txt'"
	check "$TIER: its edit is merged" grep -qx "$TIER" "$W/shared.txt"
	check "$TIER: a new file is merged" grep -qx new "$W/src/deep/er/new-$TIER.c"
	check "$TIER: a deletion is merged" test ! -e "$W/src/deep/er/f$N.c"
	check "$TIER: untouched files are still there" grep -qx "file 8" "$W/src/deep/er/f8.c"
	run "$BERNSTEIN" status --json
	expect_stdout_contains '"state": "no_changes"' "$TIER: the task that changed nothing is no_changes"
	expect_stdout_contains "\"$TIER\"" "$TIER: the tasks ran in the $TIER tier"
	check "$TIER: a task on a later base commit saw its dependencies' merges" \
		sh -c "[ \"\$(tr '\n' ' ' <'$W/$TIER-later-saw.txt')\" = '$TIER new gone ' ]"
	check "$TIER: git in its tree saw nothing changed before it worked" \
		sh -c "[ \"\$(grep -v -e '$TIER-later-' '$W/$TIER-later-status.txt')\" = '' ]"
	check "$TIER: three --no-ff merges" \
		sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq $((N * 3)) ]"
	check "$TIER: no overlay mount is left" test -z "$(overlay_mounts "$W")"
	check "$TIER: no layer nor base checkout is left" \
		sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' '$W/.bernstein/overlay/base' 2>/dev/null | grep -v :)\" ]"
	check "$TIER: no clone is left" \
		sh -c "[ -z \"\$(ls -A '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
	check "$TIER: git worktree list has only the main checkout" \
		sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"
	run "$KEY" "$BERNSTEIN" audit show --event-type checkout.fallback --json
	check "$TIER: no fallback was recorded" sh -c "! grep -q reason '$T/stdout'"
done

# ---- kill -9 and resume ----
printf 'adapter: tail\nparallel: 4\nretry_backoff: 0\ncheckout: overlay\nsandbox: landlock\n' \
	>"$W/bernstein.yaml"
MARK="overlay-sbx-$$"
cat >"$W/crash.yaml" <<EOF2
name: crash
tasks:
  - title: slow
    prompt: >-
      : $MARK;
      if [ -f first.txt ]; then cp first.txt seen-first.txt; fi;
      awk -v d="\$PWD" '\$5 == d && / - overlay /' /proc/self/mountinfo | grep -q . && test -d .git && echo yes > mounted.txt;
      echo attempt > first.txt;
      git add first.txt && git -c user.name=a -c user.email=a@example.com commit -q -m first;
      echo running > started;
      while [ ! -f go ]; do sleep 0.1; done
  - title: quick
    prompt: "echo quick > quick.txt"
EOF2
commit_all crash
MERGES=$(git -C "$W" rev-list --merges --count main)
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" \
	"$BERNSTEIN" run crash.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
check "the slow task's agent started" \
	wait_until "ls '$W'/.bernstein/worktrees/*/started >/dev/null 2>&1"
check "the quick task was merged" wait_until "[ -f '$W/quick.txt' ]"
check "the quick task's tree was removed before the kill" \
	wait_until "[ \$(ls '$W/.bernstein/overlay/task' | wc -l) -eq 1 ]"
kill -9 "$BG"
wait "$BG" 2>/dev/null
SLOW=$(overlay_mounts "$W")
check "kill -9 left the running task's overlay mounted (one mount)" \
	sh -c "[ \$(printf '%s\n' '$SLOW' | grep -c .) -eq 1 ]"
# a reboot takes the mount down; the layer (with the clone) stays on disk
umount -l "$SLOW"
check "the tree is no longer mounted" test -z "$(overlay_mounts "$W")"
# the agent waits for go in its tree: put it in the layer
LAYER=$(ls -d "$W"/.bernstein/overlay/task/*)
check "the layer holds the clone's .git directory" test -d "$LAYER/upper/.git"
touch "$LAYER/upper/go"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "its second attempt saw the first attempt's file (the layer mounted again)" \
	grep -qx attempt "$W/seen-first.txt"
check "its tree was an overlay clone again" grep -qx yes "$W/mounted.txt"
check "the first attempt's commit is merged" \
	sh -c "git -C '$W' log --format=%s main | grep -qx first"
check "each changing task merged exactly once" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq $((MERGES + 2)) ]"
check "after resume: no overlay mount is left" test -z "$(overlay_mounts "$W")"
check "after resume: no layer nor base checkout is left" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' '$W/.bernstein/overlay/base' 2>/dev/null | grep -v :)\" ]"
check "after resume: no clone is left" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
check "after resume: no agent is left" sh -c "! pgrep -f '[o]verlay-sbx-$$'"
run "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain survived the crash"

# ---- no overlay to be had (mount(2) refused in a user namespace whose
# mount namespace bernstein does not own): a plain clone, said once ----
if unshare -U -r true 2>/dev/null; then
	printf 'name: refused\ntasks:\n  - title: one\n    prompt: >-\n      %s\n  - {title: two, prompt: "echo two > refused-two.txt"}\n' \
		"$(probe refused)" >"$W/refused.yaml"
	commit_all refused
	MERGES=$(git -C "$W" rev-list --merges --count main)
	expect_exit 0 "$KEY" unshare -U -r "$BERNSTEIN" run refused.yaml
	check "refused: the tree was not an overlay" sh -c "! grep -qx overlay '$W/refused.txt'"
	check "refused: a plain clone, with a .git directory of its own" grep -qx gitdir "$W/refused.txt"
	check "refused: the main repository's .git was not written" grep -qx repo-denied "$W/refused.txt"
	check "refused: both tasks merged" \
		sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq $((MERGES + 2)) ]"
	expect_stderr_contains "a sandboxed task's a plain clone): overlay refused (cannot mount an overlay" \
		"refused: the fallback is warned with its reason"
	check "refused: warned once" sh -c "[ \$(grep -c 'checkout: overlay: not used' '$T/stderr') -eq 1 ]"
	check "refused: no layer is left" \
		sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
	check "refused: no clone is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
else
	skip "no user namespace here: the fallback to a plain clone is not tested"
fi

# a failed task's tree is kept, mounted; `worktrees gc --force` removes it as
# an overlay clone: unmounted, its layer (the clone) and base removed
printf 'name: failing\ntasks:\n  - {title: broken, prompt: "echo half > half.txt; exit 3"}\n' >"$W/fail.yaml"
commit_all fail
run "$KEY" "$BERNSTEIN" run fail.yaml
check "the failing task fails the run" test "$RC" -ne 0
check "its tree is kept, an overlay mount" test -n "$(overlay_mounts "$W")"
check "its clone is in its layer" sh -c "test -d '$W'/.bernstein/overlay/task/*/upper/.git"
run "$KEY" "$BERNSTEIN" worktrees gc --force
check "worktrees gc --force: exit 0" test "$RC" -eq 0
check "worktrees gc: no overlay mount is left" test -z "$(overlay_mounts "$W")"
check "worktrees gc: no layer nor base checkout is left" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' '$W/.bernstein/overlay/base' 2>/dev/null | grep -v :)\" ]"
check "worktrees gc: no clone is left" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
check "worktrees gc: git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"

test_done
