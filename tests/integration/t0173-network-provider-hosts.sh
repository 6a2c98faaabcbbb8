#!/bin/sh
# network: llm without a base_url (issue #15): the proxy allows the hosts
# the agent's profile declares for its provider (runtime.sandbox.hosts),
# and nothing else; every refusal is an event of the task while the agent
# (or a gate) still runs, not only when it exits.
#
# A script agent whose profile override declares two hosts, a loopback
# listener's 127.0.0.1:EP and the name api.provider.invalid (port 443),
# runs in sandbox: bwrap with network: llm and no base_url. Through the
# proxy it reaches the declared listener (and straight, through the
# bridge's tunnel); a CONNECT to the declared name is let through (the
# proxy answers 502: the name does not resolve offline, not 403); a CONNECT
# to an undeclared name and a request to another port of the declared
# address are refused (403) and never reach a listener. The undeclared
# name's refusal is in the task's events.jsonl while the agent waits for
# the test to see it (the agent then ends); a gate's refusal becomes an
# event too. `spawn --dry-run` lists the declared hosts; without hosts and
# without a base_url, network: llm is refused with the reason. As root and
# as uid 65534. Skipped without Landlock or bwrap.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0173 network: llm allows the provider's declared hosts; refusals are events as they happen"

require_landlock
require_bwrap

LISTEN_PID=
stop_listen() { [ -n "$LISTEN_PID" ] && kill "$LISTEN_PID" 2>/dev/null; LISTEN_PID=; }
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

# setup DIR [HOSTS]: a repository whose shell agent (no base_url) probes
# the network, then waits (at most 60 s) for the file go in its tree
setup() {
	W=$1
	mkdir -p "$W/.bernstein/catalog/profiles"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	shell_agent "$W"
	printf 'runtime:\n  sandbox:\n    tiers: [bwrap]\n' >>"$W/.bernstein/catalog/profiles/shell.yaml"
	[ -n "${2-x}" ] && printf '    hosts: ["127.0.0.1:%s", API.Provider.invalid]\n' "$EP" \
		>>"$W/.bernstein/catalog/profiles/shell.yaml"
	cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
retry_backoff: 0
max_retries: 0
sandbox: bwrap
network: llm
gates:
  - name: probe
    run: "curl -s -m 5 -p -o /dev/null https://gate.refused.invalid/; true"
EOF
	cat >"$W/plan.yaml" <<EOF
name: hosts
tasks:
  - title: probe
    prompt: |
      get() { curl -s -m 5 -o /dev/null -w '%{http_code}' "\$@" 2>/dev/null; echo; }
      direct() { curl -s -m 5 --noproxy '*' -o /dev/null -w '%{http_code}' "\$@" 2>/dev/null; echo; }
      conn() { curl -s -m 5 -p -o /dev/null -w '%{http_connect}' "\$@" 2>/dev/null; echo; }
      { echo "declared-proxy \$(get http://127.0.0.1:$EP/)"
        echo "declared-direct \$(direct http://127.0.0.1:$EP/)"
        echo "declared-name \$(conn https://api.provider.invalid/)"
        echo "undeclared-name \$(conn https://other.provider.invalid/)"
        echo "other-port \$(get http://127.0.0.1:$OTHER/)"; } > net.txt
      i=0
      while [ ! -e go ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
      echo "go-seen \$(test -e go && echo yes || echo no) \$i" >> net.txt
      rm -f go
EOF
	git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

# start_run WHO AS: run bernstein in the background (AS: a setpriv prefix or
# empty); while the agent waits, its refusal must already be an event
start_run() {
	who=$1
	rm -f "$T/rc"
	(
		run sh -c "cd '$W' && exec $2 env -i PATH=/usr/bin:/bin HOME='${HOME_DIR:-$T/home}' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run plan.yaml"
		echo "$RC" >"$T/rc"
	) &
	bg=$!
	# the agent wrote its probes and waits in its clone: poll the events
	seen=
	end=$(($(date +%s) + 50))
	while [ "$(date +%s)" -lt "$end" ] && [ ! -s "$T/rc" ]; do
		ev=$(ls "$W"/.bernstein/runs/*/*/1/events.jsonl 2>/dev/null | head -n 1)
		if [ -n "$ev" ] && grep -q "network: the proxy refused 'other.provider.invalid:443'" "$ev"; then
			seen=1
			break
		fi
		sleep 0.1
	done
	clone=$(ls -d "$W"/.bernstein/worktrees/*/ 2>/dev/null | head -n 1)
	[ -n "$clone" ] && : >"$clone/go" && chmod 666 "$clone/go"
	wait "$bg"
	# the agent saw go: it still ran when the test had seen the event
	if [ -n "$seen" ] && grep -q '^go-seen yes' "$W/net.txt" 2>/dev/null; then
		ok "$who: the refusal is in the task's events while the agent still runs"
	else
		not_ok "$who: the refusal is in the task's events while the agent still runs"
		[ -n "$ev" ] && _diag_file events "$ev"
		_diag_file net.txt "$W/net.txt"
	fi
	if [ "$(cat "$T/rc" 2>/dev/null)" = 0 ]; then ok "$who: bernstein run exits 0"; else
		not_ok "$who: bernstein run exits 0 (got $(cat "$T/rc" 2>/dev/null))"
		_diag_file stdout "$T/stdout"
		_diag_file stderr "$T/stderr"
	fi
}

verify() {
	who=$1
	check "$who: the task's work is merged" test -s "$W/net.txt"
	check "$who: the declared loopback host answers through the proxy" \
		grep -qx 'declared-proxy 200' "$W/net.txt"
	check "$who: the declared loopback host answers straight (the bridge's tunnel)" \
		grep -qx 'declared-direct 200' "$W/net.txt"
	check "$who: a CONNECT to the declared name is let through (502: it does not resolve offline)" \
		grep -qx 'declared-name 502' "$W/net.txt"
	check "$who: a CONNECT to an undeclared name is refused (403)" \
		grep -qx 'undeclared-name 403' "$W/net.txt"
	check "$who: another port of the declared address is refused (403)" \
		grep -qx 'other-port 403' "$W/net.txt"
	ev=$(ls "$W"/.bernstein/runs/*/*/1/events.jsonl)
	check "$who: the undeclared name's refusal is counted when the agent exits" \
		grep -q "network: the proxy refused 'other.provider.invalid:443' (1 time)" "$ev"
	check "$who: the other port's refusal is in the events" \
		grep -q "network: the proxy refused '127.0.0.1:$OTHER'" "$ev"
	check "$who: the declared name was never refused" \
		sh -c "! grep -q 'refused .api.provider.invalid' '$ev'"
	check "$who: the gate's refusal is an event" \
		grep -q "gate 'probe': network: the proxy refused 'gate.refused.invalid:443'" "$ev"
	check "$who: only the declared listener was connected to" \
		sh -c "grep -qx endpoint '$T/conns' && ! grep -v '^endpoint\$' '$T/conns'"
}

# ---- as root ----
start_listen
setup "$T/root/work"
start_run root ""
verify root

# the dry run lists the declared hosts (lower case, port 443 by default)
run sh -c "cd '$W' && exec '$BERNSTEIN' spawn shell --dry-run --sandbox bwrap --network llm --json true"
check "spawn --dry-run: exit 0" test "$RC" -eq 0
check "spawn --dry-run: the declared hosts are allowed" \
	"$PY" -c "import json,sys; n=json.load(open(sys.argv[1]))['sandbox']['network']; assert n['mode']=='llm' and n['allow']==['127.0.0.1:$EP','api.provider.invalid:443'], n" "$T/stdout"

# without declared hosts and without a base_url: refused with the reason
setup "$T/nohosts/work" ""
run sh -c "cd '$W' && exec '$BERNSTEIN' run plan.yaml"
check "no hosts, no base_url: the run does not succeed" test "$RC" -ne 0
run sh -c "cd '$W' && exec '$BERNSTEIN' status --json"
check "no hosts, no base_url: the task is refused, naming runtime.sandbox.hosts" \
	grep -q 'runtime.sandbox.hosts' "$T/stdout"

# ---- as an unprivileged uid ----
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	skip "provider hosts as uid 65534" "needs root and setpriv(1) to drop to uid 65534"
else
	start_listen
	chmod 755 "$T"
	setup "$T/nobody/work"
	mkdir -p "$T/nobody/home"
	chown -R 65534:65534 "$T/nobody"
	HOME_DIR="$T/nobody/home" start_run "uid 65534" "setpriv --reuid=65534 --regid=65534 --clear-groups --"
	verify "uid 65534"
fi
stop_listen
test_done
