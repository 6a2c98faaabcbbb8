#!/bin/sh
# End to end: bernstein spawn codex (the real CLI pinned in tests/agents/) against
# tests/helpers/fake-llm.py (OpenAI Responses): write a file, resume, HTTP 400.
# See tests/data/e2e/e2e-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: spawn codex against the fake LLM server (OpenAI Responses)"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"
e2e_run codex OPENAI_API_KEY "/v1" -m gpt-5.5
test_done
