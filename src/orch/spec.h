/* The task as a run dispatches it: struct task_spec.
 *
 * A plan task (plan.h) becomes a task_spec once, when the run is created
 * (spec_from_plan()); spec_to_json() is the one serialiser of the form
 * recorded in state.db (the tasks.spec column) and spec_parse() the one
 * parser back. Nothing else reads a recorded task by JSON key.
 *
 * The recorded form is an object with these keys, each optional (a missing
 * one is the default: NULL, empty, 0, unset), in any order:
 *
 *   id, title, role, adapter, model, effort, prompt, artifact, stage
 *                                       string or null
 *   depends_on, requires, attachments   array of strings
 *   timeout                             number > 0, or null (the config's)
 *   idle_timeout                        number >= 0: the stall watchdog, 0 off
 *                                       (absent: the role's or config's)
 *   sandbox                             auto | none | landlock | bwrap |
 *                                       container (absent: the config's)
 *   sandbox_tier                        none | landlock | bwrap | container:
 *                                       the tier decided when the task was
 *                                       first routed (absent before)
 *   network                             full | llm | none (absent: the config's)
 *   on_conflict                         rebase | resolve | fail (absent: the
 *                                       role's or config's)
 *   conflict_from                       the commit (hex) the task's branch was
 *                                       at when its merge conflicted: where a
 *                                       killed rebase or resolver is put back
 *                                       (run-conflict.c; absent before)
 *   limits                              {memory: int, pids: int, cpu: number}
 *   gates                               [{name, run, timeout}]
 *   worktree_setup                      {copy_files, symlink_dirs: arrays of
 *                                        paths; setup_command: string or
 *                                        null; timeout: number > 0}: the
 *                                       plan's keys given (absent: none)
 *   sampling                            {temperature, top_p: number;
 *                                        top_k, max_tokens: integer;
 *                                        base_url, api_key_env: string}
 *                                       (a null value is as absent)
 *   endpoints                           {ADAPTER: {base_url, api_key_env,
 *                                        model: string}}: its plan's
 *                                       (orch/endpoints.h; absent: none)
 *   retry                               {max_attempts, on, backoff, models}
 *                                       (only the parts given; orch/retry.h)
 *   fallback                            array of adapter names
 *   retry_state                         {at: the position in the chain of
 *                                        adapters (0: routing's choice, i:
 *                                        fallback[i-1]), base: the task's
 *                                        attempts before the first on it,
 *                                        model: the last attempt's model or
 *                                        null} (absent: all 0)
 *   goal                                string: the plan's description, for a
 *                                       task whose prompt is rendered (absent:
 *                                       none)
 *   constraints, context_files          arrays of strings: given (even empty),
 *                                       the prompt is rendered from the
 *                                       template (orch/context.h; absent: the
 *                                       prompt verbatim)
 *   files                               array of paths or globs the task
 *                                       touches (absent: none)
 *   line, column                        integers >= 0 (where the plan had it)
 *
 * spec_parse() is strict: an unknown key, a value of the wrong type or out
 * of range is -EBADMSG with a message naming the key ("sampling.top_p: ...").
 * Numbers stay numbers: spec_to_json(spec_parse(j)) == j for every j it
 * accepts that spec_to_json() could have written. */
#ifndef BERNSTEIN_ORCH_SPEC_H
#define BERNSTEIN_ORCH_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "adapter/invocation.h"
#include "orch/config.h"
#include "orch/plan.h"
#include "orch/retry.h"
#include "proc/contain.h"
#include "proc/netproxy.h"
#include "proc/sandbox.h"
#include "route/requirements.h"
#include "util/arena.h"
#include "util/diag.h"

#define SPEC_MAX_BYTES ((size_t)4 << 20) /* a recorded spec larger than this is refused */

struct task_spec {
	struct arena arena; /* every string and array below */
	const char *id, *title, *role, *adapter, *model, *effort, *prompt;
	const char *artifact;	       /* artifact-mode task: the declared file, or NULL */
	const char *stage;	       /* stages form: the stage's name, or NULL */
	const char *const *depends_on; /* task ids, NULL-terminated */
	size_t n_depends_on;
	const char *const *requires; /* every token as written, NULL-terminated */
	size_t n_requires;
	struct requirements req;	/* the capability: tokens among them, parsed */
	const char *const *attachments; /* workdir-relative, NULL-terminated */
	size_t n_attachments;
	double timeout_s;      /* 0: the configuration's */
	bool has_idle_timeout; /* idle_timeout: given (else the role's or configuration's) */
	double idle_timeout_s; /* 0: off */
	bool has_sandbox;      /* sandbox: given (else the configuration's) */
	enum sandbox_mode sandbox;
	bool has_tier; /* the tier decided when first routed, kept by retries and resumes */
	enum sandbox_kind tier;
	int network;	   /* enum net_mode, or -1: not given (the configuration's) */
	bool has_executor; /* executor: given (else the role's or configuration's) */
	enum executor_kind executor;
	bool has_on_conflict; /* on_conflict: given (else the role's or configuration's) */
	enum conflict_policy on_conflict;
	const char *conflict_from;    /* run-conflict.c's journal (NULL: none) */
	struct contain_limits limits; /* each one set overrides the configuration's */
	/* worktree_setup: the plan's and the task's keys given (.set), each
	 * over its role's and the configuration's (strings in arena) */
	struct orch_wtsetup wtsetup;
	struct orch_gate *gates; /* after the configuration's */
	size_t n_gates;
	struct invocation_sampling sampling; /* the task's explicit slots (strings in arena) */
	struct orch_endpoints endpoints;     /* its plan's endpoints: (in arena) */
	/* its plan's mcp_servers: and its own (in arena): with its role's
	 * and the configuration's, orch_config_mcp_servers() */
	struct orch_mcp_servers plan_mcp_servers, mcp_servers;
	struct retry_policy retry; /* the task's own retry:, fallback: */
	/* where its retries stand (run-retry.c): the adapter of the chain in
	 * use, the attempts before its first, the model of the last attempt */
	size_t chain_at;
	int64_t chain_base;
	const char *chain_model;
	/* task context (orch/context.h): the plan's description, given only
	 * with one of the lists; constraints and context_files NULL when not
	 * given (the prompt goes verbatim); files never NULL once made */
	const char *goal;
	const char *const *constraints;
	size_t n_constraints;
	const char *const *context_files;
	size_t n_context_files;
	const char *const *files;
	size_t n_files;
	unsigned line, col;
};

/* Is the task's prompt rendered from the template (constraints: or
 * context_files: given)? */
bool spec_renders(const struct task_spec *s);

void spec_init(struct task_spec *s);
void spec_release(struct task_spec *s);

/* Task i of a loaded plan as a spec (depends_on resolved to ids). */
void spec_from_plan(const struct plan *p, size_t i, struct task_spec *ret);

/* The recorded form (a new reference). */
json_t *spec_to_json(const struct task_spec *s);
/* The same as compact JSON with sorted keys (caller frees). */
char *spec_dump(const struct task_spec *s);

/* Parse a recorded form. 0 with *ret filled (spec_init()ed by the caller;
 * on failure it is left empty), -EBADMSG with the key and the problem in
 * reterr's message (its file left as the caller set it: diag_set() the
 * context around it). */
int spec_parse(const json_t *j, struct task_spec *ret, struct diag *reterr);
/* The same from text (at most SPEC_MAX_BYTES; strict JSON). */
int spec_parse_text(const char *text, size_t len, struct task_spec *ret, struct diag *reterr);

/* The resolved plan as JSON (a new reference): name, description, form,
 * file, plan_hash, tasks [spec_to_json() of each]. */
json_t *spec_plan_json(const struct plan *p);

#endif
