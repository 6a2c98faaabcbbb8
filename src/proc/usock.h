/* Unix domain stream sockets at a path: the hooks channel's endpoint
 * (docs/supervision.md, "The hooks channel").
 *
 * The supervisor owns a listening socket in the session directory (created
 * 0700, so only this user can reach it); an agent's hook command (`bernstein
 * hook-post`) connects, writes one line, and closes. A path longer than
 * sun_path allows (107 bytes) is reached through its directory
 * (/proc/self/fd/N/NAME), so deep worktrees work too. Every fd is
 * O_CLOEXEC. */
#ifndef BERNSTEIN_PROC_USOCK_H
#define BERNSTEIN_PROC_USOCK_H

#include <stddef.h>

#include "util/diag.h"

/* Bind and listen on path (a stale socket there is replaced; any other file
 * is refused with -EEXIST), mode 0600. *ret_fd is non-blocking. The caller
 * unlinks path when done. 0 or -errno with reterr. */
int usock_listen(const char *path, int *ret_fd, struct diag *reterr);

/* Connect to path (blocking, with send and receive timeouts of timeout_ms;
 * 0 = none). 0 or -errno with reterr. */
int usock_connect(const char *path, unsigned timeout_ms, int *ret_fd, struct diag *reterr);

/* Write all of buf to fd (EINTR retried; MSG_NOSIGNAL). 0 or -errno. */
int usock_send_all(int fd, const void *buf, size_t len);

#endif
