#!/bin/sh
# Goal mode end to end with a real CLI as the planner (issue #20): pi
# (pinned in tests/agents/) against tests/helpers/fake-llm.py writes
# bernstein-plan.yaml with its own write tool in its view; `bernstein -g`
# (= run --goal) checks the plan, runs it (the mock agent does the task),
# merges the work, and the audit chain, with its plan.generated record
# naming pi as the planner, verifies.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0305 e2e: pi plans a goal, the plan runs, the work is merged"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}
require_agents

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'parallel: 1\nsandbox: none\n' >"$W/bernstein.yaml"
printf '# Greeter\n' >"$W/README.md"
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

"$PY" - "$T/script.json" <<'PY'
import json, sys
plan = """name: greet
description: add a greeting
tasks:
  - title: write greeting
    id: greet
    adapter: mock
    prompt: "write hello.txt hello from the plan"
"""
json.dump({"side": {"text": "Title"}, "responses": [
    {"tool_calls": [{"name": "write", "id": "call_1",
                     "arguments": {"path": "bernstein-plan.yaml", "content": plan}}]},
    {"text": "Wrote the plan."}]}, open(sys.argv[1], "w"))
PY
fake_start "$T/script.json"

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY=e2e-dummy-key "$KEY" "$BERNSTEIN" \
	-g "Add a greeting" --yes --planner pi --planner-model fake-model \
	--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY
check "run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "pi asked the fake model with the goal" "$PY" -c '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert any("Add a greeting" in json.dumps(r["body"]) for r in reqs), len(reqs)' "$T/requests.jsonl"
check "the planned task's work is merged" grep -qx "hello from the plan" "$W/hello.txt"
check "pi wrote the plan in its view, not in the checkout" \
	sh -c 'ls "$1"/.bernstein/plans/*/view/bernstein-plan.yaml >/dev/null && test ! -e "$1/bernstein-plan.yaml"' sh "$W"
check "plan.generated names pi as the planner" "$PY" -c '
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
g = [r["details"] for r in recs if r.get("event_type") == "plan.generated"]
assert len(g) == 1 and g[0]["planner_adapter"] == "pi" and len(g[0]["planner_profile_hash"]) == 64, g' "$W/.bernstein/audit"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify
fake_stop
test_done
