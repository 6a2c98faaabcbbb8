#!/bin/sh
# Issue #20, "Task context", security: context_files are read beneath the
# repository's base checkout with openat2(RESOLVE_BENEATH). A plan whose
# context file is a symlink out of the repository (relative or absolute),
# or names .git/ or .bernstein/, is refused before anything runs, each at
# its PLAN:LINE:COL (exit 3). A file that becomes such a symlink later (an
# agent's merged work replaces it) refuses the dependent task at dispatch:
# its agent never starts and the secret the link points at reaches no
# prompt, log or state.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0311 task context: context files confined to the repository"

W=$T/work
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/docs"
printf 'SECRET-CONTENT-3141\n' >"$T/secret.txt"
printf 'the spec\n' >"$W/docs/spec.md"
ln -s ../secret.txt "$W/rel-link"
ln -s "$T/secret.txt" "$W/abs-link"
shell_agent "$W"
cat >"$T/rec.sh" <<EOF
printf '%s' "\$1" > $T/prompt.rec
echo x > rec.txt
EOF
script_agent "$W" rec "$T/rec.sh"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 1
sandbox: none
EOF
cat >"$W/bad.yaml" <<'EOF'
name: bad
tasks:
  - title: a
    adapter: rec
    prompt: "p"
    context_files:
      - docs/spec.md
      - rel-link
      - abs-link
      - .git/config
EOF
git_q add -A
git_q commit -q -m base

# ---- refused before anything runs, at PLAN:LINE:COL ----
expect_exit 3 "$BERNSTEIN" run bad.yaml
expect_stderr_contains "bad.yaml:8:9: context file 'rel-link' leaves the repository" \
	"a relative symlink out of the repository, at its line:col"
expect_stderr_contains "bad.yaml:9:9: context file 'abs-link' leaves the repository" \
	"an absolute symlink out of the repository, at its line:col"
expect_stderr_contains "bad.yaml:10:9: context file '.git/config' is refused" \
	"git's metadata, at its line:col"
check "docs/spec.md itself is fine (not reported)" sh -c "! grep -q \"'docs/spec.md'\" '$T/stderr'"
check "no agent ran" test ! -e "$T/prompt.rec"
check "no run was recorded" sh -c "! ls '$W'/.bernstein/runs/* >/dev/null 2>&1"

# ---- a file replaced by a symlink out of the repository before dispatch ----
cat >"$W/later.yaml" <<EOF
name: later
tasks:
  - title: swap
    prompt: "rm docs/spec.md && ln -s $T/secret.txt docs/spec.md"
  - title: reader
    adapter: rec
    prompt: "Read the spec."
    depends_on: [swap]
    context_files: [docs/spec.md]
EOF
git_q add -A
git_q commit -q -m later
expect_exit 6 "$BERNSTEIN" run later.yaml
expect_stdout_contains "reader: pending -> refused" "the reader is refused at dispatch"
check "the swap was merged: the base checkout's spec is now a symlink" test -L "$W/docs/spec.md"
check "the reader ends refused" test "$(task_state reader)" = refused
run "$BERNSTEIN" status --json
expect_stdout_contains "task context refused: context file 'docs/spec.md' leaves the repository" \
	"its recorded reason names the context file"
check "its agent never started" test ! -e "$T/prompt.rec"
check "the secret reached no log, prompt or state" sh -c "! grep -rqa SECRET-CONTENT-3141 '$W/.bernstein'"
test_done
