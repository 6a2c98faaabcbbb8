/* Onboarding transcripts: the recorded invocation, its argv, the strict
 * loader and the writer. See transcript.h. */
#include "onboard/transcript.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/argv-order.h"
#include "adapter/envpolicy.h"
#include "onboard/yemit.h"
#include "util/fsutil.h"
#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/banned.h"

#define ARENA_BLOCK 4096

bool transcript_name_valid(const char *name)
{
	size_t i;

	if (!name || !name[0])
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];
		bool alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return i <= TRANSCRIPT_MAX_NAME;
}

/* [a-z0-9][a-z0-9_-]*, at most CATALOG_MAX_NAME bytes (a catalogue name). */
static bool registry_name_valid(const char *s)
{
	size_t i;

	if (!s[0])
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      (i > 0 && (c == '_' || c == '-'))))
			return false;
	}
	return i <= CATALOG_MAX_NAME;
}

static bool has_space_or_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* s names a placeholder outside allowed ({home} and {workdir} when
 * allow_local, else none). Unknown {names} are literal text. */
static bool has_placeholder(const char *s, bool allow_local)
{
	struct profile_vars vars = {.v = {NULL}};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int r;

	if (allow_local) {
		vars.v[PH_HOME] = "";
		vars.v[PH_WORKDIR] = "";
	}
	r = profile_expand(s, &vars, &sb);
	sbuf_release(&sb);
	return r == -ENOENT;
}

/* ---- the recorded invocation ---- */

static struct transcript_strv strv_dup(struct arena *a, const char *const *v, size_t n)
{
	const char **out = arena_alloc(a, st_mult(n + 1, sizeof(*out)));
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = arena_strdup(a, v[i]);
	out[n] = NULL;
	return (struct transcript_strv){.v = out, .n = n};
}

static const char *str_dup_or_null(struct arena *a, const char *s)
{
	return s ? arena_strdup(a, s) : NULL;
}

static void inv_copy(struct arena *a, const struct recorded_invocation *in,
		     struct recorded_invocation *out)
{
	out->registry_name = arena_strdup(a, in->registry_name);
	out->display_name = arena_strdup(a, in->display_name);
	out->binary = arena_strdup(a, in->binary);
	out->subcommands = strv_dup(a, in->subcommands.v, in->subcommands.n);
	out->model_flag = str_dup_or_null(a, in->model_flag);
	out->prompt_flag = str_dup_or_null(a, in->prompt_flag);
	out->prompt_positional = in->prompt_positional;
	out->extra_args = strv_dup(a, in->extra_args.v, in->extra_args.n);
	out->env_passthrough = strv_dup(a, in->env_passthrough.v, in->env_passthrough.n);
}

int transcript_invocation_from_profile(const struct profile *p, struct arena *arena,
				       struct recorded_invocation *ret, struct diag *reterr)
{
	const struct profile_invocation *pi = &p->invocation;
	struct recorded_invocation inv = {0};

	if (pi->prompt_file_flag) {
		diag_set(
			reterr, p->source, pi->prompt_file_flag_at.line,
			pi->prompt_file_flag_at.col,
			"profile '%s' delivers the prompt in a file (prompt_file_flag '%s'): the recorded-profile adapter has no spelling for that (only prompt_flag or prompt_positional)",
			p->name, pi->prompt_file_flag);
		return -ENOTSUP;
	}
	if (p->runtime.pty.declared && !pi->prompt_flag && !pi->prompt_positional) {
		diag_set(
			reterr, p->source, p->origin.line, p->origin.col,
			"profile '%s' types its prompt into a terminal (runtime.pty): the recorded-profile adapter has no spelling for that (only prompt_flag or prompt_positional)",
			p->name);
		return -ENOTSUP;
	}
	if (!pi->prompt_flag && !pi->prompt_positional) {
		/* an ACP-only profile (runtime.acp): the prompt is a JSON-RPC
		 * frame, not an argv token */
		diag_set(
			reterr, p->source, p->runtime.acp.origin.line, p->runtime.acp.origin.col,
			"profile '%s' has no prompt on argv (runtime.acp: the prompt goes in session/prompt): the recorded-profile adapter has no spelling for that",
			p->name);
		return -ENOTSUP;
	}
	inv.registry_name = p->name;
	inv.display_name = p->display_name ? p->display_name : p->name;
	inv.binary = pi->binary;
	inv.subcommands = (struct transcript_strv){.v = pi->subcommands.v, .n = pi->subcommands.n};
	inv.model_flag = pi->model_flag;
	inv.prompt_flag = pi->prompt_flag;
	inv.prompt_positional = pi->prompt_positional;
	inv.extra_args = (struct transcript_strv){.v = pi->extra_args.v, .n = pi->extra_args.n};
	inv.env_passthrough =
		(struct transcript_strv){.v = pi->env_passthrough.v, .n = pi->env_passthrough.n};
	inv_copy(arena, &inv, ret);
	return 0;
}

int transcript_values_check(const struct recorded_invocation *inv, const char *model,
			    const char *prompt, struct diag *reterr)
{
	if (prompt && prompt[0] == '-') {
		diag_set(
			reterr, NULL, 0, 0,
			"the prompt starts with '-': the recorded invocation of '%s' has no end-of-options marker, so the agent would read it as an option",
			inv->registry_name);
		return -EINVAL;
	}
	if (inv->model_flag && model && model[0] == '-') {
		diag_set(reterr, NULL, 0, 0,
			 "the model '%s' starts with '-': '%s' would read it as an option", model,
			 inv->registry_name);
		return -EINVAL;
	}
	return 0;
}

int transcript_build_argv(const struct recorded_invocation *inv, const char *model,
			  const char *prompt, const struct profile_vars *vars, struct strvec *argv)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct strvec model_args = STRVEC_INIT, extra = STRVEC_INIT, prompt_args = STRVEC_INIT;
	struct argv_parts parts = {.argv0 = inv->binary, .subcommands = inv->subcommands.v};
	size_t i;
	int r = 0;

	if (transcript_values_check(inv, model, prompt, NULL) < 0)
		return -EINVAL;
	if (inv->model_flag && model) {
		strvec_push(&model_args, inv->model_flag);
		strvec_push(&model_args, model);
	}
	for (i = 0; i < inv->extra_args.n; i++) {
		if (!vars) {
			strvec_push(&extra, inv->extra_args.v[i]);
			continue;
		}
		sbuf_reset(&sb);
		r = profile_expand(inv->extra_args.v[i], vars, &sb);
		if (r < 0)
			goto out;
		strvec_push(&extra, sb.buf);
	}
	argv_order_prompt(inv->prompt_flag, PROMPT_GUARD_NONE, prompt ? prompt : "", &prompt_args);
	parts.model = model_args.v;
	parts.extra = extra.v;
	parts.prompt = prompt_args.v;
	argv_order_assemble(&parts, argv);
out:
	sbuf_release(&sb);
	strvec_clear(&model_args);
	strvec_clear(&extra);
	strvec_clear(&prompt_args);
	return r < 0 ? r : 0;
}

/* ---- checking ---- */

/* Where a field is, for messages: the loaded document's node, or nothing
 * for an invocation built in memory. */
struct where {
	const struct ydoc *doc;
	const struct ynode *kw; /* the ctor_kwargs map, or NULL */
};

static int inv_err(const struct where *w, const char *key, size_t idx, bool indexed,
		   struct diag *reterr, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int inv_err(const struct where *w, const char *key, size_t idx, bool indexed,
		   struct diag *reterr, const char *fmt, ...)
{
	const struct ynode *n = w->kw ? ynode_get(w->kw, key) : NULL;
	char msg[sizeof(reterr->msg)];
	va_list ap;

	if (n && indexed && n->kind == YNODE_SEQ && idx < n->n)
		n = n->items[idx];
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (indexed)
		diag_set(reterr, w->doc ? w->doc->name : NULL, n ? n->line : 0, n ? n->col : 0,
			 "ctor_kwargs.%s[%zu]: %s", key, idx, msg);
	else
		diag_set(reterr, w->doc ? w->doc->name : NULL, n ? n->line : 0, n ? n->col : 0,
			 "ctor_kwargs.%s: %s", key, msg);
	return -EINVAL;
}

static int check_flag(const struct where *w, const char *key, const char *s, struct diag *reterr)
{
	if (!s)
		return 0;
	if (!s[0])
		return inv_err(w, key, 0, false, reterr,
			       "must not be empty (null when there is none)");
	if (s[0] != '-' || strcmp(s, "-") == 0)
		return inv_err(w, key, 0, false, reterr, "must be a flag (start with '-')");
	if (has_space_or_ctl(s))
		return inv_err(w, key, 0, false, reterr, "a flag must not contain whitespace");
	if (has_placeholder(s, false))
		return inv_err(w, key, 0, false, reterr, "must not contain a placeholder");
	return 0;
}

static int check_inv(const struct recorded_invocation *inv, const struct where *w,
		     struct diag *reterr)
{
	size_t i, j;
	int r;

	if (!registry_name_valid(inv->registry_name))
		return inv_err(w, "registry_name", 0, false, reterr,
			       "must be an adapter name ([a-z0-9][a-z0-9_-]*, at most %d bytes)",
			       CATALOG_MAX_NAME);
	if (!inv->display_name[0] || has_ctl(inv->display_name))
		return inv_err(w, "display_name", 0, false, reterr,
			       "must not be empty or contain control characters");
	if (!inv->binary[0] || has_space_or_ctl(inv->binary))
		return inv_err(w, "binary", 0, false, reterr,
			       "must not be empty or contain whitespace");
	if (inv->binary[0] == '-')
		return inv_err(w, "binary", 0, false, reterr, "must not start with '-'");
	if (strchr(inv->binary, '/') && inv->binary[0] != '/')
		return inv_err(w, "binary", 0, false, reterr,
			       "must be a bare name (looked up on PATH) or an absolute path");
	if (has_placeholder(inv->binary, false))
		return inv_err(w, "binary", 0, false, reterr, "must not contain a placeholder");
	for (i = 0; i < inv->subcommands.n; i++) {
		const char *s = inv->subcommands.v[i];

		if (!s[0] || s[0] == '-' || has_space_or_ctl(s) || has_placeholder(s, false))
			return inv_err(
				w, "subcommands", i, true, reterr,
				"a subcommand must be a non-empty word not starting with '-', without placeholders");
	}
	r = check_flag(w, "model_flag", inv->model_flag, reterr);
	if (r < 0)
		return r;
	r = check_flag(w, "prompt_flag", inv->prompt_flag, reterr);
	if (r < 0)
		return r;
	if (!inv->prompt_flag && !inv->prompt_positional)
		return inv_err(
			w, "prompt_positional", 0, false, reterr,
			"no way to deliver the prompt: set prompt_flag or prompt_positional: true");
	if (inv->prompt_flag && inv->prompt_positional)
		return inv_err(
			w, "prompt_positional", 0, false, reterr,
			"the prompt can have only one delivery (prompt_flag or prompt_positional: true)");
	for (i = 0; i < inv->extra_args.n; i++)
		if (has_placeholder(inv->extra_args.v[i], true))
			return inv_err(w, "extra_args", i, true, reterr,
				       "only the placeholders {home} and {workdir} are allowed");
	for (i = 0; i < inv->env_passthrough.n; i++) {
		const char *s = inv->env_passthrough.v[i];

		if (!envpolicy_name_valid(s))
			return inv_err(
				w, "env_passthrough", i, true, reterr,
				"invalid environment variable name (expected [A-Za-z_][A-Za-z0-9_]*)");
		for (j = 0; j < i; j++)
			if (strcmp(inv->env_passthrough.v[j], s) == 0)
				return inv_err(w, "env_passthrough", i, true, reterr,
					       "'%s' is listed twice", s);
	}
	return 0;
}

int transcript_invocation_check(const struct recorded_invocation *inv, struct diag *reterr)
{
	const struct where w = {NULL, NULL};

	return check_inv(inv, &w, reterr);
}

/* ---- building ---- */

struct transcript *transcript_new(const char *name, const struct recorded_invocation *inv)
{
	struct transcript *t = xcalloc(1, sizeof(*t));

	arena_init(&t->arena, ARENA_BLOCK);
	t->name = arena_strdup(&t->arena, name);
	t->adapter_class = TRANSCRIPT_ADAPTER_CLASS;
	inv_copy(&t->arena, inv, &t->inv);
	return t;
}

static struct transcript_step *step_append(struct transcript *t)
{
	if (t->n_steps == t->alloc_steps) {
		size_t na = t->alloc_steps ? 2 * t->alloc_steps : 4;
		struct transcript_step *v = arena_alloc(&t->arena, st_mult(na, sizeof(*v)));

		if (t->n_steps)
			memcpy(v, t->steps, t->n_steps * sizeof(*v));
		t->steps = v;
		t->alloc_steps = na;
	}
	memset(&t->steps[t->n_steps], 0, sizeof(t->steps[0]));
	return &t->steps[t->n_steps++];
}

int transcript_add_step(struct transcript *t, const char *prompt, const char *model)
{
	struct strvec argv = STRVEC_INIT;
	struct transcript_step *s;
	int r;

	if (t->n_steps >= TRANSCRIPT_MAX_STEPS)
		return -E2BIG;
	r = transcript_build_argv(&t->inv, model, prompt, NULL, &argv);
	if (r < 0)
		goto out;
	s = step_append(t);
	s->prompt = arena_strdup(&t->arena, prompt);
	s->model = str_dup_or_null(&t->arena, model);
	s->inner_argv = strv_dup(&t->arena, argv.v, argv.nr);
out:
	strvec_clear(&argv);
	return r;
}

struct transcript *transcript_free(struct transcript *t)
{
	if (!t)
		return NULL;
	arena_release(&t->arena);
	free(t);
	return NULL;
}

/* ---- loading ---- */

/* The checker of a field holding a string or null. */
static int scalar_or_null(struct ycheck *c, const struct ynode *v, const char *path)
{
	if (v->kind == YNODE_SCALAR)
		return 0;
	return ycheck_problem(c, v, NULL, "%s: expected a string or null, got %s", path,
			      yaml_describe(v));
}

static const struct yfield top_fields[] = {
	{"name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"adapter_class", YT_STR, YF_REQUIRED, NULL, NULL},
	{"ctor_kwargs", YT_MAP, YF_REQUIRED, NULL, NULL},
	{"steps", YT_SEQ, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield kwargs_fields[] = {
	{"registry_name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"display_name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"binary", YT_STR, YF_REQUIRED, NULL, NULL},
	{"subcommands", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{"model_flag", YT_ANY, YF_REQUIRED, NULL, scalar_or_null},
	{"prompt_flag", YT_ANY, YF_REQUIRED, NULL, scalar_or_null},
	{"prompt_positional", YT_BOOL, YF_REQUIRED, NULL, NULL},
	{"extra_args", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{"env_passthrough", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield step_fields[] = {
	{"prompt", YT_STR, YF_REQUIRED, NULL, NULL},
	{"model", YT_ANY, YF_REQUIRED, NULL, scalar_or_null},
	{"inner_argv", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

/* A scalar (an empty one is null) or null: *ret is a copy in arena, or NULL.
 * The value was checked by scalar_or_null(). */
static const char *str_or_null(const struct ynode *map, const char *key, struct arena *arena)
{
	const struct ynode *v = ynode_get(map, key);

	return ynode_is_null(v) ? NULL : arena_strdup(arena, v->str);
}

static struct transcript_strv strlist(struct arena *a, const struct ynode *seq)
{
	const char **out = arena_alloc(a, st_mult(seq->n + 1, sizeof(*out)));
	size_t i;

	for (i = 0; i < seq->n; i++)
		out[i] = arena_strdup(a, seq->items[i]->str);
	out[seq->n] = NULL;
	return (struct transcript_strv){.v = out, .n = seq->n};
}

static int load_kwargs(struct transcript *t, const struct ydoc *doc, const struct ynode *kw,
		       struct diag *reterr)
{
	struct recorded_invocation *inv = &t->inv;
	const struct where w = {doc, kw};
	int r;

	r = yaml_check_map(doc, kw, kwargs_fields, "ctor_kwargs", reterr);
	if (r < 0)
		return r;
	inv->registry_name = arena_strdup(&t->arena, ynode_get(kw, "registry_name")->str);
	inv->display_name = arena_strdup(&t->arena, ynode_get(kw, "display_name")->str);
	inv->binary = arena_strdup(&t->arena, ynode_get(kw, "binary")->str);
	inv->subcommands = strlist(&t->arena, ynode_get(kw, "subcommands"));
	inv->model_flag = str_or_null(kw, "model_flag", &t->arena);
	inv->prompt_flag = str_or_null(kw, "prompt_flag", &t->arena);
	r = ynode_bool(ynode_get(kw, "prompt_positional"), &inv->prompt_positional);
	if (r < 0)
		BUG("yaml_check_map passed a non-boolean");
	inv->extra_args = strlist(&t->arena, ynode_get(kw, "extra_args"));
	inv->env_passthrough = strlist(&t->arena, ynode_get(kw, "env_passthrough"));
	return check_inv(inv, &w, reterr);
}

static int load_step(struct transcript *t, const struct ydoc *doc, const struct ynode *node,
		     size_t idx, struct diag *reterr)
{
	struct transcript_step *s;
	const struct ynode *argv;
	char what[32];
	int r;

	(void)snprintf(what, sizeof(what), "steps[%zu]", idx);
	r = yaml_check_map(doc, node, step_fields, what, reterr);
	if (r < 0)
		return r;
	argv = ynode_get(node, "inner_argv");
	if (argv->n == 0) {
		yaml_diag(doc, argv, reterr, "%s.inner_argv: must not be empty", what);
		return -EINVAL;
	}
	s = step_append(t);
	s->line = node->line;
	s->col = node->col;
	s->prompt = arena_strdup(&t->arena, ynode_get(node, "prompt")->str);
	s->model = str_or_null(node, "model", &t->arena);
	s->inner_argv = strlist(&t->arena, argv);
	return 0;
}

int transcript_load_buf(const char *source, const char *buf, size_t len, struct transcript **ret,
			struct diag *reterr)
{
	const struct yaml_limits lim = {.max_bytes = TRANSCRIPT_MAX_BYTES};
	struct transcript *t = NULL;
	struct ydoc *doc = NULL;
	const struct ynode *root, *v;
	size_t i;
	int r;

	r = yaml_load_buf(source, buf, len, &lim, &doc, reterr);
	if (r < 0)
		goto out;
	root = doc->root;
	r = yaml_check_map(doc, root, top_fields, "transcript", reterr);
	if (r < 0)
		goto out;
	t = xcalloc(1, sizeof(*t));
	arena_init(&t->arena, ARENA_BLOCK);
	t->source = arena_strdup(&t->arena, source);
	v = ynode_get(root, "name");
	if (!transcript_name_valid(v->str)) {
		yaml_diag(doc, v, reterr,
			  "name: must be [A-Za-z0-9][A-Za-z0-9_.-]*, at most %d bytes",
			  TRANSCRIPT_MAX_NAME);
		r = -EINVAL;
		goto out;
	}
	t->name = arena_strdup(&t->arena, v->str);
	v = ynode_get(root, "adapter_class");
	if (strcmp(v->str, TRANSCRIPT_ADAPTER_CLASS) != 0) {
		yaml_diag(doc, v, reterr, "adapter_class: unsupported class (expected '%s')",
			  TRANSCRIPT_ADAPTER_CLASS);
		r = -EINVAL;
		goto out;
	}
	t->adapter_class = TRANSCRIPT_ADAPTER_CLASS;
	r = load_kwargs(t, doc, ynode_get(root, "ctor_kwargs"), reterr);
	if (r < 0)
		goto out;
	v = ynode_get(root, "steps");
	if (v->n > TRANSCRIPT_MAX_STEPS) {
		yaml_diag(doc, v->items[TRANSCRIPT_MAX_STEPS], reterr, "steps: more than %d steps",
			  TRANSCRIPT_MAX_STEPS);
		r = -EINVAL;
		goto out;
	}
	for (i = 0; i < v->n; i++) {
		r = load_step(t, doc, v->items[i], i, reterr);
		if (r < 0)
			goto out;
	}
	*ret = t;
	t = NULL;
out:
	transcript_free(t);
	ydoc_free(doc);
	return r;
}

int transcript_load_file(const char *path, struct transcript **ret, struct diag *reterr)
{
	char *text = NULL;
	size_t len;
	int r;

	r = read_file_capped(path, TRANSCRIPT_MAX_BYTES, &text, &len);
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot read the transcript: %s",
			 r == -EFBIG ? "larger than 1 MiB" : file_strerror(r));
		return r;
	}
	r = transcript_load_buf(path, text, len, ret, reterr);
	free(text);
	return r;
}

/* ---- writing ---- */

static int emit_key_str(struct sbuf *out, unsigned indent, const char *key, const char *s)
{
	int r = sbuf_addf(out, "%*s%s: ", (int)indent, "", key);

	if (r >= 0)
		r = yemit_str_or_null(out, s);
	if (r >= 0)
		r = sbuf_addc(out, '\n');
	return r < 0 ? r : 0;
}

int transcript_emit(const struct transcript *t, struct sbuf *out)
{
	const struct recorded_invocation *inv = &t->inv;
	size_t start = out->len, i;
	int r;

	r = sbuf_adds(out,
		      "# Onboarding transcript: bernstein onboard record (docs/onboarding.md).\n"
		      "# Replay: bernstein onboard replay FILE\n");
	if (r >= 0)
		r = emit_key_str(out, 0, "name", t->name);
	if (r >= 0)
		r = emit_key_str(out, 0, "adapter_class", t->adapter_class);
	if (r >= 0)
		r = sbuf_adds(out, "ctor_kwargs:\n");
	if (r >= 0)
		r = emit_key_str(out, 2, "registry_name", inv->registry_name);
	if (r >= 0)
		r = emit_key_str(out, 2, "display_name", inv->display_name);
	if (r >= 0)
		r = emit_key_str(out, 2, "binary", inv->binary);
	if (r >= 0)
		r = yemit_list(out, 2, "subcommands", inv->subcommands.v, inv->subcommands.n);
	if (r >= 0)
		r = emit_key_str(out, 2, "model_flag", inv->model_flag);
	if (r >= 0)
		r = emit_key_str(out, 2, "prompt_flag", inv->prompt_flag);
	if (r >= 0)
		r = sbuf_addf(out, "  prompt_positional: %s\n",
			      inv->prompt_positional ? "true" : "false");
	if (r >= 0)
		r = yemit_list(out, 2, "extra_args", inv->extra_args.v, inv->extra_args.n);
	if (r >= 0)
		r = yemit_list(out, 2, "env_passthrough", inv->env_passthrough.v,
			       inv->env_passthrough.n);
	if (r >= 0)
		r = sbuf_adds(out, t->n_steps ? "steps:\n" : "steps: []\n");
	for (i = 0; r >= 0 && i < t->n_steps; i++) {
		const struct transcript_step *s = &t->steps[i];

		r = sbuf_adds(out, "  - prompt: ");
		if (r >= 0)
			r = yemit_str(out, s->prompt);
		if (r >= 0)
			r = sbuf_addc(out, '\n');
		if (r >= 0)
			r = emit_key_str(out, 4, "model", s->model);
		if (r >= 0)
			r = yemit_list(out, 4, "inner_argv", s->inner_argv.v, s->inner_argv.n);
	}
	if (r < 0)
		sbuf_setlen(out, start);
	return r < 0 ? r : 0;
}
