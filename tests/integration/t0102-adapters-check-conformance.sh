#!/bin/sh
# The contract column of `bernstein adapters check`: the same check as
# `adapters contract-check` (contract_check_all), run against fake agent
# binaries on PATH with a repo catalogue override
# (.bernstein/catalog/contracts/claude.yaml) that drifts. Each state of the
# column (ok, drift: N, runtime failure, not installed, no contract,
# (not checked)), in the table and in --json; the exit codes (drift alone
# does not fail `adapters check`, --strict exits 1); bounded (a hanging help
# command times out) and parallel (four hanging help commands take about one
# deadline, not four).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0102 adapters check: the contract conformance column"

json_check()
{
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
$2
" "$1"
}

help_txt="$SRCDIR/tests/data/help/claude.txt"
mkdir -p "$T/fake" "$T/empty"

# A fake claude: --version prints a version line, anything else (the
# contract's help command, `claude --help`) prints the pinned claude help
# text. Every call is logged to $T/calls.
write_claude()
{
	cat >"$T/fake/claude" <<EOS
#!/bin/sh
echo "\$*" >>'$T/calls'
if [ "\$1" = --version ]; then
	echo "2.1.332 (Claude Code)"
	exit 0
fi
$1
EOS
	chmod 755 "$T/fake/claude"
}
write_claude "exec /bin/cat '$help_txt'"

# ---- ok --------------------------------------------------------------------

expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude
check "ok: claude's row" grep -qE "^claude +flag +cli-flag +stream-json +git-diff +stateless +ok +$T/fake/claude +2\.1\.332 \(Claude Code\)\$" "$T/stdout"
check "ok: header has the contract column" grep -qE '^adapter +resume +dangerous mode +event channel +output mode +session state +contract +binary +version$' "$T/stdout"
expect_stdout_contains "contracts: 1 checked, 1 passed, 0 drifted, 0 runtime failures, 0 skipped"
check "ok: the help command really ran" grep -qx -- "--help" "$T/calls"

expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude --json
check "ok --json: status passed, the contract-check result" json_check "$T/stdout" '
c = d["adapters"][0]["contract"]
assert c["name"] == "claude" and c["file"] == "<embedded>/contracts/claude.yaml", c
assert c["status"] == "passed", c
r = c["result"]
assert r["passed"] is True and r["binary_installed"] is True and r["help_exit_code"] == 0, r
assert r["capability_failures"] == [] and r["runtime_failure"] == "", r
assert d["summary"]["contracts"] == {"checked": 1, "passed": 1, "drifted": 0,
                                     "runtime_failures": 0, "skipped": 0}, d["summary"]
'

# ---- drift: a repo override requiring a flag the fake does not advertise ---

mkdir -p "$T/work/.bernstein/catalog/contracts"
over="$T/work/.bernstein/catalog/contracts/claude.yaml"
sed 's/^  - "--model"$/  - "--model"\n  - "--no-such-flag"/' \
	"$SRCDIR/catalog/contracts/claude.yaml" >"$over"
check "the override requires --no-such-flag" grep -q -- '"--no-such-flag"' "$over"

: >"$T/calls"
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude
check "drift: claude's row says drift: 1" grep -qE "^claude +.* +drift: 1 +$T/fake/claude +2\.1\.332" "$T/stdout"
expect_stdout_contains "contracts: 1 checked, 0 passed, 1 drifted, 0 runtime failures, 0 skipped"
expect_stdout_contains "1 adapters - 1 reachable - 1 declared - 0 failed probes"
expect_exit 1 PATH="$T/fake" "$BERNSTEIN" adapters check claude --strict
expect_stdout_contains "drift: 1"

expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude --json
cp "$T/stdout" "$T/check.json"
check "drift --json: the override, status drifted, the one missing flag" json_check "$T/check.json" "
c = d['adapters'][0]['contract']
assert c['file'] == '$over', c
assert c['status'] == 'drifted', c
assert c['result']['capability_failures'] == [\"missing required flag '--no-such-flag' in \`claude --help\`\"], c
assert c['result']['passed'] is False and c['result']['runtime_failure'] == '', c
assert d['summary']['contracts']['drifted'] == 1, d['summary']
"
# The same code as contract-check: the same failures, and its exit 2.
expect_exit 2 PATH="$T/fake" "$BERNSTEIN" adapters contract-check claude --json
check "contract-check reports exactly the failures of the column" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["adapters"][0]["contract"]["result"]
b = json.load(open(sys.argv[2]))["contracts"][0]
assert a == b, (a, b)' "$T/check.json" "$T/stdout"

# The whole table: only claude is installed; every other contract is skipped.
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check --json
check "whole table: one drifted, the rest not installed, built-ins have none" json_check "$T/stdout" "
a = {x['name']: x for x in d['adapters']}
names = {x['contract']['name'] for x in a.values() if x['contract']}
s = d['summary']['contracts']
assert s == {'checked': len(names), 'passed': 0, 'drifted': 1, 'runtime_failures': 0,
             'skipped': len(names) - 1}, s
assert a['claude']['contract']['status'] == 'drifted'
assert a['codex']['contract']['status'] == 'not-installed'
assert a['codex']['contract']['result']['skipped_reason'] == 'codex not installed'
assert a['mock']['contract'] is None and a['openai_agents']['contract'] is None
assert a['clm']['contract'] is None  # a registry.yaml entry: no profile, no contract
assert a['charm']['contract']['name'] == 'crush'  # a profile naming another contract
"
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check
check "whole table: codex not installed" grep -qE '^codex +.* +not installed +\(not in PATH\) +\(n/a\)$' "$T/stdout"
check "whole table: mock has no contract" grep -qE '^mock +.* +no contract +\(built-in\) +\(n/a\)$' "$T/stdout"
check "whole table: claude drifted" grep -qE '^claude +.* +drift: 1 +' "$T/stdout"

# --no-probe runs nothing, not even a help command.
: >"$T/calls"
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check --no-probe --strict
check "--no-probe: claude not checked" grep -qE '^claude +.* +\(not checked\) +\(not probed\) +\(n/a\)$' "$T/stdout"
check "--no-probe: mock still shows no contract" grep -qE '^mock +.* +no contract +\(built-in\)' "$T/stdout"
check "--no-probe: no contracts summary line" sh -c "! grep -q '^contracts:' '$T/stdout'"
check "--no-probe: the fake was never run" test ! -s "$T/calls"

# An invalid override is an invalid catalogue: exit 3 before anything runs.
printf 'binary: claude\nrequired_flagz: ["-p"]\n' >"$over"
: >"$T/calls"
expect_exit 3 PATH="$T/fake" "$BERNSTEIN" adapters check claude
expect_stderr_contains "claude.yaml:2:1: unknown key 'required_flagz'"
check "invalid override: nothing ran" test ! -s "$T/calls"
rm -r "$T/work/.bernstein"

# ---- runtime failure: the help exits 1 with no output ------------------------

write_claude "exit 1"
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude
check "runtime failure: claude's row" grep -qE "^claude +.* +runtime failure +$T/fake/claude +2\.1\.332" "$T/stdout"
expect_stdout_contains "contracts: 1 checked, 0 passed, 0 drifted, 1 runtime failures, 0 skipped"
expect_exit 1 PATH="$T/fake" "$BERNSTEIN" adapters check claude --strict
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude --json
check "runtime failure --json" json_check "$T/stdout" '
c = d["adapters"][0]["contract"]
assert c["status"] == "runtime-failure", c
assert "runtime failure, not contract drift" in c["result"]["runtime_failure"], c
assert c["result"]["help_exit_code"] == 1 and c["result"]["capability_failures"] == [], c
'

# ---- not installed, no contract ------------------------------------------------

expect_exit 0 PATH="$T/empty" "$BERNSTEIN" adapters check claude --strict
check "not installed: claude's row" grep -qE '^claude +.* +not installed +\(not in PATH\) +\(n/a\)$' "$T/stdout"
expect_stdout_contains "contracts: 1 checked, 0 passed, 0 drifted, 0 runtime failures, 1 skipped"
expect_exit 0 PATH="$T/empty" "$BERNSTEIN" adapters check mock --json
check "no contract --json: null, nothing checked" json_check "$T/stdout" '
assert d["adapters"][0]["contract"] is None, d
assert d["summary"]["contracts"] == {"checked": 0, "passed": 0, "drifted": 0,
                                     "runtime_failures": 0, "skipped": 0}, d["summary"]
'

# ---- bounded: a hanging help command times out ------------------------------

write_claude "exec /bin/sleep 60"
start=$(date +%s)
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude --timeout 1
elapsed=$(($(date +%s) - start))
check "hanging help: returned within 10 s of a 1 s timeout (took ${elapsed}s)" test "$elapsed" -lt 10
check "hanging help: runtime failure" grep -qE '^claude +.* +runtime failure +' "$T/stdout"
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check claude --timeout 1 --json
check "hanging help --json: timed out after 1s" json_check "$T/stdout" '
r = d["adapters"][0]["contract"]["result"]
assert r["help_exit_code"] == 124, r
assert "timed out after 1s" in r["runtime_failure"], r
'

# ---- parallel: four hanging help commands take about one deadline ----------

for a in codex gemini qwen; do
	cp "$T/fake/claude" "$T/fake/$a"
done
start=$(date +%s)
expect_exit 0 PATH="$T/fake" "$BERNSTEIN" adapters check --timeout 2
elapsed=$(($(date +%s) - start))
# one after another they would take 4 x 2 s of help deadlines alone
check "four hanging help commands in parallel: under 7 s (took ${elapsed}s)" test "$elapsed" -lt 7
expect_stdout_contains "contracts: 17 checked, 0 passed, 0 drifted, 4 runtime failures, 13 skipped"

test_done
