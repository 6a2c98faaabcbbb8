#!/bin/sh
# Issue #14: the runner exits non-zero when it cannot save its transcript (a
# run that cannot be resumed must not look successful): at the start, before
# any request, and in the middle of a run. A file size limit (RLIMIT_FSIZE)
# makes a write fail with EFBIG instead of killing the runner: write_file
# reports it as a tool error and the old content survives.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0064 runner transcript that cannot be saved"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

printf '%s\n' '[{"text": "done"}]' >"$T/s.json"

# ---- the session directory is not a directory: nothing is asked ----
fake_start "$T/s.json"
: >"$T/not-a-dir"
write_manifest "$T/m.json" '{"session_id": "t1", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
expect_exit 1 "$BERNSTEIN" runner --manifest "$T/m.json" --session-dir "$T/not-a-dir"
jcheck "an error event of kind runtime names the transcript" \
	'events[-1]["type"] == "error" and events[-1]["kind"] == "runtime" and "cannot save the transcript" in events[-1]["message"] and "not-a-dir" in events[-1]["message"]'
jcheck "no completion" 'not ev("completion")'
check "no request reached the model" test "$(nreq)" -eq 0

# ---- a file size limit: the write and then the transcript fail ----
if ! command -v prlimit >/dev/null 2>&1; then
	skip "RLIMIT_FSIZE" "no prlimit"
	test_done
fi
i=0
while [ $i -lt 1000 ]; do
	echo "original line $i"
	i=$((i + 1))
done >"$T/work/keep.txt"
cp "$T/work/keep.txt" "$T/keep.orig"
"$PY" -c 'import json, sys
big = "x" * 299 + "\n"
json.dump([{"tool_calls": [{"id": "big", "name": "write_file", "arguments": {"path": "keep.txt", "content": big * 1000}}]},
           {"text": "done"}], open(sys.argv[1], "w"))' "$T/big.json"
fake_start "$T/big.json"
write_manifest "$T/m.json" '{"session_id": "t2", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "stream": false}'
expect_exit 1 prlimit --fsize=200000 "$BERNSTEIN" runner --manifest "$T/m.json" \
	--session-dir "$T"
jcheck "the write over the limit is a tool error" \
	'ev("tool_result")[0]["status"] == "error" and "too large" in ev("tool_result")[0]["error"]'
check "the old content survived intact" cmp -s "$T/keep.orig" "$T/work/keep.txt"
check "no temporary file was left behind" test -z "$(ls -A "$T/work" | grep bernstein-write)"
jcheck "then the transcript could not be saved: runtime error, no completion" \
	'events[-1]["kind"] == "runtime" and "cannot save the transcript" in events[-1]["message"] and "File too large" in events[-1]["message"] and not ev("completion") and kinds[-2] == "usage"'
test_done
