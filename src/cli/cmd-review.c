/* bernstein diff | approve | reject: the review of tasks of the latest run
 * (merge: review; docs/runs.md, "Review and pull requests"). diff reads git
 * and state.db; approve and reject are requests to the run, through its
 * control channel when it is live, else under the run lock followed by a
 * resume (cmd-control.c). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/repo-config.h"
#include "cli/run-session.h"
#include "orch/control.h"
#include "orch/plan.h"
#include "orch/protect.h"
#include "orch/state.h"
#include "orch/worktree.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/xalloc.h"

enum {
	OPT_STAT = CLI_CTL_OWN,
	OPT_FEEDBACK,
	OPT_FEEDBACK_FILE,
	OPT_HEAD,
	OPT_ALLOW_PROTECTED,
};

/* ---- bernstein diff ---- */

static const struct option diff_options[] = {
	{"stat", no_argument, NULL, OPT_STAT},
	{"json", no_argument, NULL, CLI_CTL_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

/* --numstat -z as [{path, added, deleted}] (binary: null counts). */
static json_t *numstat_json(const char *out, size_t len)
{
	json_t *files = json_array();
	size_t i = 0;

	while (i < len) {
		const char *rec = out + i, *tab1, *tab2;
		size_t n = strnlen(rec, len - i);
		json_t *f;

		i += n + 1;
		tab1 = memchr(rec, '\t', n);
		tab2 = tab1 ? memchr(tab1 + 1, '\t', n - (size_t)(tab1 + 1 - rec)) : NULL;
		if (!tab2)
			continue;
		f = json_object();
		if (tab2[1]) {
			cli_jset(f, "path", json_str_lossy(tab2 + 1));
		} else if (i < len) {
			/* a rename: the old path, then the new, as two more fields */
			const char *from = out + i;
			size_t fl = strnlen(from, len - i);

			i += fl + 1;
			cli_jset(f, "from", json_str_lossy(from));
			cli_jset(f, "path", json_str_lossy(i < len ? out + i : ""));
			i += i < len ? strnlen(out + i, len - i) + 1 : 0;
		}
		cli_jset(f, "added",
			 rec[0] == '-' ? json_null() : json_integer(strtoll(rec, NULL, 10)));
		cli_jset(f, "deleted",
			 tab1[1] == '-' ? json_null() : json_integer(strtoll(tab1 + 1, NULL, 10)));
		(void)json_array_append_new(files, f);
	}
	return files;
}

/* The task's head: the reviewed one when it is in review (what approve
 * merges), else its branch as it is. */
static int diff_head(struct cli_ctx *ctx, struct session *s, const struct task_row *t,
		     char **ret_now, bool *ret_moved)
{
	struct diag d;

	diag_clear(&d);
	*ret_moved = false;
	if (git_branch_commit(s->repo, t->branch, (const char *const *)s->git_env.v, ret_now, &d) <
	    0)
		return cli_error(ctx, BEXIT_FAILED, "task '%s': %s", t->id, d.msg);
	*ret_moved =
		t->state == TASK_REVIEW && t->head_commit && strcmp(t->head_commit, *ret_now) != 0;
	return 0;
}

static int diff_task(struct cli_ctx *ctx, struct session *s, const char *id, bool stat)
{
	const char *const *env = (const char *const *)s->git_env.v;
	struct run_row run = RUN_ROW_INIT;
	struct task_row t = TASK_ROW_INIT;
	char *now = NULL, *base = NULL, *out = NULL, *files = NULL;
	struct strvec changed = STRVEC_INIT, protected = STRVEC_INIT, rules = STRVEC_INIT;
	size_t len = 0, flen = 0, i;
	bool moved = false;
	struct diag d;
	int code = 0, r;

	run_row_init(&run);
	task_row_init(&t);
	diag_clear(&d);
	r = state_run_latest(s->st, &run, &d);
	if (r < 0) {
		code = r == -ENOENT ? cli_error(ctx, BEXIT_USAGE, "no runs in '%s' yet", s->repo)
				    : cli_diag(ctx, BEXIT_INVALID, &d);
		goto out;
	}
	r = state_task_get(s->st, run.id, id, &t, &d);
	if (r < 0) {
		code = r == -ENOENT
			       ? cli_error(ctx, BEXIT_USAGE, "no task '%s' in run '%s'", id, run.id)
			       : cli_diag(ctx, BEXIT_INVALID, &d);
		goto out;
	}
	if (!t.branch) {
		code = cli_error(ctx, BEXIT_FAILED, "task '%s' is %s and has no branch yet", id,
				 task_state_to_string(t.state));
		goto out;
	}
	code = diff_head(ctx, s, &t, &now, &moved);
	if (code)
		goto out;
	/* against where the branch left its base, not where the base is now */
	if (git_merge_base(s->repo, run.base_branch, now, env, &base, &d) < 0 ||
	    git_diff_range(s->repo, base, now, ctx->json || !stat ? GIT_DIFF_PATCH : GIT_DIFF_STAT,
			   env, &out, &len, &d) < 0 ||
	    (ctx->json &&
	     git_diff_range(s->repo, base, now, GIT_DIFF_NUMSTAT, env, &files, &flen, &d) < 0)) {
		code = cli_diag(ctx, BEXIT_FAILED, &d);
		goto out;
	}
	/* what approve would need --allow-protected for (docs/security.md, 12);
	 * a broken bernstein.yaml (its error printed) leaves the built-in rules */
	if (!s->cfg && repo_config_load(ctx, s->repo, &s->cfg) != 0)
		s->cfg = NULL;
	if (git_changed_files(s->repo, run.base_branch, now, env, &changed, &d) == 0) {
		protect_rules(s->repo, s->cfg ? s->cfg->protected_paths : NULL,
			      s->cfg ? s->cfg->n_protected : 0, run.plan_path, &rules);
		(void)protect_filter(&changed, &rules, &protected);
	}
	if (ctx->json) {
		json_t *o = json_object();

		cli_jset(o, "run", json_string(run.id));
		cli_jset(o, "task", json_string(t.id));
		cli_jset(o, "state", json_string(task_state_to_string(t.state)));
		cli_jset(o, "branch", json_string(t.branch));
		cli_jset(o, "base_branch", json_string(run.base_branch));
		cli_jset(o, "merge_base", json_string(base));
		cli_jset(o, "head", json_string(now));
		cli_jset(o, "reviewed_head",
			 t.state == TASK_REVIEW && t.head_commit ? json_string(t.head_commit)
								 : json_null());
		cli_jset(o, "moved_since_review", json_boolean(moved));
		cli_jset(o, "protected", json_strvec(&protected));
		cli_jset(o, "files", numstat_json(files, flen));
		if (!stat)
			cli_jset(o, "patch", json_str_lossy(out));
		print_json_line(ctx, o);
	} else {
		(void)fprintf(ctx->out, "task %s (%s): %s at %.12s against %s at %.12s\n", t.id,
			      task_state_to_string(t.state), t.branch, now, run.base_branch, base);
		if (moved)
			(void)fprintf(
				ctx->out,
				"warning: the branch moved since review (%.12s was reviewed): 'bernstein approve' refuses it\n",
				t.head_commit);
		for (i = 0; i < protected.nr; i++)
			(void)fprintf(
				ctx->out,
				"warning: changes bernstein's own configuration: %s (approve needs --allow-protected)\n",
				protected.v[i]);
		(void)fwrite(out, 1, len, ctx->out);
	}
out:
	strvec_clear(&changed);
	strvec_clear(&protected);
	strvec_clear(&rules);
	free(now);
	free(base);
	free(out);
	free(files);
	task_row_release(&t);
	run_row_release(&run);
	return code;
}

int cmd_diff(int argc, char **argv, struct cli_ctx *ctx)
{
	struct session s;
	bool stat = false;
	int c, code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", diff_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_STAT:
			stat = true;
			break;
		case CLI_CTL_JSON:
			ctx->json = true;
			break;
		default:
			return cli_option_error(ctx, argv, diff_options, "");
		}
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing the task id");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	if (!plan_id_valid(argv[optind]))
		return cli_usage_error(ctx, "'%s' is not a task id", argv[optind]);
	code = session_open(&s, ctx, true, false, NULL);
	if (!code)
		code = diff_task(ctx, &s, argv[optind], stat);
	session_release(&s);
	return code;
}

const char cmd_diff_summary[] = "show what a task of the latest run changed";
const char cmd_diff_usage[] = "TASK [--stat] [--json]";
const char cmd_diff_help[] =
	"Shows the task's branch against its base: the diff from the commit where the\n"
	"branch left the base branch (their merge base, not the base branch as it is\n"
	"now, which other merges moved) to the branch's head, as 'git diff' prints it\n"
	"(no external diff or textconv driver runs). For a task waiting in 'review'\n"
	"(merge: review) this is what 'bernstein approve TASK' merges; when the branch\n"
	"moved since the review a warning says so, and approve refuses it. A change of\n"
	"bernstein's own configuration (bernstein.yaml, .worktreeinclude, .bernstein/,\n"
	"bernstein/, the plan, protected_paths:) is named in a warning too: approve\n"
	"merges it only with --allow-protected.\n"
	"\n"
	"options:\n"
	"  --stat             the diffstat instead of the patch\n"
	"  --json             one object: {\"run\", \"task\", \"state\", \"branch\",\n"
	"                     \"base_branch\", \"merge_base\", \"head\", \"reviewed_head\",\n"
	"                     \"moved_since_review\", \"protected\": [paths],\n"
	"                     \"files\": [{\"path\", \"added\",\n"
	"                     \"deleted\"}], \"patch\"} (no patch with --stat)\n"
	"\n"
	"Exit: 0 shown, 1 the task has no branch (or git failed), 2 usage, no run or no\n"
	"such task, 3 state.db unreadable, 4 not in a git repository.\n";

/* ---- bernstein approve ---- */

static const struct option approve_options[] = {
	{"allow-protected", no_argument, NULL, OPT_ALLOW_PROTECTED},
	{"detach", no_argument, NULL, CLI_CTL_DETACH},
	{"head", required_argument, NULL, OPT_HEAD},
	{"json", no_argument, NULL, CLI_CTL_JSON},
	{"key-file", required_argument, NULL, CLI_CTL_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int approve_opt(struct cli_ctx *ctx, int opt, const char *arg, struct control_request *req)
{
	if (opt == OPT_ALLOW_PROTECTED) {
		req->allow_protected = true;
	} else if (opt == OPT_HEAD) {
		if (strspn(arg, "0123456789abcdef") != strlen(arg) ||
		    (strlen(arg) != 40 && strlen(arg) != 64))
			return cli_usage_error(ctx, "--head: '%s' is not a full commit id", arg);
		free(req->head);
		req->head = xstrdup(arg);
	}
	return 0;
}

int cmd_approve(int argc, char **argv, struct cli_ctx *ctx)
{
	struct control_request req;
	struct cli_control_args a;
	int code;

	control_request_init(&req);
	req.op = CONTROL_APPROVE;
	code = cli_control_args(ctx, argc, argv, approve_options, approve_opt, true, &req, &a);
	if (code != CLI_CONTINUE)
		goto out;
	if (req.head && req.n_tasks != 1)
		code = cli_usage_error(ctx, "--head: only with one task");
	else
		code = cli_control_request(ctx, &req, a.key_file, false, a.detach);
out:
	control_request_release(&req);
	return code;
}

const char cmd_approve_summary[] = "merge tasks of the latest run that wait in review";
const char cmd_approve_usage[] =
	"TASK... [--head SHA] [--allow-protected] [--detach] [--json] [--key-file FILE]";
const char cmd_approve_help[] =
	"Merges tasks waiting in 'review' (merge: review in bernstein.yaml): the head\n"
	"their gates passed on, which 'bernstein diff TASK' shows, is merged into the\n"
	"base branch as merge: auto would have (crash-safe; 'bernstein resume' finishes\n"
	"a merge that was interrupted, never twice). A task whose branch moved since it\n"
	"was reviewed is refused: the agent, or anything else, may have changed it after\n"
	"you looked. --head SHA also refuses unless SHA is the reviewed head. In a live\n"
	"run the loop merges at once; when the run is not live the task is marked in\n"
	"state.db under the run lock and the run is resumed here, in the foreground, as\n"
	"'bernstein resume' (which merges it and starts what depended on it; with\n"
	"--detach in the background, as 'bernstein resume --detach'). Either\n"
	"every task named is approved or none is. Audited: control.request (who), then\n"
	"task.approved with your uid and the head approved.\n"
	"\n"
	"A task whose changes touch bernstein's own configuration (bernstein.yaml,\n"
	".worktreeinclude, .bernstein/, bernstein/, the plan being run, the paths of\n"
	"protected_paths:) is never merged without your say: it waits in review even\n"
	"under merge: auto, its reason names the files, and approve refuses it unless\n"
	"you add --allow-protected (docs/security.md, promise 12).\n"
	"\n"
	"options:\n"
	"  --head SHA         the full commit id you reviewed (one task)\n"
	"  --allow-protected  also merge changes to bernstein's own configuration\n"
	"  --detach           a run that is not live is resumed in the background\n"
	"  --json             the run's reply as one JSON object\n"
	"  --key-file FILE    the audit key\n"
	"\n"
	"Exit (live run): 0 approved and merged (or the merge postponed: see status), 1\n"
	"a task is not in review or its branch moved (nothing changed), 2 usage, no run\n"
	"or no such task, 4 refused or I/O, 5 the audit chain is broken. Not live: as\n"
	"'bernstein resume'.\n";

/* ---- bernstein reject ---- */

static const struct option reject_options[] = {
	{"feedback", required_argument, NULL, OPT_FEEDBACK},
	{"feedback-file", required_argument, NULL, OPT_FEEDBACK_FILE},
	{"detach", no_argument, NULL, CLI_CTL_DETACH},
	{"json", no_argument, NULL, CLI_CTL_JSON},
	{"key-file", required_argument, NULL, CLI_CTL_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int take_feedback(struct cli_ctx *ctx, struct control_request *req, const char *text,
			 const char *file)
{
	char *data = NULL;
	size_t len = 0;
	int r;

	if (req->feedback)
		return cli_usage_error(ctx, "give --feedback or --feedback-file once");
	if (file) {
		r = read_file_capped(file, CONTROL_FEEDBACK_MAX, &data, &len);
		if (r < 0)
			return cli_error(ctx, r == -EFBIG ? BEXIT_USAGE : BEXIT_ENV,
					 "--feedback-file '%s': %s", file,
					 r == -EFBIG ? "longer than 16384 bytes" : strerror(-r));
	} else {
		len = strlen(text);
		data = xstrdup(text);
	}
	if (len == 0 || len > CONTROL_FEEDBACK_MAX || memchr(data, '\0', len)) {
		free(data);
		return cli_usage_error(ctx, "the feedback is %s",
				       len == 0 ? "empty"
						: "longer than 16384 bytes or holds a NUL");
	}
	req->feedback = data;
	return 0;
}

static int reject_opt(struct cli_ctx *ctx, int opt, const char *arg, struct control_request *req)
{
	if (opt == OPT_FEEDBACK)
		return take_feedback(ctx, req, arg, NULL);
	if (opt == OPT_FEEDBACK_FILE)
		return take_feedback(ctx, req, NULL, arg);
	return 0;
}

int cmd_reject(int argc, char **argv, struct cli_ctx *ctx)
{
	struct control_request req;
	struct cli_control_args a;
	int code;

	control_request_init(&req);
	req.op = CONTROL_REJECT;
	code = cli_control_args(ctx, argc, argv, reject_options, reject_opt, true, &req, &a);
	if (code != CLI_CONTINUE)
		goto out;
	if (req.n_tasks != 1)
		code = cli_usage_error(ctx, "reject takes one task");
	else if (!req.feedback)
		code = cli_usage_error(ctx,
				       "missing --feedback (what the next attempt should change)");
	else
		code = cli_control_request(ctx, &req, a.key_file, false, a.detach);
out:
	control_request_release(&req);
	return code;
}

const char cmd_reject_summary[] = "send a task in review back to its agent, with feedback";
const char cmd_reject_usage[] =
	"TASK --feedback TEXT | --feedback-file FILE [--detach] [--json] [--key-file FILE]";
const char cmd_reject_help[] =
	"A task waiting in 'review' (merge: review) gets a new attempt in the same\n"
	"worktree and branch, its prompt followed by a '## Review feedback' section with\n"
	"your text. The agent's own session is resumed where its adapter can (claude,\n"
	"codex...), else a fresh session gets the prompt. The feedback is data in the\n"
	"prompt, never an option to the agent; at most 16384 bytes, no NUL. After the\n"
	"attempt and its gates the task waits in review again. In a live run it starts\n"
	"when a slot is free; when the run is not live the change is made in state.db\n"
	"under the run lock and the run is resumed here, as 'bernstein resume' (with\n"
	"--detach in the background, as 'bernstein resume --detach'). Audited:\n"
	"control.request (who, the feedback), then task.rejected with your uid and the\n"
	"head rejected.\n"
	"\n"
	"options:\n"
	"  --feedback TEXT      what the next attempt should change\n"
	"  --feedback-file FILE the same, read from FILE\n"
	"  --detach             a run that is not live is resumed in the background\n"
	"  --json               the run's reply as one JSON object\n"
	"  --key-file FILE      the audit key\n"
	"\n"
	"Exit (live run): 0 rejected, 1 the task is not in review (nothing changed), 2\n"
	"usage, no run or no such task, 4 refused or I/O, 5 the audit chain is broken.\n"
	"Not live: as 'bernstein resume'.\n";
