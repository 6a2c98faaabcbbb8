/* mcp_servers: the MCP servers a task's agent gets, in bernstein.yaml (top
 * level and role_model_policy.ROLE), in a plan (top level) and in a task
 * (docs/configuration.md, "MCP servers"):
 *
 *   mcp_servers:
 *     fs:   {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", .],
 *            env: {LOG_LEVEL: warn, GITHUB_TOKEN: "${GITHUB_TOKEN}"}}
 *     docs: {url: "https://mcp.example.com/mcp", headers: {Authorization: "${DOCS_AUTH}"}}
 *
 * By name, the most specific wins: task > role > plan > bernstein.yaml
 * (orch_mcp_servers_merge()); an entry `NAME: null` removes NAME. Checked
 * while loading, each problem at FILE:LINE:COL naming the field
 * ("mcp_servers.fs.command"): a name [A-Za-z0-9_-]{1,64}; exactly one of
 * command (stdio: with args, env) and url (HTTP, util/url.h: with headers);
 * a command not starting with '-'; no control character anywhere; env names
 * [A-Za-z_][A-Za-z0-9_]*; header names [A-Za-z0-9-]+. A value that is
 * exactly "${NAME}" is read from bernstein's environment at spawn, NAME on
 * the agent allow-list (adapter/envpolicy.h) or a credential name
 * (adapter/credential.h, BERNSTEIN_ALLOWED_API_KEY_ENVS): only the
 * reference is kept (state, events); the value goes only into the
 * per-attempt configuration file (adapter/invocation.h). */
#ifndef BERNSTEIN_ORCH_MCPSERVERS_H
#define BERNSTEIN_ORCH_MCPSERVERS_H

#include <jansson.h>
#include <stddef.h>

#include "adapter/mcpcfg.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/sbuf.h"

struct ydoc;
struct ynode;

struct orch_mcp_servers {
	struct mcp_server *v; /* in file order; a removal has neither command nor url */
	size_t n;
};

/* mcp_servers: at n (path names it) into *ret, strings borrowed from doc,
 * arrays from a. allowed: the host's BERNSTEIN_ALLOWED_API_KEY_ENVS, or
 * NULL. The first problem in reterr (-EINVAL). */
int orch_mcp_servers_get(struct arena *a, const struct ydoc *doc, const struct ynode *n,
			 const char *path, const char *allowed, struct orch_mcp_servers *ret,
			 struct diag *reterr);

/* The layers overlaid by name, least specific first (each may be NULL):
 * a later entry replaces an earlier one of the same name; a removal drops
 * it. The result borrows the layers' strings; its array is from a. */
void orch_mcp_servers_merge(struct arena *a, const struct orch_mcp_servers *const *layers,
			    size_t n_layers, struct orch_mcp_servers *ret);

/* {NAME: {command, args, env} | {url, headers} | null} (a new reference). */
json_t *orch_mcp_servers_json(const struct orch_mcp_servers *s);
/* The same back (a task's recorded spec), copied into a and checked as
 * loading checks it. -EBADMSG with the reason in msg. */
int orch_mcp_servers_parse_json(struct arena *a, const json_t *j, struct orch_mcp_servers *ret,
				char *msg, size_t size);
/* Copy s (strings too) into a. */
void orch_mcp_servers_copy(struct arena *a, const struct orch_mcp_servers *s,
			   struct orch_mcp_servers *ret);
/* "\nmcp_servers:" and one flow mapping per entry (nothing when empty),
 * appended to out. 0 or -ENOBUFS. */
int orch_mcp_servers_yaml(const struct orch_mcp_servers *s, struct sbuf *out);

#endif
