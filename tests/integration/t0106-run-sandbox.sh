#!/bin/sh
# Sandboxed tasks (sandbox: landlock): each gets its own `git clone --shared`
# and its agent may write only there (and in its HOME and TMPDIR). Checked: an
# agent that commits itself (possible only in a clone), one that leaves its
# changes to bernstein, a hostile one (writes the main checkout, moves main
# through the main .git and inside its clone: none of it reaches main), a
# no-op (no_changes: clone gone, no branch), a task-level sandbox: with the
# global none, resume of a sandboxed task after kill -9, and config validate
# of a bad value. Skipped as a whole without Landlock in the kernel.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0106 bernstein run: sandboxed tasks"

require_landlock

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
MARK="sandbox-marker-$$"
MARKPAT="sandbox-marke[r]-$$"
GITID="-c user.name=agent -c user.email=agent@example.com"

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }
main_head() { git -C "$W" rev-parse refs/heads/main; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/shared.txt"
mkdir -p "$W/.bernstein/catalog/profiles"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 4
retry_backoff: 0
sandbox: landlock
EOF
commit_all base

# ---- config validate ----
expect_exit 0 "$BERNSTEIN" config validate
printf 'adapter: shell\nsandbox: firejail\n' >"$T/bad.yaml"
expect_exit 3 "$BERNSTEIN" config validate "$T/bad.yaml"
expect_stderr_contains "bad.yaml:2:10: field 'sandbox'" "a bad sandbox: value at its line:col"
printf 'name: p\ntasks:\n  - {title: a, prompt: x, sandbox: yes}\n' >"$T/badplan.yaml"
expect_exit 3 "$BERNSTEIN" plan validate "$T/badplan.yaml"
expect_stderr_contains "tasks[0].sandbox" "a bad task sandbox: value is named"

# ---- commits itself, leaves it to bernstein, hostile, no-op ----
cat >"$W/plan.yaml" <<EOF
name: sandboxed
tasks:
  - title: self
    prompt: "echo mine > self.txt && git add self.txt && git $GITID commit -q -m 'agent commit' && echo \$TMPDIR > tmpdir.txt && git add tmpdir.txt && git $GITID commit -q -m tmpdir"
  - title: left
    prompt: "echo left > left.txt"
  - title: hostile
    prompt: "echo x > $W/escape.txt; echo x > $W/.git/escape; git -C $W update-ref refs/heads/main HEAD~1; git update-ref refs/heads/main HEAD~1 2>/dev/null; git update-ref refs/heads/main \$(git rev-parse HEAD); echo tried > hostile.txt"
  - title: noop
    prompt: "true"
EOF
commit_all plan
BEFORE=$(main_head)
expect_exit 0 "$KEY" "$BERNSTEIN" run plan.yaml
check "the self-committing task is merged" grep -q mine "$W/self.txt"
check "its own commit is in main" \
	sh -c "git -C '$W' log --format=%s main | grep -qx 'agent commit'"
check "its TMPDIR was the private one in the session directory" \
	grep -q "/.bernstein/runs/.*/tmp$" "$W/tmpdir.txt"
check "the uncommitted change is committed by bernstein and merged" grep -q left "$W/left.txt"
check "the hostile agent could not write the main checkout" test ! -e "$W/escape.txt"
check "nor the main .git" test ! -e "$W/.git/escape"
check "main moved forward only by merges" \
	sh -c "git -C '$W' merge-base --is-ancestor '$BEFORE' main"
check "the hostile task's own work is merged (it only broke its clone's main)" \
	grep -q tried "$W/hostile.txt"
check "four merges... three: the no-op merged nothing" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count '$BEFORE..main') -eq 3 ]"
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "no_changes"' "the no-op is no_changes"
check "no clone is left" sh -c "[ -z \"\$(ls '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
check "the no-op task left no branch in main" \
	sh -c "! git -C '$W' for-each-ref --format='%(refname)' refs/heads/bernstein/ | grep -q noop"
check "no git worktree was registered" \
	sh -c "[ \$(git -C '$W' worktree list --porcelain | grep -c ^worktree) -eq 1 ]"
check "the checkout is clean" \
	sh -c "[ -z \"\$(git -C '$W' status --porcelain --untracked-files=no)\" ]"

# ---- a task-level sandbox with the global none ----
printf 'adapter: shell\nretry_backoff: 0\n' >"$W/bernstein.yaml"
cat >"$W/task.yaml" <<EOF
name: one
tasks:
  - title: boxed
    sandbox: landlock
    prompt: "echo boxed > boxed.txt; echo x > $W/boxed-escape.txt; true"
  - title: free
    prompt: "echo free > free.txt; echo x > $W/free-escape.txt; rm -f $W/free-escape.txt"
EOF
commit_all task
expect_exit 0 "$KEY" "$BERNSTEIN" run task.yaml
check "the task-level sandboxed task is merged" grep -q boxed "$W/boxed.txt"
check "and was confined" test ! -e "$W/boxed-escape.txt"
check "the other task ran as before" grep -q free "$W/free.txt"

# ---- a confined agent reads its own /proc: its PID namespace's, mounted
# in the child after the Landlock rules were built on the host's ----
printf 'adapter: shell\nretry_backoff: 0\nsandbox: landlock\n' >"$W/bernstein.yaml"
cat >"$W/proc.yaml" <<'EOF'
name: proc
tasks:
  - title: procself
    prompt: "grep -q '^Pid:' /proc/self/status && ls /proc/self/task >/dev/null && ls /proc | grep -c '^[0-9]' > proc-count.txt"
EOF
commit_all proc
expect_exit 0 "$KEY" "$BERNSTEIN" run proc.yaml
check "a Landlock-confined agent reads its own /proc" test -s "$W/proc-count.txt"
run "$BERNSTEIN" doctor --json
if python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["tier"] != "pidns")' "$T/stdout"; then
	# the read rule is for its namespace's /proc: bernstein and the host's
	# processes are not in it (the agent's shell and ls, a few)
	check "and sees only its own processes there" sh -c "[ \$(cat '$W/proc-count.txt') -lt 10 ]"
else
	skip "only its own processes in /proc" "no PID namespace here (bernstein doctor)"
fi

# ---- resume of a sandboxed task after kill -9 (the mock: native resume) ----
printf 'adapter: mock\nretry_backoff: 0\nsandbox: landlock\n' >"$W/bernstein.yaml"
cat >"$W/crash.yaml" <<EOF
name: crash
tasks:
  - title: slow
    prompt: |
      $MARK
      write half.txt half
      once ~/slept sleep 60
      write rest.txt done
EOF
commit_all crash
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
	XDG_CONFIG_HOME="$T/config" "$KEY" "$BERNSTEIN" run crash.yaml) \
	</dev/null >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
i=0
while [ $i -lt 300 ] && ! ls "$W"/.bernstein/worktrees/slow-*/half.txt >/dev/null 2>&1; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.5
kill -9 "$BG"
wait "$BG" 2>/dev/null
i=0
while pgrep -f "$MARKPAT" >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "the clone is there after the crash" sh -c "ls -d '$W'/.bernstein/worktrees/slow-*/.git"
expect_exit 0 "$KEY" "$BERNSTEIN" resume
expect_stdout_contains "done (1 done)" "the resumed sandboxed task finishes"
expect_stdout_contains "native" "natively, in the same clone and HOME"
check "its first attempt's work is merged" grep -q half "$W/half.txt"
check "and the rest of its work" grep -q done "$W/rest.txt"
check "its clone is gone" sh -c "[ -z \"\$(ls '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
run "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain verifies"

test_done
