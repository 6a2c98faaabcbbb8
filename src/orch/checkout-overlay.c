/* The overlay kind of checkout (orch/checkout.h, CHECKOUT_OVERLAY): a
 * task's tree in constant time whatever the size of the repository.
 *
 *   REPO/.bernstein/overlay/base/COMMIT/tree    a detached, locked worktree
 *                                               of COMMIT: the read-only
 *                                               lower layer of every task
 *                                               on COMMIT
 *   REPO/.bernstein/overlay/base/COMMIT/ready    written once tree and its
 *                                               index are whole
 *   REPO/.bernstein/overlay/task/NAME/base       the COMMIT of the lower
 *   REPO/.bernstein/overlay/task/NAME/upper      the task's layer: its edits
 *   REPO/.bernstein/overlay/task/NAME/work       overlayfs's work directory
 *   REPO/.bernstein/overlay/task/NAME/indexed    the index was copied in
 *   REPO/.bernstein/overlay/task/NAME/synced     the tree is at its branch's
 *                                               commit (checkout_layer_sync())
 *   REPO/.bernstein/overlay/task/NAME/userxattr  the layer is mounted with
 *                                               `userxattr` (made in a user
 *                                               namespace: its whiteouts and
 *                                               opaque directories are
 *                                               user.overlay.* xattrs)
 *
 * The task's tree (its path, NAME its last component) is a `git worktree
 * add --no-checkout` on its branch with the overlay mounted on it; its
 * .git file is copied into the upper layer (the mount hides the one
 * below) and the base checkout's index into its administrative directory,
 * so the first `git status` there stats the files of the lower layer and
 * finds them as the index says: only the task's edits are changes.
 *
 * A tree on a commit that has no base checkout yet (the base branch moved:
 * a dependency was merged) shares the newest base checkout there is, and
 * `git read-tree -m -u BASE HEAD` in it writes the files that differ into
 * its upper layer: one full checkout per run, not one per commit.
 *
 * What the agent controls: everything it sees in the tree, hence the upper
 * layer (symlinks, whiteouts, a replaced .git file). The lower layer is
 * written only through the mount, which copies up: the shared checkout
 * never changes (a sandboxed agent has no write access to .bernstein/ at
 * all; an unsandboxed one has the user's). Removal unmounts by the exact
 * mount point it finds in /proc/self/mountinfo, with UMOUNT_NOFOLLOW, only
 * an overlay whose upper layer is this task's, and deletes the layer with
 * rmtree_beneath() (never following a symlink). The order of the steps
 * makes every crash point one that the next make or remove finishes:
 * the task directory before the worktree; the index before `indexed`; the
 * mount, then the sync before `synced`; on removal the mount first, the
 * layer, then the worktree. */
#include "orch/checkout.h"
#include "orch/checkout-internal.h"

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
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/mountinfo.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define OVERLAY_MOUNT_FLAGS (MS_NOSUID | MS_NODEV)
#define GITFILE_MAX	    (PATH_MAX + 16)
#define COMMIT_HEX_MAX	    64

static const char *last_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static bool is_hex_commit(const char *s)
{
	size_t n = strlen(s), i;

	if (n != 40 && n != 64)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* What overlayfs's option string can carry: no separator of its own (',',
 * ':', '='), no escape or white space. */
static bool mount_path_ok(const char *p)
{
	return *p == '/' && !strpbrk(p, ",:=\\ \t\n");
}

/* ---- mounts ---- */

enum mount_at { MOUNT_NONE, MOUNT_OURS, MOUNT_OTHER };

/* What is mounted at path (absolute, canonical) now: nothing, the overlay
 * whose upper layer is upper, or something else (the last mount on it is
 * what the path shows). */
static enum mount_at mounted_at(const char *path, const char *upper)
{
	enum mount_at at = MOUNT_NONE;
	char *text = NULL, *line, *nl;
	size_t len;

	if (read_file_capped(MOUNTINFO_PATH, 64u << 20, &text, &len) < 0)
		return MOUNT_NONE;
	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		struct mountinfo_entry e;
		char *up = NULL;

		nl = strchr(line, '\n');
		if (mountinfo_parse_line(line, nl ? (size_t)(nl - line) : strlen(line), &e) < 0)
			continue;
		if (strcmp(e.mount_point, path) == 0) {
			at = MOUNT_OTHER;
			if (strcmp(e.fstype, "overlay") == 0 &&
			    mountinfo_opt(e.super_opts, "upperdir", &up) == 0 &&
			    strcmp(up, upper) == 0)
				at = MOUNT_OURS;
			free(up);
		}
		mountinfo_entry_release(&e);
	}
	free(text);
	return at;
}

/* Whether an overlay mount has lower as its (single) lower layer. */
static bool lower_in_use(const char *lower)
{
	char *text = NULL, *line, *nl;
	bool used = false;
	size_t len;

	if (read_file_capped(MOUNTINFO_PATH, 64u << 20, &text, &len) < 0)
		return true; /* cannot tell: keep it */
	for (line = text; line && *line && !used; line = nl ? nl + 1 : NULL) {
		struct mountinfo_entry e;
		char *low = NULL;

		nl = strchr(line, '\n');
		if (mountinfo_parse_line(line, nl ? (size_t)(nl - line) : strlen(line), &e) < 0)
			continue;
		if (strcmp(e.fstype, "overlay") == 0 &&
		    mountinfo_opt(e.super_opts, "lowerdir", &low) == 0 && strcmp(low, lower) == 0)
			used = true;
		free(low);
		mountinfo_entry_release(&e);
	}
	free(text);
	return used;
}

/* Whether this process is outside the initial user namespace: there
 * overlayfs cannot write its trusted.overlay.* xattrs (they need
 * CAP_SYS_ADMIN in the initial one) and its mounts take `userxattr`
 * (user.overlay.*), else removing or renaming a directory of the lower
 * layer fails (EIO, EXDEV). The initial namespace maps every id to
 * itself: "0 0 4294967295". */
bool checkout_overlay_in_userns(void)
{
	char *text = NULL, *nl;
	size_t len;
	bool in;
	unsigned long a, b, n;

	if (read_file_capped("/proc/self/uid_map", 4096, &text, &len) < 0)
		return false;
	nl = strchr(text, '\n');
	in = !(sscanf(text, "%lu %lu %lu", &a, &b, &n) == 3 && a == 0 && b == 0 &&
	       n == 4294967295ul && (!nl || !nl[1]));
	free(text);
	return in;
}

static int overlay_mount(const char *lower, const char *upper, const char *work, const char *target,
			 bool userxattr, struct diag *reterr)
{
	char *opts = sbuf_strf("lowerdir=%s,upperdir=%s,workdir=%s%s", lower, upper, work,
			       userxattr ? ",userxattr" : "");
	int r = 0;

	if (mount("overlay", target, "overlay", OVERLAY_MOUNT_FLAGS, opts) < 0) {
		r = -errno;
		diag_set(reterr, target, 0, 0, "cannot mount an overlay: %s", strerror(-r));
	}
	free(opts);
	return r;
}

int checkout_overlay_probe(const char *repo, struct diag *reterr)
{
	char *dir = sbuf_strf("%s/%s/probe-%ld", repo, CHECKOUT_OVERLAY_DIR, (long)getpid());
	char *l = sbuf_strf("%s/l", dir), *u = sbuf_strf("%s/u", dir), *w = sbuf_strf("%s/w", dir),
	     *m = sbuf_strf("%s/m", dir);
	int r;

	if (!mount_path_ok(dir)) {
		diag_set(
			reterr, repo, 0, 0,
			"the repository's path has a character overlay options cannot carry (',', ':', '=', a backslash or white space)");
		r = -EINVAL;
		goto out;
	}
	(void)rmtree_beneath(dir);
	if ((r = mkdir_p(l, 0700)) < 0 || (r = mkdir_p(u, 0700)) < 0 ||
	    (r = mkdir_p(w, 0700)) < 0 || (r = mkdir_p(m, 0700)) < 0) {
		diag_set(reterr, dir, 0, 0, "cannot create: %s", strerror(-r));
		goto out;
	}
	r = overlay_mount(l, u, w, m, checkout_overlay_in_userns(), reterr);
	if (r == -EPERM)
		diag_set(
			reterr, m, 0, 0,
			"cannot mount an overlay: %s (mounting needs CAP_SYS_ADMIN in the mount namespace's owner)",
			strerror(-r));
	else if (r == -ENODEV)
		diag_set(reterr, m, 0, 0, "cannot mount an overlay: the kernel has no overlayfs");
	if (r >= 0)
		(void)umount2(m, UMOUNT_NOFOLLOW | MNT_DETACH);
out:
	(void)rmtree_beneath(dir);
	free(dir);
	free(l);
	free(u);
	free(w);
	free(m);
	return r;
}

/* ---- files ---- */

/* The administrative directory a fresh .git file at top names ("gitdir:
 * DIR"), caller frees. Read only before any agent ran there. */
int checkout_gitfile_dir(const char *top, char **ret, struct diag *reterr)
{
	char *p = sbuf_strf("%s/.git", top), *text = NULL, *e;
	size_t len;
	int r = read_file_capped(p, GITFILE_MAX, &text, &len);

	if (r >= 0 && strncmp(text, "gitdir: ", 8) != 0)
		r = -EBADMSG;
	if (r < 0) {
		diag_set(reterr, p, 0, 0, "cannot read the worktree's .git file: %s",
			 file_strerror(r));
		goto out;
	}
	e = text + strcspn(text, "\r\n");
	*e = '\0';
	*ret = xstrdup(text + 8);
out:
	free(p);
	free(text);
	return r;
}

/* src copied to dst (a new file, written beside it and renamed): a reflink
 * where the file system has them, else bytes. */
static int copy_file(const char *src, const char *dst, struct diag *reterr)
{
	char *tmp = sbuf_strf("%s.bernstein-tmp", dst);
	int in = -1, out = -1, r;
	char buf[65536];
	ssize_t n;

	in = open_regular(src, O_RDONLY | O_NOFOLLOW, 0);
	if (in < 0) {
		r = in;
		goto fail;
	}
	(void)unlink(tmp);
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		r = -errno;
		goto fail;
	}
	if (ioctl(out, FICLONE, in) < 0) {
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if ((r = write_all(out, buf, (size_t)n)) < 0)
				goto fail;
		if (n < 0) {
			r = -errno;
			goto fail;
		}
	}
	if (close(out) < 0) {
		out = -1;
		r = -errno;
		goto fail;
	}
	out = -1;
	if (rename(tmp, dst) < 0) {
		r = -errno;
		goto fail;
	}
	(void)close(in);
	free(tmp);
	return 0;
fail:
	diag_set(reterr, dst, 0, 0, "cannot copy '%s' here: %s", src, file_strerror(r));
	if (in >= 0)
		(void)close(in);
	if (out >= 0)
		(void)close(out);
	(void)unlink(tmp);
	free(tmp);
	return r;
}

/* ---- the shared base checkouts ---- */

/* REPO/.bernstein/overlay/base/COMMIT/tree made (once per commit), with an
 * index whose stat data match its files: *ret its path (caller frees). */
int checkout_base_make(const struct checkout *co, const char *commit, char **ret,
		       struct diag *reterr)
{
	char *dir = sbuf_strf("%s/%s/base/%s", co->repo, CHECKOUT_OVERLAY_DIR, commit);
	char *tree = sbuf_strf("%s/tree", dir), *ready = sbuf_strf("%s/ready", dir);
	const char *add[] = {"worktree", "add", "--detach", "--lock", tree, commit, NULL};
	static const char *const refresh[] = {"update-index", "-q", "--refresh", NULL};
	struct timespec sec = {1, 0};
	int r = 0;

	if (exists(ready))
		goto done;
	/* half made by a killed bernstein: made again */
	if (exists(tree) &&
	    (r = worktree_remove(co->repo, tree, false, NULL, co->git_env, reterr)) < 0)
		goto out;
	(void)rmtree_beneath(tree);
	if ((r = mkdir_p(dir, 0755)) < 0) {
		diag_set(reterr, dir, 0, 0, "cannot create: %s", strerror(-r));
		goto out;
	}
	r = worktree_git_step(co->repo, co->git_env, true, add, reterr);
	if (r < 0)
		goto out;
	/* files written in the second the index was: "racily clean" for git,
	 * which would read each of them again in every task; refreshed a
	 * second later, the index says they are clean for good */
	(void)nanosleep(&sec, NULL);
	r = worktree_git_step(tree, co->git_env, true, refresh, reterr);
	if (r < 0)
		goto out;
	r = atomic_write_file(ready, commit, strlen(commit), 0644);
	if (r < 0) {
		diag_set(reterr, ready, 0, 0, "cannot write: %s", strerror(-r));
		goto out;
	}
done:
	*ret = tree;
	tree = NULL;
out:
	free(dir);
	free(tree);
	free(ready);
	return r;
}

static int base_remove(const char *repo, const char *const *env, const char *dir,
		       struct diag *reterr)
{
	char *tree = sbuf_strf("%s/tree", dir);
	int r = 0;

	if (exists(tree))
		r = worktree_remove(repo, tree, false, NULL, env, reterr);
	if (r >= 0 && (r = rmtree_beneath(dir)) < 0)
		diag_set(reterr, dir, 0, 0, "cannot remove: %s", strerror(-r));
	free(tree);
	return r;
}

/* ---- the task's layer ---- */

void checkout_layer_init(struct layer *ly, const char *repo, const char *path)
{
	ly->dir = sbuf_strf("%s/%s/task/%s", repo, CHECKOUT_OVERLAY_DIR, last_name(path));
	ly->upper = sbuf_strf("%s/upper", ly->dir);
	ly->work = sbuf_strf("%s/work", ly->dir);
	ly->base = sbuf_strf("%s/base", ly->dir);
	ly->indexed = sbuf_strf("%s/indexed", ly->dir);
	ly->synced = sbuf_strf("%s/synced", ly->dir);
	ly->userxattr = sbuf_strf("%s/userxattr", ly->dir);
	ly->clone = sbuf_strf("%s/clone", ly->dir);
	ly->reflink = sbuf_strf("%s/reflink", ly->dir);
	ly->populated = sbuf_strf("%s/populated", ly->dir);
}

void checkout_layer_release(struct layer *ly)
{
	free(ly->dir);
	free(ly->upper);
	free(ly->work);
	free(ly->base);
	free(ly->indexed);
	free(ly->synced);
	free(ly->userxattr);
	free(ly->clone);
	free(ly->reflink);
	free(ly->populated);
}

bool checkout_overlay_owns(const char *repo, const char *path)
{
	struct layer ly;
	bool owns;

	checkout_layer_init(&ly, repo, path);
	owns = exists(ly.dir);
	checkout_layer_release(&ly);
	return owns;
}

bool checkout_overlay_owns_clone(const char *repo, const char *path)
{
	struct layer ly;
	bool clone;

	checkout_layer_init(&ly, repo, path);
	clone = exists(ly.clone);
	checkout_layer_release(&ly);
	return clone;
}

/* A commit id read from the file path (a line), or NULL. */
static char *read_commit(const char *path)
{
	char *text = NULL;
	size_t len;

	if (read_file_capped(path, COMMIT_HEX_MAX + 1, &text, &len) == 0) {
		text[strcspn(text, "\n")] = '\0';
		if (is_hex_commit(text))
			return text;
	}
	free(text);
	return NULL;
}

/* The commit of the base checkout that is ready and was made last, or
 * NULL: the one a tree on another commit shares. */
static char *newest_base(const char *repo)
{
	char *bases = sbuf_strf("%s/%s/base", repo, CHECKOUT_OVERLAY_DIR), *best = NULL;
	struct timespec best_t = {0, 0};
	struct dirent *de;
	DIR *d = opendir(bases);

	while (d && (de = readdir(d)) != NULL) {
		char *ready = sbuf_strf("%s/%s/ready", bases, de->d_name);
		struct stat st;

		if (is_hex_commit(de->d_name) && lstat(ready, &st) == 0 && S_ISREG(st.st_mode) &&
		    (!best || st.st_mtim.tv_sec > best_t.tv_sec ||
		     (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec))) {
			free(best);
			best = xstrdup(de->d_name);
			best_t = st.st_mtim;
		}
		free(ready);
	}
	if (d)
		(void)closedir(d);
	free(bases);
	return best;
}

/* The commit of the lower layer (*ret_lower, caller frees): the lower
 * recorded in the layer (a resume: the layer was made against it), else a
 * base checkout already made (of head, the tree's commit, else the newest:
 * the tree is brought from there to its own commit by checkout_layer_sync()), else
 * head; recorded now. head NULL: only a recorded one (-EIO without). */
int checkout_layer_lower(const struct checkout *co, const struct layer *ly, const char *head,
			 char **ret_lower, struct diag *reterr)
{
	char *lower = NULL, *ready;
	int r;

	lower = read_commit(ly->base);
	if (!lower && !head) {
		diag_set(reterr, ly->base, 0, 0,
			 "the overlay layer records no base commit (damaged): remove the tree");
		return -EIO;
	}
	if (!lower) {
		ready = sbuf_strf("%s/%s/base/%s/ready", co->repo, CHECKOUT_OVERLAY_DIR, head);
		lower = exists(ready) ? NULL : newest_base(co->repo);
		free(ready);
		if (!lower)
			lower = xstrdup(head);
		r = atomic_write_file(ly->base, lower, strlen(lower), 0644);
		if (r < 0) {
			diag_set(reterr, ly->base, 0, 0, "cannot write: %s", strerror(-r));
			free(lower);
			return r;
		}
	}
	*ret_lower = lower;
	return 0;
}

/* The commit of the lower layer and the branch's (in the repository), as
 * checkout_layer_lower(). Both caller frees. */
int checkout_layer_commit(const struct checkout *co, const struct layer *ly, char **ret_lower,
			  char **ret_head, struct diag *reterr)
{
	char *ref = sbuf_strf("refs/heads/%s", co->branch), *head = NULL;
	int r = git_rev_parse(co->repo, ref, co->git_env, &head, reterr);

	free(ref);
	if (r >= 0)
		r = checkout_layer_lower(co, ly, head, ret_lower, reterr);
	if (r < 0) {
		free(head);
		return r;
	}
	*ret_head = head;
	return 0;
}

/* A tree whose lower layer is another commit's brought to its branch's
 * (`git read-tree -m -u LOWER HEAD` in it: only the files that differ are
 * written, into the upper layer); once, before any agent ran there. */
int checkout_layer_sync(const struct checkout *co, const struct layer *ly, const char *lower,
			const char *head, struct diag *reterr)
{
	const char *args[] = {"read-tree", "-m", "-u", lower, head, NULL};
	int r;

	if (exists(ly->synced))
		return 0;
	r = strcmp(lower, head) == 0
		    ? 0
		    : worktree_git_step(co->path, checkout_git_env(co), true, args, reterr);
	if (r >= 0 && (r = atomic_write_file(ly->synced, "", 0, 0644)) < 0)
		diag_set(reterr, ly->synced, 0, 0, "cannot write: %s", strerror(-r));
	return r;
}

/* The base checkout's index into the task's administrative directory, its
 * .git file into the upper layer: once, before the first mount. */
static int layer_index(const struct checkout *co, const struct layer *ly, const char *lower,
		       struct diag *reterr)
{
	char *admin = NULL, *base_admin = NULL, *src = NULL, *dst = NULL;
	int r;

	if (exists(ly->indexed))
		return 0;
	if ((r = checkout_gitfile_dir(co->path, &admin, reterr)) < 0 ||
	    (r = checkout_gitfile_dir(lower, &base_admin, reterr)) < 0)
		goto out;
	src = sbuf_strf("%s/index", base_admin);
	dst = sbuf_strf("%s/index", admin);
	r = copy_file(src, dst, reterr);
	free(src);
	free(dst);
	src = sbuf_strf("%s/.git", co->path);
	dst = sbuf_strf("%s/.git", ly->upper);
	if (r >= 0)
		r = copy_file(src, dst, reterr);
	if (r >= 0 && (r = atomic_write_file(ly->indexed, "", 0, 0644)) < 0)
		diag_set(reterr, ly->indexed, 0, 0, "cannot write: %s", strerror(-r));
out:
	free(admin);
	free(base_admin);
	free(src);
	free(dst);
	return r;
}

/* Which xattrs the layer's overlay keeps its whiteouts in: a new layer
 * (no upper/ yet) those of this process's namespace, recorded first (the
 * userxattr file); an existing one those it was made with. A layer made
 * with trusted.* xattrs cannot be mounted again from a user namespace
 * (it cannot read them: deleted files would come back). */
static int layer_xattrs(const struct layer *ly, bool *ret, struct diag *reterr)
{
	bool in = checkout_overlay_in_userns();
	int r;

	if (exists(ly->upper)) {
		*ret = exists(ly->userxattr);
		if (in && !*ret) {
			diag_set(
				reterr, ly->dir, 0, 0,
				"cannot mount this layer in a user namespace: it was made outside one (its whiteouts are trusted.* xattrs); resume as the user who started the run");
			return -EPERM;
		}
		return 0;
	}
	if ((r = mkdir_p(ly->dir, 0755)) < 0) {
		diag_set(reterr, ly->dir, 0, 0, "cannot create: %s", strerror(-r));
		return r;
	}
	r = in ? atomic_write_file(ly->userxattr, "", 0, 0644)
	       : (unlink(ly->userxattr) < 0 && errno != ENOENT ? -errno : 0);
	if (r < 0) {
		diag_set(reterr, ly->userxattr, 0, 0, "cannot write: %s", strerror(-r));
		return r;
	}
	*ret = in;
	return 0;
}

/* Every step of the layer's making that is not done yet, in order (see
 * the top of this file): what a crash between two of them left is
 * finished here. */
static int layer_make(struct checkout *co, const struct layer *ly, const char *base,
		      char **ret_start, struct diag *reterr)
{
	char *commit = NULL, *head = NULL, *lower = NULL, abs[PATH_MAX];
	bool userxattr;
	int r;

	if ((r = layer_xattrs(ly, &userxattr, reterr)) < 0)
		return r;
	if ((r = mkdir_p(ly->upper, 0755)) < 0 || (r = mkdir_p(ly->work, 0700)) < 0) {
		diag_set(reterr, ly->dir, 0, 0, "cannot create: %s", strerror(-r));
		return r;
	}
	r = worktree_add_no_checkout(co->repo, co->path, co->branch, base, co->git_env, ret_start,
				     reterr);
	if (r >= 0)
		r = checkout_layer_commit(co, ly, &commit, &head, reterr);
	if (r >= 0)
		r = checkout_base_make(co, commit, &lower, reterr);
	if (r >= 0)
		r = layer_index(co, ly, lower, reterr);
	if (r >= 0 && !(realpath(co->path, abs) && mounted_at(abs, ly->upper) == MOUNT_OURS))
		r = overlay_mount(lower, ly->upper, ly->work, co->path, userxattr, reterr);
	if (r >= 0)
		r = checkout_layer_sync(co, ly, commit, head, reterr);
	free(commit);
	free(head);
	free(lower);
	return r;
}

/* A sandboxed task's layer (checkout_clone_overlay_make()): every step not
 * done yet, in order. The upper layer is the task's clone (its .git
 * directory, no file): made beside as clone-tmp, the base checkout's index
 * copied in, then renamed into place, so an upper/ is whole; its files are
 * the lower layer's through the mount. Git runs unconfined only in the
 * fresh clone-tmp (no agent ran there); in the mounted tree confined, as in
 * any clone. */
static int clone_layer_make(struct checkout *co, const struct layer *ly, const char *base,
			    char **ret_start, struct diag *reterr)
{
	char *head = NULL, *commit = NULL, *lower = NULL, *tmp = sbuf_strf("%s/clone-tmp", ly->dir);
	char *base_admin = NULL, *src = NULL, *dst = NULL, *rev = NULL, *start = NULL;
	char abs[PATH_MAX];
	const char *args[] = {"read-tree", "-m", "-u", NULL, NULL, NULL};
	bool userxattr, fresh;
	int r;

	if ((r = layer_xattrs(ly, &userxattr, reterr)) < 0)
		goto out;
	if ((r = atomic_write_file(ly->clone, "", 0, 0644)) < 0) {
		diag_set(reterr, ly->clone, 0, 0, "cannot write: %s", strerror(-r));
		goto out;
	}
	if ((r = mkdir_p(ly->work, 0700)) < 0) {
		diag_set(reterr, ly->work, 0, 0, "cannot create: %s", strerror(-r));
		goto out;
	}
	fresh = !exists(ly->upper);
	if (fresh) {
		rev = sbuf_strf("%s^{commit}", base);
		if ((r = git_rev_parse(co->repo, rev, co->git_env, &head, reterr)) < 0)
			goto out;
	}
	if ((r = checkout_layer_lower(co, ly, head, &commit, reterr)) < 0 ||
	    (r = checkout_base_make(co, commit, &lower, reterr)) < 0)
		goto out;
	if (fresh) {
		if ((r = rmtree_beneath(tmp)) < 0) {
			diag_set(reterr, tmp, 0, 0, "cannot remove: %s", strerror(-r));
			goto out;
		}
		r = worktree_clone_bare(co->repo, tmp, co->branch, head, co->git_env, reterr);
		if (r >= 0)
			r = checkout_gitfile_dir(lower, &base_admin, reterr);
		if (r < 0)
			goto out;
		src = sbuf_strf("%s/index", base_admin);
		dst = sbuf_strf("%s/.git/index", tmp);
		if ((r = copy_file(src, dst, reterr)) < 0)
			goto out;
		if (rename(tmp, ly->upper) < 0) {
			r = -errno;
			diag_set(reterr, ly->upper, 0, 0, "cannot move the clone into place: %s",
				 strerror(-r));
			goto out;
		}
		start = xstrdup(head);
	}
	if ((r = mkdir_p(co->path, 0755)) < 0) {
		diag_set(reterr, co->path, 0, 0, "cannot create: %s", strerror(-r));
		goto out;
	}
	if (!(realpath(co->path, abs) && mounted_at(abs, ly->upper) == MOUNT_OURS) &&
	    (r = overlay_mount(lower, ly->upper, ly->work, co->path, userxattr, reterr)) < 0)
		goto out;
	if ((r = worktree_clone_check(co->path, reterr)) < 0 || exists(ly->synced))
		goto out;
	/* brought from the lower layer's commit to the clone's branch (made at
	 * head, moved by no agent yet: none ran before `synced`) */
	free(head);
	head = NULL;
	r = git_branch_commit(co->path, co->branch, checkout_git_env(co), &head, reterr);
	if (r >= 0 && strcmp(commit, head) != 0) {
		args[3] = commit;
		args[4] = head;
		r = worktree_git_step(co->path, checkout_git_env(co), true, args, reterr);
	}
	if (r >= 0 && (r = atomic_write_file(ly->synced, "", 0, 0644)) < 0)
		diag_set(reterr, ly->synced, 0, 0, "cannot write: %s", strerror(-r));
out:
	if (r >= 0 && start && ret_start) {
		*ret_start = start;
		start = NULL;
	}
	free(start);
	free(head);
	free(commit);
	free(lower);
	free(tmp);
	free(base_admin);
	free(src);
	free(dst);
	free(rev);
	return r;
}

/* The overlay refused (why): the tree made by reflink copies where the
 * file system has them (checkout-reflink.c: a worktree, or a sandboxed
 * task's clone), else the plain kind with both reasons. */
static int refused(struct checkout *co, const struct checkout_ops *plain, const char *base,
		   char **ret_start, const char *why, struct diag *reterr)
{
	char line[1024];
	struct diag d;

	diag_clear(&d);
	if (checkout_reflink_probe(co->repo, co->path, &d) == 0) {
		(void)snprintf(line, sizeof(line), "overlay refused (%s): reflink copies", why);
		return checkout_make_as(co,
					plain == &checkout_worktree_ops
						? &checkout_reflink_ops
						: &checkout_reflink_clone_ops,
					base, ret_start, line, reterr);
	}
	(void)snprintf(line, sizeof(line), "overlay refused (%s); reflink copies refused (%s)", why,
		       d.msg);
	return checkout_make_as(co, plain, base, ret_start, line, reterr);
}

typedef int layer_make_fn(struct checkout *co, const struct layer *ly, const char *base,
			  char **ret_start, struct diag *reterr);

/* What both overlay kinds make: plain the kind a tree without a layer is
 * (an earlier fallback), or falls back to; make the layer's. */
static int overlay_make(struct checkout *co, const struct checkout_ops *plain, layer_make_fn *make,
			const char *base, char **ret_start, struct diag *reterr)
{
	char abs[PATH_MAX];
	struct layer ly;
	struct diag d;
	int r;

	checkout_layer_init(&ly, co->repo, co->path);
	if (!exists(ly.dir)) {
		/* a tree made as the plain kind (an earlier fallback): one */
		if (exists(co->path)) {
			co->ops = plain;
			r = plain->make(co, base, false, ret_start, reterr);
			goto out;
		}
		diag_clear(&d);
		if (!mount_path_ok(co->path) || !mount_path_ok(ly.dir))
			r = refused(co, plain, base, ret_start,
				    "the tree's path has a character overlay options cannot carry",
				    reterr);
		else if (checkout_overlay_probe(co->repo, &d) < 0)
			r = refused(co, plain, base, ret_start, d.msg, reterr);
		else
			r = make(co, &ly, base, ret_start, reterr);
		goto out;
	}
	/* resumed: mounted already (and brought to its commit), or the layer
	 * to mount again; the steps a crash interrupted finished */
	if (exists(ly.synced) && realpath(co->path, abs) &&
	    mounted_at(abs, ly.upper) == MOUNT_OURS) {
		r = 0;
		goto out;
	}
	r = make(co, &ly, base, ret_start, reterr);
out:
	checkout_layer_release(&ly);
	return r;
}

int checkout_overlay_make(struct checkout *co, const char *base, bool made_by_command,
			  char **ret_start, struct diag *reterr)
{
	(void)made_by_command; /* never: no command */
	return overlay_make(co, &checkout_worktree_ops, layer_make, base, ret_start, reterr);
}

int checkout_clone_overlay_make(struct checkout *co, const char *base, bool made_by_command,
				char **ret_start, struct diag *reterr)
{
	(void)made_by_command; /* never: no command */
	return overlay_make(co, &checkout_clone_ops, clone_layer_make, base, ret_start, reterr);
}

/* What both overlay kinds remove: the mount (only ours), the layer, then
 * what is left at the path, by the plain kind's remove. */
static int overlay_remove(const struct checkout *co,
			  int (*remove)(const struct checkout *co, struct diag *reterr),
			  struct diag *reterr)
{
	char abs[PATH_MAX];
	struct layer ly;
	int r = 0;

	checkout_layer_init(&ly, co->repo, co->path);
	if (lstat(co->path, &(struct stat){0}) == 0 && realpath(co->path, abs)) {
		switch (mounted_at(abs, ly.upper)) {
		case MOUNT_OTHER:
			diag_set(
				reterr, NULL, 0, 0,
				"cannot remove the %s '%s': something other than its overlay is mounted there",
				co->ops->noun, co->path);
			r = -EPERM;
			goto out;
		case MOUNT_OURS:
			if (umount2(abs, UMOUNT_NOFOLLOW | MNT_DETACH) < 0) {
				r = -errno;
				diag_set(reterr, NULL, 0, 0,
					 "cannot unmount the overlay at '%s': %s", co->path,
					 strerror(-r));
				goto out;
			}
			break;
		default:
			break;
		}
	}
	r = rmtree_beneath(ly.dir);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot remove the overlay layer '%s': %s", ly.dir,
			 strerror(-r));
		goto out;
	}
	r = remove(co, reterr);
out:
	checkout_layer_release(&ly);
	return r;
}

int checkout_overlay_remove(const struct checkout *co, struct diag *reterr)
{
	return overlay_remove(co, checkout_wt_remove, reterr);
}

int checkout_clone_overlay_remove(const struct checkout *co, struct diag *reterr)
{
	return overlay_remove(co, checkout_clone_remove, reterr);
}

/* ---- what the auto mode and the garbage collector look at ---- */

int checkout_overlay_repo_files(const char *repo, uint32_t *ret)
{
	unsigned char h[12];
	char *p = sbuf_strf("%s/.git/index", repo);
	int fd = open_regular(p, O_RDONLY | O_NOFOLLOW, 0), r = 0;
	ssize_t n;

	free(p);
	if (fd < 0)
		return fd;
	n = read(fd, h, sizeof(h));
	if (n < 0)
		r = -errno;
	else if (n != (ssize_t)sizeof(h) || memcmp(h, "DIRC", 4) != 0)
		r = -EBADMSG;
	(void)close(fd);
	if (r < 0)
		return r;
	*ret = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
	return 0;
}

/* The commits the task layers under dir use, into *ret. */
static void layers_bases(const char *dir, struct strvec *ret)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)) != NULL) {
		char *p, *text = NULL;
		size_t len;

		if (de->d_name[0] == '.')
			continue;
		p = sbuf_strf("%s/%s/base", dir, de->d_name);
		if (read_file_capped(p, COMMIT_HEX_MAX + 1, &text, &len) == 0) {
			text[strcspn(text, "\n")] = '\0';
			strvec_push(ret, text);
		}
		free(text);
		free(p);
	}
	if (d)
		(void)closedir(d);
}

int checkout_overlay_gc(const char *repo, const char *const *git_env, size_t *ret_n,
			struct diag *reterr)
{
	char *bases = sbuf_strf("%s/%s/base", repo, CHECKOUT_OVERLAY_DIR);
	char *tasks = sbuf_strf("%s/%s/task", repo, CHECKOUT_OVERLAY_DIR);
	struct strvec used = STRVEC_INIT;
	struct dirent *de;
	size_t n = 0, i;
	DIR *d;
	int r = 0;

	layers_bases(tasks, &used);
	d = opendir(bases);
	while (d && (de = readdir(d)) != NULL) {
		char *dir, *tree;
		bool keep = false;
		struct diag e;

		if (de->d_name[0] == '.')
			continue;
		for (i = 0; i < used.nr && !keep; i++)
			keep = strcmp(used.v[i], de->d_name) == 0;
		dir = sbuf_strf("%s/%s", bases, de->d_name);
		tree = sbuf_strf("%s/tree", dir);
		if (!keep && !lower_in_use(tree)) {
			diag_clear(&e);
			if (base_remove(repo, git_env, dir, &e) < 0) {
				if (r >= 0)
					*reterr = e;
				r = -EIO;
			} else {
				n++;
			}
		}
		free(dir);
		free(tree);
	}
	if (d)
		(void)closedir(d);
	strvec_clear(&used);
	free(bases);
	free(tasks);
	if (ret_n)
		*ret_n = n;
	return r;
}
