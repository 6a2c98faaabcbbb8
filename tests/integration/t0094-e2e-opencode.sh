#!/bin/sh
# End to end: bernstein spawn opencode (the real CLI pinned in tests/agents/) against
# tests/helpers/fake-llm.py (OpenAI Chat Completions): write a file, resume, HTTP 400.
# See tests/data/e2e/e2e-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: spawn opencode against the fake LLM server (OpenAI Chat Completions)"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"
e2e_run opencode OPENAI_API_KEY "/v1" -m fake-model
test_done
