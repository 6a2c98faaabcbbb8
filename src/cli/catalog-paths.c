#include "cli/catalog-paths.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/strvec.h"
#include "util/xalloc.h"

static char *path_join(const char *a, const char *b)
{
	struct strvec tmp = STRVEC_INIT;
	char *r;

	(void)strvec_pushf(&tmp, "%s%s%s", a, a[0] && a[strlen(a) - 1] == '/' ? "" : "/", b);
	r = xstrdup(tmp.v[0]);
	strvec_clear(&tmp);
	return r;
}

static bool exists(const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	struct stat st;
	bool r = lstat(p, &st) == 0;

	free(p);
	return r;
}

static char *find_repo(void)
{
	char *cwd = getcwd(NULL, 0);
	char *slash;

	if (!cwd)
		return NULL;
	for (;;) {
		if (exists(cwd, ".git") || exists(cwd, ".bernstein"))
			return cwd;
		slash = strrchr(cwd, '/');
		if (!slash || slash == cwd) {
			if (cwd[0] == '/' && cwd[1] != '\0') {
				cwd[1] = '\0'; /* try "/" itself */
				continue;
			}
			break;
		}
		*slash = '\0';
	}
	free(cwd);
	return NULL;
}

void catalog_paths_find(const struct cli_ctx *ctx, struct catalog_paths *ret)
{
	const char *xdg = cli_getenv(ctx, "XDG_CONFIG_HOME");
	const char *home = cli_getenv(ctx, "HOME");
	size_t n = 0;

	memset(ret, 0, sizeof(*ret));
	/* The XDG base directory spec: a relative value is invalid, ignore it. */
	if (xdg && xdg[0] == '/')
		ret->user_dir = path_join(xdg, "bernstein/catalog");
	else if (home && home[0] == '/')
		ret->user_dir = path_join(home, ".config/bernstein/catalog");
	ret->repo = find_repo();
	if (ret->repo) {
		ret->shared_dir = path_join(ret->repo, "bernstein/catalog");
		ret->repo_dir = path_join(ret->repo, ".bernstein/catalog");
	}
	if (ret->user_dir)
		ret->dirs[n++] = ret->user_dir;
	if (ret->shared_dir)
		ret->dirs[n++] = ret->shared_dir;
	if (ret->repo_dir)
		ret->dirs[n++] = ret->repo_dir;
	ret->dirs[n] = NULL;
}

void catalog_paths_release(struct catalog_paths *p)
{
	free(p->user_dir);
	free(p->repo);
	free(p->repo_dir);
	free(p->shared_dir);
	memset(p, 0, sizeof(*p));
}

int catalog_paths_load(struct cli_ctx *ctx, struct catalog **ret)
{
	struct catalog_paths paths;
	struct diag d;
	int r;

	diag_clear(&d);
	catalog_paths_find(ctx, &paths);
	r = catalog_load_dirs(paths.dirs, ret, &d);
	catalog_paths_release(&paths);
	if (r < 0)
		return cli_diag(ctx, cli_load_exit(r), &d);
	return 0;
}
