#!/bin/sh
# Install the Debian packages bernstein needs to build and test, if missing.
# Idempotent and quiet when everything is already there.
set -eu

# libvterm-dev: the terminal emulator that keeps a poll-pty agent's screen
# (src/proc/ptydrive.h).

pkgs="meson ninja-build pkg-config gcc clang libyaml-dev libjansson-dev libvterm-dev \
libcurl4-openssl-dev libsqlite3-dev libssl-dev libmicrohttpd-dev libcmocka-dev libclang-rt-14-dev git python3 bubblewrap crun runc chromium chromium-driver nodejs$(command -v npm >/dev/null 2>&1 || echo " npm")"
if [ "${1:-}" = "--lint" ]; then
	pkgs="$pkgs clang-format cppcheck pmccabe"
fi
# the test suite's own: a two-node Slurm cluster for executor: slurm
# (tests/integration/slurm-lib.sh); xfsprogs and e2fsprogs (filefrag) for
# the reflink checkout tests' loop-mounted XFS (t0390, t0391); `make run`
# does not need them
if [ "${1:-}" = "--test" ]; then
	pkgs="$pkgs slurm-wlm munge iproute2 util-linux openssh-server openssh-client tcpdump xfsprogs e2fsprogs"
fi

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing (run as root or install them)" >&2
	exit 4
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
