#include "adapter/contract.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/catalog.h"
#include "proc/probe.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/banned.h"

static const char *const install_method_names[] = {
	"", "npm", "pipx", "curl", "cargo", "shell", "manual", NULL,
};

static const char *const auth_basis_names[] = {
	"unknown", "api_key", "local", "subscription_oauth", NULL,
};

const char *contract_install_method_to_string(enum contract_install_method m)
{
	if (m < 0 || m >= _CONTRACT_INSTALL_MAX)
		return NULL;
	return install_method_names[m];
}

const char *contract_auth_basis_to_string(enum contract_auth_basis b)
{
	if (b < 0 || b >= _CONTRACT_AUTH_MAX)
		return NULL;
	return auth_basis_names[b];
}

bool contract_name_valid(const char *name)
{
	size_t i;

	if (!name || !name[0] || strlen(name) > CONTRACT_MAX_NAME)
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (i > 0)
			ok = ok || c == '_' || c == '-';
		if (!ok)
			return false;
	}
	return true;
}

/* ---- loading ---------------------------------------------------------------- */

static const struct yfield contract_fields[] = {
	{"adapter", YT_STR, 0, NULL, NULL},
	{"binary", YT_STR, 0, NULL, NULL},
	{"install", YT_MAP, 0, NULL, NULL},
	{"auth", YT_MAP, 0, NULL, NULL},
	{"required_flags", YT_STRLIST, 0, NULL, NULL},
	{"required_subcommands", YT_STRLIST, 0, NULL, NULL},
	{"help_command", YT_STRLIST, 0, NULL, NULL},
	{"expected_models", YT_MAP, 0, NULL, NULL},
	{"session_id_flag", YT_ANY, 0, NULL, NULL},
	{NULL, YT_ANY, 0, NULL, NULL},
};

static const struct yfield install_fields[] = {
	{"method", YT_STR, 0, NULL, NULL},
	{"spec", YT_STR, 0, NULL, NULL},
	{NULL, YT_ANY, 0, NULL, NULL},
};

static const struct yfield auth_fields[] = {
	{"required_for_help", YT_BOOL, 0, NULL, NULL},
	{"required_for_models", YT_BOOL, 0, NULL, NULL},
	{"secret_env", YT_ANY, 0, NULL, NULL},
	{"basis", YT_STR, 0, NULL, NULL},
	{NULL, YT_ANY, 0, NULL, NULL},
};

static const struct yfield models_fields[] = {
	{"command", YT_STRLIST, 0, NULL, NULL},
	{"required_present", YT_STRLIST, 0, NULL, NULL},
	{NULL, YT_ANY, 0, NULL, NULL},
};

static const char **empty_list(struct arena *a)
{
	return arena_alloc(a, sizeof(const char *));
}

/* A list of non-empty strings under key of map (map may be NULL), copied
 * into the contract's arena; absent = empty. */
static int get_list(struct contract *c, const struct ydoc *doc, const struct ynode *map,
		    const char *key, const char *what, const char ***ret, size_t *ret_n,
		    struct diag *reterr)
{
	const struct ynode *node = map ? ynode_get(map, key) : NULL;
	const char **v = NULL, **out;
	size_t n = 0, i;
	int r;

	if (node) {
		r = yaml_get_strlist(doc, map, key, &v, &n, reterr);
		if (r < 0)
			return r;
	}
	out = arena_alloc(&c->arena, st_mult(st_add(n, 1), sizeof(*out)));
	for (i = 0; i < n; i++) {
		if (!v[i][0]) {
			yaml_diag(doc, node->items[i], reterr, "'%s': empty string in %s", key,
				  what);
			return -EINVAL;
		}
		out[i] = arena_strdup(&c->arena, v[i]);
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

static bool env_name_valid(const char *s)
{
	size_t i;

	if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; s[i]; i++) {
		char ch = s[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return false;
	}
	return true;
}

static int add_secret(struct contract *c, const struct ydoc *doc, const struct ynode *node,
		      size_t *alloc, struct diag *reterr)
{
	if (node->kind != YNODE_SCALAR || ynode_is_null(node)) {
		yaml_diag(doc, node, reterr, "'secret_env': expected a string, got %s",
			  ynode_describe(node));
		return -EINVAL;
	}
	if (!env_name_valid(node->str)) {
		yaml_diag(doc, node, reterr,
			  "'secret_env': '%.64s' is not an environment variable name", node->str);
		return -EINVAL;
	}
	if (c->n_secret_env + 1 >= *alloc) {
		const char **nv;

		*alloc = *alloc ? 2 * *alloc : 4;
		nv = arena_alloc(&c->arena, st_mult(*alloc, sizeof(*nv)));
		if (c->n_secret_env)
			memcpy(nv, c->secret_env, c->n_secret_env * sizeof(*nv));
		c->secret_env = nv;
	}
	c->secret_env[c->n_secret_env++] = arena_strdup(&c->arena, node->str);
	c->secret_env[c->n_secret_env] = NULL;
	return 0;
}

/* auth.secret_env: absent, null or "" (none), a name, or a list of names. */
static int parse_secret_env(struct contract *c, const struct ydoc *doc, const struct ynode *auth,
			    struct diag *reterr)
{
	const struct ynode *node = auth ? ynode_get(auth, "secret_env") : NULL;
	size_t alloc = 0, i;
	int r;

	c->secret_env = empty_list(&c->arena);
	c->n_secret_env = 0;
	if (!node || ynode_is_null(node))
		return 0;
	if (node->kind == YNODE_SCALAR)
		return node->len ? add_secret(c, doc, node, &alloc, reterr) : 0;
	if (node->kind != YNODE_SEQ) {
		yaml_diag(doc, node, reterr,
			  "'secret_env': expected a string or a list of strings, got %s",
			  ynode_describe(node));
		return -EINVAL;
	}
	for (i = 0; i < node->n; i++) {
		r = add_secret(c, doc, node->items[i], &alloc, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The sections install, auth and expected_models (each may be absent:
 * NULL), checked against their fields in that order. */
static int check_sections(const struct ydoc *doc, const struct ynode *sec[3], struct diag *reterr)
{
	static const struct {
		const char *key;
		const struct yfield *fields;
	} sections[3] = {
		{"install", install_fields},
		{"auth", auth_fields},
		{"expected_models", models_fields},
	};
	size_t i;
	int r;

	for (i = 0; i < 3; i++) {
		sec[i] = ynode_get(doc->root, sections[i].key);
		if (!sec[i])
			continue;
		r = yaml_check_map(doc, sec[i], sections[i].fields, sections[i].key, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

/* adapter (not empty) and binary, each defaulting to the contract's name. */
static int parse_names(struct contract *c, const struct ydoc *doc, struct diag *reterr)
{
	const struct ynode *root = doc->root;
	const char *s = NULL;
	int r;

	r = yaml_get_str(doc, root, "adapter", &s, reterr);
	if (r < 0)
		return r;
	if (s && !s[0]) {
		yaml_diag(doc, ynode_get(root, "adapter"), reterr, "'adapter' must not be empty");
		return -EINVAL;
	}
	c->adapter = s ? arena_strdup(&c->arena, s) : c->name;

	s = NULL;
	r = yaml_get_str(doc, root, "binary", &s, reterr);
	if (r < 0)
		return r;
	c->binary = s ? arena_strdup(&c->arena, s) : c->name;
	return 0;
}

static int parse_install(struct contract *c, const struct ydoc *doc, const struct ynode *install,
			 struct diag *reterr)
{
	const char *s = NULL;
	int r, e = CONTRACT_INSTALL_UNSPECIFIED;

	c->install_spec = "";
	if (!install)
		return 0;
	r = yaml_get_enum(doc, install, "method", install_method_names, &e, reterr);
	if (r < 0)
		return r;
	c->install_method = (enum contract_install_method)e;
	r = yaml_get_str(doc, install, "spec", &s, reterr);
	if (r < 0)
		return r;
	if (s)
		c->install_spec = arena_strdup(&c->arena, s);
	return 0;
}

static int parse_auth(struct contract *c, const struct ydoc *doc, const struct ynode *auth,
		      struct diag *reterr)
{
	int r, e = CONTRACT_AUTH_UNKNOWN;

	if (auth) {
		r = yaml_get_bool(doc, auth, "required_for_help", &c->auth_required_for_help,
				  reterr);
		if (r < 0)
			return r;
		r = yaml_get_bool(doc, auth, "required_for_models", &c->auth_required_for_models,
				  reterr);
		if (r < 0)
			return r;
		r = yaml_get_enum(doc, auth, "basis", auth_basis_names, &e, reterr);
		if (r < 0)
			return r;
		c->auth_basis = (enum contract_auth_basis)e;
	}
	return parse_secret_env(c, doc, auth, reterr);
}

/* The command lines: required_flags, required_subcommands, help_command
 * (default: binary --help) and expected_models' command and
 * required_present. */
static int parse_commands(struct contract *c, const struct ydoc *doc, const struct ynode *models,
			  struct diag *reterr)
{
	const struct ynode *root = doc->root;
	int r;

	r = get_list(c, doc, root, "required_flags", "required_flags", &c->required_flags,
		     &c->n_required_flags, reterr);
	if (r < 0)
		return r;
	r = get_list(c, doc, root, "required_subcommands", "required_subcommands",
		     &c->required_subcommands, &c->n_required_subcommands, reterr);
	if (r < 0)
		return r;
	r = get_list(c, doc, root, "help_command", "help_command", &c->help_command,
		     &c->n_help_command, reterr);
	if (r < 0)
		return r;
	if (c->n_help_command == 0 && c->binary[0]) {
		c->help_command = arena_alloc(&c->arena, 3 * sizeof(*c->help_command));
		c->help_command[0] = c->binary;
		c->help_command[1] = "--help";
		c->n_help_command = 2;
	}
	r = get_list(c, doc, models, "command", "expected_models.command", &c->models_command,
		     &c->n_models_command, reterr);
	if (r < 0)
		return r;
	return get_list(c, doc, models, "required_present", "expected_models.required_present",
			&c->models_required, &c->n_models_required, reterr);
}

/* session_id_flag: absent, null or "" (none), or a string. */
static int parse_session_id_flag(struct contract *c, const struct ydoc *doc, struct diag *reterr)
{
	const struct ynode *sid = ynode_get(doc->root, "session_id_flag");

	if (!sid || ynode_is_null(sid))
		return 0;
	if (sid->kind != YNODE_SCALAR) {
		yaml_diag(doc, sid, reterr, "'session_id_flag': expected a string or null, got %s",
			  ynode_describe(sid));
		return -EINVAL;
	}
	if (sid->len)
		c->session_id_flag = arena_strdup(&c->arena, sid->str);
	return 0;
}

static int parse_contract(struct contract *c, const struct ydoc *doc, struct diag *reterr)
{
	const struct ynode *sec[3] = {NULL, NULL, NULL}; /* install, auth, expected_models */
	int r;

	r = yaml_check_map(doc, doc->root, contract_fields, "contract", reterr);
	if (r >= 0)
		r = check_sections(doc, sec, reterr);
	if (r >= 0)
		r = parse_names(c, doc, reterr);
	if (r >= 0)
		r = parse_install(c, doc, sec[0], reterr);
	if (r >= 0)
		r = parse_auth(c, doc, sec[1], reterr);
	if (r >= 0)
		r = parse_commands(c, doc, sec[2], reterr);
	if (r >= 0)
		r = parse_session_id_flag(c, doc, reterr);
	return r < 0 ? r : 0;
}

int contract_load_buf(const char *name, const char *source, const char *buf, size_t len,
		      struct contract **ret, struct diag *reterr)
{
	const struct yaml_limits lim = {.max_bytes = CONTRACT_MAX_FILE_BYTES};
	struct contract *c = NULL;
	struct ydoc *doc = NULL;
	int r;

	if (!source)
		source = name ? name : "<contract>";
	if (!contract_name_valid(name)) {
		diag_set(reterr, source, 0, 0,
			 "invalid contract name '%.80s' (expected [a-z0-9][a-z0-9_-]*)",
			 name ? name : "");
		return -EINVAL;
	}
	r = yaml_load_buf(source, buf, len, &lim, &doc, reterr);
	if (r < 0)
		goto out;

	c = xcalloc(1, sizeof(*c));
	arena_init(&c->arena, 4096);
	c->name = arena_strdup(&c->arena, name);
	c->source = arena_strdup(&c->arena, source);
	r = parse_contract(c, doc, reterr);
	if (r < 0)
		goto out;

	*ret = c;
	c = NULL;
out:
	contract_free(c);
	ydoc_free(doc);
	return r;
}

/* "dir/claude.yaml" -> "claude" (the stem, without .yaml or .yml). */
static char *file_stem(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
		n -= 5;
	else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
		n -= 4;
	return xstrndup(base, n);
}

static int load_path(const char *name, const char *path, struct contract **ret, struct diag *reterr)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	r = read_file_capped(path, CONTRACT_MAX_FILE_BYTES, &text, &len);
	if (r < 0) {
		if (r == -EFBIG)
			diag_set(reterr, path, 0, 0, "contract file larger than %d bytes",
				 CONTRACT_MAX_FILE_BYTES);
		else
			diag_set(reterr, path, 0, 0, "cannot read contract: %s", file_strerror(r));
		return r;
	}
	r = contract_load_buf(name, path, text, len, ret, reterr);
	free(text);
	return r;
}

int contract_load_file(const char *path, struct contract **ret, struct diag *reterr)
{
	char *stem = file_stem(path);
	int r = load_path(stem, path, ret, reterr);

	free(stem);
	return r;
}

struct contract *contract_free(struct contract *c)
{
	if (!c)
		return NULL;
	arena_release(&c->arena);
	free(c);
	return NULL;
}

/* ---- matching ------------------------------------------------------------- */

static char ascii_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool is_flag_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static bool ieq(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ascii_lower(a[i]) != ascii_lower(b[i]))
			return false;
	return true;
}

/* Find needle (ASCII case-insensitive) at a position where ok_before(text[i-1])
 * (or i == 0) and ok_after(text[i+n]) (or the end) hold. */
static bool find_bounded(const char *text, size_t len, const char *needle, bool flag_bounds)
{
	size_t n = strlen(needle), i;
	char first;

	if (n == 0 || n > len)
		return false;
	first = ascii_lower(needle[0]);
	for (i = 0; i + n <= len; i++) {
		if (ascii_lower(text[i]) != first || !ieq(text + i, needle, n))
			continue;
		if (flag_bounds) {
			if (i > 0 && is_flag_char(text[i - 1]))
				continue;
			if (i + n < len && is_flag_char(text[i + n]))
				continue;
		} else {
			if (i > 0 && !is_space(text[i - 1]))
				continue;
			if (i + n < len && !is_space(text[i + n]))
				continue;
		}
		return true;
	}
	return false;
}

/* Plain ASCII case-insensitive substring (model names). */
static bool ci_contains(const char *text, size_t len, const char *needle)
{
	size_t n = strlen(needle), i;

	if (n > len)
		return false;
	for (i = 0; i + n <= len; i++)
		if (ieq(text + i, needle, n))
			return true;
	return false;
}

bool contract_flag_advertised(const char *text, size_t len, const char *flag)
{
	if (!text || !flag)
		return false;
	return find_bounded(text, len, flag, true);
}

bool contract_subcommand_advertised(const char *text, size_t len, const char *sub)
{
	if (!text || !sub)
		return false;
	return find_bounded(text, len, sub, false);
}

/* "codex exec --help" */
static void join_argv(struct sbuf *sb, const char *const *argv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		(void)sbuf_addf(sb, "%s%s", i ? " " : "", argv[i]);
}

static void help_argv_text(const struct contract *c, struct sbuf *sb)
{
	if (c->n_help_command)
		join_argv(sb, c->help_command, c->n_help_command);
	else
		(void)sbuf_addf(sb, "%s --help", c->binary[0] ? c->binary : c->name);
}

/* A NUL-terminated, ANSI-stripped copy. Caller frees. */
static char *stripped_copy(const char *text, size_t len, size_t *ret_len)
{
	char *t = xmalloc(st_add(len, 1));

	if (len)
		memcpy(t, text, len);
	t[len] = '\0';
	*ret_len = ansi_strip(t, len);
	t[*ret_len] = '\0';
	return t;
}

static size_t match_stripped(const struct contract *c, const char *t, size_t len,
			     struct strvec *failures)
{
	struct sbuf where = SBUF_INIT(SIZE_MAX);
	size_t i, missing = 0;

	if (failures)
		help_argv_text(c, &where);
	for (i = 0; i < c->n_required_flags; i++) {
		if (contract_flag_advertised(t, len, c->required_flags[i]))
			continue;
		missing++;
		if (failures)
			(void)strvec_pushf(failures, "missing required flag '%s' in `%s`",
					   c->required_flags[i], where.buf);
	}
	for (i = 0; i < c->n_required_subcommands; i++) {
		if (contract_subcommand_advertised(t, len, c->required_subcommands[i]))
			continue;
		missing++;
		if (failures)
			(void)strvec_pushf(failures, "missing required subcommand '%s' in `%s`",
					   c->required_subcommands[i], where.buf);
	}
	sbuf_release(&where);
	return missing;
}

size_t contract_match_help(const struct contract *c, const char *help_text, size_t len,
			   struct strvec *failures)
{
	size_t tlen, missing;
	char *t = stripped_copy(help_text ? help_text : "", help_text ? len : 0, &tlen);

	missing = match_stripped(c, t, tlen, failures);
	free(t);
	return missing;
}

static bool is_blank(const char *t, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_space(t[i]))
			return false;
	return true;
}

const char *contract_probe_failure(const struct contract *c, const char *help_text, size_t len,
				   int exit_code)
{
	size_t total = c->n_required_flags + c->n_required_subcommands, tlen;
	const char *reason = NULL;
	char *t;

	if (total == 0)
		return NULL;
	t = stripped_copy(help_text ? help_text : "", help_text ? len : 0, &tlen);
	if (is_blank(t, tlen))
		reason = "no output";
	else if (exit_code != 0 && total >= CONTRACT_BROKEN_PROBE_MIN_REQUIRED &&
		 match_stripped(c, t, tlen, NULL) == total)
		reason = "no required tokens advertised";
	free(t);
	return reason;
}

/* ---- the live check ------------------------------------------------------- */

static const char *env_lookup(const char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static void env_add_from(struct strvec *env, const char *const *envp, const char *name)
{
	const char *v = env_lookup(envp, name);
	size_t i, n = strlen(name);

	if (!v)
		return;
	for (i = 0; i < env->nr; i++)
		if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=')
			return;
	(void)strvec_pushf(env, "%s=%s", name, v);
}

void contract_sandbox_env(const char *const *envp, const char *const *extra, struct strvec *ret)
{
	static const char *const keep[] = {"PATH", "HOME", "LANG", "LC_ALL", "USER", "LOGNAME"};
	struct strvec env = STRVEC_INIT;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keep); i++)
		env_add_from(&env, envp, keep[i]);
	(void)strvec_push(&env, "CI=1");
	(void)strvec_push(&env, "NO_COLOR=1");
	(void)strvec_push(&env, "DO_NOT_TRACK=1");
	(void)strvec_push(&env, "TERM=dumb");
	for (; extra && *extra; extra++)
		env_add_from(&env, envp, *extra);
	strvec_sort(&env);
	for (i = 0; i < env.nr; i++)
		(void)strvec_push(ret, env.v[i]);
	strvec_clear(&env);
}

static bool secret_present(const struct contract *c, const char *const *envp)
{
	size_t i;

	for (i = 0; i < c->n_secret_env; i++) {
		const char *v = env_lookup(envp, c->secret_env[i]);

		if (v && !is_blank(v, strlen(v)))
			return true;
	}
	return false;
}

static void secret_names(const struct contract *c, struct sbuf *sb)
{
	size_t i;

	if (!c->n_secret_env) {
		(void)sbuf_adds(sb, "<auth>");
		return;
	}
	for (i = 0; i < c->n_secret_env; i++)
		(void)sbuf_addf(sb, "%s%s", i ? " or " : "", c->secret_env[i]);
}

/* Up to max_chars characters of the trimmed, stripped output as one line of
 * valid UTF-8: newlines and tabs become spaces, other control characters and
 * invalid bytes '?'; "<no output>" when there is nothing. */
/* Add the character at c (n: its length as a valid UTF-8 sequence, 0 if
 * invalid) to a snippet: a control character or an invalid byte as '?', a
 * newline or tab as a space. The bytes it took. */
static size_t snippet_addc(struct sbuf *sb, const char *c, size_t n)
{
	unsigned char b = (unsigned char)c[0];

	if (n == 0) {
		(void)sbuf_addc(sb, '?');
		return 1;
	}
	if (n == 1 && (b == '\n' || b == '\t'))
		(void)sbuf_addc(sb, ' '); /* one line: messages are line-oriented */
	else if (n == 1 && (b < 0x20 || b == 0x7f))
		(void)sbuf_addc(sb, '?');
	else
		(void)sbuf_add(sb, c, n);
	return n;
}

static char *snippet(const char *text, size_t len, size_t max_chars)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t tlen, i = 0, end, chars = 0;
	char *t = stripped_copy(text ? text : "", text ? len : 0, &tlen);

	end = tlen;
	while (i < end && is_space(t[i]))
		i++;
	while (end > i && is_space(t[end - 1]))
		end--;
	/* strict UTF-8: no overlong forms, surrogates or code points above
	 * U+10FFFF */
	for (; i < end && chars < max_chars; chars++)
		i += snippet_addc(&sb, t + i, utf8_seq((const unsigned char *)t + i, end - i));
	free(t);
	if (!sb.len)
		(void)sbuf_adds(&sb, "<no output>");
	return sbuf_detach(&sb, NULL);
}

static void timeout_text(struct sbuf *sb, uint64_t ms)
{
	if (ms % 1000 == 0)
		(void)sbuf_addf(sb, "%" PRIu64 "s", ms / 1000);
	else
		(void)sbuf_addf(sb, "%" PRIu64 "ms", ms);
}

static int exit_code_of(const struct probe *p)
{
	switch (p->status) {
	case PROBE_OK:
		return 0;
	case PROBE_EXIT_NONZERO:
		return p->exit_code;
	case PROBE_SIGNALED:
		return 128 + p->term_signal;
	case PROBE_TIMED_OUT:
		return 124;
	case PROBE_SPAWN_FAILED:
		return 126;
	case PROBE_NOT_FOUND:
	default:
		return 127;
	}
}

/* Run argv[0..n) with env; fills *p (caller releases). */
static int run_cmd(const char *const *argv, const struct strvec *env, const char *const *envp,
		   uint64_t timeout_ms, const struct contract_check_opts *opts, struct probe *p)
{
	struct probe_opts po = {
		.path_env = env_lookup(envp, "PATH"),
		.env = env->v,
		.timeout_ms = timeout_ms,
		.max_output = opts->max_output ? opts->max_output : CONTRACT_DEFAULT_MAX_OUTPUT,
		.max_parallel = 1,
		.clock = opts->clock,
	};

	memset(p, 0, sizeof(*p));
	p->binary = argv[0];
	p->args = argv + 1; /* NULL-terminated; {NULL} when there are no arguments */
	return probe_run(p, 1, &po);
}

static int check_models(const struct contract *c, const struct contract_check_opts *opts,
			struct contract_result *ret)
{
	struct strvec env = STRVEC_INIT;
	struct sbuf cmd = SBUF_INIT(SIZE_MAX), names = SBUF_INIT(SIZE_MAX);
	struct probe p;
	uint64_t timeout = opts->models_timeout_ms ? opts->models_timeout_ms
						   : CONTRACT_DEFAULT_MODELS_TIMEOUT_MS;
	size_t i, tlen;
	char *t = NULL, *snip = NULL;
	int r, rc;

	if (c->auth_required_for_models && !secret_present(c, opts->envp)) {
		secret_names(c, &names);
		ret->skipped_reason =
			sbuf_strf("model check needs %s; running help-only", names.buf);
		r = 0;
		goto out;
	}
	contract_sandbox_env(opts->envp, c->secret_env, &env);
	join_argv(&cmd, c->models_command, c->n_models_command);
	r = run_cmd(c->models_command, &env, opts->envp, timeout, opts, &p);
	if (r < 0) {
		probe_release(&p);
		goto out;
	}
	rc = exit_code_of(&p);
	ret->models_checked = rc == 0;
	if (rc != 0) {
		snip = snippet(p.output, p.output_len, 200);
		if (p.status == PROBE_TIMED_OUT) {
			struct sbuf tt = SBUF_INIT(SIZE_MAX);

			timeout_text(&tt, timeout);
			(void)strvec_pushf(&ret->model_failures, "`%s` timed out after %s: %s",
					   cmd.buf, tt.buf, snip);
			sbuf_release(&tt);
		} else if (p.status == PROBE_NOT_FOUND) {
			(void)strvec_pushf(&ret->model_failures, "`%s`: '%s' not found in PATH",
					   cmd.buf, c->models_command[0]);
		} else if (p.status == PROBE_SPAWN_FAILED) {
			(void)strvec_pushf(&ret->model_failures, "`%s` could not be started (%s)",
					   cmd.buf, strerror(p.spawn_errno));
		} else {
			(void)strvec_pushf(&ret->model_failures, "`%s` exited %d: %s", cmd.buf, rc,
					   snip);
		}
	} else {
		t = stripped_copy(p.output, p.output_len, &tlen);
		for (i = 0; i < c->n_models_required; i++)
			if (!ci_contains(t, tlen, c->models_required[i]))
				(void)strvec_pushf(&ret->model_failures,
						   "model '%s' not present in `%s` output",
						   c->models_required[i], cmd.buf);
	}
	probe_release(&p);
out:
	free(t);
	free(snip);
	sbuf_release(&cmd);
	sbuf_release(&names);
	strvec_clear(&env);
	return r;
}

static void runtime_failure(struct contract_result *ret, const char *argv, const char *what,
			    const char *snip)
{
	ret->runtime_failure =
		sbuf_strf("`%s` %s; upstream CLI runtime failure, not contract drift%s%s", argv,
			  what, snip ? ": " : "", snip ? snip : "");
}

/* Before anything runs: skip a contract without a binary, with a binary not on
 * PATH, or whose help needs a secret that is unset. Returns true when the
 * help command should run. */
static bool check_prepare(const struct contract *c, const struct contract_check_opts *opts,
			  struct contract_result *ret)
{
	struct sbuf names = SBUF_INIT(SIZE_MAX);
	char *resolved = NULL;

	ret->adapter = xstrdup(c->adapter);
	ret->binary = xstrdup(c->binary);
	if (!c->binary[0]) {
		ret->skipped_reason = xstrdup("contract has no binary");
		return false;
	}
	if (path_search(c->binary, env_lookup(opts->envp, "PATH"), &resolved) < 0) {
		ret->skipped_reason = sbuf_strf("%s not installed", c->binary);
		return false;
	}
	free(resolved);
	ret->binary_installed = true;
	if (c->auth_required_for_help && !secret_present(c, opts->envp)) {
		secret_names(c, &names);
		ret->skipped_reason =
			sbuf_strf("--help requires %s which is unset; skipping", names.buf);
		sbuf_release(&names);
		return false;
	}
	return true;
}

/* Judge one finished help probe. */
static void check_evaluate(const struct contract *c, const struct probe *p, uint64_t timeout_ms,
			   struct contract_result *ret)
{
	struct sbuf argv = SBUF_INIT(SIZE_MAX), what = SBUF_INIT(SIZE_MAX);
	const char *reason;
	char *snip = NULL;
	int rc = exit_code_of(p);

	ret->help_exit_code = rc;
	help_argv_text(c, &argv);
	switch (p->status) {
	case PROBE_NOT_FOUND:
		/* help_command[0] differs from binary, or it vanished meanwhile */
		ret->binary_installed = false;
		ret->skipped_reason =
			sbuf_strf("<binary '%s' not found in PATH>", c->help_command[0]);
		goto out;
	case PROBE_SPAWN_FAILED:
		(void)sbuf_addf(&what, "could not be started (%s)", strerror(p->spawn_errno));
		runtime_failure(ret, argv.buf, what.buf, NULL);
		goto out;
	case PROBE_TIMED_OUT:
		ret->timed_out = true;
		(void)sbuf_adds(&what, "timed out after ");
		timeout_text(&what, timeout_ms);
		snip = snippet(p->output, p->output_len, CONTRACT_SNIPPET_CHARS);
		runtime_failure(ret, argv.buf, what.buf, snip);
		goto out;
	default:
		break;
	}
	reason = contract_probe_failure(c, p->output, p->output_len, rc);
	if (reason) {
		if (p->status == PROBE_SIGNALED)
			(void)sbuf_addf(&what, "was killed by signal %d with %s", p->term_signal,
					reason);
		else
			(void)sbuf_addf(&what, "exited %d with %s", rc, reason);
		snip = snippet(p->output, p->output_len, CONTRACT_SNIPPET_CHARS);
		runtime_failure(ret, argv.buf, what.buf, snip);
		goto out;
	}
	(void)contract_match_help(c, p->output, p->output_len, &ret->capability_failures);
	ret->help_checked = true;
out:
	free(snip);
	sbuf_release(&argv);
	sbuf_release(&what);
}

int contract_check_all(const struct contract *const *cs, size_t n,
		       const struct contract_check_opts *opts, struct contract_result *rets)
{
	static const struct contract_check_opts no_opts;
	struct strvec env = STRVEC_INIT;
	struct probe *probes = NULL;
	size_t *owner = NULL, np = 0, i;
	uint64_t timeout;
	int r = 0, k;

	if (!opts)
		opts = &no_opts;
	timeout = opts->help_timeout_ms ? opts->help_timeout_ms : CONTRACT_DEFAULT_HELP_TIMEOUT_MS;
	probes = xcalloc(n ? n : 1, sizeof(*probes));
	owner = xcalloc(n ? n : 1, sizeof(*owner));
	for (i = 0; i < n; i++) {
		if (!check_prepare(cs[i], opts, &rets[i]))
			continue;
		probes[np].binary = cs[i]->help_command[0];
		probes[np].args = cs[i]->help_command + 1; /* {NULL} when none */
		owner[np++] = i;
	}
	if (np) {
		struct probe_opts po = {
			.path_env = env_lookup(opts->envp, "PATH"),
			.timeout_ms = timeout,
			.max_output =
				opts->max_output ? opts->max_output : CONTRACT_DEFAULT_MAX_OUTPUT,
			.max_parallel = opts->max_parallel,
			.clock = opts->clock,
		};

		contract_sandbox_env(opts->envp, NULL, &env);
		po.env = env.v;
		r = probe_run(probes, np, &po);
		if (r < 0)
			goto out;
	}
	for (i = 0; i < np; i++)
		check_evaluate(cs[owner[i]], &probes[i], timeout, &rets[owner[i]]);
	/* The model-list commands (rare; they may need a secret): one by one. */
	for (i = 0; i < n; i++)
		if (rets[i].help_checked && cs[i]->n_models_required && cs[i]->n_models_command) {
			k = check_models(cs[i], opts, &rets[i]);
			if (k < 0 && r == 0)
				r = k;
		}
out:
	for (i = 0; i < np; i++)
		probe_release(&probes[i]);
	free(probes);
	free(owner);
	strvec_clear(&env);
	return r;
}

int contract_check(const struct contract *c, const struct contract_check_opts *opts,
		   struct contract_result *ret)
{
	return contract_check_all(&c, 1, opts, ret);
}

void contract_result_release(struct contract_result *r)
{
	if (!r)
		return;
	free(r->adapter);
	free(r->binary);
	free(r->skipped_reason);
	free(r->runtime_failure);
	strvec_clear(&r->capability_failures);
	strvec_clear(&r->model_failures);
	*r = (struct contract_result)CONTRACT_RESULT_INIT;
}

bool contract_result_drifted(const struct contract_result *r)
{
	return r->capability_failures.nr > 0 || r->model_failures.nr > 0;
}

bool contract_result_passed(const struct contract_result *r)
{
	return r->binary_installed && r->help_checked && !r->runtime_failure &&
	       !contract_result_drifted(r);
}

static const char *const verdict_names[_CONTRACT_VERDICT_MAX] = {
	[CONTRACT_VERDICT_PASSED] = "passed",
	[CONTRACT_VERDICT_DRIFTED] = "drifted",
	[CONTRACT_VERDICT_RUNTIME_FAILURE] = "runtime-failure",
	[CONTRACT_VERDICT_NOT_INSTALLED] = "not-installed",
	[CONTRACT_VERDICT_SKIPPED] = "skipped",
};

enum contract_verdict contract_result_verdict(const struct contract_result *r)
{
	if (contract_result_passed(r))
		return CONTRACT_VERDICT_PASSED;
	if (contract_result_drifted(r))
		return CONTRACT_VERDICT_DRIFTED;
	if (r->runtime_failure)
		return CONTRACT_VERDICT_RUNTIME_FAILURE;
	if (!r->binary_installed && r->binary && r->binary[0])
		return CONTRACT_VERDICT_NOT_INSTALLED;
	return CONTRACT_VERDICT_SKIPPED;
}

const char *contract_verdict_to_string(enum contract_verdict v)
{
	if (v < 0 || v >= _CONTRACT_VERDICT_MAX)
		return NULL;
	return verdict_names[v];
}

/* ---- the set of contract files -------------------------------------------- */

static struct contract_entry *index_slot(struct contract_index *idx, const char *name)
{
	size_t lo = 0, hi = idx->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(idx->v[mid].name, name);

		if (cmp == 0)
			return &idx->v[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (idx->n == idx->alloc) {
		idx->alloc = idx->alloc ? 2 * idx->alloc : 32;
		idx->v = xrealloc(idx->v, st_mult(idx->alloc, sizeof(*idx->v)));
	}
	memmove(idx->v + lo + 1, idx->v + lo, (idx->n - lo) * sizeof(*idx->v));
	idx->n++;
	memset(&idx->v[lo], 0, sizeof(idx->v[lo]));
	idx->v[lo].name = arena_strdup(&idx->arena, name);
	return &idx->v[lo];
}

/* "contracts/claude.yaml" -> "claude"; NULL when not a contract file name. */
static char *contract_file_name(const char *rel)
{
	size_t n = strlen(rel), pre = strlen(CONTRACT_DIR "/"), suf = strlen(CONTRACT_SUFFIX);

	if (n <= pre + suf || strncmp(rel, CONTRACT_DIR "/", pre) != 0 ||
	    strcmp(rel + n - suf, CONTRACT_SUFFIX) != 0 || strchr(rel + pre, '/'))
		return NULL;
	return xstrndup(rel + pre, n - pre - suf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int index_add_dir(struct contract_index *idx, const char *catdir, struct diag *reterr)
{
	struct sbuf dirpath = SBUF_INIT(SIZE_MAX), path = SBUF_INIT(SIZE_MAX);
	struct strvec names = STRVEC_INIT;
	struct dirent *de;
	DIR *d = NULL;
	size_t i, suf = strlen(CONTRACT_SUFFIX);
	int r = 0;

	if (!catdir || !catdir[0])
		return 0;
	(void)sbuf_addf(&dirpath, "%s/%s", catdir, CONTRACT_DIR);
	d = opendir(dirpath.buf);
	if (!d) {
		r = -errno;
		if (r == -ENOENT || r == -ENOTDIR)
			r = 0;
		else
			diag_set(reterr, dirpath.buf, 0, 0, "cannot open contract directory: %s",
				 strerror(-r));
		goto out;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.' || n <= suf ||
		    strcmp(de->d_name + n - suf, CONTRACT_SUFFIX))
			continue;
		(void)strvec_push(&names, de->d_name);
	}
	qsort(names.v, names.nr, sizeof(*names.v), cmp_str);
	for (i = 0; i < names.nr; i++) {
		char *stem = xstrndup(names.v[i], strlen(names.v[i]) - suf);
		struct contract_entry *e;

		sbuf_reset(&path);
		(void)sbuf_addf(&path, "%s/%s", dirpath.buf, names.v[i]);
		if (!contract_name_valid(stem)) {
			diag_set(reterr, path.buf, 0, 0,
				 "invalid contract file name (expected [a-z0-9][a-z0-9_-]*.yaml)");
			free(stem);
			r = -EINVAL;
			goto out;
		}
		e = index_slot(idx, stem);
		e->source = arena_strdup(&idx->arena, path.buf);
		e->data = NULL;
		e->len = 0;
		free(stem);
	}
out:
	if (d)
		(void)closedir(d);
	strvec_clear(&names);
	sbuf_release(&dirpath);
	sbuf_release(&path);
	return r;
}

int contract_index_build(const char *user_dir, const char *repo_dir, struct contract_index **ret,
			 struct diag *reterr)
{
	const char *dirs[] = {user_dir, repo_dir, NULL};

	return contract_index_build_dirs(user_dir ? dirs : dirs + 1, ret, reterr);
}

int contract_index_build_dirs(const char *const *dirs, struct contract_index **ret,
			      struct diag *reterr)
{
	struct contract_index *idx = xcalloc(1, sizeof(*idx));
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	const struct catalog_file *f;
	size_t i;
	int r = 0;

	arena_init(&idx->arena, 4096);
	for (f = catalog_embedded; f->name; f++) {
		char *stem = contract_file_name(f->name);
		struct contract_entry *e;

		if (!stem)
			continue;
		if (!contract_name_valid(stem)) {
			free(stem);
			continue; /* cannot happen for a reviewed catalogue; the unit test checks */
		}
		e = index_slot(idx, stem);
		sbuf_reset(&sb);
		(void)sbuf_addf(&sb, "%s%s", CATALOG_EMBEDDED_PREFIX, f->name);
		e->source = arena_strdup(&idx->arena, sb.buf);
		e->data = (const char *)f->data;
		e->len = f->len;
		free(stem);
	}
	for (i = 0; dirs && dirs[i]; i++) {
		r = index_add_dir(idx, dirs[i], reterr);
		if (r < 0)
			goto out;
	}
	r = 0;
	*ret = idx;
	idx = NULL;
out:
	contract_index_free(idx);
	sbuf_release(&sb);
	return r;
}

const struct contract_entry *contract_index_find(const struct contract_index *idx, const char *name)
{
	size_t lo = 0, hi;

	if (!idx)
		return NULL;
	hi = idx->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(idx->v[mid].name, name);

		if (cmp == 0)
			return &idx->v[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int contract_index_load(const struct contract_entry *e, struct contract **ret, struct diag *reterr)
{
	struct contract *c = NULL;
	int r;

	if (e->data)
		r = contract_load_buf(e->name, e->source, e->data, e->len, &c, reterr);
	else
		r = load_path(e->name, e->source, &c, reterr);
	if (r < 0)
		return r;
	/* A contract that pins nothing would pass every drift check and let
	 * gate 2 hold a profile to nothing: an empty override file (or one
	 * with only defaults) is an error, not a way to switch checking off. */
	if (c->n_required_flags + c->n_required_subcommands == 0) {
		diag_set(
			reterr, e->source, 0, 0,
			"contract '%s' pins no required_flags or required_subcommands: a contract without content would disable drift checking",
			e->name);
		contract_free(c);
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

struct contract_index *contract_index_free(struct contract_index *idx)
{
	if (!idx)
		return NULL;
	free(idx->v);
	arena_release(&idx->arena);
	free(idx);
	return NULL;
}
