/* The task as a run dispatches it: plan -> spec, spec <-> its recorded JSON
 * (see spec.h). */
#include "orch/spec.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/json.h"
#include "util/mathx.h"
#include "util/banned.h"

#define SPEC_ARENA_BLOCK 1024

void spec_init(struct task_spec *s)
{
	memset(s, 0, sizeof(*s));
	arena_init(&s->arena, SPEC_ARENA_BLOCK);
	s->req = (struct requirements)REQUIREMENTS_INIT;
	s->sandbox = SANDBOX_AUTO;
	s->tier = SANDBOX_KIND_NONE;
	s->network = -1;
}

void spec_release(struct task_spec *s)
{
	if (!s)
		return;
	arena_release(&s->arena);
	spec_init(s);
}

/* ---- plan -> spec ---- */

static const char *dup(struct task_spec *s, const char *v)
{
	return v ? arena_strdup(&s->arena, v) : NULL;
}

static const char *const *dupv(struct task_spec *s, const char *const *v, size_t n)
{
	const char **out = arena_alloc(&s->arena, (n + 1) * sizeof(*out));
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = dup(s, v[i]);
	return out;
}

void spec_from_plan(const struct plan *p, size_t i, struct task_spec *ret)
{
	const struct plan_task *t = &p->tasks[i];
	const char **deps;
	struct orch_gate *g;
	size_t j;

	spec_init(ret);
	ret->id = dup(ret, t->id);
	ret->title = dup(ret, t->title);
	ret->role = dup(ret, t->role);
	ret->adapter = dup(ret, t->adapter);
	ret->model = dup(ret, t->model);
	ret->effort = dup(ret, t->effort);
	ret->prompt = dup(ret, t->prompt);
	ret->artifact = dup(ret, t->artifact);
	ret->stage = dup(ret, t->stage);
	deps = arena_alloc(&ret->arena, (t->n_deps + 1) * sizeof(*deps));
	for (j = 0; j < t->n_deps; j++)
		if (t->deps[j].index < p->n)
			deps[ret->n_depends_on++] = dup(ret, p->tasks[t->deps[j].index].id);
	ret->depends_on = deps;
	ret->requires = dupv(ret, t->requires, t->n_requires);
	ret->n_requires = t->n_requires;
	ret->req = t->req;
	ret->attachments = dupv(ret, t->attachments, t->n_attachments);
	ret->n_attachments = t->n_attachments;
	ret->timeout_s = t->timeout_s > 0 ? t->timeout_s : 0;
	ret->has_idle_timeout = t->has_idle_timeout;
	ret->idle_timeout_s = t->idle_timeout_s;
	if (t->sandbox && sandbox_mode_from_string(t->sandbox) >= 0) {
		ret->has_sandbox = true;
		ret->sandbox = sandbox_mode_from_string(t->sandbox);
	}
	if (t->network && net_mode_from_string(t->network) >= 0)
		ret->network = net_mode_from_string(t->network);
	if (t->executor && executor_kind_from_string(t->executor) >= 0) {
		ret->has_executor = true;
		ret->executor = executor_kind_from_string(t->executor);
	}
	if (t->on_conflict && conflict_policy_from_string(t->on_conflict) >= 0) {
		ret->has_on_conflict = true;
		ret->on_conflict = conflict_policy_from_string(t->on_conflict);
	}
	ret->limits = t->limits;
	ret->wtsetup = t->wtsetup;
	if (t->wtsetup.copy_files)
		ret->wtsetup.copy_files = (const char **)(uintptr_t)dupv(ret, t->wtsetup.copy_files,
									 t->wtsetup.n_copy);
	if (t->wtsetup.symlink_dirs)
		ret->wtsetup.symlink_dirs = (const char **)(uintptr_t)dupv(
			ret, t->wtsetup.symlink_dirs, t->wtsetup.n_links);
	ret->wtsetup.setup_command = dup(ret, t->wtsetup.setup_command);
	g = arena_alloc(&ret->arena, (t->n_gates + 1) * sizeof(*g));
	for (j = 0; j < t->n_gates; j++) {
		g[j] = t->gates[j];
		g[j].name = dup(ret, t->gates[j].name);
		g[j].run = dup(ret, t->gates[j].run);
	}
	ret->gates = g;
	ret->n_gates = t->n_gates;
	ret->sampling = t->sampling;
	ret->sampling.base_url = dup(ret, t->sampling.base_url);
	ret->sampling.api_key_env = dup(ret, t->sampling.api_key_env);
	orch_endpoints_copy(&ret->arena, &p->endpoints, &ret->endpoints);
	orch_mcp_servers_copy(&ret->arena, &p->mcp_servers, &ret->plan_mcp_servers);
	orch_mcp_servers_copy(&ret->arena, &t->mcp_servers, &ret->mcp_servers);
	ret->retry = t->retry;
	ret->retry.fallback_lines = ret->retry.fallback_cols = NULL;
	if (t->retry.models)
		ret->retry.models = dupv(ret, t->retry.models, t->retry.n_models);
	if (t->retry.fallback)
		ret->retry.fallback = dupv(ret, t->retry.fallback, t->retry.n_fallback);
	if (t->constraints) {
		ret->constraints = dupv(ret, t->constraints, t->n_constraints);
		ret->n_constraints = t->n_constraints;
	}
	if (t->context_files) {
		ret->context_files = dupv(ret, t->context_files, t->n_context_files);
		ret->n_context_files = t->n_context_files;
	}
	if (spec_renders(ret))
		ret->goal = dup(ret, p->description);
	ret->files = dupv(ret, t->files, t->files ? t->n_files : 0);
	ret->n_files = t->files ? t->n_files : 0;
	ret->line = t->line;
	ret->col = t->col;
}

bool spec_renders(const struct task_spec *s)
{
	return s->constraints || s->context_files;
}

/* ---- spec -> JSON ---- */

static json_t *jstr(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;

	return j ? j : json_null();
}

/* A whole number as an integer, else a real: what the plan said, kept. */
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
		(void)json_array_append_new(a, jstr(v[i]));
	return a;
}

json_t *spec_to_json(const struct task_spec *s)
{
	json_t *o = json_object(), *rj;

	(void)json_object_set_new(o, "id", jstr(s->id));
	(void)json_object_set_new(o, "title", jstr(s->title));
	(void)json_object_set_new(o, "role", jstr(s->role));
	(void)json_object_set_new(o, "adapter", jstr(s->adapter));
	(void)json_object_set_new(o, "model", jstr(s->model));
	(void)json_object_set_new(o, "effort", jstr(s->effort));
	(void)json_object_set_new(o, "prompt", jstr(s->prompt));
	(void)json_object_set_new(o, "depends_on", jstrs(s->depends_on, s->n_depends_on));
	(void)json_object_set_new(o, "requires", jstrs(s->requires, s->n_requires));
	(void)json_object_set_new(o, "artifact", jstr(s->artifact));
	(void)json_object_set_new(o, "attachments", jstrs(s->attachments, s->n_attachments));
	(void)json_object_set_new(o, "timeout",
				  s->timeout_s > 0 ? jnum(s->timeout_s) : json_null());
	/* only when set: a plan without them records what it did before */
	if (s->has_idle_timeout)
		(void)json_object_set_new(o, "idle_timeout", jnum(s->idle_timeout_s));
	if (s->has_sandbox)
		(void)json_object_set_new(o, "sandbox", jstr(sandbox_mode_to_string(s->sandbox)));
	if (s->has_tier)
		(void)json_object_set_new(o, "sandbox_tier", jstr(sandbox_kind_to_string(s->tier)));
	if (s->network >= 0)
		(void)json_object_set_new(o, "network",
					  jstr(net_mode_to_string((enum net_mode)s->network)));
	if (s->has_executor)
		(void)json_object_set_new(o, "executor",
					  jstr(executor_kind_to_string(s->executor)));
	if (s->has_on_conflict)
		(void)json_object_set_new(o, "on_conflict",
					  jstr(conflict_policy_to_string(s->on_conflict)));
	if (s->conflict_from)
		(void)json_object_set_new(o, "conflict_from", jstr(s->conflict_from));
	if (contain_limits_any(&s->limits))
		(void)json_object_set_new(o, "limits", orch_limits_json(&s->limits));
	if (s->wtsetup.set)
		(void)json_object_set_new(o, "worktree_setup", orch_wtsetup_json(&s->wtsetup));
	(void)json_object_set_new(o, "gates", orch_gates_json(s->gates, s->n_gates));
	(void)json_object_set_new(o, "sampling", orch_slots_json(&s->sampling));
	/* only when given: a plan without them records what it did before */
	if (s->endpoints.n)
		(void)json_object_set_new(o, "endpoints", orch_endpoints_json(&s->endpoints));
	if (s->plan_mcp_servers.n)
		(void)json_object_set_new(o, "plan_mcp_servers",
					  orch_mcp_servers_json(&s->plan_mcp_servers));
	if (s->mcp_servers.n)
		(void)json_object_set_new(o, "mcp_servers", orch_mcp_servers_json(&s->mcp_servers));
	(void)json_object_set_new(o, "stage", jstr(s->stage));
	if ((rj = retry_policy_json(&s->retry)))
		(void)json_object_set_new(o, "retry", rj);
	if (s->retry.fallback)
		(void)json_object_set_new(o, "fallback", retry_fallback_json(&s->retry));
	if (s->chain_at || s->chain_base || s->chain_model)
		(void)json_object_set_new(
			o, "retry_state",
			json_pack("{s:I, s:I, s:o}", "at", (json_int_t)s->chain_at, "base",
				  (json_int_t)s->chain_base, "model", jstr(s->chain_model)));
	/* only when given: a plan without them records what it did before */
	if (s->goal)
		(void)json_object_set_new(o, "goal", jstr(s->goal));
	if (s->constraints)
		(void)json_object_set_new(o, "constraints",
					  jstrs(s->constraints, s->n_constraints));
	if (s->context_files)
		(void)json_object_set_new(o, "context_files",
					  jstrs(s->context_files, s->n_context_files));
	if (s->n_files)
		(void)json_object_set_new(o, "files", jstrs(s->files, s->n_files));
	(void)json_object_set_new(o, "line", json_integer(s->line));
	(void)json_object_set_new(o, "column", json_integer(s->col));
	return o;
}

char *spec_dump(const struct task_spec *s)
{
	json_t *j = spec_to_json(s);
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(j);
	return text;
}

json_t *spec_plan_json(const struct plan *p)
{
	json_t *o = json_object(), *tasks = json_array();
	size_t i;

	(void)json_object_set_new(o, "name", jstr(p->name));
	(void)json_object_set_new(o, "description", jstr(p->description));
	(void)json_object_set_new(o, "form", jstr(plan_form_to_string(p->form)));
	(void)json_object_set_new(o, "file", jstr(p->source));
	(void)json_object_set_new(o, "plan_hash", jstr(p->hash));
	for (i = 0; i < p->n; i++) {
		struct task_spec s;

		spec_from_plan(p, i, &s);
		(void)json_array_append_new(tasks, spec_to_json(&s));
		spec_release(&s);
	}
	(void)json_object_set_new(o, "tasks", tasks);
	return o;
}

/* ---- JSON -> spec ---- */

/* One key of the recorded form: its parser (v is never NULL). */
struct spec_key {
	const char *name;
	int (*parse)(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr);
	size_t field; /* offsetof the const char * field, for parse_str */
};

static int bad(struct diag *reterr, const char *key, const char *what)
{
	diag_set(reterr, NULL, 0, 0, "'%s': %s", key, what);
	return -EBADMSG;
}

static int parse_str(struct task_spec *s, const char *key, const json_t *v, size_t field,
		     struct diag *reterr)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(reterr, key, "not a string");
	*(const char **)(void *)((char *)s + field) = dup(s, json_string_value(v));
	return 0;
}

static int parse_strs(struct task_spec *s, const char *key, const json_t *v,
		      const char *const **ret, size_t *ret_n, struct diag *reterr)
{
	const char **out;
	size_t i, n = json_array_size(v);

	if (!json_is_array(v))
		return bad(reterr, key, "not an array of strings");
	out = arena_alloc(&s->arena, (n + 1) * sizeof(*out));
	for (i = 0; i < n; i++) {
		const json_t *e = json_array_get(v, i);

		if (!json_is_string(e))
			return bad(reterr, key, "not an array of strings");
		out[i] = dup(s, json_string_value(e));
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

static int k_deps(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	return parse_strs(s, key, v, &s->depends_on, &s->n_depends_on, reterr);
}

static int k_attachments(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	return parse_strs(s, key, v, &s->attachments, &s->n_attachments, reterr);
}

static int k_context(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	if (strcmp(key, "constraints") == 0)
		return parse_strs(s, key, v, &s->constraints, &s->n_constraints, reterr);
	if (strcmp(key, "context_files") == 0)
		return parse_strs(s, key, v, &s->context_files, &s->n_context_files, reterr);
	return parse_strs(s, key, v, &s->files, &s->n_files, reterr);
}

/* requires: the tokens as written; the capability: ones parsed again. */
static int k_requires(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	const char **caps;
	size_t i, n = 0;
	struct diag d;
	int r;

	r = parse_strs(s, key, v, &s->requires, &s->n_requires, reterr);
	if (r < 0)
		return r;
	caps = arena_alloc(&s->arena, (s->n_requires + 1) * sizeof(*caps));
	for (i = 0; i < s->n_requires; i++)
		if (strncmp(s->requires[i], REQUIREMENTS_PREFIX, strlen(REQUIREMENTS_PREFIX)) == 0)
	caps[n++] = s->requires[i];
	diag_clear(&d);
	if (requirements_parse(caps, n, &s->req, &d) < 0)
		return bad(reterr, key, d.msg);
	return 0;
}

/* A positive finite number (or null: unset). */
static int k_timeout(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	double t;

	if (json_is_null(v))
		return 0;
	t = json_number_value(v);
	if (!json_is_number(v) || !(t > 0) || !isfinite(t))
		return bad(reterr, key, "not a number > 0");
	s->timeout_s = t;
	return 0;
}

/* A finite number >= 0 (0: off); null is as absent. */
static int k_idle_timeout(struct task_spec *s, const char *key, const json_t *v,
			  struct diag *reterr)
{
	double t;

	if (json_is_null(v))
		return 0;
	t = json_number_value(v);
	if (!json_is_number(v) || !(t >= 0) || !isfinite(t))
		return bad(reterr, key, "not a number >= 0");
	s->has_idle_timeout = true;
	s->idle_timeout_s = t;
	return 0;
}

static int k_executor(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	enum executor_kind k = executor_kind_from_string(json_string_value(v));

	if ((int)k < 0)
		return bad(reterr, key, "not local or slurm");
	s->has_executor = true;
	s->executor = k;
	return 0;
}

static int k_on_conflict(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	enum conflict_policy p = conflict_policy_from_string(json_string_value(v));

	if ((int)p < 0)
		return bad(reterr, key, "not rebase, resolve or fail");
	s->has_on_conflict = true;
	s->on_conflict = p;
	return 0;
}

/* A commit id: 40 or 64 lowercase hex digits. */
static int k_conflict_from(struct task_spec *s, const char *key, const json_t *v,
			   struct diag *reterr)
{
	const char *c = json_string_value(v);
	size_t n = c ? strlen(c) : 0;

	if (!c || (n != 40 && n != 64) || strspn(c, "0123456789abcdef") != n)
		return bad(reterr, key, "not a commit id");
	s->conflict_from = dup(s, c);
	return 0;
}

static int k_sandbox(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	enum sandbox_mode m = sandbox_mode_from_string(json_string_value(v));

	if (m < 0)
		return bad(reterr, key, "not one of auto, none, landlock, bwrap, container");
	s->has_sandbox = true;
	s->sandbox = m;
	return 0;
}

static int k_tier(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	enum sandbox_kind k = sandbox_kind_from_string(json_string_value(v));

	if (k < 0)
		return bad(reterr, key, "not one of none, landlock, bwrap, container");
	s->has_tier = true;
	s->tier = k;
	return 0;
}

static int k_network(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	enum net_mode m = net_mode_from_string(json_string_value(v));

	if ((int)m < 0)
		return bad(reterr, key, "not one of full, llm, none");
	s->network = (int)m;
	return 0;
}

static int uint_of(const json_t *v, uint64_t min, uint64_t max, uint64_t *ret)
{
	json_int_t i = json_integer_value(v);

	if (!json_is_integer(v) || i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return -EBADMSG;
	*ret = (uint64_t)i;
	return 0;
}

static int limit_of(struct task_spec *s, const char *k, const json_t *e)
{
	double cpu = json_number_value(e);

	if (strcmp(k, "memory") == 0)
		return uint_of(e, CONTAIN_MIN_MEMORY, CONTAIN_MAX_MEMORY, &s->limits.memory);
	if (strcmp(k, "pids") == 0)
		return uint_of(e, 1, CONTAIN_MAX_PIDS, &s->limits.pids);
	if (strcmp(k, "cpu") != 0 || !json_is_number(e) || !(cpu * 1000.0 >= 1) ||
	    !(cpu * 1000.0 <= (double)CONTAIN_MAX_CPU_MILLI))
		return -EBADMSG;
	s->limits.cpu_milli = (uint64_t)mathx_llround(cpu * 1000.0);
	return 0;
}

static int k_limits(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	const char *k;
	json_t *e;

	if (!json_is_object(v))
		return bad(reterr, key, "not an object");
	json_object_foreach((json_t *)(uintptr_t)v, k, e)
	{
		if (limit_of(s, k, e) < 0) {
			diag_set(reterr, NULL, 0, 0,
				 "'limits.%s': unknown (known: memory, pids, cpu), or out of range",
				 k);
			return -EBADMSG;
		}
	}
	return 0;
}

/* worktree_setup: the keys given, each path checked again (a recorded
 * spec is data on disk: it gets no further than a plan would). */
static int k_wtsetup(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	struct orch_wtsetup *ws = &s->wtsetup;
	const char *k, *why = NULL;
	const json_t *e;
	char msg[200];
	size_t i;
	int r;

	if (!json_is_object(v))
		return bad(reterr, key, "not an object");
	json_object_foreach((json_t *)(uintptr_t)v, k, e)
	{
		if (strcmp(k, "copy_files") == 0) {
			r = parse_strs(s, "worktree_setup.copy_files", e,
				       (const char *const **)(uintptr_t)&ws->copy_files,
				       &ws->n_copy, reterr);
			ws->set |= WTSETUP_COPY;
		} else if (strcmp(k, "symlink_dirs") == 0) {
			r = parse_strs(s, "worktree_setup.symlink_dirs", e,
				       (const char *const **)(uintptr_t)&ws->symlink_dirs,
				       &ws->n_links, reterr);
			ws->set |= WTSETUP_LINKS;
		} else if (strcmp(k, "setup_command") == 0) {
			if (!json_is_null(e) && (!json_is_string(e) || !json_string_value(e)[0]))
				return bad(reterr, "worktree_setup.setup_command",
					   "not a non-empty string or null");
			ws->setup_command = json_is_null(e) ? NULL : dup(s, json_string_value(e));
			ws->set |= WTSETUP_COMMAND;
			r = 0;
		} else if (strcmp(k, "timeout") == 0) {
			if (!json_is_number(e) || !(json_number_value(e) > 0) ||
			    !isfinite(json_number_value(e)))
				return bad(reterr, "worktree_setup.timeout", "not a number > 0");
			ws->timeout_s = json_number_value(e);
			ws->set |= WTSETUP_TIMEOUT;
			r = 0;
		} else {
			return bad(
				reterr, key,
				"unknown key (known: copy_files, symlink_dirs, setup_command, timeout)");
		}
		if (r < 0)
			return r;
	}
	for (i = 0; i < ws->n_copy + ws->n_links; i++) {
		const char *p =
			i < ws->n_copy ? ws->copy_files[i] : ws->symlink_dirs[i - ws->n_copy];

		if (wtsetup_check_path(p, &why) < 0) {
			(void)snprintf(msg, sizeof(msg), "'%.80s' is %s", p, why);
			return bad(reterr, key, msg);
		}
	}
	return 0;
}

static int gate_of(struct task_spec *s, const json_t *o, struct orch_gate *g, struct diag *reterr)
{
	const json_t *name = json_object_get(o, "name"), *run = json_object_get(o, "run");
	const json_t *to = json_object_get(o, "timeout");

	if (!json_is_object(o) || json_object_size(o) != 3 || !json_is_string(name) ||
	    !json_is_string(run) || !json_is_number(to) || !(json_number_value(to) > 0) ||
	    !isfinite(json_number_value(to)))
		return bad(reterr, "gates",
			   "not a list of {name: string, run: string, timeout: number > 0}");
	g->name = dup(s, json_string_value(name));
	g->run = dup(s, json_string_value(run));
	g->timeout_s = json_number_value(to);
	return 0;
}

static int k_gates(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	struct orch_gate *g;
	size_t i, n = json_array_size(v);
	int r;

	if (!json_is_array(v))
		return bad(reterr, key, "not an array");
	g = arena_alloc(&s->arena, (n + 1) * sizeof(*g));
	for (i = 0; i < n; i++) {
		r = gate_of(s, json_array_get(v, i), &g[i], reterr);
		if (r < 0)
			return r;
	}
	s->gates = g;
	s->n_gates = n;
	return 0;
}

/* One slot: numbers as numbers, checked as invocation_sampling_set() would
 * (the strings go through it). */
static int sampling_slot(struct task_spec *s, const char *k, const json_t *e, struct diag *reterr)
{
	enum sampling_key key = sampling_key_from_string(k);
	struct invocation_sampling *sp = &s->sampling;
	double d = json_number_value(e);
	json_int_t i = json_integer_value(e);

	switch (key) {
	case SAMPLING_TEMPERATURE:
	case SAMPLING_TOP_P:
		if (!json_is_number(e) || !(d >= 0) || !isfinite(d) ||
		    (key == SAMPLING_TOP_P && d > 1))
			return -EBADMSG;
		*(key == SAMPLING_TEMPERATURE ? &sp->temperature : &sp->top_p) = d;
		break;
	case SAMPLING_TOP_K:
	case SAMPLING_MAX_TOKENS:
		if (!json_is_integer(e) || i < (key == SAMPLING_TOP_K ? 0 : 1))
			return -EBADMSG;
		*(key == SAMPLING_TOP_K ? &sp->top_k : &sp->max_tokens) = (int64_t)i;
		break;
	case SAMPLING_BASE_URL:
	case SAMPLING_API_KEY_ENV:
		if (!json_is_string(e))
			return -EBADMSG;
		return invocation_sampling_set(sp, k, dup(s, json_string_value(e)), reterr) < 0
			       ? -EBADMSG
			       : 0;
	case _SAMPLING_KEY_MAX:
	case _SAMPLING_KEY_INVALID:
	default:
		return -EBADMSG;
	}
	sp->set |= 1u << key;
	return 0;
}

static int k_sampling(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	const char *k;
	json_t *e;

	if (!json_is_object(v))
		return bad(reterr, key, "not an object");
	json_object_foreach((json_t *)(uintptr_t)v, k, e)
	{
		struct diag d;

		if (json_is_null(e))
			continue;
		diag_clear(&d);
		if (sampling_slot(s, k, e, &d) < 0) {
			diag_set(reterr, NULL, 0, 0, "'sampling.%s': %s", k,
				 d.msg[0] ? d.msg
					  : "unknown, or a value of the wrong type or range");
			return -EBADMSG;
		}
	}
	return 0;
}

static int k_endpoints(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	char msg[200];

	if (orch_endpoints_parse_json(&s->arena, v, &s->endpoints, msg, sizeof(msg)) < 0)
		return bad(reterr, key, msg);
	return 0;
}

static int k_mcp_servers(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	char msg[200];

	if (orch_mcp_servers_parse_json(&s->arena, v,
					strcmp(key, "mcp_servers") == 0 ? &s->mcp_servers
									: &s->plan_mcp_servers,
					msg, sizeof(msg)) < 0)
		return bad(reterr, key, msg);
	return 0;
}

static int k_position(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	json_int_t i = json_integer_value(v);

	if (!json_is_integer(v) || i < 0 || i > UINT32_MAX)
		return bad(reterr, key, "not an integer >= 0");
	*(strcmp(key, "line") == 0 ? &s->line : &s->col) = (unsigned)i;
	return 0;
}

static int k_retry(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	char msg[160];
	int r = strcmp(key, "retry") == 0
			? retry_policy_parse_json(&s->arena, v, &s->retry, msg, sizeof(msg))
			: retry_fallback_parse_json(&s->arena, v, &s->retry, msg, sizeof(msg));

	return r < 0 ? bad(reterr, key, msg) : 0;
}

static int k_retry_state(struct task_spec *s, const char *key, const json_t *v, struct diag *reterr)
{
	json_t *at = json_object_get(v, "at"), *base = json_object_get(v, "base");
	json_t *model = json_object_get(v, "model");

	if (!json_is_object(v) || json_object_size(v) != 3 || !json_is_integer(at) ||
	    json_integer_value(at) < 0 || json_integer_value(at) > RETRY_MAX_FALLBACK ||
	    !json_is_integer(base) || json_integer_value(base) < 0 ||
	    (!json_is_null(model) && !json_is_string(model)))
		return bad(reterr, key, "not {at, base: integers >= 0, model: string or null}");
	s->chain_at = (size_t)json_integer_value(at);
	s->chain_base = json_integer_value(base);
	s->chain_model = json_is_string(model) ? dup(s, json_string_value(model)) : NULL;
	return 0;
}

#define STR_KEY(k)                                                                                 \
	{                                                                                          \
#k, NULL, offsetof(struct task_spec, k)                                            \
	}

static const struct spec_key spec_keys[] = {
	STR_KEY(id),
	STR_KEY(title),
	STR_KEY(role),
	STR_KEY(adapter),
	STR_KEY(model),
	STR_KEY(effort),
	STR_KEY(prompt),
	STR_KEY(artifact),
	STR_KEY(stage),
	STR_KEY(goal),
	{"constraints", k_context, 0},
	{"context_files", k_context, 0},
	{"files", k_context, 0},
	{"depends_on", k_deps, 0},
	{"requires", k_requires, 0},
	{"attachments", k_attachments, 0},
	{"timeout", k_timeout, 0},
	{"idle_timeout", k_idle_timeout, 0},
	{"sandbox", k_sandbox, 0},
	{"sandbox_tier", k_tier, 0},
	{"network", k_network, 0},
	{"on_conflict", k_on_conflict, 0},
	{"executor", k_executor, 0},
	{"conflict_from", k_conflict_from, 0},
	{"limits", k_limits, 0},
	{"gates", k_gates, 0},
	{"worktree_setup", k_wtsetup, 0},
	{"sampling", k_sampling, 0},
	{"endpoints", k_endpoints, 0},
	{"plan_mcp_servers", k_mcp_servers, 0},
	{"mcp_servers", k_mcp_servers, 0},
	{"retry", k_retry, 0},
	{"fallback", k_retry, 0},
	{"retry_state", k_retry_state, 0},
	{"line", k_position, 0},
	{"column", k_position, 0},
};

int spec_parse(const json_t *j, struct task_spec *ret, struct diag *reterr)
{
	const char *key;
	json_t *v;
	size_t i;
	int r;

	if (!json_is_object(j)) {
		diag_set(reterr, NULL, 0, 0, "the recorded task is not a JSON object");
		return -EBADMSG;
	}
	json_object_foreach((json_t *)(uintptr_t)j, key, v)
	{
		for (i = 0; i < sizeof(spec_keys) / sizeof(spec_keys[0]); i++)
			if (strcmp(spec_keys[i].name, key) == 0)
				break;
		if (i == sizeof(spec_keys) / sizeof(spec_keys[0])) {
			r = bad(reterr, key, "unknown key");
			goto out;
		}
		r = spec_keys[i].parse ? spec_keys[i].parse(ret, key, v, reterr)
				       : parse_str(ret, key, v, spec_keys[i].field, reterr);
		if (r < 0)
			goto out;
	}
	if (!ret->depends_on)
		ret->depends_on = arena_alloc(&ret->arena, sizeof(*ret->depends_on));
	if (!ret->requires)
	ret->requires = arena_alloc(&ret->arena, sizeof(*ret->requires));
	if (!ret->attachments)
		ret->attachments = arena_alloc(&ret->arena, sizeof(*ret->attachments));
	if (!ret->files)
		ret->files = arena_alloc(&ret->arena, sizeof(*ret->files));
	r = 0;
out:
	if (r < 0)
		spec_release(ret);
	return r;
}

int spec_parse_text(const char *text, size_t len, struct task_spec *ret, struct diag *reterr)
{
	json_t *j = NULL;
	int r;

	if (len > SPEC_MAX_BYTES) {
		diag_set(reterr, NULL, 0, 0, "the recorded task is larger than %zu bytes",
			 SPEC_MAX_BYTES);
		return -EBADMSG;
	}
	r = json_parse_strict(NULL, text, len, &j, reterr);
	if (r < 0)
		return -EBADMSG;
	r = spec_parse(j, ret, reterr);
	json_decref(j);
	return r;
}
