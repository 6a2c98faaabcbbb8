#!/bin/sh
# End to end: bernstein spawn claude (the real CLI pinned in tests/agents/) against
# tests/helpers/fake-llm.py (Anthropic Messages): write a file, resume, HTTP 400.
# See tests/data/e2e/e2e-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: spawn claude against the fake LLM server (Anthropic Messages)"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"
e2e_run claude ANTHROPIC_API_KEY ""
test_done
