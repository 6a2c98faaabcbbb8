#!/bin/sh
# Issue #14: write_file replaces a file atomically (a temporary file in the
# same directory renamed over it), so a write that fails in the middle (here:
# the workdir is a 1 MiB tmpfs and the model writes 2 MiB) leaves the old
# content intact and no temporary file behind; an existing file keeps its
# mode, a symlink to a file inside stays a symlink. read_file refuses a file
# with more than one hard link (its other name may lie outside the workdir).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0063 runner write_file is atomic, read_file follows no hard link out"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

mkdir -p "$T/outside"
echo "TOP-SECRET-OUTSIDE" >"$T/outside/secret.txt"
ln "$T/outside/secret.txt" "$T/work/hard.txt"
printf '#!/bin/sh\necho old\n' >"$T/work/tool.sh"
chmod 0750 "$T/work/tool.sh"
echo target >"$T/work/target.txt"
ln -s target.txt "$T/work/link.txt"

# ---- hard links, modes, symlinks ----
cat >"$T/s.json" <<'EOF'
[{"tool_calls": [
   {"id": "r1", "name": "read_file", "arguments": {"path": "hard.txt"}},
   {"id": "w1", "name": "write_file", "arguments": {"path": "hard.txt", "content": "pwned"}},
   {"id": "w2", "name": "write_file", "arguments": {"path": "tool.sh", "content": "#!/bin/sh\necho new\n"}},
   {"id": "w3", "name": "write_file", "arguments": {"path": "link.txt", "content": "via link\n"}}]},
 {"text": "done"}]
EOF
fake_start "$T/s.json"
write_manifest "$T/m.json" '{"session_id": "w1", "prompt": "p", "workdir": "@WORK@",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin"}'
expect_exit 0 "$BERNSTEIN" runner --manifest "$T/m.json"
jcheck "read_file of a hard link is refused" \
	'ev("tool_result")[0]["status"] == "error" and "more than one hard link" in ev("tool_result")[0]["error"]'
jcheck "nothing from outside reached the model" \
	'all("TOP-SECRET" not in json.dumps(r["body"]) for r in reqs)'
check "the hard-linked file outside is untouched" grep -qx TOP-SECRET-OUTSIDE "$T/outside/secret.txt"
check "a rewritten file has the new content" grep -qx "echo new" "$T/work/tool.sh"
check "a rewritten file keeps its mode" test "$(stat -c %a "$T/work/tool.sh")" = 750
check "a write through a symlink replaces its target" grep -qx "via link" "$T/work/target.txt"
check "the symlink stays a symlink" test -L "$T/work/link.txt"

# ---- a write that fails in the middle: no space left ----
run unshare -rm /bin/true
if [ "$RC" -ne 0 ]; then
	skip "a failed write on a full tmpfs" "no mount namespace here (unshare -rm)"
	test_done
fi
"$PY" -c 'import json, sys
big = ("0123456789abcdef" * 64 + "\n") * 2048  # 2 MiB
json.dump([{"tool_calls": [{"id": "big", "name": "write_file", "arguments": {"path": "keep.txt", "content": big}}]},
           {"tool_calls": [{"id": "small", "name": "write_file", "arguments": {"path": "keep2.txt", "content": "ok\n"}}]},
           {"text": "done"}], open(sys.argv[1], "w"))' "$T/big.json"
fake_start "$T/big.json"
mkdir -p "$T/work/small"
write_manifest "$T/m.json" '{"session_id": "w2", "prompt": "p", "workdir": "@WORK@/small",
 "model": "m", "base_url": "@URL@", "tool_source": "builtin", "stream": false}'
# the tmpfs exists only in the namespace: look at it from there
run unshare -rm sh -c '
	mount -t tmpfs -o size=1m tmpfs "$1/work/small" || exit 99
	i=0; while [ $i -lt 2000 ]; do echo "original line $i"; i=$((i + 1)); done >"$1/work/small/keep.txt"
	cp "$1/work/small/keep.txt" "$1/keep.orig"
	"$2" runner --manifest "$1/m.json" >"$1/run.out" 2>"$1/run.err"
	echo $? >"$1/run.rc"
	cp "$1/work/small/keep.txt" "$1/keep.after"
	ls -a "$1/work/small" >"$1/ls.after"' sh "$T" "$BERNSTEIN"
check "the namespace and the tmpfs were set up" test "$RC" -eq 0
cp "$T/run.out" "$T/stdout"
check "the runner finished the run" test "$(cat "$T/run.rc")" -eq 0
jcheck "the failed write is a tool error that says why" \
	'ev("tool_result")[0]["status"] == "error" and "No space left" in ev("tool_result")[0]["error"] and ev("tool_result")[1]["status"] == "ok"'
check "the original content survived intact" cmp -s "$T/keep.orig" "$T/keep.after"
check "no temporary file was left behind" test "$(grep -c bernstein-write "$T/ls.after")" -eq 0
check "the next write worked" grep -qx keep2.txt "$T/ls.after"
test_done
