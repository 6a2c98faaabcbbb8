/* The agent loop of the built-in runner (`bernstein runner --manifest F`).
 *
 *   start event (every effective value; the key variable's NAME only)
 *   redaction: the key and opts->secrets are replaced in every event, the
 *              transcript and the heartbeat (util/redact.h); a command's
 *              environment holds none of them
 *   credentials: api_key_env checked against the allow-list (credential.h)
 *                and looked up; a refused or unset name is config_invalid,
 *                before any network traffic or child process
 *   tools: builtin (tools.h) or the MCP gateway (mcp.h), filtered by the
 *          manifest's tools list
 *   transcript: a new one, or (resume) the saved one plus the new prompt
 *   turns, at most max_turns (default RUNNER_DEFAULT_MAX_TURNS):
 *     POST the conversation (llm.h); the reply's text and tool calls join the
 *     transcript; each call runs (tool_call / tool_result events) and its
 *     result joins too; the transcript is saved (atomically) before the
 *     first turn and after every turn, and a save that fails ends the run
 *     (runtime error); a reply without tool calls is the final answer
 *   usage event (summed over turns), then completion or error
 *
 * Nothing here reads the environment or prints: values arrive in struct
 * runner_opts, events go to opts->events (an fd chosen by cli/), and the
 * outcome is returned for cli/ to map to an exit code. */
#ifndef BERNSTEIN_RUNNER_LOOP_H
#define BERNSTEIN_RUNNER_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "runner/events.h"
#include "runner/manifest.h"
#include "util/clock.h"

#define RUNNER_DEFAULT_URL	 "https://api.openai.com/v1"
#define RUNNER_DEFAULT_MAX_TURNS 30

enum runner_outcome {
	RUNNER_DONE,	       /* completion event written */
	RUNNER_FAILED,	       /* runtime, http or max_turns error */
	RUNNER_CONFIG_INVALID, /* config_invalid (or a manifest problem found late) */
	RUNNER_RATE_LIMITED,   /* rate_limit */
};

/* The environment, as cli/ read it. */
typedef const char *runner_env_fn(void *userdata, const char *name);

struct runner_opts {
	const struct runner_manifest *manifest;
	struct events *events;
	const char *session_dir;    /* where <session_id>.transcript.json lives */
	const char *resume_session; /* NULL, or the session whose transcript to continue */
	const char *default_url;    /* the Responses endpoint base; NULL = RUNNER_DEFAULT_URL */
	const char *proxy;	    /* NULL = no proxy */
	runner_env_fn *env;	    /* reads one variable of the runner's environment */
	void *env_userdata;
	const char *host_allowed_key_envs; /* BERNSTEIN_ALLOWED_API_KEY_ENVS, or NULL */
	const char *const *secrets;	   /* more values to redact besides the key (the
					    * other secrets of the environment,
					    * credential_env_secrets()), NULL-terminated;
					    * NULL none */
	bool env_allow_run_command;	   /* BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 */
	const char *path_env;		   /* PATH (tool and MCP server lookups) */
	const char *const *child_env;	   /* base environment of commands and MCP servers */
	unsigned max_retries;		   /* LLM retries; default LLM_DEFAULT_MAX_RETRIES */
	uint64_t backoff_base_ms;	   /* 0 = default */
	const struct clock *clock;	   /* NULL = clock_system() */
	const char *version;		   /* for the MCP clientInfo */
};

/* Run the manifest's task. The outcome's error event has been written. */
enum runner_outcome runner_run(const struct runner_opts *opts);

/* Decisions exposed for tests. */
/* Does provider name an OS sandbox (landlock, or a container provider)? */
bool runner_sandboxed(const char *provider);
/* Is run_command offered? manifest allow_run_command false wins; then an OS
 * sandbox; then the manifest's true; then the operator's environment flag. */
bool runner_allow_run_command(const struct runner_manifest *m, bool env_flag);
/* The transcript path of a session (caller frees). */
char *runner_transcript_path(const char *session_dir, const char *session_id);

#endif
