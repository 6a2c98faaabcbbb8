/* git's index file (Documentation/gitformat-index.txt) read and its stat
 * data patched in place: what a reflink checkout (checkout-reflink.c,
 * docs/runs.md "Reflink checkouts") copies into a task's worktree so that
 * git's first `git status` there finds every file clean without reading
 * it again.
 *
 * The index read is the base checkout's, a file an unsandboxed agent could
 * have written: every length is checked against the buffer, the entry count
 * against the smallest entry, each path (NUL-terminated, padded in v2/v3,
 * prefix-compressed in v4) against the rules of a path in a tree (relative,
 * no empty, '.', '..' or .git component), each mode against the four git
 * writes, the trailing checksum against the content. Errors say which entry
 * (its index and byte offset) and what is wrong, -EBADMSG; an index this
 * code cannot drive a copy from (a required extension: a split index's
 * "link", a sparse index's "sdir") is -EOPNOTSUPP.
 *
 * Versions 2, 3 and 4 are patched alike: the stat data of an entry is 40
 * fixed bytes at its start in every version. */
#ifndef BERNSTEIN_ORCH_GITINDEX_H
#define BERNSTEIN_ORCH_GITINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "util/diag.h"

/* git's modes in an index entry */
#define GITINDEX_MODE_FILE    0100644u
#define GITINDEX_MODE_EXEC    0100755u
#define GITINDEX_MODE_SYMLINK 0120000u
#define GITINDEX_MODE_GITLINK 0160000u

/* more entries than this is refused (git's own limit is memory) */
#define GITINDEX_MAX_ENTRIES (16u << 20)

struct gitindex_entry {
	size_t off;	    /* of its stat data in the buffer */
	uint32_t mode;	    /* one of GITINDEX_MODE_* */
	unsigned stage;	    /* 0, or a conflict's 1..3 */
	bool skip_worktree; /* v3+: sparse checkout left it out of the tree */
	const char *path;   /* NUL-terminated, in struct gitindex's own storage */
	size_t path_len;
};

struct gitindex {
	uint32_t version;
	size_t hash_len; /* 20 (SHA-1) or 32 (SHA-256): the repository's */
	size_t n;
	struct gitindex_entry *e;
	size_t entries_end; /* offset of the first extension (or the checksum) */
	char *paths;	    /* every path, NUL-terminated, back to back */
};

#define GITINDEX_INIT                                                                              \
	{                                                                                          \
		.n = 0                                                                             \
	}

/* buf (len bytes) parsed into *ret (initialised; released first) for a
 * repository whose object ids are hash_len bytes. 0, or -EBADMSG (reterr
 * says where and why), -EOPNOTSUPP (a required extension), -EINVAL (a
 * hash_len that is neither). */
int gitindex_parse(const void *buf, size_t len, size_t hash_len, struct gitindex *ret,
		   struct diag *reterr);
void gitindex_release(struct gitindex *ix);

/* e's stat data in buf set from st (git's 32-bit fields: ctime, mtime,
 * dev, ino, uid, gid, size; not the mode). */
void gitindex_set_stat(void *buf, const struct gitindex_entry *e, const struct stat *st);

/* buf (of the length parsed) finished after patching: the optional
 * extensions whose content depends on the tree's stat data or on a file
 * system monitor (all but TREE and REUC) dropped, and the trailing
 * checksum computed again (left all zeros where it was: index.skipHash).
 * Returns the new length (at most the old). */
size_t gitindex_finish(void *buf, size_t len, const struct gitindex *ix);

#endif
