#!/bin/sh
# The agent's own last error with real CLIs made to fail offline (issue #17
# item 5): gemini with no key at all exits 41 having said on stderr that it
# needs GEMINI_API_KEY; pi against tests/helpers/fake-llm.py answering HTTP
# 429 says so in its stream. `bernstein run` shows both errors in its
# summary, `status` and `status --json` (agent_error), and state.db keeps them
# per attempt; `logs` shows the readable events (--raw the agent's own
# output).
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0182 e2e: the agent's own error, from real CLIs failing offline"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf '{"default": {"status": 429, "error": "fake-llm t0182 quota exhausted"}, "responses": []}\n' >"$T/429.json"
fake_start "$T/429.json"
cat >"$W/bernstein.yaml" <<EOF
parallel: 2
max_retries: 0
retry_backoff: 0
timeout: 150
EOF
cat >"$W/plan.yaml" <<EOF
name: failing agents
tasks:
  - title: gemini without a key
    id: nokey
    adapter: gemini
    prompt: say hi
  - title: pi rate limited
    id: limited
    adapter: pi
    sampling: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
    prompt: say hi
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY=e2e-dummy-key "$BERNSTEIN" run plan.yaml
check "run exits 1" test "$RC" -eq 1
expect_stdout_contains "the agent said: When using Gemini API, you must specify the GEMINI_API_KEY environment variable." \
	"the summary shows gemini's own error"
expect_stdout_contains "the agent said: 429 fake-llm t0182 quota exhausted" \
	"the summary shows pi's HTTP 429 error"
check "the server saw pi's requests" test "$(nreq)" -ge 1

run "$BERNSTEIN" status
expect_stdout_contains "must specify the GEMINI_API_KEY environment variable" "status shows gemini's error"
run "$BERNSTEIN" status --json
check "status --json: agent_error of both" "$PY" -c '
import json, sys
t = {x["id"]: x for x in json.load(open(sys.argv[1]))["tasks"]}
assert "must specify the GEMINI_API_KEY" in t["nokey"]["agent_error"], t["nokey"]
assert "429" in t["limited"]["agent_error"] and "quota exhausted" in t["limited"]["agent_error"], t["limited"]
assert t["nokey"]["state"] == "failed" and t["limited"]["state"] == "failed", t
' "$T/stdout"

run "$BERNSTEIN" logs limited
check "logs: readable events" grep -q "^[0-9][0-9]:[0-9][0-9]:[0-9][0-9] rate_limited" "$T/stdout"
run "$BERNSTEIN" logs nokey --raw
expect_stdout_contains "must specify the GEMINI_API_KEY" "logs --raw: the agent's own output"
fake_stop
test_done
