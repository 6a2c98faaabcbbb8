#!/bin/sh
# Redaction of secrets in every representation (issue #14, class 10). An
# agent that holds a key with what JSON escapes in it ('"', '\', a tab, a
# control byte, non-ASCII of 2 and 4 bytes) prints it every way it can: raw
# on stdout and stderr, in JSON events with and without \u escapes for
# non-ASCII, spelt entirely in \uXXXX escapes, inside a tool call's input
# (JSON in a string), inside JSON text, in the final result, and in a line
# over the 1 MiB line cap (whole in its head, and cut at the cap). It runs
# through `bernstein spawn` (text, -v, --json), `bernstein run` (then `logs`, `logs --raw`,
# `logs --events`, `status`, `status --json`), and the built-in runner talks
# to a fake model that sends the key back in its text and in a tool call's
# arguments. Every file under .bernstein/ and every captured output is then
# searched for every representation of the key (raw, JSON-escaped with
# lower- or upper-case hex, escaped twice, spelt in \u escapes, and the key's
# distinctive first bytes alone, which any cut or partial form holds): none
# may appear. The redaction marker must appear, so the search is not vacuous.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0145 redaction of secrets in every representation"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
AUDIT="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
# the sanitizer options reach the children
PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS
KEY=$(printf 'sk-t0145-redact"q\\b\tc\001\303\251\360\237\230\200-tail-0123456789')
SID=11111111-2222-4333-8444-555555555555
mkdir -p "$T/out"

# keep the last command's output for the final search
keep()
{
	cp "$T/stdout" "$T/out/$1.stdout"
	cp "$T/stderr" "$T/out/$1.stderr"
}

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"

# ---- the agent: a script that prints its key every way it can ----
cat >"$T/leaky.py" <<'EOF'
#!/usr/bin/python3
import json, os, sys

key = os.environ.get("LEAK_TOKEN") or os.environ["OPENAI_API_KEY"]
sid = sys.argv[2] if len(sys.argv) > 2 else "none"

def out(s):
    sys.stdout.write(s + "\n")
    sys.stdout.flush()

def text(t, **kw):
    out(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": t}]}},
                   **kw))

def spelt(s):
    r = ""
    for c in s:
        o = ord(c)
        if o >= 0x10000:
            o -= 0x10000
            r += "\\u%04X\\u%04X" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF))
        else:
            r += "\\u%04X" % o
    return r

out(json.dumps({"type": "system", "subtype": "init", "session_id": sid, "model": "m"}))
out("plain line: " + key)
sys.stderr.write("stderr line: " + key + "\n")
sys.stderr.flush()
text("utf-8 " + key, ensure_ascii=False)
text("ascii " + key)
out('{"type":"assistant","message":{"content":[{"type":"text","text":"spelt ' + spelt(key) + '"}]}}')
out(json.dumps({"type": "assistant", "message": {"content": [
    {"type": "tool_use", "id": "t1", "name": "Write", "input": {"content": key, key: 1}}]}}))
text(json.dumps({"nested": key}))
# a line over the 1 MiB cap: the key whole in its head, and again cut by the cap
cap = 1024 * 1024
head = ("long " + key + " ").encode()
line = head + b"x" * (cap - len(head) - 24) + key.encode() + b"y" * 100
sys.stdout.buffer.write(line + b"\n")
sys.stdout.flush()
with open("out.txt", "w") as f:
    f.write("work\n")
out(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                "result": "done " + key, "session_id": sid, "num_turns": 1}))
EOF
chmod +x "$T/leaky.py"

mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$W/.bernstein/catalog/profiles/leaky.yaml" <<EOF
name: leaky
display_name: "Leaky agent"
shape: factory
invocation:
  binary: $T/leaky.py
  prompt_positional: true
  env_passthrough: [LEAK_TOKEN, OPENAI_API_KEY]
capabilities:
  tool_use: true
runtime:
  events: {dialect: claude}
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  leaky:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: stream-json
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: leaky
parallel: 1
retry_backoff: 0
EOF
cat >"$W/plan.yaml" <<EOF
name: leak
tasks:
  - title: leak
    prompt: "go $SID"
EOF
git_q add -A && git_q commit -q -m base

# ---- the search: every representation of the key ----
cat >"$T/leakcheck.py" <<'EOF'
import json, os, re, sys

key = os.environb[b"LEAKCHECK_KEY"].decode()

def esc(s, ascii_):
    return json.dumps(s, ensure_ascii=ascii_)[1:-1]

def upper_hex(s):
    return re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), s)

def spelt(s):
    r = ""
    for c in s:
        o = ord(c)
        if o >= 0x10000:
            o -= 0x10000
            r += "\\u%04x\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF))
        else:
            r += "\\u%04x" % o
    return r

forms = set()
for base in (key, "sk-t0145"):
    once = [base, esc(base, False), esc(base, True), spelt(base)]
    for f in once:
        forms.update({f, upper_hex(f), esc(f, False), esc(f, True), upper_hex(esc(f, True))})
forms = sorted({f.encode() for f in forms}, key=len)

bad = 0
for top in sys.argv[1:]:
    paths = [top]
    if os.path.isdir(top):
        paths = [os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs]
    for p in paths:
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        with open(p, "rb") as fh:
            data = fh.read()
        for f in forms:
            if f in data:
                print("%s: holds %r" % (p, f))
                bad += 1
                break
sys.exit(1 if bad else 0)
EOF
leakcheck()
{
	LEAKCHECK_KEY=$KEY "$PY" "$T/leakcheck.py" "$@"
}

# ---- the search finds what it looks for ----
printf 'x %s y\n' "$KEY" >"$T/probe-raw"
printf '{"t": "%s"}\n' "sk-t0145-redact\\\"q\\\\b\\tc\\u0001\\u00E9" >"$T/probe-escaped"
check "the search finds the raw key" sh -c '! LEAKCHECK_KEY="$1" "$2" "$3" "$4" >/dev/null' sh \
	"$KEY" "$PY" "$T/leakcheck.py" "$T/probe-raw"
check "the search finds an escaped head of the key" \
	sh -c '! LEAKCHECK_KEY="$1" "$2" "$3" "$4" >/dev/null' sh "$KEY" "$PY" "$T/leakcheck.py" \
	"$T/probe-escaped"
rm -f "$T/probe-raw" "$T/probe-escaped"

# ---- bernstein spawn: text (-v shows the agent's stderr), --json ----
# a provider key's name first (its raw form was always redacted), then a
# token a profile passes through under a name of its own
expect_exit 0 "OPENAI_API_KEY=$KEY" "$PASS" "$BERNSTEIN" -v spawn leaky "go $SID"
keep spawn-text
expect_stdout_contains "[REDACTED]" "spawn: the shown events hold the marker"
expect_stderr_contains "stderr line: [REDACTED]" "spawn -v: the agent's stderr line is redacted"
# shellcheck disable=SC2012 # the names are ours: no blanks or newlines
S=$(ls -dt "$W"/.bernstein/runs/*/* | head -n 1)
check "spawn: agent.log holds the marker" grep -qF "plain line: [REDACTED]" "$S/agent.log"
check "spawn: the oversized line's head ends redacted" \
	sh -c 'grep -a "^long " "$1" | grep -q "x\[REDACTED\]$"' sh "$S/agent.log"
check "spawn: events.jsonl holds the marker" grep -qF "[REDACTED]" "$S/events.jsonl"
check "spawn: the \\u-spelt key is redacted as decoded" \
	grep -qF '"text":"spelt [REDACTED]"' "$S/events.jsonl"
check "spawn: the tool call's input is redacted, key and value" \
	grep -qF '"args":{"content":"[REDACTED]","[REDACTED]":1}' "$S/events.jsonl"
expect_exit 0 "LEAK_TOKEN=$KEY" "$PASS" "$BERNSTEIN" spawn --json leaky "go $SID"
keep spawn-json
expect_stdout_contains '"text":"utf-8 [REDACTED]"' "spawn --json: the event is redacted"
expect_exit 0 "LEAK_TOKEN=$KEY" "$BERNSTEIN" spawn --dry-run --json leaky "go $SID"
keep spawn-dry-run
rm -f "$W/out.txt" # what the spawned agents wrote: run wants a clean checkout

# ---- bernstein run, logs, status ----
expect_exit 0 "$AUDIT" "OPENAI_API_KEY=$KEY" "$PASS" "$BERNSTEIN" run plan.yaml
keep run
run "$AUDIT" "$BERNSTEIN" logs --raw leak
keep logs
check "logs --raw: the agent's log, redacted" grep -qF "plain line: [REDACTED]" "$T/stdout"
run "$AUDIT" "$BERNSTEIN" logs leak
keep logs-readable
check "logs: the readable events, redacted" grep -qF "[REDACTED]" "$T/stdout"
run "$AUDIT" "$BERNSTEIN" logs --events leak
keep logs-events
check "logs --events: redacted" grep -qF "[REDACTED]" "$T/stdout"
run "$AUDIT" "$BERNSTEIN" status
keep status
run "$AUDIT" "$BERNSTEIN" status --json
keep status-json
expect_stdout_contains '"state": "done"' "run: the task is done"

# ---- the built-in runner: the model sends the key back ----
"$PY" - "$KEY" "$T/model.json" <<'EOF'
import json, sys
key, path = sys.argv[1], sys.argv[2]
json.dump({"responses": [
    {"text": "the key is " + key, "chunk_size": 3,
     "tool_calls": [{"name": "list_dir", "id": "c1", "arguments": {"path": key, key: key}}]},
    {"text": "done with " + key}]}, open(path, "w"))
EOF
fake_start "$T/model.json"
OKEY=sk-t0145-plain-openai-key-0123456789
expect_exit 0 "OPENAI_API_KEY=$OKEY" "BERNSTEIN_AUTH_TOKEN=$KEY" \
	BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin "$PASS" "$BERNSTEIN" spawn --json \
	openai_agents -m fake-model --set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY \
	"look around"
keep runner
check "runner: the model was asked twice" test "$(nreq)" -eq 2
# shellcheck disable=SC2012
R=$(ls -dt "$W"/.bernstein/runs/*/* | head -n 1)
check "runner: the transcript holds the marker" \
	sh -c 'find "$1" -name "*.transcript.json" -exec grep -lF "[REDACTED]" {} + | grep -q .' sh "$R"
check "runner: the history sent back holds no key" \
	sh -c '! grep -qF "sk-t0145" "$1"' sh "$T/requests.jsonl"
fake_stop

# ---- run's printed description: control bytes become spaces there ----
# a key with a space, printed with a control byte in its place: the event
# (and events.jsonl) hold no key, but its one-line description would spell
# it again if it were not redacted after the description was made
SKEY="zz-ctl-t0145 space key-0123456789"
cat >"$T/ctl.py" <<'EOF2'
#!/usr/bin/python3
import json, os, sys
key = os.environ["LEAK_TOKEN"]
print(json.dumps({"type": "assistant", "message": {"content": [
    {"type": "text", "text": "ctl " + key.replace(" ", "\x01")}]}}), flush=True)
open("ctl.txt", "w").write("ctl\n")
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
                  "session_id": "none", "num_turns": 1}), flush=True)
EOF2
chmod +x "$T/ctl.py"
sed "s|$T/leaky.py|$T/ctl.py|; s|name: leaky|name: ctl|" \
	"$W/.bernstein/catalog/profiles/leaky.yaml" >"$W/.bernstein/catalog/profiles/ctl.yaml"
printf '  ctl:\n    resume: unsupported\n    dangerous_mode: always-on\n    event_channel: stream-json\n' \
	>>"$W/.bernstein/catalog/strategy-matrix.yaml"
printf 'name: ctl\ntasks:\n  - {title: ctl, adapter: ctl, prompt: go}\n' >"$W/ctl.yaml"
git_q add -A && git_q commit -q -m ctl
expect_exit 0 "$AUDIT" "LEAK_TOKEN=$SKEY" "$PASS" "$BERNSTEIN" run ctl.yaml
check "run: the printed description is redacted" grep -qF "ctl: ctl [REDACTED]" "$T/stdout"
check "run: the key is not printed" sh -c '! grep -qF "t0145 space key" "$1"' sh "$T/stdout"

# ---- nothing anywhere ----
if leakcheck "$W/.bernstein" "$T/out" >"$T/leaks" 2>&1; then
	ok "no representation of the key in any file under .bernstein/ or any output"
else
	not_ok "no representation of the key in any file under .bernstein/ or any output"
	head -n 30 "$T/leaks" | sed 's/^/# /'
fi

test_done
