#!/bin/sh
# checkout: auto in a small repository gives plain worktrees (and says
# nothing), and so a sandboxed task's clone is a plain one there; with
# checkout: overlay a sandboxed task's clone is an overlay (t0389 tests
# those further).
# Checked from inside the agents: whether their tree is an overlay mount.
# (That auto takes the overlay from 20,000 files on is read from the index
# header: tests/unit/test-orch-checkout.c, test_overlay_repo_files; a run
# on so big a repository costs a full checkout of it, minutes on a loaded
# CI machine.)
. "$SRCDIR/tests/integration/overlay-lib.sh"

overlay_begin "t0373 overlay checkouts: auto, and sandboxed tasks"

# the prompt of a task that says what its tree is, into FILE
kind_prompt()
{
	printf '%s' "if awk -v d=\"\$PWD\" '\$5 == d && / - overlay /' /proc/self/mountinfo | grep -q .; then echo overlay > $1; else echo plain > $1; fi"
}

printf 'adapter: shell\n' >"$W/bernstein.yaml"
cat >"$W/small.yaml" <<EOF2
name: small
tasks:
  - title: one
    prompt: >-
      $(kind_prompt small.txt)
EOF2
commit_all base

# ---- auto in a small repository: git worktree add ----
expect_exit 0 "$KEY" "$BERNSTEIN" run small.yaml
check "auto, 12 files: a plain worktree" grep -qx plain "$W/small.txt"
check "auto, 12 files: no overlay directory" test ! -e "$W/.bernstein/overlay"
expect_stderr_empty "auto, 12 files: nothing warned"

# ---- checkout: auto, sandboxed, small repository: a plain clone ----
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -eq 0 ]; then
	printf 'adapter: shell\nsandbox: landlock\n' >"$W/bernstein.yaml"
	sed 's/^name: small/name: plainbox/; s/small.txt/plainbox.txt/g' "$W/small.yaml" >"$W/plainbox.yaml"
	commit_all plainbox
	expect_exit 0 "$KEY" "$BERNSTEIN" run plainbox.yaml
	check "auto, sandboxed: a plain clone" grep -qx plain "$W/plainbox.txt"
	check "auto, sandboxed: no overlay directory" test ! -e "$W/.bernstein/overlay"
else
	skip "no Landlock here"
fi

# ---- checkout: overlay, and the task is sandboxed: an overlay clone ----
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -eq 0 ]; then
	printf 'adapter: shell\ncheckout: overlay\nsandbox: landlock\n' >"$W/bernstein.yaml"
	sed 's/^name: small/name: boxed/; s/small.txt/boxed.txt/g' "$W/small.yaml" >"$W/boxed.yaml"
	commit_all boxed
	expect_exit 0 "$KEY" "$BERNSTEIN" run boxed.yaml
	check "sandbox: landlock: its clone's tree is an overlay" \
		grep -qx overlay "$W/boxed.txt"
	check "sandbox: landlock: its layer was removed" \
		sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
	expect_stderr_empty "sandbox: landlock: nothing warned"
	run "$BERNSTEIN" status
	expect_stdout_contains "landlock" "the task ran in the landlock tier"
else
	skip "no Landlock here"
fi

test_done
