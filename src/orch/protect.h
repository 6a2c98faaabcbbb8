/* Protected paths (docs/security.md, promise 12): the files of a repository
 * that configure bernstein itself. A task's commit that changes one of them
 * is never merged without a person's say: an agent that rewrote
 * bernstein.yaml (a role's base_url, its sandbox, its gates), the
 * .worktreeinclude list of files copied into every tree, a catalogue
 * override or the plan being run would otherwise steer every later run,
 * with the user's keys and the user's files. Under merge: auto such a task
 * waits in review instead (`bernstein approve --allow-protected` merges
 * it), under merge: review approve needs the same flag, under merge: pr the
 * pull request says so at its top.
 *
 * A rule is a path relative to the repository's top or an fnmatch(3)
 * pattern ('*' and '?' also match '/'), matched without regard to case
 * against a changed path and against each of its leading directories (so
 * `.bernstein` covers `.bernstein/x/y`, `plans` covers `plans/a.yaml`,
 * `*.env` covers `a/b.env`). Only protect_rules() looks at the file
 * system. */
#ifndef BERNSTEIN_ORCH_PROTECT_H
#define BERNSTEIN_ORCH_PROTECT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/strvec.h"

/* The rules that always hold, NULL-terminated: bernstein.yaml,
 * .worktreeinclude, .bernstein, bernstein (the committed catalogue
 * directory). protected_paths: in bernstein.yaml adds to them; nothing
 * removes them. */
extern const char *const protect_builtin[];

#define PROTECT_MAX_RULES 64
#define PROTECT_MAX_RULE  1024 /* bytes of one rule */

/* Lexical check of a rule from protected_paths: 0, or -EINVAL with why (a
 * static string): empty, absolute, a '..' or '.' component, too long, a
 * control character. A trailing '/' is allowed (and ignored). */
int protect_rule_check(const char *rule, const char **why);

/* Whether rule covers path (repository-relative, as git prints it). */
bool protect_rule_match(const char *rule, const char *path);

/* The rules that hold for the repository at repo (absolute, canonical),
 * appended to rules: the built-in ones, extra (n_extra; may be NULL), the
 * plan file plan_path (absolute and canonical, as a run records it; NULL:
 * none) when it is beneath repo, and the file beneath repo that
 * bernstein.yaml or .worktreeinclude resolves to when either is a symlink
 * (bernstein reads that file). Literal paths are escaped for fnmatch. */
void protect_rules(const char *repo, const char *const *extra, size_t n_extra,
		   const char *plan_path, struct strvec *rules);

/* The paths of changed (repository-relative) that a rule covers, appended
 * to hits in their order, each once. Returns the number appended. */
size_t protect_filter(const struct strvec *changed, const struct strvec *rules,
		      struct strvec *hits);

/* The path of file relative to the directory repo when file is beneath it
 * (both absolute and canonical; a pointer into file), else NULL. */
const char *protect_relative(const char *repo, const char *file);

#endif
