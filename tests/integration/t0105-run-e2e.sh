#!/bin/sh
# End to end: `bernstein run` with the real claude and codex CLIs pinned in
# tests/agents/ against tests/helpers/fake-llm.py. A plan of three tasks: one
# on claude, one on codex, and one that requires capability:vision and names
# no adapter, which routing gives to claude (the first vision-capable adapter
# of the preference). All three merged; the selections are in the audit chain.
# --parallel 1 keeps the one scripted conversation in order.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: bernstein run with claude and codex against the fake LLM server"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-250}

require_agents

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"

cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "Bash", "id": "toolu_run_1", "arguments": {"command": "echo claude > claude.txt", "description": "write claude.txt"}}]},
  {"text": "Wrote claude.txt."},
  {"tool_calls": [{"name": "apply_patch", "custom": true, "id": "call_run_1", "input": "*** Begin Patch\n*** Add File: codex.txt\n+codex\n*** End Patch\n"}]},
  {"text": "Wrote codex.txt."},
  {"tool_calls": [{"name": "Bash", "id": "toolu_run_2", "arguments": {"command": "echo seen > vision.txt", "description": "write vision.txt"}}]},
  {"text": "Described the image."}]}
EOF
fake_start "$T/script.json"
A="http://127.0.0.1:$FAKE_PORT"
cat >"$W/bernstein.yaml" <<EOF
adapter: claude
preference: [claude, codex]
parallel: 1
timeout: 200
EOF
cat >"$W/plan.yaml" <<EOF
name: e2e
tasks:
  - title: on claude
    adapter: claude
    sampling: {base_url: "$A", api_key_env: ANTHROPIC_API_KEY}
    prompt: create claude.txt containing claude
  - title: on codex
    adapter: codex
    model: gpt-5.5
    sampling: {base_url: "$A/v1", api_key_env: OPENAI_API_KEY}
    prompt: create codex.txt containing codex
  - title: needs eyes
    requires: [capability:vision]
    sampling: {base_url: "$A", api_key_env: ANTHROPIC_API_KEY}
    prompt: look at the screenshot and write vision.txt
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

run PATH="$E2E_BIN:/usr/bin:/bin" ANTHROPIC_API_KEY=e2e-dummy-key OPENAI_API_KEY=e2e-dummy-key \
	"$KEY" "$BERNSTEIN" run --json plan.yaml
if [ "$RC" -eq 0 ]; then ok "bernstein run exits 0"; else
	not_ok "bernstein run exits 0 (got $RC)"
	_diag_file stdout "$T/stdout"
	_diag_file stderr "$T/stderr"
fi
check "claude's file is merged" grep -qx claude "$W/claude.txt"
check "codex's file is merged" grep -qx codex "$W/codex.txt"
check "the vision task's file is merged" grep -qx seen "$W/vision.txt"
check "three merges" sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 3 ]"
run "$BERNSTEIN" status --json
expect_stdout_contains '"adapter": "codex"' "a task ran on codex"
run "$KEY" "$BERNSTEIN" audit show --event-type adapter.capability_selection --json
expect_stdout_contains '"vision"' "the vision routing decision is anchored"
expect_stdout_contains '"adapter": "claude"' "and it chose claude"
fake_stop
check "the HOME given to bernstein is untouched" test -z "$(ls -A "$T/home" 2>/dev/null)"
test_done
