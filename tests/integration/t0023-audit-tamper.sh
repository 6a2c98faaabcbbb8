#!/bin/sh
# Tampering with the audit chain: a flipped byte, a deleted, duplicated or
# reordered line, a truncated tail (seen through state.json), another key,
# non-canonical bytes and garbage. `bernstein audit verify` exits 1 and names
# FILE:LINE for each, and reports exactly what the independent Python verifier
# (tests/interop/audit_chain.py) reports.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0020 audit chain tamper detection"

PY="$SRCDIR/tests/interop/audit_chain.py"
KEY="$T/home/.local/state/bernstein/audit.key"
DAY=2026-02-01.jsonl

expect_exit 0 "$BERNSTEIN" audit key --create
expect_exit 0 python3 "$PY" write clean --key-file "$KEY" --count 6 --day 2026-02-01 --state
expect_exit 0 "$BERNSTEIN" audit verify --dir clean
expect_stdout_contains "audit chain intact: 6 records in 1 file, end matches state"

# tamper NAME SED-SCRIPT: a copy of the clean chain with the day file edited.
tamper()
{
	rm -rf "$T/work/$1"
	cp -r "$T/work/clean" "$T/work/$1"
	sed -i "$2" "$T/work/$1/$DAY"
}

# Both verifiers on dir $1: bernstein exits 1, its problem lines equal
# Python's (the summary lines aside; jansson's and Python's JSON error texts
# differ, so an "invalid JSON - ..." line is compared up to the dash).
both_verify()
{
	expect_exit 1 "$BERNSTEIN" audit verify --dir "$1" --key-file "${2:-$KEY}"
	sed '$d' "$T/stdout" | sed 's/\(invalid JSON\) - .*/\1/' >"$T/c.out"
	cp "$T/stdout" "$T/c.full"
	run python3 "$PY" verify "$1" --key-file "${2:-$KEY}"
	sed '$d' "$T/stdout" | sed 's/\(invalid JSON\) - .*/\1/' >"$T/py.out"
	expect_same_file "$T/py.out" "$T/c.out" "$1: bernstein reports what the Python verifier reports"
	cp "$T/c.full" "$T/stdout"
}

tamper flip '3s/"actor": "python-/"actor": "pithon-/'
both_verify flip
expect_lines stdout 2 "flip: one problem line plus the summary"
expect_stdout_contains "flip/$DAY:3: HMAC mismatch (expected "

tamper fliphmac '4s/"hmac": "\(.\)/"hmac": "X/'
both_verify fliphmac
expect_lines stdout 2 "flipped hmac: one problem, no cascade"
expect_stdout_contains "fliphmac/$DAY:4: HMAC mismatch ("

tamper delete '3d'
both_verify delete
expect_stdout_contains "delete/$DAY:3: prev_hmac mismatch (expected "
expect_stdout_contains "delete/$DAY:6: truncated tail (state says 6 records"

tamper dup '3p'
both_verify dup
expect_stdout_contains "dup/$DAY:4: prev_hmac mismatch"
expect_stdout_contains "dup/$DAY:6: chain does not match state (record 6 has MAC "

tamper reorder '2{h;d};3G'
both_verify reorder
expect_stdout_contains "reorder/$DAY:2: prev_hmac mismatch"
expect_stdout_contains "reorder/$DAY:3: prev_hmac mismatch"

tamper trunc '$d'
both_verify trunc
expect_lines stdout 2 "truncated tail: one problem"
expect_stdout_contains "trunc/$DAY:6: truncated tail (state says 6 records / last MAC "
expect_stdout_contains "chain has 5)"

tamper spaces '5s/", "details"/",  "details"/'
both_verify spaces
expect_lines stdout 2 "non-canonical bytes: one problem"
expect_stdout_contains "spaces/$DAY:5: non-canonical line bytes"

tamper garbage '2s/.*/{"actor": oops/'
both_verify garbage
expect_lines stdout 2 "garbage line: one problem, no cascade"
expect_stdout_contains "garbage/$DAY:2: invalid JSON - "

printf 'not-the-key' >"$T/other.key"
chmod 600 "$T/other.key"
both_verify clean "$T/other.key"
expect_lines stdout 7 "another key: every record, plus the summary"
expect_stdout_contains "audit chain BROKEN: 6 problems in 6 records"

# --json lists the same problems
expect_exit 1 "$BERNSTEIN" --json audit verify --dir trunc
expect_stdout_contains '"intact": false'
expect_stdout_contains '"line": 6'
expect_stdout_contains '"message": "truncated tail (state says 6 records'

# a chain bernstein wrote: a truncated tail is reported, and appending is
# refused until someone looks (exit 5)
i=0
while [ $i -lt 4 ]; do
	echo '{"event_type": "t.rec", "details": {"i": '$i'}}'
	i=$((i + 1))
done >"$T/work/in.jsonl"
expect_exit 0 "$BERNSTEIN" audit append --from in.jsonl
f=$(ls "$T/work/.bernstein/audit/"*.jsonl)
sed -i '$d' "$f"
expect_exit 1 "$BERNSTEIN" audit verify
expect_stdout_contains "$(basename "$f"):4: truncated tail (state says 4 records"
expect_exit 5 "$BERNSTEIN" audit append --event-type after.truncation
expect_stderr_contains "state.json: the audit chain has 3 records but state says 4"
# the documented recovery: look, then drop state.json and the hot state in
# .lock (both still name the removed record)
rm "$T/work/.bernstein/audit/state.json" "$T/work/.bernstein/audit/.lock"
expect_exit 0 "$BERNSTEIN" audit append --event-type after.recovery
expect_exit 0 "$BERNSTEIN" audit verify
expect_stdout_contains "audit chain intact: 4 records"

# no audit directory: verification fails, like Bernstein's
expect_exit 1 "$BERNSTEIN" audit verify --dir nonexistent
expect_stderr_contains "audit directory not found: 'nonexistent'"

test_done
