#!/bin/sh
# adapter: auto with the real pinned CLIs against tests/helpers/fake-llm.py
# (issue #17): PATH holds all six, only pi has credentials (PI_API_KEY, a key
# variable no other profile passes). `init` writes pi as the adapter, the
# others in comments with what they lack; with bernstein.yaml's default
# `adapter: auto`, a plan without `adapter:` runs pi, and the audit chain
# says which agents were skipped and why; with no key at all, every task is
# refused with what each agent lacks and the run exits non-zero. A task that
# means the mock must name it: auto never takes it.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0177 adapter: auto picks the usable agent, refuses when none is"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

require_agents
W=$T/w
H=$T/h
mkdir -p "$W" "$H"
git -C "$W" init -q -b main . >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m base >/dev/null 2>&1

# b [VAR=VALUE...] -- ARGS: bernstein in $W with PATH holding the six CLIs
b()
{
	envs=
	while [ "$1" != -- ]; do
		envs="$envs $1"
		shift
	done
	shift
	run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$H' LC_ALL=C.UTF-8 TZ=UTC BERNSTEIN_AUDIT_KEY_PATH='$T/audit.key' BERNSTEIN_ALLOWED_API_KEY_ENVS=PI_API_KEY $envs '$BERNSTEIN' $*"
}
commit() { git -C "$W" add -A >/dev/null 2>&1 && git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m "$1" >/dev/null 2>&1; }

# ---- init detects the one usable agent ----
b PI_API_KEY=e2e-dummy-key -- init
check "init exits 0" test "$RC" -eq 0
check "init writes pi, the one usable agent, as the adapter" grep -qx 'adapter: pi' "$W/bernstein.yaml"
check "init says so" grep -q 'adapter: pi, the first agent usable here' "$T/stdout"
check "the others are comments saying what they lack" \
	grep -q "^# adapter: codex .*# not usable here: no credentials: set OPENAI_API_KEY" "$W/bernstein.yaml"
check "auto is offered in a comment" grep -q '^# adapter: auto ' "$W/bernstein.yaml"
b -- config validate
check "the bernstein.yaml init wrote is valid" test "$RC" -eq 0

# ---- no agent usable: init writes auto ----
b -- init --force
check "with none usable, init writes adapter: auto" grep -qx 'adapter: auto' "$W/bernstein.yaml"
# the fake server's endpoint for the backend role (any adapter auto takes)
cat >"$T/write.json" <<'JSON'
{"side": {"text": "Title"}, "responses": [{"tool_calls": [{"name": "bash", "id": "call_t_1", "arguments": {"command": "echo hi > hello.txt"}}]}, {"text": "Created hello.txt."}]}
JSON
fake_start "$T/write.json"
sed -i -e 's/^sandbox: auto$/sandbox: none/' -e 's/^retry_backoff: 2$/retry_backoff: 0/' \
	-e "s#^role_model_policy: {}#role_model_policy: {backend: {base_url: \"$FAKE_URL\", api_key_env: PI_API_KEY}}#" \
	"$W/bernstein.yaml"
cat >"$W/plan.yaml" <<'EOF2'
name: auto
tasks:
  - title: hello
    prompt: create hello.txt containing hi
EOF2
commit plan
b PI_API_KEY=e2e-dummy-key -- plan show plan.yaml
check "plan show says auto would take pi" grep -q 'auto (pi)' "$T/stdout"
b PI_API_KEY=e2e-dummy-key -- run plan.yaml
if [ "$RC" -eq 0 ]; then ok "a plan without adapter: runs (exit 0)"; else
	not_ok "a plan without adapter: runs (exit $RC)"
	_diag_file stdout "$T/stdout"
	_diag_file stderr "$T/stderr"
fi
check "pi wrote hello.txt, merged" grep -qx hi "$W/hello.txt"
check "the server saw pi's requests" test -s "$T/requests.jsonl"
b -- status --json
check "status: the task ran on pi" python3 -c "
import json; o = json.load(open('$T/stdout'))
assert [t['adapter'] for t in o['tasks']] == ['pi'], o"
check "the audit chain has the auto decision: pi, five agents skipped with why" python3 -c "
import glob, json
recs = [json.loads(l) for f in sorted(glob.glob('$W/.bernstein/audit/*.jsonl')) for l in open(f) if l.strip()]
a = [r for r in recs if r.get('event_type') == 'adapter.auto_selection']
assert len(a) == 1, [r.get('event_type') for r in recs]
d = a[0]['details']
assert d['chosen'] == 'pi' and d['candidates'] == ['pi'], d
sk = {s['adapter']: s['reason'] for s in d['skipped']}
assert sorted(sk) == ['claude', 'codex', 'gemini', 'opencode', 'qwen'], sk
assert sk['claude'].startswith('no credentials: set ANTHROPIC_API_KEY'), sk
assert [r for r in recs if r.get('event_type') == 'adapter.capability_selection' and r['details']['adapter'] == 'pi']
"
b -- audit verify
check "the audit chain verifies" test "$RC" -eq 0

# ---- nothing usable: every task refused, with the reasons ----
cat >"$W/plan2.yaml" <<'EOF2'
name: none
tasks:
  - title: one
    prompt: create one.txt
  - title: two
    prompt: create two.txt
EOF2
commit plan2
nreq=$(wc -l <"$T/requests.jsonl")
b -- run plan2.yaml
check "with no agent usable the run exits non-zero (6: refused)" test "$RC" -eq 6
check "both tasks are refused" test "$(grep -c ': pending -> refused' "$T/stdout")" -eq 2
check "the reason names each agent and what it lacks" \
	grep -q "adapter auto: no usable agent: claude: no credentials: set ANTHROPIC_API_KEY, or log in with 'claude' itself (its login: ~/.claude/.credentials.json); codex: no credentials: set OPENAI_API_KEY" "$T/stdout"
check "... down to pi" grep -q "; pi: no credentials: set PI_API_KEY or " "$T/stdout"
check "no agent was started: no request reached the server" test "$(wc -l <"$T/requests.jsonl")" -eq "$nreq"
b -- status --json
check "status: both refused, no adapter" python3 -c "
import json; o = json.load(open('$T/stdout'))
t = [x for x in o['tasks']]
assert [x['state'] for x in t] == ['refused', 'refused'] and all(not x.get('adapter') for x in t), t"

# ---- a binary missing from PATH is 'not installed' ----
cat >"$W/plan3.yaml" <<'EOF2'
name: nopath
tasks:
  - title: three
    prompt: create three.txt
EOF2
commit plan3
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC BERNSTEIN_AUDIT_KEY_PATH='$T/audit.key' BERNSTEIN_ALLOWED_API_KEY_ENVS=PI_API_KEY PI_API_KEY=k '$BERNSTEIN' run plan3.yaml"
check "no CLI on PATH: refused (exit 6)" test "$RC" -eq 6
check "the reason says not installed" grep -q "claude: not installed: 'claude' is not on PATH" "$T/stdout"
fake_stop
test_done
