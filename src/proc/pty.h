/* A pseudo-terminal for an agent that must run in one (event channel
 * poll-pty with runtime.pty; proc/ptydrive.h reads its screen).
 *
 * proc_spawn() with spec.pty set opens one (posix_openpt, grantpt,
 * unlockpt), sets its size (TIOCSWINSZ), and starts the agent in a session of
 * its own with the terminal as its controlling terminal and as its stdin,
 * stdout and stderr; the parent keeps the master as proc.out_fd (read AND
 * written: the keys typed go there), proc.err_fd is -1. Closing the master
 * hangs the terminal up (SIGHUP to its foreground group); the group kill and
 * containment work as for any agent. */
#ifndef BERNSTEIN_PROC_PTY_H
#define BERNSTEIN_PROC_PTY_H

#include <stddef.h>

#include "proc/child.h"

/* A new pty of rows x cols: the master (O_RDWR|O_NOCTTY|O_CLOEXEC|O_NONBLOCK)
 * and its slave (O_RDWR|O_NOCTTY|O_CLOEXEC, numbered above 2). 0 or -errno;
 * the out-parameters are written only on success. */
int pty_open(unsigned rows, unsigned cols, int *ret_master, int *ret_slave);

/* In the child, after setsid(): make fd (the slave) the controlling
 * terminal. 0 or -errno. */
VFORK_SAFE int pty_child_ctty(int fd);

/* Write all of keys to the master. The terminal's input queue holds a few
 * KiB: a longer prompt is written as the program reads it, waiting at most
 * 5 s in all (the supervisor's loop waits meanwhile); what a TUI that stopped
 * reading leaves behind is dropped (-EAGAIN). 0 or -errno. */
int pty_type(int master, const char *keys, size_t len);

#endif
