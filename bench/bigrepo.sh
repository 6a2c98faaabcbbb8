#!/bin/sh
# Constant-time task trees (issue #24): bench/bigrepo.c on a generated
# repository of BIGREPO_FILES files (default 100000, in directories of 100;
# about 4 KB each: about 400 MB in a checkout, like the issue's, though the
# pack is small, each file repeating one line).
# The repository is made once with `git fast-import` and cached outside the
# source tree, in $BIGREPO_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/
# bernstein/bench); each run works in a `git clone --shared --no-checkout`
# of it in a scratch directory, removed at the end. Overlay mounts need
# root (CAP_SYS_ADMIN): elsewhere the bench says why and times git alone.
# Reflink checkouts need a file system that clones files (XFS, btrfs):
# where the scratch directory's does not and this is root with mkfs.xfs,
# the bench makes an XFS with reflink=1 in a sparse file there (4 GB at
# most), loop-mounts it for the repository (every kind then runs on it,
# git's too: the same run, the same disk) and says so; BIGREPO_XFS=0 turns
# that off. It prints; it does not assert.
#
# usage: bench/bigrepo.sh [BUILD_DIR]   (BIGREPO_FILES=N BIGREPO_TASKS=N)
set -u

build=${1:-build}
files=${BIGREPO_FILES:-100000}
tasks=${BIGREPO_TASKS:-5}
cache=${BIGREPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bernstein/bench}
bench=$build/bench/bigrepo-bench
[ -x "$bench" ] || { echo "bigrepo: no $bench (make build first)" >&2; exit 4; }

src=$cache/bigrepo-$files.git
if [ ! -f "$src/bernstein-complete" ]; then
	echo "bigrepo: generating a repository of $files files in $src (once)" >&2
	rm -rf "$src"
	mkdir -p "$cache" && git init -q --bare "$src" || exit 4
	python3 - "$files" <<'PY' | git -C "$src" fast-import --quiet || exit 4
import hashlib, sys
n = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(n):
    seed = hashlib.sha256(b"%d" % i).hexdigest().encode()
    body = b"/* file %d */\n" % i + (seed + b"\n") * 60  # about 4 KB
    out.write(b"blob\nmark :%d\ndata %d\n" % (i + 1, len(body)) + body + b"\n")
out.write(b"commit refs/heads/main\nauthor b <b@example.invalid> 0 +0000\n"
          b"committer b <b@example.invalid> 0 +0000\ndata 8\nbig repo\n")
for i in range(n):
    out.write(b"M 100644 :%d d%04d/f%03d.c\n" % (i + 1, i // 100, i % 100))
out.write(b"\n")
PY
	git -C "$src" symbolic-ref HEAD refs/heads/main
	: >"$src/bernstein-complete"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-bigrepo.XXXXXX") || exit 4
cleanup()
{
	if awk -v d="$dir/xfs" '$5 == d { f = 1 } END { exit !f }' /proc/self/mountinfo; then
		umount "$dir/xfs" 2>/dev/null || umount -l "$dir/xfs"
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
top=$dir
: >"$dir/probe.a"
if ! cp --reflink=always "$dir/probe.a" "$dir/probe.b" 2>/dev/null &&
	[ "${BIGREPO_XFS:-1}" != 0 ] && [ "$(id -u)" -eq 0 ] && command -v mkfs.xfs >/dev/null 2>&1; then
	mkdir "$dir/xfs" && truncate -s 4G "$dir/xfs.img" &&
		mkfs.xfs -q -m reflink=1 "$dir/xfs.img" && mount -o loop "$dir/xfs.img" "$dir/xfs" &&
		top=$dir/xfs &&
		echo "bigrepo: the scratch file system has no reflinks: every kind runs on a loop-mounted XFS (reflink=1) made there" >&2
fi
git clone -q --shared --no-checkout "$src" "$top/repo" || exit 4
printf '.bernstein/\n' >"$top/repo/.git/info/exclude"
# 'later': main and one file changed, as after a task's merge
r=$top/repo
blob=$(echo changed | git -C "$r" hash-object -w --stdin) &&
	GIT_INDEX_FILE=$dir/later.idx git -C "$r" read-tree main &&
	GIT_INDEX_FILE=$dir/later.idx git -C "$r" update-index --cacheinfo "100644,$blob,d0000/f000.c" &&
	tree=$(GIT_INDEX_FILE=$dir/later.idx git -C "$r" write-tree) &&
	c=$(git -C "$r" -c user.name=b -c user.email=b@example.invalid commit-tree -p main -m later "$tree") &&
	git -C "$r" update-ref refs/heads/later "$c" || exit 4
"$bench" -n "$tasks" -l later "$r"
