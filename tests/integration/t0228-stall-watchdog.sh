#!/bin/sh
# Issue #19, the stall watchdog: a task whose agent prints nothing for
# idle_timeout seconds has its whole tree stopped (a grandchild in a session
# of its own too), outcome 'stalled', the task 'interrupted' (resumable,
# retryable), said in status, logs and the audit chain. The precedence: the
# plan's idle_timeout applies to its tasks, a task's own 0 turns it off, an
# agent that keeps printing is never stalled.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0228 stall watchdog: idle_timeout"
. "$SRCDIR/tests/integration/repo-lib.sh"

MARK="t0228-grand-$$"
KILL_MARK=$MARK

shell_repo <<'EOF'
adapter: shell
parallel: 4
kill_grace: 1
sandbox: none
idle_timeout: 600
EOF
# the grandchild: its own session, ignores TERM, never prints to the agent
cat >"$T/grand.sh" <<'EOF'
trap '' TERM HUP
while :; do echo x >>"$1"; sleep 0.05; done
EOF
cat >"$W/plan.yaml" <<EOF
name: stall
idle_timeout: 2
tasks:
  - title: stall
    prompt: "setsid sh $T/grand.sh $T/grand.beat $MARK >/dev/null 2>&1 </dev/null & echo started; exec sleep 300"
  - title: chatty
    prompt: "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo tick \$i; sleep 0.2; done; echo chatty > chatty.txt"
  - title: quiet
    idle_timeout: 0
    prompt: "sleep 3; echo quiet > quiet.txt"
EOF
commit_base

expect_exit 1 "$KEY" "$BERNSTEIN" run plan.yaml
cp "$T/stdout" "$T/run.out"
expect_stdout_contains "stalled: nothing printed for 2000 ms (idle_timeout)" "the stall is said as it happens"

run "$BERNSTEIN" status --json
cp "$T/stdout" "$T/status.json"
st() { python3 -c 'import json,sys; t=[t for t in json.load(open(sys.argv[1]))["tasks"] if t["id"]==sys.argv[2]][0]; print(t[sys.argv[3]])' "$T/status.json" "$1" "$2"; }
check "the stalled task is interrupted" test "$(st stall state)" = interrupted
check "its outcome is stalled" test "$(st stall outcome)" = stalled
check "its reason says why" grep -q 'stalled: printed nothing for 2.0 s (idle_timeout)' "$T/status.json"
check "a chatty agent is not stalled" test "$(st chatty state)" = done
check "a task's idle_timeout: 0 turns it off" test "$(st quiet state)" = done
check "the grandchild in its own session is gone" wait_no_procs "$MARK" 10
run "$BERNSTEIN" status
expect_stdout_contains "stalled" "status shows it"
run "$BERNSTEIN" logs stall
expect_stdout_contains "stalled: nothing printed" "logs show it"
check "the audit chain records it" grep -q '"reason": "stalled: printed nothing' "$W"/.bernstein/audit/*.jsonl
run "$BERNSTEIN" resume --dry-run
expect_stdout_contains "stall" "resume takes it up again"

# a bad value is refused where it is written
cat >"$W/bad.yaml" <<'EOF'
name: bad
tasks:
  - title: t
    idle_timeout: -1
    prompt: "true"
EOF
expect_exit 3 "$BERNSTEIN" plan validate bad.yaml
expect_stderr_contains "idle_timeout" "names the field"

test_done
