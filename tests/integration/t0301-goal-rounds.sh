#!/bin/sh
# Goal mode's rounds (issue #20): a planner whose first draft is invalid gets
# the exact FILE:LINE:COL problems back (its session resumed: the runner's
# transcript) and fixes them; one that never gets it right ends with exit 3,
# the last problems on stderr and every draft kept under .bernstein/plans/.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0301 plan generate: problems go back to the planner, bounded rounds"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
OKEY=sk-test-goal-rounds-0123456789
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nparallel: 1\nsandbox: none\n' >"$W/bernstein.yaml"
git_q add -A && git_q commit -q -m base

# script.py MODE OUT: the fake model's turns. bad: an unknown role and a
# dangling dependency; good: the fixed plan.
cat >"$T/script.py" <<'PY'
import json, sys
bad = """name: greet
tasks:
  - title: write greeting
    role: wizard
    prompt: "Create hello.txt."
    depends_on: [nosuch]
"""
good = """name: greet
tasks:
  - title: write greeting
    adapter: mock
    prompt: "Create hello.txt."
"""
def write(content, i):
    return [{"tool_calls": [{"name": "write_file", "id": "c%d" % i,
                             "arguments": {"path": "bernstein-plan.yaml", "content": content}}]},
            {"text": "Wrote the plan."}]
drafts = [bad, good] if sys.argv[1] == "fix" else [bad, bad, bad]
out = []
for i, d in enumerate(drafts):
    out += write(d, i)
json.dump({"responses": out}, open(sys.argv[2], "w"))
PY

gen() {
	_c=$1
	shift
	expect_exit "$_c" "$KEY" "OPENAI_API_KEY=$OKEY" BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
		"$BERNSTEIN" plan generate --planner openai_agents -m fake-model \
		--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY "$@"
}

# ---- invalid, then fixed ----
"$PY" "$T/script.py" fix "$T/fix.json"
fake_start "$T/fix.json"
gen 0 -o plan.yaml "Add a greeting"
expect_stderr_contains "round 2/3: openai_agents plans (its session resumed)" \
	"the second round resumes the planner's session"
expect_stderr_contains "draft-1.yaml:4:11: field 'tasks[0].role': unknown role 'wizard'" \
	"the first draft's problem is shown at its line:col"
check "the fake server was asked four times" test "$(nreq)" -eq 4
check "the second session's request carries the first draft's exact problems" \
	"$PY" - "$T/requests.jsonl" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
third = json.dumps(reqs[2]["body"])
assert "draft-1.yaml:4:11: field 'tasks[0].role': unknown role 'wizard'" in third, third[-2000:]
assert "unknown task 'nosuch'" in third
# the resumed session carries the first conversation too
assert "Create hello.txt" in third and "You are the planner" in third
first = json.dumps(reqs[0]["body"])
assert "unknown role" not in first
PY
check "the plan written is the fixed one" sh -c '! grep -q wizard "$1/plan.yaml"' sh "$W"
check "both drafts are kept" \
	sh -c 'test "$(ls "$1"/.bernstein/plans/*/draft-*.yaml | wc -l)" -eq 2' sh "$W"
check "plan.generated records two rounds" "$PY" - "$W/.bernstein/audit" <<'PY'
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
g = [r for r in recs if r.get("event_type") == "plan.generated"]
assert len(g) == 1 and g[0]["details"]["rounds"] == 2 and len(g[0]["details"]["drafts"]) == 2, g
PY

# ---- never right: exit 3, the last problems, every draft kept ----
rm -rf "$W/.bernstein/plans" "$W/plan2.yaml"
"$PY" "$T/script.py" never "$T/never.json"
fake_start "$T/never.json"
gen 3 -o plan2.yaml "Add a greeting"
expect_stderr_contains "no valid plan after 3 rounds" "it says it gave up after 3 rounds"
expect_stderr_contains "draft-3.yaml:4:11: field 'tasks[0].role': unknown role 'wizard'" \
	"the last draft's problems are shown"
check "three drafts are kept" \
	sh -c 'test "$(ls "$1"/.bernstein/plans/*/draft-*.yaml | wc -l)" -eq 3' sh "$W"
check "no plan was written" test ! -e "$W/plan2.yaml"
check "the fake server was asked six times" test "$(nreq)" -eq 6
check "no second plan.generated" "$PY" - "$W/.bernstein/audit" <<'PY'
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
assert len([r for r in recs if r.get("event_type") == "plan.generated"]) == 1
PY

# --rounds 1 --json: invalid at once
"$PY" "$T/script.py" never "$T/never.json"
fake_start "$T/never.json"
gen 3 --rounds 1 --json "Add a greeting"
check "--json: not valid, the problems, one draft" "$PY" - "$T/stdout" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["valid"] is False and o["rounds"] == 1 and len(o["drafts"]) == 1, o
assert "unknown role 'wizard'" in o["problems"] and o["plan_file"] is None, o
PY

test_done
