#!/bin/sh
# Issue #22 follow-up: the HTTP API controls a run that is not live as the
# CLI does. A `merge: review` run of mock tasks ends with tasks waiting in
# review: one approved over HTTP is merged (by a resume the server starts
# detached, `bernstein approve --detach`), another rejected with feedback
# gets a new attempt that acts on it, then approved; a failed task of an
# ended run retried over HTTP runs again and is done; a task added to an
# ended run is done. Each answers 202 with the run id while the run goes on
# in the background, never inside the server. Bad ids, bad bodies and
# values that look like options are refused or stay values; every request
# is audited as the CLI's (control.request, live: false).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0339 serve: approve, reject, retry, add-task of a run that is not live"

. "$SRCDIR/tests/integration/repo-lib.sh"

_t0339_cleanup()
{
	# a detached resume still going: its supervisor pid is in state.db
	for _p in $(sqlite3 "$W/.bernstein/state.db" 'select supervisor_pid from runs where supervisor_pid > 0' 2>/dev/null); do
		kill "$_p" 2>/dev/null
	done
	repo_cleanup
}
trap _t0339_cleanup EXIT

merges() { git -C "$W" log --merges --format=%s main | grep -c "^Merge bernstein/$1-"; }

repo_init
# 'flaky': fails until $T/ok exists
cat >"$T/flaky.sh" <<EOF
test -f $T/ok || exit 1
echo fixed > flaky.txt
EOF
script_agent "$W" flaky "$T/flaky.sh"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: mock
parallel: 2
kill_grace: 1
sandbox: none
merge: review
EOF
cat >"$W/review.yaml" <<'EOF'
name: review
tasks:
  - title: a
    prompt: |
      write a.txt A
      commit add a
  - title: b
    prompt: |
      write b.txt B
      commit add b
EOF
commit_base

expect_exit 1 "$KEY" "$BERNSTEIN" run review.yaml
check "a waits in review" test "$(task_state a)" = review
check "b waits in review" test "$(task_state b)" = review

serve_bg "$SERVE" --listen 127.0.0.1:0
check "the server starts" serve_wait

api()
{
	_p=$1
	shift
	CODE=$(curl -sS --path-as-is -o "$T/body" -w '%{http_code}' \
		-H "Authorization: Bearer $TOKEN" "$@" "$URL$_p")
}
jbody() { /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/body" "$1"; }
post() { api "$1" -X POST -H 'Content-Type: application/json' --data-binary "$2"; }
# the answer in $T/body against docs/openapi.json's schema of its status
spec_ok() { /usr/bin/python3 "$SRCDIR/tests/helpers/openapi-check.py" --answer "$SRCDIR/docs/openapi.json" "$1" "$CODE" "$T/body"; }
# until the run's detached resume has ended
not_live()
{
	authget "/api/runs/$1" |
		/usr/bin/python3 -c 'import json,sys; sys.exit(1 if json.load(sys.stdin)["live"] else 0)'
}

api /api/runs
RUN=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["id"])' "$T/body")
check "the run has ended" jbody 'not j["runs"][0]["live"]'

# ---- approve: merged by a detached resume ----
post "/api/runs/$RUN/tasks/a/approve" '{}'
check "approve of a run not live: 202" test "$CODE" = 202
check "the answer: the run, the task approved, resumed in the background" \
	jbody 'j["ok"] and j["run"] == "'"$RUN"'" and j["resumed"] and j["pid"] > 0 and j["log"].endswith("/run.log") and j["tasks"][0]["id"] == "a"'
check "the answer matches docs/openapi.json (OfflineReply)" spec_ok '/api/runs/{run}/tasks/{task}/approve'
check "the resume ends" wait_until "not_live $RUN"
check "a is done" test "$(task_state a)" = done
check "a merged into main (git log)" test "$(merges a)" -eq 1
check "main has a.txt" sh -c "git -C '$W' show main:a.txt | grep -q A"
check "b still waits in review" test "$(task_state b)" = review
check "the resume's output went to the run's log" grep -q '"type":"resume"' "$W/.bernstein/runs/$RUN/run.log"

# ---- reject with feedback: a new attempt acts on it; then approved ----
FB='Add the second file.
write b2.txt from the review
--key-file=/etc/passwd'
BODY=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"feedback": sys.argv[1]}))' "$FB")
post "/api/runs/$RUN/tasks/b/reject" "$BODY"
check "reject of a run not live: 202" sh -c "[ '$CODE' = 202 ] && grep -q '\"resumed\": *true' '$T/body'"
check "the answer matches docs/openapi.json" spec_ok '/api/runs/{run}/tasks/{task}/reject'
check "the resume ends" wait_until "not_live $RUN"
check "b is back in review after its second attempt" test "$(task_state b)" = review
check "the attempt acted on the feedback" sh -c \
	"git -C '$W' show \$(git -C '$W' for-each-ref --format='%(refname:short)' 'refs/heads/bernstein/b-*'):b2.txt | grep -q 'from the review'"
check "the whole feedback was the feedback (an option-like line stays text)" /usr/bin/python3 -c '
import glob, json, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
rej = [r["details"] for r in recs if r["event_type"] == "task.rejected"]
assert len(rej) == 1 and rej[0]["feedback_bytes"] == len(sys.argv[2].encode()), rej' "$W/.bernstein/audit" "$FB"
post "/api/runs/$RUN/tasks/b/approve" '{"allow_protected": false}'
check "approve: 202" test "$CODE" = 202
check "the resume ends" wait_until "not_live $RUN"
check "b is done, merged with the feedback's file" sh -c \
	"[ \"\$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/b-')\" -eq 1 ] && git -C '$W' show main:b2.txt | grep -q 'from the review'"
post "/api/runs/$RUN/tasks/b/approve" '{}'
check "approve of a done task: 409 state, nothing resumed" \
	sh -c "[ '$CODE' = 409 ] && grep -q '\"kind\": *\"state\"' '$T/body' && ! grep -q resumed '$T/body'"
check "the refusal matches docs/openapi.json (Error)" spec_ok '/api/runs/{run}/tasks/{task}/approve'

# ---- a second run: retry of a failed task, add-task ----
printf 'adapter: mock\nparallel: 2\nkill_grace: 1\nsandbox: none\n' >"$W/bernstein.yaml"
cat >"$W/two.yaml" <<'EOF'
name: two
tasks:
  - title: flaky
    adapter: flaky
    prompt: "Write flaky.txt."
EOF
git_q add -A
git_q commit -q -m two
expect_exit 1 "$KEY" "$BERNSTEIN" run two.yaml
check "flaky failed" test "$(task_state flaky)" = failed
api /api/runs
RUN2=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["id"])' "$T/body")
check "a new run" test "$RUN2" != "$RUN"

post "/api/runs/$RUN/tasks/b/reject" '{"feedback": "x"}'
check "a request to an older run that is not live: 409 not_live" \
	sh -c "[ '$CODE' = 409 ] && grep -q not_live '$T/body'"
post "/api/runs/$RUN2/tasks/flaky/retry" '{"fresh": "yes"}'
check "a wrong type: 400, nothing changed" sh -c "[ '$CODE' = 400 ] && [ \"\$(cd '$W' && '$BERNSTEIN' status --json | grep -c '\"failed\"')\" -ge 1 ]"
post "/api/runs/$RUN2/tasks/flaky/retry" '{"detach": true}'
check "an unknown key: 400" test "$CODE" = 400
post "/api/runs/$RUN2/tasks/--help/retry" '{}'
check "an option as a task id: 400" test "$CODE" = 400
post "/api/runs/$RUN2/tasks/..%2f..%2fx/retry" '{}'
check "a path as a task id: 400" test "$CODE" = 400
post "/api/runs/$RUN2/tasks/nosuch/retry" '{}'
check "no such task: 404, nothing resumed" sh -c "[ '$CODE' = 404 ] && ! grep -q resumed '$T/body'"
check "flaky still failed" test "$(task_state flaky)" = failed

touch "$T/ok"
post "/api/runs/$RUN2/tasks/flaky/retry" '{}'
check "retry of a failed task of an ended run: 202" test "$CODE" = 202
check "its answer names the run" jbody 'j["run"] == "'"$RUN2"'" and j["resumed"]'
check "the answer matches docs/openapi.json" spec_ok '/api/runs/{run}/tasks/{task}/retry'
check "the resume ends" wait_until "not_live $RUN2"
check "flaky is done (merge: auto)" test "$(task_state flaky)" = done
check "main has flaky.txt" sh -c "git -C '$W' show main:flaky.txt | grep -q fixed"

post "/api/runs/$RUN2/tasks" '{"prompt": "--fresh\nwrite added.txt added\ncommit add it", "id": "added", "depends_on": ["nosuch"]}'
check "add-task with a dependency the run lacks: 422 invalid" \
	sh -c "[ '$CODE' = 422 ] && grep -q '\"kind\": *\"invalid\"' '$T/body'"
post "/api/runs/$RUN2/tasks" '{"prompt": "--fresh\nwrite added.txt added\ncommit add it", "id": "added", "title": "--role=x", "depends_on": ["flaky"]}'
check "add-task to an ended run: 202" sh -c "[ '$CODE' = 202 ] && grep -q '\"resumed\": *true' '$T/body'"
check "the answer matches docs/openapi.json" spec_ok '/api/runs/{run}/tasks'
check "the resume ends" wait_until "not_live $RUN2"
check "the added task is done" test "$(task_state added)" = done
check "main has its file" sh -c "git -C '$W' show main:added.txt | grep -q added"
api "/api/runs/$RUN2/tasks/added"
check "its prompt and title are the values given (no option)" \
	jbody 'j["prompt"].startswith("--fresh\n") and j["title"] == "--role=x"'

# ---- the dashboard's approve and reject buttons, in headless Chromium ----
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
	ART=${BUILDDIR:-$T}/test-artifacts/t0339
	rm -rf "$ART"
	printf 'adapter: mock\nparallel: 2\nkill_grace: 1\nsandbox: none\nmerge: review\n' >"$W/bernstein.yaml"
	cat >"$W/three.yaml" <<'EOF'
name: three
tasks:
  - title: c
    prompt: |
      write c.txt C
      commit add c
  - title: d
    prompt: |
      write d.txt D
      commit add d
EOF
	git_q add -A
	git_q commit -q -m three
	expect_exit 1 "$KEY" "$BERNSTEIN" run three.yaml
	env HOME="$T/home" /usr/bin/python3 "$SRCDIR/tests/helpers/dashboard-review.py" "$URL" "$TOKEN" "$ART" \
		"$T/chromium-profile" c d 'write d2.txt from the page' >"$T/browser.out" 2>"$T/browser.err"
	BRC=$?
	while IFS= read -r line; do
		case $line in
		ok\ *) ok "browser: ${line#ok }" ;;
		FAIL\ *) not_ok "browser: ${line#FAIL }" ;;
		esac
	done <"$T/browser.out"
	check "the browser check ran to its end" test "$BRC" -eq 0 -a "$(grep -c '^ok ' "$T/browser.out")" -eq 5
	[ "$BRC" -eq 0 ] || diag "$(tail -n 5 "$T/browser.err")"
	check "c, approved from the page, merged (git log)" test "$(merges c)" -eq 1
	check "d's second attempt acted on the page's feedback" sh -c \
		"git -C '$W' show \$(git -C '$W' for-each-ref --format='%(refname:short)' 'refs/heads/bernstein/d-*'):d2.txt | grep -q 'from the page'"
	check "d not merged (it waits in review again)" test "$(merges d)" -eq 0
else
	ok "# SKIP the dashboard's buttons: Debian's chromium and chromium-driver are not installed"
fi

# ---- audited as the CLI's ----
check "each request audited: control.request, not live, this user" /usr/bin/python3 -c '
import glob, json, os, sys
recs = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")) for l in open(f)]
req = [r["details"] for r in recs if r["event_type"] == "control.request" and r["details"].get("live") is False]
ops = sorted(d["op"] for d in req)
for op in ("approve", "reject", "retry", "add_task"):
    assert op in ops, ops
assert all(d["who"]["uid"] == os.getuid() for d in req), req
app = [r for r in recs if r["event_type"] == "task.approved"]
assert len(app) in (2, 3), len(app)  # 3 with the browser part' "$W/.bernstein/audit"
expect_exit 0 "$KEY" "$BERNSTEIN" audit verify
check "no detached run left" sh -c "! sqlite3 '$W/.bernstein/state.db' 'select state from runs' | grep -q running"
check "no token in the server's output" sh -c "! grep -q '$TOKEN' '$T/serve.err'"

test_done
