#!/bin/sh
# docs/exit-codes.md's main table against the binary (issue #17): each code
# of the table that a user can meet is produced by running bernstein into
# it, and must equal the code the table gives that name (t0002 checks the
# table against src/cli/exit.h; this one checks it against behaviour). Also
# the documented codes of run on a detached HEAD (4) and contract-check
# of a CLI that is not installed ("skipped: not installed", 0).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0166 the exit-code table holds for the binary"

# NAME -> code, from the first table after '## Main table'
awk '
	/^## Main table/ { sect = 1; next }
	sect && /^\|/ { intable = 1
		n = split($0, cell, "|")
		code = cell[2]; name = cell[3]
		gsub(/[ \t`]/, "", code); gsub(/[ \t`]/, "", name)
		if (code ~ /^[0-9]+$/) print name, code
		next }
	intable { exit }' "$SRCDIR/docs/exit-codes.md" >"$T/table"
check "the main table was read" test -s "$T/table"
code_of() { awk -v n="$1" '$1 == n { print $2 }' "$T/table"; }

# expect NAME DESC CMD...: CMD exits with the table's code for NAME
seen=" "
expect() {
	_name=$1
	_desc=$2
	shift 2
	_want=$(code_of "$_name")
	run "$@"
	if [ -n "$_want" ] && [ "$RC" -eq "$_want" ]; then
		ok "$_name ($_want): $_desc"
	else
		not_ok "$_name (table: '$_want'): $_desc exited $RC"
		_diag_file stderr "$T/stderr"
	fi
	seen="$seen$_name "
}

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\n' >"$W/bernstein.yaml"
printf 'name: p\ntasks:\n  - title: bad\n    prompt: "exit 3"\n' >"$W/fail.yaml"
printf 'name: p\ntasks:\n  - title: ok\n    prompt: "echo hi > a.txt"\n' >"$W/ok.yaml"
printf 'name: p\ntasks: {}\n' >"$W/invalid.yaml"
git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1

expect BEXIT_OK "bernstein --version" "$BERNSTEIN" --version
expect BEXIT_FAILED "run with a failing task" "$BERNSTEIN" run fail.yaml
# run's exit code and status agree: one rule (docs/exit-codes.md)
run "$BERNSTEIN" status --json
check "status of that run: the exit code run gave" python3 -c "
import json
st = json.load(open('$T/stdout'))
assert st['exit_code'] == $(code_of BEXIT_FAILED) and st['state'] == 'failed', st"
expect BEXIT_USAGE "an unknown command" "$BERNSTEIN" nosuch
expect BEXIT_INVALID "plan validate of an invalid plan" "$BERNSTEIN" plan validate invalid.yaml
expect BEXIT_ENV "-C a directory that does not exist" "$BERNSTEIN" -C /nonexistent version
expect BEXIT_REFUSED "route to a capability no adapter has" \
	"$BERNSTEIN" route --requires capability:sandbox=microvm
# a task refused at dispatch (temperature on the shell agent): run and status agree
printf 'name: p\ntasks:\n  - title: warm\n    sampling: {temperature: 0.5}\n    prompt: "true"\n' >"$W/warm.yaml"
run "$BERNSTEIN" run warm.yaml
check "run of a plan refused at dispatch exits BEXIT_REFUSED" test "$RC" -eq "$(code_of BEXIT_REFUSED)"
run "$BERNSTEIN" status --json
check "and status gives that run the same exit code" python3 -c "
import json
st = json.load(open('$T/stdout'))
assert st['exit_code'] == $(code_of BEXIT_REFUSED) and st['tasks'][0]['state'] == 'refused', st"
expect_exit 2 "$BERNSTEIN" resume
expect_stdout_contains "nothing to resume in run " "resume with nothing to move says so"
expect_stdout_contains "every task has ended (1 refused); failed, refused, conflicting and blocked tasks are not resumed" "and why"

# a budget reached with a task left (the mock reports 20 tokens; the cap is 5)
printf 'name: p\nbudget: {max_tokens: 5}\ntasks:\n  - title: spend\n    adapter: mock\n    prompt: "usage 10 10"\n  - title: left\n    adapter: mock\n    depends_on: [spend]\n    prompt: "say never"\n' >"$W/budget.yaml"
expect BEXIT_BUDGET "run stopped by its budget with a task left" "$BERNSTEIN" run budget.yaml

# a detached HEAD: 4 (docs/exit-codes.md, run)
git -C "$W" checkout -q --detach HEAD
run "$BERNSTEIN" run ok.yaml
check "run on a detached HEAD exits 4, as documented" test "$RC" -eq 4
expect_stderr_contains "HEAD is detached"
git -C "$W" checkout -q main

# the audit chain changed without the key: 5
F=$(ls "$W"/.bernstein/audit/*.jsonl | head -n 1)
python3 - "$F" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().splitlines(True)
lines[-1] = lines[-1].replace('"actor": "bernstein"', '"actor": "mallory"', 1)
open(p, "w").write("".join(lines))
PY
expect BEXIT_AUDIT "run on a tampered audit chain" "$BERNSTEIN" run ok.yaml
check "nothing was merged then" test ! -e "$W/a.txt"

# SIGTERM to spawn: 130 (as SIGINT; a background job of a script ignores
# SIGINT), after its agent was stopped
# (the agent says it started by a file: its prompt is also an argument of
# bernstein spawn itself, so a process with that argument may be bernstein
# before it handles signals)
prompt=": >'$T/started'; sleep 60; : t0166-$$"
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 \
	"$BERNSTEIN" spawn shell "$prompt" >"$T/spawn.out" 2>&1) &
SP=$!
_end=$(($(date +%s) + 30))
while [ ! -e "$T/started" ] && [ "$(date +%s)" -lt "$_end" ]; do
	sleep 0.1
done
check "spawn's agent started" test -e "$T/started"
kill -TERM "$SP" 2>/dev/null
wait "$SP"
RC=$?
want=$(code_of BEXIT_INTERRUPTED)
if [ "$RC" -eq "$want" ]; then ok "BEXIT_INTERRUPTED ($want): SIGTERM to spawn"; else
	not_ok "BEXIT_INTERRUPTED (table: $want): SIGTERM to spawn exited $RC"
fi
seen="${seen}BEXIT_INTERRUPTED "
check "its agent is gone" wait_no_procs "$prompt"

# a library loaded on first use (src/util/lazy.h) that cannot be loaded:
# libyaml, which every build but -Dlazy_deps=false loads lazily, replaced by
# a file that is no library (t0379 covers the others)
lazy_yaml=$(grep -aoE 'libyaml-0\.so\.[0-9]+' "$BERNSTEIN" | head -n 1)
# (linked as usual, its name is in the binary as DT_NEEDED)
ldd "$BERNSTEIN" | grep -qF "${lazy_yaml:-libyaml}" && lazy_yaml=""
if [ -n "$lazy_yaml" ]; then
	mkdir -p "$T/broken"
	printf 'not a shared library\n' >"$T/broken/$lazy_yaml"
	expect BEXIT_LIBRARY "plan validate with a broken $lazy_yaml" \
		LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" plan validate ok.yaml
else
	skip "BEXIT_LIBRARY" "this build links its libraries (-Dlazy_deps=false)"
	seen="${seen}BEXIT_LIBRARY "
fi

# every row but BEXIT_BUG (a bug the CLI detects: not reachable from outside)
for n in $(awk '{ print $1 }' "$T/table"); do
	case "$seen" in *" $n "*) continue ;; esac
	[ "$n" = BEXIT_BUG ] && continue
	not_ok "the table's $n is exercised here"
done

# contract-check of a CLI that is not installed: skipped, not failed
expect_exit 0 "$BERNSTEIN" adapters contract-check claude
expect_stdout_contains "passed: skipped: not installed"
expect_exit 0 "$BERNSTEIN" adapters contract-check claude --json
check "JSON: verdict not-installed" python3 -c "
import json
c = json.load(open('$T/stdout'))['contracts'][0]
assert c['verdict'] == 'not-installed' and c['passed'] is False, c"

# init writes a commented example plan that plan validate accepts
mkdir -p "$T/work/fresh"
git -C "$T/work/fresh" init -q . >/dev/null 2>&1
expect_exit 0 "$BERNSTEIN" init -C fresh
check "init wrote plan.example.yaml" grep -q "^# An example plan" "$T/work/fresh/plan.example.yaml"
expect_exit 0 "$BERNSTEIN" plan validate fresh/plan.example.yaml
expect_stdout_contains "ok (2 tasks)"
printf 'mine\n' >"$T/work/fresh/plan.example.yaml"
expect_exit 0 "$BERNSTEIN" init -C fresh --force
check "an existing plan.example.yaml is never replaced" grep -qx mine "$T/work/fresh/plan.example.yaml"
test_done
