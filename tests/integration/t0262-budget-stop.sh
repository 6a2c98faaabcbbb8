#!/bin/sh
# Budgets with on_exceed: stop (issue #19): when an agent's live usage
# crosses the cap, no new attempt starts and every running agent is stopped
# as `bernstein stop --force` does: the spender and a bystander that would
# run for a minute both end interrupted (resumable), nothing of theirs is
# left running, the task that depends on the spender never starts, and the
# run exits 7 with budget.exceeded (on_exceed stop) in the audit chain.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0262 budget: on_exceed stop stops the running agents"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
MARK="t0262-$$"

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
cat >"$W/.bernstein/catalog/pricing.yaml" <<'EOF'
models:
  mock:
    input: 1
    output: 1
    date: 2026-01-01
    source: t0262
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: mock
parallel: 2
sandbox: none
kill_grace: 1
EOF
# the bystander starts first; the spender reports $2 (of a $1 cap) after it
cat >"$W/plan.yaml" <<EOF
name: stop
budget: {max_cost_usd: 1, on_exceed: stop}
tasks:
  - title: bystander
    adapter: shell
    prompt: ": >'$T/bystander.started'; sleep 60; : $MARK; echo b > b.txt"
  - title: spender
    prompt: |
      sleep 2
      usage 2000000 0
      sleep 60
      write a.txt a
  - title: later
    depends_on: [spender]
    prompt: write c.txt c
EOF
git_q add -A && git_q commit -q -m base

expect_exit 7 "$KEY" "$BERNSTEIN" run plan.yaml
check "the bystander had started" test -e "$T/bystander.started"
expect_stdout_contains "budget exceeded: the running agents were stopped and no new attempt started"
expect_stderr_contains "no new attempt starts; the running agents are being stopped"
check "both running tasks were stopped (interrupted), the dependent one never started" \
	python3 - "$W/.bernstein/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
st = dict(db.execute("SELECT id, state FROM tasks"))
assert st == {"bystander": "interrupted", "spender": "interrupted", "later": "pending"}, st
n = dict(db.execute("SELECT task_id, count(*) FROM attempts GROUP BY task_id"))
assert n == {"bystander": 1, "spender": 1}, n
c = db.execute("SELECT cost_usd FROM attempts WHERE task_id = 'spender'").fetchone()[0]
assert c == 2.0, c
PY
check "nothing of theirs finished" test ! -e "$W/a.txt" -a ! -e "$W/b.txt"
check "no agent process is left" wait_no_procs ": $MARK; echo b > b.txt"
check "budget.exceeded with on_exceed stop, once" python3 - "$W/.bernstein/audit" <<'PY'
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
ex = [r["details"] for r in recs if r["event_type"] == "budget.exceeded"]
assert len(ex) == 1 and ex[0]["on_exceed"] == "stop" and ex[0]["spent_usd"] == 2.0, ex
w = [r for r in recs if r["event_type"] == "budget.warn"]
assert len(w) == 1, w   # crossed together with the cap: the warning too, first
PY
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

test_done
