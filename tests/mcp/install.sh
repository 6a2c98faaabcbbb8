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
# 4 node or npm missing. The steps it shares with tests/agents/install.sh are
# in tests/lib/npm-install.sh.
#
#   install.sh --check   only report: print the bin dir and exit 0 when the
#                        install is complete, exit 1 silently otherwise
set -eu

here=$(cd "$(dirname "$0")" && pwd)
server=mcp-server-filesystem
# shellcheck source=SCRIPTDIR/../lib/npm-install.sh
. "$here/../lib/npm-install.sh"

npm_install_begin "$here" \
	"${BERNSTEIN_MCP_CACHE:-${HOME:?HOME is not set}/.cache/bernstein/mcp}" 600 "${1:-}"

echo "install.sh: installing the pinned MCP server into $dir (first use; log: $log)" >&2
npm_install_run tests/mcp --ignore-scripts
[ -x "$bin/$server" ] || die "'$server' was not installed into $bin"

npm_install_done
