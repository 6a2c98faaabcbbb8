/* bernstein serve: exec the bernstein-serve executable installed beside
 * bernstein (libmicrohttpd stays out of every other command's start-up, as
 * libcurl does with bernstein-runner); and `run --serve`, which starts it
 * beside a run (cli/serve.h). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/serve.h"

int cmd_serve(int argc, char **argv, struct cli_ctx *ctx)
{
	char path[PATH_MAX];
	int i, r;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return cli_help(ctx);
	r = cli_sibling_path(SERVE_EXE, path, sizeof(path));
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot locate '%s': %s", SERVE_EXE, strerror(-r));
	(void)fflush(ctx->out);
	(void)fflush(ctx->err);
	argv[0] = path;
	(void)execv(path, argv);
	return cli_error(ctx, BEXIT_ENV, "cannot run '%s': %s", path, strerror(errno));
}

int serve_start_beside(struct cli_ctx *ctx, const char *listen, pid_t run_pid)
{
	char path[PATH_MAX], pid[32];
	int r, st;
	pid_t child;

	r = cli_sibling_path(SERVE_EXE, path, sizeof(path));
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot locate '%s': %s", SERVE_EXE, strerror(-r));
	(void)snprintf(pid, sizeof(pid), "%ld", (long)run_pid);
	(void)fflush(ctx->out);
	(void)fflush(ctx->err);
	child = fork();
	if (child < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot start '%s': %s", SERVE_EXE,
				 strerror(errno));
	if (child == 0) {
		/* the middle process: a session of its own, then the server's
		 * fork, and gone: the server is nobody's in the run's tree */
		const char *args[] = {
			path,	       "--listen", listen ? listen : SERVE_DEFAULT_LISTEN,
			"--watch-pid", pid,	   NULL};
		sigset_t none;

		(void)setsid();
		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		if (fork() != 0)
			_exit(0);
		(void)execve(path, (char *const *)(uintptr_t)args, ctx->envp);
		(void)fprintf(stderr, "bernstein: cannot run '%s': %s\n", path, strerror(errno));
		_exit(BEXIT_ENV);
	}
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}

const char cmd_serve_summary[] = "serve the HTTP API, live event streams and the dashboard";
const char cmd_serve_usage[] = "[--listen ADDR:PORT] [--idle-timeout S]";
const char cmd_serve_help[] =
	"Serves this repository's runs over HTTP/1.1 (docs/api.md, docs/dashboard.md):\n"
	"a JSON API of runs, tasks and attempts, each task's events as a live\n"
	"Server-Sent Events stream, diffs and gate logs, audit and adapter status,\n"
	"POST cancel/retry/stop/approve/reject/add-task through the live run's\n"
	"control channel (audited as the CLI's), /metrics for Prometheus, and a\n"
	"dashboard at /. A new random token is written to .bernstein/serve.token\n"
	"(0600) and printed once with the URL; every API request needs it as\n"
	"'Authorization: Bearer TOKEN'. It runs until Ctrl-C (or SIGTERM).\n"
	"\n"
	"options:\n"
	"  --listen ADDR:PORT  where to listen (default 127.0.0.1:8052; port 0: any\n"
	"                      free one, printed); an address that is not loopback\n"
	"                      gets a warning: the API has no TLS\n"
	"  --idle-timeout S    close a connection idle (or as slow) for S seconds\n"
	"                      (default 10)\n"
	"\n"
	"Exit: 0 stopped by a signal, 2 usage, 4 cannot listen, not in a git\n"
	"repository or cannot write the token.\n";
