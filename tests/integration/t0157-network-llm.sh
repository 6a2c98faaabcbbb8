#!/bin/sh
# network: llm (issue #15): the agent's sandbox has loopback only; a proxy
# bernstein runs outside allows only its endpoint's host:port. A script
# agent whose endpoint (sampling.base_url) is a listener on the host reaches
# it, straight (the bridge's tunnel on the same loopback address) and
# through HTTPS_PROXY; it fails to reach, either way, another port of the
# endpoint's host that has a listener, the endpoint's port on another
# loopback address that has one, and a non-loopback address (refused by the
# proxy, unroutable in the sandbox: nothing leaves the machine); the hosts
# the proxy refused are warnings in the task's events, and those listeners
# were never connected to. In sandbox: bwrap as root and as uid 65534, and
# in sandbox: container as root. Skipped without Landlock, a tier without
# its program.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0157 network: llm reaches the endpoint and nothing else"

require_landlock

LISTEN_PID=
stop_listen() { [ -n "$LISTEN_PID" ] && kill "$LISTEN_PID" 2>/dev/null; LISTEN_PID=; }
# start_listen: the listeners of tests/helpers/tcp-listen.py; EP and OTHER
start_listen() {
	stop_listen
	rm -f "$T/ports" "$T/conns"
	"$PY" "$SRCDIR/tests/helpers/tcp-listen.py" --ports-file "$T/ports" --log "$T/conns" \
		--max-seconds 120 &
	LISTEN_PID=$!
	i=0
	while [ ! -s "$T/ports" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	read -r EP OTHER <"$T/ports"
}

# setup DIR TIER: a repository whose shell agent (pointed at the endpoint)
# probes the network and reports in its tree
setup() {
	W=$1
	mkdir -p "$W/.bernstein/catalog/profiles"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	shell_agent "$W"
	cat >>"$W/.bernstein/catalog/profiles/shell.yaml" <<'EOF'
  supports_endpoint: true
runtime:
  endpoint:
    env: {AGENT_BASE_URL: "{base_url}"}
EOF
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\nnetwork: llm\n' "$2" \
		>"$W/bernstein.yaml"
	cat >"$W/plan.yaml" <<EOF
name: llm
tasks:
  - title: probe
    sampling: {base_url: "http://127.0.0.1:$EP/v1"}
    prompt: |
      get() { curl -s -m 5 -o /dev/null -w '%{http_code}' "\$@" 2>/dev/null; echo; }
      direct() { curl -s -m 5 --noproxy '*' -o /dev/null -w '%{http_code}' "\$@" 2>/dev/null; echo; }
      { echo "endpoint-direct \$(direct http://127.0.0.1:$EP/v1)"
        echo "endpoint-proxy \$(get http://127.0.0.1:$EP/v1)"
        echo "other-direct \$(direct http://127.0.0.1:$OTHER/)"
        echo "other-proxy \$(get http://127.0.0.1:$OTHER/)"
        echo "other-connect \$(get -p http://127.0.0.1:$OTHER/)"
        echo "otheraddr-direct \$(direct http://127.0.0.2:$EP/)"
        echo "otheraddr-proxy \$(get http://127.0.0.2:$EP/)"
        echo "remote-direct \$(direct http://192.0.2.1:80/)"
        echo "remote-proxy \$(get http://192.0.2.1:80/)"
        echo "proxy-env \$HTTPS_PROXY"; } > net.txt
EOF
	git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

# verify WHO: what the agent reported, the events, the listeners' log
verify() {
	who=$1
	check "$who: the task's work is merged" test -s "$W/net.txt"
	check "$who: the endpoint answers straight (the bridge's tunnel)" \
		grep -qx 'endpoint-direct 200' "$W/net.txt"
	check "$who: the endpoint answers through HTTPS_PROXY" grep -qx 'endpoint-proxy 200' "$W/net.txt"
	check "$who: another port of its host: no connection" grep -qx 'other-direct 000' "$W/net.txt"
	check "$who: another port of its host: the proxy answers 403" \
		grep -qx 'other-proxy 403' "$W/net.txt"
	check "$who: another port of its host: CONNECT refused" grep -qx 'other-connect 000' "$W/net.txt"
	check "$who: another loopback address: no connection" \
		grep -qx 'otheraddr-direct 000' "$W/net.txt"
	check "$who: another loopback address: the proxy answers 403" \
		grep -qx 'otheraddr-proxy 403' "$W/net.txt"
	check "$who: a non-loopback address: no route" grep -qx 'remote-direct 000' "$W/net.txt"
	check "$who: a non-loopback address: the proxy answers 403" \
		grep -qx 'remote-proxy 403' "$W/net.txt"
	check "$who: the agent's HTTPS_PROXY is the bridge" \
		grep -Eqx 'proxy-env http://127\.0\.0\.1:[0-9]+' "$W/net.txt"
	ev=$(ls "$W"/.bernstein/runs/*/*/1/events.jsonl)
	for h in "127.0.0.1:$OTHER" "127.0.0.2:$EP" "192.0.2.1:80"; do
		check "$who: the refusal of $h is in the task's events" \
			grep -q "network: the proxy refused '$h'" "$ev"
	done
	check "$who: the endpoint was reached" grep -qx endpoint "$T/conns"
	check "$who: the other listeners were never connected to" \
		sh -c "! grep -v '^endpoint\$' '$T/conns'"
}

for tier in bwrap container; do
	case $tier in
	bwrap)
		if ! command -v bwrap >/dev/null 2>&1 || ! bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
			skip "network: llm in bwrap" "bubblewrap (bwrap) is not installed or cannot create its namespaces"
			continue
		fi ;;
	container)
		if [ "$(id -u)" -ne 0 ] || { ! command -v crun && ! command -v runc; } >/dev/null 2>&1; then
			skip "network: llm in a container" "needs root and crun or runc"
			continue
		fi ;;
	esac
	start_listen
	setup "$T/$tier/work" "$tier"
	run sh -c "cd '$W' && exec '$BERNSTEIN' run plan.yaml"
	if [ "$RC" -eq 0 ]; then ok "$tier, root: bernstein run exits 0"; else
		not_ok "$tier, root: bernstein run exits 0 (got $RC)"
		_diag_file stdout "$T/stdout"
	fi
	verify "$tier, root"
done

# ---- bwrap as an unprivileged uid ----
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	skip "network: llm as uid 65534" "needs root and setpriv(1) to drop to uid 65534"
elif ! command -v bwrap >/dev/null 2>&1; then
	skip "network: llm as uid 65534" "bubblewrap (bwrap) is not installed"
else
	start_listen
	chmod 755 "$T"
	setup "$T/nobody/work" bwrap
	mkdir -p "$T/nobody/home"
	chown -R 65534:65534 "$T/nobody"
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups --"
	run sh -c "cd '$W' && exec $AS env -i PATH=/usr/bin:/bin HOME='$T/nobody/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run plan.yaml"
	if [ "$RC" -eq 0 ]; then ok "bwrap, uid 65534: bernstein run exits 0"; else
		not_ok "bwrap, uid 65534: bernstein run exits 0 (got $RC)"
		_diag_file stdout "$T/stdout"
	fi
	verify "bwrap, uid 65534"
fi
stop_listen
test_done
