# End to end through the pseudo-terminal (issue #26): a pinned CLI run as its
# interactive TUI by a *_tui profile, in a `bernstein run` against
# tests/helpers/fake-llm.py. Source after tests/integration/lib.sh and
# test_begin, then call
#
#   pty_e2e CLI PROFILE KEY_ENV TOOL_CALL [SANDBOX]
#
# SANDBOX is the tier (bernstein.yaml's sandbox:, default none).
#
#   pty_e2e_container CLI PROFILE KEY_ENV TOOL_CALL
#
# does the same in the container tier (skipped where `bernstein doctor` says
# it cannot run), then checks the bundle asked for a terminal and that no
# process of the task and no container in the runtime's state is left.
# TOOL_CALL is the JSON of the fake model's tool call that makes the CLI's
# shell tool write hello.txt. It checks: the run exits 0, hello.txt (hi) is
# merged, the CLI ran without -p with its prompt typed (prompt_via pty), the
# events read the screen back (ready < working < done, the model's message,
# one success result, no escape sequence), the server got the typed prompt,
# and the HOME given to bernstein is untouched.
. "$SRCDIR/tests/data/runner/runner-lib.sh"

pty_e2e()
{
	_cli=$1 _profile=$2 _key=$3 _call=$4 _sandbox=${5:-none}
	require_agents

	W=$T/work
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'adapter: %s\nparallel: 1\ntimeout: 120\nmax_retries: 0\nsandbox: %s\n' "$_profile" "$_sandbox" \
		>"$W/bernstein.yaml"
	printf '%s\n' '{"side": {"text": "Title"},' ' "responses": [' "  {\"tool_calls\": [$_call]}," \
		'  {"text": "Created hello.txt for you."}],' ' "default": {"text": "Nothing more."}}' >"$T/script.json"
	fake_start "$T/script.json"
	printf '%s\n' "name: pty$_cli" "tasks:" "  - title: hello" \
		"    sampling: {base_url: \"http://127.0.0.1:$FAKE_PORT\", api_key_env: $_key}" \
		"    prompt: create hello.txt containing hi" >"$W/plan.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=e2e -c user.email=e2e@example.invalid commit -q -m base >/dev/null 2>&1

	(cd "$W" && exec env -i PATH="$E2E_BIN:/usr/bin:/bin" HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
		"$_key=e2e-dummy-key" BERNSTEIN_AUDIT_KEY_PATH="$T/audit.key" \
		timeout 300 "$BERNSTEIN" run plan.yaml) </dev/null >"$T/run.out" 2>"$T/run.err"
	RC=$?
	check "bernstein run exits 0" test "$RC" -eq 0
	[ "$RC" -eq 0 ] || { _diag_file stderr "$T/run.err"; _diag_file stdout "$T/run.out"; }
	check "merged: hello.txt on main holds hi" sh -c "git -C '$W' show main:hello.txt | grep -qx hi"
	SD=$(ls -d "$W"/.bernstein/runs/*/hello-*/1 2>/dev/null | head -n 1)
	check "the task's session directory exists" test -n "$SD" -a -d "$SD"
	check "$_cli ran interactively: no -p on its argv, the prompt typed (prompt_via pty)" python3 -c "
import json, sys
p = json.load(open(sys.argv[1] + '/plan.json'))
assert '-p' not in p['argv'] and '--print' not in p['argv'], p['argv']
assert p['argv'][0].endswith('/' + sys.argv[2]), p['argv']
assert p['prompt']['via'] == 'pty', p['prompt']
assert 'TERM' in p['env'], p['env']
" "$SD" "$_cli"
	check "events: ready, working, done read from the screen; $_cli's message; a success result" python3 -c "
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1] + '/events.jsonl')]
st = [e['payload']['status'] for e in evs if e['kind'] == 'signal' and e.get('type') == 'status']
assert st[:1] == ['ready'] or 'ready' in st, st
assert st.index('ready') < st.index('working') < st.index('done'), st
txt = '\n'.join(e['text'] for e in evs if e['kind'] == 'text')
assert 'Created hello.txt for you.' in txt, txt
assert 'create hello.txt containing hi' not in txt, txt
res = [e for e in evs if e['kind'] == 'result']
assert len(res) == 1 and res[0]['status'] == 'success', res
for e in evs:
    assert '\x1b' not in json.dumps(e, ensure_ascii=False), e
" "$SD"
	check "the server got the typed prompt" python3 -c "
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert any('create hello.txt containing hi' in json.dumps(r) for r in reqs), len(reqs)
" "$T/requests.jsonl"
	check "the HOME given to bernstein is untouched" test -z "$(ls -A "$T/home" 2>/dev/null)"
	fake_stop
}

pty_e2e_container()
{
	require_landlock
	run "$BERNSTEIN" doctor --json
	if ! python3 -c "
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))['sandbox_tiers']['container']['available'] else 1)" "$T/stdout"; then
		echo "1..0 # SKIP the container tier cannot run here"
		exit 0
	fi
	_runtime=$(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))['sandbox_tiers']['container']['runtime'])" "$T/stdout")
	pty_e2e "$1" "$2" "$3" "$4" container
	check "it ran in the container tier, with a terminal: the bundle asked for one" python3 -c "
import glob, json, sys
cs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + '/.bernstein/runs/*/hello-*/1/oci-*/config.json')]
assert cs and all(c['process']['terminal'] for c in cs), cs
" "$W"
	check "no process of the task is left (runtime, proxy, the container's init and $1)" pty_e2e_none_left
	check "no container is left in the runtime's state" sh -c "
for s in '$W'/.bernstein/runs/*/hello-*/1/oci-*/state; do
	[ -d \"\$s\" ] || continue
	[ -z \"\$('$_runtime' --root \"\$s\" list -q 2>/dev/null)\" ] || exit 1
done"
}

# No process whose argv names the repository (the runtime, the proxy, the
# shim that is the container's init and the agent); the glob is expanded
# before grep is forked, so grep never lists itself.
pty_e2e_none_left()
{
	set -- /proc/[0-9]*/cmdline
	[ -z "$(grep -lsF -e "$W/" "$@")" ]
}
