/* bernstein agent-relay and bernstein agent-exec: the two ends of a task
 * that runs on a Slurm node (orch/executor.h, orch/remote.h,
 * docs/executors.md).
 *
 * agent-relay (this host, the supervisor's child in the task's worktree):
 * pushes the task's branch to the hub, submits the job (sbatch), accepts
 * the one connection whose token matches, sends the invocation (argv and
 * environment: the secrets travel only here), relays the agent's lines to
 * its own stdout and stderr, and when the agent ended fetches the branch the
 * node pushed into the worktree, then exits as the agent did. SIGTERM (a
 * cancel, a timeout, stop --force) is scancel. A job file remembers the job
 * id until its result is in: a relay started again for the task (resume
 * after the submitter died) re-attaches to a job still running instead of
 * submitting another, and takes the result of one that ended.
 *
 * The connection is TLS 1.3 (orch/remote-tls.h): the relay's certificate is
 * made per job, the job accepts only the one whose fingerprint its script
 * names, and sends its token only after that.
 *
 * agent-exec (the node, run by the batch script): dials back, clones the hub
 * at the task's branch, checks the exact base commit, runs the agent with
 * the spawn code of a local agent, streams its lines, commits what it left,
 * pushes the branch to the hub, reports, and removes its directory. A lost
 * connection does not stop it: the work still reaches the hub. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/exit.h"
#include "orch/executor.h"
#include "orch/remote.h"
#include "orch/remote-tls.h"
#include "proc/capture.h"
#include "proc/git.h"
#include "proc/spawn.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define HELLO_TIMEOUT_MS 10000
#define GIT_TIMEOUT_MS	 600000
#define SLURM_TIMEOUT_MS 60000
#define POLL_JOB_MS	 2000
#define RELAY_BUNDLE_MAX (512u << 20)
#define DEFAULT_PATH	 "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

const char agent_relay_usage[] =
	"--hub PATH --hub-url URL --listen ADDR --bernstein PATH --branch BRANCH\n"
	"       --job-file FILE --session-dir DIR --home DIR [--start-timeout S]\n"
	"       [--ssh-command CMD] [--no-hub-push] [--sbatch OPT]... -- AGENT [ARG...]";
const char agent_relay_help[] =
	"Runs AGENT as a Slurm job and relays its output: the task's side of\n"
	"`executor: slurm`. A run starts it in the task's worktree with the agent's\n"
	"environment; it is not meant to be run by hand. See docs/executors.md.\n";
const char agent_exec_usage[] = "";
const char agent_exec_help[] =
	"The node's side of `executor: slurm`: dials back to the submitting host\n"
	"(BERNSTEIN_EXEC_CONNECT=HOST:PORT) over TLS, accepting only the certificate\n"
	"whose SHA-256 is BERNSTEIN_EXEC_FINGERPRINT (64 hex digits), sends the job's\n"
	"single-use token (BERNSTEIN_EXEC_TOKEN), receives the task's invocation, clones the hub,\n"
	"runs the agent, streams its lines and pushes its branch. A Slurm batch\n"
	"script starts it; see docs/executors.md.\n";

static volatile sig_atomic_t arg_stop;
/* the Slurm client's configuration file (SLURM_CONF), when given */
static const char *arg_slurm_conf;
/* the node's ssh for an ssh:// hub (slurm.ssh_command, sent in the
 * invocation): git's core.sshCommand, after the hardening's "ssh" */
static const char *arg_ssh_command;

static void push_owned(struct strvec *sv, char *s)
{
	strvec_push(sv, s);
	free(s);
}

static void on_stop(int sig)
{
	arg_stop = sig;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- children ---- */

/* Run argv (absolute argv[0]) with env, stdin from stdin_fd (-1: none, else
 * taken), to the end: 0 and its stdout (trimmed, caller frees) when it
 * exited 0, else -EIO with its stderr's head in why. */
static int run_cmd(const char *const *argv, const char *const *env, int stdin_fd,
		   uint64_t timeout_ms, char **ret_out, char *why, size_t why_size)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture c = {.spec = &spec};
	int r;

	strvec_pushv(&spec.argv, argv);
	strvec_pushv(&spec.env, env);
	spec.stdin_fd = stdin_fd;
	spec.contain = CONTAIN_PGROUP;
	c.timeout_ms = timeout_ms;
	c.kill_grace_ms = 2000;
	c.max_out = 1 << 20;
	c.max_err = 2048;
	r = proc_capture(&c, 1, NULL);
	if (r == 0 && c.start_result < 0) {
		(void)snprintf(why, why_size, "cannot run '%s': %s", argv[0],
			       c.start_error ? c.start_error : strerror(-c.start_result));
		r = -EIO;
	} else if (r == 0 && c.exit_code != 0) {
		const char *e = c.err.buf ? c.err.buf : "";
		size_t n = strlen(e);

		while (n && (e[n - 1] == '\n' || e[n - 1] == ' '))
			n--;
		(void)snprintf(why, why_size, "'%s' %s%s (%.*s)", argv[0],
			       c.timed_out ? "timed out, " : "", "failed", (int)(n > 400 ? 400 : n),
			       e);
		r = -EIO;
	} else if (r < 0) {
		(void)snprintf(why, why_size, "cannot run '%s': %s", argv[0], strerror(-r));
	}
	if (r == 0 && ret_out) {
		char *o = xstrdup(c.out.buf ? c.out.buf : "");
		size_t n = strlen(o);

		while (n && (o[n - 1] == '\n' || o[n - 1] == '\r' || o[n - 1] == ' '))
			o[--n] = '\0';
		*ret_out = o;
	}
	capture_release(&c);
	proc_spec_release(&spec);
	return r;
}

/* git with bernstein's hardening in dir; remote transports allowed (the
 * hub: a path, git://, ssh://, https://). */
static int git(char **envp, const char *dir, const char *const *args, char **ret_out, char *why,
	       size_t why_size)
{
	struct strvec a = STRVEC_INIT, argv = STRVEC_INIT, env = STRVEC_INIT;
	int r;

	strvec_push(&a, "-c");
	strvec_push(&a, "protocol.git.allow=always");
	if (arg_ssh_command) {
		strvec_push(&a, "-c");
		strvec_pushf(&a, "core.sshCommand=%s", arg_ssh_command);
	}
	strvec_pushv(&a, args);
	r = git_prepare(dir, (const char *const *)envp, GIT_HARDEN_WRITE | GIT_HARDEN_PUSH,
			(const char *const *)a.v, &argv, &env);
	if (r < 0)
		(void)snprintf(why, why_size, "git is not on PATH");
	else
		r = run_cmd((const char *const *)argv.v, (const char *const *)env.v, -1,
			    GIT_TIMEOUT_MS, ret_out, why, why_size);
	strvec_clear(&a);
	strvec_clear(&argv);
	strvec_clear(&env);
	return r;
}

/* A Slurm client program (sbatch, squeue, scancel) found on PATH. */
static int slurm(char **envp, const char *prog, const char *const *args, int stdin_fd,
		 char **ret_out, char *why, size_t why_size)
{
	const char *path = NULL;
	struct strvec argv = STRVEC_INIT;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	char *exe = NULL;
	size_t i;
	int r = -ENOENT;

	for (i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	if (!path)
		path = DEFAULT_PATH;
	while (*path) {
		const char *e = strchr(path, ':');
		size_t n = e ? (size_t)(e - path) : strlen(path);

		if (n && path[0] == '/') {
			sbuf_reset(&sb);
			(void)sbuf_addf(&sb, "%.*s/%s", (int)n, path, prog);
			if (access(sb.buf, X_OK) == 0) {
				exe = sbuf_detach(&sb, NULL);
				break;
			}
		}
		path += n + (e ? 1 : 0);
	}
	sbuf_release(&sb);
	if (!exe) {
		(void)snprintf(why, why_size, "'%s' is not on PATH (the Slurm client)", prog);
		if (stdin_fd >= 0)
			(void)close(stdin_fd);
		return r;
	}
	strvec_push(&argv, exe);
	strvec_pushv(&argv, args);
	{
		struct strvec env = STRVEC_INIT;

		for (i = 0; envp && envp[i]; i++)
			if (!arg_slurm_conf || strncmp(envp[i], "SLURM_CONF=", 11) != 0)
				strvec_push(&env, envp[i]);
		if (arg_slurm_conf)
			strvec_pushf(&env, "SLURM_CONF=%s", arg_slurm_conf);
		r = run_cmd((const char *const *)argv.v, (const char *const *)env.v, stdin_fd,
			    SLURM_TIMEOUT_MS, ret_out, why, why_size);
		strvec_clear(&env);
	}
	strvec_clear(&argv);
	free(exe);
	return r;
}

/* ---- the connection ---- */

struct conn {
	int fd;
	SSL *ssl; /* the TLS session on fd (owned by whoever owns fd) */
	char *buf;
	size_t len, cap;
	bool eof;
};

/* All of buf on the TLS session: 0, or -EIO (a peer gone, a send timeout). */
static int tls_write_all(SSL *ssl, const char *buf, size_t n)
{
	size_t w;

	while (n) {
		if (SSL_write_ex(ssl, buf, n, &w) != 1) {
			ERR_clear_error();
			return -EIO;
		}
		buf += w;
		n -= w;
	}
	return 0;
}

static int send_msg(SSL *ssl, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);
	int r;

	json_decref(o);
	if (!s)
		return -ENOMEM;
	r = tls_write_all(ssl, s, strlen(s));
	if (r >= 0)
		r = tls_write_all(ssl, "\n", 1);
	free(s);
	return r;
}

/* A socket's reads and writes give up after ms (a peer that stalls a
 * handshake or a record): the TLS calls on it then fail instead of
 * blocking. */
static void sock_timeouts(int fd, unsigned ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The next whole line (NUL-terminated in c->buf, *ret_len its length) when
 * one is buffered: 1, else 0; -ENOBUFS past REMOTE_LINE_MAX. */
static int conn_line(struct conn *c, size_t *ret_len)
{
	char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;

	if (!nl)
		return c->len > REMOTE_LINE_MAX ? -ENOBUFS : 0;
	*nl = '\0';
	*ret_len = (size_t)(nl - c->buf);
	return 1;
}

static void conn_consume(struct conn *c, size_t n)
{
	memmove(c->buf, c->buf + n + 1, c->len - n - 1);
	c->len -= n + 1;
}

/* Read what is there (the fd is readable): 0, or -errno; c->eof at the end. */
static int conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->cap - c->len < 65536) {
		c->cap = c->cap ? c->cap * 2 : 131072;
		c->buf = xrealloc(c->buf, c->cap);
	}
	if (c->ssl) {
		size_t got = 0;

		if (SSL_read_ex(c->ssl, c->buf + c->len, c->cap - c->len - 1, &got) != 1) {
			int e = SSL_get_error(c->ssl, 0);

			ERR_clear_error();
			/* a record still coming: later; anything else (the peer's
			 * close, a reset, a forged or broken record) ends it */
			if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				c->eof = true;
			return 0;
		}
		c->len += got;
		return 0;
	}
	n = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		c->eof = true;
	c->len += (size_t)n;
	return 0;
}

/* Block (up to timeout_ms) for one line: 1 and its length, 0 at EOF or
 * timeout, < 0 on error. */
static int conn_read_line(struct conn *c, uint64_t timeout_ms, size_t *ret_len)
{
	uint64_t end = now_ms() + timeout_ms;
	int r;

	for (;;) {
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		uint64_t now = now_ms();

		r = conn_line(c, ret_len);
		if (r != 0 || c->eof)
			return r;
		if (now >= end || arg_stop)
			return 0;
		/* what TLS has decrypted already is not on the socket */
		if (c->ssl && SSL_pending(c->ssl) > 0) {
			r = conn_fill(c);
			if (r < 0)
				return r;
			continue;
		}
		r = poll(&p, 1, (int)(end - now));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && (r = conn_fill(c)) < 0)
			return r;
	}
}

/* ---- agent-relay ---- */

struct relay {
	struct cli_ctx *ctx;
	const char *hub, *hub_url, *listen, *bernstein, *branch, *job_file, *session_dir, *home;
	const char *ssh_command; /* for the node's git (an ssh:// hub_url); NULL: ssh */
	double start_timeout_s;
	struct strvec sbatch;
	char **agent;
	char cwd[4096];
	char *base;
	char *job; /* the Slurm job id */
	/* the job's TLS identity: the relay's context (its key and self-signed
	 * certificate) and where they are kept for a resumed relay (0600,
	 * JOB_FILE.tls, removed with the job file) */
	SSL_CTX *tls;
	char *key_file;
	/* the node's bundle of the branch, as it arrives (session dir,
	 * result.bundle, 0600): its bytes; bundle_bad: over the cap or not
	 * writable */
	int bundle_fd;
	char *bundle_file;
	uint64_t bundle_bytes;
	bool bundle_bad;
	bool no_hub_push; /* the hub takes no push (bernstein's read-only git daemon) */
	/* a started job's rendezvous, from its job file: where its node dials
	 * back after losing us, and with which token */
	char *rec_connect;
	char rec_token[REMOTE_TOKEN_HEX + 1];
	size_t seen;	    /* the node's messages relayed: a re-dial replays them first */
	char end_state[64]; /* the job's state when it left the queue ("NODE_FAIL") */
	char why[1024];
};

static void relay_err(const struct relay *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void relay_err(const struct relay *rl, const char *fmt, ...)
{
	va_list ap;

	(void)fprintf(rl->ctx->err, "%s agent-relay: ", rl->ctx->progname);
	va_start(ap, fmt);
	(void)vfprintf(rl->ctx->err, fmt, ap);
	va_end(ap);
	(void)fputc('\n', rl->ctx->err);
	(void)fflush(rl->ctx->err);
}

/* The job's state as squeue says it ("RUNNING", "PENDING"...; caller
 * frees), or NULL: Slurm no longer lists it (or cannot be asked). */
static char *job_state(struct relay *rl)
{
	/* every state: a job that ended is listed (NODE_FAIL, COMPLETED...) until
	 * Slurm forgets it (MinJobAge), so the relay can tell how it ended */
	const char *args[] = {"-h", "-t", "all", "-j", rl->job, "-o", "%T", NULL};
	char *out = NULL, why[512];

	if (slurm(rl->ctx->envp, "squeue", args, -1, &out, why, sizeof(why)) < 0 || !out[0]) {
		free(out);
		return NULL;
	}
	return out;
}

static bool state_alive(const char *s)
{
	return s && (strcmp(s, "PENDING") == 0 || strcmp(s, "RUNNING") == 0 ||
		     strcmp(s, "CONFIGURING") == 0 || strcmp(s, "COMPLETING") == 0 ||
		     strcmp(s, "SUSPENDED") == 0 || strcmp(s, "RESIZING") == 0 ||
		     strcmp(s, "SIGNALING") == 0 || strcmp(s, "STAGE_OUT") == 0);
}

/* The state a job left the queue in, s (NULL: no longer listed). */
static void relay_end_state(struct relay *rl, const char *s)
{
	(void)snprintf(rl->end_state, sizeof(rl->end_state), "%s", s ? s : "");
}

/* Whether the job ended as Slurm ends a job whose node failed. */
static bool relay_node_failed(const struct relay *rl)
{
	return strcmp(rl->end_state, "NODE_FAIL") == 0 || strcmp(rl->end_state, "BOOT_FAIL") == 0;
}

/* The job was lost with its node: said, and told to the run loop by
 * EXECUTOR_LOST_FILE in the attempt's directory (the outcome lost). */
static void relay_lost(struct relay *rl, const char *what)
{
	char *path = sbuf_strf("%s/%s", rl->session_dir, EXECUTOR_LOST_FILE);
	char *line = sbuf_strf("Slurm job %s %s %s", rl->job ? rl->job : "?",
			       rl->end_state[0] ? "ended" : "is no longer listed",
			       rl->end_state[0] ? rl->end_state : "");
	char *msg = sbuf_strf("%s%s%s", line, rl->end_state[0] ? " " : "", what);
	int r;

	free(line);
	relay_err(rl, "%s (lost with its node)", msg);
	r = atomic_replace_file(path, msg, strlen(msg), 0600);
	if (r < 0)
		relay_err(rl, "cannot write '%s': %s", path, strerror(-r));
	free(msg);
	free(path);
}

/* The job's records removed: its id, rendezvous and TLS key. */
static void relay_forget(struct relay *rl)
{
	(void)unlink(rl->job_file);
	(void)unlink(rl->key_file);
}

/* scancel of the whole job; its job file removed once Slurm has the
 * request (kept when it could not be asked: a resume re-attaches) */
static void relay_scancel(struct relay *rl)
{
	const char *args[] = {"--full", rl->job, NULL};
	char why[512];

	if (!rl->job)
		return;
	if (slurm(rl->ctx->envp, "scancel", args, -1, NULL, why, sizeof(why)) < 0)
		relay_err(rl, "cannot cancel Slurm job %s: %s", rl->job, why);
	else
		relay_forget(rl);
}

/* The job's id from the job file (0600, in the task's run directory),
 * when one is recorded: "ID" once it was submitted, "ID started CONNECT
 * TOKEN" once its node has the invocation (*ret_started; rl->rec_*). */
static void relay_read_job(struct relay *rl, bool *ret_started)
{
	char *s = NULL, *sp;
	size_t n = 0, i;

	*ret_started = false;
	if (read_file_capped(rl->job_file, 1024, &s, &n) < 0)
		return;
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
	if ((sp = strchr(s, ' ')) && strncmp(sp, " started ", 9) == 0) {
		char *c = sp + 9, *tok = strchr(c, ' ');

		*sp = '\0';
		n = (size_t)(sp - s);
		if (tok && strlen(tok + 1) == REMOTE_TOKEN_HEX) {
			*tok = '\0';
			rl->rec_connect = xstrdup(c);
			memcpy(rl->rec_token, tok + 1, REMOTE_TOKEN_HEX + 1);
			*ret_started = true;
		}
	}
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			n = 0;
	if (n)
		rl->job = s;
	else
		free(s);
}

/* The branch the node pushed, brought into the worktree. */
static int relay_fetch(struct relay *rl)
{
	const char *fetch[] = {"fetch", "-q", "--no-tags", rl->hub, NULL, NULL};
	const char *head[] = {"rev-parse", "-q", "--verify", "FETCH_HEAD^{commit}", NULL};
	const char *cur[] = {"rev-parse", "HEAD", NULL};
	char *ref = NULL, *got = NULL, *now = NULL;
	int r;

	ref = sbuf_strf("refs/heads/%s", rl->branch);
	fetch[4] = ref;
	r = git(rl->ctx->envp, rl->cwd, fetch, NULL, rl->why, sizeof(rl->why));
	if (r >= 0)
		r = git(rl->ctx->envp, rl->cwd, head, &got, rl->why, sizeof(rl->why));
	if (r >= 0)
		r = git(rl->ctx->envp, rl->cwd, cur, &now, rl->why, sizeof(rl->why));
	if (r >= 0 && strcmp(got, now) != 0) {
		const char *reset[] = {"reset", "-q", "--hard", got, NULL};

		r = git(rl->ctx->envp, rl->cwd, reset, NULL, rl->why, sizeof(rl->why));
	}
	free(ref);
	free(got);
	free(now);
	return r;
}

/* Wait for the job to leave the queue (attach, or a lost connection):
 * 0, or -EINTR when told to stop. */
static int relay_wait_job(struct relay *rl)
{
	for (;;) {
		char *s = job_state(rl);
		bool alive = state_alive(s);

		if (!alive)
			relay_end_state(rl, s);
		free(s);
		if (!alive)
			return 0;
		if (arg_stop)
			return -EINTR;
		(void)poll(NULL, 0, POLL_JOB_MS);
		if (arg_stop)
			return -EINTR;
	}
}

/* The hub made once (tasks start at once: one git init at a time, under
 * a lock beside it). */
static int relay_hub_init(struct relay *rl, const char *const *init)
{
	char *lock = sbuf_strf("%s.lock", rl->hub), *head = sbuf_strf("%s/HEAD", rl->hub);
	int fd, r = 0;

	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		(void)flock(fd, LOCK_EX);
	if (access(head, F_OK) != 0)
		r = git(rl->ctx->envp, "/", init, NULL, rl->why, sizeof(rl->why));
	if (fd >= 0)
		(void)close(fd);
	free(lock);
	free(head);
	return r;
}

/* The files of the task's HOME on this host (what bernstein rendered
 * there: an endpoint's config, login files), for the node's HOME: regular
 * files only (no symlink followed), text (UTF-8), at most HOME_FILES_MAX
 * of them and HOME_BYTES_MAX bytes in all, HOME_DEPTH_MAX directories
 * deep. Anything else is said and left out. */
#define HOME_FILES_MAX 64
#define HOME_BYTES_MAX (1u << 20)
#define HOME_DEPTH_MAX 8

static void relay_home_walk(struct relay *rl, const char *rel, int depth, json_t *files,
			    size_t *bytes)
{
	char *dir = rel[0] ? sbuf_strf("%s/%s", rl->home, rel) : sbuf_strf("%s", rl->home);
	DIR *d = opendir(dir);
	struct dirent *de;

	free(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *r, *path, *data = NULL;
		struct stat st;
		size_t n = 0;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = rel[0] ? sbuf_strf("%s/%s", rel, de->d_name) : sbuf_strf("%s", de->d_name);
		path = sbuf_strf("%s/%s", rl->home, r);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth < HOME_DEPTH_MAX) {
			relay_home_walk(rl, r, depth + 1, files, bytes);
		} else if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
			   json_array_size(files) < HOME_FILES_MAX &&
			   read_file_capped(path, HOME_BYTES_MAX - *bytes, &data, &n) == 0 &&
			   utf8_valid(data, n)) {
			*bytes += n;
			(void)json_array_append_new(
				files, json_pack("{s:s, s:i, s:s%}", "path", r, "mode",
						 (int)(st.st_mode & 0700), "content", data, n));
		} else {
			relay_err(rl, "the task's HOME file '%s' is not sent to the node", r);
		}
		if (data)
			explicit_bzero(data, n);
		free(data);
		free(path);
		free(r);
	}
	(void)closedir(d);
}

/* The invocation the node runs. */
static json_t *relay_invocation(struct relay *rl, const char *stdin_data, size_t stdin_len)
{
	json_t *inv = json_object(), *a = json_array(), *e = json_array();
	const char *ident_args[] = {"var", "GIT_COMMITTER_IDENT", NULL};
	char *ident = NULL, why[256];
	size_t i;

	for (i = 0; rl->agent[i]; i++)
		(void)json_array_append_new(a, json_string(rl->agent[i]));
	for (i = 0; rl->ctx->envp[i]; i++)
		if (utf8_valid(rl->ctx->envp[i], strlen(rl->ctx->envp[i])))
			(void)json_array_append_new(e, json_string(rl->ctx->envp[i]));
	(void)json_object_set_new(inv, "argv", a);
	(void)json_object_set_new(inv, "env", e);
	(void)json_object_set_new(inv, "stdin",
				  utf8_valid(stdin_data, stdin_len)
					  ? json_stringn(stdin_data, stdin_len)
					  : json_string(""));
	(void)json_object_set_new(inv, "hub", json_string(rl->hub_url));
	if (rl->no_hub_push)
		(void)json_object_set_new(inv, "hub_push", json_false());
	if (rl->ssh_command)
		(void)json_object_set_new(inv, "ssh_command", json_string(rl->ssh_command));
	(void)json_object_set_new(inv, "branch", json_string(rl->branch));
	(void)json_object_set_new(inv, "base", json_string(rl->base));
	(void)json_object_set_new(inv, "worktree", json_string(rl->cwd));
	(void)json_object_set_new(inv, "home", json_string(rl->home));
	(void)json_object_set_new(inv, "session_dir", json_string(rl->session_dir));
	{
		json_t *files = json_array();
		size_t bytes = 0;

		relay_home_walk(rl, "", 0, files, &bytes);
		(void)json_object_set_new(inv, "home_files", files);
	}
	if (git(rl->ctx->envp, rl->cwd, ident_args, &ident, why, sizeof(why)) >= 0) {
		char *lt = strchr(ident, '<'), *gt = lt ? strchr(lt, '>') : NULL;

		if (lt && gt && lt > ident) {
			(void)json_object_set_new(inv, "git_name",
						  json_stringn(ident, (size_t)(lt - ident - 1)));
			(void)json_object_set_new(inv, "git_email",
						  json_stringn(lt + 1, (size_t)(gt - lt - 1)));
		}
	}
	free(ident);
	return json_pack("{s:o}", "invocation", inv);
}

/* Listen on the address the user named, any port: the fd and the
 * "ADDR:PORT" agent-exec dials. */
static int relay_listen(struct relay *rl, const char *port, int *ret_fd, char **ret_connect)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, r, bound;

	r = getaddrinfo(rl->listen, port, &hints, &ai);
	if (r != 0) {
		(void)snprintf(rl->why, sizeof(rl->why), "cannot resolve slurm.listen '%s': %s",
			       rl->listen, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		r = -errno;
		(void)snprintf(rl->why, sizeof(rl->why), "cannot listen on '%s': %s", rl->listen,
			       strerror(-r));
		if (fd >= 0)
			(void)close(fd);
		freeaddrinfo(ai);
		return r;
	}
	bound = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
					 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*ret_connect = ai->ai_family == AF_INET6 ? sbuf_strf("[%s]:%d", rl->listen, bound)
						 : sbuf_strf("%s:%d", rl->listen, bound);
	freeaddrinfo(ai);
	*ret_fd = fd;
	return 0;
}

/* sbatch: the job id recorded in the job file before anything else. */
static int relay_submit(struct relay *rl, const char *connect, const char *token, const char *fp)
{
	char *script = executor_slurm_script(rl->bernstein, connect, token, fp);
	char *out = NULL, *semi;
	struct strvec args = STRVEC_INIT;
	int fds[2] = {-1, -1}, r;

	if (!script) {
		(void)snprintf(
			rl->why, sizeof(rl->why),
			"slurm.bernstein or slurm.listen holds a character a script cannot carry");
		return -EINVAL;
	}
	/* the script on a pipe: nothing of it is written on this host */
	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		free(script);
		return r;
	}
	r = write_all(fds[1], script, strlen(script));
	close_fdp(&fds[1]);
	free(script);
	strvec_pushv(&args, (const char *const *)rl->sbatch.v);
	if (r >= 0)
		r = slurm(rl->ctx->envp, "sbatch", (const char *const *)args.v, fds[0], &out,
			  rl->why, sizeof(rl->why));
	else
		close_fdp(&fds[0]);
	strvec_clear(&args);
	if (r < 0)
		return r;
	if ((semi = strchr(out, ';')))
		*semi = '\0';
	rl->job = out;
	r = atomic_replace_file(rl->job_file, out, strlen(out), 0600);
	if (r < 0) {
		(void)snprintf(rl->why, sizeof(rl->why), "cannot record the job id in '%s': %s",
			       rl->job_file, strerror(-r));
		relay_scancel(rl);
	}
	return r;
}

/* The TLS handshake on an accepted connection, with the job's
 * certificate: 0 and c->ssl, or -1 said (a plaintext client, a job that
 * was given another fingerprint, a stalled or broken handshake). */
static int relay_handshake(struct relay *rl, struct conn *c)
{
	char why[256];

	sock_timeouts(c->fd, HELLO_TIMEOUT_MS);
	c->ssl = SSL_new(rl->tls);
	if (c->ssl && SSL_set_fd(c->ssl, c->fd) == 1 && SSL_accept(c->ssl) == 1)
		return 0;
	remote_tls_error(why, sizeof(why));
	if (strstr(why, "alert bad certificate") || strstr(why, "alert certificate unknown"))
		relay_err(
			rl,
			"a job refused this host's TLS certificate (it was given another fingerprint): %s",
			why);
	else
		relay_err(rl, "refused a connection without a TLS handshake: %s", why);
	SSL_free(c->ssl);
	c->ssl = NULL;
	return -1;
}

/* Accept the job's connection: the connected fd, or < 0 (rl->why says; a
 * job that left the queue first is -ENOLINK). What the node sent after its
 * hello stays in *ret (a re-dialling node replays at once). */
static int relay_accept(struct relay *rl, int lfd, const char *token, struct conn *ret)
{
	uint64_t start = now_ms(), last_check = now_ms();

	for (;;) {
		struct pollfd p = {.fd = lfd, .events = POLLIN};
		struct conn c = {.fd = -1};
		struct remote_msg m = {0};
		struct diag d;
		size_t n;
		int r;

		if (arg_stop)
			return -EINTR;
		if (now_ms() - start > (uint64_t)(rl->start_timeout_s * 1000)) {
			(void)snprintf(
				rl->why, sizeof(rl->why),
				"Slurm job %s did not start within %.0f s (slurm.start_timeout)",
				rl->job, rl->start_timeout_s);
			return -ETIMEDOUT;
		}
		if (now_ms() - last_check >= POLL_JOB_MS) {
			char *s = job_state(rl);

			last_check = now_ms();
			if (!state_alive(s)) {
				relay_end_state(rl, s);
				(void)snprintf(rl->why, sizeof(rl->why),
					       "Slurm job %s ended (%s) before its agent connected",
					       rl->job, s ? s : "no longer listed");
				free(s);
				return -ENOLINK;
			}
			free(s);
		}
		r = poll(&p, 1, 500);
		if (r <= 0)
			continue;
		c.fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c.fd < 0)
			continue;
		if (relay_handshake(rl, &c) < 0) {
			(void)close(c.fd);
			continue;
		}
		diag_clear(&d);
		r = conn_read_line(&c, HELLO_TIMEOUT_MS, &n);
		if (r == 1 && remote_msg_parse(c.buf, n, &m, &d) == 0 &&
		    m.kind == REMOTE_MSG_HELLO && remote_token_equal(m.text, token)) {
			relay_err(rl, "Slurm job %s runs on '%s'", rl->job, m.node);
			remote_msg_release(&m);
			conn_consume(&c, n);
			*ret = c;
			return c.fd;
		}
		/* anyone else: dropped, the listener stays for the job */
		remote_msg_release(&m);
		free(c.buf);
		SSL_free(c.ssl);
		(void)close(c.fd);
		relay_err(rl, "refused a connection without the job's token");
	}
}

/* The next chunk of the node's bundle, written to rl->bundle_file. */
static void relay_bundle_add(struct relay *rl, const struct remote_msg *m)
{
	if (rl->bundle_bad)
		return;
	if (rl->bundle_fd < 0)
		rl->bundle_fd = open(rl->bundle_file,
				     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (rl->bundle_fd < 0 || rl->bundle_bytes + m->len > RELAY_BUNDLE_MAX ||
	    write_all(rl->bundle_fd, m->text, m->len) < 0) {
		relay_err(rl, "the node's bundle is not kept: %s",
			  rl->bundle_fd < 0 ? strerror(errno)
					    : "larger than 512 MiB or unwritable");
		rl->bundle_bad = true;
		return;
	}
	rl->bundle_bytes += m->len;
}

/* The branch from the node's bundle into the worktree: it must hold
 * exactly refs/heads/BRANCH (list-heads), and git fetch checks that its
 * prerequisites are here and its objects whole. 0, or < 0 with rl->why. */
static int relay_fetch_bundle(struct relay *rl)
{
	const char *heads[] = {"bundle", "list-heads", rl->bundle_file, NULL};
	const char *fetch[] = {"fetch", "-q", "--no-tags", rl->bundle_file, NULL, NULL};
	const char *head[] = {"rev-parse", "-q", "--verify", "FETCH_HEAD^{commit}", NULL};
	char *out = NULL, *got = NULL, *ref = sbuf_strf("refs/heads/%s", rl->branch), sha[65];
	struct diag d;
	int r;

	fetch[4] = ref;
	diag_clear(&d);
	r = git(rl->ctx->envp, rl->cwd, heads, &out, rl->why, sizeof(rl->why));
	if (r >= 0 && (r = remote_bundle_heads(out, rl->branch, sha, &d)) < 0)
		(void)snprintf(rl->why, sizeof(rl->why), "%s", d.msg);
	if (r >= 0)
		r = git(rl->ctx->envp, rl->cwd, fetch, NULL, rl->why, sizeof(rl->why));
	if (r >= 0)
		r = git(rl->ctx->envp, rl->cwd, head, &got, rl->why, sizeof(rl->why));
	if (r >= 0 && strcmp(got, sha) != 0) {
		(void)snprintf(rl->why, sizeof(rl->why),
			       "the bundle's branch is not what it names");
		r = -EBADMSG;
	}
	if (r >= 0) {
		const char *reset[] = {"reset", "-q", "--hard", got, NULL};

		r = git(rl->ctx->envp, rl->cwd, reset, NULL, rl->why, sizeof(rl->why));
	}
	free(out);
	free(got);
	free(ref);
	return r;
}

/* Relay the node's lines until its exit: the exit code, or -ECONNRESET
 * when the connection ended first, -EINTR when told to stop. */
static int relay_stream(struct relay *rl, struct conn *cp)
{
	struct conn c = *cp;
	size_t k = 0;
	int code = -ECONNRESET;

	for (;;) {
		struct remote_msg m = {0};
		struct diag d;
		size_t n;
		int r;

		diag_clear(&d);
		r = conn_read_line(&c, 1000, &n);
		if (r < 0 || (r == 0 && c.eof))
			break;
		if (arg_stop) {
			code = -EINTR;
			break;
		}
		if (r == 0)
			continue;
		/* a node that dialled again replays from its first line */
		if (k++ < rl->seen) {
			conn_consume(&c, n);
			continue;
		}
		rl->seen++;
		if (remote_msg_parse(c.buf, n, &m, &d) < 0) {
			relay_err(rl, "%s", d.msg);
			conn_consume(&c, n);
			continue;
		}
		conn_consume(&c, n);
		if (m.kind == REMOTE_MSG_OUT) {
			(void)fprintf(rl->ctx->out, "%s\n", m.text);
			(void)fflush(rl->ctx->out);
		} else if (m.kind == REMOTE_MSG_ERR || m.kind == REMOTE_MSG_ERROR) {
			if (m.kind == REMOTE_MSG_ERROR)
				relay_err(rl, "on the node: %s", m.text);
			else
				(void)fprintf(rl->ctx->err, "%s\n", m.text);
			(void)fflush(rl->ctx->err);
		} else if (m.kind == REMOTE_MSG_BUNDLE) {
			relay_bundle_add(rl, &m);
		} else if (m.kind == REMOTE_MSG_EXIT) {
			code = m.code;
			remote_msg_release(&m);
			break;
		}
		remote_msg_release(&m);
	}
	free(c.buf);
	SSL_free(c.ssl);
	memset(cp, 0, sizeof(*cp));
	cp->fd = -1;
	return code;
}

/* Submit (or re-attach), relay, fetch: the exit code. */
/* The worktree's HEAD, moved from the base (the job's result arrived). */
static bool relay_moved(struct relay *rl)
{
	const char *cur[] = {"rev-parse", "HEAD", NULL};
	char *now = NULL;
	bool moved;

	moved = git(rl->ctx->envp, rl->cwd, cur, &now, rl->why, sizeof(rl->why)) >= 0 &&
		strcmp(now, rl->base) != 0;
	free(now);
	return moved;
}

/* The recorded job's TLS identity back from its key file: 0, or < 0
 * with rl->why. */
static int relay_load_tls(struct relay *rl)
{
	char *pem = NULL;
	size_t n = 0;
	struct diag d;
	int r;

	diag_clear(&d);
	r = read_file_capped(rl->key_file, 65536, &pem, &n);
	if (r < 0) {
		(void)snprintf(rl->why, sizeof(rl->why), "cannot read its TLS key '%s': %s",
			       rl->key_file, strerror(-r));
		return r;
	}
	rl->tls = remote_tls_server(pem, NULL, &d);
	explicit_bzero(pem, n);
	free(pem);
	if (!rl->tls) {
		(void)snprintf(rl->why, sizeof(rl->why), "%s", d.msg);
		return -EINVAL;
	}
	SSL_CTX_set_num_tickets(rl->tls, 0);
	return 0;
}

/* A fresh TLS identity for a new job, kept in its key file (a resumed
 * relay shows the same certificate): its fingerprint in fp. */
static int relay_new_tls(struct relay *rl, char fp[REMOTE_FP_HEX + 1])
{
	char *pem = NULL;
	struct diag d;
	int r;

	diag_clear(&d);
	r = remote_tls_identity(&pem, fp, &d);
	if (r < 0) {
		(void)snprintf(rl->why, sizeof(rl->why), "%s", d.msg);
		return r;
	}
	r = atomic_replace_file(rl->key_file, pem, strlen(pem), 0600);
	if (r < 0)
		(void)snprintf(rl->why, sizeof(rl->why), "cannot write the TLS key '%s': %s",
			       rl->key_file, strerror(-r));
	if (r >= 0 && !(rl->tls = remote_tls_server(pem, NULL, &d))) {
		(void)snprintf(rl->why, sizeof(rl->why), "%s", d.msg);
		r = -EINVAL;
	}
	if (r >= 0)
		SSL_CTX_set_num_tickets(rl->tls, 0);
	explicit_bzero(pem, strlen(pem));
	free(pem);
	return r;
}

/* A job recorded in the job file: 1 to re-attach to it (still running),
 * 2 when its result was taken from the hub (it ended while nobody
 * listened), 0 to submit a new one. */
static int relay_recorded(struct relay *rl)
{
	bool started = false;
	char *s;

	relay_read_job(rl, &started);
	if (rl->job && !started) {
		/* submitted, but its node never had the invocation (the
		 * submitter died first): it can do nothing; a new one replaces it */
		relay_scancel(rl);
		free(rl->job);
		rl->job = NULL;
	}
	if (!rl->job)
		return 0;
	s = job_state(rl);
	if (state_alive(s)) {
		free(s);
		if (relay_load_tls(rl) < 0) {
			/* its node accepts no other certificate: it can do
			 * nothing for us; a new job replaces it */
			relay_err(rl, "cannot re-attach to Slurm job %s: %s; it is cancelled",
				  rl->job, rl->why);
			relay_scancel(rl);
			free(rl->job);
			rl->job = NULL;
			return 0;
		}
		relay_err(rl, "re-attached to Slurm job %s", rl->job);
		return 1;
	}
	free(s);
	relay_forget(rl);
	if (relay_fetch(rl) >= 0 && relay_moved(rl)) {
		relay_err(rl, "took the result of Slurm job %s from the hub", rl->job);
		return 2;
	}
	free(rl->job);
	rl->job = NULL;
	return 0;
}

/* The task's branch at the hub, as the worktree has it. */
static int relay_publish(struct relay *rl)
{
	const char *init[] = {"init", "-q", "--bare", rl->hub, NULL};
	const char *push[] = {"push", "-q", "--force", rl->hub, NULL, NULL};
	char *spec = sbuf_strf("HEAD:refs/heads/%s", rl->branch);
	int r;

	push[4] = spec;
	r = relay_hub_init(rl, init);
	if (r >= 0)
		r = git(rl->ctx->envp, rl->cwd, push, NULL, rl->why, sizeof(rl->why));
	free(spec);
	if (r < 0)
		relay_err(rl, "cannot publish the branch to the hub '%s': %s", rl->hub, rl->why);
	return r;
}

/* A new job: submitted, its connection accepted, the invocation sent, its
 * lines relayed (across a broken connection: the node dials again). The
 * agent's exit code, -ECONNRESET (the node stopped dialling: its result may
 * still be at the hub), -EINTR, or another < 0 (said; nothing left). */
static int relay_fresh(struct relay *rl, const char *stdin_data, size_t stdin_len)
{
	char token[REMOTE_TOKEN_HEX + 1], fp[REMOTE_FP_HEX + 1], *connect = NULL;
	struct conn cn = {.fd = -1};
	int lfd = -1, fd = -1, code, r;

	r = remote_token(token);
	if (r >= 0)
		r = relay_new_tls(rl, fp);
	if (r >= 0)
		r = relay_listen(rl, "0", &lfd, &connect);
	if (r >= 0)
		r = relay_submit(rl, connect, token, fp);
	if (r >= 0)
		r = fd = relay_accept(rl, lfd, token, &cn);
	if (r >= 0) {
		r = send_msg(cn.ssl, relay_invocation(rl, stdin_data, stdin_len));
		if (r < 0)
			(void)snprintf(rl->why, sizeof(rl->why), "cannot send the invocation: %s",
				       strerror(-r));
	}
	if (r >= 0) {
		/* from now on the node works without us if need be: a resume
		 * re-attaches to it where it dials */
		char *st = sbuf_strf("%s started %s %s", rl->job, connect, token);

		(void)atomic_replace_file(rl->job_file, st, strlen(st), 0600);
		free(st);
	}
	free(connect);
	if (r < 0) {
		free(cn.buf);
		SSL_free(cn.ssl);
		close_fdp(&fd);
		close_fdp(&lfd);
		explicit_bzero(token, sizeof(token));
		if (r != -EINTR)
			relay_err(rl, "%s", rl->why);
		if (r != -EINTR && r != -ENOLINK)
			relay_scancel(rl);
		if (r != -EINTR)
			relay_forget(rl);
		if (r == -ENOLINK && relay_node_failed(rl))
			relay_lost(rl, "before its agent connected");
		return r == -EINTR ? r : -EIO;
	}
	for (;;) {
		code = relay_stream(rl, &cn);
		close_fdp(&fd);
		if (code != -ECONNRESET)
			break;
		relay_err(rl, "lost the connection to Slurm job %s; waiting for it again", rl->job);
		fd = relay_accept(rl, lfd, token, &cn);
		if (fd == -EINTR)
			code = -EINTR;
		if (fd < 0)
			break;
	}
	close_fdp(&lfd);
	explicit_bzero(token, sizeof(token));
	return code;
}

/* A recorded job still running: its node dials the recorded address again
 * with the recorded token and replays the agent's lines from the start. */
static int relay_attach(struct relay *rl)
{
	const char *port = rl->rec_connect ? strrchr(rl->rec_connect, ':') : NULL;
	struct conn cn = {.fd = -1};
	char *connect = NULL;
	int lfd = -1, fd = -1, code = -ECONNRESET;

	if (port && relay_listen(rl, port + 1, &lfd, &connect) >= 0)
		fd = relay_accept(rl, lfd, rl->rec_token, &cn);
	close_fdp(&lfd);
	free(connect);
	if (fd >= 0) {
		code = relay_stream(rl, &cn);
		close_fdp(&fd);
	} else if (fd == -EINTR) {
		code = -EINTR;
	}
	return code;
}

/* After the agent (code) or a lost connection: the branch fetched from the
 * hub; the exit code. */
static int relay_finish(struct relay *rl, int code)
{
	int r;

	if (code == -ECONNRESET && relay_wait_job(rl) == -EINTR)
		code = -EINTR;
	close_fdp(&rl->bundle_fd);
	if (code == -EINTR) {
		relay_scancel(rl);
		(void)unlink(rl->bundle_file);
		return 128 + (arg_stop ? arg_stop : SIGTERM);
	}
	/* the node's bundle when it came whole with the agent's end; else
	 * the hub (a node that lost us pushed there, if the hub takes pushes) */
	if (code >= 0 && rl->bundle_bytes && !rl->bundle_bad) {
		r = relay_fetch_bundle(rl);
		if (r < 0) {
			relay_err(rl, "cannot take the node's bundle: %s", rl->why);
			(void)unlink(rl->bundle_file);
			relay_forget(rl);
			return BEXIT_FAILED;
		}
	} else {
		r = relay_fetch(rl);
	}
	(void)unlink(rl->bundle_file);
	relay_forget(rl);
	if (r < 0) {
		relay_err(rl, "cannot fetch the branch from the hub: %s", rl->why);
		return code > 0 ? code : BEXIT_FAILED;
	}
	if (code == -ECONNRESET) {
		if (relay_moved(rl))
			return 0;
		relay_lost(rl, "without its result");
		return BEXIT_FAILED;
	}
	return code;
}

/* Submit (or re-attach), relay, fetch: the exit code. */
static int relay_run(struct relay *rl)
{
	const char *rev[] = {"rev-parse", "HEAD", NULL};
	char *stdin_data = NULL;
	size_t stdin_len = 0;
	int code, mode;

	if (!getcwd(rl->cwd, sizeof(rl->cwd)))
		return BEXIT_ENV;
	if (git(rl->ctx->envp, rl->cwd, rev, &rl->base, rl->why, sizeof(rl->why)) < 0) {
		relay_err(rl, "cannot read the worktree's commit: %s", rl->why);
		return BEXIT_ENV;
	}
	mode = relay_recorded(rl);
	if (mode == 2)
		return 0;
	if (mode == 1)
		return relay_finish(rl, relay_attach(rl));
	if (relay_publish(rl) < 0)
		return BEXIT_ENV;
	if (read_fd_capped(STDIN_FILENO, 64u << 20, &stdin_data, &stdin_len) < 0)
		stdin_len = 0;
	code = relay_fresh(rl, stdin_data, stdin_len);
	free(stdin_data);
	if (code == -EIO)
		return BEXIT_FAILED;
	return relay_finish(rl, code);
}

enum {
	OPT_HUB = 256,
	OPT_HUB_URL,
	OPT_LISTEN,
	OPT_BERNSTEIN,
	OPT_BRANCH,
	OPT_JOB_FILE,
	OPT_SESSION_DIR,
	OPT_HOME,
	OPT_START_TIMEOUT,
	OPT_SBATCH,
	OPT_SLURM_CONF,
	OPT_SSH_COMMAND,
	OPT_NO_HUB_PUSH,
};

static const struct option relay_options[] = {
	{"hub", required_argument, NULL, OPT_HUB},
	{"hub-url", required_argument, NULL, OPT_HUB_URL},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"bernstein", required_argument, NULL, OPT_BERNSTEIN},
	{"branch", required_argument, NULL, OPT_BRANCH},
	{"job-file", required_argument, NULL, OPT_JOB_FILE},
	{"session-dir", required_argument, NULL, OPT_SESSION_DIR},
	{"home", required_argument, NULL, OPT_HOME},
	{"start-timeout", required_argument, NULL, OPT_START_TIMEOUT},
	{"sbatch", required_argument, NULL, OPT_SBATCH},
	{"slurm-conf", required_argument, NULL, OPT_SLURM_CONF},
	{"ssh-command", required_argument, NULL, OPT_SSH_COMMAND},
	{"no-hub-push", no_argument, NULL, OPT_NO_HUB_PUSH},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

int cmd_agent_relay(int argc, char **argv, struct cli_ctx *ctx)
{
	struct relay rl = {.ctx = ctx,
			   .bundle_fd = -1,
			   .start_timeout_s = EXECUTOR_SLURM_START_TIMEOUT_S,
			   .sbatch = STRVEC_INIT};
	struct sigaction sa = {.sa_handler = on_stop};
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", relay_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			strvec_clear(&rl.sbatch);
			return cli_help(ctx);
		case OPT_HUB:
			rl.hub = optarg;
			break;
		case OPT_HUB_URL:
			rl.hub_url = optarg;
			break;
		case OPT_LISTEN:
			rl.listen = optarg;
			break;
		case OPT_BERNSTEIN:
			rl.bernstein = optarg;
			break;
		case OPT_BRANCH:
			rl.branch = optarg;
			break;
		case OPT_JOB_FILE:
			rl.job_file = optarg;
			break;
		case OPT_SESSION_DIR:
			rl.session_dir = optarg;
			break;
		case OPT_HOME:
			rl.home = optarg;
			break;
		case OPT_START_TIMEOUT:
			rl.start_timeout_s = strtod(optarg, NULL);
			break;
		case OPT_SBATCH:
			strvec_push(&rl.sbatch, optarg);
			break;
		case OPT_SLURM_CONF:
			arg_slurm_conf = optarg;
			break;
		case OPT_SSH_COMMAND:
			rl.ssh_command = optarg;
			break;
		case OPT_NO_HUB_PUSH:
			rl.no_hub_push = true;
			break;
		default:
			strvec_clear(&rl.sbatch);
			return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!rl.hub || !rl.hub_url || !rl.listen || !rl.bernstein || !rl.branch || !rl.job_file ||
	    !rl.session_dir || !rl.home || optind >= argc || rl.start_timeout_s <= 0) {
		strvec_clear(&rl.sbatch);
		return cli_usage_error(ctx, "needs every option and the agent's argv after --");
	}
	rl.agent = argv + optind;
	rl.key_file = sbuf_strf("%s.tls", rl.job_file);
	rl.bundle_file = sbuf_strf("%s/result.bundle", rl.session_dir);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	r = relay_run(&rl);
	explicit_bzero(rl.rec_token, sizeof(rl.rec_token));
	free(rl.rec_connect);
	free(rl.key_file);
	SSL_CTX_free(rl.tls);
	close_fdp(&rl.bundle_fd);
	free(rl.bundle_file);
	strvec_clear(&rl.sbatch);
	free(rl.base);
	free(rl.job);
	return r;
}

/* ---- agent-exec ---- */

#define REPLAY_MAX	 (64u << 20)  /* the agent's lines kept for a re-attached relay */
#define NODE_BUNDLE_MAX	 (512u << 20) /* the branch's bundle sent back */
#define REDIAL_MS	 1000
#define REDIAL_WINDOW_MS (600u * 1000u) /* after the agent: how long a relay may take to return */

struct node {
	struct cli_ctx *ctx;
	int fd;	      /* -1: the relay is gone; the work goes on */
	SSL *ssl;     /* the TLS session on fd */
	SSL_CTX *tls; /* accepts only the certificate whose fingerprint is fp */
	uint8_t fp[REMOTE_FP_LEN];
	bool refused;	   /* the host showed another certificate */
	char tls_why[512]; /* why the last handshake failed */
	/* to dial again (a resumed relay listens where this one did, with the
	 * same token) and what to replay to it: every message after the hello */
	struct addrinfo *ai;
	const char *token;
	char host[256];
	struct sbuf replay;
	bool replay_full;
	uint64_t next_dial_ms;
	char dir[4096];
	char *wt, *home, *sess;
	const char *from_wt, *from_home, *from_sess;
	char why[1024];
};

static void node_close(struct node *nd)
{
	SSL_free(nd->ssl);
	nd->ssl = NULL;
	close_fdp(&nd->fd);
}

/* The TLS handshake with the host, which must show the pinned
 * certificate (nothing is sent before): the session, or NULL with
 * nd->tls_why (nd->refused: another certificate). */
static SSL *node_handshake(struct node *nd, int fd)
{
	SSL *ssl = SSL_new(nd->tls);
	char why[256];

	if (ssl && SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1 &&
	    remote_tls_peer_is(ssl, nd->fp))
		return ssl;
	remote_tls_error(why, sizeof(why));
	if (ssl && SSL_get_verify_result(ssl) != X509_V_OK) {
		nd->refused = true;
		(void)snprintf(
			nd->tls_why, sizeof(nd->tls_why),
			"the host's TLS certificate is not the one this job was given (BERNSTEIN_EXEC_FINGERPRINT): refused, nothing sent (%s)",
			why);
	} else {
		(void)snprintf(nd->tls_why, sizeof(nd->tls_why),
			       "no TLS handshake with the host: %s", why);
	}
	SSL_free(ssl);
	return NULL;
}

/* One connection attempt: the hello, then everything said so far. */
static void node_dial(struct node *nd, bool replay)
{
	SSL *ssl;
	json_t *hello;
	int fd;

	fd = socket(nd->ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* connect and send: 2 s (a relay that does not answer is gone: dial
	 * again later); a busy relay may take longer to answer the handshake */
	sock_timeouts(fd, 2000);
	if (connect(fd, nd->ai->ai_addr, nd->ai->ai_addrlen) < 0) {
		(void)close(fd);
		return;
	}
	sock_timeouts(fd, HELLO_TIMEOUT_MS);
	ssl = node_handshake(nd, fd);
	if (!ssl) {
		(void)close(fd);
		return;
	}
	sock_timeouts(fd, 2000);
	hello = json_pack("{s:s, s:s}", "token", nd->token, "node", nd->host);
	if (send_msg(ssl, hello) < 0 ||
	    (replay && nd->replay.len && tls_write_all(ssl, nd->replay.buf, nd->replay.len) < 0)) {
		SSL_free(ssl);
		(void)close(fd);
		return;
	}
	nd->ssl = ssl;
	nd->fd = fd;
}

/* The relay is gone: dial again now and then (its resumed successor). */
static void node_redial(struct node *nd)
{
	if (nd->fd >= 0 || nd->replay_full || now_ms() < nd->next_dial_ms)
		return;
	nd->next_dial_ms = now_ms() + REDIAL_MS;
	node_dial(nd, true);
}

static void node_send(struct node *nd, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (!s)
		return;
	if (!nd->replay_full && (sbuf_adds(&nd->replay, s) < 0 || sbuf_addc(&nd->replay, '\n') < 0))
		nd->replay_full = true; /* past the cap: a re-attach gets nothing */
	if (nd->fd >= 0 &&
	    (tls_write_all(nd->ssl, s, strlen(s)) < 0 || tls_write_all(nd->ssl, "\n", 1) < 0))
		node_close(nd);
	free(s);
}

static void node_line(struct node *nd, const char *key, const char *s, size_t n)
{
	json_t *v;

	if (utf8_valid(s, n)) {
		v = json_stringn(s, n);
	} else {
		char *c = xstrndup(s, n);
		size_t i;

		for (i = 0; i < n; i++)
			if ((unsigned char)c[i] >= 0x80)
				c[i] = '?';
		v = json_stringn(c, n);
		free(c);
	}
	node_send(nd, json_pack("{s:o}", key, v));
}

/* s with the submitting host's directories replaced by this node's. */
static char *node_map(const struct node *nd, const char *s)
{
	const char *from[3] = {nd->from_wt, nd->from_home, nd->from_sess};
	const char *to[3] = {nd->wt, nd->home, nd->sess};
	size_t i;

	for (i = 0; i < 3; i++) {
		size_t n = from[i] ? strlen(from[i]) : 0;
		const char *p = n ? strstr(s, from[i]) : NULL;

		if (p && (p[n] == '\0' || p[n] == '/')) {
			char *head = xstrndup(s, (size_t)(p - s));
			char *r = sbuf_strf("%s%s%s", head, to[i], p + n);

			free(head);
			return r;
		}
	}
	return xstrdup(s);
}

/* Forward the agent's lines until both its pipes closed. */
static void node_pump(struct node *nd, struct proc *p)
{
	struct sbuf bufs[2] = {SBUF_INIT(SIZE_MAX), SBUF_INIT(SIZE_MAX)};
	int fds[2] = {p->out_fd, p->err_fd};
	const char *keys[2] = {"out", "err"};
	char chunk[65536];
	bool killed = false;
	int i;

	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd pf[2] = {{.fd = fds[0], .events = POLLIN},
				       {.fd = fds[1], .events = POLLIN}};

		node_redial(nd);
		/* scancel: the agent's whole tree goes at once (Slurm's own
		 * SIGKILL follows its KillWait anyway) */
		if (arg_stop && !killed) {
			(void)proc_kill_group(p, SIGKILL);
			killed = true;
		}
		if (poll(pf, 2, nd->fd < 0 ? REDIAL_MS : -1) < 0 && errno != EINTR)
			break;
		for (i = 0; i < 2; i++) {
			ssize_t n;
			char *nl;

			if (fds[i] < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(fds[i], chunk, sizeof(chunk));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				if (bufs[i].len)
					node_line(nd, keys[i], bufs[i].buf, bufs[i].len);
				fds[i] = -1;
				continue;
			}
			(void)sbuf_add(&bufs[i], chunk, (size_t)n);
			while (bufs[i].len && (nl = memchr(bufs[i].buf, '\n', bufs[i].len))) {
				size_t len = (size_t)(nl - bufs[i].buf);

				node_line(nd, keys[i], bufs[i].buf, len);
				memmove(bufs[i].buf, nl + 1, bufs[i].len - len - 1);
				bufs[i].len -= len + 1;
				bufs[i].buf[bufs[i].len] = '\0';
			}
			if (bufs[i].len > REMOTE_LINE_MAX / 2) {
				node_line(nd, keys[i], bufs[i].buf, bufs[i].len);
				sbuf_reset(&bufs[i]);
			}
		}
	}
	sbuf_release(&bufs[0]);
	sbuf_release(&bufs[1]);
}

/* Whether the relay closed its end (it died): then nd->fd is -1. */
static bool node_relay_gone(struct node *nd)
{
	struct pollfd p = {.fd = nd->fd, .events = POLLIN};
	size_t got = 0;
	char c;

	/* the relay sends nothing after the invocation: what arrives is its
	 * end (or a stray record, read and dropped) */
	if (nd->fd >= 0 && poll(&p, 1, 0) == 1 && SSL_read_ex(nd->ssl, &c, 1, &got) != 1) {
		int e = SSL_get_error(nd->ssl, 0);

		ERR_clear_error();
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			node_close(nd);
	}
	return nd->fd < 0;
}

/* A git command with the hub (the clone, the push); while the relay is
 * gone (its bernstein was killed, and with it a hub it served), tried again
 * every second until it is back or REDIAL_WINDOW_MS passed. fresh: the
 * clone's directory removed before another try. */
static int node_git_retry(struct node *nd, const char *dir, const char *const *args, bool fresh)
{
	uint64_t end = now_ms() + REDIAL_WINDOW_MS;
	int r;

	while ((r = git(nd->ctx->envp, dir, args, NULL, nd->why, sizeof(nd->why))) < 0 &&
	       node_relay_gone(nd) && !arg_stop && now_ms() < end) {
		if (fresh)
			(void)rmtree_beneath(nd->wt);
		(void)poll(NULL, 0, REDIAL_MS);
		node_redial(nd);
	}
	return r;
}

static const char *jstr_of(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The task's HOME files the relay sent, written under the node's HOME:
 * each path relative, without an empty, "." or ".." component; modes
 * within 0700. 0, or -1 with nd->why. */
static int node_home_files(struct node *nd, const json_t *inv)
{
	const json_t *files = json_object_get(inv, "home_files"), *f;
	size_t i;

	json_array_foreach(files, i, f)
	{
		const char *rel = jstr_of(f, "path"), *content = jstr_of(f, "content");
		json_int_t mode = json_integer_value(json_object_get(f, "mode"));
		char *path, *slash;
		int fd, r = 0;

		if (!rel || !content || !remote_home_path_ok(rel)) {
			(void)snprintf(nd->why, sizeof(nd->why), "a HOME file with a bad path");
			return -1;
		}
		path = sbuf_strf("%s/%s", nd->home, rel);
		slash = strrchr(path, '/');
		*slash = '\0';
		r = mkdir_p(path, 0700);
		*slash = '/';
		fd = r < 0 ? -1
			   : open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				  (mode_t)((mode & 0700) | 0400));
		if (fd < 0 || write_all(fd, content, strlen(content)) < 0) {
			(void)snprintf(nd->why, sizeof(nd->why), "cannot write the HOME file '%s'",
				       rel);
			if (fd >= 0)
				(void)close(fd);
			free(path);
			return -1;
		}
		(void)close(fd);
		free(path);
	}
	return 0;
}

/* The ssh the node's git runs for the hub (slurm.ssh_command), when the
 * invocation names one: 0, or -1 with nd->why. */
static int node_ssh(struct node *nd, const json_t *inv)
{
	const json_t *ssh = json_object_get(inv, "ssh_command");

	if (ssh && (!json_is_string(ssh) || !json_string_length(ssh))) {
		(void)snprintf(nd->why, sizeof(nd->why),
			       "the invocation's ssh_command is not a command");
		return -1;
	}
	arg_ssh_command = json_string_value(ssh);
	return 0;
}

static void node_result(struct node *nd, const json_t *inv, char **ret_pushed);

/* Clone, run, commit, push: the agent's exit code, or -1 with nd->why. */
static int node_run(struct node *nd, const json_t *inv, char **ret_pushed)
{
	const char *hub = jstr_of(inv, "hub"), *branch = jstr_of(inv, "branch"),
		   *base = jstr_of(inv, "base"), *in = jstr_of(inv, "stdin");
	const json_t *jargv = json_object_get(inv, "argv"), *jenv = json_object_get(inv, "env");
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	struct diag d;
	char *head = NULL, *stdin_path = NULL;
	const json_t *v;
	size_t i;
	int r, code;

	if (!hub || !branch || !base || !json_is_array(jargv) || !json_array_size(jargv) ||
	    !json_is_array(jenv)) {
		(void)snprintf(nd->why, sizeof(nd->why), "the invocation lacks a field");
		return -1;
	}
	{
		const char *clone[] = {"clone", "-q",	"--no-tags", "--single-branch",
				       "-b",	branch, hub,	     nd->wt,
				       NULL};
		const char *rev[] = {"rev-parse", "HEAD", NULL};

		if (node_git_retry(nd, nd->dir, clone, true) < 0 ||
		    git(nd->ctx->envp, nd->wt, rev, &head, nd->why, sizeof(nd->why)) < 0)
			return -1;
		if (strcmp(head, base) != 0) {
			(void)snprintf(nd->why, sizeof(nd->why),
				       "the hub's '%s' is at %.12s, not the task's base %.12s",
				       branch, head, base);
			free(head);
			return -1;
		}
		free(head);
		head = NULL;
	}
	json_array_foreach(jargv, i, v) if (json_is_string(v))
		push_owned(&spec.argv, node_map(nd, json_string_value(v)));
	json_array_foreach(jenv, i, v) if (json_is_string(v))
		push_owned(&spec.env, node_map(nd, json_string_value(v)));
	spec.cwd = nd->wt;
	spec.flags = SPAWN_DEFAULT;
	if (in && *in) {
		stdin_path = sbuf_strf("%s/stdin", nd->dir);
		r = atomic_replace_file(stdin_path, in, strlen(in), 0600);
		if (r >= 0)
			spec.stdin_fd = open(stdin_path, O_RDONLY | O_CLOEXEC);
	}
	diag_clear(&d);
	r = proc_spawn(&spec, &p, &d);
	if (r < 0) {
		(void)snprintf(nd->why, sizeof(nd->why), "cannot start the agent: %s", d.msg);
		code = p.exit_code ? p.exit_code : 127;
	} else {
		node_pump(nd, &p);
		(void)proc_wait(&p);
		code = p.exit_code;
	}
	proc_release(&p);
	proc_spec_release(&spec);
	free(stdin_path);
	if (arg_stop) {
		(void)snprintf(nd->why, sizeof(nd->why), "the job was cancelled");
		return -1;
	}
	node_result(nd, inv, ret_pushed);
	return code;
}

/* The branch as a git bundle (BASE..refs/heads/BRANCH) sent on the
 * connection in chunks: 0, or -1 with nd->why. */
static int node_bundle(struct node *nd, const char *base, const char *branch)
{
	char *file = sbuf_strf("%s/result.bundle", nd->dir),
	     *ref = sbuf_strf("refs/heads/%s", branch);
	char *range = sbuf_strf("%s..%s", base, ref), *data = NULL;
	const char *update[] = {"update-ref", ref, "HEAD", NULL};
	const char *create[] = {"bundle", "create", "-q", file, range, NULL};
	size_t n = 0, off;
	int r;

	r = git(nd->ctx->envp, nd->wt, update, NULL, nd->why, sizeof(nd->why));
	if (r >= 0)
		r = git(nd->ctx->envp, nd->wt, create, NULL, nd->why, sizeof(nd->why));
	if (r >= 0 && (r = read_file_capped(file, NODE_BUNDLE_MAX, &data, &n)) < 0)
		(void)snprintf(nd->why, sizeof(nd->why), "cannot read the branch's bundle: %s",
			       strerror(-r));
	for (off = 0; r >= 0 && off < n; off += REMOTE_BUNDLE_CHUNK) {
		size_t k = n - off < REMOTE_BUNDLE_CHUNK ? n - off : REMOTE_BUNDLE_CHUNK;
		char *b64 = remote_b64_encode(data + off, k);

		node_send(nd, json_pack("{s:s}", "bundle", b64));
		free(b64);
	}
	(void)unlink(file);
	free(data);
	free(file);
	free(ref);
	free(range);
	return r < 0 ? -1 : 0;
}

/* What the agent left uncommitted, committed; the branch sent back as a
 * bundle on the connection, and pushed to the hub unless the invocation
 * says the hub takes no push (bernstein's own git daemon is read-only). */
static void node_result(struct node *nd, const json_t *inv, char **ret_pushed)
{
	const char *hub = jstr_of(inv, "hub"), *branch = jstr_of(inv, "branch"),
		   *base = jstr_of(inv, "base");
	bool push_hub = !json_is_false(json_object_get(inv, "hub_push"));
	char *head = NULL;

	{
		const char *name = jstr_of(inv, "git_name"), *email = jstr_of(inv, "git_email");
		char *un = sbuf_strf("user.name=%s", name ? name : "bernstein");
		char *ue = sbuf_strf("user.email=%s", email ? email : "bernstein@localhost");
		const char *add[] = {"add", "-A", "--", ".", ":(exclude).bernstein", NULL};
		const char *commit[] = {"-c",
					un,
					"-c",
					ue,
					"commit",
					"-q",
					"--no-verify",
					"-m",
					"bernstein: the agent's uncommitted work",
					NULL};
		const char *status[] = {"status", "--porcelain", NULL};
		const char *rev[] = {"rev-parse", "HEAD", NULL};
		char *st = NULL, *refspec = sbuf_strf("HEAD:refs/heads/%s", branch);
		const char *push[] = {"push", "-q", "--force", hub, refspec, NULL};

		if (git(nd->ctx->envp, nd->wt, add, NULL, nd->why, sizeof(nd->why)) >= 0 &&
		    git(nd->ctx->envp, nd->wt, status, &st, nd->why, sizeof(nd->why)) >= 0 && *st)
			(void)git(nd->ctx->envp, nd->wt, commit, NULL, nd->why, sizeof(nd->why));
		free(st);
		if (git(nd->ctx->envp, nd->wt, rev, &head, nd->why, sizeof(nd->why)) >= 0 &&
		    strcmp(head, base) != 0 &&
		    (!push_hub || node_git_retry(nd, nd->wt, push, false) >= 0) &&
		    node_bundle(nd, base, branch) >= 0) {
			*ret_pushed = head;
			head = NULL;
		} else if (head && strcmp(head, base) != 0) {
			node_send(nd, json_pack("{s:s}", "error", nd->why));
		}
		free(head);
		free(un);
		free(ue);
		free(refspec);
	}
}

/* The first connection to the relay (a few tries: a link that is still
 * coming up refuses at first): 0, or -1 said. */
static int node_connect(struct node *nd, const char *dial)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	char *hp = xstrdup(dial), *colon = strrchr(hp, ':');
	size_t i;
	int r;

	if (colon)
		*colon = '\0';
	if (hp[0] == '[' && colon && colon[-1] == ']') {
		colon[-1] = '\0';
		memmove(hp, hp + 1, strlen(hp));
	}
	r = colon ? getaddrinfo(hp, colon + 1, &hints, &nd->ai) : EAI_NONAME;
	free(hp);
	(void)gethostname(nd->host, sizeof(nd->host) - 1);
	for (i = 0; r == 0 && i < 10 && nd->fd < 0 && !nd->refused; i++) {
		if (i)
			(void)poll(NULL, 0, 500);
		node_dial(nd, false);
	}
	if (nd->fd >= 0)
		return 0;
	(void)fprintf(nd->ctx->err, "%s agent-exec: cannot connect to '%s'%s%s\n",
		      nd->ctx->progname, dial, nd->tls_why[0] ? ": " : "", nd->tls_why);
	if (nd->ai)
		freeaddrinfo(nd->ai);
	nd->ai = NULL;
	return -1;
}

/* The invocation the relay sends (caller decrefs), or NULL. */
static json_t *node_invocation(struct node *nd)
{
	struct conn c = {.fd = nd->fd, .ssl = nd->ssl};
	json_error_t je;
	json_t *msg = NULL;
	size_t n;

	if (conn_read_line(&c, 60000, &n) == 1)
		msg = json_loadb(c.buf, n, 0, &je);
	free(c.buf);
	if (json_is_object(json_object_get(msg, "invocation")))
		return msg;
	json_decref(msg);
	return NULL;
}

/* In a directory of its own: the agent, its result; everything said. */
static int node_work(struct node *nd, const json_t *inv, const char *tmp)
{
	char *pushed = NULL;
	int code = -1;

	(void)snprintf(nd->dir, sizeof(nd->dir), "%s/bernstein-exec.XXXXXX",
		       tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(nd->dir)) {
		node_send(nd, json_pack("{s:s}", "error", "cannot create a directory in TMPDIR"));
		return -1;
	}
	nd->wt = sbuf_strf("%s/wt", nd->dir);
	nd->home = sbuf_strf("%s/home", nd->dir);
	nd->sess = sbuf_strf("%s/session", nd->dir);
	nd->from_wt = jstr_of(inv, "worktree");
	nd->from_home = jstr_of(inv, "home");
	nd->from_sess = jstr_of(inv, "session_dir");
	(void)mkdir(nd->home, 0700);
	(void)mkdir(nd->sess, 0700);
	code = node_home_files(nd, inv);
	if (code == 0)
		code = node_ssh(nd, inv);
	if (code == 0)
		code = node_run(nd, inv, &pushed);
	if (code < 0)
		node_send(nd, json_pack("{s:s}", "error", nd->why));
	node_send(nd, json_pack("{s:s?}", "pushed", pushed));
	(void)rmtree_beneath(nd->dir);
	free(pushed);
	return code;
}

int cmd_agent_exec(int argc, char **argv, struct cli_ctx *ctx)
{
	const char *dial = cli_getenv(ctx, "BERNSTEIN_EXEC_CONNECT");
	const char *tokenv = cli_getenv(ctx, "BERNSTEIN_EXEC_TOKEN");
	const char *fpv = cli_getenv(ctx, "BERNSTEIN_EXEC_FINGERPRINT");
	struct diag d;
	const char *tmp = cli_getenv(ctx, "TMPDIR");
	struct node nd = {.ctx = ctx, .fd = -1, .replay = SBUF_INIT(REPLAY_MAX)};
	struct sigaction sa = {.sa_handler = on_stop};
	json_t *msg;
	uint64_t end;
	size_t i, j;
	int code;

	(void)argv;
	if (argc > 1)
		return cli_usage_error(ctx, "takes no arguments");
	if (!dial || !tokenv || strlen(tokenv) != REMOTE_TOKEN_HEX || !fpv)
		return cli_usage_error(
			ctx,
			"needs BERNSTEIN_EXEC_CONNECT, BERNSTEIN_EXEC_TOKEN and BERNSTEIN_EXEC_FINGERPRINT");
	diag_clear(&d);
	if (remote_fp_parse(fpv, strlen(fpv), nd.fp, &d) < 0)
		return cli_usage_error(ctx, "BERNSTEIN_EXEC_FINGERPRINT: %s", d.msg);
	nd.tls = remote_tls_client(nd.fp, &d);
	if (!nd.tls) {
		(void)fprintf(ctx->err, "%s agent-exec: %s\n", ctx->progname, d.msg);
		return BEXIT_ENV;
	}
	(void)signal(SIGPIPE, SIG_IGN);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);
	nd.token = tokenv;
	if (node_connect(&nd, dial) < 0) {
		SSL_CTX_free(nd.tls);
		return BEXIT_ENV;
	}
	/* the token and the address leave the environment the agent gets */
	for (i = j = 0; ctx->envp[i]; i++)
		if (strncmp(ctx->envp[i], "BERNSTEIN_EXEC_", 15) != 0)
			ctx->envp[j++] = ctx->envp[i];
	ctx->envp[j] = NULL;
	msg = node_invocation(&nd);
	if (!msg) {
		(void)fprintf(ctx->err, "%s agent-exec: no invocation from '%s'\n", ctx->progname,
			      dial);
		node_close(&nd);
		SSL_CTX_free(nd.tls);
		freeaddrinfo(nd.ai);
		return BEXIT_ENV;
	}
	code = node_work(&nd, json_object_get(msg, "invocation"), tmp);
	node_send(&nd, json_pack("{s:i}", "exit", code < 0 ? 125 : code));
	/* the relay went away: its resumed successor gets everything (the
	 * branch is at the hub already; this only brings the agent's lines) */
	end = now_ms() + REDIAL_WINDOW_MS;
	while (nd.fd < 0 && !nd.replay_full && !arg_stop && now_ms() < end) {
		(void)poll(NULL, 0, REDIAL_MS);
		node_redial(&nd);
	}
	node_close(&nd);
	SSL_CTX_free(nd.tls);
	freeaddrinfo(nd.ai);
	sbuf_release(&nd.replay);
	json_decref(msg);
	free(nd.wt);
	free(nd.home);
	free(nd.sess);
	return code < 0 ? BEXIT_ENV : 0;
}
