#!/bin/sh
# Capability profiles against the real binary: profile_hash recomputed with
# python3 for every shipped profile (JCS == json.dumps(sort_keys, compact) for
# these objects, checked), the worked example of docs/profile-format.md,
# profiles validate over the shipped, good and broken files, the three gates
# at catalogue load (user and repository profiles), and integrations list.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0040 capability profiles"

json_check()
{
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
$2
" "$1"
}

# ---- every shipped profile: hash recomputed independently ----
expect_exit 0 "$BERNSTEIN" integrations list --json
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for x in d['integrations']:
    if x['profile']:
        print(x['name'])
" "$T/stdout" >"$T/profiled"
check "45 shipped profiles" test "$(wc -l <"$T/profiled")" -eq 45
n=0
bad=""
while read -r name; do
	run "$BERNSTEIN" profiles hash "$name" --json
	cp "$T/stdout" "$T/hash-$name.json"
	if [ "$RC" -ne 0 ] || ! python3 - "$T/hash-$name.json" <<'EOS'; then
import hashlib, json, sys
d = json.load(open(sys.argv[1]))
# JCS for these objects is Python's sorted, compact dump: check the claim on
# the object first (ASCII keys, no floats, integers within 2^53), then the bytes
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            assert k.isascii(), k
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
    else:
        assert not isinstance(v, float), v
        if isinstance(v, int) and not isinstance(v, bool):
            assert abs(v) < 2 ** 53
walk(d["canonical"])
canon = json.dumps(d["canonical"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
assert canon == d["canonical_json"], "canonical bytes differ"
assert hashlib.sha256(canon.encode()).hexdigest() == d["profile_hash"], "hash differs"
assert "notes" not in d["canonical"]
assert set(d["canonical"]) == {"builtin", "capabilities", "contract", "display_name",
    "invocation", "models", "name", "runtime", "shape", "strategy", "version_args"}
assert len(d["canonical"]["capabilities"]) == 17
# runtime.sandbox, runtime.login, runtime.mcp, runtime.acp and runtime.pty are
# there only when declared (existing hashes do not move)
rt = d["canonical"]["runtime"]
assert len(rt) == 11 + sum(k in rt for k in ("sandbox", "login", "mcp", "acp", "pty"))
if "pty" in rt:
    assert len(rt["pty"]) == 14, sorted(rt["pty"])
assert len(d["canonical"]["runtime"]["endpoint"]) == 5
EOS
		bad="$bad $name"
	fi
	n=$((n + 1))
done <"$T/profiled"
check "profile_hash recomputed with python3 for all $n profiles (failed:${bad:- none})" test -z "$bad"

# the text form prints the same hash; show and check --json agree
expect_exit 0 "$BERNSTEIN" profiles hash codex
h=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['profile_hash'])" "$T/hash-codex.json")
check "profiles hash codex: the hash line" grep -qx "$h" "$T/stdout"
expect_exit 0 "$BERNSTEIN" adapters show codex
expect_stdout_contains "profile hash:      $h"
expect_stdout_contains "contract:          codex (<embedded>/contracts/codex.yaml)"
expect_exit 0 PATH="$T" "$BERNSTEIN" adapters check --no-probe --json
check "check --json: profile_hash, null without a profile" json_check "$T/stdout" "
c = {x['name']: x for x in d['adapters']}
assert c['codex']['profile_hash'] == '$h'
assert c['iac']['profile_hash'] is None and c['letta_code']['profile_hash'] is None
assert sum(1 for x in d['adapters'] if x['profile_hash']) == 45
"

# ---- the worked example of docs/profile-format.md ----
mkdir -p "$T/work/.git" "$T/work/.bernstein/catalog"
cat >"$T/work/.bernstein/catalog/strategy-matrix.yaml" <<'EOS'
adapters:
  mini: {resume: unsupported, dangerous_mode: unsupported, event_channel: text-signals}
EOS
python3 - "$SRCDIR/docs/profile-format.md" "$T/work/mini.yaml" "$T/doc-hash" <<'EOS'
import re, sys
doc = open(sys.argv[1]).read()
m = re.search(r"The file `mini.yaml`\n\n```yaml\n(.*?)```", doc, re.S)
open(sys.argv[2], "w").write(m.group(1))
open(sys.argv[3], "w").write(re.search(r"profile_hash: ([0-9a-f]{64})", doc).group(1) + "\n")
EOS
expect_exit 0 "$BERNSTEIN" profiles validate mini.yaml
check "the documented hash of mini.yaml" grep -qF "profile_hash $(cat "$T/doc-hash")" "$T/stdout"

# ---- profiles validate ----
expect_exit 0 "$BERNSTEIN" profiles validate "$SRCDIR"/catalog/profiles/*.yaml
check "every shipped file: ok" test "$(grep -c ': ok: profile ' "$T/stdout")" -eq 45
expect_stderr_empty "no problems"

rm -rf "$T/work/.bernstein/catalog"
cp -r "$SRCDIR/tests/data/profiles/catalog" "$T/work/.bernstein/catalog"
cp -r "$SRCDIR/tests/data/profiles/bad" "$SRCDIR/tests/data/profiles/good" "$T/work/"
run "$BERNSTEIN" profiles validate good/good_agent.yaml good/minimal_agent.yaml
check "good files: exit 0" test "$RC" -eq 0
# all broken files at once: exit 3, nothing on stdout, and for every file one
# or more FILE:LINE:COL: lines naming it (one run: this is slow under ASan)
cd "$T/work" || exit 1
set -- bad/*.yaml bad/contract/*.yaml
run "$BERNSTEIN" profiles validate "$@"
check "the corpus: exit 3, nothing on stdout" test "$RC" -eq 3 -a ! -s "$T/stdout"
check "the corpus: only FILE:LINE:COL: lines" sh -c "! grep -qvE '^bad/[a-z_/]+\.yaml:[0-9]+:[0-9]+: ' '$T/stderr'"
missing=""
for f in "$@"; do
	grep -q "^$f:[0-9][0-9]*:[0-9][0-9]*: " "$T/stderr" || missing="$missing $f"
done
check "the corpus: every one of the $# files refused (missing:${missing:- none})" test -z "$missing"
# several files: every one is reported, the exit says some failed
expect_exit 3 "$BERNSTEIN" profiles validate good/minimal_agent.yaml bad/zero_workers.yaml bad/empty.yaml
expect_stdout_contains "good/minimal_agent.yaml: ok: profile 'minimal_agent' (factory)"
expect_lines stderr 2 "one line per broken file"
expect_exit 3 "$BERNSTEIN" profiles validate --json bad/contract/codex.yaml
check "--json: both discrepancies with their fields" json_check "$T/stdout" "
e = d['files'][0]['errors']
assert [x['field'] for x in e] == ['invocation.subcommands[1]', 'invocation.extra_args[1]'], e
assert d['summary'] == {'total': 1, 'valid': 0, 'invalid': 1}
"
expect_exit 2 "$BERNSTEIN" profiles validate
expect_exit 2 "$BERNSTEIN" profiles validate --bogus x.yaml

# ---- the gates at catalogue load ----
rm -rf "$T/work/.bernstein/catalog" "$T/work/bad" "$T/work/good"
mkdir -p "$T/work/.bernstein/catalog/profiles" "$T/config/bernstein/catalog/profiles"
# a user profile adds an adapter; a repo profile replaces a shipped one
cat >"$T/config/bernstein/catalog/profiles/zed.yaml" <<'EOS'
name: zed
display_name: Zed
shape: factory
invocation: {binary: zed-agent, prompt_positional: true}
EOS
sed 's/^display_name: "Pi"$/display_name: "Pi (repo)"/' "$SRCDIR/catalog/profiles/pi.yaml" \
	>"$T/work/.bernstein/catalog/profiles/pi.yaml"
expect_exit 0 "$BERNSTEIN" adapters list
expect_lines stdout 53 "a header and 52 adapters"
check "list: zed from the user profile" grep -qE '^zed +Zed +zed-agent$' "$T/stdout"
check "list: pi from the repo profile" grep -qE '^pi +Pi \(repo\) +pi$' "$T/stdout"
expect_exit 0 "$BERNSTEIN" adapters show pi --json
check "show pi: the repo file, a new hash" json_check "$T/stdout" "
assert d['profile']['file'].endswith('/work/.bernstein/catalog/profiles/pi.yaml'), d['profile']
assert d['profile_hash'] != json.load(open('$T/hash-pi.json'))['profile_hash']
assert d['profile']['contract'] == 'pi'
"
# an undeclared profile is served with the default, and check says so
expect_exit 3 PATH="$T" "$BERNSTEIN" adapters check --no-probe
expect_stderr_contains "(resume / dangerous-mode / event-channel): zed"

# gate 2: a repo profile claiming more than its contract refuses the catalogue
sed 's/^  extra_args: \[--json, --skip-git-repo-check\]/  extra_args: [--json, --full-auto, --skip-git-repo-check]/' \
	"$SRCDIR/catalog/profiles/codex.yaml" >"$T/work/.bernstein/catalog/profiles/codex.yaml"
for cmd in "adapters list" "integrations list" "profiles hash claude"; do
	# shellcheck disable=SC2086 # split on purpose
	run "$BERNSTEIN" $cmd
	if [ "$RC" -eq 3 ] && grep -qF ".bernstein/catalog/profiles/codex.yaml:11:24: field 'invocation.extra_args[1]': flag '--full-auto' is not in contract 'codex'" "$T/stderr"; then
		ok "$cmd: refused for codex's --full-auto"
	else
		not_ok "$cmd: refused for codex's --full-auto"
		diag "exit $RC"
		_diag_file stderr "$T/stderr"
	fi
done
rm "$T/work/.bernstein/catalog/profiles/codex.yaml"

# gate 3: vision needs multimodal.yaml
cat >"$T/work/.bernstein/catalog/profiles/seer.yaml" <<'EOS'
name: seer
display_name: Seer
shape: factory
invocation: {binary: seer, prompt_positional: true}
capabilities: {vision: true}
EOS
expect_exit 3 "$BERNSTEIN" adapters list
expect_stderr_contains "seer.yaml:5:24: field 'capabilities.vision': multimodal.yaml does not grant 'seer' image input"
printf 'adapters:\n  seer: true\n' >"$T/work/.bernstein/catalog/multimodal.yaml"
expect_exit 0 "$BERNSTEIN" adapters list
rm "$T/work/.bernstein/catalog/profiles/seer.yaml" "$T/work/.bernstein/catalog/multimodal.yaml"

# a user matrix row turning on resume for a profile that cannot spell it
cat >"$T/config/bernstein/catalog/strategy-matrix.yaml" <<'EOS'
adapters:
  zed: {resume: flag, dangerous_mode: unsupported, event_channel: text-signals}
EOS
expect_exit 3 "$BERNSTEIN" adapters show zed
expect_stderr_contains "zed.yaml:1:7: field 'runtime.resume': the resume strategy is 'flag' (strategy matrix $T/config/bernstein/catalog/strategy-matrix.yaml:2) but the profile does not say how resume is spelled"
rm "$T/config/bernstein/catalog/strategy-matrix.yaml"

# one layer may not hold a profile and a registry entry of one name
printf 'adapters:\n  zed: {display_name: Zed, binary: zed-agent}\n' \
	>"$T/config/bernstein/catalog/registry.yaml"
expect_exit 3 "$BERNSTEIN" adapters list
expect_stderr_contains "zed.yaml:1:7: field 'name': adapter 'zed' has a registry entry ($T/config/bernstein/catalog/registry.yaml:2) and a capability profile in the same catalogue layer"
# across layers the higher one wins: a repo registry entry replaces the user profile
mv "$T/config/bernstein/catalog/registry.yaml" "$T/work/.bernstein/catalog/registry.yaml"
expect_exit 0 "$BERNSTEIN" adapters show zed --json
check "a repo registry entry replaces the user profile" json_check "$T/stdout" "
assert d['profile'] is None and d['profile_hash'] is None
assert d['origin']['file'].endswith('/work/.bernstein/catalog/registry.yaml')
"
rm -rf "$T/work/.bernstein/catalog" "$T/config/bernstein"

# ---- integrations list ----
expect_exit 0 "$BERNSTEIN" integrations list
expect_lines stdout 51 "one line per agent"
check "claude: what it is good for and how to install it" \
	grep -qE '^claude +.+ \(install: npm install -g @anthropic-ai/claude-code\)$' "$T/stdout"
expect_exit 0 "$BERNSTEIN" integrations list --json
check "integrations --json: copy for every adapter" json_check "$T/stdout" "
a = d['integrations']
assert len(a) == 51
for x in a:
    assert x['summary'] and x['install'], x
c = {x['name']: x for x in a}
assert c['claude']['profile'] == 'factory' and c['openai_agents']['profile'] == 'module'
assert c['iac']['profile'] is None
"
expect_exit 2 "$BERNSTEIN" integrations list extra

test_done
