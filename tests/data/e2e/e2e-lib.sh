# End-to-end tests of `bernstein spawn` with the real agent CLIs pinned in
# tests/agents/ against tests/helpers/fake-llm.py on 127.0.0.1
# (tests/integration/t*-e2e-*.sh). Source after tests/integration/lib.sh and
# test_begin, then call
#
#   e2e_run CLI KEY_ENV URL_SUFFIX [spawn options...]
#
# which runs, in a scratch git repository $T/work with HOME=$T/home:
#   1. spawn CLI --set base_url=http://127.0.0.1:PORT<URL_SUFFIX> --set
#      api_key_env=KEY_ENV "create hello.txt containing hi", the server scripted
#      by tests/data/e2e/<CLI>.write.json (the CLI's file-writing tool, then text):
#      hello.txt holds "hi", the outcome is completed, the agent's session id is
#      captured and events.jsonl in the session directory starts it;
#   2. spawn --resume <that id>: the same session continues (same id, and the
#      request the server sees carries the first prompt and the tool result);
#   3. the server answers HTTP 400: the outcome is failed and bernstein exits 1,
#      whatever the agent's own exit code.
# The agents are not installed here: when tests/agents/install.sh --check fails
# the test fails with a message saying how to install them (never a skip).

. "$SRCDIR/tests/data/runner/runner-lib.sh"
E2E_DATA="$SRCDIR/tests/data/e2e"
# A loaded 2-core machine: node CLIs start slowly and claude retries with backoff.
# shellcheck disable=SC2034 # read by run() in tests/integration/lib.sh
TEST_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-200}

# One TAP line: the Python expression $2 holds over the last spawn (echeck.py).
echeck()
{
	if "$PY" "$E2E_DATA/echeck.py" "$T" "$2" >"$T/echeck.out" 2>&1; then
		ok "$1"
	else
		not_ok "$1"
		sed 's/^/# /' "$T/echeck.out" | head -n 20
		_diag_file stderr "$T/stderr"
	fi
}

# A field of the last spawn's outcome event (empty when absent).
outcome_field()
{
	"$PY" "$E2E_DATA/echeck.py" "$T" "print(outcome.get('$1') or '') is None" 2>/dev/null |
		head -n 1
}

e2e_spawn()
{
	run PATH="$E2E_BIN:/usr/bin:/bin" "$E2E_KEY=e2e-dummy-key" "$BERNSTEIN" spawn \
		"$E2E_CLI" --json --set "base_url=http://127.0.0.1:$FAKE_PORT$E2E_SUFFIX" \
		--set "api_key_env=$E2E_KEY" "$@"
}

e2e_run()
{
	E2E_CLI=$1
	E2E_KEY=$2
	E2E_SUFFIX=$3
	shift 3
	if ! E2E_BIN=$(sh "$SRCDIR/tests/agents/install.sh" --check); then
		not_ok "the agent CLIs pinned in tests/agents/ are installed"
		diag "tests/agents/install.sh --check failed: the real CLIs are not installed in"
		diag "\${BERNSTEIN_AGENTS_CACHE:-\$HOME/.cache/bernstein/agents}; run"
		diag "tests/agents/install.sh (needs node, npm and the npm registry) and retry"
		test_done
	fi
	[ -x "$E2E_BIN/$E2E_CLI" ] || {
		not_ok "$E2E_BIN/$E2E_CLI exists"
		test_done
	}

	run git init -q .
	run git -c user.name=e2e -c user.email=e2e@example.invalid commit -q --allow-empty -m init
	check "scratch git repository" test "$RC" -eq 0

	# 1. write a file
	sed "s#@WORK@#$T/work#g" "$E2E_DATA/$E2E_CLI.write.json" >"$T/write.json"
	fake_start "$T/write.json"
	e2e_spawn "$@" "create hello.txt containing hi"
	if [ "$RC" -eq 0 ]; then ok "$E2E_CLI: spawn exits 0"; else
		not_ok "$E2E_CLI: spawn exits 0 (got $RC)"
		_diag_file stderr "$T/stderr"
	fi
	check "$E2E_CLI: hello.txt holds hi" grep -qx hi "$T/work/hello.txt"
	echeck "$E2E_CLI: outcome completed" "outcome.get('outcome') == 'completed'"
	echeck "$E2E_CLI: the agent called its write tool" \
		"any(e.get('kind') == 'tool_call' for e in events)"
	echeck "$E2E_CLI: the server saw the prompt and the tool result" \
		"len(convo) >= 2 and 'create hello.txt containing hi' in text(convo[-1])"
	echeck "$E2E_CLI: the session id is captured" \
		"outcome.get('session_id') and kind('session_started') and kind('session_started')[0].get('session_id') == outcome['session_id']"
	echeck "$E2E_CLI: events.jsonl in the session directory records it" \
		"any(json.loads(l).get('session_id') == outcome['session_id'] for l in open(os.path.join(outcome['session_dir'], 'events.jsonl')) if l.strip())"
	echeck "$E2E_CLI: the agent's HOME is inside the session directory" \
		"outcome.get('state_dir', '').startswith(outcome['session_dir'] + '/') and os.path.isdir(outcome['state_dir'])"
	sid=$(outcome_field session_id)

	# 2. resume it
	if [ -z "$sid" ]; then
		not_ok "$E2E_CLI: resume (no session id to resume)"
	else
		fake_start "$E2E_DATA/resume.json"
		e2e_spawn "$@" --resume "$sid" "now say bye"
		if [ "$RC" -eq 0 ]; then ok "$E2E_CLI: spawn --resume exits 0"; else
			not_ok "$E2E_CLI: spawn --resume exits 0 (got $RC)"
			_diag_file stderr "$T/stderr"
		fi
		echeck "$E2E_CLI: resumed outcome completed" "outcome.get('outcome') == 'completed'"
		echeck "$E2E_CLI: resumed the same session" "outcome.get('session_id') == '$sid'"
		echeck "$E2E_CLI: the resumed request carries the prior conversation" \
			"len(convo) >= 1 and 'create hello.txt containing hi' in text(convo[0]) and 'now say bye' in text(convo[0]) and 'hello.txt' in text(convo[0]).split('create hello.txt containing hi', 1)[1]"
	fi

	# 3. the API answers 400
	fake_start "$E2E_DATA/error400.json"
	e2e_spawn "$@" "create bye.txt containing bye"
	if [ "$RC" -eq 1 ]; then ok "$E2E_CLI: an HTTP 400 makes spawn exit 1"; else
		not_ok "$E2E_CLI: an HTTP 400 makes spawn exit 1 (got $RC)"
		_diag_file stderr "$T/stderr"
	fi
	echeck "$E2E_CLI: an HTTP 400 is outcome failed" \
		"outcome.get('outcome') == 'failed' and len(reqs) >= 1"
	check "$E2E_CLI: nothing written after the error" test ! -e "$T/work/bye.txt"
	fake_stop
	# The agents got private HOMEs in their session directories: the HOME
	# bernstein itself ran with stays empty.
	check "$E2E_CLI: the HOME given to bernstein is untouched" test -z "$(ls -A "$T/home")"
}
