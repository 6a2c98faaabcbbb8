/* Fuzz target for pricing.yaml (src/adapter/pricing.h), a catalogue file a
 * repository may carry: the loader on arbitrary bytes, then, for what
 * loads, the invariants of a valid table: every price in range, a date and
 * a source, every model and alias found by a lookup (to a row of its own
 * file's layer), a cost that is finite and never negative. A failure says
 * where and leaves the catalogue as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/catalog.h"
#include "adapter/pricing.h"
#include "fuzz/fuzz.h"

static void check_row(const struct catalog *cat, const struct pricing_row *p)
{
	struct pricing_usage u = {
		.input = 1000, .output = 2000, .cache_read = 3000, .cache_write = 4000};
	const struct pricing_row *q;
	double c = -1;
	size_t j;

	if (!(p->input >= 0 && p->input <= PRICING_PRICE_MAX) ||
	    !(p->output >= 0 && p->output <= PRICING_PRICE_MAX) ||
	    p->cache_read > PRICING_PRICE_MAX || p->cache_write > PRICING_PRICE_MAX)
		abort();
	if (!p->date || strlen(p->date) != 10 || !p->source || !p->source[0] || !p->aliases)
		abort();
	q = catalog_pricing(cat, p->model);
	if (!q || q->layer != p->layer)
		abort(); /* its own name finds a row of its layer */
	for (j = 0; p->aliases[j]; j++)
		if (!catalog_pricing(cat, p->aliases[j]))
			abort();
	if (pricing_cost(p, &u, &c) < 0 || !isfinite(c) || c < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct catalog *cat = catalog_new();
	struct diag d;
	size_t i;

	diag_clear(&d);
	if (catalog_add_buf(cat, CATALOG_KIND_PRICING, "fuzz.yaml", (const char *)data, size, &d) <
	    0) {
		if (cat->n_pricing || !d.msg[0] || strcmp(d.file, "fuzz.yaml") != 0)
			abort(); /* a failure says why, and merges nothing */
		catalog_free(cat);
		return 0;
	}
	for (i = 0; i < cat->n_pricing; i++)
		check_row(cat, cat->pricing[i]);
	catalog_free(cat);
	return 0;
}
