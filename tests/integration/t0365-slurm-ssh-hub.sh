#!/bin/sh
# Issue #23: executor: slurm with an ssh:// hub on the real two-node cluster
# (tests/integration/slurm-lib.sh): no git daemon at all; the nodes clone
# and push the task's branch over ssh to an sshd of the test's own on the
# host's link address (its own host key, one authorized key made here; no
# change to /etc/ssh or root's ~/.ssh), with the client command the user
# gives as slurm.ssh_command (the identity and known_hosts to use). Every
# task merged once; both nodes logged in with the test's key.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0365 executor: slurm with an ssh:// hub"

slurm_test_setup ssh

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
cat >"$W/plan.yaml" <<EOF
name: sshhub
tasks:
  - title: m1
    prompt: "sleep 1\nwrite m1.txt one\ncommit m1"
  - title: m2
    prompt: "sleep 1\nwrite m2.txt two\ncommit m2"
  - title: s1
    adapter: shell
    prompt: "hostname > host-s1.txt; sleep 1"
EOF
git_q add -A
git_q commit -q -m base
BASE=$(git -C "$W" rev-parse HEAD)

run SLURM_CONF="$SLURM_CONF" "$BERNSTEIN" run plan.yaml
if [ "$RC" = 0 ]; then ok "the run exits 0"; else
	not_ok "the run exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
	for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file "$f" "$f"; done
	_diag_file sshd "$T/ssh/sshd.log"
fi
check "m1 merged into main" test "$(git -C "$W" show main:m1.txt 2>/dev/null)" = one
check "m2 merged into main" test "$(git -C "$W" show main:m2.txt 2>/dev/null)" = two
check "the shell task ran on a node" sh -c "git -C '$W' show main:host-s1.txt | grep -qx 'node[12]'"
check "each task's work is in main exactly once" \
	test "$(git -C "$W" log --format=%s "$BASE..main" | grep -c -e '^m1$' -e '^m2$')" = 2
# every clone and every push is one ssh session from a node's address
check "the nodes logged in to the test's sshd with the test's key" \
	sh -c "grep 'Accepted publickey for root from 10.215.[12].2' '$T/ssh/sshd.log' | grep -q ED25519"
check "at least one clone and one push per task over ssh (6 sessions)" \
	test "$(grep -c 'Accepted publickey for root from 10.215' "$T/ssh/sshd.log")" -ge 6
check "the hub holds each task's branch" \
	test "$(git -C "$HUBS/hub.git" for-each-ref --format=x refs/heads/bernstein/ | wc -l)" = 3
check "no git daemon listens (the hub is reached only over ssh)" \
	sh -c "! git ls-remote git://$SLURM_HOST:$GD_PORT/hub.git >/dev/null 2>&1"
check "no job is left in the queue" sh -c "[ -z \"\$(SLURM_CONF='$SLURM_CONF' squeue -h)\" ]"
test_done
