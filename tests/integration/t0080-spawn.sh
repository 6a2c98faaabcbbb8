#!/bin/sh
# bernstein spawn with real processes: a repository catalogue declares the
# profile 'fake' whose binary is tests/helpers/fake-agent (the prompt is the
# path of a directive script, passed with -f) and whose stdout is read with
# the claude dialect. Checked: a completed run, a failed run, exit 0 with an
# error result (failed), a timeout (timed_out, nothing left running), a
# missing binary (exit 4, binary_missing), the environment (canary absent,
# pass-through and fixed values present, the private HOME), events.jsonl,
# the captured session id, --resume (tokens on argv, the same HOME), the
# gates (sampling, attachments), SIGTERM/SIGINT (cancelled, 130), --dry-run.
. "$SRCDIR/tests/integration/lib.sh"

: "${FAKE_AGENT:?FAKE_AGENT must name tests/helpers/fake-agent}"

test_begin "t0080 bernstein spawn"

W=$T/work
SID=11111111-2222-4333-8444-555555555555
# the sanitizer options reach the children (the shim is bernstein itself)
PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS

git -C "$W" init -q . >/dev/null 2>&1 || true
mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$W/.bernstein/catalog/profiles/fake.yaml" <<EOF
name: fake
display_name: "Fake agent"
shape: factory
invocation:
  binary: $FAKE_AGENT
  prompt_flag: -f
  env_passthrough: [FAKE_PASS]
capabilities:
  tool_use: true
  supports_endpoint: true
runtime:
  resume: {args: [--resume, "{session_id}"], position: end}
  dangerous: {env: {FAKE_DANGEROUS: "1"}}
  events: {dialect: claude}
  env: {FAKE_FIXED: "home={home}"}
  home: isolated
  files:
    - {path: .fake/config, mode: "0600", content: "workdir={workdir}\n"}
  endpoint:
    env: {FAKE_KEY: "{api_key}", FAKE_URL: "{base_url}"}
EOF
cat >"$W/.bernstein/catalog/profiles/ghost.yaml" <<'EOF'
name: ghost
display_name: "Missing agent"
shape: factory
invocation:
  binary: /nonexistent/ghost-agent
  prompt_positional: true
EOF
printf '#!/bin/sh\nexit 0\n' >"$W/noexec.sh"
chmod 0644 "$W/noexec.sh"
cat >"$W/.bernstein/catalog/profiles/noexec.yaml" <<EOF
name: noexec
display_name: "Not executable"
shape: factory
invocation:
  binary: $W/noexec.sh
  prompt_positional: true
EOF
cat >"$W/.bernstein/catalog/profiles/plaintext.yaml" <<EOF
name: plaintext
display_name: "Text-signals agent"
shape: factory
invocation:
  binary: $FAKE_AGENT
  prompt_flag: -f
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  fake:
    resume: flag
    dangerous_mode: env-var
    event_channel: stream-json
  plaintext:
    resume: unsupported
    dangerous_mode: unsupported
    event_channel: text-signals
  noexec:
    resume: unsupported
    dangerous_mode: unsupported
    event_channel: none
  ghost:
    resume: unsupported
    dangerous_mode: unsupported
    event_channel: none
EOF

cat >"$W/ok.txt" <<EOF
emit {"type":"system","subtype":"init","session_id":"$SID","model":"fake-model"}
emit {"type":"assistant","message":{"content":[{"type":"text","text":"working on it"}]}}
dump-env
write-file out.txt hello
emit {"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"$SID","num_turns":1}
exit 0
EOF
cat >"$W/fail.txt" <<EOF
emit {"type":"system","subtype":"init","session_id":"$SID"}
stderr something broke
exit 3
EOF
cat >"$W/error-result.txt" <<EOF
emit {"type":"system","subtype":"init","session_id":"$SID"}
emit {"type":"result","subtype":"success","is_error":true,"result":"API Error: 400 bad request","session_id":"$SID"}
exit 0
EOF
cat >"$W/sleep.txt" <<EOF
emit {"type":"system","subtype":"init","session_id":"$SID"}
spawn-grandchild 60000
daemon $T/sleep.beat
sleep 60000
EOF
cat >"$W/argv.txt" <<'EOF'
dump-argv
dump-env
exit 0
EOF
cat >"$W/noop.txt" <<EOF
emit {"type":"system","subtype":"init","session_id":"$SID"}
emit {"type":"result","subtype":"success","is_error":false,"result":"nothing to do","session_id":"$SID"}
exit 0
EOF
cat >"$W/denied.txt" <<EOF
emit {"type":"system","subtype":"init","session_id":"$SID"}
emit {"type":"result","subtype":"success","is_error":false,"result":"I was not allowed","session_id":"$SID","permission_denials":[{"tool_name":"Write"}]}
exit 0
EOF
cat >"$W/echo-key.txt" <<EOF
emit {"type":"system","subtype":"init","session_id":"$SID"}
dump-env
emit {"type":"assistant","message":{"content":[{"type":"text","text":"my key is sk-test-SECRET-value"}]}}
emit {"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"$SID"}
exit 0
EOF

# the newest session directory
last_session()
{
	# shellcheck disable=SC2012 # the names are ours: no blanks or newlines
	ls -dt "$W"/.bernstein/runs/*/* 2>/dev/null | head -n 1
}

# ---- a completed run ----
expect_exit 0 CANARY_SECRET=hunter2-canary FAKE_PASS=passed "$PASS" "$BERNSTEIN" spawn fake ok.txt
expect_stdout_contains "session $SID (model fake-model)" "the session event is shown"
expect_stdout_contains "working on it" "text is shown"
expect_stdout_contains "outcome: completed" "outcome completed"
expect_stdout_contains "session: $SID" "the session id is printed at the end"
S=$(last_session)
check "the session directory is under .bernstein/runs/RUN/SESSION" \
	test -d "$S" -a -f "$S/agent.log" -a -f "$S/events.jsonl" -a -f "$S/plan.json"
check "events.jsonl: session_started with the agent's id" \
	grep -q "\"kind\":\"session_started\",\"dialect\":\"claude\",\"line\":1,\"type\":\"system\",\"session_id\":\"$SID\"" "$S/events.jsonl"
check "events.jsonl: the result" grep -q '"kind":"result".*"is_error":false' "$S/events.jsonl"
check "events.jsonl: one JSON object a line, each with ts and kind" \
	sh -c "! grep -v '^{\"ts\":\"[0-9T:.Z-]*\",\"kind\":\"[a-z_]*\",' '$S/events.jsonl'"
check "session.json: completed, the agent's id, the worktree changed" \
	sh -c "grep -q '\"outcome\": \"completed\"' '$S/session.json' &&
	       grep -q '\"session_id\": \"$SID\"' '$S/session.json' &&
	       grep -q '\"worktree_changed\": true' '$S/session.json'"
check "the agent wrote its file in the workdir" test "$(cat "$W/out.txt")" = hello

# ---- the environment ----
check "canary: a secret the profile does not name never reaches the agent" \
	sh -c "! grep -q hunter2 '$S/agent.log'"
check "the profile's pass-through variable is passed" grep -qx 'FAKE_PASS=passed' "$S/agent.log"
check "dangerous mode env-var: its variable is set" grep -qx 'FAKE_DANGEROUS=1' "$S/agent.log"
check "telemetry off" grep -qx 'DO_NOT_TRACK=1' "$S/agent.log"
check "HOME is the session's private HOME" grep -qx "HOME=$S/home" "$S/agent.log"
check "runtime env expanded with {home}" grep -qx "FAKE_FIXED=home=$S/home" "$S/agent.log"
check "XDG_CONFIG_HOME follows the private HOME" \
	grep -qx "XDG_CONFIG_HOME=$S/home/.config" "$S/agent.log"
check "TZ (not on the allow-list) is stripped" sh -c "! grep -q '^TZ=' '$S/agent.log'"
check "the profile's file is in the private HOME, expanded, mode 0600" \
	sh -c "test \"\$(cat '$S/home/.fake/config')\" = 'workdir=$W' &&
	       test \"\$(stat -c %a '$S/home/.fake/config')\" = 600"
check "the user's HOME is untouched" sh -c "test -z \"\$(ls -A '$T/home')\""

# ---- failed runs ----
expect_exit 1 "$PASS" "$BERNSTEIN" spawn fake fail.txt
expect_stdout_contains "outcome: failed" "a non-zero exit without a result is failed"
S=$(last_session)
check "stderr of the agent is in agent.log" grep -qx 'something broke' "$S/agent.log"

expect_exit 1 "$PASS" "$BERNSTEIN" spawn fake error-result.txt
expect_stdout_contains "outcome: failed" "exit 0 with an error result is failed"
expect_stdout_contains "result: failed" "the failed result is shown"

# ---- a timeout: the whole group is killed ----
expect_exit 11 "$PASS" "$BERNSTEIN" spawn fake --timeout 0.5 "$W/sleep.txt"
expect_stdout_contains "outcome: timed_out" "outcome timed_out"
expect_stdout_contains "timed out after 500 ms" "the timeout is reported"
S=$(last_session)
check "the grandchild was started" grep -q '^{"type":"grandchild","pid":[0-9]*}$' "$S/agent.log"
# the grandchild and the processes that left the group (found by the script's
# path in their argv: their pids are their PID namespace's)
check "nothing is left running after the timeout" wait_no_procs "$W/sleep.txt"

# ---- a missing binary ----
expect_exit 4 "$BERNSTEIN" spawn ghost "hello"
expect_stdout_contains "outcome: binary_missing" "outcome binary_missing"
expect_stderr_contains "cannot execute '/nonexistent/ghost-agent'" "a one-line message"
expect_exit 4 "$BERNSTEIN" spawn --json ghost "hello"
expect_stdout_contains '"outcome":"binary_missing"' "--json: binary_missing"
expect_exit 4 "$BERNSTEIN" spawn noexec "hello"
expect_stdout_contains "outcome: binary_missing" "a binary that cannot be executed: binary_missing"
expect_stderr_contains "cannot execute '$W/noexec.sh': Permission denied" "... with its reason"

# ---- the session id, --json ----
expect_exit 0 "$PASS" "$BERNSTEIN" spawn --json fake ok.txt
check "--json: one JSON object per line" sh -c "! grep -v '^{' '$T/stdout'"
check "--json: the last line is the outcome with the session id" \
	sh -c "tail -n 1 '$T/stdout' | grep -q '\"kind\":\"outcome\".*\"outcome\":\"completed\".*\"session_id\":\"$SID\"'"
FIRST=$(last_session)

# ---- --resume: the tokens on argv, the same private HOME ----
expect_exit 1 "$PASS" "$BERNSTEIN" spawn fake --resume "$SID" argv.txt
S=$(last_session)
check "--resume puts '--resume ID' on argv (position end)" \
	sh -c "grep -A1 -x -e '--resume' '$S/agent.log' | grep -qx '$SID'"
check "--resume: argv order is -f SCRIPT --resume ID" \
	sh -c "sed -n '2,5p' '$S/agent.log' | tr '\n' ' ' | grep -q -e '^-f argv.txt --resume $SID '"
check "--resume: the agent gets the resumed session's HOME" grep -qx "HOME=$FIRST/home" "$S/agent.log"
check "--resume: plan.json says the state is reused" grep -q '"state_reused": true' "$S/plan.json"

# ---- text signals; warnings become events ----
printf 'emit working\nemit BERNSTEIN:COMPLETED {"summary": "ok"}\nexit 0\n' >"$W/signals.txt"
expect_exit 0 "$PASS" "$BERNSTEIN" spawn --json plaintext --resume old-session signals.txt
S=$(last_session)
check "resume unsupported: a warning event, no resume tokens" \
	sh -c "grep -q '\"kind\":\"warning\",\"dialect\":\"bernstein\",.*resume unsupported by plaintext: starting a fresh session' '$S/events.jsonl'"
check "dangerous mode unsupported: a warning event" \
	grep -q 'dangerous mode unsupported by plaintext: spawning without it' "$S/events.jsonl"
check "text-signals: the COMPLETED signal is the result" \
	grep -q '"kind":"result","dialect":"text-signals"' "$S/events.jsonl"
expect_stdout_contains '"outcome":"completed"' "text-signals: completed"

# ---- -C DIR and --prompt-file - ----
mkdir -p "$T/elsewhere"
printf 'signals.txt' >"$T/prompt-from-stdin" # the prompt: the script's path, relative to DIR
(cd "$T/elsewhere" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 \
	XDG_CONFIG_HOME="$T/config" ${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} \
	${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} ${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} \
	"$PASS" "$BERNSTEIN" spawn -C "$W" plaintext --prompt-file -) <"$T/prompt-from-stdin" \
	>"$T/stdout" 2>"$T/stderr"
check "-C DIR: the repository catalogue of DIR, the prompt from stdin" test $? -eq 0
expect_stdout_contains "outcome: completed" "-C DIR: completed"
check "-C DIR: the session directory is in DIR" test ! -d "$T/elsewhere/.bernstein"

# ---- typed outcomes from the worktree ----
expect_exit 0 "$PASS" "$BERNSTEIN" spawn fake noop.txt
expect_stdout_contains "outcome: completed" "nothing changed, nothing expected: completed"
expect_exit 14 "$PASS" "$BERNSTEIN" spawn fake --expect-changes noop.txt
expect_stdout_contains "outcome: no_changes" "--expect-changes and an unchanged worktree: no_changes"
expect_exit 13 "$PASS" "$BERNSTEIN" spawn fake denied.txt
expect_stdout_contains "outcome: permission_blocked" "refusals and an unchanged worktree: permission_blocked"

# ---- an endpoint: the key goes into env only, and is redacted elsewhere ----
KEY=sk-test-SECRET-value
expect_exit 0 OPENAI_API_KEY=$KEY "$PASS" "$BERNSTEIN" spawn fake \
	--set base_url=http://127.0.0.1:9/v1 --set api_key_env=OPENAI_API_KEY echo-key.txt
S=$(last_session)
check "endpoint: the agent got the URL" grep -qx 'FAKE_URL=http://127.0.0.1:9/v1' "$S/agent.log"
check "endpoint: the key is redacted in agent.log" grep -qx 'FAKE_KEY=\[REDACTED\]' "$S/agent.log"
check "endpoint: the key is nowhere in the session directory" \
	sh -c "! grep -rq '$KEY' '$S'"
check "endpoint: the key is not on stdout" sh -c "! grep -q '$KEY' '$T/stdout'"
expect_stdout_contains "my key is [REDACTED]" "the key is redacted in the shown events"
expect_exit 0 OPENAI_API_KEY=$KEY "$BERNSTEIN" spawn fake --dry-run --json \
	--set base_url=http://127.0.0.1:9/v1 --set api_key_env=OPENAI_API_KEY echo-key.txt
check "endpoint: --dry-run shows the names, not the key" \
	sh -c "grep -q '\"FAKE_KEY\",' '$T/stdout' && ! grep -q '$KEY' '$T/stdout'"
expect_exit 3 GITHUB_TOKEN=ghp_x "$BERNSTEIN" spawn fake \
	--set base_url=http://127.0.0.1:9/v1 --set api_key_env=GITHUB_TOKEN echo-key.txt
expect_stderr_contains "api_key_env 'GITHUB_TOKEN' is not an allowed credential variable name" "a credential outside the allow-list is refused"
expect_exit 0 GATEWAY_KEY=$KEY BERNSTEIN_ALLOWED_API_KEY_ENVS=GATEWAY_KEY "$PASS" "$BERNSTEIN" \
	spawn fake --set base_url=http://127.0.0.1:9/v1 --set api_key_env=GATEWAY_KEY echo-key.txt
S=$(last_session)
check "the host's BERNSTEIN_ALLOWED_API_KEY_ENVS admits a name" grep -qx 'GATEWAY_KEY=\[REDACTED\]' "$S/agent.log"

# ---- the gates ----
expect_exit 3 "$BERNSTEIN" spawn fake --set temperature=0.2 --set top_k=3 ok.txt
expect_stderr_contains "Adapter 'fake' does not declare the 'supports_sampling_params' capability but sampling/endpoint parameters were requested: temperature, top_k. Refusing to spawn instead of silently dropping them." "the sampling gate names the adapter and the keys"
printf 'PNG' >"$W/shot.png"
expect_exit 3 "$BERNSTEIN" spawn fake --attach shot.png ok.txt
expect_stderr_contains "adapter 'fake' does not support multimodal attachments; adapters that could take them: antigravity, claude, gemini" "attachments refused, capable adapters named"
expect_exit 2 "$BERNSTEIN" spawn fake --set seed=1 ok.txt
expect_exit 2 "$BERNSTEIN" spawn nosuch "x"
expect_stderr_contains "unknown adapter 'nosuch'"

# ---- --dry-run ----
expect_exit 0 "$BERNSTEIN" spawn --dry-run --json fake --resume abc ok.txt
expect_stdout_contains "\"$FAKE_AGENT\"," "argv[0] is the absolute binary"
expect_stdout_contains '"--resume",' "dry-run: the resume tokens"
expect_stdout_contains '"FAKE_DANGEROUS",' "dry-run: environment names"
check "dry-run: no values of the environment" sh -c "! grep -q 'FAKE_DANGEROUS=' '$T/stdout'"
check "dry-run: nothing was written" test ! -d "$W/.bernstein/runs/dry-run"

# ---- BERNSTEIN_TEST_PASS_ENV (test only) ----
expect_exit 1 FAKE_EXTRA=extra BERNSTEIN_TEST_PASS_ENV=FAKE_EXTRA "$BERNSTEIN" spawn fake argv.txt
S=$(last_session)
check "BERNSTEIN_TEST_PASS_ENV passes the variables it names" grep -qx 'FAKE_EXTRA=extra' "$S/agent.log"

# ---- cancellation: SIGTERM (and SIGINT) -> 130, cancelled ----
cancel_test()
{
	_sig=$1
	: >"$T/bg.out"
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 \
		XDG_CONFIG_HOME="$T/config" ${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} \
		${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} \
		${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} \
		$2 "$BERNSTEIN" spawn fake sleep.txt) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	_pid=$!
	i=0
	while [ $i -lt 200 ] && ! grep -q "session $SID" "$T/bg.out"; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -"$_sig" "$_pid"
	wait "$_pid"
	_rc=$?
	check "SIG$_sig: exit 130" test "$_rc" -eq 130
	check "SIG$_sig: outcome cancelled" grep -q "outcome: cancelled" "$T/bg.out"
}
cancel_test TERM ""
# A background job of a non-interactive shell starts with SIGINT ignored;
# python resets it to the default before exec'ing bernstein.
if command -v python3 >/dev/null 2>&1; then
	cat >"$T/dflt.py" <<'EOF'
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
EOF
	cancel_test INT "/usr/bin/python3 $T/dflt.py"
else
	skip "SIGINT: exit 130" "no python3"
	skip "SIGINT: outcome cancelled" "no python3"
fi

test_done
