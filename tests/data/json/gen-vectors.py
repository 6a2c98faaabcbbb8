#!/usr/bin/env python3
"""Regenerate the expected outputs for tests/unit/test-json.c.

    python3 tests/data/json/gen-vectors.py      (needs python3 and node)

Writes, next to this script:
  py-vectors.jsonl   {"in": JSON text, "out": json.dumps(json.loads(in), sort_keys=True)}
                     computed by this Python interpreter;
  jcs-vectors.jsonl  {"in": JSON text, "out": RFC 8785 form} computed by node
                     (JSON.stringify for primitives, keys sorted by Array.sort,
                     i.e. by UTF-16 code units: the RFC's own Appendix A
                     method), or {"in": ..., "error": "ERANGE"} when the input
                     holds an integer beyond +-2^53, which bernstein refuses;
  numbers.txt        "BITS JCS PY" per line: the IEEE-754 bits of a double in
                     hex, its ECMAScript text (node) and its Python repr().

The C side never computes an expectation: it parses "in" with jansson and
compares its writers' bytes with "out". Inputs are limited to what jansson
accepts (no NaN/Infinity, no lone surrogates, integers within int64).
"""
import json
import os
import random
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    # literals and containers
    'null', 'true', 'false', '[]', '{}', '[[]]', '{"a":{}}', '[{}, [], [[[]]]]',
    '{"b": 1, "a": 2, "c": {"z": [3, 2, 1], "y": null}}',
    '[1, "two", 3.0, true, false, null, {"k": "v"}]',
    ' { "spaced" : [ 1 , 2 ] , "x" : { } } ',
    # key order
    '{"aa": 1, "a": 2, "": 3, "b": 4, "ab": 5, "A": 6, "_": 7, "~": 8}',
    '{"\\u00e9": 1, "e": 2, "\\u00ea": 3, "f": 4}',
    '{"\\ud83d\\ude00": "emoji", "\\ue000": "private use", "\\uffff": "last BMP", "z": "ascii"}',
    '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh",'
    ' "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control",'
    ' "\\u00f6": "Latin Small Letter O With Diaeresis"}',
    '{"\\ud800\\udc00": 1, "\\ud7ff": 2, "\\ue000": 3, "\\udbff\\udfff": 4, "\\uf900": 5}',
    '{"10": 1, "9": 2, "1": 3, "01": 4, "-1": 5}',
    '{"__proto__": 1, "constructor": 2}',
    # strings and escapes
    '"plain"', '""', '"quote \\" backslash \\\\ slash \\/"',
    '"\\b\\f\\n\\r\\t"', '"\\u0000\\u0001\\u0007\\u000b\\u000e\\u001f\\u0020"',
    '"del \\u007f and \\u0080 and \\u009f"',
    '"\\u2028 line sep \\u2029 para sep"',
    '"caf\\u00e9 \\u20ac \\ud83d\\ude00 \\ud834\\udd1e \\uffff \\ufeff"',
    '"raw UTF-8: caf\u00e9 \u20ac \U0001F600 \u4e2d\u6587"',
    '"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/"',
    '"<script>&amp;</script>"',
    '{"k\\ty": "v\\nw", "q\\"": "\\\\"}',
    # integers
    '0', '-0', '1', '-1', '42', '1234567890', '-1234567890',
    '9007199254740991', '9007199254740992', '-9007199254740992',
    '9007199254740993', '-9007199254740993',
    '9223372036854775807', '-9223372036854775808',
    '[1, 9007199254740993]', '{"big": 10000000000000000}',
    # reals
    '0.0', '-0.0', '1.0', '-1.0', '1.5', '0.1', '0.2', '0.30000000000000004', '100.0',
    '1e0', '1E2', '1e-1', '2e-3', '4.50', '1e1', '1e15', '1e16', '1.5e16', '123456789012345678.0',
    '1e20', '1e21', '1e22', '1e23', '1e30', '9.999999999999999e22', '1.0000000000000001e23',
    '999999999999999700000.0', '999999999999999900000.0',
    '0.0001', '0.00001', '0.000001', '0.0000001', '1e-7', '1e-6', '1.5e-7', '123e-10',
    '5e-324', '-5e-324', '2.2250738585072014e-308', '2.225073858507201e-308',
    '1.7976931348623157e308', '-1.7976931348623157e308',
    '333333333.33333329', '333333333.3333333', '1e-27', '0.000000000000000000000000001',
    '1424953923781206.25', '9007199254740992.0', '9007199254740994.0', '4503599627370496.5',
    '295147905179352830000.0', '-0.0000033333333333333333', '3.141592653589793',
    '2.718281828459045', '6.02214076e23', '1.602176634e-19', '12345.678', '-98765.4321',
    '[0.5, 0.25, 0.125, 0.0625, 1e100, 1e-100, 1.25e-5, 12.5e15]',
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
    ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
    ' "literals": [null, true, false]}',
    # a record shaped like an audit entry
    '{"timestamp": "2024-05-01T12:00:00Z", "event_type": "adapter.capability_selection",'
    ' "actor": "bernstein", "resource_type": "task", "resource_id": "t-1",'
    ' "details": {"adapter": "claude", "requires": ["capability:vision"], "score": 0.75,'
    ' "note": "ok \\u2713"}, "prev_hmac": "' + '0' * 64 + '"}',
]

NODE_JCS = r'''
const lines = require('fs').readFileSync(0, 'utf8').split('\n').filter(l => l.length);
function canon(o) {
  if (o === null || typeof o !== 'object') return JSON.stringify(o);
  if (Array.isArray(o)) return '[' + o.map(canon).join(',') + ']';
  return '{' + Object.keys(o).sort().map(k => JSON.stringify(k) + ':' + canon(o[k])).join(',') + '}';
}
const dv = new DataView(new ArrayBuffer(8));
const out = [];
for (const l of lines) {
  const req = JSON.parse(l);
  if (req.json !== undefined) out.push(canon(JSON.parse(req.json)));
  else { dv.setBigUint64(0, BigInt('0x' + req.bits)); out.push(JSON.stringify(dv.getFloat64(0))); }
}
process.stdout.write(JSON.stringify(out));
'''


def node(requests):
    text = ''.join(json.dumps(r) + '\n' for r in requests)
    res = subprocess.run(['node', '-e', NODE_JCS], input=text, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout)


def has_unsafe_int(text):
    found = []

    def hook(s):
        v = int(s)
        if abs(v) > 2 ** 53:
            found.append(v)
        return v
    json.loads(text, parse_int=hook)
    return bool(found)


def bits_of(v):
    return struct.unpack('<Q', struct.pack('<d', v))[0]


def number_bits():
    rng = random.Random(8785)
    bits = [
        0x0000000000000000, 0x8000000000000000, 0x0000000000000001, 0x8000000000000001,
        0x7fefffffffffffff, 0xffefffffffffffff, 0x4340000000000000, 0xc340000000000000,
        0x4430000000000000, 0x44b52d02c7e14af5, 0x44b52d02c7e14af6, 0x44b52d02c7e14af7,
        0x444b1ae4d6e2ef4e, 0x444b1ae4d6e2ef4f, 0x444b1ae4d6e2ef50, 0x3eb0c6f7a0b5ed8c,
        0x3eb0c6f7a0b5ed8d, 0x41b3de4355555553, 0x41b3de4355555554, 0x41b3de4355555555,
        0x41b3de4355555556, 0x41b3de4355555557, 0xbecbf647612f3696, 0x43143ff3c1cb0959,
        0x000fffffffffffff, 0x0010000000000000, 0x4340000000000001, 0x4340000000000002,
    ]
    # every 16th power of two with its neighbours (asymmetric rounding intervals)
    for e in range(1, 2047, 16):
        b = e << 52
        bits += [b - 1, b, b + 1]
    # powers of ten and their neighbours around the notation switches
    for e in range(-12, 25):
        b = bits_of(float('1e%d' % e))
        bits += [b - 1, b, b + 1]
    while len(bits) < 2000:
        kind = rng.random()
        if kind < 0.5:
            b = rng.getrandbits(64)
        elif kind < 0.8:
            v = float('%de%d' % (rng.randint(1, 10 ** rng.randint(1, 17)), rng.randint(-330, 300)))
            b = bits_of(v) | (rng.getrandbits(1) << 63)
        else:
            b = bits_of(rng.randint(-2 ** 60, 2 ** 60) / 10 ** rng.randint(0, 20))
        if (b >> 52) & 0x7ff != 0x7ff:
            bits.append(b)
    return bits


def main():
    for c in CASES:
        json.loads(c)  # every case must be valid JSON
    jcs = node([{'json': c} for c in CASES])
    with open(os.path.join(HERE, 'py-vectors.jsonl'), 'w', encoding='utf-8') as f:
        for c in CASES:
            out = json.dumps(json.loads(c), sort_keys=True)
            f.write(json.dumps({'in': c, 'out': out}) + '\n')
    with open(os.path.join(HERE, 'jcs-vectors.jsonl'), 'w', encoding='utf-8') as f:
        for c, out in zip(CASES, jcs):
            if has_unsafe_int(c):
                rec = {'in': c, 'error': 'ERANGE'}
            else:
                rec = {'in': c, 'out': out}
            f.write(json.dumps(rec) + '\n')
    bits = number_bits()
    es = node([{'bits': '%016x' % b} for b in bits])
    with open(os.path.join(HERE, 'numbers.txt'), 'w', encoding='ascii') as f:
        for b, e in zip(bits, es):
            v = struct.unpack('<d', struct.pack('<Q', b))[0]
            f.write('%016x %s %s\n' % (b, e, repr(v)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
