#!/bin/sh
# Issue #26 end to end: the real gemini (tests/agents, pinned) in interactive
# mode, no -p, driven through its pseudo-terminal by the gemini_tui profile
# (runtime.pty) against tests/helpers/fake-llm.py. One task in a run: the
# prompt is typed, gemini's shell tool writes hello.txt (--yolo: no
# confirmation), a still screen with the input box back is done, /quit ends
# it; the task completes and is merged into main, and its events read the
# screen back (ready, working, done; gemini's message).
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: gemini as a TUI through the pty, in a run"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

require_agents

W=$T/work
mkdir -p "$W"
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: gemini_tui\nparallel: 1\ntimeout: 120\nmax_retries: 0\nsandbox: none\n' >"$W/bernstein.yaml"
cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"},
 "responses": [
  {"tool_calls": [{"name": "run_shell_command", "id": "call_pty_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}]},
  {"text": "Created hello.txt for you."}],
 "default": {"text": "Nothing more."}}
EOF
fake_start "$T/script.json"
cat >"$W/plan.yaml" <<EOF
name: ptygemini
tasks:
  - title: hello
    sampling: {base_url: "http://127.0.0.1:$FAKE_PORT", api_key_env: GEMINI_API_KEY}
    prompt: create hello.txt containing hi
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

(cd "$W" && exec env -i PATH="$E2E_BIN:/usr/bin:/bin" HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
	GEMINI_API_KEY=e2e-dummy-key BERNSTEIN_AUDIT_KEY_PATH="$T/audit.key" \
	timeout 300 "$BERNSTEIN" run plan.yaml) </dev/null >"$T/run.out" 2>"$T/run.err"
RC=$?
check "bernstein run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stderr "$T/run.err"; _diag_file stdout "$T/run.out"; }
check "merged: hello.txt on main holds hi" sh -c "git -C '$W' show main:hello.txt | grep -qx hi"
SD=$(ls -d "$W"/.bernstein/runs/*/hello-*/1 2>/dev/null | head -n 1)
check "the task's session directory exists" test -n "$SD" -a -d "$SD"
check "gemini ran interactively: no -p on its argv, the prompt typed (prompt_via pty)" python3 -c "
import json, sys
p = json.load(open(sys.argv[1] + '/plan.json'))
assert '-p' not in p['argv'] and '--print' not in p['argv'], p['argv']
assert p['argv'][0].endswith('/gemini'), p['argv']
assert p['prompt']['via'] == 'pty', p['prompt']
assert 'TERM' in p['env'], p['env']
" "$SD"
check "events: ready, working, done read from the screen; gemini's message; a success result" python3 -c "
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1] + '/events.jsonl')]
st = [e['payload']['status'] for e in evs if e['kind'] == 'signal' and e.get('type') == 'status']
assert st[:1] == ['ready'] or 'ready' in st, st
assert st.index('ready') < st.index('working') < st.index('done'), st
txt = '\n'.join(e['text'] for e in evs if e['kind'] == 'text')
assert 'Created hello.txt for you.' in txt, txt
assert 'create hello.txt containing hi' not in txt, txt
res = [e for e in evs if e['kind'] == 'result']
assert len(res) == 1 and res[0]['status'] == 'success', res
for e in evs:
    assert '\x1b' not in json.dumps(e, ensure_ascii=False), e
" "$SD"
check "the server got the typed prompt" python3 -c "
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert any('create hello.txt containing hi' in json.dumps(r) for r in reqs), len(reqs)
" "$T/requests.jsonl"
check "the HOME given to bernstein is untouched" test -z "$(ls -A "$T/home" 2>/dev/null)"
fake_stop
test_done
