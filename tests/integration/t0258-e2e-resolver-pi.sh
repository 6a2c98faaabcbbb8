#!/bin/sh
# A real CLI as the resolver (issue #18, docs/runs.md "Conflicts"): two
# tasks of the mock agent rewrite the same file, the second's merge and
# rebase conflict, and pi (pinned in tests/agents/) resolves the merge left
# with conflict markers in the task's tree, against
# tests/helpers/fake-llm.py: one write tool call, then a text. Its endpoint
# is the resolver role's (role_model_policy.resolver), its adapter
# resolver: {adapter: pi}. Checked: merged once with pi's resolution, the
# request pi sent carries the conflicting path and both sides' intents,
# task.resolver names pi.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0258 e2e: pi resolves a merge conflict"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'one\ntwo\nthree\n' >"$W/f.txt"
cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "write", "id": "call_1", "arguments": {"path": "f.txt", "content": "left and right\n"}}]},
  {"text": "Resolved f.txt: kept both sides."}]}
EOF
fake_start "$T/script.json"
cat >"$W/bernstein.yaml" <<EOF
adapter: mock
parallel: 2
sandbox: none
timeout: 150
on_conflict: resolve
resolver: {adapter: pi}
role_model_policy:
  resolver: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: resolved by pi
tasks:
  - title: left
    prompt: "Make f.txt say left.\nwrite f.txt left"
  - title: right
    prompt: "Make f.txt say right.\nwrite f.txt right"
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY=e2e-dummy-key "$BERNSTEIN" run plan.yaml
if [ "$RC" -eq 0 ]; then ok "run exits 0"; else
	not_ok "run exits 0"; diag "exit $RC"; _diag_file stderr "$T/stderr"; _diag_file stdout "$T/stdout"
fi
check "pi's resolution is merged" sh -c "[ \"\$(git -C '$W' show main:f.txt)\" = 'left and right' ]"
check "each task merged exactly once" sh -c \
	"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/left-') -eq 1 ] &&
	 [ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/right-') -eq 1 ]"
check "pi was asked with the conflicting path and both intents" "$PY" -c '
import json, sys
text = open(sys.argv[1]).read()
assert "Resolve a merge conflict" in text, "no resolver prompt"
assert "f.txt" in text and "Make f.txt say" in text and "Merge bernstein/" in text, text[:2000]
' "$T/requests.jsonl"
run "$BERNSTEIN" audit show --event-type task.resolver --json
expect_stdout_contains '"adapter": "pi"' "task.resolver names pi"
check "the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
fake_stop
test_done
