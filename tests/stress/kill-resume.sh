#!/bin/sh
# Stress test of crash safety (issue #14, class 4): N trials of `bernstein run`
# killed with SIGKILL at a random moment, then `bernstein resume`, itself
# killed at random moments up to KILLS times, until one resume runs to its
# end. Every trial must end with: resume exit 0, every task done (the no-op
# no_changes), each merged exactly once, the main checkout clean, no lock
# file under .git, no worktree or clone left, no empty task branch, and the
# audit chain intact. Not part of `meson test`: it takes minutes.
#
# usage: tests/stress/kill-resume.sh [TRIALS]     (default 100)
#   BERNSTEIN  the binary (default: build/bernstein)
#   KILLS      kills per trial at most (default 3)
#   SEED       seed of the random moments (default: from /dev/urandom)
#   KEEP=1     keep the directory of a failed trial (printed)
# Exit 0 when every trial passed, 1 otherwise. The moments are uniform over
# the duration of an uninterrupted run (measured first), so most of them
# fall inside a git step: worktree add, commit, gates, merge, worktree
# remove, branch deletion; sandboxed tasks (clone, fetch) when the kernel
# has Landlock. tests/integration/t0107-run-crash.sh stops git at each step
# deterministically; this finds what falls between.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
trials=${1:-100}
: "${BERNSTEIN:=$top/build/bernstein}"
: "${KILLS:=3}"
: "${SEED:=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
case $BERNSTEIN in /*) ;; *) BERNSTEIN=$(pwd)/$BERNSTEIN ;; esac
if [ ! -x "$BERNSTEIN" ]; then
	echo "kill-resume: '$BERNSTEIN' is not an executable (build first, or set BERNSTEIN)" >&2
	exit 2
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-stress.XXXXXX") || exit 2
trap 'rm -rf "$root"' EXIT
trap 'exit 130' INT TERM HUP
echo "kill-resume: $trials trials, at most $KILLS kills each, SEED=$SEED, in $root"

# R = a random number in [0, $1), from the seed (no subshell: the state
# must carry over)
RNG=$SEED
rand()
{
	RNG=$(((RNG * 1103515245 + 12345) % 2147483648))
	R=$(((RNG / 65536) % $1))
}

landlock=none
"$BERNSTEIN" shim --landlock-ro / -- /bin/true >/dev/null 2>&1 && landlock=landlock

bern() { env -i PATH=/usr/bin:/bin HOME="$root/home" LC_ALL=C.UTF-8 TZ=UTC \
	XDG_CONFIG_HOME="$root/config" BERNSTEIN_AUDIT_KEY_PATH="$root/audit.key" \
	"$BERNSTEIN" "$@"; }

# A repository with six tasks on the mock adapter (docs/mock.md; it resumes
# natively): files (one task with 200 of them, so checkouts and merges take
# a while), a dependency, a gate, a no-op, one sandboxed when the kernel can.
new_repo()
{
	rm -rf "$W"
	mkdir -p "$W" "$root/home" "$root/config"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'base\n' >"$W/base.txt"
	printf 'adapter: mock\nparallel: 3\nretry_backoff: 0\n' >"$W/bernstein.yaml"
	{
		printf 'name: stress\ntasks:\n  - title: many\n    prompt: |\n'
		i=1
		while [ $i -le 200 ]; do
			printf '      write many/f%d.txt %d\n' $i $i
			i=$((i + 1))
		done
		cat <<EOF
  - title: edit
    prompt: |
      write base.txt edited
      write e.txt e
  - title: gated
    gates: [{name: check, run: "test -s g.txt"}]
    prompt: write g.txt g
  - title: noop
    prompt: say nothing to do
  - title: boxed
    sandbox: $landlock
    prompt: write boxed.txt boxed
  - title: last
    depends_on: [many, edit, gated]
    prompt: write last.txt after the others
EOF
	} >"$W/plan.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

now_ms() { date +%s%3N; }

# Every invariant of a finished trial; prints what is wrong.
verify()
{
	bern -C "$W" status --json >"$root/status.json" 2>&1 || { echo "status failed"; return 1; }
	python3 - "$root/status.json" <<'EOF' || return 1
import json, sys
t = {x["title"]: x["state"] for x in json.load(open(sys.argv[1]))["tasks"]}
want = {"many": "done", "edit": "done", "gated": "done", "noop": "no_changes",
        "boxed": "done", "last": "done"}
if t != want:
    sys.exit("task states %s" % t)
EOF
	for t in many edit gated boxed last; do
		n=$(git -C "$W" log --merges --format=%s main | grep -c "^Merge bernstein/$t-")
		[ "$n" -eq 1 ] || { echo "$t merged $n times"; return 1; }
	done
	[ "$(ls "$W/many" | wc -l)" -eq 200 ] && grep -q edited "$W/base.txt" &&
		[ -f "$W/last.txt" ] || { echo "the merged files are not all there"; return 1; }
	[ -z "$(git -C "$W" status --porcelain)" ] || { echo "checkout not clean:"; git -C "$W" status --porcelain | head; return 1; }
	[ -z "$(find "$W/.git" -name '*.lock')" ] || { echo "lock files:"; find "$W/.git" -name '*.lock'; return 1; }
	[ "$(git -C "$W" worktree list --porcelain | grep -c '^worktree ')" -eq 1 ] || { echo "worktrees:"; git -C "$W" worktree list; return 1; }
	[ -z "$(ls -A "$W/.bernstein/worktrees" 2>/dev/null)" ] || { echo "left in .bernstein/worktrees:"; ls -A "$W/.bernstein/worktrees"; return 1; }
	! git -C "$W" for-each-ref refs/heads/bernstein/ | grep -q /noop- || { echo "the no-op's branch is left"; return 1; }
	bern -C "$W" audit verify >"$root/verify.out" 2>&1 || { echo "audit verify:"; cat "$root/verify.out"; return 1; }
	return 0
}

# A clean run first: how long one takes, and that the setup works.
W=$root/calibrate
new_repo
start=$(now_ms)
(cd "$W" && bern run plan.yaml) >"$root/out" 2>&1 || { echo "kill-resume: a clean run fails:"; cat "$root/out"; exit 1; }
span=$(($(now_ms) - start))
verify || { echo "kill-resume: a clean run does not verify"; exit 1; }
echo "kill-resume: an uninterrupted run takes $span ms; sandboxed task: $landlock"

failed=0
trial=1
while [ $trial -le "$trials" ]; do
	W=$root/trial-$trial
	new_repo
	kills=0
	cmd="run plan.yaml"
	log=$root/trial-$trial.log
	: >"$log"
	while :; do
		(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$root/home" LC_ALL=C.UTF-8 TZ=UTC \
			XDG_CONFIG_HOME="$root/config" BERNSTEIN_AUDIT_KEY_PATH="$root/audit.key" \
			"$BERNSTEIN" $cmd) </dev/null >>"$log" 2>&1 &
		pid=$!
		rand 4
		if [ $kills -lt "$KILLS" ] && [ $R -ne 0 ]; then
			rand "$span"
			ms=$R
			sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
			if kill -9 $pid 2>/dev/null; then
				wait $pid 2>/dev/null
				kills=$((kills + 1))
				echo "--- killed after $ms ms ($cmd)" >>"$log"
				cmd=resume
				continue
			fi
		fi
		wait $pid
		rc=$?
		echo "--- $cmd exited $rc" >>"$log"
		if [ "$cmd" = resume ] && [ $rc -eq 2 ]; then
			# killed before it recorded the run: nothing was done, run again
			if ! bern -C "$W" status >/dev/null 2>&1; then
				cmd="run plan.yaml"
				continue
			fi
			rc=0 # killed after it had finished the run
		fi
		break
	done
	if [ $rc -eq 0 ] && why=$(verify); then
		printf '.'
		rm -rf "$W" "$log"
	else
		failed=$((failed + 1))
		echo
		echo "kill-resume: trial $trial FAILED after $kills kill(s): exit $rc; $why"
		grep -e '^---' -e 'warning' "$log" | sed 's/^/    /'
		bern -C "$W" status 2>&1 | sed 's/^/    /'
		if [ "${KEEP:-0}" = 1 ]; then
			keep=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-stress-failed.XXXXXX")
			cp -a "$W" "$log" "$keep/"
			echo "    kept in $keep"
		fi
	fi
	trial=$((trial + 1))
done
echo
echo "kill-resume: $((trials - failed)) passed, $failed failed (SEED=$SEED)"
[ $failed -eq 0 ]
