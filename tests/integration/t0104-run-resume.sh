#!/bin/sh
# Crash and resume: `kill -9` of bernstein while agents run, and while a gate
# runs (the task is completing), then `bernstein resume` finishes the run with
# every task done once: no lost work, no duplicate merge, no agent left
# running. Native resume (mock: the agent's session continues) against
# fallback resume (a profile whose resume is unsupported: a fresh session
# with the recovered context), resume of one task, --dry-run and the exit
# codes (2 nothing to resume, 4 a run holds the lock), and a second run
# refused by the lock leaving no trace.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0104 bernstein resume"

W=$T/work
KEY=$T/audit.key
MARK="resume-marker-$$"
MARKPAT="[r]esume-marker-$$" # matches the agents' command lines, not pgrep's caller

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/.bernstein/catalog/profiles"
# the mock agent, declared again (by the binary's path) without native resume
cat >"$W/.bernstein/catalog/profiles/mockfresh.yaml" <<EOF
name: mockfresh
display_name: "mock without resume"
shape: factory
invocation:
  binary: $BERNSTEIN
  subcommands: [mock-agent]
  prompt_positional: true
capabilities:
  tool_use: true
runtime:
  events: {dialect: runner}
  home: isolated
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  mockfresh:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: stream-json
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: mock
retry_backoff: 0
EOF
cat >"$W/plan.yaml" <<EOF
name: crash
tasks:
  - title: native
    prompt: |
      $MARK
      once ~/slept sleep 60
      write native.txt finished natively
  - title: fallback
    adapter: mockfresh
    prompt: |
      $MARK
      once ~/slept sleep 60
      write fallback.txt finished in a fresh session
  - title: after
    depends_on: [native, fallback]
    prompt: write after.txt after both
EOF
commit_all base

# Start bernstein in the background, hermetic like lib.sh's run.
start_bg()
{
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
		XDG_CONFIG_HOME="$T/config" BERNSTEIN_AUDIT_KEY_PATH="$KEY" \
		${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} \
		${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} \
		${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} \
		"$BERNSTEIN" "$@") </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BG=$!
}

# Wait (at most 60 s) until `status --json` shows $1 at least $2 times.
wait_status()
{
	i=0
	while [ $i -lt 600 ]; do
		run "$BERNSTEIN" status --json
		n=$(grep -c -- "$1" "$T/stdout" 2>/dev/null || true)
		[ "${n:-0}" -ge "$2" ] && return 0
		if ! kill -0 "$BG" 2>/dev/null; then
			diag "bernstein stopped early: $(cat "$T/bg.err")"
			return 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

agents_left() { pgrep -f "$MARKPAT" >/dev/null 2>&1; }

# wait_status, once the latest run is the one named $1
wait_run()
{
	_name=$1
	shift
	wait_status "\"name\": \"$_name\"" 1 && wait_status "$@"
}

# ---- kill -9 while two agents run ----
start_bg run plan.yaml
check "both agents announced their sessions" \
	wait_status '"agent_session_id": "[0-9a-f]' 2
kill -9 "$BG"
wait "$BG" 2>/dev/null
i=0
while agents_left && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "no agent outlives bernstein" sh -c "! pgrep -f '$MARKPAT'"
run "$BERNSTEIN" status
expect_stdout_contains "running" "the tasks are left running in state.db"

expect_exit 0 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume --dry-run --json
expect_stdout_contains '"action":"native"' "dry run: the mock task resumes natively"
expect_stdout_contains '"action":"fallback"' "dry run: the other one falls back"
expect_stdout_contains '"action":"start"' "dry run: the dependent task starts as planned"
run "$BERNSTEIN" status
expect_stdout_contains "running" "--dry-run changed nothing"

expect_exit 0 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume
expect_stdout_contains "done (3 done)" "the resumed run finishes"
check "the natively resumed task's work is merged" grep -q natively "$W/native.txt"
check "the fallback task's work is merged" grep -q fresh "$W/fallback.txt"
check "the dependent task ran after both" test -f "$W/after.txt"
check "each task merged exactly once" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 3 ]"
run "$BERNSTEIN" logs native --events
expect_stdout_contains "resumed session" "the mock saw --resume with its session"
FB=$(ls -d "$W"/.bernstein/runs/*/fallback-*/2 2>/dev/null | head -n 1)
check "the fallback attempt got the recovered context" \
	grep -q "Resume context" "$FB/plan.json"
run "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain survived the crash"

expect_exit 2 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume
expect_stdout_contains "nothing to resume" "a finished run has nothing to resume"

# ---- kill -9 during a gate (the task is completing) ----
cat >"$W/gated.yaml" <<EOF
name: gated
tasks:
  - title: slow gate
    gates: [{name: wait, run: "test -f \$HOME/.gate-ok || sleep 60"}]
    prompt: |
      $MARK
      write gated.txt gated work
EOF
commit_all gated
start_bg run gated.yaml
check "the task reaches its gate" wait_status '"state": "completing"' 1
kill -9 "$BG"
wait "$BG" 2>/dev/null
pkill -f "sleep 60" 2>/dev/null
mkdir -p "$T/home" && : >"$T/home/.gate-ok"
expect_exit 0 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume --json
expect_stdout_contains '"action":"complete"' "completion goes on"
check "the gated work is merged once" \
	sh -c "[ \$(git -C '$W' log --merges --oneline main | grep -c 'slow gate') -eq 1 ]"

# ---- a crash while merging: state.db says 'merging' ----
# (the state is set by hand, as a crash before the merge commit was
# recorded would leave it: t0107 kills bernstein inside each git step)
set_state()
{
	python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute(\"update tasks set state = ?, merge_commit = null where id = ? and run_id = (select id from runs order by rowid desc limit 1)\", (sys.argv[2], sys.argv[3]))
db.execute(\"update runs set state = 'interrupted' where rowid = (select max(rowid) from runs)\")
db.commit()
" "$W/.bernstein/state.db" "$2" "$1"
}
cat >"$W/merge.yaml" <<'EOF'
name: merge
tasks:
  - {title: unmerged, prompt: write unmerged.txt left on its branch}
EOF
printf 'merge: none\n' >>"$W/bernstein.yaml"
commit_all merge
expect_exit 0 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" run merge.yaml
check "merge: none leaves the branch unmerged" test ! -e "$W/unmerged.txt"
sed -i '/^merge: none$/d' "$W/bernstein.yaml"
commit_all merge-on
MERGES=$(git -C "$W" rev-list --merges --count main)
set_state unmerged merging
expect_exit 0 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume --json
expect_stdout_contains '"action":"merge"' "resume finishes the merge"
check "the interrupted merge is done once" grep -q "left on its branch" "$W/unmerged.txt"
check "one merge more" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq $((MERGES + 1)) ]"
set_state unmerged merging
expect_exit 0 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume --json
check "a merge already made is not made again" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq $((MERGES + 1)) ]"
run "$BERNSTEIN" status
expect_stdout_contains "already merged" "the task says so"

# ---- one task only; the lock ----
cat >"$W/two.yaml" <<'EOF'
name: two
tasks:
  - {title: one, prompt: "fail on purpose"}
  - {title: two, prompt: "hang"}
EOF
commit_all two
start_bg run two.yaml
check "the hanging task runs" wait_status '"state": "running"' 1
expect_exit 4 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume
expect_stderr_contains "still running" "resume refuses while a run holds the lock"
kill -TERM "$BG"
wait "$BG"
check "SIGTERM stops the run with 130" [ $? -eq 130 ]
run "$BERNSTEIN" status
expect_stdout_contains "interrupted" "the hanging task is interrupted"
expect_exit 2 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume no-such-task
expect_stderr_contains "no task 'no-such-task'" "an unknown task"

# ---- a second run refused by the lock writes nothing (issue #14, class 5) ----
# It once recorded its run, and resume then ran that one: a task twice.
cat >"$W/double.yaml" <<EOF
name: double
tasks:
  - title: quick
    prompt: append double.txt one more line
  - title: slow
    depends_on: [quick]
    prompt: |
      $MARK
      once ~/double-slept hang
      write slow.txt done
EOF
commit_all double
count_runs() { python3 -c "
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute('select count(*) from runs').fetchone()[0])
" "$W/.bernstein/state.db"; }
count_started() { cat "$W"/.bernstein/audit/*.jsonl | grep -c '"event_type": "run.started"'; }
start_bg run double.yaml
check "the quick task is merged, the slow one runs" \
	wait_run double '"agent_session_id": "[0-9a-f]' 2
RUNS=$(count_runs)
STARTED=$(count_started)
expect_exit 4 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" run double.yaml
expect_stderr_contains "still running" "a second run is refused by the lock"
check "it recorded no run" [ "$(count_runs)" -eq "$RUNS" ]
check "and no run.started" [ "$(count_started)" -eq "$STARTED" ]
kill -9 "$BG"
wait "$BG" 2>/dev/null
i=0
while agents_left && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
expect_exit 0 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume
expect_stdout_contains "done (2 done)" "resume finishes the run that ran"
check "the quick task was merged exactly once" \
	sh -c "[ \$(grep -c 'one more line' '$W/double.txt') -eq 1 ] &&
	[ \$(git -C '$W' log --merges --format=%s main | grep -c ': quick\$') -eq 1 ]"

# ---- resume exits as run does: 1 when a task ends failed or blocked ----
cat >"$W/fails.yaml" <<EOF
name: fails
tasks:
  - title: flaky
    prompt: |
      $MARK
      once ~/flaky-slept hang
      fail it failed on resume
  - title: later
    depends_on: [flaky]
    prompt: write later.txt never
EOF
commit_all fails
start_bg run fails.yaml
check "the flaky task runs" wait_run fails '"agent_session_id": "[0-9a-f]' 1
kill -9 "$BG"
wait "$BG" 2>/dev/null
i=0
while agents_left && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
expect_exit 1 "BERNSTEIN_AUDIT_KEY_PATH=$KEY" "$BERNSTEIN" resume
expect_stdout_contains "1 failed, 1 blocked" "its task failed, the next one is blocked"

test_done
