#!/bin/sh
# hooks: and notify: of a plan (top level) and of a role (role_model_policy),
# merged with bernstein.yaml's by the documented rule: for each hook the
# narrowest scope that sets it wins (the task's role, then the plan, then
# bernstein.yaml); notify: is taken whole from the narrowest scope that
# gives one. `plan validate` shows where each hook comes from, `config show`
# shows a role's; a plan's notify takes webhook_env, never a URL (it is
# recorded with the run); a role takes no on_run_end; a generated plan may
# hold neither (goal mode's policy).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0382 hooks and notify of a plan and of a role, merged with bernstein.yaml's"

W=$T/work
O=$T/out
mkdir -p "$W" "$O" "$T/bin"
git -C "$W" init -q -b main . >/dev/null 2>&1
shell_agent "$W"
printf '.bernstein/\n' >"$W/.gitignore"
# the stand-in notify-send: records its arguments, one call a line
cat >"$T/bin/notify-send" <<SH
#!/bin/sh
echo "\$*" >> "$O/notify-send"
SH
chmod +x "$T/bin/notify-send"
# hook SCOPE-NAME: a line "SCOPE-NAME TASK" into the sequence log
hook() { printf "'echo \"%s \${BERNSTEIN_TASK:-run}\" >> %s/seq'" "$1" "$O"; }
cat >"$W/bernstein.yaml" <<YAML
adapter: shell
retry_backoff: 0
max_retries: 0
role_model_policy:
  frontend:
    hooks:
      post_task: $(hook role-post_task)
    notify: {on: [task_failed], desktop: true}
hooks:
  post_task: $(hook yaml-post_task)
  post_merge: $(hook yaml-post_merge)
  on_run_end: $(hook yaml-on_run_end)
notify: {on: [run_done, task_done], desktop: true}
YAML
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
cat >"$W/plan.yaml" <<YAML
name: t0382
hooks:
  post_merge: $(hook plan-post_merge)
  on_run_end: {run: $(hook plan-on_run_end), timeout: 60}
notify:
  on: [task_done]
  desktop: true
tasks:
  - id: back
    title: back
    role: backend
    prompt: "echo b > b.txt"
  - id: front
    title: front
    role: frontend
    prompt: "echo f > f.txt"
YAML
bw() { run sh -c "cd '$W' && exec env -i PATH='$T/bin:/usr/bin:/bin' HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' $*"; }

# plan validate: where each hook comes from
bw plan validate plan.yaml
check "plan validate: ok (exit $RC)" test "$RC" -eq 0
check "plan validate: each hook and its scope" grep -qx '  hooks: post_task (bernstein.yaml), post_merge (plan), on_run_end (plan)' "$T/stdout"
check "plan validate: notify from the plan" grep -qx '  notify: plan' "$T/stdout"
bw plan validate --json plan.yaml
check "plan validate --json: hooks with from" $PY -c '
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
h = f["hooks"]
assert h["post_merge"]["from"] == "plan" and "plan-post_merge" in h["post_merge"]["run"], h
assert h["on_run_end"]["from"] == "plan" and h["on_run_end"]["timeout"] == 60, h
assert h["post_task"]["from"] == "bernstein.yaml", h
assert "pre_task" not in h, h
assert f["notify"]["from"] == "plan" and f["notify"]["on"] == ["task_done"], f["notify"]
' "$T/stdout"

# config show: the role's hooks and notify
bw config show --json
check "config show --json: the role's hooks and notify" $PY -c '
import json, sys
r = json.load(open(sys.argv[1]))["role_model_policy"]["frontend"]
assert "role-post_task" in r["hooks"]["post_task"]["run"], r
assert r["notify"]["on"] == ["task_failed"], r
' "$T/stdout"
bw config show
check "config show: the role's hooks in its mapping" grep -q '"frontend": {hooks: {post_task: {run: .*role-post_task' "$T/stdout"

# the run
bw run plan.yaml
check "the run ends done (exit $RC)" test "$RC" -eq 0
check "back: the plan's post_merge" grep -qx 'plan-post_merge back' "$O/seq"
check "front: the plan's post_merge" grep -qx 'plan-post_merge front' "$O/seq"
check "back (backend): bernstein.yaml's post_task" grep -qx 'yaml-post_task back' "$O/seq"
check "front (frontend): its role's post_task" grep -qx 'role-post_task front' "$O/seq"
check "the plan's on_run_end, last" test "$(tail -n 1 "$O/seq")" = "plan-on_run_end run"
check "no hook replaced ran (bernstein.yaml's post_merge, on_run_end; front's post_task)" \
	sh -c "! grep -q -e yaml-post_merge -e yaml-on_run_end -e 'yaml-post_task front' '$O/seq'"
check "each hook ran once" test "$(wc -l <"$O/seq")" -eq 5
# notify: the plan's (task_done) for back; front's role's (task_failed
# only): nothing for front; bernstein.yaml's run_done replaced
wait_until "grep -q 'task_done' '$O/notify-send' 2>/dev/null"
sleep 1 # a notification that should not come would have come by now
check "the plan's notify: task_done of back" grep -q "bernstein: task_done bernstein: task 'back' done" "$O/notify-send"
check "the role's notify: nothing for front (task_failed only)" sh -c "! grep -q \"'front'\" '$O/notify-send'"
check "bernstein.yaml's notify replaced: no run_done" sh -c "! grep -q run_done '$O/notify-send'"

# refusals at their file:line:col
cat >"$W/bad-url.yaml" <<'YAML'
name: bad
notify:
  webhook: https://hooks.example.com/T0382-SECRET
tasks:
  - {title: x, prompt: x}
YAML
bw plan validate bad-url.yaml
check "a plan's notify.webhook: refused (exit 3, got $RC)" test "$RC" -eq 3
check "a plan's notify.webhook: at its line and column, webhook_env named" grep -q 'bad-url.yaml:3:12: .*webhook_env' "$T/stderr"
check "a plan's notify.webhook: the URL not repeated" sh -c "! grep -q T0382-SECRET '$T/stderr' '$T/stdout'"
cat >"$W/bad-hook.yaml" <<'YAML'
name: bad
hooks:
  post_task: {run: "true", timeout: -1}
tasks:
  - {title: x, prompt: x}
YAML
bw plan validate bad-hook.yaml
check "a plan's bad hook timeout: refused (exit 3, got $RC)" test "$RC" -eq 3
check "a plan's bad hook timeout: at its line and column" grep -q 'bad-hook.yaml:3:.*hooks.post_task.timeout' "$T/stderr"
cp "$W/bernstein.yaml" "$T/good.yaml"
printf 'role_model_policy:\n  qa:\n    hooks: {on_run_end: "true"}\n' >"$W/bernstein.yaml"
printf 'adapter: shell\n' >>"$W/bernstein.yaml"
bw config show
check "a role's on_run_end: refused (exit 3, got $RC)" test "$RC" -eq 3
check "a role's on_run_end: said why" grep -q "bernstein.yaml:3:.*on_run_end is the run's" "$T/stderr"
cp "$T/good.yaml" "$W/bernstein.yaml"
test_done
