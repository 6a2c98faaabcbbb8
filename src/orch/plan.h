/* plan.yaml: the tasks of a run (docs/plans.md).
 *
 * Two forms give the same struct plan. The tasks form:
 *
 *   name: demo
 *   adapter: mock                   (and model, sandbox, network, limits,
 *                                   idle_timeout, worktree_setup:
 *                                   the defaults of every task below)
 *   endpoints:                      per adapter, over bernstein.yaml's entry
 *     codex: {base_url: ..., api_key_env: OPENAI_API_KEY, model: gpt-5.5}
 *                                   (orch/endpoints.h)
 *   tasks:
 *     - title: write greeting       required, unique
 *       id: greet                   optional; default: a slug of the title
 *       prompt: "..."               required (or Bernstein's description:)
 *       role: backend               default backend; one of orch_roles
 *       requires: [capability:vision, python]
 *       adapter: mock               optional (Bernstein: cli:)
 *       model: null
 *       effort: high
 *       depends_on: [other title or id]
 *       timeout: 600
 *       gates: [{name: lint, run: "true"}]
 *       artifact: report.md         workdir-relative, no "..", not absolute
 *       sandbox: landlock           auto | none | landlock | bwrap | container;
 *                                   default: the plan's, else the role's
 *                                   (role_model_policy), else bernstein.yaml's
 *       network: llm                full | llm | none; defaults likewise
 *       limits: {memory: 1G}        each one set wins over the plan's, the
 *                                   role's, bernstein.yaml's
 *       worktree_setup: {setup_command: "make deps"}   each key given wins
 *                                   likewise (copy_files, symlink_dirs,
 *                                   setup_command, timeout)
 *       attachments: [shot.png]     workdir-relative files (images)
 *       sampling: {temperature: 0.2, base_url: ..., api_key_env: ...}
 *                                   (alias: mcp_config)
 *       retry: {max_attempts: 3, on: [failed], backoff: 1, models: [a, b]}
 *       fallback: [codex]           orch/retry.h: each key wins over the
 *                                   role's and bernstein.yaml's
 *       constraints: [no new deps]  task context (orch/context.h): the
 *       context_files: [docs/a.md]  prompt is rendered from a template when
 *                                   either is given (the task's, else the
 *                                   plan's top-level one)
 *       files: [src/auth.c, t-*.sh]  paths or globs it touches: tasks whose
 *                                   files overlap do not run at once
 *
 * and Bernstein's stages form (anchor-core §5.4): name, stages[{name,
 * steps[{title|goal, description, role, cli, model, ...}], depends_on:
 * [stage names]}]: the steps of a stage run in parallel, and each step
 * depends on every step of the stages its stage lists.
 *
 * Loading reports every problem, each at its FILE:LINE:COL, sorted by
 * position: schema errors (unknown keys, wrong types), unknown roles, bad
 * capability: tokens (route/requirements.h), bad ids and artifacts,
 * duplicate titles and ids, dangling dependencies and cycles (named:
 * "dependency cycle: a -> b -> a"). */
#ifndef BERNSTEIN_ORCH_PLAN_H
#define BERNSTEIN_ORCH_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "adapter/invocation.h"
#include "orch/config.h"
#include "orch/retry.h"
#include "route/requirements.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/hash.h"

#define PLAN_MAX_BYTES	((size_t)1024 * 1024)
#define PLAN_MAX_ISSUES 100 /* more are counted in the list's .dropped */
#define PLAN_ID_MAX	64

enum plan_form {
	PLAN_FORM_TASKS,  /* "tasks" */
	PLAN_FORM_STAGES, /* "stages" */
	_PLAN_FORM_MAX,
};

const char *plan_form_to_string(enum plan_form f);

struct plan_dep {
	const char *name;   /* as written: a title or id (tasks form), a stage (stages form) */
	size_t index;	    /* the task depended on (valid once the plan validated) */
	unsigned line, col; /* where it is written */
};

struct plan_task {
	const char *id;	      /* [a-z0-9][a-z0-9-]{0,63}, unique */
	const char *title;    /* unique */
	const char *prompt;   /* prompt: or description: (stages form: defaults to the title) */
	const char *role;     /* one of orch_roles; default backend */
	const char *adapter;  /* the task's, else the plan's adapter:; NULL: the run decides */
	const char *model;    /* the task's, else the plan's model:; NULL: the run decides */
	const char *effort;   /* NULL or one of orch_efforts */
	const char *artifact; /* artifact-mode task: the declared workdir-relative file, or NULL */
	const char *stage;    /* stages form: the stage's name; NULL otherwise */
	const char *const *requires; /* every token as written, NULL-terminated */
	size_t n_requires;
	struct requirements req;	/* the capability: tokens, parsed */
	const char *const *attachments; /* workdir-relative paths, NULL-terminated */
	size_t n_attachments;
	struct plan_dep *deps; /* in file order, no duplicates */
	size_t n_deps;
	double timeout_s; /* 0: the configuration's */
	/* idle_timeout: (the stall watchdog, seconds, 0 off), the task's, else
	 * the plan's; valid when has_idle_timeout (else the role's or
	 * bernstein.yaml's) */
	bool has_idle_timeout;
	double idle_timeout_s;
	/* sandbox: (a sandbox_mode name), network: (full, llm, none), each the
	 * task's, else the plan's top-level one; NULL: the role's or
	 * bernstein.yaml's */
	const char *sandbox;
	const char *network;
	/* on_conflict: (rebase, resolve, fail), the task's, else the plan's;
	 * NULL: the role's or bernstein.yaml's */
	const char *on_conflict;
	/* executor: (local, slurm), the task's, else the plan's; NULL: the
	 * role's or bernstein.yaml's (orch/executor.h) */
	const char *executor;
	/* limits: each one set (the task's, else the plan's) overrides the
	 * role's and bernstein.yaml's */
	struct contain_limits limits;
	/* worktree_setup: the plan's top-level one, each key the task gives
	 * over it; each key given (.set) over its role's and bernstein.yaml's */
	struct orch_wtsetup wtsetup;
	struct orch_gate *gates; /* extra gates after the configuration's */
	size_t n_gates;
	struct invocation_sampling sampling; /* the task's explicit slots */
	struct orch_mcp_servers mcp_servers; /* the task's own mcp_servers: */
	struct retry_policy retry;	     /* retry:, fallback: (orch/retry.h) */
	/* task context (orch/context.h): constraints:, context_files: (the
	 * task's, else the plan's; NULL: not given, which keeps the prompt
	 * verbatim) with where each file is written; files: (paths or globs
	 * the task expects to touch, NULL-terminated, never NULL) */
	const char *const *constraints;
	size_t n_constraints;
	const char *const *context_files;
	size_t n_context_files;
	unsigned *context_lines, *context_cols;
	const char *const *files;
	size_t n_files;
	const char *path;   /* "tasks[2]", "stages[0].steps[1]": for messages */
	bool id_explicit;   /* id: was given */
	unsigned line, col; /* the task's mapping */
	unsigned title_line, title_col, id_line, id_col;
	/* where each slot's key and the attachments: key are (0: not given) */
	unsigned sampling_line[_SAMPLING_KEY_MAX], sampling_col[_SAMPLING_KEY_MAX];
	unsigned attachments_line, attachments_col;
};

struct plan {
	struct arena arena;
	const char *source; /* the file name in diagnostics */
	const char *name;
	const char *description; /* or NULL */
	enum plan_form form;
	struct plan_task *tasks; /* in file order */
	size_t n;
	char hash[SHA256_HEX_LEN + 1]; /* SHA-256 of the file's bytes */
	struct orch_endpoints
		endpoints; /* endpoints: (orch/endpoints.h); each task's spec has them */
	struct orch_mcp_servers mcp_servers; /* mcp_servers: (orch/mcpservers.h) */
	struct ydoc *doc;		     /* private: the document the strings point into */
	struct orch_budget budget; /* budget: (orch/budget.h); nothing given: no field set */
	/* hooks:, notify: (orch/hooks.h): each hook over bernstein.yaml's of the
	 * same name, notify: over bernstein.yaml's whole; a role's win over
	 * both (docs/configuration.md, "Hooks"). notify.set: given; its
	 * webhook is always NULL (a plan gives webhook_env only) */
	struct orch_hookset hooks;
	struct orch_notify notify;
};

/* Every problem found, in position order: a util/diag.h list that keeps
 * PLAN_MAX_ISSUES. */
#define PLAN_ISSUES_INIT DIAG_LIST_INIT(PLAN_MAX_ISSUES)

/* Parse and validate a plan from memory (name: the file name in
 * diagnostics). allowed_api_key_envs is the value of the host's
 * BERNSTEIN_ALLOWED_API_KEY_ENVS (or NULL), for sampling.api_key_env.
 * Returns 0 with the plan in *ret, or -EINVAL with every problem appended
 * to issues (*ret untouched); -EFBIG when buf is larger than
 * PLAN_MAX_BYTES. issues may be NULL. */
int plan_load_buf(const char *name, const char *buf, size_t len, const char *allowed_api_key_envs,
		  struct plan **ret, struct diag_list *issues);
/* The same from a file: also -errno (one issue "cannot read file: ...")
 * when it cannot be read. */
int plan_load_file(const char *path, const char *allowed_api_key_envs, struct plan **ret,
		   struct diag_list *issues);
/* The same with only the first problem (by position) in reterr. */
int plan_load(const char *path, const char *allowed_api_key_envs, struct plan **ret,
	      struct diag *reterr);
struct plan *plan_free(struct plan *p);

/* The steps of validation after parsing (plan_load_* call it): resolve
 * depends_on into indices; duplicate titles and ids, dangling dependencies,
 * cycles. Appends a diag per problem to issues; returns their number. */
size_t plan_validate(struct plan *p, struct diag_list *issues);

/* SHA-256 (lowercase hex) of the plan file's bytes, for the run record. */
const char *plan_hash(const struct plan *p);

/* The index of the task with this id, else this title; -1 when none. */
long plan_find(const struct plan *p, const char *id_or_title);

/* A topological order of the tasks (dependencies first; among the ready
 * tasks the one first in the file) into order[0..p->n). -ELOOP when the
 * dependencies have a cycle (never for a loaded plan). */
int plan_topo_order(const struct plan *p, size_t *order);

/* The task id a title gives: lowercase ASCII letters and digits kept,
 * every other run of bytes one '-', trimmed, cut to PLAN_ID_MAX; "" when
 * nothing is left. buf has at least PLAN_ID_MAX + 1 bytes. */
const char *plan_slug(const char *title, char *buf);
/* [a-z0-9][a-z0-9-]{0,63} */
bool plan_id_valid(const char *id);

#endif
