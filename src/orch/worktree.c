#include "orch/worktree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "orch/gitref.h"
#include "proc/holders.h"
#include "proc/capture.h"
#include "proc/git.h"
#include "proc/probe.h"
#include "proc/spawn.h"
#include "util/beneath.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define RUN_KILL_GRACE_MS 1000 /* SIGTERM -> SIGKILL on a deadline */
#define RUN_DRAIN_MS	  200  /* reading pipes after the child exited */
#define GIT_ERR_TAIL	  4096 /* bytes of git's stderr kept for messages */
#define DIAG_ERR_TAIL	  300  /* bytes of it put into a diag */
#define HEADS_PREFIX	  "refs/heads/"

/* ---- running a child -------------------------------------------------------- */

struct run {
	/* in */
	const char *const *argv; /* argv[0] absolute */
	const char *cwd;	 /* NULL = inherit */
	const char *const *env;	 /* complete; NULL = empty */
	uint64_t timeout_ms;	 /* 0 = none */
	size_t out_max;		 /* stdout cap */
	const char *confine_dir; /* Landlock: read-write only beneath it */
	/* out */
	struct sbuf out; /* stdout */
	struct sbuf err; /* the last GIT_ERR_TAIL bytes of stderr */
	bool out_overflow;
	bool timed_out;
	bool status_unknown; /* reaped by someone else */
	int exit_code;	     /* when it exited */
	int term_signal;     /* when a signal killed it */
};

static uint64_t now_ms(void)
{
	const struct clock *c = clock_system();

	return c->mono_ms(c);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Run r->argv to its end (proc/capture.h: contained, its tree killed when it
 * exits, the deadline with a grace). Returns 0 when the child ran (see
 * exit_code, term_signal, timed_out), or the negative errno of proc_spawn()
 * with reterr set. */
static int run_child(struct run *r, struct diag *reterr)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture c = {0};
	struct capture_opts co = {.max_parallel = 1, .drain_ms = RUN_DRAIN_MS};
	int k;

	strvec_pushv(&spec.argv, r->argv);
	strvec_pushv(&spec.env, r->env);
	spec.cwd = r->cwd;
	if (r->confine_dir) {
		/* read-write the directory (and /dev/null), read-only the rest;
		 * never best effort: no Landlock, no git */
		strvec_push(&spec.shim.landlock_rw, r->confine_dir);
		strvec_push(&spec.shim.landlock_rw, "/dev/null");
		strvec_push(&spec.shim.landlock_ro, "/");
	}
	c.spec = &spec;
	c.timeout_ms = r->timeout_ms;
	c.kill_grace_ms = RUN_KILL_GRACE_MS;
	c.max_out = r->out_max;
	c.max_err = GIT_ERR_TAIL;
	c.tail_err = true;
	k = proc_capture(&c, 1, &co);
	proc_spec_release(&spec);
	if (k == 0 && c.start_result < 0) {
		diag_set(reterr, NULL, 0, 0, "%s", c.start_error ? c.start_error : "cannot start");
		k = c.start_result;
	}
	if (k < 0) {
		capture_release(&c);
		return k;
	}
	r->out = c.out;
	r->err = c.err;
	c.out = (struct sbuf)SBUF_INIT(0);
	c.err = (struct sbuf)SBUF_INIT(0);
	r->out_overflow = c.out_dropped > 0;
	r->timed_out = c.timed_out;
	r->status_unknown = c.status_unknown;
	r->exit_code = c.exit_code;
	r->term_signal = c.term_signal;
	capture_release(&c);
	return 0;
}

static void run_release(struct run *r)
{
	sbuf_release(&r->out);
	sbuf_release(&r->err);
}

/* ---- calling git ------------------------------------------------------------ */

enum git_flags {
	GIT_READ = 1 << 0,  /* a query: GIT_OPTIONAL_LOCKS=0 */
	GIT_WRITE = 1 << 1, /* bernstein writes: hooks, signing and auto-gc off */
	GIT_PUSH = 1 << 2,  /* a push: https and ssh allowed (GIT_HARDEN_PUSH) */
};

struct git_res {
	int exit_code;
	char *out; /* stdout, NUL-terminated (may hold NULs with -z) */
	size_t out_len;
	char *err; /* the tail of stderr */
};

static void git_res_release(struct git_res *g)
{
	free(g->out);
	free(g->err);
	memset(g, 0, sizeof(*g));
}

static bool env_key_is(const char *entry, const char *key)
{
	size_t n = strlen(key);

	return strncmp(entry, key, n) == 0 && entry[n] == '=';
}

static const char *env_value(const char *const *env, const char *key)
{
	for (; env && *env; env++)
		if (env_key_is(*env, key))
			return *env + strlen(key) + 1;
	return NULL;
}

static uint64_t git_timeout(const char *const *env)
{
	const char *v = env_value(env, WORKTREE_GIT_TIMEOUT_ENV);
	unsigned long long ms;
	char *end;

	if (!v || !*v)
		return WORKTREE_GIT_TIMEOUT_MS;
	errno = 0;
	ms = strtoull(v, &end, 10);
	if (errno || *end || ms == 0 || v[0] == '-')
		return WORKTREE_GIT_TIMEOUT_MS;
	return (uint64_t)ms;
}

/* Whether git calls in dir must run confined (WORKTREE_GIT_CONFINE_ENV
 * names it, or the same directory spelled otherwise). */
static bool confined_here(const char *dir, const char *confine)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (!confine || !*confine)
		return false;
	if (strcmp(dir, confine) == 0)
		return true;
	return realpath(dir, a) && realpath(confine, b) && strcmp(a, b) == 0;
}

/* "git worktree add -b x ..." for messages: the arguments after the global
 * options, a -m value elided, cut at a reasonable length. */
static const char *git_describe(const char *const *args, char *buf, size_t size)
{
	size_t len;
	int i;

	len = (size_t)snprintf(buf, size, "git");
	for (i = 0; args[i] && len < size; i++) {
		const char *a = args[i];

		if (i > 0 && strcmp(args[i - 1], "-m") == 0)
			a = "...";
		if (len + strlen(a) + 2 > 120 && len + 5 < size) {
			(void)snprintf(buf + len, size - len, " ...");
			break;
		}
		len += (size_t)snprintf(buf + len, size - len, " %s", a);
	}
	return buf;
}

/* The last DIAG_ERR_TAIL bytes of git's stderr on one line. */
static const char *err_tail(const char *err, char *buf, size_t size)
{
	size_t n = strlen(err), o = 0, i;

	while (n && (err[n - 1] == '\n' || err[n - 1] == ' ' || err[n - 1] == '\r'))
		n--;
	i = n > DIAG_ERR_TAIL ? n - DIAG_ERR_TAIL : 0;
	while (i < n && o + 3 < size) {
		char c = err[i++];

		if (c == '\n') {
			buf[o++] = ';';
			buf[o++] = ' ';
			while (i < n && (err[i] == ' ' || err[i] == '\t'))
				i++;
		} else if (c == '\t' || c == '\r') {
			buf[o++] = ' ';
		} else {
			buf[o++] = c;
		}
	}
	buf[o] = '\0';
	if (!o)
		(void)snprintf(buf, size, "no message");
	return buf;
}

/* The argv and environment of `git [hardened options] -C dir [--git-dir=G
 * --work-tree=dir] [-c identity] args...` (appended to *argv and *cenv,
 * initialised strvecs): git found on the absolute entries of env's PATH,
 * proc/git.h's options and environment, gitdir (when not NULL) instead of
 * discovery. 0, or -ENOENT: git not on PATH. */
static int git_command_at(const char *dir, const char *gitdir, const char *const *env,
			  enum git_flags flags, const struct git_identity *id,
			  const char *const *args, struct strvec *argv_out, struct strvec *cenv_out,
			  struct diag *reterr)
{
	struct strvec argv = STRVEC_INIT, cenv = STRVEC_INIT;
	char *git = NULL;
	int r;

	r = git_find(env_value(env, "PATH"), &git);
	if (r < 0) {
		diag_set(reterr, dir, 0, 0, "git not found on PATH");
		return -ENOENT;
	}

	strvec_push(&argv, git);
	git_harden_argv(&argv, ((flags & GIT_WRITE) ? GIT_HARDEN_WRITE : 0) |
				       ((flags & GIT_PUSH) ? GIT_HARDEN_PUSH : 0));
	strvec_push(&argv, "-C");
	strvec_push(&argv, dir);
	if (gitdir) {
		strvec_pushf(&argv, "--git-dir=%s", gitdir);
		strvec_pushf(&argv, "--work-tree=%s", dir);
	}
	if (id) {
		strvec_push(&argv, "-c");
		strvec_pushf(&argv, "user.name=%s", id->name);
		strvec_push(&argv, "-c");
		strvec_pushf(&argv, "user.email=%s", id->email);
	}
	strvec_pushv(&argv, args);
	git_harden_env(env, (flags & GIT_READ) ? GIT_HARDEN_READ : 0, WORKTREE_GIT_ENV_PREFIX,
		       &cenv);
	free(git);
	*argv_out = argv;
	*cenv_out = cenv;
	return 0;
}

static int git_command(const char *dir, const char *const *env, enum git_flags flags,
		       const struct git_identity *id, const char *const *args,
		       struct strvec *argv_out, struct strvec *cenv_out, struct diag *reterr)
{
	return git_command_at(dir, NULL, env, flags, id, args, argv_out, cenv_out, reterr);
}

static int git_call(const char *dir, const char *const *env, enum git_flags flags,
		    const struct git_identity *id, const char *const *args, struct git_res *res,
		    struct diag *reterr);
static int git_run(const char *dir, const char *const *env, enum git_flags flags,
		   const struct git_identity *id, const char *const *args, struct git_res *res,
		   struct diag *reterr);
static int git_fail(const char *dir, const char *const *args, const struct git_res *res,
		    struct diag *reterr);
/* git_run() of a step whose output nobody reads (it succeeded or said why). */
static int git_step(const char *dir, const char *const *env, enum git_flags flags,
		    const struct git_identity *id, const char *const *args, struct diag *reterr)
{
	struct git_res g;
	int r = git_run(dir, env, flags, id, args, &g, reterr);

	if (r >= 0)
		git_res_release(&g);
	return r < 0 ? r : 0;
}
static char *first_line(const struct git_res *res);

/* ---- trees an agent controlled ---------------------------------------------
 *
 * A task's linked worktree or clone was the agent's to write, its .git
 * included. Before bernstein runs git in one (the trusted repository is
 * named by WORKTREE_GIT_REPO_ENV in env), it finds the git directory from
 * what it knows itself, never from the agent's files, and puts back what git
 * would read there that the agent may have changed:
 *
 *   - a linked worktree is one whose administrative directory in the main
 *     repository ($COMMON/worktrees/NAME, out of the agent's reach) says, in
 *     its gitdir file, that TOP/.git is its worktree. git runs with
 *     --git-dir=THAT --work-tree=TOP, so a .git file swapped for
 *     "gitdir: evil" (or a directory) is never read; the .git file is
 *     rewritten to point back (the agent's next attempt and `git worktree
 *     remove` read it);
 *   - anything else must be a clone bernstein made (worktree_clone_check():
 *     .git a real directory without commondir or gitdir); its .git/config is
 *     replaced by the one bernstein writes for every clone (clone_config())
 *     whenever it differs, so no include, filter, textconv or merge driver,
 *     fsmonitor, hooksPath or worktree setting of the agent's survives, and
 *     git runs with --git-dir=TOP/.git --work-tree=TOP.
 * Neither can be both: the agent cannot write the main repository's
 * worktrees/ in a confining tier. What is left: a process of the agent still
 * running while bernstein runs git (one that escaped its process group) could
 * write the clone's config in between; the containment work (one PID
 * namespace or cgroup per task) closes that. */

enum tree_kind { TREE_LINKED = 1, TREE_CLONE };

struct tree {
	enum tree_kind kind;
	char *top;    /* canonical */
	char *gitdir; /* canonical */
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void tree_release(struct tree *t)
{
	free(t->top);
	free(t->gitdir);
	memset(t, 0, sizeof(*t));
}

static char *path_cat(const char *a, const char *b)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s", a, b);
	return sbuf_detach(&sb, NULL);
}

#define TREE_FILE_MAX 4096 /* a gitdir file, a .git file, a clone's config */

/* The content of the regular file NAME beneath dirfd (never a symlink, a
 * FIFO or a device), at most size - 1 bytes, NUL-terminated: its length,
 * -EFBIG when longer, -EPERM when not a regular file, or -errno. */
static ssize_t read_small_at(int dirfd, const char *name, char *buf, size_t size)
{
	struct stat st;
	ssize_t n, got = 0;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		(void)close(fd);
		return -EPERM;
	}
	while ((size_t)got < size) {
		n = read(fd, buf + got, size - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	(void)close(fd);
	if ((size_t)got >= size)
		return -EFBIG;
	buf[got] = '\0';
	return got;
}

/* Make NAME beneath dirfd a regular file (mode 0644) holding exactly text,
 * unless it already is one: a new file written beside it and renamed over
 * it; a directory or symlink in its place is removed first, never followed. */
static int restore_file_at(int dirfd, const char *dirpath, const char *name, const char *text,
			   struct diag *reterr)
{
	char cur[TREE_FILE_MAX], tmp[NAME_MAX + 1];
	size_t len = strlen(text);
	struct stat st;
	ssize_t n;
	int fd = -1, r = 0;

	n = read_small_at(dirfd, name, cur, sizeof(cur));
	if (n >= 0 && (size_t)n == len && memcmp(cur, text, len) == 0)
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		struct sbuf p = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&p, "%s/%s", dirpath, name);
		r = rmtree_beneath(p.buf);
		sbuf_release(&p);
		if (r < 0) {
			diag_set(reterr, dirpath, 0, 0, "cannot remove the directory '%s': %s",
				 name, strerror(-r));
			return r;
		}
	}
	(void)snprintf(tmp, sizeof(tmp), "%s.bernstein-tmp", name);
	(void)unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	r = write_all(fd, text, len);
	if (r >= 0 && close(fd) < 0)
		r = -errno;
	else if (r < 0)
		(void)close(fd);
	fd = -1;
	if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r >= 0)
		return 0;
fail:
	(void)unlinkat(dirfd, tmp, 0);
	diag_set(reterr, dirpath, 0, 0, "cannot restore '%s': %s", name, strerror(-r));
	return r;
}

/* The common git directory of the trusted repository repo (its .git, or
 * where its .git file leads when repo is itself a linked worktree),
 * canonical, caller frees. */
static int repo_common_dir(const char *repo, const char *const *env, char **ret,
			   struct diag *reterr)
{
	static const char *const args[] = {"rev-parse", "--path-format=absolute",
					   "--git-common-dir", NULL};
	char buf[PATH_MAX], *line;
	struct sbuf p = SBUF_INIT(SIZE_MAX);
	struct git_res g;
	struct stat st;
	int r;

	(void)sbuf_addf(&p, "%s/.git", repo);
	if (lstat(p.buf, &st) == 0 && S_ISDIR(st.st_mode) && realpath(p.buf, buf)) {
		sbuf_release(&p);
		*ret = xstrdup(buf);
		return 0;
	}
	sbuf_release(&p);
	r = git_call(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code != 0) {
		r = git_fail(repo, args, &g, reterr);
		git_res_release(&g);
		return r;
	}
	line = first_line(&g);
	git_res_release(&g);
	if (!realpath(line, buf)) {
		r = -errno;
		diag_set(reterr, repo, 0, 0, "cannot resolve the git directory '%s': %s", line,
			 strerror(-r));
		free(line);
		return r;
	}
	free(line);
	*ret = xstrdup(buf);
	return 0;
}

/* Whether the administrative directory common/worktrees/name says its
 * worktree is want (TOP/.git). */
static bool admin_claims(int wtdirfd, const char *name, const char *want)
{
	char buf[PATH_MAX + 2];
	ssize_t n;
	int fd;

	if (name[0] == '.' || strchr(name, '/'))
		return false;
	fd = openat(wtdirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read_small_at(fd, "gitdir", buf, sizeof(buf));
	(void)close(fd);
	if (n <= 0)
		return false;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return strcmp(buf, want) == 0;
}

/* The administrative directory (in common/worktrees) of the linked worktree
 * at top: 1 and *ret (caller frees), or 0 when none claims top. The one git
 * names after top's last component is tried first; git adds a number to the
 * name when that is taken, so the others are looked at too. */
static int linked_admin(const char *common, const char *top, char **ret)
{
	struct sbuf want = SBUF_INIT(SIZE_MAX), p = SBUF_INIT(SIZE_MAX);
	const char *base = strrchr(top, '/');
	struct dirent *de;
	DIR *d = NULL;
	int dfd, r = 0;

	(void)sbuf_addf(&p, "%s/worktrees", common);
	dfd = open(p.buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		goto out;
	(void)sbuf_addf(&want, "%s/.git", top);
	base = base ? base + 1 : top;
	if (admin_claims(dfd, base, want.buf)) {
		*ret = path_cat(p.buf, base);
		r = 1;
		goto out;
	}
	d = fdopendir(dfd);
	if (!d)
		goto out;
	dfd = -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, base) != 0 && admin_claims(dirfd(d), de->d_name, want.buf)) {
			*ret = path_cat(p.buf, de->d_name);
			r = 1;
			break;
		}
	}
out:
	if (d)
		(void)closedir(d);
	if (dfd >= 0)
		(void)close(dfd);
	sbuf_release(&want);
	sbuf_release(&p);
	return r;
}

/* The .git/config of every clone bernstein makes: the repository format of
 * repo (SHA-1, or SHA-256 from the length of its HEAD's id) and git's own
 * defaults, nothing else -- no remote (bernstein fetches from the clone),
 * no include, driver, hook or worktree setting. */
static int clone_config(const char *repo, const char *const *env, struct sbuf *out,
			struct diag *reterr)
{
	static const char *const fmt_args[] = {"rev-parse", "--show-object-format", NULL};
	char oid[GITREF_OID_MAX + 1];
	bool sha256;
	int r = gitref_read(repo, "HEAD", oid);

	if (r == 0) {
		sha256 = strlen(oid) == 64;
	} else {
		struct git_res g;
		char *line;

		r = git_run(repo, env, GIT_READ, NULL, fmt_args, &g, reterr);
		if (r < 0)
			return r;
		line = first_line(&g);
		git_res_release(&g);
		sha256 = strcmp(line, "sha256") == 0;
		free(line);
	}
	(void)sbuf_addf(out,
			"[core]\n"
			"\trepositoryformatversion = %d\n"
			"\tfilemode = true\n"
			"\tbare = false\n"
			"\tlogallrefupdates = true\n",
			sha256 ? 1 : 0);
	if (sha256)
		(void)sbuf_adds(out, "[extensions]\n\tobjectformat = sha256\n");
	return 0;
}

static bool same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (strcmp(a, b) == 0)
		return true;
	return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* Find and check the git directory of the agent's tree dir of repo (see the
 * top of this section): 0 and *ret, or -ENOTDIR (dir is not a directory, or
 * is a symlink), -EPERM (neither a worktree of repo nor a clone bernstein
 * made), or an error restoring what the agent changed. */
static int tree_open(const char *repo, const char *dir, const char *const *env, struct tree *ret,
		     struct diag *reterr)
{
	struct tree t = {0};
	struct sbuf text = SBUF_INIT(SIZE_MAX);
	char top[PATH_MAX], *common = NULL;
	struct stat st;
	int fd = -1, r;

	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || !realpath(dir, top)) {
		diag_set(reterr, dir, 0, 0, "not a directory (or a symlink to one)");
		return -ENOTDIR;
	}
	t.top = xstrdup(top);
	r = repo_common_dir(repo, env, &common, reterr);
	if (r < 0)
		goto out;
	if (linked_admin(common, top, &t.gitdir) > 0) {
		t.kind = TREE_LINKED;
		fd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			diag_set(reterr, top, 0, 0, "cannot open: %s", strerror(-r));
			goto out;
		}
		(void)sbuf_addf(&text, "gitdir: %s\n", t.gitdir);
		r = restore_file_at(fd, top, ".git", text.buf, reterr);
		goto out;
	}
	r = worktree_clone_check(top, reterr);
	if (r < 0) {
		diag_prefix(reterr, "neither a worktree of '%s' nor a clone bernstein made", repo);
		r = -EPERM;
		goto out;
	}
	t.kind = TREE_CLONE;
	t.gitdir = path_cat(top, ".git");
	fd = open(t.gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		diag_set(reterr, t.gitdir, 0, 0, "cannot open: %s", strerror(-r));
		goto out;
	}
	r = clone_config(repo, env, &text, reterr);
	if (r >= 0)
		r = restore_file_at(fd, t.gitdir, "config", text.buf, reterr);
out:
	if (fd >= 0)
		(void)close(fd);
	sbuf_release(&text);
	free(common);
	if (r < 0)
		tree_release(&t);
	else
		*ret = t;
	return r;
}

/* Before git itself reads what is in abs's .git (`git worktree remove` checks
 * the pointer and runs a status there; `git fetch` from a clone runs
 * upload-pack in it): put it back, when abs is a tree of the trusted
 * repository in env. Best effort: git refuses what is still wrong. */
static void tree_repair(const char *abs, const char *const *env)
{
	const char *repo = env_value(env, WORKTREE_GIT_REPO_ENV);
	struct tree t;

	if (repo && *repo && is_dir(abs) && !same_dir(abs, repo) &&
	    tree_open(repo, abs, env, &t, NULL) == 0)
		tree_release(&t);
}

static int git_call(const char *dir, const char *const *env, enum git_flags flags,
		    const struct git_identity *id, const char *const *args, struct git_res *res,
		    struct diag *reterr)
{
	struct strvec argv = STRVEC_INIT, cenv = STRVEC_INIT;
	struct run run = {0};
	struct tree tree = {0};
	const char *repo = env_value(env, WORKTREE_GIT_REPO_ENV);
	char what[160];
	uint64_t timeout = git_timeout(env);
	int r;

	memset(res, 0, sizeof(*res));
	if (repo && *repo && !same_dir(dir, repo)) {
		r = tree_open(repo, dir, env, &tree, reterr);
		if (r < 0)
			return r;
	}
	r = git_command_at(tree.gitdir ? tree.top : dir, tree.gitdir, env, flags, id, args, &argv,
			   &cenv, reterr);
	tree_release(&tree);
	if (r < 0)
		return r;

	run.argv = argv.v;
	run.env = cenv.v;
	run.timeout_ms = timeout;
	run.out_max = WORKTREE_GIT_MAX_OUTPUT;
	if (confined_here(dir, env_value(env, WORKTREE_GIT_CONFINE_ENV))) {
		run.confine_dir = env_value(env, WORKTREE_GIT_CONFINE_ENV);
	}
	r = run_child(&run, reterr);
	if (r < 0) {
		diag_prefix(reterr, "%s", git_describe(args, what, sizeof(what)));
		goto out;
	}
	if (run.timed_out) {
		diag_set(reterr, dir, 0, 0, "%s: timed out after %llu ms",
			 git_describe(args, what, sizeof(what)), (unsigned long long)timeout);
		r = -ETIMEDOUT;
	} else if (run.out_overflow) {
		diag_set(reterr, dir, 0, 0, "%s: printed more than %u bytes",
			 git_describe(args, what, sizeof(what)), WORKTREE_GIT_MAX_OUTPUT);
		r = -ENOBUFS;
	} else if (run.status_unknown) {
		diag_set(reterr, dir, 0, 0, "%s: exit status lost (reaped elsewhere)",
			 git_describe(args, what, sizeof(what)));
		r = -ECHILD;
	} else if (run.term_signal) {
		diag_set(reterr, dir, 0, 0, "%s: killed by signal %d",
			 git_describe(args, what, sizeof(what)), run.term_signal);
		r = -EIO;
	} else {
		res->exit_code = run.exit_code;
		res->out = sbuf_detach(&run.out, &res->out_len);
		res->err = sbuf_detach(&run.err, NULL);
	}
out:
	run_release(&run);
	strvec_clear(&argv);
	strvec_clear(&cenv);
	return r;
}

/* A git call that ended with an unexpected exit code: classify it. */
static int git_fail(const char *dir, const char *const *args, const struct git_res *res,
		    struct diag *reterr)
{
	const char *err = res->err ? res->err : "";
	char what[160], tail[DIAG_ERR_TAIL + 64];
	int r = -EIO;

	if (strstr(err, "not a git repository") || strstr(err, "cannot change to") ||
	    strstr(err, "must be run in a work tree"))
		r = -ENOTDIR;
	else if (strstr(err, "dubious ownership"))
		r = -EPERM;
	diag_set(reterr, dir, 0, 0, "%s failed (exit %d): %s",
		 git_describe(args, what, sizeof(what)), res->exit_code,
		 err_tail(err, tail, sizeof(tail)));
	return r;
}

/* Run git and require exit 0. */
static int git_run(const char *dir, const char *const *env, enum git_flags flags,
		   const struct git_identity *id, const char *const *args, struct git_res *res,
		   struct diag *reterr)
{
	int r = git_call(dir, env, flags, id, args, res, reterr);

	if (r < 0)
		return r;
	if (res->exit_code != 0) {
		r = git_fail(dir, args, res, reterr);
		git_res_release(res);
	}
	return r;
}

/* The first line of git's stdout, caller frees. */
static char *first_line(const struct git_res *res)
{
	return xstrndup(res->out, strcspn(res->out, "\n"));
}

/* Split NUL-separated output into v (empty fields skipped). */
static void split_z(const char *s, size_t len, struct strvec *v)
{
	size_t i = 0;

	while (i < len) {
		size_t n = strnlen(s + i, len - i);

		if (n)
			strvec_push(v, s + i); /* s[len] is a NUL too */
		i += n + 1;
	}
}

static bool bad_name(const char *s)
{
	return !s || !*s || s[0] == '-' || strchr(s, '\n');
}

static int check_args(const char *dir, struct diag *reterr)
{
	if (!dir || !*dir) {
		diag_set(reterr, NULL, 0, 0, "no directory given");
		return -EINVAL;
	}
	return 0;
}

static int check_name(const char *dir, const char *what, const char *s, struct diag *reterr)
{
	if (bad_name(s)) {
		diag_set(reterr, dir, 0, 0, "invalid %s '%s'", what, s ? s : "");
		return -EINVAL;
	}
	return 0;
}

static int check_identity(const char *dir, const struct git_identity *id, struct diag *reterr)
{
	if (!id || !id->name || !*id->name || !id->email || !*id->email || strchr(id->name, '\n') ||
	    strchr(id->email, '\n')) {
		diag_set(reterr, dir, 0, 0, "no git identity (user name and email) given");
		return -EINVAL;
	}
	return 0;
}

static int check_message(const char *dir, const char *msg, struct diag *reterr)
{
	if (!msg || !*msg || strlen(msg) > WORKTREE_MESSAGE_MAX) {
		diag_set(reterr, dir, 0, 0, "the commit message is empty or longer than %u bytes",
			 WORKTREE_MESSAGE_MAX);
		return -EINVAL;
	}
	return 0;
}

/* ---- queries ---------------------------------------------------------------- */

int git_toplevel(const char *dir, const char *const *env, char **ret, struct diag *reterr)
{
	static const char *const args[] = {"rev-parse", "--show-toplevel", NULL};
	struct git_res g;
	char *top;
	int r;

	if ((r = check_args(dir, reterr)) < 0)
		return r;
	r = git_run(dir, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	top = first_line(&g);
	git_res_release(&g);
	if (!*top) {
		free(top);
		diag_set(reterr, dir, 0, 0, "not inside a git work tree");
		return -ENOTDIR;
	}
	*ret = top;
	return 0;
}

/* NUL-separated paths of out into ret (or args, for the next command). */
static void nul_paths(const struct git_res *g, struct strvec *ret)
{
	size_t i = 0;

	while (i < g->out_len) {
		size_t n = strnlen(g->out + i, g->out_len - i);

		if (n)
			strvec_push(ret, g->out + i);
		i += n + 1;
	}
}

/* The candidates that are whole lines of out (check-ignore prints the
 * ignored ones a line each; a name with a newline, printed quoted, is no
 * candidate's line and is left out). */
static void ignored_of(const struct git_res *g, const struct strvec *cand, struct strvec *ret)
{
	size_t i;

	for (i = 0; i < cand->nr; i++) {
		size_t n = strlen(cand->v[i]);
		const char *p = g->out;

		while (p && (size_t)(g->out + g->out_len - p) >= n) {
			if (strncmp(p, cand->v[i], n) == 0 && (p[n] == '\n' || p[n] == '\0')) {
				strvec_push(ret, cand->v[i]);
				break;
			}
			p = strchr(p, '\n');
			if (p)
				p++;
		}
	}
}

int git_worktreeinclude(const char *repo, const char *const *env, struct strvec *ret,
			struct diag *reterr)
{
	static const char *const ls[] = {
		"ls-files", "-z", "--others", "--ignored", "--exclude-from=.worktreeinclude", NULL};
	struct strvec args = STRVEC_INIT, cand = STRVEC_INIT;
	struct git_res g;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct stat st;
	char *f;
	int r;

	if ((r = check_args(repo, reterr)) < 0)
		return r;
	(void)sbuf_addf(&sb, "%s/.worktreeinclude", repo);
	f = sbuf_detach(&sb, NULL);
	r = lstat(f, &st);
	free(f);
	if (r < 0 || !S_ISREG(st.st_mode))
		return 0;
	r = git_run(repo, env, GIT_READ, NULL, ls, &g, reterr);
	if (r < 0)
		return r;
	nul_paths(&g, &cand);
	git_res_release(&g);
	if (cand.nr == 0)
		goto out;
	/* only what git ignores: never a file the agent's tree may commit */
	strvec_pushv(&args, (const char *const[]){"-c", "core.quotePath=false", "check-ignore",
						  "--", NULL});
	strvec_pushv(&args, (const char *const *)cand.v);
	r = git_call(repo, env, GIT_READ, NULL, (const char *const *)args.v, &g, reterr);
	if (r < 0)
		goto out;
	if (g.exit_code == 0)
		ignored_of(&g, &cand, ret);
	else if (g.exit_code != 1) /* 1: none is ignored */
		r = git_fail(repo, (const char *const *)args.v, &g, reterr);
	git_res_release(&g);
out:
	strvec_clear(&args);
	strvec_clear(&cand);
	return r < 0 ? r : 0;
}

/* Resolve rev to a commit id: 0, or -ENOENT when rev names no commit. */
static int resolve_commit(const char *repo, const char *rev, const char *const *env, char **ret,
			  struct diag *reterr)
{
	const char *args[] = {"rev-parse", "-q", "--verify", NULL, NULL};
	struct sbuf spec = SBUF_INIT(SIZE_MAX);
	struct git_res g;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "revision", rev, reterr)) < 0)
		return r;
	(void)sbuf_addf(&spec, "%s^{commit}", rev);
	args[3] = spec.buf;
	r = git_call(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		goto out;
	if (g.exit_code == 1) {
		diag_set(reterr, repo, 0, 0, "unknown revision '%s'", rev);
		r = -ENOENT;
	} else if (g.exit_code != 0) {
		r = git_fail(repo, args, &g, reterr);
	} else {
		char *id = first_line(&g);

		if (!*id) {
			free(id);
			diag_set(reterr, repo, 0, 0, "git rev-parse printed nothing for '%s'", rev);
			r = -EIO;
		} else {
			*ret = id;
		}
	}
	git_res_release(&g);
out:
	sbuf_release(&spec);
	return r;
}

int git_rev_parse(const char *repo, const char *rev, const char *const *env, char **ret,
		  struct diag *reterr)
{
	return resolve_commit(repo, rev, env, ret, reterr);
}

int git_head(const char *repo, const char *const *env, char **ret_branch, char **ret_commit,
	     struct diag *reterr)
{
	static const char *const sym[] = {"symbolic-ref", "-q", "HEAD", NULL};
	char *branch = NULL, *commit = NULL;
	struct git_res g;
	int r;

	if ((r = check_args(repo, reterr)) < 0)
		return r;
	r = git_call(repo, env, GIT_READ, NULL, sym, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code == 0) {
		char *ref = first_line(&g);

		if (strncmp(ref, HEADS_PREFIX, strlen(HEADS_PREFIX)) == 0)
			branch = xstrdup(ref + strlen(HEADS_PREFIX));
		else
			branch = xstrdup(ref); /* HEAD -> something odd; say what it is */
		free(ref);
	} else if (g.exit_code != 1) {
		r = git_fail(repo, sym, &g, reterr);
	}
	git_res_release(&g);
	if (r < 0)
		goto out;

	r = resolve_commit(repo, "HEAD", env, &commit, reterr);
	if (r == -ENOENT)
		diag_set(reterr, repo, 0, 0, "HEAD has no commit yet");
	if (r < 0)
		goto out;
	if (ret_branch) {
		*ret_branch = branch;
		branch = NULL;
	}
	if (ret_commit) {
		*ret_commit = commit;
		commit = NULL;
	}
out:
	free(branch);
	free(commit);
	return r;
}

/* Pathspecs: the whole tree but .bernstein/, from wherever -C points. */
#define PATHSPEC_EXCLUDE_STATE ":(top,exclude).bernstein" /* WORKTREE_STATE_DIR */
#define PATHSPEC_ALL	       "--", ":/", PATHSPEC_EXCLUDE_STATE

int git_is_clean(const char *repo, const char *const *env, bool *ret, struct diag *reterr)
{
	static const char *const args[] = {"status",
					   "--porcelain=v1",
					   "-z",
					   "--untracked-files=no",
					   "--ignore-submodules=none",
					   PATHSPEC_ALL,
					   NULL};
	struct git_res g;
	int r;

	if ((r = check_args(repo, reterr)) < 0)
		return r;
	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	*ret = g.out_len == 0;
	git_res_release(&g);
	return 0;
}

int git_tracked(const char *repo, const char *path, const char *const *env, bool *ret,
		struct diag *reterr)
{
	const char *args[] = {"ls-files", "-z", "--", NULL, NULL};
	struct sbuf spec = SBUF_INIT(SIZE_MAX);
	struct git_res g;
	int r;

	if ((r = check_args(repo, reterr)) < 0)
		return r;
	/* the path as it is: no glob, no magic, from the top */
	(void)sbuf_addf(&spec, ":(top,literal)%s", path);
	args[3] = spec.buf;
	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	sbuf_release(&spec);
	if (r < 0)
		return r;
	/* exactly that file (a directory would list what is beneath it) */
	*ret = g.out_len == strlen(path) + 1 && memcmp(g.out, path, g.out_len - 1) == 0;
	git_res_release(&g);
	return 0;
}

/*
 * Run a read-only git query whose answer is its exit status: 0 yes, 1 no,
 * anything else a failure (reported with git's message).
 */
static int git_yes_no(const char *repo, const char *const *env, const char *const *args, bool *ret,
		      struct diag *reterr)
{
	struct git_res g;
	int r;

	r = git_call(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code == 0 || g.exit_code == 1)
		*ret = g.exit_code == 0;
	else
		r = git_fail(repo, args, &g, reterr);
	git_res_release(&g);
	return r;
}

/* merge-base --is-ancestor of two resolved commit ids. */
static int ancestor_of(const char *repo, const char *ca, const char *cb, const char *const *env,
		       bool *ret, struct diag *reterr)
{
	const char *args[] = {"merge-base", "--is-ancestor", ca, cb, NULL};

	return git_yes_no(repo, env, args, ret, reterr);
}

int git_is_ancestor(const char *repo, const char *a, const char *b, const char *const *env,
		    bool *ret, struct diag *reterr)
{
	char *ca = NULL, *cb = NULL;
	int r;

	r = resolve_commit(repo, a, env, &ca, reterr);
	if (r >= 0)
		r = resolve_commit(repo, b, env, &cb, reterr);
	if (r >= 0)
		r = ancestor_of(repo, ca, cb, env, ret, reterr);
	free(ca);
	free(cb);
	return r;
}

int git_branch_exists(const char *repo, const char *branch, const char *const *env, bool *ret,
		      struct diag *reterr)
{
	const char *args[] = {"show-ref", "--verify", "--quiet", NULL, NULL};
	struct sbuf ref = SBUF_INIT(SIZE_MAX);
	char oid[GITREF_OID_MAX + 1];
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0)
		return r;
	(void)sbuf_addf(&ref, HEADS_PREFIX "%s", branch);
	r = gitref_read(repo, ref.buf, oid);
	if (r == 0 || r == -ENOENT) {
		*ret = r == 0;
		sbuf_release(&ref);
		return 0;
	}
	args[3] = ref.buf;
	r = git_yes_no(repo, env, args, ret, reterr);
	sbuf_release(&ref);
	return r;
}

int git_branch_commit(const char *repo, const char *branch, const char *const *env, char **ret,
		      struct diag *reterr)
{
	struct sbuf ref = SBUF_INIT(SIZE_MAX);
	char oid[GITREF_OID_MAX + 1];
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0)
		return r;
	(void)sbuf_addf(&ref, HEADS_PREFIX "%s", branch);
	r = gitref_read(repo, ref.buf, oid);
	if (r == 0) {
		*ret = xstrdup(oid);
	} else if (r == -ENOENT) {
		diag_set(reterr, repo, 0, 0, "no branch '%s'", branch);
	} else {
		r = resolve_commit(repo, ref.buf, env, ret, reterr);
		if (r == -ENOENT)
			diag_set(reterr, repo, 0, 0, "no branch '%s'", branch);
	}
	sbuf_release(&ref);
	return r;
}

/* ---- worktrees -------------------------------------------------------------- */

struct wt_entry {
	char *path;
	char *branch; /* short name, NULL when detached or bare */
	char *lock_reason;
	bool locked;
	bool prunable;
	bool null_head; /* HEAD is the null id `git worktree add` starts with */
};

/* A worktree `git worktree add` did not finish (killed inside it, or a
 * repair of one killed in turn): still locked "initializing", which it
 * writes first and removes last, or HEAD still the null id it writes
 * before setting the branch. No agent ever ran there. */
static bool wt_half_made(const struct wt_entry *e)
{
	return (e->locked && strcmp(e->lock_reason, "initializing") == 0) || e->null_head;
}

static void wt_list_free(struct wt_entry *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].branch);
		free(v[i].lock_reason);
	}
	free(v);
}

static void sleep_ms(unsigned ms);

/* `git worktree list --porcelain -z`, asked again a few times while it fails
 * reading a worktree entry that another `git worktree add` of this run is
 * still writing (git 2.39 reads the half-made .git/worktrees/X/ and dies on
 * its missing commondir or gitdir). */
static int wt_list_run(const char *repo, const char *const *env, struct git_res *g,
		       struct diag *reterr)
{
	static const char *const args[] = {"worktree", "list", "--porcelain", "-z", NULL};
	unsigned try;
	int r = 0;

	for (try = 0; try < 6; try++) {
		if (try)
			sleep_ms(20u << try);
		if (reterr)
			diag_clear(reterr);
		r = git_run(repo, env, GIT_READ, NULL, args, g, reterr);
		if (r >= 0 || !reterr || !strstr(reterr->msg, "/worktrees/") ||
		    (!strstr(reterr->msg, "/commondir") && !strstr(reterr->msg, "/gitdir")))
			break;
	}
	return r;
}

/* `git worktree list --porcelain -z` of repo. */
static int wt_list(const char *repo, const char *const *env, struct wt_entry **ret, size_t *ret_n,
		   struct diag *reterr)
{
	struct wt_entry *v = NULL, *cur = NULL;
	size_t n = 0, alloc = 0, i = 0;
	struct git_res g;
	int r;

	r = wt_list_run(repo, env, &g, reterr);
	if (r < 0)
		return r;
	while (i < g.out_len) {
		const char *f = g.out + i;
		size_t len = strnlen(f, g.out_len - i);

		i += len + 1;
		if (len == 0) {
			cur = NULL; /* end of a record */
			continue;
		}
		if (strncmp(f, "worktree ", 9) == 0) {
			if (n == alloc) {
				alloc = alloc ? 2 * alloc : 8;
				v = xrealloc(v, alloc * sizeof(*v));
			}
			cur = &v[n++];
			memset(cur, 0, sizeof(*cur));
			cur->path = xstrdup(f + 9);
		} else if (!cur) {
			continue;
		} else if (strncmp(f, "branch " HEADS_PREFIX, 7 + strlen(HEADS_PREFIX)) == 0) {
			cur->branch = xstrdup(f + 7 + strlen(HEADS_PREFIX));
		} else if (strcmp(f, "locked") == 0 || strncmp(f, "locked ", 7) == 0) {
			cur->locked = true;
			cur->lock_reason = xstrdup(f[6] ? f + 7 : "");
		} else if (strcmp(f, "prunable") == 0 || strncmp(f, "prunable ", 9) == 0) {
			cur->prunable = true;
		} else if (strncmp(f, "HEAD ", 5) == 0) {
			cur->null_head = f[5] && strspn(f + 5, "0") == strlen(f + 5);
		}
	}
	git_res_release(&g);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* An absolute, symlink-free spelling of path (relative to base when
 * relative), also for a path that does not exist yet (its parent resolved,
 * when that exists). Caller frees. */
static char *canon_path(const char *base, const char *path)
{
	struct sbuf abs = SBUF_INIT(SIZE_MAX);
	char buf[PATH_MAX], parent[PATH_MAX];
	const char *slash;
	char *rp;

	if (path[0] == '/')
		(void)sbuf_adds(&abs, path);
	else
		(void)sbuf_addf(&abs, "%s/%s", base, path);
	while (abs.len > 1 && abs.buf[abs.len - 1] == '/')
		sbuf_setlen(&abs, abs.len - 1);
	if ((rp = realpath(abs.buf, buf)) != NULL) {
		sbuf_release(&abs);
		return xstrdup(rp);
	}
	slash = strrchr(abs.buf, '/');
	if (slash && slash != abs.buf && (size_t)(slash - abs.buf) < sizeof(parent)) {
		memcpy(parent, abs.buf, (size_t)(slash - abs.buf));
		parent[slash - abs.buf] = '\0';
		if ((rp = realpath(parent, buf)) != NULL) {
			struct sbuf out = SBUF_INIT(SIZE_MAX);

			(void)sbuf_addf(&out, "%s%s", strcmp(rp, "/") == 0 ? "" : rp, slash);
			sbuf_release(&abs);
			return sbuf_detach(&out, NULL);
		}
	}
	return sbuf_detach(&abs, NULL);
}

/* 1 when path exists and is not an empty directory, 0 when it is missing or
 * an empty directory, negative errno when it cannot be told. */
static int path_occupied(const char *path)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return 1;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			r = 1;
			break;
		}
	(void)closedir(d);
	return r;
}

/* abs may become a new checkout: absent or an empty directory (else
 * -EEXIST), its parent directory created. */
static int path_free(const char *abs, struct diag *reterr)
{
	char parent[PATH_MAX];
	int r = path_occupied(abs);

	if (r != 0) {
		if (r > 0)
			diag_set(reterr, abs, 0, 0, "exists and is not an empty directory");
		else
			diag_set(reterr, abs, 0, 0, "cannot inspect: %s", strerror(-r));
		return r > 0 ? -EEXIST : r;
	}
	path_dirname(abs, parent, sizeof(parent));
	r = mkdir_p(parent, 0777);
	if (r < 0)
		diag_set(reterr, parent, 0, 0, "cannot create the directory: %s", strerror(-r));
	return r;
}

/* Whether the directory path holds nothing but a regular file .git. */
static bool only_git_file(const char *path)
{
	struct dirent *de;
	struct stat st;
	bool git = false, other = false;
	DIR *d = opendir(path);

	if (!d)
		return false;
	while (!other && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, ".git") == 0 &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			git = true;
		else
			other = true;
	}
	(void)closedir(d);
	return git && !other;
}

static int wt_simple(const char *repo, const char *const *env, const char *const *args,
		     struct diag *reterr)
{
	struct git_res g;
	int r = git_run(repo, env, GIT_WRITE, NULL, args, &g, reterr);

	if (r >= 0)
		git_res_release(&g);
	return r;
}

/* Take a registered worktree at abs out of git's books: unlock it, then
 * prune it when its directory is gone, else remove it (with its files). A
 * half-made one (wt_half_made()) is not given to `git worktree remove`,
 * which refuses one whose .git file or admin directory is incomplete: its
 * directory is deleted here (never following a symlink), then pruned --
 * each step leaves a state the next attempt recognises. */
static int wt_unregister(const char *repo, const struct wt_entry *e, const char *abs,
			 const char *const *env, struct diag *reterr)
{
	const char *unlock[] = {"worktree", "unlock", e->path, NULL};
	const char *remove[] = {"worktree", "remove", "--force", e->path, NULL};
	static const char *const prune[] = {"worktree", "prune", NULL};
	int r;

	if (e->locked && (r = wt_simple(repo, env, unlock, reterr)) < 0)
		return r;
	if (wt_half_made(e) && (r = rmtree_beneath(abs)) < 0) {
		diag_set(reterr, abs, 0, 0, "cannot remove the half-made worktree: %s",
			 strerror(-r));
		return r;
	}
	if (e->prunable || !is_dir(abs))
		return wt_simple(repo, env, prune, reterr);
	return wt_simple(repo, env, remove, reterr);
}

static const struct wt_entry *wt_find_path(const struct wt_entry *v, size_t n, const char *repo,
					   const char *abs)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char *c = canon_path(repo, v[i].path);
		bool same = strcmp(c, abs) == 0;

		free(c);
		if (same)
			return &v[i];
	}
	return NULL;
}

/* wt_add()'s argument vectors: with no_checkout, "--no-checkout" after
 * "add" and the rest one further on; *nw and *od where the plain layout's
 * indices apply. */
static void add_layout(bool no_checkout, const char **add_new, const char **add_old,
		       const char *branch, const char ***nw, const char ***od)
{
	static const char *const nc_new[] = {"worktree", "add", "--no-checkout", "-b"};
	static const char *const nc_old[] = {"worktree", "add", "--no-checkout"};

	if (!no_checkout)
		return;
	memcpy(add_new, nc_new, sizeof(nc_new));
	add_new[4] = branch;
	memcpy(add_old, nc_old, sizeof(nc_old));
	add_old[4] = branch;
	*nw = add_new + 1; /* add_new[5], [6]: the path and the base */
	*od = add_old + 1; /* add_old[3]: the path */
}

/* Where the branch wt_add() has just made starts, if the ref files say
 * (caller frees), else NULL. */
static char *branch_start(const char *repo, const char *branch)
{
	struct sbuf ref = SBUF_INIT(SIZE_MAX);
	char oid[GITREF_OID_MAX + 1], *start = NULL;

	(void)sbuf_addf(&ref, HEADS_PREFIX "%s", branch);
	if (gitref_read(repo, ref.buf, oid) == 0)
		start = xstrdup(oid);
	sbuf_release(&ref);
	return start;
}

static const char *const wt_prune[] = {"worktree", "prune", NULL};

/* The registered worktree e at abs, for branch: 1 when it is that branch's
 * checkout, whole (a resumed task: nothing to do), 0 when it was unregistered
 * (a half-made or prunable one), else a negative errno (another branch, the
 * main working tree). */
static int wt_registered(const char *repo, const struct wt_entry *v, const struct wt_entry *e,
			 const char *abs, const char *branch, const char *const *env,
			 struct diag *reterr)
{
	/* a crash inside `git worktree add`, which writes this lock first
	 * and removes it last: HEAD may still be the null id it starts
	 * with, or the branch; no agent ever ran there */
	bool half_made = wt_half_made(e);

	if (!half_made && (!e->branch || strcmp(e->branch, branch) != 0)) {
		diag_set(reterr, abs, 0, 0, "already a worktree, on %s%s%s instead of branch '%s'",
			 e->branch ? "branch '" : "a detached HEAD", e->branch ? e->branch : "",
			 e->branch ? "'" : "", branch);
		return -EEXIST;
	}
	if (e == &v[0]) {
		diag_set(reterr, abs, 0, 0, "is the main working tree");
		return -EEXIST;
	}
	if (!half_made && !e->prunable && is_dir(abs))
		return 1; /* resumed: already there */
	return wt_unregister(repo, e, abs, env, reterr);
}

/* -EEXIST when branch is checked out elsewhere (a checkout that is gone
 * is pruned instead). */
static int wt_branch_free(const char *repo, const struct wt_entry *v, size_t n, const char *abs,
			  const char *branch, const char *const *env, struct diag *reterr)
{
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		if (!v[i].branch || strcmp(v[i].branch, branch) != 0)
			continue;
		if (!v[i].locked && !is_dir(v[i].path)) {
			/* the other checkout is gone: forget it */
			r = wt_simple(repo, env, wt_prune, reterr);
			if (r < 0)
				return r;
			continue;
		}
		diag_set(reterr, abs, 0, 0, "branch '%s' is checked out at '%s'", branch,
			 v[i].path);
		return -EEXIST;
	}
	return 0;
}

/* Make abs free for `git worktree add`. */
static int wt_clear_path(const char *repo, const char *abs, const char *const *env,
			 struct diag *reterr)
{
	int r;

	if (only_git_file(abs)) {
		/* `git worktree add` killed after it wrote the new .git file and
		 * before it registered the worktree: a pointer, no files */
		struct sbuf g = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&g, "%s/.git", abs);
		if (unlink(g.buf) == 0)
			(void)rmdir(abs);
		sbuf_release(&g);
		r = wt_simple(repo, env, wt_prune, reterr);
		if (r < 0)
			return r;
	}
	return path_free(abs, reterr);
}

/* The general path's checks: 1 when abs is already branch's worktree, 0
 * when abs is free and branch checked out nowhere, else a negative errno. */
static int wt_settle(const char *repo, const char *abs, const char *branch, const char *const *env,
		     struct diag *reterr)
{
	struct wt_entry *v = NULL;
	const struct wt_entry *e;
	size_t n = 0;
	int r;

	r = wt_list(repo, env, &v, &n, reterr);
	if (r < 0)
		goto out;
	e = wt_find_path(v, n, repo, abs);
	if (e)
		r = wt_registered(repo, v, e, abs, branch, env, reterr);
	else
		r = wt_branch_free(repo, v, n, abs, branch, env, reterr);
	if (r == 0)
		r = wt_clear_path(repo, abs, env, reterr);
out:
	wt_list_free(v, n);
	return r;
}

static int wt_add(const char *repo, const char *path, const char *branch, const char *base_commit,
		  bool no_checkout, const char *const *env, char **ret_start, struct diag *reterr)
{
	/* with no_checkout, add_layout() shifts them */
	const char *add_new[] = {"worktree", "add", "-b", branch, NULL, NULL, NULL, NULL};
	const char *add_old[] = {"worktree", "add", NULL, branch, NULL, NULL};
	const char **nw = add_new, **od = add_old;
	char *abs = NULL, *base = NULL, parent[PATH_MAX];
	bool exists = false;
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(path, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0 ||
	    (r = check_name(repo, "base commit", base_commit, reterr)) < 0)
		return r;
	if (ret_start)
		*ret_start = NULL;
	add_layout(no_checkout, add_new, add_old, branch, &nw, &od);
	abs = canon_path(repo, path);
	/* The common case, a new task: neither the path nor the branch exists.
	 * One git call instead of four; any failure (the branch exists, a stale
	 * registration at the path) falls back to the general path below. */
	if (path_occupied(abs) == 0) {
		/* git refuses a taken branch or path itself: then the general path */
		path_dirname(abs, parent, sizeof(parent));
		if (mkdir_p(parent, 0777) >= 0) {
			nw[4] = abs;
			nw[5] = base_commit;
			if (wt_simple(repo, env, add_new, NULL) == 0) {
				if (ret_start)
					*ret_start = branch_start(repo, branch);
				r = 0;
				goto out;
			}
		}
	}
	r = wt_settle(repo, abs, branch, env, reterr);
	if (r != 0) {
		r = r > 0 ? 0 : r;
		goto out;
	}

	r = git_branch_exists(repo, branch, env, &exists, reterr);
	if (r < 0)
		goto out;
	if (exists) {
		od[2] = abs;
		r = wt_simple(repo, env, add_old, reterr);
	} else {
		r = resolve_commit(repo, base_commit, env, &base, reterr);
		if (r < 0)
			goto out;
		nw[4] = abs;
		nw[5] = base;
		r = wt_simple(repo, env, add_new, reterr);
		if (r == 0 && ret_start) {
			*ret_start = base;
			base = NULL;
		}
	}
out:
	free(abs);
	free(base);
	return r;
}

int worktree_add(const char *repo, const char *path, const char *branch, const char *base_commit,
		 const char *const *env, char **ret_start, struct diag *reterr)
{
	return wt_add(repo, path, branch, base_commit, false, env, ret_start, reterr);
}

int worktree_add_no_checkout(const char *repo, const char *path, const char *branch,
			     const char *base_commit, const char *const *env, char **ret_start,
			     struct diag *reterr)
{
	return wt_add(repo, path, branch, base_commit, true, env, ret_start, reterr);
}

int worktree_repair(const char *repo, const char *wt_dir, const char *const *env, size_t *ret_n,
		    struct diag *reterr)
{
	struct wt_entry *v = NULL;
	char *base = NULL;
	size_t n = 0, i, fixed = 0, bl;
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(wt_dir, reterr)) < 0)
		return r;
	r = wt_list(repo, env, &v, &n, reterr);
	if (r < 0)
		return r;
	base = canon_path(repo, wt_dir);
	bl = strlen(base);
	for (i = 1; r >= 0 && i < n; i++) {
		char *abs = canon_path(repo, v[i].path);

		if (wt_half_made(&v[i]) && strncmp(abs, base, bl) == 0 && abs[bl] == '/') {
			struct wt_entry e = v[i];

			e.prunable = true; /* its directory goes first, then it is pruned */
			r = wt_unregister(repo, &e, abs, env, reterr);
			fixed++;
		}
		free(abs);
	}
	if (r >= 0 && ret_n)
		*ret_n = fixed;
	wt_list_free(v, n);
	free(base);
	return r;
}

int worktree_branch_delete(const char *repo, const char *branch, const char *const *env,
			   struct diag *reterr)
{
	const char *del[] = {"branch", "-D", "--", branch, NULL};
	bool exists = false;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0)
		return r;
	r = git_branch_exists(repo, branch, env, &exists, reterr);
	if (r >= 0 && exists)
		r = wt_simple(repo, env, del, reterr);
	return r;
}

int worktree_branches_delete(const char *repo, const char *const *branches, size_t n,
			     const char *const *env, struct diag *reterr)
{
	struct strvec args = STRVEC_INIT;
	size_t i, first;
	int r;

	if ((r = check_args(repo, reterr)) < 0)
		return r;
	for (i = 0; i < n; i++)
		if ((r = check_name(repo, "branch name", branches[i], reterr)) < 0)
			return r;
	strvec_push(&args, "branch");
	strvec_push(&args, "-D");
	strvec_push(&args, "--");
	first = args.nr;
	for (i = 0; i < n; i++) {
		bool exists = false;

		r = git_branch_exists(repo, branches[i], env, &exists, reterr);
		if (r < 0)
			goto out;
		if (exists)
			strvec_push(&args, branches[i]);
	}
	r = args.nr > first ? wt_simple(repo, env, (const char *const *)args.v, reterr) : 0;
out:
	strvec_clear(&args);
	return r;
}

int worktree_remove(const char *repo, const char *path, bool delete_branch, const char *branch,
		    const char *const *env, struct diag *reterr)
{
	struct wt_entry *v = NULL;
	const struct wt_entry *e;
	char *abs = NULL;
	size_t n = 0;
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(path, reterr)) < 0)
		return r;
	if (delete_branch && (r = check_name(repo, "branch name", branch, reterr)) < 0)
		return r;
	abs = canon_path(repo, path);
	tree_repair(abs, env);
	if (is_dir(abs) && strcmp(abs, repo) != 0) {
		/* the common case, one git call; git refuses the main working
		 * tree and anything odd, and the general path below takes over */
		const char *rm[] = {"worktree", "remove", "--force", abs, NULL};

		if (wt_simple(repo, env, rm, NULL) == 0)
			goto branch;
	}
	r = wt_list(repo, env, &v, &n, reterr);
	if (r < 0)
		goto out;
	e = wt_find_path(v, n, repo, abs);
	if (e && e == &v[0]) {
		diag_set(reterr, abs, 0, 0, "is the main working tree, not removed");
		r = -EINVAL;
		goto out;
	}
	if (e) {
		r = wt_unregister(repo, e, abs, env, reterr);
		if (r < 0)
			goto out;
	}
branch:
	if (delete_branch)
		r = worktree_branch_delete(repo, branch, env, reterr);
out:
	wt_list_free(v, n);
	free(abs);
	return r;
}

int worktree_add_command(const char *repo, const char *path, const char *branch,
			 const char *base_commit, const char *const *env, struct strvec *ret_argv,
			 struct strvec *ret_env, uint64_t *ret_timeout_ms, struct diag *reterr)
{
	const char *add_new[] = {"worktree", "add", "-b", branch, NULL, base_commit, NULL};
	char *abs, parent[PATH_MAX];
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(path, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0 ||
	    (r = check_name(repo, "base commit", base_commit, reterr)) < 0)
		return r;
	abs = canon_path(repo, path);
	path_dirname(abs, parent, sizeof(parent));
	if (path_occupied(abs) != 0 || mkdir_p(parent, 0777) < 0) {
		free(abs);
		return 0; /* not the simple case: worktree_add() */
	}
	add_new[4] = abs;
	r = git_command(repo, env, GIT_WRITE, NULL, add_new, ret_argv, ret_env, reterr);
	free(abs);
	*ret_timeout_ms = git_timeout(env);
	return r < 0 ? r : 1;
}

int worktree_remove_clean(const char *repo, const char *path, const char *const *env,
			  bool *ret_removed, struct diag *reterr)
{
	const char *rm[] = {"worktree", "remove", NULL, NULL};
	struct git_res g;
	char *abs;
	int r;

	*ret_removed = false;
	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(path, reterr)) < 0)
		return r;
	abs = canon_path(repo, path);
	if (!is_dir(abs) || strcmp(abs, repo) == 0) {
		free(abs);
		return 0; /* not for this; the caller's general path knows what to do */
	}
	rm[2] = abs;
	tree_repair(abs, env);
	r = git_call(repo, env, GIT_WRITE, NULL, rm, &g, reterr);
	if (r >= 0) {
		*ret_removed = g.exit_code == 0 && !is_dir(abs);
		git_res_release(&g);
	}
	free(abs);
	return r;
}

/* ---- per-task clones (sandboxed tasks) ------------------------------------- */

#define CLONE_TMP_SUFFIX ".clone-tmp"

int worktree_clone_check(const char *clone, struct diag *reterr)
{
	static const char *const not_in_clone[] = {"commondir", "gitdir", NULL};
	struct sbuf p = SBUF_INIT(SIZE_MAX);
	struct stat st;
	size_t i;
	int r = 0;

	if ((r = check_args(clone, reterr)) < 0)
		return r;
	(void)sbuf_addf(&p, "%s/.git", clone);
	if (lstat(p.buf, &st) < 0) {
		r = -errno;
		diag_set(reterr, clone, 0, 0, "not a clone: cannot inspect '.git': %s",
			 strerror(-r));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		diag_set(reterr, clone, 0, 0,
			 "'.git' is not a directory (a git worktree, or replaced by the agent)");
		r = -EPERM;
		goto out;
	}
	for (i = 0; not_in_clone[i]; i++) {
		sbuf_reset(&p);
		(void)sbuf_addf(&p, "%s/.git/%s", clone, not_in_clone[i]);
		if (lstat(p.buf, &st) == 0) {
			diag_set(reterr, clone, 0, 0,
				 "'.git/%s' exists: the clone points at another repository",
				 not_in_clone[i]);
			r = -EPERM;
			goto out;
		}
	}
out:
	sbuf_release(&p);
	return r;
}

/* In the clone at abs: branch checked out, made at base_commit (resolved in
 * repo) when it does not exist yet. */
static int clone_checkout(const char *repo, const char *abs, const char *branch,
			  const char *base_commit, const char *const *env, char **ret_start,
			  struct diag *reterr)
{
	const char *make[] = {"checkout", "-q", "-f", "-b", branch, NULL, "--", NULL};
	const char *use[] = {"checkout", "-q", branch, "--", NULL};
	char *base = NULL, *cur = NULL;
	bool exists = false;
	int r;

	r = git_branch_exists(abs, branch, env, &exists, reterr);
	if (r < 0)
		return r;
	if (exists) {
		/* resumed: the agent's work is there, committed or not */
		r = git_head(abs, env, &cur, NULL, reterr);
		if (r >= 0 && (!cur || strcmp(cur, branch) != 0))
			r = wt_simple(abs, env, use, reterr);
		free(cur);
		return r;
	}
	/* the branch is new, so no agent ran here yet: -f is safe, and
	 * redoes a checkout a crash interrupted */
	r = resolve_commit(repo, base_commit, env, &base, reterr);
	if (r < 0)
		return r;
	make[5] = base;
	r = wt_simple(abs, env, make, reterr);
	if (r >= 0 && ret_start) {
		*ret_start = base;
		base = NULL;
	}
	free(base);
	return r;
}

int worktree_clone_add(const char *repo, const char *path, const char *branch,
		       const char *base_commit, const char *const *env, char **ret_start,
		       struct diag *reterr)
{
	const char *clone[] = {"clone", "--shared", "--no-checkout", "-q", "--", NULL, NULL, NULL};
	struct sbuf tmp = SBUF_INIT(SIZE_MAX), gitdir = SBUF_INIT(SIZE_MAX);
	char *abs = NULL, *top = NULL;
	struct stat st;
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(path, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0 ||
	    (r = check_name(repo, "base commit", base_commit, reterr)) < 0)
		return r;
	if (ret_start)
		*ret_start = NULL;
	abs = canon_path(repo, path);
	top = canon_path(repo, ".");
	if (strcmp(abs, top) == 0) {
		diag_set(reterr, abs, 0, 0, "is the main working tree");
		r = -EEXIST;
		goto out;
	}
	(void)sbuf_addf(&gitdir, "%s/.git", abs);
	if (lstat(gitdir.buf, &st) == 0) {
		/* resumed: the clone is there (made whole: see the rename below) */
		r = worktree_clone_check(abs, reterr);
		if (r == -EPERM)
			r = -EEXIST;
		if (r >= 0)
			r = clone_checkout(repo, abs, branch, base_commit, env, ret_start, reterr);
		goto out;
	}
	r = path_free(abs, reterr);
	if (r < 0)
		goto out;
	/* cloned beside, then renamed into place: a clone at path is whole */
	(void)sbuf_addf(&tmp, "%s" CLONE_TMP_SUFFIX, abs);
	r = rmtree_beneath(tmp.buf); /* a crash inside an earlier clone */
	if (r < 0) {
		diag_set(reterr, tmp.buf, 0, 0, "cannot remove: %s", strerror(-r));
		goto out;
	}
	clone[5] = top;
	clone[6] = tmp.buf;
	r = wt_simple(repo, env, clone, reterr);
	if (r < 0)
		goto out;
	if (rename(tmp.buf, abs) < 0) {
		r = -errno;
		diag_set(reterr, abs, 0, 0, "cannot move the clone into place: %s", strerror(-r));
		(void)rmtree_beneath(tmp.buf);
		goto out;
	}
	r = clone_checkout(repo, abs, branch, base_commit, env, ret_start, reterr);
out:
	sbuf_release(&tmp);
	sbuf_release(&gitdir);
	free(abs);
	free(top);
	return r;
}

int worktree_clone_bare(const char *repo, const char *path, const char *branch, const char *commit,
			const char *const *env, struct diag *reterr)
{
	const char *clone[] = {"clone", "--shared", "--no-checkout", "-q", "--", NULL, NULL, NULL};
	const char *ref[] = {"update-ref", NULL, NULL, NULL};
	const char *head[] = {"symbolic-ref", "HEAD", NULL, NULL};
	struct sbuf name = SBUF_INIT(SIZE_MAX);
	char *abs = NULL, *top = NULL;
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(path, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0 ||
	    (r = check_name(repo, "commit", commit, reterr)) < 0)
		return r;
	abs = canon_path(repo, path);
	top = canon_path(repo, ".");
	r = path_free(abs, reterr);
	if (r < 0)
		goto out;
	clone[5] = top;
	clone[6] = abs;
	r = wt_simple(repo, env, clone, reterr);
	if (r < 0)
		goto out;
	/* a fresh clone of bernstein's own, no agent ran there: its branch
	 * made and named by HEAD, no file written */
	(void)sbuf_addf(&name, HEADS_PREFIX "%s", branch);
	ref[1] = name.buf;
	ref[2] = commit;
	head[2] = name.buf;
	r = wt_simple(abs, env, ref, reterr);
	if (r >= 0)
		r = wt_simple(abs, env, head, reterr);
out:
	sbuf_release(&name);
	free(abs);
	free(top);
	return r;
}

int worktree_clone_fetch(const char *repo, const char *clone, const char *branch,
			 const char *const *env, struct diag *reterr)
{
	const char *fetch[] = {"fetch",
			       "-q",
			       "--no-tags",
			       "--no-write-fetch-head",
			       "--no-recurse-submodules",
			       "--",
			       NULL,
			       NULL,
			       NULL};
	struct sbuf spec = SBUF_INIT(SIZE_MAX);
	char *abs = NULL;
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(clone, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0)
		return r;
	abs = canon_path(repo, clone);
	r = worktree_clone_check(abs, reterr);
	if (r < 0)
		goto out;
	/* git upload-pack runs in the clone and reads its config */
	tree_repair(abs, env);
	(void)sbuf_addf(&spec, "+" HEADS_PREFIX "%s:" HEADS_PREFIX "%s", branch, branch);
	fetch[6] = abs;
	fetch[7] = spec.buf;
	r = wt_simple(repo, env, fetch, reterr);
out:
	sbuf_release(&spec);
	free(abs);
	return r;
}

int worktree_changes(const char *wt, const char *const *env, struct strvec *ret,
		     struct diag *reterr)
{
	static const char *const args[] = {
		"status",	"--porcelain=v1", "-z", "--untracked-files=all",
		"--no-renames", PATHSPEC_ALL,	  NULL};
	struct strvec fields = STRVEC_INIT;
	struct git_res g;
	size_t i;
	int r;

	if ((r = check_args(wt, reterr)) < 0)
		return r;
	r = git_run(wt, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	split_z(g.out, g.out_len, &fields);
	for (i = 0; i < fields.nr; i++) {
		/* "XY PATH" */
		if (strlen(fields.v[i]) < 4 || fields.v[i][2] != ' ') {
			diag_set(reterr, wt, 0, 0, "git status: unexpected entry '%s'",
				 fields.v[i]);
			r = -EBADMSG;
			goto out;
		}
	}
	for (i = 0; i < fields.nr; i++)
		strvec_push(ret, fields.v[i] + 3);
out:
	strvec_clear(&fields);
	git_res_release(&g);
	return r;
}

int worktree_commit_all(const char *wt, const char *message, const struct git_identity *id,
			const char *const *env, bool *ret_committed, struct diag *reterr)
{
	static const char *const add[] = {"add", "-A", PATHSPEC_ALL, NULL};
	static const char *const staged[] = {"diff", "--cached", "--quiet", "--no-ext-diff", NULL};
	const char *commit[] = {
		"commit", "-q",	   "--no-verify", "--cleanup=whitespace", "--allow-empty-message",
		"-m",	  message, NULL};
	struct git_res g;
	int r;

	if ((r = check_args(wt, reterr)) < 0 || (r = check_message(wt, message, reterr)) < 0 ||
	    (r = check_identity(wt, id, reterr)) < 0)
		return r;
	r = git_step(wt, env, GIT_WRITE, NULL, add, reterr);
	if (r < 0)
		return r;

	r = git_call(wt, env, GIT_READ, NULL, staged, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code == 0) {
		git_res_release(&g);
		*ret_committed = false;
		return 0;
	}
	if (g.exit_code != 1) {
		r = git_fail(wt, staged, &g, reterr);
		git_res_release(&g);
		return r;
	}
	git_res_release(&g);

	r = git_step(wt, env, GIT_WRITE, id, commit, reterr);
	if (r < 0)
		return r;
	*ret_committed = true;
	return 0;
}

int git_commits_between(const char *repo, const char *base, const char *branch,
			const char *const *env, unsigned *ret, struct diag *reterr)
{
	const char *args[] = {"rev-list", "--count", NULL, NULL};
	struct sbuf range = SBUF_INIT(SIZE_MAX);
	char *cb = NULL, *cr = NULL, *end;
	unsigned long v;
	struct git_res g;
	int r;

	r = resolve_commit(repo, base, env, &cb, reterr);
	if (r >= 0)
		r = resolve_commit(repo, branch, env, &cr, reterr);
	if (r < 0)
		goto out;
	(void)sbuf_addf(&range, "%s..%s", cb, cr);
	args[2] = range.buf;
	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		goto out;
	errno = 0;
	v = strtoul(g.out, &end, 10);
	if (errno || end == g.out || (*end && *end != '\n') || v > UINT_MAX) {
		diag_set(reterr, repo, 0, 0, "git rev-list --count: unexpected output");
		r = -EBADMSG;
	} else {
		*ret = (unsigned)v;
	}
	git_res_release(&g);
out:
	sbuf_release(&range);
	free(cb);
	free(cr);
	return r;
}

int git_changed_files(const char *repo, const char *base, const char *branch,
		      const char *const *env, struct strvec *ret, struct diag *reterr)
{
	const char *args[] = {"diff",	       "--name-only", "--no-renames", "--no-ext-diff",
			      "--no-textconv", "-z",	      NULL,	      NULL};
	struct sbuf range = SBUF_INIT(SIZE_MAX);
	char *cb = NULL, *cr = NULL;
	struct git_res g;
	int r;

	r = resolve_commit(repo, base, env, &cb, reterr);
	if (r >= 0)
		r = resolve_commit(repo, branch, env, &cr, reterr);
	if (r < 0)
		goto out;
	(void)sbuf_addf(&range, "%s...%s", cb, cr);
	args[6] = range.buf;
	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		goto out;
	split_z(g.out, g.out_len, ret);
	git_res_release(&g);
out:
	sbuf_release(&range);
	free(cb);
	free(cr);
	return r;
}

/* ---- lock files a crash left ------------------------------------------------- */

#define LOCK_POLL_MS	    50
#define LOCK_WALK_BUDGET    100000 /* directory entries looked at, at most */
#define LOCK_WALK_DEPTH	    32
#define LOCK_GITDIR_FILE    4096	 /* bytes of a worktree's gitdir file read */
#define LOCK_MTIME_SLACK_NS 2000000000LL /* file times are coarse, from another clock */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

static int64_t stat_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

/* The absolute git directory and common directory of repo. */
static int git_dirs(const char *repo, const char *const *env, char **ret_gitdir, char **ret_common,
		    struct diag *reterr)
{
	static const char *const args[] = {"rev-parse", "--path-format=absolute", "--git-dir",
					   "--git-common-dir", NULL};
	struct git_res g;
	char *nl;
	int r;

	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	nl = strchr(g.out, '\n');
	if (!nl || nl == g.out || !nl[1] || nl[1] == '\n') {
		diag_set(reterr, repo, 0, 0, "git rev-parse --git-dir: unexpected output");
		git_res_release(&g);
		return -EBADMSG;
	}
	*ret_gitdir = xstrndup(g.out, (size_t)(nl - g.out));
	*ret_common = xstrndup(nl + 1, strcspn(nl + 1, "\n"));
	git_res_release(&g);
	return 0;
}

struct lock_walk {
	struct git_lock *v;
	size_t n, alloc;
	size_t budget;
};

void git_locks_free(struct git_lock *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].root);
		free(v[i].rel);
	}
	free(v);
}

static void lock_add(struct lock_walk *w, const char *root, const char *rel,
		     enum git_lock_kind kind, const struct stat *st)
{
	struct sbuf path = SBUF_INIT(SIZE_MAX);

	if (w->n == w->alloc) {
		w->alloc = w->alloc ? 2 * w->alloc : 8;
		w->v = xrealloc(w->v, w->alloc * sizeof(*w->v));
	}
	(void)sbuf_addf(&path, "%s/%s", root, rel);
	w->v[w->n].path = sbuf_detach(&path, NULL);
	w->v[w->n].root = xstrdup(root);
	w->v[w->n].rel = xstrdup(rel);
	w->v[w->n].kind = kind;
	w->v[w->n].mtime_ns = stat_mtime_ns(st);
	w->n++;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* How a lock file at rel (below the walk's root) is classified; -1: not
 * listed. */
typedef int lock_kind_fn(const char *rel, void *data);

/* The *.lock files in the directory fd (rel below root), and with recurse
 * in its subdirectories, each classified by kind_of(rel). Every directory
 * is opened relative to its parent with O_NOFOLLOW: a symlink (or one
 * swapped in meanwhile) is never followed. Takes fd. */
static void walk_locks(struct lock_walk *w, const char *root, int fd, struct sbuf *rel,
		       unsigned depth, bool recurse, lock_kind_fn *kind_of, void *data)
{
	struct dirent *de;
	DIR *d;

	if (depth > LOCK_WALK_DEPTH || w->budget == 0) {
		(void)close(fd);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		(void)close(fd);
		return;
	}
	while (w->budget > 0 && (de = readdir(d)) != NULL) {
		size_t keep = rel->len;
		struct stat st;
		int kind, sub;

		w->budget--;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		(void)sbuf_addf(rel, "%s%s", rel->len ? "/" : "", de->d_name);
		if (S_ISDIR(st.st_mode)) {
			if (recurse &&
			    (sub = openat(dirfd(d), de->d_name,
					  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
				walk_locks(w, root, sub, rel, depth + 1, recurse, kind_of, data);
		} else if (ends_with(de->d_name, ".lock") &&
			   (kind = kind_of(rel->buf, data)) >= 0) {
			lock_add(w, root, rel->buf, (enum git_lock_kind)kind, &st);
		}
		sbuf_setlen(rel, keep);
	}
	(void)closedir(d);
}

static void walk_root(struct lock_walk *w, const char *root, bool recurse, lock_kind_fn *kind_of,
		      void *data)
{
	struct sbuf rel = SBUF_INIT(SIZE_MAX);
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		walk_locks(w, root, fd, &rel, 0, recurse, kind_of, data);
	sbuf_release(&rel);
}

int git_lock_remove(const struct git_lock *l, struct diag *reterr)
{
	int fd = open(l->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r;

	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT)
			return 0;
		diag_set(reterr, l->path, 0, 0, "cannot remove the stale lock file: %s",
			 strerror(-r));
		return r;
	}
	r = beneath_unlink(fd, l->rel, 0, reterr);
	(void)close(fd);
	return r == -ENOENT ? 0 : r;
}

struct refs_kinds {
	const char *ours_prefix; /* "heads/bernstein/" */
	const char *base_lock;	 /* "heads/main.lock" */
};

static int kind_of_ref(const char *rel, void *data)
{
	const struct refs_kinds *k = data;

	if (strncmp(rel, k->ours_prefix, strlen(k->ours_prefix)) == 0)
		return GIT_LOCK_OURS;
	if (strcmp(rel, k->base_lock) == 0)
		return GIT_LOCK_MERGE;
	return -1;
}

/* The top of the main git directory: its index and HEAD are the merge's;
 * with shared (the common directory), the locks of any git's brief writes. */
struct top_kinds {
	bool gitdir, common;
};

static int kind_of_top(const char *rel, void *data)
{
	static const char *const shared[] = {"packed-refs.lock", "config.lock", "shallow.lock",
					     NULL};
	const struct top_kinds *k = data;
	size_t i;

	if (k->gitdir && (strcmp(rel, "index.lock") == 0 || strcmp(rel, "HEAD.lock") == 0))
		return GIT_LOCK_MERGE;
	for (i = 0; k->common && shared[i]; i++)
		if (strcmp(rel, shared[i]) == 0)
			return GIT_LOCK_SHARED;
	return -1;
}

static int kind_ours(const char *rel, void *data)
{
	(void)rel;
	(void)data;
	return GIT_LOCK_OURS;
}

/* Whether the admin directory of a linked worktree belongs to one under
 * wt_abs (its gitdir file names WT_ABS/NAME/.git). */
static bool admin_is_ours(const char *admin, const char *wt_abs)
{
	struct sbuf p = SBUF_INIT(SIZE_MAX);
	char *text = NULL;
	size_t len = 0, n = strlen(wt_abs);
	bool ours = false;

	(void)sbuf_addf(&p, "%s/gitdir", admin);
	if (read_file_capped(p.buf, LOCK_GITDIR_FILE, &text, &len) >= 0) {
		ours = len > n + 1 && strncmp(text, wt_abs, n) == 0 && text[n] == '/' &&
		       !memchr(text, '\0', len);
		free(text);
	}
	sbuf_release(&p);
	return ours;
}

int worktree_locks_find(const char *repo, const char *wt_dir, const char *branch_prefix,
			const char *base_branch, const char *const *env, struct git_lock **ret,
			size_t *ret_n, struct diag *reterr)
{
	struct lock_walk w = {.budget = LOCK_WALK_BUDGET};
	struct refs_kinds rk;
	struct top_kinds tk;
	struct sbuf p = SBUF_INIT(SIZE_MAX), ours = SBUF_INIT(SIZE_MAX), base = SBUF_INIT(SIZE_MAX);
	char *gitdir = NULL, *common = NULL, *wt_abs = NULL;
	struct dirent *de;
	DIR *d;
	int r;

	if ((r = check_args(repo, reterr)) < 0 || (r = check_args(wt_dir, reterr)) < 0 ||
	    (r = check_name(repo, "branch prefix", branch_prefix, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", base_branch, reterr)) < 0)
		return r;
	r = git_dirs(repo, env, &gitdir, &common, reterr);
	if (r < 0)
		return r;
	wt_abs = canon_path(repo, wt_dir);

	/* the main git directory; the common one (packed-refs, config) */
	tk.gitdir = true;
	tk.common = strcmp(gitdir, common) == 0;
	walk_root(&w, gitdir, false, kind_of_top, &tk);
	if (!tk.common) {
		tk.gitdir = false;
		tk.common = true;
		walk_root(&w, common, false, kind_of_top, &tk);
	}
	/* refs: bernstein's branches, and the branch merges go into */
	(void)sbuf_addf(&ours, "heads/%s", branch_prefix);
	(void)sbuf_addf(&base, "heads/%s.lock", base_branch);
	rk.ours_prefix = ours.buf;
	rk.base_lock = base.buf;
	(void)sbuf_addf(&p, "%s/refs", common);
	walk_root(&w, p.buf, true, kind_of_ref, &rk);

	/* the admin directories of bernstein's worktrees */
	sbuf_reset(&p);
	(void)sbuf_addf(&p, "%s/worktrees", common);
	d = opendir(p.buf);
	while (d && (de = readdir(d)) != NULL) {
		struct sbuf admin = SBUF_INIT(SIZE_MAX);

		if (de->d_name[0] == '.')
			continue;
		(void)sbuf_addf(&admin, "%s/%s", p.buf, de->d_name);
		if (admin_is_ours(admin.buf, wt_abs)) {
			walk_root(&w, admin.buf, false, kind_ours, NULL);
			(void)sbuf_adds(&admin, "/refs");
			walk_root(&w, admin.buf, true, kind_ours, NULL);
		}
		sbuf_release(&admin);
	}
	if (d)
		(void)closedir(d);

	/* the clones of sandboxed tasks: their .git directories are bernstein's */
	d = opendir(wt_abs);
	while (d && (de = readdir(d)) != NULL) {
		struct sbuf git = SBUF_INIT(SIZE_MAX);
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		(void)sbuf_addf(&git, "%s/%s/.git", wt_abs, de->d_name);
		if (lstat(git.buf, &st) == 0 && S_ISDIR(st.st_mode)) {
			walk_root(&w, git.buf, false, kind_ours, NULL);
			(void)sbuf_adds(&git, "/refs");
			walk_root(&w, git.buf, true, kind_ours, NULL);
		}
		sbuf_release(&git);
	}
	if (d)
		(void)closedir(d);

	*ret = w.v;
	*ret_n = w.n;
	sbuf_release(&p);
	sbuf_release(&ours);
	sbuf_release(&base);
	free(gitdir);
	free(common);
	free(wt_abs);
	return 0;
}

int worktree_prune(const char *repo, const char *const *env, struct diag *reterr)
{
	static const char *const prune[] = {"worktree", "prune", NULL};
	int r;

	if ((r = check_args(repo, reterr)) < 0)
		return r;
	return wt_simple(repo, env, prune, reterr);
}

/* Wait (at most WORKTREE_LOCK_WAIT_MS) until nobody has the lock file at
 * path open; then, when it is not older than since_ns (the time the step
 * that may have left it started; INT64_MAX: never), remove it as stale.
 * 0 when it is gone; -EBUSY (reterr names it) when a process holds it, or
 * it is older than since_ns and did not go away meanwhile. */
static int lock_clear(const char *path, int64_t since_ns, struct diag *reterr)
{
	uint64_t deadline = add_sat(now_ms(), WORKTREE_LOCK_WAIT_MS);
	pid_t holder = 0;

	for (;;) {
		struct stat st;
		const char *const one[] = {path, NULL};
		bool late = now_ms() >= deadline;

		if (lstat(path, &st) < 0)
			return 0;
		if (proc_file_holders(one, 1, &holder) < 0)
			holder = 0;
		if (!holder && since_ns != INT64_MAX &&
		    stat_mtime_ns(&st) >= since_ns - LOCK_MTIME_SLACK_NS) {
			if (unlink(path) < 0 && errno != ENOENT) {
				diag_set(reterr, path, 0, 0,
					 "cannot remove the stale lock file: %s", strerror(errno));
				return -errno;
			}
			return 0;
		}
		if (late)
			break;
		sleep_ms(LOCK_POLL_MS);
	}
	if (holder)
		diag_set(
			reterr, path, 0, 0,
			"exists and process %ld has it open: another git is running in this repository",
			(long)holder);
	else
		diag_set(
			reterr, path, 0, 0,
			"exists: another git is running in this repository, or one was killed (remove the file if no git is running)");
	return -EBUSY;
}

/* ---- merging ---------------------------------------------------------------- */

#define CHECKOUT_ARGS_MAX (64u << 10) /* bytes of paths given to one checkout-index */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What the merge from h to m writes: the paths it adds (not in h) and the
 * ones it changes or deletes (in h), each sorted. */
static int merge_paths(const char *repo, const char *h, const char *m, const char *const *env,
		       struct strvec *added, struct strvec *kept, struct diag *reterr)
{
	const char *args[] = {"diff",
			      "--name-status",
			      "-z",
			      "--no-renames",
			      "--no-ext-diff",
			      "--no-textconv",
			      h,
			      m,
			      NULL};
	struct strvec f = STRVEC_INIT;
	struct git_res g;
	size_t i;
	int r;

	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	split_z(g.out, g.out_len, &f);
	for (i = 0; i + 1 < f.nr; i += 2)
		strvec_push(f.v[i][0] == 'A' ? added : kept, f.v[i + 1]);
	if (added->nr)
		qsort(added->v, added->nr, sizeof(*added->v), cmp_str);
	if (kept->nr)
		qsort(kept->v, kept->nr, sizeof(*kept->v), cmp_str);
	strvec_clear(&f);
	git_res_release(&g);
	return 0;
}

static bool sorted_has(const struct strvec *v, const char *s)
{
	return v->nr && bsearch(&s, v->v, v->nr, sizeof(*v->v), cmp_str) != NULL;
}

/* The directory holding rel (a path below the directory rootfd, as the
 * branch names it: the agent's), opened one component at a time with
 * O_NOFOLLOW, so that no symlink on the way -- there before or swapped in
 * -- leads anywhere; *ret_base points at rel's last component. The fd, or
 * -ENOENT (a directory on the way is missing), -ELOOP or -ENOTDIR (a
 * symlink or a file on the way), -EINVAL (an empty or '..' component). */
static int open_parent(int rootfd, const char *rel, const char **ret_base)
{
	const char *p = rel, *slash;
	int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);

	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/')) != NULL) {
		char name[NAME_MAX + 1];
		size_t n = (size_t)(slash - p);
		int next;

		if (n == 0 || n > NAME_MAX || (n == 2 && p[0] == '.' && p[1] == '.')) {
			(void)close(fd);
			return -EINVAL;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int r = errno == ENOENT ? -ENOENT : errno == ENOTDIR ? -ENOTDIR : -ELOOP;

			(void)close(fd);
			return r;
		}
		(void)close(fd);
		fd = next;
		p = slash + 1;
	}
	*ret_base = p;
	return fd;
}

/* Whether a leading directory of rel is one of the paths in kept (sorted):
 * a tracked file or symlink the merge deletes or replaces by a directory. */
static bool parent_kept(const char *rel, const struct strvec *kept)
{
	char *dir = xstrdup(rel), *slash;
	bool hit = false;

	while (!hit && (slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		hit = sorted_has(kept, dir);
	}
	free(dir);
	return hit;
}

/* The first of the added paths (below the directory repo) that something
 * in the work tree is in the way of: a file, a directory, a symlink, or a
 * file or symlink where a parent directory should be -- unless that is a
 * tracked path the merge replaces (kept). NULL: none. */
static const char *added_in_way(const char *repo, const struct strvec *added,
				const struct strvec *kept)
{
	const char *hit = NULL, *base;
	int rootfd = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t i;

	if (rootfd < 0)
		return added->nr ? added->v[0] : NULL;
	for (i = 0; !hit && i < added->nr; i++) {
		struct stat st;
		int pfd = open_parent(rootfd, added->v[i], &base);

		if (pfd == -ENOENT || (pfd < 0 && parent_kept(added->v[i], kept)))
			continue;
		if (pfd < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0)
			hit = added->v[i];
		if (pfd >= 0)
			(void)close(pfd);
	}
	(void)close(rootfd);
	return hit;
}

/* Whether repo's index records exactly commit's tree. */
static int index_is(const char *repo, const char *commit, const char *const *env, bool *ret,
		    struct diag *reterr)
{
	const char *args[] = {"diff-index", "--cached", "--quiet", "--ignore-submodules=none",
			      commit,	    "--",	NULL};

	return git_yes_no(repo, env, args, ret, reterr);
}

/* Whether the files of repo's work tree are what its index records. */
static int files_match_index(const char *repo, const char *const *env, bool *ret,
			     struct diag *reterr)
{
	static const char *const args[] = {"diff-files", "--quiet", "--ignore-submodules=none",
					   NULL};

	return git_yes_no(repo, env, args, ret, reterr);
}

/* git's message says a lock file is in the way. */
static bool err_locked(const char *err)
{
	return err && strstr(err, ".lock") && strstr(err, "File exists");
}

static int err_errno(const char *err)
{
	if (err && (strstr(err, "No space left") || strstr(err, "File too large") ||
		    strstr(err, "Disk quota exceeded")))
		return -ENOSPC;
	return -EIO;
}

/* `git update-index -q --refresh`: stat information brought up to date, so
 * that read-tree does not take a touched file for a changed one. */
static int index_refresh(const char *repo, const char *const *env, struct diag *reterr)
{
	static const char *const args[] = {"update-index", "-q", "--refresh", NULL};
	struct git_res g;
	int r;

	r = git_call(repo, env, GIT_WRITE, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code > 1) {
		r = git_fail(repo, args, &g, reterr);
		if (err_locked(g.err))
			r = -EAGAIN;
	}
	git_res_release(&g);
	return r;
}

/* The files in kept written from the index again (it records h's):
 * `checkout-index -f -q -u -- PATH...`, as few calls as the sizes allow. */
static int checkout_from_index(const char *repo, const struct strvec *kept, const char *const *env,
			       struct diag *reterr)
{
	struct strvec args = STRVEC_INIT;
	size_t i = 0, first, bytes;
	struct git_res g;
	int r = 0;

	while (r >= 0 && i < kept->nr) {
		strvec_clear(&args);
		strvec_push(&args, "checkout-index");
		strvec_push(&args, "-f");
		strvec_push(&args, "-q");
		strvec_push(&args, "-u");
		strvec_push(&args, "--");
		first = i;
		for (bytes = 0; i < kept->nr && (i == first || bytes < CHECKOUT_ARGS_MAX); i++) {
			strvec_push(&args, kept->v[i]);
			bytes += strlen(kept->v[i]) + 1;
		}
		r = git_run(repo, env, GIT_WRITE, NULL, (const char *const *)args.v, &g, reterr);
		if (r >= 0)
			git_res_release(&g);
	}
	strvec_clear(&args);
	return r;
}

/* The changes in repo's work tree against its index (and the index
 * against HEAD): tracked paths (modified, deleted, staged) into *tracked,
 * untracked ones (each file; not ignored ones) into *untracked. */
static int checkout_changes(const char *repo, const char *const *env, struct strvec *tracked,
			    struct strvec *untracked, struct diag *reterr)
{
	static const char *const args[] = {
		"status",	"--porcelain=v1",	    "-z",	  "--untracked-files=all",
		"--no-renames", "--ignore-submodules=none", PATHSPEC_ALL, NULL};
	struct strvec fields = STRVEC_INIT;
	struct git_res g;
	size_t i;
	int r;

	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	split_z(g.out, g.out_len, &fields);
	for (i = 0; i < fields.nr; i++) {
		const char *f = fields.v[i];

		if (strlen(f) < 4 || f[2] != ' ') {
			diag_set(reterr, repo, 0, 0, "git status: unexpected entry '%s'", f);
			r = -EBADMSG;
			break;
		}
		strvec_push(f[0] == '?' ? untracked : tracked, f + 3);
	}
	strvec_clear(&fields);
	git_res_release(&g);
	return r;
}

/* Remove the file rel below the directory rootfd (never through a symlink:
 * open_parent()), then its parent directories while they are empty. A
 * missing file, or a symlink or file on the way (then git did not write
 * there), is 0. */
static int unlink_added(int rootfd, const char *rel, struct diag *reterr)
{
	char *dir = xstrdup(rel), *slash;
	const char *base;
	struct stat st;
	int pfd = open_parent(rootfd, rel, &base), r = 0;

	if (pfd >= 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    unlinkat(pfd, base, 0) < 0) {
		r = -errno;
		diag_set(reterr, rel, 0, 0, "cannot remove: %s", strerror(errno));
	}
	if (pfd >= 0)
		(void)close(pfd);
	while (r == 0 && (slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		pfd = open_parent(rootfd, dir, &base);
		if (pfd < 0)
			break;
		if (unlinkat(pfd, base, AT_REMOVEDIR) < 0) {
			(void)close(pfd);
			break;
		}
		(void)close(pfd);
	}
	free(dir);
	return r;
}

/* The index records h (the merge did not get as far as writing it), and
 * the merge from h to m may have written some of its files. The merge
 * started from a checkout without changes to tracked files, so every
 * tracked change must be one of its paths (else -EUCLEAN, nothing touched:
 * someone else changed the checkout); untracked files elsewhere are the
 * user's and stay. The files it added are removed, the ones it changed or
 * deleted written from the index again. */
static int undo_files(const char *repo, const char *h, const char *m, const char *const *env,
		      struct diag *reterr)
{
	struct strvec added = STRVEC_INIT, kept = STRVEC_INIT, changed = STRVEC_INIT,
		      untracked = STRVEC_INIT, restore = STRVEC_INIT;
	size_t i;
	int rootfd, r;

	r = merge_paths(repo, h, m, env, &added, &kept, reterr);
	if (r >= 0)
		r = checkout_changes(repo, env, &changed, &untracked, reterr);
	if (r < 0)
		goto out;
	for (i = 0; i < changed.nr; i++) {
		if (sorted_has(&kept, changed.v[i])) {
			strvec_push(&restore, changed.v[i]);
			continue;
		}
		diag_set(
			reterr, repo, 0, 0,
			"'%s' changed, and not by bernstein's merge: the checkout is left as it is",
			changed.v[i]);
		r = -EUCLEAN;
		goto out;
	}
	rootfd = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = -errno;
		diag_set(reterr, repo, 0, 0, "cannot open: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < added.nr && r >= 0; i++)
		r = unlink_added(rootfd, added.v[i], reterr);
	(void)close(rootfd);
	if (r < 0)
		goto out;
	r = checkout_from_index(repo, &restore, env, reterr);
	if (r < 0)
		goto out;
	/* checked: nothing of the merge's is left */
	strvec_clear(&changed);
	strvec_clear(&untracked);
	r = checkout_changes(repo, env, &changed, &untracked, reterr);
	for (i = 0; r >= 0 && i < changed.nr + untracked.nr; i++) {
		const char *c = i < changed.nr ? changed.v[i] : untracked.v[i - changed.nr];

		if (sorted_has(&added, c) || sorted_has(&kept, c)) {
			diag_set(reterr, repo, 0, 0, "'%s' is still changed", c);
			r = -EIO;
		}
	}
out:
	strvec_clear(&added);
	strvec_clear(&kept);
	strvec_clear(&changed);
	strvec_clear(&untracked);
	strvec_clear(&restore);
	return r;
}

/* Put the checkout at repo back at h after a merge to m stopped half way
 * (the branch still at h): by the index it left. */
static int undo_merge(const char *repo, const char *h, const char *m, const char *const *env,
		      struct diag *reterr)
{
	bool at_h = false, at_m = false;
	int r;

	r = index_refresh(repo, env, reterr);
	if (r >= 0)
		r = index_is(repo, h, env, &at_h, reterr);
	if (r >= 0 && !at_h)
		r = index_is(repo, m, env, &at_m, reterr);
	if (r < 0)
		return r;
	if (at_h)
		return undo_files(repo, h, m, env, reterr);
	if (at_m) {
		/* the index and files were written, the branch not moved: the
		 * same two-way merge backwards */
		const char *back[] = {"read-tree", "-m", "-u", m, h, NULL};
		struct git_res g;

		r = git_run(repo, env, GIT_WRITE, NULL, back, &g, reterr);
		if (r >= 0)
			git_res_release(&g);
		return r;
	}
	diag_set(
		reterr, repo, 0, 0,
		"the index records neither the merge nor the commit before it: the checkout is left as it is");
	return -EUCLEAN;
}

static int first_parent(const char *repo, const char *commit, const char *const *env, char **ret,
			struct diag *reterr)
{
	struct sbuf rev = SBUF_INIT(SIZE_MAX);
	int r;

	(void)sbuf_addf(&rev, "%s^1", commit);
	r = resolve_commit(repo, rev.buf, env, ret, reterr);
	sbuf_release(&rev);
	return r;
}

/* git_merge_prepare()'s checks before any merge: the checkout is on into
 * and clean; *ret_head and *ret_bc the two commits (caller frees both),
 * *ret_already when branch is already in into. */
static int prepare_check(const char *repo, const char *into, const char *branch,
			 const char *const *env, char **ret_head, char **ret_bc, bool *ret_already,
			 struct diag *reterr)
{
	char *cur = NULL;
	bool clean = false;
	int r;

	r = git_head(repo, env, &cur, ret_head, reterr);
	if (r < 0)
		goto out;
	if (!cur || strcmp(cur, into) != 0) {
		diag_set(reterr, repo, 0, 0,
			 "cannot merge '%s' into '%s': the checkout is on %s%s%s", branch, into,
			 cur ? "branch '" : "a detached HEAD", cur ? cur : "", cur ? "'" : "");
		r = -EXDEV;
		goto out;
	}
	r = resolve_commit(repo, branch, env, ret_bc, reterr);
	if (r < 0)
		goto out;
	r = ancestor_of(repo, *ret_bc, *ret_head, env, ret_already, reterr);
	if (r < 0 || *ret_already)
		goto out;
	r = git_is_clean(repo, env, &clean, reterr);
	if (r < 0)
		goto out;
	if (!clean) {
		diag_set(reterr, repo, 0, 0,
			 "cannot merge '%s': the checkout has uncommitted changes to tracked files",
			 branch);
		r = -EUCLEAN;
	}
out:
	free(cur);
	return r;
}

/* The merge of bc into head, computed in the object store alone: its tree
 * in *ret_tree (caller frees), or -EBUSY and the conflicting paths. */
static int merge_tree(const char *repo, const char *head, const char *bc, const char *branch,
		      const char *const *env, char **ret_tree, struct strvec *ret_conflicts,
		      struct diag *reterr)
{
	const char *mtree[] = {"merge-tree",	"--write-tree", "-z", "--name-only",
			       "--no-messages", NULL,		NULL, NULL};
	struct strvec fields = STRVEC_INIT;
	struct git_res g = {0};
	int r;

	mtree[5] = head;
	mtree[6] = bc;
	r = git_call(repo, env, GIT_WRITE, NULL, mtree, &g, reterr);
	if (r < 0)
		goto out;
	split_z(g.out, g.out_len, &fields);
	if (g.exit_code == 129 && g.err && strstr(g.err, "write-tree")) {
		diag_set(
			reterr, repo, 0, 0,
			"cannot merge '%s': git 2.38 or newer is needed (git merge-tree --write-tree)",
			branch);
		r = -EOPNOTSUPP;
		goto out;
	}
	if ((g.exit_code != 0 && g.exit_code != 1) || fields.nr < 1) {
		r = git_fail(repo, mtree, &g, reterr);
		goto out;
	}
	if (g.exit_code == 1) {
		struct sbuf names = SBUF_INIT(SIZE_MAX);
		size_t i, n = fields.nr - 1;

		for (i = 1; i < fields.nr && i <= 3; i++)
			(void)sbuf_addf(&names, "%s'%s'", i > 1 ? ", " : "", fields.v[i]);
		if (n > 3)
			(void)sbuf_adds(&names, ", ...");
		diag_set(reterr, repo, 0, 0, "merging '%s' conflicts in %zu file%s%s%s", branch, n,
			 n == 1 ? "" : "s", names.len ? ": " : "", names.buf);
		sbuf_release(&names);
		for (i = 1; ret_conflicts && i < fields.nr; i++)
			strvec_push(ret_conflicts, fields.v[i]);
		r = -EBUSY;
		goto out;
	}
	*ret_tree = xstrdup(fields.v[0]);
out:
	git_res_release(&g);
	strvec_clear(&fields);
	return r;
}

/* The merge commit of tree, parents head and bc, in *ret (caller frees). */
static int merge_commit(const char *repo, const char *tree, const char *head, const char *bc,
			const char *message, const struct git_identity *id, const char *const *env,
			char **ret, struct diag *reterr)
{
	const char *ctree[] = {"commit-tree", NULL, "-p", NULL, "-p", NULL, "-m", message, NULL};
	struct git_res g = {0};
	int r;

	ctree[1] = tree;
	ctree[3] = head;
	ctree[5] = bc;
	r = git_run(repo, env, GIT_WRITE, id, ctree, &g, reterr);
	if (r >= 0)
		*ret = first_line(&g);
	git_res_release(&g);
	return r;
}

/* -EUCLEAN when an untracked or ignored file stands where the merge from
 * base to merged adds one; what (for the message) says whose merge. */
static int merge_in_way(const char *repo, const char *base, const char *merged, const char *what,
			const char *const *env, struct diag *reterr)
{
	struct strvec added = STRVEC_INIT, kept = STRVEC_INIT;
	const char *hit;
	int r;

	r = merge_paths(repo, base, merged, env, &added, &kept, reterr);
	if (r < 0)
		goto out;
	hit = added_in_way(repo, &added, &kept);
	if (hit) {
		if (what)
			diag_set(
				reterr, repo, 0, 0,
				"cannot merge '%s': the untracked file '%s' would be overwritten by the merge",
				what, hit);
		else
			diag_set(reterr, repo, 0, 0,
				 "the untracked file '%s' would be overwritten by the merge", hit);
		r = -EUCLEAN;
	}
out:
	strvec_clear(&added);
	strvec_clear(&kept);
	return r;
}

int git_merge_prepare(const char *repo, const char *into, const char *branch, const char *message,
		      const struct git_identity *id, const char *const *env, char **ret_commit,
		      bool *ret_already, struct strvec *ret_conflicts, struct diag *reterr)
{
	char *head = NULL, *bc = NULL, *tree = NULL, *merged = NULL;
	bool already = false;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", into, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0 ||
	    (r = check_message(repo, message, reterr)) < 0 ||
	    (r = check_identity(repo, id, reterr)) < 0)
		return r;

	r = prepare_check(repo, into, branch, env, &head, &bc, &already, reterr);
	if (r < 0)
		goto out;
	if (already) {
		*ret_commit = NULL;
		*ret_already = true;
		goto out;
	}
	r = merge_tree(repo, head, bc, branch, env, &tree, ret_conflicts, reterr);
	if (r < 0)
		goto out;
	r = merge_commit(repo, tree, head, bc, message, id, env, &merged, reterr);
	if (r < 0)
		goto out;

	/* what the merge would write must not be there yet: an untracked or
	 * ignored file at one of its paths is the user's (git would
	 * overwrite an ignored one), and undoing a merge removes what it added */
	r = merge_in_way(repo, head, merged, branch, env, reterr);
	if (r < 0)
		goto out;
	*ret_commit = merged;
	merged = NULL;
	*ret_already = false;
out:
	free(head);
	free(bc);
	free(tree);
	free(merged);
	return r;
}

/* git_merge_apply()'s checks: the checkout is on into, into has not moved
 * from h, and nothing the merge adds is in the way. */
static int apply_check(const char *repo, const char *into, const char *h, const char *commit,
		       const char *const *env, struct diag *reterr)
{
	char *cur = NULL, *head = NULL;
	int r;

	r = git_head(repo, env, &cur, &head, reterr);
	if (r < 0)
		goto out;
	if (!cur || strcmp(cur, into) != 0) {
		diag_set(reterr, repo, 0, 0, "cannot merge into '%s': the checkout is on %s%s%s",
			 into, cur ? "branch '" : "a detached HEAD", cur ? cur : "",
			 cur ? "'" : "");
		r = -EXDEV;
		goto out;
	}
	if (strcmp(head, h) != 0) {
		diag_set(reterr, repo, 0, 0, "'%s' moved to %s since the merge was made", into,
			 head);
		r = -ESTALE;
		goto out;
	}
	/* what prepare checked, again where read-tree would not refuse: it
	 * overwrites an ignored file (a tracked change in the way it refuses) */
	r = merge_in_way(repo, h, commit, NULL, env, reterr);
out:
	free(cur);
	free(head);
	return r;
}

/* The index refreshed; someone else's git in the main checkout: wait a
 * little, never take its lock away (none of ours can be there: this is our
 * merge). */
static int apply_refresh(const char *repo, const char *const *env, struct diag *reterr)
{
	char *gitdir = NULL, *common = NULL;
	struct sbuf lock = SBUF_INIT(SIZE_MAX);
	int r;

	r = index_refresh(repo, env, reterr);
	if (r != -EAGAIN)
		return r;
	r = git_dirs(repo, env, &gitdir, &common, reterr);
	if (r >= 0) {
		(void)sbuf_addf(&lock, "%s/index.lock", gitdir);
		r = lock_clear(lock.buf, INT64_MAX, reterr) < 0 ? -EAGAIN
								: index_refresh(repo, env, reterr);
	}
	sbuf_release(&lock);
	free(gitdir);
	free(common);
	return r;
}

/* The index and the files: a two-way merge from h, as a checkout does; git
 * refuses before writing anything when a file is in the way (then
 * *ret_written stays false). */
static int apply_read_tree(const char *repo, const char *h, const char *commit,
			   const char *const *env, bool *ret_written, struct diag *reterr)
{
	const char *rtree[] = {"read-tree", "-m", "-u", NULL, commit, NULL};
	struct git_res g = {0};
	int r;

	*ret_written = true;
	rtree[3] = h;
	r = git_call(repo, env, GIT_WRITE, NULL, rtree, &g, reterr);
	if (r >= 0 && g.exit_code != 0) {
		(void)git_fail(repo, rtree, &g, reterr); /* the message; the errno is ours */
		if (g.err &&
		    (strstr(g.err, "would be overwritten") || strstr(g.err, "not uptodate")))
			r = -EUCLEAN;
		else if (err_locked(g.err))
			r = -EAGAIN;
		else
			r = err_errno(g.err);
		if (r == -EUCLEAN || r == -EAGAIN)
			*ret_written = false; /* refused up front: nothing written */
	}
	git_res_release(&g);
	return r;
}

int git_merge_apply(const char *repo, const char *into, const char *commit,
		    const struct git_identity *id, const char *const *env, struct diag *reterr)
{
	const char *uref[] = {"update-ref", "-m", "merge (bernstein)", "HEAD", commit, NULL, NULL};
	struct git_res g = {0};
	char *h = NULL;
	bool written = false;
	struct diag d2;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", into, reterr)) < 0 ||
	    (r = check_name(repo, "commit", commit, reterr)) < 0 ||
	    (r = check_identity(repo, id, reterr)) < 0)
		return r;
	r = first_parent(repo, commit, env, &h, reterr);
	if (r >= 0)
		r = apply_check(repo, into, h, commit, env, reterr);
	if (r >= 0)
		r = apply_refresh(repo, env, reterr);
	if (r < 0)
		goto out;

	r = apply_read_tree(repo, h, commit, env, &written, reterr);
	if (!written)
		goto out;
	/* the branch, only from where the merge started */
	if (r >= 0) {
		uref[5] = h;
		r = git_call(repo, env, GIT_WRITE, id, uref, &g, reterr);
		if (r >= 0 && g.exit_code != 0) {
			(void)git_fail(repo, uref, &g, reterr);
			r = err_locked(g.err) ? -EAGAIN : err_errno(g.err);
		}
		git_res_release(&g);
	}
	if (r >= 0)
		goto out;
	/* failed half way (a full disk, a killed git): the checkout back as
	 * it was, and the error as it was */
	diag_clear(&d2);
	if (undo_merge(repo, h, commit, env, &d2) < 0)
		diag_prefix(reterr, "merge failed and could not be undone (%s)", d2.msg);
	else
		diag_prefix(reterr, "merge failed; the checkout is as it was");
out:
	free(h);
	return r;
}

int git_merge_recover(const char *repo, const char *into, const char *commit, int64_t since_ns,
		      const struct git_identity *id, const char *const *env,
		      enum git_merge_found *ret, struct diag *reterr)
{
	const char *uref[] = {"update-ref", "-m", "merge (bernstein)", "HEAD", commit, NULL, NULL};
	struct strvec changed = STRVEC_INIT;
	char *cur = NULL, *head = NULL, *h = NULL, *gitdir = NULL, *common = NULL;
	struct sbuf p = SBUF_INIT(SIZE_MAX);
	bool at_m = false, files_ok = false;
	struct git_res g = {0};
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", into, reterr)) < 0 ||
	    (r = check_name(repo, "commit", commit, reterr)) < 0)
		return r;
	r = first_parent(repo, commit, env, &h, reterr);
	if (r >= 0)
		r = git_dirs(repo, env, &gitdir, &common, reterr);
	if (r < 0)
		goto out;
	/* the locks the merge's git took, as the merge's own */
	(void)sbuf_addf(&p, "%s/index.lock", gitdir);
	r = lock_clear(p.buf, since_ns, reterr);
	sbuf_reset(&p);
	(void)sbuf_addf(&p, "%s/HEAD.lock", gitdir);
	if (r >= 0)
		r = lock_clear(p.buf, since_ns, reterr);
	sbuf_reset(&p);
	(void)sbuf_addf(&p, "%s/refs/heads/%s.lock", common, into);
	if (r >= 0)
		r = lock_clear(p.buf, since_ns, reterr);
	if (r >= 0)
		r = git_head(repo, env, &cur, &head, reterr);
	if (r < 0)
		goto out;
	if (!cur || strcmp(cur, into) != 0) {
		diag_set(reterr, repo, 0, 0, "cannot merge into '%s': the checkout is on %s%s%s",
			 into, cur ? "branch '" : "a detached HEAD", cur ? cur : "",
			 cur ? "'" : "");
		r = -EXDEV;
		goto out;
	}
	if (strcmp(head, commit) == 0) {
		*ret = GIT_MERGE_DONE;
		goto out;
	}
	if (strcmp(head, h) != 0) {
		/* the branch moved on (the user's commit): no tracked change may
		 * be in the checkout, then the merge is made again (and refused
		 * while a file it adds is in the way) */
		struct strvec untracked = STRVEC_INIT;

		r = checkout_changes(repo, env, &changed, &untracked, reterr);
		strvec_clear(&untracked);
		if (r >= 0 && changed.nr) {
			diag_set(
				reterr, repo, 0, 0,
				"'%s' moved since bernstein's merge was made and the checkout has changes ('%s'): the checkout is left as it is",
				into, changed.v[0]);
			r = -EUCLEAN;
		}
		if (r >= 0)
			*ret = GIT_MERGE_MOVED;
		goto out;
	}
	r = index_refresh(repo, env, reterr);
	if (r >= 0)
		r = index_is(repo, commit, env, &at_m, reterr);
	if (r >= 0 && at_m)
		r = files_match_index(repo, env, &files_ok, reterr);
	if (r < 0)
		goto out;
	if (at_m && files_ok) {
		/* killed between the files and the branch: finish it */
		uref[5] = h;
		r = git_run(repo, env, GIT_WRITE, id, uref, &g, reterr);
		if (r >= 0)
			*ret = GIT_MERGE_DONE;
		goto out;
	}
	r = undo_merge(repo, h, commit, env, reterr);
	if (r >= 0)
		*ret = GIT_MERGE_UNDONE;
out:
	git_res_release(&g);
	strvec_clear(&changed);
	sbuf_release(&p);
	free(cur);
	free(head);
	free(h);
	free(gitdir);
	free(common);
	return r;
}

int git_merge_no_ff(const char *repo, const char *into, const char *branch, const char *message,
		    const struct git_identity *id, const char *const *env, char **ret_commit,
		    bool *ret_already, struct strvec *ret_conflicts, struct diag *reterr)
{
	char *commit = NULL;
	bool already = false;
	int r;

	r = git_merge_prepare(repo, into, branch, message, id, env, &commit, &already,
			      ret_conflicts, reterr);
	if (r < 0)
		return r;
	if (!already) {
		r = git_merge_apply(repo, into, commit, id, env, reterr);
		if (r < 0) {
			free(commit);
			return r;
		}
	}
	*ret_commit = commit;
	*ret_already = already;
	return 0;
}

int worktree_repo_objects(const char *repo, const char *const *env, char **ret, struct diag *reterr)
{
	struct sbuf p = SBUF_INIT(SIZE_MAX);
	char *common = NULL;
	int r;

	r = repo_common_dir(repo, env, &common, reterr);
	if (r < 0)
		return r;
	(void)sbuf_addf(&p, "%s/objects", common);
	free(common);
	*ret = sbuf_detach(&p, NULL);
	return 0;
}

/* ---- review and pull requests (merge: review | pr) -------------------------- */

int git_merge_base(const char *repo, const char *a, const char *b, const char *const *env,
		   char **ret, struct diag *reterr)
{
	const char *args[] = {"merge-base", a, b, NULL};
	struct git_res g;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "revision", a, reterr)) < 0 ||
	    (r = check_name(repo, "revision", b, reterr)) < 0)
		return r;
	r = git_call(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code == 1) {
		diag_set(reterr, repo, 0, 0, "'%s' and '%s' have no common commit", a, b);
		r = -ENOENT;
	} else if (g.exit_code != 0) {
		r = git_fail(repo, args, &g, reterr);
	} else {
		*ret = first_line(&g);
	}
	git_res_release(&g);
	return r;
}

int git_diff_range(const char *repo, const char *from, const char *to, enum git_diff_kind kind,
		   const char *const *env, char **ret, size_t *ret_len, struct diag *reterr)
{
	const char *args[] = {
		"diff", from, to,  "--no-ext-diff", "--no-textconv", "--no-color", NULL,
		NULL,	NULL, NULL};
	struct git_res g;
	size_t n = 6;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "revision", from, reterr)) < 0 ||
	    (r = check_name(repo, "revision", to, reterr)) < 0)
		return r;
	if (kind == GIT_DIFF_STAT)
		args[n++] = "--stat";
	if (kind == GIT_DIFF_NUMSTAT) {
		args[n++] = "--numstat";
		args[n++] = "-z";
	}
	args[n] = "--";
	r = git_call(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code != 0) {
		r = git_fail(repo, args, &g, reterr);
	} else {
		*ret = g.out ? g.out : xstrdup("");
		*ret_len = g.out_len;
		g.out = NULL;
	}
	git_res_release(&g);
	return r;
}

int git_remote_url(const char *repo, const char *name, const char *const *env, char **ret,
		   struct diag *reterr)
{
	struct sbuf key = SBUF_INIT(SIZE_MAX);
	const char *args[] = {"config", "--get", NULL, NULL};
	struct git_res g;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "remote name", name, reterr)) < 0)
		return r;
	(void)sbuf_addf(&key, "remote.%s.url", name);
	args[2] = key.buf;
	r = git_call(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		goto out;
	if (g.exit_code == 1) {
		diag_set(reterr, repo, 0, 0, "the repository has no remote '%s'", name);
		r = -ENOENT;
	} else if (g.exit_code != 0) {
		r = git_fail(repo, args, &g, reterr);
	} else {
		*ret = first_line(&g);
	}
	git_res_release(&g);
out:
	sbuf_release(&key);
	return r;
}

/* The credential helpers of the user's own (global) configuration, as
 * `-c credential.helper=...` options: the repository's are never read. */
static void global_helpers(const char *repo, const char *const *env, struct strvec *args)
{
	static const char *const q[] = {"config", "--global", "--get-all", "credential.helper",
					NULL};
	struct git_res g;
	char *line, *save = NULL;

	if (git_call(repo, env, GIT_READ, NULL, q, &g, NULL) < 0)
		return;
	if (g.exit_code == 0 && g.out) {
		for (line = strtok_r(g.out, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			strvec_push(args, "-c");
			strvec_pushf(args, "credential.helper=%s", line);
		}
	}
	git_res_release(&g);
}

int git_push_commit(const char *repo, const char *url, const char *commit, const char *branch,
		    const char *const *env, struct diag *reterr)
{
	struct strvec args = STRVEC_INIT;
	struct git_res g;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "commit", commit, reterr)) < 0 ||
	    (r = check_name(repo, "branch name", branch, reterr)) < 0)
		return r;
	if (!url || !*url || url[0] == '-' || strchr(url, '\n')) {
		diag_set(reterr, repo, 0, 0, "invalid remote URL '%s'", url ? url : "");
		return -EINVAL;
	}
	global_helpers(repo, env, &args);
	strvec_push(&args, "push");
	strvec_push(&args, "--porcelain");
	strvec_push(&args, url);
	strvec_pushf(&args, "%s:refs/heads/%s", commit, branch);
	r = git_call(repo, env, GIT_PUSH, NULL, (const char *const *)args.v, &g, reterr);
	if (r >= 0 && g.exit_code != 0)
		r = git_fail(repo, (const char *const *)args.v, &g, reterr);
	git_res_release(&g);
	strvec_clear(&args);
	return r;
}

/* ---- conflicts (docs/runs.md, "Conflicts") ----------------------------------- */

/* The unmerged paths of the tree wt (a stopped rebase or merge). */
static int unmerged_paths(const char *wt, const char *const *env, struct strvec *ret,
			  struct diag *reterr)
{
	static const char *const args[] = {"diff", "--name-only",   "--diff-filter=U",
					   "-z",   "--no-ext-diff", "--no-renames",
					   NULL};
	struct git_res g;
	int r;

	r = git_run(wt, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	split_z(g.out, g.out_len, ret);
	git_res_release(&g);
	return 0;
}

/* The path git keeps NAME at in wt's git directory (`rev-parse --git-path`),
 * absolute; caller frees. */
static int git_path_of(const char *wt, const char *const *env, const char *name, char **ret,
		       struct diag *reterr)
{
	const char *args[] = {"rev-parse", "--git-path", name, NULL};
	struct git_res g;
	char *p;
	int r;

	r = git_run(wt, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	p = first_line(&g);
	git_res_release(&g);
	if (p[0] != '/') {
		char *abs = path_cat(wt, p);

		free(p);
		p = abs;
	}
	*ret = p;
	return 0;
}

int worktree_restore(const char *wt, const char *branch, const char *commit, const char *const *env,
		     struct diag *reterr)
{
	static const char *const rebase_abort[] = {"rebase", "--abort", NULL};
	static const char *const merge_abort[] = {"merge", "--abort", NULL};
	static const char *const leftovers[] = {
		"rebase-merge", "rebase-apply", "MERGE_HEAD", "MERGE_MSG",
		"MERGE_MODE",	"AUTO_MERGE",	NULL};
	const char *reset[] = {"reset", "-q", "--hard", commit, NULL};
	char ref[PATH_MAX];
	const char *symref[] = {"symbolic-ref", "HEAD", ref, NULL};
	struct git_res g;
	size_t i;
	int r;

	if ((r = check_args(wt, reterr)) < 0 ||
	    (r = check_name(wt, "branch", branch, reterr)) < 0 ||
	    (r = check_name(wt, "commit", commit, reterr)) < 0)
		return r;
	/* what a killed rebase or merge left: their own aborts first (exit
	 * 128 when there is none), then whatever they could not take away */
	if (git_call(wt, env, GIT_WRITE, NULL, rebase_abort, &g, NULL) == 0)
		git_res_release(&g);
	if (git_call(wt, env, GIT_WRITE, NULL, merge_abort, &g, NULL) == 0)
		git_res_release(&g);
	for (i = 0; leftovers[i]; i++) {
		char *p = NULL;
		struct stat st;

		if (git_path_of(wt, env, leftovers[i], &p, NULL) == 0 && lstat(p, &st) == 0) {
			r = S_ISDIR(st.st_mode) ? rmtree_beneath(p) : unlink(p) < 0 ? -errno : 0;
			if (r < 0) {
				diag_set(reterr, p, 0, 0, "cannot remove: %s", strerror(-r));
				free(p);
				return r;
			}
		}
		free(p);
	}
	(void)snprintf(ref, sizeof(ref), "%s%s", HEADS_PREFIX, branch);
	r = git_step(wt, env, GIT_WRITE, NULL, symref, reterr);
	if (r < 0)
		return r;
	r = git_step(wt, env, GIT_WRITE, NULL, reset, reterr);
	if (r < 0)
		return r;
	return 0;
}

int worktree_rebase(const char *wt, const char *onto, const struct git_identity *id,
		    const char *const *env, struct strvec *ret_conflicts, struct diag *reterr)
{
	/* rerere off: a resolution recorded earlier is not replayed silently */
	const char *args[] = {"-c",
			      "rerere.enabled=false",
			      "rebase",
			      "--quiet",
			      "--no-autostash",
			      "--no-autosquash",
			      "--no-update-refs",
			      "--no-verify",
			      "--empty=drop",
			      onto,
			      NULL};
	static const char *const abort_[] = {"rebase", "--abort", NULL};
	struct strvec paths = STRVEC_INIT;
	struct git_res g, ga;
	char tail[DIAG_ERR_TAIL + 64];
	int r;

	if ((r = check_args(wt, reterr)) < 0 || (r = check_name(wt, "commit", onto, reterr)) < 0 ||
	    (r = check_identity(wt, id, reterr)) < 0)
		return r;
	r = git_call(wt, env, GIT_WRITE, id, args, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code == 0) {
		git_res_release(&g);
		return 0;
	}
	/* stopped: what conflicts, then back to where the branch was */
	(void)unmerged_paths(wt, env, &paths, NULL);
	r = git_run(wt, env, GIT_WRITE, NULL, abort_, &ga, reterr);
	if (r < 0) {
		diag_prefix(reterr, "the rebase stopped and could not be aborted");
		goto out;
	}
	git_res_release(&ga);
	if (paths.nr) {
		if (ret_conflicts)
			strvec_pushv(ret_conflicts, (const char *const *)paths.v);
		diag_set(reterr, wt, 0, 0, "the rebase onto %.12s conflicts in %zu file(s)", onto,
			 paths.nr);
		r = -EBUSY;
	} else {
		diag_set(reterr, wt, 0, 0, "git rebase failed (exit %d), aborted: %s", g.exit_code,
			 err_tail(g.err ? g.err : "", tail, sizeof(tail)));
		r = -EIO;
	}
out:
	git_res_release(&g);
	strvec_clear(&paths);
	return r;
}

int worktree_merge_start(const char *wt, const char *commit, const struct git_identity *id,
			 const char *const *env, struct strvec *ret_conflicts, struct diag *reterr)
{
	const char *args[] = {"-c",	     "rerere.enabled=false",
			      "merge",	     "--no-ff",
			      "--no-commit", "--no-verify",
			      "--no-edit",   "--no-rerere-autoupdate",
			      "--quiet",     commit,
			      NULL};
	struct strvec paths = STRVEC_INIT;
	char tail[DIAG_ERR_TAIL + 64];
	struct git_res g;
	int r;

	if ((r = check_args(wt, reterr)) < 0 ||
	    (r = check_name(wt, "commit", commit, reterr)) < 0 ||
	    (r = check_identity(wt, id, reterr)) < 0)
		return r;
	r = git_call(wt, env, GIT_WRITE, id, args, &g, reterr);
	if (r < 0)
		return r;
	if (g.exit_code == 0) {
		git_res_release(&g);
		return 0;
	}
	r = unmerged_paths(wt, env, &paths, reterr);
	if (r == 0 && paths.nr) {
		if (ret_conflicts)
			strvec_pushv(ret_conflicts, (const char *const *)paths.v);
		r = 1;
	} else if (r == 0) {
		diag_set(reterr, wt, 0, 0, "git merge failed (exit %d): %s", g.exit_code,
			 err_tail(g.err ? g.err : "", tail, sizeof(tail)));
		r = -EIO;
	}
	git_res_release(&g);
	strvec_clear(&paths);
	return r;
}

int worktree_commit_merge(const char *wt, const char *message, const struct git_identity *id,
			  const char *const *env, bool *ret_committed, struct diag *reterr)
{
	static const char *const merging[] = {"rev-parse", "-q", "--verify", "MERGE_HEAD", NULL};
	const char *commit[] = {"commit", "-q",	   "--no-verify", "--cleanup=whitespace",
				"-m",	  message, NULL};
	struct git_res g;
	int r;

	if ((r = check_args(wt, reterr)) < 0 || (r = check_message(wt, message, reterr)) < 0 ||
	    (r = check_identity(wt, id, reterr)) < 0)
		return r;
	r = git_call(wt, env, GIT_READ, NULL, merging, &g, reterr);
	if (r < 0)
		return r;
	r = g.exit_code;
	git_res_release(&g);
	if (r != 0) /* no merge in progress: what there is, as any commit */
		return worktree_commit_all(wt, message, id, env, ret_committed, reterr);
	{
		static const char *const add[] = {"add", "-A", PATHSPEC_ALL, NULL};

		r = git_step(wt, env, GIT_WRITE, NULL, add, reterr);
		if (r < 0)
			return r;
	}
	r = git_step(wt, env, GIT_WRITE, id, commit, reterr);
	if (r < 0)
		return r;
	*ret_committed = true;
	return 0;
}

int git_conflict_markers(const char *repo, const char *commit, const struct strvec *paths,
			 const char *const *env, struct strvec *ret, struct diag *reterr)
{
	struct strvec args = STRVEC_INIT;
	struct git_res g;
	size_t i, cl;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "commit", commit, reterr)) < 0)
		return r;
	if (!paths || !paths->nr)
		return 0;
	strvec_push(&args, "grep");
	strvec_push(&args, "-l");
	strvec_push(&args, "-I");
	strvec_push(&args, "--no-textconv");
	strvec_push(&args, "-E");
	strvec_push(&args, "-e");
	strvec_push(&args, "^(<<<<<<<|>>>>>>>)( |$)");
	strvec_push(&args, commit);
	strvec_push(&args, "--");
	for (i = 0; i < paths->nr; i++)
		strvec_pushf(&args, ":(literal)%s", paths->v[i]);
	r = git_call(repo, env, GIT_READ, NULL, (const char *const *)args.v, &g, reterr);
	if (r < 0)
		goto out;
	if (g.exit_code == 1) {
		git_res_release(&g);
		goto out;
	}
	if (g.exit_code != 0) {
		r = git_fail(repo, (const char *const *)args.v, &g, reterr);
		git_res_release(&g);
		goto out;
	}
	/* "COMMIT:PATH" lines */
	cl = strlen(commit);
	{
		char *save = NULL, *line;

		for (line = strtok_r(g.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (strncmp(line, commit, cl) == 0 && line[cl] == ':')
				strvec_push(ret, line + cl + 1);
			else
				strvec_push(ret, line);
	}
	git_res_release(&g);
	r = 1;
out:
	strvec_clear(&args);
	return r;
}

int git_log_subjects(const char *repo, const char *from, const char *to, unsigned max,
		     const char *const *env, struct strvec *ret, struct diag *reterr)
{
	char range[256], n[32];
	const char *args[] = {"log", "--format=%s", n, range, "--", NULL};
	struct git_res g;
	char *save = NULL, *line;
	int r;

	if ((r = check_args(repo, reterr)) < 0 ||
	    (r = check_name(repo, "commit", from, reterr)) < 0 ||
	    (r = check_name(repo, "commit", to, reterr)) < 0)
		return r;
	(void)snprintf(n, sizeof(n), "-n%u", max);
	(void)snprintf(range, sizeof(range), "%s..%s", from, to);
	r = git_run(repo, env, GIT_READ, NULL, args, &g, reterr);
	if (r < 0)
		return r;
	for (line = strtok_r(g.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		strvec_push(ret, line);
	git_res_release(&g);
	return 0;
}

int worktree_git_step(const char *dir, const char *const *env, bool write, const char *const *args,
		      struct diag *reterr)
{
	int r = check_args(dir, reterr);

	if (r < 0)
		return r;
	return git_step(dir, env, write ? GIT_WRITE : GIT_READ, NULL, args, reterr);
}
