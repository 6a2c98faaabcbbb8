/* Worktree setup (issue #19): what bernstein puts into a task's fresh
 * checkout (its worktree, or a sandboxed task's clone) before the agent
 * starts, from `worktree_setup:` in bernstein.yaml and the repository's
 * `.worktreeinclude` (docs/configuration.md, "Worktree setup").
 *
 * Every path is relative to the repository and stays inside it: refused at
 * load time lexically (absolute, '..', .git, .bernstein) with its
 * file:line:col, and again when applied with openat2(RESOLVE_BENEATH) walks
 * (a symlink in the repository that points out is refused, whatever the
 * string says). copy_files copies regular files only; symlink_dirs makes,
 * in the task's tree, a symlink to the repository's directory (read-only to
 * a sandboxed agent: the policy adds it to the read-only list, never to the
 * writable one). Applying again is harmless: copies overwrite, links
 * replace.
 *
 * setup_command is a command line run by `/bin/sh -c` in the task's tree
 * after the copies and links, before the agent, supervised and confined
 * like a gate (orch/run-wtsetup.c); timeout its seconds.
 *
 * The levels (bernstein.yaml, a role's role_model_policy entry, a plan's
 * top level, a plan task) combine key by key: each key a more specific
 * level gives replaces the less specific one's (wtsetup_merge()). */
#ifndef BERNSTEIN_ORCH_WTSETUP_H
#define BERNSTEIN_ORCH_WTSETUP_H

#include <stddef.h>

#include "util/diag.h"
#include "util/strvec.h"

/* The file of gitignore-style patterns at the repository's top. */
#define WTSETUP_INCLUDE_FILE ".worktreeinclude"
/* Largest file copy_files copies (bigger: link its directory instead). */
#define WTSETUP_MAX_COPY_BYTES (64u << 20)
/* setup_command's timeout when none is given (seconds), as a gate's. */
#define WTSETUP_DEFAULT_TIMEOUT_S 600.0

/* Which keys a level gives (struct orch_wtsetup.set). */
enum wtsetup_keys {
	WTSETUP_COPY = 1 << 0,	  /* copy_files */
	WTSETUP_LINKS = 1 << 1,	  /* symlink_dirs */
	WTSETUP_COMMAND = 1 << 2, /* setup_command (null: none, over a less specific one) */
	WTSETUP_TIMEOUT = 1 << 3, /* timeout */
};

struct orch_wtsetup {
	const char **copy_files; /* NULL-terminated, n_copy of them */
	size_t n_copy;
	const char **symlink_dirs;
	size_t n_links;
	const char *setup_command; /* NULL: none */
	double timeout_s;	   /* > 0 when WTSETUP_TIMEOUT is set */
	unsigned set;		   /* enum wtsetup_keys: the keys given */
};

struct arena;
struct ydoc;
struct ynode;

/* worktree_setup: {copy_files: [...], symlink_dirs: [...], setup_command,
 * timeout} at n into *ret (strings in the document, arrays in a). -EINVAL
 * at the bad value. */
int orch_get_wtsetup(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		     const char *path, struct orch_wtsetup *ret, struct diag *reterr);

/* Each key over gives replaces ws's (the pointers borrowed from over). */
void wtsetup_merge(struct orch_wtsetup *ws, const struct orch_wtsetup *over);
/* setup_command's timeout in seconds (WTSETUP_DEFAULT_TIMEOUT_S unless given). */
double wtsetup_timeout(const struct orch_wtsetup *ws);

/* Lexical check of one path: 0, or -EINVAL with why (a static string). */
int wtsetup_check_path(const char *path, const char **why);

/* Apply ws and the patterns' files (include: relative paths, from
 * .worktreeinclude; may be NULL) from the repository repo into tree.
 * With ret_links non-NULL, the real paths of the linked directories are
 * added to it (for a sandbox's read-only list). 0, or a negative errno with
 * the path and the reason in reterr; what was done before a failure stays
 * (the next attempt applies it all again). */
int wtsetup_apply(const char *repo, const char *tree, const struct orch_wtsetup *ws,
		  const struct strvec *include, struct strvec *ret_links, struct diag *reterr);

/* The real paths of ws's linked directories in repo (those that exist
 * beneath it) into ret, for a sandbox's read-only list. */
void wtsetup_link_targets(const char *repo, const struct orch_wtsetup *ws, struct strvec *ret);

#endif
