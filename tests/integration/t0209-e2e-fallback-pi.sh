#!/bin/sh
# Fallback to a real CLI (issue #18, docs/runs.md "Retries, escalation and
# fallback"): a task on the mock agent fails its only attempt; fallback:
# [pi] hands it to pi (pinned in tests/agents/), pointed at
# tests/helpers/fake-llm.py by its endpoints: entry alone, which writes the
# file; the task is merged, the switch is an audited task.fallback record
# naming both adapters and their profile hashes, and status says pi did it.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0209 e2e: a failed mock task falls back to pi, which finishes it"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "write", "id": "call_1", "arguments": {"path": "hello.txt", "content": "from pi\n"}}]},
  {"text": "Created hello.txt."}]}
EOF
fake_start "$T/script.json"
cat >"$W/bernstein.yaml" <<EOF
parallel: 1
timeout: 150
retry: {max_attempts: 1}
fallback: [pi]
endpoints:
  pi: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: fallback pi
tasks:
  - title: hello
    id: hello
    adapter: mock
    prompt: "fail the mock gives up"
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY=e2e-dummy-key "$BERNSTEIN" run plan.yaml
check "run exits 0" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
check "pi's file is merged" grep -qx "from pi" "$W/hello.txt"
check "the fallback is audited: mock -> pi, both profile hashes" $PY -c '
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
fb = [r["details"] for r in recs if r["event_type"] == "task.fallback"]
assert len(fb) == 1, fb
d = fb[0]
assert d["from"]["adapter"] == "mock" and d["to"]["adapter"] == "pi", d
assert len(d["from"]["profile_hash"]) == 64 and len(d["to"]["profile_hash"]) == 64, d
assert "the mock gives up" in d["reason"], d' "$W/.bernstein/audit"
run "$BERNSTEIN" status --json
check "status: done by pi after a fallback" $PY -c '
import json, sys
t = [t for t in json.load(open(sys.argv[1]))["tasks"] if t["id"] == "hello"][0]
assert t["state"] == "done" and t["adapter"] == "pi", t' "$T/stdout"
check "the fake server saw the entry's key (its sha256 in the log)" $PY -c '
import hashlib, json, sys
want = "sha256:" + hashlib.sha256(b"Bearer e2e-dummy-key").hexdigest()
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
conv = [r for r in reqs if r["path"].endswith("/chat/completions")]
assert conv and all(r["headers"].get("authorization") == want for r in conv), conv[:1]' \
	"$T/requests.jsonl"
fake_stop
test_done
