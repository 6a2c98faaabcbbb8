/* Restricted exec for the builtin run_command tool.
 *
 * argv is a list, never a shell string, and nothing is interpolated. argv[0]
 * must be a bare command name: empty names, names with a '/' (absolute or
 * relative paths), names with control characters or a leading '-', and the
 * shells, interpreters and command runners that would turn the argv back into
 * a program text (sh, bash, dash, zsh, fish, python*, perl*, ruby*, node*,
 * env, busybox, xargs, timeout, sudo, ...) are rejected. The survivor is
 * resolved on PATH (absolute PATH entries only, never inside the workdir)
 * and the resolved file's real name is checked against the same list (so a
 * symlink named 'ls' to bash is refused too). It runs by its absolute path,
 * in the workdir, with stdin on /dev/null, its own session and process group
 * (killed as a group on timeout and after it exits), a complete environment
 * given by the caller (never the runner's own, so never the API key), a
 * timeout and capped output. When it ends (or times out), with kill_orphans
 * everything it started is killed too (proc/reaper.h: the caller must be a
 * child subreaper), also what left its process group.
 *
 * This is defence in depth, not a sandbox: a permitted command (find -exec,
 * sed's e, git aliases, make --eval, tar --checkpoint-action, zip -TT, an
 * editor, a copy of a shell under another name) can still run anything. True
 * confinement is the OS sandbox: with landlock, the command runs confined by
 * Landlock rules (set in its own process before execve, proc/spawn.h) that
 * leave everything outside the workdir read-only. */
#ifndef BERNSTEIN_RUNNER_REXEC_H
#define BERNSTEIN_RUNNER_REXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/diag.h"

/* 0 when name may be run, else -EPERM (or -EINVAL) with the reason. */
int rexec_check_name(const char *name, struct diag *reterr);

/* Resolve a checked name on path_env: absolute PATH entries only, the result
 * must not lie inside workdir (agent-written files are not commands), and its
 * real path's name must pass rexec_check_name() too. *ret is owned. */
int rexec_resolve(const char *name, const char *path_env, const char *workdir, char **ret,
		  struct diag *reterr);

struct rexec_opts {
	const char *cwd;	/* the real workdir */
	const char *const *env; /* complete environment */
	uint64_t timeout_ms;
	size_t max_output; /* bytes kept per stream */
	bool landlock;	   /* confined: read-write cwd and /dev/null, read-only / */
	bool kill_orphans; /* afterwards, kill every other child of this process... */
	const pid_t *keep; /* ...but these (e.g. MCP servers) */
	size_t nkeep;
};

struct rexec_result {
	int exit_code;	 /* as a shell reports it (128+N for a signal) */
	int term_signal; /* 0 unless killed by a signal */
	bool timed_out;
	char *out, *err; /* captured (owned, NUL-terminated, not yet UTF-8 checked) */
	size_t out_len, err_len;
	size_t out_dropped, err_dropped; /* bytes past max_output */
	char *start_error;		 /* the sandbox could not start it (owned) or NULL */
};

/* Run argv (argv[0] already resolved to an absolute path). Returns 0 when the
 * command ran (whatever its exit), or a negative errno when it could not be
 * started (reason in reterr). */
int rexec_run(const char *const *argv, const struct rexec_opts *o, struct rexec_result *ret,
	      struct diag *reterr);
void rexec_result_release(struct rexec_result *r);

#endif
