#!/bin/sh
# bernstein runner under failure: 429 with Retry-After honoured then success,
# a persistent 429 (exit 4, kind rate_limit), 5xx retried with backoff, a 4xx
# not retried (exit 1, kind http), a malformed chunk and a cut stream (exit 1,
# kind runtime, no retry of a malformed reply), a dropped connection retried,
# a slow reply within the deadline, and timeout_seconds as the run's deadline.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0060 runner retries and failures"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

m()
{
	write_manifest "$T/m.json" '{"session_id": "r", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@"'"${1:-}"'}'
}

# ---- 429 with Retry-After, then success ----
cat >"$T/s.json" <<'EOF'
[{"status": 429, "headers": {"Retry-After": "1"}, "error": "Rate limit reached"},
 {"text": "after the wait"}]
EOF
fake_start "$T/s.json"
m
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "429 then success: two requests, completion" \
	'len(reqs) == 2 and ev("completion")[0]["summary"] == "after the wait"'
jcheck "Retry-After: 1 honoured (the retry came at least ~1 s later)" \
	'reqs[1]["mono"] - reqs[0]["mono"] >= 0.95'
jcheck "the retry is reported as progress with the status and the wait" \
	'any(e.get("retry") and e["http_status"] == 429 and e["wait_ms"] == 1000 and "Retry-After" in e["message"] for e in ev("progress"))'

# an HTTP-date Retry-After in the past means: no wait
cat >"$T/s.json" <<'EOF'
[{"status": 503, "headers": {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}},
 {"text": "date ok"}]
EOF
fake_start "$T/s.json"
m
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "Retry-After as an HTTP date" \
	'ev("completion")[0]["summary"] == "date ok" and any(e.get("retry") and e["wait_ms"] == 0 for e in ev("progress"))'

# ---- a persistent 429: rate limited, exit 4 ----
printf '%s\n' '{"responses": [], "default": {"status": 429, "headers": {"Retry-After": "0"}, "error": "Rate limit reached for requests"}}' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 4 "$BERNSTEIN" runner --manifest "$T/m.json" --max-retries 2
jcheck "persistent 429: 1 + 2 retries" 'len(reqs) == 3'
jcheck "persistent 429: error kind rate_limit with the server's message" \
	'events[-1]["type"] == "error" and events[-1]["kind"] == "rate_limit" and events[-1]["http_status"] == 429 and "Rate limit reached for requests" in events[-1]["message"] and events[-1]["attempts"] == 3'
jcheck "persistent 429: usage before the error" 'kinds[-2] == "usage" and ev("usage")[0]["usage_missing"] is True'

# ---- 5xx: retried with backoff ----
cat >"$T/s.json" <<'EOF'
[{"status": 500}, {"status": 502}, {"text": "third time lucky"}]
EOF
fake_start "$T/s.json"
m
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "500, 502, then success" 'len(reqs) == 3 and ev("completion")[0]["summary"] == "third time lucky"'
jcheck "backoff between attempts (at least 250 ms, then more)" \
	'reqs[1]["mono"] - reqs[0]["mono"] >= 0.24 and reqs[2]["mono"] - reqs[1]["mono"] >= 0.49'

printf '%s\n' '{"responses": [], "default": {"status": 503, "headers": {"Retry-After": "0"}}}' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json" --max-retries 1
jcheck "persistent 503: exit 1, kind http, gave up after 2" \
	'len(reqs) == 2 and events[-1]["kind"] == "http" and events[-1]["http_status"] == 503 and "gave up after 2 attempts" in events[-1]["message"]'

# ---- 4xx: not retried ----
printf '%s\n' '[{"status": 400, "error": "Invalid model name"}, {"text": "never"}]' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "400: one request, kind http with the server's message" \
	'len(reqs) == 1 and events[-1]["kind"] == "http" and events[-1]["http_status"] == 400 and "Invalid model name" in events[-1]["message"]'
printf '%s\n' '[{"status": 401, "body": "<html>nope</html>"}]' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "401 with a non-JSON body: its text in the message" \
	'len(reqs) == 1 and "HTTP 401" in events[-1]["message"] and "nope" in events[-1]["message"]'

# ---- malformed replies: an error event and exit 1, not retried ----
printf '%s\n' '[{"malformed": true}, {"text": "never"}]' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "malformed chunk (chat stream): kind runtime, one request" \
	'len(reqs) == 1 and events[-1]["type"] == "error" and events[-1]["kind"] == "runtime" and "malformed chunk" in events[-1]["message"]'
fake_start "$T/s.json"
m ', "stream": false'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "malformed body (chat, plain): kind runtime" \
	'len(reqs) == 1 and events[-1]["kind"] == "runtime" and "malformed reply" in events[-1]["message"]'
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "r", "prompt": "p", "workdir": "@WORK@", "model": "m"}'
expect_exit 1 BERNSTEIN_TEST_OPENAI_DEFAULT_URL="$FAKE_URL" "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "malformed event (responses stream): kind runtime" \
	'len(reqs) == 1 and reqs[0]["path"] == "/v1/responses" and events[-1]["kind"] == "runtime" and "malformed chunk" in events[-1]["message"]'
printf '%s\n' '[{"text": "cut short", "truncate": true}]' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "a stream that ends before [DONE]/finish: kind runtime" \
	'events[-1]["kind"] == "runtime" and "ended before" in events[-1]["message"]'

# ---- a dropped connection is a transport error: retried ----
printf '%s\n' '[{"text": "dropped mid-way", "cut": true}, {"text": "second try"}]' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "cut connection, then success" 'len(reqs) == 2 and ev("completion")[0]["summary"] == "second try"'

# ---- slow replies ----
printf '%s\n' '[{"text": "slow but fine", "delay": 0.5, "chunk_delay": 0.1, "chunk_size": 5}]' >"$T/s.json"
fake_start "$T/s.json"
m
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "a slow streamed reply completes" 'ev("completion")[0]["summary"] == "slow but fine"'
printf '%s\n' '{"responses": [], "default": {"text": "too slow", "delay": 5}}' >"$T/s.json"
fake_start "$T/s.json"
m ', "timeout_seconds": 2'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json" --max-retries 0
jcheck "timeout_seconds bounds the run" \
	'events[-1]["type"] == "error" and events[-1]["kind"] == "runtime" and ev("completion") == []'

# ---- nothing listening: transport errors, retried, then exit 1 ----
fake_stop
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json" --max-retries 1
jcheck "connection refused: kind runtime after the retries" \
	'events[-1]["kind"] == "runtime" and "gave up after 2 attempts" in events[-1]["message"]'

test_done
