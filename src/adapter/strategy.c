#include "adapter/strategy.h"

#include <string.h>

const struct adapter_strategy strategy_default = {
	.resume = RESUME_UNSUPPORTED,
	.dangerous_mode = DANGEROUS_MODE_UNSUPPORTED,
	.event_channel = EVENT_CHANNEL_TEXT_SIGNALS,
	.output_mode = OUTPUT_MODE_GIT_DIFF,
	.session_state = SESSION_STATE_STATELESS,
};

const char *strategy_resume_capability(const struct adapter_strategy *s)
{
	return s->resume == RESUME_UNSUPPORTED ? STRATEGY_RESUME_FALLBACK_FRESH
					       : STRATEGY_RESUME_NATIVE;
}

const char *strategy_source_name(enum strategy_source s)
{
	static const char *const names[_STRATEGY_SOURCE_MAX] = {
		[STRATEGY_SOURCE_DEFAULT] = "default",
		[STRATEGY_SOURCE_MATRIX] = "matrix",
		[STRATEGY_SOURCE_INLINE] = "inline",
	};

	if ((int)s < 0 || s >= _STRATEGY_SOURCE_MAX)
		return NULL;
	return names[s];
}

static void from_decl(const struct strategy_decl *d, enum strategy_source src,
		      struct strategy_resolved *ret)
{
	int a;

	ret->strategy = d->strategy;
	ret->source = src;
	ret->decl = d;
	for (a = 0; a < _AXIS_MAX; a++)
		ret->axis_source[a] = d->axis_declared[a] ? src : STRATEGY_SOURCE_DEFAULT;
}

enum strategy_source strategy_resolve(const struct catalog *cat, const char *name,
				      const struct strategy_decl *override,
				      struct strategy_resolved *ret)
{
	const struct registry_entry *e;
	const struct matrix_row *row;
	int a;

	if (override) {
		from_decl(override, STRATEGY_SOURCE_INLINE, ret);
		return ret->source;
	}
	e = catalog_find(cat, name);
	if (e && e->strategy) {
		from_decl(e->strategy, STRATEGY_SOURCE_INLINE, ret);
		return ret->source;
	}
	row = catalog_matrix_find(cat, name);
	if (row) {
		from_decl(&row->decl, STRATEGY_SOURCE_MATRIX, ret);
		return ret->source;
	}
	memset(ret, 0, sizeof(*ret));
	ret->strategy = strategy_default;
	ret->source = STRATEGY_SOURCE_DEFAULT;
	ret->decl = NULL;
	for (a = 0; a < _AXIS_MAX; a++)
		ret->axis_source[a] = STRATEGY_SOURCE_DEFAULT;
	return ret->source;
}

struct adapter_strategy strategy_for(const struct catalog *cat, const char *name)
{
	struct strategy_resolved r;

	(void)strategy_resolve(cat, name, NULL, &r);
	return r.strategy;
}
