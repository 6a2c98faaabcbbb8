#!/bin/sh
# Install the real agent CLIs pinned in package.json / package-lock.json
# (claude, codex, gemini, qwen, opencode, pi) from the lock into a cache
# directory outside the repository, keyed by the hash of package-lock.json:
#
#   ${BERNSTEIN_AGENTS_CACHE:-$HOME/.cache/bernstein/agents}/<hash>/
#
# On first use this downloads from the npm registry (claude alone is about
# 400 MB; npm's own cache is kept in <cache>/.npm for reinstalls); afterwards
# it only checks a marker file and is silent. Either way
# the last thing it does is print the bin directory (node_modules/.bin) on
# stdout, so callers do  bin=$(tests/agents/install.sh) && PATH=$bin:$PATH.
# Progress and errors go to stderr. Exit status: 0 ok, 1 install failed,
# 4 npm missing.
#
#   install.sh --check   only report: print the bin dir and exit 0 when the
#                        install is complete, exit 1 silently otherwise
set -eu

here=$(cd "$(dirname "$0")" && pwd)
lock="$here/package-lock.json"
agents="claude codex gemini qwen opencode pi"

die() {
	echo "install.sh: $*" >&2
	exit 1
}

[ -f "$lock" ] || die "missing $lock"
hash=$(sha256sum "$lock" | cut -c1-16)
cache=${BERNSTEIN_AGENTS_CACHE:-${HOME:?HOME is not set}/.cache/bernstein/agents}
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
	flock -w 1800 9 || die "timed out waiting for $cache/.lock"
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

echo "install.sh: installing pinned agent CLIs into $dir" \
	"(first use: ~600 MB download, ~1.5 GB on disk; log: $log)" >&2
# `npm ci` would be the natural command, but npm 11 records only this
# platform's optional packages (opencode-linux-x64, ...) in the lock and then
# `npm ci` refuses that very lock ("Missing: opencode-darwin-arm64@ from lock
# file"). `npm install` against the committed lock installs exactly the locked
# versions; the lock must come out byte-identical, or the pin drifted.
# Scripts must run: claude's and opencode's postinstall link their native
# binaries into place (npm 11 still runs them with strict-allow-scripts=false).
if ! (cd "$tmp" && npm install --no-audit --no-fund --foreground-scripts \
	--strict-allow-scripts=false --omit-lockfile-registry-resolved \
	--cache "$cache/.npm" >"$log" 2>&1); then
	tail -n 30 "$log" >&2
	die "npm install failed (offline? no access to the npm registry?); full log in $log"
fi
cmp -s "$lock" "$tmp/package-lock.json" ||
	die "npm changed package-lock.json: tests/agents/package.json and its lock disagree"

rm -rf "$dir"
mv "$tmp" "$dir"
mkdir -p "$dir/home"

# Every binary must actually run (a skipped postinstall leaves a stub that
# fails here). Minimal environment, scratch HOME, no network needed.
for a in $agents; do
	[ -x "$bin/$a" ] || die "'$a' was not installed into $bin"
	if ! out=$(env -i PATH="$bin:/usr/local/bin:/usr/bin:/bin" HOME="$dir/home" \
		CI=1 NO_COLOR=1 DO_NOT_TRACK=1 TERM=dumb DISABLE_AUTOUPDATER=1 \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 PI_OFFLINE=1 \
		timeout 120 "$bin/$a" --version </dev/null 2>&1); then
		echo "$out" | tail -n 10 >&2
		die "'$a --version' failed after install"
	fi
	[ -n "$out" ] || die "'$a --version' printed nothing after install"
	echo "install.sh: $a: $(echo "$out" | tail -n 1)" >&2
done
rm -rf "${dir:?}/home"

: >"$marker"
echo "$bin"
