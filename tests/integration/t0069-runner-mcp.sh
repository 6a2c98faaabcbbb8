#!/bin/sh
# bernstein runner with the MCP gateway (tool_source gateway, the default)
# against a real MCP server from npm: @modelcontextprotocol/server-filesystem,
# pinned in tests/mcp/package-lock.json and installed by tests/mcp/install.sh
# into a cache outside the repository. The runner spawns the server over stdio,
# lists its tools, offers them to the model, and runs the model's calls through
# it; every call is a tool_call/tool_result pair tagged "gateway". Skipped when
# node/npm are missing or the registry is out of reach.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0060 runner mcp gateway"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

if ! bin=$(HOME=${HOME:-$T/home} "$SRCDIR/tests/mcp/install.sh" 2>"$T/install.err"); then
	sed 's/^/# /' "$T/install.err" | tail -n 5
	skip "mcp gateway against server-filesystem" "the pinned MCP server could not be installed"
	test_done
fi
server="$bin/mcp-server-filesystem"
node_dir=$(dirname "$(command -v node)")
check "the pinned server is installed" test -x "$server"

printf 'from the workdir\n' >"$T/work/in.txt"
mkdir -p "$T/outside"
printf 'outside secret\n' >"$T/outside/secret.txt"
W=$(cd "$T/work" && pwd -P)
cat >"$T/s.json" <<EOF
[{"tool_calls": [
   {"id": "m1", "name": "read_text_file", "arguments": {"path": "$W/in.txt"}},
   {"id": "m2", "name": "write_file", "arguments": {"path": "$W/out.txt", "content": "written through MCP\n"}},
   {"id": "m3", "name": "list_directory", "arguments": {"path": "$W"}},
   {"id": "m4", "name": "read_text_file", "arguments": {"path": "$T/outside/secret.txt"}},
   {"id": "m5", "name": "no_such_tool", "arguments": {}}]},
 {"text": "gateway done"}]
EOF
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "g1", "prompt": "use the tools", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@",
 "mcp_servers": {"fs": {"command": "'"$server"'", "args": ["'"$W"'"]}}}'
expect_exit 0 PATH="$node_dir:/usr/bin:/bin" "$BERNSTEIN" runner --manifest "$T/m.json"
check "the MCP server wrote the file" test "$(cat "$T/work/out.txt")" = "written through MCP"
jcheck "the server was started and listed" \
	'any("mcp server '"'"'fs'"'"' (secure-filesystem-server" in e["message"] for e in ev("progress")) and any(e.get("tool_source") == "gateway" and "gateway tools active" in e["message"] for e in ev("progress"))'
jcheck "its tools were offered to the model with their schemas" \
	'{"read_text_file", "write_file", "list_directory"} <= {t["function"]["name"] for t in reqs[0]["body"]["tools"]} and all(t["function"]["parameters"]["type"] == "object" for t in reqs[0]["body"]["tools"])'
jcheck "calls are tagged gateway with the server's name" \
	'len(ev("tool_call")) == 5 and all(e["tool_source"] == "gateway" for e in ev("tool_call") + ev("tool_result")) and ev("tool_call")[0]["server"] == "fs"'
jcheck "read_text_file returned the file" \
	'ev("tool_result")[0]["status"] == "ok" and ev("tool_result")[0]["output"] == "from the workdir\n"'
jcheck "list_directory shows both files" \
	'"in.txt" in ev("tool_result")[2]["output"] and "out.txt" in ev("tool_result")[2]["output"]'
jcheck "the server's own confinement refused the outside file (isError)" \
	'ev("tool_result")[3]["status"] == "error" and "outside secret" not in ev("tool_result")[3]["output"]'
jcheck "an unknown tool is an error result, not a crash" \
	'ev("tool_result")[4]["status"] == "error" and "unknown tool" in ev("tool_result")[4]["output"]'
jcheck "the results went back to the model" \
	'[m["content"] for m in reqs[1]["body"]["messages"] if m["role"] == "tool"][0] == "from the workdir\n"'
jcheck "completion" 'ev("completion")[0]["summary"] == "gateway done"'

# the manifest's tools list filters the gateway's tools
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "g2", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tools": ["read_text_file"],
 "mcp_servers": {"fs": {"command": "'"$server"'", "args": ["'"$W"'"]}}}'
rm -f "$T/work/out.txt"
expect_exit 0 PATH="$node_dir:/usr/bin:/bin" "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "only the listed gateway tool is offered" \
	'[t["function"]["name"] for t in reqs[0]["body"]["tools"]] == ["read_text_file"]'
check "a gateway tool that was not offered did not run" test ! -e "$T/work/out.txt"

# a server command that does not exist: runtime error before any request
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "g3", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "mcp_servers": {"gone": {"command": "no-such-mcp-server"}}}'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "a missing server command: kind runtime, no request" \
	'events[-1]["kind"] == "runtime" and "no-such-mcp-server" in events[-1]["message"] and len(reqs) == 0'
# a server that exits at once
write_manifest "$T/m.json" '{"session_id": "g4", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "mcp_servers": {"dead": {"command": "true"}}}'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "a server that exits: kind runtime naming it" \
	'events[-1]["kind"] == "runtime" and "dead" in events[-1]["message"] and len(reqs) == 0'

test_done
