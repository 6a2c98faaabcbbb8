#!/bin/sh
# worktree_setup (issue #19): a repository with an untracked, ignored .env,
# a node_modules-like directory and a .worktreeinclude; each task's fresh
# tree gets .env copied, node_modules linked and the ignored files the
# .worktreeinclude patterns name copied (not an unignored one), before its
# agent starts; nothing of it is committed. Hostile values are refused: a
# `..` or absolute path at bernstein.yaml's line:col (exit 3), a symlink in
# the repository that points out at apply time (the task fails with the
# reason, nothing copied). In the landlock and bwrap tiers the agent reads
# through the linked directory and cannot write through it.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0194 worktree_setup: copy_files, symlink_dirs, .worktreeinclude, confined"

# repo DIR SETUP-YAML: a repository with the shell agent, the untracked files
repo() {
	W=$1
	mkdir -p "$W/node_modules/pkg"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	shell_agent "$W"
	# node_modules without a slash: the pattern must match the symlink too
	printf '.bernstein/\n.env\nnode_modules\n*.local\nevil\n' >"$W/.gitignore"
	printf 'conf.local\nnotignored.txt\n' >"$W/.worktreeinclude"
	printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\n%s\n' "$2" >"$W/bernstein.yaml"
	git -C "$W" add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
	printf 'KEY=t0194-env\n' >"$W/.env"
	printf 'module.exports = "t0194-mod";\n' >"$W/node_modules/pkg/index.js"
	printf 'local=t0194-local\n' >"$W/conf.local"
	printf 'not ignored\n' >"$W/notignored.txt"
}

bw() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$T/home' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' $*"; }

READER='cat .env > seen-env.txt; cat node_modules/pkg/index.js > seen-mod.txt
if [ -L node_modules ]; then echo link > seen-link.txt; fi
cat conf.local > seen-local.txt
if [ ! -e notignored.txt ]; then echo absent > seen-noti.txt; fi'

# 1. no sandbox: two tasks, each gets the setup
repo "$T/a" 'worktree_setup:
  copy_files: [.env]
  symlink_dirs: [node_modules]'
{
	printf 'name: setup\ntasks:\n'
	for n in one two; do
		printf '  - title: %s\n    prompt: |\n' "$n"
		printf '%s\n' "$READER" | sed "s/seen-/$n-/g; s/^/      /"
	done
} >"$W/plan.yaml"
bw run plan.yaml
check "none: the run succeeds (exit $RC)" test "$RC" -eq 0
[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
for n in one two; do
	check "none, $n: .env was copied into its tree" grep -qx KEY=t0194-env "$W/$n-env.txt"
	check "none, $n: node_modules is a symlink in its tree" grep -qx link "$W/$n-link.txt"
	check "none, $n: read through the link" grep -q t0194-mod "$W/$n-mod.txt"
	check "none, $n: .worktreeinclude's ignored file was copied" grep -qx local=t0194-local "$W/$n-local.txt"
	check "none, $n: a pattern's file git does not ignore was not" grep -qx absent "$W/$n-noti.txt"
done
check "none: nothing of the setup was committed" \
	sh -c "! git -C '$W' log --all --name-only --format= | grep -E '^(\\.env|node_modules|conf\\.local)'"

# 2. hostile values in bernstein.yaml: refused at their line:col
for bad in '[../../etc/passwd]' '[/etc/passwd]' '[.git/config]'; do
	repo "$T/bad$$" "worktree_setup:
  copy_files: $bad"
	printf 'name: x\ntasks:\n  - title: x\n    prompt: "true"\n' >"$W/plan.yaml"
	bw run plan.yaml
	check "copy_files: $bad: exit 3 (got $RC)" test "$RC" -eq 3
	check "copy_files: $bad: the error names bernstein.yaml:5:16" \
		grep -q 'bernstein.yaml:5:16' "$T/stderr"
	check "copy_files: $bad: and the field" grep -q "worktree_setup.copy_files\\[0\\]" "$T/stderr"
	rm -rf "$T/bad$$"
done

# 3. a symlink in the repository that points out: the task fails, nothing copied
for key in copy_files symlink_dirs; do
	case $key in
	copy_files) val=evil/passwd ;;
	*) val=evil ;;
	esac
	repo "$T/esc-$key" "worktree_setup:
  $key: [$val]"
	ln -s /etc "$W/evil"
	printf 'name: x\ntasks:\n  - title: x\n    prompt: "ls -la > listing.txt"\n' >"$W/plan.yaml"
	bw run plan.yaml
	check "$key through a symlink out: the run fails (exit $RC)" test "$RC" -eq 1
	bw status --json
	check "$key through a symlink out: status says it leaves the repository" \
		grep -q 'worktree setup failed: worktree_setup: '"$key"": '$val': it leaves the repository" "$T/stdout"
	check "$key through a symlink out: the agent never ran" test ! -e "$W/listing.txt"
	check "$key through a symlink out: nothing reached the task's tree" \
		sh -c "! ls -A '$W'/.bernstein/worktrees/*/ 2>/dev/null | grep -qx -e passwd -e evil"
done

# 4. sandbox tiers: the linked directory is read-only to the agent
run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
ll=$RC
for tier in landlock bwrap; do
	if [ "$ll" -ne 0 ]; then
		skip "$tier" "the kernel has no Landlock"
		continue
	fi
	if [ "$tier" = bwrap ] && ! { command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true >/dev/null 2>&1; }; then
		skip "$tier" "bubblewrap cannot run here"
		continue
	fi
	repo "$T/sb-$tier" "sandbox: $tier
worktree_setup:
  copy_files: [.env]
  symlink_dirs: [node_modules]"
	# the shell agent declares the tiers it works in
	printf 'runtime:\n  sandbox: {tiers: [landlock, bwrap]}\n' >>"$W/.bernstein/catalog/profiles/shell.yaml"
	cat >"$W/plan.yaml" <<'EOF'
name: sb
tasks:
  - title: writer
    prompt: |
      cat .env > sb-env.txt
      cat node_modules/pkg/index.js > sb-mod.txt
      if echo hacked > node_modules/pkg/hacked 2>/dev/null; then echo wrote > sb-write.txt; else echo refused > sb-write.txt; fi
      if echo hacked >> node_modules/pkg/index.js 2>/dev/null; then echo wrote > sb-append.txt; else echo refused > sb-append.txt; fi
EOF
	bw run plan.yaml
	check "$tier: the run succeeds (exit $RC)" test "$RC" -eq 0
	[ "$RC" -eq 0 ] || { _diag_file stdout "$T/stdout"; _diag_file stderr "$T/stderr"; }
	check "$tier: .env was copied" grep -qx KEY=t0194-env "$W/sb-env.txt"
	check "$tier: the agent reads through the link" grep -q t0194-mod "$W/sb-mod.txt"
	check "$tier: it cannot create a file through it" grep -qx refused "$W/sb-write.txt"
	check "$tier: it cannot change a file through it" grep -qx refused "$W/sb-append.txt"
	check "$tier: the linked directory is untouched" \
		sh -c "[ ! -e '$W/node_modules/pkg/hacked' ] && ! grep -q hacked '$W/node_modules/pkg/index.js'"
done
test_done
