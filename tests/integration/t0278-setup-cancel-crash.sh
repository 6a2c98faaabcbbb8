#!/bin/sh
# worktree_setup.setup_command under the supervisor (issue #19), while it
# runs:
# 1. `bernstein cancel` from another shell stops it (its whole tree, a
#    grandchild that ignores SIGTERM included): the task is cancelled, its
#    agent never ran.
# 2. bernstein killed with -9: the command dies with it; the task is still
#    pending (no attempt recorded), and `bernstein resume` runs the setup
#    again, then the agent: done.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0278 worktree_setup.setup_command: cancel and kill -9 while it runs"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
BGPID=

_t0278_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	for _p in $(grep -lsF -e "$T/spin.sh" /proc/[0-9]*/cmdline | sed -e 's#^/proc/##' -e 's#/cmdline$##'); do
		kill -9 "$_p" 2>/dev/null
	done
	_lib_cleanup
}
trap _t0278_cleanup EXIT

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

_san=""
[ -n "${ASAN_OPTIONS:-}" ] && _san="$_san ASAN_OPTIONS=$ASAN_OPTIONS"
[ -n "${UBSAN_OPTIONS:-}" ] && _san="$_san UBSAN_OPTIONS=$UBSAN_OPTIONS"
[ -n "${LSAN_OPTIONS:-}" ] && _san="$_san LSAN_OPTIONS=$LSAN_OPTIONS"
bg_run() {
	# shellcheck disable=SC2086 # _san: words without blanks
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" $_san \
		"$BERNSTEIN" "$@") </dev/null >"$T/run.out" 2>"$T/run.err" &
	BGPID=$!
}

task_state() {
	run "$KEY" "$BERNSTEIN" status --json
	python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["tasks"][0]["state"])' "$T/stdout"
}

# the setup: a grandchild in a session of its own that ignores TERM and
# HUP, and itself, beating into files until $T/go exists
cat >"$T/spin.sh" <<'EOF'
trap '' TERM HUP
while [ ! -e "$2" ]; do echo x >>"$1"; sleep 0.02; done
EOF
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<EOF
adapter: shell
kill_grace: 1
retry_backoff: 0
max_retries: 0
worktree_setup:
  setup_command: "echo x >> $T/setups; setsid sh $T/spin.sh $T/grand.beat $T/go & sh $T/spin.sh $T/setup.beat $T/go"
EOF
printf 'name: t\ntasks:\n  - title: work\n    prompt: "echo ran > agent-ran.txt"\n' >"$W/plan.yaml"
git_q add -A
git_q commit -q -m base

# 1. cancel
bg_run run plan.yaml
check "cancel: the setup command runs" wait_until '[ -s "$T/grand.beat" ] && [ -s "$T/setup.beat" ]'
check "cancel: the task is pending meanwhile" test "$(task_state)" = pending
expect_exit 0 "$KEY" "$BERNSTEIN" cancel work
expect_stdout_contains "work: cancelled"
check "cancel: nothing of the setup's tree is left" wait_no_procs "$T/spin.sh" 10
wait "$BGPID"
RUNRC=$?
BGPID=
check "cancel: the run exits 1 (got $RUNRC)" test "$RUNRC" -eq 1
check "cancel: the task is cancelled" test "$(task_state)" = cancelled
check "cancel: the agent never ran" sh -c "! ls '$W'/.bernstein/worktrees/*/agent-ran.txt 2>/dev/null | grep -q ."

# 2. kill -9, then resume
rm -f "$T/setups" "$T/grand.beat" "$T/setup.beat"
bg_run run plan.yaml
check "kill: the setup command runs" wait_until '[ -s "$T/grand.beat" ] && [ -s "$T/setup.beat" ]'
kill -9 "$BGPID"
wait "$BGPID" 2>/dev/null
BGPID=
check "kill: the setup's tree died with bernstein" wait_no_procs "$T/spin.sh" 10
check "kill: the task is still pending" test "$(task_state)" = pending
touch "$T/go"
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$KEY' '$BERNSTEIN' resume"
check "resume: exit 0 (got $RC)" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "resume: the setup ran again" test "$(wc -l <"$T/setups")" -eq 2
check "resume: the task is done" test "$(task_state)" = done
check "resume: the agent ran" test -f "$W/agent-ran.txt"

test_done
