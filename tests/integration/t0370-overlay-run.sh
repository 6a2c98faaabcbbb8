#!/bin/sh
# checkout: overlay with real git, real mounts and the shell agent: each
# task's tree is an overlay mount (a shared read-only checkout of the base
# commit below, the task's own layer above) that git sees as a worktree on
# its branch. Checked: the agents' edits, new and deleted files are merged
# with --no-ff; a task that changes nothing is no_changes; the gates run in
# the overlay tree; an edit never reaches the shared lower layer; git in the
# tree sees only the task's edits; after the run no mount, layer or base
# checkout is left and `git worktree list` has only the main checkout; a
# symlink an agent plants out of its tree is not followed by the removal.
. "$SRCDIR/tests/integration/overlay-lib.sh"

overlay_begin "t0370 overlay checkouts: run, merge, no_changes, gates"

if ! unshare -m sh -c 'd=$(mktemp -d) && mkdir $d/l $d/u $d/w $d/m &&
	mount -t overlay overlay -o lowerdir=$d/l,upperdir=$d/u,workdir=$d/w $d/m' 2>/dev/null; then
	skip "overlayfs cannot be mounted here (t0372 tests the fallback)"
	test_done
fi

OUT=$T/outside
mkdir -p "$OUT" && printf 'keep\n' >"$OUT/keep.txt"
cat >"$W/bernstein.yaml" <<'EOF2'
adapter: shell
parallel: 4
checkout: overlay
gates:
  - {name: tree, run: "test -f src/deep/er/f8.c && test -f shared.txt"}
EOF2
cat >"$W/plan.yaml" <<EOF2
name: overlay
tasks:
  - title: edit
    prompt: >-
      awk -v d="\$PWD" '\$5 == d && / - overlay /' /proc/self/mountinfo | grep -q . && echo yes > mounted.txt;
      low=\$(awk -v d="\$PWD" '\$5 == d' /proc/self/mountinfo | sed -n 's/.*lowerdir=\([^,]*\).*/\1/p');
      echo changed > shared.txt;
      cat "\$low/shared.txt" > lower-saw.txt;
      git status --porcelain > status-saw.txt
  - title: add
    prompt: "echo new > src/deep/er/new.c; rm src/deep/er/f1.c"
  - title: nothing
    prompt: "cat shared.txt src/deep/er/f2.c > /dev/null"
  - title: plant
    prompt: "ln -s $OUT escape"
  - title: later
    depends_on: [edit, add]
    prompt: >-
      git status --porcelain > later-status.txt;
      ls $W/.bernstein/overlay/base | wc -l | tr -d ' ' > later-bases.txt;
      cat shared.txt src/deep/er/new.c > later-saw.txt;
      test ! -e src/deep/er/f1.c && echo gone >> later-saw.txt
EOF2
commit_all base

expect_exit 0 "$KEY" "$BERNSTEIN" run plan.yaml
check "the edit task's tree was an overlay mount" grep -qx yes "$W/mounted.txt"
check "its edit is merged" grep -qx changed "$W/shared.txt"
check "the shared lower layer kept the base file" grep -qx base "$W/lower-saw.txt"
check "git in the tree saw only the task's edits" \
	sh -c "grep -v -e mounted.txt -e lower-saw.txt -e status-saw.txt '$W/status-saw.txt' | tr -d '\n' | grep -qx ' M shared.txt'"
check "a new file is merged" grep -qx new "$W/src/deep/er/new.c"
check "a task on a later base commit saw its dependencies' merges" \
	sh -c "[ \"\$(tr '\n' ' ' <'$W/later-saw.txt')\" = 'changed new gone ' ]"
check "it shared the one base checkout (brought to its commit in its layer)" \
	grep -qx 1 "$W/later-bases.txt"
check "git in its tree saw nothing changed before it worked" \
	sh -c "[ \"\$(grep -v -e later- '$W/later-status.txt')\" = '' ]"
check "a deletion is merged" test ! -e "$W/src/deep/er/f1.c"
check "untouched files are still there" grep -qx "file 2" "$W/src/deep/er/f2.c"
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "no_changes"' "the task that changed nothing is no_changes"
check "four --no-ff merges" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 4 ]"
check "no overlay mount is left" test -z "$(overlay_mounts "$W")"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "the unused base checkout was removed" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/base' 2>/dev/null)\" ]"
check "git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"
check "the removal did not follow the planted symlink" test -f "$OUT/keep.txt"
check "the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain --untracked-files=no)\" ]"
run "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain verifies"
run "$KEY" "$BERNSTEIN" audit show --event-type checkout.fallback --json
check "no fallback was recorded" sh -c "! grep -q reason '$T/stdout'"

# a failed task's tree is kept, mounted; `worktrees gc --force` removes it as
# an overlay: unmounted, its layer and the unused base checkout removed
# (rmtree through the mount left the mount and the layer behind)
printf 'name: failing\ntasks:\n  - {title: broken, prompt: "echo half > half.txt; ln -s %s out; mkdir -p d && ln -s %s d/in; exit 3"}\n' "$OUT" "$OUT" >"$W/fail.yaml"
commit_all fail
run "$KEY" "$BERNSTEIN" run fail.yaml
check "the failing task fails the run" test "$RC" -ne 0
check "its tree is kept, an overlay mount" test -n "$(overlay_mounts "$W")"
check "its layer is kept" sh -c "[ -n \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "its tree holds the symlinks the agent planted" \
	sh -c "for l in '$W'/.bernstein/worktrees/broken-*/out '$W'/.bernstein/worktrees/broken-*/d/in; do test -L \"\$l\" || exit 1; done"
run "$KEY" "$BERNSTEIN" worktrees gc --force
check "worktrees gc --force: exit 0" test "$RC" -eq 0
check "worktrees gc: no overlay mount is left" test -z "$(overlay_mounts "$W")"
check "worktrees gc: no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "worktrees gc: the unused base checkout was removed" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/base' 2>/dev/null)\" ]"
check "worktrees gc: git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"
check "worktrees gc: the symlinks the failed agent planted were not followed" \
	sh -c "test -f '$OUT/keep.txt' && [ \$(ls -A '$OUT' | wc -l) -eq 1 ]"

test_done
