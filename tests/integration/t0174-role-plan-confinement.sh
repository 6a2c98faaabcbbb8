#!/bin/sh
# sandbox:, network: and limits: per role and per plan (issue #15): a
# role's entry in role_model_policy sets them for the role's tasks, a
# plan's top level for its tasks, with the precedence task > plan > role >
# bernstein.yaml, each decided alone; a bad value is an error at its
# FILE:LINE:COL (exit 3).
#
# A script agent reports whether it reaches a listener on the host (the
# network) and its tier is in `status --json`: bernstein.yaml says landlock
# (network: full), role qa says bwrap with network none, role docs bwrap;
# tasks of those roles get them, a task's own keys win over its role's (a
# qa task asking landlock keeps none from its role and is refused with the
# reason, never run with the host's network), and a plan's top-level
# sandbox:/network: win over the role's while its task's own win over the
# plan's. A plan's limits: reach its tasks (the recorded spec). Skipped
# without Landlock or bwrap.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0174 sandbox, network and limits per role and per plan"

require_landlock
require_bwrap

rm -f "$T/ports" "$T/conns"
"$PY" "$SRCDIR/tests/helpers/tcp-listen.py" --ports-file "$T/ports" --log "$T/conns" \
	--max-seconds 120 &
LISTEN_PID=$!
i=0
while [ ! -s "$T/ports" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
read -r EP OTHER <"$T/ports"

W=$T/work
mkdir -p "$W"
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
printf 'runtime:\n  sandbox: {tiers: [landlock, bwrap]}\n' >>"$W/.bernstein/catalog/profiles/shell.yaml"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
retry_backoff: 0
max_retries: 0
sandbox: landlock
network: full
role_model_policy:
  qa: {sandbox: bwrap, network: none}
  docs: {sandbox: bwrap}
EOF
# task TITLE ROLE [KEYS]: a task writing OUT-TITLE.txt: the listener's answer
task() {
	cat <<EOF
  - title: $1
    role: $2
${3:+    $3
}    prompt: |
      echo "net \$(curl -s -m 3 --noproxy '*' -o /dev/null -w '%{http_code}' http://127.0.0.1:$EP/ 2>/dev/null)" > out-$1.txt
EOF
}
{
	printf 'name: roles\ntasks:\n'
	task backend backend
	task qa qa
	task qa-full qa "network: full"
	task qa-landlock qa "sandbox: landlock"
	task docs-none docs "network: none"
} >"$W/roles.yaml"
{
	printf 'name: planwide\nsandbox: landlock\nnetwork: full\nlimits: {pids: 300}\ntasks:\n'
	task plan-qa qa
	task plan-qa-own qa "sandbox: bwrap
    network: none
    limits: {pids: 200}"
} >"$W/plan.yaml"
git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1

# field ID FIELD: the task's FIELD in the last `status --json`
field() {
	"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print([t for t in d["tasks"] if t["id"] == sys.argv[2]][0].get(sys.argv[3]))' \
		"$T/stdout" "$1" "$2"
}

# ---- config show: the role's keys ----
run sh -c "cd '$W' && exec '$BERNSTEIN' config show --json"
check "config show: role qa's sandbox and network" \
	"$PY" -c "import json,sys; q=json.load(open(sys.argv[1]))['role_model_policy']['qa']; assert q['sandbox']=='bwrap' and q['network']=='none', q" "$T/stdout"

# ---- roles over bernstein.yaml, tasks over roles ----
run sh -c "cd '$W' && exec '$BERNSTEIN' run roles.yaml"
check "roles: the run ends with the refused task (exit 6: refused, nothing else went wrong)" test "$RC" -eq 6
run sh -c "cd '$W' && exec '$BERNSTEIN' status --json"
check "backend (no role keys): bernstein.yaml's landlock" test "$(field backend sandbox)" = landlock
check "backend: bernstein.yaml's network full reaches the host" grep -qx 'net 200' "$W/out-backend.txt"
check "qa: its role's bwrap" test "$(field qa sandbox)" = bwrap
check "qa: its role's network none reaches nothing" grep -qx 'net 000' "$W/out-qa.txt"
check "qa with network: full: the task's own network wins" grep -qx 'net 200' "$W/out-qa-full.txt"
check "qa with network: full: its role's bwrap still" test "$(field qa-full sandbox)" = bwrap
check "qa with sandbox: landlock: refused, never run with the host's network" \
	test "$(field qa-landlock state)" = refused
check "qa with sandbox: landlock: the reason names network none and landlock" \
	sh -c "'$PY' -c \"import json,sys; d=json.load(open(sys.argv[1])); r=[t for t in d['tasks'] if t['id']=='qa-landlock'][0]['reason']; assert 'none' in r and 'landlock has none' in r, r\" '$T/stdout'"
check "qa with sandbox: landlock: nothing ran" test ! -e "$W/out-qa-landlock.txt"
check "docs with network: none: its role's bwrap" test "$(field docs-none sandbox)" = bwrap
check "docs with network: none: reaches nothing" grep -qx 'net 000' "$W/out-docs-none.txt"

# ---- the plan over roles, tasks over the plan ----
run sh -c "cd '$W' && exec '$BERNSTEIN' run plan.yaml"
check "plan: the run exits 0" test "$RC" -eq 0
run sh -c "cd '$W' && exec '$BERNSTEIN' status --json"
check "plan-wide sandbox: landlock wins over role qa's bwrap" test "$(field plan-qa sandbox)" = landlock
check "plan-wide network: full wins over role qa's none" grep -qx 'net 200' "$W/out-plan-qa.txt"
check "a task's own sandbox: bwrap wins over the plan's" test "$(field plan-qa-own sandbox)" = bwrap
check "a task's own network: none wins over the plan's" grep -qx 'net 000' "$W/out-plan-qa-own.txt"
if command -v sqlite3 >/dev/null 2>&1; then
	check "plan-wide limits: {pids: 300} recorded with the task" \
		sh -c "sqlite3 '$W/.bernstein/state.db' \"select spec from tasks where id = 'plan-qa'\" | grep -q '\"pids\": *300'"
	check "a task's own limits: {pids: 200} wins over the plan's" \
		sh -c "sqlite3 '$W/.bernstein/state.db' \"select spec from tasks where id = 'plan-qa-own'\" | grep -q '\"pids\": *200'"
else
	skip "plan-wide limits in the recorded spec" "sqlite3 is not installed"
fi

# ---- bad values: FILE:LINE:COL, exit 3 ----
printf 'role_model_policy:\n  qa: {sandbox: jail}\n' >"$T/bad.yaml"
cp "$T/bad.yaml" "$W/bernstein.yaml"
run sh -c "cd '$W' && exec '$BERNSTEIN' config validate"
check "a role's bad sandbox: exit 3" test "$RC" -eq 3
expect_stderr_contains "bernstein.yaml:2:17: field 'role_model_policy.qa.sandbox': unknown value 'jail'"
printf 'role_model_policy:\n  qa:\n    network: lan\n' >"$W/bernstein.yaml"
run sh -c "cd '$W' && exec '$BERNSTEIN' config validate"
check "a role's bad network: exit 3" test "$RC" -eq 3
expect_stderr_contains "bernstein.yaml:3:14: field 'role_model_policy.qa.network': unknown value 'lan'"
printf 'name: p\nnetwork: lan\nsandbox: jail\nlimits: {pids: 0}\ntasks:\n  - {title: a, prompt: p}\n' >"$W/bad-plan.yaml"
run sh -c "cd '$W' && exec '$BERNSTEIN' plan validate bad-plan.yaml"
check "a plan's bad values: exit 3" test "$RC" -eq 3
expect_stderr_contains "bad-plan.yaml:2:10: field 'network': unknown value 'lan'"
expect_stderr_contains "bad-plan.yaml:3:10: field 'sandbox': unknown value 'jail'"
expect_stderr_contains "bad-plan.yaml:4:16: field 'limits.pids': 0 is out of range"

kill "$LISTEN_PID" 2>/dev/null
test_done
