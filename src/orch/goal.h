/* Goal mode (docs/goal-mode.md): what a planner agent is told, and the
 * policy a plan it wrote must meet before anything of it runs.
 *
 * A generated plan is text an LLM chose, possibly steered by a prompt
 * injection in the repository it read. By default it may only hold tasks
 * (titles, prompts, roles, dependencies, adapters and models among the
 * usable ones, requirements, artifacts, files and context within the
 * repository). Every key that executes on the host or weakens a task's
 * confinement is refused at its FILE:LINE:COL unless its class is allowed
 * (enum goal_allow); hooks and MCP servers are never taken from a plan.
 * Nothing here prints or runs anything. */
#ifndef BERNSTEIN_ORCH_GOAL_H
#define BERNSTEIN_ORCH_GOAL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"
#include "util/sbuf.h"
#include "util/strvec.h"

#define GOAL_PLAN_FILE	    "bernstein-plan.yaml" /* what the planner writes in its view */
#define GOAL_SUMMARY_FILES  300			  /* tracked paths listed to the planner */
#define GOAL_SUMMARY_HEAD   2048		  /* bytes of README.md / AGENTS.md / CLAUDE.md */
#define GOAL_PROMPT_MAX	    ((size_t)256 * 1024)
#define GOAL_ROUNDS_DEFAULT 3
#define GOAL_ROUNDS_MAX	    10

/* The classes `--allow` lets through (each refused by default). */
enum goal_allow {
	GOAL_ALLOW_GATES = 1 << 0, /* "gates": tasks' gates (shell commands on the host) */
	GOAL_ALLOW_SETUP =
		1 << 1, /* "setup": worktree_setup (setup_command, copy_files, symlink_dirs) */
	GOAL_ALLOW_SANDBOX = 1 << 2,   /* "sandbox": sandbox: none|auto, network: full, limits: */
	GOAL_ALLOW_ENDPOINTS = 1 << 3, /* "endpoints": endpoints:, sampling base_url/api_key_env */
	GOAL_ALLOW_BUDGET = 1 << 4,    /* "budget": a budget: of the plan's own */
};

/* Parse "gates,setup" (one or more names, comma-separated) into *ret (ORed
 * in). -EINVAL naming the bad word in reterr. */
int goal_allow_parse(const char *list, unsigned *ret, struct diag *reterr);
/* "gates,setup" or "none" into buf. */
const char *goal_allow_format(unsigned allow, char *buf, size_t size);

struct goal_policy {
	unsigned allow;		     /* enum goal_allow */
	const char *const *adapters; /* the usable adapters, NULL-terminated */
	/* context_files: each must be a file git tracks (what the agents can
	 * read in their own trees anyway: never an ignored .env); NULL: not
	 * checked */
	bool (*tracked)(void *ctx, const char *path);
	void *tracked_ctx;
};

/* Check the plan text buf (name: the file in diagnostics) against pol:
 * one issue per refused key or value (at its line:col). Each allowed
 * command-like value (a gate's run, a setup_command, ...) is appended to
 * shown as "PATH: VALUE" for the user's confirmation (shown may be NULL).
 * A document that does not parse adds nothing (the plan loader says why).
 * Returns the number of issues added. */
size_t goal_policy_check(const char *name, const char *buf, size_t len,
			 const struct goal_policy *pol, struct diag_list *is, struct strvec *shown);

/* A bounded summary of the checkout at dir: its files (at most
 * GOAL_SUMMARY_FILES paths, .git and .bernstein skipped) and the heads of
 * README.md, AGENTS.md and CLAUDE.md. Appended to out. */
int goal_repo_summary(const char *dir, struct sbuf *out);

struct goal_prompt {
	const char *goal;
	const char *summary;	     /* goal_repo_summary() */
	const char *const *adapters; /* usable, NULL-terminated */
	/* what each of adapters offers ("tool_use, resume, ..."), parallel to
	 * it, or NULL: the names alone */
	const char *const *adapter_caps;
	const char *plan_file; /* GOAL_PLAN_FILE */
	const char *problems;  /* the last round's problems, or NULL */
	bool resumed;	       /* the planner keeps the first prompt: problems only */
};

/* The planner's prompt: the goal, the summary, the adapters and roles, the
 * condensed plan schema with an example, the policy, and the last round's
 * problems. */
int goal_prompt_build(const struct goal_prompt *gp, struct sbuf *out);

#endif
