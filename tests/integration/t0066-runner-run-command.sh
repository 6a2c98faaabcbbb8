#!/bin/sh
# Issue #14: run_command's deny-list is not a boundary, and nothing a command
# starts may outlive it. The command here (fake-agent daemon) double-forks,
# calls setsid, ignores SIGTERM and SIGHUP and keeps appending to a file, as
# a grandchild and a great-grandchild in a session of its own. Once the tool
# returns (the runner has asked the model again), not one of them is left and
# the file stops growing; the same when the runner is sent SIGTERM while the
# command runs; and after SIGKILL of the runner (the command is the init of a
# PID namespace of its own, with the runner's death as its parent-death
# signal: issue #15, docs/supervision.md).
# Processes are found by an argv marker unique to the test (the beat file's
# path), never by a name.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0066 runner run_command leaves nothing running"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

: "${FAKE_AGENT:?FAKE_AGENT must name the fake-agent binary}"
HELPERS=$(dirname "$FAKE_AGENT")

# marked MARK: the pids whose argv holds MARK (the glob is expanded before
# grep is forked, so grep, whose argv holds MARK too, never lists itself)
marked()
{
	_m=$1
	set -- /proc/[0-9]*/cmdline
	grep -lsF -e "$_m" "$@" | sed -e 's#^/proc/##' -e 's#/cmdline$##'
}

kill_marked()
{
	for _k in $(marked "$1"); do
		kill -9 "$_k" 2>/dev/null
	done
}

_t0066_cleanup()
{
	for _m in beat1 beat2 beat3; do
		kill_marked "$T/$_m"
	done
	[ -n "${RPID:-}" ] && kill -9 "$RPID" 2>/dev/null
	_runner_cleanup
}
trap _t0066_cleanup EXIT

# wait_until EXPR: poll EXPR (a shell condition) for at most 15 s
wait_until()
{
	_i=0
	while ! eval "$1"; do
		_i=$((_i + 1))
		[ "$_i" -gt 300 ] && return 1
		sleep 0.05
	done
	return 0
}

# start_runner: the runner in the background, with the operator's opt-in
start_runner()
{
	_san=""
	[ -n "${ASAN_OPTIONS:-}" ] && _san="$_san ASAN_OPTIONS=$ASAN_OPTIONS"
	[ -n "${UBSAN_OPTIONS:-}" ] && _san="$_san UBSAN_OPTIONS=$UBSAN_OPTIONS"
	# shellcheck disable=SC2086 # the sanitizer words contain no spaces
	(cd "$T/work" && exec env -i PATH="$HELPERS:/usr/bin:/bin" HOME="$T/home" LC_ALL=C.UTF-8 \
		TZ=UTC BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 $_san "$BERNSTEIN" runner \
		--manifest "$T/m.json") </dev/null >"$T/stdout" 2>"$T/stderr" &
	RPID=$!
}

# not_growing FILE: its size is the same after a short look (the writers ran
# every 10 ms)
not_growing()
{
	_s1=$(wc -c <"$1")
	sleep 0.3 # observing, not synchronising
	test "$(wc -c <"$1")" -eq "$_s1"
}

# ---- the tool returns: everything the command started is gone ----
cat >"$T/s1.json" <<EOF
[{"tool_calls": [{"id": "d", "name": "run_command", "arguments": {"argv": ["fake-agent", "daemon", "$T/beat1"]}}]},
 {"text": "done", "delay": 2}]
EOF
fake_start "$T/s1.json"
write_manifest "$T/m.json" '{"session_id": "rc1", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
start_runner
check "the command ran and the runner asked the model again" \
	wait_until '[ "$(nreq)" -ge 2 ] && [ -s "$T/beat1" ]'
check "when the tool returned, none of its processes was left" \
	test -z "$(marked "$T/beat1")"
check "and the file they wrote stopped growing" not_growing "$T/beat1"
wait "$RPID" 2>/dev/null
check "the runner finished with exit 0" test $? -eq 0
RPID=
jcheck "run_command's result is ok" 'ev("tool_result")[0]["status"] == "ok"'

# ---- SIGTERM to the runner while the command runs ----
cat >"$T/s2.json" <<EOF
[{"tool_calls": [{"id": "d", "name": "run_command", "arguments": {"argv": ["fake-agent", "daemon", "$T/beat2", "sleep", "60000"]}}]},
 {"text": "done"}]
EOF
fake_start "$T/s2.json"
write_manifest "$T/m.json" '{"session_id": "rc2", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
start_runner
check "the command started its escapees" wait_until '[ -s "$T/beat2" ]'
kill -TERM "$RPID"
wait "$RPID" 2>/dev/null
check "the runner died of the SIGTERM" test $? -eq 143
RPID=
check "after SIGTERM, none of the command's processes was left" test -z "$(marked "$T/beat2")"
check "and the file stopped growing" not_growing "$T/beat2"

# ---- SIGKILL of the runner: the command's PID namespace dies with it ----
cat >"$T/s3.json" <<EOF
[{"tool_calls": [{"id": "d", "name": "run_command", "arguments": {"argv": ["fake-agent", "daemon", "$T/beat3", "sleep", "60000"]}}]},
 {"text": "done"}]
EOF
fake_start "$T/s3.json"
write_manifest "$T/m.json" '{"session_id": "rc3", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
start_runner
check "the command started its escapees" wait_until '[ -s "$T/beat3" ]'
kill -KILL "$RPID"
wait "$RPID" 2>/dev/null
RPID=
check "after SIGKILL, none of the command's processes was left" \
	wait_until '[ -z "$(marked "$T/beat3")" ]'
check "and the file stopped growing" not_growing "$T/beat3"
test_done
