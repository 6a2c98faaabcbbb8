/* Appending to the chain. Every append runs under flock(LOCK_EX) on DIR/.lock:
 * find the newest day file, re-read its last record (or trust our own cached
 * end when nobody wrote since), write the new line with one O_APPEND write,
 * then record the new end (hot state in .lock; fsync + state.json outside a
 * batch). See docs/audit-log.md for the policy. */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "util/banned.h"

struct audit_chain {
	char *dir;
	struct hash_hmac *mac; /* NULL while key_path is set */
	/* Opened without a key (audit_open_keyless()): the first append
	 * creates the key here, then the directory (flags) and the lock. */
	char *key_path;
	enum audit_open_flags flags;
	const struct clock *clk;
	int lock_fd;

	/* The day file of this handle's last append. */
	int data_fd;
	char data_name[256];
	dev_t data_dev;
	ino_t data_ino;
	off_t data_end;	  /* its size right after that append */
	bool cache_valid; /* end is the chain's end if nobody wrote since */

	/* The chain's end as of the last check or append, and where the
	 * check stopped (audit-end.c). */
	struct audit_end end;
	char boot_id[AUDIT_BOOT_ID_LEN + 1]; /* this boot's, for the hot state */

	bool batch, dirty;
	struct audit_scratch scratch;
	struct sbuf line;
};

static int chain_lock(struct audit_chain *c, int op)
{
	while (flock(c->lock_fd, op) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static void chain_unlock(struct audit_chain *c)
{
	(void)flock(c->lock_fd, LOCK_UN);
}

/* ---- the chain's end ---------------------------------------------------- */

/* With the lock held: make c->end describe the chain's end, checked. When
 * nobody wrote since our own last append, that is what we know; otherwise
 * what was written since is checked (audit_end_sync()). */
static int chain_sync(struct audit_chain *c, struct diag *reterr)
{
	struct audit_file *files = NULL, *latest;
	size_t n = 0;
	int r;

	if (c->cache_valid && c->data_fd >= 0) {
		r = audit_io_list(c->dir, true, &files, &n);
		if (r < 0) {
			diag_set(reterr, c->dir, 0, 0, "cannot list the audit directory: %s",
				 strerror(-r));
			return r;
		}
		latest = n ? &files[n - 1] : NULL;
		if (latest && latest->size < 0 && audit_io_stat(c->dir, latest) < 0)
			latest->size = 0;
		if (latest && !latest->type_err && strcmp(latest->name, c->data_name) == 0 &&
		    latest->dev == c->data_dev && latest->ino == c->data_ino &&
		    latest->size == c->data_end) {
			free(files);
			return 0;
		}
		free(files);
	}
	c->cache_valid = false;
	return audit_end_sync(c->dir, c->mac, &c->scratch, c->lock_fd, c->boot_id, &c->end, reterr);
}

/* ---- public ---------------------------------------------------------------- */

static struct audit_chain *chain_new(const char *dir, const struct clock *clk,
				     enum audit_open_flags flags)
{
	struct audit_chain *c = xcalloc(1, sizeof(*c));

	c->dir = xstrdup(dir);
	c->flags = flags;
	c->clk = clk ? clk : clock_system();
	c->lock_fd = -1;
	c->data_fd = -1;
	memcpy(c->end.last_hmac, AUDIT_GENESIS, sizeof(c->end.last_hmac));
	memcpy(c->end.mark_hmac, AUDIT_GENESIS, sizeof(c->end.mark_hmac));
	audit_state_boot_id(c->boot_id);
	audit_scratch_init(&c->scratch);
	sbuf_init(&c->line, (size_t)AUDIT_LINE_MAX + 2);
	return c;
}

static int chain_set_key(struct audit_chain *c, const void *key, size_t keylen, struct diag *reterr)
{
	int r = hash_hmac_new(key, keylen, &c->mac);

	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "cannot set up HMAC-SHA256: %s", strerror(-r));
	return r;
}

/* With the key set: create the directory (AUDIT_OPEN_CREATE), open DIR/.lock
 * and, under the lock, find the chain's end and check it against its state. */
static int chain_attach(struct audit_chain *c, struct diag *reterr)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	if (c->flags & AUDIT_OPEN_CREATE) {
		r = mkdir_p(c->dir, 0700);
		if (r < 0) {
			diag_set(reterr, c->dir, 0, 0, "cannot create the audit directory: %s",
				 strerror(-r));
			return r;
		}
	}
	if (stat(c->dir, &st) < 0)
		r = -errno;
	else
		r = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	if (r < 0) {
		diag_set(reterr, c->dir, 0, 0, "no audit directory: %s", strerror(-r));
		return r;
	}
	r = audit_io_path(path, sizeof(path), c->dir, AUDIT_LOCK_FILE);
	if (r < 0)
		return r;
	/* (a FIFO there would block: refused; flock and the hot state need
	 * a file) */
	c->lock_fd = open_regular(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
	if (c->lock_fd < 0) {
		r = c->lock_fd;
		diag_set(reterr, path, 0, 0, "cannot open the audit lock: %s",
			 audit_io_type_str(r));
		return r;
	}
	r = chain_lock(c, LOCK_EX);
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot lock the audit chain: %s", strerror(-r));
		return r;
	}
	/* every open checks the end afresh, whatever this process knew */
	r = audit_end_check(c->dir, c->mac, &c->scratch, c->lock_fd, c->boot_id, &c->end, reterr);
	chain_unlock(c);
	return r;
}

int audit_open(const char *dir, const void *key, size_t keylen, const struct clock *clk,
	       enum audit_open_flags flags, struct audit_chain **ret, struct diag *reterr)
{
	struct audit_chain *c = NULL;
	int r;

	if (!dir || !dir[0] || !key || keylen == 0)
		return -EINVAL;
	c = chain_new(dir, clk, flags);
	r = chain_set_key(c, key, keylen, reterr);
	if (r >= 0)
		r = chain_attach(c, reterr);
	if (r < 0)
		goto out;
	*ret = c;
	c = NULL;
out:
	audit_close(c);
	return r;
}

/* audit_key_load()'s -EINVAL (an empty key, not a regular file) is about
 * the key, not the record: -ENOKEY, so callers tell it from a bad argument. */
static int key_load_error(int r)
{
	return r == -EINVAL ? -ENOKEY : r;
}

/* Without a key, nothing may be there to continue: no record (they were
 * made with some other key) and no state.json claiming any. 1: so; 0: the
 * chain has records; < 0: refused. Reads only. */
static int chain_check_keyless(struct audit_chain *c, struct diag *reterr)
{
	struct audit_file *files = NULL;
	struct audit_state st;
	char path[PATH_MAX];
	size_t n = 0, i;
	struct stat sb;
	int r;

	if (stat(c->dir, &sb) < 0) {
		r = -errno;
		if (r == -ENOENT && (c->flags & AUDIT_OPEN_CREATE))
			return 1; /* the first append creates it */
		diag_set(reterr, c->dir, 0, 0, "no audit directory: %s", strerror(-r));
		return r;
	}
	if (!S_ISDIR(sb.st_mode)) {
		diag_set(reterr, c->dir, 0, 0, "no audit directory: %s", strerror(ENOTDIR));
		return -ENOTDIR;
	}
	r = audit_io_list(c->dir, false, &files, &n);
	if (r < 0) {
		diag_set(reterr, c->dir, 0, 0, "cannot list the audit directory: %s", strerror(-r));
		return r;
	}
	for (i = 0; i < n; i++)
		if (files[i].type_err) {
			if (audit_io_path(path, sizeof(path), c->dir, files[i].name) < 0)
				path[0] = '\0';
			diag_set(reterr, path, 0, 0, "%s; refusing to append",
				 audit_io_type_str(files[i].type_err));
			free(files);
			return -EBADMSG;
		}
	for (i = 0; i < n && files[i].size == 0; i++)
		;
	free(files);
	if (i < n)
		return 0;
	r = audit_state_load(c->dir, &st, reterr);
	if (r == -ENOENT)
		return 1;
	if (r < 0)
		return r;
	if (st.count == 0)
		return 1;
	if (audit_io_path(path, sizeof(path), c->dir, AUDIT_STATE_FILE) < 0)
		path[0] = '\0';
	diag_set(reterr, path, 0, 0,
		 "the audit chain has 0 records but state says %" PRIu64
		 " (truncated tail?); refusing to append",
		 st.count);
	return -EBADMSG;
}

int audit_open_keyless(const char *dir, const char *key_path, const struct clock *clk,
		       enum audit_open_flags flags, struct audit_chain **ret, struct diag *reterr)
{
	struct audit_chain *c = NULL;
	char *key = NULL;
	size_t keylen = 0;
	int r;

	if (!dir || !dir[0] || !key_path || !key_path[0])
		return -EINVAL;
	c = chain_new(dir, clk, flags);
	r = chain_check_keyless(c, reterr);
	if (r < 0)
		goto out;
	if (r == 0) {
		/* Records, so a key made them. If it is this key (a concurrent
		 * first writer created it since the caller looked), go on. */
		r = key_load_error(audit_key_load(key_path, false, &key, &keylen, NULL, reterr));
		if (r == -ENOENT) {
			diag_set(
				reterr, key_path, 0, 0,
				"audit key does not exist, but the audit chain in '%s' has records (made with another key); refusing to start a new key",
				dir);
			r = -ENOKEY; /* a key problem (exit 4), not a broken chain */
		}
		if (r >= 0)
			r = chain_set_key(c, key, keylen, reterr);
		if (r >= 0)
			r = chain_attach(c, reterr);
		if (r < 0)
			goto out;
	} else {
		c->key_path = xstrdup(key_path);
	}
	*ret = c;
	c = NULL;
	r = 0;
out:
	key = audit_key_free(key, keylen);
	audit_close(c);
	return r;
}

/* The first append of a keyless chain: make sure the record can be built
 * at all (bad arguments change nothing), then create (or load: another
 * process may have created it since) the key, and attach. */
static int chain_activate(struct audit_chain *c, const char *event_type, const char *actor,
			  const char *resource_type, const char *resource_id, const json_t *details,
			  struct diag *reterr)
{
	char mac[AUDIT_HMAC_HEX_LEN + 1];
	struct hash_hmac *probe = NULL;
	char *key = NULL;
	size_t keylen = 0;
	int r;

	r = hash_hmac_new("", 0, &probe);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot set up HMAC-SHA256: %s", strerror(-r));
		return r;
	}
	sbuf_reset(&c->line);
	r = audit_record_build(&c->scratch, probe, AUDIT_GENESIS, "1970-01-01T00:00:00.000000Z",
			       event_type, actor, resource_type, resource_id, details, &c->line,
			       mac, reterr);
	probe = hash_hmac_free(probe);
	if (r < 0)
		return r;
	r = audit_key_load(c->key_path, true, &key, &keylen, NULL, reterr);
	if (r < 0)
		return key_load_error(r);
	r = chain_set_key(c, key, keylen, reterr);
	key = audit_key_free(key, keylen);
	if (r >= 0)
		r = chain_attach(c, reterr);
	if (r < 0) {
		c->mac = hash_hmac_free(c->mac);
		close_fdp(&c->lock_fd);
		return r;
	}
	free(c->key_path);
	c->key_path = NULL;
	return 0;
}

/* Open (creating if needed) the day file name for appending. */
static int chain_open_data(struct audit_chain *c, const char *name, struct diag *reterr)
{
	char path[PATH_MAX], prev[PATH_MAX];
	struct stat st;
	bool created = false;
	int fd, r;

	r = audit_io_path(path, sizeof(path), c->dir, name);
	if (r < 0)
		return r;
	close_fdp(&c->data_fd);
	/* never through a symlink, never a FIFO (the open would block) */
	fd = open_regular(path, O_WRONLY | O_APPEND | O_NOFOLLOW, 0);
	if (fd == -ENOENT) {
		/* A new day file: the previous one's records must be durable
		 * before the chain continues elsewhere. */
		if (c->end.tail_name[0] && strcmp(c->end.tail_name, name) != 0 &&
		    audit_io_path(prev, sizeof(prev), c->dir, c->end.tail_name) == 0)
			(void)fsync_path(prev, false);
		fd = open_regular(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
		created = fd >= 0;
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = fd < 0 ? fd : -errno;
		if (fd >= 0)
			(void)close(fd);
		diag_set(reterr, path, 0, 0, "cannot open the audit chain file: %s",
			 audit_io_type_str(r));
		return r;
	}
	if (created)
		(void)fsync_path(c->dir, true);
	c->data_fd = fd;
	(void)snprintf(c->data_name, sizeof(c->data_name), "%s", name);
	c->data_dev = st.st_dev;
	c->data_ino = st.st_ino;
	return 0;
}

static bool data_is(const struct audit_chain *c, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (c->data_fd < 0 || strcmp(c->data_name, name) != 0)
		return false;
	if (audit_io_path(path, sizeof(path), c->dir, name) < 0 || stat(path, &st) < 0)
		return false;
	return st.st_dev == c->data_dev && st.st_ino == c->data_ino;
}

static int chain_make_durable(struct audit_chain *c, struct diag *reterr)
{
	struct audit_state st;
	char path[PATH_MAX];
	int r = 0;

	if (c->data_fd >= 0 && fsync(c->data_fd) < 0)
		r = -errno;
	if (r >= 0 && c->end.tail_name[0] && strcmp(c->end.tail_name, c->data_name) != 0 &&
	    audit_io_path(path, sizeof(path), c->dir, c->end.tail_name) == 0)
		r = fsync_path(path, false);
	if (r < 0) {
		diag_set(reterr, c->dir, 0, 0, "cannot fsync the audit chain: %s", strerror(-r));
		return r;
	}
	st.count = c->end.count;
	memcpy(st.last_hmac, c->end.last_hmac, sizeof(st.last_hmac));
	return audit_state_save(c->dir, &st, reterr);
}

int audit_append(struct audit_chain *c, const char *event_type, const char *actor,
		 const char *resource_type, const char *resource_id, const json_t *details,
		 struct diag *reterr)
{
	char day[16], name[32], ts[40], mac[AUDIT_HMAC_HEX_LEN + 1];
	const char *target;
	struct audit_state hot;
	struct stat st;
	bool seal;
	int64_t now;
	int r;

	if (c->key_path) {
		r = chain_activate(c, event_type, actor, resource_type, resource_id, details,
				   reterr);
		if (r < 0)
			return r;
	}
	r = chain_lock(c, LOCK_EX);
	if (r < 0) {
		diag_set(reterr, c->dir, 0, 0, "cannot lock the audit chain: %s", strerror(-r));
		return r;
	}
	r = chain_sync(c, reterr);
	if (r < 0)
		goto out;

	now = c->clk->now_ns(c->clk);
	(void)clock_utc_day(now, day, sizeof(day));
	(void)clock_iso8601_utc(now, ts, sizeof(ts));
	(void)snprintf(name, sizeof(name), "%s.jsonl", day);
	/* Never append to an older file than the newest (a clock that went
	 * back): replay is in name order. */
	target =
		c->end.tail_name[0] && strcmp(c->end.tail_name, name) > 0 ? c->end.tail_name : name;
	/* (A valid cache means the sync just saw our data file in place.) */
	if (!(c->cache_valid && strcmp(target, c->data_name) == 0) && !data_is(c, target)) {
		r = chain_open_data(c, target, reterr);
		if (r < 0)
			goto out;
	}

	sbuf_reset(&c->line);
	/* A torn last line (a crash mid-write) is sealed so this record does
	 * not get glued to it; verify reports that line, the chain goes on. */
	seal = c->end.tail_torn && strcmp(target, c->end.tail_name) == 0;
	if (seal)
		(void)sbuf_addc(&c->line, '\n');
	r = audit_record_build(&c->scratch, c->mac, c->end.last_hmac, ts, event_type, actor,
			       resource_type, resource_id, details, &c->line, mac, reterr);
	if (r < 0)
		goto out;
	c->cache_valid = false;
	r = write_all(c->data_fd, c->line.buf, c->line.len);
	if (r >= 0 && fstat(c->data_fd, &st) < 0)
		r = -errno;
	if (r < 0) {
		diag_set(reterr, c->dir, 0, 0, "cannot write to the audit chain '%s': %s",
			 c->data_name, strerror(-r));
		goto out;
	}
	c->data_end = st.st_size;
	/* the chain now ends with this record, checked up to here */
	c->end.mark_line =
		strcmp(c->end.mark_name, c->data_name) == 0 ? c->end.mark_line + (seal ? 2 : 1) : 1;
	c->end.count++;
	memcpy(c->end.last_hmac, mac, sizeof(mac));
	(void)snprintf(c->end.tail_name, sizeof(c->end.tail_name), "%s", c->data_name);
	c->end.tail_torn = false;
	(void)snprintf(c->end.mark_name, sizeof(c->end.mark_name), "%s", c->data_name);
	c->end.mark_dev = c->data_dev;
	c->end.mark_ino = c->data_ino;
	c->end.mark_off = st.st_size;
	c->end.mark_count = c->end.count;
	memcpy(c->end.mark_hmac, mac, sizeof(mac));
	c->cache_valid = true;
	hot.count = c->end.count;
	memcpy(hot.last_hmac, mac, sizeof(mac));
	memcpy(hot.boot_id, c->boot_id, sizeof(hot.boot_id));
	if (audit_state_hot_write(c->lock_fd, &hot) < 0)
		log_debug("audit: cannot update the hot state in '%s/%s'", c->dir, AUDIT_LOCK_FILE);
	if (c->batch)
		c->dirty = true;
	else
		r = chain_make_durable(c, reterr);
out:
	chain_unlock(c);
	return r;
}

void audit_batch_begin(struct audit_chain *c)
{
	c->batch = true;
}

int audit_batch_end(struct audit_chain *c, struct diag *reterr)
{
	int r;

	if (!c->batch)
		return 0;
	c->batch = false;
	if (!c->dirty)
		return 0;
	r = chain_lock(c, LOCK_EX);
	if (r < 0) {
		diag_set(reterr, c->dir, 0, 0, "cannot lock the audit chain: %s", strerror(-r));
		return r;
	}
	r = chain_sync(c, reterr);
	if (r >= 0)
		r = chain_make_durable(c, reterr);
	if (r >= 0)
		c->dirty = false;
	chain_unlock(c);
	return r;
}

const char *audit_chain_last_hmac(const struct audit_chain *c)
{
	return c->end.last_hmac;
}

uint64_t audit_chain_count(const struct audit_chain *c)
{
	return c->end.count;
}

struct audit_chain *audit_close(struct audit_chain *c)
{
	if (!c)
		return NULL;
	if (c->batch && c->dirty && c->lock_fd >= 0)
		(void)audit_batch_end(c, NULL);
	close_fdp(&c->data_fd);
	close_fdp(&c->lock_fd);
	audit_scratch_release(&c->scratch);
	sbuf_release(&c->line);
	hash_hmac_free(c->mac);
	free(c->key_path);
	free(c->dir);
	free(c);
	return NULL;
}
