#!/bin/sh
# Issue #15: limits: {memory, pids, cpu} in bernstein.yaml and per plan task,
# enforced on the agent and everything it starts through its cgroups. A task
# over its memory limit ends with the outcome oom (the run loop treats it as
# failed); a pids limit stops a fork bomb; a cpu limit caps the CPU time the
# agent gets per second of wall time (measured as a ratio, no wall-clock
# assertion); bad values are refused with FILE:LINE:COL; and a task asking
# for limits on a host that cannot enforce them (an unprivileged uid without
# a delegated cgroup) is refused with the reason, never run without them.
. "$SRCDIR/tests/integration/lib.sh"

: "${FAKE_AGENT:?FAKE_AGENT must name tests/helpers/fake-agent}"

test_begin "t0151 limits: memory, pids and cpu of a task's agent"

PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS
chmod 0711 "$T"

# setup DIR: a repository with the stub profile (the prompt is the path of a
# fake-agent script, passed with -f)
setup()
{
	D=$1
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
	printf 'adapter: stub\nparallel: 1\nretry_backoff: 0\nlimits: {pids: 64}\n' \
		>"$W/bernstein.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
	ENV="PATH=/usr/bin:/bin HOME=$D/home XDG_CONFIG_HOME=$D/config"
	ENV="$ENV BERNSTEIN_AUDIT_KEY_PATH=$D/audit.key"
}

# task_field ID FIELD: the task's FIELD in the last `status --json`
task_field()
{
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print([t for t in d["tasks"] if t["id"] == sys.argv[2]][0][sys.argv[3]])' \
		"$T/stdout" "$1" "$2"
}

# ---- validation ----
setup "$T/v"
cat >"$W/bad.yaml" <<'EOT'
name: bad
tasks:
  - title: a
    prompt: p
    limits: {memory: 12Q}
  - title: b
    prompt: p
    limits: {pids: 0}
  - title: c
    prompt: p
    limits: {cpu: 0.5, swap: 1}
EOT
expect_exit 3 "$BERNSTEIN" -C "$W" plan validate bad.yaml
expect_stderr_contains "field 'tasks[0].limits.memory': expected a size in bytes (512M, 2G, 1048576), got '12Q'"
expect_stderr_contains "field 'tasks[1].limits.pids': 0 is out of range"
expect_stderr_contains "swap"
printf 'limits: {memory: 1K}\n' >"$W/bernstein.yaml"
expect_exit 3 "$BERNSTEIN" -C "$W" config validate
expect_stderr_contains "bernstein.yaml:1:18: field 'limits.memory': '1K' is out of range (1M..1024T)"
printf 'role_model_policy:\n  qa: {limits: {pids: 0}}\n' >"$W/bernstein.yaml"
expect_exit 3 "$BERNSTEIN" -C "$W" config validate
expect_stderr_contains "bernstein.yaml:2:23: field 'role_model_policy.qa.limits.pids': 0 is out of range"

# ---- root: enforced ----
setup "$T/root"
printf 'alloc 256\nexit 0\n' >"$D/alloc.txt"
printf 'fork-bomb 200\nexit 0\n' >"$D/bomb.txt"
printf 'spin 1500\nexit 0\n' >"$D/spin.txt"
cat >"$W/plan.yaml" <<EOT
name: limits
tasks:
  - title: hog
    prompt: "$D/alloc.txt"
    limits: {memory: 32M}
  - title: bomb
    prompt: "$D/bomb.txt"
    limits: {pids: 16}
  - title: spin
    prompt: "$D/spin.txt"
    limits: {cpu: 0.2}
  - title: free
    prompt: "$D/alloc.txt"
EOT
run "$BERNSTEIN" doctor --json
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not all(v["enforced"] for v in d["limits"].values()))' "$T/stdout"; then
	# shellcheck disable=SC2086 # ENV: words without blanks
	expect_exit 1 $ENV "$PASS" "$BERNSTEIN" -C "$W" run plan.yaml
	# shellcheck disable=SC2086 # ENV: words without blanks
	run $ENV "$BERNSTEIN" -C "$W" status --json
	cp "$T/stdout" "$T/status.json"
	check "memory: the task over its limit ends oom" test "$(task_field hog outcome)" = oom
	check "memory: and fails, as failed does" test "$(task_field hog state)" = failed
	check "memory: the reason names the limit" \
		sh -c 'case "$1" in *"over its memory limit"*) exit 0 ;; esac; exit 1' sh \
		"$(task_field hog reason)"
	check "memory: the same agent without a limit is not oom" \
		test "$(task_field free outcome)" != oom
	grep -rh '^fork-bomb ' "$W/.bernstein/runs" >"$T/bomb" 2>/dev/null
	check "pids: the fork bomb was stopped before 16 processes" \
		awk '$1 == "fork-bomb" && $2 < 16 && $5 == "EAGAIN" { ok = 1 } END { exit !ok }' \
		"$T/bomb"
	grep -rh '^spin ' "$W/.bernstein/runs" >"$T/spin" 2>/dev/null
	check "cpu: 0.2 of a CPU: at most 0.35 s of CPU per second of wall time" \
		awk '{ split($2, w, "="); split($3, c, "=")
			if (w[2] > 0 && c[2] / w[2] <= 0.35) ok = 1 } END { exit !ok }' "$T/spin"
	diag "$(cat "$T/bomb" "$T/spin")"
else
	skip "limits enforced as root" "this host cannot enforce every limit"
fi

# ---- root: a role's limits between bernstein.yaml's and the task's, and a
# gate under its task's limits ----
run "$BERNSTEIN" doctor --json
if [ "$(id -u)" -ne 0 ] || ! python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not d["limits"]["pids"]["enforced"] or d["limits"]["pids"]["via"] != "cgroup v1 pids")' "$T/stdout"; then
	skip "role and gate limits" "needs root and cgroup v1 pids limits (the gate reads pids.max there)"
else
	setup "$T/roles"
	for n in 1 2 3; do
		printf 'fork-bomb 100\nwrite-file out-%s.txt done\nexit 0\n' "$n" >"$W/bomb$n.txt"
	done
	cat >"$W/bernstein.yaml" <<'EOT'
adapter: stub
parallel: 1
retry_backoff: 0
max_retries: 0
limits: {pids: 64}
role_model_policy:
  qa: {limits: {pids: 24}}
gates:
  - {name: lim, run: "cat /sys/fs/cgroup/pids$(awk -F: '$2 == \"pids\" { print $3 }' /proc/self/cgroup)/pids.max"}
EOT
	cat >"$W/plan.yaml" <<'EOT'
name: roles
tasks:
  - {title: roled, role: qa, prompt: bomb1.txt}
  - {title: own, role: qa, prompt: bomb2.txt, limits: {pids: 40}}
  - {title: plain, prompt: bomb3.txt}
EOT
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -qm roles >/dev/null 2>&1
	# (an ASan build's leak check at exit needs a thread the pids limit no
	# longer allows: the bomb's children are still there)
	# shellcheck disable=SC2086 # ENV: words without blanks
	expect_exit 0 $ENV "$PASS" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		"$BERNSTEIN" -C "$W" run plan.yaml
	# the last fork-bomb line and the gate's pids.max of each task
	for t in roled own plain; do
		d=$(ls -d "$W"/.bernstein/runs/*/"$t"-*/1 2>/dev/null | head -1)
		printf '%s %s %s\n' "$t" "$(cat "$d"/gate-lim.log 2>/dev/null | tr -d '\n')" \
			"$(grep -rh '^fork-bomb ' "$d" 2>/dev/null | awk '{ print $2 }' | tail -1)"
	done >"$T/roles.txt"
	diag "$(cat "$T/roles.txt")"
	check "roles: the role's pids (24) over bernstein.yaml's (64), for the agent and its gate" \
		awk '$1 == "roled" && $2 == 24 && $3 < 24 { ok = 1 } END { exit !ok }' "$T/roles.txt"
	check "roles: the task's own pids (40) over its role's" \
		awk '$1 == "own" && $2 == 40 && $3 < 40 && $3 >= 24 { ok = 1 } END { exit !ok }' "$T/roles.txt"
	check "roles: a task without a role gets bernstein.yaml's (64)" \
		awk '$1 == "plain" && $2 == 64 && $3 < 64 && $3 >= 40 { ok = 1 } END { exit !ok }' "$T/roles.txt"
	expect_exit 0 "$BERNSTEIN" -C "$W" config show --json
	check "roles: config show has the role's limits" python3 -c "
import json
c = json.load(open('$T/stdout'))
c = c.get('config', c)
assert c['role_model_policy']['qa']['limits'] == {'pids': 24}, c['role_model_policy']
assert c['limits'] == {'pids': 64}, c.get('limits')"
fi

# ---- root, sandbox: container: the limits in the OCI bundle, the runtime
# started in the task's cgroups (its own threads count: pids 48, memory 64M) ----
run "$BERNSTEIN" doctor --json
if [ "$(id -u)" -ne 0 ] || ! { command -v crun || command -v runc; } >/dev/null 2>&1 ||
	! "$BERNSTEIN" shim --landlock-ro / -- /bin/true >/dev/null 2>&1; then
	skip "limits in a container" "needs root, crun or runc, and Landlock"
elif ! python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not all(v["enforced"] for v in d["limits"].values()))' "$T/stdout"; then
	skip "limits in a container" "this host cannot enforce every limit"
else
	setup "$T/ctr"
	# the scripts in the task's clone: the container reads nothing else
	printf 'alloc 256\nexit 0\n' >"$W/alloc.txt"
	printf 'fork-bomb 200\nexit 0\n' >"$W/bomb.txt"
	printf 'spin 1500\nexit 0\n' >"$W/spin.txt"
	printf 'runtime: {sandbox: {tiers: [container]}}\n' >>"$W/.bernstein/catalog/profiles/stub.yaml"
	printf 'adapter: stub\nparallel: 1\nretry_backoff: 0\nmax_retries: 0\nsandbox: container\n' \
		>"$W/bernstein.yaml"
	cat >"$W/plan.yaml" <<EOT
name: limits
tasks:
  - title: hog
    prompt: alloc.txt
    limits: {memory: 64M}
  - title: bomb
    prompt: bomb.txt
    limits: {pids: 48}
  - title: spin
    prompt: spin.txt
    limits: {cpu: 0.2}
  - title: free
    prompt: alloc.txt
EOT
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -qm ctr >/dev/null 2>&1
	# shellcheck disable=SC2086 # ENV: words without blanks
	expect_exit 1 $ENV "$PASS" "$BERNSTEIN" -C "$W" run plan.yaml
	# shellcheck disable=SC2086 # ENV: words without blanks
	run $ENV "$BERNSTEIN" -C "$W" status --json
	cp "$T/stdout" "$T/status-ctr.json"
	diag "$(python3 -c "
import json
for t in json.load(open('$T/status-ctr.json'))['tasks']:
    print(t['title'], t['state'], t.get('outcome'), t.get('reason'))")"
	check "container: every task ran in a container" python3 -c "
import json
d = json.load(open('$T/status-ctr.json'))
assert all(t['sandbox'] == 'container' for t in d['tasks']), d['tasks']"
	check "container: the bundle carries the limits" python3 -c "
import glob, json
c = [json.load(open(f)) for f in glob.glob('$W/.bernstein/runs/*/*/*/oci-*/config.json')]
r = [x['linux'].get('resources') for x in c]
assert {'memory': {'limit': 64 << 20}} in r and {'pids': {'limit': 48}} in r, r
assert {'cpu': {'quota': 20000, 'period': 100000}} in r, r"
	check "container: the task over its memory limit ends oom" test "$(task_field hog outcome)" = oom
	check "container: and fails, as failed does" test "$(task_field hog state)" = failed
	check "container: the same agent without a limit is not oom" \
		test "$(task_field free outcome)" != oom
	grep -rh '^fork-bomb ' "$W/.bernstein/runs" >"$T/bomb" 2>/dev/null
	check "container: the fork bomb was stopped before 48 processes" \
		awk '$1 == "fork-bomb" && $2 < 48 && $5 == "EAGAIN" { ok = 1 } END { exit !ok }' \
		"$T/bomb"
	grep -rh '^spin ' "$W/.bernstein/runs" >"$T/spin" 2>/dev/null
	check "container: cpu 0.2: at most 0.35 s of CPU per second of wall time" \
		awk '{ split($2, w, "="); split($3, c, "=")
			if (w[2] > 0 && c[2] / w[2] <= 0.35) ok = 1 } END { exit !ok }' "$T/spin"
	diag "$(cat "$T/bomb" "$T/spin")"
	check "container: no cgroup of the run is left" \
		sh -c '! find /sys/fs/cgroup -path "*/bernstein/p*" -name "*-hog*" 2>/dev/null | grep -q .'
fi

# ---- an unprivileged uid without cgroups: refused, with the reason ----
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1 ||
	! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$BERNSTEIN"; then
	skip "an unprivileged uid" "needs root and setpriv"
else
	U="setpriv --reuid=65534 --regid=65534 --clear-groups"
	setup "$T/nobody"
	printf 'exit 0\n' >"$D/ok.txt"
	cat >"$W/plan.yaml" <<EOT
name: refused
tasks:
  - title: limited
    prompt: "$D/ok.txt"
    limits: {memory: 64M}
EOT
	printf 'adapter: stub\nparallel: 1\nretry_backoff: 0\n' >"$W/bernstein.yaml"
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -qam cfg >/dev/null 2>&1
	chown -R 65534:65534 "$D"
	# shellcheck disable=SC2086 # U, ENV: words without blanks
	run $ENV $U "$BERNSTEIN" -C "$W" doctor --json
	if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(d["limits"]["memory"]["enforced"])' "$T/stdout"; then
		# shellcheck disable=SC2086 # U, ENV: words without blanks
		run $ENV "$PASS" $U "$BERNSTEIN" -C "$W" run plan.yaml
		# shellcheck disable=SC2086 # U, ENV: words without blanks
		run $ENV $U "$BERNSTEIN" -C "$W" status --json
		check "nobody: the task is refused" test "$(task_field limited state)" = refused
		check "nobody: with the reason" grep -q \
			"limits: memory: no cgroup memory controller is available to bernstein" \
			"$T/stdout"
	else
		skip "nobody: refused" "uid 65534 can enforce a memory limit here"
	fi
fi

test_done
