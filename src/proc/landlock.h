/* Landlock file-system confinement through the raw syscalls
 * (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self).
 *
 * A ruleset is built in one process (landlock_prepare) and enforced in
 * another, the child of proc_spawn() just before its execve, or in the same
 * (bernstein shim). The process that enforces it is restricted to:
 *   - read-write (every file-system right the kernel's ABI knows) beneath
 *     each rw path;
 *   - read and execute beneath each ro path;
 *   - nothing anywhere else.
 * A path that is not a directory (e.g. /dev/null) gets the file rights only.
 * Restriction is irreversible and inherited by every descendant. It sets
 * PR_SET_NO_NEW_PRIVS, which Landlock requires of unprivileged callers. */
#ifndef BERNSTEIN_PROC_LANDLOCK_H
#define BERNSTEIN_PROC_LANDLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "proc/child.h"
#include "util/diag.h"

/* The kernel's Landlock ABI version (1, 2, ...), or -EOPNOTSUPP when the
 * kernel lacks Landlock or has it disabled (ENOSYS is mapped to it). */
int landlock_abi_version(void);

/* The file-system access rights handled for a given ABI version. */
uint64_t landlock_fs_rights(int abi);

/* Build the ruleset for rw and ro (NULL-terminated path lists, either may be
 * NULL) in the calling process: each path is opened here, so a missing one is
 * reported now, by name. *ret_fd gets the ruleset (close-on-exec), *ret_abi
 * (optional) the ABI. Returns 0, -EOPNOTSUPP when the kernel lacks Landlock,
 * or another negative errno, with a message in reterr. */
int landlock_prepare(const char *const *rw, const char *const *ro, int *ret_fd, int *ret_abi,
		     struct diag *reterr);

/* Restrict the calling process to a prepared ruleset: PR_SET_NO_NEW_PRIVS,
 * then landlock_restrict_self. Only system calls, nothing allocated: safe in
 * the child of proc_spawn() between clone and execve. Returns 0 or a negative
 * errno. */
VFORK_SAFE int landlock_enforce(int ruleset_fd);

/* Add to ruleset_fd (prepared for abi) read-only access beneath path as it
 * is now: for a child that mounted a /proc of its own after the parent
 * built the rules on the old one. Only system calls (vfork-safe). */
VFORK_SAFE int landlock_allow_ro_now(int ruleset_fd, int abi, const char *path);

#endif
