#!/bin/sh
# Issue #14, class 2: secrets in bernstein's environment must not be readable
# through /proc/PID/environ by anything bernstein starts. bernstein gets canary
# secrets (ANTHROPIC_API_KEY, OPENAI_API_KEY, an unrelated SECRET_TOKEN, and
# BERNSTEIN_AUTH_TOKEN, which every agent is given); then, in `bernstein run`,
# a shell agent, its gate, the mock agent (through the git it runs) and a
# `sandbox: landlock` agent, and in `bernstein spawn openai_agents` the
# built-in runner's run_command, each run `peek`: it reads /proc/PID/environ
# of its ancestors up to bernstein (its parent, the mock agent or the runner,
# bernstein) and of their other children (the group keeper among them), and
# its own (with BERNSTEIN_CONTAIN=pgroup: contained in PID namespaces, as by
# default, they would not see bernstein at all, t0150). No canary may appear,
# nor the agents' secret in a bernstein process or in what a gate, the mock
# agent or the runner start. All of it as root and as an unprivileged uid
# (65534): as root, bernstein's environ is readable but zeroed; as another
# uid it is not readable at all (not dumpable). It fails on a bernstein that
# keeps its environment block.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0141 trust: bernstein's environment is not readable by what it starts"
. "$SRCDIR/tests/data/runner/runner-lib.sh"

CANARY="canary-$$-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
# a secret every agent is given (on the base allow-list): the agent has it,
# but not what the mock agent or the runner start, nor a gate
AGENT_CANARY="agent-secret-$$-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
REAL_GIT=$(command -v git)
# BERNSTEIN_CONTAIN reaches the mock agent and the runner (bernstein
# executables run as agents) through the test-only pass-through
PASS=BERNSTEIN_TEST_PASS_ENV=ASAN_OPTIONS,UBSAN_OPTIONS,LSAN_OPTIONS,BERNSTEIN_CONTAIN
# the unprivileged user must be able to reach its scratch directory
chmod 0711 "$T"

run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
LANDLOCK=no
[ "$RC" -eq 0 ] && LANDLOCK=yes

# The model's script for the runner: one run_command of peek, then done.
printf '%s\n' '{"responses": [
 {"tool_calls": [{"name": "run_command", "id": "c1", "arguments": {"argv": ["peek", "runner-cmd"]}}]},
 {"text": "peeked"}]}' >"$T/script.json"

# peek LABEL (written into DIR/bin by make_scenario): the report on stdout and,
# where the process may write, in DIR/peek/LABEL.PID. One line per process
# tried: "peek LABEL ROLE PID PPID read|denied COMM", then the variables read
# ("peek LABEL env PID: KEY=VALUE").
write_peek()
{
	cat >"$1" <<EOF
#!/bin/sh
label=\$1
out=$2/\$label.\$\$
stop=$$
me=\$\$
{
cat /proc/[0-9]*/stat 2>/dev/null | awk -v me="\$me" -v stop="\$stop" '
{
	rest = \$0
	sub(/^[^(]*\\(/, "", rest)
	if (!match(rest, /\\) [^)]*\$/))
		next
	comm = substr(rest, 1, RSTART - 1)
	split(substr(rest, RSTART + 2), f, " ")
	ppid[\$1] = f[2]
	name[\$1] = comm
}
END {
	for (a = ppid[me]; a != "" && a > 1 && a != stop && ppid[a] != stop; a = ppid[a])
		anc[a] = 1
	print "self", me, ppid[me], name[me]
	for (p in ppid) {
		if (p == me)
			continue
		if (p in anc)
			print "ancestor", p, ppid[p], name[p]
		else if (ppid[p] in anc)
			print "child", p, ppid[p], name[p]
	}
}' | while read -r role pid ppid comm; do
	if env=\$(tr '\0' '\n' <"/proc/\$pid/environ" 2>/dev/null); then
		st=read
	else
		st=denied
	fi
	# the name it has now, after the read: a child bernstein forked was
	# "bernstein" when listed, and may have become git or an agent (a
	# readable program) by the read
	now=\$(cat "/proc/\$pid/comm" 2>/dev/null) && comm=\$now
	echo "peek \$label \$role \$pid \$ppid \$st \$comm"
	printf '%s\n' "\$env" | grep -v '^\$' | sed "s|^|peek \$label env \$pid: |"
done
} | tee "\$out" 2>/dev/null
exit 0
EOF
	chmod 0755 "$1"
}

# make_scenario DIR: a repository with a shell agent profile, a plan (an agent
# with a gate, a mock agent that commits, a sandboxed agent) and bin/ with
# peek and a git that peeks when the mock agent runs it.
make_scenario()
{
	S=$1
	W=$S/work
	mkdir -p "$W" "$S/home" "$S/bin" "$S/peek"
	write_peek "$S/bin/peek" "$S/peek"
	cat >"$S/bin/git" <<EOF
#!/bin/sh
case " \$* " in
*" user.name=mock "*) peek mock-git >/dev/null ;;
esac
exec $REAL_GIT "\$@"
EOF
	chmod 0755 "$S/bin/git"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	mkdir -p "$W/.bernstein/catalog/profiles"
	shell_agent "$W"
	# the probe is outside the system: a sandboxed agent reads it because
	# the profile says so (docs/profile-format.md, runtime.sandbox.read)
	printf 'runtime:\n  sandbox: {read: ["%s"]}\n' "$S/bin" \
		>>"$W/.bernstein/catalog/profiles/shell.yaml"
	printf 'adapter: shell\nparallel: 3\nretry_backoff: 0\n' >"$W/bernstein.yaml"
	cat >"$W/plan.yaml" <<'EOF'
name: peek
tasks:
  - title: agent
    prompt: "peek agent; echo a > agent.txt"
    gates: [{name: peek, run: "peek gate"}]
  - title: mock
    adapter: mock
    prompt: |
      write mock.txt m
      commit mock work
EOF
	if [ "$LANDLOCK" = yes ]; then
		cat >>"$W/plan.yaml" <<'EOF'
  - title: boxed
    sandbox: landlock
    prompt: "peek landlock; echo b > boxed.txt"
EOF
	fi
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

# the report lines of LABEL in the scenario S (peek files, logs, the model's log)
reports()
{
	cat "$S"/peek/* "$T/requests.jsonl" 2>/dev/null | sed 's/\\n/\n/g' | grep -o "peek $1 .*"
	grep -rh "^peek $1 " "$S/work/.bernstein" 2>/dev/null
}

# check_label USER LABEL: peek ran as LABEL, found bernstein among its
# ancestors and the keeper among their children; as another uid than root
# bernstein's environ was not readable at all
check_label()
{
	_u=$1
	_l=$2
	reports "$_l" >"$T/report"
	check "$_u: $_l: no canary in what peek read" \
		sh -c '! grep -F "$1" "$2"' sh "$CANARY" "$T/report"
	case $_l in
	gate | mock-git | runner-cmd)
		# in itself and in bernstein's processes (the mock agent, the
		# runner); an agent running beside it has the secret, by design
		check "$_u: $_l: nor the agents' secret" awk -v c="$AGENT_CANARY" '
			$3 != "env" && ($3 == "self" || $7 ~ /^bernstein/) { b[$4 ":"] = 1 }
			$3 == "env" && ($4 in b) && index($0, c) { print; bad = 1 }
			END { exit bad }' "$T/report"
		;;
	esac
	check "$_u: $_l: peek tried a bernstein ancestor" \
		grep -q "^peek $_l ancestor [0-9]* [0-9]* [a-z]* bernstein" "$T/report"
	check "$_u: $_l: peek tried bernstein's group keeper" awk '
		$3 == "ancestor" && $7 == "bernstein" { b[$4] = 1 }
		$3 == "child" && $7 == "bernstein" { k[$5] = 1 }
		END { for (p in k) if (p in b) exit 0; exit 1 }' "$T/report"
	if [ "$_u" != root ]; then
		check "$_u: $_l: no bernstein process was readable" \
			sh -c '! grep -q "^peek [^ ]* [a-z]* [0-9]* [0-9]* read bernstein" "$1"' \
			sh "$T/report"
	elif [ "$_l" != landlock ]; then
		# (whether Landlock lets root read it depends on the kernel)
		check "$_u: $_l: root read bernstein's environ (and found it empty)" \
			grep -q "^peek $_l ancestor [0-9]* [0-9]* read bernstein" "$T/report"
	fi
}

# scenario USER [WRAPPER...]: the run and the spawn, as USER
scenario()
{
	_u=$1
	shift
	make_scenario "$T/$_u"
	[ "$_u" != root ] && chown -R 65534:65534 "$S"
	ENV="PATH=$S/bin:/usr/bin:/bin HOME=$S/home BERNSTEIN_AUDIT_KEY_PATH=$S/audit.key"
	ENV="$ENV ANTHROPIC_API_KEY=$CANARY-anthropic SECRET_TOKEN=$CANARY-secret"
	ENV="$ENV OPENAI_API_KEY=$CANARY-openai BERNSTEIN_AUTH_TOKEN=$AGENT_CANARY"
	# bernstein must be in peek's view: the weakest containment tier (by
	# default its children run in PID namespaces of their own and do not see
	# bernstein at all: t0150)
	ENV="$ENV BERNSTEIN_CONTAIN=pgroup"

	# shellcheck disable=SC2086 # ENV: words without blanks
	expect_exit 0 $ENV "$PASS" "$@" "$BERNSTEIN" -C "$S/work" run plan.yaml
	check "$_u: the agent's file is merged" test -f "$S/work/agent.txt"
	check "$_u: the mock agent's commit is merged" test -f "$S/work/mock.txt"
	check_label "$_u" agent
	check_label "$_u" gate
	check_label "$_u" mock-git
	if [ "$LANDLOCK" = yes ]; then
		check "$_u: the sandboxed agent's file is merged" test -f "$S/work/boxed.txt"
		check_label "$_u" landlock
	else
		skip "$_u: a sandboxed agent" "the kernel has no Landlock"
	fi

	fake_start "$T/script.json"
	# shellcheck disable=SC2086 # ENV: words without blanks
	expect_exit 0 $ENV "$PASS" BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE=builtin \
		BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 "$@" "$BERNSTEIN" spawn -C "$S/work" \
		openai_agents -m fake-model --set "base_url=$FAKE_URL" \
		--set api_key_env=OPENAI_API_KEY "peek through run_command"
	expect_stdout_contains "outcome: completed" "$_u: the runner completed"
	check_label "$_u" runner-cmd
	reports runner-cmd >"$T/report"
	check "$_u: runner-cmd: peek tried the runner" \
		grep -q "^peek runner-cmd ancestor [0-9]* [0-9]* [a-z]* bernstein-runne" "$T/report"
	fake_stop

	check "$_u: no canary in anything a child could read" \
		sh -c '! grep -rF "$1" "$2/peek" "$2/work/.bernstein" "$3/requests.jsonl"' \
		sh "$CANARY" "$S" "$T"
}

scenario root

if [ "$(id -u)" -ne 0 ]; then
	skip "an unprivileged uid" "the test does not run as root (setpriv needs it)"
elif ! command -v setpriv >/dev/null 2>&1 ||
	! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	skip "an unprivileged uid" "setpriv cannot switch to uid 65534"
elif ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$BERNSTEIN"; then
	skip "an unprivileged uid" "uid 65534 cannot run $BERNSTEIN"
else
	scenario nobody setpriv --reuid=65534 --regid=65534 --clear-groups
fi

test_done
