#!/bin/sh
# endpoints: with a real CLI (issue #17, item 4): the pinned pi against
# tests/helpers/fake-llm.py, pointed there by bernstein.yaml's
# `endpoints: {pi: ...}` alone (no role policy, no task sampling). Its key
# variable is one no profile passes through (CORP_LLM_KEY, admitted by
# BERNSTEIN_ALLOWED_API_KEY_ENVS), so pi has credentials only through the
# endpoint: `doctor` counts it, `adapter: auto` (all six CLIs on PATH)
# chooses pi for it, and pi gets that endpoint: the server sees its URL, the
# key's value and the entry's model. Without the entry pi is not usable.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0266 e2e: pi through endpoints: only, chosen by adapter: auto"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents
W=$T/w
H=$T/h
mkdir -p "$W" "$H"
KEY=corp-e2e-0123456789abcdef
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
commit() { git -C "$W" add -A >/dev/null 2>&1 && git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m "$1" >/dev/null 2>&1; }

# b [VAR=VALUE...] -- ARGS: bernstein in $W with PATH holding the six CLIs
b()
{
	envs=
	while [ "$1" != -- ]; do
		envs="$envs $1"
		shift
	done
	shift
	run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$H' LC_ALL=C.UTF-8 TZ=UTC BERNSTEIN_AUDIT_KEY_PATH='$T/audit.key' BERNSTEIN_ALLOWED_API_KEY_ENVS=CORP_LLM_KEY $envs '$BERNSTEIN' $*"
}

cat >"$T/write.json" <<'JSON'
{"side": {"text": "Title"}, "responses": [{"tool_calls": [{"name": "bash", "id": "call_t_1", "arguments": {"command": "echo hi > hello.txt"}}]}, {"text": "Created hello.txt."}]}
JSON
fake_start "$T/write.json"
cat >"$W/bernstein.yaml" <<EOF
adapter: auto
sandbox: none
retry_backoff: 0
endpoints:
  pi: {base_url: "$FAKE_URL", api_key_env: CORP_LLM_KEY, model: corp-model}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: endpoints
tasks:
  - title: hello
    prompt: create hello.txt containing hi
EOF
commit base

# ---- without the entry pi has no credentials ----
mv "$W/bernstein.yaml" "$T/with.yaml"
printf 'adapter: auto\n' >"$W/bernstein.yaml"
b CORP_LLM_KEY=$KEY -- doctor --json
check "doctor without endpoints: pi is not usable (no credentials)" "$PY" -c "
import json; o = json.load(open('$T/stdout'))
a = [c for c in o['agents'] if c['name'] == 'pi']
assert a and not a[0]['ok'], a
"
cp "$T/with.yaml" "$W/bernstein.yaml"

# ---- doctor counts the endpoint's key variable ----
b CORP_LLM_KEY=$KEY -- doctor --json
check "doctor: pi is usable with the endpoint's key variable, the others are not" "$PY" -c "
import json; o = json.load(open('$T/stdout'))
a = {c['name']: c for c in o['agents']}
assert a['pi']['ok'] and 'key: CORP_LLM_KEY' in a['pi']['detail'], a['pi']
assert [n for n, c in a.items() if c['ok']] == ['pi'], a
"
b CORP_LLM_KEY=$KEY -- plan show plan.yaml
check "plan show: auto would take pi" grep -q 'auto (pi)' "$T/stdout"

# ---- the run: auto takes pi, pi gets the endpoint ----
b CORP_LLM_KEY=$KEY -- run plan.yaml
if [ "$RC" -eq 0 ]; then ok "the run exits 0"; else
	not_ok "the run exits 0 (exit $RC)"
	_diag_file stdout "$T/stdout"
	_diag_file stderr "$T/stderr"
fi
check "pi wrote hello.txt, merged" grep -qx hi "$W/hello.txt"
b -- status --json
check "status: the task ran on pi" "$PY" -c "
import json; o = json.load(open('$T/stdout'))
assert [t['adapter'] for t in o['tasks']] == ['pi'], o"
check "the server saw pi's requests with the endpoint's key and model" "$PY" -c "
import hashlib, json
reqs = [json.loads(l) for l in open('$T/requests.jsonl') if l.strip()]
conv = [r for r in reqs if not r.get('side')]
assert len(conv) >= 2, [r['path'] for r in reqs]
want = 'sha256:' + hashlib.sha256(b'Bearer $KEY').hexdigest()
for r in reqs:
    h = {k.lower(): v for k, v in r['headers'].items()}
    assert h.get('authorization') == want, h.get('authorization')
    assert r['path'] == '/v1/chat/completions', r['path']
    assert r['body'].get('model') == 'corp-model', r['body'].get('model')
"
check "the key's value is in nothing bernstein kept or printed" \
	sh -c '! grep -rqF -e "$1" "$2/.bernstein" "$3/stdout" "$3/stderr"' sh "$KEY" "$W" "$T"
fake_stop
test_done
