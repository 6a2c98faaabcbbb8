#!/bin/sh
# bernstein spawn, the parts of issue #4 that need no real agent:
#   - a poll-pty agent killed by the timeout: the outcome's reason says how
#     long its output had not grown (and that it printed nothing at all);
#   - the hooks channel as a profile declares it (a repository catalogue gives
#     'hooked' the event channel hooks and a runtime.hooks): the plan has the
#     hook configuration file in the agent's HOME with the hook command;
#     without runtime.hooks (composio) a warning says so;
#   - base_url: a URL with credentials is refused without repeating them, a
#     port out of range is refused (usage, exit 2);
#   - an endpoint without -m: the profile's default model (codex: -m gpt-5.5).
. "$SRCDIR/tests/integration/lib.sh"

: "${FAKE_AGENT:?FAKE_AGENT must name tests/helpers/fake-agent}"

test_begin "t0082 spawn: poll-pty liveness, the hooks channel, base_url, default models"

W=$T/work
PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS

git -C "$W" init -q . >/dev/null 2>&1 || true
mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$W/.bernstein/catalog/profiles/quiet.yaml" <<EOF
name: quiet
display_name: "Quiet agent"
shape: factory
invocation:
  binary: $FAKE_AGENT
  prompt_flag: -f
EOF
cat >"$W/.bernstein/catalog/profiles/hooked.yaml" <<EOF
name: hooked
display_name: "Hooked agent"
shape: factory
invocation:
  binary: $FAKE_AGENT
  prompt_flag: -f
runtime:
  home: isolated
  hooks:
    env: {HOOKED_SOCKET: "{hooks_socket}"}
    files:
      - path: .hooked/settings.json
        mode: "0600"
        content: |
          {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "{hook_command}"}]}]}}
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  quiet:
    resume: unsupported
    dangerous_mode: unsupported
    event_channel: poll-pty
  hooked:
    resume: unsupported
    dangerous_mode: unsupported
    event_channel: hooks
EOF
printf 'emit starting\nsleep 60000\n' >"$W/print-then-hang.txt"
# pycheck FILE CODE: CODE (Python, with json, re, sys and the path as
# sys.argv[1]) runs without an exception
pycheck()
{
	python3 -c "
import json, re, sys
$2
" "$1"
}
printf 'sleep 60000\n' >"$W/hang.txt"

# ---- poll-pty: the reason tells the output's liveness ----
expect_exit 11 "$PASS" "$BERNSTEIN" -C "$W" spawn quiet --timeout 1.5 --json print-then-hang.txt
check "poll-pty timeout: the reason says when the output last grew" pycheck "$T/stdout" "
o = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
assert o['outcome'] == 'timed_out', o
m = re.fullmatch(r'timed out; its output last grew (\d+)\.(\d) s before the deadline \(poll-pty liveness, 9 bytes in all\)', o['reason'])
assert m, o['reason']
"
run "$PASS" "$BERNSTEIN" -C "$W" spawn quiet --timeout 0.5 hang.txt
check "poll-pty timeout: exit 11" test "$RC" -eq 11
expect_stdout_contains "outcome: timed_out (timed out without printing anything (poll-pty liveness)" \
	"a silent poll-pty agent: 'without printing anything'"

# ---- the hooks channel: the plan installs the hook ----
expect_exit 0 "$BERNSTEIN" -C "$W" spawn hooked --dry-run --json prompt.txt
check "hooks: the plan writes the hook configuration into the agent HOME" pycheck "$T/stdout" "
p = json.load(open(sys.argv[1]))
assert p['strategy']['event_channel'] == 'hooks', p['strategy']
assert [f['path'] for f in p['files']] == ['.hooked/settings.json'], p['files']
assert 'HOOKED_SOCKET' in p['env'], p['env']
assert not any('hooks' in w for w in p['warnings']), p['warnings']
"
# ---- the hooks channel: a real spawn reads what the hooks post ----
HSID=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee
cat >"$W/hooked.txt" <<EOF
hook-post \$HOOKED_SOCKET {"hook_event_name":"SessionStart","session_id":"$HSID","source":"startup"}\\n
write-file hooked.txt done
hook-post \$HOOKED_SOCKET {"hook_event_name":"Stop","session_id":"$HSID","stop_hook_active":false}\\n
exit 0
EOF
expect_exit 0 "$BERNSTEIN" -C "$W" spawn hooked --json hooked.txt
check "hooks: the session id posted by a hook is captured" pycheck "$T/stdout" "
o = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
assert o['outcome'] == 'completed', o
assert o['session_id'] == '$HSID', o
"
check "hooks: the socket is gone after the run" sh -c "! ls '$W'/.bernstein/runs/*/hooked-*/hooks.sock 2>/dev/null"

expect_exit 0 "$BERNSTEIN" -C "$W" spawn composio --dry-run --json hi
expect_stdout_contains "event channel hooks: profile 'composio' declares no runtime.hooks; reading its output only" \
	"hooks without runtime.hooks: the plan warns"

# ---- base_url ----
expect_exit 2 "$BERNSTEIN" -C "$W" spawn claude --dry-run --set base_url=http://me:hunter2secret@127.0.0.1:4000 \
	--set api_key_env=ANTHROPIC_API_KEY hi
expect_stderr_contains "base_url 'http://***@127.0.0.1:4000': credentials in the URL (user@host) are not allowed" \
	"base_url with credentials: refused"
check "the refusal does not repeat the credentials" sh -c "! grep -q hunter2secret '$T/stderr'"
expect_exit 2 "$BERNSTEIN" -C "$W" spawn claude --dry-run --set base_url=http://127.0.0.1:70000/v1 hi
expect_stderr_contains "invalid port '70000' (a number from 1 to 65535)" "a port out of range: refused"

# ---- the endpoint's default model ----
expect_exit 0 OPENAI_API_KEY=sk-t0082-key "$BERNSTEIN" -C "$W" spawn codex --dry-run --json \
	--set base_url=http://127.0.0.1:4000/v1 --set api_key_env=OPENAI_API_KEY hi
check "codex without -m: -m gpt-5.5 on argv" pycheck "$T/stdout" "
p = json.load(open(sys.argv[1]))
i = p['argv'].index('-m')
assert p['argv'][i + 1] == 'gpt-5.5', p['argv']
"
expect_exit 0 OPENAI_API_KEY=sk-t0082-key "$BERNSTEIN" -C "$W" spawn codex --dry-run --json \
	-m o4-mini --set base_url=http://127.0.0.1:4000/v1 --set api_key_env=OPENAI_API_KEY hi
check "codex with -m: that model" pycheck "$T/stdout" "
p = json.load(open(sys.argv[1]))
assert 'o4-mini' in p['argv'] and 'gpt-5.5' not in p['argv'], p['argv']
"

test_done
