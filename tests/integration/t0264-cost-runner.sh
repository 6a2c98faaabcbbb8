#!/bin/sh
# Cost with the built-in runner against tests/helpers/fake-llm.py (issue
# #19): the fake server reports known usage on each reply, the runner adds
# it up and reports tokens but no cost, and bernstein prices them with the
# embedded catalog/pricing.yaml for the model the task asked for (gpt-4.1:
# $2 per million input, $8 per million output): cost_source "pricing";
# `bernstein cost --by model` groups by that model, and a budget below what
# the first task spent holds the second one back.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0264 cost: the built-in runner's tokens priced from the embedded table"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
OKEY=sk-test-cost-runner-0123456789
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

# two replies: a tool call (1M in, 100k out), then the final text (500k in, 0 out)
printf '%s\n' '{"responses": [
 {"tool_calls": [{"name": "write_file", "id": "c1", "arguments": {"path": "hello.txt", "content": "hi\n"}}],
  "usage": {"input": 1000000, "output": 100000}},
 {"text": "Created hello.txt.", "usage": {"input": 500000, "output": 0}}]}' >"$T/script.json"
fake_start "$T/script.json"

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: openai_agents\nparallel: 1\nsandbox: none\nmax_retries: 0\n' >"$W/bernstein.yaml"
cat >"$W/plan.yaml" <<EOF
name: runner-cost
budget: {max_cost_usd: 3}
tasks:
  - title: hello
    model: gpt-4.1
    sampling: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
    prompt: create hello.txt
  - title: second
    depends_on: [hello]
    model: gpt-4.1
    sampling: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
    prompt: never asked
EOF
git_q add -A && git_q commit -q -m base

# 1.5M in, 100k out: 1.5 * 2 + 0.1 * 8 = $3.80, over the $3 cap
expect_exit 7 "$KEY" "OPENAI_API_KEY=$OKEY" BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
	"$BERNSTEIN" run plan.yaml
check "the runner's file was merged" grep -qx hi "$W/hello.txt"
check "the fake server was asked twice: the second task never started" test "$(nreq)" -eq 2
check "state.db: the runner's tokens priced for gpt-4.1" python3 - "$W/.bernstein/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = db.execute("SELECT model, input_tokens, output_tokens, cost_usd, cost_source FROM attempts"
               " WHERE task_id = 'hello'").fetchone()
assert r[:3] == ("gpt-4.1", 1500000, 100000) and abs(r[3] - 3.8) < 1e-9 and r[4] == "pricing", r
assert db.execute("SELECT count(*) FROM attempts WHERE task_id = 'second'").fetchone()[0] == 0
PY
expect_exit 0 "$BERNSTEIN" cost --by model --json
check "cost --by model: gpt-4.1" python3 - "$T/stdout" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
g = o["groups"]
assert len(g) == 1 and g[0]["model"] == "gpt-4.1" and abs(g[0]["cost_usd"] - 3.8) < 1e-9, g
assert o["budget"]["exceeded"] is True, o
PY
check "the key's value is in nothing the run wrote" \
	sh -c '! grep -rq "$1" "$2/.bernstein"' sh "$OKEY" "$W"

test_done
