#!/usr/bin/env python3
"""jcheck.py T EXPR: evaluate EXPR over the last runner run of an integration test.

In scope: events (list of dicts parsed from T/stdout, one JSON object a line;
every line must parse), reqs (the fake server's request log T/requests.jsonl),
kinds (the event types in order), ev(type) (the events of one type), T, json,
os. Exit 0 when EXPR is true; otherwise print what was evaluated and exit 1.
"""
import json
import os
import sys


def load_lines(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError as e:
                print("%s:%d: not JSON: %s: %r" % (path, n, e, line[:200]))
                sys.exit(1)
    return out


def main():
    t, expr = sys.argv[1], sys.argv[2]
    events = load_lines(os.path.join(t, "stdout"))
    reqs = load_lines(os.path.join(t, "requests.jsonl"))
    for e in events:
        if not isinstance(e, dict) or "type" not in e:
            print("an event without a type: %r" % (e,))
            return 1
    kinds = [e["type"] for e in events]
    scope = {"events": events, "reqs": reqs, "kinds": kinds, "T": t, "json": json, "os": os,
             "ev": lambda k: [e for e in events if e["type"] == k]}
    try:
        result = eval(expr, scope)  # test code, written by the test author
    except Exception as e:  # noqa: BLE001 - report any failure of the expression
        print("expression failed: %s: %s" % (type(e).__name__, e))
        print("kinds: %r" % (kinds,))
        return 1
    if not result:
        print("false: %s" % expr)
        print("kinds: %r" % (kinds,))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
