/* What differs between the kinds of checkout (orch/checkout.h): private
 * to checkout.c and checkout-overlay.c. */
#ifndef BERNSTEIN_ORCH_CHECKOUT_INTERNAL_H
#define BERNSTEIN_ORCH_CHECKOUT_INTERNAL_H

#include "orch/checkout.h"

/* What differs between the kinds. */
struct checkout_ops {
	const char *noun;
	/* the supervised command that makes it; NULL: none */
	int (*command)(struct checkout *co, const char *base, struct strvec *ret_argv,
		       struct strvec *ret_env, uint64_t *ret_timeout_ms, struct diag *reterr);
	int (*make)(struct checkout *co, const char *base, bool made_by_command, char **ret_start,
		    struct diag *reterr);
	/* whether git may run in the tree; NULL: always */
	int (*check)(const struct checkout *co, struct diag *reterr);
	/* where the branch lives (the repository, or the tree) */
	const char *(*branch_home)(const struct checkout *co);
	int (*ahead)(const struct checkout *co, const char *base, unsigned *ret,
		     struct diag *reterr);
	int (*changed_files)(const struct checkout *co, const char *base, struct strvec *ret,
			     struct diag *reterr);
	int (*publish)(const struct checkout *co, const char *base, unsigned *ret_ahead,
		       char **ret_head, struct diag *reterr);
	bool set_aside; /* may be set aside (checkout_set_aside()) */
	int (*remove)(const struct checkout *co, struct diag *reterr);
};

extern const struct checkout_ops checkout_worktree_ops;
extern const struct checkout_ops checkout_clone_ops;

/* the worktree kind's make and remove (checkout.c), which an overlay
 * checkout falls back to */
int checkout_wt_make(struct checkout *co, const char *base, bool made_by_command, char **ret_start,
		     struct diag *reterr);
int checkout_wt_remove(const struct checkout *co, struct diag *reterr);

/* the clone kind's (checkout.c), which an overlay clone falls back to */
int checkout_clone_make(struct checkout *co, const char *base, bool made_by_command,
			char **ret_start, struct diag *reterr);
int checkout_clone_remove(const struct checkout *co, struct diag *reterr);

/* the layer of an overlay or reflink checkout (checkout-overlay.c, top) */
struct layer {
	char *dir, *upper, *work, *base, *indexed, *synced, *userxattr, *clone;
	/* a reflink checkout's (checkout-reflink.c): the layer is one; the
	 * tree's files and index are all there */
	char *reflink, *populated;
};

void checkout_layer_init(struct layer *ly, const char *repo, const char *path);
void checkout_layer_release(struct layer *ly);
/* the administrative directory a fresh worktree's .git file at top names */
int checkout_gitfile_dir(const char *top, char **ret, struct diag *reterr);
/* the shared base checkout of commit, made once: *ret its tree */
int checkout_base_make(const struct checkout *co, const char *commit, char **ret,
		       struct diag *reterr);
/* the lower commit (recorded in the layer) and the branch's */
int checkout_layer_commit(const struct checkout *co, const struct layer *ly, char **ret_lower,
			  char **ret_head, struct diag *reterr);
/* the tree brought from lower to head (`git read-tree -m -u`), once */
int checkout_layer_sync(const struct checkout *co, const struct layer *ly, const char *lower,
			const char *head, struct diag *reterr);

/* the lower commit recorded in the layer, else chosen for head (a base
 * checkout already made, else head) and recorded */
int checkout_layer_lower(const struct checkout *co, const struct layer *ly, const char *head,
			 char **ret_lower, struct diag *reterr);

/* co made as the kind ops instead of its own, why (one line) in
 * co->fallback (checkout.c) */
int checkout_make_as(struct checkout *co, const struct checkout_ops *ops, const char *base,
		     char **ret_start, const char *why, struct diag *reterr);

/* the reflink kinds (checkout-reflink.c; their ops in checkout.c) */
extern const struct checkout_ops checkout_reflink_ops;
extern const struct checkout_ops checkout_reflink_clone_ops;
int checkout_reflink_make(struct checkout *co, const char *base, bool made_by_command,
			  char **ret_start, struct diag *reterr);
int checkout_reflink_remove(const struct checkout *co, struct diag *reterr);
int checkout_reflink_clone_make(struct checkout *co, const char *base, bool made_by_command,
				char **ret_start, struct diag *reterr);
int checkout_reflink_clone_remove(const struct checkout *co, struct diag *reterr);

/* the overlay kind's (checkout-overlay.c) */
int checkout_overlay_make(struct checkout *co, const char *base, bool made_by_command,
			  char **ret_start, struct diag *reterr);
int checkout_overlay_remove(const struct checkout *co, struct diag *reterr);
int checkout_clone_overlay_make(struct checkout *co, const char *base, bool made_by_command,
				char **ret_start, struct diag *reterr);
int checkout_clone_overlay_remove(const struct checkout *co, struct diag *reterr);

#endif
