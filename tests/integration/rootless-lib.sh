# Helpers of the overlay tests without root (t0387, t0388): the overlay
# test repository (overlay-lib.sh) handed to a user with no passwd entry
# (uid and gid 4242: not nobody, whose id is the one unmapped ids show as),
# and $AS, the words that run a command as that user with no supplementary
# group. The test's own git (as root) accepts the repository of another
# owner (safe.directory).
. "$SRCDIR/tests/integration/overlay-lib.sh"

RL_UID=4242
AS="setpriv --reuid=$RL_UID --regid=$RL_UID --clear-groups"
GIT_CONFIG_COUNT=1
GIT_CONFIG_KEY_0=safe.directory
GIT_CONFIG_VALUE_0='*'
export GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0

# rootless_begin DESCRIPTION: overlay_begin, then skip the whole test (a TAP
# reason) where this machine gives a non-root user no user namespace that
# may mount an overlay (not root, no setpriv, the kernel's or a policy's
# refusal, a kernel before 5.11)
rootless_begin()
{
	overlay_begin "$@"
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null 2>&1; then
		skip "the test needs root to become another user (setpriv)"
		test_done
	fi
	if ! $AS unshare --user --map-user=$RL_UID --map-group=$RL_UID --mount true 2>/dev/null; then
		skip "the kernel gives a non-root user no user namespace here"
		test_done
	fi
	_v=$(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
	set -- $_v
	if [ "$1" -lt 5 ] || { [ "$1" -eq 5 ] && [ "$2" -lt 11 ]; }; then
		skip "overlayfs in a user namespace needs Linux 5.11 (this is $(uname -r))"
		test_done
	fi
}

# the scratch directory and everything in it the user's
rootless_own()
{
	chown -R "$RL_UID:$RL_UID" "$T" && chmod 755 "$T"
}
