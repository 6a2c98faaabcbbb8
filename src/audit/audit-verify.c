/* Verifying and reading the chain. The verifier replays lines from genesis:
 * each line must be JSON, an object, byte-identical to its canonical form,
 * chain to the previous record (prev_hmac) and carry the right HMAC. After a
 * problem it resynchronises (the stored hmac, or the computed one when the
 * hmac itself was damaged, becomes the expected prev), so one tamper is one
 * precise problem, not a cascade. */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define READ_CHUNK (256 * 1024)
#define SHORT_LEN  16
#define ELLIPSIS   "\xe2\x80\xa6" /* U+2026, as Bernstein prints it */

struct verifier_end {
	bool have;
	uint64_t count;
	char hmac[AUDIT_HMAC_HEX_LEN + 1];
	char *name;
	bool have_at_n; /* record number count was seen */
	bool at_n_has_mac;
	char at_n[AUDIT_HMAC_HEX_LEN + 1];
	char *at_n_file;
	unsigned at_n_line;
};

struct audit_verifier {
	struct hash_hmac *mac; /* NULL: libcrypto failed, every MAC is a problem */
	unsigned check_flags;
	audit_problem_fn *cb;
	void *userdata;
	struct audit_scratch scratch;
	struct audit_split split;
	char *file; /* the file being fed */

	/* What the next record's prev_hmac must be. */
	bool resync; /* anything: the previous line was unreadable */
	char expected[AUDIT_HMAC_HEX_LEN + 1];
	size_t expected_len; /* != 64: can never match */
	bool have_alt;	     /* the previous MAC was wrong: its computed value works too */
	char alt[AUDIT_HMAC_HEX_LEN + 1];

	uint64_t records, problems;
	unsigned files;
	char last_hmac[AUDIT_HMAC_HEX_LEN + 1];
	char *last_file; /* where the last line was */
	unsigned last_line;
	bool file_has_lines; /* the current file had a line (last_file is it) */

	/* The recorded ends: [0] state.json, [1] the hot state in .lock
	 * (checked only when written in this boot). */
	struct verifier_end ends[2];
};

/* The first 16 bytes of s for a message, non-printable bytes as '?'. */
static const char *short16(const char *s, size_t len, char buf[SHORT_LEN + 1])
{
	size_t i;

	if (!s)
		len = 0;
	for (i = 0; i < len && i < SHORT_LEN; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

void audit_verifier_problem(struct audit_verifier *v, const char *file, unsigned line,
			    const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	v->problems++;
	if (!v->cb)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	v->cb(v->userdata, file ? file : "", line, msg);
}

static bool expected_matches(const struct audit_verifier *v, const char *prev, size_t len)
{
	if (len != AUDIT_HMAC_HEX_LEN)
		return false;
	if (v->expected_len == AUDIT_HMAC_HEX_LEN &&
	    hash_equal(v->expected, prev, AUDIT_HMAC_HEX_LEN))
		return true;
	return v->have_alt && hash_equal(v->alt, prev, AUDIT_HMAC_HEX_LEN);
}

static void set_expected(struct audit_verifier *v, const char *s, size_t len)
{
	size_t n = len < AUDIT_HMAC_HEX_LEN ? len : AUDIT_HMAC_HEX_LEN;

	memcpy(v->expected, s, n);
	v->expected[n] = '\0';
	v->expected_len = len;
	v->resync = false;
	v->have_alt = false;
}

static void check_record(struct audit_verifier *v, unsigned lineno, const char *line, size_t len)
{
	char a[SHORT_LEN + 1], b[SHORT_LEN + 1];
	struct audit_record rec;
	const char *f = v->file;

	if (audit_record_check(&v->scratch, v->mac, line, len, v->check_flags, &rec) < 0) {
		audit_verifier_problem(v, f, lineno, "cannot compute HMAC-SHA256");
		v->resync = true;
		goto out;
	}
	switch (rec.kind) {
	case AUDIT_RECORD_INVALID_JSON:
		audit_verifier_problem(v, f, lineno, "invalid JSON - %s", rec.error);
		v->resync = true;
		goto out;
	case AUDIT_RECORD_NOT_OBJECT:
		audit_verifier_problem(v, f, lineno, "entry is not a JSON object");
		v->resync = true;
		goto out;
	case AUDIT_RECORD_OBJECT:
		break;
	}
	if (!rec.canonical)
		audit_verifier_problem(v, f, lineno, "non-canonical line bytes");
	if (!rec.prev)
		audit_verifier_problem(v, f, lineno, "prev_hmac missing or not a string");
	else if (!v->resync && !expected_matches(v, rec.prev, rec.prevlen))
		audit_verifier_problem(v, f, lineno,
				       "prev_hmac mismatch (expected %s" ELLIPSIS
				       ", got %s" ELLIPSIS ")",
				       short16(v->expected, v->expected_len, a),
				       short16(rec.prev, rec.prevlen, b));
	if (!rec.hmac)
		audit_verifier_problem(v, f, lineno, "hmac missing or not a string");
	else if (!rec.computed[0])
		audit_verifier_problem(v, f, lineno,
				       "cannot compute HMAC: record not serialisable");
	else if (!rec.mac_ok)
		audit_verifier_problem(
			v, f, lineno, "HMAC mismatch (expected %s" ELLIPSIS ", got %s" ELLIPSIS ")",
			short16(rec.computed, AUDIT_HMAC_HEX_LEN, a),
			short16(rec.hmac, rec.hmaclen, b));

	if (rec.hmac) {
		set_expected(v, rec.hmac, rec.hmaclen);
		/* A damaged hmac field: the next record chains to the real MAC. */
		if (!rec.mac_ok && rec.computed[0]) {
			v->have_alt = true;
			memcpy(v->alt, rec.computed, sizeof(v->alt));
		}
		if (rec.hmaclen == AUDIT_HMAC_HEX_LEN)
			audit_hmac_copy(v->last_hmac, rec.hmac);
	} else {
		v->resync = true;
	}
	for (size_t i = 0; i < 2; i++) {
		struct verifier_end *e = &v->ends[i];

		if (e->have && v->records == e->count) {
			e->at_n_has_mac = audit_hex64(rec.hmac, rec.hmaclen);
			if (e->at_n_has_mac)
				audit_hmac_copy(e->at_n, rec.hmac);
		}
	}
out:
	audit_record_release(&rec);
}

static int verifier_line(void *userdata, unsigned lineno, const char *line, size_t len,
			 unsigned flags)
{
	struct audit_verifier *v = userdata;

	if (!line || len > 0) {
		v->records++;
		if (!v->file_has_lines) {
			free(v->last_file);
			v->last_file = xstrdup(v->file);
			v->file_has_lines = true;
		}
		v->last_line = lineno;
		for (size_t i = 0; i < 2; i++) {
			struct verifier_end *e = &v->ends[i];

			if (e->have && v->records == e->count) {
				e->have_at_n = true;
				e->at_n_has_mac = false;
				free(e->at_n_file);
				e->at_n_file = xstrdup(v->file);
				e->at_n_line = lineno;
			}
		}
	}
	if (!line) {
		audit_verifier_problem(v, v->file, lineno, "line longer than %d bytes",
				       AUDIT_LINE_MAX);
		v->resync = true;
	} else if (len == 0) {
		audit_verifier_problem(v, v->file, lineno, "empty line");
	} else {
		check_record(v, lineno, line, len);
	}
	if (flags & AUDIT_LINE_NO_NEWLINE)
		audit_verifier_problem(v, v->file, lineno, "missing trailing newline");
	return 0;
}

struct audit_verifier *audit_verifier_new(const void *key, size_t keylen, audit_problem_fn *cb,
					  void *userdata)
{
	struct audit_verifier *v = xcalloc(1, sizeof(*v));

	if (hash_hmac_new(key, keylen, &v->mac) < 0)
		v->mac = NULL;
	v->cb = cb;
	v->userdata = userdata;
	audit_scratch_init(&v->scratch);
	audit_io_split_init(&v->split, verifier_line, v);
	set_expected(v, AUDIT_GENESIS, AUDIT_HMAC_HEX_LEN);
	memcpy(v->last_hmac, AUDIT_GENESIS, sizeof(v->last_hmac));
	v->file = xstrdup("");
	return v;
}

void audit_verifier_set_check_flags(struct audit_verifier *v, unsigned flags)
{
	v->check_flags = flags;
}

void audit_verifier_begin_file(struct audit_verifier *v, const char *name)
{
	free(v->file);
	v->file = xstrdup(name);
	v->file_has_lines = false;
	audit_io_split_release(&v->split);
	audit_io_split_init(&v->split, verifier_line, v);
	v->files++;
}

void audit_verifier_feed(struct audit_verifier *v, const void *data, size_t len)
{
	(void)audit_io_split_feed(&v->split, data, len);
}

void audit_verifier_end_file(struct audit_verifier *v)
{
	(void)audit_io_split_end(&v->split);
}

static void set_end(struct verifier_end *e, uint64_t count, const char *last_hmac, const char *name)
{
	e->have = true;
	e->count = count;
	(void)snprintf(e->hmac, sizeof(e->hmac), "%s", last_hmac);
	free(e->name);
	e->name = xstrdup(name);
}

void audit_verifier_set_state(struct audit_verifier *v, uint64_t count, const char *last_hmac,
			      const char *name)
{
	set_end(&v->ends[0], count, last_hmac, name ? name : AUDIT_STATE_FILE);
}

void audit_verifier_set_hot(struct audit_verifier *v, uint64_t count, const char *last_hmac,
			    const char *name)
{
	set_end(&v->ends[1], count, last_hmac, name ? name : AUDIT_LOCK_FILE);
}

/* who: "state" or ".lock" (the last writer's hot state). */
static void finish_end(struct audit_verifier *v, const struct verifier_end *e, const char *who)
{
	char a[SHORT_LEN + 1], b[SHORT_LEN + 1];

	if (!e->have || e->count == 0)
		return;
	if (v->records < e->count) {
		/* Located where the first missing record would be. */
		if (v->last_file)
			audit_verifier_problem(
				v, v->last_file, v->last_line + 1,
				"truncated tail (%s says %" PRIu64 " records / last MAC %s" ELLIPSIS
				", chain has %" PRIu64 ")",
				who, e->count, short16(e->hmac, AUDIT_HMAC_HEX_LEN, a), v->records);
		else
			audit_verifier_problem(
				v, e->name, 0,
				"truncated tail (%s says %" PRIu64 " records / last MAC %s" ELLIPSIS
				", chain has none)",
				who, e->count, short16(e->hmac, AUDIT_HMAC_HEX_LEN, a));
		return;
	}
	if (!e->have_at_n)
		return;
	if (!e->at_n_has_mac)
		audit_verifier_problem(v, e->at_n_file, e->at_n_line,
				       "chain does not match %s (record %" PRIu64
				       " has no MAC, %s says %s" ELLIPSIS ")",
				       who, e->count, who, short16(e->hmac, AUDIT_HMAC_HEX_LEN, a));
	else if (!hash_equal(e->at_n, e->hmac, AUDIT_HMAC_HEX_LEN))
		audit_verifier_problem(v, e->at_n_file, e->at_n_line,
				       "chain does not match %s (record %" PRIu64
				       " has MAC %s" ELLIPSIS ", %s says %s" ELLIPSIS ")",
				       who, e->count, short16(e->at_n, AUDIT_HMAC_HEX_LEN, a), who,
				       short16(e->hmac, AUDIT_HMAC_HEX_LEN, b));
}

void audit_verifier_finish(struct audit_verifier *v)
{
	finish_end(v, &v->ends[0], "state");
	finish_end(v, &v->ends[1], ".lock");
}

void audit_verifier_stats(const struct audit_verifier *v, struct audit_verify_stats *ret)
{
	ret->records = v->records;
	ret->problems = v->problems;
	ret->files = v->files;
	ret->have_state = v->ends[0].have;
	memcpy(ret->last_hmac, v->last_hmac, sizeof(ret->last_hmac));
}

struct audit_verifier *audit_verifier_free(struct audit_verifier *v)
{
	if (!v)
		return NULL;
	audit_io_split_release(&v->split);
	audit_scratch_release(&v->scratch);
	hash_hmac_free(v->mac);
	free(v->file);
	free(v->last_file);
	for (size_t i = 0; i < 2; i++) {
		free(v->ends[i].name);
		free(v->ends[i].at_n_file);
	}
	free(v);
	return NULL;
}

/* ---- snapshots of the directory ---------------------------------------- */

struct snapshot {
	struct audit_file *files;
	size_t n;
	int state_r; /* audit_state_load(): 0, -ENOENT or -EBADMSG */
	struct audit_state state;
	struct diag state_diag;
	bool have_hot; /* .lock's hot state, written in this boot */
	struct audit_state hot;
};

/* The chain files with their sizes and state.json, read under a shared lock
 * (when DIR/.lock exists) so no append is seen half-done. */
static int snapshot_take(const char *dir, struct snapshot *s, struct diag *reterr)
{
	char path[PATH_MAX];
	struct stat st;
	int fd = -1, r;

	memset(s, 0, sizeof(*s));
	if (stat(dir, &st) < 0) {
		r = -errno;
		diag_set(reterr, dir, 0, 0, "audit directory not found: %s", strerror(-r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		diag_set(reterr, dir, 0, 0, "audit directory not found: not a directory");
		return -ENOTDIR;
	}
	r = audit_io_path(path, sizeof(path), dir, AUDIT_LOCK_FILE);
	if (r < 0)
		return r;
	/* (a .lock that is not a regular file is not waited on: unlocked) */
	fd = open_regular(path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd >= 0) {
		while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
			;
	}
	r = audit_io_list(dir, false, &s->files, &s->n);
	if (r < 0) {
		diag_set(reterr, dir, 0, 0, "cannot list the audit directory: %s", strerror(-r));
		goto out;
	}
	if (fd >= 0 && audit_state_hot_read(fd, &s->hot) == 0 && s->hot.boot_id[0]) {
		char boot[AUDIT_BOOT_ID_LEN + 1];

		audit_state_boot_id(boot);
		s->have_hot = strcmp(boot, s->hot.boot_id) == 0;
	}
	s->state_r = audit_state_load(dir, &s->state, &s->state_diag);
	if (s->state_r < 0 && s->state_r != -ENOENT && s->state_r != -EBADMSG) {
		r = s->state_r;
		if (reterr)
			*reterr = s->state_diag;
		free(s->files);
		s->files = NULL;
		goto out;
	}
	r = 0;
out:
	close_fdp(&fd); /* releases the lock */
	return r;
}

static int feed_file(struct audit_verifier *v, const char *path, off_t limit, struct diag *reterr)
{
	char *chunk = NULL;
	off_t done = 0;
	int fd, r = 0;

	fd = open_regular(path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0) {
		r = fd;
		diag_set(reterr, path, 0, 0, "cannot read audit chain: %s", audit_io_type_str(r));
		return r;
	}
	chunk = xmalloc(READ_CHUNK);
	audit_verifier_begin_file(v, path);
	while (done < limit) {
		size_t want = limit - done < READ_CHUNK ? (size_t)(limit - done) : READ_CHUNK;
		ssize_t n = read(fd, chunk, want);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			diag_set(reterr, path, 0, 0, "cannot read audit chain: %s", strerror(-r));
			goto out;
		}
		if (n == 0)
			break; /* truncated since the snapshot: verify what is there */
		audit_verifier_feed(v, chunk, (size_t)n);
		done += n;
	}
	audit_verifier_end_file(v);
out:
	free(chunk);
	close_fdp(&fd);
	return r;
}

int audit_verify(const char *dir, const void *key, size_t keylen, audit_problem_fn *cb,
		 void *userdata, struct audit_verify_stats *ret, struct diag *reterr)
{
	struct audit_verifier *v = NULL;
	struct snapshot snap;
	char path[PATH_MAX];
	size_t i;
	int r;

	r = snapshot_take(dir, &snap, reterr);
	if (r < 0)
		return r;
	v = audit_verifier_new(key, keylen, cb, userdata);
	r = audit_io_path(path, sizeof(path), dir, AUDIT_STATE_FILE);
	if (r < 0)
		goto out;
	if (snap.state_r == 0)
		audit_verifier_set_state(v, snap.state.count, snap.state.last_hmac, path);
	else if (snap.state_r == -EBADMSG)
		audit_verifier_problem(v, path, snap.state_diag.line, "%s", snap.state_diag.msg);
	/* the hot state, when it says more than state.json (a tail removed
	 * before state.json was written) */
	if (snap.have_hot && !(snap.state_r == 0 && snap.state.count == snap.hot.count &&
			       strcmp(snap.state.last_hmac, snap.hot.last_hmac) == 0)) {
		r = audit_io_path(path, sizeof(path), dir, AUDIT_LOCK_FILE);
		if (r < 0)
			goto out;
		audit_verifier_set_hot(v, snap.hot.count, snap.hot.last_hmac, path);
	}
	for (i = 0; i < snap.n; i++) {
		r = audit_io_path(path, sizeof(path), dir, snap.files[i].name);
		if (r < 0)
			goto out;
		if (snap.files[i].type_err) {
			/* named like a chain file, but no file: reported, not read
			 * (a FIFO would block, a symlink may lead anywhere) */
			audit_verifier_problem(v, path, 0, "%s",
					       audit_io_type_str(snap.files[i].type_err));
			continue;
		}
		r = feed_file(v, path, snap.files[i].size, reterr);
		if (r < 0)
			goto out;
	}
	audit_verifier_finish(v);
	if (ret)
		audit_verifier_stats(v, ret);
	r = 0;
out:
	audit_verifier_free(v);
	free(snap.files);
	return r;
}

/* ---- reading ------------------------------------------------------------- */

struct reader {
	audit_record_fn *cb;
	void *userdata;
	const char *file;
	int cb_r; /* the callback's own error, passed on as is */
};

static int reader_line(void *userdata, unsigned lineno, const char *line, size_t len,
		       unsigned flags)
{
	struct reader *rd = userdata;
	json_t *obj = NULL;
	int r;

	(void)flags;
	if (line && len == 0)
		return 0;
	if (line) {
		obj = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (obj && !json_is_object(obj)) {
			json_decref(obj);
			obj = NULL;
		}
	}
	r = rd->cb(rd->userdata, rd->file, lineno, line, len, obj);
	json_decref(obj);
	if (r < 0)
		rd->cb_r = r;
	return r;
}

int audit_read(const char *dir, audit_record_fn *cb, void *userdata, struct diag *reterr)
{
	struct reader rd = {.cb = cb, .userdata = userdata};
	struct snapshot snap;
	char path[PATH_MAX];
	size_t i;
	int r;

	r = snapshot_take(dir, &snap, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < snap.n; i++) {
		if (snap.files[i].type_err)
			continue; /* not a chain file (audit verify reports it) */
		r = audit_io_path(path, sizeof(path), dir, snap.files[i].name);
		if (r < 0)
			goto out;
		rd.file = path;
		r = audit_io_scan(path, snap.files[i].size, reader_line, &rd);
		if (r < 0) {
			/* A callback's own error is passed on without a diag. */
			if (!rd.cb_r)
				diag_set(reterr, path, 0, 0, "cannot read audit chain: %s",
					 strerror(-r));
			goto out;
		}
	}
	r = 0;
out:
	free(snap.files);
	return r;
}
