#!/bin/sh
# bernstein runner's credential rules: api_key_env must match
# ^[A-Z][A-Z0-9_]*$ and be a known provider key or be named in the host's
# BERNSTEIN_ALLOWED_API_KEY_ENVS; anything else (GITHUB_TOKEN, ...) and an
# unset variable fail at start with config_invalid, exit 2, before any request
# reaches the server. And the key's value (a canary) appears in no output,
# event, file or transcript, even when the server echoes it back and when a
# command prints its environment.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0060 runner credentials"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

CANARY=sk-canary-7f3a9c1e5b2d4086-do-not-leak
printf '%s\n' '{"responses": [], "default": {"text": "fine"}}' >"$T/ok.json"

m()
{
	write_manifest "$T/m.json" '{"session_id": "c", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "api_key_env": "'"$1"'"}'
}

# ---- refused names: config_invalid, exit 2, no request ----
fake_start "$T/ok.json"
for name in GITHUB_TOKEN AWS_SECRET_ACCESS_KEY NPM_TOKEN HOME openai_api_key 1KEY \
	OPENAI-API-KEY; do
	m "$name"
	expect_exit 2 "$name=$CANARY" GITHUB_TOKEN=$CANARY "$BERNSTEIN" runner --manifest "$T/m.json"
	jcheck "'$name' refused: start (name only), then config_invalid" \
		'kinds == ["start", "error"] and events[1]["kind"] == "config_invalid" and "not an allowed credential variable name" in events[1]["message"] and events[0]["api_key_env"] == "'"$name"'"'
	check "'$name': no request reached the server" test "$(nreq)" -eq 0
	check "'$name': the canary is not in stdout or stderr" \
		sh -c "! grep -qF '$CANARY' '$T/stdout' '$T/stderr'"
done

# a host override cannot admit a malformed name
m "lower_case"
expect_exit 2 BERNSTEIN_ALLOWED_API_KEY_ENVS=lower_case lower_case=$CANARY \
	"$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "a malformed name is refused even when listed" \
	'events[1]["kind"] == "config_invalid" and "^[A-Z][A-Z0-9_]*$" in events[1]["message"]'

# ---- a known name whose variable is unset (or empty): config_invalid ----
m GROQ_API_KEY
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "unset variable: config_invalid naming it" \
	'events[-1]["kind"] == "config_invalid" and "GROQ_API_KEY" in events[-1]["message"] and "not set" in events[-1]["message"]'
expect_exit 2 GROQ_API_KEY= "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "empty variable: config_invalid" 'events[-1]["kind"] == "config_invalid"'
check "unset variables: still no request" test "$(nreq)" -eq 0

# ---- the host override admits a custom name ----
m MY_GATEWAY_KEY
expect_exit 2 MY_GATEWAY_KEY=$CANARY "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "a custom name without the override: refused" 'events[-1]["kind"] == "config_invalid"'
expect_exit 0 BERNSTEIN_ALLOWED_API_KEY_ENVS="OTHER_KEY, MY_GATEWAY_KEY" MY_GATEWAY_KEY=$CANARY \
	"$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "the override admits it: one request with that key" \
	'len(reqs) == 1 and reqs[0]["headers"]["authorization"] == "sha256:" + __import__("hashlib").sha256(b"Bearer '"$CANARY"'").hexdigest()'
jcheck "start names MY_GATEWAY_KEY" 'events[0]["api_key_env"] == "MY_GATEWAY_KEY"'

# ---- the canary appears nowhere the run writes ----
# The server echoes the Authorization header back as the model's text, the
# model writes it into a file via write_file (a file it was asked to write:
# the workdir is the agent's), and a command prints its environment.
cat >"$T/leak.json" <<'EOF'
[{"echo_auth": true, "tool_calls": [{"id": "e0", "name": "list_dir", "arguments": {}}]},
 {"echo_auth": true},
 {"tool_calls": [{"id": "e1", "name": "run_command", "arguments": {"argv": ["printenv"]}},
                 {"id": "e2", "name": "list_dir", "arguments": {}}]},
 {"echo_auth": true}]
EOF
fake_start "$T/leak.json"
mkdir -p "$T/session" "$T/hb"
write_manifest "$T/session/m.json" '{"session_id": "leak", "prompt": "echo", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "api_key_env": "OPENROUTER_API_KEY", "tool_source": "builtin",
 "heartbeat_dir": "'"$T/hb"'"}'
expect_exit 0 OPENROUTER_API_KEY=$CANARY BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 \
	"$BERNSTEIN" runner --manifest "$T/session/m.json"
jcheck "first run: the echoed key was redacted in the completion" \
	'ev("completion")[0]["summary"] == "auth: Bearer [REDACTED]"'
jcheck "first run: and in the text beside the tool call" \
	'any(e.get("assistant") and e["message"] == "auth: Bearer [REDACTED]" for e in ev("progress"))'
jcheck "first run: the history sent back holds the redaction, not the key" \
	'len(reqs) == 2 and reqs[1]["body"]["messages"][1]["content"] == "auth: Bearer [REDACTED]"'
# the same session resumed: a command prints its environment, the key is echoed again
expect_exit 0 OPENROUTER_API_KEY=$CANARY BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 \
	"$BERNSTEIN" runner --manifest "$T/session/m.json" --resume leak
jcheck "resumed run: the echoed key was redacted again" \
	'ev("completion")[0]["summary"] == "auth: Bearer [REDACTED]"'
check "the transcript was written" test -s "$T/session/leak.transcript.json"
check "the heartbeat was written" test -s "$T/hb/leak.json"
check "the transcript holds the redaction marker (there was something to redact)" \
	grep -qF "[REDACTED]" "$T/session/leak.transcript.json"
jcheck "printenv ran and showed an environment without the key" \
	'any(e["name"] == "run_command" and "PATH=" in e["output"] and "OPENROUTER_API_KEY" not in e["output"] for e in ev("tool_result"))'
jcheck "the redacted history is what went back to the server" \
	'"[REDACTED]" in json.dumps(reqs[-1]["body"])'
if grep -rqF "$CANARY" "$T/stdout" "$T/stderr" "$T/session" "$T/hb" "$T/work" 2>/dev/null; then
	not_ok "the canary is in no output, event, file or transcript"
	grep -rlF "$CANARY" "$T/stdout" "$T/stderr" "$T/session" "$T/hb" "$T/work" | sed 's/^/# /'
else
	ok "the canary is in no output, event, file or transcript"
fi
check "the server log holds only a hash of the header" sh -c "! grep -qF '$CANARY' '$T/requests.jsonl'"

# ---- without api_key_env: OPENAI_API_KEY when set, else no key ----
fake_start "$T/ok.json"
write_manifest "$T/m.json" '{"session_id": "d", "prompt": "p", "workdir": "@WORK@", "model": "m",
 "base_url": "@URL@"}'
expect_exit 0 OPENAI_API_KEY=$CANARY "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "the default key variable is used" \
	'events[0]["api_key_env"] == "OPENAI_API_KEY" and reqs[0]["headers"]["authorization"].startswith("sha256:")'
check "and never printed" sh -c "! grep -qF '$CANARY' '$T/stdout' '$T/stderr'"
expect_exit 0 GITHUB_TOKEN=$CANARY "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "no key variable set: no Authorization header (other secrets are never used)" \
	'events[0]["api_key_env"] is None and "authorization" not in reqs[-1]["headers"]'

test_done
