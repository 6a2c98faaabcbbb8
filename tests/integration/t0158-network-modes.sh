#!/bin/sh
# network: none and full, and what network: cannot be (issue #15). A script
# agent pointed at a listener on the host: in none (bwrap, container) it
# connects to nothing, not even its endpoint, and gets no proxy; in full
# (the control) it connects to the endpoint and to another port. llm or
# none with a tier that has no network namespace of its own (landlock, none;
# sandbox: auto when the profile declares only landlock) is refused with the
# reason and never runs with the host's network; llm without an endpoint is
# refused; sandbox: auto with network: none picks bwrap where the profile
# declares it. A bad value is an error at its file:line:col (exit 3).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0158 network: none, full, and the refusals"

require_landlock
bwrap_ok=
if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
	bwrap_ok=1
fi

rm -f "$T/ports" "$T/conns"
"$PY" "$SRCDIR/tests/helpers/tcp-listen.py" --ports-file "$T/ports" --log "$T/conns" \
	--max-seconds 120 &
LISTEN_PID=$!
i=0
while [ ! -s "$T/ports" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
read -r EP OTHER <"$T/ports"

# setup DIR SANDBOX NETWORK [TIERS] [BASE_URL]: a repository whose shell
# agent probes the network
setup() {
	W=$1
	mkdir -p "$W/.bernstein/catalog/profiles"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	shell_agent "$W"
	{
		printf '  supports_endpoint: true\nruntime:\n'
		printf '  endpoint:\n    env: {AGENT_BASE_URL: "{base_url}"}\n'
		[ -n "${4:-}" ] && printf '  sandbox: {tiers: [%s]}\n' "$4"
	} >>"$W/.bernstein/catalog/profiles/shell.yaml"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\nnetwork: %s\n' "$2" "$3" \
		>"$W/bernstein.yaml"
	url=${5-http://127.0.0.1:$EP/v1}
	{
		printf 'name: net\ntasks:\n  - title: probe\n'
		[ -n "$url" ] && printf '    sampling: {base_url: "%s"}\n' "$url"
		cat <<EOF
    prompt: |
      direct() { curl -s -m 5 -o /dev/null -w '%{http_code}' "\$@" 2>/dev/null; echo; }
      { echo "endpoint \$(direct http://127.0.0.1:$EP/v1)"
        echo "other \$(direct http://127.0.0.1:$OTHER/)"
        echo "proxy-env [\${HTTPS_PROXY:-}]"; } > net.txt
EOF
	} >"$W/plan.yaml"
	git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

run_in() { run sh -c "cd '$W' && exec '$BERNSTEIN' $*"; }

# refused WHO WHAT: the task was refused with WHAT in its reason, never ran
refused() {
	check "$1: bernstein run exits 6 (refused)" test "$RC" -eq 6
	run_in status --json
	expect_stdout_contains "$2" "$1: refused with the reason"
	check "$1: the agent never ran" test ! -e "$W/net.txt"
}

for tier in bwrap container; do
	case $tier in
	bwrap) [ -n "$bwrap_ok" ] || { skip "network: none in bwrap" "bwrap cannot run here"; continue; } ;;
	container)
		if [ "$(id -u)" -ne 0 ] || { ! command -v crun && ! command -v runc; } >/dev/null 2>&1; then
			skip "network: none in a container" "needs root and crun or runc"
			continue
		fi ;;
	esac
	: >"$T/conns"
	setup "$T/none-$tier" "$tier" none
	run_in run plan.yaml
	check "$tier, none: bernstein run exits 0" test "$RC" -eq 0
	check "$tier, none: the endpoint: no connection" grep -qx 'endpoint 000' "$W/net.txt"
	check "$tier, none: another port: no connection" grep -qx 'other 000' "$W/net.txt"
	check "$tier, none: no proxy" grep -qx 'proxy-env \[\]' "$W/net.txt"
	check "$tier, none: the listeners saw nothing" test ! -s "$T/conns"
done

if [ -n "$bwrap_ok" ]; then
	setup "$T/full" bwrap full
	run_in run plan.yaml
	check "bwrap, full: bernstein run exits 0" test "$RC" -eq 0
	check "bwrap, full: the endpoint answers" grep -qx 'endpoint 200' "$W/net.txt"
	check "bwrap, full: another port answers (the host's network)" grep -qx 'other 200' "$W/net.txt"
	check "bwrap, full: no proxy" grep -qx 'proxy-env \[\]' "$W/net.txt"

	setup "$T/auto" auto none "landlock, bwrap"
	run_in run plan.yaml
	check "auto, none: bernstein run exits 0" test "$RC" -eq 0
	check "auto, none: nothing connects" grep -qx 'endpoint 000' "$W/net.txt"
	run_in status --json
	expect_stdout_contains '"sandbox": "bwrap"' "auto, none: the tier is bwrap"

	setup "$T/nourl" bwrap llm "" ""
	run_in run plan.yaml
	refused "bwrap, llm, no base_url" "network: llm needs the agent's endpoint"
fi

setup "$T/landlock" landlock llm
run_in run plan.yaml
refused "landlock, llm" "network: llm needs a sandbox tier with a network namespace of its own (bwrap or container); landlock has none"
setup "$T/unconfined" none none
run_in run plan.yaml
refused "sandbox none, network none" "network: none needs a sandbox tier with a network namespace of its own (bwrap or container); none has none"
setup "$T/autoll" auto none landlock
run_in run plan.yaml
refused "auto (landlock only), none" "network: none needs a sandbox tier with a network namespace of its own (bwrap or container); none has none"

# a bad value, in bernstein.yaml and in a plan
setup "$T/bad" bwrap offline
run_in run plan.yaml
check "network: offline in bernstein.yaml: exit 3" test "$RC" -eq 3
expect_stderr_contains "bernstein.yaml:5:10: field 'network': unknown value 'offline' (expected one of: full, llm, none)"
printf '    network: [llm]\n' >>"$W/plan.yaml"
printf 'adapter: shell\n' >"$W/bernstein.yaml"
run_in plan validate plan.yaml
check "network: [llm] in a plan: exit 3" test "$RC" -eq 3
expect_stderr_contains "plan.yaml:10:14: field 'tasks[0].network': expected a string, got a sequence"

kill "$LISTEN_PID" 2>/dev/null
test_done
