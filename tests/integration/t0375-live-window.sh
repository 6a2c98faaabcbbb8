#!/bin/sh
# The live table of a run on a terminal is a window, not a row per task
# (issue #24): the tasks at work, then the last ended, at most the
# terminal's height less five rows; a line of counts by state (from
# state.db) says where all of them stand, and the TOTAL footer still sums
# the usage of every task, shown or not. 30 mock tasks on a 12-line
# terminal (script(1) gives the run one; stty sets its height): no frame
# holds more than 7 task rows, and the last one counts all 30.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0375 live table: a window and counts, not a row per task"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nparallel: 4\nsandbox: none\n' >"$W/bernstein.yaml"
{
	echo "name: many"
	echo "tasks:"
	i=1
	while [ "$i" -le 30 ]; do
		echo "  - {title: job$i, prompt: usage 10 0}"
		i=$((i + 1))
	done
} >"$W/plan.yaml"
git_q add -A && git_q commit -q -m base

run "$KEY" script -qec "stty rows 12 cols 160; '$BERNSTEIN' run plan.yaml" /dev/null
check "on a terminal the run exits 0" test "$RC" -eq 0
check "the frames: at most 7 task rows each, the last counts all 30 and sums their tokens" \
	python3 - "$T/stdout" <<'PY'
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace").replace("\r", "")
frames = raw.split("\x1b[J")[1:]
assert frames, "no frame drawn"
for f in frames:
    lines = f.split("\n")
    rows = [l for l in lines if re.match(r"job\d+ ", l)]
    assert len(rows) <= 7, (len(rows), f)
last = frames[-1].split("\n")
assert last[0] == "tasks: 30 no_changes (30)", last[0]
assert last[1].startswith("TASK "), last[1]
rows = [l for l in last if re.match(r"job\d+ ", l)]
assert len(rows) == 7 and all(" no_changes " in l for l in rows), rows
# newest first: the last rows ended last; none twice
assert len(set(l.split()[0] for l in rows)) == 7, rows
total = [l for l in last if l.startswith("TOTAL")]
assert total and re.match(r"TOTAL +300 ", total[0]), total
PY

test_done
