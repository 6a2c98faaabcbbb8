/* git's index read and its stat data patched (see gitindex.h). */
#include "orch/gitindex.h"

#include <errno.h>
#include <limits.h>
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

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		diag_set(reterr, NULL, 0, 0, __VA_ARGS__);                                         \
		r = -EBADMSG;                                                                      \
		goto out;                                                                          \
	} while (0)

int gitindex_parse(const void *data, size_t len, size_t hash_len, struct gitindex *ret,
		   struct diag *reterr)
{
	const unsigned char *buf = data, *p, *end, *name, *nul;
	struct pathbuf pb = {0};
	struct gitindex ix = GITINDEX_INIT;
	size_t *poff = NULL, i, min_entry, prev_off = 0, prev_len = 0, body;
	unsigned char want[SHA256_LEN];
	const char *bad_why = NULL;
	size_t bad_i = 0, bad_off = 0;
	uint32_t n, flags, xflags;
	uint64_t strip;
	int r = 0;

	if (hash_len != SHA1_LEN && hash_len != SHA256_LEN)
		return -EINVAL;
	if (len < HDR_LEN + hash_len)
		FAIL("git index: truncated: %zu bytes, less than a header and a checksum", len);
	if (memcmp(buf, "DIRC", 4) != 0)
		FAIL("git index: no DIRC signature");
	ix.version = get32(buf + 4);
	if (ix.version < 2 || ix.version > 4)
		FAIL("git index: version %u (only 2, 3 and 4 are known)", (unsigned)ix.version);
	body = len - hash_len;
	if (!all_zero(buf + body, hash_len)) {
		digest(buf, body, hash_len, want);
		if (memcmp(want, buf + body, hash_len) != 0)
			FAIL("git index: bad checksum (the file is damaged or was changed)");
	}
	n = get32(buf + 8);
	/* the smallest entry: stat data, id, flags, a one-byte path and its
	 * NUL (v4: a one-byte strip count too; v2/v3 padded to 8) */
	min_entry = ix.version == 4 ? STAT_LEN + hash_len + 2 + 3 : (STAT_LEN + hash_len + 2 + 8) & ~7u;
	if (n > GITINDEX_MAX_ENTRIES || (size_t)n > (body - HDR_LEN) / min_entry)
		FAIL("git index: %u entries cannot fit in %zu bytes", (unsigned)n, len);
	ix.hash_len = hash_len;
	ix.n = n;
	ix.e = xcalloc(n ? n : 1, sizeof(*ix.e));
	poff = xcalloc(n ? n : 1, sizeof(*poff));
	p = buf + HDR_LEN;
	end = buf + body;
	for (i = 0; i < n; i++) {
		struct gitindex_entry *e = &ix.e[i];
		size_t off = (size_t)(p - buf), plen;

		if ((size_t)(end - p) < STAT_LEN + hash_len + 2)
			FAIL("git index: entry %zu (byte %zu): truncated", i, off);
		e->off = off;
		e->mode = get32(p + 24);
		if (!mode_ok(e->mode))
			FAIL("git index: entry %zu (byte %zu): mode %o is not one git writes", i, off,
			     (unsigned)e->mode);
		flags = get16(p + STAT_LEN + hash_len);
		e->stage = (flags >> F_STAGE_SHIFT) & 3u;
		name = p + STAT_LEN + hash_len + 2;
		if (flags & F_EXTENDED) {
			if (ix.version < 3)
				FAIL("git index: entry %zu (byte %zu): extended flags in a version 2 index",
				     i, off);
			if (end - name < 2)
				FAIL("git index: entry %zu (byte %zu): truncated", i, off);
			xflags = get16(name);
			if (xflags & ~XF_KNOWN)
				FAIL("git index: entry %zu (byte %zu): unknown extended flags %#x", i,
				     off, (unsigned)xflags);
			e->skip_worktree = (xflags & XF_SKIP_WT) != 0;
			name += 2;
		}
		if (ix.version == 4) {
			if (varint(&name, end, &strip) < 0)
				FAIL("git index: entry %zu (byte %zu): truncated prefix length", i, off);
			if (strip > prev_len)
				FAIL("git index: entry %zu (byte %zu): strips %llu bytes of a %zu-byte path",
				     i, off, (unsigned long long)strip, prev_len);
			nul = memchr(name, '\0', (size_t)(end - name));
			if (!nul)
				FAIL("git index: entry %zu (byte %zu): path not NUL-terminated", i, off);
			plen = prev_len - (size_t)strip + (size_t)(nul - name);
			if (plen >= PATH_MAX)
				FAIL("git index: entry %zu (byte %zu): a path of PATH_MAX bytes or more",
				     i, off);
			poff[i] = pb.len;
			if (pathbuf_add(&pb, prev_off, prev_len - (size_t)strip, (const char *)name,
					(size_t)(nul - name)) < 0)
				FAIL("git index: entry %zu (byte %zu): paths too long in total", i, off);
			p = nul + 1;
		} else {
			nul = memchr(name, '\0', (size_t)(end - name));
			if (!nul)
				FAIL("git index: entry %zu (byte %zu): path not NUL-terminated", i, off);
			plen = (size_t)(nul - name);
			/* padded with 1 to 8 NULs to a multiple of 8 */
			if ((size_t)(end - buf) - off <
			    ((size_t)(name - p) + plen + 8) / 8 * 8)
				FAIL("git index: entry %zu (byte %zu): truncated padding", i, off);
			if (!all_zero(nul, ((size_t)(name - p) + plen + 8) / 8 * 8 - (size_t)(name - p) - plen))
				FAIL("git index: entry %zu (byte %zu): path not NUL-padded", i, off);
			poff[i] = pb.len;
			if (pathbuf_add(&pb, 0, 0, (const char *)name, plen) < 0)
				FAIL("git index: entry %zu (byte %zu): paths too long in total", i, off);
			p += ((size_t)(name - p) + plen + 8) / 8 * 8;
		}
		if ((flags & F_NAME_MASK) != F_NAME_MASK && (flags & F_NAME_MASK) != plen)
			FAIL("git index: entry %zu (byte %zu): path length %zu, its flags say %u", i,
			     off, plen, (unsigned)(flags & F_NAME_MASK));
		if ((flags & F_NAME_MASK) == F_NAME_MASK && plen < F_NAME_MASK)
			FAIL("git index: entry %zu (byte %zu): path length %zu, its flags say 4095 or more",
			     i, off, plen);
		/* said after the extensions: a split index's entries have
		 * empty paths, and its "link" is what to report */
		if (!bad_why && (bad_why = path_problem(pb.buf + poff[i], plen)) != NULL) {
			bad_i = i;
			bad_off = off;
		}
		e->path_len = plen;
		prev_off = poff[i];
		prev_len = plen;
	}
	ix.entries_end = (size_t)(p - buf);
	/* the extensions: each within the body; a required one (its
	 * signature starts with a lowercase letter) is not understood here */
	while (p < end) {
		uint32_t sz;

		if ((size_t)(end - p) < EXT_HDR)
			FAIL("git index: extension at byte %zu: truncated", (size_t)(p - buf));
		sz = get32(p + 4);
		if (sz > (size_t)(end - p) - EXT_HDR)
			FAIL("git index: extension at byte %zu: %u bytes, past the end",
			     (size_t)(p - buf), (unsigned)sz);
		if (!(p[0] >= 'A' && p[0] <= 'Z')) {
			diag_set(reterr, NULL, 0, 0,
				 "git index: required extension '%c%c%c%c' (a split or sparse index) is not supported",
				 p[0] >= 0x20 && p[0] < 0x7f ? p[0] : '?',
				 p[1] >= 0x20 && p[1] < 0x7f ? p[1] : '?',
				 p[2] >= 0x20 && p[2] < 0x7f ? p[2] : '?',
				 p[3] >= 0x20 && p[3] < 0x7f ? p[3] : '?');
			r = -EOPNOTSUPP;
			goto out;
		}
		p += EXT_HDR + sz;
	}
	if (bad_why)
		FAIL("git index: entry %zu (byte %zu): %s", bad_i, bad_off, bad_why);
	ix.paths = pb.buf;
	pb.buf = NULL;
	for (i = 0; i < n; i++)
		ix.e[i].path = ix.paths + poff[i];
	gitindex_release(ret);
	*ret = ix;
	ix = (struct gitindex)GITINDEX_INIT;
out:
	gitindex_release(&ix);
	free(pb.buf);
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
