#!/bin/sh
# `bernstein spawn` takes the adapter's endpoints: entry of bernstein.yaml
# (of the repository it takes its catalogue from) as a run does: its
# base_url, its api_key_env and its model, seen by the server itself
# (tests/helpers/fake-llm.py over loopback); --set and -m win slot by slot;
# an adapter without an entry gets none; an invalid bernstein.yaml is
# refused (exit 3) as run refuses it.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0385 spawn reads endpoints: of bernstein.yaml"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
K_DEF=sk-default-0123456789abcdef
K_YAML=sk-yaml-0123456789abcdef
K_SET=sk-set-0123456789abcdef
KEYS="OPENAI_API_KEY=$K_DEF DEEPSEEK_API_KEY=$K_YAML GROQ_API_KEY=$K_SET BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin"
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '{"default": {"text": "done"}}\n' >"$T/script.json"
fake_start "$T/script.json"
B="http://127.0.0.1:$FAKE_PORT"
cat >"$W/bernstein.yaml" <<EOF
endpoints:
  openai_agents: {base_url: "$B/yaml/v1", api_key_env: DEEPSEEK_API_KEY, model: yaml-model}
EOF

# seen PATH KEY MODEL: every request to /PATH/ used KEY and MODEL
seen()
{
	"$PY" - "$T/requests.jsonl" "$1" "$2" "$3" <<'PY'
import hashlib, json, sys
log, prefix, key, model = sys.argv[1:]
reqs = [json.loads(l) for l in open(log) if l.strip()]
mine = [r for r in reqs if r["path"].startswith("/" + prefix + "/")]
assert mine, ("no request to /%s/" % prefix, [r["path"] for r in reqs])
want = "sha256:" + hashlib.sha256(("Bearer " + key).encode()).hexdigest()
for r in mine:
    h = {k.lower(): v for k, v in r["headers"].items()}
    assert h.get("authorization") == want, (prefix, "wrong key", h.get("authorization"))
    assert r["body"].get("model") == model, (prefix, r["body"].get("model"))
PY
}

# bernstein.yaml's entry alone: its URL, its key variable, its model
expect_exit 0 $KEYS "$BERNSTEIN" spawn openai_agents "say hi"
expect_stdout_contains "outcome: completed"
check "the endpoint's URL, DEEPSEEK_API_KEY and its model" seen yaml "$K_YAML" yaml-model
check "the key's value is in nothing spawn wrote" \
	sh -c '! grep -rq "$1" "$2/.bernstein" "$3/stdout" "$3/stderr"' sh "$K_YAML" "$W" "$T"

# --set and -m win slot by slot: the URL and the model given, the entry's key
expect_exit 0 $KEYS "$BERNSTEIN" spawn openai_agents -m set-model --set "base_url=$B/set/v1" "say hi"
check "--set base_url and -m over the entry, its api_key_env kept" seen set "$K_YAML" set-model
expect_exit 0 $KEYS "$BERNSTEIN" spawn openai_agents --set api_key_env=GROQ_API_KEY "say hi again"
check "--set api_key_env over the entry's, its URL and model kept" $PY -c '
import hashlib, json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = reqs[-1]
h = {k.lower(): v for k, v in r["headers"].items()}
assert r["path"].startswith("/yaml/"), r["path"]
assert h["authorization"] == "sha256:" + hashlib.sha256(b"Bearer " + sys.argv[2].encode()).hexdigest()
assert r["body"]["model"] == "yaml-model"' "$T/requests.jsonl" "$K_SET"

# --dry-run shows it: the key variable the agent gets
expect_exit 0 $KEYS "$BERNSTEIN" spawn --dry-run openai_agents "say hi"
check "--dry-run: the entry's key variable in the agent's environment" grep -q '^env: DEEPSEEK_API_KEY ' "$T/stdout"

# an adapter without an entry: none (it needs its own model)
expect_exit 2 $KEYS "$BERNSTEIN" spawn openai_agents_nosuch "x"
# goal mode: the planner gets its adapter's entry of your bernstein.yaml
# (the working copy's: here it is not even committed, so the planner's
# view, a clone of HEAD, has none)
"$PY" - "$T/script.json" <<'PY'
import json, sys
plan = "name: g\ntasks:\n  - {title: a, adapter: mock, prompt: p}\n"
json.dump({"responses": [
    {"tool_calls": [{"name": "write_file", "id": "c1",
                     "arguments": {"path": "bernstein-plan.yaml", "content": plan}}]},
    {"text": "Wrote the plan."}]}, open(sys.argv[1], "w"))
PY
fake_start "$T/script.json"
B="http://127.0.0.1:$FAKE_PORT"
printf '.bernstein/\nbernstein.yaml\n' >"$W/.gitignore"
git -C "$W" add .gitignore >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
printf 'sandbox: none\nendpoints:\n  openai_agents: {base_url: "%s/goal/v1", api_key_env: DEEPSEEK_API_KEY, model: goal-model}\n' \
	"$B" >"$W/bernstein.yaml"
expect_exit 0 $KEYS "BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key" "$BERNSTEIN" plan generate \
	--planner openai_agents --planner-sandbox none -o g.yaml "a goal"
check "the planner: the entry's URL, DEEPSEEK_API_KEY and its model" seen goal "$K_YAML" goal-model

# an invalid bernstein.yaml: refused as run refuses it
printf 'endpoints:\n  openai_agents: {base_url: "ftp://x"}\n' >"$W/bernstein.yaml"
expect_exit 3 $KEYS "$BERNSTEIN" spawn openai_agents "say hi"
expect_stderr_contains "bernstein.yaml:2:"
test_done
