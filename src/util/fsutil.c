#include "util/fsutil.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
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

int file_type_error(mode_t mode)
{
	if (S_ISREG(mode))
		return 0;
	if (S_ISDIR(mode))
		return -EISDIR;
	if (S_ISFIFO(mode))
		return -ESPIPE;
	if (S_ISSOCK(mode))
		return -ENXIO;
	if (S_ISCHR(mode))
		return -ENOTTY;
	if (S_ISBLK(mode))
		return -ENOTBLK;
	if (S_ISLNK(mode))
		return -ELOOP;
	return -EINVAL;
}

bool is_file_type_error(int r)
{
	return r == -EISDIR || r == -ESPIPE || r == -ENXIO || r == -ENOTTY || r == -ENOTBLK;
}

const char *file_strerror(int r)
{
	switch (r) {
	case -EISDIR:
		return "is a directory (not a regular file)";
	case -ESPIPE:
		return "is a FIFO (not a regular file)";
	case -ENXIO:
		return "is a socket (not a regular file)";
	case -ENOTTY:
		return "is a character device (not a regular file)";
	case -ENOTBLK:
		return "is a block device (not a regular file)";
	default:
		return strerror(-r);
	}
}

int regular_or_absent(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	return file_type_error(st.st_mode);
}

int open_regular(const char *path, int flags, mode_t mode)
{
	struct stat st;
	int fd, r, fl;

	r = (flags & O_NOFOLLOW) ? lstat(path, &st) : stat(path, &st);
	if (r < 0) {
		if (errno != ENOENT || !(flags & O_CREAT))
			return -errno;
	} else {
		r = file_type_error(st.st_mode);
		if (r < 0)
			return r;
	}
	fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
	if (fd < 0) {
		r = -errno;
		/* A FIFO without a reader (O_WRONLY), a socket: swapped in
		 * since the stat; say what it is now. */
		if (r == -ENXIO && lstat(path, &st) == 0 && file_type_error(st.st_mode) < 0)
			r = file_type_error(st.st_mode);
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	r = file_type_error(st.st_mode);
	if (r < 0)
		goto fail;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	return fd;
fail:
	(void)close(fd);
	return r;
}

int read_file_capped(const char *path, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	int fd, r;

	fd = open_regular(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
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

int read_file_tail(const char *path, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	size_t want, got = 0;
	off_t off = 0;
	char *buf = NULL;
	int fd, r = 0;

	fd = open_regular(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	want = (unsigned long long)st.st_size > (unsigned long long)max ? max : (size_t)st.st_size;
	off = st.st_size - (off_t)want;
	buf = xmalloc(want + 1);
	/* what grows meanwhile is not read: at most want bytes */
	while (got < want) {
		ssize_t n = pread(fd, buf + got, want - got, off + (off_t)got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break; /* it shrank */
		got += (size_t)n;
	}
	buf[got] = '\0';
	if (ret_len)
		*ret_len = got;
	*ret = buf;
	buf = NULL;
out:
	free(buf);
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

/* ---- rmtree_beneath ---- */

#define RMTREE_PASSES 4 /* readdir passes over one directory before giving up */

static int rmtree_fd(int dfd);

/* Remove the entry name of the directory dfd (a directory recursively). */
static int rmtree_entry(int dfd, const char *name)
{
	struct stat st;
	int fd, r;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno == EACCES || errno == EPERM) {
		/* dfd itself may lack write permission: it is going anyway */
		if (fstat(dfd, &st) == 0 && fchmod(dfd, (st.st_mode & 07777) | S_IRWXU) == 0 &&
		    (unlinkat(dfd, name, 0) == 0 || errno == ENOENT))
			return 0;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		/* no read or search permission: add it (never through a symlink:
		 * fstatat said directory, and AT_SYMLINK_NOFOLLOW refuses one) */
		mode_t m = (st.st_mode & 07777) | S_IRWXU;

		if (fchmodat(dfd, name, m, AT_SYMLINK_NOFOLLOW) < 0 &&
		    (errno == ENOTSUP || errno == EOPNOTSUPP) && fchmodat(dfd, name, m, 0) < 0)
			return -errno;
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = rmtree_fd(fd); /* closes fd */
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

/* Empty the directory dfd (closed here). */
static int rmtree_fd(int dfd)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int r = 0, pass;

	if (fstat(dfd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU)
		(void)fchmod(dfd, (st.st_mode & 07777) | S_IRWXU);
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		(void)close(dfd);
		return r;
	}
	for (pass = 0; pass < RMTREE_PASSES; pass++) {
		bool any = false;

		r = 0;
		rewinddir(d);
		errno = 0;
		while ((de = readdir(d)) != NULL) {
			int k;

			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			any = true;
			k = rmtree_entry(dirfd(d), de->d_name);
			if (k < 0 && r == 0)
				r = k;
		}
		if (!any || r < 0)
			break;
	}
	(void)closedir(d);
	return r;
}

int rmtree_beneath(const char *path)
{
	struct stat st;
	int fd, r;

	if (!path || !*path)
		return -EINVAL;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = rmtree_fd(fd);
	if (rmdir(path) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

int fsutil_lines(int fd, off_t *off, size_t max, bool final, fsutil_line_fn *fn, void *ctx)
{
	struct sbuf line = SBUF_INIT(max);
	char chunk[16384];
	bool skipping = false, go = true;
	off_t pos = *off;
	ssize_t n = 0;
	int r = 0;

	if (lseek(fd, *off, SEEK_SET) < 0)
		return -errno;
	while (go && (n = read(fd, chunk, sizeof(chunk))) > 0) {
		const char *p = chunk, *end = chunk + n;

		while (go && p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t k = (size_t)((nl ? nl : end) - p);

			if (!skipping && sbuf_add(&line, p, k) < 0) {
				skipping = true;
				sbuf_reset(&line);
			}
			if (!nl)
				break;
			p = nl + 1;
			*off = pos + (p - chunk);
			go = fn(ctx, skipping ? NULL : line.buf, line.len, *off);
			skipping = false;
			sbuf_reset(&line);
		}
		pos += n;
	}
	if (n < 0)
		r = -errno;
	else if (go && final && (line.len || skipping)) {
		*off = pos;
		(void)fn(ctx, skipping ? NULL : line.buf, line.len, pos);
	}
	sbuf_release(&line);
	return r;
}
