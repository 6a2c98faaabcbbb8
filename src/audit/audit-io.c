/* Line splitting, listing and scanning of chain files. See audit-internal.h. */
#include "audit/audit-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define SCAN_CHUNK (256 * 1024)
#define TAIL_CHUNK 4096

void audit_io_split_init(struct audit_split *s, audit_line_fn *fn, void *userdata)
{
	sbuf_init(&s->buf, AUDIT_LINE_MAX);
	s->lineno = 0;
	s->too_long = false;
	s->partial = false;
	s->fn = fn;
	s->userdata = userdata;
}

void audit_io_split_release(struct audit_split *s)
{
	sbuf_release(&s->buf);
}

/* Keep bytes of a line that continues in the next chunk. */
static void split_keep(struct audit_split *s, const char *p, size_t n)
{
	s->partial = true;
	if (s->too_long)
		return;
	if (sbuf_add(&s->buf, p, n) < 0) {
		s->too_long = true;
		sbuf_reset(&s->buf);
	}
}

static int split_deliver(struct audit_split *s, const char *line, size_t len, unsigned flags)
{
	int r;

	s->lineno++;
	if (s->too_long || len > AUDIT_LINE_MAX)
		r = s->fn(s->userdata, s->lineno, NULL, 0, flags | AUDIT_LINE_TOO_LONG);
	else
		r = s->fn(s->userdata, s->lineno, line, len, flags);
	s->too_long = false;
	s->partial = false;
	sbuf_reset(&s->buf);
	return r;
}

int audit_io_split_feed(struct audit_split *s, const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	int r;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			split_keep(s, p, (size_t)(end - p));
			return 0;
		}
		if (!s->partial) {
			/* The whole line is in this chunk: no copy. */
			r = split_deliver(s, p, (size_t)(nl - p), 0);
		} else {
			split_keep(s, p, (size_t)(nl - p));
			r = split_deliver(s, s->buf.buf, s->buf.len, 0);
		}
		if (r < 0)
			return r;
		p = nl + 1;
	}
	return 0;
}

int audit_io_split_end(struct audit_split *s)
{
	if (!s->partial)
		return 0;
	return split_deliver(s, s->buf.buf, s->buf.len, AUDIT_LINE_NO_NEWLINE);
}

int audit_io_path(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct audit_file *)a)->name, ((const struct audit_file *)b)->name);
}

static bool is_chain_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 6 && strcmp(name + n - 6, ".jsonl") == 0;
}

int audit_io_stat(const char *dir, struct audit_file *f)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	r = audit_io_path(path, sizeof(path), dir, f->name);
	if (r < 0)
		return r;
	if (lstat(path, &st) < 0)
		return -errno;
	f->size = st.st_size;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->type_err = file_type_error(st.st_mode);
	return 0;
}

const char *audit_io_type_str(int type_err)
{
	return type_err == -ELOOP ? "is a symbolic link (not a regular file)"
				  : file_strerror(type_err);
}

int audit_io_list(const char *dir, bool lazy, struct audit_file **ret, size_t *ret_n)
{
	struct audit_file *files = NULL;
	size_t n = 0, alloc = 0;
	DIR *d = NULL;
	struct dirent *e;
	int dfd, r = 0;

	d = opendir(dir);
	if (!d)
		return -errno;
	dfd = dirfd(d);
	for (;;) {
		struct stat st;

		errno = 0;
		e = readdir(d);
		if (!e) {
			if (errno) {
				r = -errno;
				goto out;
			}
			break;
		}
		if (!is_chain_name(e->d_name) || strlen(e->d_name) >= sizeof(files->name))
			continue;
		if (lazy && e->d_type == DT_REG) {
			st.st_mode = S_IFREG;
			st.st_size = -1; /* audit_io_stat() when needed */
			st.st_dev = 0;
			st.st_ino = 0;
		} else if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* vanished meanwhile */
			r = -errno;
			goto out;
		}
		if (n == alloc) {
			alloc = alloc ? st_mult(alloc, 2) : 16;
			files = xrealloc(files, st_mult(alloc, sizeof(*files)));
		}
		(void)snprintf(files[n].name, sizeof(files[n].name), "%s", e->d_name);
		files[n].size = st.st_size;
		files[n].dev = st.st_dev;
		files[n].ino = st.st_ino;
		files[n].type_err = file_type_error(st.st_mode);
		n++;
	}
	if (n)
		qsort(files, n, sizeof(*files), file_cmp);
	*ret = files;
	*ret_n = n;
	files = NULL;
out:
	free(files);
	(void)closedir(d);
	return r;
}

int audit_io_scan(const char *path, off_t limit, audit_line_fn *fn, void *userdata)
{
	struct audit_split sp;
	char *chunk = NULL;
	off_t done = 0;
	int fd, r = 0;

	fd = open_regular(path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	audit_io_split_init(&sp, fn, userdata);
	chunk = xmalloc(SCAN_CHUNK);
	for (;;) {
		size_t want = SCAN_CHUNK;
		ssize_t n;

		if (limit >= 0) {
			if (done >= limit)
				break;
			if ((off_t)want > limit - done)
				want = (size_t)(limit - done);
		}
		n = read(fd, chunk, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		done += n;
		r = audit_io_split_feed(&sp, chunk, (size_t)n);
		if (r < 0)
			goto out;
	}
	r = audit_io_split_end(&sp);
out:
	free(chunk);
	audit_io_split_release(&sp);
	close_fdp(&fd);
	return r;
}

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* the file shrank under us */
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int audit_io_last_line(int fd, off_t size, struct sbuf *out, bool *ret_terminated)
{
	char tmp[TAIL_CHUNK];
	off_t end, pos, start = 0;
	bool terminated;
	int r;

	if (size <= 0)
		return -EINVAL;
	r = pread_all(fd, tmp, 1, size - 1);
	if (r < 0)
		return r;
	terminated = tmp[0] == '\n';
	end = terminated ? size - 1 : size;
	pos = end;
	while (pos > 0) {
		size_t n = pos < TAIL_CHUNK ? (size_t)pos : TAIL_CHUNK;
		const char *nl;

		r = pread_all(fd, tmp, n, pos - (off_t)n);
		if (r < 0)
			return r;
		nl = memrchr(tmp, '\n', n);
		if (nl) {
			start = pos - (off_t)n + (nl - tmp) + 1;
			break;
		}
		pos -= (off_t)n;
		if (end - pos > AUDIT_LINE_MAX)
			return -ENOBUFS;
	}
	if (end - start > AUDIT_LINE_MAX)
		return -ENOBUFS;
	sbuf_reset(out);
	for (pos = start; pos < end;) {
		size_t n = end - pos < TAIL_CHUNK ? (size_t)(end - pos) : TAIL_CHUNK;

		r = pread_all(fd, tmp, n, pos);
		if (r < 0)
			return r;
		r = sbuf_add(out, tmp, n);
		if (r < 0)
			return r;
		pos += (off_t)n;
	}
	*ret_terminated = terminated;
	return 0;
}
