#!/bin/sh
# Budgets with on_exceed: drain (issue #19): a plan's budget (winning over
# bernstein.yaml's) is recorded with the run; crossing warn_at and the cap
# are one budget.warn and one budget.exceeded audit record each; at the cap
# no new attempt starts, the run ends with exit 7 and a summary line that
# says so; spent-so-far survives `resume` (still at the cap: nothing
# starts, exit 7 again), and `resume --max-cost-usd` raises the cap so the
# rest runs, counting what was spent before.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0261 budget: warn, cap, drain, resume"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/.bernstein/catalog"
cat >"$W/.bernstein/catalog/pricing.yaml" <<'EOF'
models:
  mock:
    input: 1
    output: 1
    date: 2026-01-01
    source: t0261
EOF
# bernstein.yaml's cap is high; the plan's (lower) wins, warn_at from here
cat >"$W/bernstein.yaml" <<'EOF'
adapter: mock
parallel: 1
sandbox: none
budget: {max_cost_usd: 100, warn_at: 0.5}
notify: {desktop: true, on: [budget_warn, budget_exceeded]}
EOF
# a stand-in notify-send on PATH records each notification's argv
mkdir -p "$T/bin"
cat >"$T/bin/notify-send" <<SH
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done >> "$T/notify-send.argv"
echo -- >> "$T/notify-send.argv"
SH
chmod +x "$T/bin/notify-send"
# $1 a task, one after the other: after one $1 (40% of 2.5 < 50%), after two
# $2 (80%: warned), after three $3 (over: exceeded); four and five wait
cat >"$W/plan.yaml" <<'EOF'
name: drain
budget: {max_cost_usd: 2.5}
tasks:
  - title: one
    prompt: |
      usage 1000000 0
      write one.txt 1
  - title: two
    depends_on: [one]
    prompt: |
      usage 500000 500000
      write two.txt 2
  - title: three
    depends_on: [two]
    prompt: |
      usage 1000000 0
      write three.txt 3
  - title: four
    depends_on: [three]
    prompt: |
      usage 1000000 0
      write four.txt 4
  - title: five
    depends_on: [three]
    prompt: write five.txt 5
EOF
git_q add -A && git_q commit -q -m base

audit_types()
{
	python3 - "$W/.bernstein/audit" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")):
    for l in open(f):
        r = json.loads(l)
        if r["event_type"].startswith("budget."):
            print(r["event_type"], json.dumps(r["details"], sort_keys=True))
PY
}

expect_exit 7 "$KEY" PATH="$T/bin:/usr/bin:/bin" "$BERNSTEIN" run plan.yaml
expect_stdout_contains "run " "a summary"
expect_stdout_contains "budget: \$3.0000 of \$2.5000 (120%); warn_at 0.5, on_exceed drain; the cap is reached"
expect_stdout_contains "budget exceeded: no new attempt started, the running ones finished; 'bernstein resume"
expect_stderr_contains "budget: 80% of max_cost_usd spent"
expect_stderr_contains "budget exceeded: max_cost_usd reached (\$3.0000 of \$2.5000, 3000000 tokens)"
check "three tasks ran, two were never started" python3 - "$W/.bernstein/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
st = dict(db.execute("SELECT id, state FROM tasks"))
assert st == {"one": "done", "two": "done", "three": "done", "four": "pending",
              "five": "pending"}, st
assert db.execute("SELECT count(*) FROM attempts").fetchone()[0] == 3
b = db.execute("SELECT budget FROM runs").fetchone()[0]
assert '"max_cost_usd":2.5' in b and '"warn_at":0.5' in b, b
PY
audit_types >"$T/budget1"
check "one budget.warn, then one budget.exceeded" python3 - "$T/budget1" <<'PY'
import json, sys
ev = [(l.split(" ", 1)[0], json.loads(l.split(" ", 1)[1])) for l in open(sys.argv[1])]
assert [e for e, _ in ev] == ["budget.warn", "budget.exceeded"], ev
assert ev[0][1]["spent_usd"] == 2.0 and ev[0][1]["max_cost_usd"] == 2.5, ev
assert ev[1][1]["spent_usd"] == 3.0 and ev[1][1]["on_exceed"] == "drain", ev
PY
i=0
while [ "$(grep -cx -- -- "$T/notify-send.argv" 2>/dev/null)" != 2 ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "budget_warn and budget_exceeded notified (desktop), once each" sh -c \
	"[ \$(grep -cx -- -- '$T/notify-send.argv') -eq 2 ] && grep -q 'max_cost_usd: 80% spent' '$T/notify-send.argv' && grep -q 'max_cost_usd: 120% spent' '$T/notify-send.argv'"
expect_exit 0 "$BERNSTEIN" status
expect_stdout_contains ": interrupted, exit 7 (budget reached)" "status gives the run's exit code, 7"
expect_exit 0 "$BERNSTEIN" status --json
check "status --json: exit_code 7" python3 -c "
import json; assert json.load(open('$T/stdout'))['exit_code'] == 7"
expect_exit 0 "$BERNSTEIN" cost --json
check "cost --json: the budget, reached" python3 - "$T/stdout" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["budget"]
assert b["exceeded"] is True and b["spent_usd"] == 3.0 and b["max_cost_usd"] == 2.5, b
PY

# resume: what was spent counts; still at the cap, nothing starts
expect_exit 7 "$KEY" "$BERNSTEIN" resume
expect_stdout_contains "budget exceeded: no new attempt started"
check "resume started nothing" python3 - "$W/.bernstein/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("SELECT count(*) FROM attempts").fetchone()[0] == 3
PY
check "no file of the held-back tasks" test ! -e "$W/four.txt" -a ! -e "$W/five.txt"

# a higher cap: the rest runs; $3 + $1 = $4 of $10
expect_exit 0 "$KEY" "$BERNSTEIN" resume --max-cost-usd 10
expect_stdout_contains "budget: \$4.0000 of \$10.0000 (40%)"
check "the held-back tasks ran" test -e "$W/four.txt" -a -e "$W/five.txt"
audit_types >"$T/budget2"
check "the resume at the cap and the new cap are audited; 40% < warn_at: no warning" \
	python3 - "$T/budget2" <<'PY'
import json, sys
ev = [(l.split(" ", 1)[0], json.loads(l.split(" ", 1)[1])) for l in open(sys.argv[1])]
assert [e for e, _ in ev] == ["budget.warn", "budget.exceeded", "budget.exceeded",
                              "budget.set"], ev
assert ev[3][1]["max_cost_usd"] == 10, ev
PY
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify
expect_exit 2 "$BERNSTEIN" resume --max-cost-usd 0
expect_stderr_contains "--max-cost-usd: '0' is not an amount of USD above 0"

# a budget that is wrong: exit 3 at its field, nothing recorded
printf 'name: bad\nbudget: {max_cost_usd: 5, warn_at: 2}\ntasks:\n  - title: t\n    prompt: say x\n' \
	>"$W/bad.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run bad.yaml
expect_stderr_contains "bad.yaml:2:36: field 'budget.warn_at'"

test_done
