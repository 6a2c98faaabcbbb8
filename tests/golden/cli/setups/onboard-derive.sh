cp "$SRCDIR/tests/data/onboard/pi_local.yaml" "$SRCDIR/tests/data/onboard/pi_local.evidence.yaml" .
