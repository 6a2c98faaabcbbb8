/* bernstein.yaml (config.h) and the schema helpers plan.c shares
 * (config-internal.h). */
#include "orch/config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/credential.h"
#include "adapter/profile.h"
#include "orch/config-internal.h"
#include "orch/protect.h"
#include "util/fsutil.h"
#include "util/mathx.h"
#include "util/url.h"
#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/banned.h"

const char *const orch_roles[] = {
	"adversary",   "analyst",	  "architect", "backend",  "ci-fixer",
	"data",	       "devops",	  "docs",      "frontend", "manager",
	"ml-engineer", "prompt-engineer", "qa",	       "resolver", "retrieval",
	"reviewer",    "security",	  "visionary", "vp",	   NULL,
};

const char *const orch_efforts[] = {"low", "medium", "normal", "high", "max", NULL};

/* NULL-terminated: yaml_value_enum() reads it */
static const char *const merge_names[_MERGE_POLICY_MAX + 1] = {
	[MERGE_AUTO] = "auto",
	[MERGE_NONE] = "none",
	[MERGE_REVIEW] = "review",
	[MERGE_PR] = "pr",
};
#define MERGE_NO_FF_SPELLING "no-ff" /* the old name of auto, still accepted */

const char *merge_policy_to_string(enum merge_policy m)
{
	return m >= 0 && m < _MERGE_POLICY_MAX ? merge_names[m] : NULL;
}

enum merge_policy merge_policy_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _MERGE_POLICY_MAX; i++)
		if (strcmp(merge_names[i], s) == 0)
			return (enum merge_policy)i;
	return s && strcmp(s, MERGE_NO_FF_SPELLING) == 0 ? MERGE_AUTO : _MERGE_POLICY_INVALID;
}

const char *const conflict_policy_names[_CONFLICT_POLICY_MAX + 1] = {
	[CONFLICT_REBASE] = "rebase",
	[CONFLICT_RESOLVE] = "resolve",
	[CONFLICT_FAIL] = "fail",
};

const char *conflict_policy_to_string(enum conflict_policy p)
{
	return (int)p >= 0 && p < _CONFLICT_POLICY_MAX ? conflict_policy_names[p] : NULL;
}

enum conflict_policy conflict_policy_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _CONFLICT_POLICY_MAX; i++)
		if (strcmp(conflict_policy_names[i], s) == 0)
			return (enum conflict_policy)i;
	return _CONFLICT_POLICY_INVALID;
}

int orch_get_on_conflict(const struct ydoc *doc, const struct ynode *n, const char *path,
			 enum conflict_policy *ret, struct diag *reterr)
{
	int m = 0, r;

	r = yaml_value_enum(doc, n, path, conflict_policy_names, &m, reterr);
	if (r == 0)
		*ret = (enum conflict_policy)m;
	return r;
}

static const char *const sandbox_names[_SANDBOX_MODE_MAX + 1] = {
	[SANDBOX_NONE] = "none",   [SANDBOX_LANDLOCK] = "landlock",
	[SANDBOX_BWRAP] = "bwrap", [SANDBOX_CONTAINER] = "container",
	[SANDBOX_AUTO] = "auto",
};

const char *sandbox_mode_to_string(enum sandbox_mode m)
{
	return m >= 0 && m < _SANDBOX_MODE_MAX ? sandbox_names[m] : NULL;
}

enum sandbox_mode sandbox_mode_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _SANDBOX_MODE_MAX; i++)
		if (strcmp(sandbox_names[i], s) == 0)
			return (enum sandbox_mode)i;
	return _SANDBOX_MODE_INVALID;
}

static const char *const checkout_names[_CHECKOUT_MODE_MAX + 1] = {
	[CHECKOUT_MODE_AUTO] = "auto",
	[CHECKOUT_MODE_WORKTREE] = "worktree",
	[CHECKOUT_MODE_OVERLAY] = "overlay",
	[CHECKOUT_MODE_REFLINK] = "reflink",
};

const char *checkout_mode_to_string(enum checkout_mode m)
{
	return m >= 0 && m < _CHECKOUT_MODE_MAX ? checkout_names[m] : NULL;
}

/* checkout: auto | worktree | overlay | reflink */
static int parse_checkout(const struct ydoc *doc, const struct ynode *n, const char *path,
			  enum checkout_mode *ret, struct diag *reterr)
{
	int m = 0, r;

	r = yaml_value_enum(doc, n, path, checkout_names, &m, reterr);
	if (r == 0)
		*ret = (enum checkout_mode)m;
	return r;
}

bool orch_role_known(const char *role)
{
	size_t i;

	for (i = 0; role && orch_roles[i]; i++)
		if (strcmp(orch_roles[i], role) == 0)
			return true;
	return false;
}

/* ---- typed values (util/yschema.h) ---- */

#define Q(buf, s) yaml_quote(buf, sizeof(buf), s)

int orch_check_keys(const struct ydoc *doc, const struct ynode *map, const char *const *keys,
		    const char *what, struct diag *reterr)
{
	struct ycheck c = YCHECK_INIT(doc, YCHECK_IN, NULL, reterr);

	return yaml_check_keys(&c, map, keys, NULL, what);
}

int orch_get_adapter(const struct ydoc *doc, const struct ynode *n, const char *path,
		     const char **ret, struct diag *reterr)
{
	const char *s = NULL;
	char q[80];
	int r;

	r = yaml_value_str(doc, n, path, true, &s, reterr);
	if (r < 0)
		return r;
	if (s && strcmp(s, "auto") == 0)
		s = NULL;
	if (s && !profile_name_valid(s))
		return yaml_field_err(
			doc, n, reterr, path,
			"invalid adapter name '%s' (expected [a-z][a-z0-9_]*, at most %d bytes)",
			Q(q, s), PROFILE_MAX_NAME);
	*ret = s;
	return 0;
}

int orch_get_network(const struct ydoc *doc, const struct ynode *n, const char *path,
		     enum net_mode *ret, struct diag *reterr)
{
	static const char *const names[] = {"full", "llm", "none", NULL};
	int m = 0, r;

	r = yaml_value_enum(doc, n, path, names, &m, reterr);
	if (r == 0)
		*ret = net_mode_from_string(names[m]);
	return r;
}

int orch_get_sandbox(const struct ydoc *doc, const struct ynode *n, const char *path,
		     enum sandbox_mode *ret, struct diag *reterr)
{
	int m = 0, r;

	r = yaml_value_enum(doc, n, path, sandbox_names, &m, reterr);
	if (r == 0)
		*ret = (enum sandbox_mode)m;
	return r;
}

/* "512M", "2G", "1048576": bytes, with an optional binary suffix K, M, G, T. */
static int get_bytes(const struct ydoc *doc, const struct ynode *n, const char *path, uint64_t *ret,
		     struct diag *reterr)
{
	const char *s = yaml_is_str(n) ? n->str : NULL, *p;
	uint64_t v = 0, mult = 1;

	if (!s || !*s || *s < '0' || *s > '9')
		return yaml_field_err(doc, n, reterr, path,
				      "expected a size in bytes (512M, 2G, 1048576), got %s",
				      yaml_describe(n));
	for (p = s; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return yaml_field_err(doc, n, reterr, path, "size out of range");
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p) {
		const char *units = "KMGT", *u = strchr(units, *p);

		if (!u || p[1])
			return yaml_field_err(
				doc, n, reterr, path,
				"expected a size in bytes (512M, 2G, 1048576), got '%s'", s);
		mult = (uint64_t)1 << (10 * (u - units + 1));
	}
	if (v > CONTAIN_MAX_MEMORY / mult || v * mult < CONTAIN_MIN_MEMORY ||
	    v * mult > CONTAIN_MAX_MEMORY)
		return yaml_field_err(doc, n, reterr, path, "'%s' is out of range (1M..1024T)", s);
	*ret = v * mult;
	return 0;
}

int orch_get_limits(const struct ydoc *doc, const struct ynode *n, const char *path,
		    struct contain_limits *ret, struct diag *reterr)
{
	static const char *const keys[] = {"memory", "pids", "cpu", NULL};
	struct contain_limits l = {0};
	char p[YAML_PATH_MAX];
	size_t i;
	int r;

	if (!n || n->kind != YNODE_MAP)
		return yaml_field_err(doc, n, reterr, path,
				      "expected a mapping of limits (memory, pids, cpu), got %s",
				      yaml_describe(n));
	r = orch_check_keys(doc, n, keys, path, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < n->n; i++) {
		const char *k = n->keys[i]->str;
		const struct ynode *v = n->items[i];

		yaml_path_key(p, sizeof(p), path, k);
		if (strcmp(k, "memory") == 0) {
			r = get_bytes(doc, v, p, &l.memory, reterr);
		} else if (strcmp(k, "pids") == 0) {
			int64_t pids = 0;

			r = yaml_value_int(doc, v, p, 1, CONTAIN_MAX_PIDS, &pids, reterr);
			l.pids = (uint64_t)pids;
		} else {
			double cpu = 0;

			r = yaml_value_number(doc, v, p, CONTAIN_MIN_CPU_MILLI / 1000.0, false,
					      (double)CONTAIN_MAX_CPU_MILLI / 1000.0, &cpu, reterr);
			l.cpu_milli = (uint64_t)mathx_llround(cpu * 1000.0);
		}
		if (r < 0)
			return r;
	}
	*ret = l;
	return 0;
}

int orch_get_effort(const struct ydoc *doc, const struct ynode *n, const char *path,
		    const char **ret, struct diag *reterr)
{
	int i = 0, r = yaml_value_enum(doc, n, path, orch_efforts, &i, reterr);

	if (r < 0)
		return r;
	*ret = orch_efforts[i];
	return 0;
}

/* A label: 1..ORCH_MAX_NAME bytes, no control characters. */
static bool label_valid(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > ORCH_MAX_NAME)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int orch_get_gates(struct arena *a, const struct ydoc *doc, const struct ynode *n, const char *path,
		   struct orch_gate **ret, size_t *ret_n, struct diag *reterr)
{
	static const char *const keys[] = {"name", "run", "timeout", NULL};
	char p[YAML_PATH_MAX], pk[YAML_PATH_MAX], q[80];
	struct orch_gate *g;
	size_t i, j;
	int r;

	if (!n || n->kind != YNODE_SEQ)
		return yaml_field_err(doc, n, reterr, path,
				      "expected a list of gates ({name, run, timeout}), got %s",
				      yaml_describe(n));
	g = arena_alloc(a, st_mult(n->n ? n->n : 1, sizeof(*g)));
	for (i = 0; i < n->n; i++) {
		const struct ynode *m = n->items[i], *v;

		yaml_path_index(p, sizeof(p), path, i);
		r = orch_check_keys(doc, m, keys, p, reterr);
		if (r < 0)
			return r;
		g[i].line = m->line;
		g[i].col = m->col;
		g[i].timeout_s = ORCH_DEFAULT_GATE_TIMEOUT_S;
		v = ynode_get(m, "name");
		if (!v)
			return yaml_field_err(doc, m, reterr, p, "missing required key 'name'");
		r = yaml_value_str(doc, v, yaml_path_key(pk, sizeof(pk), p, "name"), false,
				   &g[i].name, reterr);
		if (r < 0)
			return r;
		if (!label_valid(g[i].name))
			return yaml_field_err(
				doc, v, reterr, pk,
				"invalid gate name '%s' (at most %d bytes, no control characters)",
				Q(q, g[i].name), ORCH_MAX_NAME);
		for (j = 0; j < i; j++)
			if (strcmp(g[j].name, g[i].name) == 0)
				return yaml_field_err(doc, v, reterr, pk,
						      "duplicate gate name '%s' (first at line %u)",
						      Q(q, g[i].name), g[j].line);
		v = ynode_get(m, "run");
		if (!v)
			return yaml_field_err(doc, m, reterr, p, "missing required key 'run'");
		r = yaml_value_str(doc, v, yaml_path_key(pk, sizeof(pk), p, "run"), false,
				   &g[i].run, reterr);
		if (r < 0)
			return r;
		v = ynode_get(m, "timeout");
		if (v) {
			r = yaml_value_number(doc, v, yaml_path_key(pk, sizeof(pk), p, "timeout"),
					      0, true, ORCH_MAX_TIMEOUT_S, &g[i].timeout_s, reterr);
			if (r < 0)
				return r;
		}
	}
	*ret = g;
	*ret_n = n->n;
	return 0;
}

/* ---- sampling and endpoint slots ---- */

int orch_get_slot(const struct ydoc *doc, const struct ynode *n, const char *path,
		  enum sampling_key k, const char *allowed, struct invocation_sampling *s,
		  struct diag *reterr)
{
	const char *str = NULL;
	struct diag d;
	int r;

	switch (k) {
	case SAMPLING_TEMPERATURE:
		r = yaml_value_number(doc, n, path, 0, false, INFINITY, &s->temperature, reterr);
		break;
	case SAMPLING_TOP_P:
		r = yaml_value_number(doc, n, path, 0, false, 1, &s->top_p, reterr);
		break;
	case SAMPLING_TOP_K:
		r = yaml_value_int(doc, n, path, 0, INT64_MAX, &s->top_k, reterr);
		break;
	case SAMPLING_MAX_TOKENS:
		r = yaml_value_int(doc, n, path, 1, INT64_MAX, &s->max_tokens, reterr);
		break;
	case SAMPLING_BASE_URL:
		r = yaml_value_str(doc, n, path, false, &str, reterr);
		if (r < 0)
			return r;
		diag_clear(&d);
		if (url_check(str, NULL, &d) < 0)
			return yaml_field_err(doc, n, reterr, path, "%s", d.msg);
		s->base_url = str;
		break;
	case SAMPLING_API_KEY_ENV:
		r = yaml_value_str(doc, n, path, false, &str, reterr);
		if (r < 0)
			return r;
		diag_clear(&d);
		if (credential_env_check(str, allowed, &d) < 0)
			return yaml_field_err(doc, n, reterr, path, "%s", d.msg);
		s->api_key_env = str;
		break;
	case _SAMPLING_KEY_MAX:
	case _SAMPLING_KEY_INVALID:
	default:
		BUG("bad sampling key %d", (int)k);
	}
	if (r < 0)
		return r;
	s->set |= 1u << k;
	return 0;
}

int orch_get_slots(const struct ydoc *doc, const struct ynode *n, const char *path,
		   enum orch_slot_keys which, const char *allowed, struct invocation_sampling *ret,
		   struct diag *reterr)
{
	const char *keys[_SAMPLING_KEY_MAX + 1];
	struct invocation_sampling s = {0};
	char p[YAML_PATH_MAX];
	size_t i, nk = 0;
	int r;

	for (i = 0; i < _SAMPLING_KEY_MAX; i++) {
		bool endpoint = i == SAMPLING_BASE_URL || i == SAMPLING_API_KEY_ENV;

		if ((endpoint && (which & ORCH_SLOTS_ENDPOINT)) ||
		    (!endpoint && (which & ORCH_SLOTS_SAMPLING)))
			keys[nk++] = sampling_key_to_string((enum sampling_key)i);
	}
	keys[nk] = NULL;
	r = orch_check_keys(doc, n, keys, path, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < n->n; i++) {
		enum sampling_key k = sampling_key_from_string(n->keys[i]->str);

		if (k < 0)
			BUG("key checked but unknown");
		r = orch_get_slot(doc, n->items[i],
				  yaml_path_key(p, sizeof(p), path, n->keys[i]->str), k, allowed,
				  &s, reterr);
		if (r < 0)
			return r;
	}
	*ret = s;
	return 0;
}

/* ---- the configuration ---- */

static const struct {
	const char *name;
	double temperature;
} builtin_modes[] = {
	{"smart", 0.2},
	{"deep", 0.3},
	{"fast", 0.0},
};

const char *const orch_auto_default[] = {"claude",   "codex", "gemini", "qwen",
					 "opencode", "pi",    NULL};

static struct orch_config *config_new(void)
{
	struct orch_config *c = xcalloc(1, sizeof(*c));
	size_t i;

	arena_init(&c->arena, 0);
	strvec_init(&c->preference);
	strvec_init(&c->auto_order);
	strvec_pushv(&c->auto_order, orch_auto_default);
	c->adapter = ORCH_DEFAULT_ADAPTER;
	c->parallel = ORCH_DEFAULT_PARALLEL;
	c->timeout_s = ORCH_DEFAULT_TIMEOUT_S;
	c->kill_grace_s = ORCH_DEFAULT_KILL_GRACE_S;
	c->max_retries = ORCH_DEFAULT_MAX_RETRIES;
	c->retry_backoff_s = ORCH_DEFAULT_RETRY_BACKOFF_S;
	c->merge = MERGE_AUTO;
	c->pr.remote = ORCH_DEFAULT_PR_REMOTE;
	c->pr.draft = true;
	c->sandbox = SANDBOX_AUTO;
	c->network = -1;
	orch_notify_init(&c->notify);
	c->budget = (struct orch_budget)ORCH_BUDGET_INIT;
	c->n_modes = ARRAY_SIZE(builtin_modes);
	c->modes = arena_alloc(&c->arena, st_mult(c->n_modes, sizeof(*c->modes)));
	for (i = 0; i < c->n_modes; i++) {
		c->modes[i].name = builtin_modes[i].name;
		c->modes[i].builtin = true;
		c->modes[i].sampling.temperature = builtin_modes[i].temperature;
		c->modes[i].sampling.set = 1u << SAMPLING_TEMPERATURE;
	}
	return c;
}

struct orch_config *orch_config_new_default(void)
{
	return config_new();
}

struct orch_config *orch_config_free(struct orch_config *c)
{
	if (!c)
		return NULL;
	strvec_clear(&c->preference);
	strvec_clear(&c->auto_order);
	arena_release(&c->arena);
	ydoc_free(c->doc);
	free(c);
	return NULL;
}

/* [a-z0-9][a-z0-9_-]*, at most ORCH_MAX_NAME bytes. */
static bool mode_name_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > ORCH_MAX_NAME)
		return false;
	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		      (i > 0 && (ch == '_' || ch == '-'))))
			return false;
	}
	return true;
}

struct cctx {
	struct orch_config *c;
	const struct ydoc *doc;
	const char *allowed;
	struct diag *reterr;
};

/* preference: and auto: adapter names, no duplicates, into *out (cleared
 * first); auto's never mock (an offline demo, not an agent) nor auto
 * itself. */
static int parse_adapters(struct cctx *x, const struct ynode *n, const char *key,
			  struct strvec *out)
{
	bool for_auto = strcmp(key, "auto") == 0;
	const char **v = NULL;
	char p[YAML_PATH_MAX], q[80];
	size_t i, nv = 0;
	int r;

	r = yaml_value_strlist(&x->c->arena, x->doc, n, key, &v, &nv, x->reterr);
	if (r < 0)
		return r;
	strvec_clear(out);
	for (i = 0; i < nv; i++) {
		yaml_path_index(p, sizeof(p), key, i);
		if (!profile_name_valid(v[i]))
			return yaml_field_err(
				x->doc, n->items[i], x->reterr, p,
				"invalid adapter name '%s' (expected [a-z][a-z0-9_]*)", Q(q, v[i]));
		if (for_auto && (strcmp(v[i], "mock") == 0 || strcmp(v[i], ORCH_ADAPTER_AUTO) == 0))
			return yaml_field_err(
				x->doc, n->items[i], x->reterr, p,
				"'%s' cannot be chosen by auto (list agent CLIs: claude, codex, ...)",
				v[i]);
		if (strvec_find(out, v[i]) >= 0)
			return yaml_field_err(x->doc, n->items[i], x->reterr, p,
					      "duplicate adapter '%s'", v[i]);
		strvec_push(out, v[i]);
	}
	return 0;
}

/* protected_paths: rules over the built-in ones (orch/protect.h). */
static int parse_protected(struct cctx *x, const struct ynode *n)
{
	const char **v = NULL, *why = NULL;
	char p[YAML_PATH_MAX], q[80];
	size_t i, nv = 0;
	int r;

	r = yaml_value_strlist(&x->c->arena, x->doc, n, "protected_paths", &v, &nv, x->reterr);
	if (r < 0)
		return r;
	if (nv > PROTECT_MAX_RULES)
		return yaml_field_err(x->doc, n, x->reterr, "protected_paths",
				      "%zu rules: at most %d", nv, PROTECT_MAX_RULES);
	for (i = 0; i < nv; i++) {
		yaml_path_index(p, sizeof(p), "protected_paths", i);
		if (protect_rule_check(v[i], &why) < 0)
			return yaml_field_err(x->doc, n->items[i], x->reterr, p, "'%s': %s",
					      Q(q, v[i]), why);
	}
	x->c->protected_paths = v;
	x->c->n_protected = nv;
	return 0;
}

/* modes: a built-in of the same name is replaced in place, a new one
 * appended (at c->n_modes). */
static int parse_mode_entry(void *ctx, const struct ydoc *doc, size_t i, const struct ynode *k,
			    const struct ynode *v, const char *p, struct diag *reterr)
{
	struct cctx *x = ctx;
	struct orch_config *c = x->c;
	struct mode_profile *e = NULL;
	size_t j;

	(void)i;
	for (j = 0; j < c->n_modes; j++)
		if (strcmp(c->modes[j].name, k->str) == 0)
			e = &c->modes[j]; /* a built-in: replaced in place */
	if (!e)
		e = &c->modes[c->n_modes++];
	memset(e, 0, sizeof(*e));
	e->name = k->str;
	e->line = k->line;
	e->col = k->col;
	return orch_get_slots(doc, v, p, ORCH_SLOTS_SAMPLING, x->allowed, &e->sampling, reterr);
}

static const struct ynamed modes_map = {
	.what = "a mapping of mode profiles",
	.name_ok = mode_name_valid,
	.kind = "mode",
	.expect = "[a-z0-9][a-z0-9_-]*, at most " YAML_STRINGIFY(ORCH_MAX_NAME) " bytes",
	.entry = parse_mode_entry,
};

static int parse_modes(struct cctx *x, const struct ynode *n)
{
	struct orch_config *c = x->c;
	struct mode_profile *m;
	int r;

	if (n && n->kind == YNODE_MAP) {
		m = arena_alloc(&c->arena, st_mult(c->n_modes + n->n, sizeof(*m)));
		memcpy(m, c->modes, st_mult(c->n_modes, sizeof(*m)));
		c->modes = m;
	}
	r = yaml_named_map(x->doc, n, "modes", &modes_map, x, x->reterr);
	return r < 0 ? r : 0;
}

/* retry: or fallback: (orch/retry.h) */
static int parse_retry(struct cctx *x, const char *key, const struct ynode *v, const char *path,
		       struct retry_policy *ret)
{
	if (strcmp(key, "retry") == 0)
		return retry_get_yaml(&x->c->arena, x->doc, v, path, ret, x->reterr);
	return retry_get_fallback(&x->c->arena, x->doc, v, path, ret, x->reterr);
}

/* max_retries and retry.max_attempts, retry_backoff and retry.backoff:
 * one spelling each, the two kept in step */
static int retry_legacy(struct cctx *x)
{
	const struct ynode *root = x->doc->root, *rv = ynode_get(root, "retry");
	struct orch_config *c = x->c;

	if (rv && ynode_get(root, "max_retries") && ynode_get(rv, "max_attempts"))
		return yaml_field_err(
			x->doc, ynode_get(rv, "max_attempts"), x->reterr, "retry.max_attempts",
			"give retry.max_attempts or its older spelling max_retries (attempts - 1), not both");
	if (rv && ynode_get(root, "retry_backoff") && ynode_get(rv, "backoff"))
		return yaml_field_err(
			x->doc, ynode_get(rv, "backoff"), x->reterr, "retry.backoff",
			"give retry.backoff or its older spelling retry_backoff, not both");
	if (c->retry.max_attempts)
		c->max_retries = c->retry.max_attempts - 1;
	if (c->retry.has_backoff)
		c->retry_backoff_s = c->retry.backoff_s;
	return 0;
}

/* the top level's retry: and fallback:, then their older spellings */
static int retry_top(struct cctx *x)
{
	const struct ynode *root = x->doc->root, *v;
	int r = 0;

	if ((v = ynode_get(root, "retry")))
		r = parse_retry(x, "retry", v, "retry", &x->c->retry);
	if (r == 0 && (v = ynode_get(root, "fallback")))
		r = parse_retry(x, "fallback", v, "fallback", &x->c->retry);
	return r < 0 ? r : retry_legacy(x);
}

/* The keys of a role that shape how its tasks run (limits, sandbox,
 * network, retry, fallback, idle_timeout, worktree_setup, on_conflict): true
 * when key is
 * one, its result in *ret. */
static bool role_confinement(struct cctx *x, const char *key, const struct ynode *val,
			     const char *pk, struct role_policy *rp, int *ret)
{
	int r;

	if (strcmp(key, "limits") == 0) {
		r = orch_get_limits(x->doc, val, pk, &rp->limits, x->reterr);
	} else if (strcmp(key, "sandbox") == 0) {
		r = orch_get_sandbox(x->doc, val, pk, &rp->sandbox, x->reterr);
		rp->has_sandbox = r >= 0;
	} else if (strcmp(key, "network") == 0) {
		r = orch_get_network(x->doc, val, pk, &rp->network, x->reterr);
		rp->has_network = r >= 0;
	} else if (strcmp(key, "retry") == 0 || strcmp(key, "fallback") == 0) {
		r = parse_retry(x, key, val, pk, &rp->retry);
	} else if (strcmp(key, "idle_timeout") == 0) {
		r = yaml_value_number(x->doc, val, pk, 0, false, ORCH_MAX_TIMEOUT_S,
				      &rp->idle_timeout_s, x->reterr);
		rp->has_idle_timeout = r >= 0;
	} else if (strcmp(key, "worktree_setup") == 0) {
		r = orch_get_wtsetup(&x->c->arena, x->doc, val, pk, &rp->wtsetup, x->reterr);
	} else if (strcmp(key, "on_conflict") == 0) {
		r = orch_get_on_conflict(x->doc, val, pk, &rp->on_conflict, x->reterr);
		rp->has_on_conflict = r >= 0;
	} else if (strcmp(key, "executor") == 0) {
		r = executor_get_kind(x->doc, val, pk, &rp->executor, x->reterr);
		rp->has_executor = r >= 0;
	} else {
		return false;
	}
	*ret = r;
	return true;
}

/* a role's hooks: (no on_run_end: the run's, not a task's) or notify: */
static int role_hooks(struct cctx *x, const char *key, const struct ynode *val, const char *pk,
		      struct role_policy *rp)
{
	size_t i;
	int r;

	if (strcmp(key, "notify") == 0)
		return orch_get_notify(x->doc, val, pk, &rp->notify, x->reterr);
	r = orch_get_hooks(x->doc, val, pk, &rp->hooks, x->reterr);
	for (i = 0; r == 0 && i < val->n; i++)
		if (strcmp(val->keys[i]->str, "on_run_end") == 0)
			return yaml_field_err(
				x->doc, val->keys[i], x->reterr, pk,
				"on_run_end is the run's, not a role's: give it in hooks: at the top level or in the plan");
	return r;
}

static int parse_role(struct cctx *x, const struct ynode *k, const struct ynode *v,
		      struct role_policy *rp)
{
	static const char *const keys[] = {
		"adapter",     "cli",	      "provider",     "model",		"effort",
		"base_url",    "api_key_env", "limits",	      "sandbox",	"network",
		"retry",       "fallback",    "idle_timeout", "worktree_setup", "on_conflict",
		"mcp_servers", "executor",    "hooks",	      "notify",		NULL};
	struct invocation_sampling s = {0};
	char p[YAML_PATH_MAX], pk[YAML_PATH_MAX], q[80];
	size_t i;
	int r;

	yaml_path_key(p, sizeof(p), "role_model_policy", k->str);
	if (!orch_role_known(k->str)) {
		char list[400];
		size_t o = 0;

		list[0] = '\0';
		for (i = 0; orch_roles[i]; i++) {
			int w = snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
					 orch_roles[i]);

			if (w < 0 || (size_t)w >= sizeof(list) - o)
				break;
			o += (size_t)w;
		}
		return yaml_field_err(x->doc, k, x->reterr, p, "unknown role '%s' (known: %s)",
				      Q(q, k->str), list);
	}
	r = orch_check_keys(x->doc, v, keys, p, x->reterr);
	if (r < 0)
		return r;
	if (ynode_get(v, "adapter") && ynode_get(v, "cli")) {
		/* at the second of the two */
		for (i = 0; i < v->n; i++)
			if (strcmp(v->keys[i]->str, "adapter") == 0 ||
			    strcmp(v->keys[i]->str, "cli") == 0)
				break;
		for (i++; i < v->n; i++)
			if (strcmp(v->keys[i]->str, "adapter") == 0 ||
			    strcmp(v->keys[i]->str, "cli") == 0)
				break;
		return yaml_field_err(x->doc, v->keys[i], x->reterr, p,
				      "give 'adapter' or its synonym 'cli', not both");
	}
	rp->role = k->str;
	rp->line = k->line;
	rp->col = k->col;
	for (i = 0; i < v->n; i++) {
		const char *key = v->keys[i]->str;
		const struct ynode *val = v->items[i];

		yaml_path_key(pk, sizeof(pk), p, key);
		if (strcmp(key, "adapter") == 0 || strcmp(key, "cli") == 0) {
			if (ynode_is_null(val))
				return yaml_field_err(x->doc, val, x->reterr, pk,
						      "expected an adapter name, got null");
			r = orch_get_adapter(x->doc, val, pk, &rp->adapter, x->reterr);
		} else if (strcmp(key, "provider") == 0) {
			r = yaml_value_str(x->doc, val, pk, false, &rp->provider, x->reterr);
		} else if (strcmp(key, "model") == 0) {
			r = yaml_value_str(x->doc, val, pk, false, &rp->model, x->reterr);
		} else if (strcmp(key, "effort") == 0) {
			r = orch_get_effort(x->doc, val, pk, &rp->effort, x->reterr);
		} else if (strcmp(key, "base_url") == 0) {
			r = orch_get_slot(x->doc, val, pk, SAMPLING_BASE_URL, x->allowed, &s,
					  x->reterr);
			rp->base_url = s.base_url;
		} else if (strcmp(key, "mcp_servers") == 0) {
			r = orch_mcp_servers_get(&x->c->arena, x->doc, val, pk, x->allowed,
						 &rp->mcp_servers, x->reterr);
		} else if (strcmp(key, "hooks") == 0 || strcmp(key, "notify") == 0) {
			r = role_hooks(x, key, val, pk, rp);
		} else if (role_confinement(x, key, val, pk, rp, &r)) {
			/* done */
		} else {
			r = orch_get_slot(x->doc, val, pk, SAMPLING_API_KEY_ENV, x->allowed, &s,
					  x->reterr);
			rp->api_key_env = s.api_key_env;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_role_entry(void *ctx, const struct ydoc *doc, size_t i, const struct ynode *k,
			    const struct ynode *v, const char *p, struct diag *reterr)
{
	struct cctx *x = ctx;

	(void)doc;
	(void)p;
	(void)reterr;
	return parse_role(x, k, v, &x->c->roles[i]);
}

static const struct ynamed roles_map = {
	.what = "a mapping of roles",
	.entry = parse_role_entry, /* its name: one of the known roles */
};

static int parse_roles(struct cctx *x, const struct ynode *n)
{
	struct orch_config *c = x->c;
	int r;

	if (n && n->kind == YNODE_MAP)
		c->roles = arena_alloc(&c->arena, st_mult(n->n ? n->n : 1, sizeof(*c->roles)));
	r = yaml_named_map(x->doc, n, "role_model_policy", &roles_map, x, x->reterr);
	if (r < 0)
		return r;
	c->n_roles = (size_t)r;
	return 0;
}

static int parse_mode(struct cctx *x, const struct ynode *n)
{
	char q[80];
	int r;

	r = yaml_value_str(x->doc, n, "mode", true, &x->c->mode, x->reterr);
	if (r < 0)
		return r;
	if (x->c->mode && !orch_config_mode(x->c, x->c->mode)) {
		struct sbuf sb = SBUF_INIT(300);
		size_t i;

		for (i = 0; i < x->c->n_modes; i++)
			(void)sbuf_addf(&sb, "%s%s", i ? ", " : "", x->c->modes[i].name);
		r = yaml_field_err(x->doc, n, x->reterr, "mode",
				   "unknown mode profile '%s' (known: %s)", Q(q, x->c->mode),
				   sb.buf);
		sbuf_release(&sb);
		return r;
	}
	return 0;
}

/* pr: {remote, base, repo, draft} */
static int parse_pr(struct cctx *x, const struct ynode *n)
{
	static const char *const keys[] = {"remote", "base", "repo", "draft", NULL};
	struct orch_config *c = x->c;
	char pk[128];
	size_t i;
	int r;

	if (n->kind != YNODE_MAP)
		return yaml_field_err(x->doc, n, x->reterr, "pr", "expected a mapping, got %s",
				      yaml_describe(n));
	r = orch_check_keys(x->doc, n, keys, "pr", x->reterr);
	for (i = 0; r == 0 && i < n->n; i++) {
		const char *key = n->keys[i]->str;
		const struct ynode *v = n->items[i];
		const char **slot = strcmp(key, "remote") == 0 ? &c->pr.remote
				    : strcmp(key, "base") == 0 ? &c->pr.base
				    : strcmp(key, "repo") == 0 ? &c->pr.repo
							       : NULL;

		yaml_path_key(pk, sizeof(pk), "pr", key);
		if (!slot) {
			if (!yaml_is_str(v) || !v->plain ||
			    (strcmp(v->str, "true") != 0 && strcmp(v->str, "false") != 0))
				return yaml_field_err(x->doc, v, x->reterr, pk,
						      "expected true or false, got %s",
						      yaml_describe(v));
			c->pr.draft = strcmp(v->str, "true") == 0;
			continue;
		}
		r = yaml_value_str(x->doc, v, pk, false, slot, x->reterr);
		if (r == 0 && (!**slot || (*slot)[0] == '-' || strpbrk(*slot, " \t\n\r") ||
			       strlen(*slot) > 512))
			return yaml_field_err(x->doc, v, x->reterr, pk,
					      "'%s' is not a remote, branch or repository name",
					      *slot);
	}
	return r;
}

/* resolver: {adapter, model} */
static int parse_resolver(struct cctx *x, const struct ynode *n)
{
	static const char *const keys[] = {"adapter", "model", NULL};
	struct orch_config *c = x->c;
	const struct ynode *v;
	int r;

	if (n->kind != YNODE_MAP)
		return yaml_field_err(x->doc, n, x->reterr, "resolver",
				      "expected a mapping {adapter, model}, got %s",
				      yaml_describe(n));
	r = orch_check_keys(x->doc, n, keys, "resolver", x->reterr);
	if (r == 0 && (v = ynode_get(n, "adapter")))
		r = orch_get_adapter(x->doc, v, "resolver.adapter", &c->resolver.adapter,
				     x->reterr);
	if (r == 0 && (v = ynode_get(n, "model")))
		r = yaml_value_str(x->doc, v, "resolver.model", true, &c->resolver.model,
				   x->reterr);
	return r;
}

/* merge: one of merge_names, or no-ff (auto's old name) */
static int parse_merge(struct cctx *x, const struct ynode *v)
{
	int r, m = 0;

	if (yaml_is_str(v) && strcmp(v->str, MERGE_NO_FF_SPELLING) == 0) {
		x->c->merge = MERGE_AUTO;
		return 0;
	}
	r = yaml_value_enum(x->doc, v, "merge", merge_names, &m, x->reterr);
	if (r == 0)
		x->c->merge = (enum merge_policy)m;
	return r;
}

/* bernstein.yaml's top-level key key (value v), one of its scalars: 0,
 * -EINVAL, or 1 when key is not a scalar of this list. */
static int parse_top_scalar(struct cctx *x, const char *key, const struct ynode *v)
{
	struct orch_config *c = x->c;
	int r;

	if (strcmp(key, "adapter") == 0) {
		const char *a = NULL;

		r = orch_get_adapter(x->doc, v, key, &a, x->reterr);
		if (r == 0 && a)
			c->adapter = a;
	} else if (strcmp(key, "model") == 0) {
		r = yaml_value_str(x->doc, v, key, true, &c->model, x->reterr);
	} else if (strcmp(key, "parallel") == 0) {
		r = yaml_value_int(x->doc, v, key, 1, ORCH_MAX_PARALLEL, &c->parallel, x->reterr);
	} else if (strcmp(key, "timeout") == 0) {
		r = yaml_value_number(x->doc, v, key, 0, true, ORCH_MAX_TIMEOUT_S, &c->timeout_s,
				      x->reterr);
	} else if (strcmp(key, "idle_timeout") == 0) {
		r = yaml_value_number(x->doc, v, key, 0, false, ORCH_MAX_TIMEOUT_S,
				      &c->idle_timeout_s, x->reterr);
	} else if (strcmp(key, "kill_grace") == 0) {
		r = yaml_value_number(x->doc, v, key, 0, true, ORCH_MAX_KILL_GRACE_S,
				      &c->kill_grace_s, x->reterr);
	} else if (strcmp(key, "max_retries") == 0) {
		r = yaml_value_int(x->doc, v, key, 0, ORCH_MAX_RETRIES, &c->max_retries, x->reterr);
	} else if (strcmp(key, "retry_backoff") == 0) {
		r = yaml_value_number(x->doc, v, key, 0, false, ORCH_MAX_BACKOFF_S,
				      &c->retry_backoff_s, x->reterr);
	} else {
		r = 1; /* not one of these */
	}
	return r;
}

/* The other top-level keys (lists and maps); mode, retry and fallback
 * wait until every key is read (parse_config()). */
static int parse_top_section(struct cctx *x, const char *key, const struct ynode *v)
{
	struct orch_config *c = x->c;
	int r;

	if (strcmp(key, "preference") == 0) {
		r = parse_adapters(x, v, key, &c->preference);
	} else if (strcmp(key, "auto") == 0) {
		r = parse_adapters(x, v, key, &c->auto_order);
	} else if (strcmp(key, "gates") == 0) {
		r = orch_get_gates(&c->arena, x->doc, v, key, &c->gates, &c->n_gates, x->reterr);
	} else if (strcmp(key, "merge") == 0) {
		r = parse_merge(x, v);
	} else if (strcmp(key, "pr") == 0) {
		r = parse_pr(x, v);
	} else if (strcmp(key, "on_conflict") == 0) {
		r = orch_get_on_conflict(x->doc, v, key, &c->on_conflict, x->reterr);
	} else if (strcmp(key, "resolver") == 0) {
		r = parse_resolver(x, v);
	} else if (strcmp(key, "sandbox") == 0) {
		r = orch_get_sandbox(x->doc, v, key, &c->sandbox, x->reterr);
	} else if (strcmp(key, "checkout") == 0) {
		r = parse_checkout(x->doc, v, key, &c->checkout, x->reterr);
	} else if (strcmp(key, "network") == 0) {
		enum net_mode nm = NET_MODE_FULL;

		r = orch_get_network(x->doc, v, key, &nm, x->reterr);
		if (r == 0)
			c->network = (int)nm;
	} else if (strcmp(key, "limits") == 0) {
		r = orch_get_limits(x->doc, v, key, &c->limits, x->reterr);
	} else if (strcmp(key, "worktree_setup") == 0) {
		r = orch_get_wtsetup(&c->arena, x->doc, v, key, &c->wtsetup, x->reterr);
	} else if (strcmp(key, "protected_paths") == 0) {
		r = parse_protected(x, v);
	} else if (strcmp(key, "hooks") == 0) {
		r = orch_get_hooks(x->doc, v, key, &c->hooks, x->reterr);
	} else if (strcmp(key, "notify") == 0) {
		r = orch_get_notify(x->doc, v, key, &c->notify, x->reterr);
	} else if (strcmp(key, "budget") == 0) {
		r = orch_budget_parse(x->doc, v, key, &c->budget, x->reterr);
	} else if (strcmp(key, "modes") == 0) {
		r = parse_modes(x, v);
	} else if (strcmp(key, "role_model_policy") == 0) {
		r = parse_roles(x, v);
	} else if (strcmp(key, "endpoints") == 0) {
		r = orch_endpoints_get(&c->arena, x->doc, v, key, x->allowed, &c->endpoints,
				       x->reterr);
	} else if (strcmp(key, "mcp_servers") == 0) {
		r = orch_mcp_servers_get(&c->arena, x->doc, v, key, x->allowed, &c->mcp_servers,
					 x->reterr);
	} else if (strcmp(key, "executor") == 0) {
		r = executor_get_kind(x->doc, v, key, &c->executor, x->reterr);
	} else if (strcmp(key, "slurm") == 0) {
		r = executor_get_slurm(&c->arena, x->doc, v, key, &c->slurm, x->reterr);
	} else {
		r = 0; /* mode: once every mode is known; retry, fallback: below */
	}
	return r;
}

static int parse_config(struct cctx *x)
{
	/* one a line: keys are added at the end (clang-format would bin-pack them) */
	/* clang-format off */
	static const char *const keys[] = {
		"adapter",
		"model",
		"parallel",
		"timeout",
		"kill_grace",
		"max_retries",
		"retry_backoff",
		"preference",
		"auto",
		"gates",
		"merge",
		"mode",
		"modes",
		"role_model_policy",
		"sandbox",
		"limits",
		"network",
		"worktree_setup",
		"retry",
		"fallback",
		"idle_timeout",
		"pr",
		"protected_paths",
		"endpoints",
		"hooks",
		"notify",
		"budget", /* orch/budget.h */
		"on_conflict",
		"resolver",
		"checkout",
		"mcp_servers", /* orch/mcpservers.h */
		"executor", /* orch/executor.h */
		"slurm",
		NULL,
	};
	/* clang-format on */
	const struct ynode *root = x->doc->root;
	size_t i;
	int r;

	r = orch_check_keys(x->doc, root, keys, "configuration", x->reterr);
	if (r < 0)
		return r;
	for (i = 0; i < root->n; i++) {
		const char *key = root->keys[i]->str;
		const struct ynode *v = root->items[i];

		r = parse_top_scalar(x, key, v);
		if (r == 1)
			r = parse_top_section(x, key, v);
		if (r < 0)
			return r;
	}
	r = retry_top(x);
	if (r < 0)
		return r;
	if (ynode_get(root, "mode"))
		return parse_mode(x, ynode_get(root, "mode"));
	return 0;
}

int orch_config_load_buf(const char *name, const char *buf, size_t len,
			 const char *allowed_api_key_envs, struct orch_config **ret,
			 struct diag *reterr)
{
	struct yaml_limits lim = {.max_bytes = ORCH_CONFIG_MAX_BYTES};
	struct orch_config *c = NULL;
	struct ydoc *doc = NULL;
	struct cctx x;
	int r;

	if (len > ORCH_CONFIG_MAX_BYTES) {
		diag_set(reterr, name, 0, 0, "file is larger than %zu bytes",
			 ORCH_CONFIG_MAX_BYTES);
		return -EFBIG;
	}
	r = yaml_load_buf(name, buf, len, &lim, &doc, reterr);
	if (r < 0)
		return r;
	c = config_new();
	c->doc = doc;
	c->source = doc->name;
	x = (struct cctx){.c = c, .doc = doc, .allowed = allowed_api_key_envs, .reterr = reterr};
	r = parse_config(&x);
	if (r < 0)
		goto out;
	*ret = c;
	c = NULL;
out:
	orch_config_free(c);
	return r;
}

int orch_config_load(const char *path, const char *allowed_api_key_envs, struct orch_config **ret,
		     struct diag *reterr)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	r = read_file_capped(path, ORCH_CONFIG_MAX_BYTES, &text, &len);
	if (r == -EFBIG) {
		diag_set(reterr, path, 0, 0, "file is larger than %zu bytes",
			 ORCH_CONFIG_MAX_BYTES);
		return r;
	}
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot read file: %s", file_strerror(r));
		return r;
	}
	r = orch_config_load_buf(path, text, len, allowed_api_key_envs, ret, reterr);
	free(text);
	return r;
}

enum sandbox_mode orch_config_sandbox(const struct orch_config *c, const char *role)
{
	const struct role_policy *rp = orch_config_role(c, role);

	return rp && rp->has_sandbox ? rp->sandbox : c->sandbox;
}

void orch_config_wtsetup(const struct orch_config *c, const char *role, struct orch_wtsetup *ret)
{
	const struct role_policy *rp = orch_config_role(c, role);

	*ret = c->wtsetup;
	if (rp)
		wtsetup_merge(ret, &rp->wtsetup);
}

enum executor_kind orch_config_executor(const struct orch_config *c, const char *role,
					bool task_has, enum executor_kind task_kind)
{
	const struct role_policy *rp = orch_config_role(c, role);

	if (task_has)
		return task_kind;
	return rp && rp->has_executor ? rp->executor : c->executor;
}

double orch_config_idle_timeout(const struct orch_config *c, const char *role)
{
	const struct role_policy *rp = orch_config_role(c, role);

	return rp && rp->has_idle_timeout ? rp->idle_timeout_s : c->idle_timeout_s;
}

enum conflict_policy orch_config_on_conflict(const struct orch_config *c, const char *role)
{
	const struct role_policy *rp = orch_config_role(c, role);

	return rp && rp->has_on_conflict ? rp->on_conflict : c->on_conflict;
}

void orch_config_mcp_servers(const struct orch_config *c, const char *role,
			     const struct orch_mcp_servers *plan,
			     const struct orch_mcp_servers *task, struct arena *a,
			     struct orch_mcp_servers *ret)
{
	const struct role_policy *rp = c ? orch_config_role(c, role) : NULL;
	const struct orch_mcp_servers *layers[] = {c ? &c->mcp_servers : NULL, plan,
						   rp ? &rp->mcp_servers : NULL, task};

	orch_mcp_servers_merge(a, layers, 4, ret);
}

int orch_config_network(const struct orch_config *c, const char *role)
{
	const struct role_policy *rp = orch_config_role(c, role);

	return rp && rp->has_network ? (int)rp->network : c->network;
}

const struct role_policy *orch_config_role(const struct orch_config *c, const char *role)
{
	size_t i;

	for (i = 0; c && role && i < c->n_roles; i++)
		if (strcmp(c->roles[i].role, role) == 0)
			return &c->roles[i];
	return NULL;
}

const struct mode_profile *orch_config_mode(const struct orch_config *c, const char *name)
{
	size_t i;

	for (i = 0; c && name && i < c->n_modes; i++)
		if (strcmp(c->modes[i].name, name) == 0)
			return &c->modes[i];
	return NULL;
}

/* ---- slots ---- */

static bool slot_set(const struct invocation_sampling *s, enum sampling_key k)
{
	return (s->set & (1u << k)) != 0;
}

/* Copy slot k from src into dst unless dst has it. */
static void fill_slot(struct invocation_sampling *dst, const struct invocation_sampling *src,
		      enum sampling_key k)
{
	if (!slot_set(src, k) || slot_set(dst, k))
		return;
	switch (k) {
	case SAMPLING_TEMPERATURE:
		dst->temperature = src->temperature;
		break;
	case SAMPLING_TOP_P:
		dst->top_p = src->top_p;
		break;
	case SAMPLING_TOP_K:
		dst->top_k = src->top_k;
		break;
	case SAMPLING_MAX_TOKENS:
		dst->max_tokens = src->max_tokens;
		break;
	case SAMPLING_BASE_URL:
		dst->base_url = src->base_url;
		break;
	case SAMPLING_API_KEY_ENV:
		dst->api_key_env = src->api_key_env;
		break;
	case _SAMPLING_KEY_MAX:
	case _SAMPLING_KEY_INVALID:
	default:
		return;
	}
	dst->set |= 1u << k;
}

const struct orch_endpoint *orch_config_endpoint(const struct orch_config *c,
						 const struct orch_endpoints *plan,
						 const char *adapter)
{
	const struct orch_endpoint *ep = orch_endpoints_find(plan, adapter);

	return ep ? ep : orch_endpoints_find(c ? &c->endpoints : NULL, adapter);
}

const char *orch_config_model(const struct orch_config *c, const char *role,
			      const struct orch_endpoint *ep, const char *task_model)
{
	const struct role_policy *rp = orch_config_role(c, role);

	if (task_model)
		return task_model;
	if (rp && rp->model)
		return rp->model;
	if (ep && ep->model)
		return ep->model;
	return c ? c->model : NULL;
}

void orch_config_slots(const struct orch_config *c, const char *role, const struct profile *p,
		       const struct orch_endpoint *ep, const struct invocation_sampling *task,
		       struct invocation_sampling *ret)
{
	struct invocation_sampling s = {0}, e;
	const struct role_policy *rp = orch_config_role(c, role);
	const struct mode_profile *m;
	int k;

	/* highest precedence first; each later source fills what is unset */
	if (task)
		for (k = 0; k < _SAMPLING_KEY_MAX; k++)
			fill_slot(&s, task, (enum sampling_key)k);
	if (rp) {
		struct invocation_sampling r = {0};

		if (rp->base_url) {
			r.base_url = rp->base_url;
			r.set |= 1u << SAMPLING_BASE_URL;
		}
		if (rp->api_key_env) {
			r.api_key_env = rp->api_key_env;
			r.set |= 1u << SAMPLING_API_KEY_ENV;
		}
		fill_slot(&s, &r, SAMPLING_BASE_URL);
		fill_slot(&s, &r, SAMPLING_API_KEY_ENV);
	}
	orch_endpoint_slots(ep, &e);
	fill_slot(&s, &e, SAMPLING_BASE_URL);
	fill_slot(&s, &e, SAMPLING_API_KEY_ENV);
	m = c ? orch_config_mode(c, c->mode) : NULL;
	if (m && p && p->caps.supports_sampling_params) {
		fill_slot(&s, &m->sampling, SAMPLING_TEMPERATURE);
		fill_slot(&s, &m->sampling, SAMPLING_TOP_P);
		fill_slot(&s, &m->sampling, SAMPLING_TOP_K);
		fill_slot(&s, &m->sampling, SAMPLING_MAX_TOKENS);
	}
	*ret = s;
}

/* ---- output ---- */

static json_t *jstr(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;

	return j ? j : json_null();
}

/* An integral number as an integer, otherwise a real. */
static json_t *jnum(double v)
{
	if (v == floor(v) && fabs(v) < 1e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

json_t *orch_slots_json(const struct invocation_sampling *s)
{
	json_t *o = json_object();

	if (slot_set(s, SAMPLING_TEMPERATURE))
		(void)json_object_set_new(o, "temperature", jnum(s->temperature));
	if (slot_set(s, SAMPLING_TOP_P))
		(void)json_object_set_new(o, "top_p", jnum(s->top_p));
	if (slot_set(s, SAMPLING_TOP_K))
		(void)json_object_set_new(o, "top_k", json_integer((json_int_t)s->top_k));
	if (slot_set(s, SAMPLING_MAX_TOKENS))
		(void)json_object_set_new(o, "max_tokens", json_integer((json_int_t)s->max_tokens));
	if (slot_set(s, SAMPLING_BASE_URL))
		(void)json_object_set_new(o, "base_url", jstr(s->base_url));
	if (slot_set(s, SAMPLING_API_KEY_ENV))
		(void)json_object_set_new(o, "api_key_env", jstr(s->api_key_env));
	return o;
}

json_t *orch_gates_json(const struct orch_gate *g, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		(void)json_object_set_new(o, "name", jstr(g[i].name));
		(void)json_object_set_new(o, "run", jstr(g[i].run));
		(void)json_object_set_new(o, "timeout", jnum(g[i].timeout_s));
		(void)json_array_append_new(a, o);
	}
	return a;
}

json_t *orch_wtsetup_json(const struct orch_wtsetup *ws)
{
	json_t *o = json_object(), *a;
	size_t i;

	if (ws->set & WTSETUP_COPY) {
		a = json_array();
		for (i = 0; i < ws->n_copy; i++)
			(void)json_array_append_new(a, jstr(ws->copy_files[i]));
		(void)json_object_set_new(o, "copy_files", a);
	}
	if (ws->set & WTSETUP_LINKS) {
		a = json_array();
		for (i = 0; i < ws->n_links; i++)
			(void)json_array_append_new(a, jstr(ws->symlink_dirs[i]));
		(void)json_object_set_new(o, "symlink_dirs", a);
	}
	if (ws->set & WTSETUP_COMMAND)
		(void)json_object_set_new(o, "setup_command", jstr(ws->setup_command));
	if (ws->set & WTSETUP_TIMEOUT)
		(void)json_object_set_new(o, "timeout", jnum(ws->timeout_s));
	return o;
}

/* {"memory": bytes, "pids": n, "cpu": cpus}, what is set. */
json_t *orch_limits_json(const struct contain_limits *l)
{
	json_t *o = json_object();

	if (l->memory)
		(void)json_object_set_new(o, "memory", json_integer((json_int_t)l->memory));
	if (l->pids)
		(void)json_object_set_new(o, "pids", json_integer((json_int_t)l->pids));
	if (l->cpu_milli)
		(void)json_object_set_new(o, "cpu", jnum((double)l->cpu_milli / 1000.0));
	return o;
}

/* retry: and fallback: into o, each only when given */
static void retry_json_set(json_t *o, const struct retry_policy *p)
{
	json_t *r = retry_policy_json(p), *f = retry_fallback_json(p);

	if (r)
		(void)json_object_set_new(o, "retry", r);
	if (f)
		(void)json_object_set_new(o, "fallback", f);
}

/* A role of role_model_policy for `config show --json`. */
static json_t *role_json(const struct role_policy *rp)
{
	json_t *r = json_object();

	(void)json_object_set_new(r, "adapter", jstr(rp->adapter));
	(void)json_object_set_new(r, "provider", jstr(rp->provider));
	(void)json_object_set_new(r, "model", jstr(rp->model));
	(void)json_object_set_new(r, "effort", jstr(rp->effort));
	(void)json_object_set_new(r, "base_url", jstr(rp->base_url));
	(void)json_object_set_new(r, "api_key_env", jstr(rp->api_key_env));
	if (contain_limits_any(&rp->limits))
		(void)json_object_set_new(r, "limits", orch_limits_json(&rp->limits));
	if (rp->has_sandbox)
		(void)json_object_set_new(r, "sandbox", jstr(sandbox_mode_to_string(rp->sandbox)));
	if (rp->has_network)
		(void)json_object_set_new(r, "network", jstr(net_mode_to_string(rp->network)));
	retry_json_set(r, &rp->retry);
	if (rp->has_idle_timeout)
		(void)json_object_set_new(r, "idle_timeout", jnum(rp->idle_timeout_s));
	if (rp->wtsetup.set)
		(void)json_object_set_new(r, "worktree_setup", orch_wtsetup_json(&rp->wtsetup));
	if (rp->has_on_conflict)
		(void)json_object_set_new(r, "on_conflict",
					  jstr(conflict_policy_to_string(rp->on_conflict)));
	if (rp->has_executor)
		(void)json_object_set_new(r, "executor",
					  jstr(executor_kind_to_string(rp->executor)));
	if (orch_hooks_any(&rp->hooks))
		(void)json_object_set_new(r, "hooks", orch_hooks_json(&rp->hooks));
	if (rp->notify.set)
		(void)json_object_set_new(r, "notify", orch_notify_json(&rp->notify));
	return r;
}

json_t *orch_config_json(const struct orch_config *c)
{
	json_t *o = json_object(), *pref = json_array(), *modes = json_object(),
	       *roles = json_object();
	size_t i;

	(void)json_object_set_new(o, "source", jstr(c->source));
	(void)json_object_set_new(o, "adapter", jstr(c->adapter));
	(void)json_object_set_new(o, "model", jstr(c->model));
	(void)json_object_set_new(o, "parallel", json_integer((json_int_t)c->parallel));
	(void)json_object_set_new(o, "timeout", jnum(c->timeout_s));
	(void)json_object_set_new(o, "kill_grace", jnum(c->kill_grace_s));
	(void)json_object_set_new(o, "max_retries", json_integer((json_int_t)c->max_retries));
	(void)json_object_set_new(o, "retry_backoff", jnum(c->retry_backoff_s));
	for (i = 0; i < c->preference.nr; i++)
		(void)json_array_append_new(pref, jstr(c->preference.v[i]));
	(void)json_object_set_new(o, "preference", pref);
	pref = json_array();
	for (i = 0; i < c->auto_order.nr; i++)
		(void)json_array_append_new(pref, jstr(c->auto_order.v[i]));
	(void)json_object_set_new(o, "auto", pref);
	(void)json_object_set_new(o, "gates", orch_gates_json(c->gates, c->n_gates));
	(void)json_object_set_new(o, "merge", jstr(merge_policy_to_string(c->merge)));
	if (c->merge == MERGE_PR)
		(void)json_object_set_new(o, "pr",
					  json_pack("{s:o, s:o, s:o, s:b}", "remote",
						    jstr(c->pr.remote), "base", jstr(c->pr.base),
						    "repo", jstr(c->pr.repo), "draft",
						    c->pr.draft));
	/* shown when set: with the default the output is what it was before the key */
	if (c->sandbox != SANDBOX_AUTO)
		(void)json_object_set_new(o, "sandbox", jstr(sandbox_mode_to_string(c->sandbox)));
	if (c->checkout != CHECKOUT_MODE_AUTO)
		(void)json_object_set_new(o, "checkout",
					  jstr(checkout_mode_to_string(c->checkout)));
	if (contain_limits_any(&c->limits))
		(void)json_object_set_new(o, "limits", orch_limits_json(&c->limits));
	if (c->network >= 0)
		(void)json_object_set_new(o, "network",
					  jstr(net_mode_to_string((enum net_mode)c->network)));
	retry_json_set(o, &c->retry);
	if (c->idle_timeout_s > 0)
		(void)json_object_set_new(o, "idle_timeout", jnum(c->idle_timeout_s));
	if (c->n_protected) {
		pref = json_array();
		for (i = 0; i < c->n_protected; i++)
			(void)json_array_append_new(pref, jstr(c->protected_paths[i]));
		(void)json_object_set_new(o, "protected_paths", pref);
	}
	if (c->wtsetup.set)
		(void)json_object_set_new(o, "worktree_setup", orch_wtsetup_json(&c->wtsetup));
	{
		json_t *b = orch_budget_given_json(&c->budget);

		if (b)
			(void)json_object_set_new(o, "budget", b);
	}
	/* shown when not the default */
	if (c->on_conflict != CONFLICT_REBASE)
		(void)json_object_set_new(o, "on_conflict",
					  jstr(conflict_policy_to_string(c->on_conflict)));
	if (c->resolver.adapter || c->resolver.model)
		(void)json_object_set_new(o, "resolver",
					  json_pack("{s:o, s:o}", "adapter",
						    jstr(c->resolver.adapter), "model",
						    jstr(c->resolver.model)));
	if (c->executor != EXECUTOR_LOCAL)
		(void)json_object_set_new(o, "executor",
					  jstr(executor_kind_to_string(c->executor)));
	(void)json_object_set_new(o, "mode", jstr(c->mode));
	for (i = 0; i < c->n_modes; i++) {
		json_t *m = orch_slots_json(&c->modes[i].sampling);

		(void)json_object_set_new(m, "builtin", json_boolean(c->modes[i].builtin));
		(void)json_object_set_new(modes, c->modes[i].name, m);
	}
	(void)json_object_set_new(o, "modes", modes);
	for (i = 0; i < c->n_roles; i++) {
		const struct role_policy *rp = &c->roles[i];
		json_t *r = role_json(rp);
		(void)json_object_set_new(roles, rp->role, r);
	}
	(void)json_object_set_new(o, "role_model_policy", roles);
	if (c->endpoints.n)
		(void)json_object_set_new(o, "endpoints", orch_endpoints_json(&c->endpoints));
	if (orch_hooks_any(&c->hooks))
		(void)json_object_set_new(o, "hooks", orch_hooks_json(&c->hooks));
	if (c->notify.set)
		(void)json_object_set_new(o, "notify", orch_notify_json(&c->notify));
	return o;
}

/* worktree_setup as a flow mapping: the keys given. */
static int yaml_strs(struct sbuf *out, const char *const *v, size_t n)
{
	size_t i;
	int r = sbuf_adds(out, "[");

	for (i = 0; r >= 0 && i < n; i++) {
		r = sbuf_adds(out, i ? ", " : "");
		if (r >= 0)
			r = yaml_emit_str(out, v[i]);
	}
	return r < 0 ? r : sbuf_adds(out, "]");
}

static int yaml_wtsetup(struct sbuf *out, const struct orch_wtsetup *ws)
{
	const char *sep = "";
	int r = sbuf_adds(out, "{");

	if (r >= 0 && (ws->set & WTSETUP_COPY)) {
		r = sbuf_adds(out, "copy_files: ");
		if (r >= 0)
			r = yaml_strs(out, ws->copy_files, ws->n_copy);
		sep = ", ";
	}
	if (r >= 0 && (ws->set & WTSETUP_LINKS)) {
		r = sbuf_addf(out, "%ssymlink_dirs: ", sep);
		if (r >= 0)
			r = yaml_strs(out, ws->symlink_dirs, ws->n_links);
		sep = ", ";
	}
	if (r >= 0 && (ws->set & WTSETUP_COMMAND)) {
		r = sbuf_addf(out, "%ssetup_command: ", sep);
		if (r >= 0)
			r = yaml_emit_str(out, ws->setup_command);
		sep = ", ";
	}
	if (r >= 0 && (ws->set & WTSETUP_TIMEOUT)) {
		r = sbuf_addf(out, "%stimeout: ", sep);
		if (r >= 0)
			r = yaml_emit_num(out, ws->timeout_s);
	}
	return r < 0 ? r : sbuf_adds(out, "}");
}

static int yaml_slots(struct sbuf *out, const struct invocation_sampling *s)
{
	const char *sep = "";
	int r = sbuf_adds(out, "{");
	int k;

	for (k = 0; r == 0 && k < _SAMPLING_KEY_MAX; k++) {
		if (!slot_set(s, (enum sampling_key)k))
			continue;
		r = sbuf_addf(out, "%s%s: ", sep, sampling_key_to_string((enum sampling_key)k));
		sep = ", ";
		if (r < 0)
			break;
		switch (k) {
		case SAMPLING_TEMPERATURE:
			r = yaml_emit_num(out, s->temperature);
			break;
		case SAMPLING_TOP_P:
			r = yaml_emit_num(out, s->top_p);
			break;
		case SAMPLING_TOP_K:
			r = sbuf_addf(out, "%" PRId64, s->top_k);
			break;
		case SAMPLING_MAX_TOKENS:
			r = sbuf_addf(out, "%" PRId64, s->max_tokens);
			break;
		case SAMPLING_BASE_URL:
			r = yaml_emit_str(out, s->base_url);
			break;
		default:
			r = yaml_emit_str(out, s->api_key_env);
			break;
		}
	}
	return r < 0 ? r : sbuf_adds(out, "}");
}

/* {memory: BYTES, pids: N, cpu: CPUS}, what is set. */
static int limits_yaml(struct sbuf *out, const struct contain_limits *l)
{
	const char *sep = "";
	int r = sbuf_adds(out, "{");

	if (r == 0 && l->memory) {
		r = sbuf_addf(out, "memory: %" PRIu64, l->memory);
		sep = ", ";
	}
	if (r == 0 && l->pids) {
		r = sbuf_addf(out, "%spids: %" PRIu64, sep, l->pids);
		sep = ", ";
	}
	if (r == 0 && l->cpu_milli) {
		r = sbuf_addf(out, "%scpu: ", sep);
		if (r == 0)
			r = yaml_emit_num(out, (double)l->cpu_milli / 1000.0);
	}
	return r < 0 ? r : sbuf_adds(out, "}");
}

static int yaml_field(struct sbuf *out, const char *key, const char *value, const char *sep)
{
	if (!value)
		return 0;
	if (sbuf_addf(out, "%s%s: ", sep, key) < 0)
		return -ENOBUFS;
	return yaml_emit_str(out, value);
}

/* retry: and fallback: of p as flow collections (JSON is YAML), each
 * after sep when given (max_attempts and backoff inside retry: when they
 * were given there: the top level then leaves out max_retries and
 * retry_backoff, as a file may not give both). 0 or -ENOBUFS; *sep ", "
 * after one. */
static int retry_yaml(struct sbuf *out, const struct retry_policy *p, bool top, const char **sep)
{
	json_t *j[2];
	int r = 0, i;

	j[0] = retry_policy_json(p);
	j[1] = retry_fallback_json(p);
	for (i = 0; i < 2; i++) {
		char *text = j[i] ? json_dumps(j[i], JSON_COMPACT) : NULL;

		if (text && r == 0)
			r = sbuf_addf(out, "%s%s: %s", *sep, i ? "fallback" : "retry", text);
		if (text)
			*sep = top ? "\n" : ", ";
		free(text);
		json_decref(j[i]);
	}
	return r;
}

/* pr: {remote, base, repo, draft} as one flow mapping (after "merge: pr"). */
static int pr_yaml(const struct orch_config *c, struct sbuf *out)
{
	int r = sbuf_adds(out, "\npr: {remote: ");

	if (r >= 0)
		r = yaml_emit_str(out, c->pr.remote);
	if (r >= 0 && c->pr.base && (r = sbuf_adds(out, ", base: ")) >= 0)
		r = yaml_emit_str(out, c->pr.base);
	if (r >= 0 && c->pr.repo && (r = sbuf_adds(out, ", repo: ")) >= 0)
		r = yaml_emit_str(out, c->pr.repo);
	if (r >= 0)
		r = sbuf_addf(out, ", draft: %s}", c->pr.draft ? "true" : "false");
	return r < 0 ? r : 0;
}

/* one role_model_policy entry as a flow mapping, on a line of its own */
static int role_yaml(struct sbuf *out, const struct role_policy *rp)
{
	int r;
#define TRY(x)                                                                                     \
	do {                                                                                       \
		r = (x);                                                                           \
		if (r < 0)                                                                         \
			return r;                                                                  \
	} while (0)

	const char *sep = "";

	TRY(sbuf_adds(out, "\n  "));
	TRY(yaml_emit_str(out, rp->role));
	TRY(sbuf_adds(out, ": {"));
	TRY(yaml_field(out, "adapter", rp->adapter, sep));
	sep = rp->adapter ? ", " : sep;
	TRY(yaml_field(out, "provider", rp->provider, sep));
	sep = rp->provider ? ", " : sep;
	TRY(yaml_field(out, "model", rp->model, sep));
	sep = rp->model ? ", " : sep;
	TRY(yaml_field(out, "effort", rp->effort, sep));
	sep = rp->effort ? ", " : sep;
	TRY(yaml_field(out, "base_url", rp->base_url, sep));
	sep = rp->base_url ? ", " : sep;
	TRY(yaml_field(out, "api_key_env", rp->api_key_env, sep));
	sep = rp->api_key_env ? ", " : sep;
	if (contain_limits_any(&rp->limits)) {
		TRY(sbuf_addf(out, "%slimits: ", sep));
		TRY(limits_yaml(out, &rp->limits));
		sep = ", ";
	}
	if (rp->has_sandbox) {
		TRY(sbuf_addf(out, "%ssandbox: %s", sep, sandbox_mode_to_string(rp->sandbox)));
		sep = ", ";
	}
	if (rp->has_network) {
		TRY(sbuf_addf(out, "%snetwork: %s", sep, net_mode_to_string(rp->network)));
		sep = ", ";
	}
	TRY(retry_yaml(out, &rp->retry, false, &sep));
	if (rp->has_idle_timeout) {
		TRY(sbuf_addf(out, "%sidle_timeout: ", sep));
		TRY(yaml_emit_num(out, rp->idle_timeout_s));
		sep = ", ";
	}
	if (rp->wtsetup.set) {
		TRY(sbuf_addf(out, "%sworktree_setup: ", sep));
		TRY(yaml_wtsetup(out, &rp->wtsetup));
	}
	if (rp->has_on_conflict) {
		TRY(sbuf_addf(out, "%son_conflict: %s", sep,
			      conflict_policy_to_string(rp->on_conflict)));
		sep = ", ";
	}
	if (rp->has_executor) {
		TRY(sbuf_addf(out, "%sexecutor: %s", sep, executor_kind_to_string(rp->executor)));
		sep = ", ";
	}
	if (orch_hooks_any(&rp->hooks)) {
		TRY(sbuf_addf(out, "%shooks: ", sep));
		TRY(orch_hooks_flow_yaml(&rp->hooks, out));
		sep = ", ";
	}
	if (rp->notify.set) {
		TRY(sbuf_addf(out, "%snotify: ", sep));
		TRY(orch_notify_flow_yaml(&rp->notify, out));
	}
	TRY(sbuf_adds(out, "}"));
#undef TRY
	return 0;
}

int orch_config_to_yaml(const struct orch_config *c, struct sbuf *out)
{
	const char *top_sep;
	size_t i, n;
	int r = 0;

#define TRY(x)                                                                                     \
	do {                                                                                       \
		r = (x);                                                                           \
		if (r < 0)                                                                         \
			return r;                                                                  \
	} while (0)

	TRY(sbuf_adds(out, "adapter: "));
	TRY(yaml_emit_str(out, c->adapter));
	TRY(sbuf_adds(out, "\nmodel: "));
	TRY(yaml_emit_str(out, c->model));
	TRY(sbuf_addf(out, "\nparallel: %" PRId64 "\ntimeout: ", c->parallel));
	TRY(yaml_emit_num(out, c->timeout_s));
	if (c->idle_timeout_s > 0) {
		TRY(sbuf_adds(out, "\nidle_timeout: "));
		TRY(yaml_emit_num(out, c->idle_timeout_s));
	}
	TRY(sbuf_adds(out, "\nkill_grace: "));
	TRY(yaml_emit_num(out, c->kill_grace_s));
	if (!c->retry.max_attempts)
		TRY(sbuf_addf(out, "\nmax_retries: %" PRId64, c->max_retries));
	if (!c->retry.has_backoff) {
		TRY(sbuf_adds(out, "\nretry_backoff: "));
		TRY(yaml_emit_num(out, c->retry_backoff_s));
	}
	TRY(sbuf_adds(out, "\npreference: ["));
	for (i = 0; i < c->preference.nr; i++) {
		TRY(sbuf_adds(out, i ? ", " : ""));
		TRY(yaml_emit_str(out, c->preference.v[i]));
	}
	TRY(sbuf_adds(out, "]\nauto: ["));
	for (i = 0; i < c->auto_order.nr; i++) {
		TRY(sbuf_adds(out, i ? ", " : ""));
		TRY(yaml_emit_str(out, c->auto_order.v[i]));
	}
	TRY(sbuf_adds(out, "]\ngates:"));
	if (!c->n_gates)
		TRY(sbuf_adds(out, " []"));
	for (i = 0; i < c->n_gates; i++) {
		TRY(sbuf_adds(out, "\n  - {name: "));
		TRY(yaml_emit_str(out, c->gates[i].name));
		TRY(sbuf_adds(out, ", run: "));
		TRY(yaml_emit_str(out, c->gates[i].run));
		TRY(sbuf_adds(out, ", timeout: "));
		TRY(yaml_emit_num(out, c->gates[i].timeout_s));
		TRY(sbuf_adds(out, "}"));
	}
	TRY(sbuf_addf(out, "\nmerge: %s", merge_policy_to_string(c->merge)));
	if (c->merge == MERGE_PR)
		TRY(pr_yaml(c, out));
	if (c->on_conflict != CONFLICT_REBASE)
		TRY(sbuf_addf(out, "\non_conflict: %s", conflict_policy_to_string(c->on_conflict)));
	if (c->executor != EXECUTOR_LOCAL)
		TRY(sbuf_addf(out, "\nexecutor: %s", executor_kind_to_string(c->executor)));
	if (c->resolver.adapter || c->resolver.model) {
		TRY(sbuf_adds(out, "\nresolver: {adapter: "));
		TRY(yaml_emit_str(out, c->resolver.adapter));
		TRY(sbuf_adds(out, ", model: "));
		TRY(yaml_emit_str(out, c->resolver.model));
		TRY(sbuf_adds(out, "}"));
	}
	if (c->sandbox != SANDBOX_AUTO)
		TRY(sbuf_addf(out, "\nsandbox: %s", sandbox_mode_to_string(c->sandbox)));
	if (c->checkout != CHECKOUT_MODE_AUTO)
		TRY(sbuf_addf(out, "\ncheckout: %s", checkout_mode_to_string(c->checkout)));
	if (contain_limits_any(&c->limits)) {
		TRY(sbuf_adds(out, "\nlimits: "));
		TRY(limits_yaml(out, &c->limits));
	}
	if (c->network >= 0)
		TRY(sbuf_addf(out, "\nnetwork: %s", net_mode_to_string((enum net_mode)c->network)));
	if (c->n_protected) {
		TRY(sbuf_adds(out, "\nprotected_paths: ["));
		for (i = 0; i < c->n_protected; i++) {
			TRY(sbuf_adds(out, i ? ", " : ""));
			TRY(yaml_emit_str(out, c->protected_paths[i]));
		}
		TRY(sbuf_adds(out, "]"));
	}
	if (c->wtsetup.set) {
		TRY(sbuf_adds(out, "\nworktree_setup: "));
		TRY(yaml_wtsetup(out, &c->wtsetup));
	}
	top_sep = "\n";
	TRY(retry_yaml(out, &c->retry, true, &top_sep));
	TRY(orch_budget_given_yaml(&c->budget, out));
	TRY(sbuf_adds(out, "\nmode: "));
	TRY(yaml_emit_str(out, c->mode));
	TRY(sbuf_adds(out, "\n# built-in modes:"));
	for (i = 0; i < c->n_modes; i++) {
		if (!c->modes[i].builtin)
			continue;
		TRY(sbuf_addf(out, " %s ", c->modes[i].name));
		TRY(yaml_slots(out, &c->modes[i].sampling));
	}
	TRY(sbuf_adds(out, "\nmodes:"));
	for (i = 0, n = 0; i < c->n_modes; i++) {
		if (c->modes[i].builtin)
			continue;
		TRY(sbuf_adds(out, "\n  "));
		TRY(yaml_emit_str(out, c->modes[i].name));
		TRY(sbuf_adds(out, ": "));
		TRY(yaml_slots(out, &c->modes[i].sampling));
		n++;
	}
	if (!n)
		TRY(sbuf_adds(out, " {}"));
	TRY(sbuf_adds(out, "\nrole_model_policy:"));
	if (!c->n_roles)
		TRY(sbuf_adds(out, " {}"));
	for (i = 0; i < c->n_roles; i++)
		TRY(role_yaml(out, &c->roles[i]));
	TRY(orch_endpoints_yaml(&c->endpoints, out));
	TRY(orch_hooks_yaml(&c->hooks, out));
	TRY(orch_notify_yaml(&c->notify, out));
	TRY(sbuf_adds(out, "\n"));
#undef TRY
	return 0;
}

/* ---- the template of `bernstein init` ---- */

/* The template of `bernstein init`, in parts: one C string literal may
 * hold at most 4095 bytes (-Woverlength-strings). */
static const char template_head[] =
	"# bernstein.yaml: how 'bernstein run' runs plans (docs/configuration.md).\n"
	"#\n"
	"# Every key is optional: the values below are the defaults, so deleting a\n"
	"# line changes nothing. Unknown keys, wrong types and out-of-range values\n"
	"# are errors reported as FILE:LINE:COL; check with 'bernstein config validate'\n"
	"# and see the effective values with 'bernstein config show'.\n"
	"\n"
	"# The adapter for tasks that name none. auto: at each dispatch, the first\n"
	"# agent of 'auto:' below that is usable here (on PATH, with credentials:\n"
	"# 'bernstein doctor' lists them) and meets the task's 'requires'; none\n"
	"# usable refuses the task, saying what each one lacks. Or name one\n"
	"# ('bernstein adapters list'); mock is the offline demo agent.\n"
	"adapter: auto\n"
	"\n"
	"# The agents 'adapter: auto' tries, in this order (never mock).\n"
	"auto: [claude, codex, gemini, qwen, opencode, pi]\n"
	"\n"
	"# The model for tasks that name none; null = the adapter's own default.\n"
	"model: null\n"
	"\n"
	"# How many tasks run at once (1..256). Each adapter's max_parallel_workers\n"
	"# limits its own share further.\n"
	"parallel: 4\n"
	"\n"
	"# Seconds one attempt of a task may run before it is stopped (> 0).\n"
	"timeout: 1800\n"
	"\n"
	"# Seconds between SIGTERM and SIGKILL when a task is stopped (> 0, <= 3600).\n"
	"kill_grace: 5\n"
	"\n"
	"# Retries of a rate-limited task (0..20): each waits the agent's hint (at\n"
	"# most 1 h), else retry_backoff seconds (>= 0) doubled, with jitter.\n"
	"max_retries: 2\n"
	"retry_backoff: 2\n"
	"\n"
	"# Routing preference: when several adapters satisfy a task's 'requires',\n"
	"# the first of these wins; [] = catalogue order. Example: [claude, codex]\n"
	"preference: []\n"
	"\n"
	"# Commands run in the task's worktree, in order, after the agent finished;\n"
	"# a gate that fails (or runs longer than its timeout, default 600 s) fails\n"
	"# the task. Plans can add gates per task. Example:\n"
	"#   gates:\n"
	"#     - {name: tests, run: \"make test\", timeout: 600}\n"
	"gates: []\n"
	"\n"
	"# What happens to a task's branch after its gates passed: auto merges it\n"
	"# (--no-ff); review waits for 'bernstein approve'; pr opens a PR; none: kept.\n"
	"merge: auto\n"
	"\n"
	"# Confinement of the agents: none runs each in a git worktree, unconfined\n"
	"# (it can read and forge anything you can); landlock, bwrap and container\n"
	"# (weakest first) give each task its own 'git clone --shared', let its\n"
	"# agent write only there (and in its HOME and TMPDIR) and read only an\n"
	"# allow-list; a host that cannot provide the tier refuses such tasks. auto\n"
	"# picks the strongest tier this host provides in which the task's agent is\n"
	"# known to work, else none. A plan's task may set its own 'sandbox:'.\n"
	"sandbox: auto\n"
	"\n"
	"# The network of a sandboxed agent: full shares the host's; llm gives it\n"
	"# loopback only and a proxy that reaches nothing but its endpoint\n"
	"# (base_url); none gives it loopback only. llm and none need the bwrap or\n"
	"# container tier. Unset: llm where the tier has a network namespace and the\n"
	"# endpoint is known, else full. A plan's task may set its own 'network:'.\n"
	"# network: llm\n"
	"\n"
	"# The mode profile whose sampling parameters every task gets: smart\n"
	"# (temperature 0.2), deep (0.3), fast (0.0) or one of 'modes:'. It applies\n"
	"# only to adapters that declare supports_sampling_params; null = none.\n"
	"mode: null\n"
	"\n"
	"# Your own mode profiles: temperature (>= 0), top_p (0..1), top_k (>= 0),\n"
	"# max_tokens (>= 1). An entry named smart, deep or fast replaces the\n"
	"# built-in one. Example:\n"
	"#   modes:\n"
	"#     careful: {temperature: 0.1, top_p: 0.9, max_tokens: 8192}\n"
	"modes: {}\n"
	"\n"
	"# Per role (backend, frontend, qa, docs, ... see docs/configuration.md):\n"
	"# the adapter ('cli:' works too), model, effort (low, medium, normal, high,\n"
	"# max), base_url and api_key_env. A task's own 'sampling:' wins. Example:\n"
	"#   role_model_policy:\n"
	"#     backend: {adapter: qwen, model: coder-model, effort: high}\n"
	"role_model_policy: {}\n"
	"\n"
	"# Where each agent is pointed (the URL form its API takes: docs/spawning.md).\n"
	"# api_key_env is the NAME of the variable holding the key, never the key:\n"
	"# a provider key or one listed in BERNSTEIN_ALLOWED_API_KEY_ENVS. Example:\n"
	"#   endpoints:\n"
	"#     codex: {base_url: \"http://127.0.0.1:8080/v1\", api_key_env: OPENAI_API_KEY}\n";

static const char template_more[] =
	"\n"
	"# Seconds an agent may print nothing before its process tree is stopped\n"
	"# and its attempt ends 'stalled' (0: off). Example:\n"
	"#   idle_timeout: 900\n"
	"\n"
	"# Resource limits of every agent and its gates (cgroups). Example:\n"
	"#   limits: {memory: 4G, pids: 512, cpu: 2}\n"
	"\n"
	"# Another attempt after a failure, with stronger models, then other\n"
	"# adapters that meet the task's requirements. Example:\n"
	"#   retry: {max_attempts: 3, on: [failed, timed_out, crashed, stalled], backoff: 5}\n"
	"#   fallback: [codex, gemini]\n"
	"\n"
	"# What each task's fresh tree gets before its agent starts: your ignored\n"
	"# files copied, directories linked (read-only to a sandboxed agent), a\n"
	"# command run like a gate. Example:\n"
	"#   worktree_setup: {copy_files: [.env], symlink_dirs: [node_modules], setup_command: \"make deps\", timeout: 600}\n"
	"\n"
	"# A merge that conflicts: rebase onto the base and merge again when clean\n"
	"# (the default), resolve (then a resolver agent edits the conflict) or\n"
	"# fail. Example:\n"
	"#   on_conflict: resolve\n"
	"#   resolver: {adapter: claude}\n"
	"\n"
	"# Paths whose change by a task is never merged without your say (beside\n"
	"# bernstein.yaml, .worktreeinclude, .bernstein/, bernstein/ and the plan,\n"
	"# always protected: docs/security.md). Example:\n"
	"#   protected_paths: [Makefile, .github/]\n"
	"\n"
	"# A run's spending cap: at warn_at a warning, at the cap no new attempt\n"
	"# (drain) or every agent stopped (stop); exit 7. Example:\n"
	"#   budget: {max_cost_usd: 20, warn_at: 0.8, on_exceed: drain}\n"
	"\n"
	"# Commands run at points of a task's life, the event as JSON on stdin:\n"
	"# pre_merge in the task's tree, confined and failing it like a gate; the\n"
	"# others in your checkout, as you (docs/security.md, 13). Example:\n"
	"#   hooks: {pre_merge: \"make lint\"}\n"
	"\n"
	"# Notifications: a webhook (its URL from a variable keeps it out of this\n"
	"# file) and the desktop. Example:\n"
	"#   notify: {webhook_env: BERNSTEIN_WEBHOOK, on: [task_failed, run_done], desktop: true}\n";

const char *orch_config_template(void)
{
	static char *whole;

	if (!whole) {
		size_t a = sizeof(template_head) - 1, b = sizeof(template_more) - 1;

		whole = xmalloc(a + b + 1);
		memcpy(whole, template_head, a);
		memcpy(whole + a, template_more, b + 1);
	}
	return whole;
}
