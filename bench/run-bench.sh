#!/bin/sh
# Orchestration overhead of `bernstein run` (issue #6): N no-op tasks (default
# 200) through the whole pipeline (routing + audit, state.db, worktree,
# shim + supervisor, outcome, completion) against, in the same run,
#   bare:     the same N processes spawned by a shell loop, 8 at a time, and
#   worktree: the git work a run does per task, reported apart as the issue
#             asks: `git worktree add -b`, `git worktree remove` (without
#             --force: the check that the agent left nothing behind), and the
#             task branches deleted with one `git branch -D` at the end.
# Each is measured ROUNDS times (default 3), interleaved, and the fastest
# round of each counts: on a shared machine the noise only ever adds time.
# It prints per-task milliseconds and the overhead
#   (run - bare - worktree) / N
# (target: under 5 ms per task). It prints; it does not assert.
#
# usage: bench/run-bench.sh [BUILD_DIR]   (RUN_BENCH_TASKS=N RUN_BENCH_ROUNDS=R)
set -u

build=${1:-build}
n=${RUN_BENCH_TASKS:-200}
rounds=${RUN_BENCH_ROUNDS:-3}
bin=$(cd "$build" && pwd)/bernstein
[ -x "$bin" ] || { echo "run-bench: no $build/bernstein (make build first)" >&2; exit 4; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-run-bench.XXXXXX") || exit 4
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
w=$dir/repo
mkdir -p "$w/.bernstein/catalog/profiles"
git -C "$w" init -q -b main . >/dev/null
printf '.bernstein/\n' >"$w/.gitignore"
cat >"$w/.bernstein/catalog/profiles/noop.yaml" <<'EOF'
name: noop
display_name: "no-op"
shape: factory
invocation:
  binary: true
  prompt_positional: true
capabilities:
  max_parallel_workers: 256
EOF
cat >"$w/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  noop:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
printf 'adapter: noop\nparallel: 8\n' >"$w/bernstein.yaml"
{
	echo "name: bench"
	echo "tasks:"
	i=1
	while [ "$i" -le "$n" ]; do
		echo "  - {title: t$i, prompt: noop}"
		i=$((i + 1))
	done
} >"$w/plan.yaml"
git -C "$w" add -A && git -C "$w" -c user.name=b -c user.email=b@b commit -q -m base

now_ms() { date +%s%3N; }
min() { [ -z "$1" ] || [ "$2" -lt "$1" ] && echo "$2" || echo "$1"; }

# bare: N processes, 8 at a time, as plain as a shell makes it
bare_round() {
	true_bin=$(command -v true)
	t0=$(now_ms)
	i=0
	while [ "$i" -lt "$n" ]; do
		j=0
		while [ "$j" -lt 8 ] && [ "$i" -lt "$n" ]; do
			"$true_bin" noop &
			i=$((i + 1))
			j=$((j + 1))
		done
		wait
	done
	t1=$(now_ms)
	echo $((t1 - t0))
}

# worktree: the git work of N tasks that change nothing, as a run does it
wt_round() {
	t0=$(now_ms)
	i=0
	while [ "$i" -lt "$n" ]; do
		git -C "$w" worktree add -q -b "bench/$1-$i" "$w/.bernstein/worktrees/b" main \
			>/dev/null 2>&1
		git -C "$w" -c status.showUntrackedFiles=normal worktree remove \
			"$w/.bernstein/worktrees/b" >/dev/null 2>&1
		i=$((i + 1))
	done
	git -C "$w" for-each-ref --format='%(refname:short)' "refs/heads/bench/$1-*" |
		xargs git -C "$w" branch -q -D >/dev/null 2>&1
	t1=$(now_ms)
	echo $((t1 - t0))
}

run_round() {
	t0=$(now_ms)
	(cd "$w" && BERNSTEIN_AUDIT_KEY_PATH="$dir/key" "$bin" run --json plan.yaml \
		>"$dir/out" 2>"$dir/err")
	rc=$?
	t1=$(now_ms)
	[ "$rc" -eq 0 ] || {
		echo "run-bench: bernstein run exited $rc" >&2
		tail -5 "$dir/err" >&2
		exit 1
	}
	echo $((t1 - t0))
}

bare= wt= runms=
r=1
while [ "$r" -le "$rounds" ]; do
	bare=$(min "$bare" "$(bare_round)")
	wt=$(min "$wt" "$(wt_round "$r")")
	x=$(run_round) || exit 1
	runms=$(min "$runms" "$x")
	r=$((r + 1))
done

awk -v n="$n" -v rounds="$rounds" -v bare="$bare" -v wt="$wt" -v run="$runms" 'BEGIN {
	printf "run-bench: %d no-op tasks, best of %d rounds: run %.1f ms/task, bare spawn " \
	       "%.2f ms/task, worktree add+remove %.1f ms/task\n", n, rounds, run / n, bare / n, wt / n
	printf "run-bench: orchestration overhead %.2f ms/task excluding worktrees " \
	       "(target < 5 ms); run/bare ratio %.1fx\n", (run - bare - wt) / n, run / (bare ? bare : 1)
}'
