#!/bin/sh
# Issue #18: `bernstein stop` drains a live run (no new dispatch, the
# running task finishes and merges, the run exits with its summary, the
# rest pending for resume); `retry` of a failed task on a live run (started
# again while another task holds the run) and on a finished one (changed
# under the run lock, then resumed in the foreground); `add-task` to a live
# run (validated, started, merged) and its refusals.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0191 control: stop drains, retry, add-task"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
BGPID=

_t0191_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	_lib_cleanup
}
trap _t0191_cleanup EXIT

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

# bg PLAN: bernstein run PLAN in the background (BGPID), output in $T/run.out

# task_state ID: the task's state in the latest run

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 1
kill_grace: 1
sandbox: none
EOF
cat >"$W/drain.yaml" <<EOF
name: drain
tasks:
  - title: first
    prompt: "touch $T/first.started; while [ ! -f $T/go1 ]; do sleep 0.05; done; echo 1 > first.txt"
  - title: second
    prompt: "echo 2 > second.txt"
EOF
cat >"$W/retry.yaml" <<EOF
name: retry
tasks:
  - title: flaky
    adapter: flaky
    prompt: "make flaky.txt"
  - title: hold
    depends_on: [flaky]
    prompt: "echo held > held-after-retry.txt"
EOF
# the agent of 'flaky': a script that fails until $T/fixed exists, whatever
# the prompt (a retry's prompt starts with the recovered context)
mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$T/flaky.sh" <<EOF
test -f $T/fixed || exit 3
echo fixed > flaky.txt
EOF
cat >"$W/.bernstein/catalog/profiles/flaky.yaml" <<EOF
name: flaky
display_name: "Fails until fixed"
shape: factory
invocation:
  binary: sh
  extra_args: [$T/flaky.sh]
  prompt_positional: true
capabilities:
  tool_use: true
  max_parallel_workers: 8
EOF
cat >>"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
  flaky:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
git_q add -A
git_q commit -q -m base

# ---- stop: drain ----
bg run drain.yaml
check "the first task runs" wait_until '[ -f "$T/first.started" ]'
expect_exit 0 "$BERNSTEIN" stop
expect_stdout_contains "draining"
touch "$T/go1"
wait "$BGPID"
RUNRC=$?
BGPID=
check "the drained run exits 1 (a task left pending)" test "$RUNRC" -eq 1
check "the running task finished and merged" test -f "$W/first.txt"
check "the second never started" test "$(task_state second)" = pending
check "the summary says interrupted" grep -q "interrupted" "$T/run.out"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "resume runs the rest" test -f "$W/second.txt"

# ---- retry on a live run; add-task on a live run ----
cat >"$W/live.yaml" <<EOF
name: live
tasks:
  - title: flaky
    adapter: flaky
    prompt: "make flaky.txt"
  - title: hold
    prompt: "touch $T/hold.started; while [ ! -f $T/go2 ]; do sleep 0.05; done; echo held > hold.txt"
EOF
sed -i 's/^parallel: 1$/parallel: 2/' "$W/bernstein.yaml"
git_q add -A
git_q commit -q -m live
bg run live.yaml
check "hold runs" wait_until '[ -f "$T/hold.started" ]'
check "flaky failed" wait_until '[ "$(task_state flaky)" = failed ]'
expect_exit 1 "$KEY" "$BERNSTEIN" retry hold
expect_stderr_contains "task 'hold' is running"
touch "$T/fixed"
expect_exit 0 "$KEY" "$BERNSTEIN" retry flaky
expect_stdout_contains "flaky: pending"
check "the retried task is done in the live run" wait_until '[ "$(task_state flaky)" = done ]'
check "its work merged" test -f "$W/flaky.txt"
expect_exit 3 "$KEY" "$BERNSTEIN" add-task --prompt "true" --role nosuchrole
expect_stderr_contains "nosuchrole"
expect_exit 3 "$KEY" "$BERNSTEIN" add-task --prompt "true" --depends-on nosuch
expect_exit 3 "$KEY" "$BERNSTEIN" add-task --prompt "true" --id flaky
expect_exit 2 "$BERNSTEIN" add-task --title x
expect_stderr_contains "missing --prompt"
expect_exit 0 "$KEY" "$BERNSTEIN" add-task --prompt "echo added > added.txt" --title "an added task" --depends-on flaky --json
expect_stdout_contains '"id":"an-added-task"'
check "the added task is done in the live run" wait_until '[ "$(task_state an-added-task)" = done ]'
check "its work merged" test -f "$W/added.txt"
touch "$T/go2"
wait "$BGPID"
RUNRC=$?
BGPID=
check "the live run exits 0" test "$RUNRC" -eq 0
check "the added task is audited" grep -q '"event_type": "task.added"' "$W"/.bernstein/audit/*.jsonl

# ---- retry on a finished run: resumed here ----
rm -f "$T/fixed" "$W/flaky.txt"
git_q rm -q flaky.txt
git_q commit -q -m "drop flaky.txt"
expect_exit 1 "$KEY" "$BERNSTEIN" run retry.yaml
check "flaky failed" test "$(task_state flaky)" = failed
check "hold is blocked" test "$(task_state hold)" = blocked
# --fresh: a new worktree and branch (the old ones removed), failing again
OLDWT=$(ls -d "$W"/.bernstein/worktrees/flaky-* | tail -n 1)
OLDBR=bernstein/$(basename "$OLDWT")
expect_exit 1 "$KEY" "$BERNSTEIN" retry --fresh flaky
check "the old worktree is gone" test ! -e "$OLDWT"
check "the old branch is gone" sh -c "! git -C '$W' rev-parse -q --verify 'refs/heads/$OLDBR' >/dev/null"
check "a new worktree was made" sh -c "ls -d '$W'/.bernstein/worktrees/flaky-* | grep -v '$OLDWT' | grep -q flaky"
touch "$T/fixed" "$T/go2"
expect_exit 0 "$KEY" "$BERNSTEIN" retry flaky
expect_stdout_contains "is not running"
expect_stdout_contains "flaky: pending"
check "the retried task is done" test "$(task_state flaky)" = done
check "its blocked dependent ran too" test "$(task_state hold)" = done
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

test_done
