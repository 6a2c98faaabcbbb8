#!/bin/sh
# Install the real agent CLIs pinned in package.json / package-lock.json
# (claude, codex, gemini, qwen, opencode, pi, and claude-agent-acp) from the lock into a cache
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
# 4 npm missing. The steps it shares with tests/mcp/install.sh are in
# tests/lib/npm-install.sh.
#
#   install.sh --check   only report: print the bin dir and exit 0 when the
#                        install is complete, exit 1 silently otherwise
set -eu

here=$(cd "$(dirname "$0")" && pwd)
agents="claude codex gemini qwen opencode pi"
# shellcheck source=SCRIPTDIR/../lib/npm-install.sh
. "$here/../lib/npm-install.sh"

npm_install_begin "$here" \
	"${BERNSTEIN_AGENTS_CACHE:-${HOME:?HOME is not set}/.cache/bernstein/agents}" 1800 "${1:-}"

echo "install.sh: installing pinned agent CLIs into $dir" \
	"(first use: ~600 MB download, ~1.5 GB on disk; log: $log)" >&2
# `npm ci` would be the natural command, but npm 11 records only this
# platform's optional packages (opencode-linux-x64, ...) in the lock and then
# `npm ci` refuses that very lock ("Missing: opencode-darwin-arm64@ from lock
# file"); npm_install_run uses `npm install` against the committed lock.
# Scripts must run: claude's and opencode's postinstall link their native
# binaries into place (npm 11 still runs them with strict-allow-scripts=false).
npm_install_run tests/agents --foreground-scripts --strict-allow-scripts=false
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
# Claude Code's ACP adapter (the claude_acp profile) is an ACP server with
# no --version: installed is all that is checked
[ -x "$bin/claude-agent-acp" ] || die "'claude-agent-acp' was not installed into $bin"

npm_install_done
