#!/bin/sh
# A gate run again by `bernstein resume` keeps its attempt's records: its
# log is the attempt's gate log and, in network: llm, the proxy's refusal of
# what it reached for is an event of the attempt (as in the run that was
# interrupted). Before, a resumed task had no attempt directory: the gate's
# log went elsewhere and its refusals were never read.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0251 a resumed gate's log and network refusals stay with its attempt"

require_landlock
require_bwrap

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
printf 'runtime:\n  sandbox:\n    tiers: [bwrap]\n    hosts: [api.provider.invalid]\n' \
	>>"$W/.bernstein/catalog/profiles/shell.yaml"
# the gate waits (at most 30 s) for gate-go in the task's tree, then
# reaches for a host the task may not reach
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
sandbox: bwrap
network: llm
kill_grace: 1
gates:
  - name: probe
    run: "echo probe-started; i=0; while [ ! -e gate-go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; curl -s -m 5 -p -o /dev/null https://gate.refused.invalid/; echo probe-done; true"
EOF
cat >"$W/plan.yaml" <<'EOF'
name: gres
tasks:
  - title: work
    prompt: "echo work > work.txt"
EOF
git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1

# the run, interrupted (SIGINT) while its gate waits: the task stays completing
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
	"$BERNSTEIN" run plan.yaml) </dev/null >"$T/run.out" 2>&1 &
BG=$!
i=0
while ! grep -qs probe-started "$W"/.bernstein/runs/*/*/1/gate-probe.log && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the gate started in the first run (its log is the attempt's)" \
	sh -c "grep -qs probe-started '$W'/.bernstein/runs/*/*/1/gate-probe.log"
kill -INT "$BG"
wait "$BG"
check "interrupted: the task waits in completing" test "$(task_state work)" = completing
rm -f "$W"/.bernstein/runs/*/*/1/gate-probe.log
TREE=$(ls -d "$W"/.bernstein/worktrees/*/ | head -n 1)
: >"$TREE/gate-go"
chmod 666 "$TREE/gate-go"

expect_exit 0 "$BERNSTEIN" resume
check "resumed: done" test "$(task_state work)" = done
check "the resumed gate's log is the attempt's" \
	sh -c "grep -qs probe-done '$W'/.bernstein/runs/*/*/1/gate-probe.log"
check "the resumed gate's refusal is an event of the attempt" \
	sh -c "grep -q \"gate 'probe': network: the proxy refused 'gate.refused.invalid:443'\" '$W'/.bernstein/runs/*/*/1/events.jsonl"
test_done
