/* bernstein mcp's protocol, without its I/O (cmd-mcp.c, docs/mcp.md): one
 * line from the client in, the reply out. Kept apart from the command so
 * the fuzzer (fuzz/fuzz-mcp-server.c) drives it with a tool runner that
 * starts nothing. */
#ifndef BERNSTEIN_CLI_MCP_SERVER_H
#define BERNSTEIN_CLI_MCP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Run a tool: argv after the bernstein binary (NULL-terminated, checked:
 * every value from the client is after "--" or glued to its option, none
 * starts with '-'); detaches: it starts a run meant to outlive it. Returns
 * the tools/call result object (a new reference). */
typedef json_t *mcp_server_run_fn(void *arg, const char *const *argv, bool detaches);

/* The reply to one line (a new reference), or NULL when none is due (a
 * notification). Never fails: a bad line gets a JSON-RPC error. */
json_t *mcp_server_answer(const char *line, size_t len, mcp_server_run_fn *run, void *arg);

#endif
