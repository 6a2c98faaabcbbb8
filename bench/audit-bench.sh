#!/bin/sh
# Audit chain benchmark (issue #5): append N records (default 100,000) in one
# batch with `bernstein audit append --from`, then verify them, and compare
# the verify time with sha256sum over the same bytes in the same run. It
# prints the ratio (target: within 3x); it asserts nothing about time. The
# issue's other figure, route selection over 1,000 profiles (target: under
# 1 ms), is bench/route.c (bench/route-bench); `make bench` runs both.
#
# usage: bench/audit-bench.sh [BUILD_DIR]      (AUDIT_BENCH_N=N, AUDIT_BENCH_RUNS=R)
set -u

build=${1:-build}
n=${AUDIT_BENCH_N:-100000}
runs=${AUDIT_BENCH_RUNS:-3}
bin="$build/bernstein"
if [ ! -x "$bin" ]; then
	echo "audit-bench: no '$bin' (build first: make build)" >&2
	exit 4
fi
bin=$(cd "$(dirname "$bin")" && pwd)/bernstein
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-audit-bench.XXXXXX") || exit 4
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$tmp/w"
export BERNSTEIN_AUDIT_KEY_PATH="$tmp/audit.key"

# measure CMD...: runs CMD (stdout to $tmp/cmd.out) and prints "WALL_NS CPU_NS"
# (user + system time of the command). CPU time is what the ratio uses: it
# does not move when other jobs share the machine.
measure()
{
	python3 -c '
import os, resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.monotonic_ns()
with open(sys.argv[1], "wb") as out:
    rc = subprocess.call(sys.argv[2:], stdout=out)
t1 = time.monotonic_ns()
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e9
print(t1 - t0, int(cpu))
sys.exit(rc)
' "$tmp/cmd.out" "$@"
}

# Records shaped like the orchestrator's: a task transition with a few fields.
awk -v n="$n" 'BEGIN {
	for (i = 0; i < n; i++)
		printf "{\"event_type\": \"task.transition\", \"actor\": \"orchestrator\", " \
		       "\"resource_type\": \"task\", \"resource_id\": \"T-%06d\", " \
		       "\"details\": {\"from\": \"running\", \"to\": \"done\", \"adapter\": \"claude\", " \
		       "\"attempt\": %d, \"cost_usd\": %d.25, \"note\": \"caf\\u00e9 %d\"}}\n", i, i % 3, i % 7, i
}' >"$tmp/in.jsonl"

set -- $(measure "$bin" -C "$tmp/w" audit append --from "$tmp/in.jsonl") || exit 1
app_wall=$1
app_cpu=$2
files=$(ls "$tmp/w/.bernstein/audit/"*.jsonl)
# shellcheck disable=SC2086 # file names without spaces, made here
bytes=$(cat $files | wc -c)

bv_wall="" bv_cpu="" bs_wall="" bs_cpu=""
i=0
while [ "$i" -lt "$runs" ]; do
	set -- $(measure "$bin" -C "$tmp/w" audit verify) || {
		cat "$tmp/cmd.out"
		exit 1
	}
	if [ -z "$bv_cpu" ] || [ "$2" -lt "$bv_cpu" ]; then bv_wall=$1 bv_cpu=$2; fi
	# shellcheck disable=SC2086
	set -- $(measure sha256sum $files) || exit 1
	if [ -z "$bs_cpu" ] || [ "$2" -lt "$bs_cpu" ]; then bs_wall=$1 bs_cpu=$2; fi
	i=$((i + 1))
done

awk -v n="$n" -v bytes="$bytes" -v aw="$app_wall" -v ac="$app_cpu" -v vw="$bv_wall" \
	-v vc="$bv_cpu" -v sw="$bs_wall" -v sc="$bs_cpu" -v runs="$runs" 'BEGIN {
	mb = bytes / 1e6
	printf "audit chain: %d records, %.1f MB (best of %d runs; CPU = user + sys)\n", n, mb, runs
	printf "  %-20s %8s %8s %14s\n", "", "wall s", "CPU s", "per CPU s"
	printf "  %-20s %8.3f %8.3f %9.0f rec/s\n", "append (one batch)", aw / 1e9, ac / 1e9, n / (ac / 1e9)
	printf "  %-20s %8.3f %8.3f %9.1f MB/s\n", "verify", vw / 1e9, vc / 1e9, mb / (vc / 1e9)
	printf "  %-20s %8.3f %8.3f %9.1f MB/s\n", "sha256sum", sw / 1e9, sc / 1e9, mb / (sc / 1e9)
	printf "  verify / sha256sum: %.2fx CPU, %.2fx wall (target: within 3x: %s)\n", vc / sc, \
		vw / sw, vc / sc <= 3 ? "met" : "MISSED"
}'
