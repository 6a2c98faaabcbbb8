/* plan.yaml (plan.h): both forms into one struct plan, every problem
 * reported. */
#include "orch/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch/config-internal.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/banned.h"

const char *plan_form_to_string(enum plan_form f)
{
	static const char *const names[_PLAN_FORM_MAX] = {"tasks", "stages"};

	return f >= 0 && f < _PLAN_FORM_MAX ? names[f] : NULL;
}

/* ---- ids ---- */

const char *plan_slug(const char *title, char *buf)
{
	size_t o = 0;
	bool dash = false;

	for (; *title && o < PLAN_ID_MAX; title++) {
		char c = *title;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (dash && o > 0 && o + 1 < PLAN_ID_MAX)
				buf[o++] = '-';
			else if (dash && o > 0)
				break;
			dash = false;
			buf[o++] = c;
		} else {
			dash = true;
		}
	}
	buf[o] = '\0';
	return buf;
}

bool plan_id_valid(const char *id)
{
	size_t i, n = id ? strlen(id) : 0;

	if (n == 0 || n > PLAN_ID_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && c == '-')))
			return false;
	}
	return true;
}

/* ---- parsing ---- */

struct stage {
	const char *name;
	const struct ynode *name_node;
	size_t first, count;   /* its steps: tasks[first, first + count) */
	struct plan_dep *deps; /* index: a stage */
	size_t n_deps;
};

struct pctx {
	struct plan *p;
	const struct ydoc *doc;
	const char *allowed;
	struct ycheck yc; /* every problem (the list may drop some) */
	struct stage *stages;
	size_t n_stages;
	/* the plan-level defaults */
	const char *adapter, *model;
	bool has_adapter, has_model;
	struct plan_task defaults; /* sandbox, network, limits */
};

static void add(struct pctx *x, const struct diag *d)
{
	ycheck_add(&x->yc, d);
}

static void problem(struct pctx *x, const struct ynode *n, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void problem(struct pctx *x, const struct ynode *n, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ycheck_vproblem(&x->yc, n, path, fmt, ap);
	va_end(ap);
}

/* A problem at a stored position. */
static void problem_at(struct pctx *x, unsigned line, unsigned col, const char *path,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void problem_at(struct pctx *x, unsigned line, unsigned col, const char *path,
		       const char *fmt, ...)
{
	struct ynode at = {.kind = YNODE_SCALAR, .line = line, .col = col};
	char msg[sizeof(((struct diag *)NULL)->msg)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	problem(x, &at, path, "%s", msg);
}

/* Every key of map not in keys (nor in ignored): one problem each
 * (yaml_check_keys()). A step's depends_on gets its own explanation. false
 * when map is not a mapping (reported). */
static bool check_keys(struct pctx *x, const struct ynode *map, const char *const *keys,
		       const char *const *ignored, const char *what)
{
	const char *ign[48];
	size_t i, n = 0;

	if (map && map->kind == YNODE_MAP && strstr(what, ".steps[") &&
	    ynode_get(map, "depends_on")) {
		for (i = 0; i < map->n; i++)
			if (strcmp(map->keys[i]->str, "depends_on") == 0)
				problem(x, map->keys[i], NULL,
					"unknown key 'depends_on' in %s: a step has no dependencies of its own; it depends on every step of the stages its stage's depends_on lists",
					what);
		for (i = 0; ignored && ignored[i]; i++) {
			if (n + 2 >= ARRAY_SIZE(ign))
				BUG("too many ignored keys");
			ign[n++] = ignored[i];
		}
		ign[n++] = "depends_on";
		ign[n] = NULL;
		ignored = ign;
	}
	(void)yaml_check_keys(&x->yc, map, keys, ignored, what);
	return map && map->kind == YNODE_MAP;
}

/* The value of key a or its synonym b (NULL when neither); both given is a
 * problem at the second. ret_key gets the key used. */
static const struct ynode *either(struct pctx *x, const struct ynode *map, const char *a,
				  const char *b, const char *path, const char **ret_key)
{
	const struct ynode *va = ynode_get(map, a), *vb = ynode_get(map, b);
	size_t i;

	*ret_key = va ? a : b;
	if (va && vb) {
		for (i = 0; i < map->n; i++)
			if (map->items[i] == va || map->items[i] == vb)
				break;
		for (i++; i < map->n; i++)
			if (map->items[i] == va || map->items[i] == vb)
				break;
		problem(x, map->keys[i], path, "give '%s' or '%s', not both", a, b);
	}
	return va ? va : vb;
}

/* A workdir-relative path: not absolute, no ".." component, no trailing
 * '/', no control characters. NULL when fine, else why not. */
static const char *relpath_problem(const char *s)
{
	const char *c;

	if (s[0] == '/')
		return "is absolute (it must be relative to the task's working directory)";
	for (c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return "contains a control character";
	for (c = s; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.')
			return "has a '..' component (it must stay inside the working directory)";
		c += n;
		if (*c == '/')
			c++;
	}
	if (s[strlen(s) - 1] == '/')
		return "ends in '/' (it must name a file)";
	return NULL;
}

static void parse_requires(struct pctx *x, const struct ynode *v, const char *path,
			   struct plan_task *t)
{
	char p[YAML_PATH_MAX];
	const char **toks = NULL;
	struct diag d;
	size_t i, n = 0;

	diag_clear(&d);
	if (yaml_value_strlist(&x->p->arena, x->doc, v, path, &toks, &n, &d) < 0) {
		add(x, &d);
		return;
	}
	t->requires = toks;
	t->n_requires = n;
	for (i = 0; i < n; i++) {
		diag_clear(&d);
		if (requirements_add(&t->req, toks[i], &d) < 0)
			problem(x, v->items[i], yaml_path_index(p, sizeof(p), path, i), "%s",
				d.msg);
	}
}

static void parse_depends(struct pctx *x, const struct ynode *v, const char *path,
			  struct plan_dep **ret, size_t *ret_n)
{
	char p[YAML_PATH_MAX], q[80];
	const char **names = NULL;
	struct plan_dep *deps;
	struct diag d;
	size_t i, j, n = 0, nd = 0;

	diag_clear(&d);
	if (yaml_value_strlist(&x->p->arena, x->doc, v, path, &names, &n, &d) < 0) {
		add(x, &d);
		return;
	}
	deps = arena_alloc(&x->p->arena, st_mult(n ? n : 1, sizeof(*deps)));
	for (i = 0; i < n; i++) {
		for (j = 0; j < nd; j++)
			if (strcmp(deps[j].name, names[i]) == 0)
				break;
		if (j < nd) {
			problem(x, v->items[i], yaml_path_index(p, sizeof(p), path, i),
				"duplicate dependency '%s'", yaml_quote(q, sizeof(q), names[i]));
			continue;
		}
		deps[nd].name = names[i];
		deps[nd].index = SIZE_MAX;
		deps[nd].line = v->items[i]->line;
		deps[nd].col = v->items[i]->col;
		nd++;
	}
	*ret = deps;
	*ret_n = nd;
}

/* sampling: every slot checked on its own, so every bad one is reported. */
static void parse_sampling(struct pctx *x, const struct ynode *v, const char *path,
			   struct plan_task *t)
{
	static const char *const keys[] = {"temperature", "top_p",	 "top_k", "max_tokens",
					   "base_url",	  "api_key_env", NULL};
	char p[YAML_PATH_MAX];
	struct diag d;
	size_t i;

	if (!check_keys(x, v, keys, NULL, path))
		return;
	for (i = 0; i < v->n; i++) {
		enum sampling_key k = sampling_key_from_string(v->keys[i]->str);

		if (k < 0)
			continue; /* reported */
		t->sampling_line[k] = v->keys[i]->line;
		t->sampling_col[k] = v->keys[i]->col;
		diag_clear(&d);
		if (orch_get_slot(x->doc, v->items[i],
				  yaml_path_key(p, sizeof(p), path, v->keys[i]->str), k, x->allowed,
				  &t->sampling, &d) < 0)
			add(x, &d);
	}
}

/* attachments: the list, and where its key is (plan validate's gates) */
static void set_attachments(struct plan_task *t, const char **a, size_t n, const struct ynode *key)
{
	t->attachments = a;
	t->n_attachments = n;
	t->attachments_line = key->line;
	t->attachments_col = key->col;
}

static const char *const task_keys[] = {
	"title",       "id",	       "prompt",
	"description", "role",	       "requires",
	"adapter",     "cli",	       "model",
	"effort",      "depends_on",   "timeout",
	"gates",       "artifact",     "attachments",
	"sampling",    "mcp_config",   "sandbox",
	"limits",      "network",      "retry",
	"fallback",    "idle_timeout", "worktree_setup",
	"on_conflict", "constraints",  "context_files",
	"files",       "mcp_servers",  "executor",
	NULL,
};

static const char *const step_keys[] = {
	"title",       "goal",	       "id",
	"prompt",      "description",  "role",
	"requires",    "adapter",      "cli",
	"model",       "effort",       "timeout",
	"gates",       "artifact",     "attachments",
	"sampling",    "mcp_config",   "sandbox",
	"limits",      "network",      "retry",
	"fallback",    "idle_timeout", "worktree_setup",
	"on_conflict", "constraints",  "context_files",
	"files",       "mcp_servers",  "executor",
	NULL,
};

/* Bernstein's step keys that have no effect here (documented in docs/plans.md). */
static const char *const step_ignored[] = {
	"priority", "scope", "complexity",	"estimated_minutes",
	"mode",	    "repo",  "depends_on_repo", "completion_signals",
	"phases",   NULL,
};

/* The keys parse_context() takes. */
static bool context_key(const char *k)
{
	return strcmp(k, "constraints") == 0 || strcmp(k, "context_files") == 0 ||
	       strcmp(k, "files") == 0;
}

/* constraints:, context_files:, files: of a task (or the plan's) */
static void parse_context(struct pctx *x, const char *k, const struct ynode *v, const char *pk,
			  struct plan_task *t)
{
	const char **a = NULL;
	const char *why;
	char q[80];
	struct diag d;
	size_t j, n = 0;

	diag_clear(&d);
	if (yaml_value_strlist(&x->p->arena, x->doc, v, pk, &a, &n, &d) < 0) {
		add(x, &d);
		return;
	}
	if (!a) /* an empty list is given: never NULL */
		a = arena_alloc(&x->p->arena, sizeof(*a));
	if (strcmp(k, "constraints") == 0) {
		t->constraints = a;
		t->n_constraints = n;
		return;
	}
	for (j = 0; j < n; j++)
		if ((why = relpath_problem(a[j]))) {
			char pi[YAML_PATH_MAX];

			problem(x, v->items[j], yaml_path_index(pi, sizeof(pi), pk, j),
				"%s '%s' %s", strcmp(k, "files") == 0 ? "file" : "context file",
				yaml_quote(q, sizeof(q), a[j]), why);
		}
	if (strcmp(k, "files") == 0) {
		t->files = a;
		t->n_files = n;
		return;
	}
	t->context_files = a;
	t->n_context_files = n;
	t->context_lines = arena_alloc(&x->p->arena, (n + 1) * sizeof(unsigned));
	t->context_cols = arena_alloc(&x->p->arena, (n + 1) * sizeof(unsigned));
	for (j = 0; j < n; j++) {
		t->context_lines[j] = v->items[j]->line;
		t->context_cols[j] = v->items[j]->col;
	}
}

/* The keys parse_confinement() takes. */
static bool confinement_key(const char *k)
{
	return strcmp(k, "sandbox") == 0 || strcmp(k, "network") == 0 ||
	       strcmp(k, "idle_timeout") == 0 || strcmp(k, "on_conflict") == 0 ||
	       strcmp(k, "executor") == 0;
}

/* sandbox:, network: or idle_timeout: of a task (or the plan's) */
static void parse_confinement(struct pctx *x, const char *k, const struct ynode *v, const char *pk,
			      struct plan_task *t)
{
	enum sandbox_mode sm = SANDBOX_NONE;
	enum net_mode nm = NET_MODE_FULL;
	enum conflict_policy cp = CONFLICT_REBASE;
	struct diag d;

	diag_clear(&d);
	if (strcmp(k, "executor") == 0) {
		enum executor_kind ek = EXECUTOR_LOCAL;

		if (executor_get_kind(x->doc, v, pk, &ek, &d) < 0)
			add(x, &d);
		else
			t->executor = executor_kind_to_string(ek);
	} else if (strcmp(k, "on_conflict") == 0) {
		if (orch_get_on_conflict(x->doc, v, pk, &cp, &d) < 0)
			add(x, &d);
		else
			t->on_conflict = conflict_policy_to_string(cp);
	} else if (strcmp(k, "idle_timeout") == 0) {
		if (yaml_value_number(x->doc, v, pk, 0, false, ORCH_MAX_TIMEOUT_S,
				      &t->idle_timeout_s, &d) < 0)
			add(x, &d);
		else
			t->has_idle_timeout = true;
	} else if (strcmp(k, "sandbox") == 0) {
		if (orch_get_sandbox(x->doc, v, pk, &sm, &d) < 0)
			add(x, &d);
		else
			t->sandbox = sandbox_mode_to_string(sm);
	} else if (orch_get_network(x->doc, v, pk, &nm, &d) < 0) {
		add(x, &d);
	} else {
		t->network = net_mode_to_string(nm);
	}
}

/* sampling: (or mcp_config:), retry:, fallback:, worktree_setup: of a task */
static void parse_extras(struct pctx *x, const struct ynode *m, const char *path,
			 struct plan_task *t)
{
	char pk[YAML_PATH_MAX];
	const struct ynode *v;
	const char *key;
	struct diag d;

	v = either(x, m, "sampling", "mcp_config", path, &key);
	if (v)
		parse_sampling(x, v, yaml_path_key(pk, sizeof(pk), path, key), t);
	diag_clear(&d);
	if ((v = ynode_get(m, "mcp_servers")) &&
	    orch_mcp_servers_get(&x->p->arena, x->doc, v,
				 yaml_path_key(pk, sizeof(pk), path, "mcp_servers"), x->allowed,
				 &t->mcp_servers, &d) < 0)
		add(x, &d);
	diag_clear(&d);
	if ((v = ynode_get(m, "retry")) &&
	    retry_get_yaml(&x->p->arena, x->doc, v, yaml_path_key(pk, sizeof(pk), path, "retry"),
			   &t->retry, &d) < 0)
		add(x, &d);
	diag_clear(&d);
	if ((v = ynode_get(m, "fallback")) &&
	    retry_get_fallback(&x->p->arena, x->doc, v,
			       yaml_path_key(pk, sizeof(pk), path, "fallback"), &t->retry, &d) < 0)
		add(x, &d);
	diag_clear(&d);
	if ((v = ynode_get(m, "worktree_setup")) &&
	    orch_get_wtsetup(&x->p->arena, x->doc, v,
			     yaml_path_key(pk, sizeof(pk), path, "worktree_setup"), &t->wtsetup,
			     &d) < 0)
		add(x, &d);
}

/* the plan's defaults for what the task does not say */
static void plan_defaults(const struct pctx *x, struct plan_task *t, bool has_adapter,
			  bool has_model)
{
	if (!has_adapter)
		t->adapter = x->adapter;
	if (!has_model)
		t->model = x->model;
	if (!t->sandbox)
		t->sandbox = x->defaults.sandbox;
	if (!t->network)
		t->network = x->defaults.network;
	if (!t->on_conflict)
		t->on_conflict = x->defaults.on_conflict;
	if (!t->executor)
		t->executor = x->defaults.executor;
	if (!t->constraints) {
		t->constraints = x->defaults.constraints;
		t->n_constraints = x->defaults.n_constraints;
	}
	if (!t->context_files) {
		t->context_files = x->defaults.context_files;
		t->n_context_files = x->defaults.n_context_files;
		t->context_lines = x->defaults.context_lines;
		t->context_cols = x->defaults.context_cols;
	}
	if (!t->files) {
		static const char *const none[] = {NULL};

		t->files = none;
	}
	if (!t->has_idle_timeout) {
		t->has_idle_timeout = x->defaults.has_idle_timeout;
		t->idle_timeout_s = x->defaults.idle_timeout_s;
	}
	if (!t->limits.memory)
		t->limits.memory = x->defaults.limits.memory;
	if (!t->limits.pids)
		t->limits.pids = x->defaults.limits.pids;
	if (!t->limits.cpu_milli)
		t->limits.cpu_milli = x->defaults.limits.cpu_milli;
	{
		/* worktree_setup: the plan's, each key the task gives over it */
		struct orch_wtsetup w = x->defaults.wtsetup;

		wtsetup_merge(&w, &t->wtsetup);
		t->wtsetup = w;
	}
}

/* title (steps: or Bernstein's legacy goal) and prompt (or Bernstein's
 * description, which a step defaults to its title) */
static void parse_title_prompt(struct pctx *x, const struct ynode *m, const char *path,
			       const char *stage, struct plan_task *t)
{
	char pk[YAML_PATH_MAX];
	const struct ynode *v;
	const char *key;
	struct diag d;

	key = "title";
	if (stage)
		v = either(x, m, "title", "goal", path, &key);
	else
		v = ynode_get(m, key);
	if (!v) {
		problem(x, m, path, "missing required key 'title'%s", stage ? " (or 'goal')" : "");
	} else {
		diag_clear(&d);
		if (yaml_value_str(x->doc, v, yaml_path_key(pk, sizeof(pk), path, key), false,
				   &t->title, &d) < 0)
			add(x, &d);
		t->title_line = v->line;
		t->title_col = v->col;
	}

	v = either(x, m, "prompt", "description", path, &key);
	if (v) {
		diag_clear(&d);
		if (yaml_value_str(x->doc, v, yaml_path_key(pk, sizeof(pk), path, key), false,
				   &t->prompt, &d) < 0)
			add(x, &d);
	} else if (stage) {
		t->prompt = t->title; /* Bernstein: description defaults to the title */
	} else {
		problem(x, m, path, "missing required key 'prompt' (or 'description')");
	}
}

/* adapter: (or cli:); true when the task names one */
static bool parse_task_adapter(struct pctx *x, const struct ynode *m, const char *path,
			       struct plan_task *t)
{
	char pk[YAML_PATH_MAX];
	const struct ynode *v;
	const char *key;
	struct diag d;

	v = either(x, m, "adapter", "cli", path, &key);
	if (!v)
		return false;
	diag_clear(&d);
	if (orch_get_adapter(x->doc, v, yaml_path_key(pk, sizeof(pk), path, key), &t->adapter, &d) <
	    0)
		add(x, &d);
	return true;
}

static void parse_id(struct pctx *x, const struct ynode *v, const char *pk, struct plan_task *t)
{
	char q[80];
	struct diag d;

	diag_clear(&d);
	if (yaml_value_str(x->doc, v, pk, false, &t->id, &d) < 0) {
		add(x, &d);
	} else if (!plan_id_valid(t->id)) {
		problem(x, v, pk, "invalid id '%s' (expected [a-z0-9][a-z0-9-]*, at most %d bytes)",
			yaml_quote(q, sizeof(q), t->id), PLAN_ID_MAX);
		t->id = NULL;
	} else {
		t->id_explicit = true;
		t->id_line = v->line;
		t->id_col = v->col;
	}
}

static void parse_role(struct pctx *x, const struct ynode *v, const char *pk, struct plan_task *t)
{
	char q[80];
	struct diag d;

	diag_clear(&d);
	if (yaml_value_str(x->doc, v, pk, false, &t->role, &d) < 0) {
		add(x, &d);
		t->role = ORCH_DEFAULT_ROLE;
	} else if (!orch_role_known(t->role)) {
		struct sbuf sb = SBUF_INIT(400);
		size_t j;

		for (j = 0; orch_roles[j]; j++)
			(void)sbuf_addf(&sb, "%s%s", j ? ", " : "", orch_roles[j]);
		problem(x, v, pk, "unknown role '%s' (known: %s)",
			yaml_quote(q, sizeof(q), t->role), sb.buf);
		sbuf_release(&sb);
	}
}

static void parse_artifact(struct pctx *x, const struct ynode *v, const char *pk,
			   struct plan_task *t)
{
	char q[80];
	const char *why;
	struct diag d;

	diag_clear(&d);
	if (yaml_value_str(x->doc, v, pk, false, &t->artifact, &d) < 0)
		add(x, &d);
	else if ((why = relpath_problem(t->artifact)))
		problem(x, v, pk, "artifact '%s' %s", yaml_quote(q, sizeof(q), t->artifact), why);
}

static void parse_attachments(struct pctx *x, const struct ynode *key, const struct ynode *v,
			      const char *pk, struct plan_task *t)
{
	const char **a = NULL;
	const char *why;
	size_t j, n = 0;
	char q[80];
	struct diag d;

	diag_clear(&d);
	if (yaml_value_strlist(&x->p->arena, x->doc, v, pk, &a, &n, &d) < 0) {
		add(x, &d);
		return;
	}
	set_attachments(t, a, n, key);
	for (j = 0; j < n; j++)
		if ((why = relpath_problem(a[j]))) {
			char pi[YAML_PATH_MAX];

			problem(x, v->items[j], yaml_path_index(pi, sizeof(pi), pk, j),
				"attachment '%s' %s", yaml_quote(q, sizeof(q), a[j]), why);
		}
}

/* One key of a task, in document order: the keys read here are the ones
 * whose problems are reported where they stand. has_model is set when the
 * key is model: (even a null one). */
static void parse_task_key(struct pctx *x, const struct ynode *key, const struct ynode *v,
			   const char *path, struct plan_task *t, bool *has_model)
{
	const char *k = key->str;
	char pk[YAML_PATH_MAX];
	struct diag d;

	yaml_path_key(pk, sizeof(pk), path, k);
	diag_clear(&d);
	if (strcmp(k, "id") == 0) {
		parse_id(x, v, pk, t);
	} else if (strcmp(k, "role") == 0) {
		parse_role(x, v, pk, t);
	} else if (strcmp(k, "requires") == 0) {
		parse_requires(x, v, pk, t);
	} else if (strcmp(k, "model") == 0) {
		*has_model = true;
		if (yaml_value_str(x->doc, v, pk, true, &t->model, &d) < 0)
			add(x, &d);
	} else if (strcmp(k, "effort") == 0) {
		if (orch_get_effort(x->doc, v, pk, &t->effort, &d) < 0)
			add(x, &d);
	} else if (strcmp(k, "depends_on") == 0) {
		parse_depends(x, v, pk, &t->deps, &t->n_deps);
	} else if (strcmp(k, "timeout") == 0) {
		if (yaml_value_number(x->doc, v, pk, 0, true, ORCH_MAX_TIMEOUT_S, &t->timeout_s,
				      &d) < 0)
			add(x, &d);
	} else if (confinement_key(k)) {
		parse_confinement(x, k, v, pk, t);
	} else if (context_key(k)) {
		parse_context(x, k, v, pk, t);
	} else if (strcmp(k, "limits") == 0) {
		if (orch_get_limits(x->doc, v, pk, &t->limits, &d) < 0)
			add(x, &d);
	} else if (strcmp(k, "gates") == 0) {
		if (orch_get_gates(&x->p->arena, x->doc, v, pk, &t->gates, &t->n_gates, &d) < 0)
			add(x, &d);
	} else if (strcmp(k, "artifact") == 0) {
		parse_artifact(x, v, pk, t);
	} else if (strcmp(k, "attachments") == 0) {
		parse_attachments(x, key, v, pk, t);
	}
}

static void parse_task(struct pctx *x, const struct ynode *m, const char *path, const char *stage,
		       struct plan_task *t)
{
	char pk[YAML_PATH_MAX];
	bool has_adapter, has_model = false;
	size_t i;

	t->role = ORCH_DEFAULT_ROLE;
	t->stage = stage;
	t->line = m ? m->line : 0;
	t->col = m ? m->col : 0;
	t->title_line = t->line;
	t->title_col = t->col;
	if (!check_keys(x, m, stage ? step_keys : task_keys, stage ? step_ignored : NULL, path) ||
	    !m)
		return;

	parse_title_prompt(x, m, path, stage, t);
	has_adapter = parse_task_adapter(x, m, path, t);
	parse_extras(x, m, path, t);
	for (i = 0; i < m->n; i++)
		parse_task_key(x, m->keys[i], m->items[i], path, t, &has_model);
	if (t->artifact && (t->req.set & (1u << REQ_OUTPUT_MODE)) &&
	    t->req.output_mode != OUTPUT_MODE_ARTIFACT)
		problem(x, ynode_get(m, "artifact"),
			yaml_path_key(pk, sizeof(pk), path, "artifact"),
			"an artifact-mode task cannot require capability:output_mode=%s",
			output_mode_to_string(t->req.output_mode));
	plan_defaults(x, t, has_adapter, has_model);
}

static void set_path(struct pctx *x, size_t i, const char *path)
{
	x->p->tasks[i].path = arena_strdup(&x->p->arena, path);
}

static void parse_tasks(struct pctx *x, const struct ynode *v)
{
	char p[YAML_PATH_MAX];
	size_t i;

	if (!v || v->kind != YNODE_SEQ) {
		problem(x, v, "tasks", "expected a list of tasks, got %s", yaml_describe(v));
		return;
	}
	if (v->n == 0) {
		problem(x, v, "tasks", "the plan has no tasks");
		return;
	}
	x->p->tasks = arena_alloc(&x->p->arena, st_mult(v->n, sizeof(*x->p->tasks)));
	x->p->n = v->n;
	for (i = 0; i < v->n; i++) {
		yaml_path_index(p, sizeof(p), "tasks", i);
		set_path(x, i, p);
		parse_task(x, v->items[i], p, NULL, &x->p->tasks[i]);
	}
}

static const char *const stage_keys[] = {"name", "steps", "description", "depends_on", NULL};
static const char *const stage_ignored[] = {"repo", NULL};

/* Stage names in depends_on -> stage indices; dangling ones reported. */
static void resolve_stages(struct pctx *x)
{
	char p[YAML_PATH_MAX], q[80];
	size_t s, i, j;

	for (s = 0; s < x->n_stages; s++) {
		struct stage *st = &x->stages[s];

		for (i = 0; i < st->n_deps; i++) {
			struct plan_dep *d = &st->deps[i];

			for (j = 0; j < x->n_stages; j++)
				if (x->stages[j].name && strcmp(x->stages[j].name, d->name) == 0)
					break;
			if (j < x->n_stages) {
				d->index = j;
				continue;
			}
			(void)snprintf(p, sizeof(p), "stages[%zu].depends_on[%zu]", s, i);
			problem_at(x, d->line, d->col, p, "unknown stage '%s'",
				   yaml_quote(q, sizeof(q), d->name));
		}
	}
}

/* Stage cycles (each reported once, at the dependency closing it). true
 * when there is none. */
static bool stages_acyclic(struct pctx *x)
{
	size_t n = x->n_stages, s, top;
	unsigned char *color = xcalloc(n ? n : 1, 1);
	size_t *stack = xcalloc(n ? n : 1, sizeof(*stack));
	size_t *edge = xcalloc(n ? n : 1, sizeof(*edge));
	bool ok = true;

	for (s = 0; s < n; s++) {
		if (color[s])
			continue;
		top = 0;
		stack[top] = s;
		edge[top] = 0;
		color[s] = 1;
		for (;;) {
			struct stage *st = &x->stages[stack[top]];

			if (edge[top] < st->n_deps) {
				struct plan_dep *d = &st->deps[edge[top]++];
				size_t v = d->index, k;

				if (v == SIZE_MAX)
					continue;
				if (color[v] == 0) {
					color[v] = 1;
					stack[++top] = v;
					edge[top] = 0;
				} else if (color[v] == 1) {
					struct sbuf sb = SBUF_INIT(400);
					char p[YAML_PATH_MAX];

					for (k = 0; stack[k] != v; k++)
						;
					for (; k <= top; k++)
						(void)sbuf_addf(&sb, "%s -> ",
								x->stages[stack[k]].name);
					(void)sbuf_adds(&sb, x->stages[v].name);
					(void)snprintf(p, sizeof(p), "stages[%zu].depends_on[%zu]",
						       stack[top], edge[top] - 1);
					problem_at(x, d->line, d->col, p,
						   "stage dependency cycle: %s%s", sb.buf,
						   sb.len == sb.max ? "..." : "");
					sbuf_release(&sb);
					ok = false;
				}
			} else {
				color[stack[top]] = 2;
				if (top == 0)
					break;
				top--;
			}
		}
	}
	free(color);
	free(stack);
	free(edge);
	return ok;
}

/* Each step depends on every step of the stages its stage lists. */
static void derive_stage_deps(struct pctx *x)
{
	size_t s, i, j, k;

	for (s = 0; s < x->n_stages; s++) {
		struct stage *st = &x->stages[s];
		size_t n = 0;

		for (i = 0; i < st->n_deps; i++)
			n += x->stages[st->deps[i].index].count;
		for (j = 0; j < st->count; j++) {
			struct plan_task *t = &x->p->tasks[st->first + j];

			t->deps = arena_alloc(&x->p->arena, st_mult(n ? n : 1, sizeof(*t->deps)));
			t->n_deps = 0;
			for (i = 0; i < st->n_deps; i++) {
				const struct stage *up = &x->stages[st->deps[i].index];

				for (k = 0; k < up->count; k++) {
					struct plan_dep *d = &t->deps[t->n_deps++];

					*d = st->deps[i];
					d->index = up->first + k;
				}
			}
		}
	}
}

static void parse_stages(struct pctx *x, const struct ynode *v)
{
	char p[YAML_PATH_MAX], ps[YAML_PATH_MAX], pk[YAML_PATH_MAX], q[80];
	size_t i, j, n = 0;
	struct diag d;
	bool ok = true;

	if (!v || v->kind != YNODE_SEQ) {
		problem(x, v, "stages", "expected a list of stages, got %s", yaml_describe(v));
		return;
	}
	if (v->n == 0) {
		problem(x, v, "stages", "the plan has no stages");
		return;
	}
	x->stages = xcalloc(v->n, sizeof(*x->stages));
	x->n_stages = v->n;
	/* count the steps first: the tasks array is allocated once */
	for (i = 0; i < v->n; i++) {
		const struct ynode *steps = ynode_get(v->items[i], "steps");

		if (steps && steps->kind == YNODE_SEQ)
			n += steps->n;
	}
	x->p->tasks = arena_alloc(&x->p->arena, st_mult(n ? n : 1, sizeof(*x->p->tasks)));
	for (i = 0; i < v->n; i++) {
		const struct ynode *m = v->items[i], *steps, *nm, *dep;
		struct stage *st = &x->stages[i];

		yaml_path_index(p, sizeof(p), "stages", i);
		st->first = x->p->n;
		if (!check_keys(x, m, stage_keys, stage_ignored, p)) {
			ok = false;
			continue;
		}
		nm = ynode_get(m, "name");
		if (!nm) {
			problem(x, m, p, "missing required key 'name'");
			ok = false;
		} else {
			diag_clear(&d);
			if (yaml_value_str(x->doc, nm, yaml_path_key(pk, sizeof(pk), p, "name"),
					   false, &st->name, &d) < 0) {
				add(x, &d);
				ok = false;
			} else {
				st->name_node = nm;
				for (j = 0; j < i; j++)
					if (x->stages[j].name &&
					    strcmp(x->stages[j].name, st->name) == 0) {
						problem(x, nm, pk,
							"duplicate stage name '%s' (first at line %u)",
							yaml_quote(q, sizeof(q), st->name),
							x->stages[j].name_node->line);
						ok = false;
						break;
					}
			}
		}
		dep = ynode_get(m, "depends_on");
		if (dep)
			parse_depends(x, dep, yaml_path_key(pk, sizeof(pk), p, "depends_on"),
				      &st->deps, &st->n_deps);
		diag_clear(&d);
		if (ynode_get(m, "description") &&
		    yaml_value_str(x->doc, ynode_get(m, "description"),
				   yaml_path_key(pk, sizeof(pk), p, "description"), false,
				   &(const char *){NULL}, &d) < 0)
			add(x, &d);
		steps = ynode_get(m, "steps");
		yaml_path_key(pk, sizeof(pk), p, "steps");
		if (!steps) {
			problem(x, m, p, "missing required key 'steps'");
			ok = false;
			continue;
		}
		if (steps->kind != YNODE_SEQ || steps->n == 0) {
			problem(x, steps, pk, "expected a non-empty list of steps, got %s",
				steps->kind == YNODE_SEQ ? "an empty list" : yaml_describe(steps));
			ok = false;
			continue;
		}
		for (j = 0; j < steps->n; j++) {
			size_t t = x->p->n++;

			yaml_path_index(ps, sizeof(ps), pk, j);
			set_path(x, t, ps);
			parse_task(x, steps->items[j], ps, st->name ? st->name : "",
				   &x->p->tasks[t]);
		}
		st->count = x->p->n - st->first;
	}
	resolve_stages(x);
	for (i = 0; i < x->n_stages; i++)
		for (j = 0; j < x->stages[i].n_deps; j++)
			if (x->stages[i].deps[j].index == SIZE_MAX)
				ok = false;
	/* task dependencies only from a sound stage graph: a broken one is
	 * reported once, at the stages */
	if (stages_acyclic(x) && ok)
		derive_stage_deps(x);
}

static const char *const plan_keys[] = {
	"name",		  "description", "adapter",	 "cli",
	"model",	  "tasks",	 "stages",	 "sandbox",
	"network",	  "limits",	 "idle_timeout", "endpoints",
	"worktree_setup", "budget",	 "on_conflict",	 "constraints",
	"context_files",  "mcp_servers", "executor",	 "hooks",
	"notify",	  NULL,
};
/* Bernstein's top-level keys that have no effect here. */
static const char *const plan_ignored[] = {
	"max_agents",
	"repos",
	NULL,
};

/* Ids for tasks without id:, from the title (or task-N). */
static void assign_ids(struct pctx *x)
{
	char buf[PLAN_ID_MAX + 1];
	size_t i;

	for (i = 0; i < x->p->n; i++) {
		struct plan_task *t = &x->p->tasks[i];

		if (t->id)
			continue;
		if (t->title && plan_slug(t->title, buf)[0])
			t->id = arena_strdup(&x->p->arena, buf);
		else {
			(void)snprintf(buf, sizeof(buf), "task-%zu", i + 1);
			t->id = arena_strdup(&x->p->arena, buf);
		}
		t->id_line = t->title_line;
		t->id_col = t->title_col;
	}
}

/* endpoints: and mcp_servers: of the plan: where its agents are pointed,
 * which MCP servers they get */
static void parse_plan_agents(struct pctx *x, const struct ynode *root)
{
	const struct ynode *v;
	struct diag d;

	diag_clear(&d);
	if ((v = ynode_get(root, "endpoints")) &&
	    orch_endpoints_get(&x->p->arena, x->doc, v, "endpoints", x->allowed, &x->p->endpoints,
			       &d) < 0)
		add(x, &d);
	diag_clear(&d);
	if ((v = ynode_get(root, "mcp_servers")) &&
	    orch_mcp_servers_get(&x->p->arena, x->doc, v, "mcp_servers", x->allowed,
				 &x->p->mcp_servers, &d) < 0)
		add(x, &d);
}

/* hooks: and notify: of the plan; a webhook URL stays out of it (it is
 * recorded with the run in state.db: webhook_env names where it is) */
static void parse_plan_hooks(struct pctx *x, const struct ynode *root)
{
	const struct ynode *v;
	struct diag d;

	diag_clear(&d);
	if ((v = ynode_get(root, "hooks")) &&
	    orch_get_hooks(x->doc, v, "hooks", &x->p->hooks, &d) < 0)
		add(x, &d);
	diag_clear(&d);
	if ((v = ynode_get(root, "notify")) &&
	    orch_get_notify(x->doc, v, "notify", &x->p->notify, &d) < 0)
		add(x, &d);
	else if (v && x->p->notify.webhook) {
		problem(x, ynode_get(v, "webhook"), "notify.webhook",
			"a plan's notify takes webhook_env (the name of the variable that holds the URL), not the URL: the plan is recorded with the run");
		x->p->notify.webhook = NULL;
	}
}

static void parse_plan(struct pctx *x)
{
	const struct ynode *root = x->doc->root, *v, *tasks, *stages;
	const char *key;
	struct diag d;

	if (!check_keys(x, root, plan_keys, plan_ignored, "plan"))
		return;
	v = ynode_get(root, "name");
	diag_clear(&d);
	if (!v)
		problem(x, root, NULL, "plan: missing required key 'name'");
	else if (yaml_value_str(x->doc, v, "name", false, &x->p->name, &d) < 0)
		add(x, &d);
	v = ynode_get(root, "description");
	diag_clear(&d);
	if (v && yaml_value_str(x->doc, v, "description", false, &x->p->description, &d) < 0)
		add(x, &d);
	v = either(x, root, "adapter", "cli", NULL, &key);
	diag_clear(&d);
	if (v) {
		x->has_adapter = true;
		if (orch_get_adapter(x->doc, v, key, &x->adapter, &d) < 0)
			add(x, &d);
	}
	v = ynode_get(root, "model");
	diag_clear(&d);
	if (v && yaml_value_str(x->doc, v, "model", true, &x->model, &d) < 0)
		add(x, &d);
	/* sandbox:, network:, limits: of every task that does not set its own */
	if ((v = ynode_get(root, "sandbox")))
		parse_confinement(x, "sandbox", v, "sandbox", &x->defaults);
	if ((v = ynode_get(root, "network")))
		parse_confinement(x, "network", v, "network", &x->defaults);
	diag_clear(&d);
	if ((v = ynode_get(root, "idle_timeout")))
		parse_confinement(x, "idle_timeout", v, "idle_timeout", &x->defaults);
	if ((v = ynode_get(root, "on_conflict")))
		parse_confinement(x, "on_conflict", v, "on_conflict", &x->defaults);
	if ((v = ynode_get(root, "executor")))
		parse_confinement(x, "executor", v, "executor", &x->defaults);
	/* constraints:, context_files: of every task that gives none */
	if ((v = ynode_get(root, "constraints")))
		parse_context(x, "constraints", v, "constraints", &x->defaults);
	if ((v = ynode_get(root, "context_files")))
		parse_context(x, "context_files", v, "context_files", &x->defaults);
	diag_clear(&d);
	if ((v = ynode_get(root, "limits")) &&
	    orch_get_limits(x->doc, v, "limits", &x->defaults.limits, &d) < 0)
		add(x, &d);
	parse_plan_agents(x, root);
	parse_plan_hooks(x, root);
	diag_clear(&d);
	if ((v = ynode_get(root, "worktree_setup")) &&
	    orch_get_wtsetup(&x->p->arena, x->doc, v, "worktree_setup", &x->defaults.wtsetup, &d) <
		    0)
		add(x, &d);
	/* budget: the run's (orch/budget.h); its fields win over bernstein.yaml's */
	diag_clear(&d);
	if ((v = ynode_get(root, "budget")) &&
	    orch_budget_parse(x->doc, v, "budget", &x->p->budget, &d) < 0)
		add(x, &d);

	tasks = ynode_get(root, "tasks");
	stages = ynode_get(root, "stages");
	if (tasks && stages) {
		problem(x, root, NULL, "plan: give 'tasks' or 'stages', not both");
		return;
	}
	if (!tasks && !stages) {
		problem(x, root, NULL, "plan: missing required key 'tasks' (or 'stages')");
		return;
	}
	if (tasks) {
		x->p->form = PLAN_FORM_TASKS;
		parse_tasks(x, tasks);
	} else {
		x->p->form = PLAN_FORM_STAGES;
		parse_stages(x, stages);
	}
	assign_ids(x);
}

/* ---- validation ---- */

static const char *task_path(const struct plan *p, size_t i, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s", p->tasks[i].path ? p->tasks[i].path : "task");
	return buf;
}

struct vctx {
	struct plan *p;
	struct diag_list *issues;
	size_t found;
};

static void vproblem(struct vctx *v, unsigned line, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void vproblem(struct vctx *v, unsigned line, unsigned col, const char *fmt, ...)
{
	struct diag d;
	va_list ap;

	va_start(ap, fmt);
	diag_vset(&d, v->p->source, line, col, fmt, ap);
	va_end(ap);
	diag_list_add(v->issues, &d);
	v->found++;
}

/* Tasks sorted by a key (title or id), ties in file order: duplicates and
 * lookups in O(n log n) however large the plan. */
struct key_entry {
	const char *key;
	size_t task;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key_entry *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->task < y->task ? -1 : x->task > y->task;
}

static struct key_entry *key_index(const struct plan *p, bool ids, size_t *ret_n)
{
	struct key_entry *v = xcalloc(p->n ? p->n : 1, sizeof(*v));
	size_t i, n = 0;

	for (i = 0; i < p->n; i++) {
		const char *k = ids ? p->tasks[i].id : p->tasks[i].title;

		if (k)
			v[n++] = (struct key_entry){.key = k, .task = i};
	}
	qsort(v, n, sizeof(*v), key_cmp);
	*ret_n = n;
	return v;
}

/* The first task (in file order) with key, or -1. */
static long key_find(const struct key_entry *v, size_t n, const char *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(v[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && strcmp(v[lo].key, key) == 0 ? (long)v[lo].task : -1;
}

static void check_unique(struct vctx *v, const struct key_entry *titles, size_t nt,
			 const struct key_entry *ids, size_t ni)
{
	struct plan *p = v->p;
	char path[YAML_PATH_MAX], q[80];
	size_t k, first;

	for (k = 1, first = 0; k < nt; k++) {
		const struct plan_task *t = &p->tasks[titles[k].task];

		if (strcmp(titles[k].key, titles[first].key) != 0) {
			first = k;
			continue;
		}
		vproblem(v, t->title_line, t->title_col,
			 "field '%s.title': duplicate title '%s' (first at line %u)",
			 task_path(p, titles[k].task, path, sizeof(path)),
			 yaml_quote(q, sizeof(q), t->title),
			 p->tasks[titles[first].task].title_line);
	}
	for (k = 1, first = 0; k < ni; k++) {
		const struct plan_task *t = &p->tasks[ids[k].task], *u;

		if (strcmp(ids[k].key, ids[first].key) != 0) {
			first = k;
			continue;
		}
		u = &p->tasks[ids[first].task];
		/* equal titles give equal ids: reported once, as titles */
		if (!t->id_explicit && !u->id_explicit && t->title && u->title &&
		    strcmp(t->title, u->title) == 0)
			continue;
		if (t->id_explicit)
			vproblem(v, t->id_line, t->id_col,
				 "field '%s.id': duplicate id '%s' (first at line %u)",
				 task_path(p, ids[k].task, path, sizeof(path)), t->id, u->id_line);
		else
			vproblem(
				v, t->id_line, t->id_col,
				"field '%s.title': the id '%s' derived from this title is already the id of the task at line %u; give one of them an explicit id:",
				task_path(p, ids[k].task, path, sizeof(path)), t->id, u->line);
	}
}

/* depends_on names: an id first, else a title. */
static void resolve_deps(struct vctx *v, const struct key_entry *titles, size_t nt,
			 const struct key_entry *ids, size_t ni)
{
	struct plan *p = v->p;
	char path[YAML_PATH_MAX], q[80];
	size_t i, j;

	for (i = 0; i < p->n; i++) {
		struct plan_task *t = &p->tasks[i];

		for (j = 0; j < t->n_deps; j++) {
			struct plan_dep *d = &t->deps[j];
			long k;

			if (d->index != SIZE_MAX)
				continue; /* already resolved (stages form) */
			k = key_find(ids, ni, d->name);
			if (k < 0)
				k = key_find(titles, nt, d->name);
			if (k >= 0) {
				d->index = (size_t)k;
				continue;
			}
			vproblem(
				v, d->line, d->col,
				"field '%s.depends_on[%zu]': unknown task '%s' (no task has this id or title)",
				task_path(p, i, path, sizeof(path)), j,
				yaml_quote(q, sizeof(q), d->name));
		}
	}
}

/* Depth-first over task -> dependency edges; every back edge closes a
 * cycle, reported at that dependency. */
static void check_cycles(struct vctx *v)
{
	struct plan *p = v->p;
	size_t n = p->n, s, top;
	unsigned char *color = xcalloc(n ? n : 1, 1);
	size_t *stack = xcalloc(n ? n : 1, sizeof(*stack));
	size_t *edge = xcalloc(n ? n : 1, sizeof(*edge));

	for (s = 0; s < n; s++) {
		if (color[s])
			continue;
		top = 0;
		stack[0] = s;
		edge[0] = 0;
		color[s] = 1;
		for (;;) {
			const struct plan_task *t = &p->tasks[stack[top]];

			if (edge[top] < t->n_deps) {
				const struct plan_dep *d = &t->deps[edge[top]++];
				size_t w = d->index, k;

				if (w >= n)
					continue; /* dangling: reported */
				if (color[w] == 0) {
					color[w] = 1;
					stack[++top] = w;
					edge[top] = 0;
				} else if (color[w] == 1) {
					struct sbuf sb = SBUF_INIT(400);
					char path[YAML_PATH_MAX];

					for (k = 0; stack[k] != w; k++)
						;
					for (; k <= top; k++)
						(void)sbuf_addf(&sb, "%s -> ",
								p->tasks[stack[k]].id);
					(void)sbuf_adds(&sb, p->tasks[w].id);
					vproblem(
						v, d->line, d->col,
						"field '%s.depends_on[%zu]': dependency cycle: %s%s",
						task_path(p, stack[top], path, sizeof(path)),
						(size_t)(d - t->deps), sb.buf,
						sb.len == sb.max ? "..." : "");
					sbuf_release(&sb);
				}
			} else {
				color[stack[top]] = 2;
				if (top == 0)
					break;
				top--;
			}
		}
	}
	free(color);
	free(stack);
	free(edge);
}

size_t plan_validate(struct plan *p, struct diag_list *issues)
{
	struct vctx v = {.p = p, .issues = issues, .found = 0};

	size_t nt, ni;
	struct key_entry *titles = key_index(p, false, &nt), *ids = key_index(p, true, &ni);

	check_unique(&v, titles, nt, ids, ni);
	resolve_deps(&v, titles, nt, ids, ni);
	check_cycles(&v);
	free(titles);
	free(ids);
	return v.found;
}

/* ---- loading ---- */

struct plan *plan_free(struct plan *p)
{
	if (!p)
		return NULL;
	arena_release(&p->arena);
	ydoc_free(p->doc);
	free(p);
	return NULL;
}

int plan_load_buf(const char *name, const char *buf, size_t len, const char *allowed_api_key_envs,
		  struct plan **ret, struct diag_list *issues)
{
	struct yaml_limits lim = {.max_bytes = PLAN_MAX_BYTES};
	struct diag_list found = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	struct pctx x;
	struct diag d;
	size_t i;
	int r;

	diag_clear(&d);
	if (len > PLAN_MAX_BYTES) {
		diag_set(&d, name, 0, 0, "file is larger than %zu bytes", PLAN_MAX_BYTES);
		diag_list_add(issues, &d);
		return -EFBIG;
	}
	p = xcalloc(1, sizeof(*p));
	arena_init(&p->arena, 0);
	hash_sha256_hex(buf, len, p->hash);
	r = yaml_load_buf(name, buf, len, &lim, &p->doc, &d);
	if (r < 0) {
		diag_list_add(issues, &d);
		goto out;
	}
	p->source = p->doc->name;
	x = (struct pctx){.p = p,
			  .doc = p->doc,
			  .allowed = allowed_api_key_envs,
			  .yc = YCHECK_INIT(p->doc, YCHECK_IN, &found, NULL)};
	parse_plan(&x);
	x.yc.found += plan_validate(p, &found);
	free(x.stages);
	if (x.yc.found) {
		diag_list_sort(&found);
		for (i = 0; i < found.n; i++)
			diag_list_add(issues, &found.v[i]);
		if (issues)
			issues->dropped += found.dropped;
		r = -EINVAL;
		goto out;
	}
	*ret = p;
	p = NULL;
	r = 0;
out:
	diag_list_release(&found);
	plan_free(p);
	return r;
}

int plan_load_file(const char *path, const char *allowed_api_key_envs, struct plan **ret,
		   struct diag_list *issues)
{
	char *text = NULL;
	size_t len = 0;
	struct diag d;
	int r;

	r = read_file_capped(path, PLAN_MAX_BYTES, &text, &len);
	if (r < 0) {
		if (r == -EFBIG)
			diag_set(&d, path, 0, 0, "file is larger than %zu bytes", PLAN_MAX_BYTES);
		else
			diag_set(&d, path, 0, 0, "cannot read file: %s", file_strerror(r));
		diag_list_add(issues, &d);
		return r;
	}
	r = plan_load_buf(path, text, len, allowed_api_key_envs, ret, issues);
	free(text);
	return r;
}

int plan_load(const char *path, const char *allowed_api_key_envs, struct plan **ret,
	      struct diag *reterr)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	int r = plan_load_file(path, allowed_api_key_envs, ret, &is);

	if (r < 0 && reterr) {
		if (is.n)
			*reterr = is.v[0];
		else
			diag_set(reterr, path, 0, 0, "invalid plan");
	}
	diag_list_release(&is);
	return r;
}

/* ---- queries ---- */

const char *plan_hash(const struct plan *p)
{
	return p->hash;
}

long plan_find(const struct plan *p, const char *id_or_title)
{
	size_t i;

	if (!id_or_title)
		return -1;
	for (i = 0; i < p->n; i++)
		if (p->tasks[i].id && strcmp(p->tasks[i].id, id_or_title) == 0)
			return (long)i;
	for (i = 0; i < p->n; i++)
		if (p->tasks[i].title && strcmp(p->tasks[i].title, id_or_title) == 0)
			return (long)i;
	return -1;
}

/* A min-heap of task indices: the ready task first in the file goes first. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;

	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static size_t heap_pop(size_t *h, size_t *n)
{
	size_t top = h[0], v = h[--(*n)], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
	return top;
}

int plan_topo_order(const struct plan *p, size_t *order)
{
	size_t n = p->n, i, j, k, nh = 0, no = 0, total = 0;
	size_t *pending = xcalloc(n ? n : 1, sizeof(*pending)); /* unmet dependencies */
	size_t *start = xcalloc(n + 1, sizeof(*start));		/* dependents, CSR */
	size_t *dependents, *fill, *heap;
	int r = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < p->tasks[i].n_deps; j++)
			if (p->tasks[i].deps[j].index < n) {
				start[p->tasks[i].deps[j].index + 1]++;
				pending[i]++;
				total++;
			}
	for (i = 0; i < n; i++)
		start[i + 1] += start[i];
	dependents = xcalloc(total ? total : 1, sizeof(*dependents));
	fill = xcalloc(n ? n : 1, sizeof(*fill));
	heap = xcalloc(n ? n : 1, sizeof(*heap));
	for (i = 0; i < n; i++)
		for (j = 0; j < p->tasks[i].n_deps; j++) {
			size_t d = p->tasks[i].deps[j].index;

			if (d < n)
				dependents[start[d] + fill[d]++] = i;
		}
	for (i = 0; i < n; i++)
		if (!pending[i])
			heap_push(heap, &nh, i);
	while (nh) {
		i = heap_pop(heap, &nh);
		order[no++] = i;
		for (k = start[i]; k < start[i + 1]; k++)
			if (--pending[dependents[k]] == 0)
				heap_push(heap, &nh, dependents[k]);
	}
	if (no != n)
		r = -ELOOP;
	free(pending);
	free(start);
	free(dependents);
	free(fill);
	free(heap);
	return r;
}
