/* endpoints: per adapter (see endpoints.h). */
#include "orch/endpoints.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/credential.h"
#include "adapter/profile.h"
#include "orch/config-internal.h"
#include "util/url.h"
#include "util/yaml.h"
#include "util/yschema.h"
#include "util/banned.h"

#define MODEL_MAX 256

/* A model id that can go into argv and config files: printable ASCII
 * without blanks, quotes, backslashes, braces or `$<>, not starting with
 * '-' (invocation_build() refuses the rest at spawn; this says so early). */
static const char *model_problem(const char *m)
{
	size_t i, n = strlen(m);

	if (n > MODEL_MAX)
		return "longer than 256 bytes";
	if (m[0] == '-')
		return "starts with '-'";
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)m[i];

		if (c <= ' ' || c >= 0x7f || strchr("\"'\\{}`$<>", c))
			return "holds a blank, a quote, a backslash, a brace, one of ` $ < > or a control or non-ASCII byte";
	}
	return NULL;
}

struct entries {
	const char *allowed;
	struct orch_endpoint *v;
};

static int get_entry(void *ctx, const struct ydoc *doc, size_t idx, const struct ynode *k,
		     const struct ynode *v, const char *p, struct diag *reterr)
{
	static const char *const keys[] = {"base_url", "api_key_env", "model", NULL};
	struct entries *x = ctx;
	struct orch_endpoint *ret = &x->v[idx];
	struct invocation_sampling s = {0};
	char pk[YAML_PATH_MAX], q[80];
	const char *why;
	size_t i;
	int r;

	if (strcmp(k->str, "auto") == 0)
		return yaml_field_err(
			doc, k, reterr, p,
			"'auto' is not an adapter: give the endpoint of each agent auto may choose");
	if (!v || v->kind != YNODE_MAP)
		return yaml_field_err(doc, v ? v : k, reterr, p,
				      "expected a mapping {base_url, api_key_env, model}, got %s",
				      yaml_describe(v));
	r = orch_check_keys(doc, v, keys, p, reterr);
	if (r < 0)
		return r;
	if (!v->n)
		return yaml_field_err(doc, v, reterr, p,
				      "empty: give base_url, api_key_env or model");
	memset(ret, 0, sizeof(*ret));
	ret->adapter = k->str;
	ret->line = k->line;
	ret->col = k->col;
	for (i = 0; i < v->n; i++) {
		const char *key = v->keys[i]->str;
		const struct ynode *val = v->items[i];

		yaml_path_key(pk, sizeof(pk), p, key);
		if (strcmp(key, "model") == 0) {
			r = yaml_value_str(doc, val, pk, false, &ret->model, reterr);
			if (r == 0 && (why = model_problem(ret->model)))
				return yaml_field_err(doc, val, reterr, pk, "model '%s': %s",
						      yaml_quote(q, sizeof(q), ret->model), why);
		} else {
			r = orch_get_slot(doc, val, pk, sampling_key_from_string(key), x->allowed,
					  &s, reterr);
		}
		if (r < 0)
			return r;
	}
	ret->base_url = s.base_url;
	ret->api_key_env = s.api_key_env;
	return 0;
}

static const struct ynamed endpoints_map = {
	.what = "a mapping of adapters",
	.name_ok = profile_name_valid,
	.kind = "adapter",
	.expect = "[a-z][a-z0-9_]*, at most " YAML_STRINGIFY(PROFILE_MAX_NAME) " bytes",
	.entry = get_entry,
};

int orch_endpoints_get(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, const char *allowed, struct orch_endpoints *ret,
		       struct diag *reterr)
{
	struct entries x = {.allowed = allowed};
	int r;

	if (n && n->kind == YNODE_MAP)
		x.v = arena_alloc(a, (n->n ? n->n : 1) * sizeof(*x.v));
	r = yaml_named_map(doc, n, path, &endpoints_map, &x, reterr);
	if (r < 0)
		return r;
	ret->v = x.v;
	ret->n = (size_t)r;
	return 0;
}

const struct orch_endpoint *orch_endpoints_find(const struct orch_endpoints *e, const char *adapter)
{
	size_t i;

	for (i = 0; e && adapter && i < e->n; i++)
		if (strcmp(e->v[i].adapter, adapter) == 0)
			return &e->v[i];
	return NULL;
}

void orch_endpoint_slots(const struct orch_endpoint *ep, struct invocation_sampling *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!ep)
		return;
	if (ep->base_url) {
		ret->base_url = ep->base_url;
		ret->set |= 1u << SAMPLING_BASE_URL;
	}
	if (ep->api_key_env) {
		ret->api_key_env = ep->api_key_env;
		ret->set |= 1u << SAMPLING_API_KEY_ENV;
	}
}

/* ---- JSON ---- */

json_t *orch_endpoints_json(const struct orch_endpoints *e)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; e && i < e->n; i++) {
		json_t *x = json_object();

		if (e->v[i].base_url)
			(void)json_object_set_new(x, "base_url", json_string(e->v[i].base_url));
		if (e->v[i].api_key_env)
			(void)json_object_set_new(x, "api_key_env",
						  json_string(e->v[i].api_key_env));
		if (e->v[i].model)
			(void)json_object_set_new(x, "model", json_string(e->v[i].model));
		(void)json_object_set_new(o, e->v[i].adapter, x);
	}
	return o;
}

static int bad(char *msg, size_t size, const char *adapter, const char *what)
{
	(void)snprintf(msg, size, "'%s': %s", adapter, what);
	return -EBADMSG;
}

int orch_endpoints_parse_json(struct arena *a, const json_t *j, struct orch_endpoints *ret,
			      char *msg, size_t size)
{
	struct orch_endpoint *v;
	const char *name, *k;
	json_t *x, *e;
	size_t n = 0;

	if (!json_is_object(j)) {
		(void)snprintf(msg, size, "not an object");
		return -EBADMSG;
	}
	v = arena_alloc(a, (json_object_size(j) ? json_object_size(j) : 1) * sizeof(*v));
	json_object_foreach((json_t *)(uintptr_t)j, name, x)
	{
		struct orch_endpoint *ep = &v[n];
		struct diag d;

		memset(ep, 0, sizeof(*ep));
		if (!profile_name_valid(name) || strcmp(name, "auto") == 0)
			return bad(msg, size, name, "not an adapter name");
		if (!json_is_object(x) || !json_object_size(x))
			return bad(msg, size, name, "not a non-empty object");
		ep->adapter = arena_strdup(a, name);
		json_object_foreach(x, k, e)
		{
			const char *s = json_string_value(e);

			if (!s || !*s)
				return bad(msg, size, name,
					   "a value that is not a non-empty string");
			diag_clear(&d);
			if (strcmp(k, "base_url") == 0 && url_check(s, NULL, &d) == 0)
				ep->base_url = arena_strdup(a, s);
			else if (strcmp(k, "api_key_env") == 0 && credential_env_wellformed(s))
				ep->api_key_env = arena_strdup(a, s);
			else if (strcmp(k, "model") == 0 && !model_problem(s))
				ep->model = arena_strdup(a, s);
			else
				return bad(msg, size, name,
					   d.msg[0] ? d.msg : "an unknown key or a bad value");
		}
		n++;
	}
	ret->v = v;
	ret->n = n;
	return 0;
}

/* ---- YAML ---- */

int orch_endpoints_yaml(const struct orch_endpoints *e, struct sbuf *out)
{
	size_t i;
	int r = 0;

	if (!e || !e->n)
		return 0;
	r = sbuf_adds(out, "\nendpoints:");
	for (i = 0; r == 0 && i < e->n; i++) {
		const struct orch_endpoint *ep = &e->v[i];
		const char *sep = "";

		r = sbuf_addf(out, "\n  %s: {", ep->adapter);
		if (r == 0 && ep->base_url) {
			r = sbuf_adds(out, "base_url: ");
			if (r == 0)
				r = yaml_emit_str(out, ep->base_url);
			sep = ", ";
		}
		if (r == 0 && ep->api_key_env) {
			r = sbuf_addf(out, "%sapi_key_env: %s", sep, ep->api_key_env);
			sep = ", ";
		}
		if (r == 0 && ep->model) {
			r = sbuf_addf(out, "%smodel: ", sep);
			if (r == 0)
				r = yaml_emit_str(out, ep->model);
		}
		if (r == 0)
			r = sbuf_adds(out, "}");
	}
	return r;
}

static const char *dup(struct arena *a, const char *s)
{
	return s ? arena_strdup(a, s) : NULL;
}

void orch_endpoints_copy(struct arena *a, const struct orch_endpoints *e,
			 struct orch_endpoints *ret)
{
	size_t i;

	ret->v = NULL;
	ret->n = 0;
	if (!e || !e->n)
		return;
	ret->v = arena_alloc(a, e->n * sizeof(*ret->v));
	for (i = 0; i < e->n; i++) {
		ret->v[i] = e->v[i];
		ret->v[i].adapter = dup(a, e->v[i].adapter);
		ret->v[i].base_url = dup(a, e->v[i].base_url);
		ret->v[i].api_key_env = dup(a, e->v[i].api_key_env);
		ret->v[i].model = dup(a, e->v[i].model);
	}
	ret->n = e->n;
}
