#!/bin/sh
# Orchestration overhead of `bernstein run` (issue #6): N no-op tasks (default
# 200) through the whole pipeline (routing + audit, state.db, worktree,
# supervisor, outcome, completion) against, in the same run, the same work
# done by a shell with the run's parallelism (8 lanes, each taking every 8th
# task):
#   bare:     the N processes alone;
#   worktree: the git work a run does per task, reported apart as the issue
#             asks: `git worktree add -b`, `git worktree remove` (without
#             --force: the check that the agent left nothing behind), and the
#             task branches deleted with one `git branch -D` at the end;
#   shell:    both: per task `git worktree add`, the process in the new
#             worktree, `git worktree remove`; the branches deleted at the end.
# The overhead is what bernstein adds to that shell:
#   (run - shell) / N
# (target: under 5 ms per task). Each is measured ROUNDS times (default 5),
# interleaved, and the fastest round of each counts: on a shared machine the
# noise only ever adds time. The median of each round's own run - shell (the
# two measured back to back) is printed too: it cancels drift that is slower
# than a round. It prints; it does not assert.
#
# usage: bench/run-bench.sh [BUILD_DIR]   (RUN_BENCH_TASKS=N RUN_BENCH_ROUNDS=R)
set -u

build=${1:-build}
n=${RUN_BENCH_TASKS:-200}
rounds=${RUN_BENCH_ROUNDS:-5}
bin=$(cd "$build" && pwd)/bernstein
[ -x "$bin" ] || { echo "run-bench: no $build/bernstein (make build first)" >&2; exit 4; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-run-bench.XXXXXX") || exit 4
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
w=$dir/repo
. "$(dirname "$0")/noop-repo.sh"
noop_repo "$w" "$n" 8 none

now_ms() { date +%s%3N; }
min() { [ -z "$1" ] || [ "$2" -lt "$1" ] && echo "$2" || echo "$1"; }

LANES=8

# lanes FUNC: FUNC LANE for each of the 8 lanes at once; lane L takes the
# tasks L, L+8, L+16, ... below N.
lanes() {
	l=0
	while [ "$l" -lt "$LANES" ]; do
		"$1" "$l" &
		l=$((l + 1))
	done
	wait
}

bare_lane() {
	i=$1
	while [ "$i" -lt "$n" ]; do
		"$true_bin" noop
		i=$((i + LANES))
	done
}

# git 2.39's `worktree add` can fail when another one runs beside it (it
# reads the other's half-made .git/worktrees entry); bernstein then makes the
# worktree again, and so does this.
wt_add() {
	_b=bench/$tag-$1 _p=$w/.bernstein/worktrees/$1 _try=1
	git -C "$w" worktree add -q -b "$_b" "$_p" main >/dev/null 2>&1 && return 0
	while [ "$_try" -lt 5 ]; do
		rm -rf "$_p"
		git -C "$w" worktree prune
		if git -C "$w" show-ref -q --verify "refs/heads/$_b"; then
			git -C "$w" worktree add -q "$_p" "$_b" >/dev/null 2>&1 && return 0
		else
			git -C "$w" worktree add -q -b "$_b" "$_p" main >/dev/null 2>&1 && return 0
		fi
		_try=$((_try + 1))
	done
	echo "run-bench: git worktree add $_p failed $_try times" >&2
}

wt_lane() {
	i=$1
	while [ "$i" -lt "$n" ]; do
		wt_add "$i"
		[ -z "$with_agent" ] || (cd "$w/.bernstein/worktrees/$i" && "$true_bin" noop)
		git -C "$w" -c status.showUntrackedFiles=normal worktree remove \
			"$w/.bernstein/worktrees/$i" >/dev/null 2>&1
		i=$((i + LANES))
	done
}

# the branches of a round, in one `git branch -D`
drop_branches() {
	git -C "$w" for-each-ref --format='%(refname:short)' "refs/heads/bench/$tag-*" |
		xargs git -C "$w" branch -q -D >/dev/null 2>&1
}

# a program, not the shell's builtin (the run starts one)
for true_bin in /bin/true /usr/bin/true; do
	[ -x "$true_bin" ] && break
done

bare_round() {
	t0=$(now_ms)
	lanes bare_lane
	t1=$(now_ms)
	echo $((t1 - t0))
}

# wt_round TAG [agent]: the git work of N tasks that change nothing, as a
# run does it; with "agent", the process runs in each worktree too
wt_round() {
	tag=$1 with_agent=${2:-}
	t0=$(now_ms)
	lanes wt_lane
	drop_branches
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

bare= wt= sh= runms= diffs=
r=1
while [ "$r" -le "$rounds" ]; do
	bare=$(min "$bare" "$(bare_round)")
	wt=$(min "$wt" "$(wt_round "w$r")")
	y=$(wt_round "s$r" agent)
	sh=$(min "$sh" "$y")
	x=$(run_round) || exit 1
	runms=$(min "$runms" "$x")
	# the same round's shell and run, back to back: drift cancels
	diffs="$diffs $((x - y))"
	r=$((r + 1))
done
paired=$(printf '%s\n' $diffs | sort -n | sed -n "$(((rounds + 1) / 2))p")

awk -v n="$n" -v rounds="$rounds" -v bare="$bare" -v wt="$wt" -v sh="$sh" -v run="$runms" \
	-v lanes="$LANES" -v paired="$paired" 'BEGIN {
	printf "run-bench: %d no-op tasks, %d at a time, best of %d rounds (ms/task): " \
	       "run %.1f, shell %.1f (worktree, process, remove), bare spawn %.2f, worktree add+remove %.1f\n",
	       n, lanes, rounds, run / n, sh / n, bare / n, wt / n
	printf "run-bench: orchestration overhead %.2f ms/task excluding worktrees " \
	       "(best run - best shell; target < 5 ms); median over the rounds of " \
	       "run - shell %.2f ms/task; run/bare ratio %.1fx\n", (run - sh) / n, paired / n,
	       run / (bare ? bare : 1)
}'
