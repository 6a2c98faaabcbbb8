/* The chainloading shim: `bernstein shim [options] -- /abs/agent args...`.
 *
 * The supervisor posix_spawns the bernstein binary as the shim (new session,
 * empty signal mask, stdin /dev/null, pipes, every other fd closed). The shim
 * prepares the process and then execve()s the agent in place, so no wrapper
 * process stays around:
 *
 *   1. PR_SET_PDEATHSIG(SIGKILL), then getppid() is compared with the expected
 *      parent to close the race where the parent died before the prctl;
 *   2. every fd above 2 is marked close-on-exec;
 *   3. resource limits (soft = hard = the given value);
 *   4. optional Landlock rules (proc/landlock.h);
 *   5. signal dispositions reset to default and the mask emptied (the bernstein
 *      binary ignores SIGPIPE; the agent must not inherit that);
 *   6. execve(path, argv, envp): the environment is passed through unchanged.
 *
 * When a step fails and a status fd was given, a struct shim_status record
 * is written to it before the shim exits, so the supervisor can tell "the
 * shim could not start the agent" from "the agent exited with 127". The
 * status fd is close-on-exec, so a successful execve closes it (EOF, no
 * record).
 *
 * This module returns errors; the messages and exit codes are chosen by
 * src/cli/cmd-shim.c: 127 the binary is missing, 126 it cannot be executed,
 * 125 the shim's own set-up (rlimits, Landlock) failed. */
#ifndef BERNSTEIN_PROC_SHIM_H
#define BERNSTEIN_PROC_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/diag.h"
#include "util/strvec.h"

/* Exit codes of the shim when it cannot start the agent. */
#define SHIM_EXIT_SETUP	   125 /* rlimits, Landlock or another set-up step failed */
#define SHIM_EXIT_NOEXEC   126 /* the agent exists but cannot be executed */
#define SHIM_EXIT_NOTFOUND 127 /* the agent binary does not exist */

/* Which step of starting an agent failed. SPAWN is the supervisor's own
 * posix_spawn (of the shim, or of the agent when no shim is used). */
enum shim_stage {
	SHIM_STAGE_NONE,   /* nothing failed: the agent is running */
	SHIM_STAGE_SPAWN,  /* posix_spawn in the parent */
	SHIM_STAGE_PARENT, /* pdeathsig, or the parent is already gone */
	SHIM_STAGE_FDS,	   /* marking inherited fds close-on-exec */
	SHIM_STAGE_RLIMIT, /* setrlimit */
	SHIM_STAGE_LANDLOCK,
	SHIM_STAGE_EXEC, /* execve of the agent (or resolving it on PATH) */
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

/* What shim_setup() did, for the caller's messages. */
struct shim_report {
	int landlock_abi;      /* ABI used, 0 if Landlock was not applied */
	bool landlock_skipped; /* rules were given but the kernel lacks Landlock (best effort) */
};

void shim_opts_init(struct shim_opts *o);
void shim_opts_release(struct shim_opts *o);
void shim_opts_copy(struct shim_opts *dst, const struct shim_opts *src);
void shim_opts_set_rlimit(struct shim_opts *o, enum shim_rlimit r, uint64_t value);
/* "as", "nofile", "cpu", "core", "nproc", "fsize" (the option is --rlimit-NAME). */
const char *shim_rlimit_name(enum shim_rlimit r);
enum shim_rlimit shim_rlimit_from_name(const char *name);
const char *shim_stage_name(enum shim_stage s);

/* Append the options for `bernstein shim` (rlimits and Landlock; not the
 * status fd or parent pid, and not the "--") to argv. */
void shim_opts_to_argv(const struct shim_opts *o, struct strvec *argv);

/* Steps 1-4 above. Returns 0, or a negative errno with the failed step in
 * *ret_stage (-ESRCH at SHIM_STAGE_PARENT: the parent is already gone; the
 * caller should die as the death signal would have made it). Writes the
 * status record on failure. */
int shim_setup(const struct shim_opts *o, struct shim_report *ret, enum shim_stage *ret_stage,
	       struct diag *reterr);

/* Steps 5-6. Returns only on failure: a negative errno (the status record has
 * been written). */
int shim_exec(const struct shim_opts *o, const char *path, char *const argv[], char *const envp[]);

/* Report a failure on the status fd (best effort; no-op without one). */
void shim_report_failure(const struct shim_opts *o, enum shim_stage stage, int err);

/* The shim's exit code for a failed step and errno: 127 for a missing binary
 * (ENOENT, ENOTDIR, ELOOP at SPAWN/EXEC), 126 for one that cannot be executed,
 * 125 for set-up failures. */
int shim_exit_code(enum shim_stage stage, int err);

#endif
