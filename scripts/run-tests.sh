#!/bin/sh
# Run every meson test suite in each given build directory, then print one
# summary. Counts are per test case (TAP "ok"/"not ok" lines), not per binary.
# The suites 'e2e' (the real agent CLIs: minutes of node start-ups, the same
# in every build) and 'crash' (kill -9 inside git steps, then resume: a
# minute each, the same git and the same recovery code in every build) run
# in the last build only: `make test` passes the gcc build, then the
# ASan+UBSan one, so the real CLIs' output and the recovery paths meet the
# sanitizers. `meson test -C BUILD` alone still runs everything.
set -u
status=0
n=0
for b in "$@"; do
	n=$((n + 1))
	skip=
	[ "$n" -lt $# ] && skip="--no-suite e2e --no-suite crash"
	echo "== $b${skip:+ (without the e2e and crash suites: they run in the last build)}" >&2
	# shellcheck disable=SC2086 # $skip is words or nothing
	ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1 \
	UBSAN_OPTIONS=print_stacktrace=1:print_summary=1:halt_on_error=1 \
	meson test -C "$b" $skip --print-errorlogs --num-processes 2 >"$b/meson-logs/run-tests.out" 2>&1 || status=1
	tail -n 12 "$b/meson-logs/run-tests.out" >&2
done
python3 "$(dirname "$0")/test-summary.py" "$@" || status=1
exit $status
