#!/bin/sh
# Goal mode offline (issue #20): `bernstein demo --goal` has the mock agent
# plan: it carries out the instruction lines of its goal, which write
# bernstein-plan.yaml in its view as a real planner would; bernstein checks
# it (a task that routing would refuse is a problem at its line:col),
# the draft, records plan.generated in the audit chain and the plan in
# state.db, runs it, and `status` names the goal and the planner. A run of a
# plan written by hand has no goal.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0306 demo --goal: the mock agent as planner, offline"

D=$T/demo
expect_exit 0 "$BERNSTEIN" demo --goal "$D"
expect_stdout_contains "goal:   Write a greeting and a farewell" "the goal is shown"
expect_stdout_contains "plan: .bernstein/plans/" "the generated plan is named"
expect_stdout_contains "verified" "the audit chain verifies"
check "the planner's draft is kept" sh -c 'ls "$1"/.bernstein/plans/*/draft-1.yaml' sh "$D"
check "the main checkout has no planner file" test ! -e "$D/bernstein-plan.yaml"
check "the demo plan was not written (the planner wrote the plan)" test ! -e "$D/plan.yaml"
for f in greeting.txt farewell.txt NOTES.md; do
	check "$f merged by the generated plan's task" git -C "$D" cat-file -e "HEAD:$f"
done

expect_exit 0 "$BERNSTEIN" -C "$D" status
expect_stdout_contains "goal: Write a greeting and a farewell in two files, then notes about both. ... (planned by mock, 1 round)" "status names the goal and the planner"
expect_exit 0 "$BERNSTEIN" -C "$D" status --json
check "status --json: the goal record" "$PY" - "$T/stdout" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
g = o["goal"]
assert g["planner_adapter"] == "mock", g
assert g["plan_hash"] == o["plan_hash"], (g, o["plan_hash"])
assert g["goal"].startswith("Write a greeting"), g
assert g["policy"] == "tasks-only" and g["allowed"] == [], g
assert g["rounds"] == 1 and len(g["drafts"]) == 1, g
PY
check "state.db keeps the generated plan" "$PY" -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("SELECT count(*) FROM generated_plans WHERE plan_hash = (SELECT plan_hash FROM runs)").fetchone()[0]
assert n == 1, n' "$D/.bernstein/state.db"
check "the audit chain has plan.generated" sh -c 'grep -rq "plan.generated" "$1/.bernstein/audit"' sh "$D"

# the routing preflight on every task of a draft: a capability its adapter
# lacks, or that no usable adapter has, is a problem at the task's line:col
# (and with one round, exit 3: nothing runs)
printf '%s\n' 'Plan two tasks.' \
	'write bernstein-plan.yaml name: route' \
	'append bernstein-plan.yaml tasks:' \
	'append bernstein-plan.yaml - {id: a, title: a, adapter: mock, prompt: p, requires: ["capability:computer_use"]}' \
	'append bernstein-plan.yaml - {id: b, title: b, prompt: q, requires: ["capability:sandbox=microvm"]}' \
	>"$T/route-goal.txt"
expect_exit 3 BERNSTEIN_AUDIT_KEY_PATH="$D/.bernstein/audit.key" "$BERNSTEIN" -C "$D" plan generate --planner mock --rounds 1 "$(cat "$T/route-goal.txt")"
expect_stderr_contains "draft-1.yaml:3:3: task 'a': adapter 'mock' does not meet its requirements (unmet: computer_use); routing would refuse it"
expect_stderr_contains "draft-1.yaml:4:3: task 'b': no usable adapter meets its requirements (unmet: sandbox); routing would refuse it"

# a plan written by hand: no goal
P=$T/plain
expect_exit 0 "$BERNSTEIN" demo "$P"
expect_exit 0 "$BERNSTEIN" -C "$P" status
check "a hand-written plan's status has no goal line" sh -c '! grep -q "^goal:" "$1"' sh "$T/stdout"
expect_exit 0 "$BERNSTEIN" -C "$P" status --json
check "status --json: goal is null" "$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["goal"] is None' "$T/stdout"

# --goal takes no argument: a stray one is the directory, a second one is refused
expect_exit 2 "$BERNSTEIN" demo --goal "$T/x" "$T/y"
expect_stderr_contains "unexpected argument"

test_done
