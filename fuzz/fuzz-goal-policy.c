/* Fuzz target for goal mode's policy (src/orch/goal.h): a planner's draft
 * is text an LLM chose; goal_policy_check() walks it on arbitrary bytes.
 * Every issue is at fuzz.yaml with a position, in position order; nothing
 * is shown while no class is allowed; allowing every class never adds an
 * issue (only hooks, mcp servers and unusable adapters stay refused). */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "orch/goal.h"

static const char *const adapters[] = {"mock", "openai_agents", NULL};

static size_t check(const uint8_t *data, size_t size, unsigned allow, struct strvec *shown)
{
	struct diag_list is = DIAG_LIST_INIT(100);
	struct goal_policy pol = {.allow = allow, .adapters = adapters};
	size_t n, i;

	n = goal_policy_check("fuzz.yaml", (const char *)data, size, &pol, &is, shown);
	if (n < is.n)
		abort();
	for (i = 0; i < is.n; i++) {
		if (strcmp(is.v[i].file, "fuzz.yaml") != 0 || !is.v[i].msg[0] || !is.v[i].line ||
		    !is.v[i].col)
			abort();
		if (i && (is.v[i].line < is.v[i - 1].line ||
			  (is.v[i].line == is.v[i - 1].line && is.v[i].col < is.v[i - 1].col)))
			abort();
	}
	diag_list_release(&is);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strvec none = STRVEC_INIT, all = STRVEC_INIT;
	unsigned every = GOAL_ALLOW_GATES | GOAL_ALLOW_SETUP | GOAL_ALLOW_SANDBOX |
			 GOAL_ALLOW_ENDPOINTS | GOAL_ALLOW_BUDGET;
	size_t n_none, n_all, i;

	n_none = check(data, size, 0, &none);
	n_all = check(data, size, every, &all);
	if (none.nr != 0 || n_all > n_none)
		abort();
	for (i = 0; i < all.nr; i++)
		if (!all.v[i] || !strchr(all.v[i], ':'))
			abort();
	(void)check(data, size, every, NULL);
	strvec_clear(&none);
	strvec_clear(&all);
	return 0;
}
