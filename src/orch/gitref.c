#include "orch/gitref.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/banned.h"

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The length of the run of lower-case hex at s (at most n), if it is an
 * object id (40 or 64 digits); else 0. */
static size_t oid_len(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && i <= GITREF_OID_MAX && is_lower_hex(s[i]))
		i++;
	return i == 40 || i == 64 ? i : 0;
}

static bool component_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || s[0] == '.' || (n >= 5 && memcmp(s + n - 5, ".lock", 5) == 0))
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '+' || c == '-'))
			return false;
		if (c == '.' && i + 1 < n && s[i + 1] == '.')
			return false;
	}
	return true;
}

static bool name_ok_n(const char *name, size_t n)
{
	size_t i, start;

	if (n == 4 && memcmp(name, "HEAD", 4) == 0)
		return true;
	/* git-check-ref-format: "cannot end with a dot" (the name, not a component) */
	if (n < 6 || memcmp(name, "refs/", 5) != 0 || n > 1024 || name[n - 1] == '.')
		return false;
	for (start = 5, i = 5; i <= n; i++) {
		if (i == n || name[i] == '/') {
			if (!component_ok(name + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

int gitref_name_ok(const char *name)
{
	return name && name_ok_n(name, strlen(name));
}

int gitref_parse_loose(const char *buf, size_t len, char oid[GITREF_OID_MAX + 1], char *target,
		       size_t target_size)
{
	size_t n;

	/* one line; the newline is optional */
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (memchr(buf, '\n', len) || memchr(buf, '\0', len))
		return -EBADMSG;
	if (len > 5 && memcmp(buf, "ref: ", 5) == 0) {
		n = len - 5;
		if (!name_ok_n(buf + 5, n) || n + 1 > target_size)
			return -EBADMSG;
		memcpy(target, buf + 5, n);
		target[n] = '\0';
		return 2;
	}
	n = oid_len(buf, len);
	if (n == 0 || n != len)
		return -EBADMSG;
	memcpy(oid, buf, n);
	oid[n] = '\0';
	return 1;
}

/* Byte order of ref names, as git sorts packed-refs. */
static int name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : (an > bn) - (an < bn);
}

/* The whole file is checked, not only up to refname: git looks a name up in
 * packed-refs by binary search, so in a file with a malformed line, unsorted
 * lines or a name twice its answer depends on where it looks (it may not see
 * a line this would find, or find another one). Such a file is -EBADMSG, and
 * git answers. Git writes one header first, every line ends in '\n', names
 * strictly ascending, a peeled line only after a ref line. */
int gitref_parse_packed(const char *buf, size_t len, const char *refname,
			char oid[GITREF_OID_MAX + 1])
{
	size_t pos = 0, want = strlen(refname), width = 0, prev_n = 0;
	const char *prev = NULL, *found = NULL;
	bool after_ref = false;

	while (pos < len) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos), *name;
		size_t n, h;

		if (!nl)
			return -EBADMSG; /* git: "unterminated line" */
		n = (size_t)(nl - line);
		pos += n + 1;
		if (line == buf && n >= 17 && memcmp(line, "# pack-refs with:", 17) == 0)
			continue; /* the header */
		if (n > 0 && line[0] == '^') {
			h = oid_len(line + 1, n - 1);
			if (!after_ref || h == 0 || h + 1 != n || h != width)
				return -EBADMSG;
			after_ref = false;
			continue;
		}
		h = oid_len(line, n);
		if (h == 0 || h + 1 >= n || line[h] != ' ' || (width && h != width))
			return -EBADMSG;
		width = h;
		name = line + h + 1;
		n -= h + 1;
		if (memchr(name, '\0', n) || memchr(name, ' ', n) ||
		    (prev && name_cmp(prev, prev_n, name, n) >= 0))
			return -EBADMSG;
		prev = name;
		prev_n = n;
		after_ref = true;
		/* a name this module does not read is not looked up, only checked */
		if (n == want && memcmp(name, refname, want) == 0 && name_ok_n(name, n))
			found = line;
	}
	if (!found)
		return 0;
	memcpy(oid, found, width);
	oid[width] = '\0';
	return 1;
}

/* Read a small regular file without following a symlink at its last
 * component and without blocking on a FIFO an agent put there. */
static int read_small(const char *path, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
	} else if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
	} else if (!S_ISREG(st.st_mode)) {
		r = -ENOTSUP;
	} else if ((unsigned long long)st.st_size > (unsigned long long)max) {
		r = -EFBIG;
	} else {
		r = read_fd_capped(fd, max, ret, ret_len);
	}
	close_fdp(&fd);
	return r;
}

static int path_of(char *buf, size_t size, const char *repo, const char *leaf)
{
	int n = snprintf(buf, size, "%s/.git/%s", repo, leaf);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Is repo/.git a plain "files" ref store this module reads? */
static int store_ok(const char *repo)
{
	static const char *const foreign[] = {"reftable", "commondir", NULL};
	char path[4096];
	struct stat st;
	size_t i;
	int r;

	if ((r = path_of(path, sizeof(path), repo, "")) < 0)
		return r;
	/* "repo/.git", not "repo/.git/": with the slash lstat follows a symlink,
	 * and fails with ENOTDIR on a "gitdir:" file */
	path[strlen(path) - 1] = '\0';
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? -ENOTSUP : -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTSUP; /* "gitdir: ..." file, symlink */
	for (i = 0; foreign[i]; i++) {
		if ((r = path_of(path, sizeof(path), repo, foreign[i])) < 0)
			return r;
		if (lstat(path, &st) == 0 || errno != ENOENT)
			return -ENOTSUP;
	}
	return 0;
}

static int read_packed(const char *repo, const char *refname, char oid[GITREF_OID_MAX + 1])
{
	char path[4096], *buf = NULL;
	size_t len = 0;
	int r;

	if ((r = path_of(path, sizeof(path), repo, "packed-refs")) < 0)
		return r;
	r = read_small(path, GITREF_PACKED_MAX, &buf, &len);
	if (r == -ENOENT)
		return -ENOENT;
	if (r < 0)
		return r == -EFBIG || r == -ELOOP || r == -EISDIR ? -ENOTSUP : r;
	r = gitref_parse_packed(buf, len, refname, oid);
	free(buf);
	if (r < 0)
		return -ENOTSUP;
	return r == 1 ? 0 : -ENOENT;
}

int gitref_read(const char *repo, const char *refname, char oid[GITREF_OID_MAX + 1])
{
	char name[1100], target[1100], path[4096];
	int depth, r;

	if (!gitref_name_ok(refname) || strlen(refname) >= sizeof(name))
		return -ENOTSUP;
	if ((r = store_ok(repo)) < 0)
		return r;
	(void)snprintf(name, sizeof(name), "%s", refname);
	/* GITREF_MAX_DEPTH files read, as git's SYMREF_MAXDEPTH: git gives up on
	 * a chain of 5 symbolic refs, so this must not answer for it */
	for (depth = 0; depth < GITREF_MAX_DEPTH; depth++) {
		char *buf = NULL;
		size_t len = 0;

		if ((r = path_of(path, sizeof(path), repo, name)) < 0)
			return r;
		r = read_small(path, GITREF_LOOSE_MAX, &buf, &len);
		if (r == -ENOENT || r == -ENOTDIR || r == -EISDIR)
			return strcmp(name, "HEAD") == 0 ? -ENOTSUP : read_packed(repo, name, oid);
		if (r < 0)
			return r == -EFBIG || r == -ELOOP ? -ENOTSUP : r;
		r = gitref_parse_loose(buf, len, oid, target, sizeof(target));
		free(buf);
		if (r == 1)
			return 0;
		if (r != 2 || strcmp(target, "HEAD") == 0)
			return -ENOTSUP;
		(void)snprintf(name, sizeof(name), "%s", target);
	}
	return -ENOTSUP;
}
