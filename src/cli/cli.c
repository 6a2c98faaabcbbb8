#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "config.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "proc/contain.h"
#include "util/envscrub.h"
#include "util/lazy.h"
#include "util/log.h"
#include "util/xalloc.h"

static const char global_usage[] =
	"usage: bernstein [-C DIR] [--json] [-v | -q] <command> [<args>]\n"
	"       bernstein [-C DIR] -g GOAL [<run args>]\n"
	"       bernstein --version | --help | help <command>\n";

static const char global_help[] =
	"bernstein drives CLI coding agents (Claude Code, Codex CLI, Gemini CLI, Qwen Code,\n"
	"opencode, pi, ...) headless, from declared capability profiles.\n"
	"\n"
	"global options:\n"
	"  -C DIR       run as if started in DIR\n"
	"  --json       machine-readable output on stdout (stable; see docs/)\n"
	"  -v           more diagnostics on stderr (repeat for more)\n"
	"  -q           only errors on stderr\n"
	"  --version    print the version and exit\n"
	"  -h, --help   this text\n"
	"  -g GOAL      goal mode: 'bernstein run --goal GOAL', the arguments after\n"
	"               it (--yes, --allow CLASS, ...) going to run (docs/goal-mode.md)\n";

static const char help_footer[] =
	"\n'bernstein help <command>' or 'bernstein <command> -h' shows a command's help.\n"
	"Exit codes: 0 ok, 1 failed, 2 usage, 3 invalid profile/config, 4 environment,\n"
	"5 audit broken, 6 refused, 7 budget reached, 70 internal bug, 127 a library\n"
	"cannot be loaded, 130 interrupted (docs/exit-codes.md).\n";

const char *cli_getenv(const struct cli_ctx *ctx, const char *name)
{
	size_t n = strlen(name);
	char **e;

	for (e = ctx->envp; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

char **cli_environ_take(char **envp)
{
	environ = envscrub_take(envp);
	/* Fails only for a bad argument. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return environ;
}

int cli_sibling_path(const char *name, char *buf, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n < 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	if (snprintf(buf, size, "%s/%s", exe, name) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

static void print_json_error(struct cli_ctx *ctx, int code, const char *msg, const struct diag *d)
{
	json_t *o = json_object(), *e = json_object();
	char *s;

	(void)json_object_set_new(e, "message", json_string(msg));
	(void)json_object_set_new(e, "exit_code", json_integer(code));
	if (d && d->file[0]) {
		(void)json_object_set_new(e, "file", json_string(d->file));
		(void)json_object_set_new(e, "line", json_integer(d->line));
		(void)json_object_set_new(e, "column", json_integer(d->col));
	}
	(void)json_object_set_new(o, "error", e);
	s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	if (s)
		(void)fprintf(ctx->err, "%s\n", s);
	free(s);
	json_decref(o);
}

static int cli_verror(struct cli_ctx *ctx, int code, const struct diag *d, const char *fmt,
		      va_list ap) __attribute__((format(printf, 4, 0)));

static int cli_verror(struct cli_ctx *ctx, int code, const struct diag *d, const char *fmt,
		      va_list ap)
{
	char msg[2048];

	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	if (ctx->json)
		print_json_error(ctx, code, msg, d);
	else
		(void)fprintf(ctx->err, "%s: %s\n", ctx->progname, msg);
	return code;
}

int cli_error(struct cli_ctx *ctx, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = cli_verror(ctx, code, NULL, fmt, ap);
	va_end(ap);
	return code;
}

int cli_diag(struct cli_ctx *ctx, int code, const struct diag *d)
{
	char buf[sizeof(d->file) + sizeof(d->msg) + 64];

	if (ctx->json) {
		print_json_error(ctx, code, d->msg, d);
		return code;
	}
	(void)fprintf(ctx->err, "%s: %s\n", ctx->progname, diag_format(d, buf, sizeof(buf)));
	return code;
}

/* The command whose library failed to load: the handler gets no argument. */
static struct cli_ctx *arg_lazy_ctx;

/* The --json error of a failed jansson, written without jansson (the
 * shape print_json_error() gives: sorted keys, compact). */
static void print_json_error_raw(struct cli_ctx *ctx, int code, const char *msg)
{
	const unsigned char *p;

	(void)fprintf(ctx->err, "{\"error\":{\"exit_code\":%d,\"message\":\"", code);
	for (p = (const unsigned char *)msg; *p; p++) {
		if (*p == '"' || *p == '\\')
			(void)fprintf(ctx->err, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			(void)fprintf(ctx->err, "\\u%04x", *p);
		else
			(void)fputc(*p, ctx->err);
	}
	(void)fputs("\"}}\n", ctx->err);
}

static void cli_lazy_fail(const char *what, const char *soname, const char *why)
{
	struct cli_ctx *ctx = arg_lazy_ctx;

	if (ctx && ctx->json && strcmp(what, "jansson") == 0) {
		/* the error object cannot be built with the library that failed */
		char msg[1024];

		(void)snprintf(msg, sizeof(msg), "%s%scannot load %s (%s): %s", ctx->cmd_path,
			       ctx->cmd_path[0] ? ": " : "", what, soname, why);
		print_json_error_raw(ctx, BEXIT_LIBRARY, msg);
		(void)fflush(ctx->err);
		_exit(BEXIT_LIBRARY);
	}
	if (!ctx) {
		(void)fprintf(stderr, "bernstein: cannot load %s (%s): %s\n", what, soname, why);
		_exit(BEXIT_LIBRARY);
	}
	/* stdout is not flushed: what a command had not yet written stays unwritten */
	if (ctx->cmd_path[0])
		(void)cli_error(ctx, BEXIT_LIBRARY, "%s: cannot load %s (%s): %s", ctx->cmd_path,
				what, soname, why);
	else
		(void)cli_error(ctx, BEXIT_LIBRARY, "cannot load %s (%s): %s", what, soname, why);
	(void)fflush(ctx->err);
	_exit(BEXIT_LIBRARY);
}

void cli_lazy_init(struct cli_ctx *ctx)
{
	arg_lazy_ctx = ctx;
	lazy_set_fail_handler(cli_lazy_fail);
}

int cli_load_exit(int r)
{
	return r == -EINVAL || r == -EFBIG ? BEXIT_INVALID : BEXIT_ENV;
}

void cli_warn(struct cli_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (ctx->verbosity < 0)
		return;
	va_start(ap, fmt);
	(void)fprintf(ctx->err, "%s: warning: ", ctx->progname);
	(void)vfprintf(ctx->err, fmt, ap);
	(void)fputc('\n', ctx->err);
	va_end(ap);
}

int cli_usage_error(struct cli_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)fprintf(ctx->err, "%s: ", ctx->progname);
	(void)vfprintf(ctx->err, fmt, ap);
	(void)fputc('\n', ctx->err);
	va_end(ap);
	if (ctx->cmd_path[0])
		(void)fprintf(ctx->err, "see '%s %s -h'\n", ctx->progname, ctx->cmd_path);
	else
		(void)fprintf(ctx->err, "see '%s --help'\n", ctx->progname);
	return BEXIT_USAGE;
}

static void print_group(FILE *f, const struct cmd *tab)
{
	const struct cmd *c;
	int w = 0;

	for (c = tab; c->name; c++)
		if (!(c->flags & CMD_HIDDEN) && (int)strlen(c->name) > w)
			w = (int)strlen(c->name);
	for (c = tab; c->name; c++)
		if (!(c->flags & CMD_HIDDEN))
			(void)fprintf(f, "  %-*s  %s\n", w, c->name, c->summary ? c->summary : "");
}

static int group_help(struct cli_ctx *ctx, const struct cmd *group, FILE *f)
{
	if (!group || !ctx->cmd_path[0]) {
		(void)fputs(global_usage, f);
		(void)fputs("\n", f);
		(void)fputs(global_help, f);
		if (ctx->root) {
			(void)fputs("\ncommands:\n", f);
			print_group(f, ctx->root);
		}
		(void)fputs(help_footer, f);
		return 0;
	}
	(void)fprintf(f, "usage: %s %s <command> [<args>]\n", ctx->progname, ctx->cmd_path);
	if (group->help)
		(void)fprintf(f, "\n%s", group->help);
	(void)fputs("\ncommands:\n", f);
	print_group(f, group->sub);
	return 0;
}

int cli_help(struct cli_ctx *ctx)
{
	const struct cmd *c = ctx->cmd;

	if (!c || c->sub)
		return group_help(ctx, c, ctx->out);
	(void)fprintf(ctx->out, "usage: %s %s%s%s\n", ctx->progname, ctx->cmd_path,
		      c->usage && c->usage[0] ? " " : "", c->usage ? c->usage : "");
	if (c->help)
		(void)fprintf(ctx->out, "\n%s", c->help);
	return 0;
}

static void path_push(struct cli_ctx *ctx, const char *name)
{
	size_t n = strlen(ctx->cmd_path);

	(void)snprintf(ctx->cmd_path + n, sizeof(ctx->cmd_path) - n, "%s%s", n ? " " : "", name);
}

static const struct cmd *cmd_lookup(const struct cmd *tab, const char *name)
{
	const struct cmd *c;

	for (c = tab; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int cli_dispatch(const struct cmd *tab, int argc, char **argv, struct cli_ctx *ctx)
{
	const struct cmd *c;

	if (argc < 1 || strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
		if (argc >= 1) /* explicit help request: the group's help on stdout */
			return group_help(ctx, ctx->cmd, ctx->out);
		(void)fprintf(ctx->err, "%s: missing command\n", ctx->progname);
		if (ctx->cmd_path[0])
			(void)fprintf(ctx->err, "usage: %s %s <command> [<args>]\n", ctx->progname,
				      ctx->cmd_path);
		else
			(void)fputs(global_usage, ctx->err);
		(void)fputs("commands:\n", ctx->err);
		print_group(ctx->err, tab);
		return BEXIT_USAGE;
	}
	c = cmd_lookup(tab, argv[0]);
	if (!c)
		return cli_usage_error(ctx, "unknown command '%s'", argv[0]);
	ctx->cmd = c;
	path_push(ctx, c->name);
	if (c->sub)
		return cli_dispatch(c->sub, argc - 1, argv + 1, ctx);
	if (c->flags & CMD_LOAD_LIBS) {
		struct diag d = {0};

		if (lazy_load_all(&d) < 0)
			return cli_error(ctx, BEXIT_LIBRARY, "%s: %s", ctx->cmd_path, d.msg);
	}
	return c->fn(argc, argv, ctx);
}

/* bernstein help [COMMAND...]: the same text as COMMAND -h. */
int cmd_help(int argc, char **argv, struct cli_ctx *ctx)
{
	const struct cmd *tab = ctx->root, *c = NULL;
	int i;

	ctx->cmd_path[0] = '\0';
	ctx->cmd = NULL;
	for (i = 1; i < argc; i++) {
		if (!tab)
			return cli_usage_error(ctx, "'%s' has no subcommands", ctx->cmd_path);
		c = cmd_lookup(tab, argv[i]);
		if (!c)
			return cli_usage_error(ctx, "unknown command '%s'", argv[i]);
		path_push(ctx, c->name);
		ctx->cmd = c;
		tab = c->sub;
	}
	if (!c) {
		ctx->cmd_path[0] = '\0';
		return group_help(ctx, NULL, ctx->out);
	}
	return cli_help(ctx);
}

int cmd_version(int argc, char **argv, struct cli_ctx *ctx)
{
	int r = cli_json_only_args(argc, argv, ctx, "version");

	if (r >= 0)
		return r;
	if (ctx->json)
		(void)fprintf(ctx->out, "{\"name\": \"bernstein\", \"version\": \"%s\"}\n",
			      BERNSTEIN_VERSION);
	else
		(void)fprintf(ctx->out, "bernstein %s\n", BERNSTEIN_VERSION);
	return 0;
}

static void log_to_stderr(enum log_level level, const char *file, int line, const char *msg,
			  void *userdata)
{
	(void)fprintf((FILE *)userdata, "bernstein: %s: %s (%s:%d)\n", log_level_name(level), msg,
		      file, line);
}

int cli_contain_env(struct cli_ctx *ctx)
{
	const char *v = cli_getenv(ctx, "BERNSTEIN_CONTAIN");
	enum contain_tier t;

	if (!v || !*v)
		return 0;
	t = contain_tier_from_string(v);
	if (t < 0)
		return cli_error(
			ctx, BEXIT_ENV,
			"BERNSTEIN_CONTAIN: unknown tier '%s' (expected auto, pidns, cgroup or pgroup)",
			v);
	contain_set_max_tier(t);
	return 0;
}

void cli_contain_sweep(struct cli_ctx *ctx)
{
	int n = contain_sweep_stale(contain_host());

	if (n > 0)
		cli_warn(ctx, "killed what %d dead bernstein process%s left running in %s cgroups",
			 n, n == 1 ? "" : "es", n == 1 ? "its" : "their");
}

int cli_main(int argc, char **argv, char **envp, const struct cmd *root)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{"goal", required_argument, NULL, 'g'},
		{NULL, 0, NULL, 0},
	};
	const char *goal = NULL;
	struct cli_ctx ctx = {
		.progname = "bernstein",
		.out = stdout,
		.err = stderr,
		.envp = envp,
		.root = root,
	};
	int c;

	cli_lazy_init(&ctx);
	opterr = 0;
	optind = 0;
	while (!goal && (c = getopt_long(argc, argv, "+C:g:vqh", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			goal = optarg; /* the rest of the line is run's */
			break;
		case 'C':
			if (chdir(optarg) < 0)
				return cli_error(&ctx, BEXIT_ENV, "cannot change to '%s': %s",
						 optarg, strerror(errno));
			ctx.dir = optarg;
			break;
		case 'v':
			ctx.verbosity++;
			break;
		case 'q':
			ctx.verbosity = -1;
			break;
		case 'j':
			ctx.json = true;
			break;
		case 'V': {
			char name[] = "version", *args[] = {name, NULL};

			return cmd_version(1, args, &ctx);
		}
		case 'h':
			return group_help(&ctx, NULL, ctx.out);
		default:
			if (optopt == 'C')
				return cli_usage_error(&ctx, "option '-C' requires a directory");
			if (optopt == 'g')
				return cli_usage_error(&ctx, "option '-g' requires the goal");
			if (optopt)
				return cli_usage_error(&ctx, "unknown option '-%c'", optopt);
			return cli_usage_error(&ctx, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (ctx.verbosity > 0) {
		log_set_sink(log_to_stderr, stderr);
		log_set_level(ctx.verbosity >= 2 ? LOG_TRACE : LOG_DEBUG);
	} else if (ctx.verbosity == 0) {
		log_set_sink(log_to_stderr, stderr);
		log_set_level(LOG_WARN);
	}
	c = cli_contain_env(&ctx);
	if (c)
		return c;
	if (goal) {
		/* -g GOAL [ARGS]: run --goal GOAL [ARGS] */
		char run[] = "run", opt[] = "--goal";
		char **v = xcalloc((size_t)(argc - optind) + 4, sizeof(*v));
		int n = 0, i;

		v[n++] = run;
		v[n++] = opt;
		v[n++] = (char *)(uintptr_t)goal;
		for (i = optind; i < argc; i++)
			v[n++] = argv[i];
		c = cli_dispatch(root, n, v, &ctx);
		free(v);
		return c;
	}
	return cli_dispatch(root, argc - optind, argv + optind, &ctx);
}
