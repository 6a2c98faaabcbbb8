#!/bin/sh
# Failure you can act on (issue #17 item 5): a failed agent's own last error
# (what it printed on stderr before exiting 41) is kept per attempt in
# state.db and shown by `status` (text and --json), the run's live lines and
# its summary, instead of only "exited with code 41 ..."; a failed gate's log
# path is printed in the summary and by status (and --json), and the file is
# there. The agent's error is one line, bounded, redacted, with no escape
# sequence left. `logs TASK` shows readable events (--raw the agent's own
# output, --json events.jsonl; -f for each).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0181 why a task failed: the agent's own error, the gate's log"

W=$T/work
SECRET=sk-t0181-secret-value-0123456789
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
# the shell agent with a key it is given (and bernstein redacts)
sed -i 's/^  prompt_positional: true$/  prompt_positional: true\n  env_passthrough: [ANTHROPIC_API_KEY]/' \
	"$W/.bernstein/catalog/profiles/shell.yaml"
printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\nsandbox: none\n' >"$W/bernstein.yaml"
# the agent: noise, then its error with an escape sequence, its secret and a
# long tail; exit 41
cat >"$W/plan.yaml" <<'PLAN'
name: failures
tasks:
  - title: no key
    id: nokey
    prompt: |
      echo "starting up" >&2
      printf 'Error: \033[31mthe API said 401 for key %s\033[0m ' "$ANTHROPIC_API_KEY" >&2
      head -c 3000 /dev/zero | tr '\0' x >&2
      echo >&2
      echo "some progress on stdout"
      exit 41
  - title: chatty
    id: chatty
    prompt: |
      echo "hello from the agent"
      echo "done now"
      echo x > chatty.txt
  - title: gate fails
    id: gated
    gates: [{name: unit tests, run: "echo GATE-OUTPUT-t0181; exit 3"}]
    prompt: "echo hi > a.txt"
PLAN
git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1

run ANTHROPIC_API_KEY=$SECRET "$BERNSTEIN" run plan.yaml
check "run exits 1 (tasks failed)" test "$RC" -eq 1
expect_stdout_contains "nokey: failed: exited with code 41" "the summary names the failed task and its rule"
expect_stdout_contains "; the agent said: Error: [31mthe API said 401 for key" "the summary shows the agent's own error"
expect_stdout_contains "gated: failed: gate 'unit tests' failed (exit 3)" "the summary names the failed gate"
expect_stdout_contains "    gate log: $W/.bernstein/runs/" "the summary prints the gate log's path"
expect_stdout_contains "    agent log: bernstein logs nokey --run " "and how to see the agent's log"
gate_log=$(sed -n 's/^    gate log: //p' "$T/stdout")
check "the gate log is where the summary says" grep -q GATE-OUTPUT-t0181 "$gate_log"
check "no escape byte reached the output" sh -c "! grep -q \"\$(printf '\\033')\" '$T/stdout'"

run "$BERNSTEIN" status
expect_stdout_contains "; the agent said: Error: [31mthe API said 401" "status shows the agent's error"
expect_stdout_contains "; log: $gate_log" "status shows the gate log's path"

run "$BERNSTEIN" status --json
check "status --json: agent_error and gate_log" "$PY" -c '
import json, sys
st = json.load(open(sys.argv[1]))
t = {x["id"]: x for x in st["tasks"]}
e = t["nokey"]["agent_error"]
assert e.startswith("Error: [31mthe API said 401 for key "), e
assert "sk-t0181" not in e and "[REDACTED]" in e, e
assert "\n" not in e and "\x1b" not in e and len(e.encode()) <= 300 and e.endswith("..."), e
assert t["nokey"]["gate_log"] is None
assert t["gated"]["gate_log"] == sys.argv[2], t["gated"]
assert t["gated"]["agent_error"] is None
' "$T/stdout" "$gate_log"

check "state.db attempts.agent_error holds it" "$PY" -c '
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
rows = db.execute("SELECT task_id, n, agent_error FROM attempts").fetchall()
d = {r[0]: r for r in rows}
assert d["nokey"][2].startswith("Error: "), rows
assert db.execute("PRAGMA user_version").fetchone()[0] >= 2
' "$W/.bernstein/state.db"

# --json: the run line lists the problems with their fields
run ANTHROPIC_API_KEY=$SECRET "$BERNSTEIN" run --json plan.yaml
check "run --json: the run line lists the problems" "$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
run = [l for l in lines if l.get("type") == "run"][-1]
p = {x["task"]: x for x in run["problems"]}
assert p["nokey"]["state"] == "failed" and p["nokey"]["agent_error"].startswith("Error: "), p
assert p["gated"]["gate_log"].endswith("/gate-unit tests.log"), p
' "$T/stdout"
# logs: readable events by default, --raw the agent's output, --json events.jsonl
run "$BERNSTEIN" logs chatty
check "logs: one readable line per event (time, kind, text)" \
	grep -Eq '^[0-9]{2}:[0-9]{2}:[0-9]{2} text +hello from the agent$' "$T/stdout"
expect_lines stdout 2 "logs: the two events, nothing else"
run "$BERNSTEIN" logs chatty -f
check "logs -f of a finished task: the same lines, then it exits" \
	grep -Eq '^[0-9:]{8} text +done now$' "$T/stdout"
run "$BERNSTEIN" logs chatty --raw
check "logs --raw: what the agent printed" grep -qx "hello from the agent" "$T/stdout"
run "$BERNSTEIN" logs chatty --json -f
check "logs --json: events.jsonl's JSON lines" "$PY" -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["kind"] for e in ev] == ["text", "text"] and ev[0]["text"] == "hello from the agent", ev
' "$T/stdout"
run "$BERNSTEIN" logs nokey
check "logs of the failed agent: readable, no escape byte" sh -c "! grep -q \"\$(printf '\\033')\" '$T/stdout'"
check "the secret is in no file of .bernstein nor in the output" \
	sh -c "! grep -rqs '$SECRET' '$W/.bernstein' '$T/stdout'"
test_done
