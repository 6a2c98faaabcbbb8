/* Model prices: catalog/pricing.yaml (docs/configuration.md, "Pricing"), what
 * a token costs per model, and the cost of an attempt computed from the
 * tokens it used when its agent does not report a cost itself.
 *
 *   models:
 *     MODEL:                          the model id as agents name it
 *       aliases: [other-id, ...]      other spellings of the same model
 *       input: 3.0                    USD per million input tokens (uncached)
 *       output: 15.0                  USD per million output tokens
 *       cache_read: 0.3               optional: per million cached input tokens read
 *                                     (missing: charged at the input price)
 *       cache_write: 3.75             optional: per million tokens written to the cache
 *                                     (missing: charged at the input price)
 *       date: 2025-09-29              when the prices were taken (YYYY-MM-DD)
 *       source: https://...           where they were taken from
 *
 * The file is a catalogue file (adapter/catalog.h): the embedded one, then
 * $XDG_CONFIG_HOME/bernstein/catalog/pricing.yaml, then
 * <repo>/.bernstein/catalog/pricing.yaml; a row of a higher layer replaces
 * the row of the same model, and its names win a lookup. Loading is strict
 * (unknown keys, wrong types, negative prices, a bad date, a name or alias
 * given twice in one file are errors at FILE:LINE:COL).
 *
 * Lookup: the model id, else an alias, compared without regard to case;
 * then the same for the part after the last '/' ("anthropic/claude-x",
 * "openrouter/openai/gpt-5"). An unknown model has no price: its cost is
 * unknown, never 0. */
#ifndef BERNSTEIN_ADAPTER_PRICING_H
#define BERNSTEIN_ADAPTER_PRICING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/dialect.h"
#include "util/arena.h"
#include "util/diag.h"

struct ydoc;

#define PRICING_FILE	  "pricing.yaml"
#define PRICING_NAME_MAX  128	/* bytes of a model id or alias */
#define PRICING_ALIAS_MAX 32	/* aliases per model */
#define PRICING_PRICE_MAX 1.0e6 /* USD per million tokens: anything above is a typo */

struct pricing_row {
	const char *model;	    /* first member: the catalogue's tables key rows by it */
	const char *const *aliases; /* NULL-terminated, never NULL */
	double input, output;	    /* USD per million tokens, >= 0 */
	double cache_read;	    /* < 0: not given (the input price applies) */
	double cache_write;	    /* < 0: not given (the input price applies) */
	const char *date;	    /* YYYY-MM-DD */
	const char *source;
	const char *file; /* where the row was declared */
	unsigned line, col;
	unsigned layer; /* 0 embedded, then one per catalogue directory */
};

/* Parse the document of a pricing.yaml into rows allocated in arena (file:
 * the name kept in each row; layer: the row's). *ret is a malloc'ed array
 * of row pointers the caller frees (the rows live in the arena). -EINVAL
 * with FILE:LINE:COL in reterr. */
int pricing_parse(const struct ydoc *doc, struct arena *arena, const char *file, unsigned layer,
		  struct pricing_row ***ret, size_t *ret_n, struct diag *reterr);
/* The same for the embedded table's compiled tree, whose fields the build
 * and the tests check against the schema (test-catalog-compiled.c
 * compares it with the parsed file): not checked again; the values still
 * are. */
int pricing_parse_embedded(const struct ydoc *doc, struct arena *arena, const char *file,
			   unsigned layer, struct pricing_row ***ret, size_t *ret_n,
			   struct diag *reterr);

/* The row that prices model among rows[0..n) (see the lookup above), or
 * NULL: unknown model, or model NULL or empty. */
const struct pricing_row *pricing_find(const struct pricing_row *const *rows, size_t n,
				       const char *model);

/* Tokens of one attempt, by price class; < 0: not reported (counts as 0
 * when another class was reported). */
struct pricing_usage {
	int64_t input;	     /* uncached input tokens */
	int64_t cache_read;  /* cached input tokens read */
	int64_t cache_write; /* input tokens written to the cache */
	int64_t output;
};

/* The usage a dialect reports (its input/output/cached totals, < 0 not
 * reported) by price class: codex and gemini count cached tokens inside
 * their input tokens, claude, opencode and pi beside them. */
void pricing_usage_from(enum dialect d, int64_t input, int64_t output, int64_t cached,
			struct pricing_usage *ret);

/* The cost in USD of usage at row's prices: 0 and *ret, or -ENODATA when
 * row is NULL (unknown model) or no token class was reported. */
int pricing_cost(const struct pricing_row *row, const struct pricing_usage *u, double *ret);

#endif
