/* `bernstein run --detach` and `resume --detach`: the run in the background
 * (docs/runs.md, "Detached runs").
 *
 * detach_fork() forks once, before anything is opened. The child leads a
 * session of its own (setsid: no terminal, no Ctrl-C, no SIGHUP from it),
 * reads /dev/null, and goes on as `run` or `resume` would in the
 * foreground: it is the run's process, the parent of its agents (their
 * containment unchanged), and it records its own end in state.db. Until the
 * run is known it still writes to the caller's stdout and stderr (an invalid
 * plan is reported there); then detach_log() moves its stdout and stderr
 * onto .bernstein/runs/RUN/run.log and detach_started(), once the execution
 * listens on its control socket, tells the parent.
 *
 * The parent waits on a pipe for those two messages: with both it prints the
 * run, the child's pid and the log, and exits 0; when the pipe closes
 * without them, the child ended first, and the parent exits with its exit
 * code (after the log's text, when the run was known). */
#ifndef BERNSTEIN_CLI_DETACH_H
#define BERNSTEIN_CLI_DETACH_H

#include <stdbool.h>

#include "cli/cli.h"

struct session;

#define DETACH_LOG "run.log"

/* Fork. In the parent: wait as above and return the exit code, *ret_child
 * false. In the child: return 0 with *ret_child true and *ret_fd the pipe
 * to the parent (keep it in the session's detach_fd). On a failure to fork
 * the error is printed and its exit code returned (*ret_child false). */
int detach_fork(struct cli_ctx *ctx, bool *ret_child, int *ret_fd);

/* The child, once the run is known: open the run's log (created 0600,
 * appended to; never through a symlink, a hard link or anything but a
 * regular file of this user's), move stdout and stderr onto it and tell the
 * parent. 0 or the exit code (the error printed, still to the caller). */
int detach_log(struct session *s, const char *run_id);

/* The child, once the execution listens: tell the parent, close the pipe. */
void detach_started(struct session *s);

/* Whether a process holds the run lock of repo (ORCH_LOCK_FILE, flock):
 * 1 yes (*ret_pid the holder, when known), 0 no, < 0 -errno when it cannot
 * be told (/proc/locks unreadable). */
int detach_lock_held(const char *repo, long *ret_pid);

#endif
