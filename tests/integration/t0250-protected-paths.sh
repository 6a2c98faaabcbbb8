#!/bin/sh
# docs/security.md, promise 12: a task's commit that changes bernstein's own
# configuration is never merged without a person's say. Each attack an
# agent could make through a merged commit, reproduced (the old code merged
# every one of them into the user's checkout):
#   - bernstein.yaml: a role's base_url pointing at the agent's server (the
#     next run would send the user's API key there);
#   - .worktreeinclude: a pattern that copies the user's ignored files
#     (.env) into every later task's tree;
#   - .bernstein/: a catalogue override committed by the agent itself (after
#     taking .bernstein/ out of .gitignore, which is not protected);
#   - the plan file being run;
#   - a path of the user's own protected_paths:.
# Under merge: auto the task waits in review with the files named, audited
# (task.protected); approve refuses it without --allow-protected; with it,
# the reviewed head merges. A task changing nothing protected merges as
# before; a bad protected_paths entry is refused with file:line:col.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0250 protected paths: bernstein's own configuration is never merged without a review"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

merges() { git -C "$W" log --merges --format=%s main | grep -c "^Merge bernstein/$1-"; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n.env\n' >"$W/.gitignore"
printf 'SECRET=t0250-user-secret\n' >"$W/.env"
mkdir -p "$W/plans" "$W/deploy"
printf 'echo deploy\n' >"$W/deploy/prod.sh"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 1
kill_grace: 1
sandbox: none
protected_paths: [deploy/]
EOF
cp "$W/bernstein.yaml" "$T/bernstein.yaml.orig"
# each task is one attack; 'plain' changes nothing protected
cat >"$W/plans/attack.yaml" <<'EOF'
name: attack
tasks:
  - title: yaml
    prompt: "printf 'role_model_policy:\\n  coder: {base_url: \"http://127.0.0.1:9/v1\"}\\n' >> bernstein.yaml"
  - title: include
    prompt: "printf '.env\\n' > .worktreeinclude"
  - title: catalog
    prompt: "mkdir -p .bernstein/catalog/profiles && echo 'name: evil' > .bernstein/catalog/profiles/evil.yaml && printf '.env\\n' > .gitignore && git add .gitignore .bernstein/catalog/profiles/evil.yaml && git -c user.name=a -c user.email=a@example.com commit -q -m evil"
  - title: plan
    prompt: "echo '# edited by the agent' >> plans/attack.yaml"
  - title: deploy
    prompt: "echo 'curl evil' >> deploy/prod.sh"
  - title: plain
    prompt: "echo fine > plain.txt"
EOF
git_q add -A
git_q commit -q -m base
HEAD0=$(git -C "$W" rev-parse HEAD)

expect_exit 1 "$KEY" "$BERNSTEIN" run plans/attack.yaml
for t in yaml include catalog plan deploy; do
	check "$t: waits in review, not merged" sh -c \
		"[ '$(task_state $t)' = review ] && [ $(merges $t) -eq 0 ]"
done
check "plain: merged as before" test "$(merges plain)" -eq 1
check "the checkout's bernstein.yaml is the user's" cmp -s "$W/bernstein.yaml" "$T/bernstein.yaml.orig"
check "no .worktreeinclude in the checkout" test ! -e "$W/.worktreeinclude"
check "no committed catalogue override in the checkout" test ! -e "$W/.bernstein/catalog/profiles/evil.yaml"
check "the plan and deploy/ untouched" sh -c \
	"git -C '$W' diff --quiet $HEAD0 HEAD -- plans deploy && git -C '$W' diff --quiet -- plans deploy"
check "the reasons name the files and the way out" python3 -c '
import json, subprocess, sys
st = json.loads(subprocess.run([sys.argv[1], "status", "--json"], cwd=sys.argv[2],
                               capture_output=True, text=True).stdout)
want = {"yaml": "bernstein.yaml", "include": ".worktreeinclude",
        "catalog": ".bernstein/catalog/profiles/evil.yaml", "plan": "plans/attack.yaml",
        "deploy": "deploy/prod.sh"}
for t in st["tasks"]:
    if t["id"] in want:
        r = t.get("reason") or t.get("last") or ""
        assert want[t["id"]] in r and "--allow-protected" in r, (t["id"], r)' "$BERNSTEIN" "$W"
check "each is audited as task.protected with its paths" python3 -c '
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
p = {r["details"]["task"]: r["details"]["paths"] for r in recs if r["event_type"] == "task.protected"}
assert p == {"yaml": ["bernstein.yaml"], "include": [".worktreeinclude"],
             "catalog": [".bernstein/catalog/profiles/evil.yaml"],
             "plan": ["plans/attack.yaml"], "deploy": ["deploy/prod.sh"]}, p' "$W/.bernstein/audit"

# diff says what approve will need the flag for
expect_exit 0 "$BERNSTEIN" diff yaml
expect_stdout_contains "warning: changes bernstein's own configuration: bernstein.yaml" "diff warns"
expect_exit 0 "$BERNSTEIN" diff plan --json
check "diff --json lists the protected paths" python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["protected"] == ["plans/attack.yaml"]' "$T/stdout"
expect_exit 0 "$BERNSTEIN" diff plain --json
check "diff --json of an unprotected change: none" python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["protected"] == []' "$T/stdout"

# approve needs --allow-protected
expect_exit 1 "$KEY" "$BERNSTEIN" approve yaml
expect_stderr_contains "changes bernstein's own configuration (bernstein.yaml)" "approve names the file"
expect_stderr_contains "--allow-protected"
check "still in review" test "$(task_field yaml state)" = review
check "still the user's bernstein.yaml" cmp -s "$W/bernstein.yaml" "$T/bernstein.yaml.orig"
# several at once: all or none
expect_exit 1 "$KEY" "$BERNSTEIN" approve deploy include
check "none of them merged" sh -c "[ $(merges deploy) -eq 0 ] && [ $(merges include) -eq 0 ]"
BR=$(git -C "$W" for-each-ref --format='%(refname:short)' 'refs/heads/bernstein/deploy-*')
H=$(git -C "$W" rev-parse "$BR")
# not live: approved in state.db, then resumed here (exit 1: others still wait)
expect_exit 1 "$KEY" "$BERNSTEIN" approve deploy --allow-protected
expect_stdout_contains "deploy: merging -> done"
check "approved with the flag: merged, the reviewed head" sh -c \
	"[ $(merges deploy) -eq 1 ] && [ \$(git -C '$W' rev-parse main^2) = $H ]"
check "the approval is audited with allow_protected" python3 -c '
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
a = [r["details"] for r in recs if r["event_type"] == "task.approved"]
assert len(a) == 1 and a[0]["task"] == "deploy" and a[0]["allow_protected"] is True, a' "$W/.bernstein/audit"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

# a later run's tree never gets the user's .env through the agent's list
check "the user's secret is in no task tree" sh -c \
	"! grep -rqs t0250-user-secret '$W/.bernstein/worktrees' '$W/.bernstein/clones'"

# the rules themselves: a bad entry is refused where it is
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
protected_paths:
  - ok/
  - /etc/passwd
EOF
expect_exit 3 "$BERNSTEIN" config show
expect_stderr_contains "bernstein.yaml:4:5" "the bad rule's line and column"
expect_stderr_contains "absolute path"
cp "$T/bernstein.yaml.orig" "$W/bernstein.yaml"
expect_exit 0 "$BERNSTEIN" config show --json
check "config show lists protected_paths" python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["protected_paths"] == ["deploy/"]' "$T/stdout"
test_done
