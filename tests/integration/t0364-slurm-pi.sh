#!/bin/sh
# Issue #23: one real CLI on the cluster. A plan of a pi task (pinned in
# tests/agents/) and a mock task runs with executor: slurm on a real
# two-node cluster (tests/integration/slurm-lib.sh). pi talks to
# tests/helpers/fake-llm.py, which listens on the host's side of the first
# veth link (10.215.1.1), the address both nodes reach (node2 through its
# default route). pi's endpoint config, rendered in the task's HOME on this
# host, and its key (OPENAI_API_KEY) reach the node only over the relay's
# connection: the key is nowhere in Slurm's state, spool or logs, nor in the
# hub. The file pi writes with its own tool is merged, once.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0364 e2e: executor: slurm runs pi against the fake LLM server"

slurm_test_setup
require_agents
FAKE_PID=
trap 'if [ -n "$FAKE_PID" ]; then kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; fi; _slurm_test_cleanup' EXIT
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

cat >"$T/script.json" <<'EOF'
{"side": {"text": "Title"}, "responses": [
  {"tool_calls": [{"name": "write", "id": "call_1", "arguments": {"path": "hello.txt", "content": "from pi on a node\n"}}]},
  {"text": "Created hello.txt."}]}
EOF
"$PY" "$SRCDIR/tests/helpers/fake-llm.py" --script "$T/script.json" --log "$T/requests.jsonl" \
	--host "$SLURM_HOST" --port-file "$T/fake.port" --max-seconds 120 >/dev/null 2>"$T/fake.err" &
FAKE_PID=$!
check "the fake LLM server listens on the link address" wait_until '[ -s $T/fake.port ]'
FAKE_URL="http://$SLURM_HOST:$(cat "$T/fake.port")/v1"

KEY=sk-e2e-slurm-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >>"$W/bernstein.yaml" <<EOF
timeout: 150
endpoints:
  pi: {base_url: "$FAKE_URL", api_key_env: OPENAI_API_KEY}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: pi on slurm
tasks:
  - title: hello
    id: hello
    adapter: pi
    prompt: "Create hello.txt saying where you run."
  - title: m1
    id: m1
    prompt: "write m1.txt one\ncommit m1"
EOF
git_q add -A
git_q commit -q -m base
BASE=$(git -C "$W" rev-parse HEAD)

run PATH="$E2E_BIN:/usr/bin:/bin" OPENAI_API_KEY="$KEY" SLURM_CONF="$SLURM_CONF" \
	"$BERNSTEIN" run plan.yaml
if [ "$RC" = 0 ]; then ok "the run exits 0"; else
	not_ok "the run exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
	_diag_file fake.err "$T/fake.err"
	for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file "$f" "$f"; done
fi
check "pi's file is merged" \
	test "$(git -C "$W" show main:hello.txt 2>/dev/null)" = "from pi on a node"
check "the mock task's file is merged" test "$(git -C "$W" show main:m1.txt 2>/dev/null)" = one
check "pi's work is in main once" \
	test "$(git -C "$W" log --format=%H "$BASE..main" -- hello.txt | wc -l)" = 1
check "pi ran on a node (the relay's log names it)" \
	sh -c "grep -q \"runs on 'node[12]'\" '$W'/.bernstein/runs/*/hello-*/1/agent.log"
check "pi's events were read with its dialect (events.jsonl)" \
	sh -c "grep -q 'Created hello.txt' '$W'/.bernstein/runs/*/hello-*/1/events.jsonl"
check "pi asked the fake server from the node, with the key sent over the relay" "$PY" -c '
import hashlib, json, sys
want = "sha256:" + hashlib.sha256(("Bearer " + sys.argv[2]).encode()).hexdigest()
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
conv = [r for r in reqs if r["path"].endswith("/chat/completions")]
assert conv and all(r["headers"].get("authorization") == want for r in conv), conv[:1]
assert any("Create hello.txt" in json.dumps(r["body"]) for r in conv)' "$T/requests.jsonl" "$KEY"
check "the key is nowhere in Slurm's state, spool or logs" \
	sh -c "! grep -r -a -q -F '$KEY' '$T/cluster'"
check "the key is nowhere in the hub" sh -c "! grep -r -a -q -F '$KEY' '$HUBS'"
check "no job is left in the queue" \
	sh -c "[ -z \"\$(squeue -h -t PENDING,RUNNING,COMPLETING,CONFIGURING)\" ]"
test_done
