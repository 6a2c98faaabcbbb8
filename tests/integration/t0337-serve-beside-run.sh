#!/bin/sh
# Issue #22: `bernstein run --serve` starts the server beside the run. It
# is not one of the run's processes (a double fork before the run becomes a
# child subreaper), so the control channel's peer check takes its requests
# as another shell's: a cancel posted to it cancels the task (an agent's
# request is still refused, t0190). It stops when the run ends, and takes
# its token with it. `bernstein serve -h` teaches the options.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0337 serve: run --serve"
. "$SRCDIR/tests/integration/repo-lib.sh"

KILL_MARK=$T/spin.flag

shell_repo <<'EOF'
adapter: shell
parallel: 2
kill_grace: 1
sandbox: none
EOF
cat >"$W/plan.yaml" <<EOF
name: beside
tasks:
  - title: spin
    prompt: "while [ ! -f $T/spin.flag ]; do sleep 0.05; done; echo spin > spin.txt"
  - title: quick
    prompt: "echo quick > quick.txt"
EOF
commit_base

expect_exit 0 "$BERNSTEIN" serve -h
expect_stdout_contains "--listen ADDR:PORT"
expect_stdout_contains ".bernstein/serve.token"
expect_exit 0 "$BERNSTEIN" run -h
expect_stdout_contains "--serve[=ADDR:PORT]"

bg run --serve=127.0.0.1:0 plan.yaml
RUNPID=$BGPID
check "the run prints the server's URL with the token" serve_wait "$T/run.out"
check "one server, watching the run" test "$(procs_with_arg "$RUNPID")" -eq 1
BESIDE_PID=$(grep -lsxzF -e "$RUNPID" /proc/[0-9]*/cmdline | sed -e 's#^/proc/##' -e 's#/cmdline$##' | head -n 1)
# its chain of parents does not reach the run
inrun=no
p=$BESIDE_PID
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
	[ "$p" = "$RUNPID" ] && inrun=yes
	p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)
done
check "the server is not a descendant of the run" test -n "$BESIDE_PID" -a "$inrun" = no
RUN=$(authget /api/runs | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
check "spin runs" wait_until 'authget "/api/runs/$RUN/tasks/spin" | grep -q "\"state\":\"running\""'
CODE=$(curl -sS -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" "$URL/api/runs/$RUN/tasks/spin/cancel")
check "a cancel through the server beside the run: 200" test "$CODE" = 200
check "not refused as one of the run's own" sh -c "! grep -q refused '$T/body'"
wait "$RUNPID"
RUNRC=$?
BGPID=
check "the run ends (1: a task cancelled)" test "$RUNRC" -eq 1
check "the server stops with the run" wait_no_procs "$RUNPID" 10
check "its token is gone" test ! -e "$W/.bernstein/serve.token"
check "the request is audited" grep -q '"event_type": "control.request"' "$W"/.bernstein/audit/*.jsonl
test_done
