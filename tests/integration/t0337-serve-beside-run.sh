#!/bin/sh
# Issue #22: `bernstein run --serve` starts the server beside the run. It
# is not one of the run's processes (a double fork before the run becomes a
# child subreaper), so the control channel's peer check takes its requests
# as another shell's: a cancel posted to it cancels the task (an agent's
# request is still refused, t0190). It stops when the run ends, and takes
# its token with it. `bernstein serve -h` teaches the options.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0337 serve: run --serve"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
BGPID=

_t0337_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	for _p in $(grep -lsF -e "$T/spin.flag" /proc/[0-9]*/cmdline | sed -e 's#^/proc/##' -e 's#/cmdline$##'); do
		kill -9 "$_p" 2>/dev/null
	done
	_lib_cleanup
}
trap _t0337_cleanup EXIT

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
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
git_q add -A
git_q commit -q -m base

expect_exit 0 "$BERNSTEIN" serve -h
expect_stdout_contains "--listen ADDR:PORT"
expect_stdout_contains ".bernstein/serve.token"
expect_exit 0 "$BERNSTEIN" run -h
expect_stdout_contains "--serve[=ADDR:PORT]"

bg run --serve=127.0.0.1:0 plan.yaml
RUNPID=$BGPID
check "the run prints the server's URL with the token" \
	wait_until 'grep -q "^bernstein serve: http://127.0.0.1:[0-9]*/#token=" "$T/run.out"'
URL=$(sed -n 's#^bernstein serve: \(http://127.0.0.1:[0-9]*\)/\#token=.*#\1#p' "$T/run.out")
TOKEN=$(cat "$W/.bernstein/serve.token")
check "one server, watching the run" test "$(procs_with_arg "$RUNPID")" -eq 1
SVPID=$(grep -lsxzF -e "$RUNPID" /proc/[0-9]*/cmdline | sed -e 's#^/proc/##' -e 's#/cmdline$##' | head -n 1)
# its chain of parents does not reach the run
inrun=no
p=$SVPID
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
	[ "$p" = "$RUNPID" ] && inrun=yes
	p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)
done
check "the server is not a descendant of the run" test -n "$SVPID" -a "$inrun" = no
RUN=$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/api/runs" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
check "spin runs" wait_until 'curl -s -H "Authorization: Bearer $TOKEN" "$URL/api/runs/$RUN/tasks/spin" | grep -q "\"state\":\"running\""'
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
