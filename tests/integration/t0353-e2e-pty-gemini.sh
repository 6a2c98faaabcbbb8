#!/bin/sh
# Issue #26 end to end: the real gemini (tests/agents, pinned) in interactive
# mode, no -p, driven through its pseudo-terminal by the gemini_tui profile
# (runtime.pty) against tests/helpers/fake-llm.py. One task in a run: the
# prompt is typed, gemini's shell tool writes hello.txt (--yolo: no
# confirmation), a still screen with the input box back is done, /quit ends
# it; the task completes and is merged into main, and its events read the
# screen back (ready, working, done; gemini's message).
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: gemini as a TUI through the pty, in a run"
. "$SRCDIR/tests/data/e2e/pty-e2e-lib.sh"
pty_e2e gemini gemini_tui GEMINI_API_KEY \
	'{"name": "run_shell_command", "id": "call_pty_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}'
test_done
