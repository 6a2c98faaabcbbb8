/* The runner manifest: the JSON file the openai_agents adapter writes into the
 * session directory and `bernstein runner --manifest FILE` reads.
 *
 * Fields (research/anchor-adapters.md §6.2; docs/runner.md): session_id,
 * prompt, workdir and model are required strings; everything else is
 * optional and a manifest without it behaves exactly as before. A JSON null
 * counts as "not set". Unknown keys are ignored (the adapter may forward
 * more than this runner consumes). Every type error names the field:
 *   "manifest.json: field 'top_k': expected an integer, got a string".
 *
 * Parsing is strict JSON (util/json.h json_parse_strict: duplicate keys and
 * trailing data rejected) and capped at RUNNER_MANIFEST_MAX_BYTES. */
#ifndef BERNSTEIN_RUNNER_MANIFEST_H
#define BERNSTEIN_RUNNER_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/diag.h"

#define RUNNER_MANIFEST_MAX_BYTES (4 * 1024 * 1024)

#define MANIFEST_DEFAULT_MAX_TOKENS	 200000
#define MANIFEST_DEFAULT_TIMEOUT_SECONDS 1800

enum manifest_tool_source {
	MANIFEST_TOOLS_GATEWAY, /* the default, and any value other than "builtin" */
	MANIFEST_TOOLS_BUILTIN,
};

/* One stdio MCP server of mcp_servers ({"name": {"command", "args", "env", "cwd"}}). */
struct manifest_mcp_server {
	const char *name;
	const char *command;	 /* bare name (looked up on PATH) or a path */
	const char *const *args; /* NULL-terminated */
	const char *const *env;	 /* "KEY=VALUE", NULL-terminated */
	const char *cwd;	 /* NULL = the workdir */
};

/* Optional values carry a has_ flag; strings are NULL when unset. All
 * strings and arrays live in the manifest's arena. */
struct runner_manifest {
	struct arena arena;
	const char *path; /* the file it was read from (for messages) */

	const char *session_id; /* [A-Za-z0-9._-]{1,128}, not "." or ".." (used in file names) */
	const char *prompt;
	const char *workdir;
	const char *model;

	const char *effort;	      /* default "high" (recorded; not sent) */
	int64_t max_tokens;	      /* default 200000; sent only when has_max_tokens */
	bool has_max_tokens;	      /* the manifest set it */
	int64_t timeout_seconds;      /* default 1800: the whole run's deadline */
	const char *task_scope;	      /* default "medium" (recorded) */
	double budget_multiplier;     /* default 1.0 (recorded) */
	const char *system_addendum;  /* default "" */
	const char *sandbox_provider; /* default "unix_local" */

	const char *const *tools; /* tool names to expose (NULL-terminated); empty = all */
	size_t ntools;
	enum manifest_tool_source tool_source;
	const char *tool_source_raw; /* as written, NULL when absent */
	struct manifest_mcp_server *mcp_servers;
	size_t nmcp_servers;

	double temperature;
	bool has_temperature;
	double top_p;
	bool has_top_p;
	int64_t top_k;
	bool has_top_k;
	const char *base_url;	   /* http(s) URL; NULL = the default endpoint (Responses API) */
	const char *api_key_env;   /* the NAME of the key variable; NULL = OPENAI_API_KEY if set */
	const char *heartbeat_dir; /* NULL = no heartbeat file */
	bool allow_run_command;
	bool has_allow_run_command;
	/* the builtin file tools may touch .git (default false) */
	bool allow_git_dir;
	int64_t max_turns; /* > 0 */
	bool has_max_turns;
	bool stream; /* default true (a C-runner extension: false = plain JSON replies) */
};

/* Parse a manifest from memory. name is used in messages. On failure returns
 * -EBADMSG (not JSON, or not an object) or -EINVAL (a field is wrong) with
 * the reason in reterr; *ret is untouched. The caller frees with
 * runner_manifest_free(). */
int runner_manifest_parse(const char *name, const char *buf, size_t len,
			  struct runner_manifest **ret, struct diag *reterr);

/* Read and parse a file: -ENOENT when it does not exist, -EFBIG when over the
 * cap, other negative errno for I/O, or the parse errors above. */
int runner_manifest_load(const char *path, struct runner_manifest **ret, struct diag *reterr);

struct runner_manifest *runner_manifest_free(struct runner_manifest *m);

/* 1 if s is a usable session id (see session_id above), else 0. */
bool runner_manifest_session_id_ok(const char *s);

#endif
