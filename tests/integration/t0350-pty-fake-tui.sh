#!/bin/sh
# Issue #26, poll-pty for real, against a scripted fake TUI
# (tests/helpers/fake-tui.py, which refuses to run without a terminal and
# without answers to its cursor-position query):
#   - the agent runs in a pseudo-terminal of the declared size, TERM from the
#     profile, as session leader with a controlling terminal;
#   - the prompt is typed (bracketed paste) and submitted; the screen diff is
#     the agent's message; status changes ready/working/done; the exit keys
#     end it with 0: outcome completed, the file written;
#   - a permission prompt: answered "allow" (dangerous mode) or "deny"
#     (none): the deny is a refused tool call, outcome permission_blocked;
#   - a message longer than the screen is read back whole (scrollback);
#   - a crash: exited status, outcome failed with its exit code;
#   - a hang, a screen that never settles, a TUI that never gets ready:
#     stopped by the timeout, outcome timed_out;
#   - no escape sequence reaches events.jsonl or bernstein's output;
#   - a bad runtime.pty pattern is refused at load (exit 3, FILE:LINE:COL).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0350 poll-pty: a fake TUI in a pseudo-terminal"

W=$T/work
TUI=$SRCDIR/tests/helpers/fake-tui.py
git -C "$W" init -q . >/dev/null 2>&1 || true
mkdir -p "$W/.bernstein/catalog/profiles"
profile()
{
	cat >"$W/.bernstein/catalog/profiles/$1.yaml" <<EOF
name: $1
display_name: "Fake TUI $1"
shape: factory
invocation:
  binary: $TUI
  extra_args: ["--log", "$T/$1.log"$2]
runtime:
  dangerous:
    env: {FAKE_TUI_YOLO: "1"}
  pty:
    rows: 30
    cols: 100
    term: xterm-t0350
    ready: "for shortcuts"
    working: "esc to interrupt"
    done: "Cooked for [0-9]+s"
    idle_done_ms: 1000
    paste: true
    submit: "\\r"
    exit: "/exit"
    permission:
      - pattern: "Do you want to create"
        allow: "1"
        deny: "2"
EOF
}
profile tui ""
profile tui_safe ""
profile tui_stuck ', "--no-ready"'
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  tui:
    resume: unsupported
    dangerous_mode: env-var
    event_channel: poll-pty
  tui_safe:
    resume: unsupported
    dangerous_mode: unsupported
    event_channel: poll-pty
  tui_stuck:
    resume: unsupported
    dangerous_mode: env-var
    event_channel: poll-pty
EOF
# pycheck FILE CODE: CODE runs without an exception (json, re, sys; the
# file as sys.argv[1]); ev(kind) lists the session's events of that kind
pycheck()
{
	python3 -c "
import glob, json, re, sys
out = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
o = out[-1]
evs = [json.loads(l) for l in open(o['session_dir'] + '/events.jsonl')]
def ev(kind, type=None):
    return [e for e in evs if e['kind'] == kind and (type is None or e.get('type') == type)]
def statuses():
    return [e['payload']['status'] for e in ev('signal', 'status')]
$2
" "$1"
}
noesc()
{
	python3 -c "
import glob, sys
for f in [sys.argv[1]] + glob.glob(sys.argv[2] + '/.bernstein/runs/*/*/events.jsonl'):
    b = open(f, 'rb').read()
    assert b'\x1b' not in b and b'\\\\u001b' not in b and b'\\\\u009b' not in b, f
" "$1" "$2"
}

# ---- a turn: typed, worked, read back, exited ----
expect_exit 0 "$BERNSTEIN" -C "$W" spawn tui --timeout 30 --json "please write hello.txt"
check "the turn: outcome completed by the screen's result" pycheck "$T/stdout" "
assert o['outcome'] == 'completed', o
assert o['reason'] == 'the agent finished', o
assert o['agent_exit_code'] == 0, o
r = ev('result')
assert len(r) == 1 and r[0]['status'] == 'success' and r[0]['message'] == 'done', r
"
check "the turn: status ready, working, done, exited" pycheck "$T/stdout" "
assert statuses() == ['ready', 'working', 'done', 'exited'], statuses()
"
check "the turn: the message is the screen diff, without the prompt's echo or the chrome" pycheck "$T/stdout" "
t = ev('text')
assert len(t) == 1, t
assert t[0]['text'] == '* Write(hello.txt)\n  Wrote 1 line to hello.txt\n* Done: I wrote hello.txt.', t[0]
"
check "the file was written in the worktree" grep -qx 'hello from the fake TUI' "$W/hello.txt"
check "the terminal: declared size, TERM, session leader with a controlling terminal" \
	grep -qx 'size 30x100 TERM=xterm-t0350 leader=True ctty=True' "$T/tui.log"
check "the prompt was typed whole (bracketed paste stripped by the TUI), then /exit" \
	sh -c "grep '^prompt' '$T/tui.log' | tr '\n' '|' | grep -qx \"prompt 'please write hello.txt'|prompt '/exit'|\""
check "no escape sequence in the output or the events" noesc "$T/stdout" "$W"

# ---- permission prompts ----
expect_exit 0 "$BERNSTEIN" -C "$W" spawn tui --timeout 30 --json "ask to write allowed.txt"
check "permission, dangerous mode: answered allow, file written" pycheck "$T/stdout" "
assert o['outcome'] == 'completed', o
p = ev('signal', 'permission')
assert len(p) == 1 and p[0]['payload']['answer'] == 'allow', p
assert 'Do you want to create allowed.txt?' in p[0]['payload']['prompt'], p
assert statuses() == ['ready', 'working', 'permission', 'working', 'done', 'exited'], statuses()
"
check "permission allowed: the file exists" test -f "$W/allowed.txt"
run "$BERNSTEIN" -C "$W" spawn tui_safe --timeout 30 --json "ask to write denied.txt"
check "permission, no dangerous mode: answered deny; a refused tool call; permission_blocked" pycheck "$T/stdout" "
p = ev('signal', 'permission')
assert len(p) == 1 and p[0]['payload']['answer'] == 'deny', p
tr = ev('tool_result')
assert len(tr) == 1 and tr[0]['permission_denied'] and tr[0]['is_error'], tr
assert o['outcome'] == 'permission_blocked', o
"
check "permission denied: the TUI got the deny key, nothing written" \
	sh -c "grep -qx denied '$T/tui_safe.log' && ! test -e '$W/denied.txt'"

# ---- longer than the screen ----
expect_exit 0 "$BERNSTEIN" -C "$W" spawn tui --timeout 30 --json "a long answer"
check "a message longer than the screen: every row, scrolled-off ones too" pycheck "$T/stdout" "
t = ev('text')
assert len(t) == 1, t
rows = t[0]['text'].split('\n')
assert rows == ['line %d of the answer' % i for i in range(1, 61)], rows
"

# ---- a crash ----
run "$BERNSTEIN" -C "$W" spawn tui --timeout 30 --json "crash please"
check "a crash: status exited, no result, outcome failed with its exit" pycheck "$T/stdout" "
assert o['outcome'] == 'failed' and o['agent_exit_code'] == 3, o
assert o['reason'] == 'exited with code 3', o
assert statuses() == ['ready', 'working', 'exited'], statuses()
assert not ev('result')
assert [e['text'] for e in ev('text')] == ['* Crashing now'], ev('text')
"

# ---- stuck: the timeout decides ----
run "$BERNSTEIN" -C "$W" spawn tui --timeout 2 --json "hang forever"
check "a hang (working, screen still): timed_out" pycheck "$T/stdout" "
assert o['outcome'] == 'timed_out', o
assert statuses() == ['ready', 'working', 'exited'], statuses()
assert not ev('result')
"
run "$BERNSTEIN" -C "$W" spawn tui --timeout 2 --json "spin forever"
check "a screen that never settles: never done, timed_out" pycheck "$T/stdout" "
assert o['outcome'] == 'timed_out', o
assert 'done' not in statuses(), statuses()
assert not ev('result')
"
run "$BERNSTEIN" -C "$W" spawn tui_stuck --timeout 2 --json "write never.txt"
check "never ready: nothing typed, timed_out; what its screen said is reported" pycheck "$T/stdout" "
assert o['outcome'] == 'timed_out', o
assert 'ready' not in statuses(), statuses()
assert [e['text'] for e in ev('text')] == ['Fake TUI 1.0 (100x30)\\n  loading...'], ev('text')
"
check "never ready: no prompt reached the TUI" sh -c "! grep -q '^prompt' '$T/tui_stuck.log'"
# (each profile's --log file is this test's own: another test's fake TUIs do
# not count)
no_tuis()
{
	wait_no_procs "$T/tui.log" 10 && wait_no_procs "$T/tui_safe.log" 5 &&
		wait_no_procs "$T/tui_stuck.log" 5
}
check "no fake TUI is left running" no_tuis
check "no escape sequence in any run's events" noesc "$T/stdout" "$W"

# ---- a bad pattern is refused at load ----
sed -i 's/ready: "for shortcuts"/ready: "for (shortcuts"/' "$W/.bernstein/catalog/profiles/tui_safe.yaml"
expect_exit 3 "$BERNSTEIN" -C "$W" spawn tui_safe --dry-run "x"
expect_stderr_contains "tui_safe.yaml" "a bad pattern: the file is named"
expect_stderr_contains "runtime.pty.ready: invalid pattern" "a bad pattern: the key and regcomp's reason"

test_done
