#!/bin/sh
# The trust boundary, git (docs/security.md): an agent owns its tree, .git
# included, and bernstein's own git there must run nothing of the agent's.
# Every hostile command below reports to a canary (a TCP listener on
# loopback, reachable even from bernstein's Landlock-confined git in a
# sandboxed clone), so "it did not run" is observed, not assumed. The agent
# does its git work before it arms anything, so every report would be
# bernstein's. Tried:
#   - worktree: .git swapped for "gitdir: <a crafted repository>" whose
#     config has fsmonitor, hooksPath, a clean filter (selected by the
#     agent's .gitattributes) and an include; .git replaced by a directory;
#     a nested repository (a committed gitlink) with its own fsmonitor;
#   - sandboxed clone: the clone's own .git/config (fsmonitor, hooksPath,
#     filters, textconv, include, core.worktree), .git/hooks, info/attributes;
#     a .git/commondir (refused: the task fails, saying why);
#   - bernstein's environment: GIT_CONFIG_COUNT/KEY/VALUE, GIT_DIR,
#     GIT_EXTERNAL_DIFF; a relative PATH entry in front of a `git` the agent
#     committed to the main checkout;
#   - a sandboxed task's gate running the agent's script: confined like
#     the agent (no write to the main checkout or the user's HOME);
#   - `bernstein spawn` after an agent wrote fsmonitor, hooks and pager
#     settings into the checkout's .git/config.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0140 trust boundary: bernstein's git in an agent's tree"

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
CANARY=$T/canary.log
: >"$CANARY"

# ---- the canary ----
python3 - "$CANARY" "$T/port" <<'EOF' >/dev/null 2>&1 &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[2] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(4096)
    except OSError:
        data = b"?"
    c.close()
    with open(sys.argv[1], "a") as f:
        f.write(data.decode(errors="replace").strip() + "\n")
EOF
CANARY_PID=$!
trap 'kill $CANARY_PID 2>/dev/null; _lib_cleanup' EXIT
i=0
while [ ! -s "$T/port" ] && [ $i -lt 500 ]; do
	sleep 0.01
	i=$((i + 1))
done
PORT=$(cat "$T/port" 2>/dev/null)
if [ -z "$PORT" ]; then
	echo "Bail out! the canary listener did not start"
	exit 1
fi
# A shell command that reports NAME to the canary.
evil() { printf "bash -c 'echo %s >/dev/tcp/127.0.0.1/%s' #" "$1" "$PORT"; }
# The canary works: a report arrives.
bash -c "echo selftest >/dev/tcp/127.0.0.1/$PORT"
i=0
while ! grep -q selftest "$CANARY" && [ $i -lt 500 ]; do
	sleep 0.01
	i=$((i + 1))
done
check "the canary hears a report" grep -q selftest "$CANARY"
: >"$CANARY"
canary_quiet()
{
	# a report still in flight lands within a moment; then the log is read
	sleep 0.2
	if [ -s "$CANARY" ]; then
		diag "ran: $(tr '\n' ' ' <"$CANARY")"
		not_ok "$1"
	else
		ok "$1"
	fi
	: >"$CANARY"
}

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
printf 'base\n' >"$W/base.txt"
mkdir -p "$W/.bernstein/catalog/profiles"
shell_agent "$W"
printf 'adapter: shell\nparallel: 4\nretry_backoff: 0\n' >"$W/bernstein.yaml"
commit_all base

# The hostile repository configuration: every key that would make a git
# reading it run a program, each reporting its name.
cat >"$T/evil-config" <<EOF
[core]
	fsmonitor = "$(evil fsmonitor)"
	hooksPath = $T/evil-hooks
	pager = "$(evil pager)"
	editor = "$(evil editor)"
	askPass = "$(evil askpass)"
	sshCommand = "$(evil ssh)"
[filter "evil"]
	clean = "$(evil filter-clean) cat"
	smudge = "$(evil filter-smudge) cat"
	process = "$(evil filter-process)"
[diff "evil"]
	textconv = "$(evil textconv) cat"
[diff]
	external = "$(evil diff-external)"
[merge "evil"]
	driver = "$(evil merge-driver) true"
[include]
	path = $T/evil-include
[gpg]
	program = "$(evil gpg)"
[commit]
	gpgSign = true
EOF
cat >"$T/evil-include" <<EOF
[core]
	fsmonitor = "$(evil fsmonitor-included)"
EOF
mkdir -p "$T/evil-hooks"
for h in pre-commit post-commit commit-msg prepare-commit-msg post-checkout post-merge \
	pre-merge-commit reference-transaction post-index-change pre-auto-gc; do
	printf '#!/bin/sh\n%s\n' "$(evil "hook-$h")" >"$T/evil-hooks/$h"
	chmod +x "$T/evil-hooks/$h"
done
# Arm a repository: the hostile config, hooks in its own hooks directory.
cat >"$T/arm.sh" <<EOF
# arm GITDIR: append the hostile config and install the hooks there
cat "$T/evil-config" >>"\$1/config"
mkdir -p "\$1/hooks" "\$1/info"
cp "$T/evil-hooks/"* "\$1/hooks/"
printf '* filter=evil diff=evil merge=evil\n' >"\$1/info/attributes"
EOF

# ---- worktree: the .git file swapped, replaced by a directory, a nested repository ----
cat >"$T/swap-file.sh" <<EOF
set -e
echo swapped >swapped.txt
git init -q --bare evil-repo.git
printf '* filter=evil diff=evil merge=evil\n' >.gitattributes
sh "$T/arm.sh" "\$PWD/evil-repo.git"
printf 'gitdir: %s\n' "\$PWD/evil-repo.git" >.git
EOF
cat >"$T/swap-dir.sh" <<EOF
set -e
echo dir >dir.txt
rm -f .git
git init -q .
sh "$T/arm.sh" "\$PWD/.git"
EOF
cat >"$T/nested.sh" <<EOF
set -e
git init -q sub
git -C sub -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m sub
echo nested >nested.txt
git add sub nested.txt
git -c user.name=a -c user.email=a@example.com commit -q -m 'with a submodule'
echo more >sub/file.txt
sh "$T/arm.sh" "\$PWD/sub/.git"
EOF
cat >"$W/wt.yaml" <<EOF
name: worktree attacks
tasks:
  - title: swap-file
    prompt: "sh $T/swap-file.sh"
  - title: swap-dir
    prompt: "sh $T/swap-dir.sh"
  - title: nested
    prompt: "sh $T/nested.sh"
EOF
commit_all "worktree plan"
expect_exit 0 "$KEY" "$BERNSTEIN" run wt.yaml
canary_quiet "no program of an agent's git configuration ran (worktrees)"
check "the swapped-.git task's work is merged" grep -qx swapped "$W/swapped.txt"
check "the .git-directory task's work is merged" grep -qx dir "$W/dir.txt"
check "the nested-repository task's work is merged" grep -qx nested "$W/nested.txt"
check "the merged files are the agent's bytes (no filter ran)" grep -qx base "$W/base.txt"
check "no worktree is left registered" \
	sh -c "[ \$(git -C '$W' worktree list --porcelain | grep -c ^worktree) -eq 1 ]"
check "no worktree directory is left" \
	sh -c "[ -z \"\$(ls '$W/.bernstein/worktrees' 2>/dev/null)\" ]"
check "the checkout is clean" \
	sh -c "[ -z \"\$(git -C '$W' status --porcelain --untracked-files=no)\" ]"

# ---- a sandboxed clone: its own .git armed ----
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	skip "sandboxed clones" "the kernel has no Landlock"
else
	# A sandboxed agent reads only an allow-list: its scripts are in a
	# directory its profile declares (runtime.sandbox.read)
	A=$T/agent-files
	mkdir -p "$A"
	cp -R "$T/evil-hooks" "$T/evil-config" "$A/"
	sed "s#$T/evil-#$A/evil-#g" "$T/arm.sh" >"$A/arm.sh"
	printf 'runtime:\n  sandbox: {read: ["%s"]}\n' "$A" \
		>>"$W/.bernstein/catalog/profiles/shell.yaml"
	cat >"$A/clone.sh" <<EOF
set -e
echo cloned >cloned.txt
printf 'text\n' >filtered.txt
printf '* filter=evil diff=evil merge=evil\n' >.gitattributes
sh "$A/arm.sh" "\$PWD/.git"
printf '[core]\n\tworktree = /\n' >>.git/config
EOF
	cat >"$A/commondir.sh" <<EOF
echo common >common.txt
printf '%s\n' "$W/.git" >.git/commondir
EOF
	cat >"$A/gate.sh" <<EOF
echo escaped >"$W/gate-escape.txt" 2>/dev/null
echo escaped >"$T/home/gate-escape.txt" 2>/dev/null
echo gated >"\$TMPDIR/gate-ran.txt"
exit 0
EOF
	cat >"$W/bernstein.yaml" <<EOF
adapter: shell
parallel: 4
retry_backoff: 0
sandbox: landlock
gates:
  - {name: agent-script, run: "sh ./gate.sh"}
EOF
	cat >"$W/clone.yaml" <<EOF
name: clone attacks
tasks:
  - title: clone
    prompt: "cp $A/gate.sh gate.sh && sh $A/clone.sh"
  - title: commondir
    prompt: "cp $A/gate.sh gate.sh && sh $A/commondir.sh"
EOF
	commit_all "clone plan"
	expect_exit 1 "$KEY" "$BERNSTEIN" run clone.yaml
	canary_quiet "no program of an agent's git configuration ran (clones)"
	check "the armed clone's work is merged" grep -qx cloned "$W/cloned.txt"
	check "its bytes are the agent's (no clean filter ran)" grep -qx text "$W/filtered.txt"
	run "$BERNSTEIN" status --json
	expect_stdout_contains "commondir" "the commondir task fails, saying why"
	check "the commondir task's work is not merged" test ! -e "$W/common.txt"
	check "the gate ran" sh -c "ls '$W'/.bernstein/runs/*/*/tmp/gate-ran.txt >/dev/null 2>&1"
	check "the gate could not write the main checkout" test ! -e "$W/gate-escape.txt"
	check "nor the user's HOME" test ! -e "$T/home/gate-escape.txt"
	printf 'adapter: shell\nparallel: 4\nretry_backoff: 0\n' >"$W/bernstein.yaml"
	git_q rm -q --cached gate.sh
	rm -f "$W/gate.sh"
	commit_all "back to unsandboxed"
fi

# ---- bernstein's own environment ----
cat >"$W/env.yaml" <<'EOF'
name: env
tasks:
  - title: plain
    prompt: "echo plain > plain.txt"
EOF
commit_all "env plan"
expect_exit 0 "$KEY" \
	"GIT_CONFIG_COUNT=1" "GIT_CONFIG_KEY_0=core.fsmonitor" \
	"GIT_CONFIG_VALUE_0=$(evil env-config-count)" \
	"GIT_CONFIG_PARAMETERS='core.hooksPath'='$T/evil-hooks'" \
	"GIT_DIR=$T/nonexistent" "GIT_WORK_TREE=$T" "GIT_INDEX_FILE=$T/idx" \
	"GIT_EXTERNAL_DIFF=$(evil external-diff-env)" "GIT_SSH_COMMAND=$(evil ssh-env)" \
	"$BERNSTEIN" run env.yaml
canary_quiet "GIT_* variables of bernstein's environment reach no git"
check "the task is merged" grep -qx plain "$W/plain.txt"

# a `git` committed to the main checkout, and a PATH with "." in front
printf '#!/bin/sh\n%s\n' "$(evil planted-git)" >"$W/git"
chmod +x "$W/git"
cat >"$W/path.yaml" <<'EOF'
name: path
tasks:
  - title: pathy
    prompt: "echo pathy > pathy.txt"
EOF
commit_all "a planted git"
expect_exit 0 "$KEY" "PATH=.:/usr/bin:/bin" "$BERNSTEIN" run path.yaml
canary_quiet "a git in the current directory is never run (relative PATH entries)"
check "the task is merged" grep -qx pathy "$W/pathy.txt"
git_q rm -q git
commit_all "no planted git"

# ---- spawn in a checkout whose .git/config the agent armed ----
S=$T/spawn
git init -q -b main "$S" >/dev/null 2>&1
mkdir -p "$S/.bernstein/catalog/profiles"
cp "$W/.bernstein/catalog/profiles/shell.yaml" "$S/.bernstein/catalog/profiles/"
cp "$W/.bernstein/catalog/strategy-matrix.yaml" "$S/.bernstein/catalog/"
printf 'x\n' >"$S/x.txt"
git -C "$S" add x.txt >/dev/null 2>&1
git -C "$S" -c user.name=t -c user.email=t@example.com commit -q -m x >/dev/null 2>&1
cat >"$T/spawn-arm.sh" <<EOF
echo y >y.txt
cat >>.git/config <<'CFG'
[core]
	fsmonitor = "$(evil spawn-fsmonitor)"
	hooksPath = $T/evil-hooks
	pager = "$(evil spawn-pager)"
CFG
EOF
run "$BERNSTEIN" -C "$S" spawn shell "sh $T/spawn-arm.sh"
check "spawn ran the agent (exit 0)" test "$RC" -eq 0
canary_quiet "spawn's status after the run ran nothing of the agent's config"

test_done
