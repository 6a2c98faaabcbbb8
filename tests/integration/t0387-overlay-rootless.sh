#!/bin/sh
# checkout: overlay as a non-root user (uid 4242): the run enters a user +
# mount namespace of its own (its uid and gid mapped to themselves) and
# mounts its overlays there. Checked: each task's tree is an overlay
# (userxattr), its agent is not root, has no capability, cannot unmount its
# tree; a lower directory renamed and a lower file deleted in
# a tree are merged (the layer keeps its whiteouts in user.* xattrs);
# every changing task is merged once, the idle one is no_changes; a task
# sandboxed by bubblewrap (its user namespace nested in the run's) gets
# an overlay clone; when the
# last task runs the earlier trees' overlays are already unmounted in the
# namespace; the audit chain records the namespace (checkout.userns) and no
# fallback; after the run no layer, base checkout or worktree is left. A
# detached run (run --detach) mounts its overlays in its namespace too.
. "$SRCDIR/tests/integration/rootless-lib.sh"

rootless_begin "t0387 overlay checkouts as a non-root user, in a user namespace"

cat >"$W/bernstein.yaml" <<'EOF2'
adapter: shell
parallel: 4
checkout: overlay
EOF2
# the boxed task's tier: bwrap where it is installed (its user namespace
# nested in the run's), else none (a fourth plain task)
BOX=bwrap
command -v bwrap >/dev/null 2>&1 || BOX=none
cat >"$W/plan.yaml" <<EOF2
name: rootless
tasks:
  - title: edit
    prompt: >-
      awk -v d="\$PWD" '\$5 == d && / - overlay /' /proc/self/mountinfo > mount-edit.txt;
      id -u > uid.txt;
      sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status > capeff.txt;
      if umount "\$PWD" 2>/dev/null; then echo yes > unmounted.txt; else echo no > unmounted.txt; fi;
      echo changed > shared.txt
  - title: move
    prompt: "mv src/deep src/moved && rm src/moved/er/f1.c && echo new > src/moved/er/new.c"
  - title: nothing
    prompt: "cat shared.txt > /dev/null"
  - title: boxed
    sandbox: $BOX
    prompt: >-
      if awk -v d="\$PWD" '\$5 == d && / - overlay /' /proc/self/mountinfo | grep -q .;
      then echo overlay > boxed.txt; else echo clone > boxed.txt; fi
  - title: later
    depends_on: [edit, move]
    prompt: >-
      grep ' - overlay ' /proc/self/mountinfo > later-mounts.txt;
      cat shared.txt src/moved/er/new.c > later-saw.txt
EOF2
commit_all base
rootless_own

expect_exit 0 "$KEY" $AS "$BERNSTEIN" run plan.yaml
cp "$T/stderr" "$T/run.err"
check "the edit task's tree was an overlay mount" grep -q overlay "$W/mount-edit.txt"
check "mounted with userxattr" grep -q userxattr "$W/mount-edit.txt"
check "its agent was not root" sh -c "[ -s '$W/uid.txt' ] && ! grep -qx 0 '$W/uid.txt'"
check "with no capability" grep -qx 0000000000000000 "$W/capeff.txt"
check "and could not unmount its tree" grep -qx no "$W/unmounted.txt"
check "its edit is merged" grep -qx changed "$W/shared.txt"
check "a renamed lower directory is merged" \
	sh -c "test -f '$W/src/moved/er/f2.c' && test -f '$W/src/moved/er/new.c' && test ! -e '$W/src/deep'"
check "a deleted lower file is merged" test ! -e "$W/src/moved/er/f1.c"
check "the later task saw both merges" \
	sh -c "[ \"\$(cat '$W/later-saw.txt')\" = \"\$(printf 'changed\nnew')\" ]"
check "when it ran, its own overlay was mounted" grep -q '/worktrees/later-' "$W/later-mounts.txt"
check "and the merged tasks' overlays were unmounted" \
	sh -c "! grep -q -e '/worktrees/edit-' -e '/worktrees/move-' '$W/later-mounts.txt'"
if [ "$BOX" = bwrap ]; then
	check "a sandboxed task (bwrap, nested in the namespace) got an overlay clone and was merged" \
		grep -qx overlay "$W/boxed.txt"
else
	skip "no bwrap here: the boxed task was a plain one"
fi
check "each changing task merged exactly once" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 4 ]"
run "$KEY" $AS "$BERNSTEIN" -C "$W" status --json
expect_stdout_contains '"state": "no_changes"' "the idle task is no_changes"
[ "$BOX" = none ] || expect_stdout_contains '"bwrap"' "the boxed task ran in the bwrap tier"
run "$KEY" $AS "$BERNSTEIN" audit show --event-type checkout.userns --json
expect_stdout_contains 'user+mount' "the audit chain records the namespace"
expect_stdout_contains "\"uid\": $RL_UID" "where the run's uid was its own (not root)"
run "$KEY" $AS "$BERNSTEIN" audit show --event-type checkout.fallback --json
check "and no fallback" sh -c "! grep -q fallback '$T/stdout'"
check "nor a warning" sh -c "! grep -q 'checkout: overlay' '$T/run.err'"
check "no overlay mount is visible outside" test -z "$(overlay_mounts "$T")"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "no base checkout is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/base' 2>/dev/null)\" ]"
check "git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"

# ---- run --detach: the detached process enters the namespace ----
cat >"$W/detached.yaml" <<'EOF2'
name: detached
tasks:
  - title: away
    prompt: >-
      if awk -v d="$PWD" '$5 == d && / - overlay /' /proc/self/mountinfo | grep -q .;
      then echo overlay > away.txt; else echo plain > away.txt; fi
EOF2
commit_all detached
rootless_own
expect_exit 0 "$KEY" $AS "$BERNSTEIN" run --detach --json detached.yaml
PID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$T/stdout")
check "the detached run ends" wait_until "! kill -0 '$PID' 2>/dev/null"
check "its task's tree was an overlay" grep -qx overlay "$W/away.txt"
check "and was merged" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 5 ]"
check "no task layer is left after it" \
	sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"

run "$KEY" $AS "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain verifies"

test_done
