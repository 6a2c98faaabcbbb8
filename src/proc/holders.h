/* Which processes have a file open: the one sure sign, on Linux, that a
 * lock file git left is still in use. Walks /proc/PID/fd of every process
 * this one may inspect (the same user's, or all as root); a process whose
 * descriptors cannot be read is not seen. Used to tell a lock file of a dead
 * git (stale: nobody has it open) from one a running git holds
 * (docs/worktrees.md, "Stale lock files"). */
#ifndef BERNSTEIN_PROC_HOLDERS_H
#define BERNSTEIN_PROC_HOLDERS_H

#include <stddef.h>
#include <sys/types.h>

/* For each of the n paths, ret_pids[i] = the pid of a process other than
 * this one that has that file open, or 0 when none is seen (also when the
 * path does not exist). Returns the number of paths held, or a negative
 * errno when /proc cannot be read. */
int proc_file_holders(const char *const *paths, size_t n, pid_t *ret_pids);

#endif
