#!/bin/sh
# kill -9 of bernstein while a retry waits, then `bernstein resume`: the
# retry happens once, when its recorded time has come, on the model its
# number gives; nothing is lost and nothing runs twice (issue #18,
# docs/runs.md "Retries, escalation and fallback"). A script agent (claude's
# dialect, the model as --model) fails its first attempt and succeeds on
# its second; the backoff (2 to 4 s with jitter) leaves the test time to
# see the task pending with its retry_at in state.db and kill the run.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0207 kill -9 during a retry's wait, then resume"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"

cat >"$T/flaky.sh" <<EOF
#!/bin/sh
m=none prev=
for a; do
	[ "\$prev" = --model ] && m=\$a
	prev=\$a
done
echo "\$m" >>"$T/models"
n=\$(wc -l <"$T/models")
echo '{"type":"system","subtype":"init","session_id":"s-'\$n'","model":"m"}'
if [ "\$n" -lt 2 ]; then
	echo '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"boom","session_id":"s-1"}'
	exit 1
fi
printf 'done\n' >done.txt
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-2","num_turns":1}'
EOF
chmod +x "$T/flaky.sh"
mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$W/.bernstein/catalog/profiles/flaky.yaml" <<EOF
name: flaky
display_name: "Flaky agent"
shape: factory
invocation:
  binary: $T/flaky.sh
  model_flag: --model
  prompt_positional: true
capabilities:
  tool_use: true
runtime:
  events: {dialect: claude}
EOF
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  flaky:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: stream-json
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: flaky
retry: {max_attempts: 2, on: [failed], backoff: 4, models: [one, two]}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: crash
tasks:
  - id: a
    title: a
    prompt: "task-a"
EOF
git_q add -A && git_q commit -q -m base

(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
	XDG_CONFIG_HOME="$T/config" "$KEY" ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} \
	${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} \
	${LSAN_OPTIONS:+LSAN_OPTIONS="$LSAN_OPTIONS"} "$BERNSTEIN" run plan.yaml) \
	</dev/null >"$T/bg.out" 2>&1 &
BG=$!
cat >"$T/waiting.py" <<'EOF'
import sqlite3, sys
try:
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=1)
    r = db.execute("SELECT state, attempts, retry_at FROM tasks WHERE id = 'a'").fetchone()
except sqlite3.Error:
    sys.exit(1)
sys.exit(0 if r and r[0] == "pending" and r[1] == 1 and r[2] else 1)
EOF
i=0
while ! python3 "$T/waiting.py" "$W/.bernstein/state.db" && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
if python3 "$T/waiting.py" "$W/.bernstein/state.db"; then
	ok "the task waits for its retry (pending, retry_at set, one attempt)"
else
	not_ok "the task waits for its retry (pending, retry_at set, one attempt)"
	diag "$(cat "$T/bg.out")"
fi
kill -9 "$BG"
wait "$BG" 2>/dev/null
check "killed before the retry started" sh -c "[ \$(wc -l <'$T/models') -eq 1 ]"
python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT retry_at FROM tasks").fetchone()[0])' \
	"$W/.bernstein/state.db" >"$T/retry_at"

expect_exit 0 "$KEY" "$BERNSTEIN" resume
check "two attempts in all, models one then two" sh -c \
	"[ \"\$(tr '\n' ' ' <'$T/models')\" = 'one two ' ]"
check "the work is merged exactly once" sh -c \
	"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/a-') -eq 1 ] && test -e '$W/done.txt'"
cat >"$T/after.py" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT n, outcome, started_at FROM attempts WHERE task_id = 'a' ORDER BY n").fetchall()
assert [r[1] for r in rows] == ["failed", "completed"], rows
retry_at = open(sys.argv[2]).read().strip()
# the recorded wait was kept across the crash: the retry started no sooner
assert rows[1][2] >= retry_at, (rows, retry_at)
st = db.execute("SELECT state, attempts FROM tasks WHERE id = 'a'").fetchone()
assert st == ("done", 2), st
EOF
check "state.db: failed then completed; the retry no sooner than its recorded time" \
	python3 "$T/after.py" "$W/.bernstein/state.db" "$T/retry_at"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify
test_done
