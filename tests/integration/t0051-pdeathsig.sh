#!/bin/sh
# The shim's parent-death signal: when the process that started
# `bernstein shim -- AGENT` is SIGKILLed, the agent dies with it (the
# supervisor case is in tests/unit/test-supervise.c, test_pdeathsig).
. "$SRCDIR/tests/integration/lib.sh"

: "${FAKE_AGENT:?FAKE_AGENT must name tests/helpers/fake-agent}"

test_begin "t0051 shim pdeathsig"

# shellcheck disable=SC2317 # called through wait_for
# gone PID: the process no longer exists or is a zombie (dead, not reaped yet).
gone()
{
	[ -r "/proc/$1/stat" ] || return 0
	_st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -z "$_st" ] || [ "$_st" = Z ] || [ "$_st" = X ]
}

# wait_for DESC SECONDS CMD...: poll CMD every 50 ms until it succeeds.
wait_for()
{
	_desc=$1
	_left=$(($2 * 20))
	shift 2
	while ! "$@"; do
		_left=$((_left - 1))
		if [ "$_left" -le 0 ]; then
			return 1
		fi
		sleep 0.05
	done
	return 0
}

# shellcheck disable=SC2317 # called through wait_for
has_ids()
{
	grep -q '^ids ' "$T/ids" 2>/dev/null
}

# The parent: a shell that runs the shim in the foreground (the trailing echo
# keeps it from exec'ing the shim itself).
# shellcheck disable=SC2016 # $1..$3 are expanded by the inner sh
env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 \
	sh -c '"$1" shim -- "$2" dump-ids sleep 60000 >"$3"; echo parent-survived' \
	parent "$BERNSTEIN" "$FAKE_AGENT" "$T/ids" </dev/null >"$T/parent.out" 2>&1 &
parent=$!

if wait_for "agent started" 20 has_ids; then
	ok "the agent started under the shim"
else
	not_ok "the agent started under the shim"
	kill -9 "$parent" 2>/dev/null
	test_done
fi
agent=$(sed -n 's/^ids pid=\([0-9]*\) ppid=\([0-9]*\) .*/\1/p' "$T/ids")
agent_ppid=$(sed -n 's/^ids pid=\([0-9]*\) ppid=\([0-9]*\) .*/\2/p' "$T/ids")
check "the agent's parent is the shell (the shim exec'd in place)" test "$agent_ppid" = "$parent"
check "the agent is alive before" kill -0 "$agent"

kill -9 "$parent"
wait "$parent" 2>/dev/null
if wait_for "agent gone" 5 gone "$agent"; then
	ok "SIGKILL of the parent takes the agent within 5 s"
else
	not_ok "SIGKILL of the parent takes the agent within 5 s"
	diag "agent $agent still alive: $(cat "/proc/$agent/stat" 2>/dev/null)"
	kill -9 "$agent" 2>/dev/null
fi
check "the parent did not get to run on" test ! -s "$T/parent.out"

test_done
