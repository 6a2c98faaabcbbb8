#!/bin/sh
# Benchmarks (run by `make bench`), ending with start-up: the median of N
# interleaved runs of `bernstein adapters list --json` against /bin/true, and
# their ratio, twice: the embedded catalogue alone (its gates skipped), and the
# whole catalogue with every gate forced by a user override directory holding
# one harmless file, a copy of a shipped profile (bench/startup.c -g).
# It prints; it does not assert a wall-clock time.
#
# usage: scripts/bench.sh [BUILD_DIR]     (BENCH_RUNS=N overrides 200)
set -u

build=${1:-build}
runs=${BENCH_RUNS:-200}
if [ ! -f "$build/build.ninja" ]; then
	echo "bench: '$build' is not a configured build directory (run make build)" >&2
	exit 4
fi
ninja -C "$build" bernstein bench/startup >/dev/null || ninja -C "$build" bernstein bench/startup ||
	exit 4
ninja -C "$build" bench/proc-bench >/dev/null && "$build/bench/proc-bench" spawn
ninja -C "$build" bench/proc-bench >/dev/null && "$build/bench/proc-bench" rss
ninja -C "$build" bench/proc-bench >/dev/null && "$build/bench/proc-bench" drain
ninja -C "$build" bench/route-bench >/dev/null && "$build/bench/route-bench"
ninja -C "$build" bench/redact-bench >/dev/null && "$build/bench/redact-bench"
sh "$(dirname "$0")/../bench/audit-bench.sh" "$build"
sh "$(dirname "$0")/../bench/run-bench.sh" "$build"
sh "$(dirname "$0")/../bench/tier-bench.sh" "$build"
ninja -C "$build" bernstein-serve >/dev/null && sh "$(dirname "$0")/../bench/serve-bench.sh" "$build"
sh "$(dirname "$0")/../bench/fanout-bench.sh" "$build"
ninja -C "$build" bench/bigrepo-bench >/dev/null && sh "$(dirname "$0")/../bench/bigrepo.sh" "$build"
exec "$build/bench/startup" -n "$runs" -g "$(dirname "$0")/../catalog/profiles/claude.yaml" \
	"$build/bernstein"
