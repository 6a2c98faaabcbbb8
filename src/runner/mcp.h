/* A Model Context Protocol client over stdio (the gateway tool source).
 *
 * The server is a child process (proc/spawn.h: own session, argv resolved on
 * PATH beforehand, a complete environment given by the caller, stderr
 * inherited); messages are JSON-RPC 2.0 objects, one per line, on its stdin
 * and stdout. The client does
 *
 *   initialize (protocolVersion MCP_PROTOCOL_VERSION, no client capabilities)
 *   notifications/initialized
 *   tools/list  (following nextCursor)
 *   tools/call  {name, arguments}
 *
 * and answers the server's own requests: ping with an empty result, anything
 * else (roots/list, sampling/createMessage, ...) with -32601 "method not
 * found". Notifications from the server are read and dropped. Every wait has
 * a deadline; a line longer than max_message ends the session (-ENOBUFS);
 * writes never block past the deadline (the pipe is non-blocking). */
#ifndef BERNSTEIN_RUNNER_MCP_H
#define BERNSTEIN_RUNNER_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/rpcwire.h"
#include "util/sbuf.h"

#define MCP_PROTOCOL_VERSION	"2025-06-18"
#define MCP_DEFAULT_TIMEOUT_MS	60000
#define MCP_DEFAULT_MAX_MESSAGE (16 * 1024 * 1024)
#define MCP_MAX_TOOLS		512

struct mcp_spec {
	const char *name;	    /* the server's name in the manifest (messages) */
	const char *path;	    /* absolute path of the command */
	const char *const *args;    /* arguments after argv[0] (NULL-terminated; may be NULL) */
	const char *const *env;	    /* complete environment */
	const char *cwd;	    /* NULL = inherit */
	uint64_t timeout_ms;	    /* start-up and list; 0 = default */
	size_t max_message;	    /* 0 = default */
	const char *client_version; /* clientInfo.version */
};

struct mcp_client;

/* The line framing: util/rpcwire.h (shared with `bernstein mcp`). */

/* Spawn the server and complete the handshake. */
int mcp_start(const struct mcp_spec *spec, struct mcp_client **ret, struct diag *reterr);
/* The server's tools: a JSON array of {name, description, inputSchema}
 * (caller decrefs). */
int mcp_list_tools(struct mcp_client *c, json_t **ret, struct diag *reterr);
/* Call a tool; *ret_result is the JSON-RPC result (caller decrefs).
 * timeout_ms 0 = the spec's. -EPROTO: a JSON-RPC error (message in reterr). */
int mcp_call_tool(struct mcp_client *c, const char *name, const json_t *arguments,
		  uint64_t timeout_ms, json_t **ret_result, struct diag *reterr);
/* "name version" of the server from initialize, or "". */
const char *mcp_server_info(const struct mcp_client *c);
/* Close its stdin, give it a moment to exit, then TERM and KILL its group. */
struct mcp_client *mcp_stop(struct mcp_client *c);

/* The text of a tools/call result: text content joined with newlines,
 * other content summarised ("[image image/png]"), structuredContent when
 * there is no content. *ret_is_error from isError. Returns 0 or -ENOBUFS. */
int mcp_result_text(const json_t *result, struct sbuf *out, bool *ret_is_error);

#endif
