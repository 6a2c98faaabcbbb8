#!/bin/sh
# What a sandboxed agent can read (issue #25): reads are an allow-list, not
# '/'. A script agent tries to read a canary in the user's HOME, the audit key
# (at its default place in the HOME and at a BERNSTEIN_AUDIT_KEY_PATH outside
# it), state.db, the repository's .bernstein/, a sibling task's tree, the main
# checkout's working files and /etc/shadow, and fails every time while its own
# task succeeds; in sandbox: landlock, bwrap and container (as uid 65534 a
# rootless container: a user namespace mapping it to 0), as root, and as an
# unprivileged uid (65534). The same attack
# with sandbox: none reads them (the test's control). Skipped as a whole
# without Landlock in the kernel.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0148 sandboxed reads: the agent reads none of the user's secrets"

require_landlock

# setup ROOT HOMEDIR [TIER]: a repository ROOT/work whose shell agent attacks
# in sandbox: TIER (landlock).
setup() {
	R=$1
	H=$2
	TIER=${3:-landlock}
	W=$R/work
	mkdir -p "$W/.bernstein/catalog/profiles" "$H/.ssh" "$R/keys"
	printf 'CANARY-HOME\n' >"$H/.ssh/id_canary"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\nreport-*.txt\n' >"$W/.gitignore"
	printf 'MAIN-CHECKOUT\n' >"$W/shared.txt"
	shell_agent "$W"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\n' "$TIER" \
		>"$W/bernstein.yaml"
	# the victim: a task that failed and left its tree (and its secret) behind
	cat >"$W/victim.yaml" <<'EOF'
name: victim
tasks:
  - title: victim
    prompt: "echo SIBLING-SECRET > secret.txt; exit 3"
EOF
	# the attacker: every read is tried, each result reported in its own tree
	cat >"$W/attack.yaml" <<EOF
name: attack
tasks:
  - title: attacker
    prompt: |
      r=report-\$(basename \$PWD | cut -d- -f1).txt
      try() { if cat "\$1" >/dev/null 2>&1; then echo "READ \$1"; else echo "DENIED \$1"; fi; }
      tryls() { if ls "\$1" >/dev/null 2>&1; then echo "LISTED \$1"; else echo "DENIED \$1"; fi; }
      { try $H/.ssh/id_canary; try $H/.local/state/bernstein/audit.key
        try $R/keys/audit.key; try $W/.bernstein/state.db; tryls $W/.bernstein
        try \$(echo $W/.bernstein/worktrees/victim-*/secret.txt); try $W/shared.txt
        tryls $H; try /etc/shadow; } > own-report.txt
      echo mine > own.txt
EOF
	git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

reads_denied() {
	who=$1
	check "$who: the attacker's own task succeeded (merged)" grep -q mine "$W/own.txt"
	check "$who: its report is there" test -s "$W/own-report.txt"
	check "$who: the victim's tree is still there to be attacked" \
		sh -c "ls '$W'/.bernstein/worktrees/victim-*/secret.txt"
	for what in "$H/.ssh/id_canary" "$H/.local/state/bernstein/audit.key" \
		"$R/keys/audit.key" "$W/.bernstein/state.db" "$W/.bernstein" \
		"/worktrees/victim-" "$W/shared.txt" "/etc/shadow"; do
		check "$who: denied: $what" grep -q "^DENIED .*$what" "$W/own-report.txt"
	done
	check "$who: nothing was read or listed" sh -c "! grep -Eq '^(READ|LISTED)' '$W/own-report.txt'"
}

bwrap_ok=
if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
	bwrap_ok=1
fi
report_setup() { setup "$T/report" "$T/home-report"; }

# ---- the report: spawn --dry-run --sandbox ----
report_setup
sp() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' spawn $*"; }
sp shell --dry-run --sandbox landlock --json true
check "spawn --dry-run --sandbox landlock exits 0" test "$RC" -eq 0
check "the dry-run report lists the reads: the system, not the HOME" python3 -c "
import json,sys
s = json.load(open('$T/stdout'))['sandbox']
assert s['tier'] == 'landlock' and '/usr' in s['read'] and '/etc' in s['read'], s
assert '/etc/shadow' in s['read_except'], s
assert not [p for p in s['read'] if p == '$H' or p.startswith('$H/')], s
assert '$W' in s['write'], s
"
sp shell --sandbox landlock true
check "--sandbox without --dry-run is a usage error" test "$RC" -eq 2
expect_stderr_contains "--sandbox needs --dry-run"
cat >"$W/.bernstein/catalog/profiles/reader.yaml" <<EOF
name: reader
display_name: "Reads too much"
shape: factory
invocation: {binary: sh, extra_args: [-c], prompt_positional: true}
capabilities: {tool_use: true}
runtime: {sandbox: {read: ['$T']}}
EOF
sp reader --dry-run --sandbox landlock true
check "a read path above the repository is refused (exit 3)" test "$RC" -eq 3
expect_stderr_contains "would make the repository" "and says what it would expose"

# ---- the control: sandbox: none reads all of it ----
setup "$T/none" "$T/home3"
sed -i 's/^sandbox: landlock$/sandbox: none/' "$W/bernstein.yaml"
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -am none >/dev/null 2>&1
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run victim.yaml"
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run attack.yaml"
check "control (sandbox: none): the canary and state.db are read" \
	sh -c "grep -q '^READ $H/.ssh/id_canary' '$W/own-report.txt' && grep -q '^READ $W/.bernstein/state.db' '$W/own-report.txt'"

for tier in landlock bwrap container; do
if [ "$tier" = bwrap ] && [ -z "$bwrap_ok" ]; then
	skip "sandbox: bwrap" "bubblewrap is not installed or cannot create its namespaces here"
	continue
fi
if [ "$tier" = container ] && { [ "$(id -u)" -ne 0 ] ||
	! { command -v crun || command -v runc; } >/dev/null 2>&1; }; then
	skip "sandbox: container" "needs root and crun or runc"
	continue
fi
# ---- as root, the key in the HOME (its default place) ----
setup "$T/root-$tier" "$T/home-$tier" "$tier"
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run victim.yaml"
check "$tier, root: the victim task failed (its tree stays)" sh -c "ls -d '$W'/.bernstein/worktrees/victim-*"
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run attack.yaml"
check "$tier, root: the key was made at its default place" test -s "$H/.local/state/bernstein/audit.key"
reads_denied "$tier, root"

# ---- as root, the key outside the HOME (BERNSTEIN_AUDIT_KEY_PATH) ----
setup "$T/root2-$tier" "$T/home2-$tier" "$tier"
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' BERNSTEIN_AUDIT_KEY_PATH='$R/keys/audit.key' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run victim.yaml"
run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' BERNSTEIN_AUDIT_KEY_PATH='$R/keys/audit.key' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run attack.yaml"
check "$tier, root, key outside HOME: it is there" test -s "$R/keys/audit.key"
reads_denied "$tier, root, key outside HOME"

# ---- as an unprivileged uid ----
if ! command -v setpriv >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
	skip "unprivileged uid" "needs root and setpriv(1) to drop to uid 65534"
else
	chmod 755 "$T"
	mkdir -p "$T/nobody-$tier"
	setup "$T/nobody-$tier" "$T/nobody-$tier/home" "$tier"
	chown -R 65534:65534 "$T/nobody-$tier"
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups --"
	run sh -c "cd '$W' && exec $AS env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run victim.yaml"
	run sh -c "cd '$W' && exec $AS env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' run attack.yaml"
	if [ "$tier" = container ]; then
		run sh -c "cd '$W' && exec $AS env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' status --json"
		check "container, uid 65534: the attacker ran in a (rootless) container" python3 -c "
import json,sys
t = {x['title']: x for x in json.load(open('$T/stdout'))['tasks']}
assert t['attacker']['sandbox'] == 'container' and t['attacker']['state'] == 'done', t['attacker']"
	fi
	check "$tier, uid 65534: the key was made in its HOME" test -s "$H/.local/state/bernstein/audit.key"
	reads_denied "$tier, uid 65534"
fi

done

test_done
