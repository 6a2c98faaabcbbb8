/* bernstein netproxy --socket PATH [--allow HOST:PORT]... [--log FILE] --
 * PROGRAM [ARG...]: the proxy of a task in network mode llm
 * (proc/netproxy.h, docs/security.md "Network"). A run puts it in front of
 * the sandbox's command (bwrap, or the OCI runtime): it listens on PATH
 * (a socket bound into the sandbox), starts PROGRAM, serves the proxy until
 * PROGRAM exits, and exits as PROGRAM did. It ignores SIGTERM, SIGINT and
 * SIGHUP (the supervisor's SIGTERM to the group is for the agent, which
 * needs its network during its grace); SIGKILL or the death of its parent
 * ends it, and the sandbox dies with it (bwrap --die-with-parent). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/exit.h"
#include "proc/netproxy.h"
#include "proc/shim.h"
#include "proc/usock.h"
#include "util/fsutil.h"
#include "util/xalloc.h"

const char netproxy_usage[] =
	"--socket PATH [--allow HOST:PORT]... [--log FILE] -- PROGRAM [ARG...]";
const char netproxy_help[] =
	"Runs PROGRAM (a sandbox's command) and, until it exits, an HTTP proxy on the\n"
	"Unix socket PATH that allows only the given HOST:PORT pairs, as the client\n"
	"names them (CONNECT, and absolute-URI HTTP requests); every other request\n"
	"is answered 403 and its host written to FILE, one JSON line each. Exits as\n"
	"PROGRAM did. bernstein runs it for a task in network mode llm; see\n"
	"docs/security.md.\n"
	"\n"
	"options:\n"
	"  --socket PATH      where to listen (replaces a stale socket)\n"
	"  --allow HOST:PORT  an allowed destination (repeatable; [V6]:PORT)\n"
	"  --log FILE         append one line per refused request\n";

enum { OPT_SOCKET = 256, OPT_ALLOW, OPT_LOG };

static const struct option netproxy_options[] = {
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"allow", required_argument, NULL, OPT_ALLOW},
	{"log", required_argument, NULL, OPT_LOG},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

/* Start argv (dying with this process), its exit as a pidfd and a pid. */
static int start(char **argv, char **envp, pid_t *ret_pid, int *ret_pidfd)
{
	pid_t parent = getpid(), pid = fork();
	int fd;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* the sandbox's command dies with the proxy (bwrap's own
		 * --die-with-parent aside; the OCI runtime has none) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
			_exit(125);
		shim_reset_signals();
		(void)execve(argv[0], argv, envp);
		_exit(errno == ENOENT ? 127 : 126);
	}
	fd = pidfd_open(pid, 0);
	if (fd < 0) {
		int r = -errno;

		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
		return r;
	}
	*ret_pid = pid;
	*ret_pidfd = fd;
	return 0;
}

int cmd_netproxy(int argc, char **argv, struct cli_ctx *ctx)
{
	struct netproxy_addr *allow = NULL;
	struct netproxy_opts o = {.log_fd = -1};
	const char *socket_path = NULL, *log_path = NULL;
	struct diag d = {0};
	int c, r, lfd = -1, pidfd = -1, st = 0;
	size_t n = 0;
	pid_t pid = -1;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", netproxy_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			free(allow);
			return cli_help(ctx);
		case OPT_SOCKET:
			socket_path = optarg;
			break;
		case OPT_LOG:
			log_path = optarg;
			break;
		case OPT_ALLOW:
			allow = xrealloc(allow, (n + 1) * sizeof(*allow));
			if (netproxy_addr_parse(optarg, strlen(optarg), &allow[n]) < 0) {
				free(allow);
				return cli_usage_error(ctx, "--allow: '%s' is not HOST:PORT",
						       optarg);
			}
			n++;
			break;
		default:
			free(allow);
			if (optopt && optopt < 256)
				return cli_usage_error(ctx, "unknown option '-%c'", optopt);
			return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!socket_path || optind >= argc || argv[optind][0] != '/') {
		free(allow);
		return cli_usage_error(
			ctx, "needs --socket PATH and an absolute PROGRAM after the options");
	}
	o.allow = allow;
	o.n_allow = n;
	(void)signal(SIGTERM, SIG_IGN);
	(void)signal(SIGINT, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	(void)signal(SIGPIPE, SIG_IGN);
	r = usock_listen(socket_path, &lfd, &d);
	if (r >= 0 && log_path) {
		o.log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
				0600);
		if (o.log_fd < 0) {
			r = -errno;
			diag_set(&d, log_path, 0, 0, "cannot open the refusal log: %s",
				 strerror(-r));
		}
	}
	if (r >= 0) {
		r = start(argv + optind, ctx->envp, &pid, &pidfd);
		if (r < 0)
			diag_set(&d, NULL, 0, 0, "cannot start '%s': %s", argv[optind],
				 strerror(-r));
	}
	if (r < 0) {
		(void)fprintf(ctx->err, "%s netproxy: %s\n", ctx->progname, d.msg);
		r = BEXIT_ENV;
		goto out;
	}
	(void)netproxy_serve(lfd, pidfd, &o);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* as the program ended: its exit code, or 128 + its signal (the
	 * supervisor reads a killed sandbox's end from its events) */
	r = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
out:
	if (lfd >= 0)
		(void)unlink(socket_path);
	close_fdp(&lfd);
	close_fdp(&pidfd);
	close_fdp(&o.log_fd);
	free(allow);
	return r;
}
