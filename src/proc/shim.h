/* What happens to a process between its start and the agent's execve:
 *
 *   1. PR_SET_PDEATHSIG(SIGKILL), then getppid() is compared with the expected
 *      parent to close the race where the parent died before the prctl;
 *   2. resource limits (soft = hard = the given value);
 *   3. optional Landlock rules (proc/landlock.h);
 *   4. no fd above 2 survives the execve;
 *   5. signal dispositions reset to default and the mask emptied (bernstein
 *      ignores SIGPIPE and the supervisor blocks signals for its signalfd;
 *      the agent must inherit neither);
 *   6. execve(path, argv, envp): the environment is passed through unchanged.
 *
 * proc_spawn() does all of it in its child, between clone and execve, so no
 * extra program is executed per agent: shim_prepare() does in the parent what
 * may allocate or fail with a message (opening the Landlock paths), and
 * shim_apply() and shim_reset_signals() are the system calls left for the
 * child (VFORK_SAFE, proc/child.h).
 *
 * `bernstein shim [options] -- /abs/program args...` (src/cli/cmd-shim.c) is
 * the same steps as a command of its own, for use outside bernstein: it
 * prepares itself and then execve()s the program in place. When a step fails
 * and a status fd was given, a struct shim_status record is written to it
 * before the shim exits, so a supervisor can tell "the shim could not start
 * the program" from "the program exited with 127". The status fd is
 * close-on-exec, so a successful execve closes it (EOF, no record).
 *
 * This module returns errors; the messages and exit codes are chosen by the
 * callers: 127 the binary is missing, 126 it cannot be executed, 125 the
 * set-up (rlimits, Landlock) failed. */
#ifndef BERNSTEIN_PROC_SHIM_H
#define BERNSTEIN_PROC_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/child.h"
#include "util/diag.h"
#include "util/strvec.h"

/* Exit codes of the shim when it cannot start the agent. */
#define SHIM_EXIT_SETUP	   125 /* rlimits, Landlock or another set-up step failed */
#define SHIM_EXIT_NOEXEC   126 /* the agent exists but cannot be executed */
#define SHIM_EXIT_NOTFOUND 127 /* the agent binary does not exist */

/* Which step of starting an agent failed. */
enum shim_stage {
	SHIM_STAGE_NONE,   /* nothing failed: the agent is running */
	SHIM_STAGE_SPAWN,  /* creating the process: pipes, clone, the session, stdio, chdir */
	SHIM_STAGE_PARENT, /* pdeathsig, or the parent is already gone */
	SHIM_STAGE_FDS,	   /* closing (or marking close-on-exec) the fds above 2 */
	SHIM_STAGE_RLIMIT, /* setrlimit */
	SHIM_STAGE_LANDLOCK,
	SHIM_STAGE_EXEC,    /* execve of the agent (or resolving it on PATH) */
	SHIM_STAGE_CONTAIN, /* its cgroups, namespaces or limits (proc/contain.h) */
	_SHIM_STAGE_MAX,
	_SHIM_STAGE_INVALID = -1,
};

enum shim_rlimit {
	SHIM_RLIMIT_AS,	    /* --rlimit-as BYTES */
	SHIM_RLIMIT_NOFILE, /* --rlimit-nofile N */
	SHIM_RLIMIT_CPU,    /* --rlimit-cpu SECONDS */
	SHIM_RLIMIT_CORE,   /* --rlimit-core BYTES */
	SHIM_RLIMIT_NPROC,  /* --rlimit-nproc N */
	SHIM_RLIMIT_FSIZE,  /* --rlimit-fsize BYTES */
	_SHIM_RLIMIT_MAX,
	_SHIM_RLIMIT_INVALID = -1,
};

struct shim_opts {
	uint64_t rlimit[_SHIM_RLIMIT_MAX];
	unsigned rlimit_set;	   /* bit (1 << i): rlimit[i] is applied */
	struct strvec landlock_rw; /* --landlock-rw DIR (repeatable) */
	struct strvec landlock_ro; /* --landlock-ro DIR (repeatable) */
	bool landlock_best_effort; /* no Landlock in the kernel: run unconfined */
	pid_t parent_pid;	   /* --parent-pid: expected parent; 0 = getppid() at start */
	int status_fd;		   /* --status-fd: failure record goes here; -1 = none */
};

#define SHIM_OPTS_INIT                                                                             \
	{                                                                                          \
		.landlock_rw = STRVEC_INIT, .landlock_ro = STRVEC_INIT, .status_fd = -1,           \
	}

/* The record written to the status fd on failure (native byte order; the
 * pipe is private to one machine). */
#define SHIM_STATUS_MAGIC 0x62736831u /* "bsh1" */
struct shim_status {
	uint32_t magic;
	int32_t stage; /* enum shim_stage */
	int32_t err;   /* positive errno */
};

/* The options made ready for shim_apply(). */
struct shim_plan {
	uint64_t rlimit[_SHIM_RLIMIT_MAX];
	unsigned rlimit_set;
	int ruleset_fd;	       /* the prepared Landlock ruleset; -1 = none */
	int landlock_abi;      /* its ABI, 0 if none */
	bool landlock_skipped; /* rules were given, the kernel lacks Landlock (best effort) */
	bool landlock_proc;    /* the rules let it read /proc: a /proc the child mounts
				  itself (a PID namespace's) is added to them there */
	pid_t parent_pid;      /* the expected parent; 0 = do not check */
	/* a pidfd of the expected parent, checked instead of getppid() (in a
	 * PID namespace of its own the parent is not visible: getppid() is 0);
	 * -1 = none; not owned by the plan */
	int parent_pidfd;
	int failed_rlimit; /* set by shim_apply() when a setrlimit failed */
};

#define SHIM_PLAN_INIT                                                                             \
	{                                                                                          \
		.ruleset_fd = -1, .parent_pidfd = -1, .failed_rlimit = -1,                         \
	}

void shim_opts_init(struct shim_opts *o);
void shim_opts_release(struct shim_opts *o);
void shim_opts_set_rlimit(struct shim_opts *o, enum shim_rlimit r, uint64_t value);
/* "as", "nofile", "cpu", "core", "nproc", "fsize" (the option is --rlimit-NAME). */
const char *shim_rlimit_name(enum shim_rlimit r);
enum shim_rlimit shim_rlimit_from_name(const char *name);
const char *shim_stage_name(enum shim_stage s);

/* Make o ready for shim_apply() in a child whose parent is parent (0: do not
 * check): the Landlock ruleset is built here. Returns 0 or a negative errno
 * (a SHIM_STAGE_LANDLOCK failure, -EOPNOTSUPP when the kernel lacks Landlock
 * and o is not best effort) with a message naming the path in reterr. */
int shim_prepare(const struct shim_opts *o, pid_t parent, struct shim_plan *ret,
		 struct diag *reterr);
/* Steps 1-3. Only system calls: safe in the child of proc_spawn(). Returns 0,
 * or a negative errno with the failed step in *ret_stage (-ESRCH at
 * SHIM_STAGE_PARENT: the parent is already gone, and the caller should die as
 * the death signal would have made it). */
VFORK_SAFE int shim_apply(struct shim_plan *p, enum shim_stage *ret_stage);
/* Closes the ruleset; back to SHIM_PLAN_INIT. */
void shim_plan_release(struct shim_plan *p);
/* One line for a failed shim_apply() step (stage and positive errno). */
const char *shim_failure_message(const struct shim_plan *p, enum shim_stage stage, int err,
				 char *buf, size_t size);
/* Step 4: every fd above 2 closed (close_them: the child of proc_spawn(),
 * whose stdio is in place) or made close-on-exec (`bernstein shim`, which may
 * have inherited anything from a shell). System calls only. 0 or a negative
 * errno. */
VFORK_SAFE int shim_fds_from_3(bool close_them);
/* The same from fd first on. */
VFORK_SAFE int shim_fds_from(int first, bool close_them);
/* Step 5 (system calls only). */
VFORK_SAFE void shim_reset_signals(void);
/* Steps 5-6. Returns only on failure: a negative errno (the status record
 * has been written). */
int shim_exec(const struct shim_opts *o, const char *path, char *const argv[], char *const envp[]);

/* A container's init (`bernstein shim --init`: the shim is the PID
 * namespace's pid 1, where the kernel drops every signal an init has no
 * handler for, so a program there would ignore SIGTERM, SIGINT and SIGHUP)
 * runs the program as its child instead.
 *
 * First of all, before anything else is started (the SIGHUP and SIGCONT
 * that TIOCNOTTY sends to this process group would reach it): when fd 0 is
 * this session leader's controlling terminal (the container's console), let
 * go of it, its name into tty (size bytes). Whether it did. */
bool shim_init_release_tty(char *tty, size_t size);
/* Then step 6 as the init: the program is started in a session of its own;
 * with tty (the released terminal, or NULL) it opens it again and takes it
 * as its own controlling terminal, so the terminal's signals (Ctrl-C,
 * SIGWINCH, the hangup) reach it as they would outside. Every signal the
 * init gets (from the runtime, which forwards its own) goes to the
 * program's process group; every child is reaped. When the program has
 * exited, what it left in the namespace gets SIGTERM and grace_ms to end
 * (every process of it reaped, or the time up; 0: no wait), as under a
 * service manager's stop: when the init exits the kernel SIGKILLs whatever
 * is left. Only as pid 1 (a namespace's init): elsewhere there is no
 * namespace of its own to signal, and no wait. Then the program's wait status goes to wait_fd (4
 * bytes, an int; -1: none), for a parent that wants to tell a signal from an exit code
 * (proc_spawn()'s SPAWN_INIT). Returns 0 with the status as an exit code in *ret_code (128+N for
 * signal N), or a negative errno when it could not be started. */
int shim_init_run(const char *path, char *const argv[], char *const envp[], const char *tty,
		  uint64_t grace_ms, int wait_fd, int *ret_code);

/* Report a failure on the status fd (best effort; no-op without one). */
void shim_report_failure(const struct shim_opts *o, enum shim_stage stage, int err);

/* The shim's exit code for a failed step and errno: 127 for a missing binary
 * (ENOENT, ENOTDIR, ELOOP at SPAWN/EXEC), 126 for one that cannot be executed,
 * 125 for set-up failures. */
int shim_exit_code(enum shim_stage stage, int err);

#endif
