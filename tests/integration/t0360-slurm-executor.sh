#!/bin/sh
# Issue #23: executor: slurm on a real two-node Slurm cluster made here
# (tests/integration/slurm-lib.sh): munged, slurmctld, two slurmd "hosts",
# each in its own network namespace joined by a veth link, the submitting
# repository and the hub hidden from both (an empty tmpfs over them), so the
# node must clone and push over the network (git daemon on the host's link
# address, served by the git daemon bernstein starts: slurm.git_daemon). A plan of mock and shell tasks: every task merged once, tasks
# seen on both nodes, the agent's events relayed live (events.jsonl), the
# canary key delivered to the agent (its hash committed) and found nowhere
# in Slurm's state and spool, the hub, or the node's files.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0360 executor: slurm runs a plan across two nodes"

slurm_test_setup bernstein

CANARY=sk-canary-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
CANARY_SHA=$(printf %s "$CANARY" | sha256sum | cut -c1-64)
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
# shell tasks: where they ran, and the canary's hash (never the canary)
shell_task()
{
	printf '    prompt: %s\n' "'hostname > host-$1.txt; printf %s \"\$CANARY_API_KEY\" | sha256sum | cut -c1-64 > canary-$1.txt; sleep 2'"
}
cat >"$W/plan.yaml" <<EOF
name: slurm
tasks:
  - title: m1
    prompt: "say hello from m1\nsleep 2\nwrite m1.txt one\ncommit m1"
  - title: m2
    prompt: "say hello from m2\nsleep 2\nwrite m2.txt two\ncommit m2"
  - title: s1
    adapter: shell
$(shell_task s1)
  - title: s2
    adapter: shell
$(shell_task s2)
EOF
git_q add -A
git_q commit -q -m base
BASE=$(git -C "$W" rev-parse HEAD)

slurm_run()
{
	run BERNSTEIN_TEST_PASS_ENV=CANARY_API_KEY CANARY_API_KEY="$CANARY" SLURM_CONF="$SLURM_CONF" \
		"$BERNSTEIN" "$@"
}
EXEC_DIRS=$(ls -d /tmp/bernstein-exec.* 2>/dev/null)
slurm_run run plan.yaml
if [ "$RC" = 0 ]; then ok "the run exits 0"; else
	not_ok "the run exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
	for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file "$f" "$f"; done
fi
for f in m1 m2; do
	check "$f.txt merged into main" test "$(git -C "$W" show "main:$f.txt" 2>/dev/null)" = \
		"$( [ $f = m1 ] && echo one || echo two)"
done
for f in s1 s2; do
	check "the shell task $f ran on a node (host-$f.txt)" \
		sh -c "git -C '$W' show 'main:host-$f.txt' | grep -qx 'node[12]'"
	check "the agent of $f got the canary (its hash committed)" \
		test "$(git -C "$W" show "main:canary-$f.txt" 2>/dev/null)" = "$CANARY_SHA"
done
# every task merged once: each task's commit is reachable once, main moved
# by one merge (or fast-forward) per task
check "each task's work is in main exactly once" \
	test "$(git -C "$W" log --format=%s "$BASE..main" | grep -c -e '^m1$' -e '^m2$')" = 2
check "the nodes are named in the relays' logs: node1" \
	sh -c "cat '$W'/.bernstein/runs/*/*/1/agent.log | grep -q \"runs on 'node1'\""
check "the nodes are named in the relays' logs: node2" \
	sh -c "cat '$W'/.bernstein/runs/*/*/1/agent.log | grep -q \"runs on 'node2'\""
check "the mock agent's events were relayed and read with its dialect" \
	sh -c "cat '$W'/.bernstein/runs/*/*/1/events.jsonl | grep -q 'hello from m1'"
check "the canary is nowhere in Slurm's state, spool or logs" \
	sh -c "! grep -r -a -q -F '$CANARY' '$T/cluster'"
check "the canary is nowhere in the hub" sh -c "! grep -r -a -q -F '$CANARY' '$HUBS'"
check "the nodes left no work directory" \
	test "$(ls -d /tmp/bernstein-exec.* 2>/dev/null)" = "$EXEC_DIRS"
check "no job is left in the queue" sh -c "[ -z \"\$(SLURM_CONF='$SLURM_CONF' squeue -h)\" ]"

check "bernstein's git daemon is gone with the run" \
	sh -c "! git ls-remote git://$SLURM_HOST:$GD_PORT/hub.git >/dev/null 2>&1"
test_done
