#!/usr/bin/env python3
"""An independent reference of the held-out derivation of docs/onboarding.md
(section "Held-out cases"), to check bernstein's C implementation against.

Reads one JSON object on stdin:
    {"argv": [...], "exit_code": 0, "invocation": {the nine ctor_kwargs},
     "smoke_prompt": "...", "smoke_model": "..."}
and prints {"seed": HEX, "cases": [{"variant", "prompt", "model"}, ...]}.
Standard library only."""
import hashlib
import json
import sys

DOMAIN = "bernstein.onboard.heldout.v1"
# (name, text); {p} is the smoke prompt, {n} the case number (1-based)
VARIANTS = [
    ("prefixed", "held-out case {n}: {p}"),
    ("multi-line", "{p}\n\n(held-out case {n}: answer in one line)"),
    ("quotes", "{p} (held-out case {n}; \"double\" and 'single' quotes)"),
    ("unicode", "{p} (held-out case {n}: na\u00efve caf\u00e9, \u65e5\u672c, \u2713)"),
    ("padded", "  {p}  (held-out case {n})  "),
    ("shell-metacharacters", "{p}; held-out case {n}: $HOME `true` * && | ; not for a shell"),
    ("tab", "{p}\t(held-out case {n})"),
    ("flag-like", "{p} (held-out case {n}) -- --help"),
]


def derive(inp):
    obj = {
        "domain": DOMAIN,
        "evidence": {"argv": inp["argv"], "exit_code": inp.get("exit_code", 0)},
        "invocation": inp["invocation"],
        "smoke_prompt": inp["smoke_prompt"],
        "smoke_model": inp["smoke_model"],
    }
    # RFC 8785 for this data (strings, booleans, null, small integers; ASCII
    # keys): sorted keys, no whitespace, UTF-8, minimal escapes
    canon = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    seed = hashlib.sha256(canon.encode("utf-8")).digest()
    perm = list(range(len(VARIANTS)))
    for k in range(3):
        j = k + int.from_bytes(seed[4 * k:4 * k + 4], "big") % (len(VARIANTS) - k)
        perm[k], perm[j] = perm[j], perm[k]
    cases = []
    for k in range(3):
        name, text = VARIANTS[perm[k]]
        prompt = text.replace("{n}", str(k + 1)).replace("{p}", inp["smoke_prompt"])
        cases.append({"variant": name, "prompt": prompt, "model": inp["smoke_model"]})
    return {"seed": seed.hex(), "cases": cases}


if __name__ == "__main__":
    json.dump(derive(json.load(sys.stdin)), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
