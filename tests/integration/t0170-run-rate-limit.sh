#!/bin/sh
# A rate limit's retry hint is honoured through the adapter's meter (issue
# #16 item 6, docs/runs.md "Rate limits"). A script agent, driven by
# `bernstein run` through a profile of its own (claude's dialect), answers
# its first prompt with what a provider prints on a 429 ("retry after 3
# seconds") on stderr and exit 1. The configuration's retry_backoff is 0, so
# only the hint can make anything wait. The times in state.db show that the
# retry starts no sooner than the hint asked, and that the other task of the
# same adapter was not started while the meter said wait either (parallel
# 1: it is next in line the moment the first attempt ends). Only orderings
# and lower bounds are asserted, never an upper bound.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0170 a rate limit's retry hint is honoured by the run loop"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"

# the agent: the prompt is its last argument; task a's first attempt is
# rate limited (the marker lives outside every worktree)
cat >"$T/limited.sh" <<EOF
#!/bin/sh
for a; do p=\$a; done
case \$p in
*task-a*)
	if [ ! -e "$T/a-limited" ]; then
		: >"$T/a-limited"
		echo 'API Error: 429 rate limit exceeded; retry after 3 seconds' >&2
		exit 1
	fi
	name=a ;;
*) name=b ;;
esac
printf 'done\n' >"done-\$name.txt"
echo '{"type":"system","subtype":"init","session_id":"s-'\$name'","model":"m"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-'\$name'","num_turns":1}'
EOF
chmod +x "$T/limited.sh"

mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$W/.bernstein/catalog/profiles/limited.yaml" <<EOF
name: limited
display_name: "Rate-limited agent"
shape: factory
invocation:
  binary: $T/limited.sh
  prompt_positional: true
capabilities:
  tool_use: true
runtime:
  events: {dialect: claude}
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  limited:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: stream-json
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: limited
parallel: 1
max_retries: 2
retry_backoff: 0
EOF
cat >"$W/plan.yaml" <<'EOF'
name: limits
tasks:
  - id: a
    title: a
    prompt: "task-a"
  - id: b
    title: b
    prompt: "task-b"
EOF
git_q add -A && git_q commit -q -m base

expect_exit 0 "$KEY" "$BERNSTEIN" run --json plan.yaml
expect_stdout_contains '"reason":"rate limited; retry 1 of 2 in 3.0 s;' "the retry waits the 3 s the agent asked for"
check "the first attempt was rate limited" test -e "$T/a-limited"

cat >"$T/times.py" <<'EOF'
import datetime, sqlite3, sys

db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT task_id, n, outcome, started_at, ended_at FROM attempts "
                  "ORDER BY started_at").fetchall()

def t(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()

att = {(r[0], r[1]): r for r in rows}
assert len(rows) == 3, rows
a1, a2, b1 = att[("a", 1)], att[("a", 2)], att[("b", 1)]
assert a1[2] == "rate_limited" and a2[2] == "completed" and b1[2] == "completed", rows
limited_at = t(a1[4])
# the retry: no sooner than the hint (retry_at is computed after ended_at)
assert t(a2[3]) >= limited_at + 3.0, ("retry too early", rows)
# the other task of the adapter: held back by the meter too (its wait runs
# on the monotonic clock from the same instant; the timestamps keep
# microseconds)
assert t(b1[3]) >= limited_at + 3.0 - 0.001, ("b started while the meter said wait", rows)
EOF
check "state.db: the retry and the next task start no sooner than the hint" \
	python3 "$T/times.py" "$W/.bernstein/state.db"
test_done
