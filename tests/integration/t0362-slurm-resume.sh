#!/bin/sh
# Issue #23: kill -9 of the submitting bernstein while its task runs as a
# Slurm job: the job goes on without it (its agent's work still reaches the
# hub), and `bernstein resume` re-attaches to it by the job id recorded in
# the task's job file instead of submitting another: one job in Slurm's
# list, the task's work merged once, the re-attach said in the log.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0362 executor: slurm: kill -9 and resume re-attach"

slurm_test_setup bernstein
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
cat >"$W/plan.yaml" <<'EOF'
name: resume
tasks:
  - title: long
    prompt: "say started\nsleep 6\nwrite long.txt long\ncommit long"
EOF
git_q add -A
git_q commit -q -m base
BASE=$(git -C "$W" rev-parse HEAD)

slurm_bg run plan.yaml
check "the task's job runs, its id recorded beside the task" \
	wait_until 'grep -q " started" "$W"/.bernstein/runs/*/long-*/slurm-job 2>/dev/null'
JOB=$(cut -d' ' -f1 "$W"/.bernstein/runs/*/long-*/slurm-job 2>/dev/null)
kill -9 "$BGPID"
wait "$BGPID" 2>/dev/null
BGPID=
check "no relay outlives the killed bernstein" \
	wait_until '[ "$(procs_with_arg agent-relay)" -eq 0 ]'
check "nor its git daemon (the hub is unreachable until resume)" \
	wait_until '! git ls-remote "git://$SLURM_HOST:$GD_PORT/hub.git" >/dev/null 2>&1'
check "the job goes on without it" sh -c "squeue -h -j '$JOB' -o %T | grep -q RUNNING"

run SLURM_CONF="$SLURM_CONF" "$BERNSTEIN" resume
if [ "$RC" = 0 ]; then ok "resume exits 0"; else
	not_ok "resume exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
	for f in "$W"/.bernstein/runs/*/*/*/agent.log; do _diag_file "$f" "$f"; done
	git --git-dir="$HUBS/hub.git" log --oneline --all >"$T/hub.log" 2>&1
	_diag_file hub "$T/hub.log"
	_diag_file slurmd1 "$T/cluster/slurmd.node1.log"
fi
check "resume re-attached to the recorded job" \
	sh -c "cat '$W'/.bernstein/runs/*/*/*/agent.log | grep -q 're-attached to Slurm job $JOB'"
check "the node replayed the agent's events to the re-attached relay" \
	sh -c "grep -q '\"started\"' '$W'/.bernstein/runs/*/long-*/2/events.jsonl"
check "Slurm ran one job for the task, not two" test "$(scontrol -o show job | grep -c JobId=)" = 1
check "the task's work is in main" test "$(git -C "$W" show main:long.txt 2>/dev/null)" = long
check "merged once" test "$(git -C "$W" log --format=%s "$BASE..main" | grep -c '^long$')" = 1
run "$BERNSTEIN" status
expect_stdout_contains "merged" "the task is done and merged"
test_done
