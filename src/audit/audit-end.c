/* The writers' check of the chain's end (docs/audit-log.md, "What a writer
 * checks"). A writer must not go on over a chain that `audit verify` would
 * call broken, or its records would bury the evidence (and rewrite
 * state.json to match). A full verification of every file on every open
 * would make a run's start as slow as the chain is long, so:
 *
 * - when a writer opens the chain, the newest non-empty file is checked line
 *   by line (JSON object, canonical bytes, prev_hmac chaining to the record
 *   before, HMAC with this key), starting from the last record of the file
 *   before it; the count and MAC in state.json (and the hot state in .lock)
 *   are located in it, and the chain is replayed from genesis when they are
 *   not (or disagree);
 * - afterwards, before every append, what was written since the last check
 *   (another writer's records) is checked the same way, from where the last
 *   check stopped; a file that shrank or was replaced means a full check.
 *
 * Tolerated, because a crash makes them and nothing can hide behind them: a
 * torn (unterminated) last line of the newest file, which the next append
 * seals with '\n', and a line that is not a record when the records around
 * it chain to each other (such a fragment once sealed). Everything else is
 * refused: -EBADMSG, -EKEYREJECTED when a record's MAC does not verify
 * though an earlier one did (added or changed without the key), -ENOKEY when
 * none verifies (another key). */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define SCAN_CHUNK (256 * 1024)
#define SHORT_LEN  16
#define ELLIPSIS   "\xe2\x80\xa6"

struct scan {
	const char *dir;
	struct hash_hmac *mac;
	struct audit_scratch *scratch;
	struct diag *reterr;

	/* the file being fed */
	const char *name;
	unsigned line0; /* its lines before the range fed */
	unsigned line;	/* its last line seen */
	off_t pos;	/* its offset after the last line seen */
	bool newest;	/* it ends the chain: its last line may be torn */

	uint64_t count;			       /* non-empty lines so far */
	bool any_ok;			       /* a record verified with this key */
	char expected[AUDIT_HMAC_HEX_LEN + 1]; /* the last good record's MAC */
	unsigned pending;		       /* lines that are not records since it */
	char pending_name[256];
	unsigned pending_line;

	/* the newest file's last line has no '\n': where it starts, and the
	 * chain before it */
	bool torn;
	off_t torn_off;
	unsigned torn_line;
	uint64_t torn_count;
	char torn_hmac[AUDIT_HMAC_HEX_LEN + 1];

	/* The recorded ends (state.json's, the hot state's; NULL: none): where
	 * their MAC was seen (the count then), and in a full scan the MAC of
	 * record number want_n[i] (0: none). */
	const char *want[2];
	bool found[2];
	uint64_t found_at[2];
	uint64_t want_n[2];
	bool have_at_n[2];
	char at_n[2][AUDIT_HMAC_HEX_LEN + 1];
};

static const char *short16(const char *s, size_t len, char buf[SHORT_LEN + 1])
{
	size_t i;

	for (i = 0; s && i < len && i < SHORT_LEN; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

static int refuse(struct diag *reterr, const char *dir, const char *name, unsigned line, int r,
		  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* "DIR/NAME:LINE: what; refusing to append". */
static int refuse(struct diag *reterr, const char *dir, const char *name, unsigned line, int r,
		  const char *fmt, ...)
{
	char path[PATH_MAX], what[300];
	va_list ap;

	if (audit_io_path(path, sizeof(path), dir, name) < 0)
		(void)snprintf(path, sizeof(path), "%s", name);
	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	diag_set(reterr, path, line, 0, "%s; refusing to append", what);
	return r;
}

static void scan_init(struct scan *s, const char *dir, struct hash_hmac *mac,
		      struct audit_scratch *scratch, struct diag *reterr)
{
	memset(s, 0, sizeof(*s));
	s->dir = dir;
	s->mac = mac;
	s->scratch = scratch;
	s->reterr = reterr;
	memcpy(s->expected, AUDIT_GENESIS, sizeof(s->expected));
}

static void scan_found(struct scan *s, const char *hmac)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		if (s->want[i] && !s->found[i] &&
		    hash_equal(s->want[i], hmac, AUDIT_HMAC_HEX_LEN)) {
			s->found[i] = true;
			s->found_at[i] = s->count;
		}
		if (s->want_n[i] && s->count == s->want_n[i]) {
			s->have_at_n[i] = true;
			memcpy(s->at_n[i], hmac, AUDIT_HMAC_HEX_LEN);
			s->at_n[i][AUDIT_HMAC_HEX_LEN] = '\0';
		}
	}
}

static int scan_line(void *userdata, unsigned lineno, const char *line, size_t len, unsigned flags)
{
	struct scan *s = userdata;
	bool torn = (flags & AUDIT_LINE_NO_NEWLINE) && s->newest;
	char a[SHORT_LEN + 1], b[SHORT_LEN + 1];
	struct audit_record rec;
	off_t start = s->pos;
	int r = 0;

	s->line = s->line0 + lineno;
	if (!line)
		return refuse(s->reterr, s->dir, s->name, s->line, -EBADMSG,
			      "line longer than %d bytes", AUDIT_LINE_MAX);
	if (len == 0)
		return refuse(s->reterr, s->dir, s->name, s->line, -EBADMSG, "empty line");
	s->pos += (off_t)len + ((flags & AUDIT_LINE_NO_NEWLINE) ? 0 : 1);
	s->count++;
	if (torn) {
		s->torn = true;
		s->torn_off = start;
		s->torn_line = s->line - 1;
		s->torn_count = s->count - 1;
		memcpy(s->torn_hmac, s->expected, sizeof(s->torn_hmac));
	}
	r = audit_record_check(s->scratch, s->mac, line, len, 0, &rec);
	if (r < 0) {
		diag_set(s->reterr, NULL, 0, 0, "cannot compute HMAC-SHA256");
		return r;
	}
	if (rec.kind != AUDIT_RECORD_OBJECT) {
		/* a crash's fragment, if the next record chains across it (a
		 * torn last line is sealed by the next append) */
		if (!torn && !s->pending++) {
			(void)snprintf(s->pending_name, sizeof(s->pending_name), "%s", s->name);
			s->pending_line = s->line;
		}
		goto out;
	}
	if (!rec.canonical) {
		r = refuse(s->reterr, s->dir, s->name, s->line, -EBADMSG,
			   "non-canonical line bytes");
		goto out;
	}
	if (!rec.prev || !rec.hmac || !audit_hex64(rec.hmac, rec.hmaclen)) {
		r = refuse(s->reterr, s->dir, s->name, s->line, -EBADMSG,
			   "not a chain record (prev_hmac or hmac missing or malformed)");
		goto out;
	}
	if (rec.prevlen != AUDIT_HMAC_HEX_LEN ||
	    !hash_equal(rec.prev, s->expected, AUDIT_HMAC_HEX_LEN)) {
		r = refuse(s->reterr, s->dir, s->name, s->line, -EBADMSG,
			   "prev_hmac mismatch (expected %s" ELLIPSIS ", got %s" ELLIPSIS
			   "): a record before it is missing, changed or out of order",
			   short16(s->expected, AUDIT_HMAC_HEX_LEN, a),
			   short16(rec.prev, rec.prevlen, b));
		goto out;
	}
	if (!rec.mac_ok && !s->any_ok) {
		/* nothing before it verified either: most likely another key */
		r = refuse(
			s->reterr, s->dir, s->name, s->line, -ENOKEY,
			"the record does not verify with this key, nor does any before it (the chain was written with a different key?)");
		goto out;
	}
	if (!rec.mac_ok) {
		r = refuse(
			s->reterr, s->dir, s->name, s->line, -EKEYREJECTED,
			"the record does not verify with this key, though the records before it do (a record added or changed without the key)");
		goto out;
	}
	s->any_ok = true;
	audit_hmac_copy(s->expected, rec.hmac);
	s->pending = 0;
	scan_found(s, s->expected);
out:
	audit_record_release(&rec);
	return r;
}

/* Feed name from offset off to its end; *ret_st is what was read. -ESTALE,
 * and nothing read, when the file is shorter than off or is not the file
 * same (dev, ino) names, when given. */
static int scan_file(struct scan *s, const char *name, off_t off, unsigned line0, bool newest,
		     const struct stat *same, struct stat *ret_st)
{
	struct audit_split sp;
	char path[PATH_MAX], *chunk = NULL;
	int fd = -1, r;

	r = audit_io_path(path, sizeof(path), s->dir, name);
	if (r < 0)
		return r;
	fd = open_regular(path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0) {
		diag_set(s->reterr, path, 0, 0, "cannot read audit chain: %s",
			 audit_io_type_str(fd));
		return fd;
	}
	if (fstat(fd, ret_st) < 0 || (off > 0 && lseek(fd, off, SEEK_SET) < 0)) {
		r = -errno;
		diag_set(s->reterr, path, 0, 0, "cannot read audit chain: %s", strerror(-r));
		close_fdp(&fd);
		return r;
	}
	if (ret_st->st_size < off ||
	    (same && (ret_st->st_dev != same->st_dev || ret_st->st_ino != same->st_ino))) {
		close_fdp(&fd);
		return -ESTALE;
	}
	s->name = name;
	s->line0 = line0;
	s->line = line0;
	s->pos = off;
	s->newest = newest;
	audit_io_split_init(&sp, scan_line, s);
	chunk = xmalloc(SCAN_CHUNK);
	for (;;) {
		ssize_t n = read(fd, chunk, SCAN_CHUNK);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			diag_set(s->reterr, path, 0, 0, "cannot read audit chain: %s",
				 strerror(-r));
			goto out;
		}
		if (n == 0)
			break;
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

/* After the newest file: a line that is not a record must have had a record
 * chaining across it. */
static int scan_finish(struct scan *s)
{
	if (!s->pending)
		return 0;
	return refuse(
		s->reterr, s->dir, s->pending_name, s->pending_line, -EBADMSG,
		"not a record (invalid JSON or not an object), and no record after it chains to the one before it");
}

/* The end as the scan of the newest file T (it ended the scan) found it. */
static void end_set(struct audit_end *end, const struct scan *s, uint64_t base, const char *tname,
		    const struct stat *tst, const char *latest)
{
	end->count = base + s->count;
	memcpy(end->last_hmac, s->expected, sizeof(end->last_hmac));
	(void)snprintf(end->tail_name, sizeof(end->tail_name), "%s", latest);
	end->tail_torn = s->torn && strcmp(tname, latest) == 0;
	(void)snprintf(end->mark_name, sizeof(end->mark_name), "%s", tname);
	end->mark_dev = tst->st_dev;
	end->mark_ino = tst->st_ino;
	/* a torn line is read again next time: the mark is before it */
	end->mark_off = s->torn ? s->torn_off : s->pos;
	end->mark_line = s->torn ? s->torn_line : s->line;
	end->mark_count = base + (s->torn ? s->torn_count : s->count);
	memcpy(end->mark_hmac, s->torn ? s->torn_hmac : s->expected, sizeof(end->mark_hmac));
}

static void end_set_empty(struct audit_end *end, const char *latest)
{
	memset(end, 0, sizeof(*end));
	memcpy(end->last_hmac, AUDIT_GENESIS, sizeof(end->last_hmac));
	memcpy(end->mark_hmac, AUDIT_GENESIS, sizeof(end->mark_hmac));
	(void)snprintf(end->tail_name, sizeof(end->tail_name), "%s", latest ? latest : "");
}

/* The directory's chain files, every one a regular file, sizes of the
 * newest known down to the one before the newest non-empty: *ret_t and
 * *ret_p (-1: none). */
static int list_files(const char *dir, struct audit_file **ret, size_t *ret_n, ssize_t *ret_t,
		      ssize_t *ret_p, struct diag *reterr)
{
	struct audit_file *files = NULL;
	ssize_t t = -1, p = -1;
	size_t n = 0, i;
	int r;

	r = audit_io_list(dir, true, &files, &n);
	if (r < 0) {
		diag_set(reterr, dir, 0, 0, "cannot list the audit directory: %s", strerror(-r));
		return r;
	}
	for (i = 0; i < n; i++)
		if (files[i].type_err) {
			r = refuse(reterr, dir, files[i].name, 0, -EBADMSG, "%s",
				   audit_io_type_str(files[i].type_err));
			free(files);
			return r;
		}
	for (i = n; i > 0 && p < 0; i--) {
		struct audit_file *f = &files[i - 1];

		/* a file that vanished meanwhile (not one of our writers)
		 * counts as empty */
		if (f->size < 0 && audit_io_stat(dir, f) < 0)
			f->size = 0;
		if (f->type_err) {
			r = refuse(reterr, dir, f->name, 0, -EBADMSG, "%s",
				   audit_io_type_str(f->type_err));
			free(files);
			return r;
		}
		if (f->size == 0)
			continue;
		if (t < 0)
			t = (ssize_t)(i - 1);
		else
			p = (ssize_t)(i - 1);
	}
	*ret = files;
	*ret_n = n;
	*ret_t = t;
	*ret_p = p;
	return 0;
}

/* The last record of P, if it is terminated, a chain record and verifies:
 * 1 and its MAC; 0 when only a full scan can tell. */
static int read_tail(const char *dir, struct hash_hmac *mac, struct audit_scratch *scratch,
		     const char *name, char ret_hmac[AUDIT_HMAC_HEX_LEN + 1], struct diag *reterr)
{
	struct sbuf line = SBUF_INIT((size_t)AUDIT_LINE_MAX + 2);
	struct audit_record rec;
	char path[PATH_MAX];
	bool terminated = false;
	struct stat st;
	int fd = -1, r;

	r = audit_io_path(path, sizeof(path), dir, name);
	if (r < 0)
		return r;
	fd = open_regular(path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = fd < 0 ? fd : -errno;
		diag_set(reterr, path, 0, 0, "cannot read audit chain: %s", audit_io_type_str(r));
		goto out;
	}
	r = st.st_size > 0 ? audit_io_last_line(fd, st.st_size, &line, &terminated) : -ENOBUFS;
	if (r == -ENOBUFS || (r >= 0 && !terminated)) {
		r = 0;
		goto out;
	}
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot read audit chain: %s", strerror(-r));
		goto out;
	}
	r = audit_record_check(scratch, mac, line.buf, line.len, 0, &rec);
	if (r < 0)
		goto out;
	r = audit_record_chainable(&rec) && rec.mac_ok;
	if (r)
		audit_hmac_copy(ret_hmac, rec.hmac);
	audit_record_release(&rec);
out:
	close_fdp(&fd);
	sbuf_release(&line);
	return r;
}

/* A recorded end of the chain: state.json (durable), or the hot state in
 * .lock (after every append, not fsynced: it binds only within the boot that
 * wrote it, as a power loss may keep it and lose the records). */
struct recorded {
	bool have;    /* present, with a count > 0 */
	bool enforce; /* the chain must hold it */
	struct audit_state st;
};

static int truncated(struct diag *reterr, const char *dir, size_t i, uint64_t count, uint64_t want)
{
	if (i == 0)
		return refuse(reterr, dir, AUDIT_STATE_FILE, 0, -EBADMSG,
			      "the audit chain has %" PRIu64 " records but state says %" PRIu64
			      " (truncated tail?)",
			      count, want);
	return refuse(reterr, dir, AUDIT_LOCK_FILE, 0, -EBADMSG,
		      "the audit chain has %" PRIu64 " records but its last writer left %" PRIu64
		      " (truncated tail?)",
		      count, want);
}

static int mismatch(struct diag *reterr, const char *dir, size_t i, uint64_t want)
{
	return refuse(
		reterr, dir, i == 0 ? AUDIT_STATE_FILE : AUDIT_LOCK_FILE, 0, -EBADMSG,
		"record %" PRIu64
		" of the audit chain is not the one %s recorded (rewritten or reordered chain?)",
		want, i == 0 ? "state" : "its last writer");
}

/* Replay every file from genesis, and check the recorded ends. */
static int full_check(const char *dir, struct hash_hmac *mac, struct audit_scratch *scratch,
		      const struct audit_file *files, size_t n, ssize_t t,
		      const struct recorded rec[2], struct audit_end *end, struct diag *reterr)
{
	struct scan s;
	struct stat tst;
	size_t i;
	int r;

	log_debug("audit: replaying %zu chain file(s) in '%s' to check its end", n, dir);
	scan_init(&s, dir, mac, scratch, reterr);
	for (i = 0; i < 2; i++)
		s.want_n[i] = rec[i].have && rec[i].enforce ? rec[i].st.count : 0;
	for (i = 0; i <= (size_t)t; i++) {
		r = scan_file(&s, files[i].name, 0, 0, i == (size_t)t, NULL, &tst);
		if (r < 0)
			return r;
	}
	r = scan_finish(&s);
	if (r < 0)
		return r;
	for (i = 0; i < 2; i++) {
		if (!s.want_n[i])
			continue;
		if (s.count < s.want_n[i])
			return truncated(reterr, dir, i, s.count, s.want_n[i]);
		if (!s.have_at_n[i] ||
		    !hash_equal(s.at_n[i], rec[i].st.last_hmac, AUDIT_HMAC_HEX_LEN))
			return mismatch(reterr, dir, i, s.want_n[i]);
	}
	end_set(end, &s, 0, files[t].name, &tst, files[n - 1].name);
	return 0;
}

/* The two recorded ends: state.json (a read error other than its absence
 * is returned) and the hot state in .lock, enforced only within the boot
 * that wrote it. */
static int recorded_load(const char *dir, int lock_fd, const char *boot_id, struct recorded rec[2],
			 struct diag *reterr)
{
	int r;

	memset(rec, 0, 2 * sizeof(*rec));
	r = audit_state_load(dir, &rec[0].st, reterr);
	if (r < 0 && r != -ENOENT)
		return r;
	rec[0].have = r == 0 && rec[0].st.count > 0;
	rec[0].enforce = true;
	rec[1].have = lock_fd >= 0 && audit_state_hot_read(lock_fd, &rec[1].st) == 0 &&
		      rec[1].st.count > 0;
	rec[1].enforce = boot_id && boot_id[0] && strcmp(rec[1].st.boot_id, boot_id) == 0;
	return 0;
}

/* No chain file holds a record: an enforced recorded end that counts any
 * is a truncation. */
static int check_empty(const char *dir, const struct recorded rec[2], const char *newest,
		       struct audit_end *end, struct diag *reterr)
{
	size_t i;
	int r = 0;

	for (i = 0; i < 2 && r == 0; i++)
		if (rec[i].have && rec[i].enforce)
			r = truncated(reterr, dir, i, 0, rec[i].st.count);
	if (r == 0)
		end_set_empty(end, newest);
	return r;
}

/* The records before T: from a recorded end located in T (all that are
 * must agree), else only a replay can count them. after_p: a file P comes
 * before T; else T is the first file, and have_base is set with *base 0.
 * 1 and *base set when known, 0 when a replay must count them. */
static int base_from_recorded(const struct recorded rec[2], const struct scan *s, bool after_p,
			      bool have_base, uint64_t *base)
{
	size_t i;

	for (i = 0; i < 2 && after_p; i++) {
		uint64_t b;

		if (!rec[i].have || !s->found[i] || rec[i].st.count < s->found_at[i])
			continue;
		b = rec[i].st.count - s->found_at[i];
		if (have_base && b != *base)
			return 0;
		*base = b;
		have_base = true;
	}
	return have_base;
}

/* Check each enforced recorded end against T's scan, base records before
 * it: 0 when they hold, 1 when one lies before T (a replay checks it),
 * negative errno when one is past the chain's end or not where it says. */
static int check_recorded(const char *dir, const struct recorded rec[2], const struct scan *s,
			  uint64_t base, struct diag *reterr)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		const struct audit_state *st = &rec[i].st;

		if (!rec[i].have || !rec[i].enforce)
			continue;
		if (st->count > base + s->count)
			return truncated(reterr, dir, i, base + s->count, st->count);
		if (st->count > base && (!s->found[i] || s->found_at[i] != st->count - base))
			return mismatch(reterr, dir, i, st->count);
		/* in a file before T, and not where T starts: a replay checks it */
		if (st->count <= base && !(s->found[i] && s->found_at[i] == 0))
			return 1;
	}
	return 0;
}

int audit_end_check(const char *dir, struct hash_hmac *mac, struct audit_scratch *scratch,
		    int lock_fd, const char *boot_id, struct audit_end *end, struct diag *reterr)
{
	struct audit_file *files = NULL;
	struct recorded rec[2];
	char base_mac[AUDIT_HMAC_HEX_LEN + 1];
	bool have_base = false;
	uint64_t base = 0;
	ssize_t t, p;
	struct stat tst;
	struct scan s;
	size_t n = 0, i;
	int r;

	r = list_files(dir, &files, &n, &t, &p, reterr);
	if (r < 0)
		return r;
	r = recorded_load(dir, lock_fd, boot_id, rec, reterr);
	if (r < 0)
		goto out;
	if (t < 0) {
		r = check_empty(dir, rec, n ? files[n - 1].name : NULL, end, reterr);
		goto out;
	}
	if (p >= 0) {
		r = read_tail(dir, mac, scratch, files[p].name, base_mac, reterr);
		if (r < 0)
			goto out;
		if (r == 0)
			goto full;
	} else {
		memcpy(base_mac, AUDIT_GENESIS, sizeof(base_mac));
		have_base = true; /* base 0: T is the first file */
	}

	scan_init(&s, dir, mac, scratch, reterr);
	memcpy(s.expected, base_mac, sizeof(s.expected));
	for (i = 0; i < 2; i++)
		s.want[i] = rec[i].have ? rec[i].st.last_hmac : NULL;
	if (p >= 0) {
		scan_found(&s, base_mac); /* the end of P, position 0 */
		s.any_ok = true;	  /* it verified */
	}
	r = scan_file(&s, files[t].name, 0, 0, true, NULL, &tst);
	if (r >= 0)
		r = scan_finish(&s);
	if (r < 0)
		goto out;

	if (!base_from_recorded(rec, &s, p >= 0, have_base, &base))
		goto full;
	r = check_recorded(dir, rec, &s, base, reterr);
	if (r < 0)
		goto out;
	if (r > 0)
		goto full;
	end_set(end, &s, base, files[t].name, &tst, files[n - 1].name);
	r = 0;
	goto out;
full:
	r = full_check(dir, mac, scratch, files, n, t, rec, end, reterr);
out:
	free(files);
	return r;
}

int audit_end_sync(const char *dir, struct hash_hmac *mac, struct audit_scratch *scratch,
		   int lock_fd, const char *boot_id, struct audit_end *end, struct diag *reterr)
{
	struct audit_file *files = NULL;
	struct stat mst, tst, same;
	struct scan s;
	ssize_t t, p, m = -1;
	size_t n = 0, i;
	int r;

	if (!end->mark_name[0])
		return audit_end_check(dir, mac, scratch, lock_fd, boot_id, end, reterr);
	r = list_files(dir, &files, &n, &t, &p, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < n && m < 0; i++)
		if (strcmp(files[i].name, end->mark_name) == 0)
			m = (ssize_t)i;
	/* the file checked last is gone or is not the one it was, or no file
	 * after it has content: start over (t < m cannot be, as it is not
	 * empty, unless it shrank) */
	if (m < 0 || t < m)
		goto full;

	scan_init(&s, dir, mac, scratch, reterr);
	memcpy(s.expected, end->mark_hmac, sizeof(s.expected));
	s.count = end->mark_count;
	s.any_ok = end->mark_count > 0; /* checked before */
	same.st_dev = end->mark_dev;
	same.st_ino = end->mark_ino;
	r = scan_file(&s, files[m].name, end->mark_off, end->mark_line, t == m, &same, &mst);
	if (r == -ESTALE || r == -ENOENT)
		goto full;
	if (r < 0)
		goto out;
	tst = mst;
	for (i = (size_t)m + 1; i <= (size_t)t; i++) {
		if (files[i].size < 0 && audit_io_stat(dir, &files[i]) < 0)
			continue;
		if (files[i].size == 0)
			continue;
		r = scan_file(&s, files[i].name, 0, 0, i == (size_t)t, NULL, &tst);
		if (r < 0)
			goto out;
	}
	r = scan_finish(&s);
	if (r < 0)
		goto out;
	end_set(end, &s, 0, files[t].name, &tst, files[n - 1].name);
	r = 0;
	goto out;
full:
	r = audit_end_check(dir, mac, scratch, lock_fd, boot_id, end, reterr);
out:
	free(files);
	return r;
}
