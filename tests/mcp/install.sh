#!/bin/sh
# Install the real MCP server pinned in package.json / package-lock.json
# (@modelcontextprotocol/server-filesystem, the reference filesystem server)
# from the lock into a cache directory outside the repository, keyed by the
# hash of package-lock.json:
#
#   ${BERNSTEIN_MCP_CACHE:-$HOME/.cache/bernstein/mcp}/<hash>/
#
# On first use this downloads from the npm registry (a few MB); afterwards it
# only checks a marker file and is silent. Either way the last thing it does
# is print the bin directory (node_modules/.bin) on stdout, so callers do
#   bin=$(tests/mcp/install.sh) && "$bin/mcp-server-filesystem" DIR
# Progress and errors go to stderr. Exit status: 0 ok, 1 install failed,
# 4 node or npm missing.
#
#   install.sh --check   only report: print the bin dir and exit 0 when the
#                        install is complete, exit 1 silently otherwise
set -eu

here=$(cd "$(dirname "$0")" && pwd)
lock="$here/package-lock.json"
server=mcp-server-filesystem

die() {
	echo "install.sh: $*" >&2
	exit 1
}

[ -f "$lock" ] || die "missing $lock"
hash=$(sha256sum "$lock" | cut -c1-16)
cache=${BERNSTEIN_MCP_CACHE:-${HOME:?HOME is not set}/.cache/bernstein/mcp}
dir="$cache/$hash"
marker="$dir/.bernstein-installed"
bin="$dir/node_modules/.bin"

if [ -f "$marker" ]; then
	echo "$bin"
	exit 0
fi
[ "${1:-}" = "--check" ] && exit 1

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	echo "install.sh: node and npm are needed (scripts/install-deps.sh installs them)" >&2
	exit 4
fi

mkdir -p "$cache"
# One installer at a time per cache; the loser of the race finds the marker.
exec 9>"$cache/.lock"
if command -v flock >/dev/null 2>&1; then
	flock -w 600 9 || die "timed out waiting for $cache/.lock"
fi
if [ -f "$marker" ]; then
	echo "$bin"
	exit 0
fi

tmp="$cache/.tmp-$hash-$$"
log="$cache/install-$hash.log"
cleanup() {
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$tmp"
mkdir -p "$tmp"
cp "$here/package.json" "$lock" "$tmp/"

echo "install.sh: installing the pinned MCP server into $dir (first use; log: $log)" >&2
# `npm install` against the committed lock installs exactly the locked
# versions; the lock must come out byte-identical, or the pin drifted.
if ! (cd "$tmp" && npm install --no-audit --no-fund --ignore-scripts \
	--omit-lockfile-registry-resolved --cache "$cache/.npm" >"$log" 2>&1); then
	tail -n 30 "$log" >&2
	die "npm install failed (offline? no access to the npm registry?); full log in $log"
fi
cmp -s "$lock" "$tmp/package-lock.json" ||
	die "npm changed package-lock.json: tests/mcp/package.json and its lock disagree"

rm -rf "$dir"
mv "$tmp" "$dir"
[ -x "$bin/$server" ] || die "'$server' was not installed into $bin"

: >"$marker"
echo "$bin"
