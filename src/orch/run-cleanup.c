/* A finished task's worktree removed, its empty branch deleted with
 * others (run-internal.h). */
#include "orch/run-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/banned.h"

#define DEAD_BRANCHES_BATCH 64

/* Delete the collected empty branches: at the end of an execution, and
 * whenever DEAD_BRANCHES_BATCH gathered. A crash before leaves them; the
 * next execution of the run collects them again (run_loop_load()). */
void run_flush_branches(struct loop *l)
{
	struct diag d;

	diag_clear(&d);
	if (l->prune_worktrees && worktree_prune(l->e->repo, l->e->git_env, &d) < 0)
		run_warn(l, NULL, "cannot prune the removed worktrees: %s", d.msg);
	l->prune_worktrees = false;
	if (!l->dead_branches.nr)
		return;
	if (worktree_branches_delete(l->e->repo, (const char *const *)l->dead_branches.v,
				     l->dead_branches.nr, l->e->git_env, &d) < 0)
		run_warn(l, NULL, "cannot delete %zu empty task branch(es): %s",
			 l->dead_branches.nr, d.msg);
	strvec_clear(&l->dead_branches);
}

static bool strvec_has(const struct strvec *v, const char *s)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		if (strcmp(v->v[i], s) == 0)
			return true;
	return false;
}

/* Move t's worktree (clean, its branch unmoved: nothing to keep) out of
 * the way in one step, a rename: from then on it is gone for git and for
 * resume. Its files go in run_remove_worktree(), after the state says
 * no_changes; its registration with the next `git worktree prune`
 * (run_flush_branches(); after a crash, the next execution's). */
int run_set_aside(struct loop *l, struct otask *t)
{
	struct checkout *co = run_task_checkout(l, t);
	int r = co ? checkout_set_aside(co) : -ENOENT;

	if (r == 0)
		l->prune_worktrees = true;
	return r;
}

/* The worktree of a finished task goes (judge_changes() moved it aside
 * already when removed); its branch stays unless it is empty, then it goes
 * soon after. */
void run_remove_worktree(struct loop *l, struct otask *t, bool removed)
{
	bool empty = t->row.state == TASK_NO_CHANGES; /* nothing on the branch either */
	struct checkout *co = run_task_checkout(l, t);
	struct diag d;

	diag_clear(&d);
	if (co && checkout_remove(co, removed, &d) < 0)
		run_warn(l, t, "%s", d.msg);
	if (empty && t->row.branch && !strvec_has(&l->dead_branches, t->row.branch)) {
		strvec_push(&l->dead_branches, t->row.branch);
		if (l->dead_branches.nr >= DEAD_BRANCHES_BATCH)
			run_flush_branches(l);
	}
}
