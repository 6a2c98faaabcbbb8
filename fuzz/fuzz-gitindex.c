/* Fuzz target for orch/gitindex: a git index file, which an unsandboxed
 * agent could have written into the shared base checkout of a reflink
 * checkout (docs/runs.md "Reflink checkouts"). The first byte picks the
 * object id length (odd: SHA-256's 32, else SHA-1's 20); the rest is the
 * file. Properties, besides never crashing:
 *   - any failure is -EBADMSG or -EOPNOTSUPP with a message, *ret untouched;
 *   - success: every entry's path is non-empty, as long as said, NUL-free,
 *     relative, without '.', '..' or empty components, its mode one of git's;
 *   - every entry patched and the file finished, it parses again to the
 *     same entries (the rewritten checksum is right, the extensions kept
 *     are whole). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz.h"
#include "orch/gitindex.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gitindex ix = GITINDEX_INIT, again = GITINDEX_INIT;
	size_t hash_len, i, n;
	unsigned char *buf;
	struct stat st;
	struct diag d;
	int r;

	if (size < 1)
		return 0;
	hash_len = data[0] & 1 ? 32 : 20;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	diag_clear(&d);
	r = gitindex_parse(buf, size - 1, hash_len, &ix, &d);
	if (r < 0) {
		if ((r != -EBADMSG && r != -EOPNOTSUPP) || !d.msg[0] || ix.n || ix.e)
			abort();
		free(buf);
		return 0;
	}
	memset(&st, 0, sizeof(st));
	for (i = 0; i < ix.n; i++) {
		const struct gitindex_entry *e = &ix.e[i];

		if (!e->path_len || strlen(e->path) != e->path_len || e->path[0] == '/' ||
		    strstr(e->path, "//") || e->path[e->path_len - 1] == '/' ||
		    strcmp(e->path, "..") == 0 || strncmp(e->path, "../", 3) == 0 ||
		    strstr(e->path, "/../") || strstr(e->path, "/./") || e->stage > 3 ||
		    (e->mode != GITINDEX_MODE_FILE && e->mode != GITINDEX_MODE_EXEC &&
		     e->mode != GITINDEX_MODE_SYMLINK && e->mode != GITINDEX_MODE_GITLINK))
			abort();
		st.st_ino = i + 1;
		st.st_size = (off_t)i;
		gitindex_set_stat(buf, e, &st);
	}
	n = gitindex_finish(buf, size - 1, &ix);
	if (n > size - 1 || gitindex_parse(buf, n, hash_len, &again, &d) != 0 || again.n != ix.n)
		abort();
	for (i = 0; i < ix.n; i++)
		if (strcmp(ix.e[i].path, again.e[i].path) != 0 || ix.e[i].mode != again.e[i].mode)
			abort();
	gitindex_release(&again);
	gitindex_release(&ix);
	free(buf);
	return 0;
}
