#!/bin/sh
# End to end: bernstein spawn gemini (the real CLI pinned in tests/agents/) against
# tests/helpers/fake-llm.py (Gemini streamGenerateContent): write a file, resume, HTTP 400.
# See tests/data/e2e/e2e-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: spawn gemini against the fake LLM server (Gemini streamGenerateContent)"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"
e2e_run gemini GEMINI_API_KEY ""
test_done
