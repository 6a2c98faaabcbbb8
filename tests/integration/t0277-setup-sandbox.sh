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
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0277 worktree_setup in the sandbox tiers: a confined setup_command, read-only links"

run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
if [ "$RC" -ne 0 ]; then
	echo "1..0 # SKIP the kernel has no Landlock: $(cat "$T/stderr")"
	exit 0
fi

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

test_done
