/* The HMAC audit chain, byte-compatible with Bernstein's (docs/audit-log.md).
 *
 * Layout: DIR/YYYY-MM-DD.jsonl (UTC day of the append), one record a line:
 *   {"actor": .., "details": {..}, "event_type": .., "hmac": .., "prev_hmac": ..,
 *    "resource_id": .., "resource_type": .., "timestamp": ".."}
 * serialised like Python json.dumps(sort_keys=True) (util/json.h json_canon_py),
 * hmac = hex HMAC-SHA256(key, prev_hmac || canonical(record without "hmac")),
 * the first prev_hmac is 64 zeros. DIR/state.json keeps the record count and
 * the last MAC, so a truncated tail is detected; DIR/.lock serialises writers.
 *
 * Nothing here prints or reads the environment: the CLI resolves the key path
 * and passes it in. */
#ifndef BERNSTEIN_AUDIT_AUDIT_H
#define BERNSTEIN_AUDIT_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/clock.h"
#include "util/diag.h"

#define AUDIT_HMAC_HEX_LEN 64
#define AUDIT_GENESIS	   "0000000000000000000000000000000000000000000000000000000000000000"
/* A chain line longer than this is a verification problem, not a crash. */
#define AUDIT_LINE_MAX (1024 * 1024)
/* The key file is small text; anything larger is refused. */
#define AUDIT_KEY_FILE_MAX 4096
#define AUDIT_STATE_FILE   "state.json"
#define AUDIT_LOCK_FILE	   ".lock"

/* ---- key ------------------------------------------------------------------ */

enum audit_key_source {
	AUDIT_KEY_EXPLICIT, /* --key-file */
	AUDIT_KEY_ENV,	    /* $BERNSTEIN_AUDIT_KEY_PATH */
	AUDIT_KEY_XDG,	    /* $XDG_STATE_HOME/bernstein/audit.key */
	AUDIT_KEY_HOME,	    /* $HOME/.local/state/bernstein/audit.key */
	_AUDIT_KEY_SOURCE_MAX,
	_AUDIT_KEY_SOURCE_INVALID = -22,
};

/* Pick the key path: explicit > env_key_path > xdg_state_home (only if
 * absolute) > home. Empty strings count as unset. Writes buf (size bytes) and
 * *ret_source (may be NULL). -ENOENT when nothing is set (no HOME),
 * -ENAMETOOLONG when the path does not fit. */
int audit_key_resolve(const char *explicit_path, const char *env_key_path,
		      const char *xdg_state_home, const char *home, char *buf, size_t size,
		      enum audit_key_source *ret_source);
const char *audit_key_source_name(enum audit_key_source s);

/* Load the key at path: the file's bytes with ASCII whitespace stripped at
 * both ends are the HMAC key (the hex text itself, not decoded). The file
 * must be a regular file without any group/other permission bit (-EPERM,
 * the diag names the file and its mode). With create, a missing key is made:
 * the parent directory is created 0700 if missing, 32 random bytes as 64
 * lowercase hex digits are written to a 0600 file (no newline) that appears
 * atomically (temp file + link, so a concurrent creator's key wins). *ret_created
 * (may be NULL) says whether this call created it. The caller frees the key
 * with audit_key_free(). Errors: -ENOENT (missing, !create), -EPERM (mode),
 * -EINVAL (empty or not a regular file), -EFBIG, or -errno. */
int audit_key_load(const char *path, bool create, char **ret_key, size_t *ret_len,
		   bool *ret_created, struct diag *reterr);
/* Zero and free; returns NULL. */
char *audit_key_free(char *key, size_t len);

/* ---- writing -------------------------------------------------------------- */

enum audit_open_flags {
	AUDIT_OPEN_CREATE = 1 << 0, /* mkdir -p the directory (0700) */
};

struct audit_chain;

/* Open the chain in dir for appending with the given key (copied). Takes the
 * lock briefly to check the chain's end (audit-end.c; docs/audit-log.md,
 * "What a writer checks"): the newest file line by line, and the chain
 * against state.json. -EBADMSG when it is broken there (a line that is not
 * canonical or does not chain, a chain shorter than or different from
 * state.json, an entry DIR/NAME.jsonl that is not a regular file),
 * -EKEYREJECTED when a record does not verify with this key though the ones
 * before it do (added or changed without the key). Those refuse to write
 * until a human looks ("Recovery"). -ENOKEY when no record checked
 * verifies: another key. clk may be NULL (system). */
int audit_open(const char *dir, const void *key, size_t keylen, const struct clock *clk,
	       enum audit_open_flags flags, struct audit_chain **ret, struct diag *reterr);

/* Like audit_open(), for when the key file key_path does not exist yet (the
 * caller's audit_key_load() said -ENOENT): nothing is created now. The first
 * audit_append() that can build its record creates the key there
 * (audit_key_load() with create: a key another process created meanwhile is
 * used), then the directory (AUDIT_OPEN_CREATE) and the lock, so a command
 * that ends up recording nothing leaves no key behind. Reads only: refuses a
 * chain that has records when the key is still missing (-ENOKEY: they were
 * made with another key) or whose state.json claims records, or that holds
 * an entry that is not a regular file (-EBADMSG); -ENOENT when dir is
 * missing and not AUDIT_OPEN_CREATE. If the key appeared meanwhile, this is
 * audit_open() with it (key file errors as audit_append()). */
int audit_open_keyless(const char *dir, const char *key_path, const struct clock *clk,
		       enum audit_open_flags flags, struct audit_chain **ret, struct diag *reterr);

/* Append one record. Strings must be valid UTF-8 (NULL is ""); details must be
 * a JSON object or NULL ({}). Under flock(LOCK_EX) on DIR/.lock what other
 * writers appended since this handle's last append is checked (as at open),
 * so several processes produce one chain and none goes on over a chain
 * broken meanwhile. Outside a batch the day
 * file is fsynced and state.json rewritten (atomically) before returning.
 * Errors: -EINVAL (bad argument), -EDOM (NaN/Inf in details), -EBADMSG /
 * -EKEYREJECTED (as audit_open), -EPERM / -ENOKEY / -EFBIG (the key file
 * of a keyless chain: its mode, unusable, too large), or -errno. */
int audit_append(struct audit_chain *c, const char *event_type, const char *actor,
		 const char *resource_type, const char *resource_id, const json_t *details,
		 struct diag *reterr);

/* Batched durability for bulk writers: appends between begin and end still
 * lock and re-read the tail each time, but skip fsync and state.json; end
 * fsyncs the day file and writes state.json once. Not nested. */
void audit_batch_begin(struct audit_chain *c);
int audit_batch_end(struct audit_chain *c, struct diag *reterr);

/* The MAC of this handle's last append (AUDIT_GENESIS before any) and the
 * chain's record count as of then. */
const char *audit_chain_last_hmac(const struct audit_chain *c);
uint64_t audit_chain_count(const struct audit_chain *c);

/* Ends an open batch (best effort: call audit_batch_end() to see its errors),
 * closes, zeroes the key copy. Accepts NULL, returns NULL. */
struct audit_chain *audit_close(struct audit_chain *c);

/* ---- verifying ------------------------------------------------------------ */

/* One problem: file is the chain file's path (dir/name), line 1-based (0: the
 * problem is not about a line, e.g. a state.json that cannot be read). */
typedef void audit_problem_fn(void *userdata, const char *file, unsigned line, const char *msg);

struct audit_verify_stats {
	uint64_t records;  /* non-empty lines replayed */
	uint64_t problems; /* problems reported */
	unsigned files;	   /* chain files replayed */
	bool have_state;   /* state.json existed and was checked */
	char last_hmac[AUDIT_HMAC_HEX_LEN + 1];
};

/* Replay every DIR/NAME.jsonl in name order from genesis and check each line
 * (JSON, object, canonical bytes, prev_hmac, HMAC, trailing newline, length),
 * then the chain's end against state.json. Every problem goes to cb (may be
 * NULL); a problem does not stop verification, and the stored hmac of a bad
 * record becomes the next expected prev_hmac (no cascades). A consistent
 * snapshot is taken under a shared lock, so concurrent appends are not seen
 * half-written. Returns 0 when verification ran (look at ret->problems),
 * -ENOENT when dir does not exist, or -errno for an I/O error. */
int audit_verify(const char *dir, const void *key, size_t keylen, audit_problem_fn *cb,
		 void *userdata, struct audit_verify_stats *ret, struct diag *reterr);

/* The verifier as a stream, for audit_verify(), the fuzzer and tests: feed
 * any number of files, each in any number of chunks. */
struct audit_verifier;
struct audit_verifier *audit_verifier_new(const void *key, size_t keylen, audit_problem_fn *cb,
					  void *userdata);
void audit_verifier_begin_file(struct audit_verifier *v, const char *name);
void audit_verifier_feed(struct audit_verifier *v, const void *data, size_t len);
void audit_verifier_end_file(struct audit_verifier *v);
/* Before feeding: the recorded end of the chain (state.json), checked by
 * audit_verifier_finish(). name locates the problem when there is no chain
 * file at all. */
void audit_verifier_set_state(struct audit_verifier *v, uint64_t count, const char *last_hmac,
			      const char *name);
/* After the last file: end-of-chain checks (truncated tail). */
void audit_verifier_finish(struct audit_verifier *v);
/* Report a problem of the caller's own (counted in the stats). */
void audit_verifier_problem(struct audit_verifier *v, const char *file, unsigned line,
			    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void audit_verifier_stats(const struct audit_verifier *v, struct audit_verify_stats *ret);
struct audit_verifier *audit_verifier_free(struct audit_verifier *v);

/* ---- reading -------------------------------------------------------------- */

/* Called for every non-empty line in chain order. record is the parsed object
 * or NULL when the line is not a JSON object (raw/len still given; raw is NULL
 * for an over-long line). Return 0 to go on, a negative errno to stop (that
 * value is returned by audit_read()). */
typedef int audit_record_fn(void *userdata, const char *file, unsigned line, const char *raw,
			    size_t len, const json_t *record);

/* Read the chain without checking MACs (no key needed). -ENOENT when dir
 * does not exist. */
int audit_read(const char *dir, audit_record_fn *cb, void *userdata, struct diag *reterr);

#endif
