/* Worktree setup in the run loop (orch/wtsetup.h): applied to a task's
 * tree after its checkout is made, before its agent starts, on every
 * attempt (copies overwrite, links replace: a setup interrupted by a kill
 * is simply done again). */
#include "orch/run-internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "orch/config.h"
#include "orch/worktree.h"
#include "orch/wtsetup.h"
#include "util/banned.h"

int run_worktree_setup(struct loop *l, struct otask *t)
{
	const struct orch_wtsetup *ws = &l->e->cfg->wtsetup;
	struct strvec inc = STRVEC_INIT;
	char msg[1200];
	struct diag d = {0};
	int r;

	r = git_worktreeinclude(l->e->repo, l->e->git_env, &inc, &d);
	if (r >= 0 && (inc.nr || ws->n_copy || ws->n_links))
		r = wtsetup_apply(l->e->repo, t->row.worktree, ws, &inc, NULL, &d);
	strvec_clear(&inc);
	if (r >= 0)
		return 0;
	(void)snprintf(msg, sizeof(msg), "worktree setup failed: %s", d.msg);
	run_refuse(l, t, TASK_EV_DISPATCH_FAILED, msg);
	return r;
}

void run_worktree_setup_ro(struct loop *l, struct confine_policy *p)
{
	struct strvec v = STRVEC_INIT;
	size_t i;

	wtsetup_link_targets(l->e->repo, &l->e->cfg->wtsetup, &v);
	for (i = 0; i < v.nr; i++) {
		strvec_push(&p->ro, v.v[i]);
		strvec_push(&p->ro_bind, v.v[i]);
	}
	strvec_clear(&v);
}
