#!/bin/sh
# What a command does to a run that is not live fires the hooks and
# notifications the same change fires in a live run:
# - `bernstein cancel` of a pending task of a stopped run: the task is
#   cancelled in state.db and its post_task hook runs at once, run by the
#   cancel command (event state cancelled), audited as hook.finished;
# - `bernstein retry` of a failed task with no run going: the command
#   resumes the run in the foreground, and that execution fires post_merge,
#   post_task and the task_done notification of the retried task;
# - no on_run_end and no run_done for the cancel (they belong to an
#   execution, and a cancel served offline is none).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0384 hooks and notify of cancel and retry on a run that is not live"

W=$T/work
O=$T/out
BGPID=
_t0384_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	_lib_cleanup
}
trap _t0384_cleanup EXIT
mkdir -p "$W" "$O" "$T/bin"
git -C "$W" init -q -b main . >/dev/null 2>&1
shell_agent "$W"
printf '.bernstein/\n' >"$W/.gitignore"
cat >"$T/bin/notify-send" <<SH
#!/bin/sh
echo "\$*" >> "$O/notify-send"
SH
chmod +x "$T/bin/notify-send"
cat >"$W/bernstein.yaml" <<YAML
adapter: shell
parallel: 1
kill_grace: 1
sandbox: none
retry_backoff: 0
max_retries: 0
hooks:
  post_merge: 'echo "post_merge \$BERNSTEIN_TASK \$BERNSTEIN_STATE" >> $O/seq'
  post_task: 'echo "post_task \$BERNSTEIN_TASK \$BERNSTEIN_STATE" >> $O/seq'
  on_run_end: 'echo "on_run_end run" >> $O/seq'
notify: {on: [task_done, task_failed, run_done], desktop: true}
YAML
# the agent of 'flaky': fails until $T/fixed exists, whatever the prompt
mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$T/flaky.sh" <<EOF
test -f $T/fixed || exit 3
echo fixed > flaky.txt
EOF
cat >"$W/.bernstein/catalog/profiles/flaky.yaml" <<EOF
name: flaky
display_name: "Fails until fixed"
shape: factory
invocation:
  binary: sh
  extra_args: [$T/flaky.sh]
  prompt_positional: true
capabilities:
  tool_use: true
  max_parallel_workers: 8
EOF
cat >>"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
  flaky:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
# a bernstein command with the stand-in notify-send on PATH
bnx() {
	_w=$1
	shift
	expect_exit "$_w" env PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" "$@"
}

# a run that stops with flaky failed, first done, second pending
cat >"$W/plan.yaml" <<EOF
name: t0384
tasks:
  - title: flaky
    adapter: flaky
    prompt: "make flaky.txt"
  - title: first
    prompt: "touch $T/first.started; while [ ! -f $T/go ]; do sleep 0.05; done; echo 1 > first.txt"
  - title: second
    prompt: "echo 2 > second.txt"
EOF
(cd "$W" && exec env -i PATH="$T/bin:/usr/bin:/bin" HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
	"$BERNSTEIN" run plan.yaml) </dev/null >"$T/run.out" 2>"$T/run.err" &
BGPID=$!
check "first runs (flaky failed before it)" wait_until '[ -f "$T/first.started" ]'
bnx 0 stop
touch "$T/go"
wait "$BGPID"
BGPID=
check "flaky failed" test "$(task_state flaky)" = failed
check "second is pending" test "$(task_state second)" = pending
check "the live run's post_task of flaky" grep -qx 'post_task flaky failed' "$O/seq"
: >"$O/seq"
: >"$O/notify-send"

# cancel, not live: second's post_task runs, by the cancel command
bnx 0 cancel second
expect_stdout_contains "not running"
check "second is cancelled" test "$(task_state second)" = cancelled
check "its post_task ran, with state cancelled, before cancel exited" grep -qx 'post_task second cancelled' "$O/seq"
check "only that hook: no on_run_end for a cancel" test "$(wc -l <"$O/seq")" -eq 1
check "its hook.finished in the audit chain" sh -c "grep '\"hook.finished\"' '$W'/.bernstein/audit/*.jsonl | grep -q '\"task\": \"second\"'"
run "$BERNSTEIN" audit verify
check "the audit chain verifies (exit $RC)" test "$RC" -eq 0
run "$BERNSTEIN" status --json
check "nothing left due in state.db" $PY -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
v = db.execute("SELECT hooks_due FROM runs ORDER BY rowid DESC LIMIT 1").fetchone()[0]
assert v in (None, "[]"), v' "$W/.bernstein/state.db"

# retry, not live: the command resumes the run; its hooks and notify fire
touch "$T/fixed"
bnx 1 retry flaky # the run ends failed: second was cancelled
check "flaky is done" test "$(task_state flaky)" = done
check "its post_merge ran" grep -qx 'post_merge flaky done' "$O/seq"
check "its post_task ran" grep -qx 'post_task flaky done' "$O/seq"
check "second's post_task did not run again" test "$(grep -c 'second' "$O/seq")" -eq 1
check "the task_done notification of flaky" wait_until "grep -q \"task 'flaky' done\" '$O/notify-send' 2>/dev/null"
test_done
