#!/bin/sh
# Two processes appending 10,000 records each at the same time (batched
# durability) produce one valid chain of 20,000: appends serialise on
# flock(.bernstein/audit/.lock) and re-read the tail, so no record chains to a
# stale prev_hmac. Both writers are released together through FIFOs.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0020 audit chain with two concurrent writers"

PY="$SRCDIR/tests/interop/audit_chain.py"
KEY="$T/home/.local/state/bernstein/audit.key"
N=${AUDIT_CONCURRENCY_N:-10000}

expect_exit 0 "$BERNSTEIN" audit key --create
for w in 1 2; do
	awk -v w="$w" -v n="$N" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "{\"event_type\": \"writer%d\", \"actor\": \"w%d\", \"details\": {\"i\": %d}}\n", w, w, i
	}' >"$T/in$w.jsonl"
	mkfifo "$T/fifo$w"
done

san=""
[ -n "${ASAN_OPTIONS:-}" ] && san="$san ASAN_OPTIONS=$ASAN_OPTIONS"
[ -n "${UBSAN_OPTIONS:-}" ] && san="$san UBSAN_OPTIONS=$UBSAN_OPTIONS"
[ -n "${LSAN_OPTIONS:-}" ] && san="$san LSAN_OPTIONS=$LSAN_OPTIONS"
for w in 1 2; do
	# shellcheck disable=SC2086 # the sanitizer words contain no spaces
	(cd "$T/work" && exec timeout -k 5 "$TEST_CMD_TIMEOUT" env -i PATH=/usr/bin:/bin \
		HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC $san \
		"$BERNSTEIN" audit append --from - <"$T/fifo$w") >"$T/out$w" 2>"$T/err$w" &
	eval "pid$w=\$!"
done
# both writers block opening their FIFO (their stdin: --from refuses a FIFO
# by name, a pipe on stdin is what '-' is for) until both feeders start
cat "$T/in1.jsonl" >"$T/fifo1" &
cat "$T/in2.jsonl" >"$T/fifo2" &
wait "$pid1"
rc1=$?
wait "$pid2"
rc2=$?
wait
check "writer 1 exits 0" test "$rc1" -eq 0
check "writer 2 exits 0" test "$rc2" -eq 0
[ "$rc1" -eq 0 ] || diag "$(cat "$T/err1")"
[ "$rc2" -eq 0 ] || diag "$(cat "$T/err2")"

expect_exit 0 "$BERNSTEIN" audit verify
expect_stdout_contains "audit chain intact: $((2 * N)) records"
expect_stdout_contains "end matches state"
expect_exit 0 python3 "$PY" verify .bernstein/audit --key-file "$KEY"
expect_stdout_contains "$((2 * N)) records, 0 problems"
check "state.json counts every record" grep -qF "\"count\": $((2 * N))," "$T/work/.bernstein/audit/state.json"

# each writer's records are all there, in its own order, and the two
# actually interleaved (otherwise this test proved nothing)
check "both writers complete, in order, interleaved" python3 -c '
import glob, json, os, sys
n = int(sys.argv[1])
os.chdir(sys.argv[2])
seen = {"writer1": [], "writer2": []}
order = []
for path in sorted(glob.glob(".bernstein/audit/*.jsonl")):
    for line in open(path, encoding="ascii"):
        r = json.loads(line)
        seen[r["event_type"]].append(r["details"]["i"])
        order.append(r["event_type"])
for w, ids in seen.items():
    assert ids == list(range(n)), (w, len(ids))
switches = sum(1 for a, b in zip(order, order[1:]) if a != b)
print("switches between writers:", switches)
assert switches > 1, switches
' "$N" "$T/work"
diag "$(cat "$T/check.out")"

test_done
