#!/bin/sh
# bernstein onboard record|derive|replay with a stand-in agent CLI
# (tests/data/onboard/onboard-agent, a strict sh script): recording writes a
# transcript that replays; nothing of the operator (a canary secret, a
# canary user name) reaches the files; the derivation is deterministic and
# agrees with an independent Python reference; every failure kind fails its
# step without skipping the others; an empty case list fails; edited flags
# fail; bad transcripts are refused with FILE:LINE:COL. docs/onboarding.md.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0110 onboard record, derive and replay"

if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
DATA=$SRCDIR/tests/data/onboard
# The agent lives in a directory named after the canary user: its resolved
# path must never reach a file.
BIN=$T/canaryuser/bin
mkdir -p "$BIN" "$T/tmp"
cp "$DATA/onboard-agent" "$BIN/onboard-agent"
chmod 0755 "$BIN/onboard-agent"
cp "$DATA/onboard_agent.yaml" "$T/work/onboard_agent.yaml"
AGENT_PATH="PATH=$BIN:/usr/bin:/bin"
CANARY_ENV="USER=canaryuser LOGNAME=canaryuser CANARY_SECRET=sk-canary-s3cr3t"
CANARY_ENV="$CANARY_ENV ONBOARD_API_KEY=sk-canary-passed-value TMPDIR=$T/tmp"
PROMPT="print a short greeting"

# One TAP line: the Python expression $3 holds for the JSON in file $2 (as d).
jcheck()
{
	if "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" >"$T/jcheck.out" 2>&1; then
		ok "$1"
	else
		not_ok "$1"
		diag "expression: $3"
		_diag_file json "$2"
		_diag_file error "$T/jcheck.out"
	fi
}

# run_onboard ARGS...: bernstein onboard ARGS with the agent on PATH and
# the canaries in the environment.
run_onboard()
{
	# shellcheck disable=SC2086 # CANARY_ENV is a list of words
	run "$AGENT_PATH" $CANARY_ENV "$BERNSTEIN" onboard "$@"
}

# ---- record ----------------------------------------------------------------

run_onboard record onboard_agent.yaml --smoke-prompt "$PROMPT" --smoke-model small \
	--golden-dir golden
check "record exits 0" test "$RC" -eq 0
expect_stdout_contains "smoke: passed"
expect_stdout_contains "recorded: golden/onboard_agent.yaml (3 steps)"
expect_stdout_contains "evidence: golden/onboard_agent.evidence.yaml"
check "the transcript and the evidence are written" \
	test -s "$T/work/golden/onboard_agent.yaml" -a -s "$T/work/golden/onboard_agent.evidence.yaml"
check "the scratch directories are removed" test -z "$(ls -A "$T/tmp")"

# nothing of the operator
for canary in canaryuser sk-canary-s3cr3t sk-canary-passed-value "$T" "model=" \
	"some diagnostics"; do
	if grep -rqF -e "$canary" "$T/work/golden"; then
		not_ok "'$canary' appears in no written file"
		grep -rnF -e "$canary" "$T/work/golden" | head -n 5 | sed 's/^/# /'
	else
		ok "'$canary' appears in no written file"
	fi
done
check "no canary in the report either" sh -c "! grep -qe canary -e s3cr3t '$T/stdout'"
check "the passed-through variable's NAME is evidence" \
	grep -qx '  - "ONBOARD_API_KEY"' "$T/work/golden/onboard_agent.evidence.yaml"
check "USER and LOGNAME are not" \
	sh -c "! grep -qe '\"USER\"' -e '\"LOGNAME\"' '$T/work/golden/onboard_agent.evidence.yaml'"
check "the evidence keeps the binary as declared, not its path" \
	grep -qx '  - "onboard-agent"' "$T/work/golden/onboard_agent.evidence.yaml"
check "the alias is resolved for the agent" \
	grep -qx '  - "onboard-small-1"' "$T/work/golden/onboard_agent.evidence.yaml"
check "the evidence says exit 0" grep -qx 'exit_code: 0' "$T/work/golden/onboard_agent.evidence.yaml"

# the shape: exactly four top-level keys, nine ctor_kwargs
check "exactly four top-level keys" sh -c "test \"\$(grep -E '^[a-z_]+:' '$T/work/golden/onboard_agent.yaml' | cut -d: -f1 | tr '\n' ' ')\" = 'name adapter_class ctor_kwargs steps '"
check "exactly the nine ctor_kwargs" sh -c "test \"\$(grep -E '^  [a-z_]+:' '$T/work/golden/onboard_agent.yaml' | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')\" = 'registry_name display_name binary subcommands model_flag prompt_flag prompt_positional extra_args env_passthrough '"
check "the stable adapter class" grep -qx \
	'adapter_class: "bernstein.adapters.capability_profile.RecordedProfileAdapter"' \
	"$T/work/golden/onboard_agent.yaml"

# the same inputs, recorded again: the same transcript, byte for byte
run_onboard record onboard_agent.yaml --smoke-prompt "$PROMPT" --smoke-model small \
	--golden-dir golden2
check "record again exits 0" test "$RC" -eq 0
expect_same_file "$T/work/golden/onboard_agent.yaml" "$T/work/golden2/onboard_agent.yaml" \
	"recording twice gives the same transcript"

# the committed golden transcript (tests/golden/onboard-agent.yaml): the same
# inputs here, on another machine, in another directory, give the same file
run_onboard record onboard_agent.yaml --smoke-prompt "$PROMPT" --smoke-model small \
	--golden-dir golden4 --name onboard-agent
check "record --name onboard-agent exits 0" test "$RC" -eq 0
expect_same_file "$SRCDIR/tests/golden/onboard-agent.yaml" "$T/work/golden4/onboard-agent.yaml" \
	"the recording equals the committed golden transcript"
run_onboard replay "$SRCDIR/tests/golden/onboard-agent.yaml"
check "the committed golden transcript replays (exit 0)" test "$RC" -eq 0

# --json and --name
run_onboard record onboard_agent.yaml --smoke-prompt "$PROMPT" --smoke-model small \
	--golden-dir golden3 --name agent-v2 --json
cp "$T/stdout" "$T/record.json"
jcheck "record --json: passed, smoke and three cases" "$T/record.json" \
	"d['passed'] and d['smoke']['status'] == 'passed' and len(d['cases']) == 3 and all(c['passed'] for c in d['cases']) and d['transcript'] == 'golden3/agent-v2.yaml'"
jcheck "record --json: the evidence's env names, not values" "$T/record.json" \
	"'ONBOARD_API_KEY' in d['smoke']['env_names'] and 'USER' not in d['smoke']['env_names'] and 'HOME' in d['smoke']['env_names']"
check "--name names the file and the transcript" grep -qx 'name: "agent-v2"' \
	"$T/work/golden3/agent-v2.yaml"

# ---- derive ------------------------------------------------------------------

run_onboard derive golden/onboard_agent.evidence.yaml --profile onboard_agent.yaml \
	--smoke-prompt "$PROMPT" --smoke-model small --json
check "derive exits 0" test "$RC" -eq 0
cp "$T/stdout" "$T/derive.json"
run_onboard derive golden/onboard_agent.evidence.yaml --profile onboard_agent.yaml \
	--smoke-prompt "$PROMPT" --smoke-model small --json
expect_same_file "$T/derive.json" "$T/stdout" "derive twice: the same three cases"
jcheck "derive: the cases are the transcript's steps" "$T/derive.json" \
	"[c['prompt'] for c in d['cases']] == [c['prompt'] for c in json.load(open('$T/record.json'))['cases']]"
# an independent implementation of the derivation (tests/data/onboard/heldout-ref.py)
cat >"$T/ref-in.json" <<EOF
{"argv": ["onboard-agent", "--model", "onboard-small-1", "--mode", "json", "-p", "$PROMPT"],
 "exit_code": 0,
 "invocation": {"registry_name": "onboard_agent", "display_name": "Onboard Agent",
   "binary": "onboard-agent", "subcommands": [], "model_flag": "--model",
   "prompt_flag": "-p", "prompt_positional": false, "extra_args": ["--mode", "json"],
   "env_passthrough": ["ONBOARD_API_KEY", "ONBOARD_AGENT_LOG"]},
 "smoke_prompt": "$PROMPT", "smoke_model": "onboard-small-1"}
EOF
"$PY" "$DATA/heldout-ref.py" <"$T/ref-in.json" >"$T/ref.json"
jcheck "derive agrees with the Python reference (seed, variants, prompts)" "$T/derive.json" \
	"(lambda r: d['seed'] == r['seed'] and [(c['variant'], c['prompt'], c['model']) for c in d['cases']] == [(c['variant'], c['prompt'], c['model']) for c in r['cases']])(json.load(open('$T/ref.json')))"
# evidence that does not fit
run_onboard derive golden/onboard_agent.evidence.yaml --profile onboard_agent.yaml \
	--smoke-prompt "another prompt" --smoke-model small
check "derive: evidence of another prompt is refused (exit 3)" test "$RC" -eq 3
expect_stderr_contains "the evidence is not of this invocation with this smoke prompt and model"
sed 's/^exit_code: 0$/exit_code: 2/' "$T/work/golden/onboard_agent.evidence.yaml" \
	>"$T/work/failed.evidence.yaml"
run_onboard derive failed.evidence.yaml --profile onboard_agent.yaml \
	--smoke-prompt "$PROMPT" --smoke-model small
check "derive: evidence of a failed run is refused (exit 3)" test "$RC" -eq 3
expect_stderr_contains "failed.evidence.yaml: the evidence is of a smoke run that failed (exit code 2)"
printf 'argv: [x]\nenv_names: []\nexit_code: 0\nduration_bucket: under-1s\noutput: hi\n' \
	>"$T/work/bad.evidence.yaml"
run_onboard derive bad.evidence.yaml --profile onboard_agent.yaml --smoke-prompt x \
	--smoke-model y
check "derive: an unknown evidence key is refused (exit 3)" test "$RC" -eq 3
expect_stderr_contains "bernstein: bad.evidence.yaml:5:1: unknown key 'output' in evidence"
run_onboard derive nosuch.yaml --profile onboard_agent.yaml --smoke-prompt x --smoke-model y
check "derive: a missing evidence file is exit 4" test "$RC" -eq 4

# ---- replay ------------------------------------------------------------------

run_onboard replay golden/onboard_agent.yaml
check "replay of the recording exits 0" test "$RC" -eq 0
expect_stdout_contains "replay 'onboard_agent': passed (3 of 3 steps passed)"
run_onboard replay golden/onboard_agent.yaml --json
cp "$T/stdout" "$T/replay.json"
jcheck "replay --json: every step passed" "$T/replay.json" \
	"d['passed'] and d['transcript_name'] == 'onboard_agent' and d['adapter_class'].endswith('RecordedProfileAdapter') and [s['status'] for s in d['steps']] == ['passed'] * 3 and [s['step_index'] for s in d['steps']] == [0, 1, 2]"
check "replay's output holds none of the agent's output" sh -c "! grep -q -e 'model=' -e 'some diagnostics' '$T/stdout'"

# the flags of the recorded invocation edited: the argv no longer matches
sed 's/^    - "--mode"$/    - "--mood"/' "$T/work/golden/onboard_agent.yaml" >"$T/work/edited.yaml"
check "the edit changed ctor_kwargs only" sh -c "grep -c -- '--mood' '$T/work/edited.yaml' | grep -qx 1"
run_onboard replay edited.yaml --json
check "replay of edited flags exits 1" test "$RC" -eq 1
cp "$T/stdout" "$T/edited.json"
jcheck "every step is attempted and fails as argv_mismatch; the agent refused --mood (64)" \
	"$T/edited.json" \
	"not d['passed'] and [s['status'] for s in d['steps']] == ['argv_mismatch'] * 3 and [s['exit_code'] for s in d['steps']] == [64] * 3 and \"'--mood'\" in d['steps'][0]['message']"
# edited everywhere (ctor_kwargs and inner_argv agree): the agent itself refuses
sed 's/"--mode"/"--mood"/' "$T/work/golden/onboard_agent.yaml" >"$T/work/edited2.yaml"
run_onboard replay edited2.yaml --json
check "replay of consistently edited flags exits 1" test "$RC" -eq 1
cp "$T/stdout" "$T/edited2.json"
jcheck "every step fails as exit_nonzero 64 (the agent refuses the flag)" "$T/edited2.json" \
	"[s['status'] for s in d['steps']] == ['exit_nonzero'] * 3 and [s['exit_code'] for s in d['steps']] == [64] * 3"

# every failure kind in one transcript: each step attempted, in order
sed "s#@BIN@#$BIN#g" "$DATA/kinds.yaml" >"$T/work/kinds.yaml"
# (its "signaled" step kills itself with SIGKILL, which the init of a PID
# namespace cannot: the process-group tier, docs/supervision.md)
CANARY_ENV="$CANARY_ENV BERNSTEIN_CONTAIN=pgroup"
run_onboard replay kinds.yaml --json --timeout 1
check "a transcript with failing steps exits 1" test "$RC" -eq 1
cp "$T/stdout" "$T/kinds.json"
jcheck "statuses: exit_nonzero, timed_out, signaled, passed, argv_mismatch, passed" "$T/kinds.json" \
	"[s['status'] for s in d['steps']] == ['exit_nonzero', 'timed_out', 'signaled', 'passed', 'argv_mismatch', 'passed']"
jcheck "exit codes: 3, 124, 137, 0, 0, 0" "$T/kinds.json" \
	"[s['exit_code'] for s in d['steps']] == [3, 124, 137, 0, 0, 0]"
run_onboard replay kinds.yaml --timeout 1
CANARY_ENV=${CANARY_ENV% BERNSTEIN_CONTAIN=pgroup}
expect_stdout_contains "step 2: FAILED timed_out: timed out after 1000 ms"
expect_stdout_contains "replay 'kinds': failed (2 of 6 steps passed)"

# a missing binary: 127, every step still attempted
sed 's/^  binary: "onboard-agent"$/  binary: "no-such-onboard-agent"/' \
	"$T/work/golden/onboard_agent.yaml" >"$T/work/missing.yaml"
run_onboard replay missing.yaml --json
check "a missing binary exits 1" test "$RC" -eq 1
cp "$T/stdout" "$T/missing.json"
jcheck "renamed in ctor_kwargs only: argv_mismatch, and the binary missing (127)" \
	"$T/missing.json" \
	"[(s['status'], s['exit_code']) for s in d['steps']] == [('argv_mismatch', 127)] * 3 and 'not found on PATH' in d['steps'][2]['message']"
sed -e 's/"onboard-agent"/"no-such-onboard-agent"/' "$T/work/golden/onboard_agent.yaml" \
	>"$T/work/missing2.yaml"
run_onboard replay missing2.yaml --json
cp "$T/stdout" "$T/missing2.json"
jcheck "consistently renamed: missing_binary (127) for all three steps" "$T/missing2.json" \
	"[(s['status'], s['exit_code']) for s in d['steps']] == [('missing_binary', 127)] * 3 and 'not found on PATH' in d['steps'][0]['message']"

# an execution error: a binary that exists but cannot be executed
printf '#!/bin/sh\nexit 0\n' >"$T/noexec-agent"
chmod 0644 "$T/noexec-agent"
sed -e "s#\"onboard-agent\"#\"$T/noexec-agent\"#" "$T/work/golden/onboard_agent.yaml" \
	>"$T/work/noexec.yaml"
run_onboard replay noexec.yaml --json
check "an execution error exits 1" test "$RC" -eq 1
cp "$T/stdout" "$T/noexec.json"
jcheck "exec_error (126) for all three steps" "$T/noexec.json" \
	"[(s['status'], s['exit_code']) for s in d['steps']] == [('exec_error', 126)] * 3"

# an empty case list is a failed result, not a pass
sed '/^steps:/,$d' "$T/work/golden/onboard_agent.yaml" >"$T/work/empty.yaml"
echo "steps: []" >>"$T/work/empty.yaml"
run_onboard replay empty.yaml
check "an empty case list exits 1" test "$RC" -eq 1
expect_stdout_contains "replay 'onboard_agent': failed: the transcript has no steps"
run_onboard replay empty.yaml --json
cp "$T/stdout" "$T/empty.json"
jcheck "--json: not passed, no steps, a reason" "$T/empty.json" \
	"d['passed'] is False and d['steps'] == [] and 'no steps' in d['reason']"

# invalid transcripts: exit 3 with FILE:LINE:COL
sed 's/^steps:$/session_role: qa\nsteps:/' "$T/work/golden/onboard_agent.yaml" >"$T/work/extra-key.yaml"
run_onboard replay extra-key.yaml
check "a fifth top-level key exits 3" test "$RC" -eq 3
expect_stderr_contains "bernstein: extra-key.yaml:19:1: unknown key 'session_role' in transcript"
sed 's/^  prompt_positional: false$/  prompt_positional: "false"/' \
	"$T/work/golden/onboard_agent.yaml" >"$T/work/bad-type.yaml"
run_onboard replay bad-type.yaml --json
check "a wrong type exits 3" test "$RC" -eq 3
expect_stderr_contains '"line":12,'
expect_stderr_contains "'prompt_positional': expected a boolean"
run_onboard replay nosuch.yaml
check "a missing transcript exits 4" test "$RC" -eq 4

# ---- record failures: nothing written ---------------------------------------

run_onboard record onboard_agent.yaml --smoke-prompt "please exit 7" --smoke-model small \
	--golden-dir failed
check "a failing smoke run exits 1" test "$RC" -eq 1
expect_stdout_contains "smoke: FAILED exit_nonzero: exited with code 7"
expect_stdout_contains "not recorded: the smoke run failed; nothing written"
check "nothing written" test ! -e "$T/work/failed"
run_onboard record onboard_agent.yaml --smoke-prompt "sleep" --smoke-model small \
	--golden-dir failed --timeout 0.5 --json
check "a smoke run past its timeout exits 1" test "$RC" -eq 1
cp "$T/stdout" "$T/timeout.json"
jcheck "--json: smoke timed_out, exit 124, no held-out cases" "$T/timeout.json" \
	"d['smoke']['status'] == 'timed_out' and d['smoke']['exit_code'] == 124 and d['cases'] == [] and d['transcript'] is None"
check "nothing written" test ! -e "$T/work/failed"
sed 's/^  binary: onboard-agent$/  binary: no-such-onboard-agent/' "$T/work/onboard_agent.yaml" \
	>"$T/work/missing_agent.yaml"
sed -i 's/^name: onboard_agent$/name: missing_agent/' "$T/work/missing_agent.yaml"
run_onboard record missing_agent.yaml --smoke-prompt "$PROMPT" --smoke-model m \
	--golden-dir failed
check "a missing agent binary exits 1" test "$RC" -eq 1
expect_stdout_contains "smoke: FAILED missing_binary: 'no-such-onboard-agent' not found on PATH (exit 127)"
check "nothing written" test ! -e "$T/work/failed"

# refusals and usage
expect_exit 3 "$BERNSTEIN" onboard record mock --smoke-prompt x --smoke-model m --golden-dir g
expect_stderr_contains "served by bernstein itself (builtin)"
expect_exit 3 "$BERNSTEIN" onboard record junie --smoke-prompt x --smoke-model m --golden-dir g
expect_stderr_contains "prompt_file_flag '--prompt-file'"
expect_exit 2 "$BERNSTEIN" onboard record no_such_adapter --smoke-prompt x --smoke-model m
expect_stderr_contains "unknown adapter 'no_such_adapter'"
expect_exit 2 "$BERNSTEIN" onboard record onboard_agent.yaml --smoke-prompt x
expect_stderr_contains "missing --smoke-model"
expect_exit 2 "$BERNSTEIN" onboard record onboard_agent.yaml --smoke-prompt x --smoke-model m \
	--name "../escape"
expect_exit 2 "$BERNSTEIN" onboard replay golden/onboard_agent.yaml --timeout 0
check "no file left behind by the refusals" test ! -e "$T/work/g"

# ---- interrupted -----------------------------------------------------------

sed "s#@BIN@#$BIN#g" "$DATA/kinds.yaml" >"$T/work/kinds.yaml"
: >"$T/agent.log"
(cd "$T/work" && exec env -i "$AGENT_PATH" HOME="$T/home" TMPDIR="$T/tmp" \
	ONBOARD_AGENT_LOG="$T/agent.log" "$BERNSTEIN" onboard replay kinds.yaml --timeout 60 \
	</dev/null >"$T/int.out" 2>"$T/int.err") &
pid=$!
i=0
while [ "$(awk 'END { print NR }' "$T/agent.log")" -lt 2 ] && [ "$i" -lt 300 ]; do
	i=$((i + 1))
	sleep 0.1
done
check "the sleeping step started" test "$(awk 'END { print NR }' "$T/agent.log")" -ge 2
kill -INT "$pid"
wait "$pid"
rc=$?
check "SIGINT during a replay exits 130 (got $rc)" test "$rc" -eq 130
check "the report says it was interrupted" grep -q "FAILED cancelled" "$T/int.out"
check "the steps after it were not run" test "$(awk 'END { print NR }' "$T/agent.log")" -eq 2
check "the scratch directories are removed after an interrupt" test -z "$(ls -A "$T/tmp")"

test_done
