#!/bin/sh
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0312-files-overlap placeholder"
ok placeholder
test_done
