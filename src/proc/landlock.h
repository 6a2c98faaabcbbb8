/* Landlock file-system confinement through the raw syscalls
 * (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self).
 *
 * The calling process (the shim, just before execve) is restricted to:
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

#include "util/diag.h"

/* The kernel's Landlock ABI version (1, 2, ...), or -EOPNOTSUPP when the
 * kernel lacks Landlock or has it disabled (ENOSYS is mapped to it). */
int landlock_abi_version(void);

/* The file-system access rights handled for a given ABI version. */
uint64_t landlock_fs_rights(int abi);

/* Restrict the calling process. rw and ro are NULL-terminated path lists
 * (either may be NULL). Returns 0, -EOPNOTSUPP when the kernel lacks
 * Landlock (nothing was changed), or another negative errno with a message
 * naming the failing path in reterr. *ret_abi (optional) gets the ABI used. */
int landlock_restrict(const char *const *rw, const char *const *ro, int *ret_abi,
		      struct diag *reterr);

#endif
