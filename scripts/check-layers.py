#!/usr/bin/env python3
"""Check the layering rule on the linked code, not only on the includes.

DESIGN.md section 3: util <- proc <- adapter, audit <- route <- runner,
orch, onboard <- cli. scripts/lint.sh checks the #include lines; this reads
the symbol tables of the per-layer static libraries (nm) and fails when an
object of one layer refers to a symbol another layer defines that it may
not use (a declaration written by hand, an extern, a macro: whatever the
include check cannot see).

usage: check-layers.py LAYER=ARCHIVE...   e.g. util=build/src/libbutil.a
Prints TAP (one case per layer) for meson test; exit 1 on any violation.
"""
import os
import subprocess
import sys

from layers import ALLOWED  # scripts/layers.py, shared with lint.sh


def symbols(archive):
    """(defined: {symbol}, undefined: [(object, symbol)]) of a static library."""
    out = subprocess.run(['nm', '-A', '-g', archive], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), []
    for line in out.splitlines():
        # archive:object: [value] TYPE name
        head, _, rest = line.rpartition(': ')
        if not head:
            head, _, rest = line.rpartition(':')
        parts = rest.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        obj = os.path.basename(head.split(':')[-1])
        if kind == 'U':
            undefined.append((obj, name))
        elif kind not in ('w', 'v'):
            defined.add(name)
    return defined, undefined


def main():
    layers = {}
    for arg in sys.argv[1:]:
        layer, _, archive = arg.partition('=')
        if layer not in ALLOWED or not archive:
            print(f'check-layers: bad argument {arg!r} (LAYER=ARCHIVE)', file=sys.stderr)
            return 2
        layers[layer] = symbols(archive)
    owner = {}
    for layer, (defined, _) in layers.items():
        for name in defined:
            owner.setdefault(name, layer)
    bad = 0
    print(f'1..{len(layers)}')
    for n, (layer, (_, undefined)) in enumerate(sorted(layers.items()), 1):
        allowed = ALLOWED[layer]
        problems = sorted({(obj, name, owner[name]) for obj, name in undefined
                           if name in owner and allowed is not None
                           and owner[name] not in allowed})
        print(('not ok' if problems else 'ok') + f' {n} - {layer} uses only '
              + (', '.join(allowed) if allowed is not None else 'any layer'))
        for obj, name, other in problems:
            print(f'# {layer}/{obj}: uses {name} of {other}')
        bad |= bool(problems)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
