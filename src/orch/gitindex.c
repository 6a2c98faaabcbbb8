/* git's index read and its stat data patched (see gitindex.h). */
#include "orch/gitindex.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/beneath.h"
#include "util/hash.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define HDR_LEN	 12u
#define STAT_LEN 40u /* ctime, mtime (s, ns), dev, ino, mode, uid, gid, size */
#define EXT_HDR	 8u
/* flags of an entry (and of v3's extended flags, the 16 bits after it) */
#define F_EXTENDED	0x4000u
#define F_STAGE_SHIFT	12
#define F_NAME_MASK	0x0fffu
#define XF_SKIP_WT	0x4000u
#define XF_KNOWN	0x6000u /* skip-worktree, intent-to-add */
#define PATHS_MAX_TOTAL (1ull << 30)
#define PRINTABLE(c)	(((c) >= 0x20 && (c) < 0x7f) ? (c) : '?')

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put32(unsigned char *p, uint64_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void digest(const void *data, size_t len, size_t hash_len, unsigned char *out)
{
	if (hash_len == SHA1_LEN)
		hash_sha1(data, len, out);
	else
		hash_sha256(data, len, out);
}

static bool all_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* A path git may have in a tree: relative, no empty, '.', '..' or .git
 * component (in any spelling some file system takes for it). */
static const char *path_problem(const char *p, size_t n)
{
	size_t i = 0, j;

	if (n == 0)
		return "an empty path";
	if (n >= PATH_MAX)
		return "a path of PATH_MAX bytes or more";
	if (p[0] == '/')
		return "an absolute path";
	while (i <= n) {
		j = i;
		while (j < n && p[j] != '/')
			j++;
		if (j == i)
			return "an empty path component";
		if (j - i > NAME_MAX)
			return "a path component longer than NAME_MAX";
		if ((j - i == 1 && p[i] == '.') || (j - i == 2 && p[i] == '.' && p[i + 1] == '.'))
			return "a '.' or '..' path component";
		if (beneath_is_git_name(p + i, j - i))
			return "a .git path component";
		i = j + 1;
	}
	return NULL;
}

/* git's varint (varint.c): 7 bits a byte, each continuation adds one. */
static int varint(const unsigned char **pp, const unsigned char *end, uint64_t *ret)
{
	const unsigned char *p = *pp;
	uint64_t v;
	unsigned char c;

	if (p >= end)
		return -EBADMSG;
	c = *p++;
	v = c & 127u;
	while (c & 128u) {
		if (p >= end || v + 1 > (UINT64_MAX >> 7))
			return -EBADMSG;
		c = *p++;
		v = ((v + 1) << 7) | (c & 127u);
	}
	*pp = p;
	*ret = v;
	return 0;
}

static bool mode_ok(uint32_t m)
{
	return m == GITINDEX_MODE_FILE || m == GITINDEX_MODE_EXEC || m == GITINDEX_MODE_SYMLINK ||
	       m == GITINDEX_MODE_GITLINK;
}

void gitindex_release(struct gitindex *ix)
{
	if (!ix)
		return;
	free(ix->e);
	free(ix->paths);
	*ix = (struct gitindex)GITINDEX_INIT;
}

struct pathbuf {
	char *buf;
	size_t len, alloc;
};

/* a path appended: keep bytes of the one at prev (v4's shared prefix; 0
 * for none) and then n bytes of s */
static int pathbuf_add(struct pathbuf *pb, size_t prev, size_t keep, const char *s, size_t n)
{
	size_t need = keep + n + 1;

	if (pb->len + need > PATHS_MAX_TOTAL)
		return -EBADMSG;
	if (pb->len + need > pb->alloc) {
		pb->alloc = (pb->len + need) * 2;
		pb->buf = xrealloc(pb->buf, pb->alloc);
	}
	if (keep)
		memmove(pb->buf + pb->len, pb->buf + prev, keep);
	memcpy(pb->buf + pb->len + keep, s, n);
	pb->buf[pb->len + keep + n] = '\0';
	pb->len += need;
	return 0;
}

/* What one parse keeps between entries. */
struct parser {
	const unsigned char *buf, *end; /* end: where the checksum starts */
	uint32_t version;
	size_t hash_len;
	struct pathbuf pb;
	size_t prev_off, prev_len; /* the previous path (v4's prefix) */
	/* the first path refused, said after the extensions (a split
	 * index's entries have empty paths: its "link" is what to report) */
	const char *bad_why;
	size_t bad_i, bad_off;
	struct diag *reterr;
};

static int bad(struct diag *reterr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct diag *reterr, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_set(reterr, NULL, 0, 0, "git index: %s", msg);
	return -EBADMSG;
}

/* v4's path at name: a strip count of the previous path, then a
 * NUL-terminated suffix. *pp past it. */
static int name_v4(struct parser *ps, size_t i, size_t off, const unsigned char *name,
		   const unsigned char **pp, size_t *ret_len)
{
	const unsigned char *nul;
	uint64_t strip;
	size_t plen;

	if (varint(&name, ps->end, &strip) < 0)
		return bad(ps->reterr, "entry %zu (byte %zu): truncated prefix length", i, off);
	if (strip > ps->prev_len)
		return bad(ps->reterr, "entry %zu (byte %zu): strips %llu bytes of a %zu-byte path",
			   i, off, (unsigned long long)strip, ps->prev_len);
	nul = memchr(name, '\0', (size_t)(ps->end - name));
	if (!nul)
		return bad(ps->reterr, "entry %zu (byte %zu): path not NUL-terminated", i, off);
	plen = ps->prev_len - (size_t)strip + (size_t)(nul - name);
	if (plen >= PATH_MAX)
		return bad(ps->reterr, "entry %zu (byte %zu): a path of PATH_MAX bytes or more", i,
			   off);
	if (pathbuf_add(&ps->pb, ps->prev_off, ps->prev_len - (size_t)strip, (const char *)name,
			(size_t)(nul - name)) < 0)
		return bad(ps->reterr, "entry %zu (byte %zu): paths too long in total", i, off);
	*pp = nul + 1;
	*ret_len = plen;
	return 0;
}

/* v2/v3's path at name: NUL-terminated, padded with 1 to 8 NULs to a
 * multiple of 8 bytes from the entry's start p. *pp past it. */
static int name_v23(struct parser *ps, size_t i, size_t off, const unsigned char *p,
		    const unsigned char *name, const unsigned char **pp, size_t *ret_len)
{
	const unsigned char *nul = memchr(name, '\0', (size_t)(ps->end - name));
	size_t plen, size;

	if (!nul)
		return bad(ps->reterr, "entry %zu (byte %zu): path not NUL-terminated", i, off);
	plen = (size_t)(nul - name);
	size = ((size_t)(name - p) + plen + 8) / 8 * 8;
	if ((size_t)(ps->end - p) < size)
		return bad(ps->reterr, "entry %zu (byte %zu): truncated padding", i, off);
	if (!all_zero(nul, size - (size_t)(name - p) - plen))
		return bad(ps->reterr, "entry %zu (byte %zu): path not NUL-padded", i, off);
	if (pathbuf_add(&ps->pb, 0, 0, (const char *)name, plen) < 0)
		return bad(ps->reterr, "entry %zu (byte %zu): paths too long in total", i, off);
	*pp = p + size;
	*ret_len = plen;
	return 0;
}

/* Entry i at *pp into e (its path at *ret_poff of the path buffer); *pp
 * past it. */
static int parse_entry(struct parser *ps, size_t i, const unsigned char **pp,
		       struct gitindex_entry *e, size_t *ret_poff)
{
	const unsigned char *p = *pp, *name;
	size_t off = (size_t)(p - ps->buf), plen = 0, poff = ps->pb.len;
	uint32_t flags, xflags;
	int r;

	if ((size_t)(ps->end - p) < STAT_LEN + ps->hash_len + 2)
		return bad(ps->reterr, "entry %zu (byte %zu): truncated", i, off);
	e->off = off;
	e->mode = get32(p + 24);
	if (!mode_ok(e->mode))
		return bad(ps->reterr, "entry %zu (byte %zu): mode %o is not one git writes", i,
			   off, (unsigned)e->mode);
	flags = get16(p + STAT_LEN + ps->hash_len);
	e->stage = (flags >> F_STAGE_SHIFT) & 3u;
	name = p + STAT_LEN + ps->hash_len + 2;
	if (flags & F_EXTENDED) {
		if (ps->version < 3)
			return bad(ps->reterr,
				   "entry %zu (byte %zu): extended flags in a version 2 index", i,
				   off);
		if (ps->end - name < 2)
			return bad(ps->reterr, "entry %zu (byte %zu): truncated", i, off);
		xflags = get16(name);
		if (xflags & ~XF_KNOWN)
			return bad(ps->reterr, "entry %zu (byte %zu): unknown extended flags %#x",
				   i, off, (unsigned)xflags);
		e->skip_worktree = (xflags & XF_SKIP_WT) != 0;
		name += 2;
	}
	r = ps->version == 4 ? name_v4(ps, i, off, name, pp, &plen)
			     : name_v23(ps, i, off, p, name, pp, &plen);
	if (r < 0)
		return r;
	if ((flags & F_NAME_MASK) != F_NAME_MASK && (flags & F_NAME_MASK) != plen)
		return bad(ps->reterr, "entry %zu (byte %zu): path length %zu, its flags say %u", i,
			   off, plen, (unsigned)(flags & F_NAME_MASK));
	if ((flags & F_NAME_MASK) == F_NAME_MASK && plen < F_NAME_MASK)
		return bad(ps->reterr,
			   "entry %zu (byte %zu): path length %zu, its flags say 4095 or more", i,
			   off, plen);
	if (!ps->bad_why && (ps->bad_why = path_problem(ps->pb.buf + poff, plen)) != NULL) {
		ps->bad_i = i;
		ps->bad_off = off;
	}
	e->path_len = plen;
	ps->prev_off = poff;
	ps->prev_len = plen;
	*ret_poff = poff;
	return 0;
}

/* The extensions from p to the checksum: each whole; a required one (its
 * signature starts with a lowercase letter) is not understood here. */
static int parse_extensions(struct parser *ps, const unsigned char *p)
{
	uint32_t sz;

	while (p < ps->end) {
		if ((size_t)(ps->end - p) < EXT_HDR)
			return bad(ps->reterr, "extension at byte %zu: truncated",
				   (size_t)(p - ps->buf));
		sz = get32(p + 4);
		if (sz > (size_t)(ps->end - p) - EXT_HDR)
			return bad(ps->reterr, "extension at byte %zu: %u bytes, past the end",
				   (size_t)(p - ps->buf), (unsigned)sz);
		if (!(p[0] >= 'A' && p[0] <= 'Z')) {
			diag_set(
				ps->reterr, NULL, 0, 0,
				"git index: required extension '%c%c%c%c' (a split or sparse index) is not supported",
				PRINTABLE(p[0]), PRINTABLE(p[1]), PRINTABLE(p[2]), PRINTABLE(p[3]));
			return -EOPNOTSUPP;
		}
		p += EXT_HDR + sz;
	}
	return 0;
}

/* The header and the checksum: the version and the entry count. */
static int parse_header(const unsigned char *buf, size_t len, size_t hash_len,
			uint32_t *ret_version, uint32_t *ret_n, struct diag *reterr)
{
	unsigned char want[SHA256_LEN];
	size_t body, min_entry;
	uint32_t v, n;

	if (len < HDR_LEN + hash_len)
		return bad(reterr, "truncated: %zu bytes, less than a header and a checksum", len);
	if (memcmp(buf, "DIRC", 4) != 0)
		return bad(reterr, "no DIRC signature");
	v = get32(buf + 4);
	if (v < 2 || v > 4)
		return bad(reterr, "version %u (only 2, 3 and 4 are known)", (unsigned)v);
	body = len - hash_len;
	if (!all_zero(buf + body, hash_len)) {
		digest(buf, body, hash_len, want);
		if (memcmp(want, buf + body, hash_len) != 0)
			return bad(reterr, "bad checksum (the file is damaged or was changed)");
	}
	n = get32(buf + 8);
	/* the smallest entry: stat data, id, flags, a one-byte path and its
	 * NUL (v4: a one-byte strip count too; v2/v3 padded to 8) */
	min_entry = v == 4 ? STAT_LEN + hash_len + 2 + 3 : (STAT_LEN + hash_len + 2 + 8) & ~7u;
	if (n > GITINDEX_MAX_ENTRIES || (size_t)n > (body - HDR_LEN) / min_entry)
		return bad(reterr, "%u entries cannot fit in %zu bytes", (unsigned)n, len);
	*ret_version = v;
	*ret_n = n;
	return 0;
}

int gitindex_parse(const void *data, size_t len, size_t hash_len, struct gitindex *ret,
		   struct diag *reterr)
{
	struct parser ps = {.buf = data, .hash_len = hash_len, .reterr = reterr};
	struct gitindex ix = GITINDEX_INIT;
	const unsigned char *p;
	size_t *poff = NULL, i;
	uint32_t n = 0;
	int r;

	if (hash_len != SHA1_LEN && hash_len != SHA256_LEN)
		return -EINVAL;
	if ((r = parse_header(data, len, hash_len, &ps.version, &n, reterr)) < 0)
		return r;
	ps.end = ps.buf + len - hash_len;
	ix.version = ps.version;
	ix.hash_len = hash_len;
	ix.n = n;
	ix.e = xcalloc(n ? n : 1, sizeof(*ix.e));
	poff = xcalloc(n ? n : 1, sizeof(*poff));
	p = ps.buf + HDR_LEN;
	for (i = 0; i < n && r >= 0; i++)
		r = parse_entry(&ps, i, &p, &ix.e[i], &poff[i]);
	if (r < 0)
		goto out;
	ix.entries_end = (size_t)(p - ps.buf);
	if ((r = parse_extensions(&ps, p)) < 0)
		goto out;
	if (ps.bad_why) {
		r = bad(reterr, "entry %zu (byte %zu): %s", ps.bad_i, ps.bad_off, ps.bad_why);
		goto out;
	}
	ix.paths = ps.pb.buf;
	ps.pb.buf = NULL;
	for (i = 0; i < n; i++)
		ix.e[i].path = ix.paths + poff[i];
	gitindex_release(ret);
	*ret = ix;
	ix = (struct gitindex)GITINDEX_INIT;
out:
	gitindex_release(&ix);
	free(ps.pb.buf);
	free(poff);
	return r;
}

void gitindex_set_stat(void *buf, const struct gitindex_entry *e, const struct stat *st)
{
	unsigned char *p = (unsigned char *)buf + e->off;

	put32(p + 0, (uint64_t)st->st_ctim.tv_sec);
	put32(p + 4, (uint64_t)st->st_ctim.tv_nsec);
	put32(p + 8, (uint64_t)st->st_mtim.tv_sec);
	put32(p + 12, (uint64_t)st->st_mtim.tv_nsec);
	put32(p + 16, (uint64_t)st->st_dev);
	put32(p + 20, (uint64_t)st->st_ino);
	/* p + 24: git's mode, kept */
	put32(p + 28, (uint64_t)st->st_uid);
	put32(p + 32, (uint64_t)st->st_gid);
	put32(p + 36, (uint64_t)st->st_size);
}

size_t gitindex_finish(void *data, size_t len, const struct gitindex *ix)
{
	unsigned char *buf = data, *p = buf + ix->entries_end, *end = buf + len - ix->hash_len;
	size_t out = ix->entries_end;
	bool skip = all_zero(end, ix->hash_len);

	while (p < end) {
		size_t sz = EXT_HDR + get32(p + 4);

		/* TREE (the cache tree) and REUC (resolve-undo) hold no stat data
		 * nor monitor state: kept; UNTR, FSMN, EOIE, IEOT and any other
		 * optional one dropped (git works without them) */
		if (memcmp(p, "TREE", 4) == 0 || memcmp(p, "REUC", 4) == 0) {
			memmove(buf + out, p, sz);
			out += sz;
		}
		p += sz;
	}
	if (skip)
		memset(buf + out, 0, ix->hash_len);
	else
		digest(buf, out, ix->hash_len, buf + out);
	return out + ix->hash_len;
}
