#!/bin/sh
# Issue #26: a poll-pty agent in a run. Two tasks are given to the scripted
# fake TUI (tests/helpers/fake-tui.py) through its pseudo-terminal; each
# writes its file, is read back from the screen (text, result), completes
# and is merged into main; a third crashes and fails without merging; a
# task in the container tier is not refused for its terminal (t0354).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0351 poll-pty: fake TUI tasks in a run, completed and merged"

W=$T/work
TUI=$SRCDIR/tests/helpers/fake-tui.py
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$W/.bernstein/catalog/profiles/tui.yaml" <<EOF
name: tui
display_name: "Fake TUI"
shape: factory
invocation:
  binary: $TUI
  extra_args: ["--log", "$T/tui.log"]
capabilities:
  tool_use: true
  max_parallel_workers: 4
runtime:
  pty:
    ready: "for shortcuts"
    working: "esc to interrupt"
    done: "Cooked for [0-9]+s"
    paste: true
    exit: "/exit"
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  tui:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: poll-pty
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: tui
parallel: 2
sandbox: none
EOF
cat >"$W/plan.yaml" <<'EOF'
name: tuiplan
tasks:
  - title: one
    prompt: "please write one.txt"
  - title: two
    prompt: "please write two.txt"
EOF
cat >"$W/crash.yaml" <<'EOF'
name: tuicrash
tasks:
  - title: boom
    prompt: "crash now and write boom.txt"
EOF
git_q add -A
git_q commit -q -m base

expect_exit 0 "$BERNSTEIN" -C "$W" run plan.yaml
check "task one merged: one.txt on main" sh -c "git -C '$W' show main:one.txt | grep -qx 'hello from the fake TUI'"
check "task two merged: two.txt on main" sh -c "git -C '$W' show main:two.txt | grep -qx 'hello from the fake TUI'"
check "each task's events: the screen's message and its result" python3 -c "
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + '/.bernstein/runs/*/*/*/events.jsonl'))
seen = set()
for f in files:
    evs = [json.loads(l) for l in open(f)]
    res = [e for e in evs if e['kind'] == 'result' and e.get('dialect') == 'poll-pty']
    txt = [e['text'] for e in evs if e['kind'] == 'text' and e.get('dialect') == 'poll-pty']
    if not res:
        continue
    assert res[0]['status'] == 'success', res
    for n in ('one', 'two'):
        if any('Done: I wrote %s.txt.' % n in t for t in txt):
            seen.add(n)
assert seen == {'one', 'two'}, (seen, files)
" "$W"

run "$BERNSTEIN" -C "$W" run crash.yaml
check "a crashing TUI: the run fails (exit 1)" test "$RC" -eq 1
check "a crashing TUI: nothing merged" sh -c "! git -C '$W' show main:boom.txt >/dev/null 2>&1"
check "no fake TUI is left running" wait_no_procs "$T/tui.log" 10

# the container tier gives it its terminal now (t0354): such a task is no
# longer refused for it; where the tier works here it runs and is merged
printf 'name: tuibox\nsandbox: container\ntasks:\n  - {title: boxed, prompt: "please write box.txt"}\n' >"$W/box.yaml"
git_q add -A
git_q commit -q -m box
run "$BERNSTEIN" -C "$W" doctor --json
BOX=$(python3 -c "
import json, sys
print('yes' if json.load(open(sys.argv[1]))['sandbox_tiers']['container']['available'] else 'no')" "$T/stdout")
run "$BERNSTEIN" -C "$W" run box.yaml
check "poll-pty in the container tier: not refused for its terminal" \
	sh -c "! '$BERNSTEIN' -C '$W' status | grep -q 'terminal'"
if [ "$BOX" = yes ]; then
	check "poll-pty in the container tier: the task ran and was merged" \
		sh -c "test $RC -eq 0 && git -C '$W' show main:box.txt | grep -qx 'hello from the fake TUI'"
else
	skip "poll-pty in the container tier: run and merged" "the container tier cannot run here"
fi

# a profile without exit keys: the driver hangs the done TUI up; that is
# no cancel of the run (it exited 130 with every task done)
sed -i '/^    exit: "\/exit"$/d' "$W/.bernstein/catalog/profiles/tui.yaml"
printf 'name: tuinoexit\ntasks:\n  - {title: plain, prompt: "please write plain.txt"}\n' >"$W/noexit.yaml"
git_q add -A
git_q commit -q -m noexit
run "$BERNSTEIN" -C "$W" run noexit.yaml
check "no exit keys declared: the run exits 0 (the hang-up is no cancel)" test "$RC" -eq 0
check "no exit keys declared: the task merged" \
	sh -c "git -C '$W' show main:plain.txt | grep -qx 'hello from the fake TUI'"
check "no exit keys declared: the task is done, not cancelled" \
	sh -c "'$BERNSTEIN' -C '$W' status --json | grep -q '\"state\": *\"done\"'"
test_done
