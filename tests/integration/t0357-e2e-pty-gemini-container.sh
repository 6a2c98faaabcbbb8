#!/bin/sh
# Issue #26 end to end in the container tier: the real gemini (tests/agents,
# pinned) as its interactive TUI (gemini_tui, no -p) in an OCI container,
# its terminal the container's console (docs/event-stream.md, "poll-pty in
# a terminal"), against tests/helpers/fake-llm.py reached through the llm
# network (gemini ignores proxy variables: the shim's tunnel on the
# endpoint's loopback address carries it). As t0353: the prompt is typed,
# gemini's shell tool writes hello.txt, the screen says done, /quit ends
# it; merged into main, its events read the screen back. Then: the task ran
# in the container tier, no gemini is left and no container is left in the
# runtime's state. Skipped
# where `bernstein doctor` says the container tier cannot run.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "e2e: gemini as a TUI through the pty, in the container tier"

. "$SRCDIR/tests/data/e2e/pty-e2e-lib.sh"
pty_e2e_container gemini gemini_tui GEMINI_API_KEY \
	'{"name": "run_shell_command", "id": "call_pty_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}'
test_done
