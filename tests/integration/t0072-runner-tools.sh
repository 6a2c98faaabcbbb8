#!/bin/sh
# bernstein runner with tool_source builtin against the fake server: the model
# writes, reads and lists files in the workdir (the files really exist), every
# call is audited as tool_call/tool_result events tagged "builtin", an escape
# attempt comes back as an error result and writes nothing outside,
# run_command is withheld without an OS sandbox or the operator's opt-in and
# works with it, the tools list filters what is offered, and max_turns stops a
# model that never stops calling tools.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0060 runner builtin tools"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

mkdir -p "$T/outside"

# ---- write, read, list, escape: Chat Completions, streamed ----
cat >"$T/s.json" <<'EOF'
[{"tool_calls": [
   {"id": "c1", "name": "write_file", "arguments": {"path": "src/hello.txt", "content": "hello from the model\n"}},
   {"id": "c2", "name": "read_file", "arguments": {"path": "src/hello.txt"}},
   {"id": "c3", "name": "list_dir", "arguments": {"path": "src"}}]},
 {"tool_calls": [
   {"id": "c4", "name": "write_file", "arguments": {"path": "../outside/evil.txt", "content": "x"}},
   {"id": "c5", "name": "read_file", "arguments": {"path": "/etc/passwd"}},
   {"id": "c6", "name": "run_command", "arguments": {"argv": ["touch", "ran.txt"]}}]},
 {"text": "wrote src/hello.txt"}]
EOF
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "t1", "prompt": "make hello", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
check "write_file: the file exists with the content" \
	test "$(cat "$T/work/src/hello.txt")" = "hello from the model"
check "nothing was written outside the workdir" test ! -e "$T/outside/evil.txt"
check "run_command was not run" test ! -e "$T/work/ran.txt"
jcheck "builtin tools announced, run_command withheld" \
	'any(e["type"] == "progress" and e.get("tool_source") == "builtin" and e["message"].startswith("builtin tools active: read_file, write_file, list_dir;") and "run_command withheld" in e["message"] for e in events)'
jcheck "tools offered to the model: the three file tools" \
	'[t["function"]["name"] for t in reqs[0]["body"]["tools"]] == ["read_file", "write_file", "list_dir"]'
jcheck "six tool_call and six tool_result events, all tagged builtin" \
	'len(ev("tool_call")) == 6 and len(ev("tool_result")) == 6 and all(e["tool_source"] == "builtin" for e in ev("tool_call") + ev("tool_result"))'
jcheck "tool_call events: name, arguments, call id" \
	'ev("tool_call")[0]["name"] == "write_file" and ev("tool_call")[0]["args"] == {"path": "src/hello.txt", "bytes": 21} and ev("tool_call")[0]["call_id"] == "c1" and ev("tool_call")[1]["args"] == {"path": "src/hello.txt"}'
jcheck "tool_result events: outcome" \
	'[e["status"] for e in ev("tool_result")] == ["ok", "ok", "ok", "error", "error", "error"] and ev("tool_result")[0]["bytes"] == 21 and ev("tool_result")[2]["count"] == 1'
jcheck "each tool_result follows its tool_call" \
	'all(kinds[i + 1] == "tool_result" for i, k in enumerate(kinds) if k == "tool_call")'
jcheck "the escape is refused with a reason" \
	'"escapes the run workdir" in ev("tool_result")[3]["error"] and "absolute paths are not allowed" in ev("tool_result")[4]["error"] and "unknown tool" in ev("tool_result")[5]["output"]'
jcheck "results go back to the model in order (second request)" \
	'[m.get("tool_call_id") for m in reqs[1]["body"]["messages"] if m["role"] == "tool"] == ["c1", "c2", "c3"] and reqs[1]["body"]["messages"][3]["content"] == "hello from the model\n" and reqs[1]["body"]["messages"][4]["content"] == "hello.txt\n"'
jcheck "the refusals go back to the model too" \
	'[m["content"][:7] for m in reqs[2]["body"]["messages"] if m["role"] == "tool"][3:] == ["error: "] * 3'
jcheck "the assistant turn with the calls is in the history" \
	'[c["id"] for c in reqs[1]["body"]["messages"][1]["tool_calls"]] == ["c1", "c2", "c3"]'
jcheck "completion after three turns" \
	'ev("completion")[0]["summary"] == "wrote src/hello.txt" and ev("completion")[0]["turns"] == 3 and ev("usage")[0]["tool_calls"] == 6'

# ---- the same over the Responses API, plain JSON ----
rm -rf "$T/work/src"
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "t2", "prompt": "make hello", "workdir": "@WORK@",
 "model": "gpt-x", "tool_source": "builtin", "stream": false}'
expect_exit 0 BERNSTEIN_TEST_OPENAI_DEFAULT_URL="$FAKE_URL" "$BERNSTEIN" runner --manifest "$T/m.json"
check "responses: the file exists" test "$(cat "$T/work/src/hello.txt")" = "hello from the model"
jcheck "responses: function_call and function_call_output items go back" \
	'[i["type"] for i in reqs[1]["body"]["input"]] == ["message", "function_call", "function_call", "function_call", "function_call_output", "function_call_output", "function_call_output"] and reqs[1]["body"]["input"][4] == {"type": "function_call_output", "call_id": "c1", "output": "wrote 21 bytes to src/hello.txt"}'
jcheck "responses: tools in the Responses shape" \
	'[t["name"] for t in reqs[0]["body"]["tools"]] == ["read_file", "write_file", "list_dir"] and reqs[0]["body"]["tools"][0]["type"] == "function" and reqs[0]["body"]["tools"][0]["strict"] is False'

# ---- run_command with the operator's opt-in ----
cat >"$T/run.json" <<'EOF'
[{"tool_calls": [
   {"id": "r1", "name": "run_command", "arguments": {"argv": ["touch", "ran.txt"]}},
   {"id": "r2", "name": "run_command", "arguments": {"argv": ["sh", "-c", "touch shell.txt"]}},
   {"id": "r3", "name": "run_command", "arguments": {"argv": "touch string.txt"}},
   {"id": "r4", "name": "run_command", "arguments": {"argv": ["/usr/bin/touch", "abs.txt"]}},
   {"id": "r5", "name": "run_command", "arguments": {"argv": ["ls"]}}]},
 {"text": "ran"}]
EOF
fake_start "$T/run.json"
write_manifest "$T/m.json" '{"session_id": "t3", "prompt": "run", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
expect_exit 0 BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "run_command offered with BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1" \
	'[t["function"]["name"] for t in reqs[0]["body"]["tools"]] == ["read_file", "write_file", "list_dir", "run_command"]'
check "run_command ran a bare command in the workdir" test -f "$T/work/ran.txt"
check "a shell was refused" test ! -e "$T/work/shell.txt"
check "a shell string was refused" test ! -e "$T/work/string.txt"
check "an absolute argv[0] was refused" test ! -e "$T/work/abs.txt"
jcheck "run_command results: exit code, refusals" \
	'[e["status"] for e in ev("tool_result")] == ["ok", "error", "error", "error", "ok"] and ev("tool_result")[0]["exit_code"] == 0 and "ran.txt" in ev("tool_result")[4]["output"] and "never a shell string" in ev("tool_result")[2]["error"]'
jcheck "run_command events are tagged builtin with the argv" \
	'ev("tool_call")[0]["tool_source"] == "builtin" and ev("tool_call")[0]["args"] == {"argv": ["touch", "ran.txt"]}'
rm -f "$T/work/ran.txt"

# the manifest's allow_run_command: false wins over the opt-in
fake_start "$T/run.json"
write_manifest "$T/m.json" '{"session_id": "t4", "prompt": "run", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "allow_run_command": false}'
expect_exit 0 BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 "$BERNSTEIN" runner --manifest "$T/m.json"
check "allow_run_command false: nothing ran" test ! -e "$T/work/ran.txt"
jcheck "allow_run_command false: not offered" \
	'"run_command" not in [t["function"]["name"] for t in reqs[0]["body"]["tools"]]'

# ---- the tools list filters what is offered ----
printf '%s\n' '[{"tool_calls": [{"id": "w", "name": "write_file", "arguments": {"path": "f.txt", "content": "x"}}]}, {"text": "ok"}]' >"$T/filter.json"
fake_start "$T/filter.json"
write_manifest "$T/m.json" '{"session_id": "t5", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "tools": ["read_file", {"name": "list_dir"}]}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "only the listed tools are offered" \
	'[t["function"]["name"] for t in reqs[0]["body"]["tools"]] == ["read_file", "list_dir"]'
check "a tool not offered cannot be called" test ! -e "$T/work/f.txt"

# ---- max_turns ----
printf '%s\n' '{"responses": [], "default": {"tool_calls": [{"name": "list_dir", "arguments": {}}]}}' \
	>"$T/forever.json"
fake_start "$T/forever.json"
write_manifest "$T/m.json" '{"session_id": "t6", "prompt": "loop", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "max_turns": 3}'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "max_turns: exactly 3 model requests" 'len(reqs) == 3'
jcheck "max_turns: error kind max_turns, usage before it" \
	'kinds[-1] == "error" and events[-1]["kind"] == "max_turns" and "3" in events[-1]["message"] and kinds[-2] == "usage" and ev("usage")[0]["turns"] == 3'
jcheck "max_turns: start shows it" 'events[0]["max_turns"] == 3'

# ---- gateway (the default) with no servers: no tools, still runs ----
fake_start "$T/filter.json"
write_manifest "$T/m.json" '{"session_id": "t7", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "anything-but-builtin"}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "gateway without servers: warned, no tools, the call is refused" \
	'events[0]["tool_source"] == "gateway" and any("no mcp_servers" in e.get("message", "") for e in ev("progress")) and "tools" not in reqs[0]["body"] and ev("tool_result")[0]["status"] == "error" and ev("tool_result")[0]["tool_source"] == "gateway"'
check "gateway without servers: nothing written" test ! -e "$T/work/f.txt"

test_done
