#!/bin/sh
# Issue #14, class 1: an agent whose only file access is bernstein's own code
# (the built-in runner's file tools, the mock agent's file instructions) must
# not reach .git. The attack: write core.fsmonitor into .git/config of the
# checkout `bernstein spawn` works in; bernstein's own after-run `git status`
# then runs it. Here both agents try it, directly, in other spellings and
# through a symlink to .git, and also try .bernstein (bernstein's own state):
# every attempt is a tool error, .git/config is unchanged and the planted
# command never runs. A profile with runtime.git_dir: allowed (a user
# catalogue override) lifts the .git refusal, not the .bernstein one.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0062 the runner's and the mock's file tools refuse .git"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS
if ! git -C "$W" init -q . >/dev/null 2>&1 ||
	! git -C "$W" -c user.name=t -c user.email=t@t commit -q --allow-empty -m init \
		>/dev/null 2>&1; then
	skip "the .git attacks" "git cannot create a repository here"
	
# ---- runtime.git_dir: allowed, from a user catalogue override ----
P=$T/config/bernstein/catalog/profiles
mkdir -p "$P"
for a in mock openai_agents; do
	sed 's/^runtime:$/runtime:\n  git_dir: allowed/' "$SRCDIR/catalog/profiles/$a.yaml" >"$P/$a.yaml"
done
expect_exit 0 "$BERNSTEIN" profiles hash mock --json
expect_stdout_contains '"git_dir": "allowed"' "the override says allowed"
expect_exit 0 "$PASS" "$BERNSTEIN" spawn mock "write .git/description mock was here"
check "allowed: the mock wrote into .git" grep -qx "mock was here" "$W/.git/description"
expect_exit 1 "$PASS" "$BERNSTEIN" spawn mock "write .bernstein/x y"
check "allowed: .bernstein stays refused" test ! -e "$W/.bernstein/x"
printf '%s\n' '[{"tool_calls": [{"name": "write_file", "id": "g", "arguments": {"path": ".git/description", "content": "runner was here\n"}}]}, {"text": "ok"}]' >"$T/allowed.json"
fake_start "$T/allowed.json"
expect_exit 0 "$PASS" OPENAI_API_KEY=$KEY BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
	"$BERNSTEIN" spawn openai_agents -m fake-model --set "base_url=$FAKE_URL" \
	--set api_key_env=OPENAI_API_KEY "write .git"
check "allowed: the runner wrote into .git" grep -qx "runner was here" "$W/.git/description"
check "allowed: its manifest says so" \
	sh -c 'grep -q "\"allow_git_dir\": true" "$(ls -t "$1"/.bernstein/runs/*/openai_agents-*/manifest.json | head -n 1)"' sh "$W"
test_done
fi
cp "$W/.git/config" "$T/config.orig"
ln -s .git "$W/x"
mkdir -p "$W/.bernstein/catalog"
PLANT='[core] fsmonitor = "touch PWNED; false"'

git_intact()
{
	check "$1: .git/config is unchanged" cmp -s "$W/.git/config" "$T/config.orig"
	check "$1: the planted fsmonitor never ran" test ! -e "$W/PWNED"
	check "$1: no hook was planted" test ! -e "$W/.git/hooks/post-checkout"
	check "$1: nothing was written into .bernstein" test ! -e "$W/.bernstein/catalog/profiles"
}

# ---- the mock agent through bernstein spawn ----
for instr in "append .git/config $PLANT" "write .GIT/config $PLANT" \
	"write ./.git/config $PLANT" "write sub/../.git/config $PLANT" \
	"append x/config $PLANT" "write x/hooks/post-checkout touch PWNED" \
	"once .git/index.lock say locked" "delete .git/HEAD" \
	"write .bernstein/catalog/profiles/mock.yaml name: mock"; do
	expect_exit 1 "$PASS" "$BERNSTEIN" spawn mock "$instr"
	expect_stdout_contains "outcome: failed" "mock '$instr': refused"
done
run sh -c "grep -h '\"path_refused\"' '$W'/.bernstein/runs/*/*/events.jsonl | wc -l"
check "mock: every refusal is a path_refused error" test "$(cat "$T/stdout")" -eq 9
check "mock: HEAD is still there" test -f "$W/.git/HEAD"
check "mock: no index.lock" test ! -e "$W/.git/index.lock"
git_intact mock

# ---- the built-in runner through bernstein spawn ----
KEY=sk-test-gitdir-0123456789
cat >"$T/script.json" <<EOF
{"responses": [
 {"tool_calls": [
   {"name": "write_file", "id": "w1", "arguments": {"path": ".git/config", "content": "$(printf '%s' "$PLANT" | sed 's/"/\\"/g')\n"}},
   {"name": "write_file", "id": "w2", "arguments": {"path": "x/config", "content": "[core]\n\tfsmonitor = touch PWNED\n"}},
   {"name": "write_file", "id": "w3", "arguments": {"path": "x/hooks/post-checkout", "content": "touch PWNED\n"}},
   {"name": "write_file", "id": "w4", "arguments": {"path": ".Git/config", "content": "x"}},
   {"name": "read_file", "id": "r1", "arguments": {"path": "x/config"}},
   {"name": "list_dir", "id": "l1", "arguments": {"path": ".git"}},
   {"name": "list_dir", "id": "l2", "arguments": {}},
   {"name": "write_file", "id": "w5", "arguments": {"path": ".bernstein/catalog/profiles/openai_agents.yaml", "content": "x"}},
   {"name": "write_file", "id": "ok", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
 {"text": "done"}]}
EOF
fake_start "$T/script.json"
expect_exit 0 "$PASS" OPENAI_API_KEY=$KEY BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
	"$BERNSTEIN" spawn openai_agents -m fake-model --set "base_url=$FAKE_URL" \
	--set api_key_env=OPENAI_API_KEY "try .git"
expect_stdout_contains "outcome: completed" "runner: the run completes (refusals are tool errors)"
check "runner: the legitimate write worked" grep -qx hi "$W/hello.txt"
git_intact runner
# events.jsonl: the run's events as bernstein read them (is_error, output)
cp "$(ls -t "$W"/.bernstein/runs/*/openai_agents-*/events.jsonl | head -n 1)" "$T/stdout"
jcheck "runner: the .git and .bernstein calls are errors with the reason" \
	'[e["is_error"] for e in ev("tool_result")] == [True] * 6 + [False, True, False] and all("inside a git directory" in e["output"] for e in ev("tool_result")[:6]) and ".bernstein" in ev("tool_result")[7]["output"]'
jcheck "runner: the listing shows neither .git nor .bernstein" \
	'".git/" not in ev("tool_result")[6]["output"] and ".bernstein" not in ev("tool_result")[6]["output"] and "x\n" in ev("tool_result")[6]["output"]'
jcheck "runner: nothing of .git reached the model" \
	'all("bare" not in m.get("content", "") for m in reqs[1]["body"]["messages"] if m["role"] == "tool")'

# ---- runtime.git_dir: allowed, from a user catalogue override ----
P=$T/config/bernstein/catalog/profiles
mkdir -p "$P"
for a in mock openai_agents; do
	sed 's/^runtime:$/runtime:\n  git_dir: allowed/' "$SRCDIR/catalog/profiles/$a.yaml" >"$P/$a.yaml"
done
expect_exit 0 "$BERNSTEIN" profiles hash mock --json
expect_stdout_contains '"git_dir": "allowed"' "the override says allowed"
expect_exit 0 "$PASS" "$BERNSTEIN" spawn mock "write .git/description mock was here"
check "allowed: the mock wrote into .git" grep -qx "mock was here" "$W/.git/description"
expect_exit 1 "$PASS" "$BERNSTEIN" spawn mock "write .bernstein/x y"
check "allowed: .bernstein stays refused" test ! -e "$W/.bernstein/x"
printf '%s\n' '[{"tool_calls": [{"name": "write_file", "id": "g", "arguments": {"path": ".git/description", "content": "runner was here\n"}}]}, {"text": "ok"}]' >"$T/allowed.json"
fake_start "$T/allowed.json"
expect_exit 0 "$PASS" OPENAI_API_KEY=$KEY BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
	"$BERNSTEIN" spawn openai_agents -m fake-model --set "base_url=$FAKE_URL" \
	--set api_key_env=OPENAI_API_KEY "write .git"
check "allowed: the runner wrote into .git" grep -qx "runner was here" "$W/.git/description"
check "allowed: its manifest says so" \
	sh -c 'grep -q "\"allow_git_dir\": true" "$(ls -t "$1"/.bernstein/runs/*/openai_agents-*/manifest.json | head -n 1)"' sh "$W"

# ---- the mock's own git runs nothing from HOME's or the repository's config ----
nl='
'
cp "$T/config.orig" "$W/.git/config"
printf '[core]\n\tfsmonitor = "touch HOMEPWNED; false"\n' >"$T/home/.gitconfig"
run "$PASS" "$BERNSTEIN" mock-agent "write m1.txt x${nl}commit from home"
check "commit: the mock (HOME with a git config) exits 0" test "$RC" -eq 0
check "commit: HOME's git config did not run (fsmonitor)" test ! -e "$W/HOMEPWNED"
check "commit: the commit was made" sh -c 'git -C "$1" log -1 --format=%s | grep -qx "from home"' sh "$W"
rm -f "$T/home/.gitconfig"
run "$PASS" "$BERNSTEIN" mock-agent --allow-git-dir \
	"append .git/config [core] fsmonitor = \"touch REPOPWNED; false\"${nl}write m2.txt x${nl}commit from repo"
check "commit: the mock (--allow-git-dir) exits 0" test "$RC" -eq 0
check "commit: with .git allowed, a planted fsmonitor does not run in the mock's git" \
	test ! -e "$W/REPOPWNED"
check "commit: that commit was made too" sh -c 'git -C "$1" log -1 --format=%s | grep -qx "from repo"' sh "$W"
cp "$T/config.orig" "$W/.git/config"
test_done
