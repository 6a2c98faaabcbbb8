#!/bin/sh
# Issue #23: a job lost with its node. The task's first attempt runs on one
# node of a real two-node cluster (tests/integration/slurm-lib.sh); the test
# kills every process of that node's namespace (its slurmd, slurmstepd,
# agent-exec and the agent) and tells the controller the node is down (what
# slurmctld does by itself after SlurmdTimeout; here at once, to keep the
# test short). The relay's connection broke and the job ended NODE_FAIL
# without its result: the attempt's outcome is `lost` (not `failed`), the
# task is retried without any retry: policy (lost is retried like a rate
# limit), runs on the other node and is merged once.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0363 executor: slurm: a job lost with its node is 'lost' and retried"

slurm_test_setup
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
# the nodes see $T (only the repository and the hub are hidden): the agent,
# a script there that ignores its prompt (a retry's prompt starts with the
# recovered context), says where it started and waits for $T/go (60 s at
# most)
GO=$T/go
cat >"$T/waiter.sh" <<EOF
h=\$(hostname)
echo "started on \$h"
: >"$T/started.\$h"
i=0
while [ ! -e "$GO" ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
echo "\$h" >far.txt
EOF
sed -e 's/^name: shell/name: waiter/' -e "s|extra_args: \[-c\]|extra_args: [$T/waiter.sh]|" \
	"$W/.bernstein/catalog/profiles/shell.yaml" >"$W/.bernstein/catalog/profiles/waiter.yaml"
printf '  waiter:\n    resume: unsupported\n    dangerous_mode: always-on\n    event_channel: none\n' \
	>>"$W/.bernstein/catalog/strategy-matrix.yaml"
printf 'retry_backoff: 0\n' >>"$W/bernstein.yaml"
cat >"$W/plan.yaml" <<EOF
name: lost
tasks:
  - title: far
    adapter: waiter
    prompt: wait for the go
EOF
git_q add -A
git_q commit -q -m base
BASE=$(git -C "$W" rev-parse HEAD)

EXEC_DIRS=$(ls -d /tmp/bernstein-exec.* 2>/dev/null)
slurm_bg run plan.yaml
check "the first attempt's agent runs on a node" \
	wait_until 'ls $T/started.node* >/dev/null 2>&1'
FIRST=$(ls "$T"/started.node* 2>/dev/null | head -n 1 | sed 's/.*started\.//')
case "$FIRST" in
node1) OTHER=node2 ;;
*) OTHER=node1 ;;
esac
JOB=$(squeue -h -o %A 2>/dev/null | head -n 1)
check "Slurm lists its job running on $FIRST" \
	sh -c "squeue -h -j '$JOB' -o '%T %N' | grep -qx 'RUNNING $FIRST'"
# the node goes: everything in its namespace, then the controller knows
for p in $(ip netns pids "bsl-$FIRST" 2>/dev/null); do
	kill -KILL "$p" 2>/dev/null
done
scontrol update NodeName="$FIRST" State=DOWN Reason=t0363-lost >/dev/null 2>&1
check "the job ends NODE_FAIL" \
	wait_until "scontrol -o show job '$JOB' 2>/dev/null | grep -q JobState=NODE_FAIL"
check "the retry starts on the other node ($OTHER)" wait_until '[ -e $T/started.$OTHER ]'
: >"$GO"
check "the run ends" wait_until '! kill -0 $BGPID 2>/dev/null'
wait "$BGPID"
RC=$?
BGPID=
if [ "$RC" = 0 ]; then ok "the run exits 0"; else
	not_ok "the run exits 0 (got $RC)"
	_diag_file stderr "$T/bg.err"
	for f in "$W"/.bernstein/runs/*/*/*/agent.log; do _diag_file "$f" "$f"; done
fi
cat >"$T/db.py" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = list(db.execute("SELECT outcome, reason FROM attempts ORDER BY n"))
assert [r[0] for r in rows] == ["lost", "completed"], rows
assert "lost with its node" in rows[0][1] and "NODE_FAIL" in rows[0][1], rows[0]
st = list(db.execute("SELECT state FROM tasks"))
assert st == [("done",)], st
EOF
check "state.db: attempt 1 lost (NODE_FAIL, why), attempt 2 completed, the task done" \
	python3 "$T/db.py" "$W/.bernstein/state.db"
check "the relay said so in attempt 1's log" \
	sh -c "grep -q 'ended NODE_FAIL without its result (lost with its node)' '$W'/.bernstein/runs/*/far-*/1/agent.log"
check "attempt 2 ran on $OTHER" \
	sh -c "grep -q \"runs on '$OTHER'\" '$W'/.bernstein/runs/*/far-*/2/agent.log"
check "the work of the retry is merged" test "$(git -C "$W" show main:far.txt 2>/dev/null)" = "$OTHER"
check "merged once" test "$(git -C "$W" log --format=%H "$BASE..main" -- far.txt | wc -l)" = 1
check "no job is left in the queue" \
	sh -c "[ -z \"\$(squeue -h -t PENDING,RUNNING,COMPLETING,CONFIGURING)\" ]"
check "no job file is left" sh -c "! ls '$W'/.bernstein/runs/*/far-*/slurm-job 2>/dev/null | grep -q ."
# the killed node's agent-exec could not remove its work directory (on a
# real cluster it stays in the dead node's TMPDIR): the test removes it
for d in /tmp/bernstein-exec.*; do
	[ -d "$d" ] || continue
	case " $(echo $EXEC_DIRS) " in
	*" $d "*) ;;
	*) rm -rf "$d" ;;
	esac
done
test_done
