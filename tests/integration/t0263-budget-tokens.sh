#!/bin/sh
# Budgets by tokens and from the command line (issue #19): max_tokens in
# bernstein.yaml counts the tokens of attempts whose cost is unknown (no
# price for the mock here), and a warning says max_cost_usd cannot; `run --max-cost-usd` wins over the plan's cap;
# the live table's lines and `status` show the spent tokens; a bad budget in
# bernstein.yaml is refused at its field (exit 3) and a bad --max-cost-usd
# is a usage error.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0263 budget: max_tokens, --max-cost-usd"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: mock
parallel: 1
sandbox: none
budget: {max_tokens: 1500, max_cost_usd: 100}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: tokens
tasks:
  - title: t1
    prompt: |
      usage 600 200
      write t1.txt 1
  - title: t2
    depends_on: [t1]
    prompt: |
      usage 600 200
      write t2.txt 2
  - title: t3
    depends_on: [t2]
    prompt: write t3.txt 3
EOF
git_q add -A && git_q commit -q -m base

# 800 tokens (53%), then 1600 (over 1500): t3 waits, though no cost is known
expect_exit 7 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "budget exceeded: max_tokens reached (1600 of 1500 tokens)"
expect_stdout_contains "budget: \$0.0000 of \$100.0000 (0%), 1600 of 1500 tokens (107%); warn_at 0.8, on_exceed drain; the cap is reached"
expect_stderr_contains "t1: budget: the cost of this attempt is unknown (its agent reported none and model 'mock' has no price in catalog/pricing.yaml): max_cost_usd does not count it, max_tokens does"
check "that is said once" test "$(grep -c 'cost of this attempt is unknown' "$T/stderr")" -eq 1
check "t3 never started" test ! -e "$W/t3.txt"
expect_exit 0 "$BERNSTEIN" status --json
check "status --json: the budget by tokens, reached" python3 - "$T/stdout" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
b = o["budget"]
assert b["max_tokens"] == 1500 and b["tokens"] == 1600 and b["exceeded"] is True, b
assert b["spent_usd"] == 0 and o["usage"]["cost_usd"] is None, o
PY

# --max-cost-usd over the plan's cap (the mock priced at $1 per million)
mkdir -p "$W/.bernstein/catalog"
printf 'models:\n  mock: {input: 1, output: 1, date: 2026-01-01, source: t0263}\n' \
	>"$W/.bernstein/catalog/pricing.yaml"
printf 'adapter: mock\nparallel: 1\nsandbox: none\n' >"$W/bernstein.yaml"
cat >"$W/plan2.yaml" <<'EOF'
name: dollars
budget: {max_cost_usd: 100}
tasks:
  - title: d1
    prompt: |
      usage 1000000 0
      write d1.txt 1
  - title: d2
    depends_on: [d1]
    prompt: write d2.txt 2
EOF
git_q add -A && git_q commit -q -m plan2
expect_exit 2 "$KEY" "$BERNSTEIN" run --max-cost-usd -1 plan2.yaml
expect_stderr_contains "--max-cost-usd: '-1' is not an amount of USD above 0"
expect_exit 7 "$KEY" "$BERNSTEIN" run --max-cost-usd 0.5 plan2.yaml
expect_stdout_contains "budget: \$1.0000 of \$0.5000 (200%)"
check "d2 never started" test ! -e "$W/d2.txt"
check "the run recorded the command line's cap" python3 - "$W/.bernstein/state.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
b = json.loads(db.execute("SELECT budget FROM runs ORDER BY rowid DESC LIMIT 1").fetchone()[0])
assert b["max_cost_usd"] == 0.5, b
PY

# a budget that is wrong in bernstein.yaml: exit 3 at its field
printf 'adapter: mock\nbudget:\n  on_exceed: pause\n' >"$W/bernstein.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run plan2.yaml
expect_stderr_contains "bernstein.yaml:3:14: field 'budget.on_exceed'"
printf 'adapter: mock\nbudget: {max_cost: 5}\n' >"$W/bernstein.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run plan2.yaml
expect_stderr_contains "bernstein.yaml:2:10: field 'budget.max_cost': unknown key"

test_done
