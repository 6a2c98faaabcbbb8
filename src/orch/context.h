/* Task context: the prompt an agent receives, rendered from a template
 * (docs/runs.md, "The prompt an agent receives").
 *
 * A task whose plan gives `constraints:` or `context_files:` (its own or the
 * plan's top-level ones, even an empty list) gets its prompt rendered; every
 * other task gets its prompt verbatim, as before. The template, each section
 * left out when it has nothing to say:
 *
 *   # Goal                            the plan's description
 *   # Role: ROLE                      the role's preamble (catalog/roles.yaml)
 *   # Task                            the task's prompt
 *   # Constraints                     "- " each constraint
 *   # Context files                   "## PATH" and the file's text in a
 *                                     fence longer than any backtick run in
 *                                     it; "(truncated: ...)" when capped
 *   # Tasks this one depends on       "- TITLE (ID): OUTCOME"
 *   # How the work will be checked    "- gate NAME: `COMMAND`", the artifact
 *
 * Context files are read beneath the base checkout (the repository's top)
 * with openat2(RESOLVE_BENEATH) (util/beneath.h): no path out of it, no
 * symlink that leaves it, nothing under .git/ or .bernstein/, regular files
 * only. Each is capped at CONTEXT_FILE_MAX bytes and all of them together at
 * CONTEXT_TOTAL_MAX; what is cut says so in the prompt. A file with a NUL
 * byte is not shown (a note says it is binary). The text is data inside the
 * prompt: prompt delivery never makes a prompt an option. */
#ifndef BERNSTEIN_ORCH_CONTEXT_H
#define BERNSTEIN_ORCH_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "orch/config.h"
#include "util/diag.h"

#define CONTEXT_FILE_MAX  ((size_t)64 * 1024)
#define CONTEXT_TOTAL_MAX ((size_t)256 * 1024)

struct context_dep {
	const char *id, *title;
	const char *outcome; /* the outcome, else the state, or NULL */
};

struct context_input {
	const char *goal;     /* or NULL */
	const char *role;     /* or NULL */
	const char *preamble; /* the role's, or NULL */
	const char *prompt;   /* the task's (NULL: "") */
	const char *const *constraints;
	size_t n_constraints;
	const char *const *context_files; /* relative to repo_fd */
	size_t n_context_files;
	int repo_fd; /* a directory fd: the base checkout */
	const struct context_dep *deps;
	size_t n_deps;
	const struct orch_gate *gates; /* the configuration's, then the task's */
	size_t n_gates;
	const char *artifact;	    /* or NULL */
	size_t file_max, total_max; /* 0: CONTEXT_FILE_MAX, CONTEXT_TOTAL_MAX */
};

/* Open the context file path beneath repo_fd and check it: a regular file
 * reached without leaving the directory, not under .git/ or .bernstein/.
 * Returns the fd (O_RDONLY | O_CLOEXEC) or a negative errno with the reason
 * in reterr's message ("context file 'x': ..."): -EXDEV it leaves the
 * repository, -EPERM a refused name, -ENOENT, -EINVAL not a regular file,
 * -ELOOP a symlink loop. */
int context_open(int repo_fd, const char *path, struct diag *reterr);

/* The rendered prompt (caller frees) in *ret; a negative errno when a
 * context file is refused (context_open()'s) or cannot be read. */
int context_render(const struct context_input *in, char **ret, struct diag *reterr);

/* Do two files: lists overlap? Two entries overlap when they are the same
 * path, one is a glob (fnmatch(3), '*' also crossing '/') the other
 * matches, or one is a directory the other is in. Conservative on purpose:
 * an overlap only makes two tasks wait for each other. */
bool context_files_overlap(const char *const *a, size_t na, const char *const *b, size_t nb);

struct plan;
struct diag_list;

/* Every context file of every task of a loaded plan opened beneath repo_fd
 * (context_open()): each refusal appended to issues at its PLAN:LINE:COL
 * (a file the plan's top-level context_files: gives, once). Returns the
 * number of problems. */
size_t context_check_plan(const struct plan *p, int repo_fd, struct diag_list *issues);

#endif
