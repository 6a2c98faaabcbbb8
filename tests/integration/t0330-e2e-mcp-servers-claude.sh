#!/bin/sh
# MCP servers for CLI agents (issue #21, docs/configuration.md "MCP
# servers"): a plan task gives claude (the real CLI pinned in tests/agents/)
# the real filesystem MCP server pinned in tests/mcp/ by mcp_servers:;
# tests/helpers/fake-llm.py scripts claude to call the server's write_file
# tool (mcp__fs__write_file). The file is written in the task's tree and
# merged, the call shows in bernstein's events, and the server's secret env
# value (a ${NAME} reference) is in no state, event, log or audit record,
# nor on argv; the per-attempt configuration file is gone after the attempt.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0330 e2e: claude calls a tool of a real MCP server given by mcp_servers"
. "$SRCDIR/tests/integration/mcp-e2e-lib.sh"

W=$T/work
e2e_repo "$W"
write_call_script "$T/script.json" mcp__fs__write_file toolu_mcp_1 "through mcp" \
	"Wrote hello.txt through the fs server."
fake_start "$T/script.json"
cat >"$W/bernstein.yaml" <<EOF
parallel: 1
timeout: 150
retry: {max_attempts: 1}
endpoints:
  claude: {base_url: "http://127.0.0.1:$FAKE_PORT", api_key_env: ANTHROPIC_API_KEY}
mcp_servers:
  fs: {command: /bin/false}
  unused: {command: /bin/false}
EOF
# the plan's fs replaces bernstein.yaml's; the task removes 'unused'
cat >"$W/plan.yaml" <<EOF
name: mcp e2e
mcp_servers:
  fs:
    command: "$MCP_SERVER"
    args: ["."]
    env: {E2E_MCP_TOKEN: "\${E2E_MCP_TOKEN}", PLAIN: visible}
tasks:
  - title: hello
    id: hello
    adapter: claude
    prompt: "write hello.txt with the fs tools"
    mcp_servers: {unused: null}
EOF
e2e_commit "$W"

secret=e2e-mcp-secret-value-7f3a9c
run PATH="$E2E_BIN:$NODE_DIR:/usr/bin:/bin" ANTHROPIC_API_KEY=e2e-dummy-key \
	E2E_MCP_TOKEN=$secret BERNSTEIN_ALLOWED_API_KEY_ENVS=E2E_MCP_TOKEN \
	"$BERNSTEIN" run plan.yaml
check "run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "the MCP server's file is merged" grep -qx "through mcp" "$W/hello.txt"
check "the tool call of the MCP server shows in bernstein's events" $PY -c '
import glob, json, sys
evs = [json.loads(l) for f in glob.glob(sys.argv[1] + "/runs/*/*/*/events.jsonl") for l in open(f) if l.strip()]
calls = [e for e in evs if e.get("kind") == "tool_call" and "mcp__fs__write_file" in json.dumps(e)]
res = [e for e in evs if e.get("kind") == "tool_result" and "Successfully wrote" in json.dumps(e)]
assert calls and res, [e.get("kind") for e in evs]' "$W/.bernstein"
check "argv named the per-attempt file and --strict-mcp-config" $PY -c '
import glob, json, sys
plans = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/runs/*/*/*/plan.json")]
assert len(plans) == 1, plans
a = plans[0]["argv"]
i = a.index("--mcp-config")
assert a[i + 1].endswith("/mcp-config.json") and a[i + 2] == "--strict-mcp-config", a
assert plans[0]["mcp_servers"] == 1, plans[0]' "$W/.bernstein"
check "the per-attempt MCP configuration is removed" \
	test -z "$(find "$W/.bernstein/runs" -name 'mcp-config.*')"
check "the secret is nowhere under .bernstein (state, events, logs, audit)" \
	sh -c '! grep -rqa "$1" "$2"' - "$secret" "$W/.bernstein"
fake_stop
test_done
