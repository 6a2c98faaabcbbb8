#!/bin/sh
# Issue #26 end to end in the container tier: the real claude (tests/agents,
# pinned) as its interactive TUI (claude_tui, no -p) in an OCI container,
# its terminal the container's console (docs/event-stream.md, "poll-pty in
# a terminal"), against tests/helpers/fake-llm.py reached through the llm
# network's proxy. As t0352: the prompt is typed, claude's Bash tool writes
# hello.txt, the screen says done, /exit ends it; merged into main, its
# events read the screen back. Then: the task ran in the container tier, no
# claude is left and no container is left in the runtime's state. Skipped
# where `bernstein doctor` says the container tier cannot run.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "e2e: claude as a TUI through the pty, in the container tier"

. "$SRCDIR/tests/data/e2e/pty-e2e-lib.sh"
pty_e2e_container claude claude_tui ANTHROPIC_API_KEY \
	'{"name": "Bash", "id": "toolu_pty_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}'
test_done
