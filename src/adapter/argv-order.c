/* The order of an agent's argv (argv-order.h). */
#include "adapter/argv-order.h"

void argv_order_assemble(const struct argv_parts *parts, struct strvec *argv)
{
	strvec_push(argv, parts->argv0);
	strvec_pushv(argv, parts->subcommands);
	if (parts->resume_position == RESUME_POSITION_AFTER_SUBCOMMANDS)
		strvec_pushv(argv, parts->resume);
	strvec_pushv(argv, parts->model);
	strvec_pushv(argv, parts->extra);
	strvec_pushv(argv, parts->endpoint);
	strvec_pushv(argv, parts->hooks);
	strvec_pushv(argv, parts->dangerous);
	strvec_pushv(argv, parts->session);
	strvec_pushv(argv, parts->module);
	if (parts->resume_position == RESUME_POSITION_BEFORE_PROMPT)
		strvec_pushv(argv, parts->resume);
	strvec_pushv(argv, parts->prompt);
	if (parts->resume_position == RESUME_POSITION_END)
		strvec_pushv(argv, parts->resume);
}

void argv_order_prompt(const char *flag, enum prompt_guard guard, const char *prompt,
		       struct strvec *out)
{
	if (guard == PROMPT_GUARD_GLUED && flag) {
		strvec_pushf(out, "%s=%s", flag, prompt);
		return;
	}
	if (flag)
		strvec_push(out, flag);
	if (guard == PROMPT_GUARD_SEPARATOR)
		strvec_push(out, "--");
	strvec_push(out, prompt);
}
