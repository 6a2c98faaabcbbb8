/* Helpers shared by the files of src/audit/. Not for other layers. */
#ifndef BERNSTEIN_AUDIT_AUDIT_INTERNAL_H
#define BERNSTEIN_AUDIT_AUDIT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit/audit.h"
#include "util/hash.h"
#include "util/sbuf.h"

/* ---- audit-io.c: line splitting, file listing and scanning ---------------- */

enum audit_line_flags {
	AUDIT_LINE_TOO_LONG = 1 << 0,	/* longer than AUDIT_LINE_MAX: line is NULL */
	AUDIT_LINE_NO_NEWLINE = 1 << 1, /* the file's last line lacks its '\n' */
};

/* One line without its '\n' (len may be 0: an empty line). A negative return
 * stops the split and is passed on. */
typedef int audit_line_fn(void *userdata, unsigned lineno, const char *line, size_t len,
			  unsigned flags);

/* Splits a byte stream on '\n' only, into lines capped at AUDIT_LINE_MAX. */
struct audit_split {
	struct sbuf buf; /* the current line when it spans chunks */
	unsigned lineno; /* lines completed so far */
	bool too_long;	 /* the current line overflowed; skipping to '\n' */
	bool partial;	 /* bytes of the current line have been seen */
	audit_line_fn *fn;
	void *userdata;
};

void audit_io_split_init(struct audit_split *s, audit_line_fn *fn, void *userdata);
int audit_io_split_feed(struct audit_split *s, const char *data, size_t len);
/* End of input: an unterminated last line is delivered with NO_NEWLINE. */
int audit_io_split_end(struct audit_split *s);
void audit_io_split_release(struct audit_split *s);

struct audit_file {
	char name[256]; /* "2026-11-30.jsonl" */
	off_t size;	/* at listing time */
	dev_t dev;
	ino_t ino;
	/* 0: a regular file. Else what it is (file_type_error(), -ELOOP a
	 * symbolic link): not a chain file, a problem; never opened. */
	int type_err;
};

/* The entries DIR/NAME.jsonl (no dot files) sorted by name, with their
 * sizes, not following symbolic links. Entries that are not regular files
 * are listed too, with type_err set. lazy: files the directory entry says
 * are regular are not stat()ed (size -1; see audit_io_stat()). *ret is
 * malloc'd (free()), NULL when there are none. -ENOENT when dir does not
 * exist. */
int audit_io_list(const char *dir, bool lazy, struct audit_file **ret, size_t *ret_n);
/* Fill f's size, dev, ino and type_err (lstat). */
int audit_io_stat(const char *dir, struct audit_file *f);
/* "is a FIFO (not a regular file)" for a type_err. */
const char *audit_io_type_str(int type_err);
/* Feed the first limit bytes of path (all of it when limit < 0) to a fresh
 * splitter calling fn. A file that vanished is -ENOENT; what is not a
 * regular file is never opened (open_regular() without following a
 * symbolic link). */
int audit_io_scan(const char *path, off_t limit, audit_line_fn *fn, void *userdata);
/* The last line of the first size bytes of fd (without its '\n'), into out
 * (reset first). *ret_terminated says whether byte size-1 is '\n'. -ENOBUFS
 * when the line is longer than AUDIT_LINE_MAX. size must be > 0. */
int audit_io_last_line(int fd, off_t size, struct sbuf *out, bool *ret_terminated);
/* "dir/name" into buf; -ENAMETOOLONG if it does not fit. */
int audit_io_path(char *buf, size_t size, const char *dir, const char *name);

/* ---- audit-canon.c: the canonical-form fast path ------------------------- */

/* Where a canonical line's MAC inputs are. */
struct audit_canon {
	const char *prev, *hmac; /* the top-level string values' bytes (no escapes) */
	size_t prevlen, hmaclen;
	size_t cut_a, cut_b; /* the payload is line[0, cut_a) + line[cut_b, len) */
};

/* One pass over line, no allocation: 1 (and *ret set) when line is certainly
 * the canonical form (json_canon_py()) of the JSON object jansson parses
 * from it, with top-level string members "prev_hmac" and "hmac" without
 * escapes; 0 when it cannot tell (anything outside the subset described in
 * audit-canon.c), and the caller must take the full path. */
int audit_canon_scan(const char *line, size_t len, struct audit_canon *ret);

/* ---- audit-record.c: one record, parsed and checked ----------------------- */

enum audit_record_kind {
	AUDIT_RECORD_OBJECT,	   /* parsed, an object: the fields below are set */
	AUDIT_RECORD_INVALID_JSON, /* error holds jansson's message */
	AUDIT_RECORD_NOT_OBJECT,
};

/* Scratch buffers reused from line to line. */
struct audit_scratch {
	struct sbuf canon;   /* canonical form of the whole line */
	struct sbuf payload; /* canonical form without "hmac" */
};

void audit_scratch_init(struct audit_scratch *s);
void audit_scratch_release(struct audit_scratch *s);

struct audit_record {
	enum audit_record_kind kind;
	json_t *obj;	/* owned; NULL when fast */
	bool canonical; /* the line's bytes equal the canonical form */
	/* The string values, NULL if missing or not strings; not NUL-terminated
	 * (they may point into the line): use the lengths. */
	const char *prev, *hmac;
	size_t prevlen, hmaclen;
	bool mac_ok; /* hmac is a string equal to computed (constant time) */
	bool fast;   /* decided by audit_canon_scan() (obj is NULL) */
	char computed[AUDIT_HMAC_HEX_LEN + 1]; /* HMAC over prev || payload */
	char error[200];
};

enum audit_check_flags {
	AUDIT_CHECK_NO_FAST = 1 << 0, /* jansson only: for tests and the differential fuzzer */
};

/* Check line: when audit_canon_scan() accepts it, that is all (no parse);
 * else parse it and, if it is an object, compare it with its canonical
 * form. Then compute its HMAC with mac (prev and hmac point into line or
 * into obj: they live as long as both). Never fails for bad input (that is
 * in kind and the flags); a NULL mac or a failure of the crypto library is
 * -EIO. */
int audit_record_check(struct audit_scratch *s, struct hash_hmac *mac, const char *line, size_t len,
		       unsigned flags, struct audit_record *ret);
void audit_record_release(struct audit_record *r);
/* A record a writer may chain from: an object, canonical, whose hmac is 64
 * lowercase hex digits. */
bool audit_record_chainable(const struct audit_record *r);
/* Whether s is n lowercase hex digits, n == 64. */
bool audit_hex64(const char *s, size_t n);
/* Copy the 64 bytes of a MAC (prev and hmac of a record are not
 * NUL-terminated when they point into the line) and terminate dst. */
void audit_hmac_copy(char dst[AUDIT_HMAC_HEX_LEN + 1], const char *src);

/* Build a new record line (with '\n') into line (appended), and its MAC. */
int audit_record_build(struct audit_scratch *s, struct hash_hmac *mac, const char *prev,
		       const char *timestamp, const char *event_type, const char *actor,
		       const char *resource_type, const char *resource_id, const json_t *details,
		       struct sbuf *line, char ret_hmac[AUDIT_HMAC_HEX_LEN + 1],
		       struct diag *reterr);

/* ---- audit-end.c: the writers' check of the chain's end ------------------ */

/* The chain's end as a writer knows it, and where its last check stopped. */
struct audit_end {
	uint64_t count;				/* non-empty lines of every file */
	char last_hmac[AUDIT_HMAC_HEX_LEN + 1]; /* the last good record's MAC */
	char tail_name[256];			/* the newest chain file ("" none) */
	bool tail_torn;				/* ... ends with an unterminated line */
	/* Checked up to mark_off of mark_name (the newest non-empty file; the
	 * start of its torn last line, if any), which holds mark_line lines
	 * before it; mark_count lines in all, the last good one mark_hmac.
	 * mark_name "" means none: the next sync checks everything. */
	char mark_name[256];
	dev_t mark_dev;
	ino_t mark_ino;
	off_t mark_off;
	unsigned mark_line;
	uint64_t mark_count;
	char mark_hmac[AUDIT_HMAC_HEX_LEN + 1];
};

/* With the lock held: check the newest non-empty file from the end of the
 * file before it, locate state.json's (and the hot state's) recorded end in
 * it, replay from genesis when that does not settle the count, and set
 * *end. Refuses (diag set) with -EBADMSG for a chain `audit verify` would
 * call broken at its end (see audit-end.c for the two crash remnants that
 * are let through), -EKEYREJECTED for a record that does not verify with
 * mac when one before it did, -ENOKEY when none checked does (another key?);
 * -errno for I/O. lock_fd: DIR/.lock (the hot state), or -1; the hot
 * state binds like state.json when it was written in boot boot_id (this
 * boot's, audit_state_boot_id(); "" or NULL: never). */
int audit_end_check(const char *dir, struct hash_hmac *mac, struct audit_scratch *scratch,
		    int lock_fd, const char *boot_id, struct audit_end *end, struct diag *reterr);
/* With the lock held: check what was appended since end's mark (the files
 * after it too) and update *end; audit_end_check() when the marked file
 * shrank, was replaced or vanished. Errors as audit_end_check(). */
int audit_end_sync(const char *dir, struct hash_hmac *mac, struct audit_scratch *scratch,
		   int lock_fd, const char *boot_id, struct audit_end *end, struct diag *reterr);

/* ---- audit-verify.c -------------------------------------------------------- */

/* Flags for every audit_record_check() of this verifier (default 0). */
void audit_verifier_set_check_flags(struct audit_verifier *v, unsigned flags);
/* Like audit_verifier_set_state(), for the hot state a writer left in
 * DIR/.lock (name locates it), reported as ".lock says". */
void audit_verifier_set_hot(struct audit_verifier *v, uint64_t count, const char *last_hmac,
			    const char *name);

/* ---- audit-state.c: state.json and the lock file's hot state -------------- */

#define AUDIT_BOOT_ID_LEN 36 /* /proc/sys/kernel/random/boot_id, a UUID */

struct audit_state {
	uint64_t count;
	char last_hmac[AUDIT_HMAC_HEX_LEN + 1];
	/* the hot state only: the boot that wrote it ("" unknown) */
	char boot_id[AUDIT_BOOT_ID_LEN + 1];
};

/* 0, -ENOENT (no state.json), -EBADMSG (unreadable content, diag set). */
int audit_state_load(const char *dir, struct audit_state *ret, struct diag *reterr);
int audit_state_save(const char *dir, const struct audit_state *st, struct diag *reterr);
/* This boot's id into buf ("" when unknown). */
void audit_state_boot_id(char buf[AUDIT_BOOT_ID_LEN + 1]);
/* The hot state lives in the lock file: updated after every append (no
 * fsync), with the boot id of its writer, so writers in a batch know the
 * count without rescanning, and within a boot a truncated tail shows even
 * before state.json was written. */
int audit_state_hot_read(int lock_fd, struct audit_state *ret);
int audit_state_hot_write(int lock_fd, const struct audit_state *st);

#endif
