#!/bin/sh
# Issue #22: docs/openapi.json is the server's real API. Against a live run
# of the shell agent, tests/helpers/openapi-check.py calls every path the
# spec names (GET: 200, the spec's content type, the JSON answer matching
# the schema exactly; POST: the answer, a success or a refusal, matching
# ControlReply or Error) and checks the error shape of a 401 and a 404.
# The server is started as `bernstein serve` (which execs bernstein-serve).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0336 serve: docs/openapi.json against the server"
. "$SRCDIR/tests/integration/repo-lib.sh"

KILL_MARK=$T/hold.flag

shell_repo <<'EOF'
adapter: shell
parallel: 2
kill_grace: 1
sandbox: none
gates:
  - {name: check, run: "echo checked"}
EOF
cat >"$W/plan.yaml" <<EOF
name: openapi
tasks:
  - title: one
    prompt: "echo one > one.txt"
  - title: hold
    prompt: "while [ ! -f $T/hold.flag ]; do sleep 0.05; done"
EOF
commit_base

bg run plan.yaml
serve_bg "$BERNSTEIN" serve --listen 127.0.0.1:0
check "the server is up" serve_wait
check "the run is there" wait_until 'authget /api/runs | grep -q "\"id\""'
RUN=$(authget /api/runs | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
check "task 'one' is done while 'hold' runs" \
	wait_until 'authget "/api/runs/$RUN/tasks/one" | grep -q "\"state\":\"done\""'

run /usr/bin/python3 "$SRCDIR/tests/helpers/openapi-check.py" "$SRCDIR/docs/openapi.json" "$URL" "$TOKEN" "$RUN" one
check "every path of docs/openapi.json answers as the spec says" test "$RC" -eq 0
[ "$RC" -eq 0 ] || diag "$(grep FAIL "$T/stdout")"
check "every GET and POST of the spec was checked (18 operations, 3 errors)" \
	test "$(grep -c '^ok ' "$T/stdout")" -eq 21
check "the spec is valid JSON with an openapi 3 header" \
	/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["openapi"].startswith("3.")' "$SRCDIR/docs/openapi.json"

touch "$T/hold.flag"
wait "$BGPID"
BGPID=
kill "$SVPID"
wait "$SVPID"
SVPID=
test_done
