#!/bin/sh
# Goal mode (issue #20): `bernstein plan generate GOAL` with the built-in
# runner as the planner, against tests/helpers/fake-llm.py. The fake model
# writes bernstein-plan.yaml with the runner's write_file tool in the
# planner's view (a scratch clone), bernstein checks it, writes it to -o,
# keeps the draft, and records plan.generated in the audit chain. The first
# request carries the goal, the repository summary, the usable adapters and
# the schema; the main checkout is not touched by the planner.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0300 plan generate: a planner writes a valid plan"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
OKEY=sk-test-goal-generate-0123456789
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nparallel: 1\nsandbox: none\n' >"$W/bernstein.yaml"
printf '# Greeter\nA tiny project that greets. GREETER-README-MARK\n' >"$W/README.md"
mkdir -p "$W/src" && printf 'int main(void) { return 0; }\n' >"$W/src/main.c"
git_q add -A && git_q commit -q -m base

"$PY" - "$T/script.json" <<'PY'
import json, sys
plan = """name: greet
description: add a greeting
tasks:
  - title: write greeting
    id: greet
    adapter: mock
    prompt: "Create hello.txt containing hello."
  - title: review greeting
    role: reviewer
    adapter: mock
    depends_on: [greet]
    prompt: "Review hello.txt."
"""
json.dump({"responses": [
    {"tool_calls": [{"name": "write_file", "id": "c1",
                     "arguments": {"path": "bernstein-plan.yaml", "content": plan}}]},
    {"text": "Wrote the plan."}]}, open(sys.argv[1], "w"))
PY
fake_start "$T/script.json"

gen() {
	_c=$1
	shift
	expect_exit "$_c" "$KEY" "OPENAI_API_KEY=$OKEY" BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
		"$BERNSTEIN" plan generate --planner openai_agents -m fake-model \
		--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY "$@"
}

gen 0 -o plan.yaml "Add a greeting"
expect_stdout_contains "plan: plan.yaml (2 tasks" "the plan is named with its task count"
expect_stdout_contains "review-greeting" "the tasks are listed"
check "the plan was written where -o says" grep -q "id: greet" "$W/plan.yaml"
check "the plan loads" sh -c 'cd "$1" && "$2" plan validate plan.yaml' sh "$W" "$BERNSTEIN"
check "one draft is kept under .bernstein/plans" \
	sh -c 'test "$(ls "$1"/.bernstein/plans/*/draft-*.yaml | wc -l)" -eq 1' sh "$W"
check "the planner never wrote into the main checkout" test ! -e "$W/bernstein-plan.yaml"
check "the planner's file is in its view" \
	sh -c 'ls "$1"/.bernstein/plans/*/view/bernstein-plan.yaml >/dev/null' sh "$W"
check "the main checkout has nothing new but -o's file" \
	test "$(git -C "$W" status --porcelain)" = "?? plan.yaml"
check "the first request carries the goal, the summary, the adapters and the schema" \
	"$PY" - "$T/requests.jsonl" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
m = json.dumps(r["body"])
for want in ("Add a greeting", "src/main.c", "GREETER-README-MARK", "mock", "openai_agents",
             "depends_on", "bernstein-plan.yaml", "reviewer"):
    assert want in m, want
PY
check "plan.generated is in the audit chain with the goal, the hash and the planner" \
	"$PY" - "$W/.bernstein/audit" "$W/plan.yaml" <<'PY'
import glob, hashlib, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
g = [r for r in recs if r.get("event_type") == "plan.generated"]
assert len(g) == 1, [r.get("event_type") for r in recs]
d = g[0]["details"]
h = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert d["goal"] == "Add a greeting" and d["plan_hash"] == h, d
assert d["planner_adapter"] == "openai_agents" and d["planner_model"] == "fake-model", d
assert len(d["planner_profile_hash"]) == 64 and d["allowed_classes"] == "none", d
assert d["allowed"] == [] and d["rounds"] == 1, d
PY
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify
check "the key's value is in nothing bernstein wrote" \
	sh -c '! grep -rq "$1" "$2/.bernstein" "$3/stdout" "$3/stderr"' sh "$OKEY" "$W" "$T"

# --json, default output path
fake_start "$T/script.json"
gen 0 --json "Add a greeting"
check "--json: valid, the plan file under .bernstein/plans, one round" "$PY" - "$T/stdout" "$W" <<'PY'
import json, os, sys
o = json.load(open(sys.argv[1]))
assert o["valid"] is True and o["rounds"] == 1 and o["tasks"] == 2, o
assert o["plan_file"].startswith(".bernstein/plans/") and o["plan_file"].endswith("/plan.yaml"), o
assert os.path.isfile(os.path.join(sys.argv[2], o["plan_file"])), o
assert len(o["drafts"]) == 1 and o["problems"] == "", o
PY

# a planner that cannot run at all (no model): spawn's reason, exit 2, no rounds
expect_exit 2 "$KEY" "OPENAI_API_KEY=$OKEY" "$BERNSTEIN" plan generate --planner openai_agents \
	--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY "Add a greeting"
expect_stderr_contains "the planner 'openai_agents' cannot run: " "the planner's refusal is said"
expect_stderr_contains "needs a model" "with spawn's own reason"
check "no second round was tried" sh -c '! grep -q "round 2/" "$1/stderr"' sh "$T"

# usage
expect_exit 2 "$BERNSTEIN" plan generate
expect_exit 2 "$BERNSTEIN" plan generate --planner openai_agents --allow nosuch "goal"
expect_stderr_contains "unknown class 'nosuch'" "--allow names the bad class"
expect_exit 2 "$KEY" "$BERNSTEIN" plan generate --planner nosuch "goal"
expect_stderr_contains "unknown planner adapter 'nosuch'" "an unknown planner is named"

test_done
