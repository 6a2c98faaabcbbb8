#!/bin/sh
# bernstein route against the real binary, with profiles of a repository
# catalogue made here: a match, a refusal (exit 6) with its receipt, --json,
# the receipt hash recomputed by python3 from the printed JSON as
# docs/routing.md describes it, --audit writing exactly one record of the
# right type that `bernstein audit verify` and tests/interop/audit_chain.py
# accept, and no audit directory and no key needed without --audit.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0070 capability routing"

PY="$SRCDIR/tests/interop/audit_chain.py"
W=$T/work
A=$W/.bernstein/audit
KEY=$T/home/.local/state/bernstein/audit.key

# ---- a repository catalogue with three profiles ----
mkdir -p "$W/.bernstein/catalog/profiles"
profile()
{
	_f=$W/.bernstein/catalog/profiles/$1.yaml
	{
		printf 'name: %s\ndisplay_name: "%s"\nshape: module\n' "$1" "$1"
		printf 'invocation:\n  binary: %s\n  prompt_positional: true\n' "$1"
		printf 'capabilities:\n'
		shift
		for c in "$@"; do
			printf '  %s\n' "$c"
		done
	} >"$_f"
}
profile zz_plain "tool_use: true" "sandbox: process"
profile zz_seer "vision: true" "sandbox: container" "max_parallel_workers: 8"
profile zz_vm "sandbox: microvm" "max_parallel_workers: 2" "mcp_client: true"
printf 'adapters:\n  zz_seer: true\n' >"$W/.bernstein/catalog/multimodal.yaml"

# the JCS form of a parsed JSON value, for these objects (ASCII, no floats)
cat >"$T/receipt.py" <<'EOF'
import hashlib, json, sys

def jcs(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

def walk(v):
    # the claim that Python's compact sorted dump is RFC 8785 here
    if isinstance(v, dict):
        for k, x in v.items():
            assert k.isascii(), k
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
    else:
        assert not isinstance(v, float), v

mode = sys.argv[1]
if mode == "printed":
    d = json.load(open(sys.argv[2]))
    assert d["selected"] is False, d
    r = d["receipt"]
    assert sorted(r) == ["candidates", "kind", "requirements", "unmet"], sorted(r)
    assert r["kind"] == "adapter-capability-refusal"
    union = sorted({a for c in r["candidates"] for a in c["unmet"]})
    assert r["unmet"] == union, (r["unmet"], union)
    walk(r)
    h = hashlib.sha256(jcs(r)).hexdigest()
    assert h == d["receipt_hash"], (h, d["receipt_hash"])
    print(h)
elif mode == "record":
    # the last refusal record of the chain: rebuild the receipt from it
    rec = None
    for f in sorted(sys.argv[3:]):
        for line in open(f):
            o = json.loads(line)
            if o["event_type"] == "adapter.capability_refusal":
                rec = o
    det = dict(rec["details"])
    want = det.pop("receipt_hash")
    det["kind"] = "adapter-capability-refusal"
    walk(det)
    h = hashlib.sha256(jcs(det)).hexdigest()
    assert h == want == sys.argv[2], (h, want, sys.argv[2])
    print(h)
EOF

hash_of()
{
	run "$BERNSTEIN" profiles hash "$1"
	tr -d '\n' <"$T/stdout"
}
H_PLAIN=$(hash_of zz_plain)
H_SEER=$(hash_of zz_seer)
H_VM=$(hash_of zz_vm)
check "profile hashes are 64 hex digits" sh -c "echo '$H_PLAIN$H_SEER$H_VM' | grep -qE '^[0-9a-f]{192}$'"

# ---- a match ----
expect_exit 0 "$BERNSTEIN" route --candidates zz_plain,zz_seer,zz_vm --requires capability:vision
expect_stdout_contains "adapter: zz_seer"
expect_stdout_contains "profile_hash: $H_SEER"
expect_stdout_contains "requirements: vision"
expect_stdout_contains "order: explicit (2 considered)"
expect_stderr_empty

# stronger satisfies weaker: container serves process, 8 workers serve 4
expect_exit 0 "$BERNSTEIN" route --candidates zz_vm,zz_seer,zz_plain \
	--requires capability:sandbox=process --requires capability:max_parallel_workers=4
expect_stdout_contains "adapter: zz_seer"
# the candidate order decides between two that fit
expect_exit 0 "$BERNSTEIN" route --candidates zz_vm,zz_plain --requires capability:sandbox=process
expect_stdout_contains "adapter: zz_vm"
expect_exit 0 "$BERNSTEIN" route --candidates zz_plain --candidates zz_vm \
	--requires capability:sandbox=process
expect_stdout_contains "adapter: zz_plain"

# catalogue order: our zz_ names sort after every shipped one; only zz_vm
# has a microvm sandbox and an MCP client
expect_exit 0 "$BERNSTEIN" route --requires capability:sandbox=microvm --requires capability:mcp_client
expect_stdout_contains "adapter: zz_vm"
expect_stdout_contains "order: catalogue"

expect_exit 0 "$BERNSTEIN" --json route --candidates zz_plain,zz_seer --requires capability:vision
check "--json selection" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['selected'] is True and d['adapter'] == 'zz_seer', d
assert d['profile_hash'] == sys.argv[2], d
assert d['order'] == 'explicit' and d['audit'] is None, d
assert [c['adapter'] for c in d['considered']] == ['zz_plain', 'zz_seer'], d
assert d['considered'][0]['unmet'] == ['vision'] and d['considered'][1]['unmet'] == [], d
assert d['requirements']['vision'] is True and d['requirements']['sandbox'] == 'none', d
" "$T/stdout" "$H_SEER"

# ---- a refusal: exit 6 and the receipt ----
expect_exit 6 "$BERNSTEIN" route --candidates zz_plain,zz_seer \
	--requires capability:vision --requires capability:sandbox=microvm
expect_stdout_contains "capability mismatch: no adapter satisfies the task"
expect_stdout_contains "requirements: sandbox=microvm, vision"
expect_stdout_contains "  zz_plain  $H_PLAIN  unmet: sandbox, vision"
expect_stdout_contains "  zz_seer   $H_SEER  unmet: sandbox"
expect_stdout_contains "unmet: sandbox, vision"
grep '^receipt_hash: ' "$T/stdout" | cut -d' ' -f2 >"$T/human-hash"
check "the receipt hash is printed" grep -qE '^[0-9a-f]{64}$' "$T/human-hash"

expect_exit 6 "$BERNSTEIN" --json route --candidates zz_plain,zz_seer \
	--requires capability:sandbox=microvm --requires capability:vision
cp "$T/stdout" "$T/refusal.json"
check "python3 recomputes receipt_hash from the printed receipt" \
	python3 "$T/receipt.py" printed "$T/refusal.json"
check "the human and JSON forms name the same receipt" \
	python3 -c "
import json, sys
assert json.load(open(sys.argv[1]))['receipt_hash'] == open(sys.argv[2]).read().strip()
" "$T/refusal.json" "$T/human-hash"
check "the receipt lists every candidate with the hash it presented" python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['receipt']
assert [(c['adapter'], c['profile_hash']) for c in r['candidates']] == \
    [('zz_plain', sys.argv[2]), ('zz_seer', sys.argv[3])], r
" "$T/refusal.json" "$H_PLAIN" "$H_SEER"
# the same refusal again: the same identifier
expect_exit 6 "$BERNSTEIN" --json route --candidates zz_plain,zz_seer \
	--requires capability:vision --requires capability:sandbox=microvm
expect_same_file "$T/refusal.json" "$T/stdout" "a refusal is reproduced byte for byte"

# ---- without --audit: nothing written, no key needed ----
check "no audit directory after routing without --audit" test ! -e "$A"
check "no key created" test ! -e "$KEY"
printf 'abc' >"$T/open.key"
chmod 0644 "$T/open.key"
expect_exit 0 BERNSTEIN_AUDIT_KEY_PATH="$T/open.key" "$BERNSTEIN" route --candidates zz_seer \
	--requires capability:vision
expect_exit 6 BERNSTEIN_AUDIT_KEY_PATH="$T/open.key" "$BERNSTEIN" route --candidates zz_plain \
	--requires capability:vision
check "still no audit directory" test ! -e "$A"

# ---- --audit: a selection record ----
expect_exit 0 "$BERNSTEIN" route --audit --run-id run-7 --candidates zz_plain,zz_seer \
	--requires capability:vision
expect_stdout_contains "recorded: adapter.capability_selection (audit record 1)"
check "the key was created on first use" test -f "$KEY"
expect_exit 0 "$BERNSTEIN" audit show --limit 0 --json
check "exactly one selection record" python3 -c "
import json, sys
rs = json.load(open(sys.argv[1]))['records']
assert len(rs) == 1, rs
r = rs[0]
assert r['event_type'] == 'adapter.capability_selection', r
assert (r['actor'], r['resource_type'], r['resource_id']) == ('bernstein', 'run', 'run-7'), r
d = r['details']
assert sorted(d) == ['adapter', 'profile_hash', 'requirements'], d
assert d['adapter'] == 'zz_seer' and d['profile_hash'] == sys.argv[2], d
assert d['requirements']['vision'] is True, d
" "$T/stdout" "$H_SEER"
expect_exit 0 "$BERNSTEIN" audit verify
expect_stdout_contains "audit chain intact: 1 record in 1 file, end matches state"
expect_exit 0 python3 "$PY" verify "$A" --key-file "$KEY"
expect_stdout_contains "1 records, 0 problems"

# ---- --audit: a refusal record, appended before the exit ----
expect_exit 6 "$BERNSTEIN" --json route --audit --run-id run-8 --candidates zz_plain,zz_seer \
	--requires capability:vision --requires capability:sandbox=microvm
check "the same receipt with or without --audit" python3 -c "
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a['receipt_hash'] == b['receipt_hash'] and a['receipt'] == b['receipt']
assert b['audit']['event_type'] == 'adapter.capability_refusal' and b['audit']['count'] == 2, b
" "$T/refusal.json" "$T/stdout"
RH=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['receipt_hash'])" "$T/stdout")
check "python3 rebuilds the receipt hash from the refusal record" \
	python3 "$T/receipt.py" record "$RH" "$A"/*.jsonl
expect_exit 0 "$BERNSTEIN" audit show --limit 0 --event-type adapter.capability_refusal
expect_lines stdout 1 "exactly one refusal record"
expect_stdout_contains "adapter.capability_refusal  bernstein  run/run-8"
expect_exit 0 "$BERNSTEIN" audit verify
expect_stdout_contains "audit chain intact: 2 records in 1 file, end matches state"
expect_exit 0 python3 "$PY" verify "$A" --key-file "$KEY"
expect_stdout_contains "2 records, 0 problems"

# an adapter without a profile, named explicitly: chosen, nothing anchored
expect_exit 0 "$BERNSTEIN" route --audit --candidates clm
expect_stdout_contains "profile_hash: none (no capability profile: nothing to anchor)"
check "no record for an adapter without a profile" \
	sh -c "cat '$A'/*.jsonl | wc -l | grep -qx 2"
# ... and it cannot satisfy a requirement
expect_exit 6 "$BERNSTEIN" route --candidates clm --requires capability:tool_use
expect_stdout_contains "clm  (no profile)  unmet: tool_use"

# a key open to others refuses --audit (exit 4), and nothing is appended
expect_exit 4 BERNSTEIN_AUDIT_KEY_PATH="$T/open.key" "$BERNSTEIN" route --audit --candidates zz_seer
check "nothing appended with a refused key" sh -c "cat '$A'/*.jsonl | wc -l | grep -qx 2"

# ---- errors ----
expect_exit 3 "$BERNSTEIN" route --requires capability:visoin
expect_stderr_contains "capability requirement 'capability:visoin': unknown axis 'visoin' (accepted: "
expect_exit 3 "$BERNSTEIN" route --requires capability:vision=yes
expect_stderr_contains "'vision' is a boolean axis and takes no value"
expect_exit 3 "$BERNSTEIN" route --requires capability:sandbox=vm
expect_stderr_contains "unknown sandbox tier 'vm' (accepted: none, process, container, microvm)"
expect_exit 3 "$BERNSTEIN" route --requires capability:max_parallel_workers=four
expect_stderr_contains "max_parallel_workers needs an integer from 1 to 4096, not 'four'"
expect_exit 3 "$BERNSTEIN" route --requires capability:sandbox=process --requires capability:sandbox=container
expect_stderr_contains "conflicts with 'sandbox=process' required before"
expect_exit 3 "$BERNSTEIN" --json route --requires capability:sandbox
check "--json validation error is a JSON object on stderr" python3 -c "
import json, sys
e = json.load(open(sys.argv[1]))['error']
assert e['exit_code'] == 3 and 'needs a tier' in e['message'], e
" "$T/stderr"
expect_exit 2 "$BERNSTEIN" route --candidates zz_plain,nosuch
expect_stderr_contains "unknown adapter 'nosuch' in --candidates"
expect_exit 2 "$BERNSTEIN" route --candidates zz_plain,
expect_exit 2 "$BERNSTEIN" route extra
expect_exit 0 "$BERNSTEIN" route --requires python --candidates zz_plain
expect_stderr_contains "'python' is not a capability: requirement (skill addressing), ignoring"
check "still exactly two records after the errors" sh -c "cat '$A'/*.jsonl | wc -l | grep -qx 2"

test_done
