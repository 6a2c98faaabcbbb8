/* Confined file access beneath a directory fd (beneath.h). */
#include "util/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/randid.h"
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
		diag_set(
			reterr, NULL, 0, 0,
			"absolute paths are not allowed (paths are relative to the workdir): '%.*s'",
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

/* ---- refused names ---------------------------------------------------------- */

/* Bytes of a code point HFS+ ignores in a name at p (n bytes left), else 0. */
static size_t hfs_ignorable(const unsigned char *p, size_t n)
{
	if (n >= 3 && p[0] == 0xe2 && p[1] == 0x80 &&
	    ((p[2] >= 0x8c && p[2] <= 0x8f) || (p[2] >= 0xaa && p[2] <= 0xae)))
		return 3; /* U+200C..U+200F, U+202A..U+202E */
	if (n >= 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xaa && p[2] <= 0xaf)
		return 3; /* U+206A..U+206F */
	if (n >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		return 3; /* U+FEFF */
	return 0;
}

/* Does the component name (len bytes) equal want (lower case ASCII) once the
 * HFS+-ignorable code points are dropped, ASCII case is folded, and an NTFS
 * ':stream' suffix and trailing dots and spaces are cut? */
static bool name_is(const char *name, size_t len, const char *want)
{
	const unsigned char *p = (const unsigned char *)name;
	char buf[NAME_MAX + 1] = {0};
	size_t i = 0, n = 0, skip;

	while (i < len) {
		if ((skip = hfs_ignorable(p + i, len - i)) != 0) {
			i += skip;
			continue;
		}
		if (p[i] == ':')
			break;
		if (n == sizeof(buf) - 1)
			return false;
		buf[n++] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i]);
		i++;
	}
	while (n > 0 && (buf[n - 1] == '.' || buf[n - 1] == ' '))
		n--;
	return n == strlen(want) && memcmp(buf, want, n) == 0;
}

bool beneath_is_git_name(const char *name, size_t len)
{
	return name_is(name, len, ".git") || name_is(name, len, "git~1");
}

bool beneath_is_bernstein_name(const char *name, size_t len)
{
	return name_is(name, len, ".bernstein") || name_is(name, len, "bernst~1");
}

/* Is a component of path[0, len) refused by bflags? *ret_git: a .git one. */
static bool refused_name(const char *path, size_t len, unsigned bflags, bool *ret_git)
{
	size_t i = 0;

	while (i < len) {
		size_t j = i;

		while (j < len && path[j] != '/')
			j++;
		if (j > i && (bflags & BENEATH_NO_GIT) && beneath_is_git_name(path + i, j - i)) {
			*ret_git = true;
			return true;
		}
		if (j > i && (bflags & BENEATH_NO_BERNSTEIN) &&
		    beneath_is_bernstein_name(path + i, j - i)) {
			*ret_git = false;
			return true;
		}
		i = j + 1;
	}
	return false;
}

static int refuse_diag(const char *shown, bool git, struct diag *reterr)
{
	if (git)
		diag_set(
			reterr, NULL, 0, 0,
			"'%.200s' is inside a git directory (.git), which this agent may not read or write (a profile allows it with runtime.git_dir: allowed)",
			shown);
	else
		diag_set(
			reterr, NULL, 0, 0,
			"'%.200s' is inside .bernstein, bernstein's own state, which no agent may read or write",
			shown);
	return -EPERM;
}

int beneath_check_names(const char *path, size_t len, unsigned bflags, struct diag *reterr)
{
	bool git;

	if (!bflags || !refused_name(path, len, bflags, &git))
		return 0;
	return refuse_diag(path, git, reterr);
}

/* The kernel's name of fd into buf (PATH_MAX + 1 bytes): its length or a
 * negative errno. */
static int fd_path(int fd, char *buf)
{
	char link[64];
	ssize_t n;

	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, PATH_MAX);
	if (n < 0)
		return -errno;
	if (n >= PATH_MAX)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return (int)n;
}

/* The real path of fd relative to dirfd (a pointer into real, "" for the
 * directory itself): 0, -EXDEV (not below), or another negative errno. */
static int real_rel(int dirfd, int fd, char *top, char *real, const char **ret)
{
	int tn, rn;

	tn = fd_path(dirfd, top);
	if (tn < 0)
		return tn;
	rn = fd_path(fd, real);
	if (rn < 0)
		return rn;
	if (tn == 1 && top[0] == '/') {
		*ret = real + 1;
		return 0;
	}
	if (rn < tn || memcmp(real, top, (size_t)tn) != 0 || (real[tn] != '/' && real[tn] != '\0'))
		return -EXDEV;
	*ret = real + tn + (real[tn] == '/');
	return 0;
}

int beneath_check_fd(int dirfd, int fd, const char *shown, unsigned bflags, struct diag *reterr)
{
	char *top, *real;
	const char *rel = NULL;
	bool git;
	int r;

	if (!bflags)
		return 0;
	top = xmalloc(PATH_MAX + 1);
	real = xmalloc(PATH_MAX + 1);
	r = real_rel(dirfd, fd, top, real, &rel);
	if (r == -EXDEV) {
		diag_set(reterr, NULL, 0, 0, "path escapes the run workdir: '%.200s'", shown);
		goto out;
	}
	if (r < 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"cannot tell where '%.200s' really is (/proc/self/fd: %s), so it is refused",
			shown, strerror(-r));
		r = -EPERM;
		goto out;
	}
	if (refused_name(rel, strlen(rel), bflags, &git))
		r = refuse_diag(shown, git, reterr);
out:
	free(top);
	free(real);
	return r;
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
		diag_set(
			reterr, NULL, 0, 0,
			"confined file access needs openat2 (Linux 5.6 or later), which this system does not provide");
		break;
	default:
		diag_set(reterr, NULL, 0, 0, "'%.200s': %s", path, strerror(err));
		break;
	}
}

/* openat2 beneath dirfd (path already checked lexically); resolve adds to
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS. */
static int open2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve,
		 struct diag *reterr)
{
	struct open_how how;
	int tries;
	int r;

	memset(&how, 0, sizeof(how));
	/* openat2 refuses O_NOCTTY (and most flags) together with O_PATH */
	how.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY));
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | resolve;
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

/* Split path into its parent (NULL: the top) and its last component; the
 * last one must be a name (not empty, '.' or '..'). buf is a copy to cut. */
static int split_leaf(char *buf, const char **ret_parent, const char **ret_leaf)
{
	char *slash = strrchr(buf, '/');
	const char *leaf = slash ? slash + 1 : buf;

	if (!*leaf || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
		return -EISDIR;
	if (slash) {
		while (slash > buf && slash[-1] == '/')
			slash--;
		*slash = '\0';
	}
	*ret_parent = slash && *buf ? buf : NULL;
	*ret_leaf = leaf;
	return 0;
}

/* A directory fd (O_PATH) of parent beneath dirfd (NULL: dirfd itself),
 * checked against bflags. */
static int open_parent(int dirfd, const char *parent, unsigned bflags, struct diag *reterr)
{
	int fd;

	if (!parent) {
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			fd = -errno;
			diag_set(reterr, NULL, 0, 0, "cannot open the workdir: %s",
				 strerror(errno));
		}
		return fd;
	}
	return beneath_open(dirfd, parent, strlen(parent), O_PATH | O_DIRECTORY, 0, bflags, reterr);
}

/* O_CREAT with bflags: open an existing file and check it, or create a new
 * one in its checked parent, never through a symlink. */
static int open_create(int dirfd, const char *path, size_t len, int flags, mode_t mode,
		       unsigned bflags, struct diag *reterr)
{
	const char *parent, *leaf;
	char *buf = NULL;
	int fd, pfd = -1;

	fd = beneath_open(dirfd, path, len, flags & ~(O_CREAT | O_EXCL), 0, bflags, reterr);
	if (fd >= 0 && (flags & O_EXCL)) {
		(void)close(fd);
		diag_set(reterr, NULL, 0, 0, "'%.200s' already exists", path);
		return -EEXIST;
	}
	if (fd != -ENOENT)
		return fd;
	diag_clear(reterr);
	buf = xstrndup(path, len);
	fd = split_leaf(buf, &parent, &leaf);
	if (fd < 0) {
		diag_set(reterr, NULL, 0, 0, "'%.200s' does not name a file", path);
		goto out;
	}
	pfd = open_parent(dirfd, parent, bflags, reterr);
	if (pfd < 0) {
		fd = pfd;
		goto out;
	}
	fd = open2(pfd, leaf, flags, mode, RESOLVE_NO_SYMLINKS, reterr);
	if (fd == -ELOOP)
		diag_set(
			reterr, NULL, 0, 0,
			"'%.200s' is a symlink to nothing (a new file is not created through a symlink)",
			path);
out:
	if (pfd >= 0)
		(void)close(pfd);
	free(buf);
	return fd;
}

int beneath_open(int dirfd, const char *path, size_t len, int flags, mode_t mode, unsigned bflags,
		 struct diag *reterr)
{
	int fd, r;

	r = beneath_check_relpath(path, len, reterr);
	if (r < 0)
		return r;
	if (!bflags)
		return open2(dirfd, path, flags, mode, 0, reterr);
	r = beneath_check_names(path, len, bflags, reterr);
	if (r < 0)
		return r;
	if (flags & O_TRUNC) {
		diag_set(reterr, NULL, 0, 0, "confined open: O_TRUNC with checked names");
		return -EINVAL;
	}
	if (flags & O_CREAT)
		return open_create(dirfd, path, len, flags, mode, bflags, reterr);
	fd = open2(dirfd, path, flags, mode, 0, reterr);
	if (fd < 0)
		return fd;
	r = beneath_check_fd(dirfd, fd, path, bflags, reterr);
	if (r < 0) {
		(void)close(fd);
		return r;
	}
	return fd;
}

int beneath_mkdirs(int dirfd, const char *path, unsigned bflags, struct diag *reterr)
{
	size_t len = strlen(path), i;
	char *buf;
	int r = 0;

	r = beneath_check_relpath(path, len, reterr);
	if (r < 0)
		return r;
	r = beneath_check_names(path, len, bflags, reterr);
	if (r < 0)
		return r;
	buf = xstrdup(path);
	for (i = 1; i < len; i++) {
		int fd, pfd;
		char *slash, *base;

		if (buf[i] != '/' || buf[i - 1] == '/')
			continue;
		buf[i] = '\0';
		fd = beneath_open(dirfd, buf, i, O_PATH | O_DIRECTORY, 0, bflags, reterr);
		if (fd >= 0) {
			(void)close(fd);
			buf[i] = '/';
			continue;
		}
		if (fd != -ENOENT) {
			if (fd != -EPERM)
				escape_diag(-fd, buf, reterr);
			r = fd;
			goto out;
		}
		diag_clear(reterr);
		/* create the last component relative to its parent, opened beneath */
		slash = strrchr(buf, '/');
		if (slash) {
			*slash = '\0';
			pfd = beneath_open(dirfd, buf, (size_t)(slash - buf), O_PATH | O_DIRECTORY,
					   0, bflags, reterr);
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
		fd = beneath_open(dirfd, buf, i, O_PATH | O_DIRECTORY, 0, bflags, reterr);
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

int beneath_unlink(int dirfd, const char *path, unsigned bflags, struct diag *reterr)
{
	size_t len = path ? strlen(path) : 0;
	char *buf = NULL, *slash;
	const char *base;
	int pfd = -1, r;

	r = beneath_check_relpath(path, len, reterr);
	if (r < 0)
		return r;
	r = beneath_check_names(path, len, bflags, reterr);
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
				   bflags, reterr);
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

/* ---- atomic replacement --------------------------------------------------- */

#define TMP_PREFIX ".bernstein-write-"

/* Where the existing regular file fd (opened O_PATH from path) really is:
 * its parent directory opened beneath dirfd and its name there, verified to
 * be the same file. */
static int locate(int dirfd, int fd, const struct stat *st, const char *path, unsigned bflags,
		  int *ret_pfd, char **ret_leaf, struct diag *reterr)
{
	char *top = xmalloc(PATH_MAX + 1), *real = xmalloc(PATH_MAX + 1), *buf = NULL;
	const char *rel = NULL, *parent, *leaf;
	struct stat now;
	int pfd = -1, r;

	r = real_rel(dirfd, fd, top, real, &rel);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot tell where '%.200s' really is: %s", path,
			 strerror(-r));
		r = r == -EXDEV ? -EXDEV : -EPERM;
		goto out;
	}
	buf = xstrdup(rel);
	r = split_leaf(buf, &parent, &leaf);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "'%.200s' does not name a file", path);
		goto out;
	}
	pfd = open_parent(dirfd, parent, bflags, reterr);
	if (pfd < 0) {
		r = pfd;
		goto out;
	}
	if (fstatat(pfd, leaf, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st->st_dev ||
	    now.st_ino != st->st_ino) {
		diag_set(reterr, NULL, 0, 0, "'%.200s' changed while it was written; try again",
			 path);
		r = -EAGAIN;
		goto out;
	}
	*ret_leaf = xstrdup(leaf);
	*ret_pfd = pfd;
	pfd = -1;
	r = 0;
out:
	if (pfd >= 0)
		(void)close(pfd);
	free(buf);
	free(top);
	free(real);
	return r;
}

/* The existing file fd (opened O_PATH from path): a regular file with one
 * link that the caller may write, located (locate()): its status into
 * *ret_st, its parent and name into *ret_pfd and *ret_leaf. */
static int target_existing(int dirfd, int fd, const char *path, unsigned bflags,
			   struct stat *ret_st, int *ret_pfd, char **ret_leaf, struct diag *reterr)
{
	struct stat st;
	char *leaf = NULL;
	int pfd = -1, r;

	if (fstat(fd, &st) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "'%.200s': %s", path, strerror(errno));
		return r;
	}
	if (S_ISDIR(st.st_mode)) {
		diag_set(reterr, NULL, 0, 0, "'%.200s' is a directory", path);
		return -EISDIR;
	}
	if (!S_ISREG(st.st_mode)) {
		diag_set(reterr, NULL, 0, 0, "'%.200s' is not a regular file", path);
		return -EINVAL;
	}
	if (st.st_nlink > 1) {
		diag_set(reterr, NULL, 0, 0,
			 "refusing to write '%.200s': it has more than one hard link", path);
		return -EMLINK;
	}
	r = locate(dirfd, fd, &st, path, bflags, &pfd, &leaf, reterr);
	if (r < 0)
		return r;
	if (faccessat(pfd, leaf, W_OK, AT_EACCESS) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "'%.200s': %s", path, strerror(errno));
		(void)close(pfd);
		free(leaf);
		return r;
	}
	*ret_st = st;
	*ret_pfd = pfd;
	*ret_leaf = leaf;
	return 0;
}

/* A path that does not exist yet: its parent (opened beneath dirfd) and
 * name into *ret_pfd and *ret_leaf. Refused: a dangling symlink, or a file
 * that appeared meanwhile. */
static int target_new(int dirfd, const char *path, unsigned bflags, int *ret_pfd, char **ret_leaf,
		      struct diag *reterr)
{
	const char *parent, *name;
	char *buf = xstrdup(path);
	struct stat st;
	int pfd = -1, r;

	diag_clear(reterr);
	r = split_leaf(buf, &parent, &name);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "'%.200s' does not name a file", path);
		goto out;
	}
	pfd = open_parent(dirfd, parent, bflags, reterr);
	if (pfd < 0) {
		r = pfd;
		goto out;
	}
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* a dangling symlink (or a file that appeared meanwhile) */
		diag_set(
			reterr, NULL, 0, 0,
			S_ISLNK(st.st_mode)
				? "'%.200s' is a symlink to nothing (a new file is not created through a symlink)"
				: "'%.200s' changed while it was written; try again",
			path);
		r = S_ISLNK(st.st_mode) ? -ELOOP : -EAGAIN;
		(void)close(pfd);
		goto out;
	}
	*ret_leaf = xstrdup(name);
	*ret_pfd = pfd;
	r = 0;
out:
	free(buf);
	return r;
}

/* A new temporary file in pfd, its name into tmp: an fd, or -errno. */
static int tmp_create(int pfd, char *tmp, size_t size, mode_t mode)
{
	int tries, tfd = -1;

	for (tries = 0; tries < 16; tries++) {
		char hex[17];
		struct timespec ts;

		(void)clock_gettime(CLOCK_REALTIME, &ts);
		randid_hex(hex, 16, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
		(void)snprintf(tmp, size, "%s%s", TMP_PREFIX, hex);
		tfd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (tfd >= 0 || errno != EEXIST)
			break;
	}
	return tfd >= 0 ? tfd : -errno;
}

/* Replace leaf in pfd with data through a temporary file renamed over it;
 * old: the file replaced (its permission bits are kept), NULL for a new
 * one. On failure the temporary file is removed. */
static int replace_leaf(int pfd, const char *leaf, const struct stat *old, const void *data,
			size_t len, const char *path, struct diag *reterr)
{
	char tmp[sizeof(TMP_PREFIX) + 32];
	int tfd, r;

	tfd = tmp_create(pfd, tmp, sizeof(tmp), old ? 0600 : 0644);
	if (tfd < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot write '%.200s': %s", path, strerror(-tfd));
		return tfd;
	}
	if (old && fchmod(tfd, old->st_mode & 0777) < 0) {
		r = -errno;
		goto fail;
	}
	r = write_all(tfd, data, len);
	if (r < 0)
		goto fail;
	r = close(tfd);
	tfd = -1;
	if (r < 0) {
		r = -errno;
		goto fail;
	}
	if (renameat(pfd, tmp, pfd, leaf) < 0) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	diag_set(reterr, NULL, 0, 0, "cannot write '%.200s': %s", path, strerror(-r));
	if (tfd >= 0)
		(void)close(tfd);
	(void)unlinkat(pfd, tmp, 0);
	return r;
}

int beneath_write(int dirfd, const char *path, const void *data, size_t len, unsigned bflags,
		  struct diag *reterr)
{
	size_t plen = path ? strlen(path) : 0;
	char *leaf = NULL;
	struct stat st;
	bool existing = false;
	int fd = -1, pfd = -1, r;

	r = beneath_check_relpath(path, plen, reterr);
	if (r < 0)
		return r;
	r = beneath_check_names(path, plen, bflags, reterr);
	if (r < 0)
		return r;
	r = beneath_mkdirs(dirfd, path, bflags, reterr);
	if (r < 0)
		return r;
	fd = beneath_open(dirfd, path, plen, O_PATH, 0, bflags, reterr);
	if (fd >= 0) {
		r = target_existing(dirfd, fd, path, bflags, &st, &pfd, &leaf, reterr);
		existing = r == 0;
	} else if (fd == -ENOENT) {
		r = target_new(dirfd, path, bflags, &pfd, &leaf, reterr);
	} else {
		r = fd;
	}
	if (r == 0)
		r = replace_leaf(pfd, leaf, existing ? &st : NULL, data, len, path, reterr);
	if (fd >= 0)
		(void)close(fd);
	if (pfd >= 0)
		(void)close(pfd);
	free(leaf);
	return r;
}

/* Open the directory name beneath dirfd, made first if missing (0700),
 * never through a symlink. */
static int subdir_nofollow(int dirfd, const char *name)
{
	int fd;

	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static bool plain_component(const char *c)
{
	return c[0] && strcmp(c, ".") != 0 && strcmp(c, "..") != 0;
}

/* Open the directory that holds top/rel's last component, walking and
 * making (0700) rel's directories beneath top without following a symlink:
 * its fd into *ret_dfd and the last component (inside buf, a copy of rel)
 * into *ret_last. 0, or a negative errno with the reason in reterr. */
static int walk_nofollow(const char *top, const char *rel, char *buf, size_t size, int *ret_dfd,
			 const char **ret_last, struct diag *reterr)
{
	char *p = buf, *slash;
	int dfd, r = 0;

	if (strlen(rel) >= size) {
		diag_set(reterr, top, 0, 0, "%s: path too long", rel);
		return -ENAMETOOLONG;
	}
	(void)snprintf(buf, size, "%s", rel);
	dfd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		diag_set(reterr, top, 0, 0,
			 "cannot open the directory (a symlink is not followed): %s", strerror(-r));
		return r;
	}
	while (r == 0 && (slash = strchr(p, '/')) != NULL) {
		int nfd;

		*slash = '\0';
		nfd = plain_component(p) ? subdir_nofollow(dfd, p) : -EPERM;
		if (nfd < 0) {
			r = nfd;
			break;
		}
		(void)close(dfd);
		dfd = nfd;
		p = slash + 1;
	}
	if (r == 0 && !plain_component(p))
		r = -EPERM;
	if (r < 0) {
		(void)close(dfd);
		if (r == -EPERM)
			diag_set(reterr, top, 0, 0, "%s: an empty, '.' or '..' component", rel);
		else
			diag_set(
				reterr, top, 0, 0, "%s: %s%s", rel, strerror(-r),
				r == -ELOOP || r == -ENOTDIR
					? " (a directory on the way is a symlink or not a directory: not followed)"
					: "");
		return r;
	}
	*ret_dfd = dfd;
	*ret_last = p;
	return 0;
}

int beneath_symlink(const char *top, const char *rel, const char *target, struct diag *reterr)
{
	char buf[PATH_MAX];
	const char *last;
	int dfd, r;

	r = walk_nofollow(top, rel, buf, sizeof(buf), &dfd, &last, reterr);
	if (r < 0)
		return r;
	if (symlinkat(target, dfd, last) < 0 && errno != EEXIST) {
		r = -errno;
		diag_set(reterr, top, 0, 0, "%s: %s", rel, strerror(-r));
	}
	(void)close(dfd);
	return r;
}

int beneath_replace(const char *top, const char *rel, const void *data, size_t len, mode_t mode,
		    struct diag *reterr)
{
	char buf[PATH_MAX], tmp[NAME_MAX + 1];
	const char *last;
	int dfd, fd = -1, r, tries;

	r = walk_nofollow(top, rel, buf, sizeof(buf), &dfd, &last, reterr);
	if (r < 0)
		return r;
	for (tries = 0; tries < 16; tries++) {
		char hex[17];
		struct timespec ts;

		(void)clock_gettime(CLOCK_REALTIME, &ts);
		randid_hex(hex, 16, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
		(void)snprintf(tmp, sizeof(tmp), ".bernstein-tmp-%s", hex);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	r = fd < 0 ? -errno : 0;
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0)
		r = write_all(fd, data, len);
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	/* the rename replaces whatever has the name, a symlink included */
	if (r == 0 && renameat(dfd, tmp, dfd, last) < 0)
		r = -errno;
	if (r < 0) {
		if (fd >= 0)
			(void)unlinkat(dfd, tmp, 0);
		diag_set(reterr, top, 0, 0, "%s: cannot write: %s", rel, strerror(-r));
	}
	(void)close(dfd);
	return r;
}
