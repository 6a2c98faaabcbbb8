#!/bin/sh
# Issue #26 end to end: the real claude (tests/agents, pinned) in interactive
# mode, no -p, driven through its pseudo-terminal by the claude_tui profile
# (runtime.pty) against tests/helpers/fake-llm.py. One task in a run: the
# prompt is typed, claude's Bash tool writes hello.txt, the screen says
# done, /exit ends it; the task completes and is merged into main, and its
# events read the screen back (ready, working, done; claude's message).
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: claude as a TUI through the pty, in a run"
. "$SRCDIR/tests/data/e2e/pty-e2e-lib.sh"
pty_e2e claude claude_tui ANTHROPIC_API_KEY \
	'{"name": "Bash", "id": "toolu_pty_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}'
test_done
