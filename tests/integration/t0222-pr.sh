#!/bin/sh
# Issue #18, "Review and pull requests": merge: pr. After its gates a
# task's head is pushed (a real `git push`) as its branch bernstein/SESSION
# to the configured remote -- here a local bare repository -- and a pull
# request is opened with `gh pr create`.
#
# The pull request is checked against a RECORDING STAND-IN for gh: a script
# named gh first on PATH that records its argv, its environment and the
# body file it is given, and prints a pull request URL. The real gh (Debian
# package gh) needs GitHub authentication; pointing it at a local server
# with GH_HOST would need that server to speak GitHub's REST and GraphQL
# API as gh expects (its `pr create` resolves the repository through
# GraphQL), more than this test should carry.
#
# Also: without gh the branch is pushed and the reason says what to do; a
# hostile configuration of the repository (core.sshCommand, a pushInsteadOf
# to an ext:: transport) and GIT_SSH_COMMAND in the environment run
# nothing on push; a push that fails fails the task.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0222 merge: pr pushes the branch and opens a pull request (gh stand-in)"

W=$T/work
R=$T/remote.git
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git init -q --bare "$R" >/dev/null 2>&1
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
sandbox: none
merge: pr
pr: {remote: origin, base: main, repo: acme/widgets, draft: true}
gates:
  - {name: nonempty, run: "test -s feature.txt"}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: pr
tasks:
  - title: Add the feature
    id: feature
    prompt: "echo feature > feature.txt"
EOF
git_q add -A
git_q commit -q -m base
git -C "$W" remote add origin "$R"
git -C "$W" push -q origin main >/dev/null 2>&1

# the stand-in for gh
mkdir -p "$T/ghbin"
cat >"$T/ghbin/gh" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done > $T/gh.argv
env > $T/gh.env
for a in "\$@"; do
	case \$a in --body-file=*) cp "\${a#--body-file=}" $T/gh.body ;; esac
done
echo "Creating draft pull request for bernstein/x into main in acme/widgets"
echo
echo "https://github.com/acme/widgets/pull/7"
EOF
chmod +x "$T/ghbin/gh"

expect_exit 0 PATH="$T/ghbin:/usr/bin:/bin" GH_TOKEN=t0222-token "$KEY" "$BERNSTEIN" -C "$W" \
	run plan.yaml
expect_stdout_contains "completing -> done" "the task is done once pushed"
expect_stdout_contains "pull request https://github.com/acme/widgets/pull/7"
BR=$(git -C "$W" for-each-ref --format='%(refname:short)' 'refs/heads/bernstein/feature-*')
HEAD_LOCAL=$(git -C "$W" rev-parse "$BR")
check "the remote has the branch at the task's head" \
	[ "$(git -C "$R" rev-parse "refs/heads/$BR" 2>/dev/null)" = "$HEAD_LOCAL" ]
check "nothing merged locally" sh -c "[ \$(git -C '$W' log --merges --oneline main | wc -l) -eq 0 ]"
check "gh pr create got the repository, head, base, title, body file, draft" python3 -c '
import sys
a = open(sys.argv[1]).read().split("\n")
want = ["pr", "create", "--repo=acme/widgets", "--head=" + sys.argv[2], "--base=main",
        "--title=Add the feature"]
assert a[:6] == want, a
assert any(x.startswith("--body-file=") for x in a) and "--draft" in a, a' "$T/gh.argv" "$BR"
check "gh ran with the token and no prompt" sh -c \
	"grep -q '^GH_TOKEN=t0222-token$' '$T/gh.env' && grep -q '^GH_PROMPT_DISABLED=1$' '$T/gh.env'"
check "the body carries the task, outcome, gates, tokens, cost and the audit record hash" \
	python3 -c '
import glob, json, sys
b = open(sys.argv[1]).read()
for s in ("`feature`", "echo feature > feature.txt", "outcome: completed", "1 gate(s) passed",
          "tokens:", "cost: $", "head: " + sys.argv[2]):
    assert s in b, (s, b)
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[3] + "/*.jsonl")) for l in open(f)]
push = [r for r in recs if r["event_type"] == "task.push"]
assert len(push) == 1 and push[0]["details"]["head"] == sys.argv[2], push
assert "audit record: " + push[0]["hmac"] in b, b
pr = [r for r in recs if r["event_type"] == "task.pull_request"]
assert pr and pr[0]["details"]["url"] == "https://github.com/acme/widgets/pull/7", pr' \
	"$T/gh.body" "$HEAD_LOCAL" "$W/.bernstein/audit"
expect_exit 0 "$KEY" "$BERNSTEIN" -C "$W" audit verify

# ---- no gh: pushed, and the reason says what to do ----
cat >"$W/plan2.yaml" <<'EOF'
name: pr2
tasks:
  - title: Second
    id: second
    prompt: "echo second > feature.txt"
EOF
git_q add plan2.yaml
git_q commit -q -m plan2
rm -f "$T/gh.argv"
expect_exit 0 "$KEY" "$BERNSTEIN" -C "$W" run plan2.yaml
BR2=$(git -C "$W" for-each-ref --format='%(refname:short)' 'refs/heads/bernstein/second-*')
check "without gh: the branch is pushed" \
	[ "$(git -C "$R" rev-parse "refs/heads/$BR2" 2>/dev/null)" = "$(git -C "$W" rev-parse "$BR2")" ]
check "without gh: no gh ran" test ! -e "$T/gh.argv"
check "without gh: the reason says what to do" sh -c \
	"grep -q 'gh is not installed' '$T/stdout' && grep -q 'gh pr create --head $BR2 --base main' '$T/stdout'"

# ---- a change of bernstein's own configuration: the body says so at its top ----
cat >"$W/plan3.yaml" <<'EOF'
name: pr3
tasks:
  - title: Third
    id: third
    prompt: "echo third > feature.txt; echo 'timeout: 1' >> bernstein.yaml"
EOF
git_q add plan3.yaml
git_q commit -q -m plan3
rm -f "$T/gh.body"
expect_exit 0 PATH="$T/ghbin:/usr/bin:/bin" "$KEY" "$BERNSTEIN" -C "$W" run plan3.yaml
check "protected: pushed, the body warns first and names bernstein.yaml" python3 -c '
import glob, json, sys
b = open(sys.argv[1]).read()
w = b.index("rewrites bernstein" + chr(39) + "s own configuration")
assert w < b.index("## Task") and "- `bernstein.yaml`" in b, b
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[2] + "/*.jsonl")) for l in open(f)]
push = [r["details"] for r in recs if r["event_type"] == "task.push" and r["details"]["task"] == "third"]
assert push and push[0]["protected"] == ["bernstein.yaml"], push
prot = [r["details"] for r in recs if r["event_type"] == "task.protected"]
assert [p["task"] for p in prot] == ["third"] and prot[0]["merge"] == "pr", prot' \
	"$T/gh.body" "$W/.bernstein/audit"
check "protected: the user's bernstein.yaml untouched" sh -c "! grep -q 'timeout: 1' '$W/bernstein.yaml'"
rm -f "$T/gh.argv"

# ---- a hostile repository configuration runs nothing on push ----
git -C "$W" config core.sshCommand "touch $T/pwned-sshcommand"
git -C "$W" remote add evil "ssh://nonexistent.invalid/x.git"
git -C "$W" remote add rewrite "$T/elsewhere.git"
git -C "$W" config "url.ext::sh -c touch% $T/pwned-ext% .pushInsteadOf" "$T/elsewhere.git"
for remote in evil rewrite; do
	sed -i "s|^pr: .*|pr: {remote: $remote, repo: acme/widgets}|" "$W/bernstein.yaml"
	cat >"$W/plan-$remote.yaml" <<EOF
name: pr-$remote
tasks:
  - title: Via $remote
    id: via-$remote
    prompt: "echo $remote > feature.txt"
EOF
	git_q add -A
	git_q commit -q -m "$remote"
	expect_exit 1 PATH="$T/ghbin:/usr/bin:/bin" GIT_SSH_COMMAND="touch $T/pwned-env" "$KEY" \
		"$BERNSTEIN" -C "$W" run "plan-$remote.yaml"
	check "$remote: the push failed the task" test "$(task_field "via-$remote" state)" = failed
	expect_stdout_contains "cannot push" "$remote: the reason says the push failed"
done
check "core.sshCommand of the repository never ran" test ! -e "$T/pwned-sshcommand"
check "GIT_SSH_COMMAND of the environment never ran" test ! -e "$T/pwned-env"
check "a pushInsteadOf to ext:: never ran" test ! -e "$T/pwned-ext"
check "no gh ran for a failed push" test ! -e "$T/gh.argv"

test_done
