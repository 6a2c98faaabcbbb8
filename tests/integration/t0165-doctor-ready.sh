#!/bin/sh
# bernstein doctor (issue #17): usable agents (binary on PATH and credentials:
# an API key variable its profile passes, or the CLI's own login file), the
# repository (git, clean, .bernstein/ ignored, bernstein.yaml valid) and the
# sandbox tiers, each problem with a fix. The agent is a stand-in `claude`
# script on PATH; nothing is run but git.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0165 doctor: is this host and repository ready for a run"

mkdir -p "$T/bin"
printf '#!/bin/sh\necho 2.1.332\n' >"$T/bin/claude"
chmod +x "$T/bin/claude"
P="$T/bin:/usr/bin:/bin"
doc() { run PATH="$P" "$@" "$BERNSTEIN" doctor --json; }
field() { python3 -c "
import json, sys
d = json.load(open('$T/stdout'))
sect, name, key = sys.argv[1:]
print([x for x in d[sect] if x['name'] == name][0][key])" "$@"; }

# outside a repository, no credentials
doc
check "doctor exits 0 (a report)" test "$RC" -eq 0
check "claude is found but not usable without credentials" test "$(field agents claude ok)" = False
check "its fix names the key variable and the login file" \
	sh -c "python3 -c \"import json; d=json.load(open('$T/stdout')); f=[x for x in d['agents'] if x['name']=='claude'][0]['fix']; assert 'ANTHROPIC_API_KEY' in f and '~/.claude/.credentials.json' in f, f\""
check "the other adapters are counted as not installed" \
	python3 -c "import json; assert json.load(open('$T/stdout'))['agents_not_installed'] > 0"
check "not a git repository: said, with a fix" test "$(field repository git ok)" = False
check "the containment report is still there" \
	python3 -c "import json; assert json.load(open('$T/stdout'))['tier']"
check "the sandbox tiers are reported" \
	python3 -c "import json; d=json.load(open('$T/stdout')); assert [x['name'] for x in d['sandbox']] == ['landlock', 'bwrap', 'container'] and d['sandbox_tiers']['uid'] >= 0"

# the CLI's own login makes it usable, and so does its key
mkdir -p "$T/home/.claude"
printf '{"claudeAiOauth": {"accessToken": "x"}}\n' >"$T/home/.claude/.credentials.json"
doc
check "a login file makes claude usable" test "$(field agents claude ok)" = True
check "and is named" sh -c "python3 -c \"import json; d=json.load(open('$T/stdout')); assert 'login: ~/.claude/.credentials.json' in [x for x in d['agents'] if x['name']=='claude'][0]['detail']\""
rm "$T/home/.claude/.credentials.json"
doc ANTHROPIC_API_KEY=sk-ant-0123456789
check "an API key variable makes claude usable" test "$(field agents claude ok)" = True
check "the key's value is never printed" sh -c "! grep -q sk-ant-0123456789 '$T/stdout'"

# a repository: dirty, .bernstein/ not ignored, bernstein.yaml invalid
cd "$T/work" || exit 1
git init -q -b main . >/dev/null 2>&1
printf 'a\n' >f.txt
git -c user.name=t -c user.email=t@example.com add f.txt >/dev/null 2>&1
git -c user.name=t -c user.email=t@example.com commit -q -m a >/dev/null 2>&1
printf 'b\n' >f.txt
printf 'adapter: claude\nmax_retries: lots\n' >bernstein.yaml
doc
check "git: the repository is found" test "$(field repository git ok)" = True
check "clean: uncommitted changes are reported" test "$(field repository clean ok)" = False
check ".bernstein/ not ignored is reported" test "$(field repository '.bernstein/ ignored' ok)" = False
check "bernstein.yaml invalid: the field is named" \
	sh -c "python3 -c \"import json; d=json.load(open('$T/stdout')); x=[x for x in d['repository'] if x['name']=='bernstein.yaml'][0]; assert not x['ok'] and 'bernstein.yaml:2:' in x['detail'] and 'max_retries' in x['detail'], x\""
git checkout -q f.txt
printf '.bernstein/\n' >.gitignore
printf 'adapter: claude\n' >bernstein.yaml
git -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
git -c user.name=t -c user.email=t@example.com commit -q -m b >/dev/null 2>&1
doc
check "a clean repository" test "$(field repository clean ok)" = True
check ".bernstein/ ignored" test "$(field repository '.bernstein/ ignored' ok)" = True
check "a valid bernstein.yaml" test "$(field repository bernstein.yaml ok)" = True

run PATH="$P" "$BERNSTEIN" doctor
check "the text report exits 0" test "$RC" -eq 0
expect_stdout_contains "fix: no credentials: set ANTHROPIC_API_KEY"
expect_stdout_contains "containment:"
test_done
