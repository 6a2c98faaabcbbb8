#!/bin/sh
# Flat memory and time in big fan-outs (issue #24): N no-op mock tasks
# (default 10000) in one `bernstein run --parallel 64`, against 100 of them
# in the same invocation. Prints the per-task time of both and their ratio
# (the slope: 1.0x is flat), the run's own peak RSS (VmHWM of the bernstein
# process, polled from /proc; its git and agent children are not counted)
# for both against the target (under 32 MB whatever the count), and how
# long `bernstein status` takes on the big run. It prints; it does not
# assert. The big run takes minutes (a worktree per task): `make bench`
# runs it, `make test` does not (t0375 checks the live table's window).
#
# usage: bench/fanout-bench.sh [BUILD_DIR]
#        FANOUT_BENCH_TASKS=N (10000)  FANOUT_BENCH_BASE=B (100)
#        FANOUT_BENCH_PARALLEL=P (64)
set -u

build=${1:-build}
n=${FANOUT_BENCH_TASKS:-10000}
base=${FANOUT_BENCH_BASE:-100}
par=${FANOUT_BENCH_PARALLEL:-64}
bin=$(cd "$build" && pwd)/bernstein
[ -x "$bin" ] || { echo "fanout-bench: no $build/bernstein (make build first)" >&2; exit 4; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-fanout-bench.XXXXXX") || exit 4
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }

# repo DIR COUNT: a repository whose plan has COUNT mock tasks that change
# nothing (each reports a usage event: the live table's and budget's paths)
repo() {
	mkdir -p "$1"
	git -C "$1" init -q -b main . >/dev/null
	printf '.bernstein/\n' >"$1/.gitignore"
	printf 'adapter: mock\nparallel: %s\nsandbox: none\n' "$par" >"$1/bernstein.yaml"
	awk -v n="$2" 'BEGIN {
		print "name: fanout"; print "tasks:"
		for (i = 1; i <= n; i++) printf "  - {title: t%d, prompt: usage 1 0}\n", i
	}' >"$1/plan.yaml"
	git -C "$1" add -A >/dev/null
	git -C "$1" -c user.name=b -c user.email=b@example.invalid commit -q -m base
}

# one COUNT: "MS KB" of a run of COUNT tasks (KB: the run's VmHWM)
one() {
	w=$dir/r$1
	repo "$w" "$1"
	t0=$(now_ms)
	(cd "$w" && exec env BERNSTEIN_AUDIT_KEY_PATH="$dir/key" "$bin" run --json plan.yaml \
		>"$dir/out" 2>"$dir/err") &
	pid=$!
	hwm=0
	while kill -0 "$pid" 2>/dev/null; do
		h=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
		[ -n "$h" ] && hwm=$h
		sleep 0.2
	done
	wait "$pid"
	rc=$?
	t1=$(now_ms)
	if [ "$rc" -ne 0 ]; then
		echo "fanout-bench: bernstein run of $1 tasks exited $rc" >&2
		tail -5 "$dir/err" >&2
		exit 1
	fi
	echo "$((t1 - t0)) $hwm"
}

set -- $(one "$base")
bms=$1 bkb=$2
set -- $(one "$n")
nms=$1 nkb=$2
t0=$(now_ms)
(cd "$dir/r$n" && "$bin" status >/dev/null 2>&1)
t1=$(now_ms)
awk -v b="$base" -v n="$n" -v p="$par" -v bms="$bms" -v nms="$nms" -v bkb="$bkb" \
	-v nkb="$nkb" -v st="$((t1 - t0))" 'BEGIN {
	printf "fanout: %d tasks %.2f ms/task, %d tasks %.2f ms/task at --parallel %d: " \
	       "slope %.2fx (1.0x is flat)\n", b, bms / b, n, nms / n, p, (nms / n) / (bms / b)
	printf "fanout: peak RSS of the run %.1f MB (%d tasks), %.1f MB (%d tasks): " \
	       "%.2f KB more per task (target < 32 MB whatever the count)\n",
	       bkb / 1024, b, nkb / 1024, n, (nkb - bkb) / (n - b)
	printf "fanout: bernstein status of the %d-task run: %d ms\n", n, st
}'
