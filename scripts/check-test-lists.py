#!/usr/bin/env python3
"""Check that every test in the tree is built and run, once.

The meson test lists are kept by hand; a file added without its line would
never run, and two integration tests with one number make "t0060" name
nothing in particular. This fails (exit 1, one line per problem, naming the
file) when:

- a tests/integration/tNNNN-*.sh is in none of the lists of
  tests/integration/meson.build, or in more than one, or a listed one does
  not exist;
- two integration tests share a number;
- a tests/unit/test-NAME.c is not in unit_tests (tests/meson.build), or a
  listed one does not exist;
- a fuzz/fuzz-NAME.c is not in fuzz_targets (fuzz/meson.build), a listed one
  does not exist, or has no seed corpus (fuzz/corpus/NAME/ with a file).

usage: check-test-lists.py [SOURCE_ROOT]   (default: the parent of scripts/)
Run at configure time (meson.build) and as the unit test 'test-lists'.
"""
import os
import re
import sys


def lists(path):
    """Each `name = [ 'a', 'b', ]` array of a meson file: {name: [(item, line)]}."""
    out = {}
    with open(path, encoding='utf-8') as f:
        text = f.read()
    for m in re.finditer(r'^(\w+)\s*=\s*\[(.*?)\]', text, re.M | re.S):
        base = text.count('\n', 0, m.start(2)) + 1
        items = []
        for im in re.finditer(r"'([^']*)'", m.group(2)):
            items.append((im.group(1), base + m.group(2).count('\n', 0, im.start())))
        out[m.group(1)] = items
    return out


def check(root):
    problems = []

    def problem(path, line, msg):
        where = os.path.relpath(path, root) + (f':{line}' if line else '')
        problems.append(f'{where}: {msg}')

    # Integration tests: every list of tests/integration/meson.build.
    imeson = os.path.join(root, 'tests', 'integration', 'meson.build')
    idir = os.path.dirname(imeson)
    seen = {}
    for name, items in lists(imeson).items():
        for item, line in items:
            if not re.fullmatch(r't\d{4}-[a-z0-9-]+\.sh', item):
                continue
            if item in seen:
                problem(imeson, line, f"'{item}' is listed twice (also in {seen[item]})")
            seen[item] = name
            if not os.path.isfile(os.path.join(idir, item)):
                problem(imeson, line, f"'{item}' is listed but there is no such file")
    numbers = {}
    for f in sorted(os.listdir(idir)):
        m = re.fullmatch(r't(\d{4})-.*\.sh', f)
        if not m:
            continue
        if f not in seen:
            problem(os.path.join(idir, f), 0,
                    'not listed in tests/integration/meson.build: it would never run')
        if m.group(1) in numbers:
            problem(os.path.join(idir, f), 0,
                    f'number t{m.group(1)} is taken by {numbers[m.group(1)]}')
        else:
            numbers[m.group(1)] = f

    # Unit tests.
    umeson = os.path.join(root, 'tests', 'meson.build')
    udir = os.path.join(root, 'tests', 'unit')
    listed = {}
    for item, line in lists(umeson).get('unit_tests', []):
        if item in listed:
            problem(umeson, line, f"unit test '{item}' is listed twice")
        listed[item] = line
        if not os.path.isfile(os.path.join(udir, f'test-{item}.c')):
            problem(umeson, line, f"unit test '{item}' is listed but tests/unit/test-{item}.c "
                    'does not exist')
    for f in sorted(os.listdir(udir)):
        m = re.fullmatch(r'test-(.*)\.c', f)
        if m and m.group(1) not in listed:
            problem(os.path.join(udir, f), 0, 'not in unit_tests of tests/meson.build: '
                    'it would never run')

    # Fuzz targets and their seed corpora.
    fmeson = os.path.join(root, 'fuzz', 'meson.build')
    fdir = os.path.dirname(fmeson)
    listed = {}
    for item, line in lists(fmeson).get('fuzz_targets', []):
        if item in listed:
            problem(fmeson, line, f"fuzz target '{item}' is listed twice")
        listed[item] = line
        if not os.path.isfile(os.path.join(fdir, f'fuzz-{item}.c')):
            problem(fmeson, line, f"fuzz target '{item}' is listed but fuzz/fuzz-{item}.c "
                    'does not exist')
        corpus = os.path.join(fdir, 'corpus', item)
        if not os.path.isdir(corpus) or not os.listdir(corpus):
            problem(fmeson, line, f"fuzz target '{item}' has no seed corpus in "
                    f'fuzz/corpus/{item}/')
    for f in sorted(os.listdir(fdir)):
        m = re.fullmatch(r'fuzz-(.*)\.c', f)
        if m and m.group(1) not in listed:
            problem(os.path.join(fdir, f), 0, 'not in fuzz_targets of fuzz/meson.build: '
                    'it would never be built or replayed')
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(f'check-test-lists: {p}', file=sys.stderr)
    # TAP, for meson test
    print('1..1')
    print(('not ok' if problems else 'ok') + ' 1 - every test file is listed once, '
          'every integration test has its own number')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
