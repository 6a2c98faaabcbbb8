/* Review and pull requests (docs/runs.md, "Review and pull requests"):
 * merge: review keeps a task whose gates passed in state review until
 * `bernstein approve` (the merge of the head that was reviewed) or `bernstein
 * reject --feedback` (a new attempt whose prompt carries the feedback);
 * merge: pr pushes the task's branch and opens a pull request with gh. */
#include "orch/run-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "orch/config.h"
#include "orch/control.h"
#include "orch/worktree.h"
#include "proc/probe.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define GH_TIMEOUT_MS 60000u
#define GH_OUTPUT_MAX 65536u
#define REASON_QUOTE  160 /* bytes of feedback quoted in a transition's reason */
#define PR_TITLE_MAX  200

/* The head of t's branch now (caller frees), or NULL with the reason. */
static char *branch_head(struct loop *l, const struct otask *t, struct diag *d)
{
	char *head = NULL;

	if (!t->row.branch) {
		diag_set(d, NULL, 0, 0, "the task has no branch");
		return NULL;
	}
	if (git_branch_commit(l->e->repo, t->row.branch, l->e->git_env, &head, d) < 0)
		return NULL;
	return head;
}

static json_t *who_json(const struct control_peer *who)
{
	return json_pack("{s:I, s:I}", "uid", (json_int_t)who->uid, "pid", (json_int_t)who->pid);
}

static int task_record(struct loop *l, struct otask *t, const char *type, json_t *det)
{
	char *rid = run_task_resource(l, t);
	int r;

	json_obj_set(det, "run", json_str_lossy(l->run.id));
	json_obj_set(det, "task", json_str_lossy(t->row.id));
	r = run_audit(l, type, "task", rid, det);
	free(rid);
	return r;
}

/* protected as "a, b, c" (at most size bytes, "..." when cut). */
static void protected_list(const struct strvec *protected, char *out, size_t size)
{
	size_t i, n = 0;

	out[0] = '\0';
	for (i = 0; protected && i < protected->nr && n < size; i++) {
		int w = snprintf(out + n, size - n, "%s%s", i ? ", " : "", protected->v[i]);

		if (w < 0 || (size_t)w >= size - n) {
			if (size > 4)
				(void)snprintf(out + size - 4, 4, "...");
			return;
		}
		n += (size_t)w;
	}
}

/* Gates passed under merge: review (or they passed under merge: auto on a
 * task that changes bernstein's own configuration): the head they passed
 * on is the one a reviewer sees and approves (head_commit), and the task
 * waits. */
void run_review_request(struct loop *l, struct otask *t, const char *gates_msg,
			const struct strvec *protected)
{
	char msg[2048], list[512], *head;
	struct diag d;

	diag_clear(&d);
	head = t->row.head_commit ? xstrdup(t->row.head_commit) : branch_head(l, t, &d);
	if (!head) {
		(void)snprintf(msg, sizeof(msg), "cannot read the branch to review: %s", d.msg);
		(void)run_transition(l, t, TASK_EV_CHANGES_FAILED, msg);
		return;
	}
	free(t->row.head_commit);
	t->row.head_commit = head;
	run_set_str(&t->row.feedback, NULL);
	if (protected && protected->nr) {
		protected_list(protected, list, sizeof(list));
		(void)snprintf(
			msg, sizeof(msg),
			"%s; it changes bernstein's own configuration (%s): not merged without your say; review %s at %.12s ('bernstein diff %s', then 'approve %s --allow-protected' or 'reject')",
			gates_msg ? gates_msg : "gates passed", list, t->row.branch, head,
			t->row.id, t->row.id);
	} else {
		(void)snprintf(
			msg, sizeof(msg),
			"%s; waiting for review of %s at %.12s ('bernstein diff %s', then 'approve' or 'reject')",
			gates_msg ? gates_msg : "gates passed", t->row.branch, head, t->row.id);
	}
	(void)run_transition(l, t, TASK_EV_REVIEW_REQUESTED, msg);
}

/* Why t cannot be approved now (into why), or 0. A head that changes
 * bernstein's own configuration needs allow_protected. */
static int approve_check(struct loop *l, struct otask *t, const char *seen, bool allow_protected,
			 char *why, size_t size)
{
	struct strvec protected = STRVEC_INIT;
	char list[200];
	struct diag d;
	char *now;
	int r = 0;

	if (t->row.state != TASK_REVIEW) {
		(void)snprintf(why, size, "task '%s' is %s: only a task in review is approved",
			       t->row.id, task_state_to_string(t->row.state));
		return -EINVAL;
	}
	diag_clear(&d);
	now = branch_head(l, t, &d);
	if (!now) {
		(void)snprintf(why, size, "task '%s': %.300s", t->row.id, d.msg);
		return -ENOENT;
	}
	if (!t->row.head_commit || strcmp(now, t->row.head_commit) != 0) {
		(void)snprintf(
			why, size,
			"task '%s': its branch '%s' is at %.12s, not at %.12s that was reviewed: refused ('bernstein reject' or 'retry' it)",
			t->row.id, t->row.branch, now,
			t->row.head_commit ? t->row.head_commit : "?");
		r = -ESTALE;
	} else if (seen && strcmp(seen, t->row.head_commit) != 0) {
		(void)snprintf(
			why, size,
			"task '%s': %.12s was reviewed, not %.12s: refused ('bernstein diff %s' shows it)",
			t->row.id, t->row.head_commit, seen, t->row.id);
		r = -ESTALE;
	} else if (!allow_protected) {
		r = run_protected_changes(l, t, t->row.head_commit, &protected, &d);
		if (r < 0) {
			(void)snprintf(why, size,
				       "task '%s': cannot list the files it changes: %.300s",
				       t->row.id, d.msg);
		} else if (protected.nr) {
			protected_list(&protected, list, sizeof(list));
			(void)snprintf(
				why, size,
				"task '%s' changes bernstein's own configuration (%s): refused without --allow-protected (read 'bernstein diff %s' first)",
				t->row.id, list, t->row.id);
			r = -EPERM;
		}
	}
	strvec_clear(&protected);
	free(now);
	return r;
}

static void approve_one(struct loop *l, struct otask *t, const struct control_peer *who,
			bool allow_protected, json_t *tasks)
{
	char reason[256];
	json_t *det = json_object(), *o;

	json_obj_set(det, "who", who_json(who));
	json_obj_set(det, "branch", json_str_lossy(t->row.branch));
	json_obj_set(det, "head", json_str_lossy(t->row.head_commit));
	if (allow_protected)
		json_obj_set(det, "allow_protected", json_true());
	if (task_record(l, t, "task.approved", det) < 0)
		return;
	(void)snprintf(reason, sizeof(reason), "approved at %.12s (uid %ld, pid %ld)",
		       t->row.head_commit, (long)who->uid, (long)who->pid);
	t->selected = true;
	if (run_transition(l, t, TASK_EV_APPROVED, reason) < 0)
		return;
	/* merging: a live run merges it next (run-control.c), else the resume
	 * that follows does */
	o = json_object();
	json_obj_set(o, "id", json_str_lossy(t->row.id));
	json_obj_set(o, "state", json_str_lossy(task_state_to_string(t->row.state)));
	json_obj_set(o, "head", json_str_lossy(t->row.head_commit));
	(void)json_array_append_new(tasks, o);
}

static void reject_one(struct loop *l, struct otask *t, const char *feedback,
		       const struct control_peer *who, json_t *tasks)
{
	char reason[REASON_QUOTE + 128];
	size_t n = strcspn(feedback, "\n");
	json_t *det = json_object(), *o;

	json_obj_set(det, "who", who_json(who));
	json_obj_set(det, "branch", json_str_lossy(t->row.branch));
	json_obj_set(det, "head", json_str_lossy(t->row.head_commit));
	json_obj_set(det, "feedback_bytes", json_integer((json_int_t)strlen(feedback)));
	if (task_record(l, t, "task.rejected", det) < 0)
		return;
	(void)snprintf(reason, sizeof(reason), "rejected at %.12s (uid %ld): %.*s%s",
		       t->row.head_commit ? t->row.head_commit : "?", (long)who->uid,
		       (int)(n > REASON_QUOTE ? REASON_QUOTE : n), feedback,
		       n > REASON_QUOTE || feedback[n] ? "..." : "");
	run_set_str(&t->row.feedback, feedback);
	run_set_str(&t->row.retry_at, NULL);
	t->selected = true;
	if (run_transition(l, t, TASK_EV_REJECTED, reason) < 0)
		return;
	o = json_object();
	json_obj_set(o, "id", json_str_lossy(t->row.id));
	json_obj_set(o, "state", json_str_lossy(task_state_to_string(t->row.state)));
	(void)json_array_append_new(tasks, o);
}

/* approve and reject (control ops): every task checked first, then all
 * carried out, or none. */
void run_review_control(struct loop *l, const struct control_request *req,
			const struct control_peer *who, json_t *reply)
{
	json_t *tasks = json_array();
	char why[512];
	size_t i;

	for (i = 0; i < req->n_tasks; i++) {
		long k = run_find_task(l, req->tasks[i]);
		int r;

		if (k < 0) {
			control_reply_error(reply, CONTROL_KIND_NOT_FOUND,
					    "no task '%s' in run '%s'", req->tasks[i], l->run.id);
			goto out;
		}
		if (req->op == CONTROL_REJECT && l->t[k].row.state != TASK_REVIEW) {
			control_reply_error(reply, CONTROL_KIND_STATE,
					    "task '%s' is %s: only a task in review is rejected",
					    req->tasks[i], task_state_to_string(l->t[k].row.state));
			goto out;
		}
		if (req->op == CONTROL_APPROVE &&
		    (r = approve_check(l, &l->t[k], req->head, req->allow_protected, why,
				       sizeof(why))) < 0) {
			control_reply_error(reply, CONTROL_KIND_STATE, "%s", why);
			goto out;
		}
	}
	for (i = 0; i < req->n_tasks && !l->fatal; i++) {
		struct otask *t = &l->t[run_find_task(l, req->tasks[i])];

		if (req->op == CONTROL_APPROVE)
			approve_one(l, t, who, req->allow_protected, tasks);
		else
			reject_one(l, t, req->feedback, who, tasks);
	}
	if (l->fatal)
		control_reply_error(reply, CONTROL_KIND_INTERNAL, "%s", l->fatal_d.msg);
out:
	json_obj_set(reply, "tasks", tasks);
}

/* The prompt of the attempt after a reject: the task's prompt, then the
 * reviewer's feedback (data in the prompt, never an option). */
char *run_review_prompt(const struct otask *t, const char *prompt)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (!prompt)
		prompt = run_prompt(t) ? run_prompt(t) : "";

	(void)sbuf_addf(
		&sb,
		"%s\n\n## Review feedback\nA reviewer read the work of your previous attempt at this task (committed on this branch, in this worktree) and asked for changes:\n\n%s\n",
		prompt, t->row.feedback ? t->row.feedback : "");
	return sbuf_detach(&sb, NULL);
}

/* ---- merge: pr ---- */

/* OWNER/NAME (or HOST/OWNER/NAME) of a GitHub-style remote URL
 * (https://HOST/OWNER/NAME[.git], ssh://git@HOST/OWNER/NAME, git@HOST:OWNER/NAME),
 * or NULL. */
static char *repo_of_url(const char *url)
{
	const char *p = NULL, *host;
	char *s, *e;
	size_t hl;

	if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else if (strncmp(url, "ssh://", 6) == 0)
		host = url + 6;
	else if (strchr(url, '@') && strchr(url, ':') && !strstr(url, "://"))
		host = strchr(url, '@') + 1;
	else
		return NULL;
	if (strchr(host, '@') && strchr(host, '@') < strpbrk(host, "/:"))
		host = strchr(host, '@') + 1;
	p = strpbrk(host, "/:");
	if (!p)
		return NULL;
	hl = (size_t)(p - host);
	s = xmalloc(strlen(url) + 2);
	if (hl == 10 && strncmp(host, "github.com", 10) == 0)
		(void)snprintf(s, strlen(url) + 2, "%s", p + 1);
	else
		(void)snprintf(s, strlen(url) + 2, "%.*s/%s", (int)hl, host, p + 1);
	e = s + strlen(s);
	if (e - s > 4 && strcmp(e - 4, ".git") == 0)
		e[-4] = '\0';
	if (!*s || strchr(s, ' ') || s[0] == '-' || s[strlen(s) - 1] == '/') {
		free(s);
		return NULL;
	}
	return s;
}

/* Tokens and cost of t's attempts, for the pull request's body. */
static void attempt_totals(struct loop *l, const struct otask *t, int64_t *in, int64_t *out,
			   double *cost)
{
	struct attempt_row *v = NULL;
	size_t n = 0, i;

	*in = *out = 0;
	*cost = 0;
	if (state_attempts_get(l->e->st, l->run.id, t->row.id, &v, &n, NULL) < 0)
		return;
	for (i = 0; i < n; i++) {
		if (v[i].input_tokens > 0)
			*in += v[i].input_tokens;
		if (v[i].output_tokens > 0)
			*out += v[i].output_tokens;
		if (v[i].cost_usd > 0)
			*cost += v[i].cost_usd;
	}
	attempt_rows_free(v, n);
}

static char *pr_body(struct loop *l, const struct otask *t, const char *gates_msg,
		     const struct strvec *protected, const char *hmac)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int64_t in, out;
	double cost;
	size_t i;

	attempt_totals(l, t, &in, &out, &cost);
	(void)sbuf_addf(&sb, "Task `%s` of bernstein run `%s`.\n\n", t->row.id, l->run.id);
	if (protected && protected->nr) {
		(void)sbuf_adds(
			&sb,
			"> **Warning: this change rewrites bernstein's own configuration.** An agent's edit of these files steers every later run (its endpoints, keys, sandbox, gates, the files copied into each tree). Read them before merging:\n");
		for (i = 0; i < protected->nr; i++)
			(void)sbuf_addf(&sb, "> - `%s`\n", protected->v[i]);
		(void)sbuf_adds(&sb, "\n");
	}
	(void)sbuf_addf(&sb, "## Task\n\n%s\n\n", run_prompt(t) ? run_prompt(t) : "");
	(void)sbuf_addf(&sb,
			"## Outcome\n\n- outcome: %s\n- gates: %s\n- adapter: %s, %" PRId64
			" attempt(s)\n- tokens: %" PRId64 " in, %" PRId64
			" out\n- cost: $%.4f\n- head: %s\n- audit record: %s\n",
			t->row.outcome ? t->row.outcome : "completed",
			gates_msg ? gates_msg : "passed", t->row.adapter ? t->row.adapter : "?",
			t->row.attempts, in, out, cost, t->row.head_commit, hmac);
	return sbuf_detach(&sb, NULL);
}

/* The value of name in env (KEY=VALUE entries), or NULL. */
static const char *env_get(const char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

/* gh's environment: what it needs to find its login and the host, no more. */
static void gh_env(const char *const *host, struct strvec *env)
{
	static const char *const keep[] = {"PATH",
					   "HOME",
					   "GH_TOKEN",
					   "GITHUB_TOKEN",
					   "GH_HOST",
					   "GH_ENTERPRISE_TOKEN",
					   "GH_CONFIG_DIR",
					   "XDG_CONFIG_HOME",
					   "LANG",
					   "SSL_CERT_FILE",
					   NULL};
	size_t i;

	for (i = 0; keep[i]; i++) {
		const char *v = env_get(host, keep[i]);

		if (v)
			strvec_pushf(env, "%s=%s", keep[i], v);
	}
	strvec_push(env, "GH_PROMPT_DISABLED=1");
	strvec_push(env, "GH_NO_UPDATE_NOTIFIER=1");
	strvec_push(env, "NO_COLOR=1");
}

/* `gh pr create` as a bounded child (its own process group, killed at
 * GH_TIMEOUT_MS): the pull request's URL (caller frees), or NULL with why. */
static char *gh_create(struct loop *l, const struct otask *t, const char *repo, const char *base,
		       const char *body_path, char *why, size_t size)
{
	const struct orch_config *c = l->e->cfg;
	struct strvec args = STRVEC_INIT, env = STRVEC_INIT;
	struct probe p = {0};
	struct probe_opts po = {0};
	const char *path = env_get(l->e->host_env, "PATH");
	char *url = NULL, *last = NULL, *s;

	p.binary = "gh";
	strvec_push(&args, "pr");
	strvec_push(&args, "create");
	strvec_pushf(&args, "--repo=%s", repo);
	strvec_pushf(&args, "--head=%s", t->row.branch);
	strvec_pushf(&args, "--base=%s", base);
	strvec_pushf(&args, "--title=%.*s", PR_TITLE_MAX, t->row.title ? t->row.title : t->row.id);
	strvec_pushf(&args, "--body-file=%s", body_path);
	if (c->pr.draft)
		strvec_push(&args, "--draft");
	p.args = (const char *const *)args.v;
	gh_env(l->e->host_env, &env);
	po.path_env = path;
	po.env = (const char *const *)env.v;
	po.timeout_ms = GH_TIMEOUT_MS;
	po.max_output = GH_OUTPUT_MAX;
	po.clock = l->e->clk;
	if (probe_run(&p, 1, &po) < 0 || p.status != PROBE_OK) {
		if (p.status == PROBE_NOT_FOUND)
			(void)snprintf(why, size, "gh is not installed");
		else
			(void)snprintf(why, size, "gh pr create %s: %.300s",
				       p.status == PROBE_TIMED_OUT	? "timed out"
				       : p.status == PROBE_EXIT_NONZERO ? "failed"
									: "could not run",
				       p.first_line ? p.first_line : "");
		goto out;
	}
	/* the URL gh prints (its last line that looks like one) */
	for (s = p.output; s && (s = strstr(s, "http")); s++)
		if (strncmp(s, "https://", 8) == 0 || strncmp(s, "http://", 7) == 0)
			last = s;
	if (last)
		url = xstrndup(last, strcspn(last, " \t\r\n"));
	else
		(void)snprintf(why, size, "gh pr create printed no URL");
out:
	probe_release(&p);
	strvec_clear(&args);
	strvec_clear(&env);
	return url;
}

/* merge: pr, after the gates passed: the head they passed on pushed as the
 * task's branch to the remote, then a pull request opened with gh when it
 * is installed (else the reason says what to do). */
void run_pr_deliver(struct loop *l, struct otask *t, const char *gates_msg,
		    const struct strvec *protected)
{
	const struct orch_config *c = l->e->cfg;
	const char *remote = c->pr.remote ? c->pr.remote : ORCH_DEFAULT_PR_REMOTE;
	const char *base = c->pr.base ? c->pr.base : l->run.base_branch;
	char msg[2048], why[512] = "", *head, *url = NULL, *repo = NULL, *pr = NULL;
	char *body = NULL, *body_path = NULL;
	bool is_url = strchr(remote, '/') || strchr(remote, ':');
	struct diag d;
	json_t *det;

	diag_clear(&d);
	/* the head the gates passed on (and the protected-paths check read) */
	head = t->row.head_commit ? t->row.head_commit : branch_head(l, t, &d);
	if (head && head != t->row.head_commit) {
		free(t->row.head_commit);
		t->row.head_commit = head;
	}
	if (!head || (!is_url && git_remote_url(l->e->repo, remote, l->e->git_env, &url, &d) < 0)) {
		(void)snprintf(msg, sizeof(msg), "cannot push '%s': %s",
			       t->row.branch ? t->row.branch : "?", d.msg);
		(void)run_transition(l, t, TASK_EV_PUSH_FAILED, msg);
		goto out;
	}
	if (is_url)
		url = xstrdup(remote);
	det = json_object();
	json_obj_set(det, "branch", json_str_lossy(t->row.branch));
	json_obj_set(det, "head", json_str_lossy(head));
	json_obj_set(det, "remote", json_str_lossy(url));
	json_obj_set(det, "base", json_str_lossy(base));
	if (protected && protected->nr)
		json_obj_set(det, "protected", json_strvec(protected));
	if (task_record(l, t, "task.push", det) < 0)
		goto out;
	if (git_push_commit(l->e->repo, url, head, t->row.branch, l->e->git_env, &d) < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot push '%s' to %s: %s", t->row.branch,
			       remote, d.msg);
		(void)run_transition(l, t, TASK_EV_PUSH_FAILED, msg);
		goto out;
	}
	repo = c->pr.repo ? xstrdup(c->pr.repo) : repo_of_url(url);
	if (!repo) {
		(void)snprintf(
			why, sizeof(why),
			"the GitHub repository of '%s' is unknown (set pr: {repo: OWNER/NAME})",
			remote);
	} else {
		body = pr_body(l, t, gates_msg, protected, audit_chain_last_hmac(l->e->chain));
		body_path = run_session_path(l, t, "pr-body.md");
		if (atomic_replace_file(body_path, body, strlen(body), 0600) < 0)
			(void)snprintf(why, sizeof(why), "cannot write %s", body_path);
		else
			pr = gh_create(l, t, repo, base, body_path, why, sizeof(why));
	}
	if (pr) {
		det = json_object();
		json_obj_set(det, "url", json_str_lossy(pr));
		json_obj_set(det, "head", json_str_lossy(head));
		(void)task_record(l, t, "task.pull_request", det);
		(void)snprintf(msg, sizeof(msg), "pushed %s to %s; pull request %s", t->row.branch,
			       remote, pr);
	} else {
		(void)snprintf(
			msg, sizeof(msg),
			"pushed %s to %s; no pull request (%s): open one from '%s' into '%s' (gh pr create --head %s --base %s)",
			t->row.branch, remote, why, t->row.branch, base, t->row.branch, base);
		run_warn(l, t, "%s", msg);
	}
	(void)run_transition(l, t, TASK_EV_PUSHED, msg);
out:
	free(url);
	free(repo);
	free(pr);
	free(body);
	free(body_path);
}
