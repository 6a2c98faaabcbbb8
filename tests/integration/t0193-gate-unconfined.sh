#!/bin/sh
# A gate runs what the agent wrote, so in a sandboxed task it is confined
# exactly like the agent (issue #15). When bernstein cannot confine it in the
# task's tier it must refuse it visibly, never run it unconfined:
#
# 1. landlock, one run: the agent replaces the directory of its login file
#    in its private HOME with a symlink to a directory of the user's and
#    ends well; confining the gate would make the login link through that
#    symlink, which bernstein refuses. The task fails, status gives
#    "gate 'probe' could not be confined: ...", the refusal is an event of
#    the attempt and a transition in the audit chain, the gate never ran
#    (its marker is absent) and nothing appeared in the symlink's target.
# 2. bwrap, resume: bernstein is killed (-9) while the gate runs; `resume`
#    runs the gate again, with bwrap no longer on PATH: the same refusal,
#    its event in the attempt's events (after a resume too), and the gate
#    did not run a second time.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0193 a gate that cannot be confined is refused, never run unconfined"

require_landlock

# setup DIR TIER PROMPT GATE: repository DIR/work (the agent `planter`, a
# shell script with a login file .tok/auth.json), the user's HOME DIR/home,
# DIR/victim the directory the agent aims at.
setup() {
	D=$1
	W=$D/work
	H=$D/home
	mkdir -p "$W/.bernstein/catalog/profiles" "$H/.tok" "$D/victim"
	printf '{"token": "t0193-login"}\n' >"$H/.tok/auth.json"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	cat >"$W/.bernstein/catalog/profiles/planter.yaml" <<'YAML'
name: planter
display_name: "Shell agent"
shape: factory
invocation: {binary: sh, extra_args: [-c], prompt_positional: true}
capabilities: {tool_use: true}
runtime:
  home: isolated
  login: [.tok/auth.json]
  sandbox: {tiers: [landlock, bwrap]}
YAML
	cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'YAML'
adapters:
  planter:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
YAML
	printf 'adapter: planter\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\n' "$2" >"$W/bernstein.yaml"
	{
		printf 'name: gate\ntasks:\n  - title: writes\n    prompt: |\n'
		printf '%s\n' "$3" | sed 's/^/      /'
		printf '    gates:\n      - name: probe\n        run: %s\n' "$4"
	} >"$W/plan.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

# bw PATH ARGS...: bernstein in the repository with that PATH
bw() {
	_p=$1
	shift
	run sh -c "cd '$W' && exec env -i PATH='$_p' HOME='$H' LC_ALL=C.UTF-8 TZ=UTC BERNSTEIN_AUDIT_KEY_PATH='$D/audit.key' '$BERNSTEIN' $*"
}

# the task's state and why, from status --json
task_field() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["tasks"][0].get(sys.argv[2]) or "")' "$T/status.json" "$1"
}

# checks common to both cases; $1 names the case
refused() {
	bw /usr/bin:/bin status --json
	cp "$T/stdout" "$T/status.json"
	check "$1: the task failed" test "$(task_field state)" = failed
	why=$(task_field why)
	[ -n "$why" ] || why=$(task_field reason)
	diag "$1: why: $why"
	check "$1: status says the gate could not be confined" \
		sh -c "printf '%s' \"\$1\" | grep -q \"gate 'probe' could not be confined: \"" sh "$why"
	check "$1: the refusal is an event of the attempt" \
		sh -c "cat '$W'/.bernstein/runs/*/*/*/events.jsonl | grep -q \"gate 'probe' could not be confined\""
	check "$1: and a transition in the audit chain" \
		sh -c "cat '$W'/.bernstein/audit/*.jsonl | grep -q \"gate 'probe' could not be confined\""
	bw /usr/bin:/bin audit verify
	check "$1: the audit chain verifies" test "$RC" -eq 0
}

# 1. landlock: the login's directory swapped for a symlink
# shellcheck disable=SC2016 # the agent's script: its own $HOME
setup "$T/ll" landlock 'rm -rf "$HOME/.tok"
ln -s "'"$T/ll/victim"'" "$HOME/.tok"
echo done > out.txt' "touch '$T/ll/gate-ran'; touch gate-ran"
bw /usr/bin:/bin run plan.yaml
check "landlock: the run fails (exit $RC)" test "$RC" -eq 1
refused landlock
check "landlock: the status names the planted symlink" \
	sh -c "printf '%s' \"\$1\" | grep -qi symlink" sh "$why"
check "landlock: the gate never ran" test ! -e "$T/ll/gate-ran"
check "landlock: nothing appeared in the symlink's target" \
	sh -c "[ -z \"\$(ls -A '$T/ll/victim')\" ]"
check "landlock: the user's login file is untouched" grep -q t0193-login "$H/.tok/auth.json"

# 2. bwrap: killed in the gate, resumed without bwrap on PATH
if ! command -v bwrap >/dev/null 2>&1 || ! bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
	skip "bwrap: the gate refused on resume" "bubblewrap cannot run here"
	test_done
fi
setup "$T/bw" bwrap 'echo done > out.txt' \
	"n=\$(cat runs 2>/dev/null || echo 0); echo \$((n + 1)) > runs; touch gate-started; exec sleep 300"
TEST_CMD_TIMEOUT=120
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$H" LC_ALL=C.UTF-8 TZ=UTC \
	BERNSTEIN_AUDIT_KEY_PATH="$D/audit.key" "$BERNSTEIN" run plan.yaml \
	>"$T/bg.out" 2>"$T/bg.err" </dev/null) &
BG=$!
i=0
started=
while [ "$i" -lt 600 ]; do
	# shellcheck disable=SC2012 # names bernstein made
	started=$(ls "$W"/.bernstein/worktrees/*/gate-started 2>/dev/null | head -n 1)
	[ -n "$started" ] && break
	kill -0 "$BG" 2>/dev/null || break
	i=$((i + 1))
	sleep 0.1
done
check "bwrap: the gate started" test -n "$started"
[ -n "$started" ] || { _diag_file stdout "$T/bg.out"; _diag_file stderr "$T/bg.err"; }
kill -9 "$BG" 2>/dev/null
wait "$BG" 2>/dev/null
tree=${started%/gate-started}
check "bwrap: the gate ran once" test "$(cat "$tree/runs" 2>/dev/null)" = 1
# a PATH with git and the shell's tools, without bwrap
mkdir -p "$T/nobwrap"
for p in git sh cat sleep touch; do ln -s "$(command -v "$p")" "$T/nobwrap/$p"; done
bw "$T/nobwrap" resume
check "bwrap: resume fails (exit $RC)" test "$RC" -eq 1
refused bwrap
check "bwrap: status says bwrap is not on PATH" \
	sh -c "printf '%s' \"\$1\" | grep -q 'bwrap'" sh "$why"
check "bwrap: the gate did not run again" test "$(cat "$tree/runs" 2>/dev/null)" = 1
test_done
