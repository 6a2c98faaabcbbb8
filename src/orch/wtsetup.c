/* Worktree setup: copy_files, symlink_dirs and .worktreeinclude
 * (orch/wtsetup.h). */
#include "orch/wtsetup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orch/config-internal.h"
#include "util/arena.h"
#include "util/beneath.h"
#include "util/fsutil.h"
#include "util/yaml.h"
#include "util/banned.h"

#define WT_BFLAGS (BENEATH_NO_GIT | BENEATH_NO_BERNSTEIN)

int wtsetup_check_path(const char *path, const char **why)
{
	const char *p = path, *end;

	if (!path || !*path) {
		*why = "an empty path";
		return -EINVAL;
	}
	if (path[0] == '/') {
		*why = "an absolute path (paths are relative to the repository)";
		return -EINVAL;
	}
	if (strlen(path) >= PATH_MAX) {
		*why = "a path too long";
		return -EINVAL;
	}
	while (*p) {
		size_t n;

		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			*why = "a '..' component (paths stay inside the repository)";
			return -EINVAL;
		}
		if (n > 0 && (beneath_is_git_name(p, n) || beneath_is_bernstein_name(p, n))) {
			*why = "a path into .git or .bernstein";
			return -EINVAL;
		}
		if (n > NAME_MAX) {
			*why = "a component too long";
			return -EINVAL;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

/* A list of checked paths at n (key k of the map at path). */
static int get_paths(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		     const char *path, const char ***ret, size_t *ret_n, struct diag *reterr)
{
	char p[YAML_PATH_MAX], q[80];
	const char **v = NULL, *why = NULL;
	size_t nv = 0, i;
	int r;

	r = yaml_value_strlist(a, doc, n, path, &v, &nv, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < nv; i++)
		if (wtsetup_check_path(v[i], &why) < 0)
			return yaml_field_err(doc, n->items[i], reterr,
					      yaml_path_index(p, sizeof(p), path, i), "'%s' is %s",
					      yaml_quote(q, sizeof(q), v[i]), why);
	*ret = v;
	*ret_n = nv;
	return 0;
}

int orch_get_wtsetup(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		     const char *path, struct orch_wtsetup *ret, struct diag *reterr)
{
	static const char *const keys[] = {"copy_files", "symlink_dirs", "setup_command", "timeout",
					   NULL};
	struct orch_wtsetup ws = {0};
	char p[YAML_PATH_MAX];
	size_t i;
	int r;

	if (!n || n->kind != YNODE_MAP)
		return yaml_field_err(
			doc, n, reterr, path,
			"expected a mapping (copy_files, symlink_dirs, setup_command, timeout), got %s",
			yaml_describe(n));
	r = orch_check_keys(doc, n, keys, path, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < n->n; i++) {
		const char *k = n->keys[i]->str;

		yaml_path_key(p, sizeof(p), path, k);
		if (strcmp(k, "copy_files") == 0) {
			r = get_paths(a, doc, n->items[i], p, &ws.copy_files, &ws.n_copy, reterr);
			ws.set |= WTSETUP_COPY;
		} else if (strcmp(k, "symlink_dirs") == 0) {
			r = get_paths(a, doc, n->items[i], p, &ws.symlink_dirs, &ws.n_links,
				      reterr);
			ws.set |= WTSETUP_LINKS;
		} else if (strcmp(k, "setup_command") == 0) {
			r = yaml_value_str(doc, n->items[i], p, true, &ws.setup_command, reterr);
			ws.set |= WTSETUP_COMMAND;
		} else {
			r = yaml_value_number(doc, n->items[i], p, 0, true, ORCH_MAX_TIMEOUT_S,
					      &ws.timeout_s, reterr);
			ws.set |= WTSETUP_TIMEOUT;
		}
		if (r < 0)
			return r;
	}
	*ret = ws;
	return 0;
}

void wtsetup_merge(struct orch_wtsetup *ws, const struct orch_wtsetup *over)
{
	if (!over)
		return;
	if (over->set & WTSETUP_COPY) {
		ws->copy_files = over->copy_files;
		ws->n_copy = over->n_copy;
	}
	if (over->set & WTSETUP_LINKS) {
		ws->symlink_dirs = over->symlink_dirs;
		ws->n_links = over->n_links;
	}
	if (over->set & WTSETUP_COMMAND)
		ws->setup_command = over->setup_command;
	if (over->set & WTSETUP_TIMEOUT)
		ws->timeout_s = over->timeout_s;
	ws->set |= over->set;
}

double wtsetup_timeout(const struct orch_wtsetup *ws)
{
	return (ws->set & WTSETUP_TIMEOUT) && ws->timeout_s > 0 ? ws->timeout_s
								: WTSETUP_DEFAULT_TIMEOUT_S;
}

/* Why an open beneath the repository failed, for a message. */
static const char *open_why(int r)
{
	switch (-r) {
	case EXDEV:
		return "it leaves the repository (a symlink on the way points out)";
	case ELOOP:
		return "a symlink loop, or a symlink where none may be";
	case ENOENT:
		return "it does not exist in the repository";
	case EPERM:
		return "it is, or goes through, .git or .bernstein";
	case ENOTDIR:
		return "not a directory";
	case ENOSYS:
		return "this kernel has no openat2(2), which a confined walk needs";
	default:
		return strerror(-r);
	}
}

/* Copy repo's regular file rel (open beneath rfd) to tree/rel. */
static int copy_one(int rfd, const char *tree, const char *rel, struct diag *reterr)
{
	struct diag d = {0};
	struct stat st;
	char *data = NULL;
	size_t len = 0;
	int fd, r;

	fd = beneath_open(rfd, rel, strlen(rel), O_RDONLY | O_NONBLOCK, 0, WT_BFLAGS, &d);
	if (fd < 0) {
		diag_set(reterr, NULL, 0, 0, "worktree_setup: copy_files: '%.200s': %s", rel,
			 open_why(fd));
		return fd;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = -EINVAL;
		diag_set(
			reterr, NULL, 0, 0,
			"worktree_setup: copy_files: '%.200s': not a regular file (only regular files are copied; link a directory with symlink_dirs)",
			rel);
		goto out;
	}
	r = read_fd_capped(fd, WTSETUP_MAX_COPY_BYTES, &data, &len);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "worktree_setup: copy_files: '%.200s': %s", rel,
			 r == -EFBIG ? "larger than 64 MiB (link its directory instead)"
				     : strerror(-r));
		goto out;
	}
	r = beneath_replace(tree, rel, data, len, st.st_mode & 0777, &d);
	if (r < 0)
		diag_set(
			reterr, NULL, 0, 0,
			"worktree_setup: copy_files: '%.200s': cannot write it into the task's tree: %s",
			rel, d.msg);
out:
	free(data);
	(void)close(fd);
	return r;
}

/* The real path of repo's directory rel into real (PATH_MAX). */
static int link_target(int rfd, const char *rel, char *real, struct diag *reterr)
{
	struct diag d = {0};
	char proc[64];
	ssize_t n;
	int fd;

	fd = beneath_open(rfd, rel, strlen(rel), O_PATH | O_DIRECTORY, 0, WT_BFLAGS, &d);
	if (fd < 0) {
		diag_set(reterr, NULL, 0, 0, "worktree_setup: symlink_dirs: '%.200s': %s", rel,
			 open_why(fd));
		return fd;
	}
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, real, PATH_MAX - 1);
	(void)close(fd);
	if (n <= 0 || real[0] != '/') {
		diag_set(
			reterr, NULL, 0, 0,
			"worktree_setup: symlink_dirs: '%.200s': cannot tell its real path (/proc)",
			rel);
		return -EPERM;
	}
	real[n] = '\0';
	return 0;
}

/* tree/rel -> real: what is there (a symlink, a file) replaced, never a
 * directory, never through a symlink on the way. */
static int link_one(const char *tree, const char *rel, const char *real, struct diag *reterr)
{
	struct diag d = {0};
	int tfd, r;

	tfd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0) {
		r = -errno;
		diag_set(reterr, tree, 0, 0, "worktree_setup: cannot open the task's tree: %s",
			 strerror(-r));
		return r;
	}
	r = beneath_unlink(tfd, rel, WT_BFLAGS, &d);
	(void)close(tfd);
	if (r == -EISDIR) {
		diag_set(
			reterr, NULL, 0, 0,
			"worktree_setup: symlink_dirs: '%.200s' is a directory in the task's tree (is it tracked?): not replaced",
			rel);
		return r;
	}
	if (r < 0 && r != -ENOENT) {
		diag_set(reterr, NULL, 0, 0, "worktree_setup: symlink_dirs: '%.200s': %s", rel,
			 d.msg);
		return r;
	}
	r = beneath_symlink(tree, rel, real, &d);
	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "worktree_setup: symlink_dirs: '%.200s': %s", rel,
			 d.msg);
	return r;
}

int wtsetup_apply(const char *repo, const char *tree, const struct orch_wtsetup *ws,
		  const struct strvec *include, struct strvec *ret_links, struct diag *reterr)
{
	char real[PATH_MAX];
	const char *why = NULL;
	size_t i;
	int rfd, r = 0;

	rfd = open(repo, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		r = -errno;
		diag_set(reterr, repo, 0, 0, "worktree_setup: cannot open the repository: %s",
			 strerror(-r));
		return r;
	}
	for (i = 0; include && i < include->nr && r >= 0; i++) {
		r = wtsetup_check_path(include->v[i], &why);
		if (r < 0)
			diag_set(reterr, NULL, 0, 0, "%s: '%.200s' is %s", WTSETUP_INCLUDE_FILE,
				 include->v[i], why);
		else
			r = copy_one(rfd, tree, include->v[i], reterr);
	}
	for (i = 0; i < ws->n_copy && r >= 0; i++)
		r = copy_one(rfd, tree, ws->copy_files[i], reterr);
	for (i = 0; i < ws->n_links && r >= 0; i++) {
		r = link_target(rfd, ws->symlink_dirs[i], real, reterr);
		if (r >= 0)
			r = link_one(tree, ws->symlink_dirs[i], real, reterr);
		if (r >= 0 && ret_links)
			strvec_push(ret_links, real);
	}
	(void)close(rfd);
	return r < 0 ? r : 0;
}

void wtsetup_link_targets(const char *repo, const struct orch_wtsetup *ws, struct strvec *ret)
{
	char real[PATH_MAX];
	struct diag d = {0};
	size_t i;
	int rfd;

	if (!ws->n_links)
		return;
	rfd = open(repo, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return;
	for (i = 0; i < ws->n_links; i++)
		if (link_target(rfd, ws->symlink_dirs[i], real, &d) == 0)
			strvec_push(ret, real);
	(void)close(rfd);
}
