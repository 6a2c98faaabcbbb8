/* Confined file access beneath a directory: the primitives the built-in
 * runner's file tools (runner/tools.h) and the mock agent (orch/mock.h) share.
 *
 * A path is relative to a directory fd. beneath_check_relpath() refuses,
 * before any system call, an empty path, a NUL byte, an absolute path, a path
 * of PATH_MAX bytes or more, a component longer than NAME_MAX and a path whose
 * '..' components climb above the top. beneath_open() then opens the rest with
 * openat2(2) and RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS: the kernel refuses,
 * atomically during the lookup, any resolution that leaves the directory (an
 * absolute symlink, a relative symlink that climbs out, a symlinked parent,
 * /proc magic links), so a symlink swapped in between a check and the use
 * cannot escape. Without openat2 (Linux < 5.6, or a seccomp filter that hides
 * it) the functions fail closed with -ENOSYS.
 *
 * Some names are refused besides escapes (enum beneath_flags): an agent
 * whose only file access is this code must not reach git's metadata (a
 * written .git/config is code that bernstein's own git runs) nor bernstein's
 * own state. Such a name is refused lexically, in every component of the path
 * given, and on the real path: whatever is opened (or the parent a new file is
 * created in) is checked again through the kernel's name of the open fd
 * (/proc/self/fd), so a symlink 'x -> .git' does not lead to x/config. A
 * system without /proc makes these checks fail closed.
 *
 * Messages say "the run workdir" for the directory (both users confine to a
 * task's worktree). */
#ifndef BERNSTEIN_UTIL_BENEATH_H
#define BERNSTEIN_UTIL_BENEATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/diag.h"

/* What is refused besides paths that leave the directory. */
enum beneath_flags {
	BENEATH_NO_GIT = 1 << 0,       /* a component git may take for .git (beneath_is_git_name) */
	BENEATH_NO_BERNSTEIN = 1 << 1, /* a component named .bernstein: bernstein's own state */
};

/* Is the component name (len bytes) one that git, on some filesystem, takes
 * for ".git"? ".git" in any case, also with the code points HFS+ ignores
 * (U+200C..U+200F, U+202A..U+202E, U+206A..U+206F, U+FEFF), with trailing
 * dots or spaces or a ':stream' suffix (NTFS, FAT), and the 8.3 name
 * "git~1". Wider than git's own checks on purpose: such a name is refused,
 * never a .git that slips through. */
bool beneath_is_git_name(const char *name, size_t len);

/* The same for ".bernstein" (and its 8.3 name "bernst~1"). */
bool beneath_is_bernstein_name(const char *name, size_t len);

/* -EPERM with the reason when a component of path (len bytes) is a name
 * bflags refuses, else 0. Lexical only. */
int beneath_check_names(const char *path, size_t len, unsigned bflags, struct diag *reterr);

/* The real path of the open fd below the directory dirfd, as the kernel
 * names them (/proc/self/fd), checked against bflags: 0, -EPERM (a refused
 * name, or /proc cannot tell: fail closed) or -EXDEV (fd is not below
 * dirfd). shown is the path named in messages. */
int beneath_check_fd(int dirfd, int fd, const char *shown, unsigned bflags, struct diag *reterr);

/* Lexical checks of a relative path (len bytes, may contain NUL): 0, or
 * -EINVAL (empty, NUL), -EPERM (absolute, or '..' above the top),
 * -ENAMETOOLONG. */
int beneath_check_relpath(const char *path, size_t len, struct diag *reterr);

/* openat2(dirfd, path, flags | O_CLOEXEC, mode) with RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS after beneath_check_relpath(). Returns the fd or a
 * negative errno (-EXDEV: the path escapes; -ELOOP: a symlink loop or a
 * magic link; -ENOSYS: no openat2).
 *
 * With bflags, the names are checked (beneath_check_names) and so is the
 * real path of what was opened (beneath_check_fd), -EPERM when refused. With
 * O_CREAT, an existing file is opened without creating and checked; a new one
 * is created in its parent directory, opened and checked first, and never
 * through a symlink (a dangling symlink is -ELOOP). O_TRUNC is not allowed
 * with bflags (-EINVAL). */
int beneath_open(int dirfd, const char *path, size_t len, int flags, mode_t mode, unsigned bflags,
		 struct diag *reterr);

/* mkdir -p of the parent directories of path (a NUL-terminated string), each
 * created relative to a directory opened beneath dirfd (so a swapped symlink
 * cannot redirect it), each directory on the way checked against bflags.
 * Directories are created 0755. */
int beneath_mkdirs(int dirfd, const char *path, unsigned bflags, struct diag *reterr);

/* Remove the file (not a directory) path beneath dirfd: its parent is opened
 * beneath dirfd and the last component unlinked there, so a symlink is
 * removed itself, never its target. The names and the parent's real path are
 * checked against bflags. 0, or a negative errno (-ENOENT: it does not
 * exist; -EISDIR: a directory; -EINVAL: the last component is '.' or '..';
 * -EPERM: refused). */
int beneath_unlink(int dirfd, const char *path, unsigned bflags, struct diag *reterr);

/* Replace the content of the regular file path (a NUL-terminated string)
 * beneath dirfd with data, atomically: missing parents are created
 * (beneath_mkdirs), the data goes to a new temporary file in the directory
 * that really holds the file (opened beneath dirfd and checked against
 * bflags), which is then renamed over it, so a failure (no space, a file
 * size limit) leaves the old content intact and removes the temporary file.
 * A symlink to a file inside is followed (the file is replaced, the link
 * stays); an existing file keeps its permission bits (new files: 0644 less
 * the umask) and must be writable by the caller. Refused: a directory
 * (-EISDIR), anything but a regular file (-EINVAL), a file with more than one
 * hard link (-EMLINK), a dangling symlink (-ELOOP), a file that changed
 * while it was replaced (-EAGAIN), and everything beneath_open() refuses.
 * Not a durability promise: nothing is fsync'ed. */
int beneath_write(int dirfd, const char *path, const void *data, size_t len, unsigned bflags,
		  struct diag *reterr);

/* Make the symlink top/rel -> target, rel's directories made (0700) beneath
 * top, walked and made without following a symlink: for a place another
 * party controls (an agent's private HOME between attempts), where a planted
 * symlinked directory must not put the link somewhere else. 0 when made, or
 * when something is already at top/rel (left as it is); -ELOOP or -ENOTDIR
 * when top or a directory on the way is a symlink or not a directory, -EPERM
 * for an empty, '.' or '..' component, with the reason in reterr. */
int beneath_symlink(const char *top, const char *rel, const char *target, struct diag *reterr);

/* Write data to top/rel with permission bits mode, atomically (a new file
 * in the same directory renamed over the name, which replaces a symlink
 * there rather than its target), rel's directories walked and made as by
 * beneath_symlink(). 0, or a negative errno with the reason in reterr. */
int beneath_replace(const char *top, const char *rel, const void *data, size_t len, mode_t mode,
		    struct diag *reterr);

#endif
