/* The order of an agent's argv, in one place (seed 001's InvocationSpec,
 * extended by the runtime surface of docs/profiles.md).
 *
 * Every builder of an agent's argv (invocation_build() for runs and spawn,
 * profile_build_argv() for onboarding and the contract checks,
 * transcript_build_argv() for recorded transcripts) makes its pieces and
 * lets argv_order_assemble() lay them out:
 *
 *   argv0, subcommands, [resume: after-subcommands], model, extra args,
 *   endpoint args, hooks args, dangerous args, session id args, module args,
 *   [resume: before-prompt], prompt tokens, [resume: end]
 *
 * and argv_order_prompt() spells the prompt tokens for a prompt on argv. */
#ifndef BERNSTEIN_ADAPTER_ARGV_ORDER_H
#define BERNSTEIN_ADAPTER_ARGV_ORDER_H

#include "adapter/profile.h"
#include "util/strvec.h"

/* The pieces; each list is NULL-terminated (strvec .v, profile_strv .v),
 * NULL = absent. */
struct argv_parts {
	const char *argv0;
	const char *const *subcommands;
	const char *const *resume;
	enum resume_position resume_position;
	const char *const *model; /* [model flag, model id] */
	const char *const *extra; /* invocation.extra_args, expanded */
	const char *const *endpoint;
	const char *const *hooks;
	const char *const *dangerous;
	const char *const *session;
	const char *const *module;
	const char *const *prompt; /* the prompt tokens (argv_order_prompt(), or a file form) */
};

/* Append the parts to argv in the order above. */
void argv_order_assemble(const struct argv_parts *parts, struct strvec *argv);

/* Append the tokens of a prompt passed on argv: FLAG=PROMPT for
 * PROMPT_GUARD_GLUED, otherwise [flag] ["--" for PROMPT_GUARD_SEPARATOR]
 * prompt. flag NULL = positional. The caller has checked that guard
 * makes the prompt safe (it is not PROMPT_GUARD_LONG_PROMPT). */
void argv_order_prompt(const char *flag, enum prompt_guard guard, const char *prompt,
		       struct strvec *out);

#endif
