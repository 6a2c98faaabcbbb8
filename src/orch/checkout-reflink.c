/* The reflink kind of checkout (orch/checkout.h, CHECKOUT_REFLINK): a
 * task's tree whose files share their extents with the shared base
 * checkout's, where an overlay cannot be mounted (docs/runs.md "Reflink
 * checkouts"). Not constant time (one clone per file), but no data is
 * written and git reads no file.
 *
 *   REPO/.bernstein/overlay/base/COMMIT/tree      the base checkout, as the
 *                                                 overlay kind's (made once)
 *   REPO/.bernstein/overlay/task/NAME/reflink     the layer is a reflink
 *                                                 tree's (written first)
 *   REPO/.bernstein/overlay/task/NAME/base        the COMMIT copied from: it
 *                                                 keeps the base checkout
 *                                                 from checkout_overlay_gc()
 *                                                 while the tree lives
 *   REPO/.bernstein/overlay/task/NAME/synced      the tree was brought to
 *                                                 its branch's commit
 *   REPO/.bernstein/overlay/task/NAME/populated   the tree is whole
 *
 * The tree: `git worktree add --no-checkout` on its branch, then, driven
 * by the base checkout's index (orch/gitindex.h: every entry checked),
 * each regular file cloned (FICLONE) with its mode bits and mtime, each
 * symlink made again with its target (never followed), each gitlink an
 * empty directory; every step an *at() call relative to directory fds
 * opened with O_NOFOLLOW on both sides, so a symlink planted in the base
 * checkout or in the tree is never followed. Then the index is copied into
 * the worktree's administrative directory with each entry's stat data
 * those of the new file, so the first `git status` finds the tree clean
 * without reading a file. A tree on a commit other than the base
 * checkout's is brought to it by `git read-tree -m -u` (as the overlay
 * kind's). Then `populated`: from there on the tree is a plain worktree.
 *
 * A crash before `populated` (the branch not moved yet: no agent ran)
 * leaves a tree that the next make empties (all but its .git file) and
 * fills again; after it, the tree is used as it is. Removal deletes the
 * layer, then the worktree (checkout_wt_remove()).
 *
 * A sandboxed task's clone (CHECKOUT_CLONE_REFLINK) is made the same way
 * into a `git clone --shared --no-checkout` beside the tree, renamed into
 * place (checkout_reflink_clone_make() below). */
#include "orch/checkout.h"
#include "orch/checkout-internal.h"
#include "orch/gitindex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* an index bigger than this is not copied (100,000 files: about 10 MB) */
#define INDEX_MAX (1024u << 20)
/* directory depth the copier keeps open (one fd on each side a level:
 * 256 at most, well under the usual limit of 1,024) */
#define DEPTH_MAX 128

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static const char *reflink_strerror(int r)
{
	if (r == -EOPNOTSUPP || r == -EINVAL || r == -ENOTTY)
		return "the file system has no reflink copies (FICLONE refused)";
	if (r == -EXDEV)
		return "the tree and " CHECKOUT_OVERLAY_DIR " are on different file systems";
	return strerror(-r);
}

int checkout_reflink_probe(const char *repo, const char *path, struct diag *reterr)
{
	char parent[PATH_MAX];
	char *dir = sbuf_strf("%s/%s", repo, CHECKOUT_OVERLAY_DIR), *src = NULL, *dst = NULL;
	int in = -1, out = -1, r;

	path_dirname(path, parent, sizeof(parent));
	if ((r = mkdir_p(dir, 0755)) < 0 || (r = mkdir_p(parent, 0755)) < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot create '%s': %s", r == 0 ? parent : dir,
			 strerror(-r));
		goto out;
	}
	src = sbuf_strf("%s/reflink-probe-%ld", dir, (long)getpid());
	dst = sbuf_strf("%s/.bernstein-reflink-probe-%ld", parent, (long)getpid());
	(void)unlink(src);
	(void)unlink(dst);
	r = atomic_write_file(src, "probe\n", 6, 0600);
	if (r < 0) {
		diag_set(reterr, src, 0, 0, "cannot write: %s", strerror(-r));
		goto out;
	}
	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (in < 0 || out < 0) {
		r = -errno;
		diag_set(reterr, in < 0 ? src : dst, 0, 0, "cannot open: %s", strerror(-r));
		goto out;
	}
	if (ioctl(out, FICLONE, in) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "%s", reflink_strerror(r));
	}
out:
	if (in >= 0)
		(void)close(in);
	if (out >= 0)
		(void)close(out);
	if (src)
		(void)unlink(src);
	if (dst)
		(void)unlink(dst);
	free(dir);
	free(src);
	free(dst);
	return r;
}

bool checkout_reflink_owns(const char *repo, const char *path)
{
	struct layer ly;
	bool owns;

	checkout_layer_init(&ly, repo, path);
	owns = exists(ly.reflink);
	checkout_layer_release(&ly);
	return owns;
}

/* ---- the copier ---- */

/* The directories of the entry being copied, open on both sides: level k
 * is the path's first k components (level 0 the tops), ending at byte
 * end[k] of cur. */
struct dirs {
	int src[DEPTH_MAX + 1], dst[DEPTH_MAX + 1];
	size_t end[DEPTH_MAX + 1];
	size_t depth;
	char cur[PATH_MAX];
	size_t cur_len;
};

static void dirs_close_to(struct dirs *ds, size_t depth)
{
	while (ds->depth > depth) {
		(void)close(ds->src[ds->depth]);
		(void)close(ds->dst[ds->depth]);
		ds->depth--;
	}
	ds->cur_len = ds->end[ds->depth];
}

/* Why name under dir could not be opened as a directory (errno): a symlink
 * planted there is said as one (O_NOFOLLOW refused it: ELOOP or ENOTDIR). */
static int dir_error(int dir, const char *name, const char *what, const char **ret_what)
{
	int e = errno;
	struct stat st;

	if ((e == ELOOP || e == ENOTDIR) && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode)) {
		*ret_what = "a symlink where the index has a directory, not followed";
		return -EBADMSG;
	}
	*ret_what = what;
	return -e;
}

/* The directory path[0..len) entered on both sides (made on the target's
 * where missing): its fds at ds->src/dst[ds->depth]. */
static int dirs_enter(struct dirs *ds, const char *path, size_t len, const char **ret_what)
{
	size_t k = 0, i, j;
	char name[NAME_MAX + 1];
	int s, d, r;

	/* the levels path shares with the current directory stay open */
	while (k < ds->depth && ds->end[k + 1] <= len &&
	       memcmp(ds->cur, path, ds->end[k + 1]) == 0 &&
	       (ds->end[k + 1] == len || path[ds->end[k + 1]] == '/'))
		k++;
	dirs_close_to(ds, k);
	i = ds->end[k] ? ds->end[k] + 1 : 0;
	while (i < len) {
		j = i;
		while (j < len && path[j] != '/')
			j++;
		if (ds->depth >= DEPTH_MAX) {
			*ret_what = "too deep";
			return -ENAMETOOLONG;
		}
		memcpy(name, path + i, j - i);
		name[j - i] = '\0';
		if (mkdirat(ds->dst[ds->depth], name, 0777) < 0 && errno != EEXIST) {
			*ret_what = "mkdir";
			return -errno;
		}
		s = openat(ds->src[ds->depth], name,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0)
			return dir_error(ds->src[ds->depth], name,
					 "open a directory of the base checkout", ret_what);
		d = openat(ds->dst[ds->depth], name,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d < 0) {
			r = dir_error(ds->dst[ds->depth], name, "open a directory of the tree",
				      ret_what);
			(void)close(s);
			return r;
		}
		ds->depth++;
		ds->src[ds->depth] = s;
		ds->dst[ds->depth] = d;
		ds->end[ds->depth] = j;
		memcpy(ds->cur, path, j);
		ds->cur_len = j;
		i = j + 1;
	}
	return 0;
}

/* One regular file cloned: mode bits and mtime kept; *ret its new stat.
 * Created with its mode (a chmod only where the umask took a bit): one
 * inode update fewer per file, which shows on 100,000. */
static int clone_file(int sdir, int ddir, const char *name, struct stat *ret, const char **ret_what)
{
	struct timespec t[2];
	struct stat st;
	int in = -1, out = -1, r = 0;

	in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0) {
		*ret_what = "open in the base checkout";
		return -errno;
	}
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		*ret_what = "not a regular file in the base checkout";
		r = -EBADMSG;
		goto out;
	}
	out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     st.st_mode & 0777);
	if (out < 0) {
		*ret_what = "create in the tree";
		r = -errno;
		goto out;
	}
	t[0] = st.st_atim;
	t[1] = st.st_mtim;
	if (ioctl(out, FICLONE, in) < 0) {
		*ret_what = "clone (FICLONE)";
		r = -errno;
		goto out;
	}
	*ret_what = "set its mode and times";
	if (futimens(out, t) < 0 || fstat(out, ret) < 0)
		r = -errno;
	else if ((ret->st_mode & 0777) != (st.st_mode & 0777) &&
		 (fchmod(out, st.st_mode & 0777) < 0 || fstat(out, ret) < 0))
		r = -errno;
out:
	if (in >= 0)
		(void)close(in);
	if (out >= 0)
		(void)close(out);
	return r;
}

/* One symlink made again (its target as it is: never resolved). */
static int copy_symlink(int sdir, int ddir, const char *name, struct stat *ret,
			const char **ret_what)
{
	char target[PATH_MAX];
	struct timespec t[2];
	struct stat st;
	ssize_t n;

	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		*ret_what = "stat in the base checkout";
		return -errno;
	}
	if (!S_ISLNK(st.st_mode)) {
		*ret_what = "not a symlink in the base checkout";
		return -EBADMSG;
	}
	n = readlinkat(sdir, name, target, sizeof(target));
	if (n < 0 || (size_t)n >= sizeof(target)) {
		*ret_what = "read the symlink";
		return n < 0 ? -errno : -ENAMETOOLONG;
	}
	target[n] = '\0';
	t[0] = st.st_atim;
	t[1] = st.st_mtim;
	if (symlinkat(target, ddir, name) < 0 ||
	    utimensat(ddir, name, t, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fstatat(ddir, name, ret, AT_SYMLINK_NOFOLLOW) < 0) {
		*ret_what = "make the symlink in the tree";
		return -errno;
	}
	return 0;
}

/* Every file of the index ix (buffer buf) copied from the directory src
 * into dst, its stat data patched into buf. */
static int copy_entries(int src, int dst, const struct gitindex *ix, void *buf, struct diag *reterr)
{
	struct dirs ds;
	const char *what = "";
	size_t i;
	int r = 0;

	ds.depth = 0;
	ds.cur_len = 0;
	ds.end[0] = 0;
	ds.src[0] = src;
	ds.dst[0] = dst;
	for (i = 0; i < ix->n; i++) {
		const struct gitindex_entry *e = &ix->e[i];
		const char *slash = strrchr(e->path, '/'), *name;
		struct stat st;

		if (e->stage != 0 || e->skip_worktree)
			continue;
		name = slash ? slash + 1 : e->path;
		r = dirs_enter(&ds, e->path, slash ? (size_t)(slash - e->path) : 0, &what);
		if (r < 0)
			break;
		switch (e->mode) {
		case GITINDEX_MODE_SYMLINK:
			r = copy_symlink(ds.src[ds.depth], ds.dst[ds.depth], name, &st, &what);
			break;
		case GITINDEX_MODE_GITLINK:
			/* a submodule: an empty directory, as git leaves one */
			if (mkdirat(ds.dst[ds.depth], name, 0777) < 0 && errno != EEXIST) {
				what = "mkdir";
				r = -errno;
			}
			continue;
		default:
			r = clone_file(ds.src[ds.depth], ds.dst[ds.depth], name, &st, &what);
			break;
		}
		if (r < 0)
			break;
		gitindex_set_stat(buf, e, &st);
	}
	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "cannot copy '%s' from the base checkout: %s: %s",
			 i < ix->n ? ix->e[i].path : "", what,
			 r == -EBADMSG ? "refused" : reflink_strerror(r));
	dirs_close_to(&ds, 0);
	return r;
}

/* Everything in the tree but its .git file removed (a half-made tree). */
static int tree_empty(const char *path, struct diag *reterr)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int r = 0, q;

	if (!d) {
		r = -errno;
		diag_set(reterr, path, 0, 0, "cannot open: %s", strerror(-r));
		return r;
	}
	while ((de = readdir(d)) != NULL) {
		char *p;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		p = sbuf_strf("%s/%s", path, de->d_name);
		if ((q = rmtree_beneath(p)) < 0 && r == 0) {
			r = q;
			diag_set(reterr, p, 0, 0, "cannot remove: %s", strerror(-q));
		}
		free(p);
	}
	(void)closedir(d);
	return r;
}

/* The tree at tree filled from the base checkout lower (of commit) and
 * the index written to index with the new files' stat data; git runs
 * there with env. *ret_checked_out: the base's index could not drive the
 * copy (a split or sparse index) and git checked HEAD out instead. */
static int populate(const char *tree, const char *index, const char *const *env, const char *lower,
		    const char *commit, bool *ret_checked_out, struct diag *reterr)
{
	static const char *const checkout[] = {"read-tree", "-u", "--reset", "HEAD", NULL};
	char *base_admin = NULL, *src = NULL, *text = NULL;
	struct gitindex ix = GITINDEX_INIT;
	int sfd = -1, dfd = -1, r;
	struct diag d;
	size_t len;

	*ret_checked_out = false;
	if ((r = tree_empty(tree, reterr)) < 0 ||
	    (r = checkout_gitfile_dir(lower, &base_admin, reterr)) < 0)
		goto out;
	src = sbuf_strf("%s/index", base_admin);
	(void)unlink(index);
	r = read_file_capped(src, INDEX_MAX, &text, &len);
	if (r < 0) {
		diag_set(reterr, src, 0, 0, "cannot read the base checkout's index: %s",
			 file_strerror(r));
		goto out;
	}
	diag_clear(&d);
	r = gitindex_parse(text, len, strlen(commit) / 2, &ix, &d);
	if (r == -EOPNOTSUPP) {
		/* git knows that index: it checks the branch out itself */
		r = worktree_git_step(tree, env, true, checkout, reterr);
		*ret_checked_out = r >= 0;
		goto out;
	}
	if (r < 0) {
		diag_set(reterr, src, 0, 0, "%s", d.msg);
		goto out;
	}
	sfd = open(lower, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	dfd = open(tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0 || dfd < 0) {
		r = -errno;
		diag_set(reterr, sfd < 0 ? lower : tree, 0, 0, "cannot open: %s", strerror(-r));
		goto out;
	}
	if ((r = copy_entries(sfd, dfd, &ix, text, reterr)) < 0)
		goto out;
	len = gitindex_finish(text, len, &ix);
	if ((r = atomic_write_file(index, text, len, 0644)) < 0)
		diag_set(reterr, index, 0, 0, "cannot write: %s", strerror(-r));
out:
	if (sfd >= 0)
		(void)close(sfd);
	if (dfd >= 0)
		(void)close(dfd);
	gitindex_release(&ix);
	free(base_admin);
	free(src);
	free(text);
	return r;
}

/* A worktree's: its index in its administrative directory. */
static int populate_worktree(const struct checkout *co, const char *lower, const char *commit,
			     bool *ret_checked_out, struct diag *reterr)
{
	char *admin = NULL, *index = NULL;
	int r = checkout_gitfile_dir(co->path, &admin, reterr);

	if (r >= 0) {
		index = sbuf_strf("%s/index", admin);
		r = populate(co->path, index, checkout_git_env(co), lower, commit, ret_checked_out,
			     reterr);
	}
	free(admin);
	free(index);
	return r;
}

/* The tree not made (no reflinks): the plain kind, said in co->fallback. */
static int not_reflinked(struct checkout *co, const struct checkout_ops *plain, const char *base,
			 char **ret_start, const char *why, struct diag *reterr)
{
	char line[1024];

	(void)snprintf(line, sizeof(line), "reflink copies refused (%s)", why);
	return checkout_make_as(co, plain, base, ret_start, line, reterr);
}

/* What both kinds do first. 1 when the checkout was made as its plain
 * kind instead (the file system does not clone, or an earlier fallback
 * made it so: *ret_r its result), or when the layer cannot be started
 * (*ret_r the error); 0 when the layer is there and marked. */
static int layer_start(struct checkout *co, const struct checkout_ops *plain,
		       const struct layer *ly, const char *base, char **ret_start, int *ret_r,
		       struct diag *reterr)
{
	bool clone = plain == &checkout_clone_ops;
	struct diag d;
	int r;

	if (!exists(ly->dir) && !exists(co->path)) {
		/* not made yet: only where the file system clones */
		diag_clear(&d);
		if (checkout_reflink_probe(co->repo, co->path, &d) < 0) {
			*ret_r = not_reflinked(co, plain, base, ret_start, d.msg, reterr);
			return 1;
		}
	} else if (!exists(ly->dir)) {
		/* a tree made as the plain kind (an earlier fallback): one */
		co->ops = plain;
		*ret_r = co->ops->make(co, base, false, ret_start, reterr);
		return 1;
	}
	if ((r = mkdir_p(ly->dir, 0755)) < 0) {
		diag_set(reterr, ly->dir, 0, 0, "cannot create: %s", strerror(-r));
		*ret_r = r;
		return 1;
	}
	if ((!exists(ly->reflink) && (r = atomic_write_file(ly->reflink, "", 0, 0644)) < 0) ||
	    (clone && !exists(ly->clone) && (r = atomic_write_file(ly->clone, "", 0, 0644)) < 0)) {
		diag_set(reterr, ly->dir, 0, 0, "cannot write: %s", strerror(-r));
		*ret_r = r;
		return 1;
	}
	return 0;
}

/* Every step not done yet, in order (see the top of this file). */
int checkout_reflink_make(struct checkout *co, const char *base, bool made_by_command,
			  char **ret_start, struct diag *reterr)
{
	char *commit = NULL, *head = NULL, *lower = NULL;
	bool checked_out = false;
	struct layer ly;
	int r;

	(void)made_by_command; /* never: no command */
	checkout_layer_init(&ly, co->repo, co->path);
	if (layer_start(co, &checkout_worktree_ops, &ly, base, ret_start, &r, reterr))
		goto out;
	/* a tree whose directory is gone (deleted by hand) is made again
	 * whole: git registers it again on its branch, then the copy */
	if (!exists(co->path))
		(void)unlink(ly.populated);
	r = worktree_add_no_checkout(co->repo, co->path, co->branch, base, co->git_env, ret_start,
				     reterr);
	if (r < 0 || exists(ly.populated))
		goto out;
	/* (again) from scratch: nothing an agent did is lost, none ran */
	(void)unlink(ly.synced);
	if ((r = checkout_layer_commit(co, &ly, &commit, &head, reterr)) < 0 ||
	    (r = checkout_base_make(co, commit, &lower, reterr)) < 0 ||
	    (r = populate_worktree(co, lower, commit, &checked_out, reterr)) < 0)
		goto out;
	r = checkout_layer_sync(co, &ly, checked_out ? head : commit, head, reterr);
	if (r >= 0 && (r = atomic_write_file(ly.populated, "", 0, 0644)) < 0)
		diag_set(reterr, ly.populated, 0, 0, "cannot write: %s", strerror(-r));
out:
	checkout_layer_release(&ly);
	free(commit);
	free(head);
	free(lower);
	return r;
}

/* The task's layer removed (first: a crash after it leaves a plain
 * worktree or clone, removed as one). */
static int layer_remove(const struct checkout *co, struct diag *reterr)
{
	struct layer ly;
	int r;

	checkout_layer_init(&ly, co->repo, co->path);
	r = rmtree_beneath(ly.dir);
	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "cannot remove the reflink layer '%s': %s", ly.dir,
			 strerror(-r));
	checkout_layer_release(&ly);
	return r;
}

/* The layer, then the worktree. */
int checkout_reflink_remove(const struct checkout *co, struct diag *reterr)
{
	int r = layer_remove(co, reterr);

	return r < 0 ? r : checkout_wt_remove(co, reterr);
}

/* A sandboxed task's clone (CHECKOUT_CLONE_REFLINK), every step not done
 * yet: made whole beside the tree (task/NAME/clone-tmp: `git clone --shared
 * --no-checkout` at the base branch's commit, the copy, its .git/index,
 * `git read-tree -m -u` to that commit when the base checkout is another
 * commit's; git unconfined there, where no agent ran), renamed into place,
 * then `populated`. A tree without `populated` is made again from scratch
 * (no agent ran in it); one with it is a clone as any. */
int checkout_reflink_clone_make(struct checkout *co, const char *base, bool made_by_command,
				char **ret_start, struct diag *reterr)
{
	const char *sync[] = {"read-tree", "-m", "-u", NULL, NULL, NULL};
	char *head = NULL, *commit = NULL, *lower = NULL, *rev = NULL, *tmp = NULL;
	char *index = NULL, parent[PATH_MAX];
	bool checked_out = false;
	struct layer ly;
	int r;

	(void)made_by_command; /* never: no command */
	checkout_layer_init(&ly, co->repo, co->path);
	tmp = sbuf_strf("%s/clone-tmp", ly.dir);
	if (layer_start(co, &checkout_clone_ops, &ly, base, ret_start, &r, reterr))
		goto out;
	if (exists(ly.populated) && exists(co->path)) {
		r = worktree_clone_check(co->path, reterr);
		goto out;
	}
	/* (again) from scratch: no agent ran in what is there */
	(void)unlink(ly.populated);
	if ((r = rmtree_beneath(co->path)) < 0 || (r = rmtree_beneath(tmp)) < 0) {
		diag_set(reterr, co->path, 0, 0, "cannot remove a half-made clone: %s",
			 strerror(-r));
		goto out;
	}
	rev = sbuf_strf("%s^{commit}", base);
	if ((r = git_rev_parse(co->repo, rev, co->git_env, &head, reterr)) < 0 ||
	    (r = checkout_layer_lower(co, &ly, head, &commit, reterr)) < 0 ||
	    (r = checkout_base_make(co, commit, &lower, reterr)) < 0 ||
	    (r = worktree_clone_bare(co->repo, tmp, co->branch, head, co->git_env, reterr)) < 0)
		goto out;
	index = sbuf_strf("%s/.git/index", tmp);
	if ((r = populate(tmp, index, co->git_env, lower, commit, &checked_out, reterr)) < 0)
		goto out;
	if (!checked_out && strcmp(commit, head) != 0) {
		sync[3] = commit;
		sync[4] = head;
		if ((r = worktree_git_step(tmp, co->git_env, true, sync, reterr)) < 0)
			goto out;
	}
	path_dirname(co->path, parent, sizeof(parent));
	if ((r = mkdir_p(parent, 0755)) < 0 || rename(tmp, co->path) < 0) {
		r = r < 0 ? r : -errno;
		diag_set(reterr, co->path, 0, 0, "cannot move the clone into place: %s",
			 strerror(-r));
		goto out;
	}
	if ((r = atomic_write_file(ly.populated, "", 0, 0644)) < 0) {
		diag_set(reterr, ly.populated, 0, 0, "cannot write: %s", strerror(-r));
		goto out;
	}
	if (ret_start) {
		*ret_start = head;
		head = NULL;
	}
out:
	checkout_layer_release(&ly);
	free(head);
	free(commit);
	free(lower);
	free(rev);
	free(tmp);
	free(index);
	return r;
}

/* The layer, then the clone. */
int checkout_reflink_clone_remove(const struct checkout *co, struct diag *reterr)
{
	int r = layer_remove(co, reterr);

	return r < 0 ? r : checkout_clone_remove(co, reterr);
}
