#!/bin/sh
# The openai_agents adapter end to end: 'bernstein spawn openai_agents' writes
# the runner manifest into the session directory, runs the built-in runner
# (bernstein runner -> bernstein-runner) under the supervisor, and the
# runner's builtin tools write the file the fake model asked for. The key's
# value never lands in anything the run wrote.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0061 spawn openai_agents through the built-in runner"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

KEY=sk-test-spawn-runner-0123456789
(cd "$T/work" && git init -q)

printf '%s\n' '{"responses": [
 {"tool_calls": [{"name": "write_file", "id": "c1", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
 {"text": "Created hello.txt."}]}' >"$T/script.json"
fake_start "$T/script.json"

expect_exit 0 OPENAI_API_KEY=$KEY BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin "$BERNSTEIN" spawn \
	openai_agents -m fake-model --set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY \
	"create hello.txt"
expect_stdout_contains "outcome: completed" "the outcome is completed"
check "the builtin write_file tool wrote the file" grep -qx hi "$T/work/hello.txt"
check "the runner talked to the fake server twice" test "$(nreq)" -eq 2
check "the manifest is in the session directory" \
	sh -c 'ls "$1"/.bernstein/runs/*/openai_agents-*/manifest.json >/dev/null' sh "$T/work"
check "events.jsonl has the tool call" \
	sh -c 'grep -q "\"tool_call\"" "$1"/.bernstein/runs/*/openai_agents-*/events.jsonl' sh "$T/work"
check "the key's value is in nothing the run wrote" \
	sh -c '! grep -rq "$1" "$2/.bernstein" "$3/stdout" "$3/stderr"' sh "$KEY" "$T/work" "$T"

# without a model the adapter refuses up front (usage, exit 2)
expect_exit 2 OPENAI_API_KEY=$KEY "$BERNSTEIN" spawn openai_agents "no model"
expect_stderr_contains "needs a model" "the error names the missing model"

test_done
