/* The wait before a retry (backoff.h). */
#include "util/backoff.h"

uint64_t backoff_delay_ms(const struct backoff_policy *p, unsigned attempt, int64_t hint_ms,
			  uint32_t rnd)
{
	uint64_t d = p->base_ms;
	unsigned i;

	if (hint_ms >= 0)
		return (uint64_t)hint_ms < p->hint_cap_ms ? (uint64_t)hint_ms : p->hint_cap_ms;
	for (i = 1; i < attempt && d < p->cap_ms; i++)
		d *= 2;
	if (d > p->cap_ms)
		d = p->cap_ms;
	if (d > UINT32_MAX)
		d = UINT32_MAX; /* keeps the product below in 64 bits */
	return d / 2 + (((d - d / 2) * (uint64_t)rnd) >> 32);
}
