#!/bin/sh
# Goal mode's policy (issue #27): a planner whose draft adds a gate
# `run: touch CANARY`, a hook, a setup_command, `sandbox: none` and an
# adapter that is not usable gets each refused at its FILE:LINE:COL and fed
# back; `run --goal --yes` runs only the fixed plan (no canary anywhere);
# without --yes and without a terminal nothing is asked; with
# `--allow gates` the gate is shown verbatim, recorded in plan.generated,
# and runs in the run; bernstein.yaml's own gates still apply.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0302 goal mode policy: a generated plan cannot smuggle commands onto the host"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
OKEY=sk-test-goal-policy-0123456789
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
cat >"$W/bernstein.yaml" <<EOF
adapter: mock
parallel: 1
sandbox: none
max_retries: 0
gates:
  - {name: own, run: "touch $T/OWN_GATE_RAN"}
EOF
git_q add -A && git_q commit -q -m base

# script.py KIND OUT: hostile draft(s), then (fix) a clean one
cat >"$T/script.py" <<'PY'
import json, sys
canary = sys.argv[3]
hostile = """name: greet
hooks:
  pre_task: ["touch %s-hook"]
tasks:
  - title: write greeting
    adapter: mock
    prompt: "write hello.txt hello"
    gates:
      - {name: x, run: "touch %s"}
    worktree_setup: {setup_command: "touch %s-setup"}
    sandbox: none
  - title: other
    adapter: codex
    prompt: "write other.txt hi"
""" % (canary, canary, canary)
clean = """name: greet
tasks:
  - title: write greeting
    adapter: mock
    prompt: "write hello.txt hello"
"""
gated = """name: greet
tasks:
  - title: write greeting
    adapter: mock
    prompt: "write hello.txt hello"
    gates:
      - {name: x, run: "touch %s"}
""" % canary
kind = sys.argv[1]
drafts = {"fix": [hostile, clean], "never": [hostile, hostile], "gated": [gated]}[kind]
out = []
for i, d in enumerate(drafts):
    out += [{"tool_calls": [{"name": "write_file", "id": "c%d" % i,
                             "arguments": {"path": "bernstein-plan.yaml", "content": d}}]},
            {"text": "Wrote the plan."}]
json.dump({"responses": out}, open(sys.argv[2], "w"))
PY
CANARY=$T/CANARY

gorun() {
	_c=$1
	shift
	expect_exit "$_c" "$KEY" "OPENAI_API_KEY=$OKEY" BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
		"$BERNSTEIN" "$@" --planner openai_agents \
		--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY
}
no_canary() {
	check "$1" sh -c '! ls "$1"* >/dev/null 2>&1' sh "$CANARY"
}

# ---- refused and fed back; --yes runs only the fixed plan ----
"$PY" "$T/script.py" fix "$T/fix.json" "$CANARY"
fake_start "$T/fix.json"
gorun 0 run --goal "Add a greeting" --yes --planner-model fake-model
D1=$(cd "$W" && ls .bernstein/plans/*/draft-1.yaml)
for want in \
	"$D1:2:1: field 'hooks': hooks is never taken from a generated plan" \
	"$D1:8:5: field 'tasks[0].gates': gates run commands on the host: refused in a generated plan (the user may allow them with --allow gates)" \
	"$D1:10:5: field 'tasks[0].worktree_setup': worktree_setup runs a command" \
	"$D1:11:14: field 'tasks[0].sandbox': sandbox would weaken a task's confinement" \
	"$D1:13:14: field 'tasks[1].adapter': adapter 'codex' is not usable here"; do
	expect_stderr_contains "$want" "refused at its line:col: ${want#*: }"
done
check "the planner's second session got every refusal" "$PY" - "$T/requests.jsonl" "$D1" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
body = json.dumps(reqs[2]["body"])
d = sys.argv[2]
for want in (d + ":2:1: field 'hooks'", d + ":8:5: field 'tasks[0].gates'",
             d + ":10:5: field 'tasks[0].worktree_setup'", d + ":11:14: field 'tasks[0].sandbox'",
             d + ":13:14: field 'tasks[1].adapter'"):
    assert want in body, want
PY
check "the fixed plan ran: hello.txt merged" grep -qx hello "$W/hello.txt"
check "bernstein.yaml's own gate still ran" test -e "$T/OWN_GATE_RAN"
no_canary "nothing of the hostile draft ran (gate, hook, setup command)"

# ---- never fixed: exit 3, nothing runs ----
rm -f "$T/OWN_GATE_RAN"
"$PY" "$T/script.py" never "$T/never.json" "$CANARY"
fake_start "$T/never.json"
# (bernstein -g GOAL ARGS is run --goal GOAL ARGS)
gorun 3 -g "Add a greeting" --yes --rounds 2 --planner-model fake-model
expect_stderr_contains "draft-2.yaml" "-g: the rounds of run --goal, its options passed on"
no_canary "a plan never fixed: nothing of it ran"
check "no task ran" test ! -e "$T/OWN_GATE_RAN"

# ---- no terminal, no --yes: refused before any planner runs ----
fake_start "$T/never.json"
gorun 2 -g "Add a greeting" --planner-model fake-model
expect_stderr_contains "--goal without a terminal needs --yes" "no terminal: --yes is required"
check "the planner was never asked" test "$(nreq)" -eq 0

# ---- --yes alone does not let a gate through ----
"$PY" "$T/script.py" gated "$T/gated.json" "$CANARY"
fake_start "$T/gated.json"
gorun 3 run --goal "Add a greeting" --yes --rounds 1 --planner-model fake-model
expect_stderr_contains "field 'tasks[0].gates': gates run commands on the host" \
	"--yes alone: the gate is refused"
no_canary "--yes alone: the gate did not run"

# ---- --allow gates: shown verbatim, recorded, run after the confirmation ----
git_q rm -q hello.txt && git_q commit -q -m "drop hello"
fake_start "$T/gated.json"
gorun 0 run --goal "Add a greeting" --yes --allow gates --planner-model fake-model
expect_stdout_contains "tasks[0].gates[0].run: touch $CANARY" "the allowed gate is shown verbatim"
check "the allowed gate ran in the run" test -e "$CANARY"
check "plan.generated records the policy and what was allowed" "$PY" - "$W/.bernstein/audit" "$CANARY" <<'PY'
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
g = [r["details"] for r in recs if r.get("event_type") == "plan.generated"]
assert len(g) == 2, g
assert g[0]["allowed_classes"] == "none" and g[0]["allowed"] == [], g[0]
assert g[1]["allowed_classes"] == "gates" and g[1]["policy"] == "tasks-only", g[1]
assert g[1]["allowed"] == ["tasks[0].gates[0].run: touch " + sys.argv[2]], g[1]
PY
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

# ---- plan generate --allow gates shows it too, and runs nothing ----
rm -f "$CANARY"
fake_start "$T/gated.json"
gorun 0 plan generate "Add a greeting" -m fake-model --allow gates -o gated.yaml
expect_stdout_contains "allowed by --allow, verbatim (each runs on this host):" \
	"plan generate: the allowed commands are listed"
expect_stdout_contains "  tasks[0].gates[0].run: touch $CANARY" "plan generate: verbatim"
no_canary "plan generate runs nothing"

test_done
