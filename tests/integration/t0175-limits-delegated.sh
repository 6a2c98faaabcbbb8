#!/bin/sh
# limits: as a user other than root, through a cgroup delegated to that user
# (issue #15). As systemd's Delegate=yes does, root makes a cgroup in each
# hierarchy that has the memory, pids or cpu controller (cgroup v1 on a
# v1/v2 hybrid host such as the development machines, cgroup v2 where the
# controllers are there; and the cgroup2 tree for cgroup.kill), chowns it
# and its files to uid 65534 and moves a shell into it; that shell becomes
# uid 65534 and runs bernstein. `doctor` then reports every limit enforced,
# an agent over its memory limit ends `oom` (and fails), a fork bomb stops
# at its pids limit, the task's cgroups are made beneath the delegated ones
# and none is left after the run. Without a delegated cgroup, the same task
# is refused with the reason (t0151). Skipped, with the reason, when the
# host has no writable cgroup file system for root or no setpriv.
. "$SRCDIR/tests/integration/lib.sh"

: "${FAKE_AGENT:?FAKE_AGENT must name tests/helpers/fake-agent}"

test_begin "t0175 limits as uid 65534 through a delegated cgroup"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	echo "1..0 # SKIP needs root (to delegate a cgroup) and setpriv(1) to drop to uid 65534"
	exit 0
fi
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$BERNSTEIN"; then
	echo "1..0 # SKIP uid 65534 cannot run $BERNSTEIN"
	exit 0
fi

NAME=bernstein-t0175-$$
DELEG=
# delegate: in every mounted cgroup hierarchy with memory, pids or cpu (v1)
# and in cgroup2, make $NAME, owned by 65534 with its files
for m in $(awk '$3 == "cgroup2" { print $2 }
	$3 == "cgroup" { n = split($4, o, ","); for (i = 1; i <= n; i++)
		if (o[i] == "memory" || o[i] == "pids" || o[i] == "cpu") { print $2; break } }' /proc/self/mounts); do
	if mkdir "$m/$NAME" 2>/dev/null; then
		chown -R 65534:65534 "$m/$NAME"
		DELEG="$DELEG $m/$NAME"
	fi
done
cleanup_cgroups() {
	for d in $DELEG; do
		# the processes are gone (the run ended): empty directories only
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
}
trap 'cleanup_cgroups' EXIT
if [ -z "$DELEG" ]; then
	echo "1..0 # SKIP root cannot make a cgroup here (no writable cgroup file system)"
	exit 0
fi
diag "delegated:$DELEG"

chmod 0711 "$T"
D=$T/nobody
W=$D/work
mkdir -p "$W" "$D/home" "$D/config"
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
mkdir -p "$W/.bernstein/catalog/profiles"
cat >"$W/.bernstein/catalog/profiles/stub.yaml" <<EOT
name: stub
display_name: "Stub agent"
shape: factory
invocation:
  binary: $FAKE_AGENT
  prompt_flag: -f
capabilities:
  max_parallel_workers: 4
EOT
cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOT'
adapters:
  stub:
    resume: unsupported
    dangerous_mode: unsupported
    event_channel: text-signals
EOT
printf 'adapter: stub\nparallel: 1\nretry_backoff: 0\nmax_retries: 0\n' >"$W/bernstein.yaml"
printf 'alloc 256\nexit 0\n' >"$D/alloc.txt"
printf 'fork-bomb 200\nexit 0\n' >"$D/bomb.txt"
cat >"$W/plan.yaml" <<EOT
name: delegated
tasks:
  - title: hog
    prompt: "$D/alloc.txt"
    limits: {memory: 32M}
  - title: bomb
    prompt: "$D/bomb.txt"
    limits: {pids: 16}
EOT
git -C "$W" add -A >/dev/null 2>&1
git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
chown -R 65534:65534 "$D"

PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS
ENV="PATH=/usr/bin:/bin HOME=$D/home XDG_CONFIG_HOME=$D/config BERNSTEIN_AUDIT_KEY_PATH=$D/audit.key"
AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
# in_deleg CMD...: CMD as uid 65534 from a shell moved into the delegated cgroups
in_deleg() {
	# shellcheck disable=SC2086 # AS, ENV: words without blanks
	run sh -c "for d in $DELEG; do echo \$\$ >\"\$d/cgroup.procs\" || exit 99; done; exec \"\$@\"" \
		sh $AS env $ENV "$PASS" "$@"
}

task_field() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print([t for t in d["tasks"] if t["id"] == sys.argv[2]][0][sys.argv[3]])' \
		"$T/status.json" "$1" "$2"
}

in_deleg "$BERNSTEIN" -C "$W" doctor --json
if ! python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not d["limits"]["memory"]["enforced"])' "$T/stdout"; then
	why=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["limits"]["memory"])' "$T/stdout" 2>&1)
	echo "# SKIP: uid 65534 cannot enforce a memory limit through the delegated cgroups: $why"
	skip "limits through a delegated cgroup" "the host refuses: $why"
	test_done
	exit 0
fi
ok "doctor as uid 65534 in the delegated cgroups: the memory limit is enforced"
check "doctor: pids and cpu are enforced too" python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not all(v["enforced"] for v in d["limits"].values()))' "$T/stdout"

in_deleg "$BERNSTEIN" -C "$W" run plan.yaml
check "the run ends 1 (the limited tasks fail)" test "$RC" -eq 1
run env $ENV $AS "$BERNSTEIN" -C "$W" status --json
cp "$T/stdout" "$T/status.json"
check "memory: the task over its limit ends oom" test "$(task_field hog outcome)" = oom
check "memory: and fails" test "$(task_field hog state)" = failed
grep -rh '^fork-bomb ' "$W/.bernstein/runs" >"$T/bomb" 2>/dev/null
check "pids: the fork bomb was stopped before 16 processes" \
	awk '$1 == "fork-bomb" && $2 < 16 && $5 == "EAGAIN" { ok = 1 } END { exit !ok }' "$T/bomb"
left=
for d in $DELEG; do
	[ -n "$(find "$d" -mindepth 1 -type d 2>/dev/null)" ] && left="$left $(find "$d" -mindepth 1 -type d)"
done
check "no task cgroup is left beneath the delegated ones" test -z "$left"
[ -n "$left" ] && diag "left:$left"
test_done
