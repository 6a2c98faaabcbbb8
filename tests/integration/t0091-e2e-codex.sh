#!/bin/sh
# End to end: bernstein spawn codex (the real CLI pinned in tests/agents/) against
# tests/helpers/fake-llm.py (OpenAI Responses): write a file, resume, HTTP 400, all
# without -m (the endpoint's default model).
# See tests/data/e2e/e2e-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: spawn codex against the fake LLM server (OpenAI Responses)"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"
e2e_run codex OPENAI_API_KEY "/v1"
# No -m: the profile's runtime.endpoint.default_model names the model (the
# request log left is the last spawn's, the HTTP 400 one).
echeck "codex: without -m the requests name the endpoint's default model gpt-5.5" \
	"len(reqs) >= 1 and all(r['body'].get('model') == 'gpt-5.5' for r in reqs if isinstance(r.get('body'), dict))"
test_done
