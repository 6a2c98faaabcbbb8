/* bernstein worktrees list | gc: the worktrees (or clones) and branches
 * bernstein/SESSION of the tasks of every run recorded in state.db, and
 * their removal once they are not needed (docs/worktrees.md, "Cleaning
 * up"). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/run-session.h"
#include "orch/agentrun.h"
#include "orch/checkout.h"
#include "orch/state.h"
#include "orch/worktree.h"
#include "util/fsutil.h"
#include "util/strvec.h"
#include "util/xalloc.h"

enum {
	OPT_JSON = 256,
	OPT_FORCE,
	OPT_OLDER,
	OPT_KEY_FILE,
};

struct wt_item {
	const struct run_row *run;
	const struct task_row *task;
	bool tree, branch, merged, live;
	int64_t age_s;	  /* since the task last changed state; -1 unknown */
	const char *keep; /* gc: why it stays; NULL: removed */
};

static int64_t age_of(const char *iso, time_t now)
{
	struct tm tm;
	const char *end;

	if (!iso)
		return -1;
	memset(&tm, 0, sizeof(tm));
	end = strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return -1;
	return (int64_t)(now - timegm(&tm));
}

/* Whether another bernstein holds the run lock (a run is live). */
static bool run_live(const char *repo)
{
	char *path = agentrun_path(repo, ORCH_LOCK_FILE);
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	bool held = false;

	free(path);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		held = true;
	(void)close(fd);
	return held;
}

static void look(struct session *s, struct wt_item *it, time_t now, bool live)
{
	const char *const *env =
		s->env.git_env ? s->env.git_env : (const char *const *)s->git_env.v;
	struct stat st;
	char *commit = NULL;

	it->tree = it->task->worktree && lstat(it->task->worktree, &st) == 0;
	if (it->task->branch)
		(void)git_branch_exists(s->repo, it->task->branch, env, &it->branch, NULL);
	/* merged: the work of a done task is in the base branch (a failed or
	 * cancelled task's work is in its worktree, uncommitted: never merged) */
	if (it->branch && it->run->base_branch && it->task->state == TASK_DONE &&
	    git_branch_commit(s->repo, it->task->branch, env, &commit, NULL) == 0)
		(void)git_is_ancestor(s->repo, commit, it->run->base_branch, env, &it->merged,
				      NULL);
	free(commit);
	it->age_s = age_of(it->task->updated_at, now);
	it->live = live && it->run->state == RUN_RUNNING;
}

/* Why gc keeps it (NULL: it goes). */
static const char *keep_reason(const struct wt_item *it, int64_t older_s, bool force)
{
	enum task_state st = it->task->state;

	if (it->live)
		return "its run is live";
	if (older_s > 0 && (it->age_s < 0 || it->age_s < older_s))
		return "not old enough";
	if (st == TASK_PENDING || st == TASK_RUNNING || st == TASK_COMPLETING ||
	    st == TASK_MERGING || st == TASK_INTERRUPTED || st == TASK_BLOCKED ||
	    st == TASK_REBASING || st == TASK_RESOLVING)
		return "its run is unfinished ('bernstein resume' needs it)";
	if (st == TASK_REVIEW)
		return "it waits for review ('bernstein approve' or 'reject')";
	if (it->merged || st == TASK_NO_CHANGES)
		return NULL;
	if (force)
		return NULL;
	return "not merged: its work is only there (--force removes it)";
}

static json_t *item_json(const struct wt_item *it, bool gc)
{
	json_t *o = json_object();

	cli_jset(o, "run", cli_jstr(it->run->id));
	cli_jset(o, "task", cli_jstr(it->task->id));
	cli_jset(o, "state", cli_jstr(task_state_to_string(it->task->state)));
	cli_jset(o, "worktree", it->tree ? cli_jstr(it->task->worktree) : json_null());
	cli_jset(o, "branch", it->branch ? cli_jstr(it->task->branch) : json_null());
	cli_jset(o, "merged", json_boolean(it->merged));
	cli_jset(o, "age_s", it->age_s >= 0 ? json_integer(it->age_s) : json_null());
	cli_jset(o, "live", json_boolean(it->live));
	if (gc) {
		cli_jset(o, "removed", json_boolean(!it->keep));
		cli_jset(o, "kept_because", cli_jstr(it->keep));
	}
	return o;
}

static void age_text(int64_t s, char *buf, size_t size)
{
	if (s < 0)
		(void)snprintf(buf, size, "-");
	else if (s < 3600)
		(void)snprintf(buf, size, "%lldm", (long long)(s / 60));
	else if (s < 86400 * 2)
		(void)snprintf(buf, size, "%lldh", (long long)(s / 3600));
	else
		(void)snprintf(buf, size, "%lldd", (long long)(s / 86400));
}

/* Every task of every run with a worktree or a branch still there. */
static int collect(struct session *s, struct run_row **ret_runs, size_t *ret_nr,
		   struct task_row ***ret_tasks, size_t **ret_nt, struct wt_item **ret_items,
		   size_t *ret_n)
{
	struct run_row *runs = NULL;
	struct task_row **tasks;
	struct wt_item *items = NULL;
	size_t nr = 0, *nt, i, j, n = 0;
	time_t now = time(NULL);
	/* gc holds the run lock itself (session_open): then no run is live,
	 * and another lock of the same file would say one is */
	bool live = s->lock_fd < 0 && run_live(s->repo);
	struct diag d;
	int r;

	diag_clear(&d);
	r = state_run_list(s->st, &runs, &nr, &d);
	if (r < 0)
		return cli_diag(s->ctx, BEXIT_ENV, &d);
	tasks = xcalloc(nr + 1, sizeof(*tasks));
	nt = xcalloc(nr + 1, sizeof(*nt));
	for (i = 0; i < nr; i++) {
		r = state_tasks_get(s->st, runs[i].id, &tasks[i], &nt[i], &d);
		if (r < 0)
			break;
		items = xrealloc(items, (n + nt[i] + 1) * sizeof(*items));
		for (j = 0; j < nt[i]; j++) {
			struct wt_item *it = &items[n];

			if (!tasks[i][j].worktree && !tasks[i][j].branch)
				continue;
			memset(it, 0, sizeof(*it));
			it->run = &runs[i];
			it->task = &tasks[i][j];
			look(s, it, now, live);
			if (it->tree || it->branch)
				n++;
		}
	}
	*ret_runs = runs;
	*ret_nr = nr;
	*ret_tasks = tasks;
	*ret_nt = nt;
	*ret_items = items;
	*ret_n = n;
	return r < 0 ? cli_diag(s->ctx, BEXIT_ENV, &d) : 0;
}

static void collected_free(struct run_row *runs, size_t nr, struct task_row **tasks, size_t *nt,
			   struct wt_item *items)
{
	size_t i;

	for (i = 0; i < nr; i++)
		task_rows_free(tasks[i], nt[i]);
	free(tasks);
	free(nt);
	run_rows_free(runs, nr);
	free(items);
}

static void print_items(struct cli_ctx *ctx, const struct wt_item *items, size_t n, bool gc)
{
	size_t i;

	if (ctx->json) {
		json_t *o = json_object(), *a = json_array();

		for (i = 0; i < n; i++)
			(void)json_array_append_new(a, item_json(&items[i], gc));
		cli_jset(o, "worktrees", a);
		print_json_line(ctx, o);
		return;
	}
	if (!gc)
		(void)fprintf(ctx->out, "%-24s %-24s %-12s %5s %-6s %s\n", "RUN", "TASK", "STATE",
			      "AGE", "MERGED", "WORKTREE / BRANCH");
	for (i = 0; i < n; i++) {
		const struct wt_item *it = &items[i];
		char age[32];

		age_text(it->age_s, age, sizeof(age));
		if (gc) {
			(void)fprintf(ctx->out, "%s %s/%s%s%s\n", it->keep ? "kept   " : "removed",
				      it->run->id, it->task->id, it->keep ? ": " : "",
				      it->keep ? it->keep : "");
			continue;
		}
		(void)fprintf(ctx->out, "%-24.24s %-24.24s %-12s %5s %-6s %s%s%s%s\n", it->run->id,
			      it->task->id, task_state_to_string(it->task->state), age,
			      it->merged ? "yes" : "no", it->tree ? it->task->worktree : "",
			      it->tree && it->branch ? " " : "", it->branch ? it->task->branch : "",
			      it->live ? " (live)" : "");
	}
}

/* ---- bernstein worktrees list ---- */

static const struct option list_options[] = {
	{"json", no_argument, NULL, OPT_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int cmd_worktrees_list(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	struct run_row *runs = NULL;
	struct task_row **tasks = NULL;
	struct wt_item *items = NULL;
	size_t nr = 0, *nt = NULL, n = 0;
	int c, code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", list_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_JSON:
			ctx->json = true;
			break;
		default:
			return cli_option_error(ctx, argv, list_options, "");
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	code = session_open(&s, ctx, true, false, NULL);
	if (!code)
		code = collect(&s, &runs, &nr, &tasks, &nt, &items, &n);
	if (!code)
		print_items(ctx, items, n, false);
	collected_free(runs, nr, tasks, nt, items);
	session_release(&s);
	return code;
}

/* ---- bernstein worktrees gc ---- */

static const struct option gc_options[] = {
	{"older-than", required_argument, NULL, OPT_OLDER},
	{"force", no_argument, NULL, OPT_FORCE},
	{"json", no_argument, NULL, OPT_JSON},
	{"key-file", required_argument, NULL, OPT_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int parse_duration(struct cli_ctx *ctx, const char *s, int64_t *ret)
{
	static const struct {
		char unit;
		int64_t secs;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
	char *end;
	long long v;
	size_t i;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!errno && v >= 0 && v < 100000 && end != s && end[0] && !end[1])
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (units[i].unit == end[0]) {
				*ret = (int64_t)v * units[i].secs;
				return 0;
			}
	return cli_usage_error(
		ctx, "--older-than: '%s' is not a duration (N followed by s, m, h, d or w)", s);
}

/* Remove it: the worktree or clone without following a symlink planted in
 * it (rmtree_beneath(); the directory itself a symlink: unlinked), its
 * branch queued for one `git branch -D`; audited first. */
static int remove_item(struct session *s, const struct wt_item *it, bool force,
		       struct strvec *branches, struct diag *reterr)
{
	json_t *det = json_object();
	struct stat st;
	int r;

	cli_jset(det, "run", cli_jstr(it->run->id));
	cli_jset(det, "task", cli_jstr(it->task->id));
	cli_jset(det, "state", cli_jstr(task_state_to_string(it->task->state)));
	cli_jset(det, "worktree", it->tree ? cli_jstr(it->task->worktree) : json_null());
	cli_jset(det, "branch", it->branch ? cli_jstr(it->task->branch) : json_null());
	cli_jset(det, "merged", json_boolean(it->merged));
	cli_jset(det, "forced",
		 json_boolean(force && !it->merged && it->task->state != TASK_NO_CHANGES));
	r = audit_append(s->chain, "worktree.removed", ORCH_ACTOR, "task", it->task->id, det,
			 reterr);
	json_decref(det);
	if (r < 0)
		return r;
	if (it->tree && checkout_overlay_owns(s->repo, it->task->worktree)) {
		/* an overlay checkout's tree: unmounted and its layer removed
		 * with it (rmtree through the mount left both behind) */
		struct checkout co = CHECKOUT_INIT;
		const char *const *env =
			s->env.git_env ? s->env.git_env : (const char *const *)s->git_env.v;
		struct diag d;

		diag_clear(&d);
		checkout_bind(&co, CHECKOUT_OVERLAY, s->repo, env, it->task->worktree,
			      it->task->branch ? it->task->branch : "");
		if (checkout_remove(&co, false, &d) < 0)
			cli_warn(s->ctx, "%s, ignoring", d.msg);
		checkout_release(&co);
	} else if (it->tree && lstat(it->task->worktree, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			r = rmtree_beneath(it->task->worktree);
		else
			r = unlink(it->task->worktree) < 0 ? -errno : 0;
		if (r < 0)
			cli_warn(s->ctx, "cannot remove '%s': %s, ignoring", it->task->worktree,
				 strerror(-r));
	}
	if (it->branch)
		strvec_push(branches, it->task->branch);
	return 0;
}

static int cmd_worktrees_gc(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	struct run_row *runs = NULL;
	struct task_row **tasks = NULL;
	struct wt_item *items = NULL;
	struct strvec branches = STRVEC_INIT;
	const char *key_file = NULL;
	size_t nr = 0, *nt = NULL, n = 0, i;
	int64_t older = 0;
	bool force = false, opened = false;
	struct diag d;
	int c, code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", gc_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_OLDER:
			code = parse_duration(ctx, optarg, &older);
			if (code)
				return code;
			break;
		case OPT_FORCE:
			force = true;
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		case OPT_KEY_FILE:
			key_file = optarg;
			break;
		default:
			return cli_option_error(ctx, argv, gc_options, "");
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	/* the run lock: no run is live while gc removes anything */
	code = session_open(&s, ctx, false, true, key_file);
	opened = true;
	if (!code)
		code = collect(&s, &runs, &nr, &tasks, &nt, &items, &n);
	diag_clear(&d);
	for (i = 0; !code && i < n; i++) {
		items[i].keep = keep_reason(&items[i], older, force);
		if (!items[i].keep && remove_item(&s, &items[i], force, &branches, &d) < 0)
			code = cli_diag(ctx, BEXIT_AUDIT, &d);
	}
	if (!code && worktree_prune(s.repo, s.env.git_env, &d) < 0)
		cli_warn(ctx, "cannot prune the removed worktrees: %s, ignoring", d.msg);
	/* the overlay base checkouts no task layer uses any more */
	if (!code && checkout_overlay_gc(s.repo, s.env.git_env, NULL, &d) < 0)
		cli_warn(ctx, "cannot remove the unused overlay base checkouts: %s, ignoring",
			 d.msg);
	if (!code && branches.nr &&
	    worktree_branches_delete(s.repo, (const char *const *)branches.v, branches.nr,
				     s.env.git_env, &d) < 0)
		code = cli_diag(ctx, BEXIT_ENV, &d);
	if (!code)
		print_items(ctx, items, n, true);
	strvec_clear(&branches);
	collected_free(runs, nr, tasks, nt, items);
	if (opened)
		session_release(&s);
	return code;
}

const struct cmd worktrees_cmds[] = {
	{"list", cmd_worktrees_list, NULL, 0, "the worktrees and branches of finished tasks",
	 "[--json]",
	 "Lists, for every run recorded in .bernstein/state.db, the tasks whose worktree\n"
	 "(or clone) under .bernstein/worktrees/ or branch bernstein/SESSION still exists:\n"
	 "the task's state, how long ago it last changed, whether its branch is merged\n"
	 "into the run's base branch, and whether its run is live. Reads only.\n"
	 "\n"
	 "options:\n"
	 "  --json             {\"worktrees\": [{\"run\", \"task\", \"state\", \"worktree\",\n"
	 "                     \"branch\", \"merged\", \"age_s\", \"live\"}]}\n"
	 "\n"
	 "Exit: 0, 2 no runs yet, 4 I/O.\n"},
	{"gc", cmd_worktrees_gc, NULL, 0, "remove the worktrees and branches no longer needed",
	 "[--older-than D] [--force] [--json] [--key-file FILE]",
	 "Removes the worktree (or clone) and the branch of each finished task whose work\n"
	 "is merged into its base branch, or that changed nothing (no_changes). Kept:\n"
	 "anything while a run is live (gc takes the run lock, and refuses with exit 4\n"
	 "when a run holds it), the tasks of an unfinished run (pending, running,\n"
	 "interrupted, blocked...: 'bernstein resume' needs them), and the work of a\n"
	 "failed, conflicted, cancelled or refused task, or of one done without a merge,\n"
	 "unless --force. A worktree is deleted without following a symlink planted in\n"
	 "it; branches go with one 'git branch -D' run with bernstein's hardened git\n"
	 "(no hooks, no configuration of the task's tree). Each removal is a\n"
	 "worktree.removed record of the audit chain.\n"
	 "\n"
	 "options:\n"
	 "  --older-than D     only tasks whose state changed at least D ago (N followed\n"
	 "                     by s, m, h, d or w: 7d)\n"
	 "  --force            also the unmerged work of failed, conflicted, cancelled,\n"
	 "                     refused and unmerged done tasks\n"
	 "  --json             the list of 'worktrees list --json', each with \"removed\"\n"
	 "                     and \"kept_because\"\n"
	 "  --key-file FILE    the audit key\n"
	 "\n"
	 "Exit: 0, 2 usage or no runs yet, 4 a run is live, or I/O, 5 the audit chain is\n"
	 "broken.\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
