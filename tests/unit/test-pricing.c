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

	diag_clear(&d);
	if (catalog_add_embedded(cat, &d) < 0)
		print_error("embedded: %s:%u:%u: %s\n", d.file, d.line, d.col, d.msg);
	assert_true(cat->n_pricing > 10);
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
	size_t before = cat->n_pricing;

	(void)state;
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
	assert_int_equal(cat->n_pricing, before + 1); /* one replaced, one added */
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
		cmocka_unit_test(test_embedded_lookup),
		cmocka_unit_test(test_override),
		cmocka_unit_test(test_cost),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_budget_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
