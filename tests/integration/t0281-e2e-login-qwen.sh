#!/bin/sh
# Logins with a private HOME (issue #17, item 2), for the real qwen pinned in
# tests/agents/ (0.15.10): why the shipped profile declares no login, and
# that bernstein's login mechanism would carry qwen's OAuth file anyway.
#
# qwen OAuth keeps its token in ~/.qwen/oauth_creds.json (access_token,
# refresh_token, token_type, resource_url, expiry_date in ms). With a token
# still valid (expiry_date - 30 s in the future, cli.js:160539) qwen refreshes
# nothing and calls getCurrentEndpoint(resource_url) (cli.js:161376): the URL
# (https:// added when it has no scheme) with /v1 appended unless present,
# and the token goes as "Authorization: Bearer" (the OpenAI client's apiKey,
# cli.js:161426). But headless 0.15.10 refuses the auth type qwen-oauth
# before it reads the file (cli.js:472603, validateAuthMethod: "Qwen OAuth
# free tier was discontinued on 2026-04-15"), unless settings.json says
# security.auth.useExternal (no user's qwen does):
#   1. the refusal: qwen-oauth selected, a valid oauth_creds.json pointed at
#      the fake server: the run fails with qwen's own reason and the server
#      sees no request (the day a pinned qwen accepts it again, this fails:
#      declare the login in catalog/profiles/qwen.yaml then);
#   2. the mechanism: the same with useExternal: qwen sends the login's
#      access token to resource_url + /v1, and neither token is in any file
#      bernstein keeps;
#   3. the shipped profile declares no login, so `doctor` does not call qwen
#      usable for a user who has only that file.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "e2e: the real qwen and its OAuth file in a private HOME"

. "$SRCDIR/tests/data/runner/runner-lib.sh"
if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check) || [ ! -x "$E2E_BIN/qwen" ]; then
	not_ok "the agent CLIs pinned in tests/agents/ are installed"
	diag "run tests/agents/install.sh (needs node, npm and the npm registry) and retry"
	test_done
fi
# a loaded 2-core machine: qwen starts slowly
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

ACCESS=canary-qwen-access-7c1e94b2d8
REFRESH=canary-qwen-refresh-4a6f03e95b
# the reply is the Authorization header the server saw; the title and other
# tool-less side requests get "side", anything more a plain text
printf '{"side": {"text": "Title"}, "default": {"text": "done"}, "responses": [{"echo_auth": true, "chunk_size": 4096}]}\n' >"$T/echo.json"
fake_start "$T/echo.json"

# setup NAME USE_EXTERNAL: repository $T/NAME/work, the user's HOME
# $T/NAME/home with a valid qwen OAuth file for the fake server, and the
# shipped qwen profile with that login declared and qwen-oauth selected in
# its settings.json (no runtime.endpoint: that one selects --auth-type openai).
setup() {
	W=$T/$1/work
	H=$T/$1/home
	mkdir -p "$W/.bernstein/catalog/profiles" "$H/.qwen"
	"$PY" - "$H/.qwen/oauth_creds.json" "http://127.0.0.1:$FAKE_PORT" <<EOF
import json, sys, time
json.dump({"access_token": "$ACCESS", "refresh_token": "$REFRESH", "token_type": "Bearer",
           "resource_url": sys.argv[2], "expiry_date": int((time.time() + 3600) * 1000)},
          open(sys.argv[1], "w"))
EOF
	chmod 600 "$H/.qwen/oauth_creds.json"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m base >/dev/null 2>&1
	"$PY" - "$SRCDIR/catalog/profiles/qwen.yaml" "$W/.bernstein/catalog/profiles/qwen.yaml" "$2" <<'EOF'
import sys
src, dst, external = sys.argv[1:]
s = open(src).read()
assert "\n  login:" not in s, "the shipped qwen profile declares no login"
s = s[:s.index("  endpoint:\n")]
s = s.replace("  supports_endpoint: true\n", "")
s = s.replace("  home: isolated\n", "  home: isolated\n  login: [.qwen/oauth_creds.json]\n", 1)
auth = '"selectedType": "qwen-oauth"' + (', "useExternal": true' if external == "yes" else "")
s = s.replace('          "privacy":', '          "security": {"auth": {%s}},\n          "privacy":' % auth, 1)
assert "qwen-oauth" in s
open(dst, "w").write(s)
EOF
}

spawn_qwen() {
	run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' spawn qwen --json 'say hi'"
}

# ---- 1. the pinned qwen refuses its OAuth login ----
setup refused no
spawn_qwen
if [ "$RC" -ne 0 ]; then ok "refused: spawn fails (exit $RC)"; else
	not_ok "refused: spawn fails (it exited 0: does the pinned qwen accept qwen-oauth again?)"
	_diag_file stdout "$T/stdout"
fi
check "refused: qwen's own reason is in its log" \
	sh -c "grep -qs 'Qwen OAuth free tier was discontinued' '$W'/.bernstein/runs/*/qwen-*/agent.log"
check "refused: the server saw no request" test "$(nreq)" -eq 0

# ---- 2. the login file reaches qwen when it does not refuse ----
setup external yes
spawn_qwen
if [ "$RC" -eq 0 ]; then ok "external: spawn exits 0"; else
	not_ok "external: spawn exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
	_diag_file stdout "$T/stdout"
fi
check "external: the server saw the login's access token at resource_url/v1 (and no other)" "$PY" -c "
import hashlib, json
want = 'sha256:' + hashlib.sha256(b'Bearer $ACCESS').hexdigest()
reqs = [json.loads(l) for l in open('$T/requests.jsonl') if l.strip()]
seen = [(r['path'], r['headers'].get('authorization')) for r in reqs]
assert seen and all(s == ('/v1/chat/completions', want) for s in seen), (want, seen)
"
check "external: its private HOME links the user's oauth_creds.json" \
	sh -c "test \"\$(readlink '$W'/.bernstein/runs/*/qwen-*/home/.qwen/oauth_creds.json)\" = '$H/.qwen/oauth_creds.json'"
check "external: the echoed token is redacted in its events" \
	sh -c "grep -qs 'auth: Bearer \\[REDACTED\\]' '$W'/.bernstein/runs/*/qwen-*/events.jsonl"
check "external: neither token is in bernstein's files (the agent's own HOME aside)" \
	sh -c "! grep -rlas --exclude-dir=home -e '$ACCESS' -e '$REFRESH' '$W/.bernstein'"
check "external: nor in spawn's output" sh -c "! grep -qs -e '$ACCESS' -e '$REFRESH' '$T/stdout' '$T/stderr'"
check "external: the user's file is untouched (no refresh)" grep -q "$ACCESS" "$H/.qwen/oauth_creds.json"
fake_stop

# ---- 3. doctor: that file alone does not make the shipped qwen usable ----
rm -rf "$W/.bernstein/catalog"
run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' doctor --json"
check "doctor: qwen with only oauth_creds.json is not usable" "$PY" -c "
import json
q = [a for a in json.load(open('$T/stdout'))['agents'] if a['name'] == 'qwen']
assert len(q) == 1 and q[0]['ok'] is False and 'oauth_creds' not in json.dumps(q), q
"
test_done
