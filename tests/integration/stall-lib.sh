# Shared by the crash tests t0107 and t0108 (source it after lib.sh's
# test_begin): kill -9 of bernstein inside a git step, then `bernstein
# resume`, and what must hold afterwards.
#
# How a git step is interrupted: a `git` wrapper first on PATH runs the real
# git with tests/helpers/git-stall.c preloaded when its arguments match the
# step, and the library stops git (or a git it started) at the point named:
# about to commit a lock file by its rename (the lock written, still there),
# to create a file of a checkout, to unlink a ref. The test then kills
# bernstein with SIGKILL (its git children die with it: parent-death
# signal) and the stopped git (a grandchild, which would have outlived it),
# which is exactly what a crash at that instant leaves.
#
# crash_at NAME REGEX POINT [SANDBOX]   one crash and its resume, checked
# bern ARGS..., bern_bg ARGS...         bernstein with the wrapper on PATH
# new_repo SANDBOX                       a fresh repository in $W
# $LANDLOCK                              yes when the kernel has Landlock

STALL_SO=$BUILDDIR/tests/git-stall.so
if [ ! -f "$STALL_SO" ]; then
	echo "1..0 # SKIP $STALL_SO was not built"
	exit 0
fi
REAL_GIT=$(command -v git)
KEY=$T/audit.key
BIN=$T/bin
mkdir -p "$BIN"

# The git of this test. stall.conf: line 1 an extended regex matched against
# git's arguments, line 2 the stall point (git-stall.c), line 3 optionally
# "fsize KB": then no stall, but git runs with that file size limit and
# SIGXFSZ ignored (a write past it fails with EFBIG, as on a full disk).
cat >"$BIN/git" <<EOF
#!/bin/sh
conf=$T/stall.conf
if [ -s "\$conf" ] && [ ! -e $T/stall.once ] && printf '%s\n' "\$*" |
	grep -Eq -- "\$(sed -n 1p "\$conf")"; then
	at=\$(sed -n 2p "\$conf")
	fsize=\$(sed -n 3p "\$conf")
	if [ -n "\$fsize" ]; then
		trap '' XFSZ
		ulimit -f "\${fsize#fsize }"
	else
		sig=$T/stall.sig once=$T/stall.once
		# a git confined to a clone cannot write here: inside its .git then
		if ! (: >>"$T/stall.probe") 2>/dev/null; then
			sig=.git/stall.sig once=.git/stall.once
		fi
		export LD_PRELOAD="$STALL_SO" GIT_STALL_AT="\$at" GIT_STALL_SIGNAL="\$sig" \
			GIT_STALL_ONCE="\$once"
	fi
fi
exec "$REAL_GIT" "\$@"
EOF
chmod +x "$BIN/git"

run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
LANDLOCK=$([ "$RC" -eq 0 ] && echo yes || echo no)

# bernstein, hermetic like lib.sh's run, with the wrapper first on PATH and
# killed after $TEST_CMD_TIMEOUT s; it replaces the calling (sub)shell, so
# call it in one: ( cd DIR && bern ... ). bern_bg: the same without the
# timeout, so that the subshell's pid is bernstein's (to kill).
bern_bg() { exec env -i PATH="$BIN:/usr/bin:/bin" HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
	XDG_CONFIG_HOME="$T/config" BERNSTEIN_AUDIT_KEY_PATH="$KEY" \
	${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} ${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} \
	${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} "$BERNSTEIN" "$@"; }
bern() { exec timeout -k 5 "$TEST_CMD_TIMEOUT" env -i PATH="$BIN:/usr/bin:/bin" HOME="$T/home" \
	LC_ALL=C.UTF-8 TZ=UTC XDG_CONFIG_HOME="$T/config" BERNSTEIN_AUDIT_KEY_PATH="$KEY" \
	${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} ${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} \
	${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS} "$BERNSTEIN" "$@"; }

# A repository in $W with the shell adapter (the prompt is a script) and a
# plan of four tasks: two that write files, one that changes nothing
# (no_changes: its empty branch is deleted), one after the first two.
# $1: sandbox (none|landlock).
new_repo()
{
	W=$T/repo-$N
	rm -rf "$W"
	mkdir -p "$W/.bernstein/catalog/profiles"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n*.log\n' >"$W/.gitignore"
	printf 'base\n' >"$W/base.txt"
	shell_agent "$W"
	printf 'adapter: shell\nparallel: 1\nretry_backoff: 0\nsandbox: %s\n' "$1" \
		>"$W/bernstein.yaml"
	cat >"$W/plan.yaml" <<'EOF'
name: crash
tasks:
  - title: alpha
    prompt: "echo alpha > a.txt; mkdir -p sub; echo alpha two > sub/a2.txt; echo changed > base.txt"
  - title: beta
    prompt: "echo beta > b.txt"
  - title: idle
    prompt: "true"
  - title: gamma
    depends_on: [alpha, beta]
    prompt: "cat a.txt b.txt > c.txt"
EOF
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

# Wait (at most 30 s) for the stalled git's pid in $1; 0 when it came.
wait_signal()
{
	i=0
	while [ $i -lt 300 ]; do
		for f in "$T/stall.sig" "$W"/.bernstein/worktrees/*/.git/stall.sig; do
			if [ -s "$f" ]; then
				SIG=$f
				return 0
			fi
		done
		kill -0 "$BG" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# Each task done (idle: no_changes) and merged exactly once, the files
# there, the checkout clean, no lock file, no worktree, no empty branch.
check_finished()
{
	run "$BERNSTEIN" -C "$W" status --json
	check "$1: every task done, the idle one no_changes" python3 -c '
import json, sys
states = {t["title"]: t["state"] for t in json.load(open(sys.argv[1]))["tasks"]}
want = {"alpha": "done", "beta": "done", "idle": "no_changes", "gamma": "done"}
sys.exit(0 if states == want else "%s" % states)' "$T/stdout"
	for t in alpha beta gamma; do
		check "$1: $t merged exactly once" sh -c \
			"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/$t-') -eq 1 ]"
	done
	check "$1: the merged files" sh -c "grep -q 'alpha two' '$W/sub/a2.txt' &&
		grep -q changed '$W/base.txt' && grep -q beta '$W/c.txt'"
	check "$1: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
	check "$1: no lock file is left" sh -c "[ -z \"\$(find '$W/.git' -name '*.lock')\" ]"
	check "$1: no worktree is left" sh -c \
		"[ \$(git -C '$W' worktree list --porcelain | grep -c '^worktree ') -eq 1 ] &&
		[ -z \"\$(ls -A '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
	check "$1: no empty branch is left" sh -c \
		"! git -C '$W' for-each-ref refs/heads/bernstein/ | grep -q /idle-"
}

# One crash: the run stopped inside the step (regex $2, stall point $3),
# bernstein and the stalled git killed, then resume. $1 names it; $4 is the
# sandbox setting.
crash_at()
{
	N=$((N + 1))
	case ${CRASH_ONLY:-$1} in "$1") ;; *) return ;; esac
	new_repo "${4:-none}"
	rm -f "$T/stall.sig" "$T/stall.once"
	printf '%s\n%s\n' "$2" "$3" >"$T/stall.conf"
	(cd "$W" && bern_bg run plan.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BG=$!
	if ! wait_signal; then
		not_ok "$1: git stopped inside the step"
		diag "$(cat "$T/bg.out" "$T/bg.err")"
		kill -9 "$BG" 2>/dev/null
		wait "$BG" 2>/dev/null
		: >"$T/stall.conf"
		return
	fi
	ok "$1: git stopped inside the step"
	kill -9 "$BG"
	wait "$BG" 2>/dev/null
	kill -9 $(cat "$SIG") 2>/dev/null
	i=0
	while kill -0 $(cat "$SIG") 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	rm -f "$SIG"
	: >"$T/stall.conf"
	(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
	RC=$?
	if [ "$RC" -eq 0 ]; then
		ok "$1: resume exits 0"
	else
		not_ok "$1: resume exits 0"
		diag "got exit $RC"
		_diag_file stdout "$T/stdout"
		_diag_file stderr "$T/stderr"
	fi
	check_finished "$1"
}
