# Shared helpers of the runner's integration tests (tests/integration/t*-runner-*.sh).
# Source after tests/integration/lib.sh and test_begin:
#
#   fake_start SCRIPT.json   start tests/helpers/fake-llm.py on a free loopback port
#                            with that script; sets FAKE_PORT and FAKE_URL
#                            (http://127.0.0.1:PORT/v1); requests go to $T/requests.jsonl;
#                            it stops by itself after $FAKE_MAX_SECONDS (default 240)
#   fake_stop                stop it (also done at exit)
#   nreq                     the number of requests the server received
#   jcheck DESC EXPR         one TAP line: the Python expression EXPR is true, with
#                            `events` (the last run's stdout, parsed), `reqs` (the
#                            request log, parsed), `kinds` (event types in order),
#                            `ev(type)` (events of a type) and `T` in scope
#   write_manifest FILE JSON write a manifest, replacing @URL@ by $FAKE_URL and
#                            @WORK@ by $T/work

RUNNER_DATA="$SRCDIR/tests/data/runner"
# $PY: the system Python (tests/integration/lib.sh).
FAKE_LLM="$SRCDIR/tests/helpers/fake-llm.py"
FAKE_PID=""

_runner_cleanup()
{
	fake_stop
	_lib_cleanup
}
trap _runner_cleanup EXIT

fake_start()
{
	fake_stop
	rm -f "$T/fake.port" "$T/requests.jsonl"
	"$PY" "$FAKE_LLM" --script "$1" --log "$T/requests.jsonl" --port-file "$T/fake.port" \
		--max-seconds "${FAKE_MAX_SECONDS:-240}" >/dev/null 2>"$T/fake.err" &
	FAKE_PID=$!
	_i=0
	while [ ! -s "$T/fake.port" ]; do
		_i=$((_i + 1))
		if [ "$_i" -gt 200 ] || ! kill -0 "$FAKE_PID" 2>/dev/null; then
			echo "Bail out! fake-llm.py did not start"
			cat "$T/fake.err" >&2
			exit 1
		fi
		sleep 0.05
	done
	FAKE_PORT=$(cat "$T/fake.port")
	FAKE_URL="http://127.0.0.1:$FAKE_PORT/v1"
}

fake_stop()
{
	if [ -n "$FAKE_PID" ]; then
		kill "$FAKE_PID" 2>/dev/null
		wait "$FAKE_PID" 2>/dev/null
		FAKE_PID=""
	fi
}

nreq()
{
	if [ -f "$T/requests.jsonl" ]; then
		awk 'END { print NR }' "$T/requests.jsonl"
	else
		echo 0
	fi
}

jcheck()
{
	_desc=$1
	shift
	if "$PY" "$RUNNER_DATA/jcheck.py" "$T" "$1" >"$T/jcheck.out" 2>&1; then
		ok "$_desc"
	else
		not_ok "$_desc"
		sed 's/^/# /' "$T/jcheck.out" | head -n 20
		_diag_file stdout "$T/stdout"
	fi
}

write_manifest()
{
	printf '%s\n' "$2" | sed -e "s#@URL@#${FAKE_URL:-}#g" -e "s#@WORK@#$T/work#g" >"$1"
}
