#!/bin/sh
# What an agent, a gate or a hook leaves behind when it exits gets SIGTERM
# and kill_grace to finish (docs/supervision.md, "An agent's init" and the
# settling state): each leaves a child with its output closed that traps
# TERM, works 300 ms more and then writes a file. In the pidns tier each
# runs behind bernstein's init (without it the kernel SIGKILLs the child
# the moment the command, pid 1, exits: no file); in the cgroup and pgroup
# tiers the supervisor waits for the group (before: SIGKILL at EOF).
. "$SRCDIR/tests/integration/lib.sh"
test_begin "t0393 leftovers of agents, gates and hooks get the grace"
. "$SRCDIR/tests/integration/repo-lib.sh"

# leave NAME: a shell snippet that leaves such a child and returns once it
# traps TERM ($T/NAME.out holds "flushed" when it had its time)
leave()
{
	printf '( exec >/dev/null 2>&1 </dev/null; trap "sleep 0.3; echo flushed >%s/%s.out; exit 0" TERM; : >%s/%s.ready; while :; do sleep 0.02; done ) & while [ ! -e %s/%s.ready ]; do sleep 0.01; done' \
		"$T" "$1" "$T" "$1" "$T" "$1"
}

for tier in pidns cgroup pgroup; do
	rm -rf "$W"
	mkdir -p "$W"
	printf 'adapter: shell\nkill_grace: 20\ngates:\n  - {name: leave, run: %s}\nhooks:\n  post_task: %s\n' \
		"'$(leave "gate-$tier")'" "'$(leave "hook-$tier")'" | shell_repo
	printf 'name: grace\ntasks:\n  - title: one\n    prompt: %s\n' \
		"'$(leave "agent-$tier"); echo done > one.txt'" >"$W/plan.yaml"
	commit_base
	run "$KEY" BERNSTEIN_CONTAIN="$tier" "$BERNSTEIN" -C "$W" doctor --json
	if ! grep -q "\"tier\": \"$tier\"" "$T/stdout"; then
		skip "$tier: not on this host" "doctor gives another tier"
		continue
	fi
	run "$KEY" BERNSTEIN_CONTAIN="$tier" "$BERNSTEIN" -C "$W" run plan.yaml
	check "$tier: the run exits 0 (got $RC)" test "$RC" -eq 0
	[ "$RC" -eq 0 ] || _diag_file stderr "$T/stderr"
	check "$tier: the task is merged" grep -qx done "$W/one.txt"
	for what in agent gate hook; do
		check "$tier: what the $what left finished on SIGTERM" \
			grep -qx flushed "$T/$what-$tier.out"
	done
done
test_done
