#!/bin/sh
# The mock adapter end to end: `bernstein mock-agent` on its own (help, usage
# errors, a prompt on stdin), then through `bernstein spawn mock -C REPO`:
# files written in the worktree, events.jsonl in the runner dialect, the
# outcomes and exit codes (completed, failed, rate_limited, timed_out, exit 0
# without completion), confinement refusals (lexical and by symlink), the
# announced session id (deterministic, --session-id, `session`), resume with
# the announced id in the same private HOME, an unknown session, the
# once-marker across attempts, git commits, and a long prompt on stdin.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0101 the mock adapter"

R=$T/work/repo
O=$T/work/outside
# the sanitizer options reach the children (the agent is bernstein itself)
PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS
mkdir -p "$R" "$O"
if ! git -C "$R" init -q . >/dev/null 2>&1 ||
	! git -C "$R" -c user.name=t -c user.email=t@t commit -q --allow-empty -m init \
		>/dev/null 2>&1; then
	skip "the mock adapter" "git cannot create a repository here"
	test_done
fi

# the newest session directory of the repository
last_session()
{
	# shellcheck disable=SC2012 # the names are ours: no blanks or newlines
	ls -dt "$R"/.bernstein/runs/*/* 2>/dev/null | head -n 1
}

# spawn mock in the repository with the prompt $1 (more options before it)
spawn_mock()
{
	_p=$1
	shift
	expect_exit "$SPAWN_RC" "$PASS" "$BERNSTEIN" spawn -C "$R" "$@" mock "$_p"
}

nl='
'

# ---- the command on its own ----
expect_exit 0 "$BERNSTEIN" mock-agent --help
expect_stdout_contains "once MARKER INSTR..." "the help lists the grammar"
expect_stdout_contains "rate-limit [SECONDS]" "the help lists rate-limit"
expect_exit 0 "$BERNSTEIN" --help
check "mock-agent is hidden from the command list" sh -c "! grep -q mock-agent '$T/stdout'"
expect_exit 2 "$BERNSTEIN" mock-agent
expect_stderr_contains "missing the prompt" "no prompt: a usage error"
expect_exit 2 "$BERNSTEIN" mock-agent --resume
expect_stderr_contains "option '--resume' requires a value"
expect_exit 2 "$BERNSTEIN" mock-agent "say a" extra
expect_stderr_contains "unexpected argument 'extra' after the prompt"
# a prompt that starts with '-' is a prompt, not an option
expect_exit 0 "$BERNSTEIN" mock-agent "-- prose${nl}say dash"
expect_stdout_contains '{"type":"progress","message":"dash"}' "a prompt starting with '-' runs"
printf 'Prose first.\n  write stdin.txt from stdin\n' >"$T/prompt.txt"
run sh -c "cd '$O' && '$BERNSTEIN' mock-agent - <'$T/prompt.txt'"
check "'-': the prompt comes from stdin" test "$RC" -eq 0 -a "$(cat "$O/stdin.txt")" = "from stdin"
check "stdout is one JSON object a line, start first, completion last" python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["type"] for e in ev] == ["start", "tool_call", "tool_result", "completion"], ev
assert ev[0]["model"] == "mock" and ev[3]["status"] == "done"
' "$T/stdout"
run sh -c "cd '$O' && '$BERNSTEIN' mock-agent 'say x${nl}sleep forever'"
check "a bad instruction: exit 2, start then a syntax error" python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["type"] for e in ev] == ["start", "error"], ev
assert ev[1]["kind"] == "syntax" and ev[1]["message"].startswith("prompt:2:7: sleep:"), ev
assert int(sys.argv[2]) == 2
' "$T/stdout" "$RC"

check "standalone: sessions are recorded under HOME/.mock/sessions" \
	test -d "$T/home/.mock/sessions"
rm -rf "$T/home/.mock"

# ---- adapters: valid, built in ----
expect_exit 0 "$BERNSTEIN" adapters show mock
expect_stdout_contains "binary:            (built-in)" "adapters show: built in"
check "adapters show: resume flag, always-on, stream-json" sh -c "
	grep -q '^resume: *flag' '$T/stdout' && grep -q '^dangerous mode: *always-on' '$T/stdout' &&
	grep -q '^event channel: *stream-json' '$T/stdout'"
expect_exit 0 "$BERNSTEIN" adapters check mock
check "adapters check: mock is built in, not missing" grep -q '^mock .*(built-in)' "$T/stdout"

# ---- a completed run ----
SPAWN_RC=0 spawn_mock "Please write the greeting.${nl}write hello/a.txt hi there${nl}say done"
expect_stdout_contains "outcome: completed" "outcome completed"
S=$(last_session)
check "the file is written in the worktree" test "$(cat "$R/hello/a.txt")" = "hi there"
check "events.jsonl: the runner dialect, session, tool pair, text, result" python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
kinds = [e["kind"] for e in ev if e["dialect"] == "runner"]
assert kinds == ["session_started", "tool_call", "tool_result", "text", "result"], kinds
r = [e for e in ev if e["dialect"] == "runner"]
assert r[0]["model"] == "mock"
assert r[1]["tool_name"] == "write_file" and r[1]["args"] == {"path": "hello/a.txt"}
assert r[2]["is_error"] is False and r[3]["text"] == "done" and r[4]["is_error"] is False
' "$S/events.jsonl"
check "session.json: completed, the worktree changed, agent exit 0" sh -c "
	grep -q '\"outcome\": \"completed\"' '$S/session.json' &&
	grep -q '\"worktree_changed\": true' '$S/session.json' &&
	grep -q '\"agent_exit_code\": 0' '$S/session.json'"
SID1=$(sed -n 's/^session: //p' "$T/stdout")
check "the session id is a UUID" sh -c "echo '$SID1' | grep -qE '^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'"
check "the session is recorded in the private HOME" test -f "$S/home/.mock/sessions/$SID1"
check "the user's HOME is untouched" sh -c "test -z \"\$(ls -A '$T/home')\""

# the same prompt announces the same session id
SPAWN_RC=0 spawn_mock "Please write the greeting.${nl}write hello/a.txt hi there${nl}say done"
check "the default session id is a function of the prompt" \
	test "$(sed -n 's/^session: //p' "$T/stdout")" = "$SID1"

# ---- outcomes ----
SPAWN_RC=1 spawn_mock "write f.txt before${nl}fail it broke${nl}write g.txt after"
expect_stdout_contains "outcome: failed" "fail: outcome failed"
expect_stdout_contains "error: it broke" "fail: the message is shown"
check "fail: nothing after it runs" test -f "$R/f.txt" -a ! -e "$R/g.txt"
check "fail: the agent exited 1" grep -q '"agent_exit_code": 1' "$(last_session)/session.json"

SPAWN_RC=10 spawn_mock "rate-limit 7"
expect_stdout_contains "outcome: rate_limited" "rate-limit: outcome rate_limited"
S=$(last_session)
check "events.jsonl: error kind rate_limit, HTTP 429, then rate_limited with the hint" python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
err = [e for e in ev if e["kind"] == "error"][0]
assert err["error_kind"] == "rate_limit" and err["http_status"] == 429, err
rl = [e for e in ev if e["kind"] == "rate_limited"]
assert rl and "7" in json.dumps(rl[0]), rl
' "$S/events.jsonl"

SPAWN_RC=11 spawn_mock "say waiting${nl}hang" --timeout 1
expect_stdout_contains "outcome: timed_out" "hang with --timeout 1: timed_out"

SPAWN_RC=1 spawn_mock "say bye${nl}exit 0"
expect_stdout_contains "outcome: failed" "exit 0 without a completion event: failed"
SPAWN_RC=1 spawn_mock "exit 3"
check "exit N: the agent's exit code" grep -q '"agent_exit_code": 3' "$(last_session)/session.json"

# ---- confinement ----
SPAWN_RC=1 spawn_mock "write ../outside/escape.txt pwned"
expect_stdout_contains "outcome: failed" "a path above the worktree: failed"
S=$(last_session)
check "it was refused before anything ran: agent exit 2, kind path_refused" sh -c "
	grep -q '\"agent_exit_code\": 2' '$S/session.json' &&
	grep -q '\"error_kind\":\"path_refused\"' '$S/events.jsonl' &&
	grep -q 'escapes the run workdir' '$S/events.jsonl'"
check "nothing was written outside" test ! -e "$O/escape.txt"
SPAWN_RC=1 spawn_mock "write /tmp/abs.txt pwned"
check "an absolute path: refused" grep -q 'absolute paths are not allowed' \
	"$(last_session)/events.jsonl"
ln -s "$O" "$R/link_out"
echo safe >"$O/victim.txt"
SPAWN_RC=1 spawn_mock "write link_out/x.txt pwned"
check "a symlink out of the worktree: refused (exit 2, path_refused)" sh -c "
	grep -q '\"agent_exit_code\": 2' '$(last_session)/session.json' &&
	grep -q '\"error_kind\":\"path_refused\"' '$(last_session)/events.jsonl'"
SPAWN_RC=1 spawn_mock "delete link_out/victim.txt"
SPAWN_RC=1 spawn_mock "append link_out/victim.txt pwned"
check "nothing outside was created, changed or deleted" sh -c "
	test ! -e '$O/x.txt' && test \"\$(cat '$O/victim.txt')\" = safe"
rm -f "$R/link_out"

# ---- sessions and resume ----
SPAWN_RC=0 spawn_mock "session s-1${nl}write r.txt first"
expect_stdout_contains "session: s-1" "a session instruction names the session"
SPAWN_RC=0 spawn_mock "append r.txt second" --resume s-1
expect_stdout_contains "resumed session s-1" "resume: the text event says so"
expect_stdout_contains "outcome: completed" "resume: completed"
check "resume: the follow-up prompt ran" test "$(cat "$R/r.txt")" = "first${nl}second"
check "resume: the resumed session's HOME was reused" \
	grep -q '"state_reused": true' "$(last_session)/plan.json"
# resume with the announced default id
SPAWN_RC=0 spawn_mock "append r.txt third" --resume "$SID1"
expect_stdout_contains "resumed session $SID1" "resume of the announced (derived) id"
SPAWN_RC=1 spawn_mock "append r.txt never" --resume no-such-session
expect_stdout_contains "unknown session 'no-such-session'" "an unknown session: an error"
check "an unknown session: nothing ran" test "$(cat "$R/r.txt")" = "first${nl}second${nl}third"
# --session-id: a UUID derived from the conversation id (profile format uuid)
SPAWN_RC=0 spawn_mock "say hi" --session-id conv-1
expect_stdout_contains "session: 32b2c54a-a04d-5759-a20e-c59c0ba5deb7" \
	"--session-id conv-1: the derived UUID is announced"

# ---- once: fails the first attempt only ----
RETRY="session rl-1${nl}once ~/.rl rate-limit 0${nl}write retried.txt ok"
SPAWN_RC=10 spawn_mock "$RETRY"
check "once: the first attempt is rate limited" test ! -e "$R/retried.txt"
SPAWN_RC=0 spawn_mock "$RETRY" --resume rl-1
check "once: the second attempt (same HOME) goes through" \
	test "$(cat "$R/retried.txt")" = ok
H=$(sed -n 's/^  "state_dir": "\(.*\)",$/\1/p' "$(last_session)/session.json")
check "once: the marker is in the private HOME, not the worktree" \
	sh -c "test -n '$H' && test -f '$H/.rl' && test ! -e '$R/.rl'"
SPAWN_RC=1 spawn_mock "once .wt fail first"
SPAWN_RC=0 spawn_mock "once .wt fail first"
check "once: a worktree marker survives across sessions" test -f "$R/.wt"

# ---- commit ----
SPAWN_RC=0 spawn_mock "write c.txt committed${nl}commit add c.txt"
check "commit: by mock, with the message" \
	test "$(git -C "$R" log -1 --format='%an <%ae> %s')" = "mock <mock@localhost> add c.txt"
check "commit: .bernstein is never committed" \
	sh -c "test -z \"\$(git -C '$R' ls-files .bernstein)\""
check "commit: c.txt is in the commit" \
	sh -c "git -C '$R' show --name-only --format= HEAD | grep -qx c.txt"

# ---- a prompt too long for argv goes by stdin ----
{
	echo "write big.txt via stdin"
	head -c 200000 /dev/zero | tr '\000' x
	echo
} >"$R/big-prompt.txt"
expect_exit 0 "$PASS" "$BERNSTEIN" spawn -C "$R" --prompt-file "$R/big-prompt.txt" mock
expect_stdout_contains "outcome: completed" "a 200 KB prompt: completed"
check "the prompt went by stdin and was carried out" \
	test "$(cat "$R/big.txt")" = "via stdin"

test_done
