#!/bin/sh
# End to end over the acp event channel (issue #21): bernstein spawn
# gemini_acp (`gemini --acp`, the real CLI pinned in tests/agents/) against
# tests/helpers/fake-llm.py. 1. dangerous mode: gemini's write_file comes
# back as fs/write_text_file and bernstein writes hello.txt; 2. without
# dangerous mode gemini asks session/request_permission for the edit and
# bernstein allows it (inside the tree); 3. a shell command that hangs: the
# timeout sends session/cancel, gemini ends the turn "cancelled" and kills
# its child, the outcome is timed_out; 4. --resume is session/load (gemini
# 0.61.0 cannot load a session within the minute it started: then a fresh
# session and a warning, research/acp-and-pty.md); 5. an HTTP 400 is failed.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0321 e2e: gemini over ACP against the fake LLM server"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"

if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check); then
	not_ok "the agent CLIs pinned in tests/agents/ are installed"
	diag "run tests/agents/install.sh (needs node, npm and the npm registry) and retry"
	test_done
fi
E2E_CLI=gemini_acp
E2E_KEY=GEMINI_API_KEY
E2E_SUFFIX=""
run git init -q .
run git -c user.name=e2e -c user.email=e2e@example.invalid commit -q --allow-empty -m init

# 1. a file written by bernstein for the agent
sed "s#@WORK@#$T/work#g" "$SRCDIR/tests/data/e2e/gemini.write.json" >"$T/write.json"
fake_start "$T/write.json"
e2e_spawn "create hello.txt containing hi"
check "gemini_acp: spawn exits 0 (got $RC)" test "$RC" -eq 0
check "gemini_acp: hello.txt holds hi" grep -qx hi "$T/work/hello.txt"
echeck "gemini_acp: outcome completed" "outcome.get('outcome') == 'completed'"
echeck "gemini_acp: the events are the acp dialect's" \
	"kind('result') and kind('result')[-1]['dialect'] == 'acp' and kind('result')[-1]['status'] == 'end_turn'"
echeck "gemini_acp: the write came through fs/write_text_file" \
	"any(e.get('signal') == 'FS_WRITE' and e['payload']['path'] == 'hello.txt' for e in kind('signal'))"
echeck "gemini_acp: the tool call and its result are events" \
	"kind('tool_call') and any(not e['is_error'] for e in kind('tool_result'))"
echeck "gemini_acp: initialize recorded the agent's capabilities" \
	"any(e.get('signal') == 'CAPABILITIES' and e['payload']['name'] == 'gemini-cli' and e['payload']['loadSession'] for e in kind('signal'))"
echeck "gemini_acp: the session id is captured" \
	"outcome.get('session_id') and kind('session_started')[0]['session_id'] == outcome['session_id']"
echeck "gemini_acp: the server saw the prompt" \
	"len(convo) >= 2 and 'create hello.txt containing hi' in text(convo[-1])"
sid=$(outcome_field session_id)

# 2. no dangerous mode: the edit asks for permission, bernstein allows it
mkdir -p "$T/work/.bernstein/catalog"
cat >"$T/work/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  gemini_acp:
    resume: flag
    dangerous_mode: unsupported
    event_channel: acp
EOF
sed "s#@WORK@#$T/work#g; s#hello.txt#asked.txt#" "$SRCDIR/tests/data/e2e/gemini.write.json" \
	>"$T/asked.json"
fake_start "$T/asked.json"
e2e_spawn "create asked.txt containing hi"
check "gemini_acp default mode: spawn exits 0 (got $RC)" test "$RC" -eq 0
check "gemini_acp default mode: asked.txt holds hi" grep -qx hi "$T/work/asked.txt"
echeck "gemini_acp default mode: the permission request was answered allow (an event)" \
	"any(e.get('signal') == 'PERMISSION' and e['payload']['decision'] == 'allow' and e['payload']['paths'] for e in kind('signal'))"
rm -f "$T/work/.bernstein/catalog/strategy-matrix.yaml"

# 3. a turn that hangs in a shell command: session/cancel on timeout
MARK="t0321-sleep-$$"
cat >"$T/hang.json" <<EOF
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "run_shell_command", "id": "call_hang_1",
    "arguments": {"command": "python3 -c 'import time; time.sleep(120)' $MARK", "description": "wait"}}]},
  {"text": "never reached"}]}
EOF
fake_start "$T/hang.json"
e2e_spawn --timeout 25 "run the slow command"
check "gemini_acp cancel: the timeout makes spawn exit 11 (got $RC)" test "$RC" -eq 11
echeck "gemini_acp cancel: outcome timed_out" "outcome.get('outcome') == 'timed_out'"
echeck "gemini_acp cancel: session/cancel was sent, and gemini ended its turn" \
	"any('session/cancel sent' in (e.get('message') or '') for e in kind('warning')) and any('ended its turn after session/cancel' in (e.get('message') or '') for e in kind('warning'))"
echeck "gemini_acp cancel: the shell command was started" \
	"any('$MARK' in json.dumps(e) for e in kind('tool_call'))"
check "gemini_acp cancel: the hung command is gone" wait_no_procs "$MARK" 20

# 4. resume: session/load of the first session
if [ -z "$sid" ]; then
	not_ok "gemini_acp resume (no session id to resume)"
else
	fake_start "$SRCDIR/tests/data/e2e/resume.json"
	e2e_spawn --resume "$sid" "now say bye"
	check "gemini_acp resume: spawn exits 0 (got $RC)" test "$RC" -eq 0
	echeck "gemini_acp resume: session/load loaded it, or failed and said so (gemini within its first minute)" \
		"any(e.get('type') == 'session/load' for e in kind('session_started')) or any('session/load failed' in (e.get('message') or '') for e in kind('warning'))"
	echeck "gemini_acp resume: outcome completed" "outcome.get('outcome') == 'completed'"
fi

# 5. the API answers 400
fake_start "$SRCDIR/tests/data/e2e/error400.json"
e2e_spawn "create bye.txt containing bye"
check "gemini_acp: an HTTP 400 makes spawn exit 1 (got $RC)" test "$RC" -eq 1
echeck "gemini_acp: an HTTP 400 is outcome failed" "outcome.get('outcome') == 'failed'"
check "gemini_acp: nothing written after the error" test ! -e "$T/work/bye.txt"
fake_stop
check "gemini_acp: the HOME given to bernstein is untouched" test -z "$(ls -A "$T/home")"
test_done
