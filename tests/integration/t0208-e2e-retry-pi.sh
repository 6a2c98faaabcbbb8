#!/bin/sh
# A real CLI retried (issue #18, docs/runs.md "Retries, escalation and
# fallback"): pi (pinned in tests/agents/) against tests/helpers/fake-llm.py
# answering HTTP 500 until pi gives up (pi 0.x and its OpenAI SDK retry a
# 500 themselves: twelve requests in all), then a write tool call and a
# text. The first attempt fails on the 500; the retry (pi's own session,
# resumed natively) writes the file, and the task is merged. The 500s ask
# for a 10 ms wait (retry-after-ms, which the SDK honours); pi's own
# retries still wait seconds between them.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0208 e2e: pi failed by HTTP 500, retried, then done"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
e500='{"status": 500, "headers": {"retry-after-ms": "10"}, "error": "fake-llm t0208 upstream down"},'
cat >"$T/script.json" <<EOF
{"side": {"text": "Title"}, "responses": [
  $e500 $e500 $e500 $e500 $e500 $e500 $e500 $e500 $e500 $e500 $e500 $e500
  {"tool_calls": [{"name": "write", "id": "call_1", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
  {"text": "Created hello.txt."}]}
EOF
fake_start "$T/script.json"
cat >"$W/bernstein.yaml" <<EOF
parallel: 1
timeout: 150
retry: {max_attempts: 3, on: [failed], backoff: 0}
EOF
cat >"$W/plan.yaml" <<EOF
name: retried pi
tasks:
  - title: hello
    id: hello
    adapter: pi
    sampling: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
    prompt: write hello.txt
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY=e2e-dummy-key "$BERNSTEIN" run plan.yaml
check "run exits 0" test "$RC" -eq 0
check "the retry's file is merged" grep -q hi "$W/hello.txt"
check "the server saw every attempt's requests" test "$(nreq)" -ge 14
check "state.db: attempt 1 failed on the 500, the last one completed" "$PY" -c '
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT n, outcome, reason, agent_error, resume_kind FROM attempts ORDER BY n").fetchall()
assert rows[0][1] == "failed" and rows[-1][1] == "completed" and len(rows) >= 2, rows
assert "500" in (rows[0][3] or "") + (rows[0][2] or ""), rows
assert rows[-1][4] in ("native", "fallback"), rows
' "$W/.bernstein/state.db"
run "$BERNSTEIN" status --json
check "status --json: done on the second attempt of pi" "$PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))["tasks"][0]
assert t["state"] == "done" and t["attempts"] >= 2 and t["adapter_attempt"] == t["attempts"], t
assert t["adapter"] == "pi" and t["fallback"] == 0, t
' "$T/stdout"
fake_stop
test_done
