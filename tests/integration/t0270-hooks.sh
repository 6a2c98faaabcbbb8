#!/bin/sh
# Lifecycle hooks (issue #19): every hook of bernstein.yaml fires with its
# event as JSON on stdin and BERNSTEIN_* variables, in the documented order
# (pre_task before the agent, pre_merge after it in the task's tree, then
# post_merge, post_task, and on_run_end last), with no variable of the
# host's environment but the allow-listed ones (a secret in bernstein's
# environment never reaches a hook); each run is in the audit chain.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0270 hooks: pre_task, pre_merge, post_merge, post_task, on_run_end"

W=$T/work
O=$T/hooks
mkdir -p "$W" "$O"
git -C "$W" init -q -b main . >/dev/null 2>&1
shell_agent "$W"
printf '.bernstein/\n' >"$W/.gitignore"
# each hook: its stdin, its environment and its cwd into $O, one line of
# the sequence log
DUMP='cat > "$OUT/$BERNSTEIN_EVENT.${BERNSTEIN_TASK:-run}.json"; env > "$OUT/$BERNSTEIN_EVENT.${BERNSTEIN_TASK:-run}.env"; pwd > "$OUT/$BERNSTEIN_EVENT.${BERNSTEIN_TASK:-run}.cwd"; echo "$BERNSTEIN_EVENT ${BERNSTEIN_TASK:-run}" >> "$OUT/seq"'
DUMP=$(printf '%s' "$DUMP" | sed "s|\\\$OUT|$O|g")
cat >"$W/bernstein.yaml" <<YAML
adapter: shell
retry_backoff: 0
max_retries: 0
hooks:
  pre_task: '$DUMP'
  pre_merge: {run: '$DUMP', timeout: 60}
  post_merge: '$DUMP'
  post_task: '$DUMP'
  on_run_end: '$DUMP'
YAML
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
cat >"$W/plan.yaml" <<YAML
name: t0270
tasks:
  - id: good
    title: writes a file
    prompt: "echo agent good >> $O/seq; echo hi > good.txt"
  - id: bad
    title: fails
    prompt: "echo agent bad >> $O/seq; exit 3"
YAML
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC T0270_SECRET=t0270-do-not-leak '$BERNSTEIN' run plan.yaml"
check "the run ends with a failed task (exit 1, got $RC)" test "$RC" -eq 1
RUN=$(sed -n 's/^run \([^ :]*\): .*/\1/p' "$T/stdout" | head -1)
check "the run id is printed" test -n "$RUN"

# the json field F of hook file H is V
jf() {
	$PY - "$O/$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
sys.exit(0 if str(v) == sys.argv[3] else 1)
PY
}

for h in pre_task.good pre_task.bad pre_merge.good post_merge.good post_task.good post_task.bad on_run_end.run; do
	check "$h: ran, its event on stdin" test -s "$O/$h.json"
	check "$h: the run's id" jf "$h.json" run "$RUN"
	check "$h: BERNSTEIN_RUN" grep -qx "BERNSTEIN_RUN=$RUN" "$O/$h.env"
	check "$h: no host variable but the allow-listed ones" sh -c "! grep -q t0270-do-not-leak '$O/$h.env'"
done
check "pre_merge did not run for the failed task" test ! -e "$O/pre_merge.bad.json"
check "post_merge did not run for the failed task" test ! -e "$O/post_merge.bad.json"

check "pre_task: hook pre_task" jf pre_task.good.json hook pre_task
check "pre_task: state pending" jf pre_task.good.json state pending
check "pre_task: the attempt about to start" jf pre_task.good.json attempt 1
check "pre_task: BERNSTEIN_EVENT" grep -qx BERNSTEIN_EVENT=pre_task "$O/pre_task.good.env"
check "pre_task: BERNSTEIN_TASK" grep -qx BERNSTEIN_TASK=good "$O/pre_task.good.env"
check "pre_task: runs in the repository" grep -qx "$W" "$O/pre_task.good.cwd"

HEAD=$(git -C "$W" rev-parse main^2)
MERGE=$(git -C "$W" rev-parse main)
check "pre_merge: runs in the task's tree, not the repository" sh -c "! grep -qx '$W' '$O/pre_merge.good.cwd' && grep -q '/.bernstein/worktrees/' '$O/pre_merge.good.cwd'"
check "pre_merge: state completing" jf pre_merge.good.json state completing
check "pre_merge: head is the commit merged" jf pre_merge.good.json head "$HEAD"
check "pre_merge: BERNSTEIN_HEAD" grep -qx "BERNSTEIN_HEAD=$HEAD" "$O/pre_merge.good.env"
check "pre_merge: BERNSTEIN_BRANCH" grep -q "^BERNSTEIN_BRANCH=bernstein/good" "$O/pre_merge.good.env"
check "pre_merge: its log beside the gate logs" sh -c "ls '$W'/.bernstein/runs/$RUN/good-*/1/hook-pre_merge.log"
check "post_merge: the merge commit" jf post_merge.good.json merge_commit "$MERGE"
check "post_merge: state done" jf post_merge.good.json state done
check "post_task (good): state done" jf post_task.good.json state done
check "post_task (good): outcome completed" jf post_task.good.json outcome completed
check "post_task (bad): state failed" jf post_task.bad.json state failed
check "post_task (bad): outcome failed" jf post_task.bad.json outcome failed
check "post_task (bad): the reason" sh -c "grep -q 'exited with code 3' '$O/post_task.bad.json'"
check "post_task (bad): BERNSTEIN_STATE" grep -qx BERNSTEIN_STATE=failed "$O/post_task.bad.env"
check "nothing carries the prompt" sh -c "! grep -l 'echo hi > good.txt' '$O'/*.json"
check "on_run_end: state failed" jf on_run_end.run.json state failed
check "on_run_end: counts done 1" jf on_run_end.run.json counts.done 1
check "on_run_end: counts failed 1" jf on_run_end.run.json counts.failed 1
check "on_run_end: no BERNSTEIN_TASK" sh -c "! grep -q '^BERNSTEIN_TASK=' '$O/on_run_end.run.env'"

# the order: the sequence of one task, and on_run_end last
line() { grep -nx "$1" "$O/seq" | cut -d: -f1; }
check "order: pre_task < agent < pre_merge < post_merge < post_task" \
	test "$(line 'pre_task good')" -lt "$(line 'agent good')" -a \
	"$(line 'agent good')" -lt "$(line 'pre_merge good')" -a \
	"$(line 'pre_merge good')" -lt "$(line 'post_merge good')" -a \
	"$(line 'post_merge good')" -lt "$(line 'post_task good')"
check "order: pre_task < agent (bad)" test "$(line 'pre_task bad')" -lt "$(line 'agent bad')"
check "order: on_run_end is the last line" test "$(tail -n 1 "$O/seq")" = "on_run_end run"
check "each hook ran once" test "$(wc -l <"$O/seq")" -eq 9

# the audit chain: one hook.finished per hook run, and it verifies
check "hook.finished records in the audit chain" \
	test "$(cat "$W"/.bernstein/audit/*.jsonl | grep -c '"hook.finished"')" -eq 7
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 '$BERNSTEIN' audit verify"
check "the audit chain verifies (exit $RC)" test "$RC" -eq 0
test_done
