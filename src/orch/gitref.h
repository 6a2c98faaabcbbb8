/* Reading a git ref without running git.
 *
 * Every git process costs the supervisor several milliseconds (more than the
 * rest of a task's bookkeeping together), and the questions bernstein asks
 * most -- "where does branch X point", "does branch X exist" -- are answered
 * by two small files of git's "files" ref store (gitrepository-layout(5)):
 * the loose ref $GIT_DIR/refs/heads/X ("<hex>\n", or "ref: <name>\n" for a
 * symbolic ref) and $GIT_DIR/packed-refs ("<hex> <name>" lines, "^<hex>"
 * peeled lines, a "# pack-refs with:" header). A loose ref wins over a packed
 * one; a ref in neither does not exist. Git writes both atomically (lock file,
 * rename) and packs by writing packed-refs before deleting the loose file, so
 * a reader sees one or the other.
 *
 * This reads only what it fully understands and says -ENOTSUP for anything
 * else -- a repository whose .git is a file (a linked worktree, a submodule),
 * the reftable store, a malformed or oddly named ref, a symbolic ref chain
 * longer than GITREF_MAX_DEPTH -- so the caller asks git instead. The ref
 * files are writable by the agents bernstein runs: the parsers are strict,
 * capped and fuzzed (fuzz/fuzz-gitref.c).
 *
 * An object id read here is what the file says, not checked to name an
 * object of the repository's hash (a 64-digit id in a SHA-1 repository is
 * passed on): callers only compare it with ids git gave them, and ask git
 * whenever they would rely on it further. */
#ifndef BERNSTEIN_ORCH_GITREF_H
#define BERNSTEIN_ORCH_GITREF_H

#include <stddef.h>

#define GITREF_OID_MAX	  64	      /* hex digits of a SHA-256 object id */
#define GITREF_MAX_DEPTH  5	      /* ref files read for one name, as git */
#define GITREF_LOOSE_MAX  4096	      /* bytes of a loose ref file */
#define GITREF_PACKED_MAX (64u << 20) /* bytes of packed-refs */

/* The content of a loose ref file. Returns 1 and the lower-case object id
 * (40 or 64 hex digits, NUL-terminated) in oid; 2 and the target ref name in
 * target (NUL-terminated) for "ref: NAME"; -EBADMSG for anything else
 * (trailing garbage, upper-case hex, a bad name, no newline is fine). */
int gitref_parse_loose(const char *buf, size_t len, char oid[GITREF_OID_MAX + 1], char *target,
		       size_t target_size);

/* Look refname up in the content of a packed-refs file: 1 and its object id
 * in oid, 0 when it is not there, -EBADMSG when the file is anything but
 * what git writes -- checked whole, since git's binary search answers
 * differently on a damaged file: an optional "# pack-refs with:" first line,
 * then "<hex> <name>" lines sorted by name without repeats, each optionally
 * followed by one "^<hex>" peeled line, every line ending in '\n', object ids
 * of one width. */
int gitref_parse_packed(const char *buf, size_t len, const char *refname,
			char oid[GITREF_OID_MAX + 1]);

/* Is name a ref name this module reads: "HEAD", or "refs/" followed by
 * components of [A-Za-z0-9._+-], none empty, none starting with '.', none
 * ending in ".lock", no "..", the name not ending in '.'? (A subset of
 * git-check-ref-format.) */
int gitref_name_ok(const char *name);

/* Resolve refname (e.g. "refs/heads/main") in the repository whose main
 * working tree is repo (the directory holding .git). 0 and oid; -ENOENT when
 * the ref does not exist; -ENOTSUP when the answer must come from git; another
 * negative errno when a file cannot be read. */
int gitref_read(const char *repo, const char *refname, char oid[GITREF_OID_MAX + 1]);

#endif
