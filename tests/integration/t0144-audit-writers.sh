#!/bin/sh
# Issue #14, class 8: no writer buries the evidence of a tampered audit
# chain. Every writer (audit append, route --audit, run, resume) checks the
# chain's end before it appends and refuses with exit 5 when `audit verify`
# would report it broken there: a record changed, duplicated or deleted in
# the newest file, a record appended without the key, a truncated tail (seen
# through state.json, or through the hot state in .lock before state.json was
# written), a FIFO among the chain files or in place of state.json. Nothing
# is written then (the chain, state.json and .lock stay byte-identical; run
# and resume leave state.db untouched and make no worktree). An agent that
# removes the run's last records while it runs stops the run (exit 5), so
# state.json never comes to agree with the damage. The remnants of a crash
# (an unterminated last line) are let through, and `demo` does not call a
# failed run verified.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0144 audit writers refuse a broken chain"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
A=$W/.bernstein/audit
PY="$SRCDIR/tests/interop/audit_chain.py"

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }
day() { ls "$A"/*.jsonl | tail -n 1; }
# every file of the audit directory and its checksum (hidden ones too)
sums() { (cd "$A" && find . -type f | sort | xargs sha256sum) >"$1"; }

i=0
while [ $i -lt 5 ]; do
	echo '{"event_type": "t.rec", "details": {"i": '$i'}}'
	i=$((i + 1))
done >"$T/in.jsonl"
expect_exit 0 "$KEY" "$BERNSTEIN" audit append --from "$T/in.jsonl"
expect_exit 0 "$KEY" "$BERNSTEIN" audit append --event-type t.single
cp -a "$A" "$T/clean"
restore() { rm -rf "$A" && cp -a "$T/clean" "$A"; }

# refused CODE TEXT DESC: an append over the chain as it is now exits CODE
# with TEXT on stderr, writes nothing, and verify reports the chain broken.
refused()
{
	sums "$T/before"
	expect_exit "$1" "$KEY" "$BERNSTEIN" audit append --event-type t.after
	expect_stderr_contains "$2" "$3: the refusal says why"
	sums "$T/after"
	expect_same_file "$T/before" "$T/after" "$3: nothing was written"
	expect_exit 1 "$KEY" "$BERNSTEIN" audit verify
}

# ---- audit append ----
restore
sed -i '3s/"i": 2/"i": 7/' "$(day)"
refused 5 "does not verify with this key, though the records before it do" "a record changed"

restore
sed -i '3p' "$(day)"
refused 5 "prev_hmac mismatch" "a record duplicated"

restore
sed -i '3d' "$(day)"
refused 5 "prev_hmac mismatch" "a record deleted"

restore
python3 - "$(day)" <<'EOF'
import hashlib, hmac, json, sys
path = sys.argv[1]
last = json.loads(open(path).read().splitlines()[-1])
rec = {k: v for k, v in last.items() if k != "hmac"}
rec.update(prev_hmac=last["hmac"], event_type="forged", actor="agent")
rec["hmac"] = hmac.new(b"not-the-key", (rec["prev_hmac"] + json.dumps(rec, sort_keys=True)).encode(),
                       hashlib.sha256).hexdigest()
open(path, "a").write(json.dumps(rec, sort_keys=True) + "\n")
EOF
refused 5 "added or changed without the key" "a record appended without the key"

restore
sed -i '$d' "$(day)"
refused 5 "state.json: the audit chain has 5 records but state says 6" "a truncated tail"

# truncated and state.json removed: the hot state left in .lock (this boot)
restore
sed -i '$d' "$(day)"
rm "$A/state.json"
refused 5 ".lock: the audit chain has 5 records but its last writer left 6" \
	"a truncated tail without state.json"
expect_stdout_contains "truncated tail (.lock says 6 records"

restore
printf '{"oops\n' >>"$(day)"
refused 5 "not a record (invalid JSON or not an object)" "a line that is no record at the end"

restore
mkfifo "$A/2999-01-01.jsonl"
refused 5 "2999-01-01.jsonl: is a FIFO (not a regular file); refusing to append" \
	"a FIFO among the chain files"
expect_stdout_contains "2999-01-01.jsonl: is a FIFO (not a regular file)"

restore
ln -s "$(day)" "$A/2999-01-01.jsonl"
refused 5 "is a symbolic link (not a regular file)" "a symlink among the chain files"

restore
rm "$A/state.json"
mkfifo "$A/state.json"
refused 5 "state.json: cannot read audit state: is a FIFO" "a FIFO as state.json"

# another key: a key problem (4), not a broken chain
restore
printf 'another-key' >"$T/other.key"
chmod 600 "$T/other.key"
expect_exit 4 BERNSTEIN_AUDIT_KEY_PATH="$T/other.key" "$BERNSTEIN" audit append --event-type x
expect_stderr_contains "nor does any before it"

# a crash's torn last line is let through: sealed, the chain goes on
restore
printf '{"actor": "half' >>"$(day)"
expect_exit 0 "$KEY" "$BERNSTEIN" audit append --event-type t.after-crash
expect_exit 0 "$KEY" "$BERNSTEIN" audit append --event-type t.later
expect_exit 1 "$KEY" "$BERNSTEIN" audit verify
expect_lines stdout 2 "verify: the torn line is the one problem"
expect_stdout_contains ":7: invalid JSON - "

# ---- route --audit ----
restore
sed -i '2d' "$(day)"
sums "$T/before"
expect_exit 5 "$KEY" "$BERNSTEIN" route --audit --candidates mock
expect_stderr_contains "refusing to append"
sums "$T/after"
expect_same_file "$T/before" "$T/after" "route --audit: nothing was written"

# ---- run and resume ----
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'adapter: mock\nretry_backoff: 0\n' >"$W/bernstein.yaml"
cat >"$W/plan.yaml" <<'EOF'
name: one
tasks:
  - title: one
    prompt: write one.txt one
EOF
commit_all base

# a broken chain before the first run: no state.db, no worktree
restore
sed -i '3d' "$(day)"
sums "$T/before"
expect_exit 5 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "prev_hmac mismatch"
check "run: no state.db was created" test ! -e "$W/.bernstein/state.db"
check "run: no worktree was made" test ! -e "$W/.bernstein/worktrees"
sums "$T/after"
expect_same_file "$T/before" "$T/after" "run: nothing was appended"

# after a run: state.db is left as it is
restore
expect_exit 0 "$KEY" "$BERNSTEIN" run plan.yaml
cp "$W/.bernstein/state.db" "$T/state.before"
sed -i '$d' "$(day)"
expect_exit 5 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "truncated tail"
expect_same_file "$T/state.before" "$W/.bernstein/state.db" "run: state.db untouched"
check "run: no new worktree" sh -c "[ -z \"\$(ls -A '$W/.bernstein/worktrees' 2>/dev/null)\" ]"

# resume of a run bernstein was killed in
restore
rm -rf "$W/.bernstein/state.db" "$W/.bernstein/state.db-wal" "$W/.bernstein/state.db-shm" \
	"$W/.bernstein/runs" "$W/.bernstein/worktrees"
cat >"$W/slow.yaml" <<'EOF'
name: slow
tasks:
  - title: slow
    prompt: |
      sleep 60
      write slow.txt slow
EOF
commit_all slow
(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
	XDG_CONFIG_HOME="$T/config" "$KEY" \
	${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} \
	${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} \
	${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} \
	"$BERNSTEIN" run slow.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
i=0
while [ $i -lt 600 ]; do
	run "$BERNSTEIN" status --json
	grep -q '"state": "running"' "$T/stdout" && break
	sleep 0.1
	i=$((i + 1))
done
check "the slow task runs" grep -q '"state": "running"' "$T/stdout"
kill -9 "$BG"
wait "$BG" 2>/dev/null
sed -i '2d' "$(day)"
cp "$W/.bernstein/state.db" "$T/state.before"
expect_exit 5 "$KEY" "$BERNSTEIN" resume
expect_stderr_contains "refusing to append"
expect_same_file "$T/state.before" "$W/.bernstein/state.db" "resume: state.db untouched"
expect_exit 0 "$KEY" "$BERNSTEIN" resume --dry-run
expect_stdout_contains "would resume run" "the run is still there to resume"

# ---- an agent that removes the run's last records while it runs ----
restore
rm -rf "$W/.bernstein/state.db" "$W/.bernstein/state.db-wal" "$W/.bernstein/state.db-shm" \
	"$W/.bernstein/runs" "$W/.bernstein/worktrees"
mkdir -p "$W/.bernstein/catalog/profiles"
shell_agent "$W"
cat >"$W/erase.yaml" <<EOF
name: erase
tasks:
  - title: erase
    adapter: shell
    prompt: "f=\$(ls $A/*.jsonl | tail -n 1); sed -i '\$d' \"\$f\"; echo erased > $T/erased"
EOF
commit_all erase
expect_exit 5 "$KEY" "$BERNSTEIN" run erase.yaml
expect_stderr_contains "truncated tail"
check "the agent did remove a record" test -f "$T/erased"
expect_exit 1 "$KEY" "$BERNSTEIN" audit verify
expect_stdout_contains "truncated tail" "verify still shows the removal"

# ---- demo: a failed run is not called verified ----
mkdir -p "$T/config/bernstein/catalog/profiles"
sed 's/^  prompt_positional: true$/  prompt_positional: true\n  extra_args: [--no-such-option]/' \
	"$SRCDIR/catalog/profiles/mock.yaml" >"$T/config/bernstein/catalog/profiles/mock.yaml"
check "the mock override passes a bad option" grep -q no-such-option \
	"$T/config/bernstein/catalog/profiles/mock.yaml"
expect_exit 1 "$BERNSTEIN" demo "$T/demo"
check "demo: 'verified' is not printed after a failure" sh -c "! grep -q verified '$T/stdout'"
expect_stderr_contains "the demo failed (exit 1)"
rm -rf "$T/config/bernstein" "$T/demo"

test_done
