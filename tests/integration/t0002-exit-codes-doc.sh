#!/bin/sh
# docs/exit-codes.md cannot drift from the code: every value of enum bexit in
# src/cli/exit.h has a row (code and name) in the doc's main table, and every
# row of that table is a value of the enum. The main table is the first
# Markdown table after the '## Main table' heading.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0002 exit-code table matches src/cli/exit.h"

hdr=$SRCDIR/src/cli/exit.h
doc=$SRCDIR/docs/exit-codes.md

# "NAME CODE" per enum value, from the body of 'enum bexit { ... };'.
awk '
	/enum[ \t]+bexit[ \t]*\{/ { inside = 1; next }
	inside && /\}/ { inside = 0 }
	inside {
		sub(/\/\*.*\*\//, "")
		line = $0
		while (match(line, /BEXIT_[A-Z0-9_]+[ \t]*=[ \t]*[0-9]+/)) {
			s = substr(line, RSTART, RLENGTH)
			line = substr(line, RSTART + RLENGTH)
			gsub(/[ \t=]+/, " ", s)
			print s
		}
	}' "$hdr" >"$T/enum"

# "CODE NAME" per row of the main table (skipping the header and rule rows).
awk '
	/^## Main table/ { sect = 1; next }
	sect && /^\|/ { intable = 1
		n = split($0, cell, "|")
		code = cell[2]; name = cell[3]
		gsub(/[ \t`]/, "", code); gsub(/[ \t`]/, "", name)
		if (code ~ /^[0-9]+$/) print code, name
		next }
	intable { exit }' "$doc" >"$T/rows"

check "enum bexit parsed from src/cli/exit.h" test -s "$T/enum"
check "main table found in docs/exit-codes.md" test -s "$T/rows"

while read -r name code; do
	if grep -qx "$code $name" "$T/rows"; then
		ok "doc row for $code $name"
	elif grep -q "^$code " "$T/rows"; then
		not_ok "doc row for $code $name"
		diag "the row for $code names $(grep "^$code " "$T/rows" | cut -d' ' -f2), not $name"
	else
		not_ok "doc row for $code $name"
		diag "docs/exit-codes.md has no main-table row for $code"
	fi
done <"$T/enum"

while read -r code name; do
	if grep -qx "$name $code" "$T/enum"; then
		ok "row $code $name is a value of enum bexit"
	else
		not_ok "row $code $name is a value of enum bexit"
	fi
done <"$T/rows"

# The --help footer ("Exit codes: 0 ok, 1 failed, ...") summarises the same codes.
expect_exit 0 "$BERNSTEIN" --help
sed -n '/^Exit codes:/,$p' "$T/stdout" >"$T/footer"
check "--help has an 'Exit codes:' footer" test -s "$T/footer"
while read -r name code; do
	check "--help footer lists exit code $code" grep -qE "(^|[^0-9])$code [a-z]" "$T/footer"
done <"$T/enum"

test_done
