#!/bin/sh
# The six real agent CLIs pinned in tests/agents/ complete a task in every
# sandbox tier their profile declares (runtime.sandbox.tiers), against
# tests/helpers/fake-llm.py: `bernstein run` of one task that writes a file
# with the CLI's own tool, in its clone, confined; the file is merged. The
# declarations in catalog/profiles/ are what this test verifies.
# T0152_CLIS="claude codex" limits the CLIs, T0152_TIERS the tiers.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: the real CLIs complete a task in each sandbox tier they declare"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-250}

if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check); then
	not_ok "the agent CLIs pinned in tests/agents/ are installed"
	diag "tests/agents/install.sh --check failed: run tests/agents/install.sh and retry"
	test_done
fi
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	echo "1..0 # SKIP the kernel has no Landlock: $(cat "$T/stderr")"
	exit 0
fi

# whether this host gives TIER (else a TAP skip with the reason)
tier_ok()
{
	case $1 in
	landlock) return 0 ;;
	bwrap) command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true >/dev/null 2>&1 ;;
	container) [ "$(id -u)" -eq 0 ] && { command -v crun || command -v runc; } >/dev/null 2>&1 ;;
	*) return 1 ;;
	esac
}

# The reply that makes CLI write hello.txt (relative: the task's tree is its
# working directory), then say it is done.
write_script()
{
	case $1 in
	claude) call='{"name": "Bash", "id": "toolu_t_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}' ;;
	codex) call='{"name": "apply_patch", "custom": true, "id": "call_t_1", "input": "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"}' ;;
	gemini) call='{"name": "run_shell_command", "id": "call_t_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}' ;;
	qwen) call='{"name": "run_shell_command", "id": "call_t_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}' ;;
	opencode) call='{"name": "bash", "id": "call_t_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}' ;;
	pi) call='{"name": "bash", "id": "call_t_1", "arguments": {"command": "echo hi > hello.txt"}}' ;;
	esac
	printf '{"side": {"text": "Title"}, "responses": [{"tool_calls": [%s]}, {"text": "Created hello.txt."}]}\n' "$call"
}

n=0
for spec in "claude ANTHROPIC_API_KEY -" "codex OPENAI_API_KEY /v1" "gemini GEMINI_API_KEY -" \
	"qwen OPENAI_API_KEY /v1" "opencode OPENAI_API_KEY /v1 fake-model" "pi OPENAI_API_KEY /v1"; do
	# shellcheck disable=SC2086 # the spec is words
	set -- $spec
	cli=$1 key=$2 suffix=$3 model=${4:-}
	[ "$suffix" = - ] && suffix=
	case " ${T0152_CLIS:-$cli} " in
	*" $cli "*) ;;
	*) continue ;;
	esac
	run "$BERNSTEIN" profiles hash "$cli" --json
	tiers=$(python3 -c "
import json,sys
o = json.load(open('$T/stdout'))
b = o.get('bytes') or o.get('canonical') or ''
p = b if isinstance(b, dict) else (json.loads(b) if b else o)
print(' '.join(((p.get('runtime') or {}).get('sandbox') or {}).get('tiers') or []))" 2>/dev/null)
	check "$cli: its profile declares the tiers it works in" test -n "$tiers"
	for tier in $tiers; do
		case " ${T0152_TIERS:-$tier} " in
		*" $tier "*) ;;
		*) continue ;;
		esac
		if ! tier_ok "$tier"; then
			skip "$cli in $tier" "this host does not provide the $tier tier (see t0149)"
			continue
		fi
		n=$((n + 1))
		W=$T/w$n
		mkdir -p "$W"
		git -C "$W" init -q -b main . >/dev/null 2>&1
		printf '.bernstein/\n' >"$W/.gitignore"
		printf 'adapter: %s\nparallel: 1\ntimeout: 200\nretry_backoff: 0\nsandbox: %s\n' \
			"$cli" "$tier" >"$W/bernstein.yaml"
		{
			printf 'name: e2e\ntasks:\n  - title: hello\n'
			printf '    sampling: {base_url: "http://127.0.0.1:@PORT@%s", api_key_env: %s}\n' \
				"$suffix" "$key"
			[ -n "$model" ] && printf '    model: %s\n' "$model"
			printf '    prompt: create hello.txt containing hi\n'
		} >"$W/plan.yaml"
		write_script "$cli" >"$T/write.json"
		fake_start "$T/write.json"
		sed -i "s/@PORT@/$FAKE_PORT/" "$W/plan.yaml"
		git -C "$W" add -A >/dev/null 2>&1
		git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1
		run sh -c "cd '$W' && exec env -i PATH='$E2E_BIN:/usr/bin:/bin' HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC $key=e2e-dummy-key BERNSTEIN_AUDIT_KEY_PATH='$T/audit.key' '$BERNSTEIN' run plan.yaml"
		if [ "$RC" -eq 0 ]; then ok "$cli in $tier: bernstein run exits 0"; else
			not_ok "$cli in $tier: bernstein run exits 0 (got $RC)"
			_diag_file stdout "$T/stdout"
			for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file agent.log "$f"; done
		fi
		if grep -qx hi "$W/hello.txt" 2>/dev/null; then ok "$cli in $tier: its file is merged"; else
			not_ok "$cli in $tier: its file is merged"
			for f in "$W"/.bernstein/runs/*/*/1/events.jsonl; do _diag_file events "$f"; done
		fi
		fake_stop
	done
done
test_done
