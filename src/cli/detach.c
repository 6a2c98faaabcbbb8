/* The run in the background (see detach.h). */
#include "cli/detach.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/output.h"
#include "cli/run-session.h"
#include "orch/agentrun.h"
#include "orch/run.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

#define MSG_MAX	     (PATH_MAX * 2 + 128)
#define LOG_SHOW_MAX (64 * 1024) /* of run.log, shown when the run ended first */

static void detach_write(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* The tail of the run's log onto the caller's stderr. */
static void show_log(struct cli_ctx *ctx, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t from = st.st_size > LOG_SHOW_MAX ? st.st_size - LOG_SHOW_MAX : 0;
		ssize_t n;

		text = xmalloc(LOG_SHOW_MAX + 1);
		while (len < LOG_SHOW_MAX &&
		       (n = pread(fd, text + len, LOG_SHOW_MAX - len, from + (off_t)len)) > 0)
			len += (size_t)n;
		(void)fwrite(text, 1, len, ctx->err);
		(void)fflush(ctx->err);
	}
	free(text);
	(void)close(fd);
}

/* The parent: read the child's messages to the end, then decide. */
static int parent_wait(struct cli_ctx *ctx, pid_t child, int fd)
{
	char buf[MSG_MAX], run_id[128] = "", log[PATH_MAX] = "";
	size_t len = 0;
	bool started = false;
	int status = 0, code;
	char *p, *nl;

	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	(void)close(fd);
	buf[len] = '\0';
	/* "L RUN\tLOG\n" once the run is known, "S\n" once it listens */
	for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		*nl = '\0';
		if (p[0] == 'L' && p[1] == ' ') {
			char *tab = strchr(p + 2, '\t');

			if (tab) {
				*tab = '\0';
				(void)snprintf(run_id, sizeof(run_id), "%s", p + 2);
				(void)snprintf(log, sizeof(log), "%s", tab + 1);
			}
		} else if (strcmp(p, "S") == 0) {
			started = true;
		}
	}
	if (started && run_id[0]) {
		if (ctx->json) {
			json_t *o = json_object();

			cli_jset(o, "run", cli_jstr(run_id));
			cli_jset(o, "pid", json_integer((json_int_t)child));
			cli_jset(o, "log", cli_jstr(log));
			return cli_print_json(ctx, o);
		}
		(void)fprintf(ctx->out,
			      "run %s: running in the background (pid %ld)\n"
			      "  follow:  bernstein attach %s\n"
			      "  log:     %s\n"
			      "  stop:    bernstein stop\n",
			      run_id, (long)child, run_id, log);
		(void)fflush(ctx->out);
		return 0;
	}
	/* the child ended before the run started: its exit code is ours */
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return cli_error(ctx, BEXIT_ENV, "cannot wait for the detached run: %s",
					 strerror(errno));
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (run_id[0]) {
		show_log(ctx, log);
		if (code == 0)
			return 0; /* it ran to its end meanwhile */
		return cli_error(ctx, code, "run %s ended before it started (exit %d); its log: %s",
				 run_id, code, log);
	}
	return code;
}

int detach_fork(struct cli_ctx *ctx, bool *ret_child, int *ret_fd)
{
	int pfd[2] = {-1, -1}, null_fd;
	pid_t pid;

	*ret_child = false;
	(void)fflush(ctx->out);
	(void)fflush(ctx->err);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot detach the run: pipe: %s",
				 strerror(errno));
	pid = fork();
	if (pid < 0) {
		int e = errno;

		(void)close(pfd[0]);
		(void)close(pfd[1]);
		return cli_error(ctx, BEXIT_ENV, "cannot detach the run: fork: %s", strerror(e));
	}
	if (pid > 0) {
		(void)close(pfd[1]);
		return parent_wait(ctx, pid, pfd[0]);
	}
	/* the child: a session of its own, no terminal input */
	(void)close(pfd[0]);
	if (setsid() < 0)
		_exit(BEXIT_ENV);
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0)
		_exit(BEXIT_ENV);
	if (null_fd != STDIN_FILENO)
		(void)close(null_fd);
	*ret_child = true;
	*ret_fd = pfd[1];
	return 0;
}

/* The run's directory, checked: a directory of this user's (not a
 * symlink); an fd or -errno. */
static int open_run_dir(const char *dir)
{
	struct stat st;
	int fd, r;

	r = mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		(void)close(fd);
		return -EPERM;
	}
	return fd;
}

/* run.log in dfd: appended to, a regular file of this user's with one link,
 * never through a symlink (O_NOFOLLOW) nor a FIFO (O_NONBLOCK). */
static int open_log(int dfd, const char **ret_why)
{
	struct stat st;
	int fd, fl;

	fd = openat(dfd, DETACH_LOG,
		    O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		int e = errno;

		*ret_why = e == ELOOP ? "it is a symlink; not following it" : strerror(e);
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		*ret_why = "not a regular file of this user's with one link; not writing into it";
		(void)close(fd);
		return -EPERM;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || fchmod(fd, 0600) < 0) {
		int e = errno;

		*ret_why = strerror(e);
		(void)close(fd);
		return -e;
	}
	return fd;
}

int detach_log(struct session *s, const char *run_id)
{
	struct cli_ctx *ctx = s->ctx;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	const char *why = NULL;
	char *dir = NULL, *log = NULL, msg[MSG_MAX];
	int dfd = -1, fd = -1, code = 0;

	if (s->detach_fd < 0)
		return 0;
	(void)sbuf_addf(&sb, "%s/%s/%s", s->repo, AGENTRUN_RUNS_DIR, run_id);
	dir = sbuf_detach(&sb, NULL);
	log = agentrun_path(dir, DETACH_LOG);
	dfd = open_run_dir(dir);
	if (dfd < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot open the run's directory '%s': %s", dir,
				 dfd == -EPERM ? "not a directory of this user's" : strerror(-dfd));
		goto out;
	}
	fd = open_log(dfd, &why);
	if (fd < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot open the run's log '%s': %s", log, why);
		goto out;
	}
	(void)fflush(ctx->out);
	(void)fflush(ctx->err);
	(void)fflush(stdout);
	(void)fflush(stderr);
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		code = cli_error(ctx, BEXIT_ENV, "cannot write to the run's log '%s': %s", log,
				 strerror(errno));
		goto out;
	}
	s->tty = false; /* lines, not the live table */
	(void)snprintf(msg, sizeof(msg), "L %s\t%s\n", run_id, log);
	detach_write(s->detach_fd, msg, strlen(msg));
out:
	if (fd >= 0)
		(void)close(fd);
	if (dfd >= 0)
		(void)close(dfd);
	free(dir);
	free(log);
	return code;
}

void detach_started(struct session *s)
{
	if (s->detach_fd < 0)
		return;
	detach_write(s->detach_fd, "S\n", 2);
	(void)close(s->detach_fd);
	s->detach_fd = -1;
}

int detach_lock_held(const char *repo, long *ret_pid)
{
	char *path = agentrun_path(repo, ORCH_LOCK_FILE), *line = NULL;
	struct stat st;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	if (stat(path, &st) < 0) {
		int e = errno;

		free(path);
		return e == ENOENT ? 0 : -e;
	}
	free(path);
	f = fopen("/proc/locks", "re");
	if (!f)
		return -errno;
	/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line
	 * has "->" after the number */
	while (!found && getline(&line, &cap, f) > 0) {
		char type[16], mode[16], rw[16];
		unsigned maj, min;
		unsigned long ino;
		long pid;

		if (strstr(line, "->"))
			continue;
		if (sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%lu", type, mode, rw, &pid, &maj,
			   &min, &ino) != 7)
			continue;
		if (strcmp(type, "FLOCK") != 0 || ino != (unsigned long)st.st_ino)
			continue;
		/* the device as the kernel names it; some file systems
		 * (overlayfs) report another in stat(): the inode decides */
		(void)maj;
		(void)min;
		found = 1;
		if (ret_pid)
			*ret_pid = pid;
	}
	free(line);
	(void)fclose(f);
	return found;
}
