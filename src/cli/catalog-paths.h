/* Where the catalogue overrides of this invocation live, and loading the
 * catalogue with them (cli/ is the only layer that reads the environment):
 *   user: $XDG_CONFIG_HOME/bernstein/catalog (an absolute XDG_CONFIG_HOME),
 *         else $HOME/.config/bernstein/catalog, else none;
 *   shared: <repo>/bernstein/catalog, committed with the repository and
 *         so shared by the team;
 *   repo: <repo>/.bernstein/catalog, this clone's own (git-ignored with
 *         the rest of .bernstein/),
 * where <repo> is the first directory containing .git or .bernstein,
 * walking up from the current one (after -C); none when there is no such
 * directory. Precedence, lowest first: embedded < user < shared < repo
 * (docs/profile-format.md, "Catalogue overrides"). */
#ifndef BERNSTEIN_CLI_CATALOG_PATHS_H
#define BERNSTEIN_CLI_CATALOG_PATHS_H

#include "adapter/catalog.h"
#include "cli/cli.h"

struct catalog_paths {
	char *user_dir;	  /* NULL when none (owned) */
	char *repo;	  /* the repository root, or NULL (owned) */
	char *repo_dir;	  /* <repo>/.bernstein/catalog, or NULL (owned) */
	char *shared_dir; /* <repo>/bernstein/catalog, or NULL (owned) */
	/* user_dir, shared_dir, repo_dir (those set) in ascending precedence,
	 * NULL-terminated: for catalog_load_dirs() (borrowed from the above) */
	const char *dirs[4];
};

void catalog_paths_find(const struct cli_ctx *ctx, struct catalog_paths *ret);
void catalog_paths_release(struct catalog_paths *p);

/* Find the paths and load embedded < user < repo. On failure prints the
 * diagnostic (bernstein: FILE:L:C: msg) and returns BEXIT_INVALID (3); on
 * success returns 0 with *ret owned by the caller (catalog_free()). */
int catalog_paths_load(struct cli_ctx *ctx, struct catalog **ret);

#endif
