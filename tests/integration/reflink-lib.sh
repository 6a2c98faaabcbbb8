# Helpers of the reflink checkout tests (t0390, t0391): as root, an XFS
# file system with reflink=1 made in a sparse file under $T and loop-mounted
# on $T/work (where lib.sh's run() starts commands; unmounted at exit before
# lib.sh deletes $T, even when the test failed half way), the repository $W
# there with a shell agent. Skips with
# the reason when mkfs.xfs, a loop device or mount(2) is not to be had.
. "$SRCDIR/tests/integration/overlay-lib.sh"

_reflink_cleanup()
{
	if [ -n "$T" ] && awk -v d="$T/work" '$5 == d { f = 1 } END { exit !f }' /proc/self/mountinfo; then
		umount "$T/work" 2>/dev/null || umount -l "$T/work" 2>/dev/null
	fi
	_overlay_cleanup
}

reflink_begin()
{
	test_begin "$@"
	trap _reflink_cleanup EXIT
	if [ "$(id -u)" -ne 0 ]; then
		skip "not root: cannot loop-mount an XFS file system"
		test_done
	fi
	if ! command -v mkfs.xfs >/dev/null 2>&1; then
		skip "mkfs.xfs is not installed (xfsprogs; scripts/install-deps.sh --test)"
		test_done
	fi
	truncate -s 400M "$T/xfs.img"
	if ! mkfs.xfs -q -m reflink=1 "$T/xfs.img" >"$T/mkfs.log" 2>&1 ||
		! mount -o loop "$T/xfs.img" "$T/work" >>"$T/mkfs.log" 2>&1; then
		diag "$(cat "$T/mkfs.log")"
		skip "cannot make and loop-mount an XFS file system with reflink=1 here"
		test_done
	fi
	overlay_repo
}

# whether every extent of FILE is shared with another file (FIEMAP)
extents_shared()
{
	filefrag -v "$1" 2>/dev/null | awk '
		/^ *[0-9]+:/ { n++; if ($0 !~ /shared/) bad = 1 }
		END { exit !(n > 0 && !bad) }'
}
