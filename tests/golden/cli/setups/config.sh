cp "$SRCDIR"/tests/data/orch/config/good/full.yaml bernstein.yaml
