#!/bin/sh
# Issue #23: cancelling a task that runs as a Slurm job is scancel: the
# agent on the node (a shell whose grandchild left its session and ignores
# SIGTERM and SIGHUP) leaves no process behind, the job leaves the queue, the
# task is 'cancelled', and another task of the run still finishes and is
# merged. A task that cannot be placed (slurm: without listen) is refused
# before anything is submitted.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0361 executor: slurm: cancel is scancel"

slurm_test_setup
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
MARK=bsl-spin-$$
cat >"$W/plan.yaml" <<EOF
name: cancel
tasks:
  - title: spin
    adapter: shell
    prompt: "hostname > /tmp/$MARK.host; setsid sh -c 'trap \"\" TERM HUP; while :; do sleep 0.05; done' $MARK & trap '' TERM; while :; do sleep 0.05; done"
  - title: other
    prompt: "sleep 1\nwrite other.txt other\ncommit other"
EOF
git_q add -A
git_q commit -q -m base

EXEC_DIRS=$(ls -d /tmp/bernstein-exec.* 2>/dev/null)
slurm_bg run plan.yaml
check "the spinning agent runs on a node (its grandchild too)" \
	wait_until '[ -s /tmp/$MARK.host ] && [ "$(procs_with_arg $MARK)" -ge 1 ]'
check "Slurm lists its job running" sh -c "squeue -h -o %T | grep -q RUNNING"
expect_exit 0 "$BERNSTEIN" cancel spin
check "after the cancel no process of the agent is left on the node" wait_no_procs "$MARK" 10
check "the job left the queue (scancel)" \
	wait_until '[ -z "$(squeue -h -t PENDING,RUNNING,COMPLETING,CONFIGURING 2>/dev/null)" ]'
check "the cancelled job removed its work directory on the node" \
	wait_until '[ "$(ls -d /tmp/bernstein-exec.* 2>/dev/null)" = "$EXEC_DIRS" ]'
check "the run ends" wait_until '! kill -0 $BGPID 2>/dev/null'
BGPID=
run "$BERNSTEIN" status --json
expect_stdout_contains '"cancelled"' "the task is cancelled"
check "the other task was merged" test "$(git -C "$W" show main:other.txt 2>/dev/null)" = other
check "the cancelled task's job file is gone" \
	sh -c "! ls '$W'/.bernstein/runs/*/spin-*/slurm-job 2>/dev/null | grep -q ."
rm -f "/tmp/$MARK.host"

# ---- doctor: the client, the controller, the hub ----
run SLURM_CONF="$SLURM_CONF" "$BERNSTEIN" doctor
expect_stdout_contains "slurm client         ok: slurm-wlm" "doctor: the Slurm client"
expect_stdout_contains "slurm controller     ok:" "doctor: the controller answers"
expect_stdout_contains "hub_url              ok: git://$SLURM_HOST:$GD_PORT/hub.git answers" \
	"doctor: nodes' hub address answers"
kill "$GD_PID" 2>/dev/null
wait "$GD_PID" 2>/dev/null
GD_PID=
run "$BERNSTEIN" doctor
expect_stdout_contains "slurm controller     NOT OK" "doctor: no SLURM_CONF, no controller"
expect_stdout_contains "hub_url              NOT OK" "doctor: git daemon gone, the hub address fails"

# ---- sbatch refuses the job: the attempt fails with Slurm's reason ----
printf 'name: nopart\ntasks:\n  - title: nopart\n    prompt: "write np.txt x\\ncommit np"\n' >"$W/nopart.yaml"
printf '  sbatch: [--partition=nosuch]\n' >>"$W/bernstein.yaml"
git_q add -A
git_q commit -q -m "no such partition"
run SLURM_CONF="$SLURM_CONF" "$BERNSTEIN" run nopart.yaml
check "a job sbatch refuses fails the run" test "$RC" -ne 0
run "$BERNSTEIN" status
expect_stdout_contains "nosuch" "the task's reason is Slurm's (the partition named)"
check "nothing of it is left: no job file" \
	sh -c "! ls '$W'/.bernstein/runs/*/nopart-*/slurm-job 2>/dev/null | grep -q ."
sed -i '/--partition=nosuch/d' "$W/bernstein.yaml"

# ---- refused before anything is submitted ----
sed -i '/^  listen:/d' "$W/bernstein.yaml"
cat >"$W/one.yaml" <<'EOF'
name: one
tasks:
  - title: lone
    prompt: "write lone.txt x\ncommit lone"
EOF
git_q add -A
git_q commit -q -m "no listen"
run SLURM_CONF="$SLURM_CONF" "$BERNSTEIN" run one.yaml
check "a run whose slurm: lacks listen fails" test "$RC" -ne 0
run "$BERNSTEIN" status
expect_stdout_contains "slurm.listen" "the task's refusal says what is missing"
check "no job was submitted for it" test "$(slurm_jobs lone)" = 0
test_done
