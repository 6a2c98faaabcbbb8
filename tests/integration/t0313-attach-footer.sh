#!/bin/sh
# `bernstein attach` on a terminal: the live table's footer counts the
# tokens of a task's earlier attempts too (read from state.db), not only the
# attempt it follows. A mock task reports 100 + 50 tokens and is rate
# limited on its first attempt; its retry reports the same again and waits
# for a file; attach starts during the retry, and its footer ends at the
# run's 300 tokens (the code before counted the followed attempt alone: 150).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0313 attach: the footer counts earlier attempts"
command -v script >/dev/null 2>&1 || { echo "1..0 # SKIP no script(1) (bsdutils)"; exit 0; }

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nparallel: 1\nsandbox: none\nretry_backoff: 0\n' >"$W/bernstein.yaml"
printf '%s\n' "name: footer" "tasks:" "  - title: twice" "    prompt: |" \
	"      usage 100 50" "      once .rl rate-limit 0" "      sleep 4" "      write d.txt d" \
	>"$W/plan.yaml"
git_q add -A && git_q commit -q -m base

expect_exit 0 "$KEY" "$BERNSTEIN" run --detach plan.yaml
check "the task is on its second attempt" wait_until \
	'[ "$(cd "$W" && "$BERNSTEIN" status --json 2>/dev/null | "$PY" -c "import json,sys; print(json.load(sys.stdin)[\"tasks\"][0][\"attempts\"])" 2>/dev/null)" = 2 ]'
run "$KEY" script -qec "'$BERNSTEIN' attach" /dev/null
check "attach follows the run to its end (exit 0)" test "$RC" -eq 0
check "the footer counts both attempts: 300 tokens" grep -Eq 'TOTAL +300  cost' "$T/stdout"
check "never the followed attempt's alone" sh -c '! grep -Eq "TOTAL +150  cost" "$1"' sh "$T/stdout"
expect_exit 0 "$BERNSTEIN" status --json
check "state agrees: two attempts, 300 tokens" "$PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))["tasks"][0]
assert t["attempts"] == 2, t
u = t["usage"]
assert u["input_tokens"] + u["output_tokens"] == 300, u' "$T/stdout"

test_done
