/* bernstein spawn ADAPTER [options] PROMPT: run one agent headless under the
 * supervisor (its own session, parent-death signal), read its output with its profile's dialect,
 * show the normalized events as they come, and exit with a code for the typed outcome
 * (docs/spawning.md).
 *
 * The plan comes from adapter/invocation.h; this file parses the options,
 * names the session directory, writes the side files, runs the supervisor
 * (proc/supervise.h), writes agent.log and events.jsonl, checks the worktree
 * with git, classifies the outcome (adapter/outcome.h) and prints. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/dialect.h"
#include "adapter/events.h"
#include "adapter/invocation.h"
#include "adapter/outcome.h"
#include "adapter/profile.h"
#include "cli/audit-setup.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/repo-config.h"
#include "orch/agentrun.h"
#include "orch/confine.h"
#include "orch/endpoints.h"
#include "proc/git.h"
#include "proc/probe.h"
#include "proc/supervise.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/randid.h"
#include "util/strvec.h"
#include "util/redact.h"
#include "util/xalloc.h"

/* The spawn command's own exit codes (docs/exit-codes.md). */
enum spawn_exit {
	SPAWN_EXIT_RATE_LIMITED = 10,
	SPAWN_EXIT_TIMED_OUT = 11,
	SPAWN_EXIT_KILLED = 12,
	SPAWN_EXIT_PERMISSION_BLOCKED = 13,
	SPAWN_EXIT_NO_CHANGES = 14,
};

#define PROMPT_FILE_MAX (64u << 20) /* --prompt-file */
#define TIMEOUT_MAX_S	(7.0 * 24 * 3600)
#define GIT_TIMEOUT_MS	30000
#define GIT_MAX_OUTPUT	(16u << 20)
#define DISPLAY_MAX	400 /* bytes of one human-readable event line */
#define RUNS_DIR	AGENTRUN_RUNS_DIR
#define DRY_RUN_RUN	"dry-run"

const char spawn_usage[] =
	"ADAPTER [-m MODEL] [-C DIR] [--timeout S] [--resume SESSION] [--session-id ID]\n"
	"       [--attach FILE]... [--set KEY=VALUE]... [--prompt-file FILE] [--expect-changes]\n"
	"       [--dry-run [--sandbox TIER]] [--json] [PROMPT]";

const char spawn_help[] =
	"Runs one agent headless in DIR under the supervisor (its own session, killed\n"
	"with bernstein), reads its output with its profile's dialect, shows the\n"
	"normalized events as they come (JSON lines with --json), then 'outcome: ...'\n"
	"and 'session: ID', and exits with a code for the typed outcome. The session\n"
	"directory .bernstein/runs/RUN/SESSION/ (in DIR) keeps agent.log,\n"
	"events.jsonl, plan.json, session.json and the agent's private HOME. The\n"
	"adapter's endpoints: entry of the repository's bernstein.yaml gives its\n"
	"base_url, api_key_env and model, as in a run; --set and -m win, slot by\n"
	"slot. See docs/spawning.md.\n"
	"\n"
	"options:\n"
	"  -m, --model MODEL   a model id or an alias of the adapter's profile\n"
	"  -C DIR              run as if started in DIR (the agent's working directory)\n"
	"  --timeout S         SIGTERM the agent's process group after S seconds, SIGKILL\n"
	"                      5 s later (default: none)\n"
	"  --resume SESSION    continue the agent's session SESSION (the id printed as\n"
	"                      'session:'), with the private HOME it had\n"
	"  --session-id ID     pre-assign the agent's session id (a UUID, or any text a\n"
	"                      UUID is derived from)\n"
	"  --attach FILE       an image for the agent (adapters with image input only)\n"
	"  --set KEY=VALUE     temperature, top_p, top_k, max_tokens, base_url or\n"
	"                      api_key_env; refused unless the adapter declares it\n"
	"  --prompt-file FILE  read the prompt from FILE ('-': standard input)\n"
	"  --expect-changes    a run that leaves the worktree unchanged is no_changes\n"
	"  --dry-run           print the plan (argv, environment names, files) and stop\n"
	"  --sandbox TIER      with --dry-run: also what the agent could read and write\n"
	"                      in sandbox tier TIER of a run (landlock, bwrap or\n"
	"                      container), DIR as its tree\n"
	"  --network MODE      with --sandbox: the network a run would give it (full,\n"
	"                      llm or none; default: llm when the tier has a network\n"
	"                      namespace and base_url is set, else full)\n"
	"  --json              the plan, the events and the outcome as JSON\n"
	"\n"
	"Exit codes: 0 completed, 1 failed, 2 usage, 3 refused or invalid profile,\n"
	"4 binary missing or environment problem, 10 rate limited, 11 timed out,\n"
	"12 killed, 13 permission blocked, 14 no changes, 130 interrupted.\n";

enum {
	OPT_TIMEOUT = 256,
	OPT_RESUME,
	OPT_SESSION_ID,
	OPT_ATTACH,
	OPT_SET,
	OPT_PROMPT_FILE,
	OPT_EXPECT_CHANGES,
	OPT_DRY_RUN,
	OPT_SANDBOX,
	OPT_NETWORK,
	OPT_JSON,
};

static const struct option spawn_options[] = {
	{"model", required_argument, NULL, 'm'},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"resume", required_argument, NULL, OPT_RESUME},
	{"session-id", required_argument, NULL, OPT_SESSION_ID},
	{"attach", required_argument, NULL, OPT_ATTACH},
	{"set", required_argument, NULL, OPT_SET},
	{"prompt-file", required_argument, NULL, OPT_PROMPT_FILE},
	{"expect-changes", no_argument, NULL, OPT_EXPECT_CHANGES},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"sandbox", required_argument, NULL, OPT_SANDBOX},
	{"network", required_argument, NULL, OPT_NETWORK},
	{"json", no_argument, NULL, OPT_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

struct spawn_opts {
	const char *adapter;
	const char *model;
	const char *dir;
	double timeout_s;
	const char *resume;
	const char *session_id;
	struct strvec attach; /* absolute */
	struct strvec sets;   /* KEY=VALUE as given */
	const char *prompt_file;
	const char *prompt_arg;
	bool expect_changes;
	bool dry_run;
	enum sandbox_kind sandbox; /* --sandbox; NONE when not given */
	int network;		   /* --network (enum net_mode); -1 when not given */
};

/* ---- helpers ---- */

static int exit_for_errno(int r)
{
	switch (r) {
	case -EPERM:
	case -E2BIG:
		return BEXIT_INVALID;
	case -EINVAL:
	case -ENOTSUP:
		return BEXIT_USAGE;
	default:
		return BEXIT_ENV;
	}
}

static int exit_for_outcome(enum outcome o)
{
	switch (o) {
	case OUTCOME_COMPLETED:
		return BEXIT_OK;
	case OUTCOME_RATE_LIMITED:
		return SPAWN_EXIT_RATE_LIMITED;
	case OUTCOME_TIMED_OUT:
	case OUTCOME_STALLED:
		return SPAWN_EXIT_TIMED_OUT;
	case OUTCOME_KILLED:
		return SPAWN_EXIT_KILLED;
	case OUTCOME_CANCELLED:
		return BEXIT_INTERRUPTED;
	case OUTCOME_BINARY_MISSING:
		return BEXIT_ENV;
	case OUTCOME_PERMISSION_BLOCKED:
		return SPAWN_EXIT_PERMISSION_BLOCKED;
	case OUTCOME_NO_CHANGES:
		return SPAWN_EXIT_NO_CHANGES;
	case OUTCOME_FAILED:
	case OUTCOME_OOM:
	case OUTCOME_LOST: /* never here: spawn runs the agent on this host */
	case _OUTCOME_MAX:
	case _OUTCOME_INVALID:
	default:
		return BEXIT_FAILED;
	}
}

static const char *now_iso(char *buf, size_t size)
{
	return clock_iso8601_utc(clock_system()->now_ns(clock_system()), buf, size);
}

/* ---- the plan as text ---- */

/* s with the secrets of rd redacted (caller frees). */
static char *redacted_copy(struct redact *rd, const char *s)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)redact_apply(rd, s, strlen(s), 0, &sb);
	return sbuf_detach(&sb, NULL);
}

/* One argv word for a terminal: C escapes for control bytes, long words cut. */
static void print_word(FILE *f, struct redact *rd, const char *w)
{
	char *r = redacted_copy(rd, w);
	const char *p;

	for (p = r; *p && p - r < 160; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '\n')
			(void)fputs("\\n", f);
		else if (c == '\t')
			(void)fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			(void)fprintf(f, "\\x%02x", c);
		else
			(void)fputc(c, f);
	}
	if (*p)
		(void)fprintf(f, "... (%zu bytes)", strlen(r));
	free(r);
}

static void plan_print(FILE *f, const struct profile *p, const struct invocation_plan *plan)
{
	struct redact *rd = agentrun_redactor(plan);
	size_t i;

	(void)fprintf(f, "adapter: %s (%s)\n", p->name, profile_shape_to_string(p->shape));
	(void)fprintf(f, "strategy: resume %s, dangerous mode %s, event channel %s; dialect %s\n",
		      resume_strategy_to_string(plan->strategy.resume),
		      dangerous_mode_to_string(plan->strategy.dangerous_mode),
		      event_channel_to_string(plan->strategy.event_channel),
		      dialect_to_string(plan->dialect));
	(void)fputs("argv:\n", f);
	for (i = 0; i < plan->argv.nr; i++) {
		(void)fputs("  ", f);
		print_word(f, rd, plan->argv.v[i]);
		(void)fputc('\n', f);
	}
	(void)fputs("env:", f);
	for (i = 0; i < plan->env.nr; i++) {
		const char *eq = strchr(plan->env.v[i], '=');

		(void)fprintf(f, " %.*s", (int)(eq ? eq - plan->env.v[i] : 0), plan->env.v[i]);
	}
	(void)fputc('\n', f);
	(void)fprintf(f, "cwd: %s\n", plan->cwd);
	if (plan->stdin_path)
		(void)fprintf(f, "stdin: %s (%zu bytes)\n", plan->stdin_path, plan->prompt_bytes);
	else if (plan->dialect == DIALECT_ACP)
		(void)fputs("stdin: a pipe from bernstein's ACP client (JSON-RPC frames)\n", f);
	else
		(void)fputs("stdin: /dev/null\n", f);
	(void)fprintf(f, "prompt: %s, %zu bytes%s\n", prompt_delivery_to_string(plan->prompt_via),
		      plan->prompt_bytes, plan->prompt_too_long ? " (too long for argv)" : "");
	(void)fprintf(f, "session dir: %s\n", plan->session_dir);
	if (plan->state_dir)
		(void)fprintf(f, "state dir: %s%s\n", plan->state_dir,
			      plan->state_reused ? " (reused)" : "");
	for (i = 0; i < plan->n_files; i++)
		(void)fprintf(f, "file: %s/%s %04o %zu bytes\n",
			      plan->files[i].base == INVOCATION_BASE_STATE ? plan->state_dir
									   : plan->session_dir,
			      plan->files[i].path, plan->files[i].mode, plan->files[i].len);
	for (i = 0; i < plan->warnings.nr; i++)
		(void)fprintf(f, "warning: %s\n", plan->warnings.v[i]);
	redact_free(rd);
}

/* ---- running it ---- */

struct spawn_run {
	struct cli_ctx *ctx;
	struct agentrun ar;
	bool started;
};

static void on_event(void *userdata, const struct event *ev, const char *json, size_t len)
{
	struct spawn_run *s = userdata;
	char buf[DISPLAY_MAX];

	if (s->ctx->json) {
		(void)fwrite(json, 1, len, s->ctx->out);
	} else {
		/* ev is redacted; its description turns control bytes into
		 * spaces, which could spell a secret again */
		char *line = redacted_copy(s->ar.rd, event_describe(ev, buf, sizeof(buf)));

		(void)fprintf(s->ctx->out, "%s\n", line);
		free(line);
	}
	(void)fflush(s->ctx->out);
}

static void on_stderr(void *userdata, const char *line, size_t len)
{
	struct spawn_run *s = userdata;

	if (s->ctx->verbosity > 0)
		(void)fprintf(s->ctx->err, "%s: agent: %.*s\n", s->ctx->progname, (int)len, line);
}

static void on_parse_error(void *userdata, const struct diag *d)
{
	struct spawn_run *s = userdata;
	char buf[sizeof(d->file) + sizeof(d->msg) + 64];

	if (s->ctx->verbosity > 0)
		(void)fprintf(s->ctx->err, "%s: %s\n", s->ctx->progname,
			      diag_format(d, buf, sizeof(buf)));
}

static void on_write_error(void *userdata, const char *path, int err)
{
	struct spawn_run *s = userdata;

	cli_warn(s->ctx, "cannot write %s: %s", path, strerror(err));
}

static int run_next_task(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct spawn_run *s = ctx;
	struct diag d;
	int r;

	if (s->started)
		return 0;
	s->started = true;
	diag_clear(&d);
	r = agentrun_fill_spec(&s->ar, spec, &d);
	if (r < 0) {
		(void)cli_diag(s->ctx, BEXIT_ENV, &d);
		return r;
	}
	*ret_task = s;
	return 1;
}

static void run_on_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	struct spawn_run *s = ctx;

	(void)task;
	agentrun_line(&s->ar, stream, line, len);
}

static void run_on_oversized(void *ctx, void *task, int stream, const char *head, size_t head_len,
			     uint64_t total)
{
	struct spawn_run *s = ctx;

	(void)task;
	agentrun_oversized(&s->ar, stream, head, head_len, total);
}

static void run_on_notice(void *ctx, void *task, enum proc_notice notice, uint64_t value)
{
	struct spawn_run *s = ctx;

	(void)task;
	agentrun_notice(&s->ar, notice, value);
}

static uint64_t run_on_stop(void *ctx, void *task)
{
	struct spawn_run *s = ctx;

	(void)task;
	return agentrun_stop(&s->ar);
}

static void run_on_exit(void *ctx, void *task, const struct proc *p)
{
	struct spawn_run *s = ctx;

	(void)task;
	agentrun_exit(&s->ar, p);
}

/* `git status` of dir, without .bernstein: 0 and the output in *ret, or -1
 * when dir is not in a git work tree (or git is missing). The agent may have
 * written dir's repository: git runs hardened (proc/git.h), submodules
 * (nested repositories with their own config) not entered. */
static int git_snapshot(struct cli_ctx *ctx, const char *dir, char **ret, size_t *ret_len)
{
	static const char *const args[] = {
		"status",
		"--porcelain=v1",
		"-z",
		"--untracked-files=all",
		"--ignore-submodules=all",
		"--",
		".",
		":(exclude).bernstein",
		NULL,
	};
	struct strvec base = STRVEC_INIT, argv = STRVEC_INIT, env = STRVEC_INIT;
	struct probe pr = {0};
	struct probe_opts o = {0};
	const char *v;
	int r = -1;

	if ((v = cli_getenv(ctx, "PATH")) != NULL)
		strvec_pushf(&base, "PATH=%s", v);
	if ((v = cli_getenv(ctx, "HOME")) != NULL)
		strvec_pushf(&base, "HOME=%s", v);
	if (git_prepare(dir, (const char *const *)base.v, GIT_HARDEN_READ, args, &argv, &env) < 0)
		goto out;
	pr.binary = argv.v[0];
	pr.args = (const char **)argv.v + 1;
	o.env = env.v;
	o.timeout_ms = GIT_TIMEOUT_MS;
	o.max_output = GIT_MAX_OUTPUT;
	o.max_parallel = 1;
	if (probe_run(&pr, 1, &o) == 0 && pr.status == PROBE_OK) {
		*ret = xmalloc(pr.output_len + 1);
		if (pr.output_len)
			memcpy(*ret, pr.output, pr.output_len);
		(*ret)[pr.output_len] = '\0';
		*ret_len = pr.output_len;
		r = 0;
	}
out:
	probe_release(&pr);
	strvec_clear(&base);
	strvec_clear(&argv);
	strvec_clear(&env);
	return r;
}

/* o as one compact JSON line on stdout. */
static void print_line(struct cli_ctx *ctx, const json_t *o)
{
	char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	if (line)
		(void)fprintf(ctx->out, "%s\n", line);
	free(line);
}

static int run_plan(struct cli_ctx *ctx, const struct spawn_opts *o, const struct profile *p,
		    const struct invocation_plan *plan, const char *run, const char *session)
{
	const struct agentrun_hooks hooks = {
		.on_event = on_event,
		.on_stderr = on_stderr,
		.on_parse_error = on_parse_error,
		.on_write_error = on_write_error,
	};
	struct spawn_run s = {.ctx = ctx};
	struct supervisor_ops ops = {
		.next_task = run_next_task,
		.on_line = run_on_line,
		.on_oversized = run_on_oversized,
		.on_notice = run_on_notice,
		.on_exit = run_on_exit,
		.on_stop = run_on_stop,
	};
	struct supervisor_opts sopts = {.max_parallel = 1};
	char why[256] = "", started_at[40], ended_at[40], self[PATH_MAX];
	char *before = NULL, *after = NULL, *path = NULL;
	size_t before_len = 0, after_len = 0;
	enum outcome out;
	json_t *summary = NULL, *pj;
	struct diag d;
	ssize_t n;
	int r, code;

	(void)now_iso(started_at, sizeof(started_at));
	agentrun_init(&s.ar, plan, &hooks);
	s.ar.hooks.userdata = &s;
	/* this binary: the agent's init in the pidns tier */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		s.ar.init_exe = self;
	}
	s.ar.timeout_ms = o->timeout_s > 0 ? (uint64_t)ceil(o->timeout_s * 1000.0) : 0;
	s.ar.expect_changes = o->expect_changes;

	if (!plan->binary_found) {
		/* nothing to start: the outcome a failed execve's 127 would give */
		int err = plan->binary_error ? -plan->binary_error : ENOENT;

		agentrun_binary_missing(&s.ar);
		out = agentrun_classify(&s.ar, why, sizeof(why));
		(void)cli_error(ctx, BEXIT_ENV, "cannot execute '%s': %s", plan->argv.v[0],
				err == ENOENT ? "not found on PATH" : strerror(err));
		code = exit_for_outcome(out);
		if (ctx->json) {
			summary = json_object();
			cli_jset(summary, "kind", cli_jstr("outcome"));
			cli_jset(summary, "outcome", cli_jstr(outcome_to_string(out)));
			cli_jset(summary, "reason", cli_jstr(why));
			cli_jset(summary, "exit_code", json_integer(code));
			cli_jset(summary, "adapter", cli_jstr(p->name));
			print_line(ctx, summary);
			json_decref(summary);
		} else {
			(void)fprintf(ctx->out, "outcome: %s (%s)\n", outcome_to_string(out), why);
		}
		agentrun_release(&s.ar);
		return code;
	}

	diag_clear(&d);
	pj = agentrun_plan_json(p, plan, run, session);
	r = agentrun_open(&s.ar, pj, &d);
	json_decref(pj);
	if (r < 0) {
		code = cli_diag(ctx, BEXIT_ENV, &d);
		agentrun_release(&s.ar);
		return code;
	}

	if (git_snapshot(ctx, plan->cwd, &before, &before_len) < 0)
		before = NULL;
	agentrun_plan_warnings(&s.ar);
	(void)fflush(ctx->out);
	(void)fflush(ctx->err);

	diag_clear(&d);
	r = supervise_run(&ops, &s, &sopts, &d);
	(void)now_iso(ended_at, sizeof(ended_at));
	if (r < 0 && r != -ECANCELED && !s.ar.agent_exited) {
		/* next_task has already said why when the diag is empty */
		code = d.msg[0] ? cli_diag(ctx, BEXIT_ENV, &d) : BEXIT_ENV;
		goto out;
	}

	if (before && git_snapshot(ctx, plan->cwd, &after, &after_len) == 0)
		agentrun_set_changes(&s.ar, before_len != after_len ||
						    memcmp(before, after, before_len) != 0);
	out = agentrun_classify(&s.ar, why, sizeof(why));
	code = exit_for_outcome(out);

	{
		struct session_record rec = {
			.adapter = p->name,
			.run = run,
			.session = session,
			.exit_code = code,
			.started_at = started_at,
			.ended_at = ended_at,
		};

		summary = agentrun_session_json(&s.ar, out, why, &rec);
	}

	path = agentrun_path(plan->session_dir, "session.json");
	r = agentrun_write_json(path, summary);
	if (r < 0)
		cli_warn(ctx, "cannot write '%s': %s", path, strerror(-r));

	if (ctx->json) {
		print_line(ctx, summary);
	} else {
		(void)fprintf(ctx->out, "outcome: %s (%s; %s)\n", outcome_to_string(out), why,
			      s.ar.exit_desc[0] ? s.ar.exit_desc : "no exit status");
		if (out != OUTCOME_COMPLETED && out != OUTCOME_NO_CHANGES &&
		    agentrun_last_error(&s.ar)[0])
			(void)fprintf(ctx->out, "the agent said: %s\n", s.ar.agent_error);
		(void)fprintf(ctx->out, "session: %s\n",
			      s.ar.agent_session ? s.ar.agent_session
						 : "none (the agent announced none)");
	}
out:
	json_decref(summary);
	free(path);
	free(before);
	free(after);
	agentrun_release(&s.ar);
	return code;
}

/* ---- the command ---- */

static int read_prompt(struct cli_ctx *ctx, const char *file, char **ret)
{
	size_t len;
	int r;

	if (strcmp(file, "-") == 0)
		r = read_fd_capped(STDIN_FILENO, PROMPT_FILE_MAX, ret, &len);
	else
		r = read_file_capped(file, PROMPT_FILE_MAX, ret, &len);
	if (r < 0)
		return cli_error(ctx, r == -EFBIG ? BEXIT_USAGE : BEXIT_ENV,
				 "cannot read the prompt from '%s': %s", file,
				 r == -EFBIG ? "larger than 64 MiB" : file_strerror(r));
	if (memchr(*ret, '\0', len)) {
		free(*ret);
		*ret = NULL;
		return cli_error(ctx, BEXIT_USAGE, "the prompt in '%s' holds a NUL byte", file);
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct cli_ctx *ctx, struct spawn_opts *o)
{
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:C:h", spawn_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return -1;
		case 'm':
			o->model = optarg;
			break;
		case 'C':
			o->dir = optarg;
			break;
		case OPT_TIMEOUT:
			if (cli_parse_seconds(optarg, TIMEOUT_MAX_S, &o->timeout_s, NULL) < 0)
				return cli_usage_error(
					ctx,
					"--timeout: '%s' is not a number of seconds (> 0, at most 7 days)",
					optarg);
			break;
		case OPT_RESUME:
			o->resume = optarg;
			break;
		case OPT_SESSION_ID:
			o->session_id = optarg;
			break;
		case OPT_ATTACH:
			strvec_push(&o->attach, optarg);
			break;
		case OPT_SET:
			if (!strchr(optarg, '='))
				return cli_usage_error(ctx, "--set: '%s' is not KEY=VALUE", optarg);
			strvec_push(&o->sets, optarg);
			break;
		case OPT_PROMPT_FILE:
			o->prompt_file = optarg;
			break;
		case OPT_EXPECT_CHANGES:
			o->expect_changes = true;
			break;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case OPT_SANDBOX:
			o->sandbox = sandbox_kind_from_string(optarg);
			if (o->sandbox <= SANDBOX_KIND_NONE)
				return cli_usage_error(
					ctx,
					"--sandbox: '%s' is not a tier a run can confine an agent in (expected: landlock, bwrap, container)",
					optarg);
			break;
		case OPT_NETWORK:
			o->network = net_mode_from_string(optarg);
			if (o->network < 0)
				return cli_usage_error(
					ctx,
					"--network: '%s' is not a network mode (expected: full, llm, none)",
					optarg);
			break;
		case OPT_JSON:
			ctx->json = true;
			break;
		case ':':
			return cli_missing_value(ctx, argv);
		case '?':
		default:
			return cli_option_error(ctx, argv, spawn_options, "mC");
		}
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing the adapter name");
	o->adapter = argv[optind++];
	if (optind < argc)
		o->prompt_arg = argv[optind++];
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s' (quote the prompt)",
				       argv[optind]);
	if (o->prompt_arg && o->prompt_file)
		return cli_usage_error(
			ctx, "give the prompt as an argument or with --prompt-file, not both");
	if (!o->prompt_arg && !o->prompt_file)
		return cli_usage_error(ctx, "missing the prompt");
	if (o->network >= 0 && o->sandbox == SANDBOX_KIND_NONE)
		return cli_usage_error(ctx, "--network needs --dry-run --sandbox TIER");
	if (o->sandbox != SANDBOX_KIND_NONE && !o->dry_run)
		return cli_usage_error(
			ctx,
			"--sandbox needs --dry-run (spawn runs the agent unconfined; a run's sandbox: confines it)");
	return 0;
}

/* --dry-run --sandbox: the policy a run's tier would give this agent, with
 * req's workdir as its tree and its base_url as the endpoint (orch/confine.h). */
static int sandbox_report(struct cli_ctx *ctx, const struct spawn_opts *o, const struct profile *p,
			  const struct invocation_plan *plan, const struct invocation_request *req,
			  json_t **ret)
{
	const char *cwd = req->workdir, *session_dir = req->session_dir;
	const char *endpoint =
		(req->sampling.set & (1u << SAMPLING_BASE_URL)) ? req->sampling.base_url : NULL;
	struct confine_policy pol = CONFINE_POLICY_INIT;
	char key[PATH_MAX], *home, *tmp;
	struct confine_input in = {
		.kind = o->sandbox,
		.repo = cwd,
		.user_home = cli_getenv(ctx, "HOME"),
		.tree = cwd,
		.session_dir = session_dir,
		.binary = plan->binary_found ? plan->argv.v[0] : NULL,
		.path_env = cli_getenv(ctx, "PATH"),
		.decl = &p->runtime.sandbox,
		.network = confine_net_default(o->network, o->sandbox, endpoint),
		.endpoint = endpoint,
		.login = &p->runtime.login,
	};
	struct diag d;
	char self[PATH_MAX], *sock = NULL;
	ssize_t n;
	int r;

	diag_clear(&d);
	if (audit_setup_key_path(ctx, NULL, key, sizeof(key), NULL) == 0)
		in.audit_key = key;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		in.self_exe = self;
	}
	home = plan->state_dir ? xstrdup(plan->state_dir) : agentrun_path(session_dir, "home");
	tmp = agentrun_path(session_dir, "tmp");
	in.home = home;
	in.tmp = tmp;
	if (in.network == NET_MODE_LLM)
		in.net_socket = sock = agentrun_path(session_dir, CONFINE_NET_SOCKET);
	r = confine_policy_build(&in, &pol, &d);
	free(home);
	free(tmp);
	free(sock);
	if (r < 0)
		return cli_error(ctx, BEXIT_INVALID, "%s", d.msg);
	*ret = confine_policy_json(&pol);
	confine_policy_release(&pol);
	return 0;
}

static void sandbox_print(FILE *out, const json_t *sb)
{
	static const char *const keys[] = {"read", "read_except", "write", "login", NULL};
	const json_t *net;
	size_t i, j;

	(void)fprintf(out, "sandbox: %s\n", json_string_value(json_object_get(sb, "tier")));
	for (i = 0; keys[i]; i++) {
		const json_t *a = json_object_get(sb, keys[i]);

		(void)fprintf(out, "  %s:%s\n", keys[i], json_array_size(a) ? "" : " (none)");
		for (j = 0; j < json_array_size(a); j++)
			(void)fprintf(out, "    %s\n", json_string_value(json_array_get(a, j)));
	}
	net = json_object_get(sb, "network");
	(void)fprintf(out, "  network: %s\n", json_string_value(json_object_get(net, "mode")));
	if (json_object_get(net, "proxy")) {
		const json_t *a = json_object_get(net, "allow");

		(void)fprintf(out, "    proxy: %s\n",
			      json_string_value(json_object_get(net, "proxy")));
		for (j = 0; j < json_array_size(a); j++)
			(void)fprintf(out, "    allow: %s\n",
				      json_string_value(json_array_get(a, j)));
		a = json_object_get(net, "tunnel");
		for (j = 0; j < json_array_size(a); j++)
			(void)fprintf(out, "    tunnel: %s\n",
				      json_string_value(json_array_get(a, j)));
	}
}

/* --set KEY=VALUE, each into the sampling request. */
static int apply_sets(struct cli_ctx *ctx, const struct spawn_opts *o,
		      struct invocation_sampling *sampling)
{
	struct diag d;
	size_t i;
	int r;

	diag_clear(&d);
	for (i = 0; i < o->sets.nr; i++) {
		char *key = xstrdup(o->sets.v[i]), *eq = strchr(key, '=');

		*eq = '\0';
		r = invocation_sampling_set(sampling, key, o->sets.v[i] + (eq - key) + 1, &d);
		free(key);
		if (r < 0)
			return cli_usage_error(ctx, "--set: %s", d.msg);
	}
	return 0;
}

/* The endpoints: entry for adapter of bernstein.yaml, of the repository
 * spawn takes its catalogue from (docs/configuration.md, "Endpoints"): its
 * base_url and api_key_env where --set gives none, its model without -m
 * (each slot on its own, as a task's sampling: over an endpoint's). An
 * invalid bernstein.yaml is refused as run refuses it (printed, exit 3);
 * *cfg keeps what o->model may point into. */
static int apply_endpoint(struct cli_ctx *ctx, struct spawn_opts *o, const char *adapter,
			  struct invocation_sampling *s, struct orch_config **cfg)
{
	static const struct {
		const char *key;
		enum sampling_key slot;
	} slots[] = {{"base_url", SAMPLING_BASE_URL}, {"api_key_env", SAMPLING_API_KEY_ENV}};
	struct catalog_paths paths;
	const struct orch_endpoint *ep;
	struct diag d;
	size_t i;
	int code = 0;

	catalog_paths_find(ctx, &paths);
	if (paths.repo)
		code = repo_config_load(ctx, paths.repo, cfg);
	catalog_paths_release(&paths);
	if (code || !*cfg)
		return code;
	ep = orch_endpoints_find(&(*cfg)->endpoints, adapter);
	if (!ep)
		return 0;
	for (i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		const char *v = slots[i].slot == SAMPLING_BASE_URL ? ep->base_url : ep->api_key_env;

		diag_clear(&d);
		if (v && !(s->set & (1u << slots[i].slot)) &&
		    invocation_sampling_set(s, slots[i].key, v, &d) < 0)
			return cli_error(ctx, BEXIT_INVALID, "endpoints.%s.%s: %s", adapter,
					 slots[i].key, d.msg);
	}
	if (ep->model && !o->model)
		o->model = ep->model;
	return 0;
}

/* --dir, then the directory the agent works in (cwd, PATH_MAX bytes). */
static int enter_dir(struct cli_ctx *ctx, const struct spawn_opts *o, char *cwd)
{
	if (o->dir && chdir(o->dir) < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot change to '%s': %s", o->dir,
				 strerror(errno));
	if (!getcwd(cwd, PATH_MAX))
		return cli_error(ctx, BEXIT_ENV, "cannot get the current directory: %s",
				 strerror(errno));
	return 0;
}

/* The prompt (argument or file) and the attachments, made absolute. */
static int read_inputs(struct cli_ctx *ctx, const struct spawn_opts *o, char **prompt,
		       struct strvec *attach)
{
	size_t i;
	int code;

	if (o->prompt_file) {
		code = read_prompt(ctx, o->prompt_file, prompt);
		if (code)
			return code;
	} else {
		*prompt = xstrdup(o->prompt_arg);
	}
	for (i = 0; i < o->attach.nr; i++) {
		char buf[PATH_MAX];

		if (!realpath(o->attach.v[i], buf))
			return cli_error(ctx, BEXIT_ENV, "cannot read attachment '%s': %s",
					 o->attach.v[i], strerror(errno));
		strvec_push(attach, buf);
	}
	return 0;
}

/* The adapter's entry, which must have a capability profile. */
static int find_adapter(struct cli_ctx *ctx, const struct catalog *cat, const char *name,
			const struct registry_entry **ret)
{
	const struct registry_entry *e = catalog_find(cat, name);

	if (!e)
		return cli_usage_error(ctx, "unknown adapter '%s'", name);
	if (!e->profile)
		return cli_error(
			ctx, BEXIT_USAGE,
			"adapter '%s' has no capability profile (a registry.yaml entry); bernstein spawn runs profiled adapters",
			name);
	*ret = e;
	return 0;
}

/* The run and session names (fixed ones for a dry run) and the session's
 * directory under cwd (caller frees). */
static char *name_session(const struct registry_entry *e, bool dry_run, const char *cwd,
			  char run[64], char session[CATALOG_MAX_NAME + 16])
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	char hex[16];

	if (dry_run) {
		(void)snprintf(run, 64, "%s", DRY_RUN_RUN);
		(void)snprintf(session, CATALOG_MAX_NAME + 16, "%s", e->name);
	} else {
		int64_t ns = clock_system()->now_ns(clock_system());

		randid_run(run, 64, ns);
		randid_hex(hex, 8, ns);
		(void)snprintf(session, CATALOG_MAX_NAME + 16, "%s-%s", e->name, hex);
	}
	(void)sbuf_addf(&sb, "%s/%s/%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, RUNS_DIR, run,
			session);
	return sbuf_detach(&sb, NULL);
}

/* --dry-run: the plan (and the sandbox it would get) printed, nothing run. */
static int dry_run_report(struct cli_ctx *ctx, const struct spawn_opts *o,
			  const struct registry_entry *e, const struct invocation_plan *plan,
			  const struct invocation_request *req, const char *run,
			  const char *session)
{
	json_t *sb = NULL;
	int code;

	if (o->sandbox != SANDBOX_KIND_NONE) {
		code = sandbox_report(ctx, o, e->profile, plan, req, &sb);
		if (code)
			return code;
	}
	if (ctx->json) {
		json_t *pj = agentrun_plan_json(e->profile, plan, run, session);

		if (sb)
			json_obj_set(pj, "sandbox", sb);
		return cli_print_json(ctx, pj);
	}
	plan_print(ctx->out, e->profile, plan);
	if (sb)
		sandbox_print(ctx->out, sb);
	json_decref(sb);
	return 0;
}

int cmd_spawn(int argc, char **argv, struct cli_ctx *ctx)
{
	struct spawn_opts o = {.attach = STRVEC_INIT, .sets = STRVEC_INIT, .network = -1};
	struct invocation_request req = {0};
	struct invocation_plan plan;
	struct catalog *cat = NULL;
	struct orch_config *cfg = NULL;
	const struct registry_entry *e = NULL;
	struct strvec attach = STRVEC_INIT;
	char cwd[PATH_MAX], run[64], session[CATALOG_MAX_NAME + 16];
	char *prompt = NULL, *session_dir = NULL, *state = NULL;
	struct diag d;
	long arg_max;
	int r, code;

	invocation_plan_init(&plan);
	diag_clear(&d);
	r = parse_args(argc, argv, ctx, &o);
	if (r < 0) {
		code = cli_help(ctx);
		goto out;
	}
	if (r > 0) {
		code = r;
		goto out;
	}
	if ((code = apply_sets(ctx, &o, &req.sampling)) || (code = enter_dir(ctx, &o, cwd)) ||
	    (code = read_inputs(ctx, &o, &prompt, &attach)) ||
	    (code = catalog_paths_load(ctx, &cat)) ||
	    (code = find_adapter(ctx, cat, o.adapter, &e)))
		goto out;
	/* bernstein.yaml's endpoints: entry of the adapter, as a run gives it */
	code = e ? apply_endpoint(ctx, &o, e->name, &req.sampling, &cfg) : BEXIT_USAGE;
	if (code)
		goto out;

	session_dir = name_session(e, o.dry_run, cwd, run, session);
	if (o.resume && (e->profile->runtime.home == AGENT_HOME_ISOLATED ||
			 e->profile->shape == PROFILE_SHAPE_MODULE)) {
		state = agentrun_find_state_dir(cwd, e->name, o.resume);
	}

	req.profile = e->profile;
	req.catalog = cat;
	req.prompt = prompt;
	req.model = o.model;
	req.resume_id = o.resume;
	req.session_id = o.session_id;
	req.dangerous = true;
	req.attachments = attach.v;
	req.n_attachments = attach.nr;
	req.workdir = cwd;
	req.session_dir = session_dir;
	req.state_dir = state;
	req.host_env = (const char *const *)ctx->envp;
	req.timeout_s = o.timeout_s > 0 ? (uint64_t)ceil(o.timeout_s) : 0;
	arg_max = sysconf(_SC_ARG_MAX);
	req.arg_total_max = arg_max > 0 ? (size_t)arg_max : 0;

	r = invocation_build(&req, &plan, &d);
	if (r < 0) {
		code = cli_error(ctx, exit_for_errno(r), "%s", d.msg);
		goto out;
	}
	if (plan.resume_id && plan.state_dir && !plan.state_reused)
		strvec_pushf(
			&plan.warnings,
			"no earlier session '%s' of %s under %s: the agent gets a fresh state directory and may not find the session",
			o.resume, e->name, RUNS_DIR);
	if (o.dry_run) {
		code = dry_run_report(ctx, &o, e, &plan, &req, run, session);
		goto out;
	}
	cli_contain_sweep(ctx);
	code = run_plan(ctx, &o, e->profile, &plan, run, session);
out:
	invocation_plan_release(&plan);
	catalog_free(cat);
	orch_config_free(cfg);
	strvec_clear(&o.attach);
	strvec_clear(&o.sets);
	strvec_clear(&attach);
	free(prompt);
	free(session_dir);
	free(state);
	return code;
}
