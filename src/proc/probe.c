#include "proc/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define PROBE_DEFAULT_TIMEOUT_MS 5000
#define PROBE_DEFAULT_MAX_OUTPUT 65536
#define PROBE_DEFAULT_PARALLEL	 16
#define PROBE_KILL_GRACE_MS	 500 /* SIGTERM -> SIGKILL */
#define PROBE_DRAIN_MS		 200 /* reading after the child exited */
#define PROBE_POLL_CAP_MS	 50  /* exits are noticed by polling waitid() */
#define PROBE_READ_CHUNK	 32768
#define PROBE_READS_PER_WAKEUP	 16 /* one flooding child cannot starve the others */

/* ---- PATH search ---------------------------------------------------------- */

/* 0 if path is an executable regular file, -EACCES if it is a non-executable
 * regular file (or a directory, which execve refuses the same way), -ENOENT
 * otherwise. */
static int check_exec(const char *path, bool dirs_are_eacces)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == EACCES ? -EACCES : -ENOENT;
	if (S_ISDIR(st.st_mode))
		return dirs_are_eacces ? -EACCES : -ENOENT;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (access(path, X_OK) < 0)
		return -EACCES;
	return 0;
}

int path_search(const char *name, const char *path_env, char **ret)
{
	const char *p, *end;
	bool saw_eacces = false;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int r;

	if (!name || !*name || !ret)
		return -EINVAL;
	if (strchr(name, '/')) {
		r = check_exec(name, true);
		if (r < 0)
			return r;
		*ret = xstrdup(name);
		return 0;
	}
	if (!path_env || !*path_env)
		return -ENOENT;

	r = -ENOENT;
	for (p = path_env;; p = end + 1) {
		size_t dlen;
		int k;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		sbuf_reset(&sb);
		if (dlen == 0)
			(void)sbuf_addc(&sb, '.'); /* empty element = current directory */
		else
			(void)sbuf_add(&sb, p, dlen);
		if (sb.buf[sb.len - 1] != '/')
			(void)sbuf_addc(&sb, '/');
		(void)sbuf_adds(&sb, name);

		k = check_exec(sb.buf, false);
		if (k == 0) {
			*ret = sbuf_detach(&sb, NULL);
			r = 0;
			break;
		}
		if (k == -EACCES)
			saw_eacces = true;
		if (!*end)
			break;
	}
	if (r < 0 && saw_eacces)
		r = -EACCES;
	sbuf_release(&sb);
	return r;
}

/* ---- ANSI stripping ------------------------------------------------------- */

size_t ansi_strip(char *s, size_t len)
{
	size_t i = 0, o = 0;

	if (!s)
		return 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\r') {
			/* keep the CR of CRLF, drop a lone CR */
			if (i + 1 < len && s[i + 1] == '\n')
				s[o++] = s[i];
			i++;
			continue;
		}
		if (c != 0x1b) {
			s[o++] = s[i++];
			continue;
		}
		/* ESC */
		if (i + 1 >= len) {
			i++; /* lone trailing ESC */
			continue;
		}
		c = (unsigned char)s[i + 1];
		if (c == '[') {
			/* CSI: parameter/intermediate bytes 0x20-0x3F, final 0x40-0x7E.
			 * Any other byte aborts the sequence and is kept. */
			size_t j = i + 2;

			while (j < len && (unsigned char)s[j] >= 0x20 &&
			       (unsigned char)s[j] <= 0x3f)
				j++;
			if (j < len && (unsigned char)s[j] >= 0x40 && (unsigned char)s[j] <= 0x7e)
				j++;
			i = j;
		} else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
			/* OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \);
			 * unterminated strings run to the end */
			size_t j = i + 2;

			while (j < len) {
				if (s[j] == '\a') {
					j++;
					break;
				}
				if (s[j] == 0x1b && j + 1 < len && s[j + 1] == '\\') {
					j += 2;
					break;
				}
				j++;
			}
			i = j;
		} else if (c >= 0x20 && c <= 0x2f) {
			/* nF: ESC, intermediates 0x20-0x2F, final 0x30-0x7E ("ESC ( B") */
			size_t j = i + 1;

			while (j < len && (unsigned char)s[j] >= 0x20 &&
			       (unsigned char)s[j] <= 0x2f)
				j++;
			if (j < len && (unsigned char)s[j] >= 0x30 && (unsigned char)s[j] <= 0x7e)
				j++;
			i = j;
		} else if (c >= 0x30 && c <= 0x7e) {
			i += 2; /* two-byte ESC X */
		} else {
			i++; /* ESC before a control byte: drop the ESC only */
		}
	}
	s[o] = '\0';
	return o;
}

/* ---- results -------------------------------------------------------------- */

const char *probe_status_name(enum probe_status s)
{
	static const char *const names[_PROBE_STATUS_MAX] = {
		[PROBE_OK] = "ok",
		[PROBE_NOT_FOUND] = "not-found",
		[PROBE_SPAWN_FAILED] = "spawn-failed",
		[PROBE_EXIT_NONZERO] = "exit-nonzero",
		[PROBE_SIGNALED] = "signaled",
		[PROBE_TIMED_OUT] = "timed-out",
	};

	if ((unsigned)s >= _PROBE_STATUS_MAX)
		return "invalid";
	return names[s];
}

void probe_release(struct probe *p)
{
	if (!p)
		return;
	free(p->resolved);
	p->resolved = NULL;
	free(p->output);
	p->output = NULL;
	p->output_len = 0;
	p->output_truncated = false;
	free(p->first_line);
	p->first_line = NULL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* First line of s[0..len) that is non-empty after trimming, or NULL. */
static char *first_nonempty_line(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t b = i, e;

		while (i < len && s[i] != '\n')
			i++;
		e = i;
		if (i < len)
			i++; /* the '\n' */
		while (b < e && is_blank(s[b]))
			b++;
		while (e > b && is_blank(s[e - 1]))
			e--;
		if (e > b)
			return xstrndup(s + b, e - b);
	}
	return NULL;
}

/* ---- the poll loop -------------------------------------------------------- */

enum slot_state {
	SLOT_PENDING,
	SLOT_RUNNING,  /* spawned, not exited */
	SLOT_DRAINING, /* exited and reaped, pipes still open */
	SLOT_DONE,
};

struct slot {
	enum slot_state state;
	pid_t pid;
	int fd[2]; /* read ends: stdout, stderr */
	struct sbuf buf[2];
	bool truncated;
	bool term_sent, kill_sent, timed_out;
	uint64_t start_ms, deadline_ms, kill_at_ms, drain_until_ms;
	int wstatus;
	bool status_unknown; /* the child was reaped by someone else (ECHILD) */
};

struct loop {
	struct probe *probes;
	struct slot *slots;
	size_t n;
	const struct clock *clock;
	const char *path_env;
	uint64_t timeout_ms;
	size_t max_output;
	unsigned max_parallel;
	unsigned running; /* slots in RUNNING or DRAINING */
	posix_spawnattr_t attr;
	bool attr_ok;
	struct strvec env_owned;
	const char *const *env;
	struct pollfd *pfd;
	size_t *pfd_slot;
};

static uint64_t now_ms(const struct loop *l)
{
	return l->clock->mono_ms(l->clock);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Move fd to >= 3 so the child's dup2 onto 1 and 2 cannot clobber it. */
static int fd_above_stdio(int fd)
{
	int nfd;

	if (fd >= 3)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (nfd < 0) {
		int r = -errno;

		(void)close(fd);
		return r;
	}
	(void)close(fd);
	return nfd;
}

static int make_pipe(int *ret_r, int *ret_w)
{
	int p[2], r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	p[0] = fd_above_stdio(p[0]);
	p[1] = fd_above_stdio(p[1]);
	if (p[0] < 0 || p[1] < 0) {
		r = p[0] < 0 ? p[0] : p[1];
		close_fdp(&p[0]);
		close_fdp(&p[1]);
		return r;
	}
	/* non-blocking on our end only: the write end is shared with the child */
	if (fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK) < 0) {
		r = -errno;
		close_fdp(&p[0]);
		close_fdp(&p[1]);
		return r;
	}
	*ret_r = p[0];
	*ret_w = p[1];
	return 0;
}

static void slot_finish_output(struct probe *p, struct slot *s)
{
	struct sbuf *o = &s->buf[0], *e = &s->buf[1];
	bool sep = o->len > 0 && e->len > 0 && o->buf[o->len - 1] != '\n';
	size_t len = o->len + (sep ? 1 : 0) + e->len;
	char *out = xmalloc(st_add(len, 1));
	char *tmp;
	size_t tlen;

	memcpy(out, o->buf, o->len);
	if (sep)
		out[o->len] = '\n';
	memcpy(out + o->len + (sep ? 1 : 0), e->buf, e->len);
	out[len] = '\0';
	p->output = out;
	p->output_len = len;
	p->output_truncated = s->truncated;

	tmp = xmalloc(st_add(len, 1));
	memcpy(tmp, out, len + 1);
	tlen = ansi_strip(tmp, len);
	p->first_line = first_nonempty_line(tmp, tlen);
	free(tmp);

	sbuf_release(o);
	sbuf_release(e);
}

static void slot_done(struct loop *l, size_t i)
{
	struct slot *s = &l->slots[i];
	struct probe *p = &l->probes[i];

	close_fdp(&s->fd[0]);
	close_fdp(&s->fd[1]);
	if (s->state == SLOT_RUNNING || s->state == SLOT_DRAINING)
		l->running--;
	p->elapsed_ms = now_ms(l) - s->start_ms;
	if (s->timed_out) {
		p->status = PROBE_TIMED_OUT;
	} else if (!s->status_unknown && WIFEXITED(s->wstatus)) {
		p->exit_code = WEXITSTATUS(s->wstatus);
		p->status = p->exit_code == 0 ? PROBE_OK : PROBE_EXIT_NONZERO;
	} else if (!s->status_unknown && WIFSIGNALED(s->wstatus)) {
		p->term_signal = WTERMSIG(s->wstatus);
		p->status = PROBE_SIGNALED;
	} else {
		/* reaped behind our back (SIGCHLD ignored?): no status to report */
		p->status = PROBE_EXIT_NONZERO;
		p->exit_code = -1;
	}
	if (s->timed_out && WIFSIGNALED(s->wstatus))
		p->term_signal = WTERMSIG(s->wstatus);
	slot_finish_output(p, s);
	s->state = SLOT_DONE;
}

static void slot_fail(struct loop *l, size_t i, enum probe_status st, int err)
{
	struct slot *s = &l->slots[i];
	struct probe *p = &l->probes[i];

	p->status = st;
	p->spawn_errno = err;
	p->elapsed_ms = 0;
	slot_finish_output(p, s);
	s->state = SLOT_DONE;
}

static void slot_start(struct loop *l, size_t i)
{
	static const char *const default_args[] = {"--version", NULL};
	struct slot *s = &l->slots[i];
	struct probe *p = &l->probes[i];
	posix_spawn_file_actions_t fa;
	bool fa_ok = false;
	int out_w = -1, err_w = -1;
	const char *const *args = p->args ? p->args : default_args;
	const char **argv = NULL;
	union {
		const char *const *c;
		char *const *m;
	} av, ev;
	size_t nargs = 0, k;
	int r;

	if (!p->binary) {
		slot_fail(l, i, PROBE_NOT_FOUND, 0);
		return;
	}
	r = path_search(p->binary, l->path_env, &p->resolved);
	if (r == -EACCES) {
		/* found, but nothing executable: no spawn, report like execve would */
		slot_fail(l, i, PROBE_SPAWN_FAILED, EACCES);
		return;
	}
	if (r < 0) {
		slot_fail(l, i, PROBE_NOT_FOUND, 0);
		return;
	}

	while (args[nargs])
		nargs++;
	argv = xcalloc(st_add(nargs, 2), sizeof(*argv));
	argv[0] = p->resolved;
	for (k = 0; k < nargs; k++)
		argv[k + 1] = args[k];

	r = make_pipe(&s->fd[0], &out_w);
	if (r < 0)
		goto out;
	r = make_pipe(&s->fd[1], &err_w);
	if (r < 0)
		goto out;

	r = -posix_spawn_file_actions_init(&fa);
	if (r < 0)
		goto out;
	fa_ok = true;
	r = -posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (r == 0)
		r = -posix_spawn_file_actions_adddup2(&fa, out_w, 1);
	if (r == 0)
		r = -posix_spawn_file_actions_adddup2(&fa, err_w, 2);
	if (r == 0)
		r = -posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (r < 0)
		goto out;

	s->start_ms = now_ms(l);
	/* posix_spawn takes char *const[] but does not modify the strings */
	av.c = argv;
	ev.c = l->env;
	r = -posix_spawn(&s->pid, p->resolved, &fa, &l->attr, av.m, ev.m);
	if (r < 0)
		goto out;

	s->state = SLOT_RUNNING;
	s->deadline_ms = add_sat(s->start_ms, l->timeout_ms);
	l->running++;
out:
	if (fa_ok)
		(void)posix_spawn_file_actions_destroy(&fa);
	close_fdp(&out_w);
	close_fdp(&err_w);
	free(argv);
	if (r < 0) {
		close_fdp(&s->fd[0]);
		close_fdp(&s->fd[1]);
		slot_fail(l, i, PROBE_SPAWN_FAILED, -r);
	}
}

/* Read what is available on stream k of slot s, up to a per-wakeup budget.
 * Bytes beyond the cap are read and discarded so the child never blocks. */
static void slot_read(struct loop *l, struct slot *s, int k)
{
	char chunk[PROBE_READ_CHUNK];
	int budget;

	for (budget = PROBE_READS_PER_WAKEUP; budget > 0 && s->fd[k] >= 0; budget--) {
		ssize_t n = read(s->fd[k], chunk, sizeof(chunk));
		struct sbuf *b = &s->buf[k];
		size_t room, take;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			close_fdp(&s->fd[k]); /* EIO and friends: treat as EOF */
			return;
		}
		if (n == 0) {
			close_fdp(&s->fd[k]);
			return;
		}
		room = b->len < l->max_output ? l->max_output - b->len : 0;
		take = (size_t)n;
		if (take > room) {
			take = room;
			s->truncated = true;
		}
		if (take)
			(void)sbuf_add(b, chunk, take); /* within b->max by construction */
	}
}

/* Has the child exited? If so: kill what is left of its process group while
 * the zombie still pins the group id, then reap it. */
static void slot_check_exit(struct loop *l, struct slot *s)
{
	siginfo_t si;
	pid_t w;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
			break;
		if (errno == EINTR)
			continue;
		/* ECHILD: someone else reaped it (SIGCHLD ignored?) */
		s->status_unknown = true;
		goto exited;
	}
	if (si.si_pid == 0)
		return; /* still running */

	(void)kill(-s->pid, SIGKILL); /* leftover grandchildren in its group */
	do
		w = waitpid(s->pid, &s->wstatus, 0); /* a zombie: does not block */
	while (w < 0 && errno == EINTR);
	if (w < 0)
		s->status_unknown = true;
exited:
	s->state = SLOT_DRAINING;
	s->drain_until_ms = add_sat(now_ms(l), PROBE_DRAIN_MS);
}

static void slot_check_deadline(struct slot *s, uint64_t now)
{
	if (!s->term_sent && now >= s->deadline_ms) {
		s->timed_out = true;
		s->term_sent = true;
		(void)kill(-s->pid, SIGTERM);
		s->kill_at_ms = add_sat(now, PROBE_KILL_GRACE_MS);
	} else if (s->term_sent && !s->kill_sent && now >= s->kill_at_ms) {
		s->kill_sent = true;
		(void)kill(-s->pid, SIGKILL);
	}
}

/* The next instant at which slot s needs attention. */
static uint64_t slot_next_ms(const struct slot *s)
{
	if (s->state == SLOT_DRAINING)
		return s->drain_until_ms;
	if (!s->term_sent)
		return s->deadline_ms;
	if (!s->kill_sent)
		return s->kill_at_ms;
	return UINT64_MAX;
}

static void loop_service(struct loop *l, size_t i)
{
	struct slot *s = &l->slots[i];
	uint64_t now;

	if (s->state == SLOT_RUNNING)
		slot_check_exit(l, s);
	now = now_ms(l);
	if (s->state == SLOT_RUNNING) {
		slot_check_deadline(s, now);
		return;
	}
	if (s->state != SLOT_DRAINING)
		return;
	/* exited: take what is buffered, finish at EOF or when the drain time is up */
	if (s->fd[0] >= 0)
		slot_read(l, s, 0);
	if (s->fd[1] >= 0)
		slot_read(l, s, 1);
	if ((s->fd[0] < 0 && s->fd[1] < 0) || now >= s->drain_until_ms)
		slot_done(l, i);
}

/* Failure of the loop itself: kill and reap every running child, finish all. */
static void loop_abort(struct loop *l, int err)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		struct slot *s = &l->slots[i];

		if (s->state == SLOT_RUNNING) {
			pid_t w;

			(void)kill(-s->pid, SIGKILL);
			do
				w = waitpid(s->pid, &s->wstatus, 0);
			while (w < 0 && errno == EINTR);
			if (w < 0)
				s->status_unknown = true;
			s->state = SLOT_DRAINING;
		}
		if (s->state == SLOT_DRAINING)
			slot_done(l, i);
		else if (s->state == SLOT_PENDING)
			slot_fail(l, i, PROBE_SPAWN_FAILED, err);
	}
}

static int loop_run(struct loop *l)
{
	size_t next = 0, i;

	for (;;) {
		size_t nfds = 0;
		uint64_t now, wake = UINT64_MAX;
		int timeout;

		while (next < l->n && l->running < l->max_parallel)
			slot_start(l, next++);
		if (l->running == 0 && next >= l->n)
			return 0;

		for (i = 0; i < l->n; i++) {
			struct slot *s = &l->slots[i];
			int k;

			if (s->state != SLOT_RUNNING && s->state != SLOT_DRAINING)
				continue;
			for (k = 0; k < 2; k++) {
				if (s->fd[k] < 0)
					continue;
				l->pfd[nfds].fd = s->fd[k];
				l->pfd[nfds].events = POLLIN;
				l->pfd[nfds].revents = 0;
				l->pfd_slot[nfds] = i * 2 + (size_t)k;
				nfds++;
			}
			if (slot_next_ms(s) < wake)
				wake = slot_next_ms(s);
		}
		now = now_ms(l);
		timeout = PROBE_POLL_CAP_MS;
		if (wake <= now)
			timeout = 0;
		else if (wake - now < PROBE_POLL_CAP_MS)
			timeout = (int)(wake - now);

		if (poll(l->pfd, (nfds_t)nfds, timeout) < 0) {
			int r = -errno;

			if (r == -EINTR)
				continue;
			loop_abort(l, -r);
			return r;
		}
		for (i = 0; i < nfds; i++) {
			size_t si = l->pfd_slot[i] / 2;
			int k = (int)(l->pfd_slot[i] % 2);

			if (l->pfd[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
				slot_read(l, &l->slots[si], k);
		}
		for (i = 0; i < l->n; i++)
			loop_service(l, i);
	}
}

int probe_run(struct probe *probes, size_t n, const struct probe_opts *opts)
{
	static const struct probe_opts no_opts;
	struct loop l = {.env_owned = STRVEC_INIT};
	sigset_t mask;
	size_t i, npfd;
	int r;

	if (n == 0)
		return 0;
	if (!probes)
		return -EINVAL;
	if (!opts)
		opts = &no_opts;

	l.probes = probes;
	l.n = n;
	l.clock = opts->clock ? opts->clock : clock_system();
	l.path_env = opts->path_env;
	l.timeout_ms = opts->timeout_ms ? opts->timeout_ms : PROBE_DEFAULT_TIMEOUT_MS;
	l.max_output = opts->max_output ? opts->max_output : PROBE_DEFAULT_MAX_OUTPUT;
	l.max_parallel = opts->max_parallel ? opts->max_parallel : PROBE_DEFAULT_PARALLEL;
	if (l.max_parallel > n)
		l.max_parallel = (unsigned)n;

	for (i = 0; i < n; i++) {
		struct probe *p = &probes[i];

		p->status = PROBE_NOT_FOUND;
		p->resolved = NULL;
		p->exit_code = 0;
		p->term_signal = 0;
		p->spawn_errno = 0;
		p->output = NULL;
		p->output_len = 0;
		p->output_truncated = false;
		p->first_line = NULL;
		p->elapsed_ms = 0;
	}
	if (opts->env) {
		l.env = opts->env;
	} else {
		if (opts->path_env)
			(void)strvec_pushf(&l.env_owned, "PATH=%s", opts->path_env);
		(void)strvec_push(&l.env_owned, "LANG=C.UTF-8");
		(void)strvec_push(&l.env_owned, "TERM=dumb");
		(void)strvec_push(&l.env_owned, "NO_COLOR=1");
		(void)strvec_push(&l.env_owned, "CI=1");
		l.env = l.env_owned.v;
	}

	r = -posix_spawnattr_init(&l.attr);
	if (r < 0)
		goto out;
	l.attr_ok = true;
	(void)sigemptyset(&mask);
	r = -posix_spawnattr_setsigmask(&l.attr, &mask);
	if (r < 0)
		goto out;
	(void)sigfillset(&mask);
	r = -posix_spawnattr_setsigdefault(&l.attr, &mask);
	if (r < 0)
		goto out;
	r = -posix_spawnattr_setflags(&l.attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
						       POSIX_SPAWN_SETSIGDEF);
	if (r < 0)
		goto out;

	l.slots = xcalloc(n, sizeof(*l.slots));
	for (i = 0; i < n; i++) {
		l.slots[i].state = SLOT_PENDING;
		l.slots[i].pid = -1;
		l.slots[i].fd[0] = l.slots[i].fd[1] = -1;
		sbuf_init(&l.slots[i].buf[0], l.max_output);
		sbuf_init(&l.slots[i].buf[1], l.max_output);
	}
	npfd = st_mult(l.max_parallel, 2);
	l.pfd = xcalloc(npfd, sizeof(*l.pfd));
	l.pfd_slot = xcalloc(npfd, sizeof(*l.pfd_slot));

	r = loop_run(&l);
out:
	if (r < 0 && !l.slots) {
		/* setup failed before any probe started: outputs stay well defined */
		for (i = 0; i < n; i++) {
			probes[i].status = PROBE_SPAWN_FAILED;
			probes[i].spawn_errno = -r;
			probes[i].output = xstrdup("");
		}
	}
	if (l.attr_ok)
		(void)posix_spawnattr_destroy(&l.attr);
	strvec_clear(&l.env_owned);
	free(l.slots);
	free(l.pfd);
	free(l.pfd_slot);
	return r;
}
