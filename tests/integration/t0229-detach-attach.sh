#!/bin/sh
# Issue #18: `bernstein run --detach` runs in the background (a session of
# its own, output in .bernstein/runs/RUN/run.log) and returns once the run
# has started; `bernstein attach` (and `status -f`) follow it to its end
# with the run's exit code; Ctrl-C stops the viewer, never the run. A plan
# that fails before the run starts is reported by the caller with its exit
# code. kill -9 of the detached run: attach says it is not live, its agents
# are gone, and `resume` finishes it with nothing run twice. A run.log
# replaced by a symlink (what an agent running as the user can do) is
# refused, never followed.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0229 run --detach, attach, status -f"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
PIDS=

_t0229_cleanup()
{
	for _p in $PIDS; do kill -9 "$_p" 2>/dev/null; done
	for _p in $(grep -lsF -e "$T/go" /proc/[0-9]*/cmdline | sed -e 's#^/proc/##' -e 's#/cmdline$##'); do
		kill -9 "$_p" 2>/dev/null
	done
	_lib_cleanup
}
trap _t0229_cleanup EXIT

# processes whose command line holds $1
procs_holding()
{
	python3 -c '
import os, sys
m, n = sys.argv[1].encode(), 0
for p in os.listdir("/proc"):
    if p.isdigit() and int(p) != os.getpid():
        try:
            if m in open("/proc/%s/cmdline" % p, "rb").read():
                n += 1
        except OSError:
            pass
print(n)' "$1"
}
alive() { kill -0 "$1" 2>/dev/null; }
# run CMD in the background like run() does; its pid in BG
bg()
{
	_out=$1
	shift
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
		${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} ${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} \
		${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} "$@") </dev/null >"$_out.out" 2>"$_out.err" &
	BG=$!
	PIDS="$PIDS $BG"
}
json_get() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 4
kill_grace: 1
sandbox: none
EOF
cat >"$W/plan.yaml" <<EOF
name: detached
tasks:
  - title: first
    prompt: "echo first > first.txt; echo wrote first"
  - title: waits
    prompt: "while [ ! -f $T/go1 ]; do sleep 0.05; done; echo waits > waits.txt"
  - title: fails
    depends_on: [waits]
    prompt: "echo about to fail; exit 3"
EOF
cat >"$W/bad.yaml" <<'EOF'
name: bad
tasks:
  - title: t
    bogus: 1
    prompt: "true"
EOF
git_q add -A
git_q commit -q -m base

# ---- an error before the run starts: the caller reports it ----
expect_exit 3 "$KEY" "$BERNSTEIN" run --detach bad.yaml
expect_stderr_contains "bogus" "the plan's error reaches the caller"

# ---- run --detach ----
expect_exit 0 "$KEY" "$BERNSTEIN" run --detach --json plan.yaml
cp "$T/stdout" "$T/detach.json"
RUN=$(json_get "$T/detach.json" run)
PID=$(json_get "$T/detach.json" pid)
LOG=$(json_get "$T/detach.json" log)
PIDS="$PIDS $PID"
check "it prints the run, its pid and its log" test -n "$RUN" -a -n "$PID" -a "$LOG" = "$W/.bernstein/runs/$RUN/run.log"
check "the run goes on after the caller returned" alive "$PID"
check "it leads a session of its own" test "$(cut -d')' -f2 /proc/"$PID"/stat | awk '{print $4}')" = "$PID"
check "its stdin is /dev/null" test "$(readlink /proc/"$PID"/fd/0)" = /dev/null
check "its output goes to run.log" test "$(readlink /proc/"$PID"/fd/1)" = "$LOG"
check "run.log is 0600" test "$(stat -c %a "$LOG")" = 600
check "the run writes its lines there (JSON: --json)" wait_until 'grep -q "\"task\":\"first\"" "$LOG"'
run /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"op\": \"ping\"}\n"); print(s.recv(4096).decode())' "$W/.bernstein/runs/$RUN/control.sock"
expect_stdout_contains '"ok":true' "its control socket answers"

# ---- attach, then Ctrl-C: the viewer stops, the run does not ----
bg "$T/attach1" "$BERNSTEIN" attach --plain
A1=$BG
check "attach follows the run" wait_until 'grep -q "first: " "$T/attach1.out"'
check "it says Ctrl-C leaves the run alone" grep -q "Ctrl-C stops following, not the run" "$T/attach1.err"
kill -INT "$A1"
wait "$A1"
RC=$?
check "Ctrl-C ends attach with 130" test "$RC" -eq 130
check "and says the run goes on" grep -q "it goes on" "$T/attach1.err"
check "the run is still alive" alive "$PID"

# ---- attach --json and status -f to the end: the run's exit code ----
bg "$T/attach2" "$BERNSTEIN" attach --json "$RUN"
A2=$BG
bg "$T/follow" "$BERNSTEIN" status -f
A3=$BG
check "attach --json streams events" wait_until 'grep -q "\"type\":\"event\"" "$T/attach2.out"'
touch "$T/go1"
wait "$A2"
RC2=$?
wait "$A3"
RC3=$?
check "attach ends with the run's exit code (1: a task failed)" test "$RC2" -eq 1
check "status -f too" test "$RC3" -eq 1
check "attach --json ends with the run's line" python3 -c 'import json,sys; o=json.loads(open(sys.argv[1]).read().splitlines()[-1]); sys.exit(o["type"]!="run" or o["exit_code"]!=1)' "$T/attach2.out"
check "its task lines" grep -q '"task":"fails".*"type":"task"' "$T/attach2.out"
check "status -f says how it ended" grep -q "exit 1" "$T/follow.out"
check "the detached run has exited" wait_until '! alive "$PID"'
run "$BERNSTEIN" status --json
check "state.db has its exit code" grep -q '"exit_code": 1' "$T/stdout"
check "its summary is in run.log" grep -q '"run":"'"$RUN"'".*"type":"run"' "$LOG"
expect_exit 1 "$BERNSTEIN" attach "$RUN"
expect_stdout_contains "exit 1" "attach of an ended run prints its end at once"

# ---- kill -9 of a detached run, then resume ----
cat >"$W/plan2.yaml" <<EOF
name: killed
adapter: mock
tasks:
  - title: early
    prompt: |
      append early.txt early
  - title: late
    prompt: |
      once ~/t0229-late.mark hang
      write late.txt late
EOF
git_q add plan2.yaml
git_q commit -q -m plan2
expect_exit 0 "$KEY" "$BERNSTEIN" run --detach plan2.yaml
expect_stdout_contains "running in the background" "a second detached run"
PID2=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$T/stdout")
RUN2=$(sed -n 's/^run \([^:]*\): running.*/\1/p' "$T/stdout")
PIDS="$PIDS $PID2"
run "$BERNSTEIN" status --json
check "early is done" wait_until '"$BERNSTEIN" -C "$W" status --json 2>/dev/null | grep -q "\"id\": \"early\".*" && [ -f "$W/early.txt" ]'
check "late's agent runs" wait_until '[ "$(procs_holding t0229-late.mark)" -gt 0 ]'
kill -9 "$PID2"
check "its agents die with it" wait_until '[ "$(procs_holding t0229-late.mark)" -eq 0 ]'
expect_exit 1 "$BERNSTEIN" attach "$RUN2"
expect_stderr_contains "is not live" "attach says the run is not live"
expect_stderr_contains "bernstein resume $RUN2" "and how to go on"

# an agent running as the user replaced run.log with a symlink
printf 'precious\n' >"$T/target"
rm -f "$W/.bernstein/runs/$RUN2/run.log"
ln -s "$T/target" "$W/.bernstein/runs/$RUN2/run.log"
expect_exit 4 "$KEY" "$BERNSTEIN" resume --detach "$RUN2"
expect_stderr_contains "symlink" "resume --detach refuses a symlinked run.log"
check "the symlink's target is untouched" test "$(cat "$T/target")" = precious

expect_exit 0 "$KEY" "$BERNSTEIN" resume "$RUN2"
check "late is merged" test -f "$W/late.txt"
check "early ran once" test "$(wc -l <"$W/early.txt")" -eq 1
run "$BERNSTEIN" status --json "$RUN2"
check "early has one attempt" python3 -c 'import json,sys; t=[t for t in json.load(open(sys.argv[1]))["tasks"] if t["id"]=="early"][0]; sys.exit(t["attempts"]!=1 or t["state"]!="done")' "$T/stdout"
check "early merged once" test "$(git -C "$W" log --oneline --all -- early.txt | wc -l)" -eq 1
check "the run's exit code is resume's" grep -q '"exit_code": 0' "$T/stdout"

test_done
