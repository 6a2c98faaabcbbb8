#!/bin/sh
# Issue #14, classes 11, 12 and 13: a FIFO, a device, a directory or nothing
# in place of any file bernstein reads. Each loader (plan, bernstein.yaml,
# profile, catalogue override, contract, manifest, transcript, evidence,
# prompt file, audit input, audit key, state.db and its -wal, an agent's log,
# an artifact, a session.json planted under .bernstein/runs) refuses it at
# once, naming the file and what it is, with the documented "cannot read"
# exit code (4; the runner keeps its own 2) instead of hanging forever on
# the FIFO or reading /dev/zero until memory runs out. Also: a detached HEAD
# is 4 as docs/runs.md says, and an empty contract override is refused (3)
# instead of switching drift checking off.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0147 hostile files and exit codes"

# A hang is what the old code did: fail fast instead of in a minute.
TEST_CMD_TIMEOUT=${TEST_CMD_TIMEOUT_HOSTILE:-15}
W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"

mkfifo "$T/fifo.yaml"
ln -s /dev/zero "$T/zero.yaml"
mkdir "$T/dir.yaml"

# each_bad CODE WHAT CMD...: CMD with @F@ replaced by each hostile file in
# turn (a FIFO, a symlink to /dev/zero, a directory, a missing file; KINDS
# overrides the list) exits CODE, and the error says what the file is.
KINDS="fifo zero dir missing"
each_bad()
{
	_code=$1 _what=$2
	shift 2
	for _kind in $KINDS; do
		_f=$T/$_kind.yaml
		_n=$#
		_i=0
		for _a in "$@"; do
			[ "$_a" = @F@ ] && _a=$_f
			set -- "$@" "$_a"
			_i=$((_i + 1))
		done
		shift "$_n"
		run "$@"
		if [ "$RC" -eq "$_code" ]; then
			ok "$_what: $_kind file: exit $_code"
		else
			not_ok "$_what: $_kind file: exit $_code"
			diag "got exit $RC"
			_diag_file stderr "$T/stderr"
		fi
		case $_kind in
		fifo) _says="is a FIFO (not a regular file)" ;;
		zero) _says="is a character device (not a regular file)" ;;
		dir) _says="is a directory" ;;
		missing) _says="No such file or directory\|not found\|does not exist" ;;
		esac
		if grep -q -e "$_says" "$T/stderr" "$T/stdout"; then
			ok "$_what: $_kind file: the error says so"
		else
			not_ok "$_what: $_kind file: the error says so"
			_diag_file stderr "$T/stderr"
			_diag_file stdout "$T/stdout"
		fi
		# back to the template for the next kind
		_n=$#
		for _a in "$@"; do
			[ "$_a" = "$_f" ] && _a=@F@
			set -- "$@" "$_a"
		done
		shift "$_n"
	done
}

# ---- files named on the command line ----
each_bad 4 "plan validate" "$BERNSTEIN" plan validate @F@
each_bad 4 "plan show" "$BERNSTEIN" plan show @F@
each_bad 4 "config validate" "$BERNSTEIN" config validate @F@
each_bad 4 "profiles validate" "$BERNSTEIN" profiles validate @F@
each_bad 4 "onboard replay" "$BERNSTEIN" onboard replay @F@
each_bad 4 "onboard derive" "$BERNSTEIN" onboard derive @F@ --profile mock --smoke-prompt p \
	--smoke-model m
each_bad 4 "onboard record" "$BERNSTEIN" onboard record @F@ --smoke-prompt p --smoke-model m
each_bad 4 "spawn --prompt-file" "$BERNSTEIN" spawn mock --prompt-file @F@
each_bad 4 "audit append --from" "$KEY" "$BERNSTEIN" audit append --from @F@
# (a missing key is created by the first record: not a hostile file)
KINDS="fifo zero dir" each_bad 4 "audit key" "$BERNSTEIN" audit append --event-type x \
	--key-file @F@
each_bad 2 "runner --manifest" "$BERNSTEIN" runner --manifest @F@
check "nothing was appended or created by the refused reads" test ! -e "$W/.bernstein"

# stdin is a pipe, legitimately: capped, not spun on
run sh -c 'head -c 3000000 /dev/zero | "$0" audit append --from -' "$BERNSTEIN"
check "audit append --from - of endless zeros: exit 2" test "$RC" -eq 2
expect_stderr_contains "<stdin>:1: line longer than 1048576 bytes"

# ---- files in the catalogue's override directories ----
mkdir -p "$T/config/bernstein/catalog/profiles" "$T/config/bernstein/catalog/contracts"
mkfifo "$T/config/bernstein/catalog/profiles/claude.yaml"
expect_exit 4 "$BERNSTEIN" adapters list
expect_stderr_contains "profiles/claude.yaml: cannot read file: is a FIFO (not a regular file)"
rm "$T/config/bernstein/catalog/profiles/claude.yaml"
mkfifo "$T/config/bernstein/catalog/contracts/claude.yaml"
expect_exit 4 "$BERNSTEIN" adapters contract-check claude
expect_stderr_contains "contracts/claude.yaml: cannot read contract: is a FIFO (not a regular file)"
expect_exit 4 "$BERNSTEIN" adapters list
rm "$T/config/bernstein/catalog/contracts/claude.yaml"

# class 13: an empty contract override would switch drift checking off
: >"$T/config/bernstein/catalog/contracts/claude.yaml"
expect_exit 3 "$BERNSTEIN" adapters contract-check claude
expect_stderr_contains "pins no required_flags or required_subcommands"
expect_exit 3 "$BERNSTEIN" adapters check claude --no-probe
printf 'binary: claude\nrequired_flags: []\nrequired_subcommands: []\n' \
	>"$T/config/bernstein/catalog/contracts/claude.yaml"
expect_exit 3 "$BERNSTEIN" adapters contract-check claude
rm -r "$T/config/bernstein"

# ---- files of a repository ----
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }
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

# bernstein.yaml
mv "$W/bernstein.yaml" "$T/bernstein.yaml"
mkfifo "$W/bernstein.yaml"
expect_exit 4 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "bernstein.yaml: cannot read file: is a FIFO (not a regular file)"
expect_exit 4 "$BERNSTEIN" config validate
rm "$W/bernstein.yaml"
mv "$T/bernstein.yaml" "$W/bernstein.yaml"

# state.db and its -wal
mkdir -p "$W/.bernstein"
mkfifo "$W/.bernstein/state.db"
expect_exit 4 "$BERNSTEIN" status
expect_stderr_contains "state.db: cannot open state database: is a FIFO (not a regular file)"
expect_exit 4 "$KEY" "$BERNSTEIN" run plan.yaml
rm "$W/.bernstein/state.db"
expect_exit 0 "$KEY" "$BERNSTEIN" run plan.yaml
mkfifo "$W/.bernstein/state.db-wal"
expect_exit 4 "$BERNSTEIN" status
expect_stderr_contains "state.db-wal: cannot open state database: is a FIFO"
rm "$W/.bernstein/state.db-wal"

# the audit key
mv "$T/audit.key" "$T/audit.key.real"
mkfifo "$T/audit.key"
expect_exit 4 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "audit.key: audit key is not a regular file: is a FIFO"
expect_exit 4 "$KEY" "$BERNSTEIN" audit verify
rm "$T/audit.key"
mv "$T/audit.key.real" "$T/audit.key"

# an agent's log, replaced by a FIFO: bernstein logs does not hang
LOG=$(ls "$W"/.bernstein/runs/*/*/1/agent.log | head -n 1)
check "the task has a log" test -f "$LOG"
rm "$LOG"
mkfifo "$LOG"
expect_exit 4 "$BERNSTEIN" logs one --raw
expect_stderr_contains "agent.log': is a FIFO (not a regular file)"
# ... and its events (what logs shows by default)
EVL=$(dirname "$LOG")/events.jsonl
rm -f "$EVL"
mkfifo "$EVL"
expect_exit 4 "$BERNSTEIN" logs one
expect_stderr_contains "events.jsonl': is a FIFO (not a regular file)"

# a session.json planted under .bernstein/runs: spawn --resume looks past it
mkdir -p "$W/.bernstein/runs/planted/mock-0"
mkfifo "$W/.bernstein/runs/planted/mock-0/session.json"
run "$BERNSTEIN" spawn -C "$W" mock --resume 01234567-89ab-4cde-8f01-234567890abc "say hi"
check "spawn --resume with a planted session.json FIFO does not hang" test "$RC" -ne 124
rm -r "$W/.bernstein/runs/planted"

# an artifact the agent made a FIFO: the task fails, the run goes on
mkdir -p "$W/.bernstein/catalog/profiles"
shell_agent "$W"
cat >"$W/fifo-artifact.yaml" <<'EOF'
name: fifo-artifact
tasks:
  - title: fifo
    adapter: shell
    artifact: out.txt
    prompt: "mkfifo out.txt"
EOF
commit_all fifo-artifact
expect_exit 1 "$KEY" "$BERNSTEIN" run fifo-artifact.yaml
expect_stdout_contains "is a FIFO (not a regular file)" "the artifact is refused, named"

# ---- class 12: a detached HEAD is an environment problem (docs/runs.md) ----
git -C "$W" checkout -q --detach HEAD
expect_exit 4 "$KEY" "$BERNSTEIN" run plan.yaml
expect_stderr_contains "HEAD is detached"
git -C "$W" checkout -q main

test_done
