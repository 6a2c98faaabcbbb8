#!/bin/sh
# fallback: after the attempts on one adapter are spent, the next adapter of
# the list that also satisfies the task's requirements takes over, an
# audited task.fallback record with both profile hashes (issue #18,
# docs/runs.md "Retries, escalation and fallback"). Three script agents
# through profiles of their own (claude's dialect): `broken` always fails,
# `dumb` would succeed but lacks tool_use, `steady` succeeds. A capability
# refusal stays a hard stop: a task its adapter cannot serve is refused and
# no fallback adapter runs it, although one could.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0206 fallback to the next adapter that satisfies the task; a refusal does not fall back"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"

mkdir -p "$W/.bernstein/catalog/profiles"
printf 'adapters:\n' >"$W/.bernstein/catalog/strategy-matrix.yaml"
# agent NAME OK CAPS: a script that logs "NAME TASK" and succeeds when OK=1
agent()
{
	cat >"$T/$1.sh" <<EOF
#!/bin/sh
for a; do p=\$a; done
case \$p in *task-a*) t=a ;; *) t=c ;; esac
echo "$1 \$t" >>"$T/ran"
echo '{"type":"system","subtype":"init","session_id":"s-$1","model":"m"}'
if [ $2 = 0 ]; then
	echo '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"$1 broke","session_id":"s-$1"}'
	exit 1
fi
printf '$1\n' >"by-$1.txt"
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-$1","num_turns":1}'
EOF
	chmod +x "$T/$1.sh"
	cat >"$W/.bernstein/catalog/profiles/$1.yaml" <<EOF
name: $1
display_name: "$1"
shape: factory
invocation:
  binary: $T/$1.sh
  prompt_positional: true
capabilities:
$3
runtime:
  events: {dialect: claude}
EOF
	printf '  %s:\n    resume: unsupported\n    dangerous_mode: always-on\n    event_channel: stream-json\n' \
		"$1" >>"$W/.bernstein/catalog/strategy-matrix.yaml"
}
agent broken 0 '  tool_use: true'
agent dumb 1 '  tool_use: false'
agent steady 1 '  tool_use: true
  mcp_client: true'

cat >"$W/bernstein.yaml" <<'EOF'
parallel: 1
retry: {max_attempts: 2, backoff: 0}
fallback: [dumb, steady]
EOF
cat >"$W/plan.yaml" <<'EOF'
name: fallback
tasks:
  - id: a
    title: a
    adapter: broken
    requires: [capability:tool_use]
    prompt: "task-a"
  - id: c
    title: c
    adapter: broken
    requires: [capability:mcp_client]
    prompt: "task-c"
EOF
git_q add -A && git_q commit -q -m base

# c refused (exit 6 needs refusals alone: a is done, so 6 or 0 are wrong)
expect_exit 6 "$KEY" "$BERNSTEIN" run --json plan.yaml
check "a: two attempts on broken, then steady; dumb (no tool_use) skipped; c never ran" sh -c \
	"[ \"\$(tr '\n' ' ' <'$T/ran')\" = 'broken a broken a steady a ' ]"
check "steady's work is merged" test -e "$W/by-steady.txt"
expect_exit 0 "$KEY" "$BERNSTEIN" status --json
cat >"$T/status.py" <<'EOF'
import json, sys
tasks = {t["id"]: t for t in json.load(open(sys.argv[1]))["tasks"]}
a, c = tasks["a"], tasks["c"]
assert a["state"] == "done" and a["adapter"] == "steady" and a["attempts"] == 3, a
assert a["adapter_attempt"] == 1 and a["fallback"] == 2, a
assert c["state"] == "refused" and c["attempts"] == 0, c
EOF
check "status --json: a done by steady (fallback 2), c refused" python3 "$T/status.py" "$T/stdout"
cat >"$T/audit.py" <<'EOF'
import glob, json, sys
recs = []
for f in glob.glob(sys.argv[1] + "/.bernstein/audit/*.jsonl") + glob.glob(sys.argv[1] + "/.bernstein/audit*.jsonl"):
    for line in open(f):
        if line.strip():
            recs.append(json.loads(line))
fb = [r for r in recs if r["event_type"] == "task.fallback"]
assert len(fb) == 1, fb
d = fb[0]["details"]
assert d["task"] == "a" and d["attempt"] == 2, d
assert d["from"]["adapter"] == "broken" and len(d["from"]["profile_hash"]) == 64, d
assert d["to"]["adapter"] == "steady" and len(d["to"]["profile_hash"]) == 64, d
assert d["from"]["profile_hash"] != d["to"]["profile_hash"], d
assert "broken broke" in d["reason"], d
sel = [r for r in recs if r["event_type"] == "adapter.capability_selection"]
assert any(r["details"].get("adapter", r["details"].get("selected")) == "steady" or "steady" in json.dumps(r["details"]) for r in sel), sel
ref = [r for r in recs if r["event_type"] == "adapter.capability_refusal"]
assert len(ref) == 1 and "steady" not in json.dumps(ref[0]["details"]), ref
EOF
check "audit: one task.fallback with both profile hashes; c's refusal names broken alone" \
	python3 "$T/audit.py" "$W"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

# checked before anything is recorded: a fallback adapter the catalogue
# does not have, escalation models for an adapter that takes no model
cat >"$W/bad1.yaml" <<'EOF'
name: bad
tasks:
  - title: a
    adapter: broken
    prompt: p
    fallback: [steady, nosuch]
EOF
expect_exit 3 "$KEY" "$BERNSTEIN" run bad1.yaml
expect_stderr_contains "bad1.yaml:6:24: field 'tasks[0].fallback[1]': adapter 'nosuch' is not in the catalogue"
cat >"$W/bad2.yaml" <<'EOF'
name: bad
tasks:
  - title: a
    adapter: broken
    prompt: p
    retry: {models: [big]}
EOF
expect_exit 3 "$KEY" "$BERNSTEIN" run bad2.yaml
expect_stderr_contains "bad2.yaml:3:5: field 'tasks[0]': adapter 'broken' takes no model"
test_done
