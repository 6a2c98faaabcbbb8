/* orch/gitindex: git's index read and its stat data patched, against
 * indexes real git wrote (versions 2, 3 and 4, and a split index) in a
 * mkdtemp repository, and hand-made hostile ones: truncated at every
 * length, an entry count that cannot fit, a bad checksum, a path not
 * NUL-terminated or NUL-padded, paths that climb out or name .git, an
 * unknown mode. A patched index is read back by git (`git ls-files
 * --debug`: git checks the checksum) with the stat data written. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "orch/gitindex.h"
#include "util/fsutil.h"
#include "util/hash.h"

#define GITC "git -c user.name=t -c user.email=t@example.invalid"

static char dir[64];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
}

/* the repository's index after `git update-index --index-version v` */
static char *repo_index(int v, size_t *len)
{
	char p[128], *text = NULL;

	sh("cd %s && git update-index --index-version %d", dir, v);
	(void)snprintf(p, sizeof(p), "%s/.git/index", dir);
	assert_int_equal(read_file_capped(p, 1u << 20, &text, len), 0);
	return text;
}

static int setup(void **state)
{
	(void)state;
	(void)snprintf(dir, sizeof(dir), "/tmp/test-gitindex.XXXXXX");
	assert_non_null(mkdtemp(dir));
	setenv("HOME", dir, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	sh("cd %s && git init -q -b main . && mkdir -p src/deep/er src/deep/es && "
	   "echo a > a.txt && echo b > src/deep/er/b.c && echo c > src/deep/er/c.c && "
	   "echo d > src/deep/es/d.c && printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && "
	   "ln -s /etc/passwd link && " GITC " add -A && " GITC " commit -q -m base",
	   dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf %s", dir);
	return 0;
}

static void rehash(unsigned char *buf, size_t len)
{
	hash_sha1(buf, len - SHA1_LEN, buf + len - SHA1_LEN);
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* the six entries of the repository, in git's order */
static void check_entries(const struct gitindex *ix)
{
	static const char *const paths[] = {
		"a.txt", "link", "run.sh", "src/deep/er/b.c", "src/deep/er/c.c", "src/deep/es/d.c"};
	static const uint32_t modes[] = {GITINDEX_MODE_FILE, GITINDEX_MODE_SYMLINK,
					 GITINDEX_MODE_EXEC, GITINDEX_MODE_FILE,
					 GITINDEX_MODE_FILE, GITINDEX_MODE_FILE};
	size_t i;

	assert_int_equal(ix->n, 6);
	for (i = 0; i < 6; i++) {
		assert_string_equal(ix->e[i].path, paths[i]);
		assert_int_equal(ix->e[i].path_len, strlen(paths[i]));
		assert_int_equal(ix->e[i].mode, modes[i]);
		assert_int_equal(ix->e[i].stage, 0);
	}
}

/* versions 2, 3 and 4 parsed; entry 3 patched, read back by git */
static void test_versions(void **state)
{
	int v;

	(void)state;
	for (v = 2; v <= 4; v++) {
		struct gitindex ix = GITINDEX_INIT;
		struct stat st;
		struct diag d;
		char p[128], *text, *out = NULL;
		size_t len, n;

		/* git writes version 3 only where an entry has extended flags */
		if (v == 3)
			sh("cd %s && git update-index --skip-worktree src/deep/es/d.c", dir);
		text = repo_index(v, &len);
		diag_clear(&d);
		assert_int_equal(gitindex_parse(text, len, SHA1_LEN, &ix, &d), 0);
		assert_int_equal(ix.version, (uint32_t)v);
		check_entries(&ix);
		assert_int_equal(ix.e[5].skip_worktree, v == 3);
		memset(&st, 0, sizeof(st));
		st.st_ctim.tv_sec = 1111111111;
		st.st_ctim.tv_nsec = 222;
		st.st_mtim.tv_sec = 1222222222;
		st.st_mtim.tv_nsec = 333;
		st.st_dev = 77;
		st.st_ino = 4242;
		st.st_uid = 5;
		st.st_gid = 6;
		st.st_size = 2;
		gitindex_set_stat(text, &ix.e[3], &st);
		n = gitindex_finish(text, len, &ix);
		assert_true(n <= len);
		(void)snprintf(p, sizeof(p), "%s/.git/index", dir);
		assert_int_equal(atomic_write_file(p, text, n, 0644), 0);
		sh("cd %s && git ls-files --debug src/deep/er/b.c > debug.txt", dir);
		(void)snprintf(p, sizeof(p), "%s/debug.txt", dir);
		assert_int_equal(read_file_capped(p, 4096, &out, &len), 0);
		assert_non_null(strstr(out, "ctime: 1111111111:222"));
		assert_non_null(strstr(out, "mtime: 1222222222:333"));
		assert_non_null(strstr(out, "dev: 77\tino: 4242"));
		assert_non_null(strstr(out, "uid: 5\tgid: 6"));
		free(out);
		/* git refreshes it back: the tree is as it was */
		sh("cd %s && rm debug.txt && git update-index --no-skip-worktree src/deep/es/d.c && "
		   "git update-index -q --refresh && "
		   "test -z \"$(git status --porcelain)\"",
		   dir);
		free(text);
		gitindex_release(&ix);
	}
}

/* every shorter prefix of a real index refused, precisely, never a crash */
static void test_truncated(void **state)
{
	int v;

	(void)state;
	for (v = 2; v <= 4; v++) {
		struct gitindex ix = GITINDEX_INIT;
		size_t len, i, whole;
		char *text = repo_index(v, &len);
		unsigned char *copy = malloc(len);
		struct diag d;
		int r;

		assert_int_equal(gitindex_parse(text, len, SHA1_LEN, &ix, NULL), 0);
		/* the entries and a checksum without the extensions: whole */
		whole = ix.entries_end + SHA1_LEN;
		assert_true(whole < len);
		for (i = 0; i < len; i++) {
			memcpy(copy, text, i);
			/* with a checksum that fits the prefix, or the parse
			 * would stop at the checksum */
			if (i >= 12 + SHA1_LEN)
				rehash(copy, i);
			diag_clear(&d);
			r = gitindex_parse(copy, i, SHA1_LEN, &ix, &d);
			if (i == whole) {
				assert_int_equal(r, 0);
				continue;
			}
			assert_int_equal(r, -EBADMSG);
			assert_true(d.msg[0] != '\0');
		}
		gitindex_release(&ix);
		free(copy);
		free(text);
	}
}

static void expect_refused(unsigned char *buf, size_t len, const char *msg)
{
	struct gitindex ix = GITINDEX_INIT;
	struct diag d;

	diag_clear(&d);
	assert_int_equal(gitindex_parse(buf, len, SHA1_LEN, &ix, &d), -EBADMSG);
	if (!strstr(d.msg, msg))
		fail_msg("'%s' does not say '%s'", d.msg, msg);
}

static void test_hostile(void **state)
{
	size_t len;
	char *text = repo_index(2, &len);
	unsigned char *b = malloc(len);
	size_t first = 12 + 62; /* the first path (a.txt) */

	(void)state;
	/* a count that cannot fit */
	memcpy(b, text, len);
	put32(b + 8, 0xffffffffu);
	rehash(b, len);
	expect_refused(b, len, "cannot fit");
	/* a bad checksum */
	memcpy(b, text, len);
	b[first] ^= 1;
	expect_refused(b, len, "bad checksum");
	/* a path that climbs out (same length as a.txt) */
	memcpy(b, text, len);
	memcpy(b + first, "../ab", 5);
	rehash(b, len);
	expect_refused(b, len, "'..'");
	/* .git */
	memcpy(b, text, len);
	memcpy(b + first, ".git/", 5);
	rehash(b, len);
	expect_refused(b, len, ".git");
	memcpy(b, text, len);
	memcpy(b + first, "/etc/", 5);
	rehash(b, len);
	expect_refused(b, len, "absolute");
	/* not NUL-padded */
	memcpy(b, text, len);
	b[first + 5] = 'x';
	rehash(b, len);
	expect_refused(b, len, "path length");
	memcpy(b, text, len);
	b[first + 6] = 'x';
	rehash(b, len);
	expect_refused(b, len, "NUL-padded");
	/* a mode git never writes */
	memcpy(b, text, len);
	put32(b + 12 + 24, 0100777);
	rehash(b, len);
	expect_refused(b, len, "mode");
	/* extended flags in a version 2 index */
	memcpy(b, text, len);
	b[12 + 60] |= 0x40;
	rehash(b, len);
	expect_refused(b, len, "extended flags");
	/* a version git never wrote */
	memcpy(b, text, len);
	put32(b + 4, 5);
	rehash(b, len);
	expect_refused(b, len, "version 5");
	free(b);
	free(text);
}

/* a path not NUL-terminated before the checksum: one entry, hand-made */
static void test_unterminated(void **state)
{
	unsigned char b[12 + 62 + 8 + SHA1_LEN];

	(void)state;
	memset(b, 0, sizeof(b));
	memcpy(b, "DIRC", 4);
	put32(b + 4, 2);
	put32(b + 8, 1);
	put32(b + 12 + 24, GITINDEX_MODE_FILE);
	b[12 + 60] = 0;
	b[12 + 61] = 8;
	memset(b + 12 + 62, 'a', 8);
	rehash(b, sizeof(b));
	expect_refused(b, sizeof(b), "not NUL-terminated");
	/* v4: a prefix strip longer than the previous path */
	put32(b + 4, 4);
	b[12 + 61] = 1;
	b[12 + 62] = 3; /* strip 3 of nothing */
	b[12 + 63] = 'a';
	b[12 + 64] = 0;
	rehash(b, sizeof(b));
	expect_refused(b, sizeof(b), "strips");
}

/* a split index: not driven here (-EOPNOTSUPP); index.skipHash: a zero
 * checksum is accepted and written as zeros */
static void test_split_and_skiphash(void **state)
{
	struct gitindex ix = GITINDEX_INIT;
	struct diag d;
	size_t len, n;
	char *text;

	(void)state;
	sh("cd %s && git update-index --split-index", dir);
	text = repo_index(2, &len);
	diag_clear(&d);
	assert_int_equal(gitindex_parse(text, len, SHA1_LEN, &ix, &d), -EOPNOTSUPP);
	assert_non_null(strstr(d.msg, "link"));
	free(text);
	sh("cd %s && git update-index --no-split-index", dir);
	text = repo_index(2, &len);
	memset(text + len - SHA1_LEN, 0, SHA1_LEN);
	assert_int_equal(gitindex_parse(text, len, SHA1_LEN, &ix, NULL), 0);
	n = gitindex_finish(text, len, &ix);
	assert_int_equal(n, len);
	assert_true(text[n - 1] == 0 && text[n - SHA1_LEN] == 0);
	gitindex_release(&ix);
	free(text);
	assert_int_equal(gitindex_parse("", 0, 7, &ix, NULL), -EINVAL);
}

/* a SHA-256 repository's index: 32-byte ids and a SHA-256 checksum */
static void test_sha256(void **state)
{
	struct gitindex ix = GITINDEX_INIT;
	char p[160], *text = NULL;
	struct stat st;
	struct diag d;
	size_t len, n;

	(void)state;
	sh("cd %s && rm -rf s256 && git init -q --object-format=sha256 s256 && cd s256 && "
	   "echo a > a.txt && mkdir d && echo b > d/b.txt && git add -A",
	   dir);
	(void)snprintf(p, sizeof(p), "%s/s256/.git/index", dir);
	assert_int_equal(read_file_capped(p, 1u << 20, &text, &len), 0);
	diag_clear(&d);
	/* read as SHA-1 it does not check out */
	assert_int_equal(gitindex_parse(text, len, SHA1_LEN, &ix, &d), -EBADMSG);
	assert_int_equal(gitindex_parse(text, len, SHA256_LEN, &ix, &d), 0);
	assert_int_equal(ix.n, 2);
	assert_string_equal(ix.e[1].path, "d/b.txt");
	memset(&st, 0, sizeof(st));
	st.st_ino = 777;
	gitindex_set_stat(text, &ix.e[1], &st);
	n = gitindex_finish(text, len, &ix);
	assert_int_equal(atomic_write_file(p, text, n, 0644), 0);
	sh("cd %s/s256 && git ls-files --debug d/b.txt | grep -q 'ino: 777'", dir);
	gitindex_release(&ix);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_unterminated),
		cmocka_unit_test(test_split_and_skiphash),
		cmocka_unit_test(test_sha256),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
