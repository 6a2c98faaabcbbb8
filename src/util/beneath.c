/* Confined file access beneath a directory fd (beneath.h). */
#include "util/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/xalloc.h"
#include "util/banned.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int beneath_check_relpath(const char *path, size_t len, struct diag *reterr)
{
	size_t i = 0;
	long depth = 0;

	if (!path || len == 0) {
		diag_set(reterr, NULL, 0, 0, "empty path");
		return -EINVAL;
	}
	if (memchr(path, '\0', len)) {
		diag_set(reterr, NULL, 0, 0, "path contains a NUL byte");
		return -EINVAL;
	}
	if (len >= PATH_MAX) {
		diag_set(reterr, NULL, 0, 0, "path is longer than %d bytes", PATH_MAX - 1);
		return -ENAMETOOLONG;
	}
	if (path[0] == '/') {
		diag_set(reterr, NULL, 0, 0,
			 "absolute paths are not allowed (paths are relative to the workdir): "
			 "'%.*s'",
			 (int)(len > 200 ? 200 : len), path);
		return -EPERM;
	}
	while (i < len) {
		size_t j = i;

		while (j < len && path[j] != '/')
			j++;
		if (j - i > NAME_MAX) {
			diag_set(reterr, NULL, 0, 0, "a path component is longer than %d bytes",
				 NAME_MAX);
			return -ENAMETOOLONG;
		}
		if (j - i == 2 && path[i] == '.' && path[i + 1] == '.')
			depth--;
		else if (j > i && !(j - i == 1 && path[i] == '.'))
			depth++;
		if (depth < 0) {
			diag_set(reterr, NULL, 0, 0, "path escapes the run workdir: '%.*s'",
				 (int)(len > 200 ? 200 : len), path);
			return -EPERM;
		}
		i = j + 1;
	}
	return 0;
}

static void escape_diag(int err, const char *path, struct diag *reterr)
{
	switch (err) {
	case EXDEV:
		diag_set(reterr, NULL, 0, 0, "path escapes the run workdir: '%.200s'", path);
		break;
	case ELOOP:
		diag_set(reterr, NULL, 0, 0,
			 "path has a symlink loop or a link that is not allowed: '%.200s'", path);
		break;
	case ENOSYS:
		diag_set(reterr, NULL, 0, 0,
			 "confined file access needs openat2 (Linux 5.6 or later), which this "
			 "system does not provide");
		break;
	default:
		diag_set(reterr, NULL, 0, 0, "'%.200s': %s", path, strerror(err));
		break;
	}
}

int beneath_open(int dirfd, const char *path, size_t len, int flags, mode_t mode,
		 struct diag *reterr)
{
	struct open_how how;
	int tries;
	int r;

	r = beneath_check_relpath(path, len, reterr);
	if (r < 0)
		return r;
	memset(&how, 0, sizeof(how));
	/* openat2 refuses O_NOCTTY (and most flags) together with O_PATH */
	how.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY));
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	/* EAGAIN: a concurrent rename raced with a '..' lookup; try again */
	for (tries = 0; tries < 8; tries++) {
		int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

		if (fd >= 0)
			return fd;
		if (errno != EAGAIN && errno != EINTR)
			break;
	}
	r = -errno;
	escape_diag(-r, path, reterr);
	return r;
}

int beneath_mkdirs(int dirfd, const char *path, struct diag *reterr)
{
	size_t len = strlen(path), i;
	char *buf;
	int r = 0;

	r = beneath_check_relpath(path, len, reterr);
	if (r < 0)
		return r;
	buf = xstrdup(path);
	for (i = 1; i < len; i++) {
		int fd, pfd;
		char *slash, *base;

		if (buf[i] != '/' || buf[i - 1] == '/')
			continue;
		buf[i] = '\0';
		fd = beneath_open(dirfd, buf, i, O_PATH | O_DIRECTORY, 0, NULL);
		if (fd >= 0) {
			(void)close(fd);
			buf[i] = '/';
			continue;
		}
		if (fd != -ENOENT) {
			escape_diag(-fd, buf, reterr);
			r = fd;
			goto out;
		}
		/* create the last component relative to its parent, opened beneath */
		slash = strrchr(buf, '/');
		if (slash) {
			*slash = '\0';
			pfd = beneath_open(dirfd, buf, (size_t)(slash - buf), O_PATH | O_DIRECTORY,
					   0, reterr);
			*slash = '/';
			base = slash + 1;
		} else {
			pfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
			if (pfd < 0)
				pfd = -errno;
			base = buf;
		}
		if (pfd < 0) {
			r = pfd;
			goto out;
		}
		if (strcmp(base, ".") != 0 && strcmp(base, "..") != 0 &&
		    mkdirat(pfd, base, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			diag_set(reterr, NULL, 0, 0, "cannot create directory '%.200s': %s", buf,
				 strerror(errno));
			(void)close(pfd);
			goto out;
		}
		(void)close(pfd);
		/* it must now open beneath (a symlink planted meanwhile is refused) */
		fd = beneath_open(dirfd, buf, i, O_PATH | O_DIRECTORY, 0, reterr);
		if (fd < 0) {
			r = fd;
			goto out;
		}
		(void)close(fd);
		buf[i] = '/';
	}
out:
	free(buf);
	return r;
}

int beneath_unlink(int dirfd, const char *path, struct diag *reterr)
{
	size_t len = path ? strlen(path) : 0;
	char *buf = NULL, *slash;
	const char *base;
	int pfd = -1, r;

	r = beneath_check_relpath(path, len, reterr);
	if (r < 0)
		return r;
	buf = xstrdup(path);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	slash = strrchr(buf, '/');
	if (slash) {
		*slash = '\0';
		base = slash + 1;
		pfd = beneath_open(dirfd, buf, (size_t)(slash - buf), O_PATH | O_DIRECTORY, 0,
				   reterr);
		*slash = '/';
		if (pfd < 0) {
			r = pfd;
			goto out;
		}
	} else {
		base = buf;
		pfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
		if (pfd < 0) {
			r = -errno;
			diag_set(reterr, NULL, 0, 0, "cannot open the workdir: %s",
				 strerror(errno));
			goto out;
		}
	}
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || base[0] == '\0') {
		diag_set(reterr, NULL, 0, 0, "'%.200s' does not name a file", path);
		r = -EINVAL;
		goto out;
	}
	if (unlinkat(pfd, base, 0) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot delete '%.200s': %s", path, strerror(errno));
		goto out;
	}
	r = 0;
out:
	if (pfd >= 0)
		(void)close(pfd);
	free(buf);
	return r;
}
