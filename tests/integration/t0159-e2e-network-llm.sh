#!/bin/sh
# network: llm with real agent CLIs (issue #15): claude (which honours
# HTTP(S)_PROXY: its requests reach tests/helpers/fake-llm.py through the
# proxy) and gemini (which ignores them: its requests go through the
# bridge's tunnel on the endpoint's own loopback address) each complete a
# task in sandbox: bwrap with network: llm, writing a file with their own
# tool; the fake server saw their requests and the proxy refused nothing.
# T0159_CLIS="claude" limits the CLIs.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: real CLIs complete a task in network: llm"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-250}

require_agents
require_landlock
require_bwrap

n=0
for spec in "claude ANTHROPIC_API_KEY -" "gemini GEMINI_API_KEY -"; do
	# shellcheck disable=SC2086 # the spec is words
	set -- $spec
	cli=$1 key=$2
	case " ${T0159_CLIS:-$cli} " in
	*" $cli "*) ;;
	*) continue ;;
	esac
	case $cli in
	claude) call='{"name": "Bash", "id": "toolu_t_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}' ;;
	gemini) call='{"name": "run_shell_command", "id": "call_t_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}' ;;
	esac
	printf '{"side": {"text": "Title"}, "responses": [{"tool_calls": [%s]}, {"text": "Created hello.txt."}]}\n' \
		"$call" >"$T/write.json"
	n=$((n + 1))
	W=$T/w$n
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'adapter: %s\nparallel: 1\ntimeout: 200\nretry_backoff: 0\nsandbox: bwrap\nnetwork: llm\n' \
		"$cli" >"$W/bernstein.yaml"
	fake_start "$T/write.json"
	cat >"$W/plan.yaml" <<EOF
name: e2e
tasks:
  - title: hello
    sampling: {base_url: "http://127.0.0.1:$FAKE_PORT", api_key_env: $key}
    prompt: create hello.txt containing hi
EOF
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1
	run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC $key=e2e-dummy-key BERNSTEIN_AUDIT_KEY_PATH='$T/audit.key' '$BERNSTEIN' run plan.yaml"
	if [ "$RC" -eq 0 ]; then ok "$cli, llm: bernstein run exits 0"; else
		not_ok "$cli, llm: bernstein run exits 0 (got $RC)"
		_diag_file stdout "$T/stdout"
		for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file agent.log "$f"; done
	fi
	check "$cli, llm: its file is merged" grep -qx hi "$W/hello.txt"
	check "$cli, llm: the fake server got its requests" test "$(nreq)" -ge 2
	check "$cli, llm: the task ran behind the proxy (its refusal log exists)" \
		sh -c "ls '$W'/.bernstein/runs/*/*/1/net-refused.jsonl"
	check "$cli, llm: the proxy refused nothing" \
		sh -c "! grep -q 'network: the proxy refused' '$W'/.bernstein/runs/*/*/1/events.jsonl"
	fake_stop
done
test_done
