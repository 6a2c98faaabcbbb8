/* MCP servers rendered into an agent's configuration (see mcpcfg.h). */
#include "adapter/mcpcfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/banned.h"

static const char *const format_names[_MCP_FORMAT_MAX] = {
	[MCP_FORMAT_CLAUDE] = "claude",
	[MCP_FORMAT_GEMINI] = "gemini",
	[MCP_FORMAT_OPENCODE] = "opencode",
	[MCP_FORMAT_CODEX] = "codex",
};

const char *mcp_format_to_string(enum mcp_format f)
{
	return f >= 0 && f < _MCP_FORMAT_MAX ? format_names[f] : NULL;
}

enum mcp_format mcp_format_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _MCP_FORMAT_MAX; i++)
		if (strcmp(format_names[i], s) == 0)
			return (enum mcp_format)i;
	return _MCP_FORMAT_INVALID;
}

const char *mcp_format_suffix(enum mcp_format f)
{
	return f == MCP_FORMAT_CODEX ? ".toml" : ".json";
}

bool mcpcfg_name_valid(const char *name)
{
	size_t i, n = name ? strlen(name) : 0;

	if (n == 0 || n > MCPCFG_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* ---- JSON formats ---- */

static json_t *jstr(const char *s)
{
	json_t *j = json_string(s ? s : "");

	return j ? j : json_str_lossy(s ? s : "");
}

static json_t *jarr(const char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		(void)json_array_append_new(a, jstr(v[i]));
	return a;
}

static json_t *jmap(const char *const *k, const char *const *v, size_t n)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; i < n; i++)
		(void)json_object_set_new(o, k[i], jstr(v[i]));
	return o;
}

/* [{"name": K, "value": V}] (ACP's EnvVariable / HttpHeader) */
static json_t *jpairs(const char *const *k, const char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		(void)json_object_set_new(o, "name", jstr(k[i]));
		(void)json_object_set_new(o, "value", jstr(v[i]));
		(void)json_array_append_new(a, o);
	}
	return a;
}

static json_t *server_json(enum mcp_format f, const struct mcp_server *s)
{
	json_t *o = json_object();

	switch (f) {
	case MCP_FORMAT_CLAUDE:
		if (s->url) {
			(void)json_object_set_new(o, "type", json_string("http"));
			(void)json_object_set_new(o, "url", jstr(s->url));
			(void)json_object_set_new(
				o, "headers", jmap(s->header_keys, s->header_values, s->n_headers));
		} else {
			(void)json_object_set_new(o, "type", json_string("stdio"));
			(void)json_object_set_new(o, "command", jstr(s->command));
			(void)json_object_set_new(o, "args", jarr(s->args, s->n_args));
			(void)json_object_set_new(o, "env",
						  jmap(s->env_keys, s->env_values, s->n_env));
		}
		break;
	case MCP_FORMAT_GEMINI:
		if (s->url) {
			(void)json_object_set_new(o, "httpUrl", jstr(s->url));
			(void)json_object_set_new(
				o, "headers", jmap(s->header_keys, s->header_values, s->n_headers));
		} else {
			(void)json_object_set_new(o, "command", jstr(s->command));
			(void)json_object_set_new(o, "args", jarr(s->args, s->n_args));
			(void)json_object_set_new(o, "env",
						  jmap(s->env_keys, s->env_values, s->n_env));
		}
		break;
	case MCP_FORMAT_OPENCODE:
		if (s->url) {
			(void)json_object_set_new(o, "type", json_string("remote"));
			(void)json_object_set_new(o, "url", jstr(s->url));
			(void)json_object_set_new(
				o, "headers", jmap(s->header_keys, s->header_values, s->n_headers));
		} else {
			json_t *cmd = jarr(s->args, s->n_args);

			(void)json_array_insert_new(cmd, 0, jstr(s->command));
			(void)json_object_set_new(o, "type", json_string("local"));
			(void)json_object_set_new(o, "command", cmd);
			(void)json_object_set_new(o, "environment",
						  jmap(s->env_keys, s->env_values, s->n_env));
		}
		(void)json_object_set_new(o, "enabled", json_true());
		break;
	default:
		break;
	}
	return o;
}

static int render_json(enum mcp_format f, const struct mcp_server *v, size_t n, const char *base,
		       struct sbuf *out, struct diag *reterr)
{
	const char *key = f == MCP_FORMAT_OPENCODE ? "mcp" : "mcpServers";
	json_t *root = NULL, *servers;
	char *text = NULL;
	size_t i;
	int r;

	if (base && *base) {
		json_error_t err;

		root = json_loads(base, JSON_REJECT_DUPLICATES, &err);
		if (!root || !json_is_object(root)) {
			diag_set(reterr, NULL, (unsigned)(err.line > 0 ? err.line : 0),
				 (unsigned)(err.column > 0 ? err.column : 0),
				 "the file MCP servers merge into is not a JSON object%s%s",
				 root ? "" : ": ", root ? "" : err.text);
			json_decref(root);
			return -EINVAL;
		}
	} else {
		root = json_object();
	}
	servers = json_object_get(root, key);
	if (!json_is_object(servers)) {
		servers = json_object();
		(void)json_object_set_new(root, key, servers);
	}
	for (i = 0; i < n; i++)
		(void)json_object_set_new(servers, v[i].name, server_json(f, &v[i]));
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text) {
		diag_set(reterr, NULL, 0, 0, "cannot serialise the MCP configuration");
		return -EINVAL;
	}
	r = sbuf_adds(out, text);
	if (r == 0)
		r = sbuf_addc(out, '\n');
	free(text);
	return r;
}

/* ---- codex: TOML ---- */

/* A TOML basic string: quotes, backslashes and control bytes escaped. */
static int toml_str(struct sbuf *out, const char *s)
{
	int r = sbuf_addc(out, '"');

	for (; r == 0 && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			r = sbuf_addf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			r = sbuf_addf(out, "\\u%04X", c);
		else
			r = sbuf_addc(out, (char)c);
	}
	return r ? r : sbuf_addc(out, '"');
}

static int toml_table(struct sbuf *out, const char *name, const char *sub, const char *const *k,
		      const char *const *v, size_t n)
{
	size_t i;
	int r;

	if (!n)
		return 0;
	r = sbuf_addf(out, "\n[mcp_servers.%s.%s]\n", name, sub);
	for (i = 0; r == 0 && i < n; i++) {
		r = toml_str(out, k[i]);
		if (r == 0)
			r = sbuf_adds(out, " = ");
		if (r == 0)
			r = toml_str(out, v[i]);
		if (r == 0)
			r = sbuf_addc(out, '\n');
	}
	return r;
}

static int render_codex(const struct mcp_server *v, size_t n, const char *base, struct sbuf *out)
{
	size_t i, j;
	int r = 0;

	if (base && *base) {
		r = sbuf_adds(out, base);
		if (r == 0 && base[strlen(base) - 1] != '\n')
			r = sbuf_addc(out, '\n');
	}
	for (i = 0; r == 0 && i < n; i++) {
		const struct mcp_server *s = &v[i];

		r = sbuf_addf(out, "%s[mcp_servers.%s]\n", out->len ? "\n" : "", s->name);
		if (r == 0 && s->url) {
			r = sbuf_adds(out, "url = ");
			if (r == 0)
				r = toml_str(out, s->url);
			if (r == 0)
				r = sbuf_addc(out, '\n');
			if (r == 0)
				r = toml_table(out, s->name, "http_headers", s->header_keys,
					       s->header_values, s->n_headers);
			continue;
		}
		if (r == 0)
			r = sbuf_adds(out, "command = ");
		if (r == 0)
			r = toml_str(out, s->command);
		if (r == 0)
			r = sbuf_adds(out, "\nargs = [");
		for (j = 0; r == 0 && j < s->n_args; j++) {
			if (j)
				r = sbuf_adds(out, ", ");
			if (r == 0)
				r = toml_str(out, s->args[j]);
		}
		if (r == 0)
			r = sbuf_adds(out, "]\n");
		if (r == 0)
			r = toml_table(out, s->name, "env", s->env_keys, s->env_values, s->n_env);
	}
	return r;
}

int mcpcfg_render(enum mcp_format f, const struct mcp_server *v, size_t n, const char *base,
		  struct sbuf *out, struct diag *reterr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!mcpcfg_name_valid(v[i].name) || (!v[i].url == !v[i].command)) {
			diag_set(reterr, NULL, 0, 0, "MCP server '%s': a bad name or shape",
				 v[i].name ? v[i].name : "");
			return -EINVAL;
		}
	switch (f) {
	case MCP_FORMAT_CLAUDE:
	case MCP_FORMAT_GEMINI:
	case MCP_FORMAT_OPENCODE:
		return render_json(f, v, n, base, out, reterr);
	case MCP_FORMAT_CODEX:
		return render_codex(v, n, base, out);
	default:
		diag_set(reterr, NULL, 0, 0, "unknown MCP configuration format");
		return -EINVAL;
	}
}

json_t *mcpcfg_acp_json(const struct mcp_server *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		const struct mcp_server *s = &v[i];
		json_t *o = json_object();

		if (s->url) {
			(void)json_object_set_new(o, "type", json_string("http"));
			(void)json_object_set_new(o, "name", jstr(s->name));
			(void)json_object_set_new(o, "url", jstr(s->url));
			(void)json_object_set_new(
				o, "headers",
				jpairs(s->header_keys, s->header_values, s->n_headers));
		} else {
			(void)json_object_set_new(o, "name", jstr(s->name));
			(void)json_object_set_new(o, "command", jstr(s->command));
			(void)json_object_set_new(o, "args", jarr(s->args, s->n_args));
			(void)json_object_set_new(o, "env",
						  jpairs(s->env_keys, s->env_values, s->n_env));
		}
		(void)json_array_append_new(a, o);
	}
	return a;
}
