#!/bin/sh
# worktree_setup with a real CLI (issue #19): pi (pinned in tests/agents/)
# against tests/helpers/fake-llm.py writes hello.txt; the gate `tests`
# needs deps/installed, which only the setup_command makes (from the copied
# .env). In the sandbox tier sandbox: auto gives pi here (its network the
# default for its tier: the llm proxy where the tier has a network namespace),
# the setup runs confined like the gate; the run succeeds, the work is
# merged, the setup's output is in setup.log and nothing it made is
# committed.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0279 e2e: pi with a worktree_setup.setup_command the gate needs"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check); then
	not_ok "the agent CLIs pinned in tests/agents/ are installed"
	diag "run tests/agents/install.sh (needs node, npm and the npm registry) and retry"
	test_done
fi

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n.env\ndeps/\n' >"$W/.gitignore"
printf 'test -f deps/installed || { echo "deps missing"; exit 2; }\n' >"$W/check.sh"
cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "write", "id": "call_1", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
  {"text": "Created hello.txt."}]}
EOF
fake_start "$T/script.json"
cat >"$W/bernstein.yaml" <<'EOF'
parallel: 1
timeout: 150
max_retries: 0
gates: [{name: tests, run: "sh check.sh"}]
worktree_setup:
  copy_files: [.env]
  setup_command: "echo setup-t0279; mkdir -p deps && cp .env deps/installed"
EOF
cat >"$W/plan.yaml" <<EOF
name: setup pi
tasks:
  - title: hello
    id: hello
    adapter: pi
    sampling: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
    prompt: write hello.txt
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1
printf 'KEY=t0279\n' >"$W/.env"

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY=e2e-dummy-key "$BERNSTEIN" run plan.yaml
check "run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "the gate passed" grep -q "1 gate(s) passed" "$T/stdout"
check "pi's file is merged" grep -q hi "$W/hello.txt"
LOG=$(ls "$W"/.bernstein/runs/*/hello-*/1/setup.log 2>/dev/null | head -n 1)
check "setup.log holds the setup's output" grep -qx setup-t0279 "$LOG"
check "nothing the setup made is committed" sh -c "! git -C '$W' log --all --name-only --format= | grep -q '^deps/'"
run "$BERNSTEIN" status --json
diag "the tier: $(grep -o '"sandbox": "[a-z]*"' "$T/stdout" | head -n 1)"
fake_stop
test_done
