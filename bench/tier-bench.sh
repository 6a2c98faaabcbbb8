#!/bin/sh
# The cost of each sandbox tier (issue #15): N tasks (default 16) whose agent
# is /bin/true run through `bernstein run` in each tier this host provides
# (none, landlock, bwrap, container), interleaved over ROUNDS rounds (default
# 3); the fastest round of each counts (noise only adds time). Printed per
# task and as a ratio against `sandbox: none` measured in the same run: what
# a tier adds is its per-task clone (`git clone --shared`, then the fetch
# back), the policy, and the sandbox's own start (bwrap, the OCI runtime).
# A tier the host does not provide is listed as such. Run as root with
# setpriv(1), it measures the container tier rootless too (container-65534:
# the same plan run by uid 65534). It prints; it does not assert.
#
# usage: bench/tier-bench.sh [BUILD_DIR]   (TIER_BENCH_TASKS=N TIER_BENCH_ROUNDS=R)
set -u

build=${1:-build}
n=${TIER_BENCH_TASKS:-16}
rounds=${TIER_BENCH_ROUNDS:-3}
bin=$(cd "$build" && pwd)/bernstein
[ -x "$bin" ] || { echo "tier-bench: no $build/bernstein (make build first)" >&2; exit 4; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-tier-bench.XXXXXX") || exit 4
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM

. "$(dirname "$0")/noop-repo.sh"

# repo TIER: a repository whose no-op agent declares every tier, run in TIER
repo()
{
	w=$dir/$1
	noop_repo "$w" "$n" 4 "${1%-65534}"
	case $1 in *-65534) chown -R 65534:65534 "$w" ;; esac
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# one TIER: ms of one run of the plan (state and chain removed first), or
# nothing when the run failed (the tier is not provided here)
one()
{
	w=$dir/$1
	rm -rf "$w/.bernstein/state.db"* "$w/.bernstein/audit" "$w/.bernstein/runs" \
		"$w/.bernstein/worktrees"
	as= key=$dir/audit.key
	case $1 in *-65534) as="setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=$w/home XDG_CONFIG_HOME=$w/home/.config" key=$w/audit.key ;; esac
	t0=$(now_ms)
	# shellcheck disable=SC2086 # as: words without blanks
	BERNSTEIN_AUDIT_KEY_PATH=$key $as "$bin" -C "$w" run plan.yaml >"$dir/$1.out" 2>&1 ||
		return 0
	echo $(($(now_ms) - t0))
}

tiers="none landlock bwrap container"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 711 "$dir"
	tiers="$tiers container-65534"
fi
for t in $tiers; do
	repo "$t"
done
best_none=
r=1
while [ "$r" -le "$rounds" ]; do
	for t in $tiers; do
		ms=$(one "$t")
		v=$(echo "$t" | tr - _)
		eval "prev=\${best_$v:-}"
		if [ -n "$ms" ] && { [ -z "$prev" ] || [ "$ms" -lt "$prev" ]; }; then
			eval "best_$v=$ms"
		fi
	done
	r=$((r + 1))
done

echo "sandbox tiers: $n no-op tasks through bernstein run, parallel 4, best of $rounds"
for t in $tiers; do
	v=$(echo "$t" | tr - _)
	eval "ms=\${best_$v:-}"
	if [ -z "$ms" ]; then
		printf '  %-15s not provided here (%s)\n' "$t" \
			"$(grep -m1 -i 'refused\|failed\|error' "$dir/$t.out" 2>/dev/null | cut -c1-100)"
		continue
	fi
	per=$(awk "BEGIN { printf \"%.1f\", $ms / $n }")
	if [ -n "$best_none" ] && [ "$best_none" -gt 0 ]; then
		ratio=$(awk "BEGIN { printf \"%.2f\", $ms / $best_none }")
	else
		ratio="-"
	fi
	printf '  %-15s %8d ms  %7s ms/task  %5sx none\n' "$t" "$ms" "$per" "$ratio"
done
