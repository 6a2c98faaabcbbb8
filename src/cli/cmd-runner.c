/* bernstein runner --manifest FILE: the built-in agent runner (src/runner/).
 *
 * Normally spawned by bernstein itself (the openai_agents adapter writes the
 * manifest into the session directory), but usable by hand. This file reads
 * the options and the environment, and maps the outcome to the runner's exit
 * codes (docs/exit-codes.md, docs/runner.md):
 *   0 done   1 runtime error   2 manifest missing/invalid or config_invalid
 *   4 rate limited
 * Everything the runner says goes to stdout as one JSON event per line. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "adapter/credential.h"
#include "cli/commands.h"
#include "proc/reaper.h"
#include "runner/events.h"
#include "runner/llm.h"
#include "runner/loop.h"
#include "runner/manifest.h"
#include "util/strvec.h"
#include "util/xalloc.h"

enum runner_exit {
	RUNNER_EXIT_OK = 0,
	RUNNER_EXIT_RUNTIME = 1,
	RUNNER_EXIT_CONFIG = 2, /* manifest missing or invalid, config_invalid */
	RUNNER_EXIT_RATE_LIMIT = 4,
};

enum {
	OPT_MANIFEST = 256,
	OPT_RESUME,
	OPT_SESSION_DIR,
	OPT_PROXY,
	OPT_MAX_RETRIES,
};

static const struct option runner_options[] = {
	{"manifest", required_argument, NULL, OPT_MANIFEST},
	{"resume", required_argument, NULL, OPT_RESUME},
	{"session-dir", required_argument, NULL, OPT_SESSION_DIR},
	{"proxy", required_argument, NULL, OPT_PROXY},
	{"max-retries", required_argument, NULL, OPT_MAX_RETRIES},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

/* What commands and MCP servers inherit (never the API key's variable). */
static const char *const child_env_names[] = {
	"PATH",	    "HOME", "USER",   "LOGNAME", "LANG", "LC_ALL",
	"LC_CTYPE", "TZ",   "TMPDIR", "TERM",	 NULL,
};

/* SIGTERM (bernstein's timeout, an operator), SIGINT, SIGHUP: before the
 * runner dies, everything it started dies (a command's descendants that left
 * its process group came back to the runner, a child subreaper, when run_command
 * is offered), then the signal does what it would have done. SIGKILL cannot be
 * caught: docs/runner.md says what survives it. */
static void on_fatal_signal(int sig)
{
	(void)reaper_kill_children(NULL, 0, 0);
	(void)signal(sig, SIG_DFL);
	(void)raise(sig); /* the mask blocks it until the handler returns: then it kills */
}

static void catch_fatal_signals(void)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	(void)sigfillset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		(void)sigaction(sigs[i], &sa, NULL);
}

static const char *env_lookup(void *userdata, const char *name)
{
	return cli_getenv(userdata, name);
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

int cmd_runner(int argc, char **argv, struct cli_ctx *ctx)
{
	struct runner_manifest *m = NULL;
	struct runner_opts o = {0};
	struct events ev;
	struct strvec child_env = STRVEC_INIT, secrets = STRVEC_INIT;
	struct diag d = {0};
	const char *manifest = NULL, *resume = NULL, *session_dir = NULL, *proxy = NULL, *v;
	char *dir = NULL;
	unsigned long retries = LLM_DEFAULT_MAX_RETRIES;
	enum runner_outcome out;
	size_t i;
	int c, r, code;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", runner_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_MANIFEST:
			manifest = optarg;
			break;
		case OPT_RESUME:
			resume = optarg;
			break;
		case OPT_SESSION_DIR:
			session_dir = optarg;
			break;
		case OPT_PROXY:
			proxy = optarg;
			break;
		case OPT_MAX_RETRIES: {
			char *end;

			errno = 0;
			retries = strtoul(optarg, &end, 10);
			if (errno || *end || optarg[0] < '0' || optarg[0] > '9' || retries > 100)
				return cli_usage_error(
					ctx, "--max-retries: '%s' is not a number from 0 to 100",
					optarg);
			break;
		}
		default:
			if (optopt && optopt < 256)
				return cli_usage_error(ctx, "unknown option '-%c'", optopt);
			if (optopt)
				return cli_usage_error(ctx, "option '%s' requires a value",
						       argv[optind - 1]);
			return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	if (!manifest)
		return cli_usage_error(ctx, "missing --manifest FILE");

	(void)fflush(ctx->out);
	events_init(&ev, fileno(ctx->out));
	r = runner_manifest_load(manifest, &m, &d);
	if (r < 0) {
		char buf[sizeof(d.file) + sizeof(d.msg) + 64], msg[sizeof(buf) + 64];

		if (r == -ENOENT || r == -ENOTDIR) {
			(void)snprintf(msg, sizeof(msg), "manifest not found: %s", manifest);
			(void)events_error(&ev, "manifest_missing", msg);
		} else {
			(void)snprintf(msg, sizeof(msg), "manifest parse failed: %s",
				       diag_format(&d, buf, sizeof(buf)));
			(void)events_error(&ev, "manifest_invalid", msg);
		}
		return RUNNER_EXIT_CONFIG;
	}

	for (i = 0; child_env_names[i]; i++)
		if ((v = cli_getenv(ctx, child_env_names[i])) != NULL)
			strvec_pushf(&child_env, "%s=%s", child_env_names[i], v);
	dir = dir_of(manifest);
	v = cli_getenv(ctx, "BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND");

	o.manifest = m;
	o.events = &ev;
	o.session_dir = session_dir ? session_dir : dir;
	o.resume_session = resume;
	/* Test-only: the Responses API's default endpoint, for the fake server of
	 * tests/helpers/fake-llm.py. A manifest can never change it. */
	o.default_url = cli_getenv(ctx, "BERNSTEIN_TEST_OPENAI_DEFAULT_URL");
	o.proxy = proxy;
	o.env = env_lookup;
	o.env_userdata = ctx;
	o.host_allowed_key_envs = cli_getenv(ctx, "BERNSTEIN_ALLOWED_API_KEY_ENVS");
	/* every secret of this environment, not only the key: whatever way one
	 * comes back (a server, a file, a command), it is not written */
	credential_env_secrets((const char *const *)ctx->envp, o.host_allowed_key_envs, &secrets,
			       NULL);
	o.secrets = secrets.v;
	o.env_allow_run_command = v && strcmp(v, "1") == 0;
	o.path_env = cli_getenv(ctx, "PATH");
	o.child_env = child_env.v;
	o.max_retries = (unsigned)retries;
	o.version = BERNSTEIN_VERSION;

	/* past a file size limit a write fails with EFBIG, a result the tools
	 * and the transcript report, instead of killing the runner */
	(void)signal(SIGXFSZ, SIG_IGN);
	catch_fatal_signals();
	out = runner_run(&o);
	switch (out) {
	case RUNNER_DONE:
		code = RUNNER_EXIT_OK;
		break;
	case RUNNER_CONFIG_INVALID:
		code = RUNNER_EXIT_CONFIG;
		break;
	case RUNNER_RATE_LIMITED:
		code = RUNNER_EXIT_RATE_LIMIT;
		break;
	case RUNNER_FAILED:
	default:
		code = RUNNER_EXIT_RUNTIME;
		break;
	}
	if (ev.error)
		cli_warn(ctx, "cannot write events: %s", strerror(-ev.error));
	runner_manifest_free(m);
	strvec_clear(&child_env);
	strvec_clear(&secrets);
	free(dir);
	return code;
}
