/* The strategy resolver: which five-axis strategy an adapter runs with.
 *
 * Order: an inline override declared next to the adapter (a profile's own
 * strategy: block or a hand-written module's declaration, passed in by the
 * caller; else the registry entry's strategy: block), then the strategy
 * matrix row keyed by registry name, then strategy_default. Resolution is a
 * pure lookup in loaded data: it never runs or looks up a binary, and it
 * takes no PATH. */
#ifndef BERNSTEIN_ADAPTER_STRATEGY_H
#define BERNSTEIN_ADAPTER_STRATEGY_H

#include <errno.h>

#include "adapter/axes.h"
#include "adapter/catalog.h"

/* The conservative default of the seed: resume unsupported, dangerous mode
 * unsupported, text-signals, git-diff, stateless. An undeclared adapter
 * never resumes natively or skips permissions by accident. */
extern const struct adapter_strategy strategy_default;

/* The legacy two-state resume view: "native" for every resume strategy but
 * unsupported, "fallback-fresh" for unsupported. */
#define STRATEGY_RESUME_NATIVE	       "native"
#define STRATEGY_RESUME_FALLBACK_FRESH "fallback-fresh"
const char *strategy_resume_capability(const struct adapter_strategy *s);

enum strategy_source {
	STRATEGY_SOURCE_DEFAULT, /* "default" */
	STRATEGY_SOURCE_MATRIX,	 /* "matrix" */
	STRATEGY_SOURCE_INLINE,	 /* "inline" */
	_STRATEGY_SOURCE_MAX,
	_STRATEGY_SOURCE_INVALID = -EINVAL,
};
const char *strategy_source_name(enum strategy_source s);

struct strategy_resolved {
	struct adapter_strategy strategy;
	enum strategy_source source;	  /* where the row came from */
	const struct strategy_decl *decl; /* that row; NULL for the default */
	/* Per axis: an optional axis the row leaves out takes the default. */
	enum strategy_source axis_source[_AXIS_MAX];
};

/* Resolve name's strategy. cat may be NULL (only override or the default
 * apply); override may be NULL. An unknown name resolves to the default.
 * Returns ret->source. */
enum strategy_source strategy_resolve(const struct catalog *cat, const char *name,
				      const struct strategy_decl *override,
				      struct strategy_resolved *ret);
/* Just the strategy. */
struct adapter_strategy strategy_for(const struct catalog *cat, const char *name);

#endif
