#!/bin/sh
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0311-context-confined placeholder"
ok placeholder
test_done
