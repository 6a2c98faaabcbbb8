# Pinned npm packages installed into a cache directory outside the
# repository: the part tests/agents/install.sh and tests/mcp/install.sh share.
# Sourced (POSIX sh, under set -eu) by a script that sits beside a
# package.json and its package-lock.json. The packages are installed from the
# lock into
#
#   CACHE/<hash>/           <hash>: the first 16 hex digits of the lock's SHA-256
#
# with npm's own cache in CACHE/.npm (for reinstalls), the npm log in
# CACHE/install-<hash>.log, and the marker CACHE/<hash>/.bernstein-installed
# written last, once the install is complete.
#
#   npm_install_begin SRCDIR CACHE LOCK_WAIT [ARG]
#       SRCDIR holds package.json and package-lock.json, CACHE is the cache
#       directory, LOCK_WAIT the seconds to wait for another installer of the
#       same cache, ARG the script's first argument. Sets lock, hash, cache,
#       dir, marker and bin (dir/node_modules/.bin). When the install is
#       complete: prints $bin on stdout and exits 0; otherwise with ARG
#       --check: exits 1 silently; without node or npm: exits 4. Else it
#       takes the cache's lock (fd 9, held until the script exits) and
#       returns with $tmp (removed on exit) holding copies of package.json and
#       the lock, and $log set.
#   npm_install_run WHAT [NPM_FLAG...]
#       `npm install` in $tmp with the flags every install uses plus
#       NPM_FLAGs, output in $log; the lock must come out byte-identical
#       (WHAT, e.g. tests/mcp, names the directory in that message); then
#       $tmp becomes $dir.
#   npm_install_done
#       writes the marker and prints $bin on stdout.
#   die MESSAGE...
#       "install.sh: MESSAGE" on stderr, exit 1.

die() {
	echo "install.sh: $*" >&2
	exit 1
}

npm_install_begin() {
	lock="$1/package-lock.json"
	[ -f "$lock" ] || die "missing $lock"
	hash=$(sha256sum "$lock" | cut -c1-16)
	cache=$2
	dir="$cache/$hash"
	marker="$dir/.bernstein-installed"
	bin="$dir/node_modules/.bin"

	if [ -f "$marker" ]; then
		echo "$bin"
		exit 0
	fi
	[ "${4:-}" = "--check" ] && exit 1

	if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
		echo "install.sh: node and npm are needed (scripts/install-deps.sh installs them)" >&2
		exit 4
	fi

	mkdir -p "$cache"
	# One installer at a time per cache; the loser of the race finds the marker.
	exec 9>"$cache/.lock"
	if command -v flock >/dev/null 2>&1; then
		flock -w "$3" 9 || die "timed out waiting for $cache/.lock"
	fi
	if [ -f "$marker" ]; then
		echo "$bin"
		exit 0
	fi

	tmp="$cache/.tmp-$hash-$$"
	log="$cache/install-$hash.log"
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
	rm -rf "$tmp"
	mkdir -p "$tmp"
	cp "$1/package.json" "$lock" "$tmp/"
}

npm_install_run() {
	_what=$1
	shift
	# `npm install` against the committed lock installs exactly the locked
	# versions; the lock must come out byte-identical, or the pin drifted.
	if ! (cd "$tmp" && npm install --no-audit --no-fund "$@" \
		--omit-lockfile-registry-resolved --cache "$cache/.npm" >"$log" 2>&1); then
		tail -n 30 "$log" >&2
		die "npm install failed (offline? no access to the npm registry?); full log in $log"
	fi
	cmp -s "$lock" "$tmp/package-lock.json" ||
		die "npm changed package-lock.json: $_what/package.json and its lock disagree"

	rm -rf "$dir"
	mv "$tmp" "$dir"
}

npm_install_done() {
	: >"$marker"
	echo "$bin"
}
