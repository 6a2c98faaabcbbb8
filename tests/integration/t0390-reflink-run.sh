#!/bin/sh
# Reflink checkouts with real git on a real XFS (reflink=1, loop-mounted by
# the test): where the overlay is refused (bernstein in a user namespace
# that does not own its mount namespace, as t0372), each task's tree is made
# of reflink copies of the shared base checkout. Checked: the fallback is
# warned and audited as "reflink copies"; edits, new and deleted files are
# merged once; a task that changes nothing is no_changes; git in a fresh
# tree sees it clean and did not rewrite the index (no file rehashed: the
# stat data are the new files'); a big file's extents are shared with the
# base checkout's; a symlink to a file outside the repository is copied as
# a symlink (never followed), the exec bit kept; nothing is left under
# .bernstein/overlay after the run. Then `checkout: reflink` as root; a
# directory of the shared base checkout replaced by a symlink out of the
# repository (as any unsandboxed agent could): the next tree is refused
# with the path, nothing of the outside copied or written; and on
# a file system without reflinks (the plain $T) the fallback to `git
# worktree add` with both reasons.
. "$SRCDIR/tests/integration/reflink-lib.sh"

reflink_begin "t0390 reflink checkouts: run, merge, no_changes, gates, clean status, shared extents"

printf 'secret\n' >"$T/secret"
ln -s "$T/secret" "$W/outside"
head -c 8388608 /dev/urandom >"$W/big.bin"
printf '#!/bin/sh\necho hi\n' >"$W/run.sh" && chmod +x "$W/run.sh"
cat >"$W/bernstein.yaml" <<EOF2
adapter: shell
parallel: 2
checkout: overlay
gates:
  - {name: tree, run: "test -f src/deep/er/f8.c && test -f big.bin && touch $T/gate.ran"}
EOF2
FILEFRAG=$(PATH=$PATH:/usr/sbin:/sbin command -v filefrag) || FILEFRAG=filefrag
cat >"$W/plan.yaml" <<EOF2
name: reflink
tasks:
  - title: edit
    prompt: >-
      i=\$(git rev-parse --git-path index); a=\$(sha1sum <"\$i");
      s=\$(git status --porcelain); b=\$(sha1sum <"\$i");
      test -z "\$s" && echo clean > status-saw.txt;
      test "\$a" = "\$b" && echo same > index-saw.txt;
      git ls-files --debug src/deep/er/f2.c | sed -n 's/.*ino: \\([0-9]*\\).*/\\1/p' > ino-index.txt;
      stat -c %i src/deep/er/f2.c > ino-file.txt;
      $FILEFRAG -v big.bin > frag.txt;
      test -L outside && readlink outside > link-saw.txt;
      test -x run.sh && echo x > exec-saw.txt;
      test -f "\$(git rev-parse --git-common-dir)/../.bernstein/overlay/task/\$(basename "\$PWD")/reflink" && echo reflink > kind-saw.txt;
      echo changed > shared.txt
  - title: add
    prompt: "echo new > src/deep/er/new.c; rm src/deep/er/f1.c"
  - title: nothing
    prompt: "cat shared.txt src/deep/er/f2.c big.bin > /dev/null"
EOF2
commit_all base

if ! unshare -U -r true 2>/dev/null; then
	skip "no user namespace here: the overlay cannot be refused for the test"
	test_done
fi
expect_exit 0 "$KEY" unshare -U -r "$BERNSTEIN" run plan.yaml
check "the tree was a reflink checkout" grep -qx reflink "$W/kind-saw.txt"
expect_stderr_contains "every tree is made of reflink copies" "the fallback to reflink copies is warned"
expect_stderr_contains "cannot mount an overlay" "with the overlay's reason"
check "warned once" sh -c "[ \$(grep -c 'checkout: overlay: not used' '$T/stderr') -eq 1 ]"
run "$KEY" "$BERNSTEIN" audit show --event-type checkout.fallback --json
expect_stdout_contains 'reflink copies' "the audit record names the choice"
expect_stdout_contains '"got": "reflink"' "and what the trees are"
check "git status in the fresh tree saw it clean" grep -qx clean "$W/status-saw.txt"
check "git status did not rewrite the index (nothing rehashed)" grep -qx same "$W/index-saw.txt"
check "the index has the new file's inode" \
	sh -c "[ -s '$W/ino-index.txt' ] && [ \"\$(cat '$W/ino-index.txt')\" = \"\$(cat '$W/ino-file.txt')\" ]"
check "the big file's extents were shared with the base checkout" \
	sh -c "grep -q shared '$W/frag.txt' && ! grep -E '^ *[0-9]+:' '$W/frag.txt' | grep -v -q shared"
check "the symlink to a file outside was copied as a symlink" grep -qx "$T/secret" "$W/link-saw.txt"
check "the file outside is untouched" sh -c "[ \"\$(cat '$T/secret')\" = secret ]"
check "the exec bit was kept" grep -qx x "$W/exec-saw.txt"
check "the edit is merged" grep -qx changed "$W/shared.txt"
check "a new file is merged" grep -qx new "$W/src/deep/er/new.c"
check "a deletion is merged" test ! -e "$W/src/deep/er/f1.c"
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "no_changes"' "the task that changed nothing is no_changes"
check "the gates ran in the reflink trees (and passed: the tasks merged)" test -e "$T/gate.ran"
check "two --no-ff merges, each task once" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 2 ]"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"
check "no base checkout is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/base' 2>/dev/null)\" ]"
check "git worktree list has only the main checkout" \
	sh -c "[ \$(git -C '$W' worktree list | wc -l) -eq 1 ]"
check "the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain --untracked-files=no)\" ]"
run "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain verifies"

# ---- checkout: reflink, as root (no overlay tried) ----
sed 's/^checkout: overlay/checkout: reflink/' "$W/bernstein.yaml" >"$W/b.yaml" && mv "$W/b.yaml" "$W/bernstein.yaml"
printf 'name: explicit\ntasks:\n  - {title: two, prompt: "test -f \\"$(git rev-parse --git-common-dir)/../.bernstein/overlay/task/$(basename $PWD)/reflink\\" && echo reflink > kind2.txt; git status --porcelain > status2.txt"}\n' >"$W/two.yaml"
commit_all explicit
expect_exit 0 "$KEY" "$BERNSTEIN" run two.yaml
check "checkout: reflink made a reflink tree" grep -qx reflink "$W/kind2.txt"
check "git status there saw it clean (but for the task's own files)" \
	sh -c "[ -z \"\$(grep -v -e kind2.txt -e status2.txt '$W/status2.txt')\" ]"
check "no fallback was warned" sh -c "! grep -q 'not used' '$T/stderr'"
check "merged" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 3 ]"
check "no task layer is left" sh -c "[ -z \"\$(ls -A '$W/.bernstein/overlay/task' 2>/dev/null)\" ]"

# ---- a symlink planted in the shared base checkout is never followed ----
# a failed task keeps its tree, so the base checkout of its commit stays;
# then an agent (any unsandboxed one could) replaces a directory of it by
# a symlink out of the repository: the next tree on that commit is refused
# with the path, nothing of the outside is copied, nothing is written there
OUT=$T/outside
SECRET="planted-$$"
mkdir -p "$OUT/er" && printf '%s\n' "$SECRET" >"$OUT/er/f2.c" && printf '%s\n' "$SECRET" >"$OUT/er/f3.c"
printf 'name: failing\ntasks:\n  - {title: broken, prompt: "exit 3"}\n' >"$W/fail.yaml"
printf 'name: victim\ntasks:\n  - {title: victim, prompt: "cat src/deep/er/f2.c > victim-saw.txt"}\n' >"$W/victim.yaml"
commit_all hostile
run "$KEY" "$BERNSTEIN" run fail.yaml
check "the failing task fails the run" test "$RC" -ne 0
BASE=$(ls -d "$W"/.bernstein/overlay/base/*/tree 2>/dev/null | head -1)
check "its base checkout is kept" test -d "$BASE/src/deep/er"
rm -rf "$BASE/src/deep" && ln -s "$OUT" "$BASE/src/deep"
run "$KEY" "$BERNSTEIN" run victim.yaml
check "the tree on the tampered base checkout is refused" test "$RC" -ne 0
check "naming the path and the symlink" \
	sh -c "cat '$T/stdout' '$T/stderr' | grep -q \"cannot copy 'src/deep/er/.*from the base checkout: a symlink where the index has a directory, not followed\""
check "nothing from outside reached a tree" \
	sh -c "! grep -rqs '$SECRET' '$W'/.bernstein/worktrees '$W/victim-saw.txt'"
check "nothing was written outside" \
	sh -c "[ \$(ls -A '$OUT/er' | wc -l) -eq 2 ] && grep -qx '$SECRET' '$OUT/er/f2.c'"
run "$KEY" "$BERNSTEIN" worktrees gc --force
check "worktrees gc --force removes the trees, layers and the base checkout" \
	sh -c "[ -z \"\$(find '$W/.bernstein/overlay' -mindepth 2)\" ]"
check "without following the planted symlink" \
	sh -c "[ \$(ls -A '$OUT/er' | wc -l) -eq 2 ] && grep -qx '$SECRET' '$OUT/er/f2.c'"

# ---- no reflinks (the plain file system of $T): git worktree add ----
P=$T/plain
mkdir -p "$P"
git -C "$P" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$P/.gitignore"
printf 'base\n' >"$P/shared.txt"
shell_agent "$P"
printf 'adapter: shell\ncheckout: overlay\n' >"$P/bernstein.yaml"
printf 'name: plain\ntasks:\n  - {title: one, prompt: "echo one > one.txt"}\n' >"$P/plan.yaml"
git -C "$P" add -A >/dev/null && git -C "$P" -c user.name=t -c user.email=t@example.com commit -q -m base
FS=$(df -T "$P" | awk 'NR == 2 { print $2 }')
if [ "$FS" = xfs ] || [ "$FS" = btrfs ]; then
	skip "\$T is on $FS, which has reflinks: no fallback to see"
else
	expect_exit 0 "$KEY" unshare -U -r "$BERNSTEIN" -C "$P" run plan.yaml
	expect_stderr_contains "every tree is a \`git worktree add\`" "the fallback to git worktree add is warned"
	expect_stderr_contains "cannot mount an overlay" "with the overlay's reason"
	expect_stderr_contains "reflink copies refused" "and the reflink copies'"
	check "merged" grep -qx one "$P/one.txt"
	check "no task layer is left" sh -c "[ -z \"\$(ls -A '$P/.bernstein/overlay/task' 2>/dev/null)\" ]"
	printf 'adapter: shell\ncheckout: reflink\n' >"$P/bernstein.yaml"
	printf 'name: plain2\ntasks:\n  - {title: two, prompt: "echo two > two.txt"}\n' >"$P/plan2.yaml"
	git -C "$P" add -A >/dev/null && git -C "$P" -c user.name=t -c user.email=t@example.com commit -q -m two
	expect_exit 0 "$KEY" "$BERNSTEIN" -C "$P" run plan2.yaml
	expect_stderr_contains "checkout: reflink: not used" "checkout: reflink falls back, warned"
	expect_stderr_contains "no reflink copies" "with the reason"
	check "merged" grep -qx two "$P/two.txt"
	run "$KEY" "$BERNSTEIN" -C "$P" audit show --event-type checkout.fallback --json
	expect_stdout_contains '"wanted": "reflink"' "the audit record says what was wanted"
fi

test_done
