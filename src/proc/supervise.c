#include "proc/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/pty.h"
#include "proc/ptydrive.h"

#include "util/fsutil.h"
#include "util/log.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

#define DEFAULT_READ_CHUNK (64 * 1024)
#define READS_PER_WAKEUP   16 /* then let the other children have a turn */
#define MAX_EVENTS	   64
#define KEEP_LINE_BUFFER   (64 * 1024) /* a bigger partial-line buffer is freed after use */

/* epoll data: slot << 8 | kind, or the signalfd tag. KIND_CONN + i is the
 * i-th connection on the task's listening socket. */
enum sv_kind { KIND_OUT = 1, KIND_ERR = 2, KIND_LISTEN = 4, KIND_CONN = 16 };
#define KIND_BITS    8
#define TAG_SIGNALFD UINT64_MAX
#define TAG_WATCH    (UINT64_MAX - 1)

/* ---- the state table ---- */

/* Rows: the state a task is in. Columns: what happened. Cell: what to do and
 * the state entered. INV cells cannot happen; hitting one is a bug. */
/* clang-format off */
#define T(a, s) {PROC_ACT_##a, PROC_##s}
#define INV     {PROC_ACT_INVALID, _PROC_STATE_INVALID}
const struct proc_transition proc_transitions[_PROC_STATE_MAX][_PROC_EVENT_MAX] = {
	[PROC_STARTING] = {
		[PROC_EV_SPAWNED]         = T(START, RUNNING),
		[PROC_EV_SPAWN_FAILED]    = T(FAIL, EXITED),
		[PROC_EV_EXITED]          = INV,
		[PROC_EV_DEADLINE]        = INV,
		[PROC_EV_GRACE_EXPIRED]   = INV,
		[PROC_EV_CANCEL]          = INV,
		[PROC_EV_LINE]            = INV,
		[PROC_EV_EOF]             = INV,
		[PROC_EV_GROUP_GONE]      = INV,
	},
	[PROC_RUNNING] = {
		[PROC_EV_SPAWNED]         = INV,
		[PROC_EV_SPAWN_FAILED]    = INV,
		[PROC_EV_EXITED]          = T(REAPED, DRAINING),
		[PROC_EV_DEADLINE]        = T(TERM, TERMINATING),
		[PROC_EV_GRACE_EXPIRED]   = INV,
		[PROC_EV_CANCEL]          = T(TERM, TERMINATING),
		[PROC_EV_LINE]            = T(DELIVER, RUNNING),
		[PROC_EV_EOF]             = T(IGNORE, RUNNING),
		[PROC_EV_GROUP_GONE]      = INV,
	},
	[PROC_TERMINATING] = {
		[PROC_EV_SPAWNED]         = INV,
		[PROC_EV_SPAWN_FAILED]    = INV,
		[PROC_EV_EXITED]          = T(REAPED, DRAINING),
		[PROC_EV_DEADLINE]        = T(IGNORE, TERMINATING),
		[PROC_EV_GRACE_EXPIRED]   = T(KILL, KILLING),
		[PROC_EV_CANCEL]          = T(IGNORE, TERMINATING),
		[PROC_EV_LINE]            = T(DELIVER, TERMINATING),
		[PROC_EV_EOF]             = T(IGNORE, TERMINATING),
		[PROC_EV_GROUP_GONE]      = INV,
	},
	[PROC_KILLING] = {
		[PROC_EV_SPAWNED]         = INV,
		[PROC_EV_SPAWN_FAILED]    = INV,
		[PROC_EV_EXITED]          = T(REAPED, DRAINING),
		[PROC_EV_DEADLINE]        = T(IGNORE, KILLING),
		[PROC_EV_GRACE_EXPIRED]   = T(IGNORE, KILLING),
		[PROC_EV_CANCEL]          = T(IGNORE, KILLING),
		[PROC_EV_LINE]            = T(DELIVER, KILLING),
		[PROC_EV_EOF]             = T(IGNORE, KILLING),
		[PROC_EV_GROUP_GONE]      = INV,
	},
	[PROC_DRAINING] = {
		[PROC_EV_SPAWNED]         = INV,
		[PROC_EV_SPAWN_FAILED]    = INV,
		[PROC_EV_EXITED]          = INV,
		[PROC_EV_DEADLINE]        = T(IGNORE, DRAINING),
		[PROC_EV_GRACE_EXPIRED]   = T(FINISH, EXITED),
		[PROC_EV_CANCEL]          = T(IGNORE, DRAINING),
		[PROC_EV_LINE]            = T(DELIVER, DRAINING),
		[PROC_EV_EOF]             = T(SETTLE, SETTLING),
		[PROC_EV_GROUP_GONE]      = INV,
	},
	[PROC_EXITED] = {
		[PROC_EV_SPAWNED]         = INV,
		[PROC_EV_SPAWN_FAILED]    = INV,
		[PROC_EV_EXITED]          = INV,
		[PROC_EV_DEADLINE]        = INV,
		[PROC_EV_GRACE_EXPIRED]   = INV,
		[PROC_EV_CANCEL]          = T(IGNORE, EXITED),
		[PROC_EV_LINE]            = INV,
		[PROC_EV_EOF]             = INV,
		[PROC_EV_GROUP_GONE]      = INV,
	},
	[PROC_SETTLING] = {
		[PROC_EV_SPAWNED]         = INV,
		[PROC_EV_SPAWN_FAILED]    = INV,
		[PROC_EV_EXITED]          = INV,
		[PROC_EV_DEADLINE]        = T(IGNORE, SETTLING),
		[PROC_EV_GRACE_EXPIRED]   = T(FINISH, EXITED),
		[PROC_EV_CANCEL]          = T(IGNORE, SETTLING),
		[PROC_EV_LINE]            = T(DELIVER, SETTLING),
		[PROC_EV_EOF]             = T(IGNORE, SETTLING),
		[PROC_EV_GROUP_GONE]      = T(FINISH, EXITED),
	},
};
/* clang-format on */

#undef T
#undef INV

static const char *const event_names[_PROC_EVENT_MAX] = {
	[PROC_EV_SPAWNED] = "spawned",
	[PROC_EV_SPAWN_FAILED] = "spawn_failed",
	[PROC_EV_EXITED] = "exited",
	[PROC_EV_DEADLINE] = "deadline",
	[PROC_EV_GRACE_EXPIRED] = "grace_expired",
	[PROC_EV_CANCEL] = "cancel",
	[PROC_EV_LINE] = "line",
	[PROC_EV_EOF] = "eof",
	[PROC_EV_GROUP_GONE] = "group_gone",
};

static const char *const action_names[_PROC_ACTION_MAX] = {
	[PROC_ACT_INVALID] = "invalid", [PROC_ACT_IGNORE] = "ignore",
	[PROC_ACT_START] = "start",	[PROC_ACT_FAIL] = "fail",
	[PROC_ACT_REAPED] = "reaped",	[PROC_ACT_TERM] = "term",
	[PROC_ACT_KILL] = "kill",	[PROC_ACT_DELIVER] = "deliver",
	[PROC_ACT_FINISH] = "finish",	[PROC_ACT_SETTLE] = "settle",
};

const char *proc_event_name(enum proc_event e)
{
	return e >= 0 && e < _PROC_EVENT_MAX ? event_names[e] : "?";
}

const char *proc_action_name(enum proc_action a)
{
	return a < _PROC_ACTION_MAX ? action_names[a] : "?";
}

/* ---- the supervisor ---- */

struct sv_stream {
	int stream;	  /* 1 = stdout, 2 = stderr, PROC_STREAM_SOCKET */
	int sock_fd;	  /* PROC_STREAM_SOCKET: the connection's fd, -1 when free */
	uint64_t seq;	  /* PROC_STREAM_SOCKET: the order it was accepted in */
	struct sbuf part; /* the pending partial line, capped at max_line */
	bool discarding;  /* inside an oversized line: part holds its head */
	uint64_t total;	  /* the oversized line's length so far */
};

struct sv_child {
	void *task;
	struct proc proc;
	unsigned slot;
	struct sv_stream out, err;
	size_t max_line;
	int log_fd;
	uint64_t log_bytes, max_log_bytes;
	bool log_stopped;
	uint64_t grace_ms;
	uint64_t grace_deadline_ms; /* 0 = none */
	bool finished;		    /* over: on_exit() is due */
	bool soft_stop;		    /* ops->on_stop asked for time: SIGTERM at the grace deadline */
	bool hung_up;		    /* its pty driver ended it, done (not a cancel) */
	/* settling: when to look at its process group again, and the step
	 * after that (doubling up to SETTLE_POLL_MAX_MS); 0 = not settling */
	uint64_t settle_poll_ms, settle_step_ms;
	int listen_fd;		 /* the hooks socket (spec.listen_fd), -1 none */
	uint64_t conn_seq;	 /* connections accepted so far */
	struct sv_stream *conns; /* PROC_MAX_SOCKET_CONNS when listen_fd >= 0, else NULL */
	struct ptydrive *pty;	 /* spec.pty: the screen of its terminal (out_fd), else NULL */
};

struct supervisor {
	const struct supervisor_ops *ops;
	void *ctx;
	const struct clock *clock;
	int epfd, sigfd;
	struct sv_child **slots;
	unsigned nslots, nlive;
	char *rbuf;
	size_t rbuf_size;
	bool ask;	  /* next_task may have something */
	uint64_t wake_ms; /* when to ask next_task again (ops->wake_in_ms); 0: not */
	uint64_t tick_ms; /* when to call on_tick again; 0: not */
	bool tick_now;	  /* a child started: call on_tick at the next turn */
	unsigned cancels; /* cancellation signals received */
	int error;	  /* next_task's error, or a loop failure */
	pid_t keeper;	  /* the group keeper, -1 if none */
	int keeper_fd;	  /* our end of its socket, -1 if none */
};

/* A settling task's group is looked at after 2 ms, then at doubling steps
 * up to this (and at every SIGCHLD: what is left comes back to us, the
 * subreaper, to be reaped). */
#define SETTLE_POLL_FIRST_MS 2
#define SETTLE_POLL_MAX_MS   100

/* The keeper's record that says "the supervisor is done": exit, kill nothing. */
#define KEEPER_BYE 0

/* The argument of a LINE event. */
struct line_arg {
	struct sv_stream *s;
	const char *line;
	size_t len;
	uint64_t total; /* > len: an oversized line's head */
};

static void sv_event(struct supervisor *sv, struct sv_child *c, enum proc_event ev,
		     const struct line_arg *arg);

static uint64_t now_ms(const struct supervisor *sv)
{
	return sv->clock->mono_ms(sv->clock);
}

static void notice(struct supervisor *sv, struct sv_child *c, enum proc_notice n, uint64_t v)
{
	if (sv->ops->on_notice)
		sv->ops->on_notice(sv->ctx, c->task, n, v);
}

static void epoll_del(struct supervisor *sv, int fd)
{
	if (fd >= 0)
		(void)epoll_ctl(sv->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static int epoll_add(struct supervisor *sv, int fd, uint64_t data)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = data};

	if (epoll_ctl(sv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	return 0;
}

/* ---- the group keeper ----
 *
 * The shim's pdeathsig takes the agent when this process is SIGKILLed, but
 * not what the agent started (its process group). The keeper is a forked copy
 * of this process that only reads "+pgid"/"-pgid" records from a socket; when
 * the socket reaches EOF without the KEEPER_BYE record (the supervisor died),
 * it SIGKILLs every group still registered, then kills and removes this
 * process's cgroups (contain.h: the scope of every child it started with a
 * cgroup, which catches what left the groups), and exits. Only
 * async-signal-safe calls run in it after fork(), so this is safe even in a
 * threaded caller.
 *
 * As a copy of this process it holds what this process holds (the
 * environment with its keys, the audit key): it is not dumpable, so that the
 * agents, which run as the same user, cannot read its /proc/PID/environ or
 * mem. bernstein's main() has already made the process so (and zeroed the
 * environment block, docs/supervision.md); this holds for any caller. */

static void keeper_main(int fd, pid_t *groups, size_t max, char (*scopes)[PATH_MAX],
			unsigned nscopes)
{
	size_t n = 0, i;
	int32_t rec;

	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	(void)setsid(); /* no terminal signals: only EOF ends it */
	(void)signal(SIGQUIT, SIG_IGN);
	(void)close_range(3, (unsigned)fd - 1, 0);
	(void)close_range((unsigned)fd + 1, ~0U, 0);
	for (;;) {
		ssize_t r = read(fd, &rec, sizeof(rec));

		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof(rec))
			break;
		if (rec == KEEPER_BYE)
			_exit(0);
		if (rec > 0 && n < max) {
			groups[n++] = rec;
		} else if (rec < 0) {
			for (i = 0; i < n; i++)
				if (groups[i] == -rec) {
					groups[i] = groups[--n];
					break;
				}
		}
	}
	for (i = 0; i < n; i++)
		(void)kill(-groups[i], SIGKILL);
	for (i = 0; i < nscopes; i++)
		if (access(scopes[i], F_OK) == 0)
			(void)contain_kill_tree(scopes[i]);
	_exit(0);
}

static void keeper_start(struct supervisor *sv)
{
	size_t max = (size_t)sv->nslots * 2 + 16;
	pid_t *groups = xcalloc(max, sizeof(*groups));
	char(*scopes)[PATH_MAX] = xcalloc(CONTAIN_HIER_MAX, PATH_MAX);
	unsigned nscopes = contain_scope_dirs(contain_host(), scopes);
	int sp[2];
	pid_t pid;

	sv->keeper = -1;
	sv->keeper_fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		log_debug("no group keeper: socketpair: %s", strerror(errno));
		free(groups);
		free(scopes);
		return;
	}
	pid = fork();
	if (pid == 0) {
		(void)close(sp[0]);
		keeper_main(sp[1], groups, max, scopes, nscopes);
	}
	(void)close(sp[1]);
	free(groups);
	free(scopes);
	if (pid < 0) {
		log_debug("no group keeper: fork: %s", strerror(errno));
		(void)close(sp[0]);
		return;
	}
	sv->keeper = pid;
	sv->keeper_fd = sp[0];
}

static void keeper_send(struct supervisor *sv, int32_t rec)
{
	if (sv->keeper_fd < 0)
		return;
	/* MSG_NOSIGNAL: a dead keeper must not take us down with SIGPIPE. */
	if (send(sv->keeper_fd, &rec, sizeof(rec), MSG_NOSIGNAL) != (ssize_t)sizeof(rec)) {
		log_debug("group keeper gone: %s", strerror(errno));
		close_fdp(&sv->keeper_fd);
	}
}

static void keeper_stop(struct supervisor *sv)
{
	keeper_send(sv, KEEPER_BYE);
	close_fdp(&sv->keeper_fd);
	if (sv->keeper > 0)
		while (waitpid(sv->keeper, NULL, 0) < 0 && errno == EINTR)
			;
	sv->keeper = -1;
}

/* ---- the log ---- */

static void log_open(struct supervisor *sv, struct sv_child *c, const char *path)
{
	char *dir = xstrdup(path);
	int r = mkdir_p(dirname(dir), 0700);

	free(dir);
	if (r == 0) {
		/* never a FIFO (the open would block the loop) or a symlink */
		c->log_fd = open_regular(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
		if (c->log_fd < 0)
			r = c->log_fd;
	}
	if (r < 0) {
		log_debug("cannot open log '%s': %s", path, strerror(-r));
		c->log_stopped = true;
		notice(sv, c, PROC_NOTICE_LOG_ERROR, (uint64_t)-r);
	}
}

static int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Append a (and b) to the log, within max_log_bytes. */
static void log_write(struct supervisor *sv, struct sv_child *c, const void *a, size_t alen,
		      const void *b, size_t blen)
{
	struct iovec iov[2] = {{(void *)(uintptr_t)a, alen}, {(void *)(uintptr_t)b, blen}};
	uint64_t total = alen + blen;
	bool capped = false;
	int r;

	if (c->log_fd < 0 || c->log_stopped || total == 0)
		return;
	if (c->max_log_bytes && c->log_bytes + total > c->max_log_bytes) {
		uint64_t room = c->max_log_bytes - c->log_bytes;

		capped = true;
		if (room < alen) {
			iov[0].iov_len = (size_t)room;
			iov[1].iov_len = 0;
		} else {
			iov[1].iov_len = (size_t)(room - alen);
		}
		total = room;
	}
	r = writev_all(c->log_fd, iov, 2);
	if (r < 0) {
		log_debug("cannot write log of pid %ld: %s", (long)c->proc.pid, strerror(-r));
		c->log_stopped = true;
		notice(sv, c, PROC_NOTICE_LOG_ERROR, (uint64_t)-r);
		return;
	}
	c->log_bytes += total;
	if (capped) {
		c->log_stopped = true;
		notice(sv, c, PROC_NOTICE_LOG_CAPPED, c->max_log_bytes);
	}
}

/* ---- line framing ---- */

/* Add bytes of an unfinished line to the stream's buffer, keeping only the
 * first max_line bytes of an oversized one. */
static void stash(struct sv_child *c, struct sv_stream *s, const char *p, size_t n)
{
	size_t room;

	if (s->discarding) {
		s->total += n;
		return;
	}
	if (sbuf_add(&s->part, p, n) == 0)
		return;
	room = c->max_line - s->part.len;
	(void)sbuf_add(&s->part, p, room);
	s->discarding = true;
	s->total = (uint64_t)s->part.len + (n - room);
}

/* The buffered line is complete (newline seen, or EOF). */
static void finish_line(struct supervisor *sv, struct sv_child *c, struct sv_stream *s)
{
	struct line_arg arg = {.s = s, .line = s->part.buf, .len = s->part.len};

	/* The log gets a newline even after an unterminated last line, so the
	 * other stream's next line does not run on from it. */
	arg.total = s->discarding ? s->total : s->part.len;
	if (s->stream != PROC_STREAM_SOCKET)
		log_write(sv, c, s->part.buf, s->part.len, "\n", 1);
	sv_event(sv, c, PROC_EV_LINE, &arg);
	if (s->part.alloc > KEEP_LINE_BUFFER)
		sbuf_release(&s->part);
	else
		sbuf_reset(&s->part);
	s->discarding = false;
	s->total = 0;
}

/* Frame one chunk read from a pipe. Lines wholly inside the chunk are
 * delivered in place (the newline is briefly replaced by a NUL) and logged
 * with one write per run of them. */
static void frame_chunk(struct supervisor *sv, struct sv_child *c, struct sv_stream *s, char *buf,
			size_t n)
{
	char *p = buf, *end = buf + n, *run = NULL;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len;

		if (!nl) {
			stash(c, s, p, (size_t)(end - p));
			break;
		}
		len = (size_t)(nl - p);
		if (s->part.len == 0 && !s->discarding && len <= c->max_line) {
			struct line_arg arg = {.s = s, .line = p, .len = len, .total = len};

			if (!run && s->stream != PROC_STREAM_SOCKET)
				run = p;
			*nl = '\0';
			sv_event(sv, c, PROC_EV_LINE, &arg);
			*nl = '\n';
		} else {
			if (run) {
				log_write(sv, c, run, (size_t)(p - run), NULL, 0);
				run = NULL;
			}
			stash(c, s, p, len);
			finish_line(sv, c, s);
		}
		p = nl + 1;
	}
	if (run)
		log_write(sv, c, run, (size_t)(p - run), NULL, 0);
}

static int *stream_fd(struct sv_child *c, struct sv_stream *s)
{
	if (s->stream == PROC_STREAM_SOCKET)
		return &s->sock_fd;
	return s == &c->out ? &c->proc.out_fd : &c->proc.err_fd;
}

static void close_stream(struct supervisor *sv, struct sv_child *c, struct sv_stream *s)
{
	int *fd = stream_fd(c, s);

	epoll_del(sv, *fd);
	close_fdp(fd);
}

/* ---- a pty's screen (proc/ptydrive.h) ---- */

/* The driver's report lines go out as stdout lines; its keys go to the
 * terminal. */
static void pty_step(struct supervisor *sv, struct sv_child *c)
{
	struct sbuf lines = SBUF_INIT(SIZE_MAX), keys = SBUF_INIT(SIZE_MAX);
	enum ptydrive_action a;

	a = ptydrive_step(c->pty, now_ms(sv), &lines, &keys);
	if (keys.len && c->proc.out_fd >= 0 && pty_type(c->proc.out_fd, keys.buf, keys.len) < 0)
		log_debug("pid %ld: cannot type into its terminal", (long)c->proc.pid);
	if (lines.len)
		frame_chunk(sv, c, &c->out, lines.buf, lines.len);
	sbuf_release(&lines);
	sbuf_release(&keys);
	/* done, and still there after its exit keys (or with none declared):
	 * stopped as on a cancel, but it is no cancel of the task or the run */
	if (a == PTYDRIVE_HANGUP && !c->finished && c->proc.state == PROC_RUNNING) {
		c->hung_up = true;
		sv_event(sv, c, PROC_EV_CANCEL, NULL);
	}
}

static void pty_feed(struct supervisor *sv, struct sv_child *c, size_t n)
{
	ptydrive_feed(c->pty, sv->rbuf, n);
	pty_step(sv, c);
}

static void pty_end(struct supervisor *sv, struct sv_child *c)
{
	struct sbuf lines = SBUF_INIT(SIZE_MAX);

	ptydrive_eof(c->pty, now_ms(sv), &lines);
	if (lines.len)
		frame_chunk(sv, c, &c->out, lines.buf, lines.len);
	sbuf_release(&lines);
}

static void read_stream(struct supervisor *sv, struct sv_child *c, struct sv_stream *s)
{
	int *fd = stream_fd(c, s);
	int i;

	for (i = 0; i < READS_PER_WAKEUP && *fd >= 0; i++) {
		ssize_t n = read(*fd, sv->rbuf, sv->rbuf_size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n > 0) {
			c->proc.last_activity_ms = now_ms(sv); /* the stall watchdog */
			if (s->stream != PROC_STREAM_SOCKET) {
				c->proc.output_bytes += (uint64_t)n;
				c->proc.last_output_ms = now_ms(sv);
			}
			if (c->pty && s == &c->out)
				pty_feed(sv, c, (size_t)n);
			else
				frame_chunk(sv, c, s, sv->rbuf, (size_t)n);
			/* a pipe is drained for now; a hook connection is read on
			 * to its end (EOF right behind the data is the usual
			 * case), so its last line is not overtaken */
			if ((size_t)n < sv->rbuf_size && s->stream != PROC_STREAM_SOCKET)
				return;
			continue;
		}
		if (n < 0)
			log_debug("read from pid %ld: %s", (long)c->proc.pid, strerror(errno));
		/* EOF (or an error, treated alike; a pty's master reads EIO
		 * once no one holds its slave): a last line without a
		 * newline is still a line. */
		if (c->pty && s == &c->out)
			pty_end(sv, c);
		if (s->part.len || s->discarding)
			finish_line(sv, c, s);
		close_stream(sv, c, s);
		if (s->stream == PROC_STREAM_SOCKET) {
			sbuf_release(&s->part);
			return; /* one hook connection over; not the agent's EOF */
		}
		if (c->proc.out_fd < 0 && c->proc.err_fd < 0)
			sv_event(sv, c, PROC_EV_EOF, NULL);
		return;
	}
}

/* ---- the hooks socket ---- */

/* The open connection accepted first at or after sequence number from, or
 * NULL. Connections are read oldest first: a hook that ran before another
 * (Claude Code waits for each) is delivered before it. */
static struct sv_stream *conn_from(struct sv_child *c, uint64_t from)
{
	struct sv_stream *oldest = NULL;
	unsigned i;

	for (i = 0; c->conns && i < PROC_MAX_SOCKET_CONNS; i++) {
		struct sv_stream *s = &c->conns[i];

		if (s->sock_fd >= 0 && s->seq >= from && (!oldest || s->seq < oldest->seq))
			oldest = s;
	}
	return oldest;
}

/* Read what every open connection has now, oldest first. */
static void read_conns(struct supervisor *sv, struct sv_child *c)
{
	struct sv_stream *s;
	uint64_t from = 0;

	while ((s = conn_from(c, from)) != NULL) {
		from = s->seq + 1;
		read_stream(sv, c, s);
	}
}

/* Accept what is pending on the listening socket, after reading what the
 * connections already open have (they are older), reading each new one as
 * it is accepted. */
static void accept_conns(struct supervisor *sv, struct sv_child *c)
{
	read_conns(sv, c);
	for (;;) {
		struct sv_stream *s = NULL;
		unsigned i;
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				log_debug("accept on the hooks socket of pid %ld: %s",
					  (long)c->proc.pid, strerror(errno));
			break;
		}
		for (i = 0; i < PROC_MAX_SOCKET_CONNS && !s; i++)
			if (c->conns[i].sock_fd < 0)
				s = &c->conns[i];
		if (!s ||
		    epoll_add(sv, fd,
			      (uint64_t)c->slot << KIND_BITS | (KIND_CONN + (s - c->conns))) < 0) {
			log_debug("pid %ld: hooks connection refused (%s)", (long)c->proc.pid,
				  s ? "cannot watch it" : "too many open");
			(void)close(fd);
			continue;
		}
		s->sock_fd = fd;
		s->seq = c->conn_seq++;
		sbuf_init(&s->part, c->max_line);
		s->discarding = false;
		s->total = 0;
		/* read it now, in accept order (a finished hook frees its slot) */
		read_stream(sv, c, s);
	}
}

/* Before the task finishes: take every pending connection and read what is
 * there, oldest first, so lines written before the agent exited are not
 * lost. A connection still open is read up to what was sent and closed (its
 * unfinished last line is delivered as a line). */
static void drain_conns(struct supervisor *sv, struct sv_child *c)
{
	struct sv_stream *s;
	uint64_t from = 0;

	if (c->listen_fd < 0)
		return;
	accept_conns(sv, c);
	while ((s = conn_from(c, from)) != NULL) {
		from = s->seq + 1;
		while (s->sock_fd >= 0) {
			ssize_t n = read(s->sock_fd, sv->rbuf, sv->rbuf_size);

			if (n < 0 && errno == EINTR)
				continue;
			if (n > 0) {
				frame_chunk(sv, c, s, sv->rbuf, (size_t)n);
				continue;
			}
			/* EOF, EAGAIN (the writer is still there) or an error */
			if (s->part.len || s->discarding)
				finish_line(sv, c, s);
			close_stream(sv, c, s);
			sbuf_release(&s->part);
		}
	}
}

static void close_conns(struct supervisor *sv, struct sv_child *c)
{
	unsigned i;

	for (i = 0; c->conns && i < PROC_MAX_SOCKET_CONNS; i++) {
		if (c->conns[i].sock_fd >= 0)
			close_stream(sv, c, &c->conns[i]);
		sbuf_release(&c->conns[i].part);
	}
	epoll_del(sv, c->listen_fd);
	close_fdp(&c->listen_fd);
}

/* ---- actions ---- */

static void act_finish(struct supervisor *sv, struct sv_child *c)
{
	/* Whatever is left of the task's process group (and its cgroups) goes
	 * now; the OOM count is read before its cgroups go. */
	if (c->proc.pid > 0) {
		(void)proc_kill_group(&c->proc, SIGKILL);
		proc_contain_end(&c->proc);
		keeper_send(sv, -(int32_t)c->proc.pid);
	}
	close_stream(sv, c, &c->out);
	close_stream(sv, c, &c->err);
	close_conns(sv, c);
	close_fdp(&c->log_fd);
	c->proc.deadline_ms = 0;
	c->grace_deadline_ms = 0;
	if (!c->proc.end_ms)
		c->proc.end_ms = now_ms(sv);
	c->finished = true;
}

static void act_deliver(struct supervisor *sv, struct sv_child *c, const struct line_arg *a)
{
	if (a->total > a->len) {
		if (sv->ops->on_oversized)
			sv->ops->on_oversized(sv->ctx, c->task, a->s->stream, a->line, a->len,
					      a->total);
	} else if (sv->ops->on_line) {
		sv->ops->on_line(sv->ctx, c->task, a->s->stream, a->line, a->len);
	}
}

static void sv_event(struct supervisor *sv, struct sv_child *c, enum proc_event ev,
		     const struct line_arg *arg)
{
	const struct proc_transition *t = &proc_transitions[c->proc.state][ev];
	uint64_t now;

	if (t->action == PROC_ACT_INVALID)
		BUG("task pid %ld: event '%s' in state '%s'", (long)c->proc.pid,
		    proc_event_name(ev), proc_state_name(c->proc.state));
	if (ev != PROC_EV_LINE)
		log_trace("pid %ld: %s: %s -> %s (%s)", (long)c->proc.pid, proc_event_name(ev),
			  proc_state_name(c->proc.state), proc_state_name(t->next),
			  proc_action_name(t->action));
	/* what hooks wrote goes out before the end (LINE is delivered in the
	 * state being left) */
	if (t->action == PROC_ACT_FINISH)
		drain_conns(sv, c);
	c->proc.state = t->next;

	switch (t->action) {
	case PROC_ACT_INVALID:
	case PROC_ACT_IGNORE:
		break;
	case PROC_ACT_START:
		c->proc.start_ms = now_ms(sv);
		if (c->proc.timeout_ms)
			c->proc.deadline_ms = c->proc.start_ms + c->proc.timeout_ms;
		if (sv->ops->on_start)
			sv->ops->on_start(sv->ctx, c->task, &c->proc);
		break;
	case PROC_ACT_FAIL:
		act_finish(sv, c);
		break;
	case PROC_ACT_REAPED:
		c->soft_stop = false;
		now = now_ms(sv);
		c->proc.end_ms = now;
		c->proc.deadline_ms = 0;
		/* The agent is gone; the rest of its group follows it. */
		(void)proc_kill_group(&c->proc, SIGTERM);
		c->grace_deadline_ms = now + c->grace_ms;
		if (c->proc.out_fd < 0 && c->proc.err_fd < 0)
			sv_event(sv, c, PROC_EV_EOF, NULL);
		break;
	case PROC_ACT_TERM:
		if (ev == PROC_EV_DEADLINE) {
			uint64_t last =
				c->proc.last_output_ms ? c->proc.last_output_ms : c->proc.start_ms;

			now = now_ms(sv);
			c->proc.timeout_idle_ms = now > last ? now - last : 0;
			c->proc.timed_out = true;
			if (c->proc.stalled)
				notice(sv, c, PROC_NOTICE_STALLED, c->proc.idle_timeout_ms);
			else
				notice(sv, c, PROC_NOTICE_TIMEOUT, c->proc.timeout_ms);
		} else if (!c->hung_up) {
			c->proc.cancelled = true;
		}
		c->proc.deadline_ms = 0;
		if (sv->ops->on_stop) {
			uint64_t wait = sv->ops->on_stop(sv->ctx, c->task);

			if (wait) {
				/* the agent was asked to stop: SIGTERM when that is over */
				c->soft_stop = true;
				c->grace_deadline_ms = now_ms(sv) + wait;
				break;
			}
		}
		(void)proc_kill_group(&c->proc, SIGTERM);
		c->grace_deadline_ms = now_ms(sv) + c->grace_ms;
		break;
	case PROC_ACT_KILL:
		(void)proc_kill_group(&c->proc, SIGKILL);
		c->grace_deadline_ms = 0;
		notice(sv, c, PROC_NOTICE_KILL, c->grace_ms);
		break;
	case PROC_ACT_DELIVER:
		if (arg)
			act_deliver(sv, c, arg);
		else
			BUG("line event without a line");
		break;
	case PROC_ACT_FINISH:
		c->settle_poll_ms = 0;
		act_finish(sv, c);
		break;
	case PROC_ACT_SETTLE:
		/* its pipes are closed, but what it left in its group (SIGTERMed
		 * at its exit) may still be finishing: the grace is its time */
		if (!proc_group_alive(&c->proc)) {
			sv_event(sv, c, PROC_EV_GROUP_GONE, NULL);
			break;
		}
		c->settle_step_ms = SETTLE_POLL_FIRST_MS;
		c->settle_poll_ms = now_ms(sv) + c->settle_step_ms;
		break;
	case _PROC_ACTION_MAX:
	default:
		BUG("unknown action %d", (int)t->action);
	}
}

/* ---- children ---- */

static void child_free(struct sv_child *c)
{
	unsigned i;

	proc_release(&c->proc);
	for (i = 0; c->conns && i < PROC_MAX_SOCKET_CONNS; i++) {
		close_fdp(&c->conns[i].sock_fd);
		sbuf_release(&c->conns[i].part);
	}
	free(c->conns);
	c->pty = ptydrive_free(c->pty);
	close_fdp(&c->listen_fd);
	close_fdp(&c->log_fd);
	sbuf_release(&c->out.part);
	sbuf_release(&c->err.part);
	free(c);
}

static void start_task(struct supervisor *sv, struct proc_spec *spec, void *task)
{
	struct sv_child *c = xcalloc(1, sizeof(*c));
	struct diag d = {0};
	struct proc p = PROC_INIT;
	unsigned slot, i;
	int r;

	for (slot = 0; slot < sv->nslots && sv->slots[slot]; slot++)
		;
	if (slot == sv->nslots)
		BUG("no free slot with %u of %u children", sv->nlive, sv->nslots);
	sv->slots[slot] = c;
	sv->nlive++;

	c->task = task;
	c->slot = slot;
	c->proc = p;
	c->proc.state = PROC_STARTING;
	c->proc.timeout_ms = spec->timeout_ms;
	c->proc.idle_timeout_ms = spec->idle_timeout_ms;
	c->max_line = spec->max_line ? spec->max_line : PROC_DEFAULT_MAX_LINE;
	c->out.stream = 1;
	c->err.stream = 2;
	sbuf_init(&c->out.part, c->max_line);
	sbuf_init(&c->err.part, c->max_line);
	c->grace_ms = spec->kill_grace_ms ? spec->kill_grace_ms : PROC_DEFAULT_KILL_GRACE_MS;
	c->max_log_bytes = spec->max_log_bytes;
	c->log_fd = -1;
	c->listen_fd = spec->listen_fd; /* taken: closed with the task */
	spec->listen_fd = -1;
	if (c->listen_fd >= 0) {
		c->conns = xcalloc(PROC_MAX_SOCKET_CONNS, sizeof(*c->conns));
		for (i = 0; i < PROC_MAX_SOCKET_CONNS; i++) {
			c->conns[i].stream = PROC_STREAM_SOCKET;
			c->conns[i].sock_fd = -1;
			sbuf_init(&c->conns[i].part, c->max_line);
		}
	}
	if (spec->log_path)
		log_open(sv, c, spec->log_path);
	if (spec->pty && spec->pty->declared) {
		r = ptydrive_new(spec->pty, spec->pty_prompt, spec->pty_allow, now_ms(sv), &c->pty,
				 &d);
		if (r < 0) {
			c->proc.path = xstrdup(spec->argv.nr ? spec->argv.v[0] : "");
			proc_set_start_failure(&c->proc, SHIM_STAGE_SPAWN, -r, d.msg);
			sv_event(sv, c, PROC_EV_SPAWN_FAILED, NULL);
			return;
		}
	}

	r = proc_spawn(spec, &p, &d);
	if (r == 0) {
		uint64_t base = (uint64_t)slot << KIND_BITS;

		p.state = PROC_STARTING;
		p.idle_timeout_ms = spec->idle_timeout_ms;
		c->proc = p;
		if (p.out_fd >= 0 && (r = epoll_add(sv, p.out_fd, base | KIND_OUT)) < 0)
			goto unwatchable;
		if (p.err_fd >= 0 && (r = epoll_add(sv, p.err_fd, base | KIND_ERR)) < 0)
			goto unwatchable;
		if (c->listen_fd >= 0 && (r = epoll_add(sv, c->listen_fd, base | KIND_LISTEN)) < 0)
			goto unwatchable;
		keeper_send(sv, (int32_t)p.pid);
		sv_event(sv, c, PROC_EV_SPAWNED, NULL);
		sv->tick_now = true;
		return;
	}
	c->proc.path = xstrdup(spec->argv.nr ? spec->argv.v[0] : "");
	proc_set_start_failure(
		&c->proc, p.failed_stage != SHIM_STAGE_NONE ? p.failed_stage : SHIM_STAGE_SPAWN, -r,
		d.msg);
	sv_event(sv, c, PROC_EV_SPAWN_FAILED, NULL);
	return;

unwatchable:
	/* Without epoll the child cannot be supervised: take it down now. */
	(void)proc_kill_group(&c->proc, SIGKILL);
	while (waitpid(c->proc.pid, NULL, 0) < 0 && errno == EINTR)
		;
	epoll_del(sv, c->proc.out_fd);
	epoll_del(sv, c->proc.err_fd);
	diag_set(&d, NULL, 0, 0, "cannot watch '%s': %s", c->proc.path, strerror(-r));
	proc_set_start_failure(&c->proc, SHIM_STAGE_SPAWN, -r, d.msg);
	c->proc.pid = -1;
	sv_event(sv, c, PROC_EV_SPAWN_FAILED, NULL);
}

/* ops->on_tick, when a child started or its time came */
static void tick(struct supervisor *sv)
{
	int64_t w;

	if (!sv->ops->on_tick || !(sv->tick_now || (sv->tick_ms && now_ms(sv) >= sv->tick_ms)))
		return;
	sv->tick_now = false;
	w = sv->ops->on_tick(sv->ctx);
	sv->tick_ms = w >= 0 ? now_ms(sv) + (uint64_t)w + 1 : 0;
}

static void start_tasks(struct supervisor *sv)
{
	while (sv->ask && !sv->cancels && !sv->error && sv->nlive < sv->nslots) {
		struct proc_spec spec = PROC_SPEC_INIT;
		void *task = NULL;
		int r = sv->ops->next_task(sv->ctx, &spec, &task);

		if (r > 0)
			start_task(sv, &spec, task);
		proc_spec_release(&spec);
		if (r == 0) {
			int64_t w = sv->ops->wake_in_ms ? sv->ops->wake_in_ms(sv->ctx) : -1;

			sv->ask = false;
			sv->wake_ms = w >= 0 ? now_ms(sv) + (uint64_t)w + 1 : 0;
		}
		if (r < 0)
			sv->error = r;
	}
	tick(sv); /* a child started: at once */
}

/* on_exit() for every finished child; returns how many. */
static unsigned sweep(struct supervisor *sv)
{
	unsigned i, n = 0;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (!c || !c->finished)
			continue;
		sv->ops->on_exit(sv->ctx, c->task, &c->proc);
		sv->slots[i] = NULL;
		sv->nlive--;
		child_free(c);
		sv->ask = true;
		n++;
	}
	return n;
}

static struct sv_child *find_pid(struct supervisor *sv, pid_t pid)
{
	unsigned i;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (c && c->proc.pid == pid && !c->proc.exited)
			return c;
	}
	return NULL;
}

/* Every settling task whose group is empty now ends. */
static void settle_check(struct supervisor *sv)
{
	unsigned i;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (c && !c->finished && c->proc.state == PROC_SETTLING &&
		    !proc_group_alive(&c->proc))
			sv_event(sv, c, PROC_EV_GROUP_GONE, NULL);
	}
}

static void reap(struct supervisor *sv)
{
	for (;;) {
		struct sv_child *c;
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			break; /* 0: none ready; ECHILD: no children */
		c = find_pid(sv, pid);
		if (!c) {
			log_debug("reaped unknown pid %ld (an orphaned grandchild)", (long)pid);
			continue;
		}
		proc_set_wait_status(&c->proc, st);
		sv_event(sv, c, PROC_EV_EXITED, NULL);
	}
	settle_check(sv);
}

static void cancel_all(struct supervisor *sv, bool hard)
{
	unsigned i;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (!c || c->finished)
			continue;
		if (!hard) {
			sv_event(sv, c, PROC_EV_CANCEL, NULL);
		} else if (c->proc.state == PROC_TERMINATING || c->proc.state == PROC_DRAINING ||
			   c->proc.state == PROC_SETTLING) {
			c->grace_deadline_ms = 0;
			sv_event(sv, c, PROC_EV_GRACE_EXPIRED, NULL);
		}
	}
}

int supervise_cancel_task(struct supervisor *sv, const void *task)
{
	unsigned i;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (!c || c->task != task)
			continue;
		if (c->finished || c->proc.state != PROC_RUNNING)
			return -EALREADY;
		sv_event(sv, c, PROC_EV_CANCEL, NULL);
		return 0;
	}
	return -ESRCH;
}

void supervise_interrupt(struct supervisor *sv)
{
	sv->cancels++;
	cancel_all(sv, sv->cancels > 1);
}

static void handle_signals(struct supervisor *sv)
{
	struct signalfd_siginfo si[16];
	bool chld = false;

	for (;;) {
		ssize_t n = read(sv->sigfd, si, sizeof(si));
		size_t i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < (size_t)n / sizeof(si[0]); i++) {
			if (si[i].ssi_signo == SIGCHLD) {
				chld = true;
				continue;
			}
			log_debug("signal %u: cancelling %u children", si[i].ssi_signo, sv->nlive);
			supervise_interrupt(sv);
		}
	}
	if (chld)
		reap(sv);
}

/* When the stall watchdog of a running child fires (its last activity,
 * else its start, plus idle_timeout_ms), or 0 for never. */
static uint64_t idle_deadline(const struct sv_child *c)
{
	uint64_t last;

	if (!c->proc.idle_timeout_ms || c->proc.state != PROC_RUNNING)
		return 0;
	last = c->proc.last_activity_ms > c->proc.start_ms ? c->proc.last_activity_ms
							   : c->proc.start_ms;
	return last + c->proc.idle_timeout_ms;
}

static int next_timeout(struct supervisor *sv, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	unsigned i;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (!c || c->finished)
			continue;
		if (c->proc.deadline_ms && c->proc.deadline_ms < next)
			next = c->proc.deadline_ms;
		if (idle_deadline(c) && idle_deadline(c) < next)
			next = idle_deadline(c);
		if (c->grace_deadline_ms && c->grace_deadline_ms < next)
			next = c->grace_deadline_ms;
		if (c->settle_poll_ms && c->settle_poll_ms < next)
			next = c->settle_poll_ms;
		if (c->pty && c->proc.out_fd >= 0 && ptydrive_next_ms(c->pty) &&
		    ptydrive_next_ms(c->pty) < next)
			next = ptydrive_next_ms(c->pty);
	}
	if (sv->wake_ms && !sv->cancels && sv->wake_ms < next)
		next = sv->wake_ms;
	if (sv->tick_ms && sv->nlive && sv->tick_ms < next)
		next = sv->tick_ms;
	if (next == UINT64_MAX)
		return -1;
	if (next <= now)
		return 0;
	return next - now > INT32_MAX ? INT32_MAX : (int)(next - now);
}

static void fire_timers(struct supervisor *sv)
{
	uint64_t now = now_ms(sv);
	unsigned i;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (!c || c->finished)
			continue;
		if (c->proc.deadline_ms && now >= c->proc.deadline_ms) {
			c->proc.deadline_ms = 0;
			sv_event(sv, c, PROC_EV_DEADLINE, NULL);
		} else if (idle_deadline(c) && now >= idle_deadline(c)) {
			/* silent for idle_timeout_ms: stopped as at its deadline */
			c->proc.stalled = true;
			sv_event(sv, c, PROC_EV_DEADLINE, NULL);
		}
		if (!c->finished && c->pty && c->proc.out_fd >= 0 && ptydrive_next_ms(c->pty) &&
		    now >= ptydrive_next_ms(c->pty))
			pty_step(sv, c);
		if (!c->finished && c->settle_poll_ms && now >= c->settle_poll_ms) {
			if (!proc_group_alive(&c->proc)) {
				sv_event(sv, c, PROC_EV_GROUP_GONE, NULL);
				continue;
			}
			c->settle_step_ms = c->settle_step_ms * 2 > SETTLE_POLL_MAX_MS
						    ? SETTLE_POLL_MAX_MS
						    : c->settle_step_ms * 2;
			c->settle_poll_ms = now + c->settle_step_ms;
		}
		if (!c->finished && c->grace_deadline_ms && now >= c->grace_deadline_ms &&
		    c->soft_stop) {
			/* the time the agent had to stop on its own is over */
			c->soft_stop = false;
			(void)proc_kill_group(&c->proc, SIGTERM);
			c->grace_deadline_ms = now + c->grace_ms;
		} else if (!c->finished && c->grace_deadline_ms && now >= c->grace_deadline_ms) {
			c->grace_deadline_ms = 0;
			sv_event(sv, c, PROC_EV_GRACE_EXPIRED, NULL);
		}
	}
	tick(sv);
}

static void dispatch_fd(struct supervisor *sv, uint64_t data)
{
	unsigned slot = (unsigned)(data >> KIND_BITS);
	unsigned kind = (unsigned)(data & ((1u << KIND_BITS) - 1));
	struct sv_child *c = slot < sv->nslots ? sv->slots[slot] : NULL;

	if (!c || c->finished)
		return;
	if (kind >= KIND_CONN) {
		read_conns(sv, c); /* this one and any older one, in order */
		return;
	}
	switch ((enum sv_kind)kind) {
	case KIND_OUT:
		if (c->proc.out_fd >= 0)
			read_stream(sv, c, &c->out);
		break;
	case KIND_ERR:
		if (c->proc.err_fd >= 0)
			read_stream(sv, c, &c->err);
		break;
	case KIND_LISTEN:
		if (c->listen_fd >= 0)
			accept_conns(sv, c);
		break;
	case KIND_CONN:
		break;
	}
}

static void dispatch_event(struct supervisor *sv, uint64_t data)
{
	if (data == TAG_SIGNALFD) {
		handle_signals(sv);
	} else if (data == TAG_WATCH) {
		sv->ops->on_watch(sv->ctx, sv);
		sv->ask = true; /* a request may have made a task runnable */
	} else {
		dispatch_fd(sv, data);
	}
}

/* opts->watch_fd in the loop, when ops->on_watch is set. */
static int watch_add(struct supervisor *sv, const struct supervisor_opts *opts, struct diag *reterr)
{
	int r;

	if (!sv->ops->on_watch)
		return 0;
	r = opts ? epoll_add(sv, opts->watch_fd, TAG_WATCH) : -EBADF;
	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "supervise: cannot watch fd %d: %s",
			 opts ? opts->watch_fd : -1, strerror(-r));
	return r;
}

/* ops->want_interrupt says stop: what SIGINT does, once */
static void want_interrupt(struct supervisor *sv)
{
	if (!sv->cancels && sv->ops->want_interrupt && sv->ops->want_interrupt(sv->ctx))
		supervise_interrupt(sv);
}

/* Only after a failure of the loop itself: nothing may be left behind. */
static void kill_all_now(struct supervisor *sv)
{
	unsigned i;

	for (i = 0; i < sv->nslots; i++) {
		struct sv_child *c = sv->slots[i];

		if (!c)
			continue;
		if (c->proc.pid > 0 && !c->proc.exited) {
			(void)proc_kill_group(&c->proc, SIGKILL);
			while (waitpid(c->proc.pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		sv->slots[i] = NULL;
		child_free(c);
	}
	sv->nlive = 0;
}

/* The loop's descriptors: a signalfd of mask and the epoll set with it and
 * the watched fds of opts. */
static int sv_open(struct supervisor *sv, const struct supervisor_opts *opts, const sigset_t *mask,
		   struct diag *reterr)
{
	int r;

	sv->sigfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sv->sigfd < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "supervise: signalfd: %s", strerror(-r));
		return r;
	}
	sv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sv->epfd < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "supervise: epoll_create1: %s", strerror(-r));
		return r;
	}
	r = epoll_add(sv, sv->sigfd, TAG_SIGNALFD);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "supervise: epoll_ctl: %s", strerror(-r));
		return r;
	}
	return watch_add(sv, opts, reterr);
}

/* Start, wait, dispatch, until nothing is live and nothing more will
 * start: 0, -ECANCELED after a cancel, next_task's error, or the loop's
 * own failure (then everything is killed). */
static int sv_loop(struct supervisor *sv, struct diag *reterr)
{
	struct epoll_event evs[MAX_EVENTS];
	int r;

	for (;;) {
		int n, i, timeout;

		do
			start_tasks(sv);
		while (sweep(sv) && sv->ask);
		want_interrupt(sv);
		if (sv->error && !sv->cancels) {
			/* next_task failed: stop everything, as for a signal. */
			sv->cancels = 1;
			cancel_all(sv, false);
		}
		if (sv->nlive == 0 && ((!sv->ask && !sv->wake_ms) || sv->cancels || sv->error))
			break;

		timeout = next_timeout(sv, now_ms(sv));
		n = epoll_wait(sv->epfd, evs, MAX_EVENTS, timeout);
		if (n < 0 && errno != EINTR) {
			r = -errno;
			diag_set(reterr, NULL, 0, 0, "supervise: epoll_wait: %s", strerror(-r));
			kill_all_now(sv);
			return r;
		}
		for (i = 0; i < n; i++)
			dispatch_event(sv, evs[i].data.u64);
		fire_timers(sv);
		(void)sweep(sv);
		if (sv->wake_ms && now_ms(sv) >= sv->wake_ms) {
			sv->wake_ms = 0;
			sv->ask = true;
		}
	}
	if (sv->error)
		return sv->error;
	return sv->cancels ? -ECANCELED : 0;
}

int supervise_run(const struct supervisor_ops *ops, void *ctx, const struct supervisor_opts *opts,
		  struct diag *reterr)
{
	struct supervisor sv = {
		.ops = ops,
		.ctx = ctx,
		.epfd = -1,
		.sigfd = -1,
		.ask = true,
		.keeper = -1,
		.keeper_fd = -1,
	};
	struct sigaction dfl = {.sa_handler = SIG_DFL}, old_chld;
	sigset_t mask, old_mask;
	int old_subreaper = 0, r = 0;

	if (!ops || !ops->next_task || !ops->on_exit) {
		diag_set(reterr, NULL, 0, 0, "supervise: next_task and on_exit are required");
		return -EINVAL;
	}
	sv.clock = opts && opts->clock ? opts->clock : clock_system();
	sv.nslots = opts && opts->max_parallel ? opts->max_parallel : 1;
	sv.rbuf_size = opts && opts->read_chunk ? opts->read_chunk : DEFAULT_READ_CHUNK;
	sv.slots = xcalloc(sv.nslots, sizeof(*sv.slots));
	sv.rbuf = xmalloc(sv.rbuf_size);

	(void)sigemptyset(&mask);
	(void)sigaddset(&mask, SIGCHLD);
	(void)sigaddset(&mask, SIGINT);
	(void)sigaddset(&mask, SIGTERM);
	(void)sigaddset(&mask, SIGHUP);
	(void)sigprocmask(SIG_BLOCK, &mask, &old_mask);
	(void)sigemptyset(&dfl.sa_mask);
	(void)sigaction(SIGCHLD, &dfl, &old_chld); /* SIG_IGN would auto-reap */
	(void)prctl(PR_GET_CHILD_SUBREAPER, &old_subreaper, 0, 0, 0);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		log_debug("cannot become a child subreaper: %s", strerror(errno));

	r = sv_open(&sv, opts, &mask, reterr);
	if (r >= 0) {
		keeper_start(&sv);
		r = sv_loop(&sv, reterr);
	}
	kill_all_now(&sv); /* a no-op unless the loop failed */
	keeper_stop(&sv);
	close_fdp(&sv.epfd);
	close_fdp(&sv.sigfd);
	(void)prctl(PR_SET_CHILD_SUBREAPER, old_subreaper, 0, 0, 0);
	(void)sigaction(SIGCHLD, &old_chld, NULL);
	(void)sigprocmask(SIG_SETMASK, &old_mask, NULL);
	free(sv.slots);
	free(sv.rbuf);
	return r;
}

int supervise(const struct supervisor_ops *ops, void *ctx, unsigned max_parallel)
{
	struct supervisor_opts opts = {.max_parallel = max_parallel};

	return supervise_run(ops, ctx, &opts, NULL);
}
