#!/bin/sh
# checkout: overlay where the overlay is not to be had: with
# BERNSTEIN_OVERLAY=off in the environment, and where mounting is refused
# for real (bernstein in a user namespace of its own, whose mount namespace
# it does not own: mount(2) says EPERM). Each time every task gets a plain
# `git worktree add` tree, the run merges as usual, and the reason is warned
# once on stderr and recorded in the audit chain (checkout.fallback).
. "$SRCDIR/tests/integration/overlay-lib.sh"

overlay_begin "t0372 overlay checkouts: the fallback to git worktree add"

cat >"$W/bernstein.yaml" <<'EOF2'
adapter: shell
parallel: 2
checkout: overlay
EOF2
cat >"$W/plan.yaml" <<'EOF2'
name: fallback
tasks:
  - title: one
    prompt: >-
      if awk -v d="$PWD" '$5 == d && / - overlay /' /proc/self/mountinfo | grep -q .;
      then echo overlay > kind1.txt; else echo plain > kind1.txt; fi
  - title: two
    prompt: "echo two > two.txt"
EOF2
commit_all base

# ---- the knob ----
expect_exit 0 "$KEY" BERNSTEIN_OVERLAY=off "$BERNSTEIN" run plan.yaml
check "the task's tree was a plain worktree" grep -qx plain "$W/kind1.txt"
check "both tasks merged" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 2 ]"
expect_stderr_contains "checkout: overlay: not used" "the fallback is warned"
expect_stderr_contains "BERNSTEIN_OVERLAY=off" "with its reason"
check "warned once" sh -c "[ \$(grep -c 'checkout: overlay: not used' '$T/stderr') -eq 1 ]"
run "$KEY" "$BERNSTEIN" audit show --event-type checkout.fallback --json
expect_stdout_contains 'BERNSTEIN_OVERLAY=off' "the reason is in the audit chain"
check "no overlay directory was made" test ! -e "$W/.bernstein/overlay/task"

# ---- mount(2) refused ----
if ! unshare -U -r true 2>/dev/null; then
	skip "no user namespace here"
	test_done
fi
sed 's/^name: fallback/name: refused/; s/kind1/kind2/g; s/two.txt/three.txt/' "$W/plan.yaml" >"$W/refused.yaml"
commit_all refused
expect_exit 0 "$KEY" unshare -U -r "$BERNSTEIN" run refused.yaml
check "the task's tree was a plain worktree" grep -qx plain "$W/kind2.txt"
check "both tasks merged" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 4 ]"
expect_stderr_contains "checkout: overlay: not used" "the fallback is warned"
expect_stderr_contains "cannot mount an overlay: Operation not permitted" "with the kernel's reason"
check "warned once" sh -c "[ \$(grep -c 'checkout: overlay: not used' '$T/stderr') -eq 1 ]"
run "$KEY" "$BERNSTEIN" audit show --event-type checkout.fallback --json
expect_stdout_contains 'Operation not permitted' "the reason is in the audit chain"
check "no overlay mount is left" test -z "$(overlay_mounts "$W")"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"

test_done
