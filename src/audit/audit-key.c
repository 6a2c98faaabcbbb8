/* The audit key: where it lives, loading it, creating it on first use. */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define KEY_RANDOM_BYTES 32

static const char *const source_names[_AUDIT_KEY_SOURCE_MAX] = {
	[AUDIT_KEY_EXPLICIT] = "explicit",
	[AUDIT_KEY_ENV] = "BERNSTEIN_AUDIT_KEY_PATH",
	[AUDIT_KEY_XDG] = "XDG_STATE_HOME",
	[AUDIT_KEY_HOME] = "HOME",
};

const char *audit_key_source_name(enum audit_key_source s)
{
	if ((int)s < 0 || s >= _AUDIT_KEY_SOURCE_MAX)
		return "unknown";
	return source_names[s];
}

static int put_path(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s%s", a, b);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int audit_key_resolve(const char *explicit_path, const char *env_key_path,
		      const char *xdg_state_home, const char *home, char *buf, size_t size,
		      enum audit_key_source *ret_source)
{
	enum audit_key_source src;
	int r;

	if (explicit_path && explicit_path[0]) {
		src = AUDIT_KEY_EXPLICIT;
		r = put_path(buf, size, explicit_path, "");
	} else if (env_key_path && env_key_path[0]) {
		src = AUDIT_KEY_ENV;
		r = put_path(buf, size, env_key_path, "");
	} else if (xdg_state_home && xdg_state_home[0] == '/') {
		/* The XDG spec: a relative XDG_STATE_HOME is invalid and ignored. */
		src = AUDIT_KEY_XDG;
		r = put_path(buf, size, xdg_state_home, "/bernstein/audit.key");
	} else if (home && home[0]) {
		src = AUDIT_KEY_HOME;
		r = put_path(buf, size, home, "/.local/state/bernstein/audit.key");
	} else {
		return -ENOENT;
	}
	if (r < 0)
		return r;
	if (ret_source)
		*ret_source = src;
	return 0;
}

char *audit_key_free(char *key, size_t len)
{
	if (key) {
		explicit_bzero(key, len);
		free(key);
	}
	return NULL;
}

static bool is_space(char c)
{
	/* Python bytes.strip(): ASCII whitespace. */
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int fill_random(void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

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

/* Write a fresh key to path, which must not exist yet. -EEXIST when another
 * process created it first. */
static int key_create(const char *path, struct diag *reterr)
{
	char dir[PATH_MAX], tmp[PATH_MAX], hex[2 * KEY_RANDOM_BYTES + 1];
	uint8_t rnd[KEY_RANDOM_BYTES];
	struct stat st;
	int fd = -1, r;

	path_dirname(path, dir, sizeof(dir));
	if (stat(dir, &st) < 0) {
		if (errno != ENOENT) {
			r = -errno;
			diag_set(reterr, dir, 0, 0, "cannot create the audit key directory: %s",
				 strerror(-r));
			return r;
		}
		r = mkdir_p(dir, 0700);
		/* Exactly 0700 whatever the umask; only a directory made here
		 * is touched (the parent may be $HOME or /tmp). */
		if (r >= 0 && chmod(dir, 0700) < 0)
			r = -errno;
		if (r < 0) {
			diag_set(reterr, dir, 0, 0, "cannot create the audit key directory: %s",
				 strerror(-r));
			return r;
		}
	}
	r = fill_random(rnd, sizeof(rnd));
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot create the audit key: getrandom: %s",
			 strerror(-r));
		return r;
	}
	hash_hex(rnd, sizeof(rnd), hex);
	explicit_bzero(rnd, sizeof(rnd));

	/* A complete key appears at once: write a temp file (O_EXCL, 0600),
	 * then link() it into place, which fails if the key exists. */
	if (snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= (int)sizeof(tmp)) {
		r = -ENAMETOOLONG;
		goto fail;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		tmp[0] = '\0';
		goto fail;
	}
	if (fchmod(fd, 0600) < 0) {
		r = -errno;
		goto fail;
	}
	r = write_all(fd, hex, 2 * KEY_RANDOM_BYTES);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		goto fail;
	close_fdp(&fd);
	if (link(tmp, path) < 0) {
		r = -errno;
		if (r != -EEXIST)
			goto fail;
		(void)unlink(tmp);
		explicit_bzero(hex, sizeof(hex));
		return -EEXIST;
	}
	(void)unlink(tmp);
	explicit_bzero(hex, sizeof(hex));
	(void)fsync_path(dir,
			 true); /* the key is in place; a failed directory fsync is not fatal */
	return 0;
fail:
	explicit_bzero(hex, sizeof(hex));
	close_fdp(&fd);
	if (tmp[0])
		(void)unlink(tmp);
	diag_set(reterr, path, 0, 0, "cannot create the audit key: %s", strerror(-r));
	return r;
}

int audit_key_load(const char *path, bool create, char **ret_key, size_t *ret_len,
		   bool *ret_created, struct diag *reterr)
{
	char *text = NULL, *key;
	size_t textlen = 0, len, start = 0;
	bool created = false;
	struct stat st;
	int fd = -1, r, tries;

	for (tries = 0;; tries++) {
		/* never blocks: a FIFO or a device is refused unopened */
		fd = open_regular(path, O_RDONLY, 0);
		if (fd >= 0)
			break;
		r = fd;
		if (is_file_type_error(r)) {
			diag_set(reterr, path, 0, 0, "audit key is not a regular file: %s",
				 file_strerror(r));
			return -EINVAL;
		}
		if (r != -ENOENT || !create || tries > 0) {
			if (r == -ENOENT)
				diag_set(reterr, path, 0, 0, "audit key does not exist");
			else
				diag_set(reterr, path, 0, 0, "cannot open the audit key: %s",
					 strerror(-r));
			return r;
		}
		r = key_create(path, reterr);
		if (r < 0 && r != -EEXIST)
			return r;
		created = r == 0;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		diag_set(reterr, path, 0, 0, "cannot stat the audit key: %s", strerror(-r));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		diag_set(reterr, path, 0, 0, "audit key is not a regular file");
		goto out;
	}
	if (st.st_mode & 077) {
		r = -EPERM;
		diag_set(
			reterr, path, 0, 0,
			"audit key has mode %04o: group and others must have no access (chmod 600 it)",
			(unsigned)(st.st_mode & 07777));
		goto out;
	}
	r = read_fd_capped(fd, AUDIT_KEY_FILE_MAX, &text, &textlen);
	len = textlen;
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot read the audit key: %s",
			 r == -EFBIG ? "larger than 4096 bytes" : strerror(-r));
		goto out;
	}
	while (start < len && is_space(text[start]))
		start++;
	while (len > start && is_space(text[len - 1]))
		len--;
	if (len == start) {
		r = -EINVAL;
		diag_set(reterr, path, 0, 0, "audit key is empty");
		goto out;
	}
	key = xmalloc(len - start + 1);
	memcpy(key, text + start, len - start);
	key[len - start] = '\0';
	*ret_key = key;
	*ret_len = len - start;
	if (ret_created)
		*ret_created = created;
	r = 0;
out:
	if (text) {
		explicit_bzero(text, textlen);
		free(text);
	}
	close_fdp(&fd);
	return r;
}
