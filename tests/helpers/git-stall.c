/* git-stall: an LD_PRELOAD library that stops a real git in the middle of
 * a step, so a test can kill -9 bernstein (and the git) there and look at
 * what a crash at that point leaves behind: half-made worktrees, lock files
 * git created and never committed, a checkout half written.
 *
 * git is stopped when it is about to
 *   rename:GLOB   rename a file whose source path matches GLOB (git commits
 *                 every lock file, index.lock or refs/heads/B.lock, by a
 *                 rename: the lock is written and still there),
 *   unlink:GLOB   unlink a path matching GLOB (a ref deletion, a worktree's
 *                 files being removed), or
 *   create:GLOB   create a file matching GLOB (open with O_CREAT: a file of
 *                 a checkout, written in index order),
 * GLOB an fnmatch(3) pattern without FNM_PATHNAME ('*' matches '/') against
 * the path as git passes it. From the environment:
 *   GIT_STALL_AT      the point, "rename:*index.lock"
 *   GIT_STALL_SIGNAL  a file the stalled process appends "PID\n" to
 *   GIT_STALL_ONCE    a file created (O_EXCL) when it stalls: once it exists,
 *                     no process stalls again (so a run is stopped once)
 * Stopped means: the pid is written, then the process sleeps until it is
 * killed. Used by the crash tests t0107 and t0108 through a `git`
 * wrapper on PATH (tests/integration/stall-lib.sh). */
/* open and open64 are both defined here: no header may rename one to the other */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef int open_fn(const char *, int, ...);
typedef int openat_fn(int, const char *, int, ...);
typedef int rename_fn(const char *, const char *);
typedef int renameat_fn(int, const char *, int, const char *);
typedef int unlink_fn(const char *);
typedef int unlinkat_fn(int, const char *, int);

/* The next definition of a libc function (ISO C has no cast from void * to
 * a function pointer: the bytes are copied, as POSIX dlsym() intends). */
#define NEXT(fn, name)                                                                             \
	do {                                                                                       \
		void *p_ = dlsym(RTLD_NEXT, name);                                                 \
		memcpy(&(fn), &p_, sizeof(fn));                                                    \
	} while (0)

static int matches(const char *kind, const char *path)
{
	const char *at = getenv("GIT_STALL_AT");
	size_t n = strlen(kind);

	if (!at || !path || strncmp(at, kind, n) != 0 || at[n] != ':')
		return 0;
	return fnmatch(at + n + 1, path, 0) == 0;
}

static void stall(void)
{
	open_fn *real_open;
	const char *once = getenv("GIT_STALL_ONCE");
	const char *sig = getenv("GIT_STALL_SIGNAL");
	char line[32];
	int fd, n;

	NEXT(real_open, "open");
	if (!real_open)
		return;
	if (once) {
		fd = real_open(once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return; /* stopped once already */
		(void)close(fd);
	}
	if (sig) {
		fd = real_open(sig, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
			if (n > 0)
				(void)!write(fd, line, (size_t)n);
			(void)close(fd);
		}
	}
	for (;;)
		(void)pause();
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	open_fn *real;
	va_list ap;
	mode_t mode;

	NEXT(real, "open");
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if ((flags & O_CREAT) && matches("create", path))
		stall();
	return real ? real(path, flags, mode) : (errno = ENOSYS, -1);
}

int open64(const char *path, int flags, ...)
{
	open_fn *real;
	va_list ap;
	mode_t mode;

	NEXT(real, "open64");
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if ((flags & O_CREAT) && matches("create", path))
		stall();
	return real ? real(path, flags, mode) : (errno = ENOSYS, -1);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	openat_fn *real;
	va_list ap;
	mode_t mode;

	NEXT(real, "openat");
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if ((flags & O_CREAT) && matches("create", path))
		stall();
	return real ? real(dirfd, path, flags, mode) : (errno = ENOSYS, -1);
}

int rename(const char *from, const char *to)
{
	rename_fn *real;

	NEXT(real, "rename");
	if (matches("rename", from))
		stall();
	return real ? real(from, to) : (errno = ENOSYS, -1);
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	renameat_fn *real;

	NEXT(real, "renameat");
	if (matches("rename", from))
		stall();
	return real ? real(fromfd, from, tofd, to) : (errno = ENOSYS, -1);
}

int unlink(const char *path)
{
	unlink_fn *real;

	NEXT(real, "unlink");
	if (matches("unlink", path))
		stall();
	return real ? real(path) : (errno = ENOSYS, -1);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	unlinkat_fn *real;

	NEXT(real, "unlinkat");
	if (matches("unlink", path))
		stall();
	return real ? real(dirfd, path, flags) : (errno = ENOSYS, -1);
}
