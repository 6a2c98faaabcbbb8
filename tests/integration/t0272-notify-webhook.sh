#!/bin/sh
# Notifications (issue #19) against a local HTTP server over loopback
# (tests/helpers/webhook-server.py):
# 1. a run with a task that is done and one that fails POSTs the documented
#    bodies for task_done, task_failed and run_done to the webhook (as
#    application/json, the URL's user:password as HTTP basic auth, its path
#    and query as given), and no body carries the prompt or what the agent
#    said (its error text could carry what it read out of a sandbox without
#    network; status has it); with desktop: true
#    notify-send runs too (here a stand-in on PATH that records its argv);
# 2. the webhook's credentials (user:password, the token in its path and
#    query) are nowhere but in the request: not in bernstein's output, not
#    in `config show` (text or --json), not in anything under .bernstein/
#    (state.db, the audit chain, the logs, notify.log, which shows the URL
#    as http://***@127.0.0.1:PORT/***);
# 3. a 500 answer is retried (backoff), and the next 200 delivers;
# 4. a bad webhook URL is refused at its file:line:col (exit 3) without
#    repeating its credentials.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0272 notify: webhook bodies, desktop, redaction, retries"

SRV_PID=
stop_server() {
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	[ -n "$SRV_PID" ] && wait "$SRV_PID" 2>/dev/null
	SRV_PID=
}
trap 'stop_server; _lib_cleanup' EXIT

# server NAME [ARGS]: start the receiver, its port in $PORT, its log $T/NAME.log
server() {
	rm -f "$T/$1.port"
	$PY "$SRCDIR/tests/helpers/webhook-server.py" --port-file "$T/$1.port" --log "$T/$1.log" \
		--max-seconds 100 ${2:-} &
	SRV_PID=$!
	i=0
	while [ ! -s "$T/$1.port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	PORT=$(cat "$T/$1.port")
}
# wait_lines FILE PATTERN N: until FILE has N lines matching PATTERN (<= 20 s)
wait_lines() {
	i=0
	while [ "$(count_lines "$1" "$2")" -lt "$3" ] && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ "$(count_lines "$1" "$2")" -ge "$3" ]
}
# count_lines FILE PATTERN: 0 while FILE does not exist
count_lines() {
	n=$(grep -c "$2" "$1" 2>/dev/null)
	echo "${n:-0}"
}

setup() {
	W=$1
	mkdir -p "$W" "$T/bin"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	shell_agent "$W"
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\n%s\n' "$2" >"$W/bernstein.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}
bw() { run sh -c "cd '$W' && exec env -i PATH='$T/bin:/usr/bin:/bin' HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' $*"; }

# the stand-in notify-send: records its argv, one argument a line
mkdir -p "$T/bin"
cat >"$T/bin/notify-send" <<SH
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done >> "$T/notify-send.argv"
echo -- >> "$T/notify-send.argv"
SH
chmod +x "$T/bin/notify-send"

# 1. the bodies; the URL in bernstein's environment (webhook_env), so that
# the committed bernstein.yaml holds no secret
server one
URL="http://t0272user:t0272-pass-SECRET@127.0.0.1:$PORT/hook/t0272-path-SECRET?token=t0272-query-SECRET"
setup "$T/a" "notify:
  webhook_env: T0272_HOOK_URL
  on: [task_done, task_failed, run_done]
  desktop: true
  retries: 0"
cat >"$W/plan.yaml" <<YAML
name: t0272
tasks:
  - title: good
    prompt: "env > $T/agent.env; echo t0272-prompt-text > good.txt"
  - title: bad
    prompt: "echo 'error: t0272-agent-said-this' >&2; exit 3"
YAML
run sh -c "cd '$W' && exec env -i PATH='$T/bin:/usr/bin:/bin' HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC T0272_HOOK_URL='$URL' '$BERNSTEIN' run plan.yaml"
check "the run has a failed task (exit 1, got $RC)" test "$RC" -eq 1
RUN=$(sed -n 's/^run \([^ :]*\): .*/\1/p' "$T/stdout" | head -1)
check "three requests arrive" wait_lines "$T/one.log" '"method": "POST"' 3
stop_server
# body EVENT EXPR: EXPR (Python, over the body b and the request q) holds
body() {
	$PY - "$T/one.log" "$1" "$2" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for q in reqs:
    b = q["body"]
    if isinstance(b, dict) and b.get("event") == sys.argv[2]:
        sys.exit(0 if eval(sys.argv[3]) else 1)
sys.exit(1)
PY
}
check "task_done: its body" body task_done "b['task']['id'] == 'good' and b['task']['state'] == 'done' and b['task']['outcome'] == 'completed' and b['run'] == '$RUN' and b['source'] == 'bernstein' and b['run_name'] == 't0272'"
check "task_failed: its body" body task_failed "b['task']['id'] == 'bad' and b['task']['state'] == 'failed' and 'exited with code 3' in b['reason'] and b['task']['attempt'] == 1"
check "task_failed: a text line for chat webhooks" body task_failed "b['text'].startswith(\"bernstein: task 'bad' failed\")"
check "run_done: its body" body run_done "b['state'] == 'failed' and b['counts'] == {'done': 1, 'failed': 1} and 'task' not in b"
check "every request: POST application/json to the URL's path and query" body run_done "q['content_type'] == 'application/json' and q['path'] == '/hook/t0272-path-SECRET?token=t0272-query-SECRET'"
check "every request: the URL's user:password as basic auth" body run_done "q['authorization'] == 'Basic dDAyNzJ1c2VyOnQwMjcyLXBhc3MtU0VDUkVU'"
check "no body carries the prompt" sh -c "! grep -q t0272-prompt-text '$T/one.log'"
bw status
check "status: the reason ends with what the agent said" grep -q "the agent said: .*t0272-agent-said-this" "$T/stdout"
check "no body carries what the agent said (a way out of a sandbox)" sh -c "! grep -q t0272-agent-said-this '$T/one.log'"
check "only the events asked for (no task_review...)" test "$(grep -c '"method": "POST"' "$T/one.log")" -eq 3
check "desktop: notify-send ran for each" test "$(grep -cx -- -- "$T/notify-send.argv")" -eq 3
check "desktop: as bernstein, with the task's line" \
	sh -c "grep -qx -- --app-name=bernstein '$T/notify-send.argv' && grep -q \"^bernstein: task 'bad' failed\" '$T/notify-send.argv'"
check "desktop: no credentials in its argv" sh -c "! grep -q SECRET '$T/notify-send.argv'"

# 2. redaction
check "notify.log: the URL shown without its credentials" \
	grep -q "POST http://\*\*\*@127.0.0.1:$PORT/\*\*\*: HTTP 200" "$W/.bernstein/runs/$RUN/notify.log"
check "not in bernstein's output" sh -c "! grep -q SECRET '$T/stdout' '$T/stderr'"
check "not in anything under .bernstein/ (state.db, audit, logs)" sh -c "! grep -rqa SECRET '$W/.bernstein'"
check "not in the agent's environment" sh -c "test -s '$T/agent.env' && ! grep -q SECRET '$T/agent.env'"
# a URL written into bernstein.yaml: config show never prints it whole
printf 'adapter: shell\nnotify:\n  webhook: "%s"\n' "$URL" >"$W/bernstein.yaml"
bw config show
check "config show: exit 0" test "$RC" -eq 0
check "config show: the webhook shown redacted" grep -q "webhook: \"http://\*\*\*@127.0.0.1:$PORT/\*\*\*\"" "$T/stdout"
check "config show: no credentials" sh -c "! grep -q SECRET '$T/stdout' '$T/stderr'"
bw config show --json
check "config show --json: no credentials" sh -c "! grep -q SECRET '$T/stdout' '$T/stderr'"

# 3. a 500 is retried
server two "--status 500,200"
setup "$T/b" "notify:
  webhook: \"http://127.0.0.1:$PORT/t0272\"
  on: [run_done]
  retries: 2"
printf 'name: r\ntasks:\n  - title: fine\n    prompt: "echo f > f.txt"\n' >"$W/plan.yaml"
bw run plan.yaml
check "retry: the run succeeds (exit $RC)" test "$RC" -eq 0
check "retry: two requests (500, then 200)" wait_lines "$T/two.log" '"method": "POST"' 2
N2=$(ls "$W"/.bernstein/runs/*/notify.log)
check "retry: notify.log has the 500 and the 200" wait_lines "$N2" "HTTP 200 (try 2)" 1
check "retry: ... after the 500 of try 1" grep -q "HTTP 500 (try 1)" "$N2"
stop_server

# 4. a bad URL
setup "$T/c" 'notify:
  webhook: "ftp://u:t0272-bad-SECRET@example.com/x"'
printf 'name: r\ntasks:\n  - title: fine\n    prompt: "true"\n' >"$W/plan.yaml"
bw run plan.yaml
check "bad URL: exit 3 (got $RC)" test "$RC" -eq 3
check "bad URL: at its line:col" grep -q "bernstein.yaml:5:12: field 'notify.webhook': webhook '\*\*\*': the scheme must be http:// or https://" "$T/stderr"
check "bad URL: without its credentials" sh -c "! grep -q SECRET '$T/stderr'"
test_done
