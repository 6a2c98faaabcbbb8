#!/bin/sh
# Goal mode's planner in a sandbox (issue #20): where the kernel has
# Landlock, `bernstein spawn` and the planner agent it runs are confined to
# the planner's view (a scratch clone): a planner with a shell (a script
# agent here, a profile of the user's catalogue) that tries to write into
# the main checkout, the user's HOME and elsewhere, and to copy the main
# checkout's uncommitted file and the audit key into its view, is refused
# every one, while the plan it writes in its view is taken. With
# --planner-sandbox none the same planner gets everywhere (what the cage
# stops), and a bad value is a usage error.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0307 plan generate: the planner is confined by Landlock"
require_landlock

W=$T/work
O=$T/outside
KEYF=$T/keys/audit.key
mkdir -p "$O" "$T/home" "$T/keys"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nsandbox: none\n' >"$W/bernstein.yaml"
printf 'tracked\n' >"$W/README.md"
git_q add -A && git_q commit -q -m base
printf 'UNCOMMITTED-SECRET-MARK\n' >"$W/NOTES.txt"

# the planner: tries every escape, then writes a valid plan in its view
{
	echo "echo x >'$W/ESCAPED-main.txt'"
	echo "echo x >'$W/.bernstein/ESCAPED-state.txt'"
	echo "echo x >'$T/home/ESCAPED-home.txt'"
	echo "echo x >'$O/ESCAPED-outside.txt'"
	echo "cat '$W/NOTES.txt' >leak-notes.txt"
	echo "cat '$KEYF' >leak-key.txt"
	echo "printf 'name: caged\\ntasks:\\n  - {title: a, prompt: \"write a.txt a\", adapter: mock}\\n' >bernstein-plan.yaml"
} >"$T/planner.sh"
mkdir -p "$T/config/bernstein/catalog/profiles"
printf '%s\n' "name: planner" 'display_name: "Script planner"' "shape: factory" "invocation:" \
	"  binary: sh" "  extra_args: [$T/planner.sh]" "  prompt_positional: true" "capabilities:" \
	"  tool_use: true" "  max_parallel_workers: 8" "runtime:" "  sandbox: {read: [$T/planner.sh]}" \
	>"$T/config/bernstein/catalog/profiles/planner.yaml"
printf '%s\n' "adapters:" "  planner:" "    resume: unsupported" "    dangerous_mode: always-on" \
	"    event_channel: none" >"$T/config/bernstein/catalog/strategy-matrix.yaml"

cd "$W" || exit 1
expect_exit 0 BERNSTEIN_AUDIT_KEY_PATH="$KEYF" "$BERNSTEIN" plan generate --planner planner \
	--rounds 1 -o plan.yaml "Write a.txt"
check "the plan written in the view is taken" grep -q "name: caged" "$W/plan.yaml"
check "no write into the main checkout" test ! -e "$W/ESCAPED-main.txt"
check "no write into .bernstein/" test ! -e "$W/.bernstein/ESCAPED-state.txt"
check "no write into the user's HOME" test ! -e "$T/home/ESCAPED-home.txt"
check "no write elsewhere" test ! -e "$O/ESCAPED-outside.txt"
V=$(ls -d "$W"/.bernstein/plans/*/view)
check "the main checkout's uncommitted file was not readable" sh -c '! grep -q UNCOMMITTED-SECRET-MARK "$1/leak-notes.txt"' sh "$V"
check "the audit key was not readable" sh -c 'test ! -s "$1/leak-key.txt"' sh "$V"
check "the audit key exists (the read was refused, not missing)" test -s "$KEYF"

# the same planner unconfined: the boundary the cage draws
rm -f plan.yaml
expect_exit 0 BERNSTEIN_AUDIT_KEY_PATH="$KEYF" "$BERNSTEIN" plan generate --planner planner \
	--planner-sandbox none --rounds 1 -o plan.yaml "Write a.txt"
check "unconfined, it wrote into the main checkout" test -e "$W/ESCAPED-main.txt"
check "unconfined, it wrote into the user's HOME" test -e "$T/home/ESCAPED-home.txt"
rm -f "$W/ESCAPED-main.txt" "$W/.bernstein/ESCAPED-state.txt" plan.yaml

expect_exit 2 "$BERNSTEIN" plan generate --planner planner --planner-sandbox bwrap "x"
expect_stderr_contains "landlock or none, not 'bwrap'"
expect_exit 2 "$BERNSTEIN" run --goal x --yes --planner planner --planner-sandbox maybe
expect_stderr_contains "landlock or none, not 'maybe'"

test_done
