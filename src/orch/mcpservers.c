/* mcp_servers: the MCP servers of a task's agent (see mcpservers.h). */
#include "orch/mcpservers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/credential.h"
#include "adapter/envpolicy.h"
#include "orch/config-internal.h"
#include "util/url.h"
#include "util/yaml.h"
#include "util/yschema.h"
#include "util/banned.h"

#define VALUE_MAX 8192

static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* A "${NAME}" value: NULL when fine (or not a reference), else the problem
 * (buf holds it). */
static const char *ref_problem(const char *v, const char *allowed, char *buf, size_t size)
{
	size_t n = strlen(v);
	char name[256];
	struct diag d;

	if (n < 2 || v[0] != '$' || v[1] != '{')
		return NULL;
	if (n < 4 || v[n - 1] != '}' || n - 3 >= sizeof(name)) {
		(void)snprintf(buf, size, "'%.80s' is not a variable reference ${NAME}", v);
		return buf;
	}
	(void)snprintf(name, sizeof(name), "%.*s", (int)(n - 3), v + 2);
	if (!envpolicy_name_valid(name)) {
		(void)snprintf(buf, size, "'%.80s' is not a variable reference ${NAME}", v);
		return buf;
	}
	diag_clear(&d);
	if (!envpolicy_base_allowed(name) && credential_env_check(name, allowed, &d) < 0) {
		int w = snprintf(
			buf, size,
			"${%s} is not on the agent's allow-list: a known provider key or a name listed in %s (%.200s)",
			name, CREDENTIAL_HOST_ALLOW_ENV, d.msg);

		(void)w;
		return buf;
	}
	return NULL;
}

static bool header_name_ok(const char *s)
{
	if (!*s || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

/* The arrays a mapping NAME -> string fills (env, headers). */
struct strmap {
	const char *allowed;
	const char **k, **v;
};

static int get_map_entry(void *ctx, const struct ydoc *doc, size_t i, const struct ynode *k,
			 const struct ynode *v, const char *p, struct diag *reterr)
{
	struct strmap *x = ctx;
	char why[1024];

	if (!yaml_is_str(v))
		return yaml_field_err(doc, v, reterr, p, "expected a string, got %s",
				      yaml_describe(v));
	if (has_ctl(v->str) || strlen(v->str) > VALUE_MAX)
		return yaml_field_err(doc, v, reterr, p,
				      "holds a control character or is longer than %d bytes",
				      VALUE_MAX);
	if (ref_problem(v->str, x->allowed, why, sizeof(why)))
		return yaml_field_err(doc, v, reterr, p, "%s", why);
	x->k[i] = k->str;
	x->v[i] = v->str;
	return 0;
}

static const struct ynamed env_map = {
	.what = "a mapping",
	.name_ok = envpolicy_name_valid,
	.kind = "variable",
	.expect = "[A-Za-z_][A-Za-z0-9_]*",
	.entry = get_map_entry,
};

static const struct ynamed header_map = {
	.what = "a mapping",
	.name_ok = header_name_ok,
	.kind = "header",
	.expect = "[A-Za-z0-9-]+",
	.entry = get_map_entry,
};

/* A mapping NAME -> string into keys/values (arrays from a). */
static int get_map(struct arena *a, const struct ydoc *doc, const struct ynode *m, const char *path,
		   bool header, const char *allowed, const char *const **ret_k,
		   const char *const **ret_v, size_t *ret_n, struct diag *reterr)
{
	struct strmap x = {.allowed = allowed};
	int r;

	if (m->kind == YNODE_MAP) {
		x.k = arena_alloc(a, (m->n + 1) * sizeof(*x.k));
		x.v = arena_alloc(a, (m->n + 1) * sizeof(*x.v));
		x.k[m->n] = x.v[m->n] = NULL;
	}
	r = yaml_named_map(doc, m, path, header ? &header_map : &env_map, &x, reterr);
	if (r < 0)
		return r;
	*ret_k = x.k;
	*ret_v = x.v;
	*ret_n = (size_t)r;
	return 0;
}

struct servers {
	struct arena *a;
	const char *allowed;
	struct mcp_server *v;
};

static int get_server(void *ctx, const struct ydoc *doc, size_t idx, const struct ynode *k,
		      const struct ynode *v, const char *p, struct diag *reterr)
{
	static const char *const keys[] = {"command", "args", "env", "url", "headers", NULL};
	struct servers *sx = ctx;
	struct arena *a = sx->a;
	const char *allowed = sx->allowed;
	struct mcp_server *ret = &sx->v[idx];
	const struct ynode *cmd, *url, *x;
	char pk[YAML_PATH_MAX];
	struct diag d;
	size_t i;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->name = k->str;
	if (ynode_is_null(v))
		return 0; /* removes the server of that name */
	if (v->kind != YNODE_MAP)
		return yaml_field_err(
			doc, v, reterr, p,
			"expected a mapping {command, args, env} or {url, headers} (or null to remove it), got %s",
			yaml_describe(v));
	r = orch_check_keys(doc, v, keys, p, reterr);
	if (r < 0)
		return r;
	cmd = ynode_get(v, "command");
	url = ynode_get(v, "url");
	if (!cmd == !url)
		return yaml_field_err(doc, v, reterr, p,
				      cmd ? "give command (stdio) or url (HTTP), not both"
					  : "give command (stdio) or url (HTTP)");
	if (cmd) {
		yaml_path_key(pk, sizeof(pk), p, "command");
		r = yaml_value_str(doc, cmd, pk, false, &ret->command, reterr);
		if (r < 0)
			return r;
		if (ret->command[0] == '-' || has_ctl(ret->command))
			return yaml_field_err(
				doc, cmd, reterr, pk,
				"must not start with '-' or hold a control character");
		if ((x = ynode_get(v, "headers")))
			return yaml_field_err(doc, x, reterr, p,
					      "headers are for a url server; a command takes env");
		if ((x = ynode_get(v, "args"))) {
			const char **args = NULL;

			yaml_path_key(pk, sizeof(pk), p, "args");
			r = yaml_value_strlist(a, doc, x, pk, &args, &ret->n_args, reterr);
			if (r < 0)
				return r;
			for (i = 0; i < ret->n_args; i++)
				if (has_ctl(args[i]))
					return yaml_field_err(doc, x->items[i], reterr, pk,
							      "holds a control character");
			ret->args = args;
		}
		if ((x = ynode_get(v, "env"))) {
			yaml_path_key(pk, sizeof(pk), p, "env");
			r = get_map(a, doc, x, pk, false, allowed, &ret->env_keys, &ret->env_values,
				    &ret->n_env, reterr);
			if (r < 0)
				return r;
		}
		return 0;
	}
	yaml_path_key(pk, sizeof(pk), p, "url");
	r = yaml_value_str(doc, url, pk, false, &ret->url, reterr);
	if (r < 0)
		return r;
	diag_clear(&d);
	if (has_ctl(ret->url) || url_check(ret->url, NULL, &d) < 0)
		return yaml_field_err(doc, url, reterr, pk, "%s",
				      d.msg[0] ? d.msg : "holds a control character");
	if ((x = ynode_get(v, "args")) || (x = ynode_get(v, "env")))
		return yaml_field_err(doc, x, reterr, p,
				      "args and env are for a command server; a url takes headers");
	if ((x = ynode_get(v, "headers"))) {
		yaml_path_key(pk, sizeof(pk), p, "headers");
		r = get_map(a, doc, x, pk, true, allowed, &ret->header_keys, &ret->header_values,
			    &ret->n_headers, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

static const struct ynamed servers_map = {
	.what = "a mapping of server names",
	.name_ok = mcpcfg_name_valid,
	.kind = "server",
	.expect = "[A-Za-z0-9_-], 1 to " YAML_STRINGIFY(MCPCFG_NAME_MAX) " bytes",
	.entry = get_server,
};

int orch_mcp_servers_get(struct arena *a, const struct ydoc *doc, const struct ynode *n,
			 const char *path, const char *allowed, struct orch_mcp_servers *ret,
			 struct diag *reterr)
{
	struct servers x = {.a = a, .allowed = allowed};
	int r;

	if (n && n->kind == YNODE_MAP)
		x.v = arena_alloc(a, (n->n ? n->n : 1) * sizeof(*x.v));
	r = yaml_named_map(doc, n, path, &servers_map, &x, reterr);
	if (r < 0)
		return r;
	ret->v = x.v;
	ret->n = (size_t)r;
	return 0;
}

void orch_mcp_servers_merge(struct arena *a, const struct orch_mcp_servers *const *layers,
			    size_t n_layers, struct orch_mcp_servers *ret)
{
	size_t total = 0, n = 0, i, j, k;
	struct mcp_server *v;

	for (i = 0; i < n_layers; i++)
		total += layers[i] ? layers[i]->n : 0;
	v = arena_alloc(a, (total ? total : 1) * sizeof(*v));
	for (i = 0; i < n_layers; i++)
		for (j = 0; layers[i] && j < layers[i]->n; j++) {
			const struct mcp_server *s = &layers[i]->v[j];

			for (k = 0; k < n; k++)
				if (strcmp(v[k].name, s->name) == 0)
					break;
			if (k < n) { /* replaced or removed */
				memmove(&v[k], &v[k + 1], (n - k - 1) * sizeof(*v));
				n--;
			}
			if (s->command || s->url)
				v[n++] = *s;
		}
	ret->v = v;
	ret->n = n;
}

/* ---- JSON ---- */

static json_t *jarr(const char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		(void)json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *jmap(const char *const *k, const char *const *v, size_t n)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; i < n; i++)
		(void)json_object_set_new(o, k[i], json_string(v[i]));
	return o;
}

json_t *orch_mcp_servers_json(const struct orch_mcp_servers *s)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; s && i < s->n; i++) {
		const struct mcp_server *m = &s->v[i];
		json_t *x;

		if (!m->command && !m->url) {
			(void)json_object_set_new(o, m->name, json_null());
			continue;
		}
		x = json_object();
		if (m->command) {
			(void)json_object_set_new(x, "command", json_string(m->command));
			(void)json_object_set_new(x, "args", jarr(m->args, m->n_args));
			(void)json_object_set_new(x, "env",
						  jmap(m->env_keys, m->env_values, m->n_env));
		} else {
			(void)json_object_set_new(x, "url", json_string(m->url));
			(void)json_object_set_new(
				x, "headers", jmap(m->header_keys, m->header_values, m->n_headers));
		}
		(void)json_object_set_new(o, m->name, x);
	}
	return o;
}

static int bad(char *msg, size_t size, const char *name, const char *what)
{
	(void)snprintf(msg, size, "'%s': %s", name, what);
	return -EBADMSG;
}

static int jstrs(struct arena *a, const json_t *j, const char *const **ret, size_t *ret_n)
{
	const char **v;
	size_t i;

	if (!json_is_array(j))
		return -EBADMSG;
	v = arena_alloc(a, (json_array_size(j) + 1) * sizeof(*v));
	for (i = 0; i < json_array_size(j); i++) {
		const char *s = json_string_value(json_array_get(j, i));

		if (!s || !*s || has_ctl(s))
			return -EBADMSG;
		v[i] = arena_strdup(a, s);
	}
	v[i] = NULL;
	*ret = v;
	*ret_n = i;
	return 0;
}

static int jpairs(struct arena *a, const json_t *j, bool header, const char *const **ret_k,
		  const char *const **ret_v, size_t *ret_n)
{
	const char **k, **v, *key;
	json_t *x;
	size_t i = 0;

	if (!json_is_object(j))
		return -EBADMSG;
	k = arena_alloc(a, (json_object_size(j) + 1) * sizeof(*k));
	v = arena_alloc(a, (json_object_size(j) + 1) * sizeof(*v));
	json_object_foreach((json_t *)(uintptr_t)j, key, x)
	{
		const char *s = json_string_value(x);

		if (!s || has_ctl(s) ||
		    (header ? !header_name_ok(key) : !envpolicy_name_valid(key)))
			return -EBADMSG;
		k[i] = arena_strdup(a, key);
		v[i] = arena_strdup(a, s);
		i++;
	}
	k[i] = v[i] = NULL;
	*ret_k = k;
	*ret_v = v;
	*ret_n = i;
	return 0;
}

int orch_mcp_servers_parse_json(struct arena *a, const json_t *j, struct orch_mcp_servers *ret,
				char *msg, size_t size)
{
	struct mcp_server *v;
	const char *name;
	json_t *x;
	size_t n = 0;

	if (!json_is_object(j)) {
		(void)snprintf(msg, size, "not an object");
		return -EBADMSG;
	}
	v = arena_alloc(a, (json_object_size(j) ? json_object_size(j) : 1) * sizeof(*v));
	json_object_foreach((json_t *)(uintptr_t)j, name, x)
	{
		struct mcp_server *s = &v[n];
		const char *cmd, *url;

		memset(s, 0, sizeof(*s));
		if (!mcpcfg_name_valid(name))
			return bad(msg, size, name, "not a server name");
		s->name = arena_strdup(a, name);
		n++;
		if (json_is_null(x))
			continue;
		if (!json_is_object(x))
			return bad(msg, size, name, "not an object");
		cmd = json_string_value(json_object_get(x, "command"));
		url = json_string_value(json_object_get(x, "url"));
		if (!cmd == !url)
			return bad(msg, size, name, "not exactly one of command and url");
		if (cmd) {
			if (!*cmd || *cmd == '-' || has_ctl(cmd) ||
			    jstrs(a, json_object_get(x, "args"), &s->args, &s->n_args) < 0 ||
			    jpairs(a, json_object_get(x, "env"), false, &s->env_keys,
				   &s->env_values, &s->n_env) < 0)
				return bad(msg, size, name, "a bad command, args or env");
			s->command = arena_strdup(a, cmd);
		} else {
			if (has_ctl(url) || url_check(url, NULL, NULL) < 0 ||
			    jpairs(a, json_object_get(x, "headers"), true, &s->header_keys,
				   &s->header_values, &s->n_headers) < 0)
				return bad(msg, size, name, "a bad url or headers");
			s->url = arena_strdup(a, url);
		}
	}
	ret->v = v;
	ret->n = n;
	return 0;
}

static const char *dup(struct arena *a, const char *s)
{
	return s ? arena_strdup(a, s) : NULL;
}

static const char *const *dupv(struct arena *a, const char *const *v, size_t n)
{
	const char **o;
	size_t i;

	if (!v)
		return NULL;
	o = arena_alloc(a, (n + 1) * sizeof(*o));
	for (i = 0; i < n; i++)
		o[i] = arena_strdup(a, v[i]);
	o[n] = NULL;
	return o;
}

void orch_mcp_servers_copy(struct arena *a, const struct orch_mcp_servers *s,
			   struct orch_mcp_servers *ret)
{
	size_t i;

	ret->v = NULL;
	ret->n = 0;
	if (!s || !s->n)
		return;
	ret->v = arena_alloc(a, s->n * sizeof(*ret->v));
	for (i = 0; i < s->n; i++) {
		const struct mcp_server *m = &s->v[i];
		struct mcp_server *o = &ret->v[i];

		*o = *m;
		o->name = dup(a, m->name);
		o->command = dup(a, m->command);
		o->url = dup(a, m->url);
		o->args = dupv(a, m->args, m->n_args);
		o->env_keys = dupv(a, m->env_keys, m->n_env);
		o->env_values = dupv(a, m->env_values, m->n_env);
		o->header_keys = dupv(a, m->header_keys, m->n_headers);
		o->header_values = dupv(a, m->header_values, m->n_headers);
	}
	ret->n = s->n;
}

/* ---- YAML ---- */

static int yaml_map(struct sbuf *out, const char *key, const char *const *k, const char *const *v,
		    size_t n)
{
	size_t i;
	int r = sbuf_addf(out, ", %s: {", key);

	for (i = 0; r == 0 && i < n; i++) {
		r = sbuf_addf(out, "%s%s: ", i ? ", " : "", k[i]);
		if (r == 0)
			r = yaml_emit_str(out, v[i]);
	}
	return r ? r : sbuf_adds(out, "}");
}

int orch_mcp_servers_yaml(const struct orch_mcp_servers *s, struct sbuf *out)
{
	size_t i, j;
	int r;

	if (!s || !s->n)
		return 0;
	r = sbuf_adds(out, "\nmcp_servers:");
	for (i = 0; r == 0 && i < s->n; i++) {
		const struct mcp_server *m = &s->v[i];

		r = sbuf_addf(out, "\n  %s: ", m->name);
		if (r == 0 && !m->command && !m->url) {
			r = sbuf_adds(out, "null");
			continue;
		}
		if (r == 0)
			r = sbuf_adds(out, m->command ? "{command: " : "{url: ");
		if (r == 0)
			r = yaml_emit_str(out, m->command ? m->command : m->url);
		if (r == 0 && m->command) {
			r = sbuf_adds(out, ", args: [");
			for (j = 0; r == 0 && j < m->n_args; j++) {
				if (j)
					r = sbuf_adds(out, ", ");
				if (r == 0)
					r = yaml_emit_str(out, m->args[j]);
			}
			if (r == 0)
				r = sbuf_adds(out, "]");
			if (r == 0)
				r = yaml_map(out, "env", m->env_keys, m->env_values, m->n_env);
		} else if (r == 0) {
			r = yaml_map(out, "headers", m->header_keys, m->header_values,
				     m->n_headers);
		}
		if (r == 0)
			r = sbuf_adds(out, "}");
	}
	return r;
}
