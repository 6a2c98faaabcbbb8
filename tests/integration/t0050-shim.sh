#!/bin/sh
# bernstein shim on its own: it execs the program in place with the same
# environment, exit codes 127/126/125 with one-line messages, rlimits, fds
# above 2 closed, default signal dispositions, the parent-pid race check and
# Landlock (read-write only inside the allowed directory).
. "$SRCDIR/tests/integration/lib.sh"

: "${FAKE_AGENT:?FAKE_AGENT must name tests/helpers/fake-agent}"

test_begin "t0050 bernstein shim"

# ---- exec in place ----
expect_exit 0 "$BERNSTEIN" shim -- /bin/echo hi
expect_stdout_contains "hi"
expect_lines stdout 1 "echo: one line"
expect_stderr_empty "echo: nothing on stderr"

expect_exit 0 "$BERNSTEIN" shim -- echo found on PATH
expect_stdout_contains "found on PATH" "a bare name is looked up on PATH"

expect_exit 3 "$BERNSTEIN" shim -- "$FAKE_AGENT" emit one exit 3
expect_stdout_contains "one" "the program's exit code is the shim's"

# The pid does not change: the shim is the agent (no wrapper stays).
run "$BERNSTEIN" shim -- "$FAKE_AGENT" dump-ids
check "the agent's parent is the shim's parent (no wrapper)" \
	grep -qE '^ids pid=[0-9]+ ppid=[0-9]+ pgid=[0-9]+ sid=[0-9]+$' "$T/stdout"

# The environment passes through unchanged, nothing added or removed.
run FOO=bar /usr/bin/env
sort "$T/stdout" >"$T/env.want"
run FOO=bar "$BERNSTEIN" shim -- "$FAKE_AGENT" dump-env
sort "$T/stdout" >"$T/env.got"
expect_same_file "$T/env.want" "$T/env.got" "environment passed through exactly"
check "the environment is not empty" grep -q '^FOO=bar$' "$T/env.got"

# argv passes through unchanged, words with spaces and empty words included.
expect_exit 0 "$BERNSTEIN" shim -- "$FAKE_AGENT" dump-argv emit "two  words" emit ""
printf '%s\n' "$FAKE_AGENT" dump-argv emit "two  words" emit "" "two  words" "" >"$T/argv.want"
expect_same_file "$T/argv.want" "$T/stdout" "argv passed through exactly"

# fake-agent's directive file (-f): one directive a line, # comments.
printf '# a script\nemit {"a": 1}\nstderr oops\nwrite-file script.out hello world\nexit 4\nemit never\n' \
	>"$T/work/script"
expect_exit 4 "$BERNSTEIN" shim -- "$FAKE_AGENT" -f script
check "-f: stdout" test "$(cat "$T/stdout")" = '{"a": 1}
write-file script.out ok'
check "-f: stderr" test "$(cat "$T/stderr")" = "oops"
check "-f: the file was written" test "$(cat "$T/work/script.out")" = "hello world"

# ---- exit codes and messages ----
expect_exit 127 "$BERNSTEIN" shim -- /nonexistent/agent
check "127: one-line message" test "$(cat "$T/stderr")" = \
	"bernstein shim: cannot execute '/nonexistent/agent': No such file or directory"
expect_stdout_empty "127: nothing on stdout"

expect_exit 127 "$BERNSTEIN" shim -- no-such-agent-anywhere
check "127 for a bare name not on PATH" test "$(cat "$T/stderr")" = \
	"bernstein shim: cannot execute 'no-such-agent-anywhere': No such file or directory"

printf '#!/bin/sh\necho should not run\n' >"$T/work/noexec"
chmod 644 "$T/work/noexec"
expect_exit 126 "$BERNSTEIN" shim -- "$T/work/noexec"
check "126: one-line message" test "$(cat "$T/stderr")" = \
	"bernstein shim: cannot execute '$T/work/noexec': Permission denied"

expect_exit 2 "$BERNSTEIN" shim
expect_stderr_contains "missing the program to run"
expect_exit 2 "$BERNSTEIN" shim --rlimit-nofile many -- /bin/true
expect_stderr_contains "--rlimit-nofile: 'many' is not a number"
expect_exit 2 "$BERNSTEIN" shim --bogus -- /bin/true
expect_stderr_contains "unknown option '--bogus'"
expect_exit 2 "$BERNSTEIN" shim --status-fd 99 -- /bin/true
expect_stderr_contains "--status-fd: '99' is not an open fd"

# help and -h are the same text
expect_exit 0 "$BERNSTEIN" help shim
cp "$T/stdout" "$T/help-shim"
expect_exit 0 "$BERNSTEIN" shim -h
expect_same_file "$T/help-shim" "$T/stdout" "'help shim' == 'shim -h'"
check "help names the exit codes" grep -q "127 not found, 126 cannot be executed" "$T/help-shim"

# ---- rlimits ----
expect_exit 0 "$BERNSTEIN" shim --rlimit-nofile 16 -- "$FAKE_AGENT" dump-rlimit nofile
check "--rlimit-nofile 16: soft and hard" test "$(cat "$T/stdout")" = "rlimit nofile 16 16"

# /bin/cat, not fake-agent: an ASan build cannot start under a small RLIMIT_AS.
expect_exit 0 "$BERNSTEIN" shim --rlimit-as 1073741824 --rlimit-core 0 --rlimit-cpu 30 \
	-- /bin/cat /proc/self/limits
check "--rlimit-as" grep -qE '^Max address space +1073741824 +1073741824 +bytes' "$T/stdout"
check "--rlimit-core 0" grep -qE '^Max core file size +0 +0 +bytes' "$T/stdout"
check "--rlimit-cpu" grep -qE '^Max cpu time +30 +30 +seconds' "$T/stdout"

expect_exit 0 "$BERNSTEIN" shim --rlimit-fsize unlimited -- "$FAKE_AGENT" dump-rlimit fsize
check "'unlimited' is accepted" test "$(cat "$T/stdout")" = "rlimit fsize unlimited unlimited"

# ---- fds, signals ----
exec 7</dev/null # leaked into the command, without close-on-exec
expect_exit 0 "$BERNSTEIN" shim -- "$FAKE_AGENT" dump-fds
check "only fds 0 1 2 reach the agent" test "$(cat "$T/stdout")" = "fds 0 1 2"
exec 7<&-

# bernstein ignores SIGPIPE itself; the agent must not inherit that.
expect_exit 0 "$BERNSTEIN" shim -- "$FAKE_AGENT" dump-signals
check "default dispositions, empty mask" test "$(cat "$T/stdout")" = \
	"signals blocked=0000000000000000 ignored=0000000000000000"

# ---- the parent-pid race check: a parent that is not ours means it died ----
expect_exit 137 "$BERNSTEIN" shim --parent-pid 1 -- /bin/echo must not run
expect_stdout_empty "a wrong parent pid: killed before exec"

# ---- Landlock ----
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -eq 125 ] && grep -q "not supported" "$T/stderr"; then
	skip "landlock" "the kernel reports Landlock unsupported: $(cat "$T/stderr")"
else
	check "landlock: a read-only whole tree runs /bin/true" test "$RC" -eq 0
	mkdir "$T/work/allowed"
	expect_exit 0 "$BERNSTEIN" shim --landlock-rw "$T/work/allowed" --landlock-ro / -- \
		"$FAKE_AGENT" write-file "$T/work/allowed/f" inside \
		write-file "$T/work/outside" outside
	expect_stdout_contains "write-file $T/work/allowed/f ok" "landlock: write inside works"
	expect_stdout_contains "write-file $T/work/outside error EACCES" \
		"landlock: write outside fails with EACCES"
	check "landlock: the file inside has its content" test "$(cat "$T/work/allowed/f")" = inside
	check "landlock: nothing was created outside" test ! -e "$T/work/outside"

	# Without an execute right on /bin the agent cannot even start.
	expect_exit 126 "$BERNSTEIN" shim --landlock-rw "$T/work/allowed" -- /bin/echo no
	check "landlock: exec denied is 126" test "$(cat "$T/stderr")" = \
		"bernstein shim: cannot execute '/bin/echo': Permission denied"

	expect_exit 125 "$BERNSTEIN" shim --landlock-rw /nonexistent/dir -- /bin/true
	check "landlock: a missing directory is a set-up error (125)" test "$(cat "$T/stderr")" = \
		"bernstein shim: landlock: cannot open read-write path '/nonexistent/dir': No such file or directory"
fi

# ---- --init: the rest of the namespace gets SIGTERM and the grace ----
expect_exit 2 "$BERNSTEIN" shim --grace-ms 10 -- /bin/true
check "--grace-ms without --init: a usage error" grep -q "go with --init" "$T/stderr"
expect_exit 2 "$BERNSTEIN" shim --init --grace-ms soon -- /bin/true
check "--grace-ms: not a number, a usage error" grep -q "not a number of ms" "$T/stderr"
# outside a PID namespace (not pid 1) --grace-ms signals nothing: kill(-1)
# there would be every process of the user
sleep 30 &
CANARY=$!
expect_exit 0 "$BERNSTEIN" shim --init --grace-ms 200 -- /bin/true
check "--init --grace-ms outside a PID namespace: no other process signalled" kill -0 "$CANARY"
kill "$CANARY" 2>/dev/null
if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
	skip "--init as pid 1" "no PID namespace here (unshare --pid refused)"
else
	# the program leaves a child that traps TERM, works 300 ms, writes a
	# file; the program itself dies of SIGTERM: its status comes back on fd 3
	cat >"$T/left.sh" <<'EOF2'
( exec >/dev/null 2>&1 </dev/null
  trap 'sleep 0.3; echo flushed >"$1.out"; exit 0' TERM
  : >"$1.ready"
  while :; do sleep 0.02; done ) &
while [ ! -e "$1.ready" ]; do sleep 0.01; done
kill -TERM $$
EOF2
	run unshare --pid --fork --mount-proc "$BERNSTEIN" shim --init --grace-ms 20000 \
		--wait-status-fd 3 -- /bin/sh "$T/left.sh" "$T/left" 3>"$T/status.bin"
	check "--init as pid 1: the exit is the program's (128+15)" test "$RC" -eq 143
	check "--init as pid 1: what it left got SIGTERM and the time to finish" \
		grep -qx flushed "$T/left.out"
	check "--init as pid 1: the wait status says SIGTERM (signalled, not an exit)" \
		"$PY" -c 'import os, struct, sys; w = struct.unpack("i", open(sys.argv[1], "rb").read())[0]; sys.exit(0 if os.WIFSIGNALED(w) and os.WTERMSIG(w) == 15 else 1)' "$T/status.bin"
	# one that ignores TERM is SIGKILLed by the kernel when the grace ends
	cat >"$T/stubborn.sh" <<'EOF2'
sh -c 'trap "" TERM; exec >/dev/null 2>&1; echo $$ >"$0.pid"; exec sleep 6003' "$1" &
while [ ! -s "$1.pid" ]; do sleep 0.01; done
exit 0
EOF2
	run unshare --pid --fork --mount-proc "$BERNSTEIN" shim --init --grace-ms 300 -- \
		/bin/sh "$T/stubborn.sh" "$T/stubborn"
	check "--init as pid 1: the exit is the program's (0)" test "$RC" -eq 0
	check "--init as pid 1: a leftover that ignores TERM is gone after the grace" \
		sh -c '! pgrep -f "sleep [6]003" >/dev/null'
fi

test_done
