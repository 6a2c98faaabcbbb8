#!/bin/sh
# Goal mode end to end with claude as the planner and as the worker (issue
# #20): the pinned Claude Code CLI against tests/helpers/fake-llm.py
# (Anthropic Messages). As the planner it runs caged in its view (Landlock,
# where the kernel has it) and writes bernstein-plan.yaml with its Bash
# tool; `bernstein -g` checks the plan, runs its task on claude again (sent
# to the fake server by bernstein.yaml's endpoints:), merges the work, and
# the audit chain, whose plan.generated names claude as the planner,
# verifies; `status` names the goal.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0308 e2e: claude plans a goal, claude does the task, the work is merged"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-300}
require_agents

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
"$PY" - "$T/script.json" <<'PY'
import json, sys
plan = ("printf 'name: greet\\ntasks:\\n  - {title: write greeting, id: greet, adapter: claude, "
        "prompt: create hello.txt containing hi}\\n' > bernstein-plan.yaml")
json.dump({"side": {"text": "Title"}, "responses": [
    {"tool_calls": [{"name": "Bash", "id": "toolu_plan_1",
                     "arguments": {"command": plan, "description": "write the plan"}}]},
    {"text": "Wrote the plan."},
    {"tool_calls": [{"name": "Bash", "id": "toolu_task_1",
                     "arguments": {"command": "printf 'hi\\n' > hello.txt", "description": "write"}}]},
    {"text": "Created hello.txt."}]}, open(sys.argv[1], "w"))
PY
fake_start "$T/script.json"

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'parallel: 1\nsandbox: none\nretry_backoff: 0\nendpoints:\n  claude: {base_url: "%s", api_key_env: ANTHROPIC_API_KEY}\n' \
	"${FAKE_URL%/v1}" >"$W/bernstein.yaml"
printf '# Greeter\n' >"$W/README.md"
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

run PATH="$E2E_BIN:/usr/bin:/bin" ANTHROPIC_API_KEY=e2e-dummy-key "$KEY" "$BERNSTEIN" \
	-g "Add a greeting" --yes --planner claude --planner-model fake-model \
	--set "base_url=${FAKE_URL%/v1}" --set api_key_env=ANTHROPIC_API_KEY
check "run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "claude asked the fake model with the goal" "$PY" -c '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert any("Add a greeting" in json.dumps(r["body"]) for r in reqs), len(reqs)' "$T/requests.jsonl"
check "claude wrote the plan in its view, not in the checkout" \
	sh -c 'ls "$1"/.bernstein/plans/*/view/bernstein-plan.yaml >/dev/null && test ! -e "$1/bernstein-plan.yaml"' sh "$W"
check "the planned task's work (by claude) is merged" grep -qx "hi" "$W/hello.txt"
check "plan.generated names claude as the planner" "$PY" -c '
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
g = [r["details"] for r in recs if r.get("event_type") == "plan.generated"]
assert len(g) == 1 and g[0]["planner_adapter"] == "claude" and g[0]["planner_model"] == "fake-model", g' "$W/.bernstein/audit"
run sh -c "cd '$W' && '$BERNSTEIN' status"
check "status names the goal and claude" grep -q "^goal: Add a greeting (planned by claude, model fake-model, 1 round)" "$T/stdout"
run sh -c "cd '$W' && BERNSTEIN_AUDIT_KEY_PATH='$T/audit.key' '$BERNSTEIN' audit verify"
check "the audit chain verifies" test "$RC" -eq 0
fake_stop
test_done
