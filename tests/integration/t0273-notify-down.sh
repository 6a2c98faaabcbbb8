#!/bin/sh
# A webhook that is slow or down never holds the run up (issue #19); shown
# by order, not by time:
# 1. slow: the receiver takes every request and answers none until the
#    test says so. The run goes on regardless: task b (which depends on a)
#    runs after a's task_done was sent and before it was answered, the run
#    ends (exit 0, run_done sent too) while no request has been answered,
#    and the three notifications arrive side by side, none waiting for
#    another. Released, each is answered and every helper ends.
# 2. down: nothing listens; the run ends all the same (exit 0, both tasks
#    done) and each notification is tried 1 + retries times, as notify.log
#    says afterwards.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0273 notify: a slow or dead webhook does not delay the run"

SRV_PID=
trap '[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; _lib_cleanup' EXIT

setup() {
	W=$1
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	shell_agent "$W"
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\n%s\n' "$2" >"$W/bernstein.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
	cat >"$W/plan.yaml" <<'YAML'
name: t0273
tasks:
  - title: a
    prompt: "echo a > a.txt"
  - title: b
    depends_on: [a]
    prompt: "echo b > b.txt"
YAML
}
bw() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' $*"; }
wait_lines() {
	i=0
	while [ "$(count_lines "$1" "$2")" -lt "$3" ] && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ "$(count_lines "$1" "$2")" -ge "$3" ]
}
# count_lines FILE PATTERN: 0 while FILE does not exist
count_lines() {
	n=$(grep -c "$2" "$1" 2>/dev/null)
	echo "${n:-0}"
}
NOTIFY_EXE=$(readlink -f "${BUILDDIR:-$(dirname "$BERNSTEIN")}/bernstein-notify")

# 1. slow
$PY "$SRCDIR/tests/helpers/webhook-server.py" --port-file "$T/port" --log "$T/slow.log" \
	--hold "$T/release" --max-seconds 100 &
SRV_PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
setup "$T/slow" "notify:
  webhook: http://127.0.0.1:$(cat "$T/port")/t0273
  on: [task_done, run_done]
  timeout: 30
  retries: 0"
bw run plan.yaml
check "slow: the run ends well (exit $RC)" test "$RC" -eq 0
check "slow: it ended before any notification was answered" sh -c "! grep -q answered '$T/slow.log'"
check "slow: both tasks are merged" test -f "$W/a.txt" -a -f "$W/b.txt"
check "slow: all three arrive while none is answered (none waits for another)" \
	wait_lines "$T/slow.log" '"method": "POST"' 3
check "slow: ... still none answered" sh -c "! grep -q answered '$T/slow.log'"
check "slow: the three are a's and b's task_done and run_done" \
	$PY - "$T/slow.log" <<'PY'
import json, sys
events = [json.loads(l)["body"]["event"] for l in open(sys.argv[1]) if '"method"' in l]
sys.exit(0 if sorted(events) == ["run_done", "task_done", "task_done"] else 1)
PY
touch "$T/release"
check "slow: released, each is answered" wait_lines "$T/slow.log" '"answered": 200' 3
check "slow: every helper ends" wait_no_procs "$NOTIFY_EXE" 20
check "slow: notify.log says each was delivered" \
	wait_lines "$(ls "$W"/.bernstein/runs/*/notify.log)" 'HTTP 200 (try 1)' 3
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null
SRV_PID=

# 2. down: a port nothing listens on
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
setup "$T/down" "notify:
  webhook: http://127.0.0.1:$PORT/t0273
  on: [task_done, run_done]
  timeout: 20
  retries: 2"
bw run plan.yaml
check "down: the run ends well (exit $RC)" test "$RC" -eq 0
check "down: both tasks are merged" test -f "$W/a.txt" -a -f "$W/b.txt"
check "down: no warning from the run: delivery is the helper's" sh -c "! grep -q notification '$T/stderr'"
check "down: every helper ends" wait_no_procs "$NOTIFY_EXE" 30
N=$(ls "$W"/.bernstein/runs/*/notify.log)
check "down: each of the three tried 1 + 2 times" \
	test "$(grep -c "Couldn't connect to server (try 3)" "$N")" -eq 3
check "down: and no more" sh -c "! grep -q '(try 4)' '$N'"
test_done
