/* Retries, escalation and fallback: the policy parsed, resolved and applied
 * (see retry.h). */
#include "orch/retry.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "adapter/profile.h"
#include "orch/config-internal.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* The names on: takes, with the outcome each means. */
static const struct {
	const char *name;
	enum outcome out;
} on_names[] = {
	{"failed", OUTCOME_FAILED},
	{"rate_limited", OUTCOME_RATE_LIMITED},
	{"timed_out", OUTCOME_TIMED_OUT},
	{"killed", OUTCOME_KILLED},
	{"crashed", OUTCOME_KILLED},
	{"oom", OUTCOME_OOM},
	{"stalled", OUTCOME_STALLED},
	{"binary_missing", OUTCOME_BINARY_MISSING},
	{"permission_blocked", OUTCOME_PERMISSION_BLOCKED},
	{"lost", OUTCOME_LOST},
};

const char *retry_on_name_list(void)
{
	return "failed, rate_limited, timed_out, killed, crashed, oom, stalled, binary_missing, permission_blocked, lost";
}

/* A model as invocation_build() takes it: no option, no blank, no quote,
 * no brace, no control byte. */
static bool model_valid(const char *s)
{
	if (!*s || *s == '-')
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= 0x20 || c >= 0x7f || strchr("\"'\\{}`$<>", c))
			return false;
	}
	return true;
}

static int get_on(const struct ydoc *doc, const struct ynode *n, const char *path, unsigned *ret,
		  struct diag *reterr)
{
	char p[YAML_PATH_MAX], q[80];
	unsigned on = 0;
	size_t i, j;

	if (!n || n->kind != YNODE_SEQ || n->n == 0)
		return yaml_field_err(doc, n, reterr, path,
				      "expected a non-empty list of outcomes, got %s",
				      yaml_describe(n));
	for (i = 0; i < n->n; i++) {
		const struct ynode *e = n->items[i];

		yaml_path_index(p, sizeof(p), path, i);
		if (!yaml_is_str(e))
			return yaml_field_err(doc, e, reterr, p, "expected an outcome, got %s",
					      yaml_describe(e));
		for (j = 0; j < ARRAY_SIZE(on_names); j++)
			if (strcmp(on_names[j].name, e->str) == 0)
				break;
		if (j == ARRAY_SIZE(on_names))
			return yaml_field_err(doc, e, reterr, p, "unknown outcome '%s' (known: %s)",
					      yaml_quote(q, sizeof(q), e->str),
					      retry_on_name_list());
		on |= RETRY_ON_BIT(on_names[j].out);
	}
	*ret = on;
	return 0;
}

static int get_models(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		      const char *path, struct retry_policy *ret, struct diag *reterr)
{
	char p[YAML_PATH_MAX], q[80];
	const char **v = NULL;
	size_t i, nv = 0;
	int r;

	r = yaml_value_strlist(a, doc, n, path, &v, &nv, reterr);
	if (r < 0)
		return r;
	if (nv == 0 || nv > RETRY_MAX_MODELS)
		return yaml_field_err(doc, n, reterr, path, "expected 1 to %d models, got %zu",
				      RETRY_MAX_MODELS, nv);
	for (i = 0; i < nv; i++)
		if (!model_valid(v[i]))
			return yaml_field_err(
				doc, n->items[i], reterr, yaml_path_index(p, sizeof(p), path, i),
				"model '%s': empty, starts with '-', or holds a blank, a quote, a brace or a control character",
				yaml_quote(q, sizeof(q), v[i]));
	ret->models = v;
	ret->n_models = nv;
	return 0;
}

int retry_get_yaml(struct arena *a, const struct ydoc *doc, const struct ynode *n, const char *path,
		   struct retry_policy *ret, struct diag *reterr)
{
	static const char *const keys[] = {"max_attempts", "on", "backoff", "models", NULL};
	char pk[YAML_PATH_MAX];
	size_t i;
	int r;

	r = orch_check_keys(doc, n, keys, path, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < n->n; i++) {
		const char *k = n->keys[i]->str;
		const struct ynode *v = n->items[i];

		yaml_path_key(pk, sizeof(pk), path, k);
		if (strcmp(k, "max_attempts") == 0) {
			r = yaml_value_int(doc, v, pk, 1, RETRY_MAX_ATTEMPTS, &ret->max_attempts,
					   reterr);
		} else if (strcmp(k, "on") == 0) {
			r = get_on(doc, v, pk, &ret->on, reterr);
		} else if (strcmp(k, "backoff") == 0) {
			r = yaml_value_number(doc, v, pk, 0, false, RETRY_MAX_BACKOFF_S,
					      &ret->backoff_s, reterr);
			ret->has_backoff = r >= 0;
		} else {
			r = get_models(a, doc, v, pk, ret, reterr);
		}
		if (r < 0)
			return r;
	}
	ret->line = n->line;
	ret->col = n->col;
	return 0;
}

int retry_get_fallback(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, struct retry_policy *ret, struct diag *reterr)
{
	char p[YAML_PATH_MAX], q[80];
	const char **v;
	unsigned *lines, *cols;
	size_t i, j;
	int r;

	if (!n || n->kind != YNODE_SEQ || n->n == 0 || n->n > RETRY_MAX_FALLBACK)
		return yaml_field_err(doc, n, reterr, path,
				      "expected a list of 1 to %d adapter names, got %s",
				      RETRY_MAX_FALLBACK, yaml_describe(n));
	v = arena_alloc(a, (n->n + 1) * sizeof(*v));
	lines = arena_alloc(a, n->n * sizeof(*lines));
	cols = arena_alloc(a, n->n * sizeof(*cols));
	for (i = 0; i < n->n; i++) {
		yaml_path_index(p, sizeof(p), path, i);
		v[i] = NULL;
		r = orch_get_adapter(doc, n->items[i], p, &v[i], reterr);
		if (r < 0)
			return r;
		if (!v[i])
			return yaml_field_err(
				doc, n->items[i], reterr, p,
				"expected an adapter name (auto and null do not name one)");
		for (j = 0; j < i; j++)
			if (strcmp(v[j], v[i]) == 0)
				return yaml_field_err(doc, n->items[i], reterr, p,
						      "adapter '%s' is listed twice",
						      yaml_quote(q, sizeof(q), v[i]));
		lines[i] = n->items[i]->line;
		cols[i] = n->items[i]->col;
	}
	v[n->n] = NULL;
	ret->fallback = v;
	ret->n_fallback = n->n;
	ret->fallback_lines = lines;
	ret->fallback_cols = cols;
	ret->fallback_line = n->line;
	ret->fallback_col = n->col;
	return 0;
}

bool retry_policy_any(const struct retry_policy *p)
{
	return p && (p->max_attempts || p->on || p->has_backoff || p->models || p->fallback);
}

void retry_resolve(const struct retry_policy *task, const struct retry_policy *role,
		   const struct retry_policy *cfg, int64_t legacy_attempts, double legacy_backoff_s,
		   struct retry_resolved *ret)
{
	const struct retry_policy *lv[3] = {task, role, cfg};
	bool any = false;
	size_t i;

	memset(ret, 0, sizeof(*ret));
	ret->max_attempts = legacy_attempts > 0 ? legacy_attempts : 1;
	ret->backoff_s = legacy_backoff_s;
	/* from the least specific level up: each part given wins */
	for (i = 3; i-- > 0;) {
		const struct retry_policy *p = lv[i];

		if (!p)
			continue;
		any = any || retry_policy_any(p);
		if (p->max_attempts)
			ret->max_attempts = p->max_attempts;
		if (p->on)
			ret->on = p->on;
		if (p->has_backoff)
			ret->backoff_s = p->backoff_s;
		if (p->models) {
			ret->models = p->models;
			ret->n_models = p->n_models;
		}
		if (p->fallback) {
			ret->fallback = p->fallback;
			ret->n_fallback = p->n_fallback;
		}
	}
	if (!ret->on)
		ret->on = any ? RETRY_ON_DEFAULT : RETRY_ON_LEGACY;
}

enum retry_verdict retry_decide(const struct retry_resolved *p, enum outcome out, int64_t n,
				size_t at)
{
	if ((int)out < 0 || out >= _OUTCOME_MAX || !(p->on & RETRY_ON_BIT(out)))
		return RETRY_NO;
	/* a missing binary is not there the second time either */
	if (out != OUTCOME_BINARY_MISSING && n < p->max_attempts)
		return RETRY_AGAIN;
	return at < p->n_fallback ? RETRY_FALLBACK : RETRY_NO;
}

const char *retry_model(const struct retry_resolved *p, int64_t n)
{
	if (!p->n_models)
		return NULL;
	if (n < 1)
		n = 1;
	return p->models[(size_t)n > p->n_models ? p->n_models - 1 : (size_t)n - 1];
}

/* ---- the recorded forms ---- */

static json_t *jnum(double v)
{
	if (v == floor(v) && fabs(v) < 1e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

static json_t *jstrs(const char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		(void)json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *retry_policy_json(const struct retry_policy *p)
{
	json_t *o, *on;
	size_t i;

	if (!p || !(p->max_attempts || p->on || p->has_backoff || p->models))
		return NULL;
	o = json_object();
	if (p->max_attempts)
		(void)json_object_set_new(o, "max_attempts", json_integer(p->max_attempts));
	if (p->on) {
		on = json_array();
		for (i = 0; i < ARRAY_SIZE(on_names); i++)
			if ((p->on & RETRY_ON_BIT(on_names[i].out)) &&
			    strcmp(on_names[i].name, "crashed") != 0)
				(void)json_array_append_new(on, json_string(on_names[i].name));
		(void)json_object_set_new(o, "on", on);
	}
	if (p->has_backoff)
		(void)json_object_set_new(o, "backoff", jnum(p->backoff_s));
	if (p->models)
		(void)json_object_set_new(o, "models", jstrs(p->models, p->n_models));
	return o;
}

json_t *retry_fallback_json(const struct retry_policy *p)
{
	return p && p->fallback ? jstrs(p->fallback, p->n_fallback) : NULL;
}

static int strs_of(struct arena *a, const json_t *j, size_t max, const char *const **ret,
		   size_t *ret_n)
{
	size_t i, n = json_array_size(j);
	const char **v;

	if (!json_is_array(j) || n == 0 || n > max)
		return -EBADMSG;
	v = arena_alloc(a, (n + 1) * sizeof(*v));
	for (i = 0; i < n; i++) {
		const json_t *e = json_array_get(j, i);

		if (!json_is_string(e) || !model_valid(json_string_value(e)))
			return -EBADMSG;
		v[i] = arena_strdup(a, json_string_value(e));
	}
	v[n] = NULL;
	*ret = v;
	*ret_n = n;
	return 0;
}

static int on_of(const json_t *j, unsigned *ret)
{
	size_t i, k;
	unsigned on = 0;

	if (!json_is_array(j) || json_array_size(j) == 0)
		return -EBADMSG;
	for (i = 0; i < json_array_size(j); i++) {
		const char *s = json_string_value(json_array_get(j, i));

		for (k = 0; s && k < ARRAY_SIZE(on_names); k++)
			if (strcmp(on_names[k].name, s) == 0)
				break;
		if (!s || k == ARRAY_SIZE(on_names))
			return -EBADMSG;
		on |= RETRY_ON_BIT(on_names[k].out);
	}
	*ret = on;
	return 0;
}

int retry_policy_parse_json(struct arena *a, const json_t *j, struct retry_policy *ret, char *msg,
			    size_t size)
{
	const char *key;
	json_t *v;

	if (!json_is_object(j)) {
		(void)snprintf(msg, size, "not an object");
		return -EBADMSG;
	}
	json_object_foreach((json_t *)(uintptr_t)j, key, v)
	{
		int r = -EBADMSG;

		if (strcmp(key, "max_attempts") == 0) {
			if (json_is_integer(v) && json_integer_value(v) >= 1 &&
			    json_integer_value(v) <= RETRY_MAX_ATTEMPTS) {
				ret->max_attempts = json_integer_value(v);
				r = 0;
			}
		} else if (strcmp(key, "on") == 0) {
			r = on_of(v, &ret->on);
		} else if (strcmp(key, "backoff") == 0) {
			if (json_is_number(v) && json_number_value(v) >= 0 &&
			    json_number_value(v) <= RETRY_MAX_BACKOFF_S) {
				ret->backoff_s = json_number_value(v);
				ret->has_backoff = true;
				r = 0;
			}
		} else if (strcmp(key, "models") == 0) {
			r = strs_of(a, v, RETRY_MAX_MODELS, &ret->models, &ret->n_models);
		} else {
			(void)snprintf(msg, size, "unknown key '%s'", key);
			return -EBADMSG;
		}
		if (r < 0) {
			(void)snprintf(msg, size, "'%s': a bad value", key);
			return r;
		}
	}
	return 0;
}

int retry_fallback_parse_json(struct arena *a, const json_t *j, struct retry_policy *ret, char *msg,
			      size_t size)
{
	size_t i;

	if (strs_of(a, j, RETRY_MAX_FALLBACK, &ret->fallback, &ret->n_fallback) < 0) {
		(void)snprintf(msg, size, "not a list of 1 to %d adapter names",
			       RETRY_MAX_FALLBACK);
		return -EBADMSG;
	}
	for (i = 0; i < ret->n_fallback; i++)
		if (!profile_name_valid(ret->fallback[i])) {
			(void)snprintf(msg, size, "not a list of adapter names");
			return -EBADMSG;
		}
	return 0;
}
