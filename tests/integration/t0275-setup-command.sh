#!/bin/sh
# worktree_setup.setup_command (issue #19): a command run like a gate in
# each task's fresh tree after the copies and links, before the agent.
#
# 1. A `make test`-style gate needs a generated file (deps/installed, which
#    git ignores): without setup_command the gate fails; with it the run
#    succeeds, the agent saw the file, the command saw the copied .env
#    (copies come first), its output is in setup.log beside the gate logs of
#    the attempt, its environment is a gate's (no API key of bernstein's)
#    and nothing it made was committed; the same with the mock agent.
# 2. A failing setup_command: the task fails with the outcome setup_failed,
#    "worktree setup command failed (exit 3); log: PATH" in status (and
#    gate_log = PATH in status --json, "setup log: PATH" in the summary),
#    the log holds its output, the agent never ran, the transition is
#    audited; `bernstein retry` runs it again and the task is done.
# 3. Past its timeout: setup_failed, "timed out after 1.0 s (exit 124)",
#    its process tree gone.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0275 worktree_setup.setup_command: run like a gate before the agent; setup_failed"

KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"

# repo DIR SETUP-YAML PROMPT: a repository with the shell agent, the gate
# `tests` (needs deps/installed) and the untracked, ignored .env
repo() {
	W=$1
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	shell_agent "$W"
	printf '.bernstein/\n.env\ndeps/\n' >"$W/.gitignore"
	printf 'test -f deps/installed || { echo "deps missing: run the setup"; exit 2; }\n' >"$W/check.sh"
	{
		printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\n'
		printf 'gates: [{name: tests, run: "sh check.sh"}]\n'
		printf '%s\n' "$2"
	} >"$W/bernstein.yaml"
	printf 'name: setup\ntasks:\n  - title: work\n    prompt: |\n' >"$W/plan.yaml"
	printf '%s\n' "$3" | sed 's/^/      /' >>"$W/plan.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
	printf 'KEY=t0275-env\n' >"$W/.env"
}

bw() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC ANTHROPIC_API_KEY=sk-t0275-secret '$KEY' '$BERNSTEIN' $*"; }

# the field of task 0 of status --json
field() {
	bw status --json
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = d["tasks"][0].get(sys.argv[2])
print("" if v is None else v)' "$T/stdout" "$1"
}

PROMPT='cat deps/installed > seen-deps.txt; echo ran > agent-ran.txt'

# 1a. the control: no setup_command, the gate fails
repo "$T/none" 'worktree_setup: {copy_files: [.env]}' "$PROMPT"
bw run plan.yaml
check "without setup_command: the run fails (exit $RC)" test "$RC" -eq 1
check "without setup_command: the gate failed" grep -q "gate 'tests' failed (exit 2)" "$T/stdout"

# 1b. with it, the gate passes only thanks to it
repo "$T/ok" 'worktree_setup:
  copy_files: [.env]
  setup_command: "echo setup-t0275-ran; mkdir -p deps && cp .env deps/installed && env | sort"' "$PROMPT"
bw run plan.yaml
check "with setup_command: the run succeeds (exit $RC)" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "the agent saw what the setup made (from the copied .env)" grep -qx KEY=t0275-env "$W/seen-deps.txt"
LOG=$(ls "$W"/.bernstein/runs/*/work-*/1/setup.log 2>/dev/null | head -n 1)
check "setup.log is in the attempt's session directory" test -f "$LOG"
check "setup.log holds its output" grep -qx setup-t0275-ran "$LOG"
check "it ran in the task's tree" grep -q "^PWD=$W/.bernstein/worktrees/work-" "$LOG"
check "its environment is a gate's: no API key" sh -c "! grep -q -e sk-t0275-secret -e ANTHROPIC '$LOG'"
check "nothing it made was committed" sh -c "! git -C '$W' log --all --name-only --format= | grep -q '^deps/'"

# 1c. the same with the mock agent
repo "$T/mock" 'worktree_setup: {setup_command: "mkdir -p deps && touch deps/installed"}' 'write greeting.txt hello from the mock'
printf 'name: setup\nadapter: mock\ntasks:\n  - title: work\n    prompt: |\n      write greeting.txt hello from the mock\n' >"$W/plan.yaml"
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m mock plan.yaml >/dev/null 2>&1
bw run plan.yaml
check "mock: the run succeeds, its gate passed (exit $RC)" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "mock: its work is merged" grep -qx "hello from the mock" "$W/greeting.txt"

# 2. a failing setup_command: setup_failed with its log; retry
repo "$T/fail" "worktree_setup:
  setup_command: \"echo boom-t0275; [ -e '$T/fixed' ] || exit 3; mkdir -p deps && touch deps/installed\"" "$PROMPT"
bw run plan.yaml
check "failing setup: the run fails (exit $RC)" test "$RC" -eq 1
check "failing setup: the summary names the setup log" grep -q "setup log: .*/1/setup.log" "$T/stdout"
check "failing setup: the task failed" test "$(field state)" = failed
check "failing setup: its outcome is setup_failed" test "$(field outcome)" = setup_failed
REASON=$(field reason)
LOG=$(field gate_log)
check "failing setup: the reason says so" sh -c "printf '%s' \"\$1\" | grep -q '^worktree setup command failed (exit 3); log: '" - "$REASON"
check "failing setup: gate_log is its setup.log" sh -c "case '$LOG' in */1/setup.log) exit 0;; esac; exit 1"
check "failing setup: the log holds its output" grep -qx boom-t0275 "$LOG"
check "failing setup: the agent never ran" test ! -e "$W/.bernstein/worktrees/"work-*/agent-ran.txt
check "failing setup: no attempt was made" test "$(field attempts)" = 0
check "failing setup: the transition is audited" \
	sh -c "grep -h '\"task.transition\"' '$W'/.bernstein/audit/*.jsonl | grep -q 'worktree setup command failed (exit 3)'"
touch "$T/fixed"
bw retry work
check "retry: exit 0 (got $RC)" test "$RC" -eq 0
check "retry: the task is done" test "$(field state)" = done
check "retry: the agent ran after the setup" test -f "$W/seen-deps.txt"
bw audit verify
check "the audit chain verifies" test "$RC" -eq 0

# 3. past its timeout
repo "$T/slow" 'worktree_setup:
  setup_command: "sleep 31.275"
  timeout: 1' "$PROMPT"
bw run plan.yaml
check "slow setup: the run fails (exit $RC)" test "$RC" -eq 1
check "slow setup: setup_failed" test "$(field outcome)" = setup_failed
check "slow setup: the reason says it timed out" sh -c "printf '%s' \"\$1\" | grep -q '^worktree setup command timed out after 1.0 s (exit 124); log: '" - "$(field reason)"
check "slow setup: its process is gone" wait_no_procs 31.275 10
check "slow setup: the agent never ran" test ! -e "$W/.bernstein/worktrees/"work-*/agent-ran.txt

test_done
