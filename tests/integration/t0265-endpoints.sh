#!/bin/sh
# endpoints: per adapter (issue #17, item 4) with the built-in runner
# (adapter openai_agents) against tests/helpers/fake-llm.py: which URL, key
# and model each level of precedence gives, seen by the server itself:
#   task sampling > role_model_policy > the plan's endpoints > bernstein.yaml's
#   endpoints > the mode profile (temperature); model: task > role > endpoint.
# Each level points at its own path on the one fake server and names its own
# key variable, so each request says where it came from. The plan's entry
# replaces bernstein.yaml's as a whole (no key of one mixed into the other);
# the keys' values are in nothing bernstein keeps; a bad entry is reported
# at FILE:LINE:COL by plan validate and config validate; resume keeps the
# plan's endpoints (they are in the recorded task); a fallback adapter gets
# its own endpoint; network: llm lets an agent in bwrap reach its endpoints:
# URL (the proxy learns it from the entry).
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0265 endpoints per adapter: precedence, seen by the server"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
AK="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
# one value per key variable: the server logs sha256("Bearer VALUE")
# (OPENAI_API_KEY: what the runner sends when no api_key_env is given)
K_DEF=sk-default-0123456789abcdef
K_YAML=sk-yaml-0123456789abcdef
K_PLAN=sk-plan-0123456789abcdef
K_TASK=sk-task-0123456789abcdef
KEYS="OPENAI_API_KEY=$K_DEF DEEPSEEK_API_KEY=$K_YAML GROQ_API_KEY=$K_PLAN MISTRAL_API_KEY=$K_TASK BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf '{"default": {"text": "done"}}\n' >"$T/script.json"
fake_start "$T/script.json"
B="http://127.0.0.1:$FAKE_PORT"
cat >"$W/bernstein.yaml" <<EOF
adapter: openai_agents
sandbox: none
retry_backoff: 0
max_retries: 0
mode: fast
endpoints:
  openai_agents: {base_url: "$B/yaml/v1", api_key_env: DEEPSEEK_API_KEY, model: yaml-model}
role_model_policy:
  qa: {base_url: "$B/role/v1", model: role-model}
EOF
commit_all base
run "$BERNSTEIN" config validate
check "bernstein.yaml with endpoints: is valid" test "$RC" -eq 0

# ---- bernstein.yaml's endpoint alone ----
cat >"$W/yaml.yaml" <<'EOF'
name: from-yaml
tasks:
  - {title: y, prompt: "say hi"}
EOF
commit_all yaml
run $KEYS "$AK" "$BERNSTEIN" run yaml.yaml
check "the run exits 0" test "$RC" -eq 0
# who PATH KEY MODEL: the request whose path starts with /PATH/ used KEY and MODEL
seen()
{
	"$PY" - "$T/requests.jsonl" "$1" "$2" "$3" "$4" <<'PY'
import hashlib, json, sys
log, prefix, key, model, temp = sys.argv[1:]
reqs = [json.loads(l) for l in open(log) if l.strip()]
mine = [r for r in reqs if r["path"].startswith("/" + prefix + "/")]
assert mine, ("no request to /%s/" % prefix, [r["path"] for r in reqs])
want = "sha256:" + hashlib.sha256(("Bearer " + key).encode()).hexdigest()
for r in mine:
    h = {k.lower(): v for k, v in r["headers"].items()}
    assert h.get("authorization") == want, (prefix, "wrong key", h.get("authorization"))
    assert r["body"].get("model") == model, (prefix, r["body"].get("model"))
    assert r["body"].get("temperature") == float(temp), (prefix, r["body"].get("temperature"))
PY
}
check "bernstein.yaml's endpoint: its URL, DEEPSEEK_API_KEY, its model, the mode's temperature" \
	seen yaml "$K_YAML" yaml-model 0

# ---- the plan's endpoint replaces bernstein.yaml's as a whole ----
cat >"$W/plan.yaml" <<EOF
name: from-plan
endpoints:
  openai_agents: {base_url: "$B/plan/v1", model: plan-model}
tasks:
  - {title: p, prompt: "say hi"}
EOF
commit_all plan
nbefore=$(nreq)
run $KEYS "$AK" "$BERNSTEIN" run plan.yaml
check "the run exits 0" test "$RC" -eq 0
check "one more request" test "$(nreq)" -eq $((nbefore + 1))
# the plan's entry names no key variable: the runner's own default
# (OPENAI_API_KEY) is sent, not bernstein.yaml's DEEPSEEK_API_KEY
check "the plan's endpoint, as a whole: its URL and model, no key of bernstein.yaml's" \
	seen plan "$K_DEF" plan-model 0

# ---- the plan's endpoint, the role's, the task's ----
cat >"$W/plan2.yaml" <<EOF
name: from-plan-2
endpoints:
  openai_agents: {base_url: "$B/plan2/v1", api_key_env: GROQ_API_KEY, model: plan-model}
tasks:
  - {title: p2, prompt: "say hi"}
  - {title: r2, role: qa, prompt: "say hi"}
  - title: t2
    prompt: "say hi"
    model: task-model
    sampling: {base_url: "$B/task/v1", api_key_env: MISTRAL_API_KEY, temperature: 0.5}
EOF
commit_all plan2
run "$BERNSTEIN" plan validate plan2.yaml
check "the plan validates" test "$RC" -eq 0
run $KEYS "$AK" "$BERNSTEIN" run plan2.yaml
check "the run exits 0" test "$RC" -eq 0
check "the plan's endpoint: its URL, GROQ_API_KEY, its model" seen plan2 "$K_PLAN" plan-model 0
check "the role's base_url and model win over the plan's; the plan's key stays" \
	seen role "$K_PLAN" role-model 0
check "the task's sampling and model win over all: its URL, MISTRAL_API_KEY, 0.5" \
	seen task "$K_TASK" task-model 0.5
# ---- a fallback adapter gets its own endpoint ----
cat >"$W/plan3.yaml" <<EOF
name: fallback
endpoints:
  openai_agents: {base_url: "$B/fallback/v1", api_key_env: GROQ_API_KEY, model: fb-model}
tasks:
  - title: f
    adapter: mock
    prompt: "fail on purpose"
    retry: {max_attempts: 1, on: [failed]}
    fallback: [openai_agents]
EOF
commit_all plan3
run $KEYS "$AK" "$BERNSTEIN" run plan3.yaml
check "the run exits 0 (the fallback finished the task)" test "$RC" -eq 0
check "the fallback adapter's requests: its endpoint's URL, key and model" \
	seen fallback "$K_PLAN" fb-model 0

# ---- network: llm: the proxy lets the agent reach its endpoints: URL ----
# (a shell agent in bwrap whose endpoint is an environment variable; without
# the entry's base_url the proxy would know no endpoint for it)
if command -v bwrap >/dev/null 2>&1 && bwrap --unshare-net --ro-bind / / /bin/true 2>/dev/null; then
	L=$T/llm
	mkdir -p "$L"
	git -C "$L" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$L/.gitignore"
	shell_agent "$L"
	cat >>"$L/.bernstein/catalog/profiles/shell.yaml" <<'EOF'
  supports_endpoint: true
runtime:
  endpoint:
    env: {AGENT_BASE_URL: "{base_url}"}
EOF
	cat >"$L/bernstein.yaml" <<EOF
adapter: shell
sandbox: bwrap
network: llm
max_retries: 0
endpoints:
  shell: {base_url: "$B/llm/v1"}
EOF
	cat >"$L/plan.yaml" <<'EOF'
name: llm
tasks:
  - title: l
    prompt: "curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{\"messages\": []}' \"$AGENT_BASE_URL/chat/completions\" > code.txt"
EOF
	git -C "$L" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$L" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
	run sh -c "cd '$L' && exec env $AK '$BERNSTEIN' run plan.yaml"
	if [ "$RC" -eq 0 ]; then ok "network: llm in bwrap: the run exits 0"; else
		not_ok "network: llm in bwrap: the run exits 0 (exit $RC)"
		_diag_file stdout "$T/stdout"
	fi
	check "network: llm: the agent reached its endpoints: URL through the proxy (HTTP 200)" \
		grep -qx 200 "$L/code.txt"
	check "... and the server saw it there" grep -q '"path": "/llm/v1/chat/completions"' "$T/requests.jsonl"
else
	skip "network: llm with endpoints:" "bubblewrap (bwrap) is not installed or cannot create its namespaces"
fi

check "the plan's endpoints are in the recorded task (resume keeps them)" "$PY" -c "
import json, sqlite3
db = sqlite3.connect('$W/.bernstein/state.db')
specs = [json.loads(r[0]) for r in db.execute(\"select spec from tasks where id = 'p2'\")]
assert specs and specs[-1]['endpoints'] == {'openai_agents': {'base_url': '$B/plan2/v1', 'api_key_env': 'GROQ_API_KEY', 'model': 'plan-model'}}, specs
"
check "no key's value is in anything bernstein kept or printed" \
	sh -c '! grep -rqF -e "$1" -e "$2" -e "$3" -e "$4" "$5/.bernstein" "$6/stdout" "$6/stderr"' \
	sh "$K_DEF" "$K_YAML" "$K_PLAN" "$K_TASK" "$W" "$T"

# ---- an unset key variable refuses the task, naming it ----
run GROQ_API_KEY= OPENAI_API_KEY=x "$AK" "$BERNSTEIN" run plan2.yaml
check "an endpoint whose key variable is unset: the run fails" test "$RC" -ne 0
check "... saying which variable" grep -q "api_key_env names environment variable 'GROQ_API_KEY' but it is not set" "$T/stdout"

# ---- bad entries: FILE:LINE:COL and the field ----
cat >"$W/bad.yaml" <<'EOF'
name: bad
endpoints:
  openai_agents: {api_key_env: GITHUB_TOKEN}
tasks:
  - {title: b, prompt: x}
EOF
run "$BERNSTEIN" plan validate bad.yaml
check "plan validate: a refused key variable, exit 3" test "$RC" -eq 3
expect_stderr_contains "bad.yaml:3:32: field 'endpoints.openai_agents.api_key_env': api_key_env 'GITHUB_TOKEN' is not an allowed credential variable name"
cat >"$W/bad.yaml" <<'EOF'
name: bad
endpoints:
  mock: {base_url: "http://127.0.0.1:9/v1"}
  nosuch: {model: m}
tasks:
  - {title: b, prompt: x}
EOF
run "$BERNSTEIN" plan validate bad.yaml
check "plan validate: an adapter without endpoints, an unknown adapter: exit 3" test "$RC" -eq 3
expect_stderr_contains "bad.yaml:3:3: field 'endpoints.mock': a task on 'mock' would be refused at dispatch: Adapter 'mock' does not declare"
expect_stderr_contains "bad.yaml:4:3: field 'endpoints.nosuch': unknown adapter 'nosuch'"
cat >"$W/bad.yaml" <<'EOF'
name: bad
endpoints:
  codex: {base_url: "http://user:pw@127.0.0.1/v1"}
tasks:
  - {title: b, prompt: x}
EOF
run "$BERNSTEIN" plan validate bad.yaml
expect_stderr_contains "bad.yaml:3:21: field 'endpoints.codex.base_url': base_url 'http://***@127.0.0.1/v1': credentials in the URL"
check "... without repeating them" sh -c '! grep -q pw "$1"' sh "$T/stderr"
cp "$W/bernstein.yaml" "$T/good.yaml"
printf 'endpoints:\n  mock: {api_key_env: OPENAI_API_KEY}\n' >"$W/bernstein.yaml"
run "$BERNSTEIN" config validate
check "config validate: an endpoint for an adapter that takes none, exit 3" test "$RC" -eq 3
expect_stderr_contains "bernstein.yaml:2:3: field 'endpoints.mock': a task on 'mock' would be refused at dispatch"
cp "$T/good.yaml" "$W/bernstein.yaml"

fake_stop
test_done
