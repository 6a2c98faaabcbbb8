#!/bin/sh
# Goal mode's planner view (issue #20): the planner works in a scratch clone
# of HEAD; the built-in runner's file tools keep it there (a write to
# ../../../../ESCAPE.txt or to an absolute path of the main checkout is
# refused and told to the model), a change it makes in its view never
# reaches the main checkout, an uncommitted file of the main checkout is not
# in its view, and a tracked file of the plan file's name (a symlink to a
# valid plan elsewhere) is removed from the view before the planner starts:
# only what the planner writes is read.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0303 plan generate: the planner stays in its view"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
OKEY=sk-test-goal-view-0123456789
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nsandbox: none\n' >"$W/bernstein.yaml"
printf 'tracked\n' >"$W/README.md"
git_q add -A && git_q commit -q -m base
printf 'secret draft\n' >"$W/UNCOMMITTED-NOTES.txt"
printf 'name: outside\ntasks:\n  - {title: x, prompt: y, adapter: mock}\n' >"$T/outside.yaml"

"$PY" - "$T/script.json" "$W" "$T/outside.yaml" <<'PY'
import json, sys
w, outside = sys.argv[2], sys.argv[3]
plan = "name: v\ntasks:\n  - {title: a, prompt: \"write a.txt a\", adapter: mock}\n"
def call(i, name, args):
    return {"tool_calls": [{"name": name, "id": "c%d" % i, "arguments": args}]}
json.dump({"responses": [
    call(1, "write_file", {"path": "../../../../ESCAPE.txt", "content": "x"}),
    call(2, "write_file", {"path": w + "/ABS.txt", "content": "x"}),
    call(3, "write_file", {"path": "README.md", "content": "changed by the planner\n"}),
    call(4, "write_file", {"path": "bernstein-plan.yaml", "content": plan}),
    {"text": "done"},
]}, open(sys.argv[1], "w"))
PY
fake_start "$T/script.json"
expect_exit 0 "$KEY" "OPENAI_API_KEY=$OKEY" BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
	"$BERNSTEIN" plan generate --planner openai_agents -m fake-model \
	--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY -o plan.yaml "a goal"
check "a relative write out of the view was refused" \
	sh -c '! ls "$1"/ESCAPE.txt "$1"/.bernstein/ESCAPE.txt "$1"/.bernstein/plans/ESCAPE.txt >/dev/null 2>&1' sh "$W"
check "an absolute write into the main checkout was refused" test ! -e "$W/ABS.txt"
check "the model was told its writes were refused" "$PY" - "$T/requests.jsonl" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
tool = [m for m in reqs[2]["body"]["messages"] if m.get("role") == "tool"]
assert len(tool) == 2 and all("wrote" not in m["content"] for m in tool), tool
PY
check "the main checkout's README is untouched" grep -qx tracked "$W/README.md"
check "the view's README changed (a scratch clone)" \
	sh -c 'grep -q "changed by the planner" "$1"/.bernstein/plans/*/view/README.md' sh "$W"
check "an uncommitted file is not in the view" \
	sh -c '! ls "$1"/.bernstein/plans/*/view/UNCOMMITTED-NOTES.txt >/dev/null 2>&1' sh "$W"
check "the first request does not carry the uncommitted file" \
	sh -c '! grep -q UNCOMMITTED "$1"' sh "$T/requests.jsonl"

# a tracked bernstein-plan.yaml (a symlink to a valid plan outside) is no draft
"$PY" - "$T/link.json" "$T/outside.yaml" <<'PY'
import json, sys
json.dump({"responses": [{"text": "done"}]}, open(sys.argv[1], "w"))
PY
fake_start "$T/link.json"
ln -s "$T/outside.yaml" "$W/bernstein-plan.yaml"
git_q add bernstein-plan.yaml && git_q commit -q -m "a link"
expect_exit 3 "$KEY" "OPENAI_API_KEY=$OKEY" BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
	"$BERNSTEIN" plan generate --planner openai_agents -m fake-model \
	--set "base_url=$FAKE_URL" --set api_key_env=OPENAI_API_KEY --rounds 1 -o plan2.yaml "a goal"
expect_stderr_contains "bernstein-plan.yaml: the planner wrote no plan file" \
	"a tracked file of the plan's name is removed from the view, never read"
check "no plan written" test ! -e "$W/plan2.yaml"

test_done
