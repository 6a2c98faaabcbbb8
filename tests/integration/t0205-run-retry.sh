#!/bin/sh
# retry: and escalation models (issue #18, "Retries, escalation, fallback";
# docs/runs.md "Retries, escalation and fallback"). A script agent, driven
# by `bernstein run` through a profile of its own (claude's dialect, the
# model passed as --model), fails its first two attempts and succeeds on
# the third: each attempt's argv is logged outside every worktree, so the
# test sees the escalation models in order. bernstein.yaml gives the
# policy, a role and a task override parts of it (task > role >
# bernstein.yaml). Bad values are refused at FILE:LINE:COL (exit 3).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0205 retry: attempts, backoff, escalation models, precedence"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"

# the agent: the prompt is its last argument; its argv goes to argv-TASK;
# task-a fails until its third attempt, task-b always fails
cat >"$T/flaky.sh" <<EOF
#!/bin/sh
m=none prev=
for a; do
	[ "\$prev" = --model ] && m=\$a
	prev=\$a p=\$a
done
case \$p in
*task-a*) name=a ;;
*) name=b ;;
esac
echo "\$m" >>"$T/models-\$name"
n=\$(wc -l <"$T/models-\$name")
case \$p in *"Resume context"*) : >"$T/resumed-\$name" ;; esac
echo '{"type":"system","subtype":"init","session_id":"s-'\$name\$n'","model":"m"}'
if [ "\$name" = b ] || [ "\$n" -lt 3 ]; then
	echo '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"boom '\$n'","session_id":"s-'\$name\$n'"}'
	exit 1
fi
printf 'done\n' >"done-\$name.txt"
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-'\$name\$n'","num_turns":1}'
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
parallel: 2
retry:
  max_attempts: 3
  on: [failed, crashed]
  backoff: 0
  models: [small, medium, big]
role_model_policy:
  qa:
    retry: {models: [qa-one, qa-two, qa-three]}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: retries
tasks:
  - id: a
    title: a
    prompt: "task-a"
  - id: b
    title: b
    role: qa
    prompt: "task-b"
    retry: {max_attempts: 2}
EOF
git_q add -A && git_q commit -q -m base

expect_exit 1 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stdout_contains "attempts: 2 (the last 2 on flaky, model qa-two)" "the summary shows b's attempts, adapter and model"
check "task a: three attempts, models small, medium, big in that order" sh -c \
	"[ \"\$(tr '\n' ' ' <'$T/models-a')\" = 'small medium big ' ]"
check "task b: two attempts (its own max_attempts), its role's models" sh -c \
	"[ \"\$(tr '\n' ' ' <'$T/models-b')\" = 'qa-one qa-two ' ]"
check "the retries continued with the recovered context (fallback prompt)" \
	test -e "$T/resumed-a"
expect_exit 0 "$KEY" "$BERNSTEIN" status --json
cat >"$T/status.py" <<'EOF'
import json, sys
tasks = {t["id"]: t for t in json.load(open(sys.argv[1]))["tasks"]}
a, b = tasks["a"], tasks["b"]
assert a["state"] == "done" and a["attempts"] == 3, a
assert a["adapter_attempt"] == 3 and a["adapter"] == "flaky", a
assert a["model"] == "big" and a["fallback"] == 0, a
assert b["state"] == "failed" and b["attempts"] == 2, b
assert b["model"] == "qa-two", b
assert "boom 2" in b["reason"], b
EOF
check "status --json: attempt, adapter, model, why" python3 "$T/status.py" "$T/stdout"
cat >"$T/db.py" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ev = [r[0] for r in db.execute("SELECT outcome FROM attempts WHERE task_id = 'a' ORDER BY n")]
assert ev == ["failed", "failed", "completed"], ev
EOF
check "state.db: the attempts of a" python3 "$T/db.py" "$W/.bernstein/state.db"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify
check "the audit chain says why and with which model the retry came" sh -c \
	"find '$W/.bernstein' -name '*.jsonl' -exec cat {} + | grep 'task.transition' |
	grep -q 'boom 1.*retry 1 of 2 in 0.0 s with model medium'"

# bad values, each at its place
printf 'retry:\n  max_attempts: 0\n' >"$W/bernstein.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "bernstein.yaml:2:17: field 'retry.max_attempts': 0 is out of range (1..21)"
printf 'retry:\n  on: [failed, hung]\n' >"$W/bernstein.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "bernstein.yaml:2:16: field 'retry.on[1]': unknown outcome 'hung'"
printf 'max_retries: 2\nretry:\n  max_attempts: 3\n' >"$W/bernstein.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "bernstein.yaml:3:17: field 'retry.max_attempts': give retry.max_attempts or its older spelling max_retries"
printf 'adapter: flaky\n' >"$W/bernstein.yaml"
cat >"$W/plan2.yaml" <<'EOF'
name: bad
tasks:
  - title: a
    prompt: p
    retry: {models: [good, "-rf"], bogus: 1}
    fallback: [flaky, flaky]
EOF
expect_exit 3 "$KEY" "$BERNSTEIN" run plan2.yaml
expect_stderr_contains "plan2.yaml:5:36: unknown key 'bogus' in tasks[0].retry"
expect_stderr_contains "plan2.yaml:6:23: field 'tasks[0].fallback[1]': adapter 'flaky' is listed twice"
test_done
