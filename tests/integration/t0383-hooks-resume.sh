#!/bin/sh
# Hooks due when bernstein was killed run at `bernstein resume`, each
# exactly once: a task's post_merge ran, then kill -9 while its post_task
# hook runs; resume runs post_task again (it never finished: in full, its
# event as it was when it fell due) and never post_merge (it ran). What is
# due is in state.db (runs.hooks_due) until the hook ended; a second resume
# runs nothing.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0383 hooks due at kill -9 run once by resume"

W=$T/work
O=$T/out
mkdir -p "$W" "$O"
git -C "$W" init -q -b main . >/dev/null 2>&1
shell_agent "$W"
printf '.bernstein/\n' >"$W/.gitignore"
# post_task: "start", then waits while $O/block exists, then "end"
SLOW="echo \"start \$BERNSTEIN_TASK \$BERNSTEIN_STATE \$BERNSTEIN_RUN\" >> $O/seq; while [ -e $O/block ]; do sleep 0.1; done; echo \"end \$BERNSTEIN_TASK\" >> $O/seq"
cat >"$W/bernstein.yaml" <<YAML
adapter: shell
retry_backoff: 0
max_retries: 0
hooks:
  post_merge: 'echo "post_merge \$BERNSTEIN_TASK" >> $O/seq'
  post_task: '$SLOW'
  on_run_end: 'echo "on_run_end run" >> $O/seq'
YAML
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
cat >"$W/plan.yaml" <<YAML
name: t0383
tasks:
  - id: one
    title: one
    prompt: "echo one > one.txt"
YAML

# due: the hooks not yet run, as state.db has them
due() {
	$PY -c '
import sqlite3, sys, json
db = sqlite3.connect(sys.argv[1])
v = db.execute("SELECT hooks_due FROM runs ORDER BY rowid DESC LIMIT 1").fetchone()[0]
print(" ".join(e["task"] + "." + e["hook"] for e in json.loads(v or "[]")))' "$W/.bernstein/state.db"
}

touch "$O/block"
bg run plan.yaml
check "the post_task hook starts" wait_until "grep -q '^start one' '$O/seq' 2>/dev/null"
check "while it runs, it is due in state.db" test "$(due)" = "one.post_task"
kill -9 "$BGPID"
wait "$BGPID" 2>/dev/null
check "the killed bernstein's hook is gone with it" wait_no_procs "$SLOW"
RUN=$(sed -n 's/^run \([^ :]*\): .*/\1/p' "$T/run.out" | head -1)
check "still due after the kill" test "$(due)" = "one.post_task"
check "post_merge ran before the kill" test "$(grep -c '^post_merge one$' "$O/seq")" -eq 1
rm -f "$O/block"

run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' resume"
check "resume ends ok (exit $RC)" test "$RC" -eq 0
check "post_task ran again, in full, once" test "$(grep -c '^start one' "$O/seq")" -eq 2 -a "$(grep -c '^end one$' "$O/seq")" -eq 1
check "with its event as when it fell due (state done, the run)" \
	test "$(tail -n 3 "$O/seq" | grep '^start' | tail -n 1)" = "start one done $RUN"
check "post_merge was not run again" test "$(grep -c '^post_merge one$' "$O/seq")" -eq 1
check "nothing due any more" test -z "$(due)"
check "on_run_end of the resume, after post_task" test "$(tail -n 1 "$O/seq")" = "on_run_end run"
check "the hook's run is in the audit chain" \
	test "$(cat "$W"/.bernstein/audit/*.jsonl | grep '"hook.finished"' | grep -c '"post_task"')" -ge 1
N=$(wc -l <"$O/seq")
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' resume"
check "a second resume runs no task hook again (at most its own on_run_end)" test "$(sed -n "$((N + 1)),\$p" "$O/seq" | grep -vc '^on_run_end run$')" -eq 0
test_done
