#!/bin/sh
# worktree_setup with a real CLI (issue #19): pi (pinned in tests/agents/)
# against tests/helpers/fake-llm.py writes hello.txt; the gate `tests`
# needs deps/installed, which only the setup_command makes (from the copied
# .env). In the sandbox tier sandbox: auto gives pi here (its network the
# default for its tier: the llm proxy where the tier has a network namespace),
# the setup runs confined like the gate; the run succeeds, the work is
# merged, the setup's output is in setup.log and nothing it made is
# committed. The same run also shows the rest of issue #19 with a real CLI:
# the pre_task and post_merge hooks get the event on stdin; the tokens pi
# reported are the attempt's (task.cost, `bernstein cost`); a budget's
# warn_at crossed by them is a budget.warn record; the webhook (a local
# receiver, tests/helpers/webhook-server.py) gets task_done, budget_warn and
# run_done.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0279 e2e: pi with a setup_command, hooks, cost, a budget and a webhook"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n.env\ndeps/\n' >"$W/.gitignore"
printf 'test -f deps/installed || { echo "deps missing"; exit 2; }\n' >"$W/check.sh"
cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "write", "id": "call_1", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
  {"text": "Created hello.txt."}]}
EOF
fake_start "$T/script.json"
WH_PID=
trap '[ -n "$WH_PID" ] && kill "$WH_PID" 2>/dev/null; _lib_cleanup' EXIT
$PY "$SRCDIR/tests/helpers/webhook-server.py" --port-file "$T/wh.port" --log "$T/wh.log" \
	--max-seconds 250 &
WH_PID=$!
i=0
while [ ! -s "$T/wh.port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
mkdir -p "$T/hooks"
cat >"$W/bernstein.yaml" <<EOF
parallel: 1
timeout: 150
max_retries: 0
gates: [{name: tests, run: "sh check.sh"}]
worktree_setup:
  copy_files: [.env]
  setup_command: "echo setup-t0279; mkdir -p deps && cp .env deps/installed"
hooks:
  pre_task: "cat > $T/hooks/pre_task.json"
  post_merge: "cat > $T/hooks/post_merge.json"
notify:
  webhook: "http://127.0.0.1:$(cat "$T/wh.port")/hook"
  on: [task_done, run_done, budget_warn]
  retries: 0
budget: {max_tokens: 100000000, warn_at: 0.0000001}
EOF
cat >"$W/plan.yaml" <<EOF
name: setup pi
tasks:
  - title: hello
    id: hello
    adapter: pi
    sampling: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
    prompt: write hello.txt
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1
printf 'KEY=t0279\n' >"$W/.env"

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY=e2e-dummy-key "$BERNSTEIN" run plan.yaml
check "run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "the gate passed" grep -q "1 gate(s) passed" "$T/stdout"
check "pi's file is merged" grep -q hi "$W/hello.txt"
LOG=$(ls "$W"/.bernstein/runs/*/hello-*/1/setup.log 2>/dev/null | head -n 1)
check "setup.log holds the setup's output" grep -qx setup-t0279 "$LOG"
check "nothing the setup made is committed" sh -c "! git -C '$W' log --all --name-only --format= | grep -q '^deps/'"
check "pre_task got the task's event on stdin" $PY -c '
import json, sys
e = json.load(open(sys.argv[1]))
assert e["hook"] == "pre_task" and e["task"] == "hello" and e["attempt"] == 1, e' "$T/hooks/pre_task.json"
check "post_merge got the merged head" $PY -c '
import json, sys
e = json.load(open(sys.argv[1]))
assert e["hook"] == "post_merge" and e["task"] == "hello" and len(e["merge_commit"]) >= 40, e' "$T/hooks/post_merge.json"
run "$BERNSTEIN" cost --json
check "cost: pi's tokens are the task's" $PY -c '
import json, sys
o = json.load(open(sys.argv[1]))
t = [g for g in o["groups"] if g["task"] == "hello"]
assert t and t[0]["input_tokens"] > 0 and t[0]["output_tokens"] > 0, o' "$T/stdout"
check "task.cost and budget.warn in the audit chain" $PY -c '
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
types = [r["event_type"] for r in recs]
assert "task.cost" in types and "budget.warn" in types, types' "$W/.bernstein/audit"
i=0
while [ "$(grep -c '"method": "POST"' "$T/wh.log" 2>/dev/null)" -lt 3 ] && [ $i -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the webhook got task_done, budget_warn and run_done" $PY -c '
import json, sys
ev = sorted(json.loads(l)["body"]["event"] for l in open(sys.argv[1]) if "\"method\"" in l)
assert ev == ["budget_warn", "run_done", "task_done"], ev' "$T/wh.log"
run "$BERNSTEIN" status --json
diag "the tier: $(grep -o '"sandbox": "[a-z]*"' "$T/stdout" | head -n 1)"
fake_stop
test_done
