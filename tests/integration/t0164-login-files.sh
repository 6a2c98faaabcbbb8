#!/bin/sh
# Logins work with a private HOME (issue #17): a profile's runtime.login files
# of the user's HOME appear at the same place in the agent's private HOME, read
# and written through (a refreshed token reaches the user's file), in sandbox:
# none, landlock and bwrap; in a sandbox tier nothing else of the user's HOME
# is readable. Their contents never reach logs, events, state or the audit
# chain: a canary token the agent prints is redacted. Then the real pi CLI,
# logged in only by its ~/.pi/agent/auth.json (no API key variable anywhere),
# calls the fake LLM server with that file's token.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0164 login files in the agent's private HOME"

CANARY=canary-login-5d1e0c9b7a
REFRESHED=refreshed-token-8c2f4a61e3

# setup ROOT HOMEDIR TIER: repository ROOT/work, a shell agent with a login
# file, the user's HOME HOMEDIR with that file and another secret.
setup() {
	R=$1
	H=$2
	W=$R/work
	mkdir -p "$W/.bernstein/catalog/profiles" "$H/.tok" "$H/.ssh"
	printf '{"account": {"token": "%s"}, "kind": "oauth"}\n' "$CANARY" >"$H/.tok/auth.json"
	printf 'CANARY-SSH\n' >"$H/.ssh/id_canary"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	cat >"$W/.bernstein/catalog/profiles/loginsh.yaml" <<'EOF'
name: loginsh
display_name: "Shell agent with a login file"
shape: factory
invocation: {binary: sh, extra_args: [-c], prompt_positional: true}
capabilities: {tool_use: true}
runtime:
  home: isolated
  login: [.tok/auth.json, .tok/absent.json]
  sandbox: {tiers: [landlock, bwrap]}
EOF
	cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  loginsh:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
	printf 'adapter: loginsh\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\n' "$3" >"$W/bernstein.yaml"
	cat >"$W/plan.yaml" <<EOF
name: login
tasks:
  - title: uses its login
    prompt: |
      try() { if cat "\$1" >/dev/null 2>&1; then echo "READ \$1"; else echo "DENIED \$1"; fi; }
      { if grep -q oauth "\$HOME/.tok/auth.json"; then echo LOGIN-READ; fi
        try $H/.ssh/id_canary; } > report.txt
      cat "\$HOME/.tok/auth.json"
      printf '{"account": {"token": "$REFRESHED"}}\n' > "\$HOME/.tok/auth.json" && echo LOGIN-WRITTEN >> report.txt
EOF
	git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

bw() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' $*"; }

landlock_ok=
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
[ "$RC" -eq 0 ] && landlock_ok=1
bwrap_ok=
if [ -n "$landlock_ok" ] && command -v bwrap >/dev/null 2>&1 &&
	bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
	bwrap_ok=1
fi

for tier in none landlock bwrap; do
	if [ "$tier" = landlock ] && [ -z "$landlock_ok" ]; then
		skip "sandbox: landlock" "the kernel has no Landlock"
		continue
	fi
	if [ "$tier" = bwrap ] && [ -z "$bwrap_ok" ]; then
		skip "sandbox: bwrap" "bubblewrap is not installed or cannot create its namespaces here"
		continue
	fi
	setup "$T/$tier" "$T/home-$tier" "$tier"
	bw run plan.yaml
	if [ "$RC" -eq 0 ]; then ok "$tier: the run succeeds"; else
		not_ok "$tier: the run succeeds (exit $RC)"
		_diag_file stderr "$T/stderr"
	fi
	check "$tier: the agent read its login file in its private HOME" grep -qx LOGIN-READ "$W/report.txt"
	check "$tier: the agent rewrote it (a token refresh)" grep -qx LOGIN-WRITTEN "$W/report.txt"
	check "$tier: the refreshed token reached the user's file" grep -q "$REFRESHED" "$H/.tok/auth.json"
	check "$tier: the user's file is still a regular file" test -f "$H/.tok/auth.json" -a ! -L "$H/.tok/auth.json"
	check "$tier: a declared login file the user lacks is not created" test ! -e "$H/.tok/absent.json"
	if [ "$tier" != none ]; then
		check "$tier: nothing else of the user's HOME is readable" \
			grep -q "^DENIED $H/.ssh/id_canary" "$W/report.txt"
	fi
	check "$tier: the agent printed its token (the log exists)" \
		sh -c "grep -rqs 'REDACTED' '$W'/.bernstein/runs/*/*/1/agent.log '$W'/.bernstein/runs/*/*/*/agent.log"
	check "$tier: the token is in no log, event, state or audit record" \
		sh -c "! grep -rlas '$CANARY' '$W/.bernstein' '$W/report.txt'"
done

# ---- the real pi, logged in by its auth.json only ----
. "$SRCDIR/tests/data/runner/runner-lib.sh"
if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check) || [ ! -x "$E2E_BIN/pi" ]; then
	not_ok "the agent CLIs pinned in tests/agents/ are installed"
	diag "run tests/agents/install.sh (needs node, npm and the npm registry) and retry"
	test_done
fi
W=$T/pi/work
H=$T/pi/home
mkdir -p "$W/.bernstein/catalog/profiles" "$H/.pi/agent"
printf '{"local": {"type": "api_key", "key": "%s"}}\n' "$CANARY" >"$H/.pi/agent/auth.json"
git -C "$W" init -q -b main . >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m base >/dev/null 2>&1
# the reply is the Authorization header the server saw, in one piece
printf '{"responses": [{"echo_auth": true, "chunk_size": 4096}]}\n' >"$T/echo.json"
fake_start "$T/echo.json"
# The shipped pi profile with its login, pointed at the server by a file (no
# runtime.endpoint: that one would need api_key_env). The provider's apiKey
# names a variable that is not set: pi takes auth.json's key before it.
"$PY" - "$SRCDIR/catalog/profiles/pi.yaml" "$W/.bernstein/catalog/profiles/pi.yaml" "$FAKE_URL" <<'EOF'
import sys
src, dst, url = sys.argv[1:]
s = open(src).read()
s = s[:s.index("  endpoint:\n")]
s = s.replace("  supports_endpoint: true\n", "")
s = s.replace("  extra_args: [", "  extra_args: [--provider, local, --model, fake-model, ", 1)
s += """    - path: .pi/agent/models.json
      mode: "0600"
      content: |
        {"providers": {"local": {"baseUrl": "%s", "api": "openai-completions", "apiKey": "BERNSTEIN_T0164_UNSET", "models": [{"id": "fake-model"}]}}}
""" % url
assert "login: [.pi/agent/auth.json]" in s, "the shipped pi profile declares its login"
open(dst, "w").write(s)
EOF
check "pi: the test profile was written" test -s "$W/.bernstein/catalog/profiles/pi.yaml"
run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' spawn pi --json 'say hi'"
if [ "$RC" -eq 0 ]; then ok "pi: spawn exits 0"; else
	not_ok "pi: spawn exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
fi
check "pi: the server saw the login file's token (and no other)" "$PY" -c "
import hashlib, json
want = 'sha256:' + hashlib.sha256(b'Bearer $CANARY').hexdigest()
reqs = [json.loads(l) for l in open('$T/requests.jsonl') if l.strip()]
assert reqs and all(r['headers'].get('authorization') == want for r in reqs), reqs
"
check "pi: its private HOME links the user's auth.json" \
	sh -c "test \"\$(readlink '$W'/.bernstein/runs/*/pi-*/home/.pi/agent/auth.json)\" = '$H/.pi/agent/auth.json'"
check "pi: the echoed token is redacted in its events" \
	sh -c "grep -qs 'auth: Bearer \\[REDACTED\\]' '$W'/.bernstein/runs/*/pi-*/events.jsonl"
check "pi: the token is in none of bernstein's files (the agent's own HOME aside)" \
	sh -c "! grep -rlas --exclude-dir=home '$CANARY' '$W/.bernstein'"
check "pi: and not in spawn's output" sh -c "! grep -qs '$CANARY' '$T/stdout' '$T/stderr'"
fake_stop
test_done
