/* Killing everything a process started, as far as an unprivileged process
 * can without a PID namespace.
 *
 * A command run in its own session can leave descendants that escape its
 * process group: a double fork, setsid(), a new process group. Once this
 * process is a child subreaper (reaper_enable), every such orphan among its
 * descendants is re-parented to it instead of to init, so it stays findable:
 * reaper_kill_children() SIGKILLs and reaps every child of this process (but
 * the ones it keeps, e.g. MCP servers), and the process group each of them
 * leads, again and again as their own orphans come back, until none is left
 * or the rounds run out (a process that keeps forking could outrun any
 * bound).
 *
 * Not promised: descendants of a process that itself became a subreaper and
 * lives on elsewhere (none: every child is killed), processes that reach
 * another parent through ptrace or a PID namespace, and anything after this
 * process is killed with SIGKILL (its orphans go to the next subreaper up,
 * or init; the parent-death signal reaches direct children only). A PID
 * namespace (issue #15) closes those.
 *
 * reaper_kill_children() is async-signal-safe: it makes only system calls
 * (/proc is read with open, getdents64 and read into stack buffers), so a
 * SIGTERM handler may call it before the process dies. */
#ifndef BERNSTEIN_PROC_REAPER_H
#define BERNSTEIN_PROC_REAPER_H

#include <stddef.h>
#include <sys/types.h>

#define REAPER_DEFAULT_ROUNDS 64

/* prctl(PR_SET_CHILD_SUBREAPER, 1): 0 or a negative errno. */
int reaper_enable(void);

/* SIGKILL and reap every child of this process but keep[0, nkeep), and the
 * process group each leads, for at most max_rounds rounds (0 = the
 * default). Returns the number of processes killed (>= 0), -EAGAIN when
 * children were still left after the last round, or a negative errno when
 * /proc cannot be read. Waits at most about 200 ms a round for the killed
 * children to die. */
int reaper_kill_children(const pid_t *keep, size_t nkeep, unsigned max_rounds);

#endif
