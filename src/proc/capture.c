#include "proc/capture.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/diag.h"
#include "util/fsutil.h"
#include "util/xalloc.h"

#include "util/banned.h"

#define CAPTURE_DEFAULT_PARALLEL 16
#define CAPTURE_READ_CHUNK	 16384
#define CAPTURE_READS_PER_WAKEUP 16 /* reads of one stream before the others get a turn */
#define CAPTURE_POLL_CAP_MS	 50 /* without a pidfd, exits are noticed this late at worst */

enum slot_state {
	SLOT_PENDING,
	SLOT_RUNNING,  /* spawned, not exited */
	SLOT_DRAINING, /* reaped, its pipes still open */
	SLOT_DONE,
};

struct slot {
	enum slot_state state;
	struct proc p;
	int pidfd; /* readable when the child exits; -1 without (old kernel, seccomp) */
	bool term_sent, kill_sent;
	uint64_t start_ms, deadline_ms, kill_at_ms, drain_until_ms;
};

struct loop {
	struct capture *c;
	struct slot *slots;
	size_t n, next;
	unsigned running, max_parallel;
	uint64_t drain_ms;
	const struct clock *clock;
	struct pollfd *pfd;
	size_t *pfd_of; /* slot * 3 + (0 stdout, 1 stderr, 2 pidfd) */
	char *chunk;
};

static uint64_t now_ms(const struct loop *l)
{
	return l->clock->mono_ms(l->clock);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Keep the last keep bytes of what is added (trimmed lazily: at most twice
 * that is held). */
static void tail_add(struct sbuf *sb, size_t keep, const char *p, size_t n)
{
	if (keep == 0)
		return;
	if (n >= keep) {
		sbuf_reset(sb);
		(void)sbuf_add(sb, p + n - keep, keep);
		return;
	}
	(void)sbuf_add(sb, p, n);
	if (sb->len > 2 * keep) {
		memmove(sb->buf, sb->buf + sb->len - keep, keep);
		sbuf_setlen(sb, keep);
	}
}

/* The last keep bytes, not starting inside a UTF-8 sequence when the
 * stream was cut (cut: bytes before the buffer's were dropped). */
static void tail_finish(struct sbuf *sb, size_t keep, bool cut)
{
	size_t skip = 0, start = 0;

	if (sb->len > keep) {
		skip = start = sb->len - keep;
		cut = true;
	}
	if (!cut)
		return;
	while (skip < sb->len && skip - start < 3 && ((unsigned char)sb->buf[skip] & 0xc0) == 0x80)
		skip++;
	memmove(sb->buf, sb->buf + skip, sb->len - skip);
	sbuf_setlen(sb, sb->len - skip);
}

static void feed(struct capture *c, int stream, const char *p, size_t n)
{
	struct sbuf *b = stream ? &c->err : &c->out;
	size_t max = stream ? c->max_err : c->max_out;
	size_t *dropped = stream ? &c->err_dropped : &c->out_dropped;
	size_t room, take;

	if (stream && c->tail_err) {
		size_t before = b->len;

		tail_add(b, max, p, n);
		/* what falls out of the window is dropped */
		*dropped += before + n - b->len;
		return;
	}
	room = b->len < max ? max - b->len : 0;
	take = n < room ? n : room;
	if (take)
		(void)sbuf_add(b, p, take); /* within the cap by construction */
	*dropped += n - take;
}

/* Read what stream k has now, up to a budget; closes it at EOF or on an
 * error (EIO and friends count as EOF). */
static void slot_read(struct loop *l, size_t i, int k)
{
	struct slot *s = &l->slots[i];
	int *fd = k ? &s->p.err_fd : &s->p.out_fd;
	int budget;

	for (budget = CAPTURE_READS_PER_WAKEUP; budget > 0 && *fd >= 0; budget--) {
		ssize_t n = read(*fd, l->chunk, CAPTURE_READ_CHUNK);

		if (n > 0) {
			feed(&l->c[i], k, l->chunk, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		close_fdp(fd);
	}
}

static void slot_done(struct loop *l, size_t i)
{
	struct slot *s = &l->slots[i];
	struct capture *c = &l->c[i];

	close_fdp(&s->pidfd);
	if (s->state == SLOT_RUNNING || s->state == SLOT_DRAINING)
		l->running--;
	if (s->p.exited && !c->status_unknown) {
		c->exit_code = s->p.exit_code;
		c->term_signal = s->p.term_signal;
	}
	proc_contain_end(&s->p);
	c->oom_kills = s->p.oom_kills;
	proc_release(&s->p);
	if (c->tail_err) {
		size_t before = c->err.len;

		tail_finish(&c->err, c->max_err, c->err_dropped > 0);
		c->err_dropped += before - c->err.len;
	}
	s->state = SLOT_DONE;
}

static void slot_start(struct loop *l, size_t i)
{
	struct slot *s = &l->slots[i];
	struct capture *c = &l->c[i];
	struct diag d = {0};
	struct proc_spec spec;
	int r;

	/* a shallow copy: the pipes are ours whatever the caller's flags say */
	spec = *c->spec;
	spec.flags |= SPAWN_PIPE_STDOUT | SPAWN_PIPE_STDERR;
	s->start_ms = now_ms(l);
	r = proc_spawn(&spec, &s->p, &d);
	if (r < 0) {
		c->start_result = r;
		c->failed_stage = s->p.failed_stage;
		c->start_errno = s->p.start_errno;
		c->start_error = xstrdup(d.msg);
		proc_set_start_failure(&s->p, s->p.failed_stage, s->p.start_errno, NULL);
		c->exit_code = s->p.exit_code;
		s->state = SLOT_DONE;
		proc_release(&s->p);
		return;
	}
	s->pidfd = pidfd_open(s->p.pid, 0);
	if (s->pidfd < 0)
		s->pidfd = -1;
	s->state = SLOT_RUNNING;
	s->deadline_ms = c->timeout_ms ? add_sat(s->start_ms, c->timeout_ms) : UINT64_MAX;
	l->running++;
}

/* Has the child exited? Then kill what is left of its tree while its zombie
 * still pins the group id, reap it, and start the drain. */
static void slot_check_exit(struct loop *l, size_t i)
{
	struct slot *s = &l->slots[i];
	struct capture *c = &l->c[i];
	siginfo_t si;
	int wst = 0;
	pid_t w;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)s->p.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
			break;
		if (errno == EINTR)
			continue;
		c->status_unknown = true; /* ECHILD: reaped behind our back */
		goto exited;
	}
	if (si.si_pid == 0)
		return;
	(void)proc_kill_group(&s->p, SIGKILL);
	do
		w = waitpid(s->p.pid, &wst, 0); /* a zombie: does not block */
	while (w < 0 && errno == EINTR);
	if (w < 0)
		c->status_unknown = true;
	else
		proc_set_wait_status(&s->p, wst);
exited:
	s->p.exited = true;
	c->elapsed_ms = now_ms(l) - s->start_ms;
	if (c->on_reaped)
		c->on_reaped(c->ctx);
	close_fdp(&s->pidfd);
	s->state = SLOT_DRAINING;
	s->drain_until_ms = add_sat(now_ms(l), l->drain_ms);
}

static void slot_check_deadline(struct loop *l, size_t i, uint64_t now)
{
	struct slot *s = &l->slots[i];
	struct capture *c = &l->c[i];

	if (!s->term_sent && now >= s->deadline_ms) {
		c->timed_out = true;
		s->term_sent = true;
		if (c->kill_grace_ms) {
			(void)proc_kill_group(&s->p, SIGTERM);
			s->kill_at_ms = add_sat(now, c->kill_grace_ms);
		} else {
			(void)proc_kill_group(&s->p, SIGKILL);
			s->kill_sent = true;
		}
	} else if (s->term_sent && !s->kill_sent && now >= s->kill_at_ms) {
		s->kill_sent = true;
		(void)proc_kill_group(&s->p, SIGKILL);
	}
}

/* The next instant slot s needs attention at. */
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

static void slot_service(struct loop *l, size_t i)
{
	struct slot *s = &l->slots[i];
	uint64_t now;

	if (s->state == SLOT_RUNNING)
		slot_check_exit(l, i);
	now = now_ms(l);
	if (s->state == SLOT_RUNNING) {
		slot_check_deadline(l, i, now);
		return;
	}
	if (s->state != SLOT_DRAINING)
		return;
	slot_read(l, i, 0);
	slot_read(l, i, 1);
	if ((s->p.out_fd < 0 && s->p.err_fd < 0) || now >= s->drain_until_ms)
		slot_done(l, i);
}

/* The loop itself failed: kill and reap every child started, finish all. */
static void loop_abort(struct loop *l, int err)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		struct slot *s = &l->slots[i];
		struct capture *c = &l->c[i];

		if (s->state == SLOT_RUNNING) {
			int wst = 0;
			pid_t w;

			(void)proc_kill_group(&s->p, SIGKILL);
			do
				w = waitpid(s->p.pid, &wst, 0);
			while (w < 0 && errno == EINTR);
			if (w < 0)
				c->status_unknown = true;
			else
				proc_set_wait_status(&s->p, wst);
			s->state = SLOT_DRAINING;
		}
		if (s->state == SLOT_DRAINING) {
			slot_done(l, i);
		} else if (s->state == SLOT_PENDING) {
			c->start_result = -err;
			c->start_error = xstrdup("not started: waiting for children failed");
			s->state = SLOT_DONE;
		}
	}
}

static size_t loop_fds(struct loop *l, uint64_t *ret_wake)
{
	size_t i, nfds = 0;
	uint64_t wake = UINT64_MAX;

	for (i = 0; i < l->n; i++) {
		struct slot *s = &l->slots[i];
		const int fds[3] = {s->p.out_fd, s->p.err_fd,
				    s->state == SLOT_RUNNING ? s->pidfd : -1};
		int k;

		if (s->state != SLOT_RUNNING && s->state != SLOT_DRAINING)
			continue;
		for (k = 0; k < 3; k++) {
			if (fds[k] < 0)
				continue;
			l->pfd[nfds] = (struct pollfd){.fd = fds[k], .events = POLLIN};
			l->pfd_of[nfds] = i * 3 + (size_t)k;
			nfds++;
		}
		if (slot_next_ms(s) < wake)
			wake = slot_next_ms(s);
		/* without a pidfd an exit is only seen by looking */
		if (s->state == SLOT_RUNNING && s->pidfd < 0)
			wake = wake < add_sat(now_ms(l), CAPTURE_POLL_CAP_MS)
				       ? wake
				       : add_sat(now_ms(l), CAPTURE_POLL_CAP_MS);
	}
	*ret_wake = wake;
	return nfds;
}

static int loop_run(struct loop *l)
{
	for (;;) {
		uint64_t now, wake;
		size_t nfds, i;
		int timeout;

		while (l->next < l->n && l->running < l->max_parallel)
			slot_start(l, l->next++);
		if (l->running == 0 && l->next >= l->n)
			return 0;

		nfds = loop_fds(l, &wake);
		now = now_ms(l);
		timeout = CAPTURE_POLL_CAP_MS * 20;
		if (wake <= now)
			timeout = 0;
		else if (wake - now < (uint64_t)timeout)
			timeout = (int)(wake - now);
		if (poll(l->pfd, (nfds_t)nfds, timeout) < 0) {
			int r = -errno;

			if (r == -EINTR)
				continue;
			loop_abort(l, -r);
			return r;
		}
		for (i = 0; i < nfds; i++) {
			size_t si = l->pfd_of[i] / 3;
			int k = (int)(l->pfd_of[i] % 3);

			if (k < 2 && (l->pfd[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
				slot_read(l, si, k);
		}
		for (i = 0; i < l->n; i++)
			slot_service(l, i);
	}
}

int proc_capture(struct capture *c, size_t n, const struct capture_opts *o)
{
	static const struct capture_opts no_opts;
	struct loop l = {0};
	size_t i, npfd;
	int r;

	if (n == 0)
		return 0;
	if (!c)
		return -EINVAL;
	if (!o)
		o = &no_opts;
	l.c = c;
	l.n = n;
	l.clock = o->clock ? o->clock : clock_system();
	l.drain_ms = o->drain_ms ? o->drain_ms : CAPTURE_DEFAULT_DRAIN_MS;
	l.max_parallel = o->max_parallel ? o->max_parallel : CAPTURE_DEFAULT_PARALLEL;
	if (l.max_parallel > n)
		l.max_parallel = (unsigned)n;
	for (i = 0; i < n; i++) {
		c[i].start_result = 0;
		c[i].failed_stage = SHIM_STAGE_NONE;
		c[i].start_errno = 0;
		c[i].start_error = NULL;
		c[i].exit_code = -1;
		c[i].term_signal = 0;
		c[i].timed_out = c[i].status_unknown = false;
		/* head streams never grow past their cap; a tail one holds
		 * twice its window at most */
		sbuf_init(&c[i].out, SIZE_MAX);
		sbuf_init(&c[i].err, SIZE_MAX);
		c[i].out_dropped = c[i].err_dropped = 0;
		c[i].oom_kills = 0;
		c[i].elapsed_ms = 0;
	}
	l.slots = xcalloc(n, sizeof(*l.slots));
	for (i = 0; i < n; i++) {
		l.slots[i].state = SLOT_PENDING;
		l.slots[i].p = (struct proc)PROC_INIT;
		l.slots[i].pidfd = -1;
	}
	npfd = st_mult(l.max_parallel, 3);
	l.pfd = xcalloc(npfd, sizeof(*l.pfd));
	l.pfd_of = xcalloc(npfd, sizeof(*l.pfd_of));
	l.chunk = xmalloc(CAPTURE_READ_CHUNK);
	r = loop_run(&l);
	free(l.slots);
	free(l.pfd);
	free(l.pfd_of);
	free(l.chunk);
	return r;
}

void capture_release(struct capture *c)
{
	if (!c)
		return;
	free(c->start_error);
	c->start_error = NULL;
	sbuf_release(&c->out);
	sbuf_release(&c->err);
}
