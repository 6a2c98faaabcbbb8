/* Capability profiles: an agent CLI declared as data (docs/profile-format.md).
 *
 * A profile (catalog/profiles/NAME.yaml, overridable from the user and repo
 * catalogue directories) says how an agent is always invoked (the seed's
 * InvocationSpec: binary, subcommands, model flag, prompt delivery, extra
 * args, environment pass-through), optionally its strategy on the five axes,
 * its capabilities, model aliases, and, beyond the always-passed surface,
 * what a real orchestrator needs to drive it (runtime: how resume, dangerous
 * mode and session-id pre-assignment are spelled, how a long prompt is
 * delivered, the event dialect, fixed environment, files for a private agent
 * HOME, how to point it at another endpoint).
 *
 * Gates (the seed's "gates a profile must clear"):
 *  1. construction-time validation: profile_load_buf() refuses anything
 *     underspecified or unknown, and profile_check_strategy() the rules that
 *     depend on the resolved strategy (a resume strategy needs its spelling);
 *  2. the contract cross-check: profile_contract_discrepancies();
 *  3. registry integration (adapter/catalog.h): a profile is an ordinary
 *     registry entry with the same strategy-declaration requirement.
 * Every error names FILE:LINE:COL and starts with "field 'a.b': ".
 *
 * profile_hash is SHA-256 over the RFC 8785 canonical JSON of the normalized
 * profile (every key present, defaults filled in, notes left out); see
 * profile_canonical(). */
#ifndef BERNSTEIN_ADAPTER_PROFILE_H
#define BERNSTEIN_ADAPTER_PROFILE_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/axes.h"
#include "adapter/mcpcfg.h"
#include "adapter/catalog.h"
#include "proc/ptydrive.h"
#include "proc/sandbox.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/hash.h"
#include "util/sbuf.h"
#include "util/strvec.h"

struct contract;

/* Directory of profiles inside a catalogue directory. */
#define PROFILE_DIR    "profiles"
#define PROFILE_SUFFIX ".yaml"
/* Largest profile file accepted. */
#define PROFILE_MAX_FILE_BYTES (256 * 1024)
/* Profile names: [a-z][a-z0-9_]*, at most this many bytes. */
#define PROFILE_MAX_NAME 64
/* Largest max_parallel_workers accepted. */
#define PROFILE_MAX_WORKERS 4096

enum profile_shape {
	PROFILE_SHAPE_FACTORY, /* "factory": the adapter is built from the profile */
	PROFILE_SHAPE_MODULE,  /* "module": a hand-written module owns the spawn path */
	_PROFILE_SHAPE_MAX,
	_PROFILE_SHAPE_INVALID = -EINVAL,
};

/* Strongest isolation the agent applies to the commands it runs, weakest
 * first: a stronger tier satisfies a weaker requirement. */
enum sandbox_tier {
	SANDBOX_TIER_NONE,	/* "none" */
	SANDBOX_TIER_PROCESS,	/* "process" */
	SANDBOX_TIER_CONTAINER, /* "container" */
	SANDBOX_TIER_MICROVM,	/* "microvm" */
	_SANDBOX_TIER_MAX,
	_SANDBOX_TIER_INVALID = -EINVAL,
};

/* Where the resume tokens go in the argv. */
enum resume_position {
	RESUME_POSITION_AFTER_SUBCOMMANDS, /* "after-subcommands" */
	RESUME_POSITION_BEFORE_PROMPT,	   /* "before-prompt" (the default) */
	RESUME_POSITION_END,		   /* "end" */
	_RESUME_POSITION_MAX,
	_RESUME_POSITION_INVALID = -EINVAL,
};

enum session_id_format {
	SESSION_ID_FORMAT_UUID, /* "uuid" (the default) */
	SESSION_ID_FORMAT_ANY,	/* "any" */
	_SESSION_ID_FORMAT_MAX,
	_SESSION_ID_FORMAT_INVALID = -EINVAL,
};

/* How a prompt too long for argv reaches the agent. */
enum prompt_via {
	PROMPT_VIA_STDIN, /* "stdin" */
	PROMPT_VIA_FILE,  /* "file" */
	_PROMPT_VIA_MAX,
	_PROMPT_VIA_INVALID = -EINVAL,
};

/* How the prompt on argv is kept from being read as an option (or as a
 * subcommand) by the agent's own argument parser. */
enum prompt_guard {
	PROMPT_GUARD_NONE,	  /* "none" (the default): the prompt goes on argv as is, unless
				   * it starts with '-': then by runtime.long_prompt, or refused */
	PROMPT_GUARD_SEPARATOR,	  /* "separator": "--" just before the prompt (after the
				   * prompt flag, if any: a mode flag such as claude's -p) */
	PROMPT_GUARD_GLUED,	  /* "glued": one token PROMPT_FLAG=PROMPT */
	PROMPT_GUARD_LONG_PROMPT, /* "long-prompt": never on argv; always by runtime.long_prompt */
	_PROMPT_GUARD_MAX,
	_PROMPT_GUARD_INVALID = -EINVAL,
};

/* The grammar of what the agent prints on stdout. */
enum event_dialect {
	EVENT_DIALECT_CLAUDE,	    /* "claude": Claude Code stream-json */
	EVENT_DIALECT_CODEX,	    /* "codex": codex exec --json */
	EVENT_DIALECT_GEMINI,	    /* "gemini": gemini -o stream-json */
	EVENT_DIALECT_QWEN,	    /* "qwen": qwen -o stream-json (Claude-like) */
	EVENT_DIALECT_OPENCODE,	    /* "opencode": opencode run --format json */
	EVENT_DIALECT_PI,	    /* "pi": pi --mode json */
	EVENT_DIALECT_RUNNER,	    /* "runner": bernstein's built-in agent runner */
	EVENT_DIALECT_TEXT_SIGNALS, /* "text-signals": BERNSTEIN:<KIND> lines */
	EVENT_DIALECT_NONE,	    /* "none": nothing structured */
	_EVENT_DIALECT_MAX,
	_EVENT_DIALECT_INVALID = -EINVAL,
};

enum agent_home {
	AGENT_HOME_INHERIT,  /* "inherit": the agent sees the caller's HOME (the default) */
	AGENT_HOME_ISOLATED, /* "isolated": a private HOME per session */
	_AGENT_HOME_MAX,
	_AGENT_HOME_INVALID = -EINVAL,
};

/* Whether the agent's file tools may touch a git directory (.git). Only the
 * module agents whose file access is bernstein's own code (the built-in
 * runner, the mock) are held to it (util/beneath.h). */
enum git_dir_access {
	GIT_DIR_REFUSED, /* "refused" (the default): .git is refused like a path outside */
	GIT_DIR_ALLOWED, /* "allowed": the file tools may read and write .git */
	_GIT_DIR_ACCESS_MAX,
	_GIT_DIR_ACCESS_INVALID = -EINVAL,
};

/* Placeholders of templates, "{name}" in a string. */
enum profile_placeholder {
	PH_SESSION_ID,	 /* {session_id} */
	PH_MODEL,	 /* {model} */
	PH_PROMPT_FILE,	 /* {prompt_file} */
	PH_BASE_URL,	 /* {base_url} */
	PH_API_KEY_ENV,	 /* {api_key_env}: the NAME of the variable holding the key */
	PH_API_KEY,	 /* {api_key}: its value; only in runtime.endpoint.env */
	PH_HOME,	 /* {home}: the agent's HOME */
	PH_WORKDIR,	 /* {workdir}: the task's worktree */
	PH_HOOK_COMMAND, /* {hook_command}: the shell command that posts a hook's stdin to
			  * the session (`'BERNSTEIN' hook-post --socket 'SOCKET'`);
			  * only in runtime.hooks */
	PH_HOOKS_SOCKET, /* {hooks_socket}: the session's hooks socket; only in runtime.hooks */
	PH_MCP_CONFIG,	 /* {mcp_config}: the rendered MCP configuration; only in runtime.mcp */
	_PH_MAX,
	_PH_INVALID = -EINVAL,
};

/* An array of strings (NULL-terminated, never NULL) and where each was
 * declared (at[i], for diagnostics). */
struct profile_strv {
	const char *const *v;
	const struct catalog_origin *at;
	size_t n;
};

/* A string map, sorted by key. */
struct profile_map {
	const char *const *keys;
	const char *const *values;
	const struct catalog_origin *at; /* of each value */
	size_t n;
};

/* A file written into the session's agent HOME. */
struct profile_file {
	const char *path; /* relative to the agent HOME */
	unsigned mode;	  /* permission bits, <= 0777 */
	const char *content;
	struct catalog_origin origin;
};

struct profile_files {
	const struct profile_file *v;
	size_t n;
};

/* The always-passed surface. Exactly one prompt delivery: prompt_flag,
 * prompt_file_flag or prompt_positional. */
struct profile_invocation {
	const char *binary;
	struct profile_strv subcommands;
	const char *model_flag;	      /* NULL: the model is not passed */
	const char *prompt_flag;      /* NULL, or the flag preceding the prompt */
	const char *prompt_file_flag; /* NULL, or the flag preceding a file holding it */
	bool prompt_positional;	      /* the prompt is the last argument */
	enum prompt_guard prompt_guard;
	struct profile_strv extra_args;
	struct profile_strv env_passthrough;
	struct catalog_origin origin, binary_at, model_flag_at, prompt_flag_at, prompt_file_flag_at,
		prompt_guard_at;
};

struct profile_capabilities {
	bool vision;
	bool mcp_client;
	bool mcp_server;
	bool tool_use;
	bool streaming;
	bool native_subagents;
	bool local_models;
	bool computer_use;
	bool agents_md;
	enum sandbox_tier sandbox;
	int64_t max_parallel_workers;
	bool supports_sampling_params; /* coarse: every sampling parameter */
	bool supports_temperature;
	bool supports_top_p;
	bool supports_top_k;
	bool supports_max_tokens;
	bool supports_endpoint; /* admits base_url / api_key_env */
	struct catalog_origin vision_at, supports_endpoint_at;
};

struct profile_resume {
	bool declared;
	struct profile_strv args;
	enum resume_position position;
	struct catalog_origin origin, position_at;
};

struct profile_dangerous {
	bool declared;
	struct profile_strv args;
	struct profile_map env;
	struct catalog_origin origin;
};

struct profile_session_id {
	bool declared;
	struct profile_strv args;
	enum session_id_format format;
	struct catalog_origin origin;
};

struct profile_long_prompt {
	bool declared;
	enum prompt_via via;
	struct profile_strv args; /* replace the prompt tokens */
	struct catalog_origin origin;
};

struct profile_endpoint {
	bool declared;
	const char *model; /* how the model is spelled with an endpoint; default "{model}" */
	const char *default_model; /* the model when none is requested; NULL = none */
	struct profile_strv args;
	struct profile_map env;
	struct profile_files files; /* same path as a runtime file: replaces it */
	struct catalog_origin origin;
};

/* How the agent's hooks are pointed at bernstein (event channel hooks): args,
 * environment and files (same path as a runtime file: replaces it) that make
 * the agent run {hook_command} on its lifecycle events. */
struct profile_hooks {
	bool declared;
	struct profile_strv args;
	struct profile_map env;
	struct profile_files files;
	struct catalog_origin origin;
};

/* runtime.acp: the agent speaks the Agent Client Protocol on stdin/stdout
 * when started with these args (in place of the prompt tokens); the prompt
 * then goes in session/prompt (adapter/acp.h). */
struct profile_acp {
	bool declared;
	struct profile_strv args;
	struct catalog_origin origin;
};

/* How bernstein's sandbox tiers run the agent (runtime.sandbox; docs/security.md):
 * the tiers it is known to work in (verified by the tests with the real CLI)
 * and the paths it needs to read besides the system, its installation and
 * its tree. */
struct profile_sandbox {
	bool declared;
	unsigned tiers;		  /* bit (1u << enum sandbox_kind); never NONE */
	struct profile_strv read; /* absolute, or "~/..." (the user's HOME) */
	/* hosts: where the agent talks to its model API when no base_url
	 * points it elsewhere (its default provider), each "HOST:PORT" as
	 * netproxy_addr_format() spells it (lowercased, port 443 unless
	 * given): what network: llm allows without a base_url */
	struct profile_strv hosts;
	struct catalog_origin origin;
};

/* How the task's MCP servers reach the agent (runtime.mcp): the format of
 * the rendered configuration (adapter/mcpcfg.h), where it goes (file: a
 * path in the agent HOME whose runtime file it merges into; absent: a
 * per-attempt file in the session directory), and the args and env that
 * point the agent at it ({mcp_config}). */
struct profile_mcp {
	bool declared;
	enum mcp_format format;
	const char *file; /* relative to the agent HOME, or NULL */
	/* copies the agent makes of the rendered file (qwen's migration
	 * backup, settings.json.orig), relative to the agent HOME: removed
	 * with it when the attempt ends */
	struct profile_strv remove;
	struct profile_strv args;
	struct profile_map env;
	struct catalog_origin origin;
};

struct profile_runtime {
	struct profile_resume resume;
	struct profile_dangerous dangerous;
	struct profile_session_id session_id;
	struct profile_long_prompt long_prompt;
	bool dialect_declared;
	enum event_dialect dialect;
	struct profile_map env;
	enum agent_home home;
	struct profile_files files;
	struct profile_endpoint endpoint;
	struct profile_hooks hooks;
	struct profile_mcp mcp;
	enum git_dir_access git_dir;
	struct profile_sandbox sandbox;
	/* runtime.login: the CLI's own login files, relative to HOME (e.g.
	 * ".codex/auth.json"), made to appear read-write at the same place in
	 * its private HOME (docs/spawning.md, "Logins") */
	bool login_declared;
	struct profile_strv login;
	/* runtime.pty: the agent runs in a pseudo-terminal, its screen read as
	 * these patterns say (event channel poll-pty; proc/ptydrive.h) */
	struct ptydrive_conf pty;
	struct catalog_origin origin, events_at, home_at, git_dir_at;
	struct profile_acp acp; /* runtime.acp */
};

/* A loaded, validated profile. Everything lives in ->arena. */
struct profile {
	struct arena arena;
	const char *source; /* the file name used in diagnostics */
	const char *name;
	const char *display_name;
	enum profile_shape shape;
	bool builtin;			 /* served by bernstein itself: no binary to probe */
	const char *contract;		 /* the contract that backs it: 'contract:' or name */
	bool contract_declared;		 /* 'contract:' was given */
	const char *const *version_args; /* NULL-terminated; NULL when builtin */
	struct profile_invocation invocation;
	const struct strategy_decl *strategy; /* the inline strategy: block, or NULL */
	struct profile_capabilities caps;
	struct profile_map models; /* alias -> model id */
	const char *notes;	   /* NULL when absent; not hashed */
	struct profile_runtime runtime;
	/* private: the content address and the exact bytes hashed, computed on
	 * first use by profile_hash() / profile_canonical_bytes() (hashing every
	 * profile at load would cost every command, `adapters list` included) */
	char hash_cache[SHA256_HEX_LEN + 1];
	const char *canonical_cache;
	size_t canonical_cache_len;
	struct catalog_origin origin; /* the name: key */
	struct catalog_origin shape_at, builtin_at, contract_at, strategy_at;
};

/* Load and validate (gate 1, the rules that need only the file) a profile
 * from memory. source names the file in diagnostics and origins; stem, when
 * not NULL, is the file's stem, which 'name:' must equal. Errors: -EINVAL
 * (YAML or schema, with FILE:LINE:COL), -EFBIG (too large). */
int profile_load_buf(const char *source, const char *stem, const char *buf, size_t len,
		     struct profile **ret, struct diag *reterr);
/* The same from a document already loaded (util/yaml.h); doc stays the
 * caller's. */
struct ydoc;
int profile_load_doc(const struct ydoc *doc, const char *source, const char *stem,
		     struct profile **ret, struct diag *reterr);
/* The embedded profiles are not loaded: they are static data
 * (catalog_static_profiles[] in adapter/catalog.h). */
/* The same from a file; the stem is the file name without ".yaml". */
int profile_load_file(const char *path, struct profile **ret, struct diag *reterr);
struct profile *profile_free(struct profile *p);

/* [a-z][a-z0-9_]*, at most PROFILE_MAX_NAME bytes. */
bool profile_name_valid(const char *name);
/* The stem of a profile file name: "x/claude.yaml" -> "claude" in buf.
 * -EINVAL when the base name does not end in ".yaml" or is too long. */
int profile_stem(const char *path, char *buf, size_t size);

/* Gate 1, the rules that depend on the resolved strategy s:
 *   - resume other than unsupported needs runtime.resume, spelled for it:
 *     flag = [FLAG, "{session_id}"]; flag-pair = two flags and
 *     "{session_id}"; subcommand = a first token that is not a flag;
 *   - dangerous mode cli-flag needs runtime.dangerous.args, env-var needs
 *     runtime.dangerous.env;
 *   - event channel stream-json needs a JSON runtime.events.dialect (and
 *     an inline text-signals strategy allows only text-signals).
 * The "needs" rules bind factory profiles; a module profile may leave a
 * spelling to its module (what it does declare must still be well formed).
 * When s is the profile's own inline strategy (inline true), a spelling for
 * something the strategy turns off is also an error (the profile contradicts
 * itself); when s comes from the matrix, it is merely unused. where
 * describes s in messages ("inline", "the strategy matrix FILE:LINE"). */
int profile_check_strategy(const struct profile *p, const struct adapter_strategy *s, bool inline_,
			   const char *where, struct diag *reterr);

/* Gate 2: every way p declares more surface than contract c backs (a binary
 * other than c's, a subcommand or flag c does not require). Flags are the
 * model, prompt and prompt-file flags and the extra args starting with '-'
 * ("--FLAG=VALUE" counts as --FLAG; "--" and "-" are not flags). Appends one
 * diag per discrepancy (at the offending node) to *ret and returns their
 * number. */
#define PROFILE_ISSUES_INIT DIAG_LIST_INIT(0) /* a util/diag.h list, no cap */
size_t profile_contract_discrepancies(const struct profile *p, const struct contract *c,
				      const char *contract_source, struct diag_list *ret);

/* The normalized profile as JSON (a new reference): the object hashed.
 * notes is left out; see docs/profile-format.md for the exact shape. */
json_t *profile_canonical(const struct profile *p);
/* profile_hash: SHA-256 (lowercase hex) over the RFC 8785 form of
 * profile_canonical(). Computed once and cached in the profile (a logically
 * const cache); never fails for a loaded profile. */
const char *profile_hash(const struct profile *p);
/* The exact bytes hashed (NUL-terminated); *ret_len gets their length. */
const char *profile_canonical_bytes(const struct profile *p, size_t *ret_len);

/* ---- using a profile ---- */

/* The values placeholders expand to; NULL = not available. */
struct profile_vars {
	const char *v[_PH_MAX];
};

/* Expand the placeholders of tmpl into out. -ENOENT when one has no value
 * (out then holds a prefix), -ENOBUFS when out's cap is hit. */
int profile_expand(const char *tmpl, const struct profile_vars *vars, struct sbuf *out);
/* The argv puts "--" just before the prompt: prompt_guard separator, or
 * '--' as the prompt flag (aichat -- PROMPT). */
bool profile_prompt_ends_options(const struct profile_invocation *inv);
/* The model id of an alias (models:), or name itself. */
const char *profile_model(const struct profile *p, const char *name);
/* The always-passed argv, in the seed's order: binary (or binary_override,
 * for an agent served by a generic profile), subcommands, [model flag,
 * model id], extra args, then the prompt: [prompt flag, prompt], [prompt
 * file flag, vars {prompt_file}] or [prompt]. model NULL leaves the model
 * out. Placeholders in extra args are expanded from vars. Appended to argv
 * in the order of adapter/argv-order.h; argv untouched on error: errors as
 * profile_expand(), and -EINVAL for a prompt or
 * model id that starts with '-': this surface (the seed's InvocationSpec,
 * what onboarding records) has no invocation.prompt_guard, so such a value
 * would reach the agent as an option. The spawn path is invocation_build(). */
int profile_build_argv(const struct profile *p, const char *binary_override, const char *model,
		       const char *prompt, const struct profile_vars *vars, struct strvec *argv);

/* ---- names ---- */

const char *profile_shape_to_string(enum profile_shape v);
const char *sandbox_tier_to_string(enum sandbox_tier v);
enum sandbox_tier sandbox_tier_from_string(const char *s);
const char *resume_position_to_string(enum resume_position v);
const char *session_id_format_to_string(enum session_id_format v);
const char *prompt_via_to_string(enum prompt_via v);
const char *prompt_guard_to_string(enum prompt_guard v);
const char *event_dialect_to_string(enum event_dialect v);
const char *agent_home_to_string(enum agent_home v);
const char *git_dir_access_to_string(enum git_dir_access v);
const char *profile_placeholder_name(enum profile_placeholder ph);

#endif
