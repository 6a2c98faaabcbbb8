#!/bin/sh
# worktree_setup in the sandbox tiers (issue #19), landlock, bwrap and
# container, each skipped when the host lacks it. The plan's top-level
# worktree_setup links node_modules (the user's, untracked) and runs a
# setup_command that makes the file the gate needs. In every tier:
#   - the setup_command runs confined like the task's gates: it writes its
#     tree (deps/installed: the gate passes only thanks to it) and nothing
#     else: not through the linked directory, not into the user's checkout;
#     its HOME is the agent's private one;
#   - the linked directory (given by the plan, not bernstein.yaml) is
#     read-only to the agent: it reads through the link, cannot create or
#     change a file in it;
#   - the user's node_modules is untouched.
# And in landlock, a setup_command that cannot be confined is not run: an
# agent whose attempt failed swapped its login file's directory in its
# private HOME for a symlink to a directory of the user's; the setup of its
# retry is refused (setup_failed, "could not be confined"), it never ran
# and nothing appeared in the symlink's target.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0277 worktree_setup in the sandbox tiers: a confined setup_command, read-only links"

require_landlock

KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"

SETUP='mkdir -p deps && echo ok > deps/installed
if echo x > node_modules/pkg/setup-hacked 2>/dev/null; then echo wrote; else echo refused; fi > deps/link.txt
if echo x > "$OUT" 2>/dev/null; then echo wrote; else echo refused; fi > deps/escape.txt
echo "$HOME" > deps/home.txt'

for tier in landlock bwrap container; do
	case $tier in
	bwrap)
		if ! command -v bwrap >/dev/null 2>&1 || ! bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
			skip "$tier" "bubblewrap cannot run here"
			continue
		fi ;;
	container)
		if ! command -v crun >/dev/null 2>&1 && ! command -v runc >/dev/null 2>&1; then
			skip "$tier" "neither crun nor runc is installed"
			continue
		fi
		if [ "$(id -u)" -ne 0 ]; then
			skip "$tier" "the container tier is tested as root"
			continue
		fi ;;
	esac
	W=$T/$tier
	OUT=$W/setup-escape.txt
	mkdir -p "$W/node_modules/pkg"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	shell_agent "$W"
	printf 'runtime:\n  sandbox: {tiers: [landlock, bwrap, container]}\n' >>"$W/.bernstein/catalog/profiles/shell.yaml"
	printf '.bernstein/\nnode_modules\ndeps/\nsetup-escape.txt\n' >"$W/.gitignore"
	printf 'test -f deps/installed || { echo "deps missing"; exit 2; }\n' >"$W/check.sh"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\ngates: [{name: tests, run: "sh check.sh"}]\n' "$tier" >"$W/bernstein.yaml"
	{
		printf 'name: sb\nworktree_setup:\n  symlink_dirs: [node_modules]\n  setup_command: |\n'
		printf '%s\n' "$SETUP" | sed "s|\\\$OUT|$OUT|; s/^/    /"
		cat <<'EOF'
tasks:
  - title: probe
    prompt: |
      cat deps/link.txt > sb-setup-link.txt
      cat deps/escape.txt > sb-setup-escape.txt
      cat deps/home.txt > sb-setup-home.txt
      cat node_modules/pkg/index.js > sb-mod.txt
      if echo hacked > node_modules/pkg/hacked 2>/dev/null; then echo wrote; else echo refused; fi > sb-write.txt
      if echo hacked >> node_modules/pkg/index.js 2>/dev/null; then echo wrote; else echo refused; fi > sb-append.txt
EOF
	} >"$W/plan.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
	printf 'module.exports = "t0277";\n' >"$W/node_modules/pkg/index.js"

	run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$KEY' '$BERNSTEIN' run plan.yaml"
	check "$tier: the run succeeds, its gate passed thanks to the setup (exit $RC)" test "$RC" -eq 0
	[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
	check "$tier: the setup could not write through the link" grep -qx refused "$W/sb-setup-link.txt"
	check "$tier: the setup could not write into the user's checkout" grep -qx refused "$W/sb-setup-escape.txt"
	check "$tier: nothing escaped" test ! -e "$OUT"
	check "$tier: the setup's HOME is the agent's private one" grep -q "/.bernstein/runs/.*/home\$" "$W/sb-setup-home.txt"
	check "$tier: the agent reads through the link" grep -q t0277 "$W/sb-mod.txt"
	check "$tier: the agent cannot create a file through it" grep -qx refused "$W/sb-write.txt"
	check "$tier: the agent cannot change a file through it" grep -qx refused "$W/sb-append.txt"
	check "$tier: the user's node_modules is untouched" \
		sh -c "[ ! -e '$W/node_modules/pkg/hacked' ] && [ ! -e '$W/node_modules/pkg/setup-hacked' ] && ! grep -q hacked '$W/node_modules/pkg/index.js'"
done

# landlock: the retry's setup cannot be confined
P=$T/planter
H=$T/phome
mkdir -p "$P/.bernstein/catalog/profiles" "$H/.tok" "$T/victim"
printf '{"token": "t0277-login"}\n' >"$H/.tok/auth.json"
git -C "$P" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$P/.gitignore"
cat >"$P/.bernstein/catalog/profiles/planter.yaml" <<'EOF'
name: planter
display_name: "Shell agent"
shape: factory
invocation: {binary: sh, extra_args: [-c], prompt_positional: true}
capabilities: {tool_use: true}
runtime:
  home: isolated
  login: [.tok/auth.json]
  sandbox: {tiers: [landlock, bwrap]}
EOF
cat >"$P/.bernstein/catalog/strategy-matrix.yaml" <<'EOF'
adapters:
  planter:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF
cat >"$P/bernstein.yaml" <<EOF
adapter: planter
retry_backoff: 0
max_retries: 0
sandbox: landlock
worktree_setup: {setup_command: "touch '$T/setup-ran'; touch setup-ran"}
EOF
# shellcheck disable=SC2016 # the agent's script: its own $HOME
printf 'name: plant\ntasks:\n  - title: plants\n    prompt: |\n      rm -rf "$HOME/.tok"\n      ln -s %s "$HOME/.tok"\n      exit 1\n' "$T/victim" >"$P/plan.yaml"
git -C "$P" add -A >/dev/null 2>&1
git -C "$P" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
pw() { run sh -c "cd '$P' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$KEY' '$BERNSTEIN' $*"; }
pw run plan.yaml
check "planter: the first attempt fails (exit $RC)" test "$RC" -eq 1
check "planter: its setup ran, confined (its tree only)" \
	sh -c "ls '$P'/.bernstein/worktrees/*/setup-ran && [ ! -e '$T/setup-ran' ]"
rm -f "$P"/.bernstein/worktrees/*/setup-ran
pw retry plants
check "planter: the retry fails (exit $RC)" test "$RC" -eq 1
pw status --json
check "planter: setup_failed" grep -q '"outcome": "setup_failed"' "$T/stdout"
check "planter: the setup could not be confined" grep -q 'worktree setup command could not be confined: ' "$T/stdout"
check "planter: the setup never ran" \
	sh -c "[ ! -e '$T/setup-ran' ] && ! ls '$P'/.bernstein/worktrees/*/setup-ran 2>/dev/null"
check "planter: nothing appeared in the symlink's target" sh -c "[ -z \"\$(ls -A '$T/victim')\" ]"
check "planter: the audit chain has it" sh -c "cat '$P'/.bernstein/audit/*.jsonl | grep -q 'worktree setup command could not be confined'"

test_done
