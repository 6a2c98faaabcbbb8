#!/bin/sh
# Failing hooks (issue #19):
# 1. a failing pre_task fails its task before the agent starts: state
#    failed, the reason names the hook, its exit and its log (in status);
#    the agent never ran; the task's dependent is blocked;
# 2. a failing pre_merge blocks the merge like a failed gate: the base
#    branch does not move and the checkout stays clean;
# 3. a hook past its timeout is stopped with everything it started, and
#    fails like a gate past its own (exit 124);
# 4. a failing post_task or on_run_end is a warning and an audit record,
#    never a change of outcome (exit 0, the task done);
# 5. with Landlock, pre_merge of a sandboxed task is confined like its
#    gates: it cannot write outside the task's clone (pre_task, which runs
#    in the repository, can);
# 6. `bernstein cancel` of a task whose pre_task runs stops the hook's tree
#    and cancels the task; its agent never starts.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0271 failing hooks: pre_task, pre_merge, timeout, post_task, cancel"

BGPID=
trap '[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null; _lib_cleanup' EXIT

# setup DIR HOOKS-YAML [EXTRA-YAML]: a repository with the shell agent
setup() {
	W=$1
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	shell_agent "$W"
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\n%s\nhooks:\n%s\n' "${3:-}" "$2" >"$W/bernstein.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
	BASE=$(git -C "$W" rev-parse main)
}
bw() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' $*"; }

# 1. pre_task fails
setup "$T/a" "  pre_task: 'echo t0271-pre-said; test \"\$BERNSTEIN_TASK\" != first || exit 3'"
cat >"$W/plan.yaml" <<YAML
name: pre
tasks:
  - title: first
    prompt: "touch $T/a-agent-ran; echo x > x.txt"
  - title: after
    depends_on: [first]
    prompt: "echo y > y.txt"
  - title: other
    prompt: "echo z > z.txt"
YAML
bw run plan.yaml
check "pre_task: the run has a failed task (exit 1, got $RC)" test "$RC" -eq 1
check "pre_task: the agent of the refused task never ran" test ! -e "$T/a-agent-ran"
bw status --json
check "pre_task: the task failed" sh -c "$PY -c 'import json,sys; d=json.load(open(\"$T/stdout\")); t={x[\"id\"]:x for x in d[\"tasks\"]}; sys.exit(0 if t[\"first\"][\"state\"]==\"failed\" and t[\"after\"][\"state\"]==\"blocked\" and t[\"other\"][\"state\"]==\"done\" else 1)'"
bw status
check "pre_task: status gives the hook, its exit and its log" \
	grep -q "hook 'pre_task' failed (exit 3); log: .*/hooks/first.pre_task.log" "$T/stdout"
LOG=$(sed -n "s/.*hook 'pre_task' failed (exit 3); log: \([^ ]*first.pre_task.log\).*/\1/p" "$T/stdout" | head -1)
check "pre_task: the log holds the hook's output" grep -qx t0271-pre-said "$LOG"
check "pre_task: the other task's agent ran" test -f "$W/z.txt"

# 2. pre_merge fails: nothing merged, the checkout clean
setup "$T/b" "  pre_merge: 'echo t0271-pm-said; exit 1'"
printf 'name: pm\ntasks:\n  - title: one\n    prompt: "echo one > one.txt"\n' >"$W/plan.yaml"
bw run plan.yaml
check "pre_merge: exit 1 (got $RC)" test "$RC" -eq 1
bw status
check "pre_merge: status gives the hook, its exit and its log" \
	grep -q "hook 'pre_merge' failed (exit 1); log: .*/1/hook-pre_merge.log" "$T/stdout"
check "pre_merge: the base branch did not move" test "$(git -C "$W" rev-parse main)" = "$BASE"
check "pre_merge: the checkout is clean (only the plan, untracked)" \
	test "$(git -C "$W" status --porcelain)" = "?? plan.yaml"
check "pre_merge: the agent's file is not in the checkout" test ! -e "$W/one.txt"
check "pre_merge: its log" sh -c "grep -qx t0271-pm-said '$W'/.bernstein/runs/*/one-*/1/hook-pre_merge.log"

# 3. a hook past its timeout: stopped with what it started
setup "$T/c" "  pre_task: {run: 'sh -c \"sleep 60\" t0271-sleeper', timeout: 1}"
printf 'name: to\ntasks:\n  - title: slow\n    prompt: "touch %s/c-agent-ran"\n' "$T" >"$W/plan.yaml"
bw run plan.yaml
check "timeout: exit 1 (got $RC)" test "$RC" -eq 1
bw status
check "timeout: the reason says so" grep -q "hook 'pre_task' timed out after 1.0 s (exit 124)" "$T/stdout"
check "timeout: the agent never ran" test ! -e "$T/c-agent-ran"
check "timeout: nothing the hook started is left" wait_no_procs t0271-sleeper

# 4. post_task and on_run_end fail: warned, audited, the outcome unchanged
setup "$T/d" "  post_task: 'echo t0271-post-said; exit 5'
  on_run_end: 'exit 6'"
printf 'name: post\ntasks:\n  - title: fine\n    prompt: "echo f > f.txt"\n' >"$W/plan.yaml"
bw run plan.yaml
check "post_task: the run succeeds all the same (exit $RC)" test "$RC" -eq 0
check "post_task: a warning says it failed" grep -q "hook 'post_task' failed (exit 5); log: " "$T/stderr"
check "on_run_end: a warning says it failed" grep -q "hook 'on_run_end' failed (exit 6); log: " "$T/stderr"
check "post_task: the task is done, merged" test -f "$W/f.txt"
check "post_task: audited as failed" \
	sh -c "grep '\"hook.finished\"' '$W'/.bernstein/audit/*.jsonl | grep '\"post_task\"' | grep -q '\"ok\": false'"
check "on_run_end: audited as failed" \
	sh -c "grep '\"hook.finished\"' '$W'/.bernstein/audit/*.jsonl | grep '\"on_run_end\"' | grep -q '\"exit_code\": 6'"

# 5. pre_merge of a sandboxed task is confined like its gates
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	skip "pre_merge confined" "the kernel has no Landlock"
else
	setup "$T/e" "  pre_task: 'touch $T/e-pre-task-wrote'
  pre_merge: 'touch $T/e-pre-merge-wrote'" "sandbox: landlock"
	mkdir -p "$W/.bernstein/catalog/profiles"
	printf 'runtime:\n  sandbox: {tiers: [landlock]}\n' >>"$W/.bernstein/catalog/profiles/shell.yaml"
	printf 'name: sb\ntasks:\n  - title: boxed\n    prompt: "echo b > b.txt"\n' >"$W/plan.yaml"
	bw run plan.yaml
	check "landlock: pre_merge could not write outside the clone: the task failed (exit $RC)" test "$RC" -eq 1
	check "landlock: nothing written outside" test ! -e "$T/e-pre-merge-wrote"
	check "landlock: pre_task (in the repository) is not confined" test -e "$T/e-pre-task-wrote"
	bw status
	check "landlock: status names the hook" grep -q "hook 'pre_merge' failed" "$T/stdout"
	check "landlock: the base branch did not move" test "$(git -C "$W" rev-parse main)" = "$BASE"
fi

# 6. cancel while pre_task runs
setup "$T/f" "  pre_task: 'touch $T/f-started; exec sh -c \"sleep 60\" t0271-cancelme'"
printf 'name: cancel\ntasks:\n  - title: held\n    prompt: "touch %s/f-agent-ran"\n' "$T" >"$W/plan.yaml"
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$BERNSTEIN" run plan.yaml) \
	</dev/null >"$T/f.out" 2>"$T/f.err" &
BGPID=$!
i=0
while [ ! -e "$T/f-started" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
check "cancel: pre_task runs" test -e "$T/f-started"
bw cancel held
check "cancel: accepted (exit $RC)" test "$RC" -eq 0
wait "$BGPID"
FRC=$?
BGPID=
check "cancel: the run ends (exit 1, got $FRC)" test "$FRC" -eq 1
bw status --json
check "cancel: the task is cancelled" grep -q '"state": "cancelled"' "$T/stdout"
check "cancel: its agent never ran" test ! -e "$T/f-agent-ran"
check "cancel: nothing of the hook is left" wait_no_procs t0271-cancelme
test_done
