#!/bin/sh
# sandbox: bwrap and sandbox: container (issue #15): the agent runs in
# bubblewrap's namespaces, or in an OCI container (crun, or runc on hybrid
# cgroups), with the Landlock rules inside. Checked with a script agent,
# as root: no
# capability is left (without --cap-drop ALL root keeps them and can
# remount '/' read-write), remounting fails, it is pid 1's descendant in its
# own PID namespace and sees no host process, /tmp is private, the task's
# tree is its working directory and its work is merged; a gate runs
# confined the same way; a missing bwrap refuses the task (never run
# unconfined); sandbox: auto (the default) gives an agent the strongest
# tier the host provides that its profile declares, none when it declares
# none, and status shows each task's tier. The reads allow-list of these
# tiers is t0148's. Skipped
# without Landlock; a tier is skipped without its program (or, for the
# container, as non-root).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0149 sandbox: bwrap and container"

require_landlock

W=$T/work
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/.bernstein/catalog/profiles"
shell_agent "$W"
printf 'main\n' >"$W/shared.txt"
git_q add -A && git_q commit -q -m base

for tier in bwrap container; do
case $tier in
bwrap)
	if ! command -v bwrap >/dev/null 2>&1 || ! bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
		skip "sandbox: bwrap" "bubblewrap (bwrap) is not installed or cannot create its namespaces"
		continue
	fi ;;
container)
	if ! command -v crun >/dev/null 2>&1 && ! command -v runc >/dev/null 2>&1; then
		skip "sandbox: container" "neither crun nor runc is installed"
		continue
	fi ;;
esac
printf 'adapter: shell\nretry_backoff: 0\nsandbox: %s\n' "$tier" >"$W/bernstein.yaml"
git_q add -A && git_q commit -q -m "$tier"
HOSTTMP=$(mktemp /tmp/bernstein-t0149-host.XXXXXX)
cat >"$W/plan.yaml" <<EOF
name: $tier
tasks:
  - title: probe
    prompt: |
      grep '^CapEff' /proc/self/status | tr -d '\\t' > caps.txt
      if mount -o remount,rw / 2>/dev/null || mount -t tmpfs x /usr 2>/dev/null; then echo REMOUNTED; else echo no-remount; fi > mount.txt
      ls /proc | grep -c '^[0-9]' > nprocs.txt
      if [ -e $HOSTTMP ]; then echo SEEN; else echo private; fi > tmp.txt
      pwd > pwd.txt
      echo x > /usr/escape 2>/dev/null; echo x > $W/escape.txt 2>/dev/null; true
    gates:
      - {name: confined, run: "grep -Eq '^CapEff:[[:space:]]+0+$' /proc/self/status && ! ls $W/shared.txt"}
EOF
git_q add -A && git_q commit -q -m "plan $tier"
expect_exit 0 "$BERNSTEIN" run plan.yaml
check "$tier: the task's work is merged" test -f "$W/caps.txt"
if [ "$(id -u)" -eq 0 ]; then
	check "$tier: as root: no capability is left inside" grep -qx 'CapEff:0000000000000000' "$W/caps.txt"
else
	skip "$tier: no capability as root" "not running as root"
fi
check "$tier: remounting fails" grep -qx no-remount "$W/mount.txt"
check "$tier: it sees only its own PID namespace (a handful of processes)" \
	sh -c "[ \$(cat '$W/nprocs.txt') -lt 10 ]"
check "$tier: /tmp is private" grep -qx private "$W/tmp.txt"
check "$tier: its working directory is its clone" grep -q "/.bernstein/worktrees/probe-" "$W/pwd.txt"
check "$tier: it wrote nothing outside" sh -c "test ! -e /usr/escape && test ! -e '$W/escape.txt'"
run "$BERNSTEIN" status --json
expect_stdout_contains '"state": "done"' "$tier: the gate (confined the same way) passed"
rm -f "$W/caps.txt" "$W/mount.txt" "$W/nprocs.txt" "$W/tmp.txt" "$W/pwd.txt"
git_q add -A && git_q commit -q -m "clean $tier"
rm -f "$HOSTTMP"
done

# ---- the container tier as uid 65534: rootless ----
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1 ||
	! { command -v crun || command -v runc; } >/dev/null 2>&1; then
	skip "container, uid 65534" "needs root (to drop to 65534 with setpriv) and crun or runc"
else
	chmod 755 "$T"
	N=$T/nobody
	mkdir -p "$N/home" "$N/work/.bernstein"
	git -C "$N/work" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$N/work/.gitignore"
	cp -r "$W/.bernstein/catalog" "$N/work/.bernstein/catalog"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\nsandbox: container\n' >"$N/work/bernstein.yaml"
	cat >"$N/work/plan.yaml" <<EOF
name: rootless
tasks:
  - title: probe
    prompt: |
      grep '^CapEff' /proc/self/status | tr -d '\\t' > caps.txt
      tr -s ' ' < /proc/self/uid_map | sed 's/^ //' > uidmap.txt
      if mount -o remount,rw / 2>/dev/null || mount -t tmpfs x /usr 2>/dev/null; then echo REMOUNTED; else echo no-remount; fi > mount.txt
      ls /proc | grep -c '^[0-9]' > nprocs.txt
      echo x > $N/work/escape.txt 2>/dev/null; true
    gates:
      - {name: confined, run: "grep -Eq '^CapEff:[[:space:]]+0+$' /proc/self/status && ! ls $N/work/bernstein.yaml"}
EOF
	git -C "$N/work" add -A >/dev/null 2>&1
	git -C "$N/work" -c user.name=t -c user.email=t@example.com commit -q -m rootless >/dev/null 2>&1
	chown -R 65534:65534 "$N"
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups --"
	NENV="env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=$N/home LC_ALL=C.UTF-8 TZ=UTC"
	# shellcheck disable=SC2086 # AS, NENV: words without blanks
	run $AS $NENV "$BERNSTEIN" -C "$N/work" run plan.yaml
	check "container, uid 65534: the run succeeds" test "$RC" -eq 0
	# shellcheck disable=SC2086 # AS, NENV: words without blanks
	run $AS $NENV "$BERNSTEIN" -C "$N/work" status --json
	check "container, uid 65534: the task (and its confined gate) ran in a container" python3 -c "
import json
t = json.load(open('$T/stdout'))['tasks'][0]
assert t['sandbox'] == 'container' and t['state'] == 'done', t"
	check "container, uid 65534: in a user namespace mapping it to 0" grep -qx '0 65534 1' "$N/work/uidmap.txt"
	check "container, uid 65534: no capability inside" grep -qx 'CapEff:0000000000000000' "$N/work/caps.txt"
	check "container, uid 65534: remounting fails" grep -qx no-remount "$N/work/mount.txt"
	check "container, uid 65534: it sees only its own PID namespace" \
		sh -c "[ \$(cat '$N/work/nprocs.txt') -lt 10 ]"
	check "container, uid 65534: it wrote nothing outside" test ! -e "$N/work/escape.txt"
	# shellcheck disable=SC2086 # AS, NENV: words without blanks
	run $AS $NENV "$BERNSTEIN" -C "$N/work" doctor --json
	check "container, uid 65534: doctor says the container tier works for this user" python3 -c "
import json
d = json.load(open('$T/stdout'))['sandbox_tiers']
assert d['container']['available'], d"
fi

# ---- no bwrap on PATH: refused, never run unconfined ----
mkdir -p "$T/nobwrap"
for p in sh git env; do ln -s "$(command -v $p)" "$T/nobwrap/$p"; done
printf 'adapter: shell\nretry_backoff: 0\nsandbox: bwrap\n' >"$W/bernstein.yaml"
cat >"$W/plan2.yaml" <<EOF
name: nobwrap
tasks:
  - {title: refused, prompt: "echo ran > ran.txt"}
EOF
git_q add -A && git_q commit -q -m plan2
run PATH="$T/nobwrap" "$BERNSTEIN" run plan2.yaml
check "without bwrap the run does not succeed" test "$RC" -ne 0
run "$BERNSTEIN" status --json
expect_stdout_contains "bubblewrap (bwrap) is not on PATH" "the task is refused with the reason"
check "and never ran" test ! -e "$W/ran.txt"

# ---- sandbox: auto, the default: the strongest tier the host provides
# that the agent's profile declares; none for an agent that declares none ----
sed 's/^name: shell$/name: boxed/; s/^  prompt_positional: true$/  prompt_positional: true\nruntime:\n  sandbox: {tiers: [landlock, bwrap]}/' \
	"$W/.bernstein/catalog/profiles/shell.yaml" >"$W/.bernstein/catalog/profiles/boxed.yaml"
sed 's/^  shell:$/  boxed:\n    resume: unsupported\n    dangerous_mode: always-on\n    event_channel: none\n  shell:/' \
	"$W/.bernstein/catalog/strategy-matrix.yaml" >"$T/matrix" && cp "$T/matrix" "$W/.bernstein/catalog/strategy-matrix.yaml"
printf 'adapter: shell\nretry_backoff: 0\n' >"$W/bernstein.yaml"
AUTO_WANT=landlock
if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
	AUTO_WANT=bwrap
fi
cat >"$W/plan3.yaml" <<EOF
name: auto
tasks:
  - {title: declares, adapter: boxed, prompt: "ls /proc | grep -c '^[0-9]' > auto-boxed.txt"}
  - {title: undeclared, adapter: shell, prompt: "echo free > auto-free.txt"}
  - {title: forced, adapter: boxed, sandbox: none, prompt: "echo none > auto-none.txt"}
EOF
git_q add -A && git_q commit -q -m plan3
expect_exit 0 "$BERNSTEIN" run plan3.yaml
run "$BERNSTEIN" status --json
check "auto: each task's tier is in status --json" python3 -c "
import json
t = {x['id'].split('-')[0]: x['sandbox'] for x in json.load(open('$T/stdout'))['tasks']}
want = {'declares': '$AUTO_WANT', 'undeclared': 'none', 'forced': 'none'}
assert all(t.get(k) == v for k, v in want.items()), t
"
run "$BERNSTEIN" status
expect_stdout_contains "SANDBOX" "and in the status table"
if [ "$AUTO_WANT" = bwrap ]; then
	check "auto: the declaring agent ran in its own PID namespace (bwrap)" \
		sh -c "[ \$(cat '$W/auto-boxed.txt') -lt 10 ]"
fi
check "auto: the others ran and were merged" test -f "$W/auto-free.txt" -a -f "$W/auto-none.txt"

# ---- limits and the container tier: the limits are in the bundle and its
# runtime starts in the task's cgroups, so auto gives it to a task with
# limits too, and asked for, it runs (t0151 checks the limits hold) ----
if [ "$(id -u)" -eq 0 ] && [ "$AUTO_WANT" = bwrap ] &&
	{ command -v crun >/dev/null 2>&1 || command -v runc >/dev/null 2>&1; } &&
	run "$BERNSTEIN" doctor --json &&
	python3 -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1]))["limits"]["pids"]["enforced"])' "$T/stdout"; then
	sed 's/^name: boxed$/name: boxc/; s/tiers: \[landlock, bwrap\]/tiers: [landlock, bwrap, container]/' \
		"$W/.bernstein/catalog/profiles/boxed.yaml" >"$W/.bernstein/catalog/profiles/boxc.yaml"
	sed 's/^  shell:$/  boxc:\n    resume: unsupported\n    dangerous_mode: always-on\n    event_channel: none\n  shell:/' \
		"$W/.bernstein/catalog/strategy-matrix.yaml" >"$T/matrix" && cp "$T/matrix" "$W/.bernstein/catalog/strategy-matrix.yaml"
	cat >"$W/plan4.yaml" <<EOF
name: limited
tasks:
  - {title: free, adapter: boxc, prompt: "echo free > c-free.txt"}
  - {title: limited, adapter: boxc, limits: {pids: 64}, prompt: "echo limited > c-limited.txt"}
  - {title: asked, adapter: boxc, sandbox: container, limits: {pids: 64}, prompt: "echo asked > c-asked.txt"}
EOF
	git_q add -A && git_q commit -q -m plan4
	run "$BERNSTEIN" run plan4.yaml
	check "limits: the run succeeds" test "$RC" -eq 0
	run "$BERNSTEIN" status --json
	check "limits: auto gives container to the tasks with limits and without" python3 -c "
import json
t = {x['id'].split('-')[0]: x for x in json.load(open('$T/stdout'))['tasks']}
for k in ('free', 'limited', 'asked'):
    assert t[k]['sandbox'] == 'container' and t[k]['state'] == 'done', t[k]
"
	check "limits: the asked one ran" test -f "$W/c-asked.txt"

	# routing: capability:sandbox=container is met by an agent that
	# declares the container tier on a host that provides it (its profile
	# claims no sandbox of its own), never by one that does not declare it
	cat >"$W/plan5.yaml" <<EOF
name: routed
tasks:
  - {title: boxc, adapter: boxc, requires: ["capability:sandbox=container"], prompt: "echo c > r-boxc.txt"}
  - {title: boxed, adapter: boxed, requires: ["capability:sandbox=container"], prompt: "echo b > r-boxed.txt"}
  - {title: proc, adapter: boxed, requires: ["capability:sandbox=process"], prompt: "echo p > r-proc.txt"}
EOF
	git_q add -A && git_q commit -q -m plan5
	run "$BERNSTEIN" run plan5.yaml
	check "routing: the run does not succeed (one task refused)" test "$RC" -ne 0
	run "$BERNSTEIN" status --json
	check "routing: sandbox=container met by the declared container tier, sandbox=process by bwrap" python3 -c "
import json
t = {x['id'].split('-')[0]: x for x in json.load(open('$T/stdout'))['tasks']}
assert t['boxc']['state'] == 'done' and t['boxc']['sandbox'] == 'container', t['boxc']
assert t['proc']['state'] == 'done' and t['proc']['sandbox'] == 'bwrap', t['proc']
assert t['boxed']['state'] == 'refused', t['boxed']
"
	run "$BERNSTEIN" status
	expect_stdout_contains "no adapter satisfies sandbox=container" "routing: the refusal names what was missing"
else
	skip "limits and the container tier" "needs root, bwrap, crun or runc, and cgroup pids limits"
fi

test_done
