/* File-system helpers: capped reads, atomic writes, mkdir -p, fd ownership. */
#ifndef BERNSTEIN_UTIL_FSUTIL_H
#define BERNSTEIN_UTIL_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Open path only if it is a regular file, never blocking on it: what the
 * path names is checked (stat, or lstat with O_NOFOLLOW) before it is opened,
 * so a device is never opened, then it is opened with flags | O_NONBLOCK |
 * O_NOCTTY | O_CLOEXEC (mode for O_CREAT), checked again with fstat (it may
 * have been swapped meanwhile), and O_NONBLOCK is cleared. flags: O_RDONLY,
 * O_WRONLY or O_RDWR plus O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW, O_TRUNC.
 * A FIFO would block the open or every read, /dev/zero never ends, and
 * opening a device can have effects of its own: every file bernstein reads
 * that a user or an agent names or can replace goes through here.
 * Returns the fd or a negative errno; what is not a regular file is
 *   -EISDIR a directory, -ESPIPE a FIFO, -ENXIO a socket,
 *   -ENOTTY a character device, -ENOTBLK a block device
 * (file_strerror() says so in words), -ELOOP a symlink with O_NOFOLLOW. */
int open_regular(const char *path, int flags, mode_t mode);

/* The lines of fd from *off to its end, one at a time: fn(ctx, line, len,
 * end) for each line ended by a newline (line without it; NULL when it was
 * longer than max bytes, skipped; end the offset after its newline); with
 * final, the bytes after the last newline count as a line too. fn returns
 * false to stop after that line. *off ends after the last line handed over
 * (a line not yet ended is read again next time). 0 or -errno. */
typedef bool fsutil_line_fn(void *ctx, const char *line, size_t len, off_t end);
int fsutil_lines(int fd, off_t *off, size_t max, bool final, fsutil_line_fn *fn, void *ctx);
/* 0 for a regular file's st_mode, else open_regular()'s error for what it
 * is (-ELOOP a symbolic link, when lstat said so). */
int file_type_error(mode_t mode);
/* Whether r is one of those "not a regular file" errors (not -ELOOP, which
 * following a symlink loop gives too). */
bool is_file_type_error(int r);
/* 0 when path is a regular file (following symlinks) or does not exist,
 * else open_regular()'s error for what it is: for files another library
 * opens itself (SQLite's database, -wal, -shm and -journal files). */
int regular_or_absent(const char *path);
/* What a negative errno of open_regular() or read_file_capped() means, for a
 * message: "is a FIFO (not a regular file)" and so on, else strerror(-r). */
const char *file_strerror(int r);

/* Read a whole regular file of at most max bytes (opened with
 * open_regular()). Returns 0, -EFBIG when the file is larger than max, the
 * errors of open_regular() for what is not a regular file, or -errno.
 * *ret is NUL-terminated and owned by the caller (free()). */
int read_file_capped(const char *path, size_t max, char **ret, size_t *ret_len);
/* The last max bytes (or all, when smaller) of a regular file, opened with
 * open_regular(): for logs that may be large, of which only the end
 * matters. Errors as read_file_capped(), never -EFBIG. */
int read_file_tail(const char *path, size_t max, char **ret, size_t *ret_len);
/* Same, for an already open fd (not closed): reads until EOF, at most max
 * bytes (-EFBIG beyond), so a pipe that never ends is cut off. */
int read_fd_capped(int fd, size_t max, char **ret, size_t *ret_len);

/* Write data to path atomically: a temp file in the same directory, fsync,
 * rename, fsync of the directory. Readers see the old or the new content,
 * never a partial one; on failure the old file is untouched. */
int atomic_write_file(const char *path, const void *data, size_t len, mode_t mode);
/* The same without the fsyncs: readers still see the old or the new content,
 * and a crash of the process cannot leave a partial file, but a power loss
 * may lose the write. For files that are evidence, not state (plan.json). */
int atomic_replace_file(const char *path, const void *data, size_t len, mode_t mode);

/* mkdir -p with the given mode for created directories. */
int mkdir_p(const char *path, mode_t mode);

/* Remove path and everything beneath it without ever following a symlink:
 * every directory is opened with O_NOFOLLOW | O_DIRECTORY relative to its
 * parent (openat), every entry removed with unlinkat, so a symlink planted
 * in the tree (to a file or directory outside it) is unlinked, not
 * followed. A directory without write or search permission is given u+rwx
 * first (it is about to go). A missing path is 0; a path that is itself a
 * symlink or a file is unlinked. Depth is limited by the open-file limit
 * (one descriptor per level). Returns 0 or the first negative errno (what
 * could be removed is removed). */
int rmtree_beneath(const char *path);

/* fsync a file or, with directory, a directory (so a rename or create in it
 * is durable). */
int fsync_path(const char *path, bool directory);

/* The directory part of path into buf: "." without a slash, "/" for "/x". */
void path_dirname(const char *path, char *buf, size_t size);

/* Close *fd if >= 0 and set it to -1. */
void close_fdp(int *fd);

/* Write all of buf to fd, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t len);

#endif
