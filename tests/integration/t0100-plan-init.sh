#!/bin/sh
# bernstein init, config validate|show and plan validate|show against the real
# binary: the written bernstein.yaml validates and means the defaults, init
# never overwrites without --force and adds .bernstein/ to .gitignore exactly
# once (git then ignores it), `config show` output loads back to the same
# configuration, the host variable BERNSTEIN_ALLOWED_API_KEY_ENVS admits a
# credential name, and both plan forms show the same tasks.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0100 plans, configuration and init"

W=$T/work
DATA=$SRCDIR/tests/data/orch

# ---- init in a fresh git repository ----
git -C "$W" init -q 2>/dev/null || true
expect_exit 0 "$BERNSTEIN" init
expect_stdout_contains "wrote bernstein.yaml"
expect_stdout_contains "created .gitignore"
check "bernstein.yaml was written" test -s "$W/bernstein.yaml"
check ".gitignore is exactly '.bernstein/'" sh -c "[ \"\$(cat '$W/.gitignore')\" = .bernstein/ ]"
check "bernstein.yaml is commented" grep -q '^# ' "$W/bernstein.yaml"
expect_exit 0 "$BERNSTEIN" config validate
expect_stdout_contains "bernstein.yaml: ok"

# the written file means the defaults: config show equals the one of an empty directory
run "$BERNSTEIN" config show --json
grep -v '"source"' "$T/stdout" >"$T/written.json"
mkdir -p "$T/empty"
run "$BERNSTEIN" -C "$T/empty" config show --json
grep -v '"source"' "$T/stdout" >"$T/defaults.json"
expect_same_file "$T/defaults.json" "$T/written.json" "the written bernstein.yaml is the defaults"

# every key of the configuration is written out
for key in adapter model parallel timeout kill_grace max_retries retry_backoff preference \
	gates merge mode modes role_model_policy; do
	check "bernstein.yaml sets '$key'" grep -q "^$key:" "$W/bernstein.yaml"
done

# ---- never overwrite without --force; .gitignore once ----
printf 'parallel: 7\n' >"$W/bernstein.yaml"
cp "$W/bernstein.yaml" "$T/mine.yaml"
expect_exit 1 "$BERNSTEIN" init
expect_stderr_contains "already exists"
expect_stdout_empty
expect_same_file "$T/mine.yaml" "$W/bernstein.yaml" "a refused init leaves the file alone"
expect_exit 0 "$BERNSTEIN" init --force
expect_stdout_contains "overwrote bernstein.yaml"
expect_stdout_contains ".gitignore already ignores .bernstein/"
check "--force replaced the file" sh -c "! grep -q 'parallel: 7' '$W/bernstein.yaml'"
check ".gitignore still has one .bernstein/ line" \
	sh -c "[ \"\$(grep -c '^\.bernstein/\$' '$W/.gitignore')\" = 1 ]"
if command -v git >/dev/null 2>&1 && [ -d "$W/.git" ]; then
	mkdir -p "$W/.bernstein/runs"
	: >"$W/.bernstein/runs/x"
	check "git ignores .bernstein/" git -C "$W" check-ignore -q .bernstein/runs/x
else
	skip "git ignores .bernstein/" "git not available"
fi

# ---- a .gitignore without a final newline; other spellings count ----
mkdir -p "$T/a" "$T/b"
printf 'node_modules/\n*.o' >"$T/a/.gitignore"
expect_exit 0 "$BERNSTEIN" init -C "$T/a"
printf 'node_modules/\n*.o\n.bernstein/\n' >"$T/a.want"
expect_same_file "$T/a.want" "$T/a/.gitignore" "appended on a line of its own"
printf '/.bernstein \r\n' >"$T/b/.gitignore"
cp "$T/b/.gitignore" "$T/b.want"
expect_exit 0 "$BERNSTEIN" -C "$T/b" init
expect_same_file "$T/b.want" "$T/b/.gitignore" "'/.bernstein' already ignores it"
expect_exit 4 "$BERNSTEIN" init -C "$T/nosuch"
expect_stderr_contains "cannot use directory"

# ---- config show round trip ----
cp "$DATA/config/good/full.yaml" "$W/bernstein.yaml"
run "$BERNSTEIN" config show
cp "$T/stdout" "$T/shown.yaml"
expect_exit 0 "$BERNSTEIN" config validate "$T/shown.yaml"
run "$BERNSTEIN" config show --json
grep -v '"source"' "$T/stdout" >"$T/full.json"
run "$BERNSTEIN" config show --json "$T/shown.yaml"
grep -v '"source"' "$T/stdout" >"$T/shown.json"
expect_same_file "$T/full.json" "$T/shown.json" "config show loads back to the same configuration"

# ---- the credential allow-list and the host variable ----
printf 'role_model_policy:\n  backend: {api_key_env: CORP_LLM_KEY}\n' >"$W/bernstein.yaml"
expect_exit 3 "$BERNSTEIN" config validate
expect_stderr_contains "bernstein.yaml:2:26: field 'role_model_policy.backend.api_key_env'"
expect_exit 0 BERNSTEIN_ALLOWED_API_KEY_ENVS="A_KEY, CORP_LLM_KEY" "$BERNSTEIN" config validate
printf 'role_model_policy:\n  backend: {api_key_env: GITHUB_TOKEN}\n' >"$W/bernstein.yaml"
expect_exit 3 "$BERNSTEIN" config validate
expect_stderr_contains "'GITHUB_TOKEN' is not an allowed credential variable name"

# ---- plans: both forms, the same tasks ----
cp "$DATA/plans/good/tasks.yaml" "$DATA/plans/good/stages.yaml" "$W/"
expect_exit 0 "$BERNSTEIN" plan validate tasks.yaml stages.yaml
expect_lines stdout 2
run "$BERNSTEIN" plan show --json tasks.yaml
cp "$T/stdout" "$T/tasks.json"
run "$BERNSTEIN" plan show --json stages.yaml
cp "$T/stdout" "$T/stages.json"
check "both forms give the same ids, titles, roles, adapters and dependencies" \
	python3 - "$T/tasks.json" "$T/stages.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
keys = ("id", "title", "prompt", "role", "adapter", "model", "depends_on")
ta = [{k: t[k] for k in keys} for t in a["tasks"]]
tb = [{k: t[k] for k in keys} for t in b["tasks"]]
assert ta == tb, (ta, tb)
assert ta[2]["depends_on"] == ["write-greeting", "write-farewell"], ta
assert a["plan_hash"] != b["plan_hash"]
EOF
check "plan_hash is the SHA-256 of the file" python3 - "$T/tasks.json" "$W/tasks.yaml" <<'EOF'
import hashlib, json, sys
d = json.load(open(sys.argv[1]))
assert d["plan_hash"] == hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
EOF

# every problem of a broken plan, and the exit codes
cp "$DATA/plans/bad/stage-problems.yaml" "$W/bad.yaml"
expect_exit 3 "$BERNSTEIN" plan validate bad.yaml
expect_lines stderr 6
expect_stderr_contains "bad.yaml:13:18: field 'stages[1].depends_on[0]': stage dependency cycle: a -> b -> a"
expect_exit 4 "$BERNSTEIN" plan validate nosuch.yaml tasks.yaml
expect_stdout_contains "tasks.yaml: ok (3 tasks)"
expect_exit 2 "$BERNSTEIN" plan validate

test_done
