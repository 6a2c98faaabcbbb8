#!/bin/sh
# Issue #14: a write_file of 1 to 16 MiB must work or be refused with a tool
# error, never end the run. Each case below ended the run before, at a
# different cap: 2 MiB over the Responses stream (the SSE line cap, 1 MiB: the
# .done and completed events carry all the arguments), 8 MiB over a Chat
# stream (one call's arguments, 4 MiB), 15.9 MiB in a plain Chat reply (the
# body, 16 MiB). Past write_file's own limit (16 MiB) the run goes on with a
# tool error. (Arguments past the 32 MiB cap on one call, and stream events
# past the SSE cap, are refused the same way: tests/unit/test-runner-wire.c,
# test_args_over_cap.)
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0065 runner large writes"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

# big MODE MIB: the model writes big.txt of MIB MiB, then says done
big()
{
	"$PY" -c 'import json, sys
n = int(float(sys.argv[2]) * 1024 * 1024)
line = "0123456789abcdef" * 8 + "\n"
big = (line * (n // len(line) + 1))[:n]
json.dump([{"tool_calls": [{"id": "big", "name": "write_file", "arguments": {"path": "big.txt", "content": big}}],
            "chunk_size": 1 << 20},
           {"text": "done"}], open(sys.argv[1], "w"))' "$T/big.json" "$2"
	fake_start "$T/big.json"
	case $1 in
	chat-stream) m='"base_url": "@URL@"' ;;
	chat-plain) m='"base_url": "@URL@", "stream": false' ;;
	responses-stream) m='"stream": true' ;;
	esac
	write_manifest "$T/m.json" "{\"session_id\": \"big\", \"prompt\": \"p\",
	 \"workdir\": \"@WORK@\", \"model\": \"m\", \"tool_source\": \"builtin\", $m}"
	rm -f "$T/work/big.txt"
	expect_exit 0 BERNSTEIN_TEST_OPENAI_DEFAULT_URL="$FAKE_URL" "$BERNSTEIN" runner \
		--manifest "$T/m.json" --max-retries 0
	jcheck "$1 $2 MiB: the run completes" 'ev("completion") and not ev("error")'
}

for c in "responses-stream 2" "chat-stream 8" "chat-plain 15.9"; do
	# shellcheck disable=SC2086 # two words on purpose
	big $c
	check "$c MiB: the file was written whole" \
		test "$(wc -c <"$T/work/big.txt")" -eq "$("$PY" -c "print(int(float('${c#* }') * 1048576))")"
	jcheck "$c MiB: the tool said so" \
		'ev("tool_result")[0]["status"] == "ok" and ev("tool_result")[0]["bytes"] > 1048576'
done

big chat-stream 17
check "17 MiB: nothing was written" test ! -e "$T/work/big.txt"
jcheck "17 MiB: a tool error says why" \
	'ev("tool_result")[0]["status"] == "error" and "larger than 16777216 bytes" in ev("tool_result")[0]["error"]'
jcheck "17 MiB: the model was told" \
	'any("larger than 16777216" in m.get("content", "") for m in reqs[1]["body"]["messages"] if m["role"] == "tool")'

test_done
