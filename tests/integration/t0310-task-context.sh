#!/bin/sh
# Issue #20, "Task context": a task that gives constraints:/context_files:
# gets its prompt rendered from the template, and each part reaches the
# agent: the plan's description (goal), its role's preamble (catalog/
# roles.yaml, here overridden by the repository's catalogue), the task's
# prompt, the constraints, a context file's text (read from the base
# checkout; a large one truncated with a visible note), the titles and
# outcomes of the tasks it depends on, its gates and artifact. The session's
# plan.json records that rendered prompt. A task without either key gets its
# prompt verbatim (byte for byte).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0310 task context: the rendered prompt reaches the agent"

W=$T/work
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/docs" "$W/.bernstein/catalog/profiles"
printf 'The token is an HS256 JWT named SPEC-MARKER-7.\n' >"$W/docs/spec.md"
python3 -c 'import sys; sys.stdout.write("x" * 70000)' >"$W/docs/big.txt"
# the agent 'rec': records each prompt it is given (prompt.1, prompt.2...)
# and writes a file of its own, so that it has changes to merge
cat >"$T/rec.sh" <<EOF
n=\$(ls $T/prompt.* 2>/dev/null | wc -l)
n=\$((n + 1))
printf '%s' "\$1" > $T/prompt.\$n
echo "attempt \$n" > rec-\$n.txt
echo done > report.md
EOF
script_agent "$W" rec "$T/rec.sh"
# the repository's catalogue overrides the qa role's preamble
cat >"$W/.bernstein/catalog/roles.yaml" <<'EOF'
roles:
  qa:
    preamble: "QA-PREAMBLE-OVERRIDE: break it before users do."
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: rec
parallel: 1
sandbox: none
gates:
  - {name: has-report, run: "test -f report.md"}
EOF
cat >"$W/plan.yaml" <<'EOF'
name: ctx
description: "Add JWT auth to the API"
tasks:
  - title: Design the token schema
    id: schema
    prompt: "Design the schema."
  - title: tests
    role: qa
    prompt: "Write the tests."
    depends_on: [schema]
    artifact: report.md
    constraints: ["no new dependencies", "keep the public API"]
    context_files: [docs/spec.md, docs/big.txt]
    gates: [{name: lint-ok, run: "true"}]
EOF
git_q add -A
git_q commit -q -m base

expect_exit 0 "$BERNSTEIN" run plan.yaml
check "both tasks are done" sh -c "test \"\$(ls $T/prompt.* | wc -l)\" -eq 2"
check "the task without constraints/context_files gets its prompt verbatim" \
	sh -c "test \"\$(cat $T/prompt.1)\" = 'Design the schema.'"
P=$T/prompt.2
check "the goal" grep -qx "Add JWT auth to the API" "$P"
check "the goal's heading comes first" sh -c "head -n1 '$P' | grep -qx '# Goal'"
check "the role's preamble, from the repository's catalogue" \
	grep -qx "QA-PREAMBLE-OVERRIDE: break it before users do." "$P"
check "the role is named" grep -qx "# Role: qa" "$P"
check "the task's prompt" grep -qx "Write the tests." "$P"
check "the constraints" sh -c "grep -qx -- '- no new dependencies' '$P' && grep -qx -- '- keep the public API' '$P'"
check "the context file's text" grep -qx "The token is an HS256 JWT named SPEC-MARKER-7." "$P"
check "the large context file is truncated with a note" \
	grep -qx "(truncated: the first 65536 of 70000 bytes are shown)" "$P"
check "the large context file is capped" sh -c "test \"\$(grep -o x '$P' | wc -l)\" -lt 70000"
check "the dependency's title and outcome" \
	grep -qx -- "- Design the token schema (schema): completed" "$P"
check "the configuration's gate" grep -qxF -- "- gate has-report: \`test -f report.md\` must exit 0" "$P"
check "the task's own gate" grep -qxF -- "- gate lint-ok: \`true\` must exit 0" "$P"
check "the artifact" grep -qx -- "- the file report.md must exist when you finish" "$P"
PJ=$(ls "$W"/.bernstein/runs/*/tests-*/1/plan.json 2>/dev/null | head -n1)
check "plan.json records the rendered prompt" \
	python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); s=json.dumps(p); assert "SPEC-MARKER-7" in s and "# Constraints" in s, s[:400]' "$PJ"
test_done
