/* Unix domain stream sockets at a path (usock.h). */
#include "proc/usock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/banned.h"

/* The address of path in *sa: the path itself when it fits, else
 * /proc/self/fd/DIRFD/NAME with *dirfd the directory opened O_PATH (the
 * caller closes it after bind/connect). */
static int sun_of(const char *path, struct sockaddr_un *sa, int *dirfd)
{
	char dir[PATH_MAX];
	const char *name;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	*dirfd = -1;
	if (!*path)
		return -EINVAL;
	if (strlen(path) < sizeof(sa->sun_path)) {
		memcpy(sa->sun_path, path, strlen(path) + 1);
		return 0;
	}
	name = strrchr(path, '/');
	name = name ? name + 1 : path;
	if (!*name || strlen(name) > 64)
		return -ENAMETOOLONG;
	path_dirname(path, dir, sizeof(dir));
	*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return -errno;
	(void)snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", *dirfd, name);
	return 0;
}

int usock_listen(const char *path, int *ret_fd, struct diag *reterr)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd = -1, dirfd = -1, r;

	r = sun_of(path, &sa, &dirfd);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot listen on '%s': %s", path, strerror(-r));
		return r;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			r = -EEXIST;
			diag_set(reterr, NULL, 0, 0, "cannot listen on '%s': not a socket", path);
			goto out;
		}
		(void)unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 64) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot listen on '%s': %s", path, strerror(-r));
		goto out;
	}
	*ret_fd = fd;
	fd = -1;
	r = 0;
out:
	close_fdp(&fd);
	close_fdp(&dirfd);
	return r;
}

int usock_connect(const char *path, unsigned timeout_ms, int *ret_fd, struct diag *reterr)
{
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	struct sockaddr_un sa;
	int fd = -1, dirfd = -1, r;

	r = sun_of(path, &sa, &dirfd);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot connect to '%s': %s", path, strerror(-r));
		return r;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    (timeout_ms && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
			    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0))) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot connect to '%s': %s", path, strerror(-r));
		goto out;
	}
	while ((r = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EINTR)
		;
	if (r < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot connect to '%s': %s", path, strerror(-r));
		goto out;
	}
	*ret_fd = fd;
	fd = -1;
	r = 0;
out:
	close_fdp(&fd);
	close_fdp(&dirfd);
	return r;
}

int usock_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
