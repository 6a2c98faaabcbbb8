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
 * Messages say "the run workdir" for the directory (both users confine to a
 * task's worktree). */
#ifndef BERNSTEIN_UTIL_BENEATH_H
#define BERNSTEIN_UTIL_BENEATH_H

#include <stddef.h>
#include <sys/types.h>

#include "util/diag.h"

/* Lexical checks of a relative path (len bytes, may contain NUL): 0, or
 * -EINVAL (empty, NUL), -EPERM (absolute, or '..' above the top),
 * -ENAMETOOLONG. */
int beneath_check_relpath(const char *path, size_t len, struct diag *reterr);

/* openat2(dirfd, path, flags | O_CLOEXEC, mode) with RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS after beneath_check_relpath(). Returns the fd or a
 * negative errno (-EXDEV: the path escapes; -ELOOP: a symlink loop or a
 * magic link; -ENOSYS: no openat2). */
int beneath_open(int dirfd, const char *path, size_t len, int flags, mode_t mode,
		 struct diag *reterr);

/* mkdir -p of the parent directories of path (a NUL-terminated string), each
 * created relative to a directory opened beneath dirfd (so a swapped symlink
 * cannot redirect it). Directories are created 0755. */
int beneath_mkdirs(int dirfd, const char *path, struct diag *reterr);

/* Remove the file (not a directory) path beneath dirfd: its parent is opened
 * beneath dirfd and the last component unlinked there, so a symlink is
 * removed itself, never its target. 0, or a negative errno (-ENOENT: it does
 * not exist; -EISDIR: a directory; -EINVAL: the last component is '.' or
 * '..'). */
int beneath_unlink(int dirfd, const char *path, struct diag *reterr);

#endif
