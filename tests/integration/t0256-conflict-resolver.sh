#!/bin/sh
# Issue #18, conflicts: on_conflict: resolve. Two tasks of the mock agent
# rewrite the same file; the one merged second conflicts, its rebase
# conflicts too, and a resolver (an attempt of the task, role resolver)
# runs in the task's tree on a merge of the base left with conflict
# markers. Its prompt carries the conflicting paths and both sides' intents
# (the task's prompt, the base's commit subjects) -- the mock agent carries
# out the task's instructions again, which is its resolution. Checked:
#   - resolved: committed (a merge of the base into the branch), the gates
#     again, merged once; task.resolver (adapter, profile hash) and
#     task.resolved in the audit chain; the prompt as the agent got it;
#   - the resolver leaves markers (its instruction ran once already):
#     conflict, the branch kept as it was, no merge left in its tree;
#   - resolver: {adapter: shell}: that adapter resolves (here it fails: its
#     prompt is prose, not a script): conflict, the branch kept;
#   - sandboxed (landlock, where the kernel has it): the rebase, the merge
#     and the resolver in the task's own clone, the branch published from it;
#   - `bernstein cancel` of the task while its resolver runs: cancelled, its
#     tree and branch put back (no merge left half made).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0256 conflicts: on_conflict: resolve runs a resolver agent"

KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
N=0

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

# new_repo EXTRA-CONFIG PROMPT-PREFIX
new_repo()
{
	N=$((N + 1))
	W=$T/repo-$N
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'one\ntwo\nthree\n' >"$W/f.txt"
	shell_agent "$W"
	cat >"$W/bernstein.yaml" <<EOF
adapter: mock
parallel: 2
sandbox: ${SANDBOX:-none}
retry_backoff: 0
on_conflict: resolve
$1
gates:
  - {name: note, run: "${GATE:-pwd >> $T/gates-$N.log}"}
EOF
	cat >"$W/plan.yaml" <<EOF
name: resolve
tasks:
  - title: left
    prompt: |
      Rewrite f.txt the left way.
      ${2}write f.txt left
  - title: right
    prompt: |
      Rewrite f.txt the right way.
      ${2}write f.txt right
EOF
	git_q add -A && git_q commit -q -m base
}

# the task that conflicted: the one whose reason or audit says so
states()
{
	run "$BERNSTEIN" -C "$W" status --json
	python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tasks"]:
    print(t["title"], t["state"], (t.get("reason") or "").replace("\n", " "))' "$T/stdout" >"$T/states"
}

# ---- resolved ----
new_repo "" ""
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
if [ "$RC" -eq 0 ]; then ok "resolved: the run exits 0"; else
	not_ok "resolved: the run exits 0"; diag "exit $RC"; _diag_file stderr "$T/stderr"
	states; _diag_file states "$T/states"
fi
states
check "resolved: both tasks done" sh -c "[ \$(grep -c ' done ' '$T/states') -eq 2 ]"
LAST=$(git -C "$W" log -1 --format=%s main | sed -n 's/^Merge bernstein\/\([a-z]*\)-.*/\1/p')
check "resolved: the file is the second task's resolution" sh -c \
	"[ -n '$LAST' ] && [ \"\$(git -C '$W' show main:f.txt)\" = '$LAST' ]"
check "resolved: each task merged exactly once" sh -c \
	"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/left-') -eq 1 ] &&
	 [ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/right-') -eq 1 ]"
check "resolved: the merged branch holds the resolution, a merge of the base" sh -c \
	"git -C '$W' log --format=%s main^2 | grep -q '^Merge main into bernstein/$LAST-.*: resolved'"
check "resolved: no conflict marker in the base" sh -c "! git -C '$W' grep -q '^<<<<<<<' main"
check "resolved: the resolving task's gate ran twice" sh -c \
	"[ \$(grep -c '/$LAST-' '$T/gates-$N.log') -eq 2 ]"
run "$KEY" "$BERNSTEIN" -C "$W" audit show --event-type task.resolver --json
expect_stdout_contains '"adapter": "mock"' "resolved: task.resolver names the resolver's adapter"
expect_stdout_contains '"profile_hash": "' "resolved: and its profile hash"
expect_stdout_contains '"f.txt"' "resolved: and the conflicting paths"
run "$KEY" "$BERNSTEIN" -C "$W" audit show --event-type task.resolved --json
expect_stdout_contains '"how": "resolved by the resolver"' "resolved: task.resolved is audited"
# the resolver's prompt as its attempt's plan.json recorded it
python3 -c '
import glob, json, sys
def strings(o):
    if isinstance(o, str): yield o
    elif isinstance(o, list):
        for x in o: yield from strings(x)
    elif isinstance(o, dict):
        for x in o.values(): yield from strings(x)
for p in glob.glob(sys.argv[1] + "/.bernstein/runs/*/" + sys.argv[2] + "-*/2/plan.json"):
    for s in strings(json.load(open(p))):
        if "Resolve a merge conflict" in s:
            open(sys.argv[3], "w").write(s)' "$W" "$LAST" "$T/prompt"
PROMPT=$T/prompt
check "resolved: the resolver's prompt has the paths and both intents" sh -c \
	"[ -n '$PROMPT' ] && grep -q '^- f.txt' '$PROMPT' && grep -q 'Rewrite f.txt the $LAST way' '$PROMPT' &&
	 grep -q '^- Merge bernstein/' '$PROMPT'"
run "$BERNSTEIN" -C "$W" status --json
expect_stdout_contains '"attempts": 2' "resolved: the resolver is the task's second attempt"
check "resolved: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"

# ---- markers left ----
new_repo "" "once ~/did "
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
check "markers: the run exits 1" [ "$RC" -eq 1 ]
states
check "markers: one task done, one a conflict" sh -c \
	"[ \$(grep -c ' done ' '$T/states') -eq 1 ] && [ \$(grep -c ' conflict ' '$T/states') -eq 1 ]"
check "markers: the reason names the markers left" grep -q 'the resolver left conflict markers in f.txt' "$T/states"
C=$(sed -n 's/^\([a-z]*\) conflict .*/\1/p' "$T/states")
check "markers: its branch kept as it was (its one commit over the base)" sh -c "
	b=\$(git -C '$W' for-each-ref --format='%(refname)' 'refs/heads/bernstein/$C-*')
	[ \"\$(git -C '$W' show \$b:f.txt)\" = '$C' ] &&
	[ \"\$(git -C '$W' rev-list --count \$(git -C '$W' rev-list --max-parents=0 main)..\$b)\" -eq 1 ]"
check "markers: no merge left in its tree" sh -c \
	"[ -z \"\$(find '$W/.git/worktrees' -maxdepth 2 -name MERGE_HEAD)\" ] &&
	 [ -z \"\$(git -C \"\$(ls -d '$W'/.bernstein/worktrees/$C-*)\" status --porcelain)\" ]"
check "markers: the checkout is clean, main untouched by it" sh -c \
	"[ -z \"\$(git -C '$W' status --porcelain)\" ] && ! git -C '$W' grep -q '^<<<<<<<' main"

# ---- resolver: {adapter: shell} ----
new_repo "resolver: {adapter: shell}" ""
run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
check "shell resolver: the run exits 1" [ "$RC" -eq 1 ]
states
check "shell resolver: the conflict says the resolver failed" sh -c \
	"grep ' conflict ' '$T/states' | grep -q 'the resolver (shell) ended failed'"
run "$KEY" "$BERNSTEIN" -C "$W" audit show --event-type task.resolver --json
expect_stdout_contains '"adapter": "shell"' "shell resolver: task.resolver names the configured adapter"
check "shell resolver: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"

# ---- sandboxed: the task's clone ----
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	skip "landlock: resolved in the task's clone" "no Landlock on this kernel"
else
	# a confined gate writes nowhere but its clone: it only runs
	SANDBOX=landlock GATE=true new_repo "" ""
	run "$KEY" "$BERNSTEIN" -C "$W" run "$W/plan.yaml"
	if [ "$RC" -eq 0 ]; then ok "landlock: the run exits 0"; else
		not_ok "landlock: the run exits 0"; diag "exit $RC"; _diag_file stderr "$T/stderr"
		_diag_file stdout "$T/stdout"
	fi
	LAST=$(git -C "$W" log -1 --format=%s main | sed -n 's/^Merge bernstein\/\([a-z]*\)-.*/\1/p')
	check "landlock: resolved in the task's clone and merged" sh -c \
		"[ -n '$LAST' ] && [ \"\$(git -C '$W' show main:f.txt)\" = '$LAST' ] &&
		 git -C '$W' log --format=%s main^2 | grep -q '^Merge main into bernstein/$LAST-.*: resolved'"
	check "landlock: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
fi

# ---- cancel while the resolver runs ----
new_repo "" "sleep 2
      "
# shellcheck disable=SC2086 # no blanks in the words
(exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" \
	${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} ${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} \
	"$BERNSTEIN" -C "$W" run "$W/plan.yaml") </dev/null >"$T/run.out" 2>"$T/run.err" &
BG=$!
R=
i=0
while [ $i -lt 600 ] && kill -0 "$BG" 2>/dev/null; do
	R=$("$BERNSTEIN" -C "$W" status --json 2>/dev/null | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tasks"]:
    if t["state"] == "resolving" and t["attempts"] == 2 and "dispatched" in (t.get("reason") or ""):
        print(t["title"])' 2>/dev/null)
	[ -n "$R" ] && break
	sleep 0.05
	i=$((i + 1))
done
if [ -n "$R" ]; then ok "cancel: the resolver runs"; else
	not_ok "cancel: the resolver runs"; _diag_file run.err "$T/run.err"
fi
run "$KEY" "$BERNSTEIN" -C "$W" cancel "$R"
check "cancel: the request is taken" [ "$RC" -eq 0 ]
wait "$BG"
states
check "cancel: the task is cancelled" grep -q "^$R cancelled " "$T/states"
check "cancel: its tree put back: no merge in progress, nothing changed" sh -c \
	"[ -z \"\$(find '$W/.git/worktrees' -maxdepth 2 -name MERGE_HEAD)\" ] &&
	 [ -z \"\$(git -C \"\$(ls -d '$W'/.bernstein/worktrees/$R-*)\" status --porcelain)\" ]"
check "cancel: its branch as it was (its one commit over the base)" sh -c "
	b=\$(git -C '$W' for-each-ref --format='%(refname)' 'refs/heads/bernstein/$R-*')
	[ \"\$(git -C '$W' show \$b:f.txt)\" = '$R' ] &&
	[ \"\$(git -C '$W' rev-list --count \$(git -C '$W' rev-list --max-parents=0 main)..\$b)\" -eq 1 ]"
check "cancel: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"

test_done
