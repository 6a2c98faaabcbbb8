/* How bernstein runs git: one hardened command line and one environment for
 * every git process bernstein itself starts (worktrees, commits, merges,
 * spawn's before/after status, the demo, the mock agent's commits).
 *
 * The repository git runs in may be one an agent wrote: its .git/config, its
 * hooks, its .gitattributes, a nested repository's config. Nothing in it may
 * make bernstein's git execute a program. What this module does about it
 * (docs/security.md, docs/supervision.md "bernstein's own git"):
 *
 *  - Command line (git_harden_argv, after the program name): `--no-pager`,
 *    then `-c KEY=VALUE` for every configuration key that makes git run a
 *    program on its own (core.fsmonitor, core.hooksPath, core.pager,
 *    core.editor, sequence.editor, core.askPass, credential.helper,
 *    core.sshCommand, core.gitProxy, diff.external, gpg.program...), for
 *    signing and signature checks (which run gpg), for submodule recursion
 *    (which starts git in a nested repository with its own config), for
 *    every transport but local paths (protocol.allow=never,
 *    protocol.file.allow=always), and auto-gc/maintenance off. Command-line
 *    configuration wins over every file, and git hands it on to the git
 *    processes it starts itself.
 *  - Environment (git_harden_env): the caller's variables without any GIT_*
 *    (a GIT_DIR, GIT_CONFIG_PARAMETERS, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND of
 *    bernstein's own environment would redirect or arm git), without PAGER,
 *    EDITOR, VISUAL and SSH_ASKPASS; then LC_ALL=C (messages are parsed),
 *    GIT_TERMINAL_PROMPT=0, GIT_ASKPASS= (empty: no askpass program),
 *    GIT_EDITOR=true, GIT_SEQUENCE_EDITOR=true, GIT_PAGER=cat, and for
 *    queries GIT_OPTIONAL_LOCKS=0.
 *
 * What this module cannot neutralise is configuration git has no override
 * for: include.path/includeIf, and attribute-selected drivers
 * (filter.<name>.clean/smudge/process, diff.<name>.textconv,
 * merge.<name>.driver) defined in a repository's own config. Those are dealt
 * with where the repository is known (orch/worktree.h): bernstein never reads
 * an agent's .git pointer (it passes --git-dir itself) and restores a
 * sandboxed task's clone config before each call. The user's global and
 * system configuration are the user's and are read as usual. */
#ifndef BERNSTEIN_PROC_GIT_H
#define BERNSTEIN_PROC_GIT_H

#include "util/strvec.h"

enum git_harden_flags {
	GIT_HARDEN_READ = 1 << 0,  /* a query: GIT_OPTIONAL_LOCKS=0 */
	GIT_HARDEN_WRITE = 1 << 1, /* bernstein writes: status.showUntrackedFiles=normal */
	GIT_HARDEN_PUSH = 1 << 2,  /* a push to a remote (merge: pr): https and ssh allowed,
				    * ssh is `ssh` from PATH (core.sshCommand overridden) */
};

/* Append the global options every bernstein git gets to argv (call it right
 * after pushing the program; -C and the subcommand come after). */
void git_harden_argv(struct strvec *argv, unsigned flags);

/* Append to ret (an initialised strvec) the entries of base (KEY=VALUE,
 * NULL-terminated; NULL = empty) that git may see, then bernstein's own.
 * drop_prefix, when not NULL, drops entries starting with it too (a caller's
 * private settings that ride in the same list). */
void git_harden_env(const char *const *base, unsigned flags, const char *drop_prefix,
		    struct strvec *ret);

/* Whether the environment entry (KEY=VALUE) is one git_harden_env() drops. */
int git_env_dropped(const char *entry);

/* The whole command `GIT [hardened options] -C dir args...` and its
 * environment, for a caller that starts git itself (probe_run, a
 * supervisor): *ret_argv (argv[0] the absolute git, found with git_find() on
 * base_env's PATH) and *ret_env (git_harden_env() of base_env) are replaced.
 * 0, or -ENOENT when git is not on PATH. */
int git_prepare(const char *dir, const char *const *base_env, unsigned flags,
		const char *const *args, struct strvec *ret_argv, struct strvec *ret_env);

/* Find git on path_env (the value of PATH), looking only at absolute
 * entries: an empty or relative entry would find a `git` in whatever
 * directory bernstein happens to run in -- the main checkout, where an
 * agent's merged work lands. 0 and the path (caller frees), -ENOENT, or
 * -EACCES when only non-executable files are found. */
int git_find(const char *path_env, char **ret);

#endif
