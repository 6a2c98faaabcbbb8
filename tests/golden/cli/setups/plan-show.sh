cp "$SRCDIR"/tests/data/orch/plans/good/everything.yaml .
