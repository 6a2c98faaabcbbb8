#!/bin/sh
# `plan validate` runs the gates dispatch runs (issue #17 item 5), through the
# same function (invocation_check_static()): a plan that dispatch refuses
# (temperature on claude; an attachment for codex, which takes no images; a
# credential variable name that is not one) fails validate with the exact
# FILE:LINE:COL of the key at fault, and `run` of that plan is refused at
# dispatch with the same words. `run`'s exit code for such a refusal (6) is
# what `status` shows as the run's exit code, and status names the run's
# state by the same rule.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0183 plan validate runs dispatch's gates"

W=$T/work
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'retry_backoff: 0\nmax_retries: 0\n' >"$W/bernstein.yaml"
printf 'png\n' >"$W/shot.png"
cat >"$W/warm.yaml" <<'PLAN'
name: warm
tasks:
  - title: warm claude
    adapter: claude
    sampling:
      max_tokens: 100
      temperature: 0.7
    prompt: hi
PLAN
cat >"$W/eyes.yaml" <<'PLAN'
name: eyes
tasks:
  - title: fine
    adapter: claude
    prompt: fine
  - title: eyes
    adapter: codex
    prompt: look
    attachments: [shot.png]
PLAN
cat >"$W/good.yaml" <<'PLAN'
name: good
tasks:
  - title: endpoint
    adapter: claude
    sampling: {base_url: "http://127.0.0.1:9", api_key_env: ANTHROPIC_API_KEY}
    prompt: hi
  - title: no adapter named
    prompt: routing decides at dispatch
PLAN
git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1

expect_exit 3 "$BERNSTEIN" plan validate warm.yaml
expect_stderr_contains "warm.yaml:7:7: field 'tasks[0].sampling.temperature': task 'warm-claude' would be refused at dispatch: Adapter 'claude' does not declare the 'supports_sampling_params' capability but sampling/endpoint parameters were requested: temperature, max_tokens." \
	"temperature on claude: refused with its exact location"
expect_stdout_empty "nothing on stdout"
expect_exit 3 "$BERNSTEIN" plan validate eyes.yaml
expect_stderr_contains "eyes.yaml:9:5: field 'tasks[1].attachments': task 'eyes' would be refused at dispatch: adapter 'codex' does not support multimodal attachments" \
	"an attachment for codex: refused at its key"
expect_lines stderr 1 "only the task at fault"
expect_exit 0 "$BERNSTEIN" plan validate good.yaml
expect_exit 3 "$BERNSTEIN" plan validate --json warm.yaml good.yaml
check "--json: the refusal is an error with its line and column" "$PY" -c '
import json, sys
f = {x["file"]: x for x in json.load(open(sys.argv[1]))["files"]}
e = f["warm.yaml"]["errors"]
assert not f["warm.yaml"]["valid"] and f["good.yaml"]["valid"], f
assert len(e) == 1 and (e[0]["line"], e[0]["column"]) == (7, 7) and "would be refused at dispatch" in e[0]["message"], e
' "$T/stdout"

# dispatch refuses the same plan for the same reason: one rule
run "$BERNSTEIN" run warm.yaml
check "run of that plan is refused (exit 6)" test "$RC" -eq 6
expect_stdout_contains "does not declare the 'supports_sampling_params' capability but sampling/endpoint parameters were requested: temperature, max_tokens." \
	"with the words validate printed"
run "$BERNSTEIN" status
expect_stdout_contains "): failed, exit 6 (" "status says the run's exit code, by run's own rule"
run "$BERNSTEIN" status --json
check "status --json: exit_code 6" "$PY" -c '
import json, sys
st = json.load(open(sys.argv[1]))
assert st["exit_code"] == 6 and st["state"] == "failed", st
assert st["tasks"][0]["state"] == "refused", st
' "$T/stdout"
test_done
