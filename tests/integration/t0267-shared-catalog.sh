#!/bin/sh
# Shareable catalogue overrides (issue #17, item 6): <repo>/bernstein/catalog/
# is committed with the repository and read by everyone who clones it,
# between the user's overrides and this clone's private .bernstein/catalog/:
# embedded < user < shared < private. Checked with a profile (the agent
# 'team', a sh -c agent) that a fresh clone sees and runs, a strategy-matrix
# row, a contract, and the order of the layers (display_name says which
# file won). A bad shared file is reported at its FILE:LINE:COL.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0267 shared catalogue overrides in bernstein/catalog/"

W=$T/work
AK="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

# profile DIR DISPLAY: the agent 'team' (sh -c PROMPT) in catalogue dir DIR
profile()
{
	mkdir -p "$1/profiles"
	cat >"$1/profiles/team.yaml" <<EOF
name: team
display_name: "$2"
shape: factory
invocation:
  binary: sh
  extra_args: [-c]
  prompt_positional: true
capabilities:
  tool_use: true
  max_parallel_workers: 4
EOF
}

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
profile "$W/bernstein/catalog" "from the shared catalogue"
cat >"$W/bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  team:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
printf 'adapter: team\nsandbox: none\n' >"$W/bernstein.yaml"
cat >"$W/plan.yaml" <<'EOF'
name: shared
tasks:
  - {title: hello, prompt: "echo hi > hello.txt"}
EOF
git_q add -A
git_q commit -q -m base

# ---- a fresh clone has the team's agent and runs it ----
git clone -q "$W" "$T/clone" >/dev/null 2>&1
run sh -c "cd '$T/clone' && exec '$BERNSTEIN' adapters show team"
check "a fresh clone sees the shared profile" test "$RC" -eq 0
expect_stdout_contains "from the shared catalogue" "its display name"
expect_stdout_contains "$T/clone/bernstein/catalog/profiles/team.yaml" "and where it came from"
run sh -c "cd '$T/clone' && exec env $AK '$BERNSTEIN' run plan.yaml"
check "a run in the clone uses it (exit 0)" test "$RC" -eq 0
check "the shared agent did the work, merged" grep -qx hi "$T/clone/hello.txt"
check "nothing of the catalogue is under .bernstein/ of the clone" \
	test ! -e "$T/clone/.bernstein/catalog"

# ---- precedence: embedded < user < shared < private ----
profile "$T/config/bernstein/catalog" "from the user's catalogue"
run sh -c "cd '$W' && exec '$BERNSTEIN' adapters show team"
expect_stdout_contains "from the shared catalogue" "the shared layer wins over the user's"
profile "$W/.bernstein/catalog" "from this clone's catalogue"
run sh -c "cd '$W' && exec '$BERNSTEIN' adapters show team"
expect_stdout_contains "from this clone's catalogue" "this clone's private layer wins over the shared one"
rm -rf "$W/.bernstein/catalog" "$W/bernstein/catalog/profiles"
run sh -c "cd '$W' && exec '$BERNSTEIN' adapters show team"
expect_stdout_contains "from the user's catalogue" "without a shared profile the user's applies"
rm -rf "$T/config/bernstein"
profile "$W/bernstein/catalog" "from the shared catalogue"

# ---- the shared layer overrides shipped rows: a contract ----
mkdir -p "$W/bernstein/catalog/contracts"
printf 'bogus: [\n' >"$W/bernstein/catalog/contracts/claude.yaml"
run sh -c "cd '$W' && exec '$BERNSTEIN' adapters contract-check claude"
check "a shared contract replaces the shipped one (a broken one is reported)" test "$RC" -ne 0
expect_stderr_contains "$W/bernstein/catalog/contracts/claude.yaml" "naming the shared file"
rm -rf "$W/bernstein/catalog/contracts"

# ---- a bad shared file: FILE:LINE:COL ----
printf 'name: team\nshape: factory\nbogus: 1\n' >"$W/bernstein/catalog/profiles/team.yaml"
run sh -c "cd '$W' && exec '$BERNSTEIN' adapters list"
check "a bad shared profile stops the catalogue (exit 3)" test "$RC" -eq 3
expect_stderr_contains "$W/bernstein/catalog/profiles/team.yaml:3:1:" "at its FILE:LINE:COL"
test_done
