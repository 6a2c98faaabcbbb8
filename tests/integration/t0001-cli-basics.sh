#!/bin/sh
# The command-line front: version, help, usage errors and their exit codes
# (docs/exit-codes.md), and the one-line-plus-hint usage error format.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0001 cli basics"

# shellcheck disable=SC2317 # called through check
json_ok()
{
	python3 -c 'import json, sys; json.load(sys.stdin)' <"$1"
}

# --version
expect_exit 0 "$BERNSTEIN" --version
expect_stdout_contains "bernstein "
expect_lines stdout 1 "--version prints one line"
expect_stderr_empty "--version writes nothing to stderr"

# --help lists the commands
expect_exit 0 "$BERNSTEIN" --help
expect_stdout_contains "usage: bernstein"
for c in adapters help version; do
	if grep -qE "^  $c( |\$)" "$T/stdout"; then
		ok "--help lists '$c'"
	else
		not_ok "--help lists '$c'"
		diag "$(cat "$T/stdout")"
	fi
done
expect_stderr_empty "--help writes nothing to stderr"

# `help version` and `version -h` print the same text, byte for byte
expect_exit 0 "$BERNSTEIN" help version
cp "$T/stdout" "$T/help-version"
expect_exit 0 "$BERNSTEIN" version -h
cp "$T/stdout" "$T/version-h"
expect_same_file "$T/help-version" "$T/version-h" "'help version' == 'version -h'"
check "'help version' is not empty" test -s "$T/help-version"

# unknown command: exit 2, one error line plus one 'see ...' line, no stdout
expect_exit 2 "$BERNSTEIN" nosuchcommand
expect_stdout_empty "unknown command: nothing on stdout"
expect_lines stderr 2 "unknown command: exactly two stderr lines"
check "unknown command: first line names it" \
	grep -qxF "bernstein: unknown command 'nosuchcommand'" "$T/stderr"
check "unknown command: second line is a 'see ...' hint" sh -c "sed -n 2p '$T/stderr' | grep -q '^see '"

# unknown global option
expect_exit 2 "$BERNSTEIN" --no-such-option version
expect_stdout_empty "unknown option: nothing on stdout"
expect_stderr_contains "no-such-option"
expect_exit 2 "$BERNSTEIN" -Z version

# -C into a directory that does not exist: environment problem
expect_exit 4 "$BERNSTEIN" -C /nonexistent version
expect_stdout_empty "-C /nonexistent: nothing on stdout"
expect_stderr_contains "/nonexistent"

# -C into a directory that does exist works
mkdir -p "$T/work/sub"
expect_exit 0 "$BERNSTEIN" -C sub version

# no command at all
expect_exit 2 "$BERNSTEIN"
expect_stdout_empty "missing command: nothing on stdout"
expect_stderr_contains "missing command"

# help for a command that does not exist
expect_exit 2 "$BERNSTEIN" help nosuch
expect_stdout_empty "help nosuch: nothing on stdout"
expect_stderr_contains "nosuch"

# version takes no arguments
expect_exit 2 "$BERNSTEIN" version extra

# --json --version is one valid JSON document
expect_exit 0 "$BERNSTEIN" --json --version
check "--json --version is valid JSON" json_ok "$T/stdout"
expect_stdout_contains '"version"'

# so is --json version
expect_exit 0 "$BERNSTEIN" --json version
check "--json version is valid JSON" json_ok "$T/stdout"

test_done
