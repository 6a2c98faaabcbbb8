# Integration test library (POSIX sh, TAP output). Source it from a test:
#
#	. "$SRCDIR/tests/integration/lib.sh"
#	test_begin "cli basics"
#	expect_exit 0 "$BERNSTEIN" --version
#	expect_stdout_contains "bernstein "
#	test_done
#
# From the environment (tests/integration/meson.build sets them):
#   BERNSTEIN  the binary under test      SRCDIR  source root
#   BUILDDIR   build root
#
# Every command runs hermetically, from $T/work with stdin on /dev/null, as
#   env -i PATH=/usr/bin:/bin HOME=$T/home LC_ALL=C.UTF-8 TZ=UTC
#          XDG_CONFIG_HOME=$T/config [sanitizer options] CMD...
# (ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS are passed through when set, so
# an ASan build keeps the settings of scripts/run-tests.sh). Leading KEY=VALUE
# words of CMD add to that environment: `run FOO=1 "$BERNSTEIN" ...`.
# Each command is killed after $TEST_CMD_TIMEOUT seconds (default 60).
#
# After a command: $RC is its exit status, $T/stdout and $T/stderr its output.
# $T is this test's scratch directory, removed on exit.
#
# Functions:
#   test_begin DESCRIPTION         create $T, print a TAP comment
#   run CMD...                     run CMD, no TAP line
#   expect_exit CODE CMD...        run CMD; one TAP line: exit status == CODE
#   expect_stdout_contains TEXT [DESC]   fixed-string test on the last stdout
#   expect_stderr_contains TEXT [DESC]   ... on the last stderr
#   expect_stdout_empty [DESC] / expect_stderr_empty [DESC]
#   expect_lines STREAM N [DESC]   the last stdout|stderr has exactly N lines
#   expect_same_file A B DESC      byte-identical files (diff on failure)
#   check DESC CMD...              ok if CMD (run in the test shell, output
#                                  shown only on failure) succeeds
#   ok DESC / not_ok DESC / diag TEXT / skip DESC REASON
#   shell_agent DIR                the catalogue of repository DIR gains the
#                                  agent `shell`: `sh -c PROMPT`, the prompt
#                                  a shell script (8 workers, no resume)
#   procs_with_arg ARG             print how many live processes have an argv
#                                  element equal to ARG (a marker the test chose:
#                                  never a broad name; their pids may be those
#                                  of a PID namespace)
#   wait_no_procs ARG [SECONDS]    poll (default 10 s) until none has; status 0
#                                  when none is left
#   test_done                      print the plan 1..N; exit 1 if any failed

: "${BERNSTEIN:?BERNSTEIN must name the bernstein binary}"
: "${SRCDIR:?SRCDIR must name the source root}"
: "${BUILDDIR:=}"
: "${TEST_CMD_TIMEOUT:=60}"

# python3 in a test script is the system Python: a version manager's shim
# (pyenv's is a bash script running several processes) costs ten times the
# start-up, seconds per call on a loaded machine, and tests call it in loops.
if [ -x /usr/bin/python3 ]; then
	_lib_python=/usr/bin/python3
else
	_lib_python=$(command -v python3) || _lib_python=python3
fi
python3()
{
	"$_lib_python" "$@"
}
# $PY: the same, for scripts that name it (a test may set PY to its own).
PY=$_lib_python

_tap_n=0
_tap_failed=0
RC=0
T=

_lib_cleanup()
{
	if [ -n "$T" ] && [ -d "$T" ]; then
		chmod -R u+rwx "$T" 2>/dev/null
		rm -rf "$T"
	fi
}

test_begin()
{
	T=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-test.XXXXXX") || {
		echo "Bail out! cannot create a temp directory"
		exit 1
	}
	trap _lib_cleanup EXIT
	trap 'exit 130' INT TERM HUP
	mkdir -p "$T/home" "$T/config" "$T/work"
	: >"$T/stdout"
	: >"$T/stderr"
	echo "# $*"
	echo "# bernstein: $BERNSTEIN"
}

diag()
{
	printf '%s\n' "$*" | sed 's/^/# /'
}

# A test's description on one TAP line: a newline in it (an argument of
# the command it names) printed as \n, or the harness reads the rest as
# stray output. printf, not echo: dash's echo turns \n back into a newline.
_lib_nl='
'
_tap_line()
{
	_d=$2
	case $_d in
	*"$_lib_nl"*) _d=$(printf '%s' "$_d" | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }') ;;
	esac
	printf '%s - %s\n' "$1" "$_d"
}

ok()
{
	_tap_n=$((_tap_n + 1))
	_tap_line "ok $_tap_n" "$*"
}

not_ok()
{
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	_tap_line "not ok $_tap_n" "$*"
}

skip()
{
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $1 # SKIP ${2:-}"
}

# Prints a file as TAP comments, at most 20 lines.
_diag_file()
{
	if [ -s "$2" ]; then
		echo "# $1:"
		head -n 20 "$2" | sed 's/^/#   /'
	else
		echo "# $1: (empty)"
	fi
}

run()
{
	if [ -z "$T" ]; then
		echo "Bail out! run called before test_begin"
		exit 1
	fi
	_san=""
	[ -n "${ASAN_OPTIONS:-}" ] && _san="$_san ASAN_OPTIONS=$ASAN_OPTIONS"
	[ -n "${UBSAN_OPTIONS:-}" ] && _san="$_san UBSAN_OPTIONS=$UBSAN_OPTIONS"
	[ -n "${LSAN_OPTIONS:-}" ] && _san="$_san LSAN_OPTIONS=$LSAN_OPTIONS"
	# shellcheck disable=SC2086 # the sanitizer words contain no spaces
	(cd "$T/work" && exec timeout -k 5 "$TEST_CMD_TIMEOUT" env -i PATH=/usr/bin:/bin \
		HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC XDG_CONFIG_HOME="$T/config" $_san \
		"$@") </dev/null >"$T/stdout" 2>"$T/stderr"
	RC=$?
	[ "$RC" -eq 124 ] && diag "command timed out after ${TEST_CMD_TIMEOUT}s: $*"
	return 0
}

# The command line for test names: the binary path shortened to its name.
_cmdline()
{
	_cl=""
	for _a in "$@"; do
		[ "$_a" = "$BERNSTEIN" ] && _a=bernstein
		_cl="${_cl:+$_cl }$_a"
	done
	printf '%s' "$_cl"
}

expect_exit()
{
	_want=$1
	shift
	run "$@"
	if [ "$RC" -eq "$_want" ]; then
		ok "exit $_want: $(_cmdline "$@")"
	else
		not_ok "exit $_want: $(_cmdline "$@")"
		diag "got exit $RC"
		_diag_file stdout "$T/stdout"
		_diag_file stderr "$T/stderr"
	fi
}

# shellcheck disable=SC2016 # the single quotes are part of the message
_expect_contains()
{
	if grep -qF -e "$2" "$T/$1"; then
		ok "${3:-$1 contains '$2'}"
	else
		not_ok "${3:-$1 contains '$2'}"
		_diag_file "$1" "$T/$1"
	fi
}

expect_stdout_contains()
{
	_expect_contains stdout "$@"
}

expect_stderr_contains()
{
	_expect_contains stderr "$@"
}

_expect_empty()
{
	if [ ! -s "$T/$1" ]; then
		ok "${2:-$1 is empty}"
	else
		not_ok "${2:-$1 is empty}"
		_diag_file "$1" "$T/$1"
	fi
}

expect_stdout_empty()
{
	_expect_empty stdout "$@"
}

expect_stderr_empty()
{
	_expect_empty stderr "$@"
}

# A final line without a newline counts as a line.
expect_lines()
{
	_n=$(awk 'END { print NR }' "$T/$1")
	if [ "$_n" -eq "$2" ]; then
		ok "${3:-$1 has $2 lines}"
	else
		not_ok "${3:-$1 has $2 lines}"
		diag "got $_n lines"
		_diag_file "$1" "$T/$1"
	fi
}

expect_same_file()
{
	if cmp -s "$1" "$2"; then
		ok "$3"
	else
		not_ok "$3"
		diff -u "$1" "$2" | head -n 40 | sed 's/^/# /'
	fi
}

check()
{
	_desc=$1
	shift
	if "$@" >"$T/check.out" 2>&1; then
		ok "$_desc"
	else
		not_ok "$_desc"
		_diag_file output "$T/check.out"
	fi
}

# task_field ID FIELD: FIELD of task ID in `bernstein status --json` run in
# $T/work (the latest run), or nothing when either is missing or null.
# task_state ID: its state.
task_field()
{
	run "$BERNSTEIN" status --json
	/usr/bin/python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tasks"]:
    if t["id"] == sys.argv[2] and t.get(sys.argv[3]) is not None:
        print(t[sys.argv[3]])' "$T/stdout" "$1" "$2"
}

task_state() { task_field "$1" state; }

# wait_until EXPR: until the shell expression EXPR holds (1 after 30 s, 90 s
# under a sanitizer).
wait_until()
{
	# 30 s, 90 s for a sanitizer build (several times slower, and CI runs
	# two tests at once on two cores): a wait, never a time asserted
	if [ -z "${_WAIT_S:-}" ]; then
		_WAIT_S=30
		grep -qa __asan_init "$BERNSTEIN" 2>/dev/null && _WAIT_S=90
	fi
	_end=$(($(date +%s) + _WAIT_S))
	while ! eval "$1"; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.05
	done
	return 0
}

# bg ARGS...: bernstein ARGS in the background from $W, as run() runs it
# (with $KEY, the audit key assignment, when set): its pid in $BGPID, its
# output in $T/run.out and $T/run.err.
bg()
{
	_san=""
	[ -n "${ASAN_OPTIONS:-}" ] && _san="$_san ASAN_OPTIONS=$ASAN_OPTIONS"
	[ -n "${UBSAN_OPTIONS:-}" ] && _san="$_san UBSAN_OPTIONS=$UBSAN_OPTIONS"
	[ -n "${LSAN_OPTIONS:-}" ] && _san="$_san LSAN_OPTIONS=$LSAN_OPTIONS"
	# shellcheck disable=SC2086 # _san: words without blanks
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC ${KEY:+"$KEY"} \
		$_san "$BERNSTEIN" "$@") </dev/null >"$T/run.out" 2>"$T/run.err" &
	BGPID=$!
}

# require_agents: E2E_BIN, the bin directory of the agent CLIs pinned in
# tests/agents/; when they are not installed the test fails at once (an e2e
# test never skips: the CI installs them), saying how to install them.
require_agents()
{
	if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check); then
		not_ok "the agent CLIs pinned in tests/agents/ are installed"
		diag "run tests/agents/install.sh (needs node, npm and the npm registry) and retry"
		test_done
	fi
}

# require_landlock: the whole test is skipped (TAP "1..0 # SKIP") when the
# kernel has no Landlock; require_bwrap likewise without a working
# bubblewrap. Call them after test_begin, before any test line.
require_landlock()
{
	run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
	if [ "$RC" -ne 0 ]; then
		echo "1..0 # SKIP the kernel has no Landlock: $(cat "$T/stderr")"
		exit 0
	fi
}

require_bwrap()
{
	if ! command -v bwrap >/dev/null 2>&1 || ! bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
		echo "1..0 # SKIP bubblewrap (bwrap) is not installed or cannot create its namespaces"
		exit 0
	fi
}

# script_agent DIR NAME SCRIPT: an adapter NAME in the catalogue of the
# repository DIR that runs `sh SCRIPT PROMPT` (the prompt its one argument;
# no resume, no events), added beside what the catalogue holds.
script_agent()
{
	mkdir -p "$1/.bernstein/catalog/profiles"
	cat >"$1/.bernstein/catalog/profiles/$2.yaml" <<EOF
name: $2
display_name: "Script agent $2"
shape: factory
invocation:
  binary: sh
  extra_args: [$3]
  prompt_positional: true
capabilities:
  tool_use: true
  max_parallel_workers: 8
EOF
	[ -f "$1/.bernstein/catalog/strategy-matrix.yaml" ] ||
		echo 'adapters:' >"$1/.bernstein/catalog/strategy-matrix.yaml"
	cat >>"$1/.bernstein/catalog/strategy-matrix.yaml" <<EOF
  $2:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
}

shell_agent()
{
	mkdir -p "$1/.bernstein/catalog/profiles"
	cat >"$1/.bernstein/catalog/profiles/shell.yaml" <<'EOF'
name: shell
display_name: "Shell script agent"
shape: factory
invocation:
  binary: sh
  extra_args: [-c]
  prompt_positional: true
capabilities:
  tool_use: true
  max_parallel_workers: 8
EOF
	cat >"$1/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  shell:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
}

procs_with_arg()
{
	M=$1 python3 -c '
import os
m, me, n = os.environ["M"].encode(), str(os.getpid()), 0
for p in os.listdir("/proc"):
    if not p.isdigit() or p == me:
        continue
    try:
        with open("/proc/%s/cmdline" % p, "rb") as f:
            args = f.read().split(b"\0")
        with open("/proc/%s/stat" % p, "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        continue
    if m in args and state not in (b"Z", b"X"):
        n += 1
print(n)'
}

wait_no_procs()
{
	_end=$(($(date +%s) + ${2:-10}))
	while [ "$(procs_with_arg "$1")" -ne 0 ]; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.1
	done
	return 0
}

test_done()
{
	echo "1..$_tap_n"
	if [ "$_tap_failed" -ne 0 ]; then
		echo "# $_tap_failed of $_tap_n failed"
		exit 1
	fi
	exit 0
}
