#!/bin/sh
# Issue #18, conflicts: kill -9 of bernstein in the middle of a conflict's
# handling, then `bernstein resume`: nothing lost, nothing merged twice,
# the user's checkout never dirty, the task's tree repaired.
#   - inside the rebase in the task's tree (on_conflict: rebase), at two
#     points: the base's files being checked out (a rebase in progress),
#     and the branch about to move at its end;
#   - while the resolver agent runs (on_conflict: resolve);
#   - inside the rebase an approve's merge started (merge: review): resume
#     sends the rebased head back to review, the next approve merges it.
# How a git step is interrupted: tests/integration/stall-lib.sh.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0257 kill -9 inside a conflict's rebase or resolver, then resume"
. "$SRCDIR/tests/integration/stall-lib.sh"

N=0
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

# compatible edits (t0255): the second task's merge conflicts, its rebase
# is clean. $1: extra bernstein.yaml lines; $2: yes when the second waits
# for the first's merge (a run that merges by itself).
new_repo()
{
	N=$((N + 1))
	W=$T/repo-$N
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'one\ntwo\nthree\n' >"$W/f.txt"
	shell_agent "$W"
	cat >"$W/bernstein.yaml" <<EOF
adapter: shell
parallel: 2
sandbox: none
retry_backoff: 0
$1
gates:
  - {name: note, run: "pwd >> $T/gates-$N.log"}
EOF
	WAIT=
	if [ "$2" = yes ]; then
		WAIT="; i=0; while ! git -C '$W' log main --format=%s | grep -q '^Merge bernstein/first-' && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i+1)); done"
	fi
	cat >"$W/plan.yaml" <<EOF
name: crash
tasks:
  - title: first
    prompt: "printf 'one\\\\nA\\\\nthree\\\\n' > f.txt; echo a > a.txt"
  - title: second
    prompt: >-
      printf 'one\\nA\\nthree\\n' > f.txt &&
      git add f.txt && git -c user.name=a -c user.email=a@example.com commit -q -m same &&
      printf 'one\\nB\\nthree\\n' > f.txt $WAIT
EOF
	git_q add -A && git_q commit -q -m base
}

# kill -9 the background bernstein $BG and the git stalled under it
kill_stalled()
{
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
}

state_of()
{
	run "$BERNSTEIN" -C "$W" status --json
	python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tasks"]:
    if t["title"] == sys.argv[2]:
        print(t["state"])' "$T/stdout" "$1"
}

# Both done and merged once, the second's edit on top, the second's
# branch rebased, trees and checkout clean, no lock, no rebase left.
check_merged()
{
	run "$BERNSTEIN" -C "$W" status --json
	check "$1: both tasks done" python3 -c '
import json, sys
s = {t["title"]: t["state"] for t in json.load(open(sys.argv[1]))["tasks"]}
sys.exit(0 if s == {"first": "done", "second": "done"} else "%s" % s)' "$T/stdout"
	for t in first second; do
		check "$1: $t merged exactly once" sh -c \
			"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/$t-') -eq 1 ]"
	done
	check "$1: the files" sh -c \
		"[ \"\$(git -C '$W' show main:f.txt)\" = \"\$(printf 'one\nB\nthree')\" ] && git -C '$W' cat-file -e main:a.txt"
	check "$1: the checkout is clean" sh -c "[ -z \"\$(git -C '$W' status --porcelain)\" ]"
	check "$1: no lock file, no rebase or merge left" sh -c \
		"[ -z \"\$(find '$W/.git' -name '*.lock' -o -name 'rebase-merge' -o -name 'rebase-apply' -o -name MERGE_HEAD)\" ]"
}

# ---- inside the rebase ----
crash_rebase()
{
	case ${CRASH_ONLY:-$1} in "$1") ;; *) return ;; esac
	new_repo "" yes
	rm -f "$T/stall.sig" "$T/stall.once"
	printf '%s\n%s\n' 'rebase --quiet --no-autostash' "$2" >"$T/stall.conf"
	(cd "$W" && bern_bg run plan.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BG=$!
	if ! wait_signal; then
		not_ok "$1: git stopped inside the rebase"
		diag "$(cat "$T/bg.out" "$T/bg.err")"
		kill -9 "$BG" 2>/dev/null
		wait "$BG" 2>/dev/null
		: >"$T/stall.conf"
		return
	fi
	ok "$1: git stopped inside the rebase"
	kill_stalled
	check "$1: the killed run left the task rebasing" [ "$(state_of second)" = rebasing ]
	check "$1: and a rebase in progress in its tree" sh -c \
		"[ -n \"\$(find '$W/.git/worktrees' -maxdepth 2 -name rebase-merge)\" ]"
	check "$1: the user's checkout is clean after the kill" sh -c \
		"[ -z \"\$(git -C '$W' status --porcelain)\" ]"
	(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
	RC=$?
	if [ "$RC" -eq 0 ]; then ok "$1: resume exits 0"; else
		not_ok "$1: resume exits 0"; diag "exit $RC"; _diag_file stderr "$T/stderr"
	fi
	check_merged "$1"
	check "$1: the second's gate ran again after the resumed rebase" sh -c \
		"[ \$(grep -c '/second-' '$T/gates-$N.log') -ge 2 ]"
	(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
	check "$1: a second resume merges nothing again" sh -c \
		"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/second-') -eq 1 ]"
}

crash_rebase "rebase: checkout of the base" 'create:*a.txt'
crash_rebase "rebase: the branch moved" 'rename:*refs/heads/bernstein/second-*.lock'

# ---- while the resolver runs ----
if [ "${CRASH_ONLY:-resolver}" = resolver ]; then
	N=$((N + 1))
	W=$T/repo-$N
	mkdir -p "$W"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'one\ntwo\nthree\n' >"$W/f.txt"
	printf 'adapter: mock\nparallel: 2\nsandbox: none\non_conflict: resolve\n' >"$W/bernstein.yaml"
	# every attempt sleeps: the resolver is still running when it is killed
	cat >"$W/plan.yaml" <<'EOF'
name: resolver
tasks:
  - {title: left, prompt: "write f.txt left\nsleep 2"}
  - {title: right, prompt: "write f.txt right\nsleep 2"}
EOF
	git_q add -A && git_q commit -q -m base
	: >"$T/stall.conf"
	(cd "$W" && bern_bg run plan.yaml) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BG=$!
	i=0
	R=
	while [ $i -lt 600 ] && kill -0 "$BG" 2>/dev/null; do
		run "$BERNSTEIN" -C "$W" status --json
		R=$(python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tasks"]:
    if t["state"] == "resolving" and t["attempts"] == 2 and "dispatched" in (t.get("reason") or ""):
        print(t["title"])' "$T/stdout" 2>/dev/null)
		[ -n "$R" ] && break
		sleep 0.05
		i=$((i + 1))
	done
	if [ -n "$R" ]; then ok "resolver: seen resolving"; else
		not_ok "resolver: seen resolving"; diag "$(cat "$T/bg.out" "$T/bg.err")"
	fi
	kill -9 "$BG" 2>/dev/null
	wait "$BG" 2>/dev/null
	check "resolver: the killed run left it resolving" [ "$(state_of "$R")" = resolving ]
	check "resolver: the user's checkout is clean after the kill" sh -c \
		"[ -z \"\$(git -C '$W' status --porcelain)\" ]"
	(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
	RC=$?
	if [ "$RC" -eq 0 ]; then ok "resolver: resume exits 0"; else
		not_ok "resolver: resume exits 0"; diag "exit $RC"; _diag_file stderr "$T/stderr"
		_diag_file stdout "$T/stdout"
	fi
	run "$BERNSTEIN" -C "$W" status --json
	check "resolver: both done, the resolver's task after a third attempt" python3 -c '
import json, sys
ts = {t["title"]: t for t in json.load(open(sys.argv[1]))["tasks"]}
ok = all(t["state"] == "done" for t in ts.values()) and ts[sys.argv[2]]["attempts"] == 3
sys.exit(0 if ok else "%s" % ts)' "$T/stdout" "$R"
	check "resolver: merged once each, the resolution in the base" sh -c \
		"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/left-') -eq 1 ] &&
		 [ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/right-') -eq 1 ] &&
		 [ \"\$(git -C '$W' show main:f.txt)\" = '$R' ]"
	check "resolver: the checkout is clean, no merge left" sh -c \
		"[ -z \"\$(git -C '$W' status --porcelain)\" ] &&
		 [ -z \"\$(find '$W/.git' -name MERGE_HEAD -o -name '*.lock')\" ]"
	run BERNSTEIN_AUDIT_KEY_PATH="$KEY" "$BERNSTEIN" -C "$W" audit show --event-type task.resolver --json
	check "resolver: two resolver attempts audited" sh -c \
		"[ \$(grep -c '\"event_type\": \"task.resolver\"' '$T/stdout') -eq 2 ]"
fi

# ---- inside the rebase of an approve's merge (merge: review) ----
if [ "${CRASH_ONLY:-approve}" = approve ]; then
	new_repo "merge: review" no
	: >"$T/stall.conf"
	(cd "$W" && bern run plan.yaml) </dev/null >"$T/stdout" 2>"$T/stderr"
	(cd "$W" && bern approve first) </dev/null >"$T/stdout" 2>"$T/stderr"
	check "approve: the first is merged" [ "$(state_of first)" = done ]
	rm -f "$T/stall.sig" "$T/stall.once"
	printf '%s\n%s\n' 'rebase --quiet --no-autostash' 'create:*a.txt' >"$T/stall.conf"
	(cd "$W" && bern_bg approve second) </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BG=$!
	if wait_signal; then
		ok "approve: git stopped inside the rebase of the approved merge"
		kill_stalled
		check "approve: the killed approve left it rebasing" [ "$(state_of second)" = rebasing ]
		(cd "$W" && bern resume) </dev/null >"$T/stdout" 2>"$T/stderr"
		check "approve: resume sends the rebased head back to review" [ "$(state_of second)" = review ]
		check "approve: nothing of the second is merged yet" sh -c \
			"[ \$(git -C '$W' log --merges --format=%s main | grep -c '^Merge bernstein/second-') -eq 0 ]"
		HEAD2=$(git -C "$W" rev-parse "$(git -C "$W" for-each-ref --format='%(refname)' 'refs/heads/bernstein/second-*')")
		(cd "$W" && bern approve second) </dev/null >"$T/stdout" 2>"$T/stderr"
		check_merged "approve"
		check "approve: the rebased head is what was merged" \
			[ "$(git -C "$W" rev-parse main^2)" = "$HEAD2" ]
	else
		not_ok "approve: git stopped inside the rebase of the approved merge"
		diag "$(cat "$T/bg.out" "$T/bg.err")"
		kill -9 "$BG" 2>/dev/null
		wait "$BG" 2>/dev/null
		: >"$T/stall.conf"
	fi
fi

test_done
