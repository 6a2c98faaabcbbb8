#!/bin/sh
# Reflink checkouts of sandboxed tasks (sandbox: landlock) on a real XFS
# (reflink=1, loop-mounted by the test): each task's clone is made by
# bernstein's copier (`git clone --shared --no-checkout` beside the tree,
# the base checkout's files cloned in, its index with their stat data).
# Checked from inside the agents: .git is a directory of the clone's own,
# the layer says reflink + clone, git status is clean and leaves the index
# as it was, a big file's extents are shared, the main repository's .git
# cannot be written. Then edits, a new file and a deletion merged once,
# no_changes, nothing left; and with `checkout: overlay` where the overlay
# is refused (a user namespace that does not own its mount namespace) the
# sandboxed task gets a reflink clone, said once and audited.
. "$SRCDIR/tests/integration/reflink-lib.sh"

reflink_begin "t0392 reflink checkouts of sandboxed tasks"

run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	skip "no Landlock here"
	test_done
fi

head -c 4194304 /dev/urandom >"$W/big.bin"
FILEFRAG=$(PATH=$PATH:/usr/sbin:/sbin command -v filefrag) || FILEFRAG=filefrag
printf 'adapter: shell\nparallel: 2\ncheckout: reflink\nsandbox: landlock\n' >"$W/bernstein.yaml"
cat >"$W/plan.yaml" <<EOF2
name: sandboxed
tasks:
  - title: edit
    prompt: >-
      i=.git/index; a=\$(sha1sum <"\$i");
      s=\$(git status --porcelain); b=\$(sha1sum <"\$i");
      test -z "\$s" && echo clean > probe.txt;
      test "\$a" = "\$b" && echo same >> probe.txt;
      test -d .git && test ! -L .git && test ! -e .git/commondir && echo gitdir >> probe.txt;
      l=$W/.bernstein/overlay/task/\$(basename "\$PWD");
      test -f "\$l/reflink" && test -f "\$l/clone" && echo layer >> probe.txt;
      $FILEFRAG -v big.bin | grep -q shared && echo shared >> probe.txt;
      if ! (echo evil > $W/.git/evil) 2>/dev/null; then echo repo-denied >> probe.txt; fi;
      echo changed > shared.txt
  - title: add
    prompt: "echo new > src/deep/er/new.c; rm src/deep/er/f1.c"
  - title: nothing
    prompt: "cat shared.txt big.bin > /dev/null"
EOF2
commit_all base

expect_exit 0 "$KEY" "$BERNSTEIN" run plan.yaml
for w in clean same gitdir layer shared repo-denied; do
	check "the sandboxed agent saw: $w" grep -qx "$w" "$W/probe.txt"
done
check "no fallback was warned" sh -c "! grep -q 'not used' '$T/stderr'"
check "the edit is merged" grep -qx changed "$W/shared.txt"
check "a new file is merged" grep -qx new "$W/src/deep/er/new.c"
check "a deletion is merged" test ! -e "$W/src/deep/er/f1.c"
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "no_changes"' "the task that changed nothing is no_changes"
check "two --no-ff merges" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 2 ]"
check "nothing is left under .bernstein/overlay" \
	sh -c "[ -z \"\$(find '$W/.bernstein/overlay' -mindepth 2)\" ]"
check "no clone is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/worktrees' 2>/dev/null)\" ]"

# ---- checkout: overlay refused: a reflink clone ----
if ! unshare -U -r true 2>/dev/null; then
	skip "no user namespace here"
	test_done
fi
printf 'adapter: shell\ncheckout: overlay\nsandbox: landlock\n' >"$W/bernstein.yaml"
printf 'name: refused\ntasks:\n  - {title: two, prompt: "test -f %s/.bernstein/overlay/task/$(basename $PWD)/clone && test -d .git && echo reflink-clone > two.txt"}\n' "$W" >"$W/two.yaml"
commit_all refused
expect_exit 0 "$KEY" unshare -U -r "$BERNSTEIN" run two.yaml
check "the task's tree was a reflink clone" grep -qx reflink-clone "$W/two.txt"
expect_stderr_contains "every tree is made of reflink copies" "the fallback is warned"
check "warned once" sh -c "[ \$(grep -c 'checkout: overlay: not used' '$T/stderr') -eq 1 ]"
run "$KEY" "$BERNSTEIN" audit show --event-type checkout.fallback --json
expect_stdout_contains '"got": "reflink"' "and audited"
check "nothing is left under .bernstein/overlay" \
	sh -c "[ -z \"\$(find '$W/.bernstein/overlay' -mindepth 2)\" ]"

test_done
