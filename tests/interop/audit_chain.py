#!/usr/bin/env python3
"""An independent reader and writer of bernstein's audit chain, written from
docs/audit-log.md with the Python standard library only (json, hmac, hashlib).

  audit_chain.py verify DIR --key-file KEY          exit 0 intact, 1 broken
  audit_chain.py write  DIR --key-file KEY [--count N] [--tricky] [--day DAY]
                        [--state] [--event-type T]   append records
  audit_chain.py lines  DIR                         print "count last_hmac"

The integration tests use it both ways: bernstein writes, this verifies;
this writes, bernstein verifies. It is deliberately plain Python (the same
json.dumps(sort_keys=True) Bernstein uses), so a disagreement points at the C
side or at the documentation.
"""

import argparse
import datetime
import hashlib
import hmac
import json
import os
import stat
import sys

GENESIS = "0" * 64
STATE = "state.json"
LOCK = ".lock"


def canonical(obj):
    # The documented canonical form: sort_keys, default separators (", ",
    # ": "), ensure_ascii. NaN and infinities are not allowed.
    return json.dumps(obj, sort_keys=True, allow_nan=False)


def mac(key, prev, record_without_hmac):
    payload = prev + canonical(record_without_hmac)
    return hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()


def load_key(path):
    with open(path, "rb") as f:
        data = f.read()
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o077:
        sys.exit(f"{path}: key mode {mode:04o} is open to group/others")
    key = data.strip()
    if not key:
        sys.exit(f"{path}: empty key")
    return key


def chain_files(d):
    names = sorted(n for n in os.listdir(d)
                   if n.endswith(".jsonl") and not n.startswith(".")
                   and os.path.isfile(os.path.join(d, n)))
    return [os.path.join(d, n) for n in names]


def chain_entries(d):
    """(path, what): every NAME.jsonl entry in name order; what is None for a
    regular file, else what it is (symbolic links are not followed)."""
    out = []
    for n in sorted(os.listdir(d)):
        if not n.endswith(".jsonl") or n.startswith(".") or len(n) <= 6:
            continue
        path = os.path.join(d, n)
        try:
            m = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        what = None
        for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                           (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                           (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link")):
            if test(m):
                what = f"is {name} (not a regular file)"
        out.append((path, what))
    return out


def hot_state(d):
    """.lock's hot state {"count", "last_hmac"} when its writer ran in this
    boot (v2 line), else None."""
    try:
        with open(os.path.join(d, LOCK), "rb") as f:
            parts = f.read(200).split(b"\n")[0].split(b" ")
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            boot = f.read().strip()
    except OSError:
        return None
    if len(parts) != 4 or parts[0] != b"bernstein-audit-hot-v2" or parts[3] != boot:
        return None
    return {"count": int(parts[1]), "last_hmac": parts[2].decode("ascii")}


def reject_constant(name):
    raise ValueError(f"{name} is not allowed")


def parse(line):
    """(entry, error): entry is the parsed value or None."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"invalid JSON - not UTF-8: {e}"
    try:
        return json.loads(text, parse_constant=reject_constant), None
    except ValueError as e:
        return None, f"invalid JSON - {e}"


def short(s):
    return (s if isinstance(s, str) else repr(s))[:16]


def verify(d, key):
    problems = []
    expected, alt, resync = GENESIS, None, False
    records = 0
    last_file, last_line = None, 0
    at = {}  # record number -> (file, line, hmac)
    state = None
    state_path = os.path.join(d, STATE)
    if os.path.exists(state_path):
        with open(state_path, "rb") as f:
            state = json.loads(f.read())

    for path, what in chain_entries(d):
        if what:
            problems.append(f"{path}: {what}")
            continue
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
            missing_nl = False
        else:
            missing_nl = bool(lines)
        for no, line in enumerate(lines, 1):
            where = f"{path}:{no}"
            if not line:
                problems.append(f"{where}: empty line")
                continue
            records += 1
            last_file, last_line = path, no
            if len(line) > 1024 * 1024:
                problems.append(f"{where}: line longer than 1048576 bytes")
                resync = True
                continue
            entry, err = parse(line)
            if err:
                problems.append(f"{where}: {err}")
                resync = True
                continue
            if not isinstance(entry, dict):
                problems.append(f"{where}: entry is not a JSON object")
                resync = True
                continue
            if canonical(entry).encode("ascii") != line:
                problems.append(f"{where}: non-canonical line bytes")
            prev = entry.get("prev_hmac")
            stored = entry.get("hmac")
            if not isinstance(prev, str):
                problems.append(f"{where}: prev_hmac missing or not a string")
            elif not resync and not (hmac.compare_digest(prev, expected) or
                                     (alt and hmac.compare_digest(prev, alt))):
                problems.append(f"{where}: prev_hmac mismatch (expected {short(expected)}\u2026, "
                                f"got {short(prev)}\u2026)")
            body = {k: v for k, v in entry.items() if k != "hmac"}
            computed = mac(key, prev if isinstance(prev, str) else "", body)
            ok = isinstance(stored, str) and hmac.compare_digest(computed, stored)
            if not isinstance(stored, str):
                problems.append(f"{where}: hmac missing or not a string")
                resync = True
            else:
                if not ok:
                    problems.append(f"{where}: HMAC mismatch (expected {computed[:16]}\u2026, "
                                    f"got {short(stored)}\u2026)")
                expected, alt, resync = stored, (None if ok else computed), False
            at[records] = (path, no, stored)
        if missing_nl:
            problems.append(f"{path}:{len(lines)}: missing trailing newline")

    # the recorded ends: state.json, then the hot state a writer left in
    # .lock in this boot, when it says more than state.json
    hot = hot_state(d)
    if hot and state and (hot["count"], hot["last_hmac"]) == (state.get("count"),
                                                              state.get("last_hmac")):
        hot = None
    for who, rec, where in (("state", state, state_path),
                            (".lock", hot, os.path.join(d, LOCK))):
        if not rec or rec.get("count", 0) <= 0:
            continue
        n, want = rec["count"], rec["last_hmac"]
        if records < n:
            if last_file:
                problems.append(f"{last_file}:{last_line + 1}: truncated tail ({who} says {n} "
                                f"records / last MAC {want[:16]}\u2026, chain has {records})")
            else:
                problems.append(f"{where}: truncated tail ({who} says {n} records / last MAC "
                                f"{want[:16]}\u2026, chain has none)")
        elif at[n][2] != want:
            problems.append(f"{at[n][0]}:{at[n][1]}: chain does not match {who} "
                            f"(record {n} has MAC {short(at[n][2])}\u2026, {who} says "
                            f"{want[:16]}\u2026)")
    return records, problems


def chain_end(d):
    """(count, last_hmac): count of non-empty lines, the last record that
    parses, is canonical and has an hmac (the writer's tail recovery)."""
    count, last = 0, GENESIS
    for path in chain_files(d):
        with open(path, "rb") as f:
            for line in f.read().split(b"\n"):
                if not line:
                    continue
                count += 1
                entry, err = parse(line)
                if (not err and isinstance(entry, dict)
                        and canonical(entry).encode("ascii") == line
                        and isinstance(entry.get("hmac"), str)):
                    last = entry["hmac"]
    return count, last


TRICKY = [
    {"accent": "\u00e9", "cjk": "\u65e5\u672c", "emoji": "\U0001F600"},
    {"esc": "quote\" backslash\\ slash/ nl\n tab\t", "ctl": "\x00\x01\x1f\x7f"},
    {"nested": {"z": [1, {"b": None, "a": True}], "a": {"deeper": {"x": False}}}},
    {"floats": [0.1, 1e-05, 1e+16, -0.0, 1.5, 100.0, 2.5e-300, 1.7976931348623157e308]},
    {"ints": [2**63 - 1, -(2**63 - 1), 0, -1]},
    {"empty": {}, "list": [], "str": ""},
    {"\u00e9cl\u00e9": "key with non-ASCII", "A": 1, "a": 2, "_": 3},
]


def write(d, key, count, tricky, day, event_type, with_state):
    os.makedirs(d, exist_ok=True)
    n, prev = chain_end(d)
    day = day or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    path = os.path.join(d, day + ".jsonl")
    with open(path, "ab") as f:
        for i in range(count):
            ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            details = dict(TRICKY[i % len(TRICKY)]) if tricky else {"i": i}
            rec = {
                "actor": "python-\u00e9crivain",
                "details": details,
                "event_type": event_type,
                "prev_hmac": prev,
                "resource_id": f"r{i}",
                "resource_type": "interop",
                "timestamp": ts,
            }
            rec["hmac"] = mac(key, prev, rec)
            f.write(canonical(rec).encode("ascii") + b"\n")
            prev = rec["hmac"]
            n += 1
    if with_state:
        tmp = os.path.join(d, STATE + ".tmp")
        with open(tmp, "w", encoding="ascii") as f:
            f.write(canonical({"count": n, "last_hmac": prev, "version": 1}) + "\n")
        os.replace(tmp, os.path.join(d, STATE))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify")
    v.add_argument("dir")
    v.add_argument("--key-file", required=True)
    w = sub.add_parser("write")
    w.add_argument("dir")
    w.add_argument("--key-file", required=True)
    w.add_argument("--count", type=int, default=5)
    w.add_argument("--tricky", action="store_true")
    w.add_argument("--day")
    w.add_argument("--event-type", default="interop.python")
    w.add_argument("--state", action="store_true")
    e = sub.add_parser("lines")
    e.add_argument("dir")
    a = ap.parse_args()

    if a.cmd == "verify":
        records, problems = verify(a.dir, load_key(a.key_file))
        for p in problems:
            print(p)
        print(f"{records} records, {len(problems)} problems")
        return 1 if problems else 0
    if a.cmd == "write":
        write(a.dir, load_key(a.key_file), a.count, a.tricky, a.day, a.event_type, a.state)
        return 0
    count, last = chain_end(a.dir)
    print(count, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
