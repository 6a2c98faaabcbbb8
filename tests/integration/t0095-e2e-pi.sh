#!/bin/sh
# End to end: bernstein spawn pi (the real CLI pinned in tests/agents/) against
# tests/helpers/fake-llm.py (OpenAI Chat Completions): write a file, resume, HTTP 400, all
# without -m (the endpoint's default model).
# See tests/data/e2e/e2e-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"
test_begin "e2e: spawn pi against the fake LLM server (OpenAI Chat Completions)"
. "$SRCDIR/tests/data/e2e/e2e-lib.sh"
e2e_run pi OPENAI_API_KEY "/v1"
# No -m: the profile's runtime.endpoint.default_model names the model (the
# request log left is the last spawn's, the HTTP 400 one).
echeck "pi: without -m the requests name the endpoint's default model gpt-5.5" \
	"len(reqs) >= 1 and all(r['body'].get('model') == 'gpt-5.5' for r in reqs if isinstance(r.get('body'), dict))"
test_done
