# The set-up the end-to-end tests of mcp_servers: share (t0330 claude,
# t0331 gemini, opencode and qwen). Sourced after lib.sh and test_begin: the
# agent CLIs pinned in tests/agents/ (require_agents: $E2E_BIN), the fake
# LLM server of runner-lib.sh (fake_start, $FAKE_PORT), the real filesystem
# MCP server pinned in tests/mcp/ ($MCP_SERVER; the test fails at once when
# it cannot be installed) and node's directory ($NODE_DIR).
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents
if ! _mcpbin=$(HOME=${HOME:-$T/home} "$SRCDIR/tests/mcp/install.sh" 2>"$T/install.err"); then
	sed 's/^/# /' "$T/install.err" | tail -n 5
	not_ok "the MCP server pinned in tests/mcp/ is installed (tests/mcp/install.sh)"
	test_done
fi
# shellcheck disable=SC2034 # the tests name both
MCP_SERVER="$_mcpbin/mcp-server-filesystem"
# shellcheck disable=SC2034
NODE_DIR=$(dirname "$(command -v node)")

# e2e_repo DIR: a git repository on branch main that ignores .bernstein/.
e2e_repo()
{
	mkdir -p "$1"
	git -C "$1" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$1/.gitignore"
}

# e2e_commit DIR: all of DIR as its first commit.
e2e_commit()
{
	git -C "$1" add -A >/dev/null 2>&1
	git -C "$1" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1
}

# write_call_script FILE TOOL CALL_ID CONTENT TEXT: a fake-llm script whose
# first answer calls TOOL (the MCP server's write_file under the name the
# CLI gives it) to write hello.txt with CONTENT, and whose second says TEXT.
write_call_script()
{
	cat >"$1" <<EOF
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "$2", "id": "$3",
                   "arguments": {"path": "hello.txt", "content": "$4\n"}}]},
  {"text": "$5"}]}
EOF
}
