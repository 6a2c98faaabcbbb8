/* Model prices (adapter/pricing.h): the embedded pricing.yaml, lookup by
 * model, alias, case and provider prefix, the layers a repository
 * overrides, unknown models (no price, never 0), the cost of tokens per
 * dialect, and the loader's precise errors. Also the budget's YAML forms
 * (orch/budget.h). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/catalog.h"
#include "adapter/pricing.h"
#include "orch/budget.h"
#include "util/yaml.h"

static struct catalog *embedded(void)
{
	struct catalog *cat = catalog_new();
	struct diag d;
	size_t n = 0;

	diag_clear(&d);
	if (catalog_add_embedded(cat, &d) < 0)
		print_error("embedded: %s:%u:%u: %s\n", d.file, d.line, d.col, d.msg);
	assert_non_null(catalog_pricing_rows(cat, &n));
	assert_true(n > 10);
	return cat;
}

static void add_layer(struct catalog *cat, const char *text)
{
	struct diag d;

	cat->layer++;
	diag_clear(&d);
	if (catalog_add_buf(cat, CATALOG_KIND_PRICING, "repo/pricing.yaml", text, strlen(text),
			    &d) < 0)
		print_error("%s:%u:%u: %s\n", d.file, d.line, d.col, d.msg);
}

static void test_embedded_lookup(void **state)
{
	struct catalog *cat = embedded();
	const struct pricing_row *p, *q;

	(void)state;
	p = catalog_pricing(cat, "claude-sonnet-4-5");
	assert_non_null(p);
	assert_true(p->input == 3 && p->output == 15 && p->cache_read == 0.3);
	assert_string_equal(p->date, "2025-11-24");
	assert_non_null(strstr(p->source, "anthropic.com"));
	/* an alias, another case, a provider prefix: the same row */
	assert_ptr_equal(catalog_pricing(cat, "claude-sonnet-4-5-20250929"), p);
	assert_ptr_equal(catalog_pricing(cat, "Claude-Sonnet-4-5"), p);
	assert_ptr_equal(catalog_pricing(cat, "anthropic/claude-sonnet-4-5"), p);
	q = catalog_pricing(cat, "openrouter/openai/gpt-5");
	assert_non_null(q);
	assert_string_equal(q->model, "gpt-5");
	/* unknown: no price */
	assert_null(catalog_pricing(cat, "mock"));
	assert_null(catalog_pricing(cat, "claude-sonnet-4-5x"));
	assert_null(catalog_pricing(cat, "gpt-5/"));
	assert_null(catalog_pricing(cat, ""));
	assert_null(catalog_pricing(cat, NULL));
	catalog_free(cat);
}

static void test_override(void **state)
{
	struct catalog *cat = embedded();
	const struct pricing_row *p;
	size_t before = 0, after = 0;

	(void)state;
	(void)catalog_pricing_rows(cat, &before);
	add_layer(cat, "models:\n"
		       "  claude-sonnet-4-5:\n"
		       "    input: 2\n"
		       "    output: 10\n"
		       "    date: 2026-06-01\n"
		       "    source: our contract\n"
		       "  in-house:\n"
		       "    aliases: [sonnet]\n"
		       "    input: 0.5\n"
		       "    output: 1\n"
		       "    date: 2026-06-01\n"
		       "    source: ours\n");
	(void)catalog_pricing_rows(cat, &after);
	assert_int_equal(after, before + 1); /* one replaced, one added */
	p = catalog_pricing(cat, "claude-sonnet-4-5");
	assert_true(p->input == 2 && p->output == 10);
	assert_true(p->cache_read < 0); /* not given: not inherited from the replaced row */
	assert_string_equal(p->file, "repo/pricing.yaml");
	assert_int_equal(p->line, 2);
	/* the embedded alias went with the replaced row; the old dated id too */
	assert_null(catalog_pricing(cat, "claude-sonnet-4-5-20250929"));
	/* an alias of a higher layer wins over the same alias of a lower one */
	assert_string_equal(catalog_pricing(cat, "sonnet")->model, "in-house");
	assert_string_equal(catalog_pricing(cat, "mock") ? "x" : "none", "none");
	catalog_free(cat);
}

/* The override layers of a (user, repo) and the table an eager parse of the
 * embedded pricing.yaml makes under them. */
static const char layer1[] = "models:\n"
			     "  claude-sonnet-4-5:\n"
			     "    input: 2\n"
			     "    output: 10\n"
			     "    date: 2026-06-01\n"
			     "    source: our contract\n"
			     "  in-house:\n"
			     "    aliases: [sonnet]\n"
			     "    input: 0.5\n"
			     "    output: 1\n"
			     "    date: 2026-06-01\n"
			     "    source: ours\n";
static const char layer2[] = "models:\n"
			     "  in-house:\n"
			     "    input: 0.25\n"
			     "    output: 1\n"
			     "    date: 2026-07-01\n"
			     "    source: renegotiated\n"
			     "  gpt-5:\n"
			     "    input: 1\n"
			     "    output: 8\n"
			     "    date: 2026-07-01\n"
			     "    source: ours\n"
			     "  local-model:\n"
			     "    input: 0\n"
			     "    output: 0\n"
			     "    date: 2026-07-01\n"
			     "    source: ours\n";

static void assert_same_rows(const struct catalog *a, const struct catalog *b)
{
	size_t na = 0, nb = 0, i, j;
	const struct pricing_row *const *x = catalog_pricing_rows(a, &na);
	const struct pricing_row *const *y = catalog_pricing_rows(b, &nb);

	assert_int_equal(na, nb);
	for (i = 0; i < na; i++) {
		assert_string_equal(x[i]->model, y[i]->model);
		for (j = 0; x[i]->aliases[j] || y[i]->aliases[j]; j++) {
			assert_non_null(x[i]->aliases[j]);
			assert_non_null(y[i]->aliases[j]);
			assert_string_equal(x[i]->aliases[j], y[i]->aliases[j]);
		}
		assert_true(x[i]->input == y[i]->input && x[i]->output == y[i]->output);
		assert_true(x[i]->cache_read == y[i]->cache_read);
		assert_true(x[i]->cache_write == y[i]->cache_write);
		assert_string_equal(x[i]->date, y[i]->date);
		assert_string_equal(x[i]->source, y[i]->source);
		assert_string_equal(x[i]->file, y[i]->file);
		assert_int_equal(x[i]->line, y[i]->line);
		assert_int_equal(x[i]->layer, y[i]->layer);
	}
}

/* The embedded prices are parsed when a price is first asked, not when the
 * catalogue loads (adapters list prints none); whatever came before (a
 * listing, override layers), the table is then the one an eager parse
 * makes: the same rows in the same order, the override layers on top. */
static void test_lazy_embedded(void **state)
{
	struct catalog *lazy = catalog_new(), *eager = catalog_new();
	const struct pricing_row *p;
	struct diag d;

	(void)state;
	diag_clear(&d);
	if (catalog_add_embedded(lazy, &d) < 0 || catalog_add_embedded_parsed(eager, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	/* loaded, listed, nothing priced: not parsed */
	assert_true(lazy->pricing_pending);
	assert_int_equal(lazy->n_pricing, 0);
	assert_non_null(catalog_find(lazy, "claude"));
	assert_true(lazy->pricing_pending);
	assert_false(eager->pricing_pending);
	assert_true(eager->n_pricing > 10);
	/* override layers merged before the first price */
	add_layer(lazy, layer1);
	add_layer(eager, layer1);
	add_layer(lazy, layer2);
	add_layer(eager, layer2);
	assert_true(lazy->pricing_pending);
	assert_int_equal(lazy->n_pricing, 4); /* the overrides' own rows only */
	/* the first price completes the table */
	p = catalog_pricing(lazy, "claude-sonnet-4-5");
	assert_false(lazy->pricing_pending);
	assert_non_null(p);
	assert_true(p->input == 2 && p->layer == 1); /* layer1's row */
	p = catalog_pricing(lazy, "in-house");	     /* layer2's row replaced layer1's */
	assert_non_null(p);
	assert_string_equal(p->source, "renegotiated");
	p = catalog_pricing(lazy, "openai/gpt-5");
	assert_non_null(p);
	assert_true(p->input == 1 && p->layer == 2);
	p = catalog_pricing(lazy, "claude-sonnet-4-5");
	assert_null(catalog_pricing(lazy, "claude-sonnet-4-5-20250929"));
	assert_non_null(catalog_pricing(lazy, "local-model"));
	assert_same_rows(lazy, eager);
	/* and asking again changes nothing */
	assert_ptr_equal(catalog_pricing(lazy, "claude-sonnet-4-5"), p);
	assert_same_rows(lazy, eager);
	catalog_free(lazy);
	catalog_free(eager);

	/* a price asked first, then nothing else: the embedded table alone */
	lazy = catalog_new();
	eager = catalog_new();
	if (catalog_add_embedded(lazy, &d) < 0 || catalog_add_embedded_parsed(eager, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	assert_string_equal(catalog_pricing(lazy, "Claude-Sonnet-4-5")->model, "claude-sonnet-4-5");
	assert_same_rows(lazy, eager);
	catalog_free(lazy);
	catalog_free(eager);
}

static void test_cost(void **state)
{
	struct pricing_row p = {
		.model = "m", .input = 3, .output = 15, .cache_read = 0.3, .cache_write = 3.75};
	struct pricing_usage u;
	double c = -1;

	(void)state;
	/* claude: cached tokens beside the input */
	pricing_usage_from(DIALECT_CLAUDE, 1000000, 100000, 2000000, &u);
	assert_int_equal(u.input, 1000000);
	assert_int_equal(pricing_cost(&p, &u, &c), 0);
	assert_true(fabs(c - (3 + 1.5 + 0.6)) < 1e-9);
	/* codex: cached tokens inside the input */
	pricing_usage_from(DIALECT_CODEX, 1000000, 0, 400000, &u);
	assert_int_equal(u.input, 600000);
	assert_int_equal(pricing_cost(&p, &u, &c), 0);
	assert_true(fabs(c - (1.8 + 0.12)) < 1e-9);
	/* no cache price: the input price */
	p.cache_read = -1;
	assert_int_equal(pricing_cost(&p, &u, &c), 0);
	assert_true(fabs(c - 3.0) < 1e-9);
	/* nothing reported, or no row: unknown, never 0 */
	pricing_usage_from(DIALECT_RUNNER, -1, -1, -1, &u);
	c = 42;
	assert_int_equal(pricing_cost(&p, &u, &c), -ENODATA);
	assert_true(c == 42);
	pricing_usage_from(DIALECT_RUNNER, 10, 10, -1, &u);
	assert_int_equal(pricing_cost(NULL, &u, &c), -ENODATA);
	/* reported zero tokens cost 0 */
	pricing_usage_from(DIALECT_RUNNER, 0, 0, -1, &u);
	assert_int_equal(pricing_cost(&p, &u, &c), 0);
	assert_true(c == 0);
}

struct bad_case {
	const char *text;
	unsigned line, col;
	const char *msg;
};

static void test_errors(void **state)
{
	static const struct bad_case cases[] = {
		{"model: {}\n", 1, 1, "unknown key 'model'"},
		{"models:\n  m:\n    input: 1\n    date: 2025-01-01\n    source: s\n", 3, 5,
		 "missing required key 'output'"},
		{"models:\n  m:\n    input: -1\n    output: 1\n    date: 2025-01-01\n    source: s\n",
		 3, 12, "field 'models.m.input'"},
		{"models:\n  m:\n    input: cheap\n    output: 1\n    date: 2025-01-01\n    source: s\n",
		 3, 12, "field 'models.m.input'"},
		{"models:\n  m:\n    input: 1\n    output: 1\n    date: 2025-13-01\n    source: s\n",
		 5, 11, "YYYY-MM-DD"},
		{"models:\n  m:\n    input: 1\n    output: 1\n    date: 2025-01-01\n    source: \" \"\n",
		 6, 13, "'source' must not be empty"},
		{"models:\n  m:\n    input: 1\n    output: 1\n    date: 2025-01-01\n    source: s\n"
		 "    colour: red\n",
		 7, 5, "unknown key 'colour'"},
		{"models:\n  \"a b\":\n    input: 1\n    output: 1\n    date: 2025-01-01\n    source: s\n",
		 2, 3, "invalid model name"},
		{"models:\n  m:\n    aliases: [x, x]\n    input: 1\n    output: 1\n    date: 2025-01-01\n"
		 "    source: s\n",
		 3, 18, "alias 'x' already names 'm'"},
		{"models:\n  m:\n    aliases: [n]\n    input: 1\n    output: 1\n    date: 2025-01-01\n"
		 "    source: s\n  n:\n    input: 1\n    output: 1\n    date: 2025-01-01\n"
		 "    source: s\n",
		 8, 3, "model 'n' is already an alias of 'm'"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct catalog *cat = catalog_new();
		struct diag d;
		int r;

		diag_clear(&d);
		r = catalog_add_buf(cat, CATALOG_KIND_PRICING, "p.yaml", cases[i].text,
				    strlen(cases[i].text), &d);
		if (r != -EINVAL || d.line != cases[i].line || d.col != cases[i].col ||
		    !strstr(d.msg, cases[i].msg))
			print_error("case %zu: %d %s:%u:%u: %s\n", i, r, d.file, d.line, d.col,
				    d.msg);
		assert_int_equal(r, -EINVAL);
		assert_string_equal(d.file, "p.yaml");
		assert_int_equal(d.line, cases[i].line);
		assert_int_equal(d.col, cases[i].col);
		assert_non_null(strstr(d.msg, cases[i].msg));
		assert_int_equal(cat->n_pricing, 0); /* nothing merged */
		catalog_free(cat);
	}
}

static int budget_of(const char *text, struct orch_budget *b, struct diag *d)
{
	struct ydoc *doc = NULL;
	int r;

	diag_clear(d);
	assert_int_equal(yaml_load_buf("b.yaml", text, strlen(text), NULL, &doc, d), 0);
	r = orch_budget_parse(doc, ynode_get(doc->root, "budget"), "budget", b, d);
	ydoc_free(doc);
	return r;
}

static void test_budget_forms(void **state)
{
	struct orch_budget b, base = ORCH_BUDGET_INIT;
	struct diag d;
	json_t *o;

	(void)state;
	assert_int_equal(budget_of("budget: 5\n", &b, &d), 0);
	assert_true(b.max_cost_usd == 5 && b.has_cost && !b.has_tokens && b.warn_at == 0.8);
	assert_int_equal(budget_of("budget: \"$10.5\"\n", &b, &d), 0);
	assert_true(b.max_cost_usd == 10.5);
	assert_int_equal(
		budget_of("budget: {max_tokens: 1000, warn_at: 0.5, on_exceed: stop}\n", &b, &d),
		0);
	assert_true(b.max_tokens == 1000 && b.warn_at == 0.5 && b.on_exceed == BUDGET_STOP);
	assert_true(!b.has_cost && orch_budget_active(&b));
	/* a plan's fields over bernstein.yaml's */
	base.max_cost_usd = 3;
	base.has_cost = true;
	orch_budget_merge(&base, &b);
	assert_true(base.max_cost_usd == 3 && base.max_tokens == 1000 &&
		    base.on_exceed == BUDGET_STOP);
	o = orch_budget_json(&base);
	assert_int_equal(orch_budget_from_json(o, &b), 0);
	assert_true(b.max_cost_usd == 3 && b.max_tokens == 1000 && b.warn_at == 0.5);
	json_decref(o);
	/* precise errors */
	assert_int_equal(budget_of("budget: {warn_at: 1.5}\n", &b, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "field 'budget.warn_at'"));
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 19);
	assert_int_equal(budget_of("budget: {on_exceed: pause}\n", &b, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "budget.on_exceed"));
	assert_int_equal(budget_of("budget: {max_cost: 1}\n", &b, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "unknown key"));
	assert_int_equal(budget_of("budget: \"$ten\"\n", &b, &d), -EINVAL);
	assert_int_equal(budget_of("budget: 0\n", &b, &d), -EINVAL);
	assert_int_equal(budget_of("budget: [1]\n", &b, &d), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_embedded_lookup), cmocka_unit_test(test_override),
		cmocka_unit_test(test_lazy_embedded),	cmocka_unit_test(test_cost),
		cmocka_unit_test(test_errors),		cmocka_unit_test(test_budget_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
