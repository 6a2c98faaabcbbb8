#!/bin/sh
# Issue #18: `bernstein worktrees list|gc`. gc removes the branch of a merged
# task, keeps a failed task's unmerged work without --force (and anything
# younger than --older-than), never touches anything while a run is live,
# and with --force removes the failed task's worktree without following the
# symlink its agent planted there (the file it points to survives) and
# deletes its branch without running the hook the agent planted in the
# repository's hooks directory.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0192 worktrees list and gc"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
BGPID=

_t0192_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	_lib_cleanup
}
trap _t0192_cleanup EXIT

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 2
sandbox: none
EOF
mkdir -p "$T/outside"
printf 'precious\n' >"$T/outside/keep.txt"
cat >"$T/bad.sh" <<EOF
ln -s $T/outside link
echo work > work.txt
hooks=\$(git rev-parse --git-common-dir)/hooks
mkdir -p "\$hooks"
printf '#!/bin/sh\ntouch $T/hook.ran\n' > "\$hooks/reference-transaction"
chmod +x "\$hooks/reference-transaction"
exit 3
EOF
cat >"$W/plan.yaml" <<EOF
name: gc
tasks:
  - title: good
    prompt: "echo good > good.txt"
  - title: bad
    prompt: "sh $T/bad.sh"
EOF
git_q add -A
git_q commit -q -m base

expect_exit 1 "$KEY" "$BERNSTEIN" run plan.yaml
BADWT=$(ls -d "$W"/.bernstein/worktrees/bad-*)
check "the failed task's worktree holds its work" test -f "$BADWT/work.txt"
check "its agent planted a hook" test -x "$W/.git/hooks/reference-transaction"

expect_exit 0 "$BERNSTEIN" worktrees list --json
expect_stdout_contains '"task":"good"'
expect_stdout_contains '"task":"bad"'
cp "$T/stdout" "$T/list.json"
run /usr/bin/python3 -c '
import json, sys
w = {x["task"]: x for x in json.load(open(sys.argv[1]))["worktrees"]}
print(w["good"]["merged"], w["bad"]["merged"], w["bad"]["state"])' "$T/list.json"
expect_stdout_contains "True False failed" "good is merged, bad is not"

# too young for --older-than: nothing goes
expect_exit 0 "$KEY" "$BERNSTEIN" worktrees gc --older-than 1d
expect_stdout_contains "not old enough"
check "the merged branch is still there" \
	sh -c "git -C '$W' branch --list 'bernstein/good-*' | grep -q good"

# no --force: the merged task's branch goes, the failed task's work stays
expect_exit 0 "$KEY" "$BERNSTEIN" worktrees gc
expect_stdout_contains "removed"
expect_stdout_contains "not merged"
check "the merged branch is deleted" \
	sh -c "! git -C '$W' branch --list 'bernstein/good-*' | grep -q good"
check "the failed task's work is kept" test -f "$BADWT/work.txt"
check "the failed task's branch is kept" \
	sh -c "git -C '$W' branch --list 'bernstein/bad-*' | grep -q bad"

# a live run: gc touches nothing
cat >"$W/wait.yaml" <<EOF
name: wait
tasks:
  - title: wait
    prompt: "touch $T/waiting; while [ ! -f $T/go ]; do sleep 0.05; done"
EOF
_san=""
[ -n "${ASAN_OPTIONS:-}" ] && _san="$_san ASAN_OPTIONS=$ASAN_OPTIONS"
[ -n "${UBSAN_OPTIONS:-}" ] && _san="$_san UBSAN_OPTIONS=$UBSAN_OPTIONS"
[ -n "${LSAN_OPTIONS:-}" ] && _san="$_san LSAN_OPTIONS=$LSAN_OPTIONS"
# shellcheck disable=SC2086 # _san: words without blanks
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" $_san \
	"$BERNSTEIN" run wait.yaml) </dev/null >"$T/run.out" 2>"$T/run.err" &
BGPID=$!
_end=$(($(date +%s) + 30))
while [ ! -f "$T/waiting" ] && [ "$(date +%s)" -lt "$_end" ]; do sleep 0.05; done
expect_exit 4 "$KEY" "$BERNSTEIN" worktrees gc --force
check "a live run's gc removed nothing" test -f "$BADWT/work.txt"
expect_exit 0 "$BERNSTEIN" worktrees list
expect_stdout_contains "(live)"
touch "$T/go"
wait "$BGPID"
BGPID=

# --force: the failed task's work goes, not what its symlink points to, and
# the planted hook does not run
expect_exit 0 "$KEY" "$BERNSTEIN" worktrees gc --force --json
expect_stdout_contains '"removed":true'
check "the failed task's worktree is gone" test ! -e "$BADWT"
check "the symlink's target survives" test -f "$T/outside/keep.txt"
check "the failed task's branch is deleted" \
	sh -c "! git -C '$W' branch --list 'bernstein/bad-*' | grep -q bad"
check "the hook the agent planted never ran" test ! -e "$T/hook.ran"
check "git knows no stale worktree" \
	sh -c "! git -C '$W' worktree list --porcelain | grep -q 'bad-'"
check "each removal is audited" grep -q '"event_type": "worktree.removed"' "$W"/.bernstein/audit/*.jsonl
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify
expect_exit 2 "$BERNSTEIN" worktrees gc --older-than 3x
expect_stderr_contains "not a duration"

test_done
