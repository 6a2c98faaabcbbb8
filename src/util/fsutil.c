#include "util/fsutil.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/sbuf.h"
#include "util/xalloc.h"

void close_fdp(int *fd)
{
	if (*fd >= 0) {
		(void)close(*fd);
		*fd = -1;
	}
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

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

int read_fd_capped(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct sbuf sb = SBUF_INIT(max);
	char chunk[65536];
	int r = 0;

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		r = sbuf_add(&sb, chunk, (size_t)n);
		if (r < 0) {
			r = -EFBIG;
			goto out;
		}
	}
	if (ret_len)
		*ret_len = sb.len;
	*ret = sbuf_detach(&sb, NULL);
out:
	sbuf_release(&sb);
	return r;
}

int read_file_capped(const char *path, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if ((unsigned long long)st.st_size > (unsigned long long)max) {
		r = -EFBIG;
		goto out;
	}
	r = read_fd_capped(fd, max, ret, ret_len);
out:
	close_fdp(&fd);
	return r;
}

void path_dirname(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		(void)snprintf(buf, size, ".");
	else if (slash == path)
		(void)snprintf(buf, size, "/");
	else
		(void)snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

int fsync_path(const char *path, bool directory)
{
	int fd = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC | O_NOCTTY);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close_fdp(&fd);
	return r;
}

static int replace_file(const char *path, const void *data, size_t len, mode_t mode, bool sync);

int atomic_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	return replace_file(path, data, len, mode, true);
}

int atomic_replace_file(const char *path, const void *data, size_t len, mode_t mode)
{
	return replace_file(path, data, len, mode, false);
}

static int replace_file(const char *path, const void *data, size_t len, mode_t mode, bool sync)
{
	char tmp[PATH_MAX];
	int fd = -1, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0) {
		r = -errno;
		goto fail;
	}
	r = write_all(fd, data, len);
	if (r < 0)
		goto fail;
	if (sync && fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}
	if (sync) {
		char dir[PATH_MAX];

		path_dirname(path, dir, sizeof(dir));
		return fsync_path(dir, true);
	}
	return 0;
fail:
	close_fdp(&fd);
	(void)unlink(tmp);
	return r;
}

int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path), i;

	if (len == 0)
		return -EINVAL;
	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	/* the common case first: the parent exists (one syscall, not one per
	 * component: this is on every task's path) */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -errno;
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		if (i < len)
			buf[i] = '/';
	}
	return 0;
}
