#include "proc/pty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/banned.h"

/* How long pty_type() waits for a full input queue to drain: 100 x 50 ms. */
#define PTY_TYPE_WAITS	 100
#define PTY_TYPE_WAIT_MS 50

int pty_open(unsigned rows, unsigned cols, int *ret_master, int *ret_slave)
{
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	char name[64];
	int m = -1, s = -1, r;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0 ||
	    fcntl(m, F_SETFL, O_NONBLOCK | O_RDWR) < 0 || ioctl(m, TIOCSWINSZ, &ws) < 0) {
		r = -errno;
		goto fail;
	}
	s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		r = -errno;
		goto fail;
	}
	if (s <= STDERR_FILENO) {
		int n = fcntl(s, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);

		r = n < 0 ? -errno : 0;
		(void)close(s);
		s = n;
		if (r < 0)
			goto fail;
	}
	*ret_master = m;
	*ret_slave = s;
	return 0;
fail:
	close_fdp(&m);
	close_fdp(&s);
	return r;
}

VFORK_SAFE int pty_child_ctty(int fd)
{
	return ioctl(fd, TIOCSCTTY, 0) < 0 ? -errno : 0;
}

int pty_type(int master, const char *keys, size_t len)
{
	unsigned waits = 0;

	while (len) {
		ssize_t n = write(master, keys, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && waits++ < PTY_TYPE_WAITS) {
			/* the terminal's input queue is full (a few KiB): the
			 * program reads it as it goes */
			struct pollfd pfd = {.fd = master, .events = POLLOUT};

			(void)poll(&pfd, 1, PTY_TYPE_WAIT_MS);
			continue;
		}
		if (n < 0)
			return -errno;
		keys += n;
		len -= (size_t)n;
	}
	return 0;
}
