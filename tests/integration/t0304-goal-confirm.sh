#!/bin/sh
# run --goal on a terminal (issue #20, #27): the generated plan is shown, the
# commands --allow let through are shown verbatim before the question, and
# nothing runs until the answer is yes: 'n' leaves exit 1 and the plan kept,
# 'y' runs it (the allowed gate included). A pseudo-terminal from Python's
# pty module stands in for the user.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0304 run --goal asks on a terminal and runs only after yes"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
OKEY=sk-test-goal-confirm-0123456789
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nparallel: 1\nsandbox: none\nmax_retries: 0\n' >"$W/bernstein.yaml"
git_q add -A && git_q commit -q -m base
CANARY=$T/CANARY

"$PY" - "$T/script.json" "$CANARY" <<'PY'
import json, sys
plan = """name: greet
tasks:
  - title: write greeting
    adapter: mock
    prompt: "write hello.txt hello"
    gates:
      - {name: x, run: "touch %s"}
""" % sys.argv[2]
json.dump({"responses": [
    {"tool_calls": [{"name": "write_file", "id": "c1",
                     "arguments": {"path": "bernstein-plan.yaml", "content": plan}}]},
    {"text": "Wrote the plan."}]}, open(sys.argv[1], "w"))
PY

# tty ANSWER: run --goal on a pseudo-terminal, answer when asked; the
# transcript in $T/tty.out, the exit code in $T/tty.rc
cat >"$T/answer-on-pty.py" <<'PY'
import os, pty, select, sys, time
answer, out = sys.argv[1], sys.argv[2]
argv = sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(argv[0], argv, {"PATH": "/usr/bin:/bin", "HOME": os.environ["T"] + "/home",
               "LC_ALL": "C.UTF-8", "TZ": "UTC", "OPENAI_API_KEY": os.environ["OKEY"],
               "BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE": "builtin",
               "BERNSTEIN_AUDIT_KEY_PATH": os.environ["T"] + "/audit.key"})
buf, sent, deadline = b"", False, time.time() + 120
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.5)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        buf += data
    if not sent and b"[y/N]" in buf:
        os.write(fd, (answer + "\n").encode())
        sent = True
_, st = os.waitpid(pid, 0)
open(out, "wb").write(buf)
print(os.waitstatus_to_exitcode(st))
PY
tty_run() {
	(cd "$W" && T=$T OKEY=$OKEY "$PY" "$T/answer-on-pty.py" "$1" "$T/tty.out" "$BERNSTEIN" run \
		--goal "Add a greeting" --planner openai_agents --planner-model fake-model \
		--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY --allow gates) >"$T/tty.rc"
}

fake_start "$T/script.json"
tty_run n
check "answer n: exit 1" test "$(cat "$T/tty.rc")" = 1
check "the gate was shown verbatim before the question" "$PY" - "$T/tty.out" "$CANARY" <<'PY'
import sys
t = open(sys.argv[1], "rb").read().decode()
q = t.index("[y/N]")
assert "these commands of the plan run on this host:" in t[:q], t
assert "tasks[0].gates[0].run: touch " + sys.argv[2] in t[:q], t
PY
check "answer n: nothing ran" test ! -e "$CANARY"
check "answer n: no task, no hello.txt" test ! -e "$W/hello.txt"
check "answer n: the plan is kept and named" grep -q "not confirmed; the plan is kept in" "$T/tty.out"

fake_start "$T/script.json"
tty_run y
check "answer y: exit 0" test "$(cat "$T/tty.rc")" = 0
check "answer y: the task ran and merged" grep -qx hello "$W/hello.txt"
check "answer y: the allowed gate ran" test -e "$CANARY"

test_done
