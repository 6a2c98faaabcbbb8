#!/bin/sh
# Onboarding a real agent CLI: pi, pinned in tests/agents/, against
# tests/helpers/fake-llm.py (OpenAI Chat Completions) through the profile
# tests/data/onboard/pi_local.yaml. `onboard record` runs the smoke case and
# three held-out cases (every one reaches the server with its own prompt) and
# writes the transcript; `onboard replay` passes; the transcript's flags
# edited, pi itself refuses them and the replay fails. Skipped (TAP skip)
# only when the pinned agents are not installed (tests/agents/install.sh).
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0110 onboard a real CLI (pi) against the fake LLM server"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

DATA=$SRCDIR/tests/data/onboard
# pi starts slowly (node), and record runs it four times
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-250}

if ! PI_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check) || [ ! -x "$PI_BIN/pi" ]; then
	skip "onboard record and replay with pi" \
		"the agent CLIs pinned in tests/agents/ are not installed (run tests/agents/install.sh)"
	test_done
fi

# pi's configuration directory: the "local" provider at the fake server
fake_start "$DATA/llm-hello.json"
mkdir -p "$T/pi-agent" "$T/tmp"
cat >"$T/pi-agent/models.json" <<EOF
{"providers": {"local": {"baseUrl": "http://127.0.0.1:$FAKE_PORT/v1",
  "api": "openai-completions", "apiKey": "OPENAI_API_KEY",
  "models": [{"id": "fake-model"}]}}}
EOF
echo '{"enableInstallTelemetry": false}' >"$T/pi-agent/settings.json"
cp "$DATA/pi_local.yaml" "$T/work/pi_local.yaml"

run_pi()
{
	run PATH="$PI_BIN:/usr/bin:/bin" PI_CODING_AGENT_DIR="$T/pi-agent" PI_OFFLINE=1 \
		PI_TELEMETRY=0 PI_SKIP_VERSION_CHECK=1 OPENAI_API_KEY=sk-canary-e2e-key \
		USER=canaryuser LOGNAME=canaryuser TMPDIR="$T/tmp" "$BERNSTEIN" onboard "$@"
}

# True when the request log holds a request whose message text contains
# each prompt of the JSON file $1 (key $2: "cases" of record/derive), and
# $3 requests in all.
requests_carry()
{
	"$PY" - "$T/requests.jsonl" "$1" "$2" "$3" <<'EOF'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
conv = [r for r in reqs if not r.get("side") and not r.get("count")]
def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
want = [c["prompt"] for c in json.load(open(sys.argv[2]))[sys.argv[3]]]
missing = [p for p in want if not any(p in s for r in conv for s in strings(r.get("body")))]
if missing or len(conv) != int(sys.argv[4]):
    print("requests: %d, missing prompts: %r" % (len(conv), missing))
    sys.exit(1)
EOF
}

# ---- record -----------------------------------------------------------------

run_pi record pi_local.yaml --smoke-prompt "print a short greeting" --smoke-model fake-model \
	--golden-dir golden --timeout 120 --json
if [ "$RC" -eq 0 ]; then ok "record pi exits 0"; else
	not_ok "record pi exits 0 (got $RC)"
	_diag_file stdout "$T/stdout"
	_diag_file stderr "$T/stderr"
fi
cp "$T/stdout" "$T/record.json"
check "the transcript and the evidence are written" \
	test -s "$T/work/golden/pi_local.yaml" -a -s "$T/work/golden/pi_local.evidence.yaml"
check "four requests, one per case, each carrying its held-out prompt" \
	requests_carry "$T/record.json" cases 4
for canary in canaryuser sk-canary-e2e-key "$T" "Hello from the fake LLM"; do
	if grep -rqF -e "$canary" "$T/work/golden"; then
		not_ok "'$canary' appears in no written file"
	else
		ok "'$canary' appears in no written file"
	fi
done
check "the evidence lists OPENAI_API_KEY by name" \
	grep -qx '  - "OPENAI_API_KEY"' "$T/work/golden/pi_local.evidence.yaml"
check "the scratch directories are removed" test -z "$(ls -A "$T/tmp")"

# ---- replay -----------------------------------------------------------------

: >"$T/requests.jsonl"
run_pi replay golden/pi_local.yaml --timeout 120 --json
if [ "$RC" -eq 0 ]; then ok "replay of the recorded transcript exits 0"; else
	not_ok "replay of the recorded transcript exits 0 (got $RC)"
	_diag_file stdout "$T/stdout"
fi
cp "$T/stdout" "$T/replay.json"
check "three more requests, each with its step's prompt" requests_carry "$T/record.json" cases 3

# ---- the flags changed: pi refuses them ----------------------------------------

# in ctor_kwargs and in every inner_argv, so the argv check agrees and the
# failure is pi's own
sed 's/"--provider"/"--providr"/' "$T/work/golden/pi_local.yaml" >"$T/work/edited.yaml"
check "the edit changed the flag everywhere" \
	sh -c "test \"\$(grep -c -- '\"--providr\"' '$T/work/edited.yaml')\" -eq 4"
: >"$T/requests.jsonl"
run_pi replay edited.yaml --timeout 120 --json
check "replay with a flag pi does not know exits 1" test "$RC" -eq 1
cp "$T/stdout" "$T/edited.json"
if "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
st = [(s["status"], s["exit_code"] != 0) for s in d["steps"]]
sys.exit(0 if not d["passed"] and st == [("exit_nonzero", True)] * 3 else 1)' "$T/edited.json"; then
	ok "every step attempted and failed: pi exited non-zero"
else
	not_ok "every step attempted and failed: pi exited non-zero"
	_diag_file json "$T/edited.json"
fi
check "no request reached the server" test "$(nreq)" -eq 0
fake_stop

test_done
