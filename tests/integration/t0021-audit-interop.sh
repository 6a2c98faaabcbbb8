#!/bin/sh
# The audit chain against an independent Python implementation written from
# docs/audit-log.md (tests/interop/audit_chain.py): bernstein writes and Python
# verifies, Python writes and bernstein verifies, and a chain continued by
# both verifies in both. Details carry the values that break naive canonical
# JSON: non-ASCII, escapes, control characters, nesting, floats, 2^63-1.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0020 audit chain interop with Python"

PY="$SRCDIR/tests/interop/audit_chain.py"
KEY="$T/home/.local/state/bernstein/audit.key"
A=.bernstein/audit

# -- bernstein writes -------------------------------------------------------
# (run + check: dash's echo would expand the backslashes in a test name)
run "$BERNSTEIN" audit append --event-type op.note --actor "caf$(printf '\303\251')" \
	--resource-type task --resource-id "$(printf '\346\227\245\346\234\254')" \
	--details '{"why": "caf\u00e9 \u65e5\u672c \ud83d\ude00", "esc": "q\"b\\s/\n\t", "ctl": "\u0000\u0001\u001f\u007f"}'
check "append with escapes, control characters and non-ASCII in --details" test "$RC" -eq 0
check "control characters and NUL are stored escaped" grep -qF '"ctl": "\u0000\u0001\u001f\u007f"' "$T/work/.bernstein/audit"/*.jsonl
check "the key was created on first append" test -f "$KEY"

cat >"$T/work/records.jsonl" <<'EOF'
{"event_type": "t.floats", "actor": "t", "details": {"f": [0.1, 1e-05, 1e16, -0.0, 1.5, 100.0, 2.5e-300, 1.7976931348623157e308]}}
{"event_type": "t.ints", "resource_type": "r", "resource_id": "i", "details": {"max": 9223372036854775807, "min": -9223372036854775807, "zero": 0}}
{"event_type": "t.nested", "details": {"z": [1, {"b": null, "a": true}], "a": {"deeper": {"x": false}}, "": "empty key"}}
{"event_type": "t.raw-utf8", "actor": "é日本😀", "details": {"é": "😀", "A": 1, "a": 2}}

{"event_type": "t.empty"}
EOF
expect_exit 0 "$BERNSTEIN" --json audit append --from records.jsonl
expect_stdout_contains '"appended": 5'
expect_stdout_contains '"count": 6'
expect_exit 0 "$BERNSTEIN" audit verify
expect_stdout_contains "audit chain intact: 6 records in 1 file, end matches state"
expect_exit 0 python3 "$PY" verify "$A" --key-file "$KEY"
expect_stdout_contains "6 records, 0 problems"

# the stored bytes are Python's json.dumps(sort_keys=True)
check "floats in repr() form" grep -qF '"f": [0.1, 1e-05, 1e+16, -0.0, 1.5, 100.0, 2.5e-300, 1.7976931348623157e+308]' "$T/work/$A"/*.jsonl
check "non-ASCII as \\u escapes" grep -qF '"actor": "\u00e9\u65e5\u672c\ud83d\ude00"' "$T/work/$A"/*.jsonl
check "keys sorted by code point" grep -qF '"details": {"A": 1, "a": 2, "\u00e9": "\ud83d\ude00"}' "$T/work/$A"/*.jsonl
check "the chain is pure ASCII" sh -c "! LC_ALL=C grep -q '[^ -~]' '$T/work/$A'/*.jsonl"

# -- Python writes, bernstein verifies ---------------------------------------
expect_exit 0 python3 "$PY" write py --key-file "$KEY" --tricky --count 14 --day 2026-01-14
expect_exit 0 python3 "$PY" write py --key-file "$KEY" --tricky --count 7 --day 2026-01-15
expect_exit 0 "$BERNSTEIN" audit verify --dir py
expect_stdout_contains "audit chain intact: 21 records in 2 files"
expect_exit 0 "$BERNSTEIN" audit show --dir py --limit 3
expect_lines stdout 3 "show --limit 3 prints three records"
expect_stdout_contains "interop.python  python-$(printf '\303\251')crivain  interop/r6"
expect_exit 0 "$BERNSTEIN" audit show --dir py --limit 0 --event-type nosuch
expect_stdout_empty "show --event-type filters"

# bernstein continues the Python chain; both verify the mixed chain
expect_exit 0 "$BERNSTEIN" audit append --dir py --event-type op.continue
expect_exit 0 python3 "$PY" write py --key-file "$KEY" --count 2 --day 2099-01-01 --state
expect_exit 0 "$BERNSTEIN" audit append --dir py --event-type op.after-python
expect_exit 0 "$BERNSTEIN" --json audit verify --dir py
expect_stdout_contains '"intact": true'
expect_stdout_contains '"records": 25'
expect_stdout_contains '"state_checked": true'
expect_exit 0 python3 "$PY" verify py --key-file "$KEY"
expect_stdout_contains "25 records, 0 problems"
check "appended to the newest file, not today's" test "$(wc -l <"$T/work/py/2099-01-01.jsonl")" -eq 3

# a Python-written chain with a wrong key fails in both
printf 'other-key' >"$T/other.key"
chmod 600 "$T/other.key"
expect_exit 1 "$BERNSTEIN" audit verify --dir py --key-file "$T/other.key"
expect_stdout_contains "py/2026-01-14.jsonl:1: HMAC mismatch (expected "
expect_exit 1 python3 "$PY" verify py --key-file "$T/other.key"
# and bernstein refuses to extend a chain whose end it cannot verify
expect_exit 4 "$BERNSTEIN" audit append --dir py --key-file "$T/other.key" --event-type x
expect_stderr_contains "does not verify with this key"

test_done
