#!/bin/sh
# bernstein run end to end with real processes, real git and real SQLite:
# a repository catalogue declares 'shell' (the prompt is a sh -c script) and
# the built-in mock adapter does the rest. Checked: dependencies see their
# dependencies' merges, --no-ff merges, global and per-adapter parallelism
# limits, a refusal anchored with its receipt (exit 6), artifact mode (the
# SHA-256 in state.db and the audit chain), a missing artifact, a merge
# conflict (branch kept, checkout clean), a failing gate, retries after a
# rate limit, no_changes, status/logs, and the refusals before any run
# (invalid plan, dirty checkout, not a repository).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0103 bernstein run"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
TRACE=$T/trace

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/shared.txt"
mkdir -p "$W/.bernstein/catalog/profiles"
shell_agent "$W"
cat >"$W/.bernstein/catalog/profiles/solo.yaml" <<'EOF'
name: solo
display_name: "One at a time"
shape: factory
invocation:
  binary: sh
  extra_args: [-c]
  prompt_positional: true
capabilities:
  max_parallel_workers: 1
EOF
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 4
retry_backoff: 0
EOF
commit_all base

# ---- dependencies, merges ----
cat >"$W/deps.yaml" <<'EOF'
name: deps
tasks:
  - title: first
    prompt: "echo one > one.txt"
  - title: second
    prompt: "echo two > two.txt"
  - title: both
    depends_on: [first, second]
    prompt: "cat one.txt two.txt > both.txt"
EOF
commit_all plan
expect_exit 0 "$KEY" "$BERNSTEIN" run deps.yaml
expect_stdout_contains "run " "a summary line"
check "the dependent task saw both merges" grep -q two "$W/both.txt"
check "three --no-ff merges with two parents each" \
	sh -c "[ \$(git -C '$W' rev-list --merges --count main) -eq 3 ]"
check "the checkout is clean after the run" \
	sh -c "[ -z \"\$(git -C '$W' status --porcelain --untracked-files=no)\" ]"
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "done"' "status --json shows done tasks"
run "$BERNSTEIN" logs both
check "logs of a task with no output is empty but succeeds" [ "$RC" -eq 0 ]
run "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "intact" "the audit chain verifies"
run "$KEY" "$BERNSTEIN" audit show --event-type task.transition --json
expect_stdout_contains '"to": "merging"' "transitions are anchored"

# ---- global parallelism: one at a time ----
cat >"$W/serial.yaml" <<EOF
name: serial
tasks:
  - {title: s1, prompt: "echo start >> $TRACE; sleep 0.3; echo end >> $TRACE; echo 1 > s1.txt"}
  - {title: s2, prompt: "echo start >> $TRACE; sleep 0.3; echo end >> $TRACE; echo 2 > s2.txt"}
  - {title: s3, prompt: "echo start >> $TRACE; sleep 0.3; echo end >> $TRACE; echo 3 > s3.txt"}
EOF
commit_all serial
: >"$TRACE"
expect_exit 0 "$KEY" "$BERNSTEIN" run --parallel 1 serial.yaml
check "--parallel 1 never overlaps two agents" \
	sh -c "[ \"\$(tr '\n' ' ' <'$TRACE')\" = 'start end start end start end ' ]"

# ---- an adapter's max_parallel_workers ----
sed 's/title: s\([0-9]\)/title: p\1, adapter: solo/; s/s\([0-9]\)\.txt/p\1.txt/' \
	"$W/serial.yaml" >"$W/solo.yaml"
sed -i 's/^name: serial/name: solo/' "$W/solo.yaml"
commit_all solo
: >"$TRACE"
expect_exit 0 "$KEY" "$BERNSTEIN" run --parallel 4 solo.yaml
check "max_parallel_workers 1 holds with --parallel 4" \
	sh -c "[ \"\$(tr '\n' ' ' <'$TRACE')\" = 'start end start end start end ' ]"

# ---- a refusal: anchored, exit 6, never a failover ----
cat >"$W/refuse.yaml" <<'EOF'
name: refuse
tasks:
  - title: look at it
    adapter: shell
    requires: [capability:vision]
    prompt: "echo should-not-run > seen.txt"
EOF
commit_all refuse
expect_exit 6 "$KEY" "$BERNSTEIN" run refuse.yaml
check "the refused task never ran" [ ! -e "$W/seen.txt" ]
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "refused"' "status shows the refusal"
expect_stdout_contains '"receipt_hash": "' "with its receipt hash"
run "$KEY" "$BERNSTEIN" audit show --event-type adapter.capability_refusal --json
expect_stdout_contains '"unmet"' "the refusal receipt is in the audit chain"

# ---- artifact mode ----
cat >"$W/artifact.yaml" <<'EOF'
name: artifact
tasks:
  - title: report
    artifact: out/report.md
    prompt: "mkdir -p out && echo '# report' > out/report.md"
  - title: no report
    artifact: out/missing.md
    prompt: "echo nothing > else.txt"
EOF
commit_all artifact
expect_exit 1 "$KEY" "$BERNSTEIN" run artifact.yaml
SUM=$(sha256sum "$W/out/report.md" | cut -d' ' -f1)
run "$BERNSTEIN" status --json
expect_stdout_contains "\"artifact_sha256\": \"$SUM\"" "the artifact's SHA-256 is recorded"
expect_stdout_contains "was not produced" "a missing artifact fails the task"
run "$KEY" "$BERNSTEIN" audit show --event-type artifact.completed --json
expect_stdout_contains "$SUM" "artifact.completed carries the hash"

# ---- a merge conflict ----
cat >"$W/conflict.yaml" <<'EOF'
name: conflict
tasks:
  - {title: left, prompt: "echo left > shared.txt"}
  - {title: right, prompt: "echo right > shared.txt"}
EOF
commit_all conflict
expect_exit 1 "$KEY" "$BERNSTEIN" run conflict.yaml
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "conflict"' "one side conflicts"
expect_stdout_contains '"shared.txt"' "naming the file"
check "the checkout is clean after the conflict" \
	sh -c "[ -z \"\$(git -C '$W' status --porcelain --untracked-files=no)\" ]"
other_side_kept()
{
	merged=$(git -C "$W" show main:shared.txt)
	for r in $(git -C "$W" for-each-ref --format='%(refname)' refs/heads/bernstein/); do
		v=$(git -C "$W" show "$r:shared.txt" 2>/dev/null) || continue
		[ "$v" != "$merged" ] && [ "$v" != base ] && return 0
	done
	return 1
}
check "the conflicting branch keeps its commit" other_side_kept

# ---- a failing gate ----
cat >"$W/gate.yaml" <<'EOF'
name: gate
tasks:
  - title: gated
    gates: [{name: has-proof, run: "test -f proof.txt"}]
    prompt: "echo x > gated.txt"
EOF
commit_all gate
expect_exit 1 "$KEY" "$BERNSTEIN" run gate.yaml
run "$BERNSTEIN" status
expect_stdout_contains "gate 'has-proof' failed (exit 1)" "the gate's failure is the reason"
check "nothing of the gated task was merged" [ ! -e "$W/gated.txt" ]

# ---- gates run beside the agents: the loop reads and merges meanwhile ----
# The gate of "waits" passes only if "other" got merged while it ran; with
# gates run inside the loop it would wait for nothing and fail after 8 s.
cat >"$W/gatewait.yaml" <<EOF
name: gatewait
tasks:
  - title: waits
    gates: [{name: sees/other, run: "i=0; while [ \$i -lt 80 ] && [ ! -e '$W/other.txt' ]; do sleep 0.1; i=\$((i+1)); done; echo waited \$i; test -e '$W/other.txt'", timeout: 60}]
    prompt: "echo w > waits.txt"
  - title: other
    prompt: "sleep 1; echo o > other.txt"
  - title: slow-gate
    gates: [{name: too-slow, run: "sleep 30", timeout: 1}]
    prompt: "echo s > slow.txt"
EOF
commit_all gatewait
expect_exit 1 "$KEY" "$BERNSTEIN" run --json gatewait.yaml
check "a gate passed because another task merged while it ran" grep -q w "$W/waits.txt"
check "the other task merged" grep -q o "$W/other.txt"
run "$BERNSTEIN" status
expect_stdout_contains "gate 'too-slow' timed out after 1.0 s (exit 124)" "a gate's timeout is its reason"
check "nothing of the timed-out gate's task was merged" [ ! -e "$W/slow.txt" ]
gatelog=$(find "$W/.bernstein/runs" -name 'gate-sees_other.log' | head -1)
check "the gate's output is in gate-NAME.log ('/' in the name as '_')" \
	grep -q '^waited ' "$gatelog"

# ---- mock: rate limit, retry, no_changes ----
cat >"$W/mock.yaml" <<'EOF'
name: mock
tasks:
  - title: limited
    adapter: mock
    prompt: |
      once ~/limited-once rate-limit 0
      write limited.txt done after a retry
  - title: idle
    adapter: mock
    prompt: say nothing to change
EOF
commit_all mock
expect_exit 0 "$KEY" "$BERNSTEIN" run --json mock.yaml
expect_stdout_contains '"reason":"rate limited; retry 1 of 2' "a rate limit is retried"
check "the retry finished the task" grep -q "after a retry" "$W/limited.txt"
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "no_changes"' "an idle agent is no_changes"
idle_branch=$(python3 -c 'import json,sys; print([t for t in json.load(sys.stdin)["tasks"] if t["id"] == "idle"][0]["branch"])' <"$T/stdout")
idle_wt=$(python3 -c 'import json,sys; print([t for t in json.load(sys.stdin)["tasks"] if t["id"] == "idle"][0]["worktree"])' <"$T/stdout")
check "the idle task had a branch and a worktree" [ -n "$idle_branch" ] && [ -n "$idle_wt" ]
check "the idle task's worktree is gone" [ ! -e "$idle_wt" ]
check "the idle task's empty branch is deleted" \
	sh -c "[ -z \"\$(git -C '$W' branch --list '$idle_branch')\" ]"

# ---- a retry starts when it is due, while other agents still run ----
sed 's/^retry_backoff: 0$/retry_backoff: 1/' "$W/bernstein.yaml" >"$T/cfg" && cp "$T/cfg" "$W/bernstein.yaml"
cat >"$W/retrywake.yaml" <<EOF
name: retrywake
tasks:
  - title: limited2
    adapter: mock
    prompt: |
      once ~/limited2-once rate-limit 0
      write retried2.txt retried while the other ran
  - title: long
    prompt: "i=0; while [ \$i -lt 100 ] && [ ! -e '$W/retried2.txt' ]; do sleep 0.1; i=\$((i+1)); done; if [ -e '$W/retried2.txt' ]; then echo yes > saw.txt; else echo no > saw.txt; fi"
EOF
commit_all retrywake
expect_exit 0 "$KEY" "$BERNSTEIN" run --json retrywake.yaml
check "the retry was merged while the long task still ran" grep -q yes "$W/saw.txt"
sed 's/^retry_backoff: 1$/retry_backoff: 0/' "$W/bernstein.yaml" >"$T/cfg" && cp "$T/cfg" "$W/bernstein.yaml"
commit_all "retry_backoff back to 0"

# ---- what counts as a change, whatever the user's git config says ----
# A user who hides untracked files from `git status` must not lose an
# agent's new file: the clean check of a worktree sees untracked files.
git -C "$W" config status.showUntrackedFiles no
cat >"$W/changes.yaml" <<'EOF'
name: changes
tasks:
  - title: untracked
    prompt: "echo hidden > hidden.txt"
  - title: ignored
    prompt: "mkdir -p .bernstein && echo scratch > .bernstein/scratch"
  - title: committed
    prompt: "echo c > committed.txt && git add committed.txt && git -c user.name=a -c user.email=a@a commit -q -m mine"
EOF
commit_all changes
expect_exit 0 "$KEY" "$BERNSTEIN" run --json changes.yaml
check "an untracked file the config hides is merged" grep -q hidden "$W/hidden.txt"
check "the agent's own commit is merged" grep -q c "$W/committed.txt"
run "$BERNSTEIN" status --json
check "an ignored file only is no_changes" \
	sh -c "tr -d ' \n' <'$T/stdout' | grep -q '\"id\":\"ignored\"[^}]*\"state\":\"no_changes\"'"
git -C "$W" config --unset status.showUntrackedFiles

# ---- the sampling gate at dispatch; a mode profile only where declared ----
cat >"$W/sampling.yaml" <<'EOF'
name: sampling
tasks:
  - title: hot
    sampling: {temperature: 0.9}
    prompt: "echo hot > hot.txt"
  - title: moded
    prompt: "echo moded > moded.txt"
EOF
printf 'mode: fast\n' >>"$W/bernstein.yaml"
commit_all sampling
expect_exit 6 "$KEY" "$BERNSTEIN" run sampling.yaml
run "$BERNSTEIN" status --json
expect_stdout_contains "does not declare the 'supports_sampling_params' capability" \
	"an explicit temperature for an adapter without it is refused"
check "the refused task never ran" [ ! -e "$W/hot.txt" ]
check "the mode profile is not forced on an adapter without sampling" \
	grep -qx moded "$W/moded.txt"
sed -i '/^mode: fast$/d' "$W/bernstein.yaml"
commit_all nomode

# ---- a missing agent binary; an artifact that is a symlink out ----
cat >"$W/.bernstein/catalog/profiles/ghost.yaml" <<'EOF'
name: ghost
display_name: "Missing agent"
shape: factory
invocation:
  binary: /nonexistent/ghost-agent
  prompt_positional: true
EOF
cat >>"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
  ghost:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
cat >"$W/hostile.yaml" <<'EOF'
name: hostile
tasks:
  - {title: ghost, adapter: ghost, prompt: hi}
  - {title: escape, artifact: out.txt, prompt: "ln -s /etc/passwd out.txt"}
EOF
commit_all hostile
expect_exit 1 "$KEY" "$BERNSTEIN" run hostile.yaml
run "$BERNSTEIN" status --json
expect_stdout_contains '"outcome": "binary_missing"' "a missing agent binary fails its task"
run "$BERNSTEIN" status
expect_stdout_contains "resolves outside the worktree" "an artifact symlinked out is refused"

# ---- session.json: one schema for run and spawn ----
run "$KEY" "$BERNSTEIN" spawn shell 'true'
check "spawn ran (exit 0)" test "$RC" -eq 0
check "a run's session.json has spawn's keys, with its task and attempt" python3 -c '
import glob, json, os, sys
files = glob.glob(os.path.join(sys.argv[1], ".bernstein/runs/*/*/session.json")) + glob.glob(os.path.join(sys.argv[1], ".bernstein/runs/*/*/*/session.json"))
docs = [json.load(open(f)) for f in files]
runs = [d for d in docs if d.get("task")]
spawns = [d for d in docs if not d.get("task")]
assert runs and spawns, (len(runs), len(spawns))
keys = set(spawns[0])
for d in runs + spawns:
    assert set(d) == keys, sorted(set(d) ^ keys)
    assert d["kind"] == "outcome" and d["outcome"] and d["adapter"] and d["started_at"], d
for d in runs:
    assert isinstance(d["attempt"], int) and d["attempt"] >= 1 and d["exit_code"] is None, d
for d in spawns:
    assert d["attempt"] is None and d["exit_code"] == 0, d
' "$W"

# ---- refused before running ----
printf 'name: bad\ntasks:\n  - title: x\n    depends_on: [nope]\n    prompt: y\n' >"$W/bad.yaml"
expect_exit 3 "$KEY" "$BERNSTEIN" run bad.yaml
expect_stderr_contains "bad.yaml:4:" "an invalid plan names line and column"
echo dirty >>"$W/shared.txt"
expect_exit 4 "$KEY" "$BERNSTEIN" run deps.yaml
expect_stderr_contains "uncommitted changes" "a dirty checkout is refused"
git -C "$W" checkout -q -- shared.txt
mkdir -p "$T/norepo"
expect_exit 4 "$KEY" "$BERNSTEIN" -C "$T/norepo" run x.yaml
expect_stderr_contains "not inside a git repository" "outside a repository"
expect_exit 2 "$BERNSTEIN" run
expect_stderr_contains "missing the plan file" "usage"

test_done
