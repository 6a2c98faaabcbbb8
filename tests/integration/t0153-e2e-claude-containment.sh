#!/bin/sh
# Issue #15: nothing the real claude CLI starts outlives its task. The pinned
# claude (tests/agents/) is driven against tests/helpers/fake-llm.py, whose
# script makes its Bash tool start a writer that detaches (setsid, its output
# elsewhere, in the background) and keeps appending to beat.txt in the task's
# tree, then run `sleep 300` so that the task stays busy. Then, each in a run
# of its own: kill -9 of bernstein and of its group keeper, the task's
# timeout, a cancel (SIGINT to `bernstein run`) and, in the auto tier,
# `bernstein cancel TASK` from another shell. After each, not one process
# is left whose argv holds the writer's marker or whose working directory is the task's tree, and
# beat.txt stops growing. In the tier sandbox: auto gives claude here (the
# container as root, where crun or runc works) and with sandbox: none
# (bernstein's own containment alone). T0153_TIERS limits the tiers;
# T0153_CONTAIN=pgroup caps bernstein's containment (BERNSTEIN_CONTAIN), and
# then sandbox: none fails: the detached writer outlives kill -9.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: the real claude's detached children do not outlive its task"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

require_agents

BGPID=
# the writer's marker: its $0, unique to this test's directory
MARK="t0153-writer-$(basename "$T")"

# marked: the pids whose argv holds MARK (the glob is expanded before grep is
# forked, so grep, whose argv holds MARK too, never lists itself)
marked()
{
	set -- /proc/[0-9]*/cmdline
	grep -lsF -e "$MARK" "$@" | sed -e 's#^/proc/##' -e 's#/cmdline$##'
}

# in_tree DIR: the pids whose working directory is DIR or beneath it
in_tree()
{
	for _c in /proc/[0-9]*/cwd; do
		_d=$(readlink "$_c" 2>/dev/null) || continue
		case $_d in
		"$1" | "$1"/*) _p=${_c#/proc/} && echo "${_p%/cwd}" ;;
		esac
	done
}

_t0153_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	for _p in $(marked); do
		kill -9 "$_p" 2>/dev/null
	done
	_runner_cleanup
}
trap _t0153_cleanup EXIT

# wait_until EXPR: poll EXPR (a shell condition) for at most 60 s
wait_until()
{
	_end=$(($(date +%s) + 60))
	while ! eval "$1"; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.1
	done
	return 0
}

# not_growing FILE: its size is the same after a look longer than the
# writer's period (0.2 s); gone with the task's tree, it stays gone
not_growing()
{
	_s1=$(wc -c <"$1" 2>/dev/null || echo gone)
	sleep 1 # observing, not synchronising
	test "$(wc -c <"$1" 2>/dev/null || echo gone)" = "$_s1"
}

# keeper_of PID: bernstein's group keeper (its forked copy: a child named
# bernstein)
keeper_of()
{
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v b="$1" '{
		r = $0; sub(/^[^(]*\(/, "", r); c = r; sub(/\).*$/, "", c)
		sub(/^.*\) /, "", r); split(r, f, " ")
		if (f[2] == b && c == "bernstein") print $1 }'
}

cat >"$T/dflt.py" <<'EOF'
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
EOF

# The fake model's script: the Bash tool starts the detached writer, then
# sleeps; the model's last word (never reached) says it is done.
cat >"$T/script.json" <<EOF
{"side": {"text": "Title"},
 "responses": [
  {"tool_calls": [{"name": "Bash", "id": "toolu_w_1", "arguments": {"command": "setsid sh -c 'while :; do date >> beat.txt; sleep 0.2; done' $MARK >/dev/null 2>&1 </dev/null &", "description": "start the writer"}}]},
  {"tool_calls": [{"name": "Bash", "id": "toolu_w_2", "arguments": {"command": "sh -c 'sleep 300' wait", "description": "wait", "timeout": 600000}}]}],
 "default": {"text": "Done."}}
EOF

# scenario TIER END: one run of the task in TIER, ended by END (kill, timeout
# or cancel), then nothing of it is left
scenario()
{
	tier=$1 end=$2
	W=$T/$tier-$end
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	timeout=600
	[ "$end" = timeout ] && timeout=20
	printf 'adapter: claude\nparallel: 1\ntimeout: %s\nkill_grace: 2\nretry_backoff: 0\nmax_retries: 0\n' \
		"$timeout" >"$W/bernstein.yaml"
	[ "$tier" != auto ] && printf 'sandbox: %s\n' "$tier" >>"$W/bernstein.yaml"
	fake_start "$T/script.json"
	cat >"$W/plan.yaml" <<EOF
name: writer
tasks:
  - title: writer
    sampling: {base_url: "http://127.0.0.1:$FAKE_PORT", api_key_env: ANTHROPIC_API_KEY}
    prompt: start the writer, then wait
EOF
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1
	(cd "$W" && exec env -i PATH="$E2E_BIN:/usr/bin:/bin:/usr/sbin:/sbin" HOME="$T/home" \
		LC_ALL=C.UTF-8 TZ=UTC ANTHROPIC_API_KEY=e2e-dummy-key \
		BERNSTEIN_AUDIT_KEY_PATH="$T/audit.key" ${T0153_CONTAIN:+BERNSTEIN_CONTAIN=$T0153_CONTAIN} \
		/usr/bin/python3 "$T/dflt.py" \
		"$BERNSTEIN" run plan.yaml) </dev/null >"$W.out" 2>"$W.err" &
	BGPID=$!
	if ! wait_until 'ls "$W"/.bernstein/worktrees/writer-*/beat.txt >/dev/null 2>&1 &&
		[ -s "$(ls "$W"/.bernstein/worktrees/writer-*/beat.txt | head -n 1)" ]'; then
		not_ok "$tier, $end: claude's Bash tool started the writer"
		_diag_file stderr "$W.err"
		for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file agent.log "$f"; done
		kill -9 "$BGPID" 2>/dev/null
		wait "$BGPID" 2>/dev/null
		BGPID=
		fake_stop
		return
	fi
	ok "$tier, $end: claude's Bash tool started the writer"
	tree=$(ls -d "$W"/.bernstein/worktrees/writer-* | head -n 1)
	beat=$tree/beat.txt
	check "$tier, $end: the writer runs, detached, with its marker" test -n "$(marked)"
	case $end in
	kill)
		_k=$(keeper_of "$BGPID")
		check "$tier, kill: bernstein has a group keeper" test -n "$_k"
		# shellcheck disable=SC2086 # _k: pids
		kill -9 $_k "$BGPID" # the keeper first: it must not get to act
		wait "$BGPID" 2>/dev/null
		;;
	timeout)
		wait "$BGPID"
		_rc=$?
		check "$tier, timeout: the run fails (exit 1)" test "$_rc" -eq 1
		run env -i PATH=/usr/bin:/bin HOME="$T/home" "$BERNSTEIN" -C "$W" status --json
		check "$tier, timeout: the task timed out" grep -q 'timed_out' "$T/stdout"
		diag "$tier: the task ran in sandbox tier $(python3 -c "import json; print(json.load(open('$T/stdout'))['tasks'][0]['sandbox'])")"
		[ "$_rc" -eq 1 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$W.err"; }
		;;
	cancel)
		kill -INT "$BGPID"
		wait "$BGPID"
		check "$tier, cancel: bernstein run exits 130" test "$?" -eq 130
		;;
	task-cancel)
		run env -i PATH=/usr/bin:/bin HOME="$T/home" BERNSTEIN_AUDIT_KEY_PATH="$T/audit.key" \
			"$BERNSTEIN" -C "$W" cancel writer
		check "$tier, task-cancel: bernstein cancel from another shell is taken" test "$RC" -eq 0
		[ "$RC" -eq 0 ] || _diag_file stderr "$T/stderr"
		wait "$BGPID"
		check "$tier, task-cancel: the run ends (exit 1: its task cancelled)" test "$?" -eq 1
		run env -i PATH=/usr/bin:/bin HOME="$T/home" "$BERNSTEIN" -C "$W" status --json
		check "$tier, task-cancel: the task is cancelled" grep -q '"state": "cancelled"' "$T/stdout"
		;;
	esac
	BGPID=
	check "$tier, $end: no process with the writer's argv is left" wait_until '[ -z "$(marked)" ]'
	check "$tier, $end: no process works in the task's tree" wait_until '[ -z "$(in_tree "$tree")" ]'
	check "$tier, $end: beat.txt stopped growing" not_growing "$beat"
	fake_stop
}

for tier in ${T0153_TIERS:-none auto}; do
	# `bernstein cancel TASK` (issue #18) in one tier: CI time
	ends="kill timeout cancel"
	[ "$tier" = auto ] && ends="$ends task-cancel"
	for end in $ends; do
		scenario "$tier" "$end"
	done
done
test_done
