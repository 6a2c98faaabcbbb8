#!/bin/sh
# bernstein runner against the fake OpenAI server: a text completion over Chat
# Completions (base_url) and over the Responses API (the default endpoint,
# redirected by the test-only BERNSTEIN_TEST_OPENAI_DEFAULT_URL), streamed and
# plain; the start event's effective values; sampling parameters passed
# through only when set; bad and missing manifests (exit 2).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0060 runner basics"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

KEY=sk-test-basic-0123456789

# ---- Chat Completions, streamed (the default) ----
printf '%s\n' '[{"text": "Hello from the fake model", "usage": {"input": 12, "output": 7}}]' \
	>"$T/text.json"
fake_start "$T/text.json"
write_manifest "$T/m.json" '{"session_id": "s1", "prompt": "say hello", "workdir": "@WORK@",
 "model": "fake-model", "base_url": "@URL@", "api_key_env": "OPENROUTER_API_KEY"}'
expect_exit 0 OPENROUTER_API_KEY=$KEY "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "every line is a JSON event, start first, completion last" \
	'kinds[0] == "start" and kinds[-1] == "completion" and set(kinds) <= {"start", "progress", "tool_call", "tool_result", "usage", "completion", "error"}'
jcheck "start: the effective values" \
	'events[0]["model"] == "fake-model" and events[0]["api"] == "chat_completions" and events[0]["base_url"] == "http://127.0.0.1:%s/v1" % open(T + "/fake.port").read().strip() and events[0]["endpoint"].endswith("/v1/chat/completions") and events[0]["stream"] is True and events[0]["session_id"] == "s1" and events[0]["tool_source"] == "gateway" and events[0]["sandbox_provider"] == "unix_local"'
jcheck "start: the key variable's name, never its value" \
	'events[0]["api_key_env"] == "OPENROUTER_API_KEY"'
jcheck "start: unset sampling values are null" \
	'all(events[0][k] is None for k in ("temperature", "top_p", "top_k", "max_tokens"))'
jcheck "completion: the model's text" \
	'ev("completion")[0]["summary"] == "Hello from the fake model" and ev("completion")[0]["status"] == "done"'
jcheck "usage: the server's token counts" \
	'ev("usage")[0]["input_tokens"] == 12 and ev("usage")[0]["output_tokens"] == 7 and "usage_missing" not in ev("usage")[0]'
jcheck "one request, to /v1/chat/completions, streamed" \
	'len(reqs) == 1 and reqs[0]["path"] == "/v1/chat/completions" and reqs[0]["body"]["stream"] is True and reqs[0]["body"]["stream_options"] == {"include_usage": True}'
jcheck "the request: model and prompt" \
	'reqs[0]["body"]["model"] == "fake-model" and reqs[0]["body"]["messages"] == [{"role": "user", "content": "say hello"}]'
jcheck "no sampling parameter sent when none is set" \
	'not any(k in reqs[0]["body"] for k in ("temperature", "top_p", "top_k", "max_tokens"))'
jcheck "the key went in the Authorization header" \
	'reqs[0]["headers"]["authorization"] == "sha256:" + __import__("hashlib").sha256(b"Bearer '"$KEY"'").hexdigest()'
jcheck "no tools offered without a gateway" 'not "tools" in reqs[0]["body"]'
expect_stderr_empty "nothing on stderr"

# ---- Chat Completions, plain JSON, with sampling parameters ----
fake_start "$T/text.json"
write_manifest "$T/m.json" '{"session_id": "s2", "prompt": "p", "workdir": "@WORK@",
 "model": "vendor/model-x", "base_url": "@URL@", "stream": false, "temperature": 0.25,
 "top_p": 0.5, "top_k": 40, "max_tokens": 256, "system_addendum": "Be terse."}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "plain: completion" 'ev("completion")[0]["summary"] == "Hello from the fake model"'
jcheck "plain: request not streamed" \
	'reqs[0]["body"]["stream"] is False and "stream_options" not in reqs[0]["body"]'
jcheck "sampling parameters passed through" \
	'reqs[0]["body"]["temperature"] == 0.25 and reqs[0]["body"]["top_p"] == 0.5 and reqs[0]["body"]["top_k"] == 40 and reqs[0]["body"]["max_tokens"] == 256'
jcheck "start: sampling values" \
	'events[0]["temperature"] == 0.25 and events[0]["top_p"] == 0.5 and events[0]["top_k"] == 40 and events[0]["max_tokens"] == 256 and events[0]["stream"] is False'
jcheck "the model id is passed as is (no prefix parsing)" 'reqs[0]["body"]["model"] == "vendor/model-x"'
jcheck "system_addendum is the system message" \
	'reqs[0]["body"]["messages"][0] == {"role": "system", "content": "Be terse."}'
jcheck "no key: no Authorization header" 'not "authorization" in reqs[0]["headers"]'
jcheck "start: no key variable" 'events[0]["api_key_env"] is None'

# ---- the Responses API at the default endpoint, streamed ----
printf '%s\n' '[{"text": "Responses says hi", "usage": {"input": 3, "output": 2}},
 {"text": "plain responses", "omit_final_output": true}]' >"$T/resp.json"
fake_start "$T/resp.json"
write_manifest "$T/m.json" '{"session_id": "s3", "prompt": "hi", "workdir": "@WORK@",
 "model": "gpt-test", "temperature": 0.5, "max_tokens": 64, "system_addendum": "sys"}'
expect_exit 0 OPENAI_API_KEY=$KEY BERNSTEIN_TEST_OPENAI_DEFAULT_URL="$FAKE_URL" \
	"$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "responses: completion" 'ev("completion")[0]["summary"] == "Responses says hi"'
jcheck "responses: POST /v1/responses, streamed, store false" \
	'reqs[0]["path"] == "/v1/responses" and reqs[0]["body"]["stream"] is True and reqs[0]["body"]["store"] is False'
jcheck "responses: input items, instructions, max_output_tokens" \
	'reqs[0]["body"]["input"] == [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}] and reqs[0]["body"]["instructions"] == "sys" and reqs[0]["body"]["max_output_tokens"] == 64 and reqs[0]["body"]["temperature"] == 0.5'
jcheck "responses: start names the API and the default key variable" \
	'events[0]["api"] == "responses" and events[0]["base_url"] is None and events[0]["api_key_env"] == "OPENAI_API_KEY"'
jcheck "responses: usage" 'ev("usage")[0]["input_tokens"] == 3'

# the same endpoint, a stream whose final event carries no output (deltas count)
write_manifest "$T/m.json" '{"session_id": "s3", "prompt": "again", "workdir": "@WORK@",
 "model": "gpt-test"}'
expect_exit 0 BERNSTEIN_TEST_OPENAI_DEFAULT_URL="$FAKE_URL" "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "responses: text assembled from deltas" 'ev("completion")[0]["summary"] == "plain responses"'

# ---- the Responses API, plain JSON ----
fake_start "$T/resp.json"
write_manifest "$T/m.json" '{"session_id": "s4", "prompt": "hi", "workdir": "@WORK@",
 "model": "gpt-test", "stream": false}'
expect_exit 0 BERNSTEIN_TEST_OPENAI_DEFAULT_URL="$FAKE_URL" "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "responses plain: completion" 'ev("completion")[0]["summary"] == "Responses says hi"'
jcheck "responses plain: not streamed" 'reqs[0]["body"]["stream"] is False'

# a server that ignores stream: true and answers JSON still works
printf '%s\n' '[{"text": "json anyway", "stream_as_json": true}]' >"$T/asjson.json"
fake_start "$T/asjson.json"
write_manifest "$T/m.json" '{"session_id": "s5", "prompt": "hi", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@"}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "stream request answered with JSON" 'ev("completion")[0]["summary"] == "json anyway"'

# ---- proxies: the environment's are ignored, --proxy is used ----
fake_start "$T/text.json"
write_manifest "$T/m.json" '{"session_id": "p1", "prompt": "hi", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@"}'
expect_exit 0 http_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 \
	"$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "proxy variables in the environment are ignored" \
	'len(reqs) == 1 and ev("completion")[0]["summary"] == "Hello from the fake model"'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json" --proxy http://127.0.0.1:9 --max-retries 0
jcheck "--proxy is used (a dead proxy fails the request)" \
	'len(reqs) == 1 and events[-1]["kind"] == "runtime"'

# ---- manifests that cannot be used: exit 2 before any request ----
fake_start "$T/text.json"
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/nonexistent.json"
jcheck "missing manifest: error kind manifest_missing" \
	'kinds == ["error"] and events[0]["kind"] == "manifest_missing" and "nonexistent.json" in events[0]["message"]'
printf '{"session_id": "s", "prompt": ' >"$T/bad.json"
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/bad.json"
jcheck "broken JSON: manifest_invalid" 'kinds == ["error"] and events[0]["kind"] == "manifest_invalid"'
printf '[1, 2]\n' >"$T/bad.json"
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/bad.json"
jcheck "not an object: manifest_invalid" \
	'events[0]["kind"] == "manifest_invalid" and "JSON object" in events[0]["message"]'
write_manifest "$T/bad.json" '{"session_id": "s", "prompt": "p", "workdir": "@WORK@", "model": "m",
 "top_k": "forty"}'
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/bad.json"
jcheck "wrong type: the message names the field" \
	'events[0]["kind"] == "manifest_invalid" and "top_k" in events[0]["message"]'
write_manifest "$T/bad.json" '{"session_id": "s", "workdir": "@WORK@", "model": "m"}'
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/bad.json"
jcheck "missing prompt: manifest_invalid" '"prompt" in events[0]["message"]'
write_manifest "$T/bad.json" '{"session_id": "s", "prompt": "p", "workdir": "@WORK@/nope",
 "model": "m", "base_url": "@URL@"}'
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/bad.json"
jcheck "missing workdir: config_invalid" \
	'ev("error")[0]["kind"] == "config_invalid" and "workdir" in ev("error")[0]["message"]'
write_manifest "$T/bad.json" '{"session_id": "s", "prompt": "p", "workdir": "@WORK@", "model": "m",
 "base_url": "file:///etc/passwd"}'
expect_exit 2 "$BERNSTEIN" runner --manifest "$T/bad.json"
jcheck "a non-http base_url is refused" '"base_url" in events[0]["message"]'
check "none of those reached the server" test "$(nreq)" -eq 0

# ---- usage errors ----
expect_exit 2 "$BERNSTEIN" runner
expect_stderr_contains "missing --manifest FILE"
expect_exit 2 "$BERNSTEIN" runner --manifest x extra
expect_exit 2 "$BERNSTEIN" runner --bogus
expect_exit 2 "$BERNSTEIN" runner --manifest x --max-retries lots
expect_exit 0 "$BERNSTEIN" help runner
cp "$T/stdout" "$T/help1"
expect_exit 0 "$BERNSTEIN" runner -h
expect_same_file "$T/help1" "$T/stdout" "'help runner' == 'runner -h'"
expect_stdout_contains "normally spawned by"

test_done
