#!/bin/sh
# The audit key: where it is looked up (BERNSTEIN_AUDIT_KEY_PATH >
# XDG_STATE_HOME > HOME), how it is created (64 hex digits, 0600, directory
# 0700, whatever the umask), that it is never printed, and that a key open to
# group or others refuses to start (exit 4, naming the file and its mode).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0020 audit key"

HOMEKEY="$T/home/.local/state/bernstein/audit.key"

# -- resolution ---------------------------------------------------------------
expect_exit 0 "$BERNSTEIN" audit key
expect_stdout_contains "path: $HOMEKEY"
expect_stdout_contains "source: HOME"
expect_stdout_contains "status: missing (create it with 'bernstein audit key --create')"
check "'audit key' does not create it" test ! -e "$HOMEKEY"

expect_exit 0 XDG_STATE_HOME="$T/xdg" "$BERNSTEIN" audit key
expect_stdout_contains "path: $T/xdg/bernstein/audit.key"
expect_stdout_contains "source: XDG_STATE_HOME"

expect_exit 0 XDG_STATE_HOME=relative/dir "$BERNSTEIN" audit key
expect_stdout_contains "path: $HOMEKEY"

expect_exit 0 XDG_STATE_HOME="$T/xdg" BERNSTEIN_AUDIT_KEY_PATH="$T/env.key" "$BERNSTEIN" audit key
expect_stdout_contains "path: $T/env.key"
expect_stdout_contains "source: BERNSTEIN_AUDIT_KEY_PATH"

expect_exit 0 BERNSTEIN_AUDIT_KEY_PATH="$T/env.key" "$BERNSTEIN" audit key --key-file "$T/flag.key"
expect_stdout_contains "path: $T/flag.key"

expect_exit 4 env -u HOME "$BERNSTEIN" audit key
expect_stderr_contains "cannot locate the audit key"

# -- creation -----------------------------------------------------------------
# a permissive umask must not leak into the key or its directory
expect_exit 0 sh -c 'umask 0; exec "$0" "$@"' "$BERNSTEIN" audit key --create
expect_stdout_contains "status: created (mode 0600)"
check "key file is 0600" test "$(stat -c %a "$HOMEKEY")" = 600
check "key directory is 0700" test "$(stat -c %a "$(dirname "$HOMEKEY")")" = 700
check "key is 64 bytes (no newline)" test "$(wc -c <"$HOMEKEY")" -eq 64
check "key is lowercase hex" grep -qxE '[0-9a-f]{64}' "$HOMEKEY"
check "the key itself is not printed" sh -c "! grep -qF \"\$(cat '$HOMEKEY')\" '$T/stdout'"
cp "$HOMEKEY" "$T/key.before"

expect_exit 0 "$BERNSTEIN" --json audit key --create
check "--json key output is JSON" python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["exists"] is True and o["created"] is False, o
assert o["mode"] == "0600" and o["source"] == "HOME", o
assert o["path"].endswith("/.local/state/bernstein/audit.key"), o
' "$T/stdout"
expect_same_file "$T/key.before" "$HOMEKEY" "--create keeps an existing key"

# BERNSTEIN_AUDIT_KEY_PATH: created there on first append, HOME's untouched
expect_exit 0 BERNSTEIN_AUDIT_KEY_PATH="$T/keys/sub/k" "$BERNSTEIN" audit append --event-type t.env
check "key created at BERNSTEIN_AUDIT_KEY_PATH" test -f "$T/keys/sub/k"
check "...with mode 0600" test "$(stat -c %a "$T/keys/sub/k")" = 600
expect_exit 0 BERNSTEIN_AUDIT_KEY_PATH="$T/keys/sub/k" "$BERNSTEIN" audit verify
expect_exit 1 "$BERNSTEIN" audit verify
expect_stdout_contains "HMAC mismatch"

# -- permissions --------------------------------------------------------------
chmod 644 "$HOMEKEY"
expect_exit 4 "$BERNSTEIN" audit key
expect_stderr_contains "$HOMEKEY: audit key has mode 0644: group and others must have no access (chmod 600 it)"
expect_exit 4 "$BERNSTEIN" audit append --event-type t.refused
expect_stderr_contains "mode 0644"
expect_exit 4 "$BERNSTEIN" audit verify
expect_stderr_contains "mode 0644"
chmod 620 "$HOMEKEY"
expect_exit 4 "$BERNSTEIN" audit verify
expect_stderr_contains "mode 0620"
chmod 600 "$HOMEKEY"

# -- a missing key ---------------------------------------------------------------
expect_exit 4 BERNSTEIN_AUDIT_KEY_PATH="$T/none.key" "$BERNSTEIN" audit verify
expect_stderr_contains "$T/none.key: audit key does not exist (create it with 'bernstein audit key --create')"
check "verify does not create a key" test ! -e "$T/none.key"

# -- usage ----------------------------------------------------------------------
expect_exit 2 "$BERNSTEIN" audit key --bogus
expect_exit 2 "$BERNSTEIN" audit key extra
expect_exit 2 "$BERNSTEIN" audit append
expect_stderr_contains "--event-type is required"
expect_exit 2 "$BERNSTEIN" audit append --event-type x --details '[1]'
expect_stderr_contains "--details must be a JSON object"
expect_exit 2 "$BERNSTEIN" audit show --limit -1
expect_exit 0 "$BERNSTEIN" audit verify -h
expect_stdout_contains "usage: bernstein audit verify"
cp "$T/stdout" "$T/verify-h"
expect_exit 0 "$BERNSTEIN" help audit verify
expect_same_file "$T/verify-h" "$T/stdout" "'help audit verify' == 'audit verify -h'"

test_done
