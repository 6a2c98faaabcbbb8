/* The invocation builder: a capability profile plus one spawn request ->
 * everything needed to start the agent (docs/spawning.md).
 *
 * One builder for both shapes of profile. A factory profile is turned into
 * an argv purely from its declaration; a module profile is served by a
 * hand-written module here: openai_agents, the built-in runner (its
 * manifest is a side file), and mock (`bernstein mock-agent`, built from its
 * declaration like a factory profile); other modules are refused (-ENOTSUP).
 *
 * The plan holds: the argv (argv[0] absolute, resolved with path_search()
 * on the PATH given; "/proc/self/exe", i.e. this bernstein binary, for a
 * built-in adapter), the complete environment (adapter/envpolicy.h), the
 * working directory, the stdin source, the side files to write (relative to
 * the session directory or to the agent's state directory, the private HOME
 * of an isolated agent), and warnings.
 *
 * The argv, in this order:
 *   BINARY SUBCOMMANDS [RESUME if after-subcommands] [MODEL_FLAG MODEL]
 *   EXTRA_ARGS [ENDPOINT_ARGS] [HOOKS_ARGS] [DANGEROUS_ARGS] [SESSION_ID_ARGS]
 *   [RESUME if before-prompt] PROMPT_TOKENS [RESUME if end]
 * where PROMPT_TOKENS are [PROMPT_FLAG PROMPT], [PROMPT], [PROMPT_FILE_FLAG
 * FILE] or, for a prompt too long for argv, runtime.long_prompt.args (the
 * prompt then comes on stdin or in a file).
 *
 * The rules (each refusal happens before anything is written or run):
 *   - attachments for an adapter without image input (catalog_vision())
 *     are refused (-EPERM), naming the adapters that could take them;
 *   - the sampling gate: invocation_check_sampling() (-EPERM);
 *   - api_key_env must pass adapter/credential.h (-EPERM) and be set in the
 *     host environment (-ENOENT);
 *   - sampling keys a factory profile admits but has no spelling for, and
 *     endpoint keys without runtime.endpoint, are refused (-EPERM), never
 *     dropped;
 *   - the model goes through the profile's alias table; with an endpoint in
 *     use it is spelled as runtime.endpoint.model, and when none is
 *     requested runtime.endpoint.default_model is used;
 *   - resume by the resolved strategy: unsupported starts a fresh session
 *     with the warning "resume unsupported by ADAPTER: starting a fresh
 *     session"; otherwise runtime.resume's tokens at its position;
 *   - dangerous mode (when requested) by the strategy: cli-flag adds
 *     runtime.dangerous.args (and the env declared with them), env-var sets
 *     runtime.dangerous.env, always-on adds nothing, unsupported adds
 *     nothing and warns "dangerous mode unsupported by ADAPTER: spawning
 *     without it";
 *   - a pre-assigned session id goes through runtime.session_id; with
 *     format uuid a value that is not a UUID is taken as a conversation id
 *     and the UUID derived from it (adapter/session.h); without a spelling
 *     it is dropped with a warning, and it is ignored when resuming;
 *   - the prompt goes on stdin or into a file (runtime.long_prompt) when it
 *     is longer than one argv string may be (MAX_ARG_STRLEN, 131072 bytes
 *     with the NUL) or would push argv + environment past the total limit;
 *     a profile without runtime.long_prompt then refuses (-E2BIG);
 *   - runtime.files (replaced by runtime.endpoint.files or runtime.hooks.files
 *     of the same path when those are applied) go into the agent's state
 *     directory, never into the user's HOME;
 *   - the hooks channel: when the resolved event channel is hooks and the
 *     profile declares runtime.hooks, its args, env and files are applied
 *     with {hook_command} = 'BERNSTEIN' hook-post --socket 'SESSION/hooks.sock'
 *     and {hooks_socket}; plan->hooks_socket is where the caller listens.
 *     A hooks channel without runtime.hooks warns and reads stdout only.
 *   - the acp channel: runtime.acp.args take the place of the prompt tokens
 *     (the prompt is plan->acp_prompt, for session/prompt; no length limit);
 *     a resume keeps resume_id for session/load and adds no tokens,
 *     whatever the resume strategy; a pre-assigned session id is dropped
 *     with a warning (the agent names its sessions).
 *
 * The API key's value (from the variable api_key_env names) goes only where
 * runtime.endpoint.env puts it; it never enters argv or files. plan->secrets
 * lists the values a caller must redact from logs, events and output (with
 * util/redact.h): the key, and the value of every variable of the agent's
 * environment that holds a secret (adapter/credential.h,
 * credential_env_secret()); a value shorter than REDACT_MIN is not listed and
 * a warning names its variable. */
#ifndef BERNSTEIN_ADAPTER_INVOCATION_H
#define BERNSTEIN_ADAPTER_INVOCATION_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/axes.h"
#include "adapter/dialect.h"
#include "adapter/mcpcfg.h"
#include "util/diag.h"
#include "util/strvec.h"

struct profile;
struct catalog;

/* Linux's MAX_ARG_STRLEN: one argv or environment string, NUL included. */
#define INVOCATION_MAX_ARG_STRLEN 131072
/* The total of argv and environment (strings and pointers) assumed when the
 * caller gives none (the usual ARG_MAX of an 8 MiB stack). */
#define INVOCATION_ARG_TOTAL_DEFAULT (2 * 1024 * 1024)
/* Kept free of the total for what the shim adds in front of the agent. */
#define INVOCATION_ARG_HEADROOM (64 * 1024)
/* The argv[0] of a built-in adapter: this bernstein binary. */
#define INVOCATION_SELF_EXE "/proc/self/exe"
/* Names of the side files in the session directory. */
#define INVOCATION_PROMPT_FILE	 "prompt.txt"
#define INVOCATION_MANIFEST_FILE "manifest.json"
/* The state directory inside the session directory (when not reused). */
#define INVOCATION_STATE_DIR "home"
/* The hooks channel's socket in the session directory (proc/usock.h). */
#define INVOCATION_HOOKS_SOCKET "hooks.sock"
/* The per-attempt MCP configuration in the session directory (+ ".json" or
 * ".toml", mcp_format_suffix()). */
#define INVOCATION_MCP_FILE "mcp-config"

/* ---- sampling and endpoint parameters (seed 000) ---- */

enum sampling_key {
	SAMPLING_TEMPERATURE, /* "temperature": a number >= 0 */
	SAMPLING_TOP_P,	      /* "top_p": a number in [0, 1] */
	SAMPLING_TOP_K,	      /* "top_k": an integer >= 0 */
	SAMPLING_MAX_TOKENS,  /* "max_tokens": an integer >= 1 */
	SAMPLING_BASE_URL,    /* "base_url": an http(s) URL */
	SAMPLING_API_KEY_ENV, /* "api_key_env": the NAME of the variable holding the key */
	_SAMPLING_KEY_MAX,
	_SAMPLING_KEY_INVALID = -EINVAL,
};

struct invocation_sampling {
	unsigned set; /* bit (1 << key): the key was requested */
	double temperature, top_p;
	int64_t top_k, max_tokens;
	const char *base_url;	 /* borrowed */
	const char *api_key_env; /* borrowed */
};

const char *sampling_key_to_string(enum sampling_key k);
enum sampling_key sampling_key_from_string(const char *s);

/* Parse one KEY=VALUE of `--set` into s (value borrowed for the strings).
 * -EINVAL with the reason in reterr: an unknown key (the message lists the
 * keys), a value of the wrong type or out of range, an empty string. */
int invocation_sampling_set(struct invocation_sampling *s, const char *key, const char *value,
			    struct diag *reterr);

/* The sampling gate: every requested key must be admitted by the coarse
 * supports_sampling_params or by its narrow capability (temperature,
 * top_p, top_k: supports_KEY; max_tokens: supports_max_tokens; base_url,
 * api_key_env: supports_endpoint, our extension). Otherwise -EPERM with the
 * seed's SamplingParamsRefusal message naming the adapter and only the
 * unsupported keys:
 *   Adapter 'claude' does not declare the 'supports_sampling_params'
 *   capability but sampling/endpoint parameters were requested: temperature,
 *   top_k. Refusing to spawn instead of silently dropping them. */
int invocation_check_sampling(const struct profile *p, const struct invocation_sampling *s,
			      struct diag *reterr);

/* The gates a request meets before anything else, that need nothing but its
 * text: attachments for an adapter without image input (-EPERM, naming the
 * adapters that could take them), the sampling gate
 * (invocation_check_sampling(), -EPERM), base_url a URL (-EINVAL),
 * api_key_env a credential variable name (adapter/credential.h;
 * allowed_key_envs: the host's CREDENTIAL_HOST_ALLOW_ENV, or NULL; -EPERM),
 * and, for a factory profile, a spelling for every key it admits (-EPERM).
 * invocation_build() runs exactly these (then checks that the attachments
 * exist and the key's variable is set), and so does `plan validate`, so a
 * plan it passes is not refused at dispatch for a reason it could know. On
 * failure *ret_key (may be NULL) is the sampling key at fault, or
 * _SAMPLING_KEY_INVALID for the attachments. */
int invocation_check_static(const struct profile *p, const struct catalog *cat,
			    const struct invocation_sampling *s, size_t n_attachments,
			    const char *allowed_key_envs, enum sampling_key *ret_key,
			    struct diag *reterr);

/* ---- the request and the plan ---- */

struct invocation_request {
	const struct profile *profile;		 /* required */
	const struct catalog *catalog;		 /* strategy, image input; NULL = the defaults */
	const struct adapter_strategy *strategy; /* NULL: resolved from catalog */
	const char *prompt;			 /* required; "" allowed */
	const char *model;			 /* alias or id; NULL = the agent's default */
	const char *resume_id;			 /* resume this agent session; NULL = fresh */
	const char *session_id;			 /* pre-assign (or derive) this id; NULL = none */
	bool dangerous;				 /* apply dangerous mode */
	struct invocation_sampling sampling;
	const char *const *attachments; /* absolute paths of files (borrowed) */
	size_t n_attachments;
	const char *workdir;	     /* absolute: the agent's cwd */
	const char *session_dir;     /* absolute: .bernstein/runs/RUN/SESSION */
	const char *state_dir;	     /* absolute: reuse this agent state directory (the HOME of
				      * the session being resumed); NULL = SESSION_DIR/home */
	const char *const *host_env; /* the caller's environment, KEY=VALUE, NULL-terminated */
	const char *path_env;	     /* PATH for argv[0]; NULL = the agent environment's */
	const char *self_exe;	     /* argv[0] of built-in adapters; NULL = /proc/self/exe */
	const char *bernstein_exe;   /* absolute path of this bernstein binary, for the hook
				      * command; NULL = readlink("/proc/self/exe") */
	uint64_t timeout_s;	     /* the run's timeout, for a module that wants it; 0 none */
	const char *sandbox;	     /* the OS sandbox the agent runs in ("landlock"), or NULL;
				      * the built-in runner's manifest names it */
	/* The task's MCP servers (adapter/mcpcfg.h), given to the agent by
	 * its profile's runtime.mcp (the built-in runner: in its manifest,
	 * stdio only); none without it refuses the spawn (-EPERM). An env or
	 * header value that is exactly "${NAME}" is the value of NAME in
	 * host_env, read here: NAME must be on the agent allow-list
	 * (envpolicy_base_allowed()) or pass credential_env_check() (-EPERM)
	 * and be set (-ENOENT); such a value goes only into the rendered file
	 * (mode 0600) and onto plan->secrets, never argv. */
	const struct mcp_server *mcp_servers;
	size_t n_mcp_servers;
	size_t arg_strlen_max; /* 0 = INVOCATION_MAX_ARG_STRLEN */
	size_t arg_total_max;  /* 0 = INVOCATION_ARG_TOTAL_DEFAULT */
};

enum invocation_base {
	INVOCATION_BASE_SESSION, /* relative to the session directory */
	INVOCATION_BASE_STATE,	 /* relative to the agent's state directory (its HOME) */
	_INVOCATION_BASE_MAX,
};

struct invocation_file {
	enum invocation_base base;
	char *path; /* relative, no ".." (owned) */
	unsigned mode;
	char *content; /* owned; NUL-terminated */
	size_t len;
};

/* How the prompt reaches the agent. */
enum prompt_delivery {
	PROMPT_DELIVERY_ARGV,  /* "argv": a flag's value or a positional argument */
	PROMPT_DELIVERY_STDIN, /* "stdin": the prompt file is the agent's stdin */
	PROMPT_DELIVERY_FILE,  /* "file": the agent reads the file named on argv */
	PROMPT_DELIVERY_ACP,   /* "acp": session/prompt of the acp event channel */
	PROMPT_DELIVERY_PTY,   /* "pty": typed into its terminal (runtime.pty) */
	_PROMPT_DELIVERY_MAX,
};

struct invocation_plan {
	struct strvec argv; /* argv[0] absolute, unless !binary_found */
	struct strvec env;  /* KEY=VALUE, sorted */
	char *cwd;	    /* the workdir */
	char *session_dir;  /* as requested */
	char *state_dir;    /* the agent's state directory (isolated HOME, runner sessions);
			     * NULL when the agent keeps its state in the user's HOME */
	bool state_reused;  /* state_dir is a resumed session's */
	bool binary_found;  /* argv[0] was found on PATH (else argv[0] is the bare name) */
	int binary_error;   /* when !binary_found: -ENOENT, or -EACCES (not executable) */
	char *stdin_path;   /* absolute path of the agent's stdin; NULL = /dev/null */
	enum prompt_delivery prompt_via;
	bool prompt_too_long; /* the argv limit moved the prompt to stdin or a file */
	size_t prompt_bytes;
	struct invocation_file *files;
	size_t n_files;
	struct strvec warnings;		  /* one line each, no trailing newline */
	char *resume_id;		  /* the session being resumed, or NULL (fell back, none) */
	char *session_id;		  /* the id pre-assigned on argv (derived), or NULL */
	char *model;			  /* the model id passed (after the alias table), or NULL */
	bool model_defaulted;		  /* it is runtime.endpoint.default_model */
	bool endpoint;			  /* runtime.endpoint was applied */
	bool hooks;			  /* runtime.hooks was applied: read hooks_socket */
	char *hooks_socket;		  /* SESSION/hooks.sock when hooks, else NULL: the caller
					   * listens on it (usock_listen(), spec.listen_fd) and
					   * reads its lines with DIALECT_HOOKS */
	bool dangerous;			  /* dangerous mode was applied (args or env) */
	struct adapter_strategy strategy; /* the resolved strategy */
	enum dialect dialect;		  /* the reader of the agent's stdout */
	bool pty; /* runtime.pty with event channel poll-pty: run in a pseudo-terminal,
		   * the prompt typed (prompt_via pty; proc/ptydrive.h) */
	const struct ptydrive_conf *pty_conf; /* then the profile's runtime.pty (borrowed:
					       * the profile outlives the plan) */
	struct strvec secrets;		      /* values to redact (never printed; util/redact.h) */
	/* runtime.login of an agent with a private HOME: each file of the
	 * user's HOME (absolute) and where it appears in state_dir (absolute).
	 * The caller links the ones that exist, unless login_by_sandbox (a
	 * sandbox tier does it through its policy: orch/confine.h), and
	 * redacts their values from everything it keeps. */
	struct strvec login_src;
	struct strvec login_dst;
	bool login_by_sandbox;
	/* The acp event channel (dialect DIALECT_ACP): the prompt the caller
	 * sends in session/prompt (adapter/acp.h), NULL for other channels. The
	 * argv carries runtime.acp.args in place of the prompt tokens, stdin is
	 * the caller's pipe, and resume_id is loaded with session/load. */
	char *acp_prompt;
	/* dangerous mode was asked and the strategy's dangerous mode is not
	 * unsupported: the ACP client allows every permission request (else it
	 * allows what stays inside the tree) */
	bool acp_allow_all;
	/* the rendered MCP configuration when it is a per-attempt file of
	 * the session directory (absolute; the caller removes it when the
	 * attempt ends), else NULL */
	char *mcp_config;
	/* the file holding the rendered servers (the per-attempt file, or the
	 * HOME file they were merged into: rewritten at every spawn), absolute:
	 * the caller removes it when the attempt ends; NULL: none */
	char *mcp_cleanup;
	struct strvec mcp_cleanup_more; /* runtime.mcp.remove, absolute: removed with it */
	size_t n_mcp_servers;		/* the servers given to the agent */
	/* the same servers, their ${NAME} values resolved, as the ACP
	 * session/new "mcpServers" array (mcpcfg_acp_json(), compact), or
	 * NULL: for an ACP channel to send. It holds secrets: never log it */
	char *mcp_acp;
	/* the stdio servers' commands found on the agent's PATH (absolute):
	 * what a sandbox tier must let the agent run besides itself */
	struct strvec mcp_programs;
};

void invocation_plan_init(struct invocation_plan *plan);
void invocation_plan_release(struct invocation_plan *plan);

/* Build the plan for req into *ret (which must be initialised; it is
 * overwritten). Returns 0, or a negative errno with the reason in reterr:
 *   -EPERM    refused by a gate (sampling, credential name, attachments)
 *   -EINVAL   a bad request (a session id, a base_url, a missing model a
 *             template needs) or a profile that cannot express it
 *   -ENOENT   something the request names is missing (an attachment, the
 *             variable api_key_env names)
 *   -E2BIG    the prompt does not fit argv and the profile has no long_prompt
 *   -ENOTSUP  a module profile no module here serves (generic)
 * Nothing is written or run: the caller writes plan->files and starts it. */
int invocation_build(const struct invocation_request *req, struct invocation_plan *ret,
		     struct diag *reterr);

/* The names of the adapters of cat that take image attachments, sorted,
 * appended to ret. */
void invocation_vision_adapters(const struct catalog *cat, struct strvec *ret);

const char *prompt_delivery_to_string(enum prompt_delivery v);
const char *invocation_base_to_string(enum invocation_base v);

#endif
