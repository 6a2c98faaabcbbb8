#!/bin/sh
# The six real agent CLIs pinned in tests/agents/ complete a task in every
# sandbox tier their profile declares (runtime.sandbox.tiers), against
# tests/helpers/fake-llm.py: `bernstein run` of one task that writes a file
# with the CLI's own tool, in its clone, confined; the file is merged. The
# declarations in catalog/profiles/ are what this test verifies.
# T0152_CLIS="claude codex" limits the CLIs, T0152_TIERS the tiers,
# T0152_PASSES="root nobody" the users.
#
# Then the same as uid 65534 (issue #15: every tier also unprivileged), for
# codex only by default (T0152_NOBODY_CLIS="claude codex" adds claude; CI
# time: claude passed there too, 2026-12-02): root makes a private
# mount namespace in which the pinned install (under root's 0700 HOME) is
# bound beneath a directory of that user's, and the run starts there with
# setpriv. Nothing in bernstein is told it is a test: bwrap without root's
# capabilities, the container rootless (runc or crun in a user namespace),
# no cgroup delegated. A tier `bernstein doctor` says this user cannot have
# must be refused by the run with that reason, never run weaker.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: the real CLIs complete a task in each sandbox tier they declare"
. "$SRCDIR/tests/data/runner/runner-lib.sh"
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-250}

require_agents
require_landlock

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

# one_run CLI KEY SUFFIX MODEL TIER [nobody]: a repository with a plan of
# one task for CLI in TIER against the fake server; bernstein run, as root
# or (nobody) as uid 65534 in the mount namespace described above.
n=0
one_run()
{
	cli=$1 key=$2 suffix=$3 model=$4 tier=$5 who=${6:-}
	n=$((n + 1))
	if [ -n "$who" ]; then
		D=$T/nobody$n
		W=$D/w
		H=$D/home
		BIN=$D/agents/node_modules/.bin
	else
		D=$T
		W=$T/w$n
		H=$T/home
		BIN=$E2E_BIN
	fi
	label="$cli in $tier${who:+ as uid 65534}"
	mkdir -p "$W" "$H"
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
	ENV="PATH=$BIN:/usr/bin:/bin HOME=$H LC_ALL=C.UTF-8 TZ=UTC $key=e2e-dummy-key BERNSTEIN_AUDIT_KEY_PATH=$D/audit.key"
	if [ -z "$who" ]; then
		run sh -c "cd '$W' && exec env -i $ENV '$BERNSTEIN' run plan.yaml"
	else
		mkdir -p "$D/agents"
		chown -R 65534:65534 "$D"
		AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
		# what this user's doctor says of the tier: a tier it cannot have
		# must be refused with the same reason
		run unshare -m --propagation private sh -c "mount --bind '$AGENTS' '$D/agents' && cd '$W' && exec $AS env -i $ENV '$BERNSTEIN' doctor --json"
		avail=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
t = [x for x in d["sandbox"] if x["name"] == sys.argv[2]][0]
print("ok" if t["ok"] else "no: %s" % t["detail"])' "$T/stdout" "$tier" 2>&1)
		check "$label: doctor reports the tier" test -n "$avail"
		run unshare -m --propagation private sh -c "mount --bind '$AGENTS' '$D/agents' && cd '$W' && exec $AS env -i $ENV '$BERNSTEIN' run plan.yaml"
		if [ "$avail" != ok ]; then
			diag "$label: doctor: $avail"
			check "$label: refused (exit $RC), not run in a weaker tier" test "$RC" -ne 0
			check "$label: the refusal gives doctor's reason" \
				grep -qF "${avail#no: }" "$T/stdout" "$T/stderr"
			check "$label: nothing was written" test ! -e "$W/hello.txt"
			fake_stop
			return
		fi
	fi
	if [ "$RC" -eq 0 ]; then ok "$label: bernstein run exits 0"; else
		not_ok "$label: bernstein run exits 0 (got $RC)"
		_diag_file stdout "$T/stdout"
		_diag_file stderr "$T/stderr"
		for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file agent.log "$f"; done
	fi
	if grep -qx hi "$W/hello.txt" 2>/dev/null; then ok "$label: its file is merged"; else
		not_ok "$label: its file is merged"
		for f in "$W"/.bernstein/runs/*/*/1/events.jsonl; do _diag_file events "$f"; done
	fi
	if [ -n "$who" ]; then
		check "$label: the merged file is that user's" test "$(stat -c %u "$W/hello.txt")" = 65534
		# shellcheck disable=SC2086 # AS, ENV: words without blanks
		run $AS env -i $ENV "$BERNSTEIN" -C "$W" status --json
		check "$label: status shows the task ran in $tier" python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(d["tasks"][0]["sandbox"] != sys.argv[2])' "$T/stdout" "$tier"
	fi
	fake_stop
}

# CLI KEY SUFFIX [MODEL]: the key its endpoint wants and the path after the port
SPECS="claude:ANTHROPIC_API_KEY:- codex:OPENAI_API_KEY:/v1 gemini:GEMINI_API_KEY:- \
qwen:OPENAI_API_KEY:/v1 opencode:OPENAI_API_KEY:/v1:fake-model pi:OPENAI_API_KEY:/v1"
for pass in ${T0152_PASSES:-root nobody}; do
	if [ "$pass" = nobody ]; then
		if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1 ||
			! command -v unshare >/dev/null 2>&1; then
			skip "the CLIs as uid 65534" "needs root, setpriv(1) and unshare(1) to become that user"
			continue
		fi
		if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$BERNSTEIN"; then
			skip "the CLIs as uid 65534" "uid 65534 cannot run $BERNSTEIN"
			continue
		fi
		# the install's directory (BIN is its node_modules/.bin), bound
		# beneath each run's directory; the path to it must be searchable
		AGENTS=$(cd "$E2E_BIN/../.." && pwd)
		chmod 0711 "$T"
	fi
	for spec in $SPECS; do
		IFS=: read -r cli key suffix model <<EOT
$spec
EOT
		[ "$suffix" = - ] && suffix=
		if [ "$pass" = nobody ]; then
			case " ${T0152_NOBODY_CLIS:-codex} " in
			*" $cli "*) ;;
			*) continue ;;
			esac
		fi
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
			if [ "$pass" = root ]; then
				if ! tier_ok "$tier"; then
					skip "$cli in $tier" "this host does not provide the $tier tier (see t0149)"
					continue
				fi
				one_run "$cli" "$key" "$suffix" "$model" "$tier"
			else
				one_run "$cli" "$key" "$suffix" "$model" "$tier" nobody
			fi
		done
	done
done
test_done
