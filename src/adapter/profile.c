#include "adapter/profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "adapter/argv-order.h"
#include "adapter/contract.h"
#include "adapter/strategy.h"
#include "proc/netproxy.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/yaml.h"

/* ---- names ---- */

static const char *const shape_names[] = {"factory", "module", NULL};
static const char *const sandbox_names[] = {"none", "process", "container", "microvm", NULL};
static const char *const position_names[] = {"after-subcommands", "before-prompt", "end", NULL};
static const char *const format_names[] = {"uuid", "any", NULL};
static const char *const via_names[] = {"stdin", "file", NULL};
static const char *const guard_names[] = {"none", "separator", "glued", "long-prompt", NULL};
static const char *const dialect_names[] = {"claude", "codex",	"gemini",	"qwen", "opencode",
					    "pi",     "runner", "text-signals", "none", NULL};
static const char *const home_names[] = {"inherit", "isolated", NULL};
static const char *const git_dir_names[] = {"refused", "allowed", NULL};
static const char *const placeholder_names[] = {
	"session_id", "model",	 "prompt_file",	 "base_url",	 "api_key_env", "api_key",
	"home",	      "workdir", "hook_command", "hooks_socket", "mcp_config",	NULL};

static const char *name_of(const char *const *names, int n, int v)
{
	if (v < 0 || v >= n)
		return NULL;
	return names[v];
}

static int index_of(const char *const *names, const char *s)
{
	int i;

	if (!s)
		return -EINVAL;
	for (i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -EINVAL;
}

const char *profile_shape_to_string(enum profile_shape v)
{
	return name_of(shape_names, _PROFILE_SHAPE_MAX, (int)v);
}

const char *sandbox_tier_to_string(enum sandbox_tier v)
{
	return name_of(sandbox_names, _SANDBOX_TIER_MAX, (int)v);
}

enum sandbox_tier sandbox_tier_from_string(const char *s)
{
	return (enum sandbox_tier)index_of(sandbox_names, s);
}

const char *resume_position_to_string(enum resume_position v)
{
	return name_of(position_names, _RESUME_POSITION_MAX, (int)v);
}

const char *session_id_format_to_string(enum session_id_format v)
{
	return name_of(format_names, _SESSION_ID_FORMAT_MAX, (int)v);
}

const char *prompt_via_to_string(enum prompt_via v)
{
	return name_of(via_names, _PROMPT_VIA_MAX, (int)v);
}

const char *prompt_guard_to_string(enum prompt_guard v)
{
	return name_of(guard_names, _PROMPT_GUARD_MAX, (int)v);
}

const char *event_dialect_to_string(enum event_dialect v)
{
	return name_of(dialect_names, _EVENT_DIALECT_MAX, (int)v);
}

const char *agent_home_to_string(enum agent_home v)
{
	return name_of(home_names, _AGENT_HOME_MAX, (int)v);
}

const char *git_dir_access_to_string(enum git_dir_access v)
{
	return name_of(git_dir_names, _GIT_DIR_ACCESS_MAX, (int)v);
}

const char *profile_placeholder_name(enum profile_placeholder ph)
{
	return name_of(placeholder_names, _PH_MAX, (int)ph);
}

bool profile_name_valid(const char *name)
{
	size_t i, n;

	if (!name)
		return false;
	n = strlen(name);
	if (n == 0 || n > PROFILE_MAX_NAME || name[0] < 'a' || name[0] > 'z')
		return false;
	for (i = 1; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

int profile_stem(const char *path, char *buf, size_t size)
{
	const char *base = strrchr(path, '/');
	size_t n, sl = strlen(PROFILE_SUFFIX);

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n <= sl || strcmp(base + n - sl, PROFILE_SUFFIX) != 0 || n - sl >= size)
		return -EINVAL;
	memcpy(buf, base, n - sl);
	buf[n - sl] = '\0';
	return 0;
}

/* ---- diagnostics ---- */

struct pctx {
	const struct ydoc *doc;
	struct profile *p;
	const char *file; /* p->source */
	struct diag *reterr;
	bool acp; /* runtime.acp is there: the prompt may have no argv delivery */
};

static void vperr(struct diag *reterr, const char *file, const struct catalog_origin *at,
		  const char *path, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

static void vperr(struct diag *reterr, const char *file, const struct catalog_origin *at,
		  const char *path, const char *fmt, va_list ap)
{
	char msg[sizeof(((struct diag *)NULL)->msg)];

	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	if (path && path[0])
		diag_set(reterr, file, at ? at->line : 0, at ? at->col : 0, "field '%s': %s", path,
			 msg);
	else
		diag_set(reterr, file, at ? at->line : 0, at ? at->col : 0, "%s", msg);
}

static struct catalog_origin at_node(const struct pctx *c, const struct ynode *n)
{
	struct catalog_origin o = {.file = c->file, .line = n ? n->line : 0, .col = n ? n->col : 0};

	return o;
}

/* An error at node n about field path: "field 'path': message". -EINVAL. */
static int perr(struct pctx *c, const struct ynode *n, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int perr(struct pctx *c, const struct ynode *n, const char *path, const char *fmt, ...)
{
	struct catalog_origin o = at_node(c, n);
	va_list ap;

	va_start(ap, fmt);
	vperr(c->reterr, c->file, &o, path, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The same at a stored origin (checks after parsing). */
static int oerr(struct diag *reterr, const char *file, const struct catalog_origin *at,
		const char *path, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int oerr(struct diag *reterr, const char *file, const struct catalog_origin *at,
		const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vperr(reterr, file, at, path, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#define Q(buf, s) yaml_quote(buf, sizeof(buf), s)

/* ---- schema ---- */

/* node must be a map with only keys of fields, each of its type, and the
 * required ones present (util/yschema.h, the first problem into the diag).
 * path names the map ("" for the top level). */
static int check_map(struct pctx *c, const struct ynode *node, const struct yfield *fields,
		     const char *path)
{
	struct ycheck yc = YCHECK_INIT(c->doc, YCHECK_FIELD, NULL, c->reterr);

	if (!path[0] && (!node || node->kind != YNODE_MAP))
		return perr(c, node, "", "a profile is a mapping, got %s", yaml_describe(node));
	return yaml_check(&yc, node, fields, path);
}

static const char *get_str(const struct ynode *map, const char *key)
{
	const struct ynode *v = ynode_get(map, key);

	return yaml_is_str(v) ? v->str : NULL;
}

static bool get_bool(const struct ynode *map, const char *key, bool dflt)
{
	const struct ynode *v = ynode_get(map, key);
	bool b = dflt;

	if (v)
		(void)ynode_bool(v, &b);
	return b;
}

static int get_enum(struct pctx *c, const struct ynode *map, const char *key, const char *path,
		    const char *const *values, int dflt, int *ret)
{
	const struct ynode *v = ynode_get(map, key);

	if (!v) {
		*ret = dflt;
		return 0;
	}
	return yaml_value_enum(c->doc, v, path, values, ret, c->reterr);
}

/* ---- tokens and templates ---- */

#define PH_BIT(x)   (1u << (x))
#define PH_LOCAL    (PH_BIT(PH_HOME) | PH_BIT(PH_WORKDIR))
#define PH_RUN	    (PH_LOCAL | PH_BIT(PH_MODEL))
#define PH_ENDPOINT (PH_RUN | PH_BIT(PH_BASE_URL) | PH_BIT(PH_API_KEY_ENV))
#define PH_HOOKS    (PH_RUN | PH_BIT(PH_HOOK_COMMAND) | PH_BIT(PH_HOOKS_SOCKET))
#define PH_MCP	    (PH_LOCAL | PH_BIT(PH_MCP_CONFIG))

/* Find the next placeholder "{name}" (name: [a-z_][a-z0-9_]*) in s at or after
 * *pos. Returns its index (or _PH_INVALID for an unknown name, -ENOENT when
 * there is none) and sets *start and *len. */
static int next_placeholder(const char *s, size_t *pos, size_t *start, size_t *len)
{
	size_t i = *pos;

	for (; s[i]; i++) {
		size_t j = i + 1;

		if (s[i] != '{')
			continue;
		if (!((s[j] >= 'a' && s[j] <= 'z') || s[j] == '_'))
			continue;
		while ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= '0' && s[j] <= '9') || s[j] == '_')
			j++;
		if (s[j] != '}')
			continue;
		*start = i;
		*len = j + 1 - i;
		*pos = j + 1;
		for (int k = 0; k < _PH_MAX; k++)
			if (strlen(placeholder_names[k]) == j - i - 1 &&
			    memcmp(placeholder_names[k], s + i + 1, j - i - 1) == 0)
				return k;
		return _PH_INVALID;
	}
	*pos = i;
	return -ENOENT;
}

/* Every placeholder of s must be known and in allowed (a PH_BIT mask).
 * Sets *ret_used to the mask of those found. */
static int check_placeholders(struct pctx *c, const struct ynode *n, const char *path,
			      const char *s, unsigned allowed, unsigned *ret_used)
{
	size_t pos = 0, start, len;
	unsigned used = 0;
	int ph;

	while ((ph = next_placeholder(s, &pos, &start, &len)) != -ENOENT) {
		char name[80];

		(void)snprintf(name, sizeof(name), "%.*s", (int)(len < 70 ? len : 70), s + start);
		if (ph < 0)
			return perr(
				c, n, path,
				"unknown placeholder '%s' (known: {session_id}, {model}, {prompt_file}, {base_url}, {api_key_env}, {api_key}, {home}, {workdir}, {hook_command}, {hooks_socket}, {mcp_config})",
				name);
		if (!(allowed & PH_BIT(ph)))
			return perr(c, n, path, "placeholder '%s' is not allowed here", name);
		used |= PH_BIT(ph);
	}
	if (ret_used)
		*ret_used |= used;
	return 0;
}

static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool has_space_or_ctl(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && s[i]; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

enum tok_flags {
	TOK_ALLOW_STDIN_MARKER = 1 << 0, /* a lone "-" is allowed */
};

/* One argv token of a list. */
static int check_arg(struct pctx *c, const struct ynode *n, const char *path, unsigned allowed,
		     enum tok_flags flags, unsigned *ret_used)
{
	const char *s = n->str;

	if (!s[0])
		return perr(c, n, path, "an argument must not be empty");
	if (has_ctl(s))
		return perr(c, n, path, "an argument must not contain control characters");
	if (s[0] == '-') {
		const char *eq = strchr(s, '=');
		size_t flen = eq ? (size_t)(eq - s) : strlen(s);

		if (strcmp(s, "-") == 0 && !(flags & TOK_ALLOW_STDIN_MARKER))
			return perr(
				c, n, path,
				"'-' is not a flag (a lone '-' is only the stdin marker of runtime.long_prompt with via: stdin)");
		if (has_space_or_ctl(s, flen))
			return perr(c, n, path, "a flag must not contain whitespace");
		if (memchr(s, '{', flen))
			return perr(c, n, path, "a flag name must not hold a placeholder");
	}
	return check_placeholders(c, n, path, s, allowed, ret_used);
}

/* A flag key (model_flag, prompt_flag, ...): a real flag, literal. */
static int check_flag(struct pctx *c, const struct ynode *n, const char *path)
{
	const char *s = n->str;

	if (!s[0])
		return perr(c, n, path,
			    "must not be empty (leave the key out when there is no such flag)");
	if (s[0] != '-')
		return perr(c, n, path, "must be a flag (start with '-')");
	if (strcmp(s, "-") == 0)
		return perr(c, n, path, "'-' is not a flag");
	if (has_space_or_ctl(s, strlen(s)))
		return perr(c, n, path, "a flag must not contain whitespace");
	return check_placeholders(c, n, path, s, 0, NULL);
}

static bool env_name_valid(const char *s)
{
	size_t i;

	if (!s || !s[0] || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; s[i]; i++) {
		char ch = s[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return false;
	}
	return true;
}

/* ---- building blocks ---- */

static const char *adup(struct pctx *c, const char *s)
{
	return s ? arena_strdup(&c->p->arena, s) : NULL;
}

static const char *const empty_strv[] = {NULL};

/* Copy a checked string list into the arena. */
static void copy_strv(struct pctx *c, const struct ynode *seq, struct profile_strv *ret)
{
	const char **v;
	struct catalog_origin *at;
	size_t i, n = seq ? seq->n : 0;

	if (n == 0) {
		ret->v = empty_strv;
		ret->at = NULL;
		ret->n = 0;
		return;
	}
	v = arena_alloc(&c->p->arena, st_mult(n + 1, sizeof(*v)));
	at = arena_alloc(&c->p->arena, st_mult(n, sizeof(*at)));
	for (i = 0; i < n; i++) {
		v[i] = adup(c, seq->items[i]->str);
		at[i] = at_node(c, seq->items[i]);
	}
	v[n] = NULL;
	ret->v = v;
	ret->at = at;
	ret->n = n;
}

/* A list of argv tokens. */
static int parse_args(struct pctx *c, const struct ynode *map, const char *key, const char *path,
		      unsigned allowed, enum tok_flags flags, struct profile_strv *ret,
		      unsigned *ret_used)
{
	const struct ynode *seq = ynode_get(map, key);
	char kp[160], ip[180];
	size_t i;
	int r;

	yaml_path_key(kp, sizeof(kp), path, key);
	for (i = 0; seq && i < seq->n; i++) {
		yaml_path_index(ip, sizeof(ip), kp, i);
		r = check_arg(c, seq->items[i], ip, allowed, flags, ret_used);
		if (r < 0)
			return r;
	}
	copy_strv(c, seq, ret);
	return 0;
}

struct kv {
	const char *key, *value;
	struct catalog_origin at;
};

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

enum map_keys {
	MAP_KEYS_ENV,	/* environment variable names */
	MAP_KEYS_ALIAS, /* model aliases: any non-blank text */
};

/* A string -> string map (checked: a mapping). Values may hold the
 * placeholders of allowed. */
static int parse_map(struct pctx *c, const struct ynode *node, const char *path, enum map_keys keys,
		     unsigned allowed, struct profile_map *ret)
{
	struct kv *kv;
	const char **k, **v;
	struct catalog_origin *at;
	char kp[200], q[80];
	size_t i, n = node ? node->n : 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->keys = empty_strv;
	ret->values = empty_strv;
	if (n == 0)
		return 0;
	kv = xcalloc(n, sizeof(*kv));
	for (i = 0; i < n; i++) {
		const struct ynode *key = node->keys[i], *val = node->items[i];

		yaml_path_key(kp, sizeof(kp), path, Q(q, key->str));
		if (keys == MAP_KEYS_ENV && !env_name_valid(key->str)) {
			r = perr(
				c, key, kp,
				"invalid environment variable name (expected [A-Za-z_][A-Za-z0-9_]*)");
			goto out;
		}
		if (keys == MAP_KEYS_ALIAS &&
		    (!key->str[0] || has_space_or_ctl(key->str, key->len))) {
			r = perr(c, key, kp, "a model alias must be non-empty, without whitespace");
			goto out;
		}
		if (!yaml_is_str(val)) {
			r = perr(c, val, kp, "expected a string, got %s", ynode_describe(val));
			goto out;
		}
		if (keys == MAP_KEYS_ALIAS && has_space_or_ctl(val->str, val->len)) {
			r = perr(c, val, kp, "a model id must be non-empty, without whitespace");
			goto out;
		}
		if (keys == MAP_KEYS_ALIAS && !val->str[0]) {
			r = perr(c, val, kp, "a model id must be non-empty, without whitespace");
			goto out;
		}
		if (keys == MAP_KEYS_ALIAS && val->str[0] == '-') {
			r = perr(
				c, val, kp,
				"a model id must not start with '-' (the agent would read it as an option)");
			goto out;
		}
		if (has_ctl(val->str)) {
			r = perr(c, val, kp, "a value must not contain control characters");
			goto out;
		}
		r = check_placeholders(c, val, kp, val->str, allowed, NULL);
		if (r < 0)
			goto out;
		kv[i].key = key->str;
		kv[i].value = val->str;
		kv[i].at = at_node(c, val);
	}
	qsort(kv, n, sizeof(*kv), cmp_kv);
	k = arena_alloc(&c->p->arena, st_mult(n + 1, sizeof(*k)));
	v = arena_alloc(&c->p->arena, st_mult(n + 1, sizeof(*v)));
	at = arena_alloc(&c->p->arena, st_mult(n, sizeof(*at)));
	for (i = 0; i < n; i++) {
		k[i] = adup(c, kv[i].key);
		v[i] = adup(c, kv[i].value);
		at[i] = kv[i].at;
	}
	k[n] = v[n] = NULL;
	ret->keys = k;
	ret->values = v;
	ret->at = at;
	ret->n = n;
	r = 0;
out:
	free(kv);
	return r;
}

/* "0600" / "600" -> 0600. A quoted string is required: a plain 0600 is the
 * YAML integer six hundred. */
static int parse_mode(struct pctx *c, const struct ynode *v, const char *path, unsigned *ret)
{
	unsigned m = 0;
	size_t i, n;

	if (!v) {
		*ret = 0600;
		return 0;
	}
	if (v->kind == YNODE_SCALAR && v->plain) {
		int64_t iv;

		if (ynode_int(v, &iv) != -EINVAL)
			return perr(
				c, v, path,
				"expected a quoted octal string such as \"0600\", got an integer");
	}
	if (!yaml_is_str(v))
		return perr(c, v, path, "expected a quoted octal string such as \"0600\", got %s",
			    ynode_describe(v));
	n = v->len;
	if (n < 3 || n > 4 || (n == 4 && v->str[0] != '0'))
		goto bad;
	for (i = 0; i < n; i++) {
		if (v->str[i] < '0' || v->str[i] > '7')
			goto bad;
		m = m * 8 + (unsigned)(v->str[i] - '0');
	}
	if (!(m & 0400))
		return perr(c, v, path, "mode %04o does not let the agent read its own file", m);
	*ret = m;
	return 0;
bad:
	return perr(c, v, path,
		    "invalid mode (expected octal permission bits such as \"0600\", at most 0777)");
}

/* A relative path inside the agent HOME: no leading '/', no empty, '.' or
 * '..' component, no control characters. */
static int check_file_path(struct pctx *c, const struct ynode *v, const char *path)
{
	const char *s = v->str, *p = s;

	if (!s[0])
		return perr(c, v, path, "must not be empty");
	if (s[0] == '/')
		return perr(c, v, path, "must be relative to the agent HOME");
	if (has_ctl(s) || strchr(s, '\\'))
		return perr(c, v, path, "must not contain control characters or backslashes");
	if (strchr(s, '{'))
		return perr(c, v, path, "must be literal (no placeholders)");
	if (strlen(s) > 1024)
		return perr(c, v, path, "too long");
	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return perr(
				c, v, path,
				"must be a plain relative path (no empty, '.' or '..' components)");
		p += n;
		if (*p == '/')
			p++;
		if (e && !*p)
			return perr(c, v, path, "must name a file, not a directory");
	}
	return 0;
}

static const struct yfield file_fields[] = {
	{"path", YT_STR, YF_REQUIRED, NULL, NULL},
	{"mode", YT_ANY, 0, NULL, NULL},
	{"content", YT_STR, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_files(struct pctx *c, const struct ynode *seq, const char *path, unsigned allowed,
		       struct profile_files *ret)
{
	struct profile_file *v;
	char ip[160], kp[180];
	size_t i, j;
	int r;

	ret->v = NULL;
	ret->n = 0;
	if (!seq || seq->n == 0)
		return 0;
	v = arena_alloc(&c->p->arena, st_mult(seq->n, sizeof(*v)));
	for (i = 0; i < seq->n; i++) {
		const struct ynode *f = seq->items[i];

		yaml_path_index(ip, sizeof(ip), path, i);
		r = check_map(c, f, file_fields, ip);
		if (r < 0)
			return r;
		yaml_path_key(kp, sizeof(kp), ip, "path");
		r = check_file_path(c, ynode_get(f, "path"), kp);
		if (r < 0)
			return r;
		for (j = 0; j < i; j++)
			if (strcmp(v[j].path, get_str(f, "path")) == 0)
				return perr(c, ynode_get(f, "path"), kp,
					    "'%s' is already written by item %zu", v[j].path, j);
		yaml_path_key(kp, sizeof(kp), ip, "mode");
		r = parse_mode(c, ynode_get(f, "mode"), kp, &v[i].mode);
		if (r < 0)
			return r;
		yaml_path_key(kp, sizeof(kp), ip, "content");
		r = check_placeholders(c, ynode_get(f, "content"), kp, get_str(f, "content"),
				       allowed, NULL);
		if (r < 0)
			return r;
		v[i].path = adup(c, get_str(f, "path"));
		v[i].content = adup(c, get_str(f, "content"));
		v[i].origin = at_node(c, f);
	}
	ret->v = v;
	ret->n = seq->n;
	return 0;
}

/* ---- sections ---- */

static const struct yfield top_fields[] = {
	{"name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"display_name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"shape", YT_STR, YF_REQUIRED, NULL, NULL},
	{"builtin", YT_BOOL, 0, NULL, NULL},
	{"contract", YT_STR, 0, NULL, NULL},
	{"version_args", YT_STRLIST, 0, NULL, NULL},
	{"invocation", YT_MAP, YF_REQUIRED, NULL, NULL},
	{"strategy", YT_MAP, 0, NULL, NULL},
	{"capabilities", YT_MAP, 0, NULL, NULL},
	{"models", YT_MAP, 0, NULL, NULL},
	{"notes", YT_STR, 0, NULL, NULL},
	{"runtime", YT_MAP, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield invocation_fields[] = {
	{"binary", YT_STR, YF_REQUIRED, NULL, NULL},
	{"subcommands", YT_STRLIST, 0, NULL, NULL},
	{"model_flag", YT_STR, 0, NULL, NULL},
	{"prompt_flag", YT_STR, 0, NULL, NULL},
	{"prompt_file_flag", YT_STR, 0, NULL, NULL},
	{"prompt_positional", YT_BOOL, 0, NULL, NULL},
	{"prompt_guard", YT_STR, 0, NULL, NULL},
	{"extra_args", YT_STRLIST, 0, NULL, NULL},
	{"env_passthrough", YT_STRLIST, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_flag_key(struct pctx *c, const struct ynode *map, const char *key,
			  const char **ret, struct catalog_origin *ret_at)
{
	const struct ynode *v = ynode_get(map, key);
	char kp[64];
	int r;

	*ret = NULL;
	if (!v)
		return 0;
	yaml_path_key(kp, sizeof(kp), "invocation", key);
	r = check_flag(c, v, kp);
	if (r < 0)
		return r;
	*ret = adup(c, v->str);
	*ret_at = at_node(c, v);
	return 0;
}

/* invocation.prompt_guard, the rules that need only the invocation; those
 * that need runtime (long_prompt, the resume position) are in
 * check_prompt_guard(). */
static int parse_prompt_guard(struct pctx *c, const struct ynode *node)
{
	struct profile_invocation *inv = &c->p->invocation;
	const struct ynode *v = ynode_get(node, "prompt_guard");
	int g = PROMPT_GUARD_NONE, r;

	r = get_enum(c, node, "prompt_guard", "invocation.prompt_guard", guard_names,
		     PROMPT_GUARD_NONE, &g);
	if (r < 0)
		return r;
	inv->prompt_guard = (enum prompt_guard)g;
	inv->prompt_guard_at = at_node(c, v ? v : node);
	if (!v || g == PROMPT_GUARD_NONE)
		return 0;
	if (inv->prompt_file_flag)
		return perr(
			c, v, "invocation.prompt_guard",
			"the prompt is always in a file (prompt_file_flag), never on argv: there is nothing to guard");
	if (g == PROMPT_GUARD_SEPARATOR && inv->prompt_flag && strcmp(inv->prompt_flag, "--") == 0)
		return perr(
			c, v, "invocation.prompt_guard",
			"prompt_flag '--' already ends the options: 'separator' would put a second '--' before the prompt");
	if (g == PROMPT_GUARD_GLUED && (!inv->prompt_flag || strcmp(inv->prompt_flag, "--") == 0))
		return perr(
			c, v, "invocation.prompt_guard",
			"'glued' passes PROMPT_FLAG=PROMPT as one token: it needs a prompt_flag (other than '--')");
	return 0;
}

bool profile_prompt_ends_options(const struct profile_invocation *inv)
{
	return inv->prompt_guard == PROMPT_GUARD_SEPARATOR ||
	       (inv->prompt_flag && strcmp(inv->prompt_flag, "--") == 0);
}

/* The prompt guard against runtime: long-prompt needs a long form, and
 * nothing may follow the '--' that ends the options. */
static int check_prompt_guard(struct pctx *c)
{
	const struct profile *p = c->p;
	const struct profile_invocation *inv = &p->invocation;

	if (inv->prompt_guard == PROMPT_GUARD_LONG_PROMPT && !p->runtime.long_prompt.declared)
		return oerr(
			c->reterr, c->file, &inv->prompt_guard_at, "invocation.prompt_guard",
			"'long-prompt' delivers every prompt by runtime.long_prompt, which is not declared");
	if (profile_prompt_ends_options(inv) && p->runtime.resume.declared &&
	    p->runtime.resume.position == RESUME_POSITION_END)
		return oerr(
			c->reterr, c->file, &p->runtime.resume.position_at,
			"runtime.resume.position",
			"'end' puts the resume tokens after the prompt, where the '--' before it has ended the options (use before-prompt or after-subcommands)");
	return 0;
}

/* The prompt goes another way than argv, stdin or a file: in ACP's
 * session/prompt (runtime.acp), or typed into the agent's terminal
 * (runtime.pty). */
static bool prompt_off_argv(const struct pctx *c)
{
	return c->acp || ynode_get(ynode_get(c->doc->root, "runtime"), "pty") != NULL;
}

static int parse_invocation(struct pctx *c, const struct ynode *node)
{
	struct profile_invocation *inv = &c->p->invocation;
	const struct ynode *v, *pos;
	char ip[64], q[80];
	size_t i, j, deliveries;
	int r;

	r = check_map(c, node, invocation_fields, "invocation");
	if (r < 0)
		return r;
	inv->origin = at_node(c, node);
	v = ynode_get(node, "binary");
	if (!v->str[0] || strspn(v->str, " \t") == v->len)
		return perr(c, v, "invocation.binary", "must not be blank");
	if (v->str[0] == '-')
		return perr(c, v, "invocation.binary", "must not start with '-'");
	if (has_space_or_ctl(v->str, v->len))
		return perr(c, v, "invocation.binary", "must not contain whitespace");
	r = check_placeholders(c, v, "invocation.binary", v->str, 0, NULL);
	if (r < 0)
		return r;
	inv->binary = adup(c, v->str);
	inv->binary_at = at_node(c, v);

	v = ynode_get(node, "subcommands");
	for (i = 0; v && i < v->n; i++) {
		const struct ynode *s = v->items[i];

		yaml_path_index(ip, sizeof(ip), "invocation.subcommands", i);
		if (!s->str[0])
			return perr(c, s, ip, "must not be empty");
		if (s->str[0] == '-')
			return perr(
				c, s, ip,
				"a subcommand must not start with '-' (flags go in extra_args)");
		if (has_space_or_ctl(s->str, s->len))
			return perr(c, s, ip, "must not contain whitespace");
		r = check_placeholders(c, s, ip, s->str, 0, NULL);
		if (r < 0)
			return r;
	}
	copy_strv(c, v, &inv->subcommands);

	r = parse_flag_key(c, node, "model_flag", &inv->model_flag, &inv->model_flag_at);
	if (r >= 0)
		r = parse_flag_key(c, node, "prompt_flag", &inv->prompt_flag, &inv->prompt_flag_at);
	if (r >= 0)
		r = parse_flag_key(c, node, "prompt_file_flag", &inv->prompt_file_flag,
				   &inv->prompt_file_flag_at);
	if (r < 0)
		return r;
	inv->prompt_positional = get_bool(node, "prompt_positional", false);
	/* runtime.acp: the prompt goes in session/prompt, argv needs no delivery */
	c->acp = ynode_get(ynode_get(c->doc->root, "runtime"), "acp") != NULL;
	deliveries = (inv->prompt_flag != NULL) + (inv->prompt_file_flag != NULL) +
		     inv->prompt_positional;
	pos = ynode_get(node, "prompt_positional");
	if (deliveries == 0 && !prompt_off_argv(c))
		return perr(
			c, pos ? pos : node, pos ? "invocation.prompt_positional" : "invocation",
			"no way to deliver the prompt: set prompt_flag, prompt_file_flag or prompt_positional: true (or runtime.pty, to type it)");
	if (deliveries > 1)
		return perr(
			c, inv->prompt_positional ? pos : ynode_get(node, "prompt_file_flag"),
			inv->prompt_positional ? "invocation.prompt_positional"
					       : "invocation.prompt_file_flag",
			"the prompt can have only one delivery (prompt_flag, prompt_file_flag or prompt_positional: true)");
	r = parse_prompt_guard(c, node);
	if (r < 0)
		return r;

	r = parse_args(c, node, "extra_args", "invocation", PH_LOCAL, 0, &inv->extra_args, NULL);
	if (r < 0)
		return r;

	v = ynode_get(node, "env_passthrough");
	for (i = 0; v && i < v->n; i++) {
		const struct ynode *s = v->items[i];

		yaml_path_index(ip, sizeof(ip), "invocation.env_passthrough", i);
		if (!env_name_valid(s->str))
			return perr(
				c, s, ip,
				"invalid environment variable name '%s' (expected [A-Za-z_][A-Za-z0-9_]*)",
				Q(q, s->str));
		for (j = 0; j < i; j++)
			if (strcmp(v->items[j]->str, s->str) == 0)
				return perr(c, s, ip, "'%s' is listed twice", Q(q, s->str));
	}
	copy_strv(c, v, &inv->env_passthrough);
	return 0;
}

static const struct yfield strategy_fields[] = {
	{"resume", YT_STR, YF_REQUIRED, NULL, NULL},
	{"dangerous_mode", YT_STR, YF_REQUIRED, NULL, NULL},
	{"event_channel", YT_STR, YF_REQUIRED, NULL, NULL},
	{"output_mode", YT_STR, 0, NULL, NULL},
	{"session_state", YT_STR, 0, NULL, NULL},
	{"note", YT_STR, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_strategy(struct pctx *c, const struct ynode *node)
{
	struct strategy_decl *d = arena_alloc(&c->p->arena, sizeof(*d));
	char kp[64];
	int a, r;

	r = check_map(c, node, strategy_fields, "strategy");
	if (r < 0)
		return r;
	d->strategy = strategy_default;
	d->origin = at_node(c, node);
	for (a = 0; a < _AXIS_MAX; a++) {
		const struct ynode *v = ynode_get(node, axis_name((enum axis)a));
		int val = 0;

		if (!v)
			continue;
		yaml_path_key(kp, sizeof(kp), "strategy", axis_name((enum axis)a));
		r = get_enum(c, node, axis_name((enum axis)a), kp, axis_values((enum axis)a), 0,
			     &val);
		if (r < 0)
			return r;
		(void)axis_set(&d->strategy, (enum axis)a, val);
		d->axis_declared[a] = true;
		d->axis_origin[a] = at_node(c, v);
	}
	d->note = adup(c, get_str(node, "note"));
	c->p->strategy = d;
	c->p->strategy_at = at_node(c, node);
	return 0;
}

/* The boolean capabilities, in the order of the canonical form (sorted). */
static const struct {
	const char *key;
	size_t off;
} cap_bools[] = {
	{"agents_md", offsetof(struct profile_capabilities, agents_md)},
	{"computer_use", offsetof(struct profile_capabilities, computer_use)},
	{"local_models", offsetof(struct profile_capabilities, local_models)},
	{"mcp_client", offsetof(struct profile_capabilities, mcp_client)},
	{"mcp_server", offsetof(struct profile_capabilities, mcp_server)},
	{"native_subagents", offsetof(struct profile_capabilities, native_subagents)},
	{"streaming", offsetof(struct profile_capabilities, streaming)},
	{"supports_endpoint", offsetof(struct profile_capabilities, supports_endpoint)},
	{"supports_max_tokens", offsetof(struct profile_capabilities, supports_max_tokens)},
	{"supports_sampling_params",
	 offsetof(struct profile_capabilities, supports_sampling_params)},
	{"supports_temperature", offsetof(struct profile_capabilities, supports_temperature)},
	{"supports_top_k", offsetof(struct profile_capabilities, supports_top_k)},
	{"supports_top_p", offsetof(struct profile_capabilities, supports_top_p)},
	{"tool_use", offsetof(struct profile_capabilities, tool_use)},
	{"vision", offsetof(struct profile_capabilities, vision)},
};

static bool *cap_bool(struct profile_capabilities *caps, size_t i)
{
	return (bool *)((char *)caps + cap_bools[i].off);
}

static bool cap_bool_get(const struct profile_capabilities *caps, size_t i)
{
	return *(const bool *)((const char *)caps + cap_bools[i].off);
}

static int parse_capabilities(struct pctx *c, const struct ynode *node)
{
	struct profile_capabilities *caps = &c->p->caps;
	struct yfield fields[ARRAY_SIZE(cap_bools) + 3];
	const struct ynode *v;
	int64_t w = 1;
	int sandbox = 0, r;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cap_bools); i++) {
		fields[i].key = cap_bools[i].key;
		fields[i].type = YT_BOOL;
		fields[i].flags = 0;
		fields[i].sub = NULL;
		fields[i].check = NULL;
	}
	fields[i++] = (struct yfield){"sandbox", YT_STR, 0, NULL, NULL};
	fields[i++] = (struct yfield){"max_parallel_workers", YT_INT, 0, NULL, NULL};
	fields[i] = (struct yfield){NULL, 0, 0, NULL, NULL};
	r = check_map(c, node, fields, "capabilities");
	if (r < 0)
		return r;
	for (i = 0; i < ARRAY_SIZE(cap_bools); i++)
		*cap_bool(caps, i) = get_bool(node, cap_bools[i].key, false);
	r = get_enum(c, node, "sandbox", "capabilities.sandbox", sandbox_names, SANDBOX_TIER_NONE,
		     &sandbox);
	if (r < 0)
		return r;
	caps->sandbox = (enum sandbox_tier)sandbox;
	v = ynode_get(node, "max_parallel_workers");
	if (v) {
		(void)ynode_int(v, &w);
		if (w < 1)
			return perr(c, v, "capabilities.max_parallel_workers",
				    "must be at least 1 (got %lld)", (long long)w);
		if (w > PROFILE_MAX_WORKERS)
			return perr(c, v, "capabilities.max_parallel_workers",
				    "must be at most %d (got %lld)", PROFILE_MAX_WORKERS,
				    (long long)w);
	}
	caps->max_parallel_workers = w;
	caps->vision_at = at_node(c, ynode_get(node, "vision") ? ynode_get(node, "vision") : node);
	caps->supports_endpoint_at = at_node(c, ynode_get(node, "supports_endpoint")
							? ynode_get(node, "supports_endpoint")
							: node);
	return 0;
}

/* "{session_id}" as a whole token, exactly once. */
static int check_session_token(struct pctx *c, const struct ynode *seq, const char *path)
{
	size_t i, n = 0;

	for (i = 0; i < seq->n; i++)
		if (strcmp(seq->items[i]->str, "{session_id}") == 0)
			n++;
	if (n != 1)
		return perr(c, seq, path,
			    "must contain the token \"{session_id}\" exactly once (found %zu)", n);
	for (i = 0; i < seq->n; i++)
		if (strcmp(seq->items[i]->str, "{session_id}") != 0 &&
		    strstr(seq->items[i]->str, "{session_id}"))
			return perr(c, seq->items[i], path,
				    "\"{session_id}\" must be a token of its own");
	return 0;
}

static const struct yfield resume_fields[] = {
	{"args", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{"position", YT_STR, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_resume(struct pctx *c, const struct ynode *node)
{
	struct profile_resume *res = &c->p->runtime.resume;
	const struct ynode *args;
	int pos = 0, r;

	r = check_map(c, node, resume_fields, "runtime.resume");
	if (r < 0)
		return r;
	args = ynode_get(node, "args");
	if (args->n == 0)
		return perr(c, args, "runtime.resume.args", "must not be empty");
	r = parse_args(c, node, "args", "runtime.resume", PH_LOCAL | PH_BIT(PH_SESSION_ID), 0,
		       &res->args, NULL);
	if (r < 0)
		return r;
	r = check_session_token(c, args, "runtime.resume.args");
	if (r < 0)
		return r;
	r = get_enum(c, node, "position", "runtime.resume.position", position_names,
		     RESUME_POSITION_BEFORE_PROMPT, &pos);
	if (r < 0)
		return r;
	res->position = (enum resume_position)pos;
	res->position_at =
		at_node(c, ynode_get(node, "position") ? ynode_get(node, "position") : node);
	res->declared = true;
	res->origin = at_node(c, node);
	return 0;
}

static const struct yfield dangerous_fields[] = {
	{"args", YT_STRLIST, 0, NULL, NULL},
	{"env", YT_MAP, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_dangerous(struct pctx *c, const struct ynode *node)
{
	struct profile_dangerous *d = &c->p->runtime.dangerous;
	int r;

	r = check_map(c, node, dangerous_fields, "runtime.dangerous");
	if (r < 0)
		return r;
	r = parse_args(c, node, "args", "runtime.dangerous", PH_LOCAL, 0, &d->args, NULL);
	if (r < 0)
		return r;
	r = parse_map(c, ynode_get(node, "env"), "runtime.dangerous.env", MAP_KEYS_ENV, PH_RUN,
		      &d->env);
	if (r < 0)
		return r;
	d->declared = true;
	d->origin = at_node(c, node);
	return 0;
}

static const struct yfield session_id_fields[] = {
	{"args", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{"format", YT_STR, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_session_id(struct pctx *c, const struct ynode *node)
{
	struct profile_session_id *s = &c->p->runtime.session_id;
	const struct ynode *args;
	int fmt = 0, r;

	r = check_map(c, node, session_id_fields, "runtime.session_id");
	if (r < 0)
		return r;
	args = ynode_get(node, "args");
	if (args->n == 0)
		return perr(c, args, "runtime.session_id.args", "must not be empty");
	r = parse_args(c, node, "args", "runtime.session_id", PH_LOCAL | PH_BIT(PH_SESSION_ID), 0,
		       &s->args, NULL);
	if (r < 0)
		return r;
	if (args->items[0]->str[0] != '-')
		return perr(c, args->items[0], "runtime.session_id.args[0]",
			    "must be the flag that takes the session id");
	r = check_session_token(c, args, "runtime.session_id.args");
	if (r < 0)
		return r;
	r = get_enum(c, node, "format", "runtime.session_id.format", format_names,
		     SESSION_ID_FORMAT_UUID, &fmt);
	if (r < 0)
		return r;
	s->format = (enum session_id_format)fmt;
	s->declared = true;
	s->origin = at_node(c, node);
	return 0;
}

static const struct yfield long_prompt_fields[] = {
	{"via", YT_STR, YF_REQUIRED, NULL, NULL},
	{"args", YT_STRLIST, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_long_prompt(struct pctx *c, const struct ynode *node)
{
	struct profile_long_prompt *lp = &c->p->runtime.long_prompt;
	unsigned used = 0;
	int via = 0, r;

	r = check_map(c, node, long_prompt_fields, "runtime.long_prompt");
	if (r < 0)
		return r;
	if (c->p->invocation.prompt_file_flag)
		return perr(
			c, node, "runtime.long_prompt",
			"the prompt is always delivered in a file (invocation.prompt_file_flag): there is no long form");
	r = get_enum(c, node, "via", "runtime.long_prompt.via", via_names, 0, &via);
	if (r < 0)
		return r;
	lp->via = (enum prompt_via)via;
	r = parse_args(c, node, "args", "runtime.long_prompt", PH_LOCAL | PH_BIT(PH_PROMPT_FILE),
		       via == PROMPT_VIA_STDIN ? TOK_ALLOW_STDIN_MARKER : 0, &lp->args, &used);
	if (r < 0)
		return r;
	if (via == PROMPT_VIA_FILE && !(used & PH_BIT(PH_PROMPT_FILE)))
		return perr(
			c, ynode_get(node, "args") ? ynode_get(node, "args") : node,
			"runtime.long_prompt.args",
			"via: file needs \"{prompt_file}\" in the args (the path of the file holding the prompt)");
	if (via == PROMPT_VIA_STDIN && (used & PH_BIT(PH_PROMPT_FILE)))
		return perr(c, ynode_get(node, "args"), "runtime.long_prompt.args",
			    "\"{prompt_file}\" is only available with via: file");
	lp->declared = true;
	lp->origin = at_node(c, node);
	return 0;
}

static const struct yfield events_fields[] = {
	{"dialect", YT_STR, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield endpoint_fields[] = {
	{"model", YT_STR, 0, NULL, NULL},    {"default_model", YT_STR, 0, NULL, NULL},
	{"args", YT_STRLIST, 0, NULL, NULL}, {"env", YT_MAP, 0, NULL, NULL},
	{"files", YT_SEQ, 0, NULL, NULL},    {NULL, 0, 0, NULL, NULL},
};

static int parse_endpoint(struct pctx *c, const struct ynode *node)
{
	struct profile_endpoint *e = &c->p->runtime.endpoint;
	const struct ynode *m;
	unsigned used = 0;
	int r;

	r = check_map(c, node, endpoint_fields, "runtime.endpoint");
	if (r < 0)
		return r;
	if (!c->p->caps.supports_endpoint)
		return perr(c, node, "runtime.endpoint",
			    "requires capabilities.supports_endpoint: true");
	m = ynode_get(node, "model");
	if (m) {
		if (has_space_or_ctl(m->str, m->len) || !m->str[0])
			return perr(c, m, "runtime.endpoint.model",
				    "must be a non-empty model spelling without whitespace");
		if (m->str[0] == '-')
			return perr(
				c, m, "runtime.endpoint.model",
				"must not start with '-' (the agent would read the model as an option)");
		r = check_placeholders(c, m, "runtime.endpoint.model", m->str, PH_BIT(PH_MODEL),
				       &used);
		if (r < 0)
			return r;
		if (!(used & PH_BIT(PH_MODEL)))
			return perr(c, m, "runtime.endpoint.model", "must contain \"{model}\"");
	}
	e->model = m ? adup(c, m->str) : "{model}";
	m = ynode_get(node, "default_model");
	if (m) {
		size_t i;

		if (!m->str[0] || m->str[0] == '-')
			return perr(c, m, "runtime.endpoint.default_model",
				    "must be a model id (not empty, not starting with '-')");
		for (i = 0; i < m->len; i++) {
			unsigned char ch = (unsigned char)m->str[i];

			if (ch <= 0x20 || ch >= 0x7f || strchr("\"'\\{}`$<>", ch))
				return perr(
					c, m, "runtime.endpoint.default_model",
					"must be printable ASCII without blanks, quotes, backslashes, braces or any of `$<> (it is written into config files)");
		}
		e->default_model = adup(c, m->str);
	}
	r = parse_args(c, node, "args", "runtime.endpoint", PH_ENDPOINT, 0, &e->args, NULL);
	if (r < 0)
		return r;
	r = parse_map(c, ynode_get(node, "env"), "runtime.endpoint.env", MAP_KEYS_ENV,
		      PH_ENDPOINT | PH_BIT(PH_API_KEY), &e->env);
	if (r < 0)
		return r;
	r = parse_files(c, ynode_get(node, "files"), "runtime.endpoint.files", PH_ENDPOINT,
			&e->files);
	if (r < 0)
		return r;
	if (e->args.n == 0 && e->env.n == 0 && e->files.n == 0)
		return perr(
			c, node, "runtime.endpoint",
			"declares nothing: give args, env or files that point the agent at {base_url}");
	e->declared = true;
	e->origin = at_node(c, node);
	return 0;
}

static bool mentions_hook(const char *s)
{
	return strstr(s, "{hook_command}") || strstr(s, "{hooks_socket}");
}

static const struct yfield hooks_fields[] = {
	{"args", YT_STRLIST, 0, NULL, NULL},
	{"env", YT_MAP, 0, NULL, NULL},
	{"files", YT_SEQ, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_hooks(struct pctx *c, const struct ynode *node)
{
	struct profile_hooks *h = &c->p->runtime.hooks;
	const struct profile_files *ep = &c->p->runtime.endpoint.files;
	bool reaches = false;
	size_t i, j;
	int r;

	r = check_map(c, node, hooks_fields, "runtime.hooks");
	if (r < 0)
		return r;
	r = parse_args(c, node, "args", "runtime.hooks", PH_HOOKS, 0, &h->args, NULL);
	if (r < 0)
		return r;
	r = parse_map(c, ynode_get(node, "env"), "runtime.hooks.env", MAP_KEYS_ENV, PH_HOOKS,
		      &h->env);
	if (r < 0)
		return r;
	r = parse_files(c, ynode_get(node, "files"), "runtime.hooks.files", PH_HOOKS, &h->files);
	if (r < 0)
		return r;
	if (h->args.n == 0 && h->env.n == 0 && h->files.n == 0)
		return perr(
			c, node, "runtime.hooks",
			"declares nothing: give args, env or files that make the agent run {hook_command}");
	for (i = 0; i < h->args.n; i++)
		reaches |= mentions_hook(h->args.v[i]);
	for (i = 0; i < h->env.n; i++)
		reaches |= mentions_hook(h->env.values[i]);
	for (i = 0; i < h->files.n; i++)
		reaches |= mentions_hook(h->files.v[i].content);
	if (!reaches)
		return perr(
			c, node, "runtime.hooks",
			"never uses {hook_command} or {hooks_socket}: the agent's hooks would not reach bernstein");
	for (i = 0; i < h->files.n; i++)
		for (j = 0; j < ep->n; j++)
			if (strcmp(h->files.v[i].path, ep->v[j].path) == 0) {
				char ip[64];

				yaml_path_index(ip, sizeof(ip), "runtime.hooks.files", i);
				return oerr(
					c->reterr, c->file, &h->files.v[i].origin, ip,
					"'%s' is also a runtime.endpoint file: one file cannot be both",
					h->files.v[i].path);
			}
	h->declared = true;
	h->origin = at_node(c, node);
	return 0;
}

/* ---- runtime.mcp ---- */

static int check_path_list(struct pctx *c, const struct ynode *seq, const char *key, bool login);

static const struct yfield mcp_fields[] = {
	{"format", YT_STR, YF_REQUIRED, NULL, NULL},
	{"file", YT_STR, 0, NULL, NULL},
	{"remove", YT_STRLIST, 0, NULL, NULL},
	{"args", YT_STRLIST, 0, NULL, NULL},
	{"env", YT_MAP, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const char *const mcp_format_names[] = {"claude", "gemini", "opencode", "codex", NULL};

static int parse_mcp(struct pctx *c, const struct ynode *node)
{
	struct profile_mcp *m = &c->p->runtime.mcp;
	const struct profile_runtime *rt = &c->p->runtime;
	const struct ynode *f;
	unsigned used = 0;
	int format = 0, r;
	size_t i;

	r = check_map(c, node, mcp_fields, "runtime.mcp");
	if (r < 0)
		return r;
	r = get_enum(c, node, "format", "runtime.mcp.format", mcp_format_names, 0, &format);
	if (r < 0)
		return r;
	m->format = (enum mcp_format)format;
	r = parse_args(c, node, "args", "runtime.mcp", PH_MCP, 0, &m->args, &used);
	if (r < 0)
		return r;
	r = parse_map(c, ynode_get(node, "env"), "runtime.mcp.env", MAP_KEYS_ENV, PH_MCP, &m->env);
	if (r < 0)
		return r;
	for (i = 0; i < m->env.n && r == 0; i++)
		r = check_placeholders(c, node, "runtime.mcp.env", m->env.values[i], PH_MCP, &used);
	if (r < 0)
		return r;
	if ((f = ynode_get(node, "remove"))) {
		r = check_path_list(c, f, "runtime.mcp.remove", true);
		if (r < 0)
			return r;
		if (f->n && c->p->runtime.home != AGENT_HOME_ISOLATED)
			return perr(
				c, f, "runtime.mcp.remove",
				"files are removed from a private agent HOME only: set runtime.home: isolated");
		copy_strv(c, f, &m->remove);
	}
	f = ynode_get(node, "file");
	if (f) {
		bool found = false;

		for (i = 0; i < rt->files.n; i++)
			found |= strcmp(rt->files.v[i].path, f->str) == 0;
		for (i = 0; i < rt->endpoint.files.n; i++)
			found |= strcmp(rt->endpoint.files.v[i].path, f->str) == 0;
		if (!found)
			return perr(
				c, f, "runtime.mcp.file",
				"'%s' is not a runtime.files (or runtime.endpoint.files) path: the servers merge into the agent's own file",
				f->str);
		m->file = adup(c, f->str);
	} else if (!(used & PH_BIT(PH_MCP_CONFIG))) {
		return perr(
			c, node, "runtime.mcp",
			"never uses {mcp_config}: give args or env that point the agent at the rendered file, or a file to merge into");
	}
	m->declared = true;
	m->origin = at_node(c, node);
	return 0;
}

/* ---- runtime.sandbox ---- */

static const struct yfield sandbox_fields[] = {
	{"tiers", YT_STRLIST, 0, NULL, NULL},
	{"read", YT_STRLIST, 0, NULL, NULL},
	{"hosts", YT_STRLIST, 0, NULL, NULL},
	{"login", YT_STRLIST, 0, NULL, NULL}, /* moved to runtime.login: refused by name */
	{NULL, 0, 0, NULL, NULL},
};

/* A path of runtime.sandbox: read (absolute, or "~/REL" in the user's
 * HOME) or login (relative to HOME). Components must be plain names: no
 * empty, "." or ".." component, no control character, no placeholder. */
static int check_sandbox_path(struct pctx *c, const struct ynode *n, const char *path, bool login)
{
	const char *s = n->str, *rel = s, *p;

	if (has_ctl(s))
		return perr(c, n, path, "a path must not contain control characters");
	if (login) {
		if (s[0] == '/' || s[0] == '~')
			return perr(c, n, path,
				    "a login file is relative to the HOME (e.g. .codex/auth.json)");
	} else if (s[0] == '/') {
		rel = s + 1;
	} else if (s[0] == '~' && s[1] == '/') {
		rel = s + 2;
	} else {
		return perr(c, n, path, "a read path is absolute or starts with '~/' (the HOME)");
	}
	if (!rel[0])
		return perr(c, n, path, "must name something below %s",
			    login || s[0] == '~' ? "the HOME" : "'/'");
	for (p = rel; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == 0 || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.'))
			return perr(c, n, path,
				    "every component must be a name (no empty, '.' or '..' one)");
		p += len;
		if (*p == '/')
			p++;
		if (e && !*p)
			return perr(c, n, path, "must not end in '/'");
	}
	if (strchr(s, '{'))
		return perr(c, n, path, "a path takes no placeholder");
	return 0;
}

/* Each path of seq (runtime.sandbox.read or runtime.login) checked, and
 * none listed twice. */
static int check_path_list(struct pctx *c, const struct ynode *seq, const char *key, bool login)
{
	char ip[160], q[80];
	size_t i, k;
	int r;

	for (i = 0; seq && i < seq->n; i++) {
		yaml_path_index(ip, sizeof(ip), key, i);
		r = check_sandbox_path(c, seq->items[i], ip, login);
		if (r < 0)
			return r;
		for (k = 0; k < i; k++)
			if (strcmp(seq->items[k]->str, seq->items[i]->str) == 0)
				return perr(c, seq->items[i], ip, "'%s' is listed twice",
					    Q(q, seq->items[i]->str));
	}
	return 0;
}

/* runtime.sandbox.hosts: each "HOST" (port 443) or "HOST:PORT" ("[V6]:PORT"),
 * a DNS name or an address as netproxy_addr_parse() takes it, none twice;
 * stored as netproxy_addr_format() spells it. */
static int parse_hosts(struct pctx *c, const struct ynode *seq, struct profile_strv *ret)
{
	char ip[160], q[80], buf[NETPROXY_HOST_MAX + 16], s[NETPROXY_HOST_MAX + 16];
	const char **v;
	size_t i, k, n = seq ? seq->n : 0;

	copy_strv(c, seq, ret); /* the positions; the spellings follow */
	if (!n)
		return 0;
	v = arena_alloc(&c->p->arena, st_mult(n + 1, sizeof(*v)));
	v[n] = NULL;
	for (i = 0; i < n; i++) {
		const struct ynode *h = seq->items[i];
		bool port = strchr(h->str, ':') && (h->str[0] != '[' || strstr(h->str, "]:"));
		struct netproxy_addr a;

		yaml_path_index(ip, sizeof(ip), "runtime.sandbox.hosts", i);
		if (has_ctl(h->str) || !h->str[0] || strlen(h->str) > NETPROXY_HOST_MAX + 8)
			return perr(c, h, ip, "'%s' is not a host name", Q(q, h->str));
		(void)snprintf(s, sizeof(s), port ? "%s" : "%s:443", h->str);
		if (netproxy_addr_parse(s, strlen(s), &a) < 0)
			return perr(
				c, h, ip,
				"'%s' is not HOST or HOST:PORT (a DNS name or an IP address, a port 1..65535)",
				Q(q, h->str));
		v[i] = adup(c, netproxy_addr_format(&a, buf, sizeof(buf)));
		for (k = 0; k < i; k++)
			if (strcmp(v[k], v[i]) == 0)
				return perr(c, h, ip, "'%s' is listed twice", Q(q, h->str));
	}
	ret->v = v;
	return 0;
}

static int parse_login(struct pctx *c, const struct ynode *node)
{
	struct profile_runtime *rt = &c->p->runtime;
	const struct ynode *seq = ynode_get(node, "login");
	int r;

	if (!seq)
		return 0;
	r = check_path_list(c, seq, "runtime.login", true);
	if (r < 0)
		return r;
	if (seq->n && rt->home != AGENT_HOME_ISOLATED)
		return perr(
			c, seq, "runtime.login",
			"login files are made to appear in a private agent HOME (the user's own HOME has them already): set runtime.home: isolated");
	copy_strv(c, seq, &rt->login);
	rt->login_declared = true;
	return 0;
}

static int parse_sandbox(struct pctx *c, const struct ynode *node)
{
	struct profile_sandbox *sb = &c->p->runtime.sandbox;
	const struct ynode *seq;
	char ip[160], q[80];
	size_t i;
	int r;

	r = check_map(c, node, sandbox_fields, "runtime.sandbox");
	if (r < 0)
		return r;
	seq = ynode_get(node, "tiers");
	for (i = 0; seq && i < seq->n; i++) {
		const struct ynode *t = seq->items[i];
		enum sandbox_kind k = sandbox_kind_from_string(t->str);

		yaml_path_index(ip, sizeof(ip), "runtime.sandbox.tiers", i);
		if (k < 0 || k == SANDBOX_KIND_NONE)
			return perr(
				c, t, ip,
				"unknown tier '%s' (expected one of: landlock, bwrap, container; none needs no declaration)",
				Q(q, t->str));
		if (sb->tiers & (1u << k))
			return perr(c, t, ip, "'%s' is listed twice", t->str);
		sb->tiers |= 1u << k;
	}
	if (ynode_get(node, "login"))
		return perr(
			c, ynode_get(node, "login"), "runtime.sandbox.login",
			"login files moved to runtime.login (they matter without a sandbox too)");
	seq = ynode_get(node, "read");
	r = check_path_list(c, seq, "runtime.sandbox.read", false);
	if (r < 0)
		return r;
	copy_strv(c, seq, &sb->read);
	r = parse_hosts(c, ynode_get(node, "hosts"), &sb->hosts);
	if (r < 0)
		return r;
	sb->declared = true;
	sb->origin = at_node(c, node);
	return 0;
}

/* runtime.sandbox and runtime.login: what the agent may reach of the host */
static int parse_access(struct pctx *c, const struct ynode *node)
{
	const struct ynode *v = ynode_get(node, "sandbox");
	int r = v ? parse_sandbox(c, v) : 0;

	return r < 0 ? r : parse_login(c, node);
}

/* ---- runtime.pty (event channel poll-pty in a terminal; proc/ptydrive.h) ---- */

static const struct yfield pty_fields[] = {
	{"rows", YT_INT, 0, NULL, NULL},
	{"cols", YT_INT, 0, NULL, NULL},
	{"term", YT_STR, 0, NULL, NULL},
	{"ready", YT_STR, 0, NULL, NULL},
	{"working", YT_STR, 0, NULL, NULL},
	{"done", YT_STR, 0, NULL, NULL},
	{"ignore", YT_STRLIST, 0, NULL, NULL},
	{"permission", YT_SEQ, 0, NULL, NULL},
	{"idle_done_ms", YT_INT, 0, NULL, NULL},
	{"paste", YT_BOOL, 0, NULL, NULL},
	{"submit", YT_STR, 0, NULL, NULL},
	{"submit_delay_ms", YT_INT, 0, NULL, NULL},
	{"exit", YT_STR, 0, NULL, NULL},
	{"exit_wait_ms", YT_INT, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield acp_fields[] = {
	{"args", YT_STRLIST, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

/* runtime.acp: {args: [--acp]}, the tokens that start the agent's ACP mode. */
static int parse_acp(struct pctx *c, const struct ynode *node)
{
	struct profile_acp *a = &c->p->runtime.acp;
	int r;

	r = check_map(c, node, acp_fields, "runtime.acp");
	if (r < 0)
		return r;
	r = parse_args(c, node, "args", "runtime.acp", PH_LOCAL, 0, &a->args, NULL);
	if (r < 0)
		return r;
	a->declared = true;
	a->origin = at_node(c, node);
	return 0;
}

static const struct yfield pty_perm_fields[] = {
	{"pattern", YT_STR, YF_REQUIRED, NULL, NULL},
	{"allow", YT_STR, YF_REQUIRED, NULL, NULL},
	{"deny", YT_STR, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int pty_int(struct pctx *c, const struct ynode *node, const char *key, int64_t min,
		   int64_t max, uint64_t *ret)
{
	const struct ynode *v = ynode_get(node, key);
	char path[48];
	int64_t x;
	int r;

	if (!v)
		return 0;
	(void)snprintf(path, sizeof(path), "runtime.pty.%s", key);
	r = yaml_value_int(c->doc, v, path, min, max, &x, c->reterr);
	if (r < 0)
		return r;
	*ret = (uint64_t)x;
	return 0;
}

static const char *pty_str(struct pctx *c, const struct ynode *node, const char *key)
{
	const char *s = get_str(node, key);

	return s ? adup(c, s) : NULL;
}

static int parse_pty(struct pctx *c, const struct ynode *node)
{
	struct ptydrive_conf *pc = &c->p->runtime.pty;
	const struct ynode *v;
	uint64_t rows = 0, cols = 0;
	struct diag d = {0};
	size_t i;
	int r;

	r = check_map(c, node, pty_fields, "runtime.pty");
	if (r < 0)
		return r;
	if ((r = pty_int(c, node, "rows", PTYDRIVE_MIN_SIZE, PTYDRIVE_MAX_SIZE, &rows)) < 0 ||
	    (r = pty_int(c, node, "cols", PTYDRIVE_MIN_SIZE, PTYDRIVE_MAX_SIZE, &cols)) < 0 ||
	    (r = pty_int(c, node, "idle_done_ms", 100, 600000, &pc->idle_done_ms)) < 0 ||
	    (r = pty_int(c, node, "submit_delay_ms", 1, 60000, &pc->submit_delay_ms)) < 0 ||
	    (r = pty_int(c, node, "exit_wait_ms", 1, 600000, &pc->exit_wait_ms)) < 0)
		return r;
	pc->rows = (unsigned)rows;
	pc->cols = (unsigned)cols;
	pc->term = pty_str(c, node, "term");
	if (pc->term &&
	    (!pc->term[0] ||
	     strspn(pc->term, "abcdefghijklmnopqrstuvwxyz0123456789-+._") != strlen(pc->term)))
		return perr(c, ynode_get(node, "term"), "runtime.pty.term",
			    "'%s' is not a terminal name (letters, digits, '-', '+', '.', '_')",
			    pc->term);
	pc->ready = pty_str(c, node, "ready");
	pc->working = pty_str(c, node, "working");
	pc->done = pty_str(c, node, "done");
	pc->submit = pty_str(c, node, "submit");
	pc->exit_keys = pty_str(c, node, "exit");
	pc->paste = get_bool(node, "paste", false);
	if (pc->submit && !pc->submit[0])
		return perr(c, ynode_get(node, "submit"), "runtime.pty.submit",
			    "must not be empty");
	if ((v = ynode_get(node, "ignore"))) {
		if (v->n > PTYDRIVE_MAX_IGNORE)
			return perr(c, v, "runtime.pty.ignore", "at most %d patterns",
				    PTYDRIVE_MAX_IGNORE);
		for (i = 0; i < v->n; i++)
			pc->ignore[i] = adup(c, v->items[i]->str);
		pc->n_ignore = v->n;
	}
	if ((v = ynode_get(node, "permission"))) {
		if (v->n > PTYDRIVE_MAX_PERMS)
			return perr(c, v, "runtime.pty.permission", "at most %d prompts",
				    PTYDRIVE_MAX_PERMS);
		for (i = 0; i < v->n; i++) {
			char ip[48];

			yaml_path_index(ip, sizeof(ip), "runtime.pty.permission", i);
			if (v->items[i]->kind != YNODE_MAP)
				return perr(c, v->items[i], ip,
					    "expected a mapping of pattern, allow and deny");
			r = check_map(c, v->items[i], pty_perm_fields, ip);
			if (r < 0)
				return r;
			pc->perms[i].pattern = pty_str(c, v->items[i], "pattern");
			pc->perms[i].allow = pty_str(c, v->items[i], "allow");
			pc->perms[i].deny = pty_str(c, v->items[i], "deny");
		}
		pc->n_perms = v->n;
	}
	if (!pc->ready && !pc->done && !pc->working)
		return perr(c, node, "runtime.pty",
			    "declares no pattern: give at least one of ready, working, done");
	/* the patterns compiled (regcomp) only to check them; the pty driver
	 * compiles them again when it runs */
	r = ptydrive_conf_check(pc, &d);
	if (r < 0)
		return perr(c, node, "runtime.pty", "%s", d.msg);
	pc->declared = true;
	return 0;
}

/* How the agent is pointed and reached, in this order (hooks and mcp check
 * their files against the endpoint's): runtime.endpoint, runtime.hooks,
 * runtime.mcp (its MCP servers), runtime.acp (the acp event channel) and
 * runtime.pty (poll-pty in a terminal). */
static int parse_channels(struct pctx *c, const struct ynode *node)
{
	const struct ynode *v;
	int r;

	if ((v = ynode_get(node, "endpoint")) && (r = parse_endpoint(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "hooks")) && (r = parse_hooks(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "mcp")) && (r = parse_mcp(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "acp")) && (r = parse_acp(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "pty")) && (r = parse_pty(c, v)) < 0)
		return r;
	return 0;
}

/* clang-format off */
static const struct yfield runtime_fields[] = {
	{"resume", YT_MAP, 0, NULL, NULL},
	{"dangerous", YT_MAP, 0, NULL, NULL},
	{"session_id", YT_MAP, 0, NULL, NULL},
	{"long_prompt", YT_MAP, 0, NULL, NULL},
	{"events", YT_MAP, 0, NULL, NULL},
	{"env", YT_MAP, 0, NULL, NULL},
	{"home", YT_STR, 0, NULL, NULL},
	{"files", YT_SEQ, 0, NULL, NULL},
	{"endpoint", YT_MAP, 0, NULL, NULL},
	{"hooks", YT_MAP, 0, NULL, NULL},
	{"mcp", YT_MAP, 0, NULL, NULL},
	{"git_dir", YT_STR, 0, NULL, NULL}, /* refused | allowed (module agents) */
	{"sandbox", YT_MAP, 0, NULL, NULL},
	{"login", YT_STRLIST, 0, NULL, NULL},
	{"acp", YT_MAP, 0, NULL, NULL},
	{"pty", YT_MAP, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};
/* clang-format on */

/* runtime.events: the dialect bernstein reads the agent's output in. */
static int parse_events(struct pctx *c, const struct ynode *v)
{
	struct profile_runtime *rt = &c->p->runtime;
	int dialect = 0, r;

	r = check_map(c, v, events_fields, "runtime.events");
	if (r < 0)
		return r;
	r = get_enum(c, v, "dialect", "runtime.events.dialect", dialect_names, 0, &dialect);
	if (r < 0)
		return r;
	rt->dialect = (enum event_dialect)dialect;
	rt->dialect_declared = true;
	rt->events_at = at_node(c, ynode_get(v, "dialect"));
	return 0;
}

/* How the agent is driven, in this order: runtime.resume, runtime.dangerous,
 * runtime.session_id, runtime.long_prompt and runtime.events. */
static int parse_driving(struct pctx *c, const struct ynode *node)
{
	const struct ynode *v;
	int r;

	if ((v = ynode_get(node, "resume")) && (r = parse_resume(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "dangerous")) && (r = parse_dangerous(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "session_id")) && (r = parse_session_id(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "long_prompt")) && (r = parse_long_prompt(c, v)) < 0)
		return r;
	if ((v = ynode_get(node, "events")) && (r = parse_events(c, v)) < 0)
		return r;
	return 0;
}

/* runtime.env, runtime.home and runtime.files: the agent's environment. */
static int parse_environment(struct pctx *c, const struct ynode *node)
{
	struct profile_runtime *rt = &c->p->runtime;
	int home = 0, r;

	r = parse_map(c, ynode_get(node, "env"), "runtime.env", MAP_KEYS_ENV, PH_RUN, &rt->env);
	if (r < 0)
		return r;
	r = get_enum(c, node, "home", "runtime.home", home_names, AGENT_HOME_INHERIT, &home);
	if (r < 0)
		return r;
	rt->home = (enum agent_home)home;
	rt->home_at = at_node(c, ynode_get(node, "home") ? ynode_get(node, "home") : node);
	return parse_files(c, ynode_get(node, "files"), "runtime.files", PH_RUN, &rt->files);
}

/* runtime.git_dir: only a module agent (bernstein's own file tools) may
 * have it 'allowed'. */
static int parse_git_dir(struct pctx *c, const struct ynode *node)
{
	struct profile_runtime *rt = &c->p->runtime;
	const struct ynode *v;
	int git_dir = 0, r;

	r = get_enum(c, node, "git_dir", "runtime.git_dir", git_dir_names, GIT_DIR_REFUSED,
		     &git_dir);
	if (r < 0)
		return r;
	rt->git_dir = (enum git_dir_access)git_dir;
	v = ynode_get(node, "git_dir");
	rt->git_dir_at = at_node(c, v ? v : node);
	if (rt->git_dir == GIT_DIR_ALLOWED && c->p->shape != PROFILE_SHAPE_MODULE)
		return perr(
			c, v, "runtime.git_dir",
			"'allowed' lifts a refusal of bernstein's own file tools (the openai_agents runner, mock): a factory agent's tools are its own, so it would promise nothing");
	return 0;
}

/* Files (runtime.files, runtime.endpoint.files, runtime.hooks.files) are
 * written only into an isolated HOME; the error names the first declared. */
static int check_files_home(struct pctx *c, const struct ynode *node)
{
	const struct profile_runtime *rt = &c->p->runtime;
	const struct ynode *f = ynode_get(node, "files");
	const char *path = "runtime.files";

	if (!(rt->files.n || rt->endpoint.files.n || rt->hooks.files.n) ||
	    rt->home == AGENT_HOME_ISOLATED)
		return 0;
	if (!f || f->n == 0) {
		f = ynode_get(ynode_get(node, "endpoint"), "files");
		path = "runtime.endpoint.files";
	}
	if (!f || f->n == 0) {
		f = ynode_get(ynode_get(node, "hooks"), "files");
		path = "runtime.hooks.files";
	}
	return perr(
		c, f, path,
		"files are written into a private agent HOME, never the user's: set runtime.home: isolated");
}

static int parse_runtime(struct pctx *c, const struct ynode *node)
{
	int r;

	r = check_map(c, node, runtime_fields, "runtime");
	if (r < 0)
		return r;
	c->p->runtime.origin = at_node(c, node);
	if ((r = parse_driving(c, node)) < 0 || (r = parse_environment(c, node)) < 0 ||
	    (r = parse_channels(c, node)) < 0 || (r = parse_git_dir(c, node)) < 0 ||
	    (r = parse_access(c, node)) < 0)
		return r;
	return check_files_home(c, node);
}

/* ---- the whole profile ---- */

/* name (which must match the file's stem when it has one) and
 * display_name. */
static int parse_names(struct pctx *c, const char *stem)
{
	const struct ynode *root = c->doc->root, *v;
	struct profile *p = c->p;
	char q[80], q2[80];

	v = ynode_get(root, "name");
	p->origin = at_node(c, v);
	if (!profile_name_valid(v->str))
		return perr(
			c, v, "name",
			"invalid profile name '%s' (expected [a-z][a-z0-9_]*, at most %d bytes)",
			Q(q, v->str), PROFILE_MAX_NAME);
	if (stem && strcmp(stem, v->str) != 0)
		return perr(
			c, v, "name",
			"'%s' does not match the file name '%s.yaml' (a profile is stored as profiles/NAME.yaml)",
			Q(q, v->str), Q(q2, stem));
	p->name = adup(c, v->str);

	v = ynode_get(root, "display_name");
	if (strspn(v->str, " \t") == v->len)
		return perr(c, v, "display_name", "must not be blank");
	if (has_ctl(v->str))
		return perr(c, v, "display_name", "must not contain control characters");
	p->display_name = adup(c, v->str);
	return 0;
}

/* shape and builtin (a built-in adapter is a module). */
static int parse_shape(struct pctx *c)
{
	const struct ynode *root = c->doc->root, *v;
	struct profile *p = c->p;
	int shape = 0, r;

	r = get_enum(c, root, "shape", "shape", shape_names, 0, &shape);
	if (r < 0)
		return r;
	p->shape = (enum profile_shape)shape;
	p->shape_at = at_node(c, ynode_get(root, "shape"));

	p->builtin = get_bool(root, "builtin", false);
	v = ynode_get(root, "builtin");
	p->builtin_at = at_node(c, v ? v : root);
	if (p->builtin && p->shape != PROFILE_SHAPE_MODULE)
		return perr(
			c, v, "builtin",
			"a built-in adapter is served by a bernstein module: shape must be 'module'");
	return 0;
}

/* contract: the declared one, or the profile's own name. */
static int parse_contract(struct pctx *c)
{
	const struct ynode *v = ynode_get(c->doc->root, "contract");
	struct profile *p = c->p;
	char q[80];

	if (v) {
		if (!contract_name_valid(v->str))
			return perr(c, v, "contract",
				    "invalid contract name '%s' (expected [a-z0-9][a-z0-9_-]*)",
				    Q(q, v->str));
		p->contract = adup(c, v->str);
		p->contract_declared = true;
		p->contract_at = at_node(c, v);
	} else {
		p->contract = p->name;
		p->contract_at = p->origin;
	}
	return 0;
}

/* version_args: declared, [--version] by default, none for a built-in. */
static int parse_version_args(struct pctx *c)
{
	const struct ynode *v = ynode_get(c->doc->root, "version_args");
	struct profile *p = c->p;
	const char **va;
	size_t i;
	int r;

	if (!v) {
		static const char *const dflt[] = {"--version", NULL};

		if (!p->builtin)
			p->version_args = dflt;
		return 0;
	}
	if (p->builtin)
		return perr(c, v, "version_args",
			    "a built-in adapter has no binary to ask for its version");
	if (v->n == 0)
		return perr(c, v, "version_args",
			    "must not be empty (leave the key out for [--version])");
	va = arena_alloc(&p->arena, st_mult(v->n + 1, sizeof(*va)));
	for (i = 0; i < v->n; i++) {
		char ip[40];

		yaml_path_index(ip, sizeof(ip), "version_args", i);
		r = check_arg(c, v->items[i], ip, 0, 0, NULL);
		if (r < 0)
			return r;
		va[i] = adup(c, v->items[i]->str);
	}
	va[v->n] = NULL;
	p->version_args = va;
	return 0;
}

/* invocation, strategy, capabilities, models and notes. */
static int parse_behaviour(struct pctx *c)
{
	const struct ynode *root = c->doc->root, *v;
	struct profile *p = c->p;
	int r;

	r = parse_invocation(c, ynode_get(root, "invocation"));
	if (r < 0)
		return r;
	if ((v = ynode_get(root, "strategy")) && (r = parse_strategy(c, v)) < 0)
		return r;
	c->p->caps.max_parallel_workers = 1;
	if ((v = ynode_get(root, "capabilities")) && (r = parse_capabilities(c, v)) < 0)
		return r;
	if (!v) {
		c->p->caps.vision_at = p->origin;
		c->p->caps.supports_endpoint_at = p->origin;
	}
	r = parse_map(c, ynode_get(root, "models"), "models", MAP_KEYS_ALIAS, 0, &p->models);
	if (r < 0)
		return r;
	p->notes = adup(c, get_str(root, "notes"));
	return 0;
}

static int parse_top(struct pctx *c, const char *stem)
{
	const struct ynode *root = c->doc->root, *v;
	struct profile *p = c->p;
	int r;

	r = check_map(c, root, top_fields, "");
	if (r < 0)
		return r;
	if ((r = parse_names(c, stem)) < 0 || (r = parse_shape(c)) < 0 ||
	    (r = parse_contract(c)) < 0 || (r = parse_version_args(c)) < 0 ||
	    (r = parse_behaviour(c)) < 0)
		return r;
	p->runtime.endpoint.model = "{model}";
	if ((v = ynode_get(root, "runtime")) && (r = parse_runtime(c, v)) < 0)
		return r;
	if (!v)
		p->runtime.origin = p->origin;
	r = check_prompt_guard(c);
	if (r < 0)
		return r;
	if (p->caps.supports_endpoint && !p->runtime.endpoint.declared &&
	    p->shape == PROFILE_SHAPE_FACTORY)
		return oerr(c->reterr, c->file, &p->caps.supports_endpoint_at,
			    "capabilities.supports_endpoint",
			    "no runtime.endpoint says how to point the agent at another endpoint");
	return 0;
}

/* The canonical form and hash are a cache: loading never needs them, and a
 * loaded profile always canonicalises (libyaml guarantees valid UTF-8 and
 * every integer is range-checked), so a failure here is a bug. */
static struct profile *hash_once(const struct profile *cp)
{
	struct profile *p = (struct profile *)(uintptr_t)cp; /* logically const cache */
	struct sbuf sb = SBUF_INIT(16 * 1024 * 1024);
	json_t *j;
	int r;

	if (p->hash_cache[0])
		return p;
	j = profile_canonical(p);
	r = json_canon_jcs(j, &sb);
	json_decref(j);
	if (r < 0)
		BUG("cannot canonicalise profile '%s': %s", p->name, strerror(-r));
	hash_sha256_hex(sb.buf, sb.len, p->hash_cache);
	p->canonical_cache = arena_memdup(&p->arena, sb.buf, sb.len + 1);
	p->canonical_cache_len = sb.len;
	sbuf_release(&sb);
	return p;
}

const char *profile_hash(const struct profile *p)
{
	return hash_once(p)->hash_cache;
}

const char *profile_canonical_bytes(const struct profile *p, size_t *ret_len)
{
	const struct profile *h = hash_once(p);

	if (ret_len)
		*ret_len = h->canonical_cache_len;
	return h->canonical_cache;
}

static const struct yaml_limits profile_limits = {
	.max_bytes = PROFILE_MAX_FILE_BYTES,
	.max_depth = 16,
	.max_nodes = 0,
};

/* A profile's arena holds about 1 KiB: blocks of a 1 KiB malloc chunk, not
 * the default page, which left three quarters of a page untouched but in
 * the way between profiles (when start-up loaded the 45 embedded ones, now
 * static data: 30 page faults fewer). */
#define PROFILE_ARENA_BLOCK (1024 - 48)

int profile_load_doc(const struct ydoc *doc, const char *source, const char *stem,
		     struct profile **ret, struct diag *reterr)
{
	struct profile *p = xcalloc(1, sizeof(*p));
	struct pctx c = {0};
	int r;

	arena_init(&p->arena, PROFILE_ARENA_BLOCK);
	p->source = arena_strdup(&p->arena, source);
	c.doc = doc;
	c.p = p;
	c.file = p->source;
	c.reterr = reterr;
	r = parse_top(&c, stem);
	if (r < 0) {
		profile_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

static void locate(struct diag *d, const char *name, int r)
{
	if (!d)
		return;
	if (!d->file[0])
		(void)snprintf(d->file, sizeof(d->file), "%s", name);
	if (r == -EFBIG && d->line == 0) {
		d->line = 1;
		d->col = 1;
	}
}

int profile_load_buf(const char *source, const char *stem, const char *buf, size_t len,
		     struct profile **ret, struct diag *reterr)
{
	struct ydoc *doc = NULL;
	int r;

	r = yaml_load_buf(source, buf, len, &profile_limits, &doc, reterr);
	if (r < 0) {
		locate(reterr, source, r);
		return r;
	}
	r = profile_load_doc(doc, source, stem, ret, reterr);
	ydoc_free(doc);
	return r;
}

int profile_load_file(const char *path, struct profile **ret, struct diag *reterr)
{
	struct ydoc *doc = NULL;
	char stem[PROFILE_MAX_NAME + 2];
	int r;

	if (profile_stem(path, stem, sizeof(stem)) < 0) {
		diag_set(
			reterr, path, 0, 0,
			"a profile file is named NAME.yaml (NAME: [a-z][a-z0-9_]*, at most %d bytes)",
			PROFILE_MAX_NAME);
		return -EINVAL;
	}
	r = yaml_load_file(path, &profile_limits, &doc, reterr);
	if (r < 0) {
		if (r != -ENOENT)
			locate(reterr, path, r);
		else
			diag_set(reterr, path, 0, 0, "cannot read: %s", strerror(ENOENT));
		return r;
	}
	r = profile_load_doc(doc, path, stem, ret, reterr);
	ydoc_free(doc);
	return r;
}

struct profile *profile_free(struct profile *p)
{
	if (!p)
		return NULL;
	arena_release(&p->arena);
	free(p);
	return NULL;
}

/* ---- gate 1: rules of the resolved strategy ---- */

static bool is_flag(const char *s)
{
	return s[0] == '-' && strcmp(s, "-") != 0;
}

static const struct catalog_origin *rt_at(const struct profile *p, bool declared,
					  const struct catalog_origin *o)
{
	return declared ? o : &p->runtime.origin;
}

static int check_resume(const struct profile *p, enum resume_strategy rs, bool inline_,
			const char *where, struct diag *reterr)
{
	const struct profile_resume *res = &p->runtime.resume;
	const char *name = resume_strategy_to_string(rs);
	const struct profile_strv *a = &res->args;
	size_t i, flags = 0;

	if (rs == RESUME_UNSUPPORTED) {
		if (inline_ && res->declared)
			return oerr(reterr, p->source, &res->origin, "runtime.resume",
				    "the profile's own strategy says resume is unsupported");
		return 0;
	}
	if (!res->declared && p->shape == PROFILE_SHAPE_MODULE)
		return 0; /* the module spells it */
	if (!res->declared)
		return oerr(
			reterr, p->source, &p->runtime.origin, "runtime.resume",
			"the resume strategy is '%s' (%s) but the profile does not say how resume is spelled",
			name, where);
	for (i = 0; i < a->n; i++)
		flags += is_flag(a->v[i]);
	switch (rs) {
	case RESUME_FLAG:
		if (a->n != 2 || !is_flag(a->v[0]) || strcmp(a->v[1], "{session_id}") != 0)
			return oerr(
				reterr, p->source, &a->at[0], "runtime.resume.args",
				"resume strategy 'flag' (%s) is spelled [FLAG, \"{session_id}\"]",
				where);
		break;
	case RESUME_FLAG_PAIR:
		if (a->n != 3 || flags != 2 || !is_flag(a->v[0]))
			return oerr(
				reterr, p->source, &a->at[0], "runtime.resume.args",
				"resume strategy 'flag-pair' (%s) is spelled as two flags and \"{session_id}\", e.g. [--resume, \"{session_id}\", --fork-session]",
				where);
		break;
	case RESUME_SUBCOMMAND:
		if (a->v[0][0] == '-' || strcmp(a->v[0], "{session_id}") == 0)
			return oerr(
				reterr, p->source, &a->at[0], "runtime.resume.args",
				"resume strategy 'subcommand' (%s) starts with the subcommand token, e.g. [resume, \"{session_id}\"]",
				where);
		break;
	case RESUME_UNSUPPORTED:
	case _RESUME_STRATEGY_MAX:
	case _RESUME_STRATEGY_INVALID:
	default:
		break;
	}
	return 0;
}

static int check_dangerous(const struct profile *p, enum dangerous_mode dm, bool inline_,
			   const char *where, struct diag *reterr)
{
	const struct profile_dangerous *d = &p->runtime.dangerous;
	const char *name = dangerous_mode_to_string(dm);
	const struct catalog_origin *at = rt_at(p, d->declared, &d->origin);
	bool factory = p->shape == PROFILE_SHAPE_FACTORY;

	switch (dm) {
	case DANGEROUS_MODE_CLI_FLAG:
		if (factory && d->args.n == 0)
			return oerr(
				reterr, p->source, at, "runtime.dangerous.args",
				"dangerous mode 'cli-flag' (%s) needs the flag(s) that skip the permission prompts",
				where);
		break;
	case DANGEROUS_MODE_ENV_VAR:
		if (factory && d->env.n == 0)
			return oerr(
				reterr, p->source, at, "runtime.dangerous.env",
				"dangerous mode 'env-var' (%s) needs the variable(s) that skip the permission prompts",
				where);
		if (inline_ && d->args.n)
			return oerr(
				reterr, p->source, &d->args.at[0], "runtime.dangerous.args",
				"the profile's own strategy says dangerous mode is 'env-var': it is applied through runtime.dangerous.env only");
		break;
	case DANGEROUS_MODE_ALWAYS_ON:
	case DANGEROUS_MODE_UNSUPPORTED:
		if (inline_ && (d->args.n || d->env.n))
			return oerr(
				reterr, p->source, at, "runtime.dangerous",
				"the profile's own strategy says dangerous mode is '%s': there is nothing to apply",
				name);
		break;
	case _DANGEROUS_MODE_MAX:
	case _DANGEROUS_MODE_INVALID:
	default:
		break;
	}
	return 0;
}

static bool json_dialect(enum event_dialect d)
{
	return d != EVENT_DIALECT_TEXT_SIGNALS && d != EVENT_DIALECT_NONE;
}

static int check_events(const struct profile *p, enum event_channel ec, bool inline_,
			const char *where, struct diag *reterr)
{
	const struct profile_runtime *rt = &p->runtime;

	if (ec == EVENT_CHANNEL_STREAM_JSON &&
	    (rt->dialect_declared ? !json_dialect(rt->dialect) : p->shape == PROFILE_SHAPE_FACTORY))
		return oerr(
			reterr, p->source, rt_at(p, rt->dialect_declared, &rt->events_at),
			"runtime.events.dialect",
			"event channel 'stream-json' (%s) needs the JSON dialect of the stream (claude, codex, gemini, qwen, opencode, pi or runner)",
			where);
	if (inline_ && ec == EVENT_CHANNEL_TEXT_SIGNALS && rt->dialect_declared &&
	    rt->dialect != EVENT_DIALECT_TEXT_SIGNALS)
		return oerr(
			reterr, p->source, &rt->events_at, "runtime.events.dialect",
			"the profile's own strategy reads BERNSTEIN:<KIND> lines (text-signals): the dialect can only be text-signals");
	if (ec == EVENT_CHANNEL_ACP && !rt->acp.declared && p->shape == PROFILE_SHAPE_FACTORY)
		return oerr(
			reterr, p->source, &rt->origin, "runtime.acp",
			"event channel 'acp' (%s) needs runtime.acp: the args that start the agent's ACP mode",
			where);
	if (ec != EVENT_CHANNEL_ACP && rt->acp.declared && !p->invocation.prompt_flag &&
	    !p->invocation.prompt_file_flag && !p->invocation.prompt_positional)
		return oerr(
			reterr, p->source, &rt->acp.origin, "invocation",
			"event channel '%s' (%s) delivers the prompt on argv: set prompt_flag, prompt_file_flag or prompt_positional: true",
			event_channel_to_string(ec), where);
	if (inline_ && ec != EVENT_CHANNEL_HOOKS && rt->hooks.declared)
		return oerr(
			reterr, p->source, &rt->hooks.origin, "runtime.hooks",
			"the profile's own strategy reads event channel '%s', not hooks: runtime.hooks would never be used",
			event_channel_to_string(ec));
	return 0;
}

int profile_check_strategy(const struct profile *p, const struct adapter_strategy *s, bool inline_,
			   const char *where, struct diag *reterr)
{
	int r;

	/* over ACP a resume is session/load: no argv spelling to check */
	if (s->event_channel == EVENT_CHANNEL_ACP && !p->runtime.resume.declared)
		r = 0;
	else
		r = check_resume(p, s->resume, inline_, where, reterr);
	if (r >= 0)
		r = check_dangerous(p, s->dangerous_mode, inline_, where, reterr);
	if (r >= 0)
		r = check_events(p, s->event_channel, inline_, where, reterr);
	return r;
}

/* ---- gate 2: the contract cross-check ---- */

static bool in_list(const char *const *v, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(v[i]) == len && memcmp(v[i], s, len) == 0)
			return true;
	return false;
}

static void discrepancy(struct diag_list *ret, const struct profile *p,
			const struct catalog_origin *at, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void discrepancy(struct diag_list *ret, const struct profile *p,
			const struct catalog_origin *at, const char *path, const char *fmt, ...)
{
	struct diag d;
	va_list ap;

	diag_clear(&d);
	va_start(ap, fmt);
	vperr(&d, p->source, at, path, fmt, ap);
	va_end(ap);
	diag_list_add(ret, &d);
}

/* A flag token the contract must carry, or false ("--", "-", not a flag). */
static bool flag_of(const char *tok, size_t *ret_len)
{
	const char *eq;

	if (tok[0] != '-' || strcmp(tok, "-") == 0 || strcmp(tok, "--") == 0)
		return false;
	eq = strchr(tok, '=');
	*ret_len = eq ? (size_t)(eq - tok) : strlen(tok);
	return true;
}

static int cmp_diag_pos(const void *a, const void *b)
{
	const struct diag *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return 0;
}

size_t profile_contract_discrepancies(const struct profile *p, const struct contract *c,
				      const char *contract_source, struct diag_list *ret)
{
	const struct profile_invocation *inv = &p->invocation;
	const char *src = contract_source ? contract_source : c->source;
	const struct {
		const char *tok, *path;
		const struct catalog_origin *at;
	} named[] = {
		{inv->model_flag, "invocation.model_flag", &inv->model_flag_at},
		{inv->prompt_flag, "invocation.prompt_flag", &inv->prompt_flag_at},
		{inv->prompt_file_flag, "invocation.prompt_file_flag", &inv->prompt_file_flag_at},
	};
	size_t before = ret->n, i, len;
	char path[64], q[80], q2[80];

	if (strcmp(inv->binary, c->binary) != 0)
		discrepancy(ret, p, &inv->binary_at, "invocation.binary",
			    "profile declares binary '%s' but contract '%s' (%s) pins '%s'",
			    Q(q, inv->binary), c->name, src, Q(q2, c->binary));
	for (i = 0; i < inv->subcommands.n; i++) {
		const char *s = inv->subcommands.v[i];

		if (in_list(c->required_subcommands, c->n_required_subcommands, s, strlen(s)))
			continue;
		yaml_path_index(path, sizeof(path), "invocation.subcommands", i);
		discrepancy(ret, p, &inv->subcommands.at[i], path,
			    "subcommand '%s' is not in contract '%s' (%s)", Q(q, s), c->name, src);
	}
	for (i = 0; i < ARRAY_SIZE(named); i++) {
		if (!named[i].tok || !flag_of(named[i].tok, &len))
			continue;
		if (in_list(c->required_flags, c->n_required_flags, named[i].tok, len))
			continue;
		discrepancy(ret, p, named[i].at, named[i].path,
			    "flag '%.*s' is not in contract '%s' (%s)", (int)len, named[i].tok,
			    c->name, src);
	}
	for (i = 0; i < inv->extra_args.n; i++) {
		const char *t = inv->extra_args.v[i];

		if (!flag_of(t, &len) || in_list(c->required_flags, c->n_required_flags, t, len))
			continue;
		yaml_path_index(path, sizeof(path), "invocation.extra_args", i);
		discrepancy(ret, p, &inv->extra_args.at[i], path,
			    "flag '%.*s' is not in contract '%s' (%s)", (int)len, t, c->name, src);
	}
	/* in the order they appear in the file */
	if (ret->n - before > 1)
		qsort(ret->v + before, ret->n - before, sizeof(*ret->v), cmp_diag_pos);
	return ret->n - before;
}

/* ---- the canonical form ---- */

static json_t *jstrv(const struct profile_strv *sv)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < sv->n; i++)
		(void)json_array_append_new(a, json_string(sv->v[i]));
	return a;
}

static json_t *jmap(const struct profile_map *m)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; i < m->n; i++)
		(void)json_object_set_new(o, m->keys[i], json_string(m->values[i]));
	return o;
}

static json_t *jfiles(const struct profile_files *f)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < f->n; i++) {
		json_t *o = json_object();
		char mode[8];

		(void)snprintf(mode, sizeof(mode), "%04o", f->v[i].mode);
		(void)json_object_set_new(o, "path", json_string(f->v[i].path));
		(void)json_object_set_new(o, "mode", json_string(mode));
		(void)json_object_set_new(o, "content", json_string(f->v[i].content));
		(void)json_array_append_new(a, o);
	}
	return a;
}

static json_t *jstr_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static void jset(json_t *o, const char *k, json_t *v)
{
	(void)json_object_set_new(o, k, v ? v : json_null());
}

static json_t *pty_canonical(const struct ptydrive_conf *pc)
{
	json_t *j = json_object(), *perms = json_array(), *ign = json_array();
	unsigned rows, cols;
	size_t i;

	ptydrive_rows_cols(pc, &rows, &cols);
	jset(j, "rows", json_integer(rows));
	jset(j, "cols", json_integer(cols));
	jset(j, "term", jstr_or_null(pc->term));
	jset(j, "ready", jstr_or_null(pc->ready));
	jset(j, "working", jstr_or_null(pc->working));
	jset(j, "done", jstr_or_null(pc->done));
	for (i = 0; i < pc->n_ignore; i++)
		(void)json_array_append_new(ign, json_string(pc->ignore[i]));
	jset(j, "ignore", ign);
	for (i = 0; i < pc->n_perms; i++)
		(void)json_array_append_new(
			perms, json_pack("{s:s,s:s,s:s}", "pattern", pc->perms[i].pattern, "allow",
					 pc->perms[i].allow, "deny", pc->perms[i].deny));
	jset(j, "permission", perms);
	jset(j, "idle_done_ms", json_integer((json_int_t)pc->idle_done_ms));
	jset(j, "paste", json_boolean(pc->paste));
	jset(j, "submit", jstr_or_null(pc->submit));
	jset(j, "submit_delay_ms", json_integer((json_int_t)pc->submit_delay_ms));
	jset(j, "exit", jstr_or_null(pc->exit_keys));
	jset(j, "exit_wait_ms", json_integer((json_int_t)pc->exit_wait_ms));
	return j;
}

/* The runtime blocks that enter the canonical form only when declared, so
 * that a profile without one keeps the content address it had before the
 * block existed (hashes are recorded in state and audit chains). */
static void runtime_declared_canonical(const struct profile_runtime *rt, json_t *r)
{
	json_t *j;

	if (rt->mcp.declared) {
		j = json_object();
		jset(j, "format", json_string(mcp_format_to_string(rt->mcp.format)));
		jset(j, "file", jstr_or_null(rt->mcp.file));
		if (rt->mcp.remove.n)
			jset(j, "remove", jstrv(&rt->mcp.remove));
		jset(j, "args", jstrv(&rt->mcp.args));
		jset(j, "env", jmap(&rt->mcp.env));
		jset(r, "mcp", j);
	}
	if (rt->sandbox.declared) {
		json_t *t = json_array();
		int k;

		j = json_object();
		for (k = 0; k < _SANDBOX_KIND_MAX; k++)
			if (rt->sandbox.tiers & (1u << k))
				(void)json_array_append_new(t, json_string(sandbox_kind_to_string(
								       (enum sandbox_kind)k)));
		jset(j, "tiers", t);
		jset(j, "read", jstrv(&rt->sandbox.read));
		if (rt->sandbox.hosts.n) /* the same rule */
			jset(j, "hosts", jstrv(&rt->sandbox.hosts));
		jset(r, "sandbox", j);
	}
	if (rt->login_declared) /* the same rule */
		jset(r, "login", jstrv(&rt->login));
	if (rt->acp.declared) { /* the same rule */
		j = json_object();
		jset(j, "args", jstrv(&rt->acp.args));
		jset(r, "acp", j);
	}
	if (rt->pty.declared) /* the same rule */
		jset(r, "pty", pty_canonical(&rt->pty));
}

json_t *profile_canonical(const struct profile *p)
{
	const struct profile_invocation *inv = &p->invocation;
	const struct profile_runtime *rt = &p->runtime;
	json_t *o = json_object(), *j, *r;
	size_t i;
	int a;

	jset(o, "name", json_string(p->name));
	jset(o, "display_name", json_string(p->display_name));
	jset(o, "shape", json_string(profile_shape_to_string(p->shape)));
	jset(o, "builtin", json_boolean(p->builtin));
	jset(o, "contract", json_string(p->contract));
	if (p->version_args) {
		j = json_array();
		for (i = 0; p->version_args[i]; i++)
			(void)json_array_append_new(j, json_string(p->version_args[i]));
		jset(o, "version_args", j);
	} else {
		jset(o, "version_args", json_null());
	}

	j = json_object();
	jset(j, "binary", json_string(inv->binary));
	jset(j, "subcommands", jstrv(&inv->subcommands));
	jset(j, "model_flag", jstr_or_null(inv->model_flag));
	jset(j, "prompt_flag", jstr_or_null(inv->prompt_flag));
	jset(j, "prompt_file_flag", jstr_or_null(inv->prompt_file_flag));
	jset(j, "prompt_positional", json_boolean(inv->prompt_positional));
	jset(j, "prompt_guard", json_string(prompt_guard_to_string(inv->prompt_guard)));
	jset(j, "extra_args", jstrv(&inv->extra_args));
	jset(j, "env_passthrough", jstrv(&inv->env_passthrough));
	jset(o, "invocation", j);

	if (p->strategy) {
		j = json_object();
		for (a = 0; a < _AXIS_MAX; a++)
			jset(j, axis_name((enum axis)a),
			     json_string(
				     axis_to_string((enum axis)a, axis_get(&p->strategy->strategy,
									   (enum axis)a))));
		jset(o, "strategy", j);
	} else {
		jset(o, "strategy", json_null());
	}

	j = json_object();
	for (i = 0; i < ARRAY_SIZE(cap_bools); i++)
		jset(j, cap_bools[i].key, json_boolean(cap_bool_get(&p->caps, i)));
	jset(j, "sandbox", json_string(sandbox_tier_to_string(p->caps.sandbox)));
	jset(j, "max_parallel_workers", json_integer((json_int_t)p->caps.max_parallel_workers));
	jset(o, "capabilities", j);

	jset(o, "models", jmap(&p->models));

	r = json_object();
	if (rt->resume.declared) {
		j = json_object();
		jset(j, "args", jstrv(&rt->resume.args));
		jset(j, "position", json_string(resume_position_to_string(rt->resume.position)));
		jset(r, "resume", j);
	} else {
		jset(r, "resume", json_null());
	}
	j = json_object();
	jset(j, "args", jstrv(&rt->dangerous.args));
	jset(j, "env", jmap(&rt->dangerous.env));
	jset(r, "dangerous", j);
	if (rt->session_id.declared) {
		j = json_object();
		jset(j, "args", jstrv(&rt->session_id.args));
		jset(j, "format", json_string(session_id_format_to_string(rt->session_id.format)));
		jset(r, "session_id", j);
	} else {
		jset(r, "session_id", json_null());
	}
	if (rt->long_prompt.declared) {
		j = json_object();
		jset(j, "via", json_string(prompt_via_to_string(rt->long_prompt.via)));
		jset(j, "args", jstrv(&rt->long_prompt.args));
		jset(r, "long_prompt", j);
	} else {
		jset(r, "long_prompt", json_null());
	}
	j = json_object();
	jset(j, "dialect",
	     rt->dialect_declared ? json_string(event_dialect_to_string(rt->dialect))
				  : json_null());
	jset(r, "events", j);
	jset(r, "env", jmap(&rt->env));
	jset(r, "home", json_string(agent_home_to_string(rt->home)));
	jset(r, "git_dir", json_string(git_dir_access_to_string(rt->git_dir)));
	jset(r, "files", jfiles(&rt->files));
	j = json_object();
	jset(j, "model", json_string(rt->endpoint.model ? rt->endpoint.model : "{model}"));
	jset(j, "default_model", jstr_or_null(rt->endpoint.default_model));
	jset(j, "args", jstrv(&rt->endpoint.args));
	jset(j, "env", jmap(&rt->endpoint.env));
	jset(j, "files", jfiles(&rt->endpoint.files));
	jset(r, "endpoint", j);
	if (rt->hooks.declared) {
		j = json_object();
		jset(j, "args", jstrv(&rt->hooks.args));
		jset(j, "env", jmap(&rt->hooks.env));
		jset(j, "files", jfiles(&rt->hooks.files));
		jset(r, "hooks", j);
	} else {
		jset(r, "hooks", json_null());
	}
	runtime_declared_canonical(rt, r);
	jset(o, "runtime", r);
	return o;
}

/* ---- using a profile ---- */

int profile_expand(const char *tmpl, const struct profile_vars *vars, struct sbuf *out)
{
	size_t pos = 0, last = 0, start, len;
	int ph, r;

	while ((ph = next_placeholder(tmpl, &pos, &start, &len)) != -ENOENT) {
		if (ph < 0)
			continue; /* not a placeholder of ours: literal text */
		r = sbuf_add(out, tmpl + last, start - last);
		if (r < 0)
			return r;
		if (!vars || !vars->v[ph])
			return -ENOENT;
		r = sbuf_adds(out, vars->v[ph]);
		if (r < 0)
			return r;
		last = start + len;
	}
	return sbuf_adds(out, tmpl + last);
}

const char *profile_model(const struct profile *p, const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < p->models.n; i++)
		if (strcmp(p->models.keys[i], name) == 0)
			return p->models.values[i];
	return name;
}

static int push_expanded(struct strvec *argv, const char *tmpl, const struct profile_vars *vars)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int r;

	r = profile_expand(tmpl, vars, &sb);
	if (r >= 0)
		strvec_push(argv, sb.buf);
	sbuf_release(&sb);
	return r < 0 ? r : 0;
}

int profile_build_argv(const struct profile *p, const char *binary_override, const char *model,
		       const char *prompt, const struct profile_vars *vars, struct strvec *argv)
{
	const struct profile_invocation *inv = &p->invocation;
	const char *model_id = model ? profile_model(p, model) : NULL;
	struct strvec model_args = STRVEC_INIT, extra = STRVEC_INIT, prompt_args = STRVEC_INIT;
	struct argv_parts parts = {
		.argv0 = binary_override ? binary_override : inv->binary,
		.subcommands = inv->subcommands.v,
	};
	size_t i;
	int r = 0;

	if ((prompt && prompt[0] == '-' && !inv->prompt_file_flag) ||
	    (inv->model_flag && model_id && model_id[0] == '-'))
		return -EINVAL;
	if (inv->model_flag && model_id) {
		strvec_push(&model_args, inv->model_flag);
		strvec_push(&model_args, model_id);
	}
	for (i = 0; i < inv->extra_args.n; i++) {
		r = push_expanded(&extra, inv->extra_args.v[i], vars);
		if (r < 0)
			goto out;
	}
	if (inv->prompt_file_flag) {
		if (!vars || !vars->v[PH_PROMPT_FILE]) {
			r = -ENOENT;
			goto out;
		}
		strvec_push(&prompt_args, inv->prompt_file_flag);
		strvec_push(&prompt_args, vars->v[PH_PROMPT_FILE]);
	} else {
		argv_order_prompt(inv->prompt_flag, PROMPT_GUARD_NONE, prompt ? prompt : "",
				  &prompt_args);
	}
	parts.model = model_args.v;
	parts.extra = extra.v;
	parts.prompt = prompt_args.v;
	argv_order_assemble(&parts, argv);
out:
	strvec_clear(&model_args);
	strvec_clear(&extra);
	strvec_clear(&prompt_args);
	return r;
}
