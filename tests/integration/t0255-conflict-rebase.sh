#!/bin/sh
# Issue #18, conflicts: a task whose merge conflicts is rebased onto the
# base in its own tree (on_conflict: rebase, the default), its gates run
# again on the rebased branch, then it is merged. Real git, real processes
# (the shell agent: the prompt is a sh -c script), real SQLite.
#   - compatible edits: the second task's branch carries the first task's
#     change as a commit of its own, then edits the same line again; the
#     merge conflicts, the rebase drops the duplicate and is clean: merged,
#     its gate ran twice, task.rebased in the audit chain;
#   - a gate that passes on the branch and fails on the rebased tree fails
#     the task (the gates really run again);
#   - edits that truly conflict: the rebase conflicts, is aborted, the task
#     is a conflict with the paths and the reason, the branch as it was, no
#     rebase left in its tree, the user's checkout clean;
#   - on_conflict: fail (a task's own): conflict at once, no rebase.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0255 conflicts: rebase in the task's tree, gates again, merge"

KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
N=0

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

new_repo()
{
	N=$((N + 1))
	W=$T/repo-$N
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'one\ntwo\nthree\n' >"$W/f.txt"
	shell_agent "$W"
	# the gate notes the tree it ran in (outside it: nothing to commit)
	cat >"$W/bernstein.yaml" <<EOF
adapter: shell
parallel: 2
sandbox: none
retry_backoff: 0
$1
gates:
  - {name: note, run: "pwd >> $T/gates-$N.log"}
EOF
}

commit_base() { git_q add -A && git_q commit -q -m base; }

# every task's title, state and reason (for a failure's diagnostics)
show_states()
{
	"$BERNSTEIN" -C "$W" status --json 2>/dev/null | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tasks"]:
    print(t["title"], t["state"], t["attempts"], t.get("reason"))'
}

# the second task's agent waits (at most 30 s) until the first is merged
WAIT_FIRST='i=0; while ! git -C "$BASE_REPO" log main --format=%s | grep -q "^Merge bernstein/first-" && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done'

state_of()
{
	run "$BERNSTEIN" -C "$W" status --json
	python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tasks"]:
    if t["title"] == sys.argv[2]:
        print(t["state"]); print(t.get("reason") or "")' "$T/stdout" "$1"
}

# ---- compatible edits: the rebase is clean ----
new_repo ""
cat >"$W/plan.yaml" <<EOF
name: compatible
tasks:
  - title: first
    prompt: "printf 'one\\\\nA\\\\nthree\\\\n' > f.txt; echo a > a.txt"
  - title: second
    prompt: >-
      printf 'one\\nA\\nthree\\n' > f.txt &&
      git add f.txt && git -c user.name=a -c user.email=a@example.com commit -q -m same &&
      printf 'one\\nB\\nthree\\n' > f.txt; BASE_REPO='$W'; $WAIT_FIRST
EOF
commit_base
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
if [ "$RC" -eq 0 ]; then ok "compatible: the run exits 0"; else
	not_ok "compatible: the run exits 0"; diag "exit $RC"; _diag_file stderr "$T/stderr"
	run "$BERNSTEIN" -C "$W" status; _diag_file status "$T/stdout"
fi
check "compatible: both merged, the second's edit on top" \
	sh -c "[ \"\$(git -C '$W' show main:f.txt)\" = \"\$(printf 'one\nB\nthree')\" ] && git -C '$W' cat-file -e main:a.txt"
check "compatible: the second merged exactly once" sh -c \
	"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/second-') -eq 1 ]"
check "compatible: the second's merged branch is rebased (the first's merge is its ancestor)" sh -c \
	"git -C '$W' merge-base --is-ancestor \$(git -C '$W' log --merges --format=%H --grep='^Merge bernstein/first-' main) main^2"
check "compatible: the second's gate ran twice (before and after the rebase)" sh -c \
	"[ \$(grep -c '/second-' '$T/gates-$N.log') -eq 2 ] && [ \$(grep -c '/first-' '$T/gates-$N.log') -eq 1 ]"
run "$KEY" "$BERNSTEIN" -C "$W" audit show --event-type task.rebased --json
expect_stdout_contains '"result": "rebased"' "compatible: task.rebased is in the audit chain"
run "$KEY" "$BERNSTEIN" -C "$W" audit show --json
check "compatible: the moves merging -> rebasing -> merging are audited" sh -c \
	"grep -q '\"to\": \"rebasing\"' '$T/stdout' && grep -q '\"from\": \"rebasing\"' '$T/stdout'"
check "compatible: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
run "$BERNSTEIN" -C "$W" status --json
check "compatible: the merged task lists no conflict any more" python3 -c '
import json, sys
t = [t for t in json.load(open(sys.argv[1]))["tasks"] if t["title"] == "second"][0]
sys.exit(0 if t["state"] == "done" and t["conflicts"] is None else "%s" % t)' "$T/stdout"

# ---- a gate that fails on the rebased tree fails the task ----
new_repo ""
cat >"$W/plan.yaml" <<EOF
name: regate
tasks:
  - title: first
    prompt: "printf 'one\\\\nA\\\\nthree\\\\n' > f.txt; echo a > a.txt"
  - title: second
    gates:
      - {name: no-a, run: "test ! -e a.txt"}
    prompt: >-
      printf 'one\\nA\\nthree\\n' > f.txt &&
      git add f.txt && git -c user.name=a -c user.email=a@example.com commit -q -m same &&
      printf 'one\\nB\\nthree\\n' > f.txt; BASE_REPO='$W'; $WAIT_FIRST
EOF
commit_base
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
check "regate: the run exits 1" [ "$RC" -eq 1 ]
state_of second >"$T/state"
check "regate: the second failed on its gate after the rebase" sh -c \
	"head -1 '$T/state' | grep -qx failed && grep -q \"gate 'no-a' failed\" '$T/state'"
check "regate: its change is not merged" sh -c "git -C '$W' show main:f.txt | grep -qx A"

# ---- edits that truly conflict: the rebase is aborted, conflict ----
new_repo ""
cat >"$W/plan.yaml" <<'EOF'
name: clash
tasks:
  - {title: left, prompt: "printf 'one\\nL\\nthree\\n' > f.txt"}
  - {title: right, prompt: "printf 'one\\nR\\nthree\\n' > f.txt"}
EOF
commit_base
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
check "clash: the run exits 1" [ "$RC" -eq 1 ]
run "$BERNSTEIN" -C "$W" status --json
grep -q '"state": "conflict"' "$T/stdout" || diag "$(show_states)"
expect_stdout_contains '"state": "conflict"' "clash: one side is a conflict"
expect_stdout_contains '"f.txt"' "clash: naming the file"
expect_stdout_contains 'the rebase onto main conflicts in 1 file(s): f.txt; aborted' \
	"clash: the reason says the rebase conflicted too"
check "clash: no rebase is left in any task tree" sh -c \
	"[ -z \"\$(find '$W/.git/worktrees' -maxdepth 2 -name 'rebase-*' 2>/dev/null)\" ]"
check "clash: the conflicted branch is kept as it was (one commit over the base)" sh -c '
for r in $(git -C "'"$W"'" for-each-ref --format="%(refname)" refs/heads/bernstein/); do
	git -C "'"$W"'" merge-base --is-ancestor "$r" main && continue
	[ "$(git -C "'"$W"'" rev-list --count main.."$r")" -eq 1 ] || exit 1
	git -C "'"$W"'" show "$r":f.txt | grep -qx "[LR]" || exit 1
	exit 0
done; exit 1'
check "clash: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
run "$KEY" "$BERNSTEIN" -C "$W" audit show --event-type task.rebased --json
expect_stdout_contains '"result": "conflict"' "clash: the rebase's conflict is audited"

# ---- on_conflict: fail: conflict at once, no rebase ----
new_repo ""
cat >"$W/plan.yaml" <<'EOF'
name: fail
on_conflict: fail
tasks:
  - {title: left, prompt: "printf 'one\\nL\\nthree\\n' > f.txt"}
  - {title: right, prompt: "printf 'one\\nR\\nthree\\n' > f.txt"}
EOF
commit_base
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
check "fail: the run exits 1" [ "$RC" -eq 1 ]
run "$BERNSTEIN" -C "$W" status --json
grep -q '"state": "conflict"' "$T/stdout" || diag "$(show_states)"
expect_stdout_contains '"state": "conflict"' "fail: one side is a conflict"
check "fail: no rebase was tried" sh -c "! grep -q rebas '$T/stdout'"
run "$KEY" "$BERNSTEIN" -C "$W" audit show --event-type task.rebased --json
check "fail: no task.rebased record" sh -c "! grep -q task.rebased '$T/stdout'"

# ---- bad values are refused where they are written ----
new_repo "on_conflict: merge"
printf 'name: x\ntasks:\n  - {title: x, prompt: "true"}\n' >"$W/plan.yaml"
commit_base
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
check "bernstein.yaml on_conflict: merge is refused (exit 3)" [ "$RC" -eq 3 ]
expect_stderr_contains "on_conflict" "naming the key"

test_done
