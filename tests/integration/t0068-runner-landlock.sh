#!/bin/sh
# run_command's true confinement is the OS sandbox: with sandbox_provider
# "landlock" the runner offers run_command and runs each command under
# `bernstein shim` with Landlock rules (read-write only beneath the workdir,
# read-only everywhere else). A command that writes inside the workdir works;
# one that writes outside fails. The same command without the sandbox (the
# operator's opt-in) does write outside: the builtin layer is not what confines
# it. Skipped when the kernel has no Landlock.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0060 runner run_command under landlock"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

run "$BERNSTEIN" shim --landlock-rw "$T/work" --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	diag "$(cat "$T/stderr")"
	skip "run_command under landlock" "Landlock is not available here"
	test_done
fi

mkdir -p "$T/outside"
cat >"$T/s.json" <<EOF
[{"tool_calls": [
   {"id": "a", "name": "run_command", "arguments": {"argv": ["touch", "inside.txt"]}},
   {"id": "b", "name": "run_command", "arguments": {"argv": ["touch", "$T/outside/escaped.txt"]}},
   {"id": "c", "name": "run_command", "arguments": {"argv": ["mkdir", "$T/outside/dir"]}},
   {"id": "d", "name": "run_command", "arguments": {"argv": ["cat", "/etc/hostname"]}}]},
 {"text": "done"}]
EOF
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "ll", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "sandbox_provider": "landlock"}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "landlock is an OS sandbox: run_command is offered without the opt-in" \
	'"run_command" in [t["function"]["name"] for t in reqs[0]["body"]["tools"]] and events[0]["sandbox_provider"] == "landlock"'
check "a write inside the workdir works" test -f "$T/work/inside.txt"
check "a write outside the workdir fails" test ! -e "$T/outside/escaped.txt"
check "a mkdir outside the workdir fails" test ! -e "$T/outside/dir"
jcheck "the command reports the denial" \
	'ev("tool_result")[0]["status"] == "ok" and ev("tool_result")[1]["status"] == "error" and ev("tool_result")[1]["exit_code"] != 0 and "Permission denied" in ev("tool_result")[1]["output"]'
jcheck "reading outside the workdir is still allowed (read-only, not hidden)" \
	'ev("tool_result")[3]["status"] == "ok" or "No such file" in ev("tool_result")[3]["output"]'

# the same commands without an OS sandbox, with the operator's opt-in
rm -f "$T/work/inside.txt"
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "ll2", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
expect_exit 0 BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 "$BERNSTEIN" runner --manifest "$T/m.json"
check "without the sandbox the write outside succeeds (the builtin layer does not confine commands)" \
	test -e "$T/outside/escaped.txt"

test_done
