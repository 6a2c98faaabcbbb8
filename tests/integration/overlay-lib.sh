# Helpers of the overlay checkout tests (t0370..t0373): a repository with a
# shell agent, and the overlay mounts under $T found and, at exit, taken
# down before lib.sh deletes $T (a test that failed half way must not leave
# a mount behind, nor let rm -rf walk through one).
. "$SRCDIR/tests/integration/lib.sh"

# overlay_mounts DIR: the overlay mount points under DIR, one a line.
overlay_mounts()
{
	awk -v d="$1/" '$0 ~ / - overlay / && index($5, d) == 1 { print $5 }' /proc/self/mountinfo
}

_overlay_cleanup()
{
	if [ -n "$T" ]; then
		for _m in $(overlay_mounts "$T"); do
			umount -l "$_m" 2>/dev/null
		done
	fi
	_lib_cleanup
}

overlay_begin()
{
	test_begin "$@"
	trap _overlay_cleanup EXIT
	overlay_repo
}

# overlay_repo: the repository $W (= $T/work) of these tests, with its shell
# agent; $KEY the audit key's variable
overlay_repo()
{
	W=$T/work
	KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	printf 'base\n' >"$W/shared.txt"
	mkdir -p "$W/src/deep/er"
	for _i in 1 2 3 4 5 6 7 8; do
		printf 'file %s\n' "$_i" >"$W/src/deep/er/f$_i.c"
	done
	shell_agent "$W"
}

git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
commit_all() { git_q add -A && git_q commit -q -m "$1"; }

# the lower layer of the overlay mounted at DIR (from mountinfo)
overlay_lower()
{
	awk -v d="$1" '$5 == d' /proc/self/mountinfo | sed -n 's/.*lowerdir=\([^,]*\).*/\1/p'
}

# tail_agent: the adapter `tail` in $W's catalogue: the shell agent, but what
# it runs is the task part of its prompt (a resumed attempt's prompt starts
# with the recovered context, prose); after shell_agent (overlay_begin).
tail_agent()
{
	cat >"$W/.bernstein/catalog/profiles/tail.yaml" <<'EOF2'
name: tail
display_name: "Shell script agent, the task part of its prompt"
shape: factory
invocation:
  binary: sh
  extra_args: [-c, 'p=$1; case $p in *"## Task"*) p=${p##*"## Task"};; esac; eval "$p"', sh]
  prompt_positional: true
capabilities:
  tool_use: true
  max_parallel_workers: 8
EOF2
	cat >>"$W/.bernstein/catalog/strategy-matrix.yaml" <<'EOF2'
  tail:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF2
}
