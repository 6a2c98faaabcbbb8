#!/bin/sh
# MCP servers for CLI agents beyond claude (issue #21): the same plan-level
# mcp_servers: (the real filesystem server pinned in tests/mcp/) given to
# gemini and qwen (merged into their settings.json in the private HOME) and
# to opencode (a per-attempt file named by OPENCODE_CONFIG), each scripted by
# tests/helpers/fake-llm.py to call the server's write_file under the name
# the CLI gives it (gemini mcp_fs_write_file, opencode fs_write_file, qwen
# mcp__fs__write_file). The
# file is merged, the call is in the events, the rendered file is removed.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0331 e2e: gemini, opencode and qwen call a tool of a real MCP server"
. "$SRCDIR/tests/integration/mcp-e2e-lib.sh"

one()
{
	cli=$1 key=$2 suffix=$3 tool=$4
	W=$T/work-$cli
	e2e_repo "$W"
	write_call_script "$T/script-$cli.json" "$tool" call_mcp_1 "from $cli" "Wrote hello.txt."
	fake_start "$T/script-$cli.json"
	cat >"$W/bernstein.yaml" <<EOF
parallel: 1
timeout: 150
retry: {max_attempts: 1}
endpoints:
  $cli: {base_url: "http://127.0.0.1:$FAKE_PORT$suffix", api_key_env: $key}
EOF
	cat >"$W/plan.yaml" <<EOF
name: mcp $cli
mcp_servers:
  fs: {command: "$MCP_SERVER", args: ["."]}
tasks:
  - {title: hello, id: hello, adapter: $cli, prompt: "write hello.txt with the fs tools"}
EOF
	e2e_commit "$W"
	run PATH="$E2E_BIN:$NODE_DIR:/usr/bin:/bin" "$key=e2e-dummy-key" \
		"$BERNSTEIN" -C "$W" run plan.yaml
	check "$cli: run exits 0" test "$RC" -eq 0
	[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
	check "$cli: the MCP server's file is merged" grep -qx "from $cli" "$W/hello.txt"
	check "$cli: the call of $tool is in the events" $PY -c '
import glob, json, sys
evs = [json.loads(l) for f in glob.glob(sys.argv[1] + "/runs/*/*/*/events.jsonl") for l in open(f) if l.strip()]
assert any(e.get("kind") == "tool_call" and sys.argv[2] in json.dumps(e) for e in evs), [e.get("kind") for e in evs]' \
		"$W/.bernstein" "$tool"
	fake_stop
}

one gemini GEMINI_API_KEY "" mcp_fs_write_file
check "gemini: its settings.json (with the servers) is removed after the attempt" \
	test -z "$(find "$T/work-gemini/.bernstein/runs" -path '*/home/.gemini/settings.json')"
one opencode OPENAI_API_KEY /v1 fs_write_file
check "opencode: the per-attempt file is removed" \
	test -z "$(find "$T/work-opencode/.bernstein/runs" -name 'mcp-config.*')"
one qwen OPENAI_API_KEY /v1 mcp__fs__write_file
check "qwen: its settings.json and the backup it made of it are removed" \
	test -z "$(find "$T/work-qwen/.bernstein/runs" -path '*/home/.qwen/settings.json*')"
test_done
