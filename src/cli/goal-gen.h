/* Goal mode's generator, shared by `bernstein plan generate` and
 * `bernstein run --goal` (cli/cmd-goal.c, docs/goal-mode.md). */
#ifndef BERNSTEIN_CLI_GOAL_GEN_H
#define BERNSTEIN_CLI_GOAL_GEN_H

#include <stdbool.h>

#include "cli/cli.h"
#include "util/hash.h"
#include "util/strvec.h"

struct goal_opts {
	const char *goal;
	const char *output;  /* -o FILE; NULL: .bernstein/plans/GEN/plan.yaml */
	const char *planner; /* NULL: bernstein.yaml's adapter when it names one */
	const char *model;
	const char *key_file; /* the audit key (run --key-file) */
	unsigned rounds;
	unsigned allow; /* enum goal_allow */
	struct strvec sets;
	double timeout_s;
	bool quiet;  /* print no plan summary (run --goal --json) */
	int sandbox; /* enum goal_sandbox: --planner-sandbox */
};

/* The planner's confinement (docs/goal-mode.md, "Its view"). */
enum goal_sandbox {
	GOAL_SANDBOX_AUTO,     /* Landlock when the kernel has it, else none (said) */
	GOAL_SANDBOX_LANDLOCK, /* Landlock, or no planner (exit 4) */
	GOAL_SANDBOX_NONE,     /* as `bernstein spawn` runs an agent */
};

void goal_opts_init(struct goal_opts *o);
void goal_opts_release(struct goal_opts *o);

/* The planner options run --goal shares (their getopt values). */
enum {
	GOAL_OPT_PLANNER = 600,
	GOAL_OPT_ROUNDS,
	GOAL_OPT_ALLOW,
	GOAL_OPT_SET,
	GOAL_OPT_PLANNER_TIMEOUT,
	GOAL_OPT_PLANNER_MODEL,
	GOAL_OPT_PLANNER_SANDBOX,
};
/* One planner option c (a GOAL_OPT_*) with its argument: -1 when taken,
 * else the usage error's exit code. */
int goal_opt(struct cli_ctx *ctx, int c, const char *arg, struct goal_opts *o);

/* Generate a plan for o->goal (the session opened and released here: the
 * run lock is held meanwhile). 0 with the plan's path (repository-relative
 * or -o's, caller frees) and hash; else the exit code (the problems
 * printed). With shown, the commands --allow let through, verbatim. */
int goal_generate(struct cli_ctx *ctx, const struct goal_opts *o, char **ret_plan,
		  char ret_hash[SHA256_HEX_LEN + 1], struct strvec *shown);

#endif
