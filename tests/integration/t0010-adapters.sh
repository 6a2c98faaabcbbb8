#!/bin/sh
# bernstein adapters list | show | check against the real binary: the text and
# --json forms, unknown names, catalogue overrides and broken catalogue files
# (exit 3), fake agent binaries on PATH (a version line, a hang that ignores
# SIGTERM, a failing one) and --strict.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0010 adapters list/show/check"

# json_check FILE PYTHON-EXPR-STATEMENTS: load FILE as JSON into `d`, then run
# the statements (asserts).
json_check()
{
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
$2
" "$1"
}

# ---- list ----
expect_exit 0 "$BERNSTEIN" adapters list
expect_lines stdout 52 "list: a header and 51 adapters"
check "list: claude line" grep -qE '^claude +Claude Code +claude$' "$T/stdout"
check "list: cloudflare drives wrangler" grep -qE '^cloudflare +Cloudflare Agents +wrangler$' "$T/stdout"
check "list: mock is built in" grep -qE '^mock +mock +\(built-in\)$' "$T/stdout"
expect_stderr_empty "list: nothing on stderr"

expect_exit 0 "$BERNSTEIN" adapters list --json
check "list --json: 51 adapters with name/display_name/binary/builtin" json_check "$T/stdout" '
a = d["adapters"]
assert len(a) == 51, len(a)
assert [x["name"] for x in a] == sorted(x["name"] for x in a)
for x in a:
    assert set(x) == {"name", "display_name", "binary", "builtin"}, x
c = {x["name"]: x for x in a}
assert c["claude"] == {"name": "claude", "display_name": "Claude Code", "binary": "claude", "builtin": False}
assert c["openai_agents"]["binary"] is None and c["openai_agents"]["builtin"] is True
assert c["iac"]["binary"] == "terraform"
'
# streamed, not built with jansson: still the text every --json command
# prints (2-space indent, sorted keys, UTF-8 as is, a final newline)
check "list --json: the format of every --json command" python3 -c '
import json, sys
t = open(sys.argv[1], encoding="utf-8").read()
assert t == json.dumps(json.loads(t), indent=2, sort_keys=True, ensure_ascii=False) + "\n", t
' "$T/stdout"
# the global --json works the same
expect_exit 0 "$BERNSTEIN" --json adapters list
check "global --json: JSON too" json_check "$T/stdout" 'assert len(d["adapters"]) == 51'

expect_exit 2 "$BERNSTEIN" adapters list extra
expect_stderr_contains "bernstein: unexpected argument 'extra'"
expect_exit 2 "$BERNSTEIN" adapters list --bogus
expect_stderr_contains "bernstein: unknown option '--bogus'"
expect_stderr_contains "see 'bernstein adapters list -h'"

# ---- show ----
expect_exit 0 "$BERNSTEIN" adapters show codex
expect_stdout_contains "resume:            subcommand        matrix <embedded>/strategy-matrix.yaml:"
expect_stdout_contains "event channel:     stream-json"
expect_stdout_contains "output mode:       git-diff          default"
expect_stdout_contains "resume capability: native"
expect_stdout_contains "note:              The Python matrix says"

expect_exit 0 "$BERNSTEIN" adapters show letta_code --json
check "show --json: letta_code is a persistent agent" json_check "$T/stdout" '
assert d["name"] == "letta_code" and d["binary"] == "letta"
assert d["strategy"] == {"resume": "unsupported", "dangerous_mode": "cli-flag", "event_channel": "stream-json", "output_mode": "git-diff", "session_state": "persistent-agent"}, d["strategy"]
assert d["resume_capability"] == "fallback-fresh"
src = d["strategy_source"]
assert src["session_state"]["source"] == "matrix" and src["session_state"]["file"] == "<embedded>/strategy-matrix.yaml"
assert isinstance(src["session_state"]["line"], int)
assert src["output_mode"] == {"source": "default", "file": None, "line": None}
assert d["declared"] is True and d["note"]
assert d["origin"]["file"] == "<embedded>/registry.yaml"
'

# unknown NAME: exit 2, the error and a hint, nothing on stdout
expect_exit 2 "$BERNSTEIN" adapters show nosuch
expect_stdout_empty "show unknown: nothing on stdout"
check "show unknown: the message" grep -qxF "bernstein: unknown adapter 'nosuch'" "$T/stderr"
check "show unknown: the hint" grep -qxF "see 'bernstein adapters show -h'" "$T/stderr"
expect_exit 2 "$BERNSTEIN" adapters show
expect_stderr_contains "missing adapter name"
expect_exit 2 "$BERNSTEIN" adapters check nosuch
check "check unknown: the message" grep -qxF "bernstein: unknown adapter 'nosuch'" "$T/stderr"

# strategy is declared, never probed: no PATH at all is fine
run env -i PATH= "$BERNSTEIN" adapters show claude
if [ "$RC" -eq 0 ] && grep -q '^resume: *flag ' "$T/stdout"; then
	ok "env -i PATH= adapters show claude"
else
	not_ok "env -i PATH= adapters show claude"
	diag "exit $RC"
	_diag_file stdout "$T/stdout"
	_diag_file stderr "$T/stderr"
fi

# ---- check, on a machine with no agents (make run's command) ----
mkdir -p "$T/empty"
expect_exit 0 PATH="$T/empty" "$BERNSTEIN" adapters check
expect_stdout_contains "51 adapters - 2 reachable - 51 declared - 0 failed probes"
check "check: claude not in PATH" grep -qE '^claude +flag +cli-flag +stream-json +git-diff +stateless +not installed +\(not in PATH\) +\(n/a\)$' "$T/stdout"
check "check: openai_agents built in" grep -qE '^openai_agents +flag +always-on +hooks +git-diff +stateless +no contract +\(built-in\) +\(n/a\)$' "$T/stdout"
check "check: header" grep -qE '^adapter +resume +dangerous mode +event channel +output mode +session state +contract +binary +version$' "$T/stdout"
expect_stdout_contains "contracts: 17 checked, 0 passed, 0 drifted, 0 runtime failures, 17 skipped"

expect_exit 0 PATH="$T/empty" "$BERNSTEIN" adapters check --json
check "check --json: shape and summary" json_check "$T/stdout" '
a = d["adapters"]
assert len(a) == 51
keys = {"name", "display_name", "binary", "builtin", "binary_path", "version", "probe", "probe_detail", "strategy", "resume_capability", "declared", "profile_hash", "contract"}
for x in a:
    assert set(x) == keys, set(x) ^ keys
    assert set(x["strategy"]) == {"resume", "dangerous_mode", "event_channel", "output_mode", "session_state"}
    assert x["probe"] == ("skipped" if x["builtin"] else "not-found"), x
    assert x["binary_path"] is None and x["version"] is None
c = {x["name"]: x for x in a}
assert c["codex"]["strategy"]["resume"] == "subcommand"
assert c["pi"]["strategy"]["dangerous_mode"] == "always-on"
assert c["claude"]["resume_capability"] == "native" and c["aider"]["resume_capability"] == "fallback-fresh"
assert c["claude"]["contract"]["status"] == "not-installed" and c["mock"]["contract"] is None
assert d["summary"] == {"total": 51, "reachable": 2, "declared": 51, "failed": 0,
                        "contracts": {"checked": 17, "passed": 0, "drifted": 0,
                                      "runtime_failures": 0, "skipped": 17}}, d["summary"]
'
check "check --json: keys sorted, 2-space indent" sh -c "sed -n 2p '$T/stdout' | grep -qx '  \"adapters\": \\['"

# ---- fake agents ----
mkdir -p "$T/bin"
# claude answers its contract's help command with the stored help text
cat >"$T/bin/claude" <<EOS
#!/bin/sh
[ "\$1" = --version ] || exec /bin/cat '$SRCDIR/tests/data/help/claude.txt'
printf '\\033[1m2.1.332 (Claude Code)\\033[0m\\n'
EOS
cat >"$T/bin/codex" <<'EOS'
#!/bin/sh
trap '' TERM
exec sleep 1000
EOS
cat >"$T/bin/gemini" <<'EOS'
#!/bin/sh
echo "gemini: broken install" >&2
exit 3
EOS
chmod +x "$T/bin/claude" "$T/bin/codex" "$T/bin/gemini"
start=$(date +%s)
expect_exit 0 PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" adapters check --timeout 1
elapsed=$(($(date +%s) - start))
check "check --timeout 1 with a hanging codex returns within 10 s (took ${elapsed}s)" test "$elapsed" -le 10
check "check: claude's version line, escapes stripped" grep -qE "^claude +.* $T/bin/claude +2\.1\.332 \(Claude Code\)\$" "$T/stdout"
check "check: codex timed out" grep -qE "^codex +.* $T/bin/codex +\(timed out after 1s\)\$" "$T/stdout"
check "check: gemini failed" grep -qE "^gemini +.* $T/bin/gemini +\(exit 3: gemini: broken install\)\$" "$T/stdout"
# (gemini_acp and gemini_tui run the same broken gemini)
check "check: summary counts the failures" grep -qE '^51 adapters - [0-9]+ reachable - 51 declared - 4 failed probes$' "$T/stdout"

expect_exit 1 PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" adapters check --strict --timeout 1
expect_exit 0 PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" adapters check claude --strict
expect_lines stdout 5 "check NAME: header, one row, blank, two summary lines"
expect_stdout_contains "1 adapters - 1 reachable - 1 declared - 0 failed probes"
expect_exit 1 PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" adapters check gemini --strict

expect_exit 0 PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" adapters check --json --timeout 1
check "check --json: probe results" json_check "$T/stdout" "
c = {x['name']: x for x in d['adapters']}
assert c['claude']['probe'] == 'ok' and c['claude']['version'] == '2.1.332 (Claude Code)', c['claude']
assert c['claude']['binary_path'] == '$T/bin/claude'
assert c['claude']['probe_detail'] is None
assert c['codex']['probe'] == 'timed-out' and c['codex']['version'] is None
assert c['codex']['probe_detail'] == '(timed out after 1s)'
assert c['gemini']['probe'] == 'exit-nonzero'
assert c['gemini_tui']['probe'] == 'exit-nonzero'
assert c['gemini_acp']['probe'] == 'exit-nonzero'
assert d['summary']['failed'] == 4
"

# --no-probe runs nothing
expect_exit 0 PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" adapters check --no-probe --strict
check "--no-probe: nothing probed" grep -qE '^codex +.* \(not probed\) +\(n/a\)$' "$T/stdout"
expect_stdout_contains "51 adapters - 2 reachable - 51 declared - 0 failed probes"

# bad --timeout values
for v in 0 -1 abc 1x 99999; do
	expect_exit 2 "$BERNSTEIN" adapters check --timeout "$v"
done
expect_exit 2 "$BERNSTEIN" adapters check --timeout
expect_stderr_contains "requires a value"
expect_exit 2 "$BERNSTEIN" adapters check --markdown --json

# ---- overrides ----
# A matrix row that turns on resume for a profiled adapter needs a spelling in
# its profile (docs/profile-format.md), so the rows below that do so use
# adapters without a profile (clm, letta_code).
mkdir -p "$T/config/bernstein/catalog" "$T/work/.git" "$T/work/.bernstein/catalog"
cat >"$T/config/bernstein/catalog/strategy-matrix.yaml" <<'EOS'
adapters:
  claude: {resume: unsupported, dangerous_mode: unsupported, event_channel: none}
  clm: {resume: subcommand, dangerous_mode: env-var, event_channel: acp}
  letta_code: {resume: unsupported, dangerous_mode: unsupported, event_channel: none}
EOS
expect_exit 0 "$BERNSTEIN" adapters show claude
check "user dir replaces claude's row" grep -qE "^resume: +unsupported +matrix $T/config/bernstein/catalog/strategy-matrix.yaml:2\$" "$T/stdout"
# XDG_CONFIG_HOME empty or relative: ~/.config/bernstein/catalog instead
mkdir -p "$T/home/.config/bernstein/catalog"
cat >"$T/home/.config/bernstein/catalog/strategy-matrix.yaml" <<'EOS'
adapters:
  letta_code: {resume: subcommand, dangerous_mode: unsupported, event_channel: none}
EOS
for x in "" relative/config; do
	expect_exit 0 XDG_CONFIG_HOME="$x" "$BERNSTEIN" adapters show letta_code
	check "XDG_CONFIG_HOME='$x': ~/.config/bernstein/catalog is the user dir" \
		grep -qE "^resume: +subcommand +matrix $T/home/\.config/bernstein/catalog/strategy-matrix\.yaml:2\$" "$T/stdout"
done
cat >"$T/work/.bernstein/catalog/strategy-matrix.yaml" <<'EOS'
adapters:
  letta_code:
    resume: flag-pair
    dangerous_mode: always-on
    event_channel: poll-pty
EOS
expect_exit 0 "$BERNSTEIN" adapters show letta_code --json
check "repo dir beats user dir" json_check "$T/stdout" "
assert d['strategy']['resume'] == 'flag-pair', d['strategy']
assert d['strategy_source']['resume']['file'].endswith('/work/.bernstein/catalog/strategy-matrix.yaml')
assert d['strategy_source']['resume']['line'] == 3
"
expect_exit 0 "$BERNSTEIN" adapters show clm
expect_stdout_contains "subcommand"
# the repo is found from a subdirectory, and -C works the same
mkdir -p "$T/work/sub/dir"
expect_exit 0 "$BERNSTEIN" -C sub/dir adapters show letta_code
expect_stdout_contains "flag-pair"

# a new adapter in the repo registry without a matrix row fails conformance
cat >"$T/work/.bernstein/catalog/registry.yaml" <<'EOS'
adapters:
  zed: {display_name: Zed, binary: zed-agent}
  abacus: {display_name: Abacus, binary: abacus}
EOS
expect_exit 3 PATH="$T/empty" "$BERNSTEIN" adapters check
expect_stdout_contains "53 adapters - 2 reachable - 51 declared - 0 failed probes"
check "conformance error lists both, sorted" grep -qxF "bernstein: adapters missing a strategy declaration in the strategy matrix (resume / dangerous-mode / event-channel): abacus, zed" "$T/stderr"
expect_exit 0 "$BERNSTEIN" adapters list
expect_lines stdout 54 "list shows the two new adapters"
expect_exit 0 "$BERNSTEIN" adapters show zed
expect_stdout_contains "declared:          no (missing from the strategy matrix)"
expect_exit 3 PATH="$T/empty" "$BERNSTEIN" adapters check zed --no-probe
expect_stderr_contains "event-channel): zed"
expect_exit 0 PATH="$T/empty" "$BERNSTEIN" adapters check claude --no-probe
rm "$T/work/.bernstein/catalog/registry.yaml"

# ---- broken catalogue files: exit 3 with FILE:LINE:COL ----
for f in "$SRCDIR"/tests/data/catalog/*; do
	b=${f##*/}
	case $b in
	registry-*) dest=registry.yaml ;;
	*) dest=strategy-matrix.yaml ;;
	esac
	rm -f "$T/work/.bernstein/catalog/"*
	cp "$f" "$T/work/.bernstein/catalog/$dest"
	# every file through one loader path; two files through all three commands
	cmds=list
	case $b in
	matrix-unknown-value.yaml | registry-wrong-type.yaml) cmds='list|show claude|check --no-probe' ;;
	esac
	old_ifs=$IFS
	IFS='|'
	# shellcheck disable=SC2086 # split on '|' on purpose
	set -- $cmds
	IFS=$old_ifs
	for cmd in "$@"; do
		# shellcheck disable=SC2086 # cmd is split on purpose
		run "$BERNSTEIN" adapters $cmd
		if [ "$RC" -eq 3 ] && [ "$(wc -l <"$T/stderr")" -eq 1 ] &&
			grep -qE "^bernstein: $T/work/\.bernstein/catalog/$dest:[0-9]+:[0-9]+: .+" "$T/stderr"; then
			ok "$b: adapters $cmd exits 3 with one FILE:LINE:COL error"
		else
			not_ok "$b: adapters $cmd exits 3 with one FILE:LINE:COL error"
			diag "exit $RC"
			_diag_file stderr "$T/stderr"
		fi
	done
done
rm -f "$T/work/.bernstein/catalog/"*
python3 -c "
import sys
with open(sys.argv[1], 'w') as f:
    f.write('adapters:\n')
    f.write(('#' * 63 + '\n') * (10 * 1024 * 1024 // 64))
" "$T/work/.bernstein/catalog/strategy-matrix.yaml"
expect_exit 3 "$BERNSTEIN" adapters list
check "10 MB file: one FILE:1:1 error" grep -qxE "bernstein: $T/work/\.bernstein/catalog/strategy-matrix\.yaml:1:1: .*larger than.*" "$T/stderr"
expect_exit 3 "$BERNSTEIN" adapters list --json
check "--json: the error is a JSON object on stderr" json_check "$T/stderr" "
e = d['error']
assert e['exit_code'] == 3 and e['line'] == 1 and e['column'] == 1
assert e['file'].endswith('strategy-matrix.yaml')
"
rm -f "$T/work/.bernstein/catalog/"*

test_done
