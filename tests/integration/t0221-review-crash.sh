#!/bin/sh
# Issue #18: kill -9 of `bernstein approve` in the middle of the merge it
# makes (a finished run: approve marks the task merging under the run lock,
# then resumes it, which merges), at two points -- the checkout's files
# written, and the base branch about to move -- then `bernstein resume`:
# the reviewed head merged exactly once, the checkout clean, no lock file.
# How a git step is interrupted: tests/integration/stall-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0221 kill -9 inside an approve's merge, then resume: merged once"
. "$SRCDIR/tests/integration/stall-lib.sh"

N=0
review_repo()
{
	N=$((N + 1))
	W=$T/repo-$N
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'base\n' >"$W/base.txt"
	shell_agent "$W"
	printf 'adapter: shell\nparallel: 1\nsandbox: none\nmerge: review\n' >"$W/bernstein.yaml"
	cat >"$W/plan.yaml" <<'EOF'
name: crash
tasks:
  - title: alpha
    prompt: "echo alpha > a.txt; mkdir -p sub; echo alpha two > sub/a2.txt; echo changed > base.txt"
EOF
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

# crash_approve NAME REGEX POINT
crash_approve()
{
	review_repo
	: >"$T/stall.conf"
	(cd "$W" && bern run plan.yaml) </dev/null >"$T/stdout" 2>"$T/stderr"
	run "$BERNSTEIN" -C "$W" status
	expect_stdout_contains "review" "$1: the task waits in review"
	HEAD_REVIEWED=$(git -C "$W" rev-parse "$(git -C "$W" for-each-ref --format='%(refname)' 'refs/heads/bernstein/alpha-*')")
	rm -f "$T/stall.sig" "$T/stall.once"
	printf '%s\n%s\n' "$2" "$3" >"$T/stall.conf"
	(cd "$W" && bern_bg approve alpha) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BG=$!
	if ! wait_signal; then
		not_ok "$1: git stopped inside the approve's merge"
		diag "$(cat "$T/bg.out" "$T/bg.err")"
		kill -9 "$BG" 2>/dev/null
		wait "$BG" 2>/dev/null
		: >"$T/stall.conf"
		return
	fi
	ok "$1: git stopped inside the approve's merge"
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
	run "$BERNSTEIN" -C "$W" status
	expect_stdout_contains "merging" "$1: the killed approve left the task merging"
	(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
	RC=$?
	check "$1: resume exits 0" [ "$RC" -eq 0 ]
	check "$1: merged exactly once" sh -c \
		"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/alpha-') -eq 1 ]"
	check "$1: the reviewed head is what was merged" \
		[ "$(git -C "$W" rev-parse main^2)" = "$HEAD_REVIEWED" ]
	check "$1: the files" sh -c "grep -q 'alpha two' '$W/sub/a2.txt' && grep -q changed '$W/base.txt'"
	check "$1: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
	check "$1: no lock file is left" sh -c "[ -z \"\$(find '$W/.git' -name '*.lock')\" ]"
	(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
	check "$1: a second resume merges nothing again" sh -c \
		"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/alpha-') -eq 1 ]"
}

crash_approve "files written" 'read-tree -m -u' 'create:*a2.txt'
crash_approve "branch update" 'update-ref' 'rename:*refs/heads/main.lock'

test_done
