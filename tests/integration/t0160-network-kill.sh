#!/bin/sh
# What network: llm starts is contained (issue #15): the proxy (`bernstein
# netproxy`, outside the sandbox), the bridge (inside, started by the shim)
# and the agent do not outlive bernstein. A script agent in llm mode runs
# in bwrap (and, as root, in a container) until bernstein and its group
# keeper are killed with SIGKILL; then no process of the task is left (the
# proxy, the sandbox's runtime, the bridge, the agent) and the proxy's
# socket accepts no connection. The same after a cancel (SIGINT) in bwrap.
# Skipped without Landlock or bwrap.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0160 network: llm leaves nothing behind"

require_landlock
require_bwrap

BGPID=
MARK="t0160-marker-$(basename "$T")"
# marked: the pids whose argv holds MARK (the agent's prompt: the shim,
# the bridge, the agent; in bwrap the proxy and bwrap too) or the test's
# directory (the proxy's socket, bwrap's binds, the container's bundle);
# the glob is expanded before grep is forked, so grep never lists itself
marked()
{
	set -- /proc/[0-9]*/cmdline
	grep -lsF -e "$MARK" -e "$T/" "$@" | sed -e 's#^/proc/##' -e 's#/cmdline$##'
}
_t0160_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	for _p in $(marked); do kill -9 "$_p" 2>/dev/null; done
	_lib_cleanup
}
trap _t0160_cleanup EXIT

wait_until()
{
	_end=$(($(date +%s) + 15))
	while ! eval "$1"; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.05
	done
	return 0
}

# children of pid $1 named bernstein that are not the proxy: its keeper
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
		[ "$2" = "$1" ] || [ "$2" = "$BGPARENT" ] || continue
		[ "$_c" = bernstein ] || continue
		grep -qF netproxy "/proc/$_pid/cmdline" 2>/dev/null && continue
		echo "$_pid"
	done
}

# setup DIR: a repository whose shell agent sleeps in llm mode
setup()
{
	W=$1
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	shell_agent "$W"
	cat >>"$W/.bernstein/catalog/profiles/shell.yaml" <<-'EOF'
	  supports_endpoint: true
	runtime:
	  endpoint:
	    env: {AGENT_BASE_URL: "{base_url}"}
	EOF
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\nnetwork: llm\ntimeout: 100\n' \
		"${2:-bwrap}" >"$W/bernstein.yaml"
	cat >"$W/plan.yaml" <<-EOF
	name: kill
	tasks:
	  - title: sleeper
	    sampling: {base_url: "http://127.0.0.1:9/v1"}
	    prompt: |
	      : $MARK
	      echo up > started.txt
	      while :; do sleep 1; done
	EOF
	git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

start_bg()
{
	_san=""
	[ -n "${ASAN_OPTIONS:-}" ] && _san="$_san ASAN_OPTIONS=$ASAN_OPTIONS"
	[ -n "${UBSAN_OPTIONS:-}" ] && _san="$_san UBSAN_OPTIONS=$UBSAN_OPTIONS"
	[ -n "${LSAN_OPTIONS:-}" ] && _san="$_san LSAN_OPTIONS=$LSAN_OPTIONS"
	# shellcheck disable=SC2086 # _san: words without blanks
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC $_san \
		"$BERNSTEIN" "$@") </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BGPID=$!
}

# the proxy, the bridge and the agent are running; their socket
running()
{
	check "$1: the agent runs" wait_until 'ls "$W"/.bernstein/worktrees/*/started.txt >/dev/null 2>&1'
	SOCK=$(ls "$W"/.bernstein/runs/*/*/1/net.sock 2>/dev/null | tail -n 1)
	check "$1: the proxy listens on its socket" test -S "$SOCK"
	_np=0 _br=0
	for _p in $(marked); do
		if grep -qF netproxy "/proc/$_p/cmdline" 2>/dev/null; then _np=$((_np + 1)); fi
		if grep -qF -- --net-socket "/proc/$_p/cmdline" 2>/dev/null &&
			! grep -qF -e bwrap -e netproxy "/proc/$_p/cmdline" 2>/dev/null; then
			_br=$((_br + 1))
		fi
	done
	check "$1: the proxy runs" test "$_np" -ge 1
	check "$1: the bridge runs (the shim's fork, in the sandbox)" test "$_br" -ge 1
}

connect_fails()
{
	"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
try:
    s.connect(sys.argv[1])
except OSError:
    sys.exit(0)
sys.exit(1)' "$1"
}

# ---- kill -9 of bernstein and its keeper ----
n=0
for tier in bwrap container; do
	if [ "$tier" = container ] &&
		{ [ "$(id -u)" -ne 0 ] || { ! command -v crun && ! command -v runc; } >/dev/null 2>&1; }; then
		skip "$tier: kill -9" "the container tier needs root and crun or runc"
		continue
	fi
	n=$((n + 1))
	setup "$T/kill-$n" "$tier" # no tier name in the path: 'bwrap' is looked for
	start_bg run plan.yaml
	BGPARENT=$BGPID
	running "$tier: kill -9"
	_k=$(keeper_of "$BGPID")
	# shellcheck disable=SC2086 # _k: pids
	kill -9 $_k "$BGPID" # the keeper first: it must not get to act
	wait "$BGPID" 2>/dev/null
	BGPID=
	check "$tier: kill -9: no process of the task is left" wait_until '[ -z "$(marked)" ]'
	check "$tier: kill -9: the proxy's socket accepts no connection" connect_fails "$SOCK"
done

# ---- a cancel (SIGINT) ----
setup "$T/cancel"
start_bg run plan.yaml
running "cancel"
kill -INT "$BGPID"
wait "$BGPID"
_rc=$?
BGPID=
check "cancel: exit 130" test "$_rc" -eq 130
check "cancel: no process of the task is left" wait_until '[ -z "$(marked)" ]'
test_done
