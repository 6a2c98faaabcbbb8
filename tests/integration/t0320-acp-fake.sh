#!/bin/sh
# The acp event channel (issue #21) against a scripted ACP agent
# (tests/helpers/fake-acp-agent.py): bernstein as the ACP client writes the
# file the agent asks it to write (fs/write_text_file, confined to the tree),
# answers its permission requests by the policy (inside the tree: allow;
# outside: refuse; each answer an event), refuses a write outside the tree,
# answers an unknown method with -32601, and types the outcome: a malformed
# frame fails the task, a hung turn gets session/cancel before SIGTERM on
# timeout, a resume is session/load.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0320 acp: the ACP client against a scripted agent"

W=$T/work
LOG=$T/acp.log
OUT=$T/outside
mkdir -p "$OUT"
git -C "$W" init -q -b main . >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m base

# fakeacp SCENARIO: the adapter fakeacp plays SCENARIO (no dangerous mode:
# the permission policy confines it to the tree)
fakeacp()
{
	mkdir -p "$W/.bernstein/catalog/profiles"
	cat >"$W/.bernstein/catalog/profiles/fakeacp.yaml" <<EOF
name: fakeacp
display_name: "Fake ACP agent"
shape: factory
invocation:
  binary: $PY
capabilities:
  tool_use: true
runtime:
  acp:
    args: [$SRCDIR/tests/helpers/fake-acp-agent.py, $1, $LOG]
  env:
    FAKE_ACP_OUTSIDE: $OUT/escaped.txt
EOF
	cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<EOF
adapters:
  fakeacp:
    resume: flag
    dangerous_mode: unsupported
    event_channel: acp
EOF
	: >"$LOG"
}

# logged FILTER: the fake agent's log has a line for which the python
# expression FILTER (over m, the line's JSON) holds
logged()
{
	python3 -c '
import json, sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    g = m.get("got", {})
    if eval(sys.argv[2]):
        sys.exit(0)
sys.exit(1)' "$LOG" "$1"
}

# events KIND-FILTER: the spawn's events.jsonl (the last session) has an event
events()
{
	python3 -c '
import glob, json, os, sys
f = max(glob.glob(sys.argv[1] + "/.bernstein/runs/*/*/events.jsonl"), key=os.path.getmtime)
for l in open(f):
    e = json.loads(l)
    if eval(sys.argv[2]):
        sys.exit(0)
sys.exit(1)' "$W" "$1"
}

# --- a file written, permissions answered, an escape refused ---
fakeacp write
run "$BERNSTEIN" spawn --json fakeacp "Create hello.txt"
check "exit 0 (completed)" test "$RC" -eq 0
expect_stdout_contains '"outcome":"completed"' "the typed outcome is completed"
check "hello.txt was written by bernstein for the agent" \
	grep -qx "hello from the fake ACP agent" "$W/hello.txt"
check "initialize offered fs read/write and no terminal" logged \
	'g.get("method") == "initialize" and g["params"]["clientCapabilities"]["fs"]["writeTextFile"] is True and g["params"]["clientCapabilities"]["terminal"] is False'
check "session/new: cwd is the tree, mcpServers an empty array" logged \
	"g.get('method') == 'session/new' and g['params']['cwd'] == '$W' and g['params']['mcpServers'] == []"
check "the prompt went in session/prompt" logged \
	'g.get("method") == "session/prompt" and g["params"]["prompt"][0]["text"] == "Create hello.txt"'
check "the permission inside the tree was allowed" logged \
	'g.get("id") == 101 and g["result"]["outcome"]["optionId"] == "yes"'
check "the read came back with the content" logged \
	'g.get("id") == 103 and g["result"]["content"] == "hello from the fake ACP agent\n"'
check "the permission outside the tree was refused" logged \
	'g.get("id") == 104 and g["result"]["outcome"]["optionId"] == "no"'
check "the write outside the tree got a JSON-RPC error" logged \
	'g.get("id") == 105 and "outside the task" in g["error"]["message"]'
check "nothing was written outside the tree" test ! -e "$OUT/escaped.txt"
check "the unknown method got -32601" logged \
	'g.get("id") == 106 and g["error"]["code"] == -32601'
check "the agent saw its stdin end (bernstein closed it after the turn)" logged 'm.get("eof")'
check "each permission answer is an event (allow)" events \
	'e["kind"] == "signal" and e["signal"] == "PERMISSION" and e["payload"]["decision"] == "allow"'
check "each permission answer is an event (refuse)" events \
	'e["kind"] == "signal" and e["signal"] == "PERMISSION" and e["payload"]["decision"] == "refuse" and e["payload"]["paths"] == ["'"$OUT"'/escaped.txt"]'
check "tool call and its result are events" events \
	'e["kind"] == "tool_result" and e["tool_name"] == "WriteFile" and not e["is_error"]'
check "the plan is an event" events 'e["kind"] == "signal" and e["signal"] == "PLAN"'
check "usage from the prompt's answer" events 'e["kind"] == "usage" and e["input_tokens"] == 21'
check "the result is end_turn, dialect acp" events \
	'e["kind"] == "result" and e["dialect"] == "acp" and e["status"] == "end_turn" and not e["is_error"]'
check "agent.log holds the agent's frames" grep -q '"session/request_permission"' \
	"$(ls -t "$W"/.bernstein/runs/*/*/agent.log | head -1)"
SESSION=$(sed -n 's/.*"kind":"outcome".*"session_id":"\([^"]*\)".*/\1/p' "$T/stdout" | head -1)
check "the agent's session id is recorded (got '$SESSION')" test "$SESSION" = fake-session-1

# --- resume: session/load when the agent advertises it ---
: >"$LOG"
run "$BERNSTEIN" spawn --resume fake-session-1 fakeacp "Again"
check "a resumed spawn completes (exit $RC)" test "$RC" -eq 0
check "resume is session/load of the session" logged \
	'g.get("method") == "session/load" and g["params"]["sessionId"] == "fake-session-1"'
check "no new session when the load worked" sh -c "! grep -q '\"session/new\"' '$LOG'"
check "the prompt goes to the loaded session" logged \
	'g.get("method") == "session/prompt" and g["params"]["sessionId"] == "fake-session-1"'
fakeacp noload
run "$BERNSTEIN" spawn --resume fake-session-1 fakeacp "Again"
check "without loadSession: a fresh session (exit $RC)" logged 'g.get("method") == "session/new"'
expect_stdout_contains "does not advertise loadSession" "and a warning says so"

# --- a malformed frame is a typed failure, never a hang ---
fakeacp malformed
run "$BERNSTEIN" spawn --timeout 50 fakeacp "x"
check "a malformed frame fails the task (exit 1, got $RC)" test "$RC" -eq 1
expect_stdout_contains "outcome: failed" "the outcome is failed"
expect_stdout_contains "malformed frame" "and says why"
check "the agent's stdin was closed after the failure" logged 'm.get("eof")'

# --- an error answer to the prompt ---
fakeacp fail
run "$BERNSTEIN" spawn fakeacp "x"
check "an error answer fails the task (exit 1, got $RC)" test "$RC" -eq 1
expect_stdout_contains "model exploded" "with the agent's message"

# --- a hung turn: timeout -> session/cancel, then SIGTERM ---
fakeacp hang
run "$BERNSTEIN" spawn --timeout 2 fakeacp "x"
check "a hung agent times out (exit 11, got $RC)" test "$RC" -eq 11
check "session/cancel came before the SIGTERM" python3 -c '
import json, sys
seq = []
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("got", {}).get("method") == "session/cancel":
        seq.append("cancel")
    if m.get("signal") == "TERM":
        seq.append("term")
sys.exit(0 if seq == ["cancel", "term"] else 1)' "$LOG"

# --- an agent that honours session/cancel ends before any signal ---
fakeacp cancel
run "$BERNSTEIN" spawn --timeout 2 fakeacp "x"
check "a cancelled turn is timed_out, not the agent's failure (exit 11, got $RC)" test "$RC" -eq 11
check "it got session/cancel and then its stdin's end, no signal" python3 -c '
import json, sys
seq = [("cancel" if m.get("got", {}).get("method") == "session/cancel" else
        "eof" if m.get("eof") else "term" if m.get("signal") else None)
       for m in map(json.loads, open(sys.argv[1]))]
sys.exit(0 if [s for s in seq if s] == ["cancel", "eof"] else 1)' "$LOG"

# --- bernstein run: the task's worktree is the session's cwd and the tree ---
fakeacp write
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: fakeacp\nmax_retries: 0\n' >"$W/bernstein.yaml"
rm -f "$W/hello.txt"
git -C "$W" add .gitignore bernstein.yaml
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m config
cat >"$W/plan.yaml" <<'EOF'
name: t0320
tasks:
  - id: hello
    title: write hello over ACP
    prompt: "Create hello.txt"
    mcp_servers:
      files: {command: /bin/true, args: [--serve, x]}
EOF
run "$BERNSTEIN" run plan.yaml
check "the run succeeds (exit $RC)" test "$RC" -eq 0
check "the task's mcp_servers reach the ACP agent in session/new (no runtime.mcp needed)" logged \
	"g.get('method') == 'session/new' and [(x['name'], x['command'], x['args']) for x in g['params']['mcpServers']] == [('files', '/bin/true', ['--serve', 'x'])]"
check "session/new's cwd is the task's worktree" logged \
	"g.get('method') == 'session/new' and '/.bernstein/worktrees/hello-' in g['params']['cwd']"
check "the file the agent had bernstein write is merged" \
	sh -c "git -C '$W' show HEAD:hello.txt | grep -qx 'hello from the fake ACP agent'"

test_done
