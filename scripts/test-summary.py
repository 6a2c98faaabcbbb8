#!/usr/bin/env python3
"""Summarise meson test logs as one closing line: 'N passed, N failed'.

A TAP test counts each 'ok' / 'not ok' line of its output (a cmocka binary
with 12 cases counts 12); a non-TAP test counts once. A test binary that
crashed or timed out counts its TAP lines plus one failure. Skipped TAP
cases (# SKIP) are reported separately.
"""
import json
import re
import sys

TAP = re.compile(r'^(not ok|ok)\b(.*)$')


def count(build):
    passed = failed = skipped = 0
    failures = []
    try:
        log = open(f'{build}/meson-logs/testlog.json', encoding='utf-8')
    except OSError as e:
        print(f'test-summary: {e}', file=sys.stderr)
        return 0, 1, 0, [f'{build}: no test log']
    with log:
        for line in log:
            t = json.loads(line)
            name = t['name']
            out = t.get('stdout') or ''
            tap = [m for m in (TAP.match(s.strip()) for s in out.splitlines()) if m]
            res = t['result']
            if t.get('protocol') == 'tap' or tap:
                for m in tap:
                    rest = m.group(2)
                    if '# SKIP' in rest.upper():
                        skipped += 1
                    elif m.group(1) == 'ok':
                        passed += 1
                    else:
                        failed += 1
                        failures.append(f'{build}: {name}:{rest}')
                if res not in ('OK', 'EXPECTEDFAIL', 'SKIP') and not any(
                        m.group(1) == 'not ok' for m in tap):
                    failed += 1
                    failures.append(f'{build}: {name}: {res}')
            elif res in ('OK', 'EXPECTEDFAIL'):
                passed += 1
            elif res == 'SKIP':
                skipped += 1
            else:
                failed += 1
                failures.append(f'{build}: {name}: {res}')
    return passed, failed, skipped, failures


def main():
    tp = tf = ts = 0
    allfail = []
    for b in sys.argv[1:]:
        p, f, s, fl = count(b)
        print(f'{b}: {p} passed, {f} failed, {s} skipped', file=sys.stderr)
        tp, tf, ts = tp + p, tf + f, ts + s
        allfail += fl
    for f in allfail:
        print(f'FAILED {f}', file=sys.stderr)
    print(f'{tp} passed, {tf} failed' + (f', {ts} skipped' if ts else ''))
    return 1 if tf or not tp else 0


sys.exit(main())
