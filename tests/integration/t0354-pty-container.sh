#!/bin/sh
# Issue #26, the last gap: a poll-pty agent (runtime.pty) in the container
# tier, with its terminal. The scripted fake TUI (tests/helpers/fake-tui.py,
# which exits 9 without a terminal and 5 when its cursor-position query is
# not answered) runs in an OCI container (crun, or runc on hybrid cgroups):
# the runtime in the foreground on bernstein's pty, process.terminal with
# the declared consoleSize, so the TUI gets a console of its own there.
#   - in a run: the prompt is typed, a permission prompt answered (allow: the
#     task runs in dangerous mode), both files written and merged, the
#     screen's message and result read back as events; inside, the TUI saw a
#     terminal of the declared size, TERM from the profile, was session
#     leader with a controlling terminal (/dev/tty opens), in a PID namespace
#     of its own;
#   - a crash: failed with its exit code, nothing merged; a hang: timed out
#     (interrupted), ended by SIGTERM (the TUI is not the container's pid 1:
#     `bernstein shim --init` is, and forwards it); the same outcomes as
#     without the container (t0350, t0351);
#   - after each run, and after kill -9 of bernstein (and its keeper) with a
#     TUI hanging in its container: no fake TUI left, no container left in
#     the runtime's state (RUNTIME --root oci-*/state list);
#   - rootless (as uid 65534, a user namespace mapping it to 0): a turn with
#     its terminal, merged, no container left.
# Skipped (TAP SKIP) without Landlock or when `bernstein doctor` says the
# container tier cannot run here.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0354 poll-pty in the container tier: the fake TUI with its terminal"

require_landlock
run "$BERNSTEIN" doctor --json
if ! python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d['sandbox_tiers']['container']['available'] else 1)" "$T/stdout"; then
	echo "1..0 # SKIP the container tier cannot run here: $(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))['sandbox_tiers']['container']['error'])" "$T/stdout")"
	exit 0
fi
RUNTIME=$(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))['sandbox_tiers']['container']['runtime'])" "$T/stdout")

BGPID=
MARK="~/t0354-$(basename "$T").log" # the TUI's --log: in its HOME, and a marker in its argv
_t0354_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	for _p in $(marked); do kill -9 "$_p" 2>/dev/null; done
	_lib_cleanup
}
trap _t0354_cleanup EXIT
# the pids whose argv holds MARK (the TUI, its shim) or the test's
# directory (the runtime, whose bundle is there)
marked()
{
	set -- /proc/[0-9]*/cmdline
	grep -lsF -e "$MARK" -e "$T/" "$@" | sed -e 's#^/proc/##' -e 's#/cmdline$##'
}
wait_until()
{
	_end=$(($(date +%s) + 20))
	while ! eval "$1"; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.05
	done
	return 0
}
# the containers the runtime still knows in any bundle's state of $W
containers_left()
{
	_n=0
	for _s in "$W"/.bernstein/runs/*/*/*/oci-*/state "$W"/.bernstein/runs/*/*/oci-*/state; do
		[ -d "$_s" ] || continue
		_c=$("$RUNTIME" --root "$_s" list -q 2>/dev/null | grep -c .)
		_n=$((_n + _c))
	done
	echo "$_n"
}
no_containers() { test "$(containers_left)" -eq 0; }
# keeper_of PID: its children named bernstein that are not a proxy
keeper_of()
{
	for _s in /proc/[0-9]*/stat; do
		_pid=${_s#/proc/}
		_pid=${_pid%/stat}
		{ read -r _line <"$_s"; } 2>/dev/null || continue
		_c=${_line#*(}
		_c=${_c%%)*}
		_rest=${_line##*) }
		set -- $_rest
		[ "$2" = "$1" ] || continue
		[ "$_c" = bernstein ] || continue
		grep -qF netproxy "/proc/$_pid/cmdline" 2>/dev/null && continue
		echo "$_pid"
	done
}

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
  extra_args: ["--log", "$MARK"]
capabilities:
  tool_use: true
  max_parallel_workers: 4
runtime:
  home: isolated
  dangerous:
    env: {FAKE_TUI_YOLO: "1"}
  sandbox:
    tiers: [landlock, bwrap, container]
  pty:
    rows: 30
    cols: 100
    term: xterm-t0354
    ready: "for shortcuts"
    working: "esc to interrupt"
    done: "Cooked for [0-9]+s"
    paste: true
    exit: "/exit"
    permission:
      - pattern: "Do you want to create"
        allow: "1"
        deny: "2"
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  tui:
    resume: unsupported
    dangerous_mode: env-var
    event_channel: poll-pty
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: tui
parallel: 2
sandbox: container
retry_backoff: 0
max_retries: 0
kill_grace: 1
EOF
cat >"$W/plan.yaml" <<'EOF'
name: boxplan
tasks:
  - title: one
    prompt: "please write one.txt"
  - title: two
    prompt: "ask to write two.txt"
EOF
cat >"$W/crash.yaml" <<'EOF'
name: boxcrash
tasks:
  - title: boom
    prompt: "crash now and write boom.txt"
EOF
cat >"$W/hang.yaml" <<'EOF'
name: boxhang
tasks:
  - title: stuck
    timeout: 4
    prompt: "hang and write stuck.txt"
EOF
cat >"$W/kill.yaml" <<'EOF'
name: boxkill
tasks:
  - title: killed
    timeout: 4
    prompt: "hang and write killed.txt"
EOF
git_q add -A
git_q commit -q -m base

# ---- a run: typed, a permission answered, written, read back, merged ----
expect_exit 0 "$BERNSTEIN" -C "$W" run plan.yaml
check "task one merged: one.txt on main" sh -c "git -C '$W' show main:one.txt | grep -qx 'hello from the fake TUI'"
check "task two (a permission prompt) merged: two.txt on main" \
	sh -c "git -C '$W' show main:two.txt | grep -qx 'hello from the fake TUI'"
run "$BERNSTEIN" -C "$W" status --json
check "status: both tasks done, in the container tier" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
ts = d['tasks'] if isinstance(d, dict) else d
ts = [t for t in ts if t.get('title') in ('one', 'two')]
assert len(ts) == 2, ts
for t in ts:
    assert t['state'] == 'done' and t['sandbox'] == 'container', t
" "$T/stdout"
check "events: each task's message from the screen, its result; the permission answered allow" python3 -c "
import glob, json, sys
seen, perms = set(), []
for f in glob.glob(sys.argv[1] + '/.bernstein/runs/*/*/*/events.jsonl'):
    evs = [json.loads(l) for l in open(f)]
    res = [e for e in evs if e['kind'] == 'result' and e.get('dialect') == 'poll-pty']
    txt = [e['text'] for e in evs if e['kind'] == 'text' and e.get('dialect') == 'poll-pty']
    perms += [e['payload'] for e in evs if e['kind'] == 'signal' and e.get('type') == 'permission']
    if not res:
        continue
    assert res[0]['status'] == 'success', res
    for n in ('one', 'two'):
        if any('Done: I wrote %s.txt.' % n in t for t in txt):
            seen.add(n)
assert seen == {'one', 'two'}, seen
assert len(perms) == 1 and perms[0]['answer'] == 'allow', perms
assert 'Do you want to create two.txt?' in perms[0]['prompt'], perms
" "$W"
# the TUI's log, in its HOME (the session's home/, which it can write)
tui_logs() { cat "$W"/.bernstein/runs/*/*/*/home/t0354-*.log "$W"/.bernstein/runs/*/*/home/t0354-*.log 2>/dev/null; }
count_lines() { tui_logs | grep -cxF "$1"; }
check "inside the container: a terminal of the declared size, TERM, session leader, a controlling terminal" \
	test "$(count_lines 'size 30x100 TERM=xterm-t0354 leader=True ctty=True')" -eq 2
check "inside the container: each prompt typed whole, then /exit" \
	test "$(count_lines "prompt 'please write one.txt'")$(count_lines "prompt 'ask to write two.txt'")$(count_lines "prompt '/exit'")" = 112
check "the bundle asked for a terminal of that size" python3 -c "
import glob, json, sys
cs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + '/.bernstein/runs/*/*/*/oci-*/config.json')]
assert cs, 'no bundle'
for c in cs:
    p = c['process']
    assert p['terminal'] is True and p['consoleSize'] == {'height': 30, 'width': 100}, p
    assert '/dev/tty' in p['args'] and p['args'][1:3] == ['shim', '--init'], p['args']
" "$W"
check "no escape sequence in the events" python3 -c "
import glob, sys
for f in glob.glob(sys.argv[1] + '/.bernstein/runs/*/*/*/events.jsonl'):
    b = open(f, 'rb').read()
    assert b'\x1b' not in b and b'\\\\u001b' not in b, f
" "$W"
check "after the run: no fake TUI is left" wait_no_procs "$MARK" 10
check "after the run: no container is left" no_containers

# ---- a crash and a hang: the outcomes of t0350/t0351 ----
run "$BERNSTEIN" -C "$W" run crash.yaml
check "a crashing TUI: the run fails (exit 1)" test "$RC" -eq 1
check "a crashing TUI: failed with its exit code, as without the container" \
	grep -q 'boom: failed: exited with code 3' "$T/stdout"
check "a crashing TUI: nothing merged" sh -c "! git -C '$W' show main:boom.txt >/dev/null 2>&1"
run "$BERNSTEIN" -C "$W" run hang.yaml
check "a hanging TUI: the run fails (exit 1)" test "$RC" -eq 1
check "a hanging TUI: timed out (interrupted, for a resume), as without the container" \
	grep -q 'stuck: interrupted: timed out' "$T/stdout"
check "a hanging TUI: SIGTERM ended it (the shim, its container's init, forwarded it)" \
	sh -c "grep -q 'SIGTERM to the agent' '$T/stdout' && ! grep -q 'SIGKILL' '$T/stdout'"
check "a hanging TUI: nothing merged" sh -c "! git -C '$W' show main:stuck.txt >/dev/null 2>&1"
check "crash and hang: the statuses the screen gave, as without the container" python3 -c "
import glob, json, sys
out = {}
for f in glob.glob(sys.argv[1] + '/.bernstein/runs/*/*/*/events.jsonl'):
    evs = [json.loads(l) for l in open(f)]
    st = [e['payload']['status'] for e in evs if e['kind'] == 'signal' and e.get('type') == 'status']
    txt = ' '.join(e.get('text', '') for e in evs if e['kind'] == 'text')
    if 'Crashing now' in txt:
        out['crash'] = st
    elif '/stuck-' in f:
        out['hang'] = st
assert out.get('crash') == ['ready', 'working', 'exited'], out
assert out.get('hang') == ['ready', 'working', 'exited'], out
" "$W"
check "after the crash and the hang: no fake TUI is left" wait_no_procs "$MARK" 10
check "after the crash and the hang: no container is left" no_containers

# ---- kill -9 of bernstein while the TUI hangs in its container ----
_san=""
[ -n "${ASAN_OPTIONS:-}" ] && _san="$_san ASAN_OPTIONS=$ASAN_OPTIONS"
[ -n "${UBSAN_OPTIONS:-}" ] && _san="$_san UBSAN_OPTIONS=$UBSAN_OPTIONS"
[ -n "${LSAN_OPTIONS:-}" ] && _san="$_san LSAN_OPTIONS=$LSAN_OPTIONS"
# shellcheck disable=SC2086 # _san: words without blanks
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC $_san \
	"$BERNSTEIN" run kill.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
BGPID=$!
check "kill -9: the TUI got its prompt in the container" \
	wait_until "grep -qsx \"prompt 'hang and write killed.txt'\" $W/.bernstein/runs/*/*/*/home/t0354-*.log $W/.bernstein/runs/*/*/home/t0354-*.log"
check "kill -9: the TUI runs" test "$(procs_with_arg "$MARK")" -ge 1
_k=$(keeper_of "$BGPID")
# shellcheck disable=SC2086 # _k: pids
kill -9 $_k "$BGPID" # the keeper first: it must not get to act
wait "$BGPID" 2>/dev/null
BGPID=
check "kill -9: no process of the task is left (TUI, shim, runtime)" wait_until '[ -z "$(marked)" ]'
check "kill -9: the runtime, killed, could not delete its container" test "$(containers_left)" -ge 1
run "$BERNSTEIN" -C "$W" resume
check "kill -9, then resume: no container is left" no_containers
check "kill -9, then resume: no fake TUI is left" wait_no_procs "$MARK" 10

# ---- rootless: the same TUI as uid 65534 (a user namespace mapping it to 0) ----
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	skip "rootless: uid 65534" "needs root (to drop to 65534 with setpriv)"
else
	chmod 755 "$T"
	N=$T/nobody
	mkdir -p "$N/home" "$N/work/.bernstein"
	git -C "$N/work" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$N/work/.gitignore"
	cp -r "$W/.bernstein/catalog" "$N/work/.bernstein/catalog"
	cp "$W/bernstein.yaml" "$N/work/bernstein.yaml"
	printf 'name: nobody\ntasks:\n  - {title: nobody, prompt: "please write nobody.txt"}\n' >"$N/work/plan.yaml"
	git -C "$N/work" add -A >/dev/null 2>&1
	git -C "$N/work" -c user.name=t -c user.email=t@example.com commit -q -m rootless >/dev/null 2>&1
	chown -R 65534:65534 "$N"
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups --"
	NENV="env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=$N/home LC_ALL=C.UTF-8 TZ=UTC"
	# shellcheck disable=SC2086 # AS, NENV: words without blanks
	run $AS $NENV "$BERNSTEIN" -C "$N/work" run plan.yaml
	if grep -q 'rootless containers do not work here' "$T/stdout" "$T/stderr"; then
		skip "rootless: uid 65534" "rootless containers do not work here"
	else
		check "rootless: the run succeeds, nobody.txt merged" \
			sh -c "test $RC -eq 0 && git -c safe.directory='*' -C '$N/work' show main:nobody.txt | grep -qx 'hello from the fake TUI'"
		[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
		check "rootless: a terminal inside, session leader, a controlling terminal" \
			sh -c "cat '$N'/work/.bernstein/runs/*/*/home/t0354-*.log | grep -qx 'size 30x100 TERM=xterm-t0354 leader=True ctty=True'"
		W=$N/work
		check "rootless: no container is left" no_containers
	fi
fi

test_done
