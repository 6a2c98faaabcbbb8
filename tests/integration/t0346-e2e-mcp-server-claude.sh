#!/bin/sh
# bernstein mcp with a real CLI as its client (issue #22): a plan task gives
# claude (pinned in tests/agents/) `bernstein mcp` as an MCP server through
# mcp_servers: (issue #21), and tests/helpers/fake-llm.py scripts claude to
# call its plan_validate and adapters tools. The results reach the model
# (the fake server's request log) and the calls are in bernstein's events.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0346 e2e: claude calls bernstein mcp's tools"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "mcp__bernstein__plan_validate", "id": "toolu_b1",
                   "arguments": {"plan": "inner.yaml"}},
                  {"name": "mcp__bernstein__adapters", "id": "toolu_b2", "arguments": {}}]},
  {"text": "Checked."}]}
EOF
fake_start "$T/script.json"
cat >"$W/bernstein.yaml" <<EOF
parallel: 1
timeout: 150
retry: {max_attempts: 1}
endpoints:
  claude: {base_url: "http://127.0.0.1:$FAKE_PORT", api_key_env: ANTHROPIC_API_KEY}
EOF
cat >"$W/inner.yaml" <<'EOF'
name: inner
tasks:
  - {title: one, prompt: p, adapter: mock}
  - {title: two, prompt: p, adapter: mock, depends_on: [one]}
EOF
cat >"$W/plan.yaml" <<EOF
name: mcp client e2e
tasks:
  - title: check
    id: check
    adapter: claude
    prompt: "validate inner.yaml with the bernstein tools"
    mcp_servers:
      bernstein: {command: "$BERNSTEIN", args: [mcp], env: {PATH: /usr/bin:/bin}}
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

run PATH="$E2E_BIN:/usr/bin:/bin" ANTHROPIC_API_KEY=e2e-dummy-key "$BERNSTEIN" run plan.yaml
check "run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "both tool calls show in bernstein's events, with results" $PY -c '
import glob, json, sys
evs = [json.loads(l) for f in glob.glob(sys.argv[1] + "/runs/*/*/*/events.jsonl") for l in open(f) if l.strip()]
names = [json.dumps(e) for e in evs if e.get("kind") == "tool_call"]
assert any("mcp__bernstein__plan_validate" in n for n in names), names
assert any("mcp__bernstein__adapters" in n for n in names), names
res = [e for e in evs if e.get("kind") == "tool_result"]
assert len(res) >= 2 and not any(e.get("status") == "error" for e in res), res' "$W/.bernstein"
check "the model got plan validate's verdict and the catalogue" $PY -c '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
body = json.dumps(reqs[-1].get("body"))
assert "plan_hash" in body and "valid" in body, body[-2000:]
assert "Claude Code" in body, body[-2000:]' "$T/requests.jsonl"
fake_stop
test_done
