/* bernstein-serve: the HTTP API, the live event streams, /metrics and the
 * dashboard of the runs of one repository (docs/api.md, docs/dashboard.md),
 * normally reached as `bernstein serve` or `bernstein run --serve`.
 *
 * HTTP is libmicrohttpd's (Debian's libmicrohttpd): it parses requests,
 * bounds them (header memory, connection count, idle time) and runs one
 * thread per connection, so an event stream may wait for its file to grow.
 * What the server adds is read-only: state.db through a read-only SQLite
 * connection per request, the attempts' events.jsonl and gate logs, opened
 * only from ids that pass the id rule and only below .bernstein/runs/. The
 * one way it changes anything is the control channel (orch/control.h),
 * exactly as `bernstein cancel` and its siblings speak it, so every request
 * is audited the same way. Whatever needs the CLI's own code (a diff, audit
 * verify, adapters check) is that command run as a child, its JSON
 * answered.
 *
 * This file: the requests (the token, the body cap, the routes) and the
 * start-up; serve-http.c the HTTP plumbing, serve-api.c the GET routes,
 * serve-sse.c the event streams, serve-control.c the POST routes
 * (serve-internal.h). */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>

#include "cli/serve.h"
#include "cli/serve-path.h"
#include "orch/agentrun.h"
#include "orch/run.h"
#include "util/fsutil.h"
#include "util/lazy.h"
#include "util/xalloc.h"
#include "cli/serve-internal.h"
#include "util/banned.h"

struct serve_srv serve_srv;
atomic_bool serve_stopping;

static const char usage_text[] =
	"usage: bernstein serve [--listen ADDR:PORT] [--idle-timeout S] [--watch-pid PID]\n";

/* ---- requests ---- */

struct req {
	struct sbuf body;
	bool too_big;
};

static void req_done(void *cls, struct MHD_Connection *c, void **con_cls,
		     enum MHD_RequestTerminationCode why)
{
	struct req *q = *con_cls;

	(void)cls;
	(void)c;
	(void)why;
	if (q) {
		sbuf_release(&q->body);
		free(q);
		*con_cls = NULL;
	}
}

/* Authorization: Bearer TOKEN, compared as SHA-256 digests in constant
 * time (no length or prefix leaks). */
static bool authorized(struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	uint8_t got[SHA256_LEN];

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	hash_sha256(h, strlen(h), got);
	return hash_equal(got, serve_srv.token_hash, SHA256_LEN);
}

struct route {
	struct MHD_Connection *c;
	bool get, post;
	const char *body;
	size_t blen;
};

static enum MHD_Result not_found(struct MHD_Connection *c)
{
	return serve_answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no such endpoint");
}

/* /api/runs/RUN/tasks/TASK[/WHAT] (n: the segments from TASK on) */
static enum MHD_Result route_task(const struct route *q, const char *run, char **segs, size_t n)
{
	static const char *const ops[] = {"cancel", "retry", "approve", "reject", NULL};
	const char *task = segs[0];
	size_t i;

	if (!serve_id_ok(task))
		return serve_answer_error(q->c, MHD_HTTP_BAD_REQUEST, "usage", "not a task id");
	if (n == 1 && q->get)
		return serve_get_task(q->c, run, task, false);
	if (n != 2)
		return not_found(q->c);
	if (q->get && strcmp(segs[1], "attempts") == 0)
		return serve_get_task(q->c, run, task, true);
	if (q->get && strcmp(segs[1], "events") == 0)
		return serve_get_events(q->c, run, task);
	if (q->get && strcmp(segs[1], "diff") == 0)
		return serve_get_diff(q->c, run, task);
	if (q->get && strcmp(segs[1], "gates") == 0)
		return serve_get_gates(q->c, run, task);
	for (i = 0; q->post && ops[i]; i++)
		if (strcmp(segs[1], ops[i]) == 0)
			return serve_post_control(q->c, run, task, ops[i], q->body, q->blen);
	return not_found(q->c);
}

/* /api/runs/RUN[/...] (n: the segments from RUN on) */
static enum MHD_Result route_run(const struct route *q, char **segs, size_t n)
{
	const char *run = segs[0];

	if (!serve_id_ok(run))
		return serve_answer_error(q->c, MHD_HTTP_BAD_REQUEST, "usage", "not a run id");
	if (n == 1)
		return q->get ? serve_get_run(q->c, run, false) : not_found(q->c);
	if (n == 2 && strcmp(segs[1], "stream") == 0 && q->get)
		return serve_get_board(q->c, run);
	if (n == 2 && strcmp(segs[1], "stop") == 0 && q->post)
		return serve_post_control(q->c, run, NULL, "stop", q->body, q->blen);
	if (n == 2 && strcmp(segs[1], "tasks") == 0)
		return q->get ? serve_get_run(q->c, run, true)
			      : serve_post_control(q->c, run, NULL, "add_task", q->body, q->blen);
	if (n >= 3 && strcmp(segs[1], "tasks") == 0)
		return route_task(q, run, segs + 2, n - 2);
	return not_found(q->c);
}

static enum MHD_Result route(struct MHD_Connection *c, const char *method, const char *url,
			     const char *body, size_t blen)
{
	static const char *const audit_args[] = {"audit", "verify", "--json", NULL};
	struct route q = {.c = c, .body = body, .blen = blen};
	char buf[1024], *segs[SERVE_SEGS_MAX];
	size_t n;
	int r;

	q.get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	q.post = strcmp(method, "POST") == 0;
	if (!q.get && !q.post)
		return serve_answer_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "usage",
					  "method not allowed");
	r = serve_path_split(url, buf, sizeof(buf), segs);
	if (r == -ENAMETOOLONG)
		return serve_answer_error(c, MHD_HTTP_URI_TOO_LONG, "usage", "URL too long");
	if (r < 0)
		return not_found(c);
	n = (size_t)r;
	if (n == 1 && strcmp(segs[0], "metrics") == 0 && q.get)
		return serve_get_metrics(c);
	if (n < 2 || strcmp(segs[0], "api") != 0)
		return not_found(c);
	if (n == 2 && strcmp(segs[1], "runs") == 0 && q.get)
		return serve_get_runs(c);
	if (n == 2 && strcmp(segs[1], "audit") == 0 && q.get)
		return serve_answer_child(c, audit_args);
	if (n == 2 && strcmp(segs[1], "adapters") == 0 && q.get)
		return serve_get_adapters(c);
	if (n >= 3 && strcmp(segs[1], "runs") == 0)
		return route_run(&q, segs + 2, n - 2);
	return not_found(c);
}

static enum MHD_Result asset(struct MHD_Connection *c, const char *url)
{
	const struct serve_asset *a;

	for (a = serve_assets; a->path; a++)
		if (strcmp(a->path, url) == 0) {
			struct MHD_Response *resp = MHD_create_response_from_buffer(
				a->len, (void *)(uintptr_t)a->data, MHD_RESPMEM_PERSISTENT);
			enum MHD_Result r;

			if (!resp)
				return MHD_NO;
			(void)MHD_add_response_header(resp, "Content-Type", a->type);
			(void)MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
			(void)MHD_add_response_header(resp, "X-Frame-Options", "DENY");
			(void)MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
			(void)MHD_add_response_header(resp, "Content-Security-Policy", SERVE_CSP);
			r = MHD_queue_response(c, MHD_HTTP_OK, resp);
			MHD_destroy_response(resp);
			return r;
		}
	return serve_answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no such page");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct req *q = *con_cls;

	(void)cls;
	(void)version;
	if (!q) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		bool api = strncmp(url, "/api/", 5) == 0 || strcmp(url, "/metrics") == 0;

		q = xcalloc(1, sizeof(*q));
		q->body = (struct sbuf)SBUF_INIT(BODY_MAX);
		*con_cls = q;
		/* The dashboard's own files hold no data: they are public; every
		 * answer with data needs the token. */
		if (!api && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
			return asset(c, url);
		if (!authorized(c))
			return serve_answer_error(c, MHD_HTTP_UNAUTHORIZED, "unauthorized",
						  "a bearer token is required (.bernstein/%s)",
						  SERVE_TOKEN_FILE);
		if (cl && strtoull(cl, NULL, 10) > BODY_MAX)
			return serve_answer_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "usage",
						  "a body is at most %zu bytes", BODY_MAX);
		return MHD_YES;
	}
	if (*upload_size) {
		if (!q->too_big && sbuf_add(&q->body, upload, *upload_size) < 0)
			q->too_big = true;
		*upload_size = 0;
		return MHD_YES;
	}
	if (q->too_big)
		return serve_answer_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "usage",
					  "a body is at most %zu bytes", BODY_MAX);
	return route(c, method, url, q->body.buf, q->body.len);
}

/* ---- start-up ---- */

/* ADDR:PORT ([V6]:PORT, localhost:PORT) into *ss; 0 or -EINVAL. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, bool *ret_loopback)
{
	char host[256];
	const char *colon = strrchr(s, ':');
	struct addrinfo hints = {0}, *ai = NULL;
	char *end;
	long port;
	size_t hl;

	if (!colon)
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= sizeof(host) || hl == 0)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || colon[1] == '\0' || port < 0 || port > 65535)
		return -EINVAL;
	if (strcmp(host, "localhost") == 0)
		(void)snprintf(host, sizeof(host), "127.0.0.1");
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_port = htons((uint16_t)port);
		*ret_loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_port = htons((uint16_t)port);
		*ret_loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return 0;
}

/* A new random token into .bernstein/serve.token (0600, replaced
 * atomically); its digest kept. */
static int make_token(char hex[TOKEN_HEX + 1], char **ret_path)
{
	uint8_t raw[TOKEN_HEX / 2];
	char *path;
	size_t got = 0;
	int r;

	while (got < sizeof(raw)) {
		ssize_t k = getrandom(raw + got, sizeof(raw) - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		got += (size_t)k;
	}
	hash_hex(raw, sizeof(raw), hex);
	hash_sha256(hex, TOKEN_HEX, (uint8_t *)serve_srv.token_hash);
	path = xmalloc(strlen(serve_srv.bdir) + sizeof(SERVE_TOKEN_FILE) + 1);
	(void)snprintf(path, strlen(serve_srv.bdir) + sizeof(SERVE_TOKEN_FILE) + 1, "%s/%s",
		       serve_srv.bdir, SERVE_TOKEN_FILE);
	{
		char line[TOKEN_HEX + 2];

		(void)snprintf(line, sizeof(line), "%s\n", hex);
		r = atomic_replace_file(path, line, TOKEN_HEX + 1, 0600);
	}
	if (r < 0) {
		free(path);
		return r;
	}
	*ret_path = path;
	return 0;
}

/* Remove the token file, unless another server has replaced it since (its
 * token is not ours to take away). */
static void drop_token(const char *path, const char *token)
{
	char *text = NULL;
	size_t len = 0;

	if (read_file_capped(path, 256, &text, &len) == 0 && len >= TOKEN_HEX &&
	    memcmp(text, token, TOKEN_HEX) == 0)
		(void)unlink(path);
	free(text);
}

static const struct option options[] = {
	{"listen", required_argument, NULL, 'l'},
	{"idle-timeout", required_argument, NULL, 't'},
	{"watch-pid", required_argument, NULL, 'w'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct opts {
	const char *listen;
	long idle, watch;
};

/* The options into *o: 0, or the exit code after the message (-1: --help
 * printed, exit 0). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		char *end;

		errno = 0;
		switch (c) {
		case 'l':
			o->listen = optarg;
			break;
		case 't':
			o->idle = strtol(optarg, &end, 10);
			if (errno || *end || o->idle < 1 || o->idle > 3600) {
				(void)fprintf(
					stderr,
					"bernstein: --idle-timeout: '%s' is not 1..3600 seconds\n%s",
					optarg, usage_text);
				return BEXIT_USAGE;
			}
			break;
		case 'w':
			o->watch = strtol(optarg, &end, 10);
			if (errno || *end || o->watch < 1) {
				(void)fprintf(stderr,
					      "bernstein: --watch-pid: '%s' is not a pid\n%s",
					      optarg, usage_text);
				return BEXIT_USAGE;
			}
			break;
		case 'h':
			(void)fputs(usage_text, stdout);
			return -1;
		default:
			(void)fprintf(stderr, "%s", usage_text);
			return BEXIT_USAGE;
		}
	}
	if (optind < argc) {
		(void)fprintf(stderr, "bernstein: unexpected argument '%s'\n%s", argv[optind],
			      usage_text);
		return BEXIT_USAGE;
	}
	return 0;
}

/* The repository, its paths, the bernstein beside this executable, the
 * children's environment. 0 or the exit code after the message. */
static int setup(char **envp)
{
	char cwd[PATH_MAX];
	struct diag dg;
	size_t i;
	int r;

	memset(&serve_srv, 0, sizeof(serve_srv));
	serve_srv.env = (struct strvec)STRVEC_INIT;
	for (i = 0; envp && envp[i]; i++)
		strvec_push(&serve_srv.env, envp[i]);
	(void)pthread_mutex_init(&serve_srv.child_lock, NULL);
	serve_db_init();
	if (!getcwd(cwd, sizeof(cwd))) {
		(void)fprintf(stderr, "bernstein: cannot get the current directory: %s\n",
			      strerror(errno));
		return BEXIT_ENV;
	}
	diag_clear(&dg);
	r = git_toplevel(cwd, (const char *const *)serve_srv.env.v, &serve_srv.repo, &dg);
	if (r < 0) {
		(void)fprintf(stderr, "bernstein: '%s' is not inside a git repository: %s\n", cwd,
			      dg.msg[0] ? dg.msg : strerror(-r));
		return BEXIT_ENV;
	}
	serve_srv.bdir = agentrun_path(serve_srv.repo, ".bernstein");
	serve_srv.db = agentrun_path(serve_srv.repo, ORCH_STATE_DB);
	serve_srv.runsdir = agentrun_path(serve_srv.repo, AGENTRUN_RUNS_DIR);
	if (cli_sibling_path("bernstein", serve_srv.bernstein, sizeof(serve_srv.bernstein)) < 0) {
		(void)fprintf(stderr, "bernstein: cannot locate 'bernstein' beside %s\n",
			      SERVE_EXE);
		return BEXIT_ENV;
	}
	return 0;
}

static void teardown(void)
{
	strvec_clear(&serve_srv.env);
	free(serve_srv.repo);
	free(serve_srv.bdir);
	free(serve_srv.db);
	free(serve_srv.runsdir);
}

static struct MHD_Daemon *start(const struct sockaddr_storage *ss, long idle)
{
	return MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			(ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)idle, MHD_OPTION_CONNECTION_MEMORY_LIMIT, HEADER_MEM,
		MHD_OPTION_NOTIFY_COMPLETED, req_done, NULL, MHD_OPTION_END);
}

/* The URL with the token, once, on stdout. */
static void announce(struct MHD_Daemon *d, const struct sockaddr_storage *ss, const char *token,
		     const char *token_path)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char host[INET6_ADDRSTRLEN];
	bool v6 = ss->ss_family == AF_INET6;

	if (v6)
		(void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
				sizeof(host));
	else
		(void)inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host,
				sizeof(host));
	(void)fprintf(stdout, "bernstein serve: http://%s%s%s:%u/#token=%s\n", v6 ? "[" : "", host,
		      v6 ? "]" : "", info ? (unsigned)info->port : 0, token);
	(void)fprintf(stdout, "bernstein serve: token in %s (Authorization: Bearer TOKEN)\n",
		      token_path);
	(void)fflush(stdout);
}

/* Until SIGINT, SIGTERM, SIGHUP or the watched run's end. */
static void wait_end(int sfd, int pfd)
{
	for (;;) {
		struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN},
				       {.fd = pfd, .events = POLLIN}};

		if (poll(pf, pfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			return;
		if (pf[0].revents || (pfd >= 0 && pf[1].revents))
			return;
	}
}

int main(int argc, char **argv, char **envp)
{
	struct opts o = {.listen = SERVE_DEFAULT_LISTEN, .idle = 10};
	struct sockaddr_storage ss;
	struct MHD_Daemon *d = NULL;
	char token[TOKEN_HEX + 1], *token_path = NULL;
	bool loopback = false;
	int r, code, sfd = -1, pfd = -1;
	sigset_t mask;

	envp = cli_environ_take(envp);
	(void)signal(SIGPIPE, SIG_IGN);
	code = parse_args(argc, argv, &o);
	if (code)
		return code < 0 ? 0 : code;
	/* Every request reads state.db: SQLite loaded now, not at the first
	 * request (util/lazy.h); the other libraries stop the server with the
	 * same message and code at their first use. */
	cli_lazy_init(NULL);
	{
		struct diag ld = {0};

		if (lazy_load(LAZY_SQLITE, &ld) < 0) {
			(void)fprintf(stderr, "bernstein: serve: %s\n", ld.msg);
			return BEXIT_LIBRARY;
		}
	}
	if (parse_listen(o.listen, &ss, &loopback) < 0) {
		(void)fprintf(
			stderr,
			"bernstein: --listen: '%s' is not ADDR:PORT (an IP address or localhost, and a port)\n",
			o.listen);
		return BEXIT_USAGE;
	}
	code = setup(envp);
	if (code)
		goto out;
	if (mkdir_p(serve_srv.bdir, 0700) < 0 || (r = make_token(token, &token_path)) < 0) {
		(void)fprintf(stderr, "bernstein: cannot write the token '%s/%s': %s\n",
			      serve_srv.bdir, SERVE_TOKEN_FILE, strerror(errno));
		code = BEXIT_ENV;
		goto out;
	}
	/* signals and the watched run: before any thread starts */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	(void)pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (o.watch) {
		pfd = (int)syscall(SYS_pidfd_open, (pid_t)o.watch, 0);
		if (pfd < 0) {
			(void)fprintf(stderr, "bernstein: the run's process %ld is gone\n",
				      o.watch);
			code = BEXIT_ENV;
			goto out;
		}
	}
	d = start(&ss, o.idle);
	if (!d) {
		(void)fprintf(stderr, "bernstein: cannot listen on '%s': %s\n", o.listen,
			      strerror(errno));
		code = BEXIT_ENV;
		goto out;
	}
	if (!loopback)
		(void)fprintf(
			stderr,
			"bernstein: warning: serving on '%s', not a loopback address: anyone who can reach it and holds the token controls the runs (no TLS)\n",
			o.listen);
	announce(d, &ss, token, token_path);
	wait_end(sfd, pfd);
	atomic_store(&serve_stopping, true);
out:
	if (d)
		MHD_stop_daemon(d);
	if (token_path)
		drop_token(token_path, token);
	free(token_path);
	if (sfd >= 0)
		(void)close(sfd);
	if (pfd >= 0)
		(void)close(pfd);
	teardown();
	return code;
}
