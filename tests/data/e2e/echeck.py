#!/usr/bin/env python3
"""echeck.py T EXPR: evaluate EXPR over the last `bernstein spawn --json` run of an
end-to-end test (tests/integration/t*-e2e-*.sh).

In scope: events (the JSON lines of T/stdout; every line must parse), outcome (the
last event of kind "outcome", or {}), kind(k) (the events of one kind), reqs (the
fake server's request log T/requests.jsonl), convo (reqs that are neither side
calls nor token counts), text(r) (a request's body as one JSON string),
user_texts(r) (the text parts of a request's last user message, whatever the
API), T, json, os. Exit 0 when EXPR is true; otherwise print what was
evaluated and exit 1.
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


def user_texts(r):
    """The text parts of the last user message of request r: Anthropic and
    OpenAI Chat "messages", Responses "input", Gemini "contents"."""
    body = r.get("body") or {}
    msgs = body.get("messages") or body.get("input") or body.get("contents") or []
    if isinstance(msgs, str):
        return [msgs]
    users = [m for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return []
    content = users[-1].get("content", users[-1].get("parts"))
    if isinstance(content, str):
        return [content]
    out = []
    for part in content or []:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return out


def main():
    t, expr = sys.argv[1], sys.argv[2]
    events = load_lines(os.path.join(t, "stdout"))
    reqs = load_lines(os.path.join(t, "requests.jsonl"))
    outs = [e for e in events if isinstance(e, dict) and e.get("kind") == "outcome"]
    scope = {"events": events, "reqs": reqs, "T": t, "json": json, "os": os,
             "outcome": outs[-1] if outs else {},
             "kind": lambda k: [e for e in events if isinstance(e, dict) and e.get("kind") == k],
             "convo": [r for r in reqs if not r.get("side") and not r.get("count")],
             "text": lambda r: json.dumps(r.get("body")),
             "user_texts": user_texts}
    try:
        ok = eval(expr, scope)  # the expression is the test's own, never input
    except Exception as e:  # report any failure of the expression as a test failure
        print("%s: %s: %s" % (expr, type(e).__name__, e))
        ok = False
    if not ok:
        print("false: %s" % expr)
        print("outcome: %s" % json.dumps(scope["outcome"])[:600])
        print("requests: %d (%s)" % (len(reqs), ", ".join(
            "%s%s" % (r.get("path"), " side" if r.get("side") else "") for r in reqs)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
