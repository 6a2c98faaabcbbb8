/* A run's budget (budget.h, docs/runs.md "Budgets"). */
#include "orch/budget.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/sbuf.h"
#include "util/yaml.h"
#include "util/yschema.h"

static const char *const on_exceed_names[] = {"drain", "stop", NULL};

const char *budget_on_exceed_to_string(enum budget_on_exceed e)
{
	return (int)e >= 0 && e < _BUDGET_ON_EXCEED_MAX ? on_exceed_names[e] : NULL;
}

bool orch_budget_active(const struct orch_budget *b)
{
	return b && (b->max_cost_usd > 0 || b->max_tokens > 0);
}

static int parse_field(const struct ydoc *doc, const char *k, const struct ynode *v, const char *p,
		       struct orch_budget *b, struct diag *reterr)
{
	int r, e = 0;

	if (strcmp(k, "max_cost_usd") == 0) {
		r = yaml_value_number(doc, v, p, 0, true, BUDGET_MAX_COST_USD, &b->max_cost_usd,
				      reterr);
		b->has_cost = r >= 0;
	} else if (strcmp(k, "max_tokens") == 0) {
		r = yaml_value_int(doc, v, p, 1, BUDGET_MAX_TOKENS, &b->max_tokens, reterr);
		b->has_tokens = r >= 0;
	} else if (strcmp(k, "warn_at") == 0) {
		r = yaml_value_number(doc, v, p, 0, true, 1, &b->warn_at, reterr);
		b->has_warn_at = r >= 0;
	} else {
		r = yaml_value_enum(doc, v, p, on_exceed_names, &e, reterr);
		if (r >= 0)
			b->on_exceed = (enum budget_on_exceed)e;
		b->has_on_exceed = r >= 0;
	}
	return r;
}

/* "$N" (Bernstein's plans say budget: "$10"): max_cost_usd N. */
static int dollars(const struct ydoc *doc, const struct ynode *n, const char *path,
		   struct orch_budget *ret, struct diag *reterr)
{
	struct orch_budget b = ORCH_BUDGET_INIT;
	char *end;
	double v;

	errno = 0;
	v = strtod(n->str + 1, &end);
	if (errno || end == n->str + 1 || *end || !(v > 0) || v > BUDGET_MAX_COST_USD ||
	    !strchr("0123456789.", n->str[1]))
		return yaml_field_err(
			doc, n, reterr, path,
			"expected an amount of USD above 0 ('$10', or 10), got '%.40s'", n->str);
	b.max_cost_usd = v;
	b.has_cost = true;
	*ret = b;
	return 0;
}

int orch_budget_parse(const struct ydoc *doc, const struct ynode *n, const char *path,
		      struct orch_budget *ret, struct diag *reterr)
{
	static const char *const keys[] = {"max_cost_usd", "max_tokens", "warn_at", "on_exceed",
					   NULL};
	struct orch_budget b = ORCH_BUDGET_INIT;
	char p[YAML_PATH_MAX];
	size_t i, j;
	int r;

	if (n && yaml_looks_number(n)) {
		r = yaml_value_number(doc, n, path, 0, true, BUDGET_MAX_COST_USD, &b.max_cost_usd,
				      reterr);
		if (r < 0)
			return r;
		b.has_cost = true;
		*ret = b;
		return 0;
	}
	if (n && n->kind == YNODE_SCALAR && n->str[0] == '$') /* "$10": Bernstein's */
		return dollars(doc, n, path, ret, reterr);
	if (!n || n->kind != YNODE_MAP)
		return yaml_field_err(
			doc, n, reterr, path,
			"expected a number (max_cost_usd) or a mapping of max_cost_usd, max_tokens, warn_at, on_exceed, got %s",
			yaml_describe(n));
	for (i = 0; i < n->n; i++) {
		const char *k = n->keys[i]->str;

		for (j = 0; keys[j] && strcmp(keys[j], k) != 0; j++)
			;
		yaml_path_key(p, sizeof(p), path, k);
		if (!keys[j])
			return yaml_field_err(
				doc, n->keys[i], reterr, p,
				"unknown key (expected one of: max_cost_usd, max_tokens, warn_at, on_exceed)");
		r = parse_field(doc, k, n->items[i], p, &b, reterr);
		if (r < 0)
			return r;
	}
	*ret = b;
	return 0;
}

void orch_budget_merge(struct orch_budget *base, const struct orch_budget *over)
{
	if (over->has_cost) {
		base->max_cost_usd = over->max_cost_usd;
		base->has_cost = true;
	}
	if (over->has_tokens) {
		base->max_tokens = over->max_tokens;
		base->has_tokens = true;
	}
	if (over->has_warn_at) {
		base->warn_at = over->warn_at;
		base->has_warn_at = true;
	}
	if (over->has_on_exceed) {
		base->on_exceed = over->on_exceed;
		base->has_on_exceed = true;
	}
}

json_t *orch_budget_json(const struct orch_budget *b)
{
	json_t *o = json_object();

	if (b->max_cost_usd > 0)
		(void)json_object_set_new(o, "max_cost_usd", json_real(b->max_cost_usd));
	if (b->max_tokens > 0)
		(void)json_object_set_new(o, "max_tokens", json_integer((json_int_t)b->max_tokens));
	(void)json_object_set_new(o, "warn_at", json_real(b->warn_at));
	(void)json_object_set_new(o, "on_exceed",
				  json_string(budget_on_exceed_to_string(b->on_exceed)));
	return o;
}

int orch_budget_from_json(const json_t *o, struct orch_budget *ret)
{
	struct orch_budget b = ORCH_BUDGET_INIT;
	const json_t *v;
	const char *s;
	int i;

	if (!json_is_object(o))
		return -EBADMSG;
	v = json_object_get(o, "max_cost_usd");
	if (v) {
		if (!json_is_number(v) || !(json_number_value(v) > 0) ||
		    json_number_value(v) > BUDGET_MAX_COST_USD)
			return -EBADMSG;
		b.max_cost_usd = json_number_value(v);
		b.has_cost = true;
	}
	v = json_object_get(o, "max_tokens");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > BUDGET_MAX_TOKENS)
			return -EBADMSG;
		b.max_tokens = (int64_t)json_integer_value(v);
		b.has_tokens = true;
	}
	v = json_object_get(o, "warn_at");
	if (v) {
		if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1)
			return -EBADMSG;
		b.warn_at = json_number_value(v);
		b.has_warn_at = true;
	}
	s = json_string_value(json_object_get(o, "on_exceed"));
	if (s) {
		for (i = 0; on_exceed_names[i] && strcmp(on_exceed_names[i], s) != 0; i++)
			;
		if (!on_exceed_names[i])
			return -EBADMSG;
		b.on_exceed = (enum budget_on_exceed)i;
		b.has_on_exceed = true;
	}
	*ret = b;
	return 0;
}

json_t *orch_budget_given_json(const struct orch_budget *b)
{
	json_t *o;

	if (!b->has_cost && !b->has_tokens && !b->has_warn_at && !b->has_on_exceed)
		return NULL;
	o = json_object();
	if (b->has_cost)
		(void)json_object_set_new(o, "max_cost_usd", json_real(b->max_cost_usd));
	if (b->has_tokens)
		(void)json_object_set_new(o, "max_tokens", json_integer((json_int_t)b->max_tokens));
	if (b->has_warn_at)
		(void)json_object_set_new(o, "warn_at", json_real(b->warn_at));
	if (b->has_on_exceed)
		(void)json_object_set_new(o, "on_exceed",
					  json_string(budget_on_exceed_to_string(b->on_exceed)));
	return o;
}

int orch_budget_given_yaml(const struct orch_budget *b, struct sbuf *out)
{
	const char *sep = "";
	int r = 0;

	if (!b->has_cost && !b->has_tokens && !b->has_warn_at && !b->has_on_exceed)
		return 0;
	r = sbuf_adds(out, "\nbudget: {");
	if (r >= 0 && b->has_cost) {
		r = sbuf_addf(out, "max_cost_usd: %.17g", b->max_cost_usd);
		sep = ", ";
	}
	if (r >= 0 && b->has_tokens) {
		r = sbuf_addf(out, "%smax_tokens: %lld", sep, (long long)b->max_tokens);
		sep = ", ";
	}
	if (r >= 0 && b->has_warn_at) {
		r = sbuf_addf(out, "%swarn_at: %.17g", sep, b->warn_at);
		sep = ", ";
	}
	if (r >= 0 && b->has_on_exceed)
		r = sbuf_addf(out, "%son_exceed: %s", sep,
			      budget_on_exceed_to_string(b->on_exceed));
	if (r >= 0)
		r = sbuf_adds(out, "}");
	return r;
}
