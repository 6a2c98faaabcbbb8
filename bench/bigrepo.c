/* Constant-time task trees (issue #24, docs/runs.md "Overlay checkouts"):
 * per-task tree creation + removal with the overlay kind of checkout
 * (orch/checkout.h: `git worktree add --no-checkout`, an overlay mount on a
 * shared base checkout, the index copied in; removed by an unmount and the
 * task's layer) against the worktree kind (`git worktree add -b` + `git
 * worktree remove --force`, what every task paid before), both through the
 * checkout interface the run loop uses, interleaved in the same run on the
 * same repository. The base checkout is made once per base commit: its
 * cost is printed on its own line (it is paid by the first task on a
 * commit, then shared). The first `git status` in a tree of each kind is
 * printed for reference. Target: the overlay at most 5% of git's time.
 * It asserts nothing about wall-clock time (exit 1 only if something
 * cannot run; the overlay not allowed here is said and not timed).
 *
 * Where the file system under the repository clones files (FICLONE:
 * XFS, btrfs), the reflink kind (docs/runs.md "Reflink checkouts": the
 * base checkout's files cloned, its index copied with their stat data) is
 * timed too, interleaved with the others, and its ratio printed: the tier
 * a run takes where the overlay is refused.
 *
 * With -l BRANCH (a branch one commit after main, bench/bigrepo.sh makes
 * it), one tree of each kind on it afterwards: the overlay one shares
 * main's base checkout and `git read-tree -m -u` brings it to its commit.
 *
 * usage: bigrepo-bench [-n N] [-l BRANCH] REPO   (REPO: a repository on
 *        branch main, its work tree may be empty; bench/bigrepo.sh makes
 *        one) */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orch/checkout.h"
#include "orch/worktree.h"
#include "util/fsutil.h"
#include "util/strvec.h"

#define TARGET_PCT 5.0

static double now_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct ctx {
	const char *repo;
	const char *const *env;
};

/* One tree of kind on base made and removed (its branch deleted): the
 * seconds of make and of remove; with status, the first `git status` in it
 * too (it must list nothing). */
static char kind_letter(enum checkout_kind kind)
{
	return kind == CHECKOUT_OVERLAY ? 'o' : kind == CHECKOUT_REFLINK ? 'r' : 'w';
}

static int one_on(const struct ctx *c, const char *base, enum checkout_kind kind, long i,
		  double *ret_make, double *ret_remove, double *ret_status)
{
	struct checkout co = CHECKOUT_INIT;
	char path[PATH_MAX], branch[64];
	struct strvec changes = STRVEC_INIT;
	struct diag d;
	double t0;
	int r;

	(void)snprintf(path, sizeof(path), "%s/.bernstein/worktrees/bench-%c%ld", c->repo,
		       kind_letter(kind), i);
	(void)snprintf(branch, sizeof(branch), "bench/%c%ld", kind_letter(kind), i);
	checkout_bind(&co, kind, c->repo, c->env, path, branch);
	diag_clear(&d);
	t0 = now_s();
	r = checkout_make(&co, base, false, &d);
	*ret_make = now_s() - t0;
	if (r < 0)
		goto fail;
	if (kind != CHECKOUT_WORKTREE && co.fallback) {
		(void)fprintf(stderr, "bigrepo: %s fell back: %s\n",
			      kind == CHECKOUT_OVERLAY ? "overlay" : "reflink", co.fallback);
		r = -EOPNOTSUPP;
		goto fail;
	}
	if (ret_status) {
		t0 = now_s();
		r = checkout_changes(&co, &changes, &d);
		*ret_status = now_s() - t0;
		if (r < 0)
			goto fail;
		if (changes.nr) {
			(void)fprintf(stderr,
				      "bigrepo: a fresh %s tree shows %zu change(s), '%s' first\n",
				      checkout_noun(&co), changes.nr, changes.v[0]);
			r = -EBADMSG;
			goto fail;
		}
	}
	t0 = now_s();
	r = checkout_remove(&co, false, &d);
	*ret_remove = now_s() - t0;
	if (r >= 0)
		r = worktree_branch_delete(c->repo, branch, c->env, &d);
	if (r < 0)
		goto fail;
	strvec_clear(&changes);
	checkout_release(&co);
	return 0;
fail:
	(void)fprintf(stderr, "bigrepo: %s: %s\n", d.file[0] ? d.file : path,
		      d.msg[0] ? d.msg : strerror(-r));
	strvec_clear(&changes);
	checkout_release(&co);
	return -1;
}

static int one(const struct ctx *c, enum checkout_kind kind, long i, double *ret_make,
	       double *ret_remove, double *ret_status)
{
	return one_on(c, "main", kind, i, ret_make, ret_remove, ret_status);
}

int main(int argc, char **argv)
{
	char repo[PATH_MAX], path_env[PATH_MAX + 8], repo_env[PATH_MAX + 32];
	const char *env[] = {path_env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", repo_env, NULL};
	double *wm, *wr, *om, *or_, *rm, *rr, make, rem, st_w = 0, st_o = 0, st_r = 0, base_s = 0;
	double w_make, w_rem;
	char why_o[sizeof(((struct diag *)0)->msg)] = "", why_r[sizeof(why_o)] = "",
					probe[PATH_MAX + 32];
	bool overlay, reflink;
	struct ctx c = {.repo = repo, .env = env};
	struct diag d;
	const char *later = NULL;
	long n = 5, i;
	int opt, rc = 1;
	size_t gc = 0;

	while ((opt = getopt(argc, argv, "n:l:")) != -1) {
		if (opt == 'l') {
			later = optarg;
		} else if (opt != 'n' || (n = strtol(optarg, NULL, 10)) < 1) {
			(void)fprintf(stderr, "usage: bigrepo-bench [-n N] [-l BRANCH] REPO\n");
			return 2;
		}
	}
	if (optind + 1 != argc || !realpath(argv[optind], repo)) {
		(void)fprintf(stderr, "usage: bigrepo-bench [-n N] [-l BRANCH] REPO\n");
		return 2;
	}
	(void)snprintf(path_env, sizeof(path_env), "PATH=%s",
		       getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	(void)snprintf(repo_env, sizeof(repo_env), "%s=%s", WORKTREE_GIT_REPO_ENV, repo);
	wm = calloc((size_t)n, sizeof(double));
	wr = calloc((size_t)n, sizeof(double));
	om = calloc((size_t)n, sizeof(double));
	or_ = calloc((size_t)n, sizeof(double));
	rm = calloc((size_t)n, sizeof(double));
	rr = calloc((size_t)n, sizeof(double));
	if (!wm || !wr || !om || !or_ || !rm || !rr)
		return 1;

	/* the baseline first: it needs nothing the overlay does */
	if (one(&c, CHECKOUT_WORKTREE, 0, &make, &rem, &st_w) < 0)
		goto out;
	diag_clear(&d);
	overlay = checkout_overlay_probe(repo, &d) == 0;
	if (!overlay)
		(void)snprintf(why_o, sizeof(why_o), "%s", d.msg);
	(void)snprintf(probe, sizeof(probe), "%s/.bernstein/worktrees/probe", repo);
	diag_clear(&d);
	reflink = checkout_reflink_probe(repo, probe, &d) == 0;
	if (!reflink)
		(void)snprintf(why_r, sizeof(why_r), "%s", d.msg);
	if (!overlay && !reflink) {
		(void)printf(
			"bigrepo: git worktree add %.1f ms + remove %.1f ms per task; overlay not available here: %s; reflink copies neither: %s\n",
			make * 1e3, rem * 1e3, why_o, why_r);
		rc = 0;
		goto out;
	}
	/* the shared base checkout, made by the first tree on main */
	if (overlay && one(&c, CHECKOUT_OVERLAY, 0, &base_s, &rem, &st_o) < 0)
		goto out;
	if (reflink && one(&c, CHECKOUT_REFLINK, 0, overlay ? &rm[0] : &base_s, &rem, &st_r) < 0)
		goto out;
	if (reflink && !overlay) {
		/* its status once more, the base made: what a task sees */
		if (one(&c, CHECKOUT_REFLINK, 0, &rm[0], &rem, &st_r) < 0)
			goto out;
	}
	for (i = 0; i < n; i++) {
		if (one(&c, CHECKOUT_WORKTREE, i + 1, &wm[i], &wr[i], NULL) < 0 ||
		    (overlay && one(&c, CHECKOUT_OVERLAY, i + 1, &om[i], &or_[i], NULL) < 0) ||
		    (reflink && one(&c, CHECKOUT_REFLINK, i + 1, &rm[i], &rr[i], NULL) < 0))
			goto out;
		/* the base stays: a run's tasks on one commit share it */
	}
	w_make = median(wm, n);
	w_rem = median(wr, n);
	if (overlay) {
		double o_make = median(om, n), o_rem = median(or_, n);

		(void)printf(
			"bigrepo: overlay %.1f ms + %.1f ms, git worktree add %.1f ms + remove %.1f ms per task: %.2f%% (target <= %.0f%%)\n",
			o_make * 1e3, o_rem * 1e3, w_make * 1e3, w_rem * 1e3,
			100.0 * (o_make + o_rem) / (w_make + w_rem), TARGET_PCT);
	} else {
		(void)printf("bigrepo: overlay not available here: %s\n", why_o);
	}
	if (reflink) {
		double r_make = median(rm, n), r_rem = median(rr, n);

		(void)printf(
			"bigrepo: reflink %.1f ms + %.1f ms, git worktree add %.1f ms + remove %.1f ms per task: %.1f%% of git's time (%.1fx faster)\n",
			r_make * 1e3, r_rem * 1e3, w_make * 1e3, w_rem * 1e3,
			100.0 * (r_make + r_rem) / (w_make + w_rem),
			(w_make + w_rem) / (r_make + r_rem));
	} else {
		(void)printf("bigrepo: reflink copies not available here: %s\n", why_r);
	}
	(void)printf(
		"bigrepo: median of %ld interleaved tree creations + removals each; the shared base checkout of a commit: %.0f ms once (its first task)\n",
		n, base_s * 1e3);
	(void)printf("bigrepo: first git status in a fresh tree:");
	if (overlay)
		(void)printf(" overlay %.1f ms,", st_o * 1e3);
	if (reflink)
		(void)printf(" reflink %.1f ms,", st_r * 1e3);
	(void)printf(" worktree %.1f ms\n", st_w * 1e3);
	/* a tree on a later commit (one file changed: a merge went in) shares
	 * the base checkout, brought to its commit in its own layer */
	if (later) {
		double lw_m, lw_r, lo_m, lo_r, lo_s = 0;

		if (one_on(&c, later, CHECKOUT_WORKTREE, n + 1, &lw_m, &lw_r, NULL) < 0 ||
		    one_on(&c, later, overlay ? CHECKOUT_OVERLAY : CHECKOUT_REFLINK, n + 1, &lo_m,
			   &lo_r, &lo_s) < 0)
			goto out;
		(void)printf(
			"bigrepo: on a later commit ('%s', sharing the base): %s %.1f ms + %.1f ms, git worktree add %.1f ms + remove %.1f ms: %.2f%%\n",
			later, overlay ? "overlay" : "reflink", lo_m * 1e3, lo_r * 1e3, lw_m * 1e3,
			lw_r * 1e3, 100.0 * (lo_m + lo_r) / (lw_m + lw_r));
	}
	rc = 0;
out:
	diag_clear(&d);
	if (checkout_overlay_gc(repo, env, &gc, &d) < 0)
		(void)fprintf(stderr, "bigrepo: cannot remove the base checkout: %s\n", d.msg);
	free(wm);
	free(wr);
	free(om);
	free(or_);
	free(rm);
	free(rr);
	return rc;
}
