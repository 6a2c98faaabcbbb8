#!/bin/sh
# worktree_setup at four levels (issue #19): bernstein.yaml, a role's
# role_model_policy entry, a plan's top level and a plan task; each key a
# more specific level gives replaces the less specific one's (key by key,
# as limits: and retry:), null or [] clears one. Checked by what each task's
# setup_command wrote and whether .env was copied:
#   a (backend)                      bernstein.yaml's command, .env copied
#   b (qa)                           its role's command, bernstein.yaml's .env
#   c (qa, its own command)          its own
#   d (backend, setup_command: null) none; .env still copied
#   e (qa, copy_files: [])           its role's command, no .env
#   plan 2, top-level command:  f (qa) the plan's over the role's; g its own
# A plan's bad worktree_setup is refused at its line:col by plan validate
# and run (exit 3). The setup_command comes from bernstein.yaml and the
# plan only: an agent that writes one into the bernstein.yaml of its tree
# and fails does not get it run by the setup of its retry.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0276 worktree_setup: bernstein.yaml, role, plan, task, key by key"

KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
W=$T/work
mkdir -p "$W"
git -C "$W" init -q -b main . >/dev/null 2>&1
shell_agent "$W"
printf '.bernstein/\n.env\n*.local\n' >"$W/.gitignore"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
retry_backoff: 0
max_retries: 0
worktree_setup:
  copy_files: [.env]
  setup_command: "echo config > by.local"
role_model_policy:
  qa: {worktree_setup: {setup_command: "echo role > by.local"}}
EOF
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
printf 'KEY=t0276\n' >"$W/.env"

bw() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$KEY' '$BERNSTEIN' $*"; }

# what task ID's setup left in its tree, into seen-ID.txt
probe() {
	printf '      { cat by.local 2>/dev/null || echo none; if [ -f .env ]; then echo env; else echo noenv; fi; } > seen-%s.txt\n' "$1"
}

{
	printf 'name: levels\ntasks:\n'
	printf '  - title: a\n    prompt: |\n'
	probe a
	printf '  - title: b\n    role: qa\n    prompt: |\n'
	probe b
	printf '  - title: c\n    role: qa\n    worktree_setup: {setup_command: "echo task > by.local"}\n    prompt: |\n'
	probe c
	printf '  - title: d\n    worktree_setup: {setup_command: null}\n    prompt: |\n'
	probe d
	printf '  - title: e\n    role: qa\n    worktree_setup: {copy_files: []}\n    prompt: |\n'
	probe e
} >"$W/levels.yaml"
bw run levels.yaml
check "levels: the run succeeds (exit $RC)" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
expect_seen() {
	check "$1: $2" sh -c "printf '%s\n' $2 | diff - '$W/seen-$1.txt'"
}
expect_seen a "config env"
expect_seen b "role env"
expect_seen c "task env"
expect_seen d "none env"
expect_seen e "role noenv"

{
	printf 'name: plan-level\nworktree_setup: {setup_command: "echo plan > by.local"}\ntasks:\n'
	printf '  - title: f\n    role: qa\n    prompt: |\n'
	probe f
	printf '  - title: g\n    role: qa\n    worktree_setup: {setup_command: "echo own > by.local"}\n    prompt: |\n'
	probe g
} >"$W/plan2.yaml"
bw run plan2.yaml
check "plan level: the run succeeds (exit $RC)" test "$RC" -eq 0
expect_seen f "plan env"
expect_seen g "own env"

# a bad plan-level value: at its line:col, nothing runs
printf 'name: bad\ntasks:\n  - title: h\n    prompt: "touch ran-h.txt"\n    worktree_setup: {symlink_dirs: [../../etc]}\n' >"$W/bad.yaml"
bw plan validate bad.yaml
check "plan validate: exit 3 (got $RC)" test "$RC" -eq 3
check "plan validate: at 5:37 with the field" \
	grep -q "bad.yaml:5:37: field 'tasks\\[0\\].worktree_setup.symlink_dirs\\[0\\]': '../../etc' is a '..' component" "$T/stderr"
bw run bad.yaml
check "run of the bad plan: exit 3 (got $RC)" test "$RC" -eq 3
check "run of the bad plan: nothing ran" test ! -e "$W/ran-h.txt"

# the agent's own bernstein.yaml is never read: the setup of its retry
# (the same tree) runs bernstein.yaml's command, not the one it wrote
cat >"$W/own.yaml" <<EOF
name: own
tasks:
  - title: sneaky
    prompt: |
      printf 'adapter: shell\nworktree_setup: {setup_command: "touch $T/pwned"}\n' > bernstein.yaml
      exit 1
EOF
bw run own.yaml
check "sneaky: its attempt fails (exit $RC)" test "$RC" -eq 1
bw retry sneaky
check "sneaky: the retry ran its setup again" sh -c "ls '$W'/.bernstein/runs/*/sneaky-*/2/setup.log"
check "sneaky: the setup_command its tree holds never ran" test ! -e "$T/pwned"

test_done
