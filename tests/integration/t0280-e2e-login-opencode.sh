#!/bin/sh
# Logins work with a private HOME (issue #17, item 2), proved offline with the
# real opencode pinned in tests/agents/: logged in only by its
# ~/.local/share/opencode/auth.json (what `opencode auth login` writes: an
# "api" key for a provider), no API key variable anywhere, it calls the fake
# LLM server with that file's key, and the key is in no file bernstein keeps.
#
# Where opencode 1.18.33 reads it (opencode-linux-x64/bin/opencode, a bun
# binary): Auth's file is join(Path.data, "auth.json"), Path.data being
# $XDG_DATA_HOME/opencode, else ~/.local/share/opencode; an entry
# {"type": "api", "key": K} of a provider P makes K P's key
# (`if(a.type==="api")I(g,{source:"api",key:a.key})`), used as the
# OpenAI-compatible SDK's apiKey when the provider's options name none.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "e2e: the real opencode logged in by its auth.json alone"

. "$SRCDIR/tests/data/runner/runner-lib.sh"
if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check) || [ ! -x "$E2E_BIN/opencode" ]; then
	not_ok "the agent CLIs pinned in tests/agents/ are installed"
	diag "run tests/agents/install.sh (needs node, npm and the npm registry) and retry"
	test_done
fi
# a loaded 2-core machine: opencode starts slowly
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

CANARY=canary-opencode-login-3f8a2d71c6e5
W=$T/oc/work
H=$T/oc/home
mkdir -p "$W/.bernstein/catalog/profiles" "$H/.local/share/opencode"
printf '{"local": {"type": "api", "key": "%s"}}\n' "$CANARY" >"$H/.local/share/opencode/auth.json"
chmod 600 "$H/.local/share/opencode/auth.json"
git -C "$W" init -q -b main . >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m base >/dev/null 2>&1
# the reply is the Authorization header the server saw, in one piece; a
# title request (no tools) gets "side", anything more a plain text
printf '{"side": {"text": "Title"}, "default": {"text": "done"}, "responses": [{"echo_auth": true, "chunk_size": 4096}]}\n' >"$T/echo.json"
fake_start "$T/echo.json"
# The shipped opencode profile with its login, its provider "local" pointed
# at the server by its config file (no runtime.endpoint: that one needs
# api_key_env, and options.apiKey would win over the login). The config names
# no key: opencode takes auth.json's.
"$PY" - "$SRCDIR/catalog/profiles/opencode.yaml" "$W/.bernstein/catalog/profiles/opencode.yaml" "$FAKE_URL" <<'EOF'
import sys
src, dst, url = sys.argv[1:]
s = open(src).read()
assert "  login: [.local/share/opencode/auth.json]\n" in s, "the shipped opencode profile declares its login"
s = s[:s.index("  files:\n")]
s = s.replace("  supports_endpoint: true\n", "")
s = s.replace("  extra_args: [", "  extra_args: [-m, local/fake-model, ", 1)
s += """  files:
    - path: .config/opencode/opencode.json
      mode: "0600"
      content: |
        {"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
         "provider": {"local": {"npm": "@ai-sdk/openai-compatible", "name": "local",
           "options": {"baseURL": "%s"}, "models": {"fake-model": {"name": "fake-model"}}}}}
""" % url
open(dst, "w").write(s)
EOF
check "the test profile was written" test -s "$W/.bernstein/catalog/profiles/opencode.yaml"
run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' spawn opencode --json 'say hi'"
if [ "$RC" -eq 0 ]; then ok "opencode: spawn exits 0"; else
	not_ok "opencode: spawn exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
	_diag_file stdout "$T/stdout"
fi
check "opencode: the server saw the login file's key (and no other)" "$PY" -c "
import hashlib, json
want = 'sha256:' + hashlib.sha256(b'Bearer $CANARY').hexdigest()
reqs = [json.loads(l) for l in open('$T/requests.jsonl') if l.strip()]
seen = [r['headers'].get('authorization') for r in reqs]
assert seen and all(a == want for a in seen), (want, seen)
"
check "opencode: its private HOME links the user's auth.json" \
	sh -c "test \"\$(readlink '$W'/.bernstein/runs/*/opencode-*/home/.local/share/opencode/auth.json)\" = '$H/.local/share/opencode/auth.json'"
check "opencode: the echoed key is redacted in its events" \
	sh -c "grep -qs 'auth: Bearer \\[REDACTED\\]' '$W'/.bernstein/runs/*/opencode-*/events.jsonl"
check "opencode: the key is in none of bernstein's files (the agent's own HOME aside)" \
	sh -c "! grep -rlas --exclude-dir=home '$CANARY' '$W/.bernstein'"
check "opencode: and not in spawn's output" sh -c "! grep -qs '$CANARY' '$T/stdout' '$T/stderr'"
check "opencode: the user's auth.json is intact" grep -q "$CANARY" "$H/.local/share/opencode/auth.json"
fake_stop
test_done
