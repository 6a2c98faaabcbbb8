/* MCP servers for CLI agents: the servers a task gives its agent, rendered
 * into the agent's own configuration format (docs/profile-format.md,
 * runtime.mcp; docs/configuration.md, "MCP servers").
 *
 * A server is either stdio (command, args, env) or HTTP (url, headers).
 * Its values are final here: `${NAME}` references have been resolved by the
 * caller (invocation_build()). The renderings:
 *
 *   claude    {"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"}
 *                                  | {"type": "http", "url", "headers"}}}
 *             (Claude Code's --mcp-config file)
 *   gemini    {"mcpServers": {NAME: {"command", "args", "env"}
 *                                  | {"httpUrl", "headers"}}}
 *             (gemini's and qwen's settings.json)
 *   opencode  {"mcp": {NAME: {"type": "local", "command": [CMD, ARGS...],
 *                             "environment", "enabled": true}
 *                           | {"type": "remote", "url", "headers", "enabled": true}}}
 *   codex     [mcp_servers.NAME] command = "...", args = [...], url = "...",
 *             then [mcp_servers.NAME.env] / [mcp_servers.NAME.http_headers]
 *             (codex's config.toml)
 *
 * Given a base text (the profile's file of the same path), a JSON format
 * merges its key into the base object (servers of the same name replaced)
 * and codex appends its tables to the base text. Nothing here reads the
 * environment or writes a file. */
#ifndef BERNSTEIN_ADAPTER_MCPCFG_H
#define BERNSTEIN_ADAPTER_MCPCFG_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"
#include "util/sbuf.h"

/* A server name: [A-Za-z0-9_-]{1,64} (a TOML bare key, a JSON key, an MCP
 * tool prefix). */
#define MCPCFG_NAME_MAX 64

enum mcp_format {
	MCP_FORMAT_CLAUDE,
	MCP_FORMAT_GEMINI,
	MCP_FORMAT_OPENCODE,
	MCP_FORMAT_CODEX,
	_MCP_FORMAT_MAX,
	_MCP_FORMAT_INVALID = -EINVAL,
};

const char *mcp_format_to_string(enum mcp_format f);
enum mcp_format mcp_format_from_string(const char *s);
/* The file name suffix of a rendering: ".json" or ".toml". */
const char *mcp_format_suffix(enum mcp_format f);

struct mcp_server {
	const char *name;
	const char *command; /* stdio: the command (NULL for HTTP) */
	const char *const *args;
	size_t n_args;
	const char *const *env_keys, *const *env_values; /* stdio */
	size_t n_env;
	const char *url; /* HTTP (NULL for stdio) */
	const char *const *header_keys, *const *header_values;
	size_t n_headers;
};

bool mcpcfg_name_valid(const char *name);

/* Render v[0..n) in format f, appended to out. base (may be NULL): the text
 * the rendering merges into. -EINVAL with the reason in reterr (a base that
 * is not a JSON object); -ENOBUFS from out. */
int mcpcfg_render(enum mcp_format f, const struct mcp_server *v, size_t n, const char *base,
		  struct sbuf *out, struct diag *reterr);

/* The ACP session/new `mcpServers` array (McpServer[]): stdio
 * {"name", "command", "args", "env": [{"name", "value"}]} and HTTP
 * {"type": "http", "name", "url", "headers": [{"name", "value"}]}. A new
 * reference. */
json_t *mcpcfg_acp_json(const struct mcp_server *v, size_t n);

#endif
