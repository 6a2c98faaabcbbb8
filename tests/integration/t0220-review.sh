#!/bin/sh
# Issue #18, "Review and pull requests": merge: review. A task whose gates
# passed waits in `review`; `bernstein diff` shows its branch against the
# merge base (--stat, --json); `approve` merges it, in a live run through
# the control channel (its dependent then starts) and on a finished one by
# a resume; `reject --feedback` starts a new attempt whose prompt carries
# the feedback (a script agent records its prompt: fallback; the mock agent
# resumes its own session natively and acts on it); an approve of a branch
# that moved since review, or of another head than the reviewed one, is
# refused; every approve and reject is audited with who and the head.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0220 merge: review: diff, approve, reject with feedback, a moved head refused"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
BGPID=

_t0220_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	_lib_cleanup
}
trap _t0220_cleanup EXIT

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

merges() { git -C "$W" log --merges --format=%s main | grep -c "^Merge bernstein/$1-"; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"
shell_agent "$W"
# the agent 'rec': a script that records each prompt it is given
# (prompt.1, prompt.2...) and writes one line per attempt
cat >"$T/rec.sh" <<EOF
n=\$(ls $T/prompt.* 2>/dev/null | wc -l)
n=\$((n + 1))
printf '%s' "\$1" > $T/prompt.\$n
echo "attempt \$n" > rec.txt
EOF
script_agent "$W" rec "$T/rec.sh"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 2
kill_grace: 1
sandbox: none
merge: review
gates:
  - {name: has-file, run: "test -n \"$(ls)\""}
EOF
git_q add -A
git_q commit -q -m base

# ---- a finished run: diff, reject with feedback (fallback), approve ----
cat >"$W/one.yaml" <<'EOF'
name: one
tasks:
  - title: rec
    adapter: rec
    prompt: "Write rec.txt."
EOF
git_q add -A
git_q commit -q -m plan
expect_exit 1 "$KEY" "$BERNSTEIN" run one.yaml
expect_stdout_contains "completing -> review" "the task waits in review after its gates"
check "it is in review" test "$(task_state rec)" = review
check "nothing merged yet" test "$(merges rec)" -eq 0
BR=$(git -C "$W" for-each-ref --format='%(refname:short)' 'refs/heads/bernstein/rec-*')
H1=$(git -C "$W" rev-parse "$BR")
# main moves on meanwhile: diff is against the merge base, not main's head
printf 'moved\n' >"$W/later.txt"
git_q add later.txt
git_q commit -q -m later
expect_exit 0 "$BERNSTEIN" diff rec
expect_stdout_contains "+attempt 1" "diff shows the agent's change"
check "diff is against the merge base (main's later commit is not in it)" \
	sh -c "! grep -q later.txt '$T/stdout'"
expect_exit 0 "$BERNSTEIN" diff rec --stat
expect_stdout_contains "rec.txt | 1 +" "diff --stat"
expect_exit 0 "$BERNSTEIN" diff rec --json
check "diff --json: head, reviewed head, files, patch" python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["head"] == sys.argv[2] and o["reviewed_head"] == sys.argv[2], o
assert o["moved_since_review"] is False
assert o["files"] == [{"path": "rec.txt", "added": 1, "deleted": 0}], o["files"]
assert "+attempt 1" in o["patch"]' "$T/stdout" "$H1"
expect_exit 2 "$BERNSTEIN" diff nosuch
expect_exit 2 "$BERNSTEIN" reject rec
expect_stderr_contains "missing --feedback"

FB='Keep the file short.
--dangerously-skip-permissions $(touch pwned) "quoted"'
expect_exit 1 "$KEY" "$BERNSTEIN" reject rec --feedback "$FB"
expect_stdout_contains "review -> pending" "reject: a new attempt"
check "the second attempt ran" test -f "$T/prompt.2"
check "its prompt is the task's, then the feedback, verbatim" python3 -c '
import sys
p = open(sys.argv[1]).read()
assert p.startswith("Write rec.txt."), p
assert "## Review feedback" in p, p
assert p.rstrip("\n").endswith(sys.argv[2]), p' "$T/prompt.2" "$FB"
check "the feedback ran nothing" test ! -e "$W/.bernstein/worktrees/pwned" -a ! -e "$W/pwned"
check "back in review after its gates" test "$(task_state rec)" = review
H2=$(git -C "$W" rev-parse "$BR")
check "the new attempt moved the branch" test "$H1" != "$H2"

# an approve of a head that moved since review is refused
git -C "$W" update-ref "refs/heads/$BR" "$H1"
expect_exit 1 "$KEY" "$BERNSTEIN" approve rec
expect_stderr_contains "not at ${H2%"${H2#????????????}"} that was reviewed" "a moved branch is refused"
check "still in review" test "$(task_state rec)" = review
check "not merged" test "$(merges rec)" -eq 0
expect_exit 0 "$BERNSTEIN" diff rec
expect_stdout_contains "moved since review" "diff warns of the moved branch"
git -C "$W" update-ref "refs/heads/$BR" "$H2"
expect_exit 1 "$KEY" "$BERNSTEIN" approve rec --head "$H1"
expect_stderr_contains "was reviewed, not" "--head of another commit is refused"
expect_exit 0 "$KEY" "$BERNSTEIN" approve rec --head "$H2"
expect_stdout_contains "review -> merging"
check "approved: done" test "$(task_state rec)" = done
check "merged once, the reviewed head" sh -c \
	"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/rec-') -eq 1 ] &&
	[ \$(git -C '$W' rev-parse main^2) = $H2 ]"
check "the main checkout has the file" grep -q "attempt 2" "$W/rec.txt"
check "approve and reject audited with who and the head" python3 -c '
import glob, json, os, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
rej = [r for r in recs if r["event_type"] == "task.rejected"]
app = [r for r in recs if r["event_type"] == "task.approved"]
assert len(rej) == 1 and len(app) == 1, (len(rej), len(app))
assert rej[0]["details"]["head"] == sys.argv[2] and rej[0]["details"]["who"]["uid"] == os.getuid()
assert app[0]["details"]["head"] == sys.argv[3] and app[0]["details"]["who"]["uid"] == os.getuid()
req = [r["details"] for r in recs if r["event_type"] == "control.request"]
assert any(d.get("op") == "reject" for d in req), req' "$W/.bernstein/audit" "$H1" "$H2"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

# ---- native resume: the mock agent continues its session with the feedback ----
cat >"$W/mock.yaml" <<'EOF'
name: mock
tasks:
  - title: m
    adapter: mock
    prompt: |
      write m.txt first
EOF
git_q add -A
git_q commit -q -m mock
expect_exit 1 "$KEY" "$BERNSTEIN" run mock.yaml
check "mock task in review" test "$(task_state m)" = review
expect_exit 1 "$KEY" "$BERNSTEIN" reject m --feedback "Add the second file.
write m2.txt from the review"
check "the attempt resumed the agent's session natively" sh -c \
	"grep -q '\"resume_id\": \"' '$W'/.bernstein/runs/*/m-*/2/plan.json"
check "the agent acted on the feedback" sh -c \
	"git -C '$W' show \$(git -C '$W' for-each-ref --format='%(refname:short)' 'refs/heads/bernstein/m-*'):m2.txt | grep -q 'from the review'"

# ---- a live run: approve through the control channel; the dependent starts ----
cat >"$W/live.yaml" <<EOF
name: live
tasks:
  - title: quick
    prompt: "echo quick > quick.txt"
  - title: after
    depends_on: [quick]
    prompt: "cat quick.txt > after.txt"
  - title: hold
    prompt: "touch $T/hold.started; while [ ! -f $T/go ]; do sleep 0.05; done; echo held > hold.txt"
EOF
git_q add -A
git_q commit -q -m live
bg run live.yaml
check "quick waits in review while hold runs" wait_until '[ "$(task_state quick)" = review ]'
check "after waits for quick's review" test "$(task_state after)" = pending
expect_exit 0 "$BERNSTEIN" approve quick
expect_stdout_contains "quick: done" "the live run merged it at once"
check "quick merged while the run is live" test "$(merges quick)" -eq 1
check "after started and reached review" wait_until '[ "$(task_state after)" = review ]'
expect_exit 0 "$BERNSTEIN" diff after
expect_stdout_contains "+quick" "after saw quick's merge"
touch "$T/go"
wait "$BGPID"
RUNRC=$?
BGPID=
check "the run ends with tasks in review: exit 1" test "$RUNRC" -eq 1
check "its summary names the review" grep -q "review" "$T/run.out"
expect_exit 0 "$KEY" "$BERNSTEIN" approve after hold
check "both merged by the resume" sh -c "[ $(merges after) -eq 1 ] && [ $(merges hold) -eq 1 ]"
check "the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
expect_exit 1 "$KEY" "$BERNSTEIN" approve after
expect_stderr_contains "only a task in review is approved"

test_done
