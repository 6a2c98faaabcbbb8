#!/bin/sh
# bernstein mcp (issue #22, docs/mcp.md), driven by the project's own MCP
# client: the built-in runner's gateway (runner/mcp.h) starts `bernstein mcp`
# as its MCP server and tests/helpers/fake-llm.py scripts the model's calls.
# Session 1 validates a plan, starts it detached (the run id comes back),
# lists the adapters and routes; a bad argument and an unknown tool are
# error results, never a crash. (The runner contains its MCP servers in a
# PID namespace, so that run ends with the session: session 2 works in a
# second repository.) Session 2, while a run's slow task runs, cancels it
# through the run's control channel (a control.request audit record, as for
# `bernstein cancel`), then reads logs and cost.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0345 bernstein mcp: its tools through the runner's MCP client"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
KEYP=$T/audit.key
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: mock
parallel: 2
kill_grace: 1
sandbox: none
EOF
cat >"$W/plan.yaml" <<'EOF'
name: mcp
tasks:
  - title: slow
    id: slow
    adapter: mock
    prompt: "sleep 120"
  - title: quick
    id: quick
    adapter: mock
    prompt: "write quick.txt hi"
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.invalid commit -q -m base >/dev/null 2>&1
W2=$T/work2
cp -a "$W" "$W2"

manifest()
{
	write_manifest "$T/m.json" '{"session_id": "'"$1"'", "prompt": "drive bernstein",
 "workdir": "'"$2"'", "model": "m", "base_url": "@URL@",
 "mcp_servers": {"bernstein": {"command": "'"$BERNSTEIN"'", "args": ["mcp"],
   "env": {"PATH": "/usr/bin:/bin", "BERNSTEIN_AUDIT_KEY_PATH": "'"$KEYP"'"}}}}'
}

# session 1
cat >"$T/s1.json" <<'EOF'
[{"tool_calls": [
   {"id": "c1", "name": "plan_validate", "arguments": {"plan": "plan.yaml"}},
   {"id": "c2", "name": "run_plan", "arguments": {"plan": "plan.yaml"}},
   {"id": "c3", "name": "adapters", "arguments": {}},
   {"id": "c4", "name": "route", "arguments": {"requires": ["capability:vision"]}},
   {"id": "c5", "name": "plan_validate", "arguments": {"plan": "--version"}},
   {"id": "c6", "name": "status", "arguments": {"run": "x", "extra": 1}}]},
 {"text": "started"}]
EOF
fake_start "$T/s1.json"
manifest s1 "$W"
expect_exit 0 PATH="/usr/bin:/bin" "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "the runner listed bernstein's tools" \
	'{"adapters", "route", "plan_validate", "run_plan", "status", "logs", "cancel", "retry", "cost"} <= {t["function"]["name"] for t in reqs[0]["body"]["tools"]}'
jcheck "plan_validate: ok" \
	'ev("tool_result")[0]["status"] == "ok" and "\"valid\": true" in ev("tool_result")[0]["output"]'
jcheck "run_plan: detached, the run id returned" \
	'ev("tool_result")[1]["status"] == "ok" and json.loads(ev("tool_result")[1]["output"])["run"]'
jcheck "adapters: the catalogue" \
	'ev("tool_result")[2]["status"] == "ok" and "\"claude\"" in ev("tool_result")[2]["output"]'
jcheck "route: an adapter with vision" \
	'ev("tool_result")[3]["status"] == "ok" and "\"selected\": true" in ev("tool_result")[3]["output"]'
jcheck "an argument starting with '-' is refused, nothing run" \
	'ev("tool_result")[4]["status"] == "error" and "not starting with" in ev("tool_result")[4]["output"]'
jcheck "an unknown argument is an error result" \
	'ev("tool_result")[5]["status"] == "error" and "unknown argument" in ev("tool_result")[5]["output"]'
run_id=$("$PY" -c 'import json,sys; print(json.loads([json.loads(l) for l in open(sys.argv[1]) if "tool_result" in l][1]["output"])["run"])' "$T/stdout" 2>/dev/null)
check "the run id names a run" test -n "$run_id" -a -d "$W/.bernstein/runs/$run_id"

# a second repository with a live run, started from the shell (copied
# before session 1: its detached run may have merged quick into $W's main
# before the session's end killed it, and quick would find nothing to do)
(cd "$W2" && BERNSTEIN_AUDIT_KEY_PATH=$KEYP "$BERNSTEIN" run --detach plan.yaml >"$T/detach.out" 2>&1)
check "a detached run in the second repository" test -d "$W2/.bernstein/runs"
# wait for quick to be done and slow to be running
st() { (cd "$W2" && "$BERNSTEIN" status --json 2>/dev/null); }
if wait_until \
	'st | "$PY" -c "import json,sys; t={x[\"id\"]: x[\"state\"] for x in json.load(sys.stdin)[\"tasks\"]}; sys.exit(0 if t.get(\"quick\") == \"done\" and t.get(\"slow\") == \"running\" else 1)"'; then
	ok "quick done, slow running"
else
	# what it was instead
	not_ok "quick done, slow running"
	(cd "$W2" && "$BERNSTEIN" status --json 2>&1; tail -20 .bernstein/runs/*/run.log 2>/dev/null) |
		sed 's/^/# /' | head -80
fi

# session 2
cat >"$T/s2.json" <<'EOF'
[{"tool_calls": [
   {"id": "d1", "name": "cancel", "arguments": {"tasks": ["slow"]}},
   {"id": "d2", "name": "logs", "arguments": {"task": "quick"}},
   {"id": "d3", "name": "cost", "arguments": {"by": "adapter"}},
   {"id": "d4", "name": "no_such_tool", "arguments": {}}]},
 {"text": "cancelled"}]
EOF
fake_start "$T/s2.json"
manifest s2 "$W2"
expect_exit 0 PATH="/usr/bin:/bin" "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "cancel: ok" 'ev("tool_result")[0]["status"] == "ok"'
jcheck "logs: quick's agent events" \
	'ev("tool_result")[1]["status"] == "ok" and "quick.txt" in ev("tool_result")[1]["output"]'
jcheck "cost: by adapter" \
	'ev("tool_result")[2]["status"] == "ok" and "mock" in ev("tool_result")[2]["output"]'
jcheck "an unknown tool is an error result" 'ev("tool_result")[3]["status"] == "error"'
check "slow ends cancelled" wait_until \
	'st | "$PY" -c "import json,sys; t={x[\"id\"]: x[\"state\"] for x in json.load(sys.stdin)[\"tasks\"]}; sys.exit(0 if t.get(\"slow\") == \"cancelled\" else 1)"'
check "the cancel is audited as the CLI's is (control.request)" \
	grep -q '"event_type": "control.request"' "$W2"/.bernstein/audit/*.jsonl
check "quick's file is merged" grep -qx hi "$W2/quick.txt"
check "the detached run ended" wait_until \
	'st | "$PY" -c "import json,sys; r=json.load(sys.stdin); sys.exit(0 if r.get(\"state\") not in (\"running\", None) else 1)"'
fake_stop
test_done
