#!/bin/sh
# Issue #18: `bernstein cancel` from another shell reaches a live run through
# its control channel (.bernstein/runs/RUN/control.sock). The cancelled
# task's agent double-forks (a grandchild in a session of its own that
# ignores SIGTERM and SIGHUP): nothing of it survives, the task is
# 'cancelled', its dependent 'blocked', its worktree kept, the other task
# finishes, and the request is an audit record naming who asked. Refused,
# each with a control.refused record and nothing changed: a request from
# another uid (setpriv, with the socket's fences loosened so the peer check
# itself is what refuses), a request from inside the run (the agent of a
# task connecting to the socket), and a malformed request.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0190 control: cancel from another shell"
. "$SRCDIR/tests/integration/repo-lib.sh"

KILL_MARK=$T/beat.sh
chmod 0711 "$T"

shell_repo <<'EOF'
adapter: shell
parallel: 4
kill_grace: 1
sandbox: none
EOF
# the agent of 'spin': a grandchild in its own session that ignores TERM and
# HUP, and itself, both appending to beat files
cat >"$T/beat.sh" <<'EOF'
trap '' TERM HUP
while :; do echo x >>"$1"; sleep 0.02; done
EOF
# the agent of 'inside': connects to the run's socket and asks to cancel
# 'other'; the reply goes to a file
cat >"$T/inside.py" <<'EOF'
import glob, json, socket, sys
path = glob.glob(sys.argv[1] + "/.bernstein/runs/*/control.sock")[0]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.sendall(b'{"op": "cancel", "tasks": ["other"]}\n')
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
if sys.argv[2] == "-":
    sys.stdout.write(data.decode())
else:
    open(sys.argv[2], "wb").write(data)
EOF
cat >"$W/plan.yaml" <<EOF
name: cancel
tasks:
  - title: spin
    prompt: "setsid sh $T/beat.sh $T/grand.beat & sh $T/beat.sh $T/agent.beat"
  - title: after
    depends_on: [spin]
    prompt: "echo after > after.txt"
  - title: inside
    prompt: "/usr/bin/python3 $T/inside.py $W $T/inside.reply"
  - title: other
    prompt: "while [ ! -f $T/go ]; do sleep 0.05; done; echo other > other.txt"
EOF
commit_base
bg run plan.yaml

check "the agent and its grandchild run" \
	wait_until '[ -s "$T/grand.beat" ] && [ -s "$T/agent.beat" ] && [ -s "$T/inside.reply" ]'

# ---- refused: from inside the run ----
check "a request from the run's own agent is refused" \
	grep -q '"kind":"refused"' "$T/inside.reply"
check "it says why" grep -q "one of the run's own" "$T/inside.reply"

# ---- refused: another uid ----
SOCK=$(ls "$W"/.bernstein/runs/*/control.sock)
check "the run's directory is 0700" test "$(stat -c %a "$(dirname "$SOCK")")" = 700
check "the socket is 0600" test "$(stat -c %a "$SOCK")" = 600
if ! command -v setpriv >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
	skip "a request from another uid" "needs root and setpriv(1)"
else
	# loosen both fences, as a careless user might: the peer check remains
	chmod 0711 "$W/.bernstein" "$W/.bernstein/runs" "$(dirname "$SOCK")"
	chmod 0666 "$SOCK"
	cp "$T/inside.py" "$T/other.py"
	chmod 0644 "$T/other.py"
	sed -i 's#glob.glob(sys.argv\[1\] + "/.bernstein/runs/\*/control.sock")\[0\]#sys.argv[1]#' "$T/other.py"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- /usr/bin/python3 "$T/other.py" \
		"$SOCK" - >"$T/other.reply" 2>&1
	check "a request from uid 65534 is refused" grep -q '"kind":"refused"' "$T/other.reply"
	check "it names the uid" grep -q "uid 65534 is not the run's user" "$T/other.reply"
	chmod 0700 "$(dirname "$SOCK")"
	chmod 0600 "$SOCK"
fi

# ---- a malformed request ----
run /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"op\": \"cancel\", \"tasks\": [\"other\"], \"tasks\": []}\n")
print(s.recv(4096).decode())' "$SOCK"
expect_stdout_contains '"kind":"usage"' "a duplicate key is refused"

# ---- cancel ----
expect_exit 2 "$BERNSTEIN" cancel nosuch
expect_stderr_contains "no task 'nosuch'"
expect_exit 1 "$KEY" "$BERNSTEIN" cancel spin inside
expect_stderr_contains "task 'inside' is"
check "a refused cancel changed nothing" test "$(procs_with_arg "$T/beat.sh")" -ge 1
expect_exit 0 "$KEY" "$BERNSTEIN" cancel spin
expect_stdout_contains "spin: cancelled"
check "nothing of the agent's tree is left" wait_no_procs "$T/beat.sh" 10
s1=$(wc -c <"$T/grand.beat")
sleep 0.3 # observing, not synchronising
check "the grandchild's file stopped growing" test "$(wc -c <"$T/grand.beat")" -eq "$s1"
check "the other task still runs" test -z "$(cat "$T/other.done" 2>/dev/null)"
touch "$T/go"
wait "$BGPID"
RUNRC=$?
BGPID=
check "the run exits 1 (a task cancelled, one blocked)" test "$RUNRC" -eq 1
expect_exit 0 "$BERNSTEIN" status --json
for want in '"id": "spin"' '"state": "cancelled"' '"state": "blocked"' '"state": "done"'; do
	expect_stdout_contains "$want"
done
check "the cancelled task's worktree is kept" \
	sh -c "ls -d '$W'/.bernstein/worktrees/spin-* >/dev/null"
check "the other task merged" test -f "$W/other.txt"
check "the blocked task did not run" test ! -f "$W/after.txt"
check "the socket is gone with the run" test ! -e "$SOCK"
check "the request is audited with who asked" \
	grep -q '"event_type": "control.request"' "$W"/.bernstein/audit/*.jsonl
check "the refusals are audited" \
	sh -c "grep '\"event_type\": \"control.refused\"' '$W'/.bernstein/audit/*.jsonl | grep -q \"one of the run's own\""
check "the cancel transition is audited" \
	sh -c "grep '\"event_type\": \"task.transition\"' '$W'/.bernstein/audit/*.jsonl | grep -q '\"to\": \"cancelled\"'"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

# ---- not live: a blocked task is cancelled in state.db ----
expect_exit 0 "$KEY" "$BERNSTEIN" cancel after
expect_stdout_contains "is not running"
expect_stdout_contains "after: cancelled"
expect_exit 1 "$KEY" "$BERNSTEIN" stop
expect_stderr_contains "not running"

test_done
