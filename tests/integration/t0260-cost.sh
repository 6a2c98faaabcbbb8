#!/bin/sh
# Cost (issue #19): an attempt's cost computed from the tokens the mock
# agent reports at the prices of a repository's catalog/pricing.yaml
# (overriding the embedded table), the model an attempt used, an unknown
# model's cost unknown (null, '?'), never 0; `bernstein cost` per task,
# adapter, model and role, text and --json; tokens and cost per task and
# totals in `status` and `status --json` and the run's summary; a task.cost
# audit record per attempt; a broken pricing.yaml refused at its line.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0260 cost: priced tokens, bernstein cost, status, audit"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/.bernstein/catalog"
# the mock announces model "mock": $1 per million input, $4 per million output
cat >"$W/.bernstein/catalog/pricing.yaml" <<'EOF'
models:
  mock:
    aliases: [mock-latest]
    input: 1
    output: 4
    date: 2026-01-01
    source: t0260
EOF
printf 'adapter: mock\nparallel: 1\nsandbox: none\nretry_backoff: 0\n' >"$W/bernstein.yaml"
cat >"$W/plan.yaml" <<'EOF'
name: costs
tasks:
  - title: alpha
    role: backend
    prompt: |
      usage 1000000 250000
      write a.txt a
  - title: beta
    role: docs
    prompt: |
      usage 2000000 0
      write b.txt b
  - title: gamma
    role: docs
    prompt: |
      once ~/gamma-once rate-limit 0
      usage 500000 0
      write c.txt c
EOF
git_q add -A && git_q commit -q -m base

expect_exit 0 "$KEY" "$BERNSTEIN" run plan.yaml
# alpha 1 + 1 = $2, beta $2, gamma: a rate-limited attempt (no usage) then $0.5
expect_stdout_contains "cost:    3750000 tokens (3500000 in, 250000 out), \$4.5000" \
	"the run's summary has its tokens and cost"

check "state.db: each attempt's model, tokens and priced cost" python3 - "$W/.bernstein/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = {(t, n): (m, i, o, c, s) for t, n, m, i, o, c, s in db.execute(
    "SELECT task_id, n, model, input_tokens, output_tokens, cost_usd, cost_source FROM attempts")}
assert rows[("alpha", 1)] == ("mock", 1000000, 250000, 2.0, "pricing"), rows
assert rows[("beta", 1)] == ("mock", 2000000, 0, 2.0, "pricing"), rows
assert rows[("gamma", 1)][3:] == (None, None), rows   # no tokens: no cost, not 0
assert rows[("gamma", 2)] == ("mock", 500000, 0, 0.5, "pricing"), rows
PY

expect_exit 0 "$BERNSTEIN" cost
expect_stdout_contains "3750000 tokens (3500000 in, 250000 out, 0 cached), cost \$4.5000"
check "cost: one row per task and the total" python3 - "$T/stdout" <<'PY'
import sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1])
        if l.split() and l.split()[0] in ("alpha", "beta", "gamma", "TOTAL")}
assert rows["alpha"][1:] == ["1", "1000000", "250000", "0", "$2.0000"], rows
assert rows["gamma"][1:] == ["2", "500000", "0", "0", "$0.5000"], rows
assert rows["TOTAL"][1:] == ["4", "3500000", "250000", "0", "$4.5000"], rows
PY
for by in task adapter model role; do
	expect_exit 0 "$BERNSTEIN" cost --by "$by" --json
	cp "$T/stdout" "$T/by-$by.json"
done
check "cost --by: the groupings add up" python3 - "$T" <<'PY'
import json, sys
g = lambda by: {x[by]: x for x in json.load(open(f"{sys.argv[1]}/by-{by}.json"))["groups"]}
t = g("task")
assert t["alpha"]["cost_usd"] == 2.0 and t["alpha"]["tokens"] == 1250000, t
assert t["gamma"]["attempts"] == 2 and t["gamma"]["cost_usd"] == 0.5, t
a = g("adapter")
assert list(a) == ["mock"] and a["mock"]["cost_usd"] == 4.5 and a["mock"]["attempts"] == 4, a
m = g("model")
assert list(m) == ["mock"] and m["mock"]["input_tokens"] == 3500000, m
r = g("role")
assert r["backend"]["cost_usd"] == 2.0 and r["docs"]["cost_usd"] == 2.5, r
o = json.load(open(f"{sys.argv[1]}/by-role.json"))
assert o["by"] == "role" and o["total"]["cost_usd"] == 4.5 and o["budget"] is None, o
PY
expect_exit 2 "$BERNSTEIN" cost --by colour
expect_stderr_contains "--by: 'colour' is not one of task, adapter, model, role"
expect_exit 2 "$BERNSTEIN" cost nosuch-run
expect_stderr_contains "no run 'nosuch-run'"

expect_exit 0 "$BERNSTEIN" status
expect_stdout_contains "total: 3750000 tokens (3500000 in, 250000 out), cost \$4.5000"
check "status: tokens and cost per task" grep -Eq '^beta +mock +done .* 2000000 +\$2\.0000 ' \
	"$T/stdout"
expect_exit 0 "$BERNSTEIN" status --json
check "status --json: usage per task and the run's total" python3 - "$T/stdout" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["usage"]["cost_usd"] == 4.5 and o["usage"]["tokens"] == 3750000, o["usage"]
t = {x["id"]: x["usage"] for x in o["tasks"]}
assert t["alpha"]["cost_usd"] == 2.0 and t["gamma"]["attempts"] == 2, t
PY

check "a task.cost record per attempt in the audit chain" python3 - "$W/.bernstein/audit" <<'PY'
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
cost = [r for r in recs if r["event_type"] == "task.cost"]
assert len(cost) == 4, cost
a = [r["details"] for r in cost if r["details"]["task"] == "alpha"][0]
assert a["cost_usd"] == 2.0 and a["model"] == "mock" and a["cost_source"] == "pricing", a
assert a["input_tokens"] == 1000000 and a["output_tokens"] == 250000, a
g1 = [r["details"] for r in cost
      if r["details"]["task"] == "gamma" and r["details"]["attempt"] == 1][0]
assert g1["cost_usd"] is None and g1["cost_source"] is None, g1
PY
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify

# on a terminal (script(1) gives the run one) the live table ends with a
# TOTAL line: the tokens and cost of the run so far
cat >"$W/plan3.yaml" <<'EOF'
name: live
tasks:
  - title: delta
    prompt: |
      usage 1000000 0
      write d.txt d
EOF
git_q add -A && git_q commit -q -m plan3
run "$KEY" script -qec "'$BERNSTEIN' run plan3.yaml" /dev/null
check "on a terminal the run exits 0" test "$RC" -eq 0
check "the live table's footer: TOTAL with the tokens and the cost" \
	grep -Eq 'TOTAL .* 1000000  cost \$1\.0000' "$T/stdout"

# without a price for its model, a cost is unknown: null, '?', never 0
rm "$W/.bernstein/catalog/pricing.yaml"
cat >"$W/plan2.yaml" <<'EOF'
name: unpriced
tasks:
  - title: delta
    prompt: |
      usage 100 50
      write d.txt d
EOF
git_q add -A && git_q commit -q -m plan2
expect_exit 0 "$KEY" "$BERNSTEIN" run plan2.yaml
expect_stdout_contains "cost:    150 tokens (100 in, 50 out), ?" "the summary says the cost is unknown"
expect_exit 0 "$BERNSTEIN" cost --json
check "cost --json: unknown is null, with the attempts it leaves out" python3 - "$T/stdout" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["total"]["cost_usd"] is None and o["total"]["cost_unknown_attempts"] == 1, o
assert o["total"]["tokens"] == 150, o
PY
expect_exit 0 "$BERNSTEIN" cost
expect_stdout_contains "1 attempt of unknown cost"

# a pricing.yaml that is wrong: exit 3 at its line, before anything runs
printf 'models:\n  mock:\n    input: -1\n    output: 1\n    date: 2026-01-01\n    source: x\n' \
	>"$W/.bernstein/catalog/pricing.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run plan2.yaml
expect_stderr_contains "pricing.yaml:3:12: field 'models.mock.input'"

test_done
