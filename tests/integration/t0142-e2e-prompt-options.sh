#!/bin/sh
# Issue #14, class 3: a prompt is never parsed as an option. With the real
# agent CLIs pinned in tests/agents/ against tests/helpers/fake-llm.py (one
# server per CLI), `bernstein spawn CLI -- PROMPT` for each of the prompts
# -h, --settings=x, - and -- must reach the "model" as the user
# message's text: the spawn completes, the server sees the prompt as a text
# part of the last user message, the agent prints no version or usage text,
# and no settings file is read (./x would run a hook that touches a file).
# Then the attack as found: `bernstein spawn claude -- '--settings=evil.json'`
# made Claude Code run evil.json's SessionStart hook with no model involved.
# On the old argv (`claude ... -p PROMPT`, `codex exec ... PROMPT`,
# `gemini ... -p PROMPT`, ...) every CLI printed its version or help instead.
# T0142_CLIS="claude codex" limits the CLIs (when working on one);
# T0142_PROMPTS="--version -h" replaces the prompts. The suite's four are one
# of each kind a parser treats differently: a short option, a long option
# with a value (which also names a settings file), the stdin marker and the
# end of options; --version (a long option like --settings) is left to
# T0142_PROMPTS, since every spawn of a real CLI costs seconds.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: a prompt that looks like an option reaches the model as text"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"
# One server serves all the spawns of a CLI: give it time for five slow starts.
# shellcheck disable=SC2034 # read by fake_start in tests/data/runner/runner-lib.sh
FAKE_MAX_SECONDS=1500

require_agents

run git init -q .
run git -c user.name=e2e -c user.email=e2e@example.invalid commit -q --allow-empty -m init
check "scratch git repository" test "$RC" -eq 0

# Settings files an agent could be made to read: each would run a hook that
# leaves a mark outside the worktree (Claude Code settings; the hook runs at
# session start, before any model call).
hook_settings()
{
	printf '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch %s"}]}], "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch %s"}]}]}}\n' \
		"$1" "$1"
}
hook_settings "$T/pwned-x" >"$T/work/x"
hook_settings "$T/pwned-evil" >"$T/work/evil.json"
printf '%s\n' '{"side": {"text": "Title"}, "default": {"text": "PROMPT-REACHED"}}' \
	>"$T/reply.json"

# The number of conversation requests the server has seen so far.
nconvo()
{
	"$PY" "$E2E_DATA/echeck.py" "$T" "print(len(convo)) is None" 2>/dev/null | head -n 1
}

# spawn_prompt CLI PROMPT [spawn options...]: one spawn, then its checks.
spawn_prompt()
{
	_cli=$1
	CHECK_PROMPT=$2
	export CHECK_PROMPT
	shift 2
	_n0=$(nconvo)
	: "${_n0:=0}"
	e2e_spawn "$@" -- "$CHECK_PROMPT"
	if [ "$RC" -eq 0 ]; then ok "$_cli '$CHECK_PROMPT': spawn exits 0"; else
		not_ok "$_cli '$CHECK_PROMPT': spawn exits 0 (got $RC)"
		_diag_file stdout "$T/stdout"
		_diag_file stderr "$T/stderr"
	fi
	echeck "$_cli '$CHECK_PROMPT': the model got it as the user message's text" \
		"any(t.strip() == os.environ['CHECK_PROMPT'] for r in convo[$_n0:] for t in user_texts(r))"
	echeck "$_cli '$CHECK_PROMPT': the model's reply came back, no version or usage text" \
		"outcome.get('outcome') == 'completed' and 'PROMPT-REACHED' in ''.join(e.get('text') or '' for e in events if e.get('kind') == 'text') and not any(e.get('kind') == 'unknown' and __import__('re').search(r'(?i)usage|options:|\\d+\\.\\d+\\.\\d+', e.get('raw') or '') for e in events)"
}

# cli KEY_ENV URL_SUFFIX [spawn options...]
for spec in "claude ANTHROPIC_API_KEY -" "codex OPENAI_API_KEY /v1" "gemini GEMINI_API_KEY -" \
	"qwen OPENAI_API_KEY /v1" "opencode OPENAI_API_KEY /v1 -m fake-model" \
	"pi OPENAI_API_KEY /v1"; do
	# shellcheck disable=SC2086 # the spec is words
	set -- $spec
	E2E_CLI=$1
	# shellcheck disable=SC2034 # read by e2e_spawn (tests/data/e2e/e2e-lib.sh)
	E2E_KEY=$2
	E2E_SUFFIX=$3
	[ "$E2E_SUFFIX" = - ] && E2E_SUFFIX=
	shift 3
	case " ${T0142_CLIS:-$E2E_CLI} " in
	*" $E2E_CLI "*) ;;
	*) continue ;;
	esac
	[ -x "$E2E_BIN/$E2E_CLI" ] || {
		not_ok "$E2E_BIN/$E2E_CLI exists"
		continue
	}
	fake_start "$T/reply.json"
	for p in ${T0142_PROMPTS:--h --settings=x - --}; do
		spawn_prompt "$E2E_CLI" "$p" "$@"
	done
	if [ "$E2E_CLI" = claude ]; then
		# the attack as reported
		spawn_prompt claude --settings=evil.json
		check "claude: evil.json's hook did not run" test ! -e "$T/pwned-evil"
	fi
	fake_stop
	check "$E2E_CLI: no settings file was read (./x's hook did not run)" test ! -e "$T/pwned-x"
done
test_done
