#!/bin/sh
# `adapters contract-check` against the real agent CLIs pinned in
# tests/agents/ (claude, codex, gemini, qwen, opencode, pi): zero drift. Then
# a deliberately wrong repo override (drift, exit 2), a help that exits 1 with
# no output (runtime failure, exit 3), a help that hangs (timed out, exit 3,
# no hang), unknown names, invalid overrides and absent binaries.
#
# The CLIs come from tests/agents/install.sh (npm registry, cache outside the
# repo). The first install takes minutes, longer than a test may run: this
# test then starts it in the background, waits up to
# $BERNSTEIN_AGENTS_WAIT seconds (default 60) and FAILS with a message if it
# has not finished (the install goes on; run the tests again, or run
# tests/agents/install.sh first). An install that fails (offline) fails here.
# shellcheck disable=SC2016 # backquotes in messages and sh -c text, not expansions
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0030 contract drift against the pinned agent CLIs"

agents="claude codex gemini qwen opencode pi"
install="$SRCDIR/tests/agents/install.sh"
# shellcheck disable=SC2034 # read by lib.sh's run
TEST_CMD_TIMEOUT=90

# ---- the pinned CLIs --------------------------------------------------------

bin=""
if bin=$("$install" --check 2>/dev/null); then
	ok "pinned agent CLIs are installed"
else
	cache=${BERNSTEIN_AGENTS_CACHE:-$HOME/.cache/bernstein/agents}
	mkdir -p "$cache"
	out="$cache/background-install.out"
	status="$cache/background-install.status"
	rm -f "$out" "$status"
	diag "installing the pinned agent CLIs (first use; log in $cache)"
	# Detached, so that the install survives this test's deadline.
	setsid sh -c '"$1" >"$2" 2>&1; echo $? >"$3.tmp"; mv "$3.tmp" "$3"' sh \
		"$install" "$out" "$status" </dev/null >/dev/null 2>&1 &
	waited=0
	while [ ! -f "$status" ] && [ "$waited" -lt "${BERNSTEIN_AGENTS_WAIT:-60}" ]; do
		sleep 1
		waited=$((waited + 1))
	done
	if [ ! -f "$status" ]; then
		not_ok "pinned agent CLIs installed within ${BERNSTEIN_AGENTS_WAIT:-60}s"
		diag "the first install of tests/agents takes minutes and goes on in the"
		diag "background (output: $out); run the tests again when it is done, or"
		diag "run tests/agents/install.sh before the tests"
		test_done
	fi
	if [ "$(cat "$status")" != 0 ]; then
		not_ok "pinned agent CLIs installed (npm install failed: offline?)"
		diag "$(tail -n 15 "$out")"
		test_done
	fi
	bin=$(tail -n 1 "$out")
	ok "pinned agent CLIs installed"
fi

# A PATH with the six CLIs and node only, so that no other agent CLI that
# happens to be on this machine takes part.
mkdir -p "$T/nodebin" "$T/empty"
node=$(command -v node || true)
if [ -n "$node" ]; then
	ln -s "$node" "$T/nodebin/node"
fi
for a in $agents; do
	check "'$a' is in the agents bin dir" test -x "$bin/$a"
done
AGENTS_PATH="$bin:$T/nodebin"

# ---- zero drift --------------------------------------------------------------

expect_exit 0 PATH="$AGENTS_PATH" "$BERNSTEIN" adapters contract-check --json
cp "$T/stdout" "$T/all.json"
for a in $agents; do
	check "$a: passed, installed, no capability failures" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["contracts"] if c["adapter"] == sys.argv[2]]
assert len(c) == 1, c
c = c[0]
ok = (c["passed"] is True and c["binary_installed"] is True and
      c["capability_failures"] == [] and c["runtime_failure"] == "" and
      c["help_exit_code"] == 0)
if not ok:
    print(json.dumps(c, indent=2))
sys.exit(0 if ok else 1)' "$T/all.json" "$a"
done
check "summary: 6 passed, 0 drifted, 0 runtime failures, the rest skipped" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(s)
assert s["passed"] == 6 and s["drifted"] == 0 and s["runtime_failures"] == 0, s
assert s["skipped"] == s["checked"] - 6 and s["exit_code"] == 0, s' "$T/all.json"

# The human form of one of them.
expect_exit 0 PATH="$AGENTS_PATH" "$BERNSTEIN" adapters contract-check codex
expect_stdout_contains "adapter: codex"
expect_stdout_contains "installed: yes"
expect_stdout_contains "passed: yes"

# ---- drift: a repo override requiring a flag that does not exist -------------

mkdir -p "$T/work/.bernstein/catalog/contracts"
cp "$SRCDIR/catalog/contracts/claude.yaml" "$T/work/.bernstein/catalog/contracts/claude.yaml"
# insert the wrong flag into the list
sed -i 's/^  - "--model"$/  - "--model"\n  - "--full-auto"/' \
	"$T/work/.bernstein/catalog/contracts/claude.yaml"
check "the override requires --full-auto" grep -q -- '"--full-auto"' \
	"$T/work/.bernstein/catalog/contracts/claude.yaml"
expect_exit 2 PATH="$AGENTS_PATH" "$BERNSTEIN" adapters contract-check claude
expect_stdout_contains "capability failures:"
expect_stdout_contains "missing required flag '--full-auto' in \`claude --help\`"
expect_stdout_contains "passed: no"
expect_exit 2 PATH="$AGENTS_PATH" "$BERNSTEIN" adapters contract-check claude --json
check "JSON: exactly the --full-auto failure" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["contracts"][0]
assert c["passed"] is False and c["runtime_failure"] == "", c
assert c["capability_failures"] == ["missing required flag '"'"'--full-auto'"'"' in `claude --help`"], c
assert d["summary"]["drifted"] == 1 and d["summary"]["exit_code"] == 2, d["summary"]' "$T/stdout"
rm -r "$T/work/.bernstein"

# ---- a broken CLI: help exits 1 with no output --------------------------------

mkdir -p "$T/fake"
printf '#!/bin/sh\nexit 1\n' >"$T/fake/claude"
chmod 755 "$T/fake/claude"
expect_exit 3 PATH="$T/fake" "$BERNSTEIN" adapters contract-check claude
expect_stdout_contains "runtime failure: \`claude --help\` exited 1 with no output"
expect_stdout_contains "not contract drift"
expect_exit 3 PATH="$T/fake" "$BERNSTEIN" adapters contract-check claude --json
check "JSON: runtime failure, no capability failures" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["contracts"][0]
assert c["capability_failures"] == [] and c["help_exit_code"] == 1, c
assert "runtime failure, not contract drift" in c["runtime_failure"], c
assert d["summary"]["runtime_failures"] == 1 and d["summary"]["exit_code"] == 3' "$T/stdout"

# Drift wins over a runtime failure when everything is checked: a fake codex
# whose `exec --help` lacks most flags, beside the broken claude.
printf '#!/bin/sh\necho "Usage: codex exec [OPTIONS]"; echo "  --json"\n' >"$T/fake/codex"
chmod 755 "$T/fake/codex"
expect_exit 2 PATH="$T/fake" "$BERNSTEIN" adapters contract-check --json
check "JSON: one drifted, one runtime failure, exit 2" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
assert s["drifted"] == 1 and s["runtime_failures"] == 1 and s["exit_code"] == 2, s
codex = [c for c in d["contracts"] if c["adapter"] == "codex"][0]
assert "missing required flag '"'"'-m'"'"' in `codex exec --help`" in codex["capability_failures"], codex' "$T/stdout"
rm "$T/fake/codex"

# ---- a hanging CLI: timed out, and no hang -----------------------------------

printf '#!/bin/sh\nexec /bin/sleep 60\n' >"$T/fake/claude"
start=$(date +%s)
expect_exit 3 PATH="$T/fake" "$BERNSTEIN" adapters contract-check claude --timeout 1
end=$(date +%s)
expect_stdout_contains "runtime failure: \`claude --help\` timed out after 1s"
check "returned within 10 s of a 1 s timeout" test $((end - start)) -lt 10

# ---- absent binary, unknown name, invalid override, --list -------------------

expect_exit 0 PATH="$T/empty" "$BERNSTEIN" adapters contract-check claude
expect_stdout_contains "note: claude not installed"
expect_stdout_contains "installed: no"

expect_exit 2 "$BERNSTEIN" adapters contract-check no-such-contract
expect_stderr_contains "unknown contract 'no-such-contract'"

mkdir -p "$T/work/.bernstein/catalog/contracts"
printf 'binary: claude\nrequired_flagz: ["-p"]\n' >"$T/work/.bernstein/catalog/contracts/claude.yaml"
expect_exit 3 "$BERNSTEIN" adapters contract-check claude
expect_stderr_contains "claude.yaml:2:1: unknown key 'required_flagz'"
rm -r "$T/work/.bernstein"

expect_exit 0 "$BERNSTEIN" adapters contract-check --list
for a in $agents aider goose q_dev; do
	check "--list names $a" grep -qx "$a" "$T/stdout"
done

test_done
