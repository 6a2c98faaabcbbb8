#!/bin/sh
# bernstein runner's transcript and resume: the conversation is saved in the
# session directory (the manifest's directory, or --session-dir) after every
# turn; `--resume SESSION` continues it with the new prompt (the whole history
# goes back to the model); a missing or corrupt transcript is config_invalid;
# a run stopped by max_turns keeps its transcript for a later resume; a
# heartbeat file is written when heartbeat_dir is set.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0060 runner transcript and resume"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

mkdir -p "$T/session" "$T/other"
cat >"$T/s.json" <<'EOF'
[{"tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "step one\n"}}]},
 {"text": "first part done"},
 {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}}]},
 {"text": "second part done"},
 {"text": "responses resumed"}]
EOF
fake_start "$T/s.json"
write_manifest "$T/session/m.json" '{"session_id": "sess-1", "prompt": "part one", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "heartbeat_dir": "'"$T/hb"'"}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/session/m.json"
check "the transcript is saved next to the manifest" test -s "$T/session/sess-1.transcript.json"
check "the transcript is private (0600)" \
	test "$(stat -c %a "$T/session/sess-1.transcript.json")" = 600
check "the heartbeat file exists" test -s "$T/hb/sess-1.json"
check "the heartbeat has Bernstein's fields" "$PY" -c '
import json, sys
h = json.load(open(sys.argv[1]))
assert set(h) == {"timestamp", "phase", "progress_pct", "current_file", "message", "status", "files_changed"}, h
assert h["status"] == "working" and isinstance(h["timestamp"], int)
' "$T/hb/sess-1.json"
check "the transcript holds the whole conversation" "$PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))
assert t["version"] == 1 and t["session_id"] == "sess-1" and t["api"] == "chat_completions", t
roles = [i["role"] for i in t["items"]]
assert roles == ["user", "assistant", "tool", "assistant"], roles
assert t["items"][0]["content"] == "part one"
assert t["items"][1]["tool_calls"][0]["id"] == "w1"
assert t["items"][2]["tool_call_id"] == "w1" and t["items"][2]["content"].startswith("wrote 9 bytes")
assert t["items"][3]["content"] == "first part done"
' "$T/session/sess-1.transcript.json"

# ---- resume: the history plus the new prompt ----
write_manifest "$T/session/m2.json" '{"session_id": "sess-1", "prompt": "part two", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/session/m2.json" --resume sess-1
jcheck "resume: start says so, then a progress line with the item count" \
	'events[0]["resume"] == "sess-1" and any("resuming session '"'"'sess-1'"'"': 4 transcript items" == e["message"] for e in ev("progress"))'
jcheck "resume: the first request carries the old conversation and the new prompt" \
	'[m["role"] for m in reqs[2]["body"]["messages"]] == ["user", "assistant", "tool", "assistant", "user"] and reqs[2]["body"]["messages"][0]["content"] == "part one" and reqs[2]["body"]["messages"][4]["content"] == "part two"'
jcheck "resume: the run goes on (reads what the first run wrote)" \
	'ev("tool_result")[0]["output"] == "step one\n" and ev("completion")[0]["summary"] == "second part done"'
check "resume: the transcript grew" "$PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))
assert [i["role"] for i in t["items"]] == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]
' "$T/session/sess-1.transcript.json"

# ---- resume into another session id and another directory ----
write_manifest "$T/m3.json" '{"session_id": "sess-2", "prompt": "part three", "workdir": "@WORK@",
 "model": "m", "stream": false}'
expect_exit 0 BERNSTEIN_TEST_OPENAI_DEFAULT_URL="$FAKE_URL" \
	"$BERNSTEIN" runner --manifest "$T/m3.json" --resume sess-1 --session-dir "$T/session"
jcheck "a chat transcript resumes over the Responses API too" \
	'reqs[-1]["path"] == "/v1/responses" and [i["type"] for i in reqs[-1]["body"]["input"]][:3] == ["message", "function_call", "function_call_output"] and ev("completion")[0]["summary"] == "responses resumed"'
check "the new session's transcript is its own" test -s "$T/session/sess-2.transcript.json"

# ---- what cannot be resumed: config_invalid, exit 2, no request ----
n0=$(nreq)
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/session/m2.json" --resume no-such-session
jcheck "a missing transcript: config_invalid" \
	'events[-1]["kind"] == "config_invalid" and "no transcript to resume" in events[-1]["message"]'
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/session/m2.json" --resume ../escape
jcheck "a resume id that is not a session id: config_invalid" \
	'events[-1]["kind"] == "config_invalid" and "not a session id" in events[-1]["message"]'
printf '{"version": 1, "items": [{"role": "tool", "tool_call_id": "x", "content": "y"}]}\n' \
	>"$T/session/bad.transcript.json"
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/session/m2.json" --resume bad
jcheck "a transcript that does not hang together: config_invalid" \
	'events[-1]["kind"] == "config_invalid" and "no earlier tool call" in events[-1]["message"]'
printf '{"version": 1, "items": [' >"$T/session/cut.transcript.json"
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/session/m2.json" --resume cut
jcheck "a cut transcript: config_invalid" 'events[-1]["kind"] == "config_invalid"'
check "none of those reached the server" test "$(nreq)" -eq "$n0"

# ---- max_turns keeps the transcript for a later resume ----
printf '%s\n' '[{"tool_calls": [{"id": "l1", "name": "list_dir", "arguments": {}}]},
 {"tool_calls": [{"id": "l2", "name": "list_dir", "arguments": {}}]},
 {"text": "finished after resume"}]' >"$T/turns.json"
fake_start "$T/turns.json"
write_manifest "$T/other/m.json" '{"session_id": "mt", "prompt": "go", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "max_turns": 2}'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/other/m.json"
jcheck "max_turns: error kind max_turns" 'events[-1]["kind"] == "max_turns"'
check "max_turns: the transcript has both turns" "$PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))
assert [i["role"] for i in t["items"]] == ["user", "assistant", "tool", "assistant", "tool"], t["items"]
' "$T/other/mt.transcript.json"
write_manifest "$T/other/m.json" '{"session_id": "mt", "prompt": "continue", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "max_turns": 2}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/other/m.json" --resume mt
jcheck "resumed after max_turns: finishes" 'ev("completion")[0]["summary"] == "finished after resume"'

test_done
