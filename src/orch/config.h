/* bernstein.yaml: the configuration of runs (docs/configuration.md).
 *
 * Every key is optional; a missing file means the defaults
 * (orch_config_new_default()). Loading is strict: an unknown key, a wrong
 * type or a value out of range is an error at its FILE:LINE:COL naming the
 * field by its path:
 *   bernstein.yaml:7:18: field 'role_model_policy.backend.api_key_env':
 *   api_key_env 'GITHUB_TOKEN' is not an allowed credential variable name: ...
 *
 *   adapter: auto         default adapter (tasks that name none); auto: the
 *                         first usable agent of auto: at dispatch
 *   auto: [claude, ...]   the agents adapter: auto tries, in order
 *   model: null           default model (null: the adapter's own)
 *   parallel: 4           global parallelism, 1..256
 *   timeout: 1800         seconds per task attempt, > 0
 *   idle_timeout: 0       the stall watchdog: seconds an agent may print
 *                         nothing before its tree is stopped (stalled); 0 off
 *   kill_grace: 5         seconds between SIGTERM and SIGKILL, > 0
 *   max_retries: 2        retries after rate_limited, 0..20 (retry.max_attempts - 1)
 *   retry: {max_attempts, on, backoff, models}   orch/retry.h
 *   fallback: [adapters]  the adapters that take over a failing task (orch/retry.h)
 *   retry_backoff: 2      seconds before the first retry, doubled each retry, >= 0
 *                         (with jitter; the agent's retry hint wins: orch/meters.h)
 *   preference: [a, b]    routing preference order (adapter names)
 *   gates: [{name, run, timeout}]   commands run in the worktree after completion
 *   merge: auto           auto (also spelled no-ff) | review | pr | none
 *   pr: {remote, base, repo, draft}   where merge: pr pushes and opens the PR
 *   on_conflict: rebase   rebase | resolve | fail: a merge that conflicts
 *                         (docs/runs.md, "Conflicts"; a role's or task's own wins)
 *   resolver: {adapter, model}   the agent of on_conflict: resolve's resolver
 *   sandbox: auto         auto | none | landlock | bwrap | container (a task's own wins)
 *   checkout: auto        auto | worktree | overlay: how an unsandboxed task's tree is
 *                         made (orch/checkout.h; auto: overlay from
 *                         CHECKOUT_OVERLAY_AUTO_FILES files on, when it can be mounted)
 *   network: (unset)      full | llm | none (a task's own wins; unset: confine.h's default)
 *   mode: null            the mode profile applied (smart, deep, fast or a modes: entry)
 *   modes: {NAME: {temperature, top_p, top_k, max_tokens}}
 *   worktree_setup: {copy_files, symlink_dirs, setup_command, timeout}
 *   hooks: {pre_task, post_task, pre_merge, post_merge, on_run_end}   orch/hooks.h
 *   notify: {webhook, on, desktop, timeout, retries}                   orch/hooks.h
 *   budget: {max_cost_usd, max_tokens, warn_at, on_exceed}   orch/budget.h
 *   role_model_policy: {ROLE: {adapter (or cli), provider, model, effort,
 *                              base_url, api_key_env, limits, sandbox, network,
 *                              idle_timeout, retry, fallback, worktree_setup}}
 *   endpoints: {ADAPTER: {base_url, api_key_env, model}}   orch/endpoints.h
 *
 * role_model_policy.*.api_key_env (and endpoints.*.api_key_env) is checked while loading against
 * the credential allow-list (adapter/credential.h); the caller passes the value of the host
 * variable BERNSTEIN_ALLOWED_API_KEY_ENVS (nothing here reads the environment). */
#ifndef BERNSTEIN_ORCH_CONFIG_H
#define BERNSTEIN_ORCH_CONFIG_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/invocation.h"
#include "orch/executor.h"
#include "orch/endpoints.h"
#include "orch/mcpservers.h"
#include "orch/hooks.h"
#include "orch/budget.h"
#include "orch/wtsetup.h"
#include "proc/contain.h"
#include "proc/netproxy.h"
#include "orch/retry.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/sbuf.h"
#include "util/strvec.h"

struct profile;
struct ydoc;

#define ORCH_CONFIG_FILE      "bernstein.yaml"
#define ORCH_CONFIG_MAX_BYTES ((size_t)256 * 1024)

/* The defaults. */
#define ORCH_DEFAULT_ADAPTER	     "auto"
#define ORCH_ADAPTER_AUTO	     "auto" /* the adapter name that means: the first usable of auto: */
#define ORCH_DEFAULT_PARALLEL	     4
#define ORCH_DEFAULT_TIMEOUT_S	     1800.0
#define ORCH_DEFAULT_KILL_GRACE_S    5.0
#define ORCH_DEFAULT_MAX_RETRIES     2
#define ORCH_DEFAULT_RETRY_BACKOFF_S 2.0
#define ORCH_DEFAULT_GATE_TIMEOUT_S  600.0
#define ORCH_DEFAULT_ROLE	     "backend"
#define ORCH_DEFAULT_PR_REMOTE	     "origin"

/* The limits. */
#define ORCH_MAX_PARALLEL     256
#define ORCH_MAX_RETRIES      20
#define ORCH_MAX_TIMEOUT_S    604800.0 /* a week */
#define ORCH_MAX_KILL_GRACE_S 3600.0
#define ORCH_MAX_BACKOFF_S    3600.0
#define ORCH_MAX_NAME	      64 /* gate, mode and id names */

enum merge_policy {
	MERGE_AUTO,   /* "auto" (or "no-ff"): --no-ff merge into the base branch */
	MERGE_NONE,   /* "none": leave the task's branch, do not merge */
	MERGE_REVIEW, /* "review": wait in state review for approve or reject */
	MERGE_PR,     /* "pr": push the branch and open a pull request (pr:) */
	_MERGE_POLICY_MAX,
	_MERGE_POLICY_INVALID = -EINVAL,
};

const char *merge_policy_to_string(enum merge_policy m);
enum merge_policy merge_policy_from_string(const char *s);

/* on_conflict: what a merge that conflicts leads to (docs/runs.md,
 * "Conflicts"). */
enum conflict_policy {
	CONFLICT_REBASE,  /* "rebase" (the default): rebase the branch onto the base in
			   * its own tree, gates again, merge; else conflict */
	CONFLICT_RESOLVE, /* "resolve": the same, and when the rebase conflicts too a
			   * resolver agent resolves a merge of the base in its tree */
	CONFLICT_FAIL,	  /* "fail": conflict at once, the branch kept */
	_CONFLICT_POLICY_MAX,
	_CONFLICT_POLICY_INVALID = -EINVAL,
};

const char *conflict_policy_to_string(enum conflict_policy p);
enum conflict_policy conflict_policy_from_string(const char *s);
extern const char *const conflict_policy_names[];

enum sandbox_mode {
	SANDBOX_NONE,	   /* "none": a git worktree, the agent unconfined */
	SANDBOX_LANDLOCK,  /* "landlock": a per-task clone, the agent confined to it */
	SANDBOX_BWRAP,	   /* "bwrap": the same in bubblewrap's namespaces (docs/runs.md) */
	SANDBOX_CONTAINER, /* "container": the same in an OCI container (crun or runc) */
	SANDBOX_AUTO,	   /* "auto" (the default): the strongest tier this host provides
			      in which the task's agent is known to work (its profile's
			      runtime.sandbox.tiers), else none */
	_SANDBOX_MODE_MAX,
	_SANDBOX_MODE_INVALID = -EINVAL,
};

const char *sandbox_mode_to_string(enum sandbox_mode m);

/* checkout: (docs/configuration.md) */
enum checkout_mode {
	CHECKOUT_MODE_AUTO,	/* "auto" (the default): overlay in a big repository */
	CHECKOUT_MODE_WORKTREE, /* "worktree": `git worktree add` */
	CHECKOUT_MODE_OVERLAY,	/* "overlay": a shared base checkout and a layer per task */
	CHECKOUT_MODE_REFLINK,	/* "reflink": reflink copies of a shared base checkout */
	_CHECKOUT_MODE_MAX,
	_CHECKOUT_MODE_INVALID = -EINVAL,
};
const char *checkout_mode_to_string(enum checkout_mode m);
enum sandbox_mode sandbox_mode_from_string(const char *s);

/* The roles a task may have (Bernstein's templates/roles plus 'data'),
 * sorted, NULL-terminated. */
extern const char *const orch_roles[];
bool orch_role_known(const char *role);

/* The efforts (low, medium, normal, high, max), NULL-terminated. */
extern const char *const orch_efforts[];

/* A command run in the task's worktree after the agent finished. */
struct orch_gate {
	const char *name; /* unique within its list */
	const char *run;  /* the command line */
	double timeout_s; /* > 0; ORCH_DEFAULT_GATE_TIMEOUT_S when not given */
	unsigned line, col;
};

/* A mode profile: sampling parameters for adapters that declare
 * supports_sampling_params. Only temperature, top_p, top_k and max_tokens. */
struct mode_profile {
	const char *name;
	struct invocation_sampling sampling;
	bool builtin;	    /* smart, deep, fast as shipped (not overridden) */
	unsigned line, col; /* the modes: entry; 0 for a built-in */
};

/* role_model_policy[role]. Unset fields are NULL. */
struct role_policy {
	const char *role;
	const char *adapter;  /* 'adapter:' or Bernstein's 'cli:' */
	const char *provider; /* recorded (Bernstein's schema); routing uses adapter */
	const char *model;
	const char *effort; /* one of orch_efforts */
	const char *base_url;
	const char *api_key_env; /* the NAME of the variable holding the key */
	/* limits: of the role's agents, each one set overriding bernstein.yaml's
	 * (a plan task's own override the role's); 0: not set */
	struct contain_limits limits;
	/* sandbox:, network: of the role's tasks, over bernstein.yaml's (a plan's
	 * or a task's own win); valid when has_ */
	bool has_sandbox, has_network;
	enum sandbox_mode sandbox;
	enum net_mode network;
	struct retry_policy retry; /* retry:, fallback: (orch/retry.h) */
	unsigned line, col;
	/* idle_timeout: of the role's tasks (0 off), over bernstein.yaml's;
	 * valid when has_idle_timeout */
	bool has_idle_timeout;
	double idle_timeout_s;
	/* executor: of the role's tasks, over bernstein.yaml's; valid when
	 * has_executor (orch/executor.h) */
	bool has_executor;
	enum executor_kind executor;
	/* worktree_setup: of the role's tasks, key by key over bernstein.yaml's
	 * (a plan's, then a task's own, over it); .set 0: not given */
	struct orch_wtsetup wtsetup;
	/* on_conflict: of the role's tasks, over bernstein.yaml's; valid when
	 * has_on_conflict */
	bool has_on_conflict;
	enum conflict_policy on_conflict;
	/* mcp_servers: of the role's tasks, by name over bernstein.yaml's (a
	 * plan's, then a task's own, over it) */
	struct orch_mcp_servers mcp_servers;
	/* hooks:, notify: of the role's tasks (docs/configuration.md, "Hooks"):
	 * each hook replaces the one of the same name of the plan and of
	 * bernstein.yaml; notify: replaces theirs whole for the role's tasks'
	 * events (.set: given). No on_run_end: that is the run's. */
	struct orch_hookset hooks;
	struct orch_notify notify;
};

/* The loaded configuration. Read the fields directly; everything lives in
 * the arena (and the parsed document), freed by orch_config_free(). */
struct orch_config {
	struct arena arena;
	const char *source;  /* the file name in diagnostics; NULL for the defaults */
	const char *adapter; /* never NULL */
	const char *model;   /* NULL: the adapter's default */
	int64_t parallel;
	double timeout_s;
	double idle_timeout_s; /* the stall watchdog; 0: off (the default) */
	double kill_grace_s;
	int64_t max_retries;
	double retry_backoff_s;
	/* retry:, fallback: (orch/retry.h); max_attempts and backoff as given
	 * there (max_retries and retry_backoff above are their legacy
	 * spellings, kept in step) */
	struct retry_policy retry;
	struct strvec preference; /* adapter names, no duplicates */
	/* auto: the agents adapter: auto tries, in order (no duplicates, never
	 * mock or auto); orch_auto_default when not given */
	struct strvec auto_order;
	struct orch_gate *gates;
	size_t n_gates;
	enum merge_policy merge;
	/* pr: where merge: pr pushes (a remote name of the repository, or a
	 * URL), the pull request's base branch (NULL: the run's base), its
	 * GitHub repository OWNER/NAME or HOST/OWNER/NAME (NULL: read from the
	 * remote's URL), whether it is a draft */
	struct {
		const char *remote;
		const char *base;
		const char *repo;
		bool draft;
	} pr;
	enum sandbox_mode sandbox;
	int network; /* enum net_mode, or -1: the default (orch/confine.h) */
	/* limits: of every task's agent (0: none) */
	struct contain_limits limits;
	/* worktree_setup: what a task's fresh tree gets (orch/wtsetup.h) */
	struct orch_wtsetup wtsetup;
	/* protected_paths: rules added to protect_builtin (orch/protect.h),
	 * NULL-terminated, n_protected of them */
	const char **protected_paths;
	size_t n_protected;
	/* budget: the run's caps (orch/budget.h); a plan's fields win */
	struct orch_budget budget;
	const char *mode;	    /* NULL: no mode profile; else an entry of modes[] */
	struct mode_profile *modes; /* the built-ins (smart, deep, fast), then the
				     * user's; a user entry with a built-in name
				     * replaces it in place */
	size_t n_modes;
	struct role_policy *roles; /* in file order */
	size_t n_roles;
	/* endpoints: per adapter (orch/endpoints.h); a plan's entry wins */
	struct orch_endpoints endpoints;
	/* mcp_servers: every task's agent's (orch/mcpservers.h); by name, a
	 * role's, a plan's and a task's own win */
	struct orch_mcp_servers mcp_servers;
	struct ydoc *doc; /* private: the document the strings point into */
	/* hooks:, notify: (orch/hooks.h) */
	struct orch_hookset hooks;
	struct orch_notify notify;
	/* on_conflict: (CONFLICT_REBASE when not given); resolver: the
	 * adapter and model of a resolver agent (NULL: the resolver role's
	 * policy, else the task's own adapter; the role's, else the default
	 * model) */
	enum conflict_policy on_conflict;
	struct {
		const char *adapter;
		const char *model;
	} resolver;
	enum checkout_mode checkout; /* checkout: (CHECKOUT_MODE_AUTO when not given) */
	/* executor: where tasks run (EXECUTOR_LOCAL when not given); slurm:
	 * the cluster's settings (orch/executor.h, docs/executors.md) */
	enum executor_kind executor;
	struct executor_slurm slurm;
};

/* The default of auto: (claude, codex, gemini, qwen, opencode, pi),
 * NULL-terminated. */
extern const char *const orch_auto_default[];

/* The defaults (what a missing bernstein.yaml means). Never NULL. */
struct orch_config *orch_config_new_default(void);

/* Load path. -ENOENT (with the diag "cannot read ...") when the file does
 * not exist: a missing bernstein.yaml is not an error in itself, the caller
 * decides (and usually takes orch_config_new_default()). Otherwise -EINVAL
 * (syntax, schema, a refused api_key_env: FILE:LINE:COL and the field),
 * -EFBIG (larger than ORCH_CONFIG_MAX_BYTES) or -errno (I/O).
 * allowed_api_key_envs is the value of BERNSTEIN_ALLOWED_API_KEY_ENVS, or
 * NULL. *ret is written only on success. */
int orch_config_load(const char *path, const char *allowed_api_key_envs, struct orch_config **ret,
		     struct diag *reterr);
/* The same from memory; name is the file name in diagnostics. */
int orch_config_load_buf(const char *name, const char *buf, size_t len,
			 const char *allowed_api_key_envs, struct orch_config **ret,
			 struct diag *reterr);
struct orch_config *orch_config_free(struct orch_config *c);

/* role_model_policy[role], or NULL. */
const struct role_policy *orch_config_role(const struct orch_config *c, const char *role);
/* The MCP servers of a task of role (orch/mcpservers.h): by name, task >
 * role > plan > c (plan, task: its spec's; each may be NULL); the array
 * from a, the strings borrowed. */
void orch_config_mcp_servers(const struct orch_config *c, const char *role,
			     const struct orch_mcp_servers *plan,
			     const struct orch_mcp_servers *task, struct arena *a,
			     struct orch_mcp_servers *ret);
/* The sandbox: of a task of role that does not set its own (nor its
 * plan): its role's, else c's. */
enum sandbox_mode orch_config_sandbox(const struct orch_config *c, const char *role);
/* The network: of such a task: its role's, else c's, else -1 (the default,
 * orch/confine.h). */
int orch_config_network(const struct orch_config *c, const char *role);
/* The idle_timeout: (seconds, 0 off) of a task of role that does not set
 * its own (nor its plan): its role's, else c's. */
double orch_config_idle_timeout(const struct orch_config *c, const char *role);

/* The executor of a task of role: its own (task_has, task_kind: a plan
 * task's executor:), else its role's, else bernstein.yaml's. */
enum executor_kind orch_config_executor(const struct orch_config *c, const char *role,
					bool task_has, enum executor_kind task_kind);
/* The worktree_setup of a task of role that gives none of its own (nor its
 * plan): c's, each key its role gives replacing c's, into *ret (strings
 * borrowed from c). */
void orch_config_wtsetup(const struct orch_config *c, const char *role, struct orch_wtsetup *ret);
/* The on_conflict: of a task of role that does not set its own (nor its
 * plan): its role's, else c's. */
enum conflict_policy orch_config_on_conflict(const struct orch_config *c, const char *role);
/* The mode profile called name (user entries first, then built-ins), or NULL. */
const struct mode_profile *orch_config_mode(const struct orch_config *c, const char *name);

/* The endpoint entry of adapter for a task: its plan's (plan: the
 * plan's endpoints:, may be NULL), else c's; NULL when neither has one. */
const struct orch_endpoint *orch_config_endpoint(const struct orch_config *c,
						 const struct orch_endpoints *plan,
						 const char *adapter);

/* The per-spawn sampling and endpoint slots of a task, into *ret (fully
 * overwritten). Four sources in ascending precedence, each filling only
 * the slots still unset:
 *   1. the mode profile c->mode, only when p (the adapter's capability
 *      profile) declares supports_sampling_params;
 *   2. ep, the adapter's endpoint entry (orch_config_endpoint()):
 *      base_url, api_key_env;
 *   3. role_model_policy[role]: base_url, api_key_env;
 *   4. the task's explicit slots (task, may be NULL), which always win.
 * c, role, p and ep may be NULL (that source then gives nothing). A run
 * that sets none gets no slot set. */
void orch_config_slots(const struct orch_config *c, const char *role, const struct profile *p,
		       const struct orch_endpoint *ep, const struct invocation_sampling *task,
		       struct invocation_sampling *ret);

/* The model of a task (task_model: its own or its plan's model:, may be
 * NULL): task_model, else role_model_policy[role].model, else ep's model,
 * else c's model:, else NULL (the adapter's own). */
const char *orch_config_model(const struct orch_config *c, const char *role,
			      const struct orch_endpoint *ep, const char *task_model);

/* The effective configuration as JSON (a new reference): every key, with
 * "source". */
json_t *orch_config_json(const struct orch_config *c);
/* The same as bernstein.yaml text that loads back to the same
 * configuration. Appends to out; 0 or -ENOBUFS. */
int orch_config_to_yaml(const struct orch_config *c, struct sbuf *out);

/* The commented bernstein.yaml `bernstein init` writes: every key with its
 * default and what it does. It loads to orch_config_new_default(). */
const char *orch_config_template(void);

/* The JSON forms `config show --json` and a task's recorded spec
 * (orch/spec.h) share: the sampling slots set ({temperature, top_p, top_k,
 * max_tokens, base_url, api_key_env}), gates ([{name, run, timeout}]),
 * limits ({memory, pids, cpu}: only those set) and worktree_setup. */
json_t *orch_slots_json(const struct invocation_sampling *s);
json_t *orch_gates_json(const struct orch_gate *g, size_t n);
json_t *orch_limits_json(const struct contain_limits *l);
/* worktree_setup ({copy_files, symlink_dirs, setup_command, timeout}: the
 * keys given). */
json_t *orch_wtsetup_json(const struct orch_wtsetup *ws);

#endif
