/* Task capability requirements: the capability: namespace of a task's
 * requires list (docs/routing.md, "Requirement tokens").
 *
 *   requires:
 *     - python                        # skill addressing: not ours, ignored
 *     - capability:mcp_client         # a boolean axis takes no value
 *     - capability:sandbox=container  # at least this tier
 *     - capability:max_parallel_workers=4
 *     - capability:output_mode=artifact
 *
 * A token in the namespace that does not parse (an unknown axis, a boolean
 * with a value, a valued axis without one, an unknown tier or mode, a
 * non-integer, a second value conflicting with the first) is a validation
 * error, never ignored: an unenforceable requirement must fail loud.
 *
 * requirements_unmet() is the one place that says which profile (and
 * resolved strategy) satisfies which axis; a stronger capability satisfies a
 * weaker requirement (container serves process, 8 workers serve 4). */
#ifndef BERNSTEIN_ROUTE_REQUIREMENTS_H
#define BERNSTEIN_ROUTE_REQUIREMENTS_H

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/axes.h"
#include "adapter/profile.h"
#include "util/diag.h"
#include "util/sbuf.h"

#define REQUIREMENTS_PREFIX "capability:"

/* The requirement axes, in the byte order of their names: iterating the enum
 * lists axes sorted, which is the order of every "unmet" list. */
enum req_axis {
	REQ_AGENTS_MD,		  /* "agents_md": caps.agents_md */
	REQ_COMPUTER_USE,	  /* "computer_use": caps.computer_use */
	REQ_ENDPOINT,		  /* "endpoint": caps.supports_endpoint */
	REQ_LOCAL_MODELS,	  /* "local_models": caps.local_models */
	REQ_MAX_PARALLEL_WORKERS, /* "max_parallel_workers=N": caps.max_parallel_workers >= N */
	REQ_MCP_CLIENT,		  /* "mcp_client": caps.mcp_client */
	REQ_MCP_SERVER,		  /* "mcp_server": caps.mcp_server */
	REQ_NATIVE_SUBAGENTS,	  /* "native_subagents": caps.native_subagents */
	REQ_OUTPUT_MODE,	  /* "output_mode=M": the resolved output_mode == M */
	REQ_RESUME,		  /* "resume": the resolved resume strategy is not unsupported */
	REQ_SAMPLING,		  /* "sampling": caps.supports_sampling_params (coarse) */
	REQ_SANDBOX,		  /* "sandbox=T": caps.sandbox >= T */
	REQ_STREAMING,		  /* "streaming": caps.streaming */
	REQ_TOOL_USE,		  /* "tool_use": caps.tool_use */
	REQ_UNATTENDED,		  /* "unattended": the resolved dangerous_mode is not unsupported */
	REQ_VISION,		  /* "vision": caps.vision */
	_REQ_AXIS_MAX,
	_REQ_AXIS_INVALID = -EINVAL,
};

/* Axes that need the resolved strategy, not only the profile. */
#define REQ_STRATEGY_AXES ((1u << REQ_OUTPUT_MODE) | (1u << REQ_RESUME) | (1u << REQ_UNATTENDED))

/* What a task needs. set has bit (1u << axis) for every axis a token named;
 * the values are meaningful only for their set axis. */
struct requirements {
	uint32_t set;
	enum sandbox_tier sandbox;    /* at least this tier */
	int64_t max_parallel_workers; /* at least this many, 1..PROFILE_MAX_WORKERS */
	enum output_mode output_mode; /* exactly this mode */
};
#define REQUIREMENTS_INIT                                                                          \
	{                                                                                          \
		.set = 0, .sandbox = SANDBOX_TIER_NONE, .max_parallel_workers = 1,                 \
		.output_mode = OUTPUT_MODE_GIT_DIFF                                                \
	}

/* Add one requires token to req. Leading and trailing ASCII whitespace of
 * the token, and around the axis and the value, is ignored. Returns 1 when
 * the token was a capability requirement (added), 0 when it is outside the
 * capability: namespace (skill addressing: req unchanged), or -EINVAL with
 * the diag naming the token and what is accepted (req unchanged). The diag
 * has no file: a caller reading a task file sets it. */
int requirements_add(struct requirements *req, const char *token, struct diag *reterr);

/* Parse n tokens (tokens may be NULL when n is 0) into *ret (written only on
 * success). Returns the number of capability tokens, or -EINVAL as
 * requirements_add() for the first bad token. */
int requirements_parse(const char *const *tokens, size_t n, struct requirements *ret,
		       struct diag *reterr);

/* The normalized requirements (a new reference): every axis present, booleans
 * true when required, "sandbox" a tier name ("none" when not required),
 * "max_parallel_workers" an integer (1 when not required), "output_mode" a
 * mode or null. Two requirement sets that accept the same profiles normalize
 * to the same object (sandbox=none and max_parallel_workers=1 are no
 * requirement at all). The object of receipts and audit records. */
json_t *requirements_json(const struct requirements *req);

/* The required axes as tokens without the prefix, ", " separated, in axis
 * order ("max_parallel_workers=4, sandbox=container, vision"); "none" when
 * nothing is required. Appends to out. */
int requirements_describe(const struct requirements *req, struct sbuf *out);

/* Bit (1u << axis) for every required axis that profile p, run with the
 * resolved strategy s, does not satisfy. s may be NULL when no axis of
 * REQ_STRATEGY_AXES is required. p NULL (an adapter without a profile,
 * which declares nothing) fails every required axis, trivial ones included. */
uint32_t requirements_unmet(const struct requirements *req, const struct profile *p,
			    const struct adapter_strategy *s);

/* What profile p (with its resolved strategy s, or NULL: the strategy axes
 * left out) offers, as the tokens a task could require of it, without the
 * prefix, ", " separated, in axis order: each boolean axis it meets, then
 * "max_parallel_workers=N", "output_mode=M" and "sandbox=T" (its own
 * declared tier). Appends to out. */
int requirements_offered_describe(const struct profile *p, const struct adapter_strategy *s,
				  struct sbuf *out);

/* The axes of mask as a sorted JSON array of names (a new reference). */
json_t *requirements_axes_json(uint32_t mask);
/* The same as "a, b" appended to out ("" for an empty mask). */
int requirements_axes_describe(uint32_t mask, struct sbuf *out);

/* "vision" ... for an axis, NULL when out of range. */
const char *requirements_axis_name(enum req_axis a);
/* The axis of a name, or -EINVAL. */
enum req_axis requirements_axis_from_name(const char *name);

#endif
