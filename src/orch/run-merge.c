/* The merge of a task's branch into the base branch, in steps a crash can
 * interrupt anywhere (run-internal.h, docs/runs.md "After a crash"). */
#include "orch/run-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "orch/config.h"
#include "orch/protect.h"
#include "util/json.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* An ISO-8601 UTC time as clock_iso8601_utc() writes it, in ns since the
 * epoch; INT64_MAX when it cannot be read. */
static int64_t iso_to_ns(const char *ts)
{
	struct tm tm = {0};
	const char *end = ts ? strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	double frac = 0;

	if (!end)
		return INT64_MAX;
	if (*end == '.')
		frac = strtod(end, NULL);
	return (int64_t)timegm(&tm) * 1000000000LL + (int64_t)(frac * 1e9);
}

/* A merge that cannot be made now for a reason outside the task (the
 * checkout has changes or a file in the way, another git holds its index,
 * the disk is full): the task stays merging, with the reason, and the next
 * `bernstein resume` tries again. Never a conflict, never failed. */
static void merge_postponed(struct loop *l, struct otask *t, const char *why)
{
	char msg[1024];

	(void)snprintf(msg, sizeof(msg), "merge postponed ('bernstein resume' retries it): %s",
		       why);
	run_warn(l, t, "%s", msg);
	(void)run_transition(l, t, TASK_EV_MERGE_POSTPONED, msg);
}

int run_protected_changes(struct loop *l, const struct otask *t, const char *head,
			  struct strvec *hits, struct diag *reterr)
{
	struct orch_env *e = l->e;
	struct strvec changed = STRVEC_INIT, rules = STRVEC_INIT;
	int r;

	if (!head)
		head = t->row.branch;
	if (!head) {
		diag_set(reterr, NULL, 0, 0, "the task has no branch");
		return -ENOENT;
	}
	r = git_changed_files(e->repo, l->run.base_branch, head, e->git_env, &changed, reterr);
	if (r >= 0) {
		protect_rules(e->repo, e->cfg->protected_paths, e->cfg->n_protected,
			      l->run.plan_path, &rules);
		(void)protect_filter(&changed, &rules, hits);
	}
	strvec_clear(&changed);
	strvec_clear(&rules);
	return r;
}

/* The paths of bernstein's configuration t changes into hits, audited
 * (task.protected) when there is one. -1 when they cannot be listed: the
 * task has failed (changes_failed), nothing merged. */
static int protected_check(struct loop *l, struct otask *t, struct strvec *hits)
{
	char msg[1024], *rid;
	json_t *det;
	struct diag d;

	diag_clear(&d);
	if (run_protected_changes(l, t, t->row.head_commit, hits, &d) < 0) {
		(void)snprintf(msg, sizeof(msg),
			       "cannot list the files the task changed (nothing merged): %s",
			       d.msg);
		(void)run_transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return -1;
	}
	if (!hits->nr)
		return 0;
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "head", json_str_lossy(t->row.head_commit));
	json_obj_set(det, "merge", json_str_lossy(merge_policy_to_string(l->e->cfg->merge)));
	json_obj_set(det, "paths", json_strvec(hits));
	rid = run_task_resource(l, t);
	if (run_audit(l, "task.protected", "task", rid, det) < 0) {
		free(rid);
		return -1;
	}
	free(rid);
	return 0;
}

/* After the gates passed: the merge (or done, with merge: none).
 *
 * Crash-safe in steps (docs/runs.md, "After a crash"): the merge commit is
 * made in the object store first (the checkout untouched; a conflict ends
 * there), recorded in the task's row (merge_commit, while merging: the
 * journal), and only then written into the checkout and the branch. A
 * task found merging with a recorded commit was interrupted there:
 * git_merge_recover() finishes it or puts the checkout back first. */
void run_merge(struct loop *l, struct otask *t, const char *gates_msg)
{
	struct orch_env *e = l->e;
	char msg[2048], ts[TS_MAX];
	struct strvec conflicts = STRVEC_INIT, protected = STRVEC_INIT;
	char *commit = NULL;
	const char *rev;
	bool already = false;
	int tries = 0;
	struct diag d;
	int r;

	diag_clear(&d);
	if (t->row.state != TASK_MERGING) {
		if (e->cfg->merge == MERGE_NONE) {
			(void)run_transition(l, t, TASK_EV_NOT_MERGED,
					     "completed; not merged (merge: none)");
			return;
		}
		/* bernstein's own configuration is never merged without a
		 * person's say (orch/protect.h): merge: auto asks for a review */
		if (protected_check(l, t, &protected) < 0)
			goto out;
		if (e->cfg->merge == MERGE_PR)
			run_pr_deliver(l, t, gates_msg, &protected);
		else if (e->cfg->merge == MERGE_REVIEW || protected.nr)
			run_review_request(l, t, gates_msg, &protected);
		if (e->cfg->merge == MERGE_PR || e->cfg->merge == MERGE_REVIEW || protected.nr)
			goto out;
		if (run_transition(l, t, TASK_EV_GATES_PASSED, gates_msg) < 0)
			goto out;
	} else if (t->row.merge_commit) {
		enum git_merge_found found = GIT_MERGE_MOVED;

		r = git_merge_recover(e->repo, l->run.base_branch, t->row.merge_commit,
				      iso_to_ns(t->row.updated_at), &e->identity, e->git_env,
				      &found, &d);
		if (r < 0) {
			merge_postponed(l, t, d.msg);
			return;
		}
		if (found == GIT_MERGE_DONE)
			goto merged;
		if (found == GIT_MERGE_UNDONE) {
			commit = xstrdup(t->row.merge_commit);
			goto apply;
		}
	}
prepare:
	(void)snprintf(msg, sizeof(msg), "Merge %s: %s\n\nTask %s of run %s.", t->row.branch,
		       t->row.title ? t->row.title : t->row.id, t->row.id, l->run.id);
	free(commit);
	commit = NULL;
	/* the head the gates passed on (and a reviewer approved, and the
	 * protected-paths check read), wherever its branch is now */
	rev = t->row.head_commit ? t->row.head_commit : t->row.branch;
	r = git_merge_prepare(e->repo, l->run.base_branch, rev, msg, &e->identity, e->git_env,
			      &commit, &already, &conflicts, &d);
	/* on_conflict: rebase or resolve (run-conflict.c) */
	if (r == -EBUSY && run_conflict(l, t, &conflicts, rev))
		goto out;
	if (r == -EBUSY) {
		json_t *a = json_strvec(&conflicts);
		char *s = json_dumps(a, JSON_COMPACT);

		run_set_str(&t->row.conflicts, s);
		run_set_str(&t->row.merge_commit, NULL);
		free(s);
		json_decref(a);
		(void)snprintf(msg, sizeof(msg),
			       "merge conflict in %zu file(s); branch '%s' kept as it is",
			       conflicts.nr, t->row.branch);
		(void)run_transition(l, t, TASK_EV_CONFLICT, msg);
		goto out;
	}
	if (r == -ENOENT || r == -EINVAL || r == -EOPNOTSUPP) {
		(void)snprintf(msg, sizeof(msg), "cannot merge '%s': %s", t->row.branch, d.msg);
		(void)run_transition(l, t, TASK_EV_MERGE_FAILED, msg);
		goto out;
	}
	if (r < 0) {
		merge_postponed(l, t, d.msg);
		goto out;
	}
	if (already) {
		(void)run_transition(l, t, TASK_EV_MERGED, "already merged");
		run_remove_worktree(l, t, false);
		goto out;
	}
	/* the journal, committed before the checkout is touched */
	run_set_str(&t->row.merge_commit, commit);
	r = state_task_update(e->st, &t->row, run_now(l, ts), &d);
	if (r < 0) {
		run_fail(l, r, &d);
		goto out;
	}
	run_set_str(&t->row.updated_at, ts);
apply:
	r = git_merge_apply(e->repo, l->run.base_branch, commit, &e->identity, e->git_env, &d);
	if (r == -ESTALE && ++tries < 2)
		goto prepare; /* the branch moved since: made again from where it is */
	if (r < 0) {
		merge_postponed(l, t, d.msg);
		goto out;
	}
merged:
	(void)run_transition(l, t, TASK_EV_MERGED, "merged");
	run_remove_worktree(l, t, false);
out:
	strvec_clear(&conflicts);
	strvec_clear(&protected);
	free(commit);
}
