#!/bin/sh
# checkout: auto in a small repository gives plain worktrees (and says
# nothing), and a sandboxed task keeps its clone whatever checkout: says.
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

# ---- checkout: overlay, but the task is sandboxed: its clone ----
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -eq 0 ]; then
	printf 'adapter: shell\ncheckout: overlay\nsandbox: landlock\n' >"$W/bernstein.yaml"
	sed 's/^name: small/name: boxed/; s/small.txt/boxed.txt/g' "$W/small.yaml" >"$W/boxed.yaml"
	commit_all boxed
	expect_exit 0 "$KEY" "$BERNSTEIN" run boxed.yaml
	check "sandbox: landlock: its tree is its clone, not an overlay" \
		grep -qx plain "$W/boxed.txt"
	check "sandbox: landlock: no overlay layer was made" \
		sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
	expect_stderr_empty "sandbox: landlock: nothing warned"
	run "$BERNSTEIN" status
	expect_stdout_contains "landlock" "the task ran in the landlock tier"
else
	skip "no Landlock here"
fi

test_done
