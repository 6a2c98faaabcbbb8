#!/bin/sh
# Issue #23: with the git daemon bernstein starts for the hub
# (slurm.git_daemon) the nodes no longer push: each sends its branch back as
# a git bundle on its own authenticated TLS connection, and the daemon runs
# without receive-pack. While the run goes on, a push to the daemon (a new
# branch, or a task's own branch, as anyone on the cluster network could
# try) is refused; the run still merges every task once, from the bundles:
# the hub's task branches never move past the base.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0367 executor: slurm: branches come back as bundles; the hub takes no push"

slurm_test_setup bernstein
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
cat >"$W/plan.yaml" <<'EOF'
name: bundle
tasks:
  - title: m1
    prompt: "sleep 3\nwrite m1.txt one\ncommit m1"
  - title: m2
    prompt: "sleep 3\nwrite m2.txt two\ncommit m2"
  - title: s1
    adapter: shell
    prompt: "mkdir -p sub && echo three > sub/s1.txt && sleep 3"
EOF
git_q add -A
git_q commit -q -m base
BASE=$(git -C "$W" rev-parse HEAD)
HUB=git://$SLURM_HOST:$GD_PORT/hub.git

slurm_bg run plan.yaml
check "the tasks' jobs run" \
	wait_until '[ "$(ls "$W"/.bernstein/runs/*/*/slurm-job 2>/dev/null | wc -l)" -ge 1 ] && git ls-remote "$HUB" >/dev/null 2>&1'
BR=$(git ls-remote "$HUB" 'refs/heads/bernstein/*' 2>/dev/null | awk 'NR == 1 { print $2 }')
check "bernstein's git daemon serves the hub (a task's branch: $BR)" test -n "$BR"
git clone -q "$HUB" "$T/intruder" >/dev/null 2>&1
git -C "$T/intruder" -c user.name=x -c user.email=x@example.com commit -q --allow-empty -m intruder
if git -C "$T/intruder" push -q "$HUB" HEAD:refs/heads/evil >"$T/push1.err" 2>&1; then
	not_ok "a push of a new branch to the daemon is refused"
else
	ok "a push of a new branch to the daemon is refused"
fi
if git -C "$T/intruder" push -q --force "$HUB" "HEAD:$BR" >"$T/push2.err" 2>&1; then
	not_ok "a push to a running task's branch is refused"
else
	ok "a push to a running task's branch is refused"
fi
check "the daemon says it does not serve receive-pack" \
	grep -q -i -e 'service not enabled' -e 'access denied' "$T/push1.err"
check "the hub has no branch of the intruder" \
	sh -c "! git --git-dir='$HUBS/hub.git' rev-parse -q --verify refs/heads/evil >/dev/null"

wait "$BGPID"
BRC=$?
BGPID=
if [ "$BRC" = 0 ]; then ok "the run exits 0"; else
	not_ok "the run exits 0 (got $BRC)"
	_diag_file stderr "$T/bg.err"
	for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file "$f" "$f"; done
fi
check "m1 merged" test "$(git -C "$W" show main:m1.txt 2>/dev/null)" = one
check "m2 merged" test "$(git -C "$W" show main:m2.txt 2>/dev/null)" = two
check "s1's uncommitted file (committed on the node) merged" \
	test "$(git -C "$W" show main:sub/s1.txt 2>/dev/null)" = three
check "each task's work is in main exactly once" \
	test "$(git -C "$W" log --format=%s "$BASE..main" | grep -c -e '^m1$' -e '^m2$')" = 2
check "the intruder's commit is nowhere in main" \
	sh -c "! git -C '$W' log --format=%s main | grep -q intruder"
check "the hub's task branches stayed at the base (the work came as bundles)" \
	sh -c "git --git-dir='$HUBS/hub.git' for-each-ref --format='%(objectname)' refs/heads/bernstein/ | grep -v -x '$BASE' | wc -l | grep -qx 0"
check "no bundle is left in the attempts' directories" \
	sh -c "[ -z \"\$(ls '$W'/.bernstein/runs/*/*/*/result.bundle 2>/dev/null)\" ]"
check "no job is left in the queue" sh -c "[ -z \"\$(SLURM_CONF='$SLURM_CONF' squeue -h)\" ]"
test_done
