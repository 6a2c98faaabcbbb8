#!/bin/sh
# Smoke-run every libFuzzer target of a -Dfuzz=true build for a few seconds
# each (run by `make fuzz-smoke`). One line per target; on a crash, leak,
# timeout or OOM the artifact path is printed and the exit status is 1.
#
# usage: scripts/fuzz-smoke.sh FUZZ_BUILD SECONDS
#
# Seeds come from fuzz/corpus/<name>/ (for fuzz-<name>) and are copied to a
# scratch work corpus, so the checked-in corpus never changes. Scratch state
# (work corpus, artifacts, log) is kept in FUZZ_BUILD/fuzz-smoke/<name>/ until
# the next run, so a crasher survives for inspection: copy it to
# tests/fuzz-regressions/<name>/ once fixed.
set -u

if [ $# -ne 2 ]; then
	echo "usage: $0 FUZZ_BUILD SECONDS" >&2
	exit 2
fi
build=$1
secs=$2
case $secs in
'' | *[!0-9]*)
	echo "fuzz-smoke: SECONDS must be a positive integer, not '$secs'" >&2
	exit 2
	;;
esac
if [ "$secs" -lt 1 ]; then
	echo "fuzz-smoke: SECONDS must be at least 1" >&2
	exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd) || exit 4
if [ ! -d "$build/fuzz" ]; then
	echo "fuzz-smoke: no fuzz targets: '$build/fuzz' does not exist (configure with -Dfuzz=true)" >&2
	exit 1
fi
build=$(cd "$build" && pwd) || exit 4

# UBSan is recoverable in the fuzz build: make any report fatal so libFuzzer
# saves the input. Leaks count as failures (detect_leaks is on by default).
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS ASAN_OPTIONS

ntargets=0
nfailed=0
for exe in "$build"/fuzz/fuzz-*; do
	if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then
		continue
	fi
	case $exe in
	*.p | *.o | *.c) continue ;;
	esac
	target=${exe##*/}
	name=${target#fuzz-}
	ntargets=$((ntargets + 1))

	work=$build/fuzz-smoke/$name
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts" || exit 4
	seeds=$top/fuzz/corpus/$name
	nseeds=0
	if [ -d "$seeds" ]; then
		cp -R "$seeds/." "$work/corpus/" || exit 4
		nseeds=$(find "$work/corpus" -type f | wc -l)
	fi

	"$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1
	rc=$?

	runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' \
		"$work/log" | tail -n 1)
	ncorpus=$(find "$work/corpus" -type f | wc -l)
	artifacts=$(find "$work/artifacts" -type f | sort)
	if [ "$rc" -eq 0 ] && [ -z "$artifacts" ]; then
		printf '%s: ok, %s, %s seeds -> %s corpus files\n' "$target" \
			"${runs:-? runs}" "$nseeds" "$ncorpus"
		continue
	fi
	nfailed=$((nfailed + 1))
	printf '%s: FAILED (exit %s), log %s\n' "$target" "$rc" "$work/log"
	if [ -n "$artifacts" ]; then
		printf '%s\n' "$artifacts" | while IFS= read -r a; do
			printf '  artifact: %s\n' "$a"
		done
	else
		printf '  no artifact written; last lines of the log:\n'
	fi
	grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error:)' "$work/log" | head -n 5 |
		sed 's/^/  /'
	[ -n "$artifacts" ] || tail -n 10 "$work/log" | sed 's/^/  /'
done

if [ "$ntargets" -eq 0 ]; then
	echo "fuzz-smoke: no fuzz targets found in '$build/fuzz' (fuzz_targets in fuzz/meson.build is empty?)" >&2
	exit 1
fi
echo "fuzz-smoke: $ntargets targets, $nfailed failed, ${secs} s each"
[ "$nfailed" -eq 0 ]
