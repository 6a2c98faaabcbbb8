/* bernstein shim [options] -- PROGRAM [ARGS...]: the chainloader the
 * supervisor puts in front of every agent (proc/shim.h). It is usable on its
 * own. The mechanism is in src/proc/shim.c; this file parses the options,
 * prints the one-line messages and picks the exit codes:
 *   127  PROGRAM not found          126  PROGRAM cannot be executed
 *   125  the shim's own set-up failed (rlimits, Landlock)
 * On success nothing of the shim remains: PROGRAM runs in its place. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli/commands.h"
#include "proc/netproxy.h"
#include "proc/probe.h"
#include "proc/shim.h"
#include "util/xalloc.h"

enum {
	OPT_RLIMIT = 256, /* + enum shim_rlimit */
	OPT_LANDLOCK_RW = OPT_RLIMIT + _SHIM_RLIMIT_MAX,
	OPT_LANDLOCK_RO,
	OPT_LANDLOCK_BEST_EFFORT,
	OPT_STATUS_FD,
	OPT_PARENT_PID,
	OPT_NET_SOCKET,
	OPT_NET_PROXY_PORT,
	OPT_NET_TUNNEL,
	OPT_INIT,
	OPT_GRACE_MS,
	OPT_WAIT_STATUS_FD,
};

static const struct option shim_options[] = {
	{"rlimit-as", required_argument, NULL, OPT_RLIMIT + SHIM_RLIMIT_AS},
	{"rlimit-nofile", required_argument, NULL, OPT_RLIMIT + SHIM_RLIMIT_NOFILE},
	{"rlimit-cpu", required_argument, NULL, OPT_RLIMIT + SHIM_RLIMIT_CPU},
	{"rlimit-core", required_argument, NULL, OPT_RLIMIT + SHIM_RLIMIT_CORE},
	{"rlimit-nproc", required_argument, NULL, OPT_RLIMIT + SHIM_RLIMIT_NPROC},
	{"rlimit-fsize", required_argument, NULL, OPT_RLIMIT + SHIM_RLIMIT_FSIZE},
	{"landlock-rw", required_argument, NULL, OPT_LANDLOCK_RW},
	{"landlock-ro", required_argument, NULL, OPT_LANDLOCK_RO},
	{"landlock-best-effort", no_argument, NULL, OPT_LANDLOCK_BEST_EFFORT},
	{"status-fd", required_argument, NULL, OPT_STATUS_FD},
	{"parent-pid", required_argument, NULL, OPT_PARENT_PID},
	{"net-socket", required_argument, NULL, OPT_NET_SOCKET},
	{"net-proxy-port", required_argument, NULL, OPT_NET_PROXY_PORT},
	{"net-tunnel", required_argument, NULL, OPT_NET_TUNNEL},
	{"init", no_argument, NULL, OPT_INIT},
	{"grace-ms", required_argument, NULL, OPT_GRACE_MS},
	{"wait-status-fd", required_argument, NULL, OPT_WAIT_STATUS_FD},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static int shim_msg(struct cli_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int shim_msg(struct cli_ctx *ctx, int code, const char *fmt, ...)
{
	va_list ap;

	(void)fprintf(ctx->err, "%s shim: ", ctx->progname);
	va_start(ap, fmt);
	(void)vfprintf(ctx->err, fmt, ap);
	va_end(ap);
	(void)fputc('\n', ctx->err);
	return code;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (strcmp(s, "unlimited") == 0 || strcmp(s, "infinity") == 0) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Resolve a bare name on the PATH of the environment the program will get. */
static int resolve(struct cli_ctx *ctx, const char *name, char **ret)
{
	if (strchr(name, '/')) {
		*ret = xstrdup(name);
		return 0;
	}
	return path_search(name, cli_getenv(ctx, "PATH"), ret);
}

#define NET_TUNNELS_MAX 16

/* --net-socket, --net-proxy-port, --net-tunnel into net (whose tunnels
 * array holds NET_TUNNELS_MAX): 0, or the usage error's exit code. */
static int net_opt(struct cli_ctx *ctx, int c, const char *arg, struct netbridge_opts *net)
{
	struct netproxy_addr *t = (struct netproxy_addr *)(uintptr_t)net->tunnels;
	uint64_t v;

	if (c == OPT_NET_SOCKET) {
		net->socket = arg;
	} else if (c == OPT_NET_PROXY_PORT) {
		if (parse_u64(arg, &v) < 0 || v == 0 || v > 65535)
			return cli_usage_error(ctx, "--net-proxy-port: '%s' is not a port", arg);
		net->proxy_port = (unsigned)v;
	} else {
		if (net->n_tunnels >= NET_TUNNELS_MAX ||
		    netproxy_addr_parse(arg, strlen(arg), &t[net->n_tunnels]) < 0 ||
		    !netproxy_is_loopback(&t[net->n_tunnels]))
			return cli_usage_error(
				ctx, "--net-tunnel: '%s' is not a loopback HOST:PORT (at most 16)",
				arg);
		net->n_tunnels++;
	}
	return 0;
}

/* The network bridge, in the sandbox's network namespace, before Landlock:
 * it dies with this process (which becomes the program). 0, or the exit
 * code after the message. */
static int net_start(struct cli_ctx *ctx, const struct shim_opts *o,
		     const struct netbridge_opts *net)
{
	struct diag w, d;
	int r;

	if (!net->socket && !net->proxy_port && !net->n_tunnels)
		return 0;
	if (!net->socket || !(net->proxy_port || net->n_tunnels))
		return cli_usage_error(
			ctx,
			"--net-socket goes with --net-proxy-port or --net-tunnel, and they with it");
	diag_clear(&w);
	diag_clear(&d);
	r = netbridge_start(net, &w, &d);
	if (r < 0) {
		shim_report_failure(o, SHIM_STAGE_CONTAIN, -r);
		return shim_msg(ctx, SHIM_EXIT_SETUP, "%s", d.msg);
	}
	if (w.msg[0])
		(void)shim_msg(ctx, 0, "warning: %s", w.msg);
	return 0;
}

/* --init's own options */
struct init_opts {
	bool on;
	uint64_t grace_ms; /* what the program left gets this long after its exit */
	int wait_fd;	   /* its wait status goes there, -1 none */
};

/* The options into o, net and init: -1, or the exit code to return (help,
 * a usage error). */
static int shim_parse(int argc, char **argv, struct cli_ctx *ctx, struct shim_opts *o,
		      struct netbridge_opts *net, struct init_opts *init)
{
	uint64_t v;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", shim_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case OPT_LANDLOCK_RW:
			strvec_push(&o->landlock_rw, optarg);
			break;
		case OPT_LANDLOCK_RO:
			strvec_push(&o->landlock_ro, optarg);
			break;
		case OPT_LANDLOCK_BEST_EFFORT:
			o->landlock_best_effort = true;
			break;
		case OPT_INIT:
			init->on = true;
			break;
		case OPT_GRACE_MS:
			if (parse_u64(optarg, &v) < 0 || v > 86400000) {
				return cli_usage_error(
					ctx, "--grace-ms: '%s' is not a number of ms (<= 86400000)",
					optarg);
			}
			init->grace_ms = v;
			break;
		case OPT_WAIT_STATUS_FD:
			if (parse_u64(optarg, &v) < 0 || v > INT32_MAX ||
			    fcntl((int)v, F_GETFD) < 0) {
				return cli_usage_error(
					ctx, "--wait-status-fd: '%s' is not an open fd", optarg);
			}
			init->wait_fd = (int)v;
			break;
		case OPT_STATUS_FD:
			if (parse_u64(optarg, &v) < 0 || v > INT32_MAX ||
			    fcntl((int)v, F_GETFD) < 0) {
				return cli_usage_error(ctx, "--status-fd: '%s' is not an open fd",
						       optarg);
			}
			o->status_fd = (int)v;
			break;
		case OPT_PARENT_PID:
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > INT32_MAX) {
				return cli_usage_error(ctx, "--parent-pid: '%s' is not a pid",
						       optarg);
			}
			o->parent_pid = (pid_t)v;
			break;
		case '?':
			if (optopt && optopt < 256)
				return cli_usage_error(ctx, "unknown option '-%c'", optopt);
			if (optopt)
				return cli_usage_error(ctx, "option '%s' requires a value",
						       argv[optind - 1]);
			return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
		default:
			if (c >= OPT_NET_SOCKET && c <= OPT_NET_TUNNEL) {
				r = net_opt(ctx, c, optarg, net);
				if (r) {
					return r;
				}
				break;
			}
			if (c >= OPT_RLIMIT && c < OPT_RLIMIT + _SHIM_RLIMIT_MAX) {
				enum shim_rlimit rl = (enum shim_rlimit)(c - OPT_RLIMIT);

				if (parse_u64(optarg, &v) < 0) {
					return cli_usage_error(ctx,
							       "--rlimit-%s: '%s' is not a number",
							       shim_rlimit_name(rl), optarg);
				}
				shim_opts_set_rlimit(o, rl, v);
				break;
			}
			return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
		}
	}
	return -1;
}

int cmd_shim(int argc, char **argv, struct cli_ctx *ctx)
{
	struct shim_opts o = SHIM_OPTS_INIT;
	struct shim_plan plan = SHIM_PLAN_INIT;
	struct netproxy_addr tunnels[NET_TUNNELS_MAX];
	struct netbridge_opts net = {.tunnels = tunnels};
	char msg[256];
	enum shim_stage stage = SHIM_STAGE_NONE;
	struct diag d = {0};
	char *path = NULL;
	struct init_opts init = {.wait_fd = -1};
	bool ctty = false;
	char tty[PATH_MAX];
	int r;

	r = shim_parse(argc, argv, ctx, &o, &net, &init);
	if (r >= 0) {
		shim_opts_release(&o);
		return r;
	}
	if (optind >= argc) {
		shim_opts_release(&o);
		return cli_usage_error(ctx, "missing the program to run");
	}
	if (!init.on && (init.grace_ms || init.wait_fd >= 0)) {
		shim_opts_release(&o);
		return cli_usage_error(ctx, "--grace-ms and --wait-status-fd go with --init");
	}

	r = resolve(ctx, argv[optind], &path);
	if (r < 0) {
		shim_report_failure(&o, SHIM_STAGE_EXEC, -r);
		r = shim_msg(ctx, shim_exit_code(SHIM_STAGE_EXEC, -r), "cannot execute '%s': %s",
			     argv[optind], strerror(-r));
		goto out;
	}

	/* the container's init lets go of its terminal before it starts
	 * anything (the network bridge): TIOCNOTTY signals its process group */
	if (init.on && shim_init_release_tty(tty, sizeof(tty)))
		ctty = true;
	r = net_start(ctx, &o, &net);
	if (r)
		goto out;
	r = shim_prepare(&o, o.parent_pid > 0 ? o.parent_pid : getppid(), &plan, &d);
	if (r < 0) {
		shim_report_failure(&o, SHIM_STAGE_LANDLOCK, -r);
		r = shim_msg(ctx, SHIM_EXIT_SETUP, "%s", d.msg);
		goto out;
	}
	r = shim_apply(&plan, &stage);
	if (r < 0) {
		if (stage == SHIM_STAGE_PARENT && r == -ESRCH) {
			/* What the parent-death signal would have done. */
			(void)raise(SIGKILL);
		}
		shim_report_failure(&o, stage, -r);
		r = shim_msg(ctx, SHIM_EXIT_SETUP, "%s",
			     shim_failure_message(&plan, stage, -r, msg, sizeof(msg)));
		goto out;
	}
	r = shim_fds_from_3(false);
	if (r < 0) {
		shim_report_failure(&o, SHIM_STAGE_FDS, -r);
		r = shim_msg(ctx, SHIM_EXIT_SETUP, "cannot mark inherited fds close-on-exec: %s",
			     strerror(-r));
		goto out;
	}
	if (plan.landlock_skipped)
		(void)shim_msg(
			ctx, 0,
			"warning: landlock is not supported by this kernel, running unconfined");

	if (init.on) {
		/* a PID namespace's init: the program's exit status is ours */
		int code = 0;

		r = shim_init_run(path, argv + optind, ctx->envp, ctty ? tty : NULL, init.grace_ms,
				  init.wait_fd, &code);
		if (r < 0)
			shim_report_failure(&o, SHIM_STAGE_EXEC, -r);
		r = r < 0 ? shim_msg(ctx, shim_exit_code(SHIM_STAGE_EXEC, -r),
				     "cannot execute '%s': %s", path, strerror(-r))
			  : code;
	} else {
		r = shim_exec(&o, path, argv + optind, ctx->envp);
		r = shim_msg(ctx, shim_exit_code(SHIM_STAGE_EXEC, -r), "cannot execute '%s': %s",
			     path, strerror(-r));
	}
	if (plan.landlock_abi > 0) {
		/* Confined, the process can no longer read /proc: nothing at
		 * exit (a leak checker, say) may need it. Nothing is left to
		 * clean up but memory. */
		(void)fflush(ctx->err);
		_exit(r);
	}
out:
	free(path);
	shim_plan_release(&plan);
	shim_opts_release(&o);
	return r;
}
