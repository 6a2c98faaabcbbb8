/* Runner manifest parsing (manifest.h). */
#include "runner/manifest.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "util/fsutil.h"
#include "util/json.h"
#include "util/url.h"
#include "util/xalloc.h"
#include "util/banned.h"

static const char *json_kind(const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

struct mparse {
	struct runner_manifest *m;
	const char *name;
	struct diag *reterr;
};

static int bad(struct mparse *p, const char *field, const char *fmt, const json_t *v)
{
	diag_set(p->reterr, p->name, 0, 0, "field '%s': %s%s%s", field, fmt, v ? ", got " : "",
		 v ? json_kind(v) : "");
	return -EINVAL;
}

/* The value of key, or NULL when absent or null. */
static json_t *get(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return v && !json_is_null(v) ? v : NULL;
}

static int get_str(struct mparse *p, const json_t *o, const char *key, bool required, bool nonempty,
		   const char **ret)
{
	json_t *v = get(o, key);

	if (!v) {
		if (required)
			return bad(p, key, "missing (a string is required)", NULL);
		return 0;
	}
	if (!json_is_string(v))
		return bad(p, key, "expected a string", v);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(p, key, "contains a NUL character", NULL);
	if (nonempty && json_string_length(v) == 0)
		return bad(p, key, "must not be empty", NULL);
	*ret = arena_strdup(&p->m->arena, json_string_value(v));
	return 0;
}

static int get_int(struct mparse *p, const json_t *o, const char *key, int64_t min, int64_t *ret,
		   bool *ret_has)
{
	json_t *v = get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v))
		return bad(p, key, "expected an integer", v);
	if (json_integer_value(v) < min) {
		diag_set(p->reterr, p->name, 0, 0, "field '%s': must be at least %lld", key,
			 (long long)min);
		return -EINVAL;
	}
	*ret = json_integer_value(v);
	if (ret_has)
		*ret_has = true;
	return 0;
}

static int get_num(struct mparse *p, const json_t *o, const char *key, double min, double max,
		   double *ret, bool *ret_has)
{
	json_t *v = get(o, key);
	double d;

	if (!v)
		return 0;
	if (!json_is_number(v))
		return bad(p, key, "expected a number", v);
	d = json_number_value(v);
	if (!isfinite(d) || d < min || d > max) {
		if (max < HUGE_VAL)
			diag_set(p->reterr, p->name, 0, 0, "field '%s': must be between %g and %g",
				 key, min, max);
		else
			diag_set(p->reterr, p->name, 0, 0, "field '%s': must be at least %g", key,
				 min);
		return -EINVAL;
	}
	*ret = d;
	if (ret_has)
		*ret_has = true;
	return 0;
}

static int get_bool(struct mparse *p, const json_t *o, const char *key, bool *ret, bool *ret_has)
{
	json_t *v = get(o, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return bad(p, key, "expected true or false", v);
	*ret = json_is_true(v);
	if (ret_has)
		*ret_has = true;
	return 0;
}

/* A NULL-terminated arena array of the strings of a JSON array. */
static int str_array(struct mparse *p, const char *field, const json_t *a, const char ***ret,
		     size_t *ret_n)
{
	const char **v;
	size_t i;

	if (!json_is_array(a))
		return bad(p, field, "expected an array of strings", a);
	v = arena_alloc(&p->m->arena, st_mult(json_array_size(a) + 1, sizeof(*v)));
	for (i = 0; i < json_array_size(a); i++) {
		json_t *s = json_array_get(a, i);

		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
			diag_set(p->reterr, p->name, 0, 0,
				 "field '%s': element %zu: expected a string without NUL, got %s",
				 field, i, json_kind(s));
			return -EINVAL;
		}
		v[i] = arena_strdup(&p->m->arena, json_string_value(s));
	}
	v[i] = NULL;
	*ret = v;
	if (ret_n)
		*ret_n = i;
	return 0;
}

bool runner_manifest_session_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0, i;

	if (n == 0 || n > 128 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static int parse_tools(struct mparse *p, const json_t *a)
{
	const char **v;
	size_t i;

	if (!json_is_array(a))
		return bad(p, "tools", "expected an array", a);
	v = arena_alloc(&p->m->arena, st_mult(json_array_size(a) + 1, sizeof(*v)));
	for (i = 0; i < json_array_size(a); i++) {
		json_t *t = json_array_get(a, i), *n = t;

		if (json_is_object(t))
			n = json_object_get(t, "name");
		if (!n || !json_is_string(n) || json_string_length(n) == 0 ||
		    strlen(json_string_value(n)) != json_string_length(n)) {
			diag_set(
				p->reterr, p->name, 0, 0,
				"field 'tools': element %zu: expected a tool name or an object with a 'name' string",
				i);
			return -EINVAL;
		}
		v[i] = arena_strdup(&p->m->arena, json_string_value(n));
	}
	v[i] = NULL;
	p->m->tools = v;
	p->m->ntools = i;
	return 0;
}

static int parse_mcp_servers(struct mparse *p, const json_t *o)
{
	struct runner_manifest *m = p->m;
	const char *key;
	json_t *srv;
	size_t i = 0;
	int r;

	if (!json_is_object(o))
		return bad(p, "mcp_servers", "expected an object of servers", o);
	m->mcp_servers =
		arena_alloc(&m->arena, st_mult(json_object_size(o) + 1, sizeof(*m->mcp_servers)));
	json_object_foreach((json_t *)(uintptr_t)o, key, srv)
	{
		struct manifest_mcp_server *s = &m->mcp_servers[i];
		char field[160];
		json_t *v;

		(void)snprintf(field, sizeof(field), "mcp_servers.%s", key);
		if (!json_is_object(srv))
			return bad(p, field, "expected an object", srv);
		if (!*key || strlen(key) > 64)
			return bad(p, field, "server names must be 1 to 64 characters", NULL);
		s->name = arena_strdup(&m->arena, key);
		v = get(srv, "type");
		if (v && (!json_is_string(v) || strcmp(json_string_value(v), "stdio") != 0))
			return bad(
				p, field,
				"only stdio servers ('type': 'stdio', with a 'command') are supported",
				NULL);
		if (!get(srv, "command")) {
			if (get(srv, "url"))
				return bad(
					p, field,
					"only stdio servers (with a 'command') are supported, not 'url'",
					NULL);
			return bad(p, field, "missing 'command'", NULL);
		}
		{
			struct mparse sub = {m, p->name, p->reterr};
			const char *cmd = NULL, *cwd = NULL;

			r = get_str(&sub, srv, "command", true, true, &cmd);
			if (r < 0) {
				diag_prefix(p->reterr, "%s", field);
				return r;
			}
			r = get_str(&sub, srv, "cwd", false, true, &cwd);
			if (r < 0) {
				diag_prefix(p->reterr, "%s", field);
				return r;
			}
			s->command = cmd;
			s->cwd = cwd;
		}
		v = get(srv, "args");
		if (v) {
			const char **args = NULL;

			(void)snprintf(field, sizeof(field), "mcp_servers.%s.args", key);
			r = str_array(p, field, v, &args, NULL);
			if (r < 0)
				return r;
			s->args = args;
		} else {
			s->args = arena_alloc(&m->arena, sizeof(*s->args));
		}
		v = get(srv, "env");
		if (v) {
			const char **env, *ek;
			json_t *ev;
			size_t k = 0;

			(void)snprintf(field, sizeof(field), "mcp_servers.%s.env", key);
			if (!json_is_object(v))
				return bad(p, field, "expected an object of strings", v);
			env = arena_alloc(&m->arena,
					  st_mult(json_object_size(v) + 1, sizeof(*env)));
			json_object_foreach(v, ek, ev)
			{
				size_t kl = strlen(ek), vl;
				char *kv;

				if (!json_is_string(ev) || !kl || strchr(ek, '=') ||
				    strlen(json_string_value(ev)) != json_string_length(ev))
					return bad(
						p, field,
						"expected NAME: \"value\" strings (no '=' in names, no NUL)",
						NULL);
				vl = json_string_length(ev);
				kv = arena_alloc(&m->arena, st_add(st_add(kl, vl), 2));
				memcpy(kv, ek, kl);
				kv[kl] = '=';
				memcpy(kv + kl + 1, json_string_value(ev), vl);
				env[k++] = kv;
			}
			env[k] = NULL;
			s->env = env;
		} else {
			s->env = arena_alloc(&m->arena, sizeof(*s->env));
		}
		i++;
	}
	m->nmcp_servers = i;
	return 0;
}

/* The required fields: session_id (a valid one), prompt, workdir, model. */
static int parse_required(struct mparse *p, const json_t *o)
{
	struct runner_manifest *m = p->m;
	int r;

	if ((r = get_str(p, o, "session_id", true, true, &m->session_id)) < 0 ||
	    (r = get_str(p, o, "prompt", true, false, &m->prompt)) < 0 ||
	    (r = get_str(p, o, "workdir", true, true, &m->workdir)) < 0 ||
	    (r = get_str(p, o, "model", true, true, &m->model)) < 0)
		return r;
	if (!runner_manifest_session_id_ok(m->session_id))
		return bad(p, "session_id",
			   "must be 1 to 128 of [A-Za-z0-9._-] (it names files), not '.' or '..'",
			   NULL);
	return 0;
}

/* The optional scalar fields, in the order they are checked; tool_source
 * into m->tool_source_raw. */
static int parse_optional(struct mparse *p, const json_t *o)
{
	struct runner_manifest *m = p->m;
	bool dummy;
	int r;

	if ((r = get_str(p, o, "effort", false, false, &m->effort)) < 0 ||
	    (r = get_int(p, o, "max_tokens", 1, &m->max_tokens, &m->has_max_tokens)) < 0 ||
	    (r = get_int(p, o, "timeout_seconds", 1, &m->timeout_seconds, &dummy)) < 0 ||
	    (r = get_str(p, o, "task_scope", false, false, &m->task_scope)) < 0 ||
	    (r = get_num(p, o, "budget_multiplier", 0, HUGE_VAL, &m->budget_multiplier, NULL)) <
		    0 ||
	    (r = get_str(p, o, "system_addendum", false, false, &m->system_addendum)) < 0 ||
	    (r = get_str(p, o, "sandbox_provider", false, false, &m->sandbox_provider)) < 0 ||
	    (r = get_str(p, o, "tool_source", false, false, &m->tool_source_raw)) < 0 ||
	    (r = get_num(p, o, "temperature", 0, HUGE_VAL, &m->temperature, &m->has_temperature)) <
		    0 ||
	    (r = get_num(p, o, "top_p", 0, 1, &m->top_p, &m->has_top_p)) < 0 ||
	    (r = get_int(p, o, "top_k", 0, &m->top_k, &m->has_top_k)) < 0 ||
	    (r = get_str(p, o, "base_url", false, true, &m->base_url)) < 0 ||
	    (r = get_str(p, o, "api_key_env", false, true, &m->api_key_env)) < 0 ||
	    (r = get_str(p, o, "heartbeat_dir", false, true, &m->heartbeat_dir)) < 0 ||
	    (r = get_bool(p, o, "allow_run_command", &m->allow_run_command,
			  &m->has_allow_run_command)) < 0 ||
	    (r = get_bool(p, o, "allow_git_dir", &m->allow_git_dir, NULL)) < 0 ||
	    (r = get_int(p, o, "max_turns", 1, &m->max_turns, &m->has_max_turns)) < 0 ||
	    (r = get_bool(p, o, "stream", &m->stream, NULL)) < 0)
		return r;
	return 0;
}

/* The defaults of the optional strings left out, and the tool source. */
static void apply_defaults(struct runner_manifest *m)
{
	const char *ts = m->tool_source_raw;

	if (m->sandbox_provider && !*m->sandbox_provider)
		m->sandbox_provider = NULL; /* an empty string means the default */
	if (!m->sandbox_provider)
		m->sandbox_provider = "unix_local";
	if (!m->effort)
		m->effort = "high";
	if (!m->task_scope)
		m->task_scope = "medium";
	if (!m->system_addendum)
		m->system_addendum = "";
	m->tool_source =
		ts && strcmp(ts, "builtin") == 0 ? MANIFEST_TOOLS_BUILTIN : MANIFEST_TOOLS_GATEWAY;
}

/* base_url, when given: a valid URL, kept without its trailing slashes. */
static int check_base_url(struct mparse *p)
{
	struct runner_manifest *m = p->m;
	size_t n;
	struct diag ud;
	char *u;

	if (!m->base_url)
		return 0;
	if (url_check(m->base_url, NULL, &ud) < 0)
		return bad(p, "base_url", ud.msg, NULL);
	n = strlen(m->base_url);
	u = arena_strdup(&m->arena, m->base_url);
	while (n > 0 && u[n - 1] == '/')
		u[--n] = '\0';
	m->base_url = u;
	return 0;
}

static int parse_object(struct mparse *p, const json_t *o)
{
	json_t *v;
	int r;

	if ((r = parse_required(p, o)) < 0 || (r = parse_optional(p, o)) < 0)
		return r;
	apply_defaults(p->m);
	if ((r = check_base_url(p)) < 0)
		return r;
	if ((v = get(o, "tools")) && (r = parse_tools(p, v)) < 0)
		return r;
	if ((v = get(o, "mcp_servers")) && (r = parse_mcp_servers(p, v)) < 0)
		return r;
	return 0;
}

int runner_manifest_parse(const char *name, const char *buf, size_t len,
			  struct runner_manifest **ret, struct diag *reterr)
{
	struct runner_manifest *m;
	struct mparse p;
	json_t *root = NULL;
	int r;

	if (len > RUNNER_MANIFEST_MAX_BYTES) {
		diag_set(reterr, name, 0, 0, "larger than %d bytes", RUNNER_MANIFEST_MAX_BYTES);
		return -EFBIG;
	}
	r = json_parse_strict(name, buf, len, &root, reterr);
	if (r < 0)
		return r;
	if (!json_is_object(root)) {
		diag_set(reterr, name, 0, 0, "the manifest must be a JSON object, got %s",
			 json_kind(root));
		json_decref(root);
		return -EBADMSG;
	}
	m = xcalloc(1, sizeof(*m));
	arena_init(&m->arena, 0);
	m->path = arena_strdup(&m->arena, name);
	m->max_tokens = MANIFEST_DEFAULT_MAX_TOKENS;
	m->timeout_seconds = MANIFEST_DEFAULT_TIMEOUT_SECONDS;
	m->budget_multiplier = 1.0;
	m->stream = true;
	m->tools = arena_alloc(&m->arena, sizeof(*m->tools));
	p = (struct mparse){m, name, reterr};
	r = parse_object(&p, root);
	json_decref(root);
	if (r < 0) {
		runner_manifest_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

int runner_manifest_load(const char *path, struct runner_manifest **ret, struct diag *reterr)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_file_capped(path, RUNNER_MANIFEST_MAX_BYTES, &buf, &len);
	if (r < 0) {
		if (r == -EFBIG)
			diag_set(reterr, path, 0, 0, "larger than %d bytes",
				 RUNNER_MANIFEST_MAX_BYTES);
		else
			diag_set(reterr, path, 0, 0, "cannot read: %s", file_strerror(r));
		return r;
	}
	r = runner_manifest_parse(path, buf, len, ret, reterr);
	free(buf);
	return r;
}

struct runner_manifest *runner_manifest_free(struct runner_manifest *m)
{
	if (!m)
		return NULL;
	arena_release(&m->arena);
	free(m);
	return NULL;
}
