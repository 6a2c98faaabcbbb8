#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/beneath.h"
#include "util/fsutil.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	(void)snprintf(dir, sizeof(dir), "/tmp/bernstein-fsutil-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	(void)snprintf(cmd, sizeof(cmd), "%s/a/b/c", dir);
	(void)rmdir(cmd);
	(void)snprintf(cmd, sizeof(cmd), "%s/a/b", dir);
	(void)rmdir(cmd);
	(void)snprintf(cmd, sizeof(cmd), "%s/a", dir);
	(void)rmdir(cmd);
	(void)snprintf(cmd, sizeof(cmd), "%s/f", dir);
	(void)unlink(cmd);
	return rmdir(dir);
}

static void test_atomic_write_and_capped_read(void **state)
{
	char path[128], *data = NULL;
	size_t len = 0;
	struct stat st;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(atomic_write_file(path, "hello", 5, 0600), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(read_file_capped(path, 5, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(data, "hello");
	free(data);
	assert_int_equal(read_file_capped(path, 4, &data, &len), -EFBIG);
	assert_int_equal(atomic_write_file(path, "bye", 3, 0644), 0);
	assert_int_equal(read_file_capped(path, 100, &data, &len), 0);
	assert_string_equal(data, "bye");
	free(data);
	assert_int_equal(read_file_capped(dir, 100, &data, &len), -EISDIR);
	assert_int_equal(read_file_capped("/nonexistent/x", 100, &data, &len), -ENOENT);
	/* a temp file that cannot be created leaves nothing behind */
	assert_int_equal(atomic_write_file("/nonexistent/x", "a", 1, 0600), -ENOENT);
}

static void test_mkdir_p(void **state)
{
	char path[128];
	struct stat st;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/a/b/c", dir);
	assert_int_equal(mkdir_p(path, 0700), 0);
	assert_int_equal(mkdir_p(path, 0700), 0); /* idempotent */
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(mkdir_p("", 0700), -EINVAL);
}

static void touch(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	(void)fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_rmtree_beneath(void **state)
{
	char root[256], outside[256], odir[256], p[4096], ofile[256];
	struct stat st;
	size_t len;
	int i;

	(void)state;
	(void)snprintf(root, sizeof(root), "%s/tree", dir);
	(void)snprintf(outside, sizeof(outside), "%s/outside", dir);
	(void)snprintf(odir, sizeof(odir), "%s/outside/keep", dir);
	(void)snprintf(ofile, sizeof(ofile), "%s/outside/keep/f", dir);
	assert_int_equal(mkdir_p(odir, 0700), 0);
	touch(ofile, "precious");

	/* a missing path is fine */
	assert_int_equal(rmtree_beneath(root), 0);
	assert_int_equal(rmtree_beneath(""), -EINVAL);

	assert_int_equal(mkdir_p(root, 0700), 0);
	/* symlinks to a directory and to a file outside: unlinked, not followed */
	(void)snprintf(p, sizeof(p), "%s/link-dir", root);
	assert_int_equal(symlink(odir, p), 0);
	(void)snprintf(p, sizeof(p), "%s/link-file", root);
	assert_int_equal(symlink(ofile, p), 0);
	(void)snprintf(p, sizeof(p), "%s/dangling", root);
	assert_int_equal(symlink("/nonexistent/x", p), 0);
	/* a file in a directory without write permission, and a directory
	 * without any permission */
	(void)snprintf(p, sizeof(p), "%s/ro", root);
	assert_int_equal(mkdir(p, 0700), 0);
	(void)snprintf(p, sizeof(p), "%s/ro/f", root);
	touch(p, "x");
	(void)snprintf(p, sizeof(p), "%s/ro", root);
	assert_int_equal(chmod(p, 0500), 0);
	(void)snprintf(p, sizeof(p), "%s/closed", root);
	assert_int_equal(mkdir(p, 0700), 0);
	(void)snprintf(p, sizeof(p), "%s/closed/f", root);
	touch(p, "x");
	(void)snprintf(p, sizeof(p), "%s/closed", root);
	assert_int_equal(chmod(p, 0), 0);
	/* a deep tree (200 levels), with a symlink to outside at the bottom */
	len = (size_t)snprintf(p, sizeof(p), "%s", root);
	for (i = 0; i < 200; i++) {
		len += (size_t)snprintf(p + len, sizeof(p) - len, "/d");
		assert_int_equal(mkdir(p, 0700), 0);
	}
	(void)snprintf(p + len, sizeof(p) - len, "/up");
	assert_int_equal(symlink(outside, p), 0);
	(void)snprintf(p + len, sizeof(p) - len, "/file");
	touch(p, "deep");

	assert_int_equal(rmtree_beneath(root), 0);
	assert_int_equal(lstat(root, &st), -1);
	assert_int_equal(errno, ENOENT);
	/* nothing outside was touched */
	assert_int_equal(stat(ofile, &st), 0);
	assert_int_equal(st.st_size, 8);
	assert_int_equal(stat(odir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	/* a path that is itself a symlink: the link goes, its target stays */
	assert_int_equal(symlink(odir, root), 0);
	assert_int_equal(rmtree_beneath(root), 0);
	assert_int_equal(lstat(root, &st), -1);
	assert_int_equal(stat(ofile, &st), 0);

	assert_int_equal(unlink(ofile), 0);
	assert_int_equal(rmdir(odir), 0);
	assert_int_equal(rmdir(outside), 0);
}

/* open_regular() and read_file_capped() never block on, read or even open
 * what is not a regular file, and name what it is. */
static void test_open_regular_refuses_other_types(void **state)
{
	char fifo[128], reg[128], link[128], sock[128], *data = NULL;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = 0;
	int fd, s, wfd;

	(void)state;
	(void)snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	(void)snprintf(reg, sizeof(reg), "%s/reg", dir);
	(void)snprintf(link, sizeof(link), "%s/link", dir);
	(void)snprintf(sock, sizeof(sock), "%s/sock", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	touch(reg, "data");
	assert_int_equal(symlink(reg, link), 0);

	/* a FIFO without a writer: no hang, for reading and writing */
	assert_int_equal(read_file_capped(fifo, 100, &data, &len), -ESPIPE);
	assert_int_equal(open_regular(fifo, O_RDONLY, 0), -ESPIPE);
	assert_int_equal(open_regular(fifo, O_WRONLY | O_APPEND, 0), -ESPIPE);
	assert_int_equal(open_regular(fifo, O_WRONLY | O_CREAT, 0600), -ESPIPE);
	/* ... and with a writer holding it open */
	wfd = open(fifo, O_RDWR | O_CLOEXEC);
	assert_true(wfd >= 0);
	assert_int_equal(read_file_capped(fifo, 100, &data, &len), -ESPIPE);
	(void)close(wfd);
	assert_string_equal(file_strerror(-ESPIPE), "is a FIFO (not a regular file)");

	/* devices: /dev/zero would never end, /dev/null is not a file */
	assert_int_equal(read_file_capped("/dev/zero", 100, &data, &len), -ENOTTY);
	assert_int_equal(open_regular("/dev/null", O_RDONLY, 0), -ENOTTY);
	assert_string_equal(file_strerror(-ENOTTY), "is a character device (not a regular file)");

	/* a directory, a socket */
	assert_int_equal(open_regular(dir, O_RDONLY, 0), -EISDIR);
	assert_true(strlen(sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(read_file_capped(sock, 100, &data, &len), -ENXIO);
	assert_string_equal(file_strerror(-ENXIO), "is a socket (not a regular file)");
	(void)close(s);
	assert_string_equal(file_strerror(-ENOENT), strerror(ENOENT));

	/* a symlink to a regular file is followed, unless O_NOFOLLOW */
	assert_int_equal(read_file_capped(link, 100, &data, &len), 0);
	assert_string_equal(data, "data");
	free(data);
	assert_int_equal(open_regular(link, O_RDONLY | O_NOFOLLOW, 0), -ELOOP);

	/* a regular file: opened blocking, close-on-exec */
	fd = open_regular(reg, O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	(void)close(fd);
	/* O_CREAT makes a missing one */
	(void)unlink(reg);
	fd = open_regular(reg, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	(void)close(fd);

	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(unlink(reg), 0);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(unlink(sock), 0);
}

/* The end of a file, however large; what is not a regular file is refused. */
static void test_read_file_tail(void **state)
{
	char path[128], fifo[128], *data = NULL;
	size_t len = 0;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/tail", dir);
	(void)snprintf(fifo, sizeof(fifo), "%s/tail-fifo", dir);
	touch(path, "0123456789");
	assert_int_equal(read_file_tail(path, 4, &data, &len), 0);
	assert_int_equal(len, 4);
	assert_string_equal(data, "6789");
	free(data);
	assert_int_equal(read_file_tail(path, 100, &data, &len), 0);
	assert_string_equal(data, "0123456789");
	free(data);
	touch(path, "");
	assert_int_equal(read_file_tail(path, 4, &data, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(data, "");
	free(data);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(read_file_tail(fifo, 4, &data, &len), -ESPIPE);
	assert_int_equal(read_file_tail("/dev/zero", 4, &data, &len), -ENOTTY);
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(unlink(path), 0);
}

/* A pipe that never ends is cut off at the cap. */
static void test_read_fd_capped_pipe(void **state)
{
	char buf[4096], *data = NULL;
	size_t len = 0;
	int p[2];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(write(p[1], buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_int_equal(close(p[1]), 0);
	assert_int_equal(read_fd_capped(p[0], 100, &data, &len), -EFBIG);
	assert_null(data);
	assert_int_equal(close(p[0]), 0);
}

/* beneath_symlink / beneath_replace: a HOME another party controls (an
 * agent's, between attempts) never leads bernstein's writes elsewhere. */
static void test_beneath_nofollow_writes(void **state)
{
	char top[256], out[256], p[512], q[512], buf[16];
	struct diag d = {0};
	struct stat st;
	ssize_t n;
	int fd;

	(void)state;
	(void)snprintf(top, sizeof(top), "%s/home", dir);
	(void)snprintf(out, sizeof(out), "%s/elsewhere", dir);
	assert_int_equal(mkdir_p(top, 0700), 0);
	assert_int_equal(mkdir_p(out, 0700), 0);

	/* made, with its directories; made again: left as it is */
	assert_int_equal(beneath_symlink(top, "a/b/cred", "/etc/hostname", &d), 0);
	(void)snprintf(p, sizeof(p), "%s/a/b/cred", top);
	n = readlink(p, buf, sizeof(buf) - 1);
	assert_int_equal(n, 13);
	buf[n] = '\0';
	assert_string_equal(buf, "/etc/hostname");
	assert_int_equal(beneath_symlink(top, "a/b/cred", "/x", &d), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* a planted symlinked directory: refused, nothing made behind it */
	(void)snprintf(p, sizeof(p), "%s/evil", top);
	assert_int_equal(symlink(out, p), 0);
	assert_true(beneath_symlink(top, "evil/cred", "/etc/hostname", &d) < 0);
	assert_non_null(strstr(d.msg, "not followed"));
	assert_true(beneath_replace(top, "evil/settings.json", "x", 1, 0600, &d) < 0);
	(void)snprintf(q, sizeof(q), "%s/cred", out);
	assert_int_equal(lstat(q, &st), -1);
	(void)snprintf(q, sizeof(q), "%s/settings.json", out);
	assert_int_equal(lstat(q, &st), -1);
	assert_int_equal(beneath_symlink(top, "a/../cred", "/x", &d), -EPERM);

	/* a file written with its mode; a symlink in its place is replaced,
	 * its target never written */
	assert_int_equal(beneath_replace(top, "c/settings.json", "xy", 2, 0600, &d), 0);
	(void)snprintf(p, sizeof(p), "%s/c/settings.json", top);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 2);
	(void)snprintf(q, sizeof(q), "%s/target", out);
	(void)unlink(p);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(beneath_replace(top, "c/settings.json", "z", 1, 0600, &d), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(lstat(q, &st), -1);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 1);
	(void)close(fd);
	assert_int_equal(rmtree_beneath(top), 0);
	assert_int_equal(rmtree_beneath(out), 0);
}

/* The content of top/rel, or "" when it cannot be read. */
static const char *content(const char *top, const char *rel, char *buf, size_t size)
{
	char p[512];
	ssize_t n;
	int fd;

	(void)snprintf(p, sizeof(p), "%s/%s", top, rel);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, size - 1) : 0;
	if (fd >= 0)
		(void)close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Whether a temporary file of beneath_write() is left in top/rel. */
static bool tmp_left(const char *top, const char *rel)
{
	char p[512];
	struct dirent *e;
	bool found = false;
	DIR *dp;

	(void)snprintf(p, sizeof(p), "%s/%s", top, rel);
	dp = opendir(p);
	assert_non_null(dp);
	while ((e = readdir(dp)))
		found = found || strncmp(e->d_name, ".bernstein-write-", 17) == 0;
	(void)closedir(dp);
	return found;
}

/* beneath_write(): every case of its contract in util/beneath.h. */
static void test_beneath_write(void **state)
{
	char top[256], p[512], q[512], buf[64];
	struct diag d = {0};
	struct stat st;
	mode_t um;
	int tfd;

	(void)state;
	(void)snprintf(top, sizeof(top), "%s/wtop", dir);
	assert_int_equal(mkdir_p(top, 0700), 0);
	tfd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(tfd >= 0);

	/* a new file, its parents made: 0644 less the umask */
	um = umask(022);
	assert_int_equal(beneath_write(tfd, "a/b/new.txt", "one", 3, 0, &d), 0);
	assert_string_equal(content(top, "a/b/new.txt", buf, sizeof(buf)), "one");
	(void)snprintf(p, sizeof(p), "%s/a/b/new.txt", top);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);

	/* an existing file: replaced (a new inode), its mode kept */
	assert_int_equal(chmod(p, 0640), 0);
	assert_int_equal(beneath_write(tfd, "a/b/new.txt", "two!", 4, 0, &d), 0);
	assert_string_equal(content(top, "a/b/new.txt", buf, sizeof(buf)), "two!");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);

	/* a symlink to a file inside: the file is replaced, the link stays */
	(void)snprintf(q, sizeof(q), "%s/link", top);
	assert_int_equal(symlink("a/b/new.txt", q), 0);
	assert_int_equal(beneath_write(tfd, "link", "three", 5, 0, &d), 0);
	assert_string_equal(content(top, "a/b/new.txt", buf, sizeof(buf)), "three");
	assert_int_equal(lstat(q, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* refused, each with its errno and a message naming the path */
	assert_int_equal(beneath_write(tfd, "a/b", "x", 1, 0, &d), -EISDIR);
	assert_non_null(strstr(d.msg, "'a/b' is a directory"));
	(void)snprintf(q, sizeof(q), "%s/fifo", top);
	assert_int_equal(mkfifo(q, 0600), 0);
	assert_int_equal(beneath_write(tfd, "fifo", "x", 1, 0, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "is not a regular file"));
	(void)snprintf(q, sizeof(q), "%s/hard", top);
	assert_int_equal(link(p, q), 0);
	assert_int_equal(beneath_write(tfd, "hard", "x", 1, 0, &d), -EMLINK);
	assert_non_null(strstr(d.msg, "more than one hard link"));
	assert_string_equal(content(top, "a/b/new.txt", buf, sizeof(buf)), "three");
	assert_int_equal(unlink(q), 0);
	(void)snprintf(q, sizeof(q), "%s/dangling", top);
	assert_int_equal(symlink("a/nothing", q), 0);
	assert_int_equal(beneath_write(tfd, "dangling", "x", 1, 0, &d), -ELOOP);
	assert_non_null(strstr(d.msg, "is a symlink to nothing"));
	(void)snprintf(q, sizeof(q), "%s/a/nothing", top);
	assert_int_equal(lstat(q, &st), -1);
	assert_true(beneath_write(tfd, "../escape", "x", 1, 0, &d) < 0);
	(void)snprintf(q, sizeof(q), "%s/escape", dir);
	assert_int_equal(lstat(q, &st), -1);
	assert_int_equal(beneath_write(tfd, ".git/config", "x", 1, BENEATH_NO_GIT, &d), -EPERM);

	/* no temporary file is left behind */
	assert_false(tmp_left(top, "."));
	assert_false(tmp_left(top, "a/b"));
	(void)umask(um);
	(void)close(tfd);
	assert_int_equal(rmtree_beneath(top), 0);
}

/* What fsutil_lines() handed over, one "LINE@END|" each ("-" for a
 * skipped line); stop after `stop` lines when stop > 0. */
struct lines_seen {
	char text[512];
	int n, stop;
};

static bool collect_line(void *ctx, const char *line, size_t len, off_t end)
{
	struct lines_seen *ls = ctx;
	size_t used = strlen(ls->text);

	(void)snprintf(ls->text + used, sizeof(ls->text) - used, "%.*s@%lld|", line ? (int)len : 1,
		       line ? line : "-", (long long)end);
	ls->n++;
	return ls->stop <= 0 || ls->n < ls->stop;
}

static void test_lines(void **state)
{
	char path[] = "/tmp/bernstein-test-lines-XXXXXX";
	int fd = mkstemp(path);
	struct lines_seen ls = {0};
	off_t off = 0;

	(void)state;
	assert_true(fd >= 0);
	/* "ab\n", a line of 12 bytes (over the limit of 8), "cd\n", "tail" */
	assert_int_equal(write(fd, "ab\n0123456789xy\ncd\ntail", 23), 23);
	assert_int_equal(fsutil_lines(fd, &off, 8, false, collect_line, &ls), 0);
	assert_string_equal(ls.text, "ab@3|-@16|cd@19|");
	assert_int_equal(off, 19); /* "tail" has no newline yet: read again */
	/* it grows a newline: handed over from where the last call stopped */
	assert_int_equal(write(fd, "\n", 1), 1);
	memset(&ls, 0, sizeof(ls));
	assert_int_equal(fsutil_lines(fd, &off, 8, false, collect_line, &ls), 0);
	assert_string_equal(ls.text, "tail@24|");
	assert_int_equal(off, 24);
	/* final: the bytes after the last newline are a line too */
	assert_int_equal(write(fd, "end", 3), 3);
	memset(&ls, 0, sizeof(ls));
	assert_int_equal(fsutil_lines(fd, &off, 8, true, collect_line, &ls), 0);
	assert_string_equal(ls.text, "end@27|");
	assert_int_equal(off, 27);
	/* the callback stops it: off after the last line it took */
	off = 0;
	memset(&ls, 0, sizeof(ls));
	ls.stop = 2;
	assert_int_equal(fsutil_lines(fd, &off, 8, true, collect_line, &ls), 0);
	assert_string_equal(ls.text, "ab@3|-@16|");
	assert_int_equal(off, 16);
	assert_int_equal(fsutil_lines(-1, &off, 8, true, collect_line, &ls), -EBADF);
	(void)close(fd);
	(void)unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_atomic_write_and_capped_read),
		cmocka_unit_test(test_mkdir_p),
		cmocka_unit_test(test_rmtree_beneath),
		cmocka_unit_test(test_beneath_nofollow_writes),
		cmocka_unit_test(test_beneath_write),
		cmocka_unit_test(test_open_regular_refuses_other_types),
		cmocka_unit_test(test_read_fd_capped_pipe),
		cmocka_unit_test(test_read_file_tail),
		cmocka_unit_test(test_lines),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
