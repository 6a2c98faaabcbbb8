/* JSON-RPC 2.0 messages, one a line, over a pair of fds (rpcwire.h). */
#include "util/rpcwire.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/xalloc.h"
#include "util/banned.h"

uint64_t rpcwire_now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int rpcwire_poll(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	uint64_t now = rpcwire_now_ms();
	int r;

	if (now >= deadline)
		return -ETIMEDOUT;
	do
		r = poll(&p, 1, (int)(deadline - now > 1000 ? 1000 : deadline - now));
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r;
}

void rpcwire_init(struct rpcwire *w, int rfd, int wfd, size_t max_message)
{
	w->rfd = rfd;
	w->wfd = wfd;
	w->eof = false;
	sbuf_init(&w->rbuf, max_message ? max_message : RPCWIRE_DEFAULT_MAX);
}

void rpcwire_release(struct rpcwire *w)
{
	sbuf_release(&w->rbuf);
}

static int write_deadline(int fd, const char *buf, size_t len, uint64_t deadline)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int r = rpcwire_poll(fd, POLLOUT, deadline);

			if (r < 0)
				return r;
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

int rpcwire_send(struct rpcwire *w, const json_t *msg, uint64_t deadline)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int r;

	if (!s)
		return -EINVAL;
	(void)sbuf_adds(&sb, s);
	(void)sbuf_addc(&sb, '\n');
	free(s);
	r = w->wfd >= 0 ? write_deadline(w->wfd, sb.buf, sb.len, deadline) : -EPIPE;
	sbuf_release(&sb);
	return r;
}

int rpcwire_read_line(struct rpcwire *w, char **ret, size_t *ret_len, uint64_t deadline)
{
	for (;;) {
		char *nl = memchr(w->rbuf.buf, '\n', w->rbuf.len), buf[65536];
		ssize_t n;
		int r;

		if (nl) {
			size_t len = (size_t)(nl - w->rbuf.buf);

			*ret = xstrndup(w->rbuf.buf, len);
			*ret_len = len;
			memmove(w->rbuf.buf, nl + 1, w->rbuf.len - len - 1);
			sbuf_setlen(&w->rbuf, w->rbuf.len - len - 1);
			return 0;
		}
		if (w->eof || w->rfd < 0)
			return -EPIPE;
		n = read(w->rfd, buf, sizeof(buf));
		if (n > 0) {
			if (sbuf_add(&w->rbuf, buf, (size_t)n) < 0)
				return -ENOBUFS;
			continue;
		}
		if (n == 0) {
			w->eof = true;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		r = rpcwire_poll(w->rfd, POLLIN, deadline);
		if (r < 0)
			return r;
	}
}
