#!/bin/sh
# Issue #22: `bernstein serve`, the HTTP API over a real run of the shell
# agent. Every endpoint answers with the token; without it, or with a wrong
# one, 401 and no data; ids that are not ids (path traversal) are refused
# before any file is opened; an oversized body is 413; a slow client is cut
# off at the idle timeout; no answer sets a cookie. A cancel posted to the
# API reaches the live run through its control channel (audited as the
# CLI's), the task's live event stream ends with it, and a stop of a run
# that is no longer live is 409 (retry, approve... of one: t0339).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0335 serve: the HTTP API, its token and limits"
. "$SRCDIR/tests/integration/repo-lib.sh"

KILL_MARK=$T/spin.flag

shell_repo <<'EOF'
adapter: shell
parallel: 4
kill_grace: 1
sandbox: none
gates:
  - {name: check, run: "echo gate-output-here; test -f quick.txt || test -f spin.txt"}
EOF
cat >"$W/plan.yaml" <<EOF
name: serve
tasks:
  - title: quick
    prompt: "echo hi > quick.txt"
  - title: spin
    prompt: "echo started; echo second; echo third; while [ ! -f $T/spin.flag ]; do sleep 0.05; done; echo spin > spin.txt"
  - title: after
    depends_on: [spin]
    prompt: "echo after > after.txt"
EOF
commit_base

bg run plan.yaml
serve_bg "$SERVE" --listen 127.0.0.1:0 --idle-timeout 2
check "the server prints its URL with the token" serve_wait
check "the token file is 0600" test "$(stat -c %a "$W/.bernstein/serve.token")" = 600
check "the printed token is the file's" grep -q "#token=$TOKEN\$" "$T/serve.out"

# api PATH [CURL ARGS...]: the answer's body in $T/body, its status in $CODE
api()
{
	_p=$1
	shift
	CODE=$(curl -sS --path-as-is -o "$T/body" -D "$T/headers" -w '%{http_code}' \
		-H "Authorization: Bearer $TOKEN" "$@" "$URL$_p")
}
# jq-less: a Python expression on the body's JSON as `j`
jbody() { /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/body" "$1"; }

check "the spin task runs" wait_until '[ -n "$(ls "$W"/.bernstein/worktrees/ 2>/dev/null | grep spin)" ] && grep -q "\"state\": \"running\"" "$W/.bernstein/runs/"*/spin-*/1/events.jsonl 2>/dev/null || authget /api/runs | grep -q running'
check "quick is done" wait_until 'authget "/api/runs/$(authget /api/runs | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)[\"runs\"][0][\"id\"])")/tasks/quick" | grep -q "\"state\": *\"done\""'

# ---- the token ----
CODE=$(curl -sS -o "$T/body" -w '%{http_code}' "$URL/api/runs")
check "no token: 401" test "$CODE" = 401
check "no token: no data" sh -c "! grep -q quick '$T/body'"
CODE=$(curl -sS -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer 0$TOKEN" "$URL/api/runs")
check "a wrong token: 401" test "$CODE" = 401
CODE=$(curl -sS -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer ${TOKEN%?}" "$URL/metrics")
check "a token's prefix: 401 (on /metrics too)" test "$CODE" = 401
CODE=$(curl -sS -o "$T/body" -w '%{http_code}' -X POST -d '{}' "$URL/api/runs/x/stop")
check "a POST without the token: 401" test "$CODE" = 401

# ---- every endpoint ----
api /api/runs
check "GET /api/runs: 200" test "$CODE" = 200
RUN=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["id"])' "$T/body")
check "the run is live and running" jbody 'j["runs"][0]["state"] == "running" and j["runs"][0]["live"]'
api "/api/runs/$RUN"
check "GET /api/runs/RUN: its tasks" jbody '[t["id"] for t in j["tasks"]] == ["quick", "spin", "after"]'
api "/api/runs/$RUN/tasks"
check "GET .../tasks: 200" jbody 'j["run"] == "'"$RUN"'" and len(j["tasks"]) == 3'
api "/api/runs/$RUN/tasks/quick"
check "GET .../tasks/quick: done, one attempt by shell" \
	jbody 'j["state"] == "done" and j["attempts"][0]["adapter"] == "shell" and j["attempts"][0]["outcome"] == "completed"'
check "an attempt has the profile hash, tokens and cost fields" \
	jbody 'all(k in j["attempts"][0] for k in ("profile_hash", "model", "input_tokens", "output_tokens", "cost_usd"))'
api "/api/runs/$RUN/tasks/quick/attempts"
check "GET .../attempts: 200" jbody 'len(j["attempts"]) == 1 and j["attempts"][0]["n"] == 1'
api "/api/runs/$RUN/tasks/quick/events?follow=0"
check "GET .../events?follow=0: an event stream" grep -qi '^content-type: text/event-stream' "$T/headers"
check "it holds the attempt's events and ends" sh -c "grep -q '^data: {' '$T/body' && grep -q '^event: end' '$T/body'"
api "/api/runs/$RUN/tasks/quick/gates"
check "GET .../gates: the gate's log" jbody 'j["gates"][0]["name"] == "check" and "gate-output-here" in j["gates"][0]["log"]'
QDIR=$(ls -d "$W"/.bernstein/runs/"$RUN"/quick-*/1)
mkfifo "$QDIR/gate-fifo.log"
ln -s /etc/passwd "$QDIR/gate-link.log"
api "/api/runs/$RUN/tasks/quick/gates"
check "a FIFO or a symlink named like a gate log: not read, not listed" \
	jbody '[g["name"] for g in j["gates"]] == ["check"]'
check "nothing of the symlink's target served" sh -c "! grep -q root: '$T/body'"
rm -f "$QDIR/gate-fifo.log" "$QDIR/gate-link.log"
api "/api/runs/$RUN/tasks/quick/diff"
check "GET .../diff: bernstein diff's answer (merged: nothing left)" jbody 'j["task"] == "quick" and j["branch"].startswith("bernstein/quick") and "patch" in j and j["exit_code"] == 0'
api /api/audit
check "GET /api/audit: the chain verifies" jbody 'j["exit_code"] == 0'
api /api/adapters
check "GET /api/adapters: the adapters and which are usable (shell: yes)" \
	jbody 'len(j["adapters"]) > 10 and any(u["name"] == "shell" and u["ok"] for u in j["usable"])'
api /metrics
check "GET /metrics: Prometheus text" grep -q '^# TYPE bernstein_tasks gauge' "$T/body"
check "/metrics: tasks by state" grep -q "^bernstein_tasks{run=\"$RUN\",state=\"done\"} 1\$" "$T/body"
check "/metrics: attempts by outcome" grep -q "^bernstein_attempts_total{run=\"$RUN\",outcome=\"completed\"} 1\$" "$T/body"
check "/metrics: tokens, cost, latencies" sh -c "grep -q '^bernstein_tokens_total' '$T/body' && grep -q '^bernstein_cost_usd_total' '$T/body' && grep -q '^bernstein_spawn_latency_seconds_count 2\$' '$T/body' && grep -q '^bernstein_merge_latency_seconds_count 1\$' '$T/body'"
curl -s -o "$T/page" "$URL/"
check "GET /: the dashboard, without the token (it holds no data)" grep -q '<script src="/app.js">' "$T/page"
check "no answer sets a cookie" sh -c "! grep -qi '^set-cookie' '$T/headers'"
api /api/nosuch
check "an unknown endpoint: 404" test "$CODE" = 404
api "/api/runs/$RUN/tasks/nosuch"
check "an unknown task: 404" test "$CODE" = 404

# ---- ids: no path traversal ----
api "/api/runs/..%2F..%2F..%2Fetc/tasks"
check "an encoded '../' in a run id: 400" test "$CODE" = 400
api "/api/runs/$RUN/tasks/..%2f..%2fstate.db/events"
check "an encoded '../' in a task id: 400" test "$CODE" = 400
api "/api/runs/$RUN/tasks/../../../../etc/passwd"
check "a raw '../' path: refused (4xx), nothing served" sh -c "[ '$CODE' -ge 400 ] && [ '$CODE' -lt 500 ] && ! grep -q root: '$T/body'"
api "/api/runs/.bernstein/tasks"
check "a dotted id: 400" test "$CODE" = 400
api "/api/runs/$RUN/tasks/quick/events?attempt=../../x"
check "a bad attempt number: 404" test "$CODE" = 404

# ---- limits ----
head -c 100000 /dev/zero | tr '\0' 'a' >"$T/big"
api "/api/runs/$RUN/tasks/spin/cancel" -X POST -H 'Content-Type: application/json' --data-binary @"$T/big"
check "a 100 kB body: 413" test "$CODE" = 413
api "/api/runs/$RUN/tasks/spin/cancel" -X POST -H 'Transfer-Encoding: chunked' --data-binary @"$T/big"
check "a 100 kB chunked body: 413" test "$CODE" = 413
api /api/runs -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' 'b')"
check "a 20 kB header: refused (4xx)" sh -c "[ '$CODE' -ge 400 ] && [ '$CODE' -lt 500 ]"
api "/api/runs/$RUN/tasks/spin/cancel" -X POST -d '[1]'
check "a body that is not an object: 400" test "$CODE" = 400
api "/api/runs/$RUN/tasks/spin/retry" -X POST -d '{"fresh": "yes"}'
check "a field of the wrong type: 400 (the control parser's)" test "$CODE" = 400
run /usr/bin/python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /api/runs HTTP/1.1\r\nHost: x\r\n")  # and never the rest
s.settimeout(30)
t0 = time.monotonic()
data = s.recv(4096)
print("closed" if data in (b"",) or b"408" in data else "answered %r" % data[:40])
' "${URL##*:}"
expect_stdout_contains "closed" "a slow client (headers never finished) is cut off"

# ---- control: a live event stream, then a cancel through the API ----
curl -sS -N -H "Authorization: Bearer $TOKEN" "$URL/api/runs/$RUN/tasks/spin/events" >"$T/stream" 2>&1 &
CURLPID=$!
check "the spin stream shows the agent's output live" wait_until 'grep -q started "$T/stream"'
api "/api/runs/$RUN/tasks" -X POST -d '{"prompt": "echo added > added.txt", "id": "added", "title": "added over HTTP"}'
check "POST .../tasks: a task added to the live run" jbody 'j["ok"]'
api "/api/runs/$RUN/tasks" -X POST -d '{"prompt": "x", "id": "quick"}'
check "adding a task whose id is taken: 422 (invalid)" test "$CODE" = 422
api "/api/runs/$RUN/tasks/quick/cancel" -X POST
check "cancelling a finished task: 409 (state)" sh -c "[ '$CODE' = 409 ] && grep -q '\"kind\":\"state\"' '$T/body'"
api "/api/runs/$RUN/tasks/spin/cancel" -X POST
check "POST .../spin/cancel: 200" test "$CODE" = 200
check "the reply is the run's" jbody 'j["ok"] and j["tasks"][0]["id"] == "spin"'
check "the stream ends when the task is cancelled" wait_until '! kill -0 $CURLPID 2>/dev/null'
check "its last event says so" sh -c "grep -A1 '^event: end' '$T/stream' | grep -q cancelled"
wait "$BGPID"
RUNRC=$?
BGPID=
check "the run ends (exit 1: a task cancelled)" test "$RUNRC" -eq 1
check "the request is audited as the CLI's" \
	grep -q '"event_type": "control.request"' "$W"/.bernstein/audit/*.jsonl
api "/api/runs/$RUN/tasks/spin"
check "spin is cancelled" jbody 'j["state"] == "cancelled"'
api "/api/runs/$RUN/tasks/added"
check "the task added over HTTP ran and merged" sh -c "grep -q '\"state\":\"done\"' '$T/body' && test -f '$W/added.txt'"
api "/api/runs/$RUN/tasks/spin/events?follow=0"
NID=$(grep -c '^id: ' "$T/body")
FIRST=$(grep -m1 '^id: ' "$T/body" | cut -c5-)
api "/api/runs/$RUN/tasks/spin/events?follow=0" -H "Last-Event-ID: $FIRST"
check "Last-Event-ID: the stream goes on after that event ($NID events, one fewer)" \
	test "$(grep -c '^id: ' "$T/body")" -eq $((NID - 1)) -a "$NID" -ge 2
check "and sends the same events as before, after the first" \
	test "$(grep -m1 '^id: ' "$T/body" | cut -c5-)" != "$FIRST"
api "/api/runs/$RUN/stop" -X POST
check "a stop to a run that is not live: 409 not_live" sh -c "[ '$CODE' = 409 ] && grep -q not_live '$T/body'"
api "/api/runs/$RUN/tasks/after/cancel" -X POST
check "a cancel of a blocked task of a run not live: 200 (as 'bernstein cancel')" test "$CODE" = 200
api "/api/runs/$RUN/tasks/after"
check "'after' is cancelled in state.db" jbody 'j["state"] == "cancelled"'
api "/api/runs/$RUN/tasks/quick/cancel" -X POST
check "a cancel of a done task of a run not live: 409 state" sh -c "[ '$CODE' = 409 ] && grep -q '\"kind\":\"state\"' '$T/body'"
check "no token, key or secret in the server's output" sh -c "! grep -q '$TOKEN' '$T/serve.err'"

# a second server of the same repository: its own token in the file
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" "$SERVE" --listen 127.0.0.1:0) \
	</dev/null >"$T/second.out" 2>"$T/second.err" &
SV2PID=$!
check "a second server starts" wait_until 'grep -q "^bernstein serve: http" "$T/second.out"'
TOKEN2=$(cat "$W/.bernstein/serve.token")
check "its token is a new one" test "$TOKEN2" != "$TOKEN"
CODE=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/api/runs")
check "the first server still answers to its own token" test "$CODE" = 200
kill "$SVPID"
wait "$SVPID"
SVRC=$?
SVPID=
check "SIGTERM stops the server (exit 0)" test "$SVRC" -eq 0
check "the token file, now the second server's, is left to it" grep -qx "$TOKEN2" "$W/.bernstein/serve.token"
kill "$SV2PID"
wait "$SV2PID"
SV2PID=
check "the second server removes its token when it stops" test ! -e "$W/.bernstein/serve.token"

# a listen address that is not loopback: warned about
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" "$SERVE" --listen 0.0.0.0:0) \
	</dev/null >"$T/any.out" 2>"$T/any.err" &
SVPID=$!
check "--listen 0.0.0.0 warns" wait_until 'grep -q "not a loopback address" "$T/any.err"'
kill "$SVPID"
wait "$SVPID"
SVPID=
expect_exit 2 "$SERVE" --listen nonsense
expect_stderr_contains "is not ADDR:PORT"

test_done
