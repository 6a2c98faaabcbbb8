/* The builtin tool source (tool_source: "builtin"): read_file, write_file,
 * list_dir and, only when allowed, run_command.
 *
 * Two confinement tiers, not to be conflated (seed 000, "Builtin tool source"):
 *
 *  - The file tools are workdir-confined here. Every path argument is
 *    relative to the run workdir: an empty path, an absolute path, a NUL byte,
 *    a path longer than PATH_MAX or one whose '..' components climb above the
 *    workdir is rejected before any system call; the rest is opened with
 *    openat2(2) relative to a directory fd of the real (symlink-resolved)
 *    workdir with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS. The kernel then
 *    refuses, atomically during the lookup, any resolution that leaves the
 *    workdir: an absolute symlink, a relative symlink that climbs out, a
 *    symlinked parent directory, /proc magic links. Because the check and the
 *    use are one system call, a symlink swapped in between cannot escape.
 *    Without openat2 (Linux < 5.6, or a seccomp filter that hides it) the file
 *    tools fail closed. Reads and listings are capped; only regular files are
 *    read or written (a FIFO cannot hang the runner); a file with more than
 *    one hard link is neither read nor written (its other name may lie
 *    outside). Anything in .bernstein, and in .git unless allow_git_dir, is
 *    refused, by name and on the real path (util/beneath.h), and not
 *    listed. write_file replaces a file atomically (a temporary file renamed
 *    over it), so a failed write leaves the old content.
 *
 *  - run_command (rexec.h) is not confined by this layer: its argv rules are
 *    defence in depth; the true confinement is the OS sandbox. It is offered
 *    only when the caller says so (tools_config.allow_run_command).
 *
 * Failures of a tool are results for the model ("error: ..."), not errors of
 * the runner. */
#ifndef BERNSTEIN_RUNNER_TOOLS_H
#define BERNSTEIN_RUNNER_TOOLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/shim.h"
#include "util/diag.h"

#define TOOLS_DEFAULT_MAX_READ	 1000000 /* bytes returned by read_file */
#define TOOLS_DEFAULT_MAX_LIST	 10000	 /* entries returned by list_dir */
#define TOOLS_DEFAULT_MAX_WRITE	 (16 * 1024 * 1024)
#define TOOLS_DEFAULT_CMD_MS	 120000
#define TOOLS_DEFAULT_CMD_OUTPUT 100000 /* bytes kept of each of stdout, stderr */

struct tools_config {
	const char *workdir;
	bool allow_git_dir; /* the file tools may touch .git (profile runtime.git_dir) */
	bool allow_run_command;
	const char *path_env;	    /* PATH for run_command lookups (absolute entries only) */
	const char *const *cmd_env; /* the complete environment of commands (NULL-terminated) */
	bool landlock;		    /* run commands confined by Landlock (rw: workdir) */
	uint64_t cmd_timeout_ms;    /* 0 = default */
	size_t max_read, max_list, max_write, max_cmd_output; /* 0 = defaults */
};

struct tools;

/* Open the workdir (it must exist and be a directory). */
int tools_open(const struct tools_config *cfg, struct tools **ret, struct diag *reterr);
struct tools *tools_free(struct tools *t);

/* The real workdir path (symlinks resolved). */
const char *tools_workdir(const struct tools *t);

/* The tool definitions offered to the model, in the neutral form of wire.h
 * (caller decrefs): the three file tools, plus run_command when allowed. */
json_t *tools_specs(const struct tools *t);
bool tools_has(const struct tools *t, const char *name);

struct tool_outcome {
	bool ok;
	char *output;	 /* text for the model (valid UTF-8; owned) */
	json_t *details; /* for the tool_result event: bytes, count, exit_code, error... (owned) */
	json_t *args;	 /* the arguments as the tool_call event shows them (owned) */
};

/* Run one tool. args_json is the call's argument text from the model.
 * Returns 0 (look at ret->ok), or -ENOENT for an unknown tool name. */
int tools_call(struct tools *t, const char *name, const char *args_json, struct tool_outcome *ret);
void tool_outcome_release(struct tool_outcome *o);

/* ---- the confinement primitives (exported for tests) ---- */

/* Lexical checks of a relative path (len bytes, may contain NUL): 0, or
 * -EINVAL (empty, NUL), -EPERM (absolute, or '..' above the top), -ENAMETOOLONG. */
int tools_check_relpath(const char *path, size_t len, struct diag *reterr);

/* openat2(dirfd, path, flags | O_CLOEXEC, mode) with RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS after tools_check_relpath(). Returns the fd or a
 * negative errno (-EXDEV: the path escapes; -ELOOP: a symlink loop or a
 * magic link; -ENOSYS: no openat2). */
int tools_open_beneath(int dirfd, const char *path, size_t len, int flags, mode_t mode,
		       struct diag *reterr);

/* mkdir -p of the parent directories of path, each created relative to a
 * directory opened beneath dirfd (so a swapped symlink cannot redirect it). */
int tools_mkdirs_beneath(int dirfd, const char *path, struct diag *reterr);

#endif
