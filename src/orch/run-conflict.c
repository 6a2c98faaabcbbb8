/* Conflicts (docs/runs.md, "Conflicts"): a task whose merge conflicted is
 * rebased onto the base in its own tree (never the user's checkout), its
 * gates run again on the rebased branch, then the merge; when the rebase
 * conflicts too and on_conflict is resolve, a resolver agent (an attempt of
 * the task, role resolver) resolves a merge of the base left with conflict
 * markers in the task's tree, its result is committed and goes through the
 * gates, then the merge. Anything else: conflict, the branch kept as it was.
 *
 * Crash safety: the head the conflict started from is recorded (the
 * spec's conflict_from) before the tree is touched; head_commit is always
 * the head the gates run on and the merge takes (the rebased or resolved
 * one once there is one); a task found rebasing or
 * resolving by a later execution has its tree put back there (an
 * interrupted rebase or merge aborted) and is handled again from the
 * rebase (run_conflict_resume()). The user's checkout is never written
 * until the merge, which is run-merge.c's crash-safe one.
 *
 * Nothing here calls completion: the gates that run again are started by
 * the loop (gates_due, run.c), so that merge -> conflict never calls back
 * up into complete. */
#include "orch/run-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "orch/config.h"
#include "orch/worktree.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define CONFLICT_MAX_ROUNDS   3		   /* conflict handlings of one task in one execution */
#define CONFLICT_SUBJECTS_MAX 30	   /* base commits quoted in a resolver's prompt */
#define CONFLICT_PATHS_QUOTED 5		   /* paths named in a reason */
#define CONFLICT_PROMPT_MAX   (256u << 10) /* the task's prompt quoted, bytes */

/* Where the conflict started: the branch's head then (the spec's journal). */
static const char *from_of(const struct otask *t)
{
	return run_spec(t)->conflict_from ? run_spec(t)->conflict_from : t->row.head_commit;
}

/* head is now the head t's gates run on and its merge takes */
static void set_head(struct otask *t, const char *head)
{
	run_set_str(&t->row.head_commit, head);
}

static enum conflict_policy policy_of(const struct loop *l, const struct otask *t)
{
	return run_spec(t)->has_on_conflict ? run_spec(t)->on_conflict
					    : orch_config_on_conflict(l->e->cfg, t->row.role);
}

/* "a.txt, b.txt (and 3 more)" */
static void paths_text(const struct strvec *p, char *buf, size_t size)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < p->nr && i < CONFLICT_PATHS_QUOTED; i++) {
		int w = snprintf(buf + o, size - o, "%s%.100s", i ? ", " : "", p->v[i]);

		if (w < 0 || (size_t)w >= size - o)
			return;
		o += (size_t)w;
	}
	if (p->nr > CONFLICT_PATHS_QUOTED)
		(void)snprintf(buf + o, size - o, " (and %zu more)", p->nr - CONFLICT_PATHS_QUOTED);
}

static void set_conflicts(struct otask *t, const struct strvec *p)
{
	json_t *a = json_strvec(p);
	char *s = json_dumps(a, JSON_COMPACT);

	run_set_str(&t->row.conflicts, s);
	free(s);
	json_decref(a);
}

static int record(struct loop *l, struct otask *t, const char *type, json_t *det)
{
	char *rid = run_task_resource(l, t);
	int r;

	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	json_obj_set(det, "branch", json_str_lossy(t->row.branch));
	r = run_audit(l, type, "task", rid, det);
	free(rid);
	return r;
}

/* The base branch's commit now, as git names it (caller frees), or NULL. */
static char *base_commit(struct loop *l, struct diag *d)
{
	char *c = NULL;

	if (git_rev_parse(l->e->repo, l->run.base_branch, l->e->git_env, &c, d) < 0)
		return NULL;
	return c;
}

/* t's tree there and to be trusted, put back on its branch where the
 * conflict started
 * (what a killed rebase or merge left, aborted). 0, or < 0 with d. */
static int tree_ready(struct loop *l, struct otask *t, struct checkout **ret, struct diag *d)
{
	struct checkout *co = run_task_checkout(l, t);
	struct stat st;
	int r;

	if (!co || !t->row.branch || !from_of(t)) {
		diag_set(d, NULL, 0, 0, "the task has no tree or branch");
		return -ENOENT;
	}
	/* a tree removed since (worktrees gc): made again on the branch */
	if (lstat(co->path, &st) < 0 && (r = checkout_make(co, l->run.base_branch, false, d)) < 0)
		return r;
	r = checkout_check(co, d);
	if (r < 0)
		return r;
	r = worktree_restore(co->path, t->row.branch, from_of(t), checkout_git_env(co), d);
	if (r < 0)
		return r;
	*ret = co;
	return 0;
}

/* The branch brought into the repository (a clone's), its head now. */
static char *publish(struct loop *l, struct checkout *co, struct diag *d)
{
	unsigned ahead = 0;
	char *head = NULL;

	if (checkout_publish(co, l->run.base_branch, &ahead, &head, d) < 0)
		return NULL;
	if (!head)
		diag_set(d, NULL, 0, 0, "the branch cannot be read after the rebase");
	return head;
}

/* On the way out of a failed resolve: the branch back where the conflict
 * started (nothing of the resolver's kept), best effort. */
void run_conflict_put_back(struct loop *l, struct otask *t)
{
	struct checkout *co = NULL;
	struct diag d;
	char *head;

	diag_clear(&d);
	if (tree_ready(l, t, &co, &d) < 0) {
		run_warn(l, t, "cannot put the task's tree back at %.12s: %s",
			 from_of(t) ? from_of(t) : "?", d.msg);
		return;
	}
	head = publish(l, co, &d);
	if (head)
		set_head(t, head);
	free(head);
}

static void resolve_start(struct loop *l, struct otask *t, struct checkout *co, const char *onto,
			  const struct strvec *paths);
static void resolved(struct loop *l, struct otask *t, struct checkout *co, const char *how);

/* The rebase of rebasing t onto the base as it is now, in its tree; clean:
 * the gates again; conflicting: the resolver (on_conflict: resolve) or
 * conflict. */
static void rebase(struct loop *l, struct otask *t)
{
	struct orch_env *e = l->e;
	struct strvec paths = STRVEC_INIT;
	struct checkout *co = NULL;
	char msg[1536], list[600], *onto = NULL, *head = NULL;
	struct diag d;
	json_t *det;
	int r;

	diag_clear(&d);
	r = tree_ready(l, t, &co, &d);
	if (r == 0 && !(onto = base_commit(l, &d)))
		r = -ENOENT;
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot rebase '%s': %s; branch kept at %.12s",
			       t->row.branch ? t->row.branch : "?", d.msg,
			       from_of(t) ? from_of(t) : "?");
		(void)run_transition(l, t, TASK_EV_REBASE_FAILED, msg);
		goto out;
	}
	r = worktree_rebase(co->path, onto, &e->identity, checkout_git_env(co), &paths, &d);
	if (r == 0 && !(head = publish(l, co, &d)))
		r = -EIO;
	det = json_object();
	json_obj_set(det, "from", json_str_lossy(from_of(t)));
	json_obj_set(det, "onto", json_str_lossy(onto));
	json_obj_set(det, "result",
		     json_str_lossy(r == 0	  ? "rebased"
				    : r == -EBUSY ? "conflict"
						  : "failed"));
	if (head)
		json_obj_set(det, "head", json_str_lossy(head));
	if (paths.nr)
		json_obj_set(det, "conflicts", json_strvec(&paths));
	if (record(l, t, "task.rebased", det) < 0)
		goto out;
	if (r == 0) {
		(void)snprintf(msg, sizeof(msg),
			       "rebased onto %s at %.12s (head %.12s); the gates run again",
			       l->run.base_branch, onto, head);
		run_set_str(&t->row.conflicts, NULL); /* none left (task.rebased has them) */
		set_head(t, head);
		if (run_transition(l, t, TASK_EV_REBASED, msg) == 0)
			t->gates_due = true; /* next_task() starts them */
		goto out;
	}
	if (r == -EBUSY) {
		set_conflicts(t, &paths);
		if (policy_of(l, t) == CONFLICT_RESOLVE) {
			resolve_start(l, t, co, onto, &paths);
			goto out;
		}
		paths_text(&paths, list, sizeof(list));
		(void)snprintf(
			msg, sizeof(msg),
			"merge conflict; the rebase onto %s conflicts in %zu file(s): %s; aborted, branch '%s' kept at %.12s",
			l->run.base_branch, paths.nr, list, t->row.branch, from_of(t));
	} else {
		(void)snprintf(msg, sizeof(msg), "merge conflict; the rebase failed: %s", d.msg);
		run_conflict_put_back(l, t);
	}
	(void)run_transition(l, t, TASK_EV_REBASE_FAILED, msg);
out:
	strvec_clear(&paths);
	free(onto);
	free(head);
}

bool run_conflict(struct loop *l, struct otask *t, const struct strvec *conflicts, const char *rev)
{
	struct orch_env *e = l->e;
	char msg[1024], list[600], *head = NULL;
	struct diag d;

	if (policy_of(l, t) == CONFLICT_FAIL || t->row.state != TASK_MERGING)
		return false;
	if (++t->conflict_rounds > CONFLICT_MAX_ROUNDS) {
		run_warn(l, t, "the merge conflicted again after %u rebases: left as a conflict",
			 CONFLICT_MAX_ROUNDS);
		return false;
	}
	diag_clear(&d);
	if (git_rev_parse(e->repo, rev, e->git_env, &head, &d) < 0) {
		run_warn(l, t, "cannot rebase: %s", d.msg);
		return false;
	}
	if (!t->own_adapter && t->row.adapter)
		t->own_adapter = xstrdup(t->row.adapter);
	/* the journal: where the branch was, committed (with the spec, in the
	 * transition below) before its tree moves */
	run_spec(t)->conflict_from = arena_strdup(&run_spec(t)->arena, head);
	free(t->row.spec);
	t->row.spec = spec_dump(run_spec(t));
	free(t->row.head_commit);
	t->row.head_commit = head;
	set_conflicts(t, conflicts);
	paths_text(conflicts, list, sizeof(list));
	(void)snprintf(msg, sizeof(msg),
		       "merge conflict in %zu file(s): %s; rebasing onto %s in the task's tree",
		       conflicts->nr, list, l->run.base_branch);
	if (run_transition(l, t, TASK_EV_REBASING, msg) < 0)
		return true;
	rebase(l, t);
	return true;
}

void run_conflict_resume(struct loop *l, struct otask *t)
{
	char msg[256];

	free(t->resolve_base);
	t->resolve_base = NULL;
	t->resolve_due = false;
	/* no resolver ran on another adapter unless one is configured, so the
	 * last attempt's adapter is the task's own wherever it matters */
	if (!t->own_adapter && t->row.adapter)
		t->own_adapter = xstrdup(t->row.adapter);
	(void)snprintf(msg, sizeof(msg),
		       "resumed: the task's tree put back at %.12s, the rebase made again",
		       from_of(t) ? from_of(t) : "?");
	if (run_transition(l, t, TASK_EV_RESUMED, msg) == 0)
		rebase(l, t);
}

/* ---- the resolver ---- */

/* The merge of onto into t's tree, left with its conflict markers for a
 * resolver agent (next_task() dispatches it). */
static void resolve_start(struct loop *l, struct otask *t, struct checkout *co, const char *onto,
			  const struct strvec *rebase_paths)
{
	struct strvec paths = STRVEC_INIT;
	char msg[1536], list[600];
	struct diag d;
	int r;

	diag_clear(&d);
	r = worktree_merge_start(co->path, onto, &l->e->identity, checkout_git_env(co), &paths, &d);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg),
			       "merge conflict; the merge of %s for a resolver failed: %s",
			       l->run.base_branch, d.msg);
		run_conflict_put_back(l, t);
		(void)run_transition(l, t, TASK_EV_REBASE_FAILED, msg);
		goto out;
	}
	free(t->resolve_base);
	t->resolve_base = xstrdup(onto);
	if (r == 0) {
		/* the merge is clean where the rebase was not: no agent needed */
		if (run_transition(l, t, TASK_EV_RESOLVING,
				   "the rebase conflicts, the merge of the base does not") == 0)
			resolved(l, t, co, "merged cleanly");
		goto out;
	}
	set_conflicts(t, paths.nr ? &paths : rebase_paths);
	paths_text(paths.nr ? &paths : rebase_paths, list, sizeof(list));
	(void)snprintf(
		msg, sizeof(msg),
		"the rebase onto %s conflicts in %zu file(s): %s; a resolver resolves the merge of %.12s in the task's tree",
		l->run.base_branch, paths.nr ? paths.nr : rebase_paths->nr, list, onto);
	t->resolve_due = true;
	(void)run_transition(l, t, TASK_EV_RESOLVING, msg);
out:
	strvec_clear(&paths);
}

const char *run_conflict_adapter(const struct loop *l, const struct otask *t)
{
	const struct orch_config *c = l->e->cfg;
	const struct role_policy *rp = orch_config_role(c, "resolver");

	if (c->resolver.adapter)
		return c->resolver.adapter;
	if (rp && rp->adapter)
		return rp->adapter;
	return t->own_adapter; /* the task's own */
}

bool run_conflict_own_adapter(const struct otask *t, const char *adapter)
{
	return t->own_adapter && adapter && strcmp(t->own_adapter, adapter) == 0;
}

const char *run_conflict_model(const struct loop *l, const struct otask *t)
{
	const struct orch_config *c = l->e->cfg;
	const struct role_policy *rp = orch_config_role(c, "resolver");
	const char *a = run_conflict_adapter(l, t);

	if (c->resolver.model)
		return c->resolver.model;
	if (rp && rp->model)
		return rp->model;
	/* the task's own adapter: the task's own model, as its attempts had it */
	if (run_conflict_own_adapter(t, a)) {
		const struct role_policy *own = orch_config_role(c, t->row.role);

		if (run_spec(t)->model)
			return run_spec(t)->model;
		if (own && own->model)
			return own->model;
	}
	return c->model;
}

/* The resolver's prompt: what conflicts, and both sides' intents, as data
 * (never an option of the agent's command line). */
char *run_conflict_prompt(struct loop *l, const struct otask *t)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct strvec paths = STRVEC_INIT, subjects = STRVEC_INIT;
	json_t *a = t->row.conflicts ? json_loads(t->row.conflicts, 0, NULL) : NULL;
	char *mb = NULL;
	const char *prompt = run_prompt(t) ? run_prompt(t) : "";
	size_t i, plen = strlen(prompt);
	json_t *v;

	json_array_foreach(a, i, v)
	{
		if (json_is_string(v))
			strvec_push(&paths, json_string_value(v));
	}
	json_decref(a);
	if (t->resolve_base &&
	    git_merge_base(l->e->repo, t->resolve_base, from_of(t), l->e->git_env, &mb, NULL) == 0)
		(void)git_log_subjects(l->e->repo, mb, t->resolve_base, CONFLICT_SUBJECTS_MAX,
				       l->e->git_env, &subjects, NULL);
	(void)sbuf_addf(
		&sb,
		"# Resolve a merge conflict\n"
		"You are the resolver of bernstein task '%s' of run '%s'. Its branch and the base branch '%s' changed the same lines. This worktree holds the task's branch with a merge of the base branch (commit %s) in progress: the conflicting files listed below contain conflict markers.\n\n"
		"Resolve every conflict so that the intents of both sides are kept, remove every conflict marker line, and leave the result in this worktree. Do not abort the merge, do not rebase or reset the branch; committing is optional (bernstein commits what you leave).\n\n",
		t->row.id, l->run.id, l->run.base_branch, t->resolve_base ? t->resolve_base : "?");
	(void)sbuf_addf(&sb, "## Conflicting files\n");
	for (i = 0; i < paths.nr; i++)
		(void)sbuf_addf(&sb, "- %s\n", paths.v[i]);
	(void)sbuf_addf(
		&sb, "\n## The base branch's side: its commits since the task's branch left it\n");
	for (i = 0; i < subjects.nr; i++)
		(void)sbuf_addf(&sb, "- %s\n", subjects.v[i]);
	if (!subjects.nr)
		(void)sbuf_addf(&sb, "- (none could be read)\n");
	(void)sbuf_addf(&sb, "\n## The task's side: its title and prompt\nTitle: %s\n\n%.*s%s\n",
			t->row.title ? t->row.title : t->row.id,
			(int)(plen > CONFLICT_PROMPT_MAX ? CONFLICT_PROMPT_MAX : plen), prompt,
			plen > CONFLICT_PROMPT_MAX ? "\n[...]" : "");
	strvec_clear(&paths);
	strvec_clear(&subjects);
	free(mb);
	return sbuf_detach(&sb, NULL);
}

int run_conflict_dispatched(struct loop *l, struct otask *t)
{
	json_t *det = json_object();

	json_obj_set(det, "adapter", json_str_lossy(t->row.adapter));
	json_obj_set(det, "profile_hash", json_str_lossy(t->row.profile_hash));
	json_obj_set(det, "attempt", json_integer(t->row.attempts));
	json_obj_set(det, "head", json_str_lossy(from_of(t)));
	json_obj_set(det, "base", json_str_lossy(t->resolve_base));
	if (t->row.conflicts) {
		json_t *a = json_loads(t->row.conflicts, 0, NULL);

		if (a)
			json_obj_set(det, "conflicts", a);
	}
	return record(l, t, "task.resolver", det);
}

static void resolve_failed(struct loop *l, struct otask *t, const char *why)
{
	char msg[1536];

	(void)snprintf(msg, sizeof(msg), "merge conflict; %s; branch '%s' kept at %.12s", why,
		       t->row.branch ? t->row.branch : "?", from_of(t) ? from_of(t) : "?");
	run_conflict_put_back(l, t);
	(void)run_transition(l, t, TASK_EV_RESOLVE_FAILED, msg);
}

/* The resolution in t's tree committed and checked (the base merged in,
 * no marker left in a conflicting file), then the gates again. */
static void resolved(struct loop *l, struct otask *t, struct checkout *co, const char *how)
{
	struct orch_env *e = l->e;
	struct strvec paths = STRVEC_INIT, left = STRVEC_INIT;
	char msg[1536], list[600], *head = NULL;
	bool committed = false, contains = false;
	json_t *a = t->row.conflicts ? json_loads(t->row.conflicts, 0, NULL) : NULL, *v;
	struct diag d;
	size_t i;
	int r;

	diag_clear(&d);
	json_array_foreach(a, i, v)
	{
		if (json_is_string(v))
			strvec_push(&paths, json_string_value(v));
	}
	json_decref(a);
	(void)snprintf(msg, sizeof(msg), "Merge %s into %s: resolved\n\nTask %s of run %s.",
		       l->run.base_branch, t->row.branch, t->row.id, l->run.id);
	r = checkout_check(co, &d);
	if (r == 0)
		r = worktree_commit_merge(co->path, msg, &e->identity, checkout_git_env(co),
					  &committed, &d);
	if (r == 0 && !(head = publish(l, co, &d)))
		r = -EIO;
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "the resolution cannot be committed: %.700s",
			       d.msg);
		resolve_failed(l, t, msg);
		goto out;
	}
	if (!t->resolve_base ||
	    git_is_ancestor(e->repo, t->resolve_base, head, e->git_env, &contains, &d) < 0 ||
	    !contains) {
		resolve_failed(l, t, "the resolver did not complete the merge of the base");
		goto out;
	}
	r = git_conflict_markers(e->repo, head, &paths, e->git_env, &left, &d);
	if (r != 0) {
		if (r > 0) {
			paths_text(&left, list, sizeof(list));
			(void)snprintf(msg, sizeof(msg), "the resolver left conflict markers in %s",
				       list);
		} else {
			(void)snprintf(msg, sizeof(msg), "cannot look for conflict markers: %.700s",
				       d.msg);
		}
		resolve_failed(l, t, msg);
		goto out;
	}
	{
		json_t *det = json_object();

		json_obj_set(det, "head", json_str_lossy(head));
		json_obj_set(det, "base", json_str_lossy(t->resolve_base));
		json_obj_set(det, "from", json_str_lossy(from_of(t)));
		json_obj_set(det, "how", json_str_lossy(how));
		if (record(l, t, "task.resolved", det) < 0)
			goto out;
	}
	(void)snprintf(msg, sizeof(msg), "%s at %.12s (the base merged in); the gates run again",
		       how, head);
	run_set_str(&t->row.conflicts, NULL); /* resolved (task.resolver has them) */
	set_head(t, head);
	if (run_transition(l, t, TASK_EV_RESOLVED, msg) == 0)
		t->gates_due = true; /* next_task() starts them */
out:
	strvec_clear(&paths);
	strvec_clear(&left);
	free(head);
}

void run_conflict_resolver_ended(struct loop *l, struct otask *t, enum outcome out, const char *why)
{
	struct checkout *co = run_task_checkout(l, t);
	char msg[1024];

	if (out == OUTCOME_CANCELLED && l->cancelled)
		return; /* stopped with the run: resume makes it again */
	if (out != OUTCOME_COMPLETED && out != OUTCOME_NO_CHANGES) {
		(void)snprintf(msg, sizeof(msg), "the resolver (%s) ended %s: %.600s",
			       t->row.adapter ? t->row.adapter : "?", outcome_to_string(out),
			       why && *why ? why : "no reason given");
		resolve_failed(l, t, msg);
		return;
	}
	if (!co) {
		resolve_failed(l, t, "the task has no tree");
		return;
	}
	resolved(l, t, co, "resolved by the resolver");
}
