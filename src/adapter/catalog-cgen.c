/* Loaded profiles and catalogue tables written out as C initialisers
 * (adapter/catalog-cgen.h). */
#include "adapter/catalog-cgen.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "adapter/profile.h"

/* Every struct written here, at its size when this writer was last brought
 * up to date (LP64). A size that changed means a field was added, removed or
 * retyped: write it below (catalog_cgen_profile() and its helpers), check it in
 * tests/unit/test-catalog-static.c, then update the size here. */
#if defined(__LP64__) || (__SIZEOF_POINTER__ == 8 && __SIZEOF_LONG__ == 8)
#define CGEN_SIZE(T, N)                                                                            \
	_Static_assert(sizeof(struct T) == (N), "struct " #T " changed: write its new fields in "  \
						"src/adapter/catalog-cgen.c, then update the "     \
						"size there")
CGEN_SIZE(profile, 1864);
CGEN_SIZE(profile_strv, 24);
CGEN_SIZE(profile_map, 32);
CGEN_SIZE(profile_file, 40);
CGEN_SIZE(profile_files, 16);
CGEN_SIZE(profile_invocation, 208);
CGEN_SIZE(profile_capabilities, 64);
CGEN_SIZE(profile_resume, 72);
CGEN_SIZE(profile_dangerous, 80);
CGEN_SIZE(profile_session_id, 56);
CGEN_SIZE(profile_long_prompt, 48);
CGEN_SIZE(profile_endpoint, 112);
CGEN_SIZE(profile_hooks, 96);
CGEN_SIZE(profile_acp, 48);
CGEN_SIZE(profile_sandbox, 72);
CGEN_SIZE(profile_mcp, 112);
CGEN_SIZE(profile_runtime, 1296);
CGEN_SIZE(ptydrive_conf, 432);
CGEN_SIZE(ptydrive_perm, 24);
CGEN_SIZE(strategy_decl, 136);
CGEN_SIZE(adapter_strategy, 20);
CGEN_SIZE(catalog_origin, 16);
CGEN_SIZE(matrix_row, 144);
CGEN_SIZE(registry_entry, 80);
CGEN_SIZE(multimodal_row, 32);
CGEN_SIZE(use_case, 40);
CGEN_SIZE(role_preamble, 32);
#endif

/* The files origins may name, each written once as an array. */
#define CGEN_MAX_FILES 8

struct cg {
	struct sbuf *out;
	/* origins naming files[i] use the array idents[i] */
	const char *files[CGEN_MAX_FILES];
	char idents[CGEN_MAX_FILES][96];
	size_t n_files;
	int depth;
	int r;
};

static void put(struct cg *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct cg *g, const char *fmt, ...)
{
	va_list ap;

	if (g->r < 0)
		return;
	va_start(ap, fmt);
	g->r = sbuf_vaddf(g->out, fmt, ap);
	va_end(ap);
}

static void indent(struct cg *g)
{
	for (int i = 0; i < g->depth; i++)
		put(g, "\t");
}

/* ".name = " on a new line */
static void field(struct cg *g, const char *name)
{
	indent(g);
	put(g, ".%s = ", name);
}

static void open_(struct cg *g, const char *name)
{
	field(g, name);
	put(g, "{\n");
	g->depth++;
}

static void close_(struct cg *g)
{
	g->depth--;
	indent(g);
	put(g, "},\n");
}

/* Continue a string literal on the next line. */
static void str_break(struct cg *g)
{
	put(g, "\"\n");
	indent(g);
	put(g, "\t\"");
}

/* A C string literal of s: printable ASCII as is (but '"', '\\' and '?',
 * no trigraph), '\n' as "\n" ending a line, every other byte in octal;
 * long lines continued on the next. */
static void v_str(struct cg *g, const char *s)
{
	const unsigned char *c;
	size_t col = 0;

	if (!s) {
		put(g, "NULL");
		return;
	}
	put(g, "\"");
	for (c = (const unsigned char *)s; *c; c++, col++) {
		if (col >= 96 && c[0] != '\n') {
			str_break(g);
			col = 0;
		}
		if (*c == '\n' && c[1]) {
			put(g, "\\n");
			str_break(g);
			col = 0;
		} else if (*c == '\n')
			put(g, "\\n");
		else if (*c == '"' || *c == '\\' || *c == '?')
			put(g, "\\%c", *c);
		else if (*c >= 32 && *c < 127)
			put(g, "%c", *c);
		else
			put(g, "\\%03o", *c);
	}
	put(g, "\"");
}

static void f_str(struct cg *g, const char *name, const char *s)
{
	field(g, name);
	v_str(g, s);
	put(g, ",\n");
}

static void f_bool(struct cg *g, const char *name, bool b)
{
	field(g, name);
	put(g, "%s,\n", b ? "true" : "false");
}

/* enums and unsigned ints */
static void f_int(struct cg *g, const char *name, long long v)
{
	field(g, name);
	put(g, "%lld,\n", v);
}

static void f_u64(struct cg *g, const char *name, uint64_t v)
{
	field(g, name);
	put(g, "UINT64_C(%" PRIu64 "),\n", v);
}

static void v_file(struct cg *g, const char *file)
{
	size_t i;

	for (i = 0; file && i < g->n_files; i++)
		if (strcmp(file, g->files[i]) == 0) {
			put(g, "%s", g->idents[i]);
			return;
		}
	v_str(g, file);
}

/* "static const char IDENT[] = FILE;" for the origins naming file */
static void def_file(struct cg *g, const char *file, const char *ident)
{
	if (g->n_files == CGEN_MAX_FILES || strlen(ident) >= sizeof(g->idents[0])) {
		g->r = -ENOBUFS;
		return;
	}
	g->files[g->n_files] = file;
	(void)snprintf(g->idents[g->n_files], sizeof(g->idents[0]), "%s", ident);
	g->n_files++;
	put(g, "static const char %s[] = ", ident);
	v_str(g, file);
	put(g, ";\n");
}

static void v_origin(struct cg *g, const struct catalog_origin *o)
{
	put(g, "{.file = ");
	v_file(g, o->file);
	put(g, ", .line = %u, .col = %u}", o->line, o->col);
}

static void f_origin(struct cg *g, const char *name, const struct catalog_origin *o)
{
	field(g, name);
	v_origin(g, o);
	put(g, ",\n");
}

/* n origins, or NULL when there are none */
static void v_origins(struct cg *g, const struct catalog_origin *at, size_t n)
{
	size_t i;

	if (!at || n == 0) {
		put(g, "NULL");
		return;
	}
	put(g, "(const struct catalog_origin[]){\n");
	g->depth++;
	for (i = 0; i < n; i++) {
		indent(g);
		v_origin(g, &at[i]);
		put(g, ",\n");
	}
	g->depth--;
	indent(g);
	put(g, "}");
}

/* n strings and a NULL */
static void v_strs(struct cg *g, const char *const *v, size_t n)
{
	size_t i;

	if (!v) {
		put(g, "NULL");
		return;
	}
	put(g, "(const char *const[]){\n");
	g->depth++;
	for (i = 0; i < n; i++) {
		indent(g);
		v_str(g, v[i]);
		put(g, ",\n");
	}
	indent(g);
	put(g, "NULL,\n");
	g->depth--;
	indent(g);
	put(g, "}");
}

/* A NULL-terminated array (or NULL). */
static void f_strvz(struct cg *g, const char *name, const char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	field(g, name);
	v_strs(g, v, n);
	put(g, ",\n");
}

static void f_strv(struct cg *g, const char *name, const struct profile_strv *s)
{
	open_(g, name);
	field(g, "v");
	v_strs(g, s->v, s->n);
	put(g, ",\n");
	field(g, "at");
	v_origins(g, s->at, s->n);
	put(g, ",\n");
	f_int(g, "n", (long long)s->n);
	close_(g);
}

static void f_map(struct cg *g, const char *name, const struct profile_map *m)
{
	open_(g, name);
	field(g, "keys");
	v_strs(g, m->keys, m->n);
	put(g, ",\n");
	field(g, "values");
	v_strs(g, m->values, m->n);
	put(g, ",\n");
	field(g, "at");
	v_origins(g, m->at, m->n);
	put(g, ",\n");
	f_int(g, "n", (long long)m->n);
	close_(g);
}

static void f_files(struct cg *g, const char *name, const struct profile_files *f)
{
	size_t i;

	open_(g, name);
	field(g, "v");
	if (!f->v || f->n == 0) {
		put(g, "NULL,\n");
	} else {
		put(g, "(const struct profile_file[]){\n");
		g->depth++;
		for (i = 0; i < f->n; i++) {
			indent(g);
			put(g, "{\n");
			g->depth++;
			f_str(g, "path", f->v[i].path);
			field(g, "mode");
			put(g, "0%o,\n", f->v[i].mode);
			f_str(g, "content", f->v[i].content);
			f_origin(g, "origin", &f->v[i].origin);
			close_(g);
		}
		g->depth--;
		indent(g);
		put(g, "},\n");
	}
	f_int(g, "n", (long long)f->n);
	close_(g);
}

/* the members of a strategy_decl, one level in */
static void strategy_decl_body(struct cg *g, const struct strategy_decl *d)
{
	const struct adapter_strategy *s = &d->strategy;
	int a;

	open_(g, "strategy");
	f_int(g, "resume", s->resume);
	f_int(g, "dangerous_mode", s->dangerous_mode);
	f_int(g, "event_channel", s->event_channel);
	f_int(g, "output_mode", s->output_mode);
	f_int(g, "session_state", s->session_state);
	close_(g);
	field(g, "axis_declared");
	put(g, "{");
	for (a = 0; a < _AXIS_MAX; a++)
		put(g, "%s%s", a ? ", " : "", d->axis_declared[a] ? "true" : "false");
	put(g, "},\n");
	open_(g, "axis_origin");
	for (a = 0; a < _AXIS_MAX; a++) {
		indent(g);
		v_origin(g, &d->axis_origin[a]);
		put(g, ",\n");
	}
	close_(g);
	f_origin(g, "origin", &d->origin);
	f_str(g, "note", d->note);
}

/* .name = &(const struct strategy_decl){...}, or NULL */
static void f_strategy_ptr(struct cg *g, const char *name, const struct strategy_decl *d)
{
	field(g, name);
	if (!d) {
		put(g, "NULL,\n");
		return;
	}
	put(g, "&(const struct strategy_decl){\n");
	g->depth++;
	strategy_decl_body(g, d);
	g->depth--;
	indent(g);
	put(g, "},\n");
}

static void f_invocation(struct cg *g, const struct profile_invocation *inv)
{
	open_(g, "invocation");
	f_str(g, "binary", inv->binary);
	f_strv(g, "subcommands", &inv->subcommands);
	f_str(g, "model_flag", inv->model_flag);
	f_str(g, "prompt_flag", inv->prompt_flag);
	f_str(g, "prompt_file_flag", inv->prompt_file_flag);
	f_bool(g, "prompt_positional", inv->prompt_positional);
	f_int(g, "prompt_guard", inv->prompt_guard);
	f_strv(g, "extra_args", &inv->extra_args);
	f_strv(g, "env_passthrough", &inv->env_passthrough);
	f_origin(g, "origin", &inv->origin);
	f_origin(g, "binary_at", &inv->binary_at);
	f_origin(g, "model_flag_at", &inv->model_flag_at);
	f_origin(g, "prompt_flag_at", &inv->prompt_flag_at);
	f_origin(g, "prompt_file_flag_at", &inv->prompt_file_flag_at);
	f_origin(g, "prompt_guard_at", &inv->prompt_guard_at);
	close_(g);
}

static void f_caps(struct cg *g, const struct profile_capabilities *c)
{
	open_(g, "caps");
	f_bool(g, "vision", c->vision);
	f_bool(g, "mcp_client", c->mcp_client);
	f_bool(g, "mcp_server", c->mcp_server);
	f_bool(g, "tool_use", c->tool_use);
	f_bool(g, "streaming", c->streaming);
	f_bool(g, "native_subagents", c->native_subagents);
	f_bool(g, "local_models", c->local_models);
	f_bool(g, "computer_use", c->computer_use);
	f_bool(g, "agents_md", c->agents_md);
	f_int(g, "sandbox", c->sandbox);
	field(g, "max_parallel_workers");
	put(g, "INT64_C(%" PRId64 "),\n", c->max_parallel_workers);
	f_bool(g, "supports_sampling_params", c->supports_sampling_params);
	f_bool(g, "supports_temperature", c->supports_temperature);
	f_bool(g, "supports_top_p", c->supports_top_p);
	f_bool(g, "supports_top_k", c->supports_top_k);
	f_bool(g, "supports_max_tokens", c->supports_max_tokens);
	f_bool(g, "supports_endpoint", c->supports_endpoint);
	f_origin(g, "vision_at", &c->vision_at);
	f_origin(g, "supports_endpoint_at", &c->supports_endpoint_at);
	close_(g);
}

static void f_pty(struct cg *g, const struct ptydrive_conf *pc)
{
	size_t i;

	open_(g, "pty");
	f_bool(g, "declared", pc->declared);
	f_int(g, "rows", pc->rows);
	f_int(g, "cols", pc->cols);
	f_str(g, "term", pc->term);
	f_str(g, "ready", pc->ready);
	f_str(g, "working", pc->working);
	f_str(g, "done", pc->done);
	open_(g, "ignore");
	for (i = 0; i < PTYDRIVE_MAX_IGNORE; i++) {
		indent(g);
		v_str(g, pc->ignore[i]);
		put(g, ",\n");
	}
	close_(g);
	f_int(g, "n_ignore", (long long)pc->n_ignore);
	open_(g, "perms");
	for (i = 0; i < PTYDRIVE_MAX_PERMS; i++) {
		indent(g);
		put(g, "{\n");
		g->depth++;
		f_str(g, "pattern", pc->perms[i].pattern);
		f_str(g, "allow", pc->perms[i].allow);
		f_str(g, "deny", pc->perms[i].deny);
		close_(g);
	}
	close_(g);
	f_int(g, "n_perms", (long long)pc->n_perms);
	f_u64(g, "idle_done_ms", pc->idle_done_ms);
	f_bool(g, "paste", pc->paste);
	f_str(g, "submit", pc->submit);
	f_u64(g, "submit_delay_ms", pc->submit_delay_ms);
	f_str(g, "exit_keys", pc->exit_keys);
	f_u64(g, "exit_wait_ms", pc->exit_wait_ms);
	close_(g);
}

/* runtime.resume, dangerous, session_id, long_prompt */
static void f_runtime_cli(struct cg *g, const struct profile_runtime *rt)
{
	open_(g, "resume");
	f_bool(g, "declared", rt->resume.declared);
	f_strv(g, "args", &rt->resume.args);
	f_int(g, "position", rt->resume.position);
	f_origin(g, "origin", &rt->resume.origin);
	f_origin(g, "position_at", &rt->resume.position_at);
	close_(g);
	open_(g, "dangerous");
	f_bool(g, "declared", rt->dangerous.declared);
	f_strv(g, "args", &rt->dangerous.args);
	f_map(g, "env", &rt->dangerous.env);
	f_origin(g, "origin", &rt->dangerous.origin);
	close_(g);
	open_(g, "session_id");
	f_bool(g, "declared", rt->session_id.declared);
	f_strv(g, "args", &rt->session_id.args);
	f_int(g, "format", rt->session_id.format);
	f_origin(g, "origin", &rt->session_id.origin);
	close_(g);
	open_(g, "long_prompt");
	f_bool(g, "declared", rt->long_prompt.declared);
	f_int(g, "via", rt->long_prompt.via);
	f_strv(g, "args", &rt->long_prompt.args);
	f_origin(g, "origin", &rt->long_prompt.origin);
	close_(g);
}

/* runtime.endpoint, hooks, mcp */
static void f_runtime_channels(struct cg *g, const struct profile_runtime *rt)
{
	open_(g, "endpoint");
	f_bool(g, "declared", rt->endpoint.declared);
	f_str(g, "model", rt->endpoint.model);
	f_str(g, "default_model", rt->endpoint.default_model);
	f_strv(g, "args", &rt->endpoint.args);
	f_map(g, "env", &rt->endpoint.env);
	f_files(g, "files", &rt->endpoint.files);
	f_origin(g, "origin", &rt->endpoint.origin);
	close_(g);
	open_(g, "hooks");
	f_bool(g, "declared", rt->hooks.declared);
	f_strv(g, "args", &rt->hooks.args);
	f_map(g, "env", &rt->hooks.env);
	f_files(g, "files", &rt->hooks.files);
	f_origin(g, "origin", &rt->hooks.origin);
	close_(g);
	open_(g, "mcp");
	f_bool(g, "declared", rt->mcp.declared);
	f_int(g, "format", rt->mcp.format);
	f_str(g, "file", rt->mcp.file);
	f_strv(g, "remove", &rt->mcp.remove);
	f_strv(g, "args", &rt->mcp.args);
	f_map(g, "env", &rt->mcp.env);
	f_origin(g, "origin", &rt->mcp.origin);
	close_(g);
}

static void f_runtime(struct cg *g, const struct profile_runtime *rt)
{
	open_(g, "runtime");
	f_runtime_cli(g, rt);
	f_bool(g, "dialect_declared", rt->dialect_declared);
	f_int(g, "dialect", rt->dialect);
	f_map(g, "env", &rt->env);
	f_int(g, "home", rt->home);
	f_files(g, "files", &rt->files);
	f_runtime_channels(g, rt);
	f_int(g, "git_dir", rt->git_dir);
	open_(g, "sandbox");
	f_bool(g, "declared", rt->sandbox.declared);
	f_int(g, "tiers", rt->sandbox.tiers);
	f_strv(g, "read", &rt->sandbox.read);
	f_strv(g, "hosts", &rt->sandbox.hosts);
	f_origin(g, "origin", &rt->sandbox.origin);
	close_(g);
	f_bool(g, "login_declared", rt->login_declared);
	f_strv(g, "login", &rt->login);
	f_pty(g, &rt->pty);
	f_origin(g, "origin", &rt->origin);
	f_origin(g, "events_at", &rt->events_at);
	f_origin(g, "home_at", &rt->home_at);
	f_origin(g, "git_dir_at", &rt->git_dir_at);
	open_(g, "acp");
	f_bool(g, "declared", rt->acp.declared);
	f_strv(g, "args", &rt->acp.args);
	f_origin(g, "origin", &rt->acp.origin);
	close_(g);
	close_(g);
}

int catalog_cgen_profile(const struct profile *p, const char *ident, struct sbuf *out)
{
	struct cg g = {.out = out};
	char src[96];
	size_t canon_len = 0;
	const char *canon = profile_canonical_bytes(p, &canon_len);

	(void)snprintf(src, sizeof(src), "%s_source", ident);
	def_file(&g, p->source, src);
	put(&g, "\nstatic const struct profile %s = {\n", ident);
	g.depth = 1;
	/* .arena: empty, nothing is allocated in a static profile */
	field(&g, "source");
	put(&g, "%s,\n", src); /* the array the origins point to */
	f_str(&g, "name", p->name);
	f_str(&g, "display_name", p->display_name);
	f_int(&g, "shape", p->shape);
	f_bool(&g, "builtin", p->builtin);
	f_str(&g, "contract", p->contract);
	f_bool(&g, "contract_declared", p->contract_declared);
	f_strvz(&g, "version_args", p->version_args);
	f_invocation(&g, &p->invocation);
	f_strategy_ptr(&g, "strategy", p->strategy);
	f_caps(&g, &p->caps);
	f_map(&g, "models", &p->models);
	f_str(&g, "notes", p->notes);
	f_runtime(&g, &p->runtime);
	/* precomputed: profile_hash() and profile_canonical_bytes() find them */
	f_str(&g, "hash_cache", profile_hash(p));
	f_str(&g, "canonical_cache", canon);
	f_int(&g, "canonical_cache_len", (long long)canon_len);
	f_origin(&g, "origin", &p->origin);
	f_origin(&g, "shape_at", &p->shape_at);
	f_origin(&g, "builtin_at", &p->builtin_at);
	f_origin(&g, "contract_at", &p->contract_at);
	f_origin(&g, "strategy_at", &p->strategy_at);
	put(&g, "};\n");
	return g.r;
}

/* ---- the tables ---- */

/* file gets an array of its own if it has none yet */
static void need_file(struct cg *g, const char *file)
{
	char ident[64];
	size_t i;

	if (!file)
		return;
	for (i = 0; i < g->n_files; i++)
		if (strcmp(file, g->files[i]) == 0)
			return;
	(void)snprintf(ident, sizeof(ident), "catalog_file_%zu", g->n_files);
	def_file(g, file, ident);
}

static void need_files(struct cg *g, const struct catalog *cat)
{
	size_t i;

	for (i = 0; i < cat->n_rows; i++)
		need_file(g, cat->rows[i]->decl.origin.file);
	for (i = 0; i < cat->n_entries; i++)
		if (!cat->entries[i]->profile)
			need_file(g, cat->entries[i]->origin.file);
	for (i = 0; i < cat->n_multimodal; i++)
		need_file(g, cat->multimodal[i]->origin.file);
	for (i = 0; i < cat->n_use_cases; i++)
		need_file(g, cat->use_cases[i]->origin.file);
	for (i = 0; i < cat->n_roles; i++)
		need_file(g, cat->roles[i]->origin.file);
}

static void row_open(struct cg *g)
{
	indent(g);
	put(g, "{\n");
	g->depth++;
}

/* "static const struct TYPE static_NAME[] = {" */
static void array_open(struct cg *g, const char *type, const char *name)
{
	put(g, "\nstatic const struct %s static_%s[] = {\n", type, name);
	g->depth = 1;
}

static void array_close(struct cg *g)
{
	g->depth = 0;
	put(g, "};\n");
}

static void rows_matrix(struct cg *g, const struct catalog *cat)
{
	size_t i;

	if (!cat->n_rows)
		return;
	array_open(g, "matrix_row", "rows");
	for (i = 0; i < cat->n_rows; i++) {
		row_open(g);
		f_str(g, "name", cat->rows[i]->name);
		open_(g, "decl");
		strategy_decl_body(g, &cat->rows[i]->decl);
		close_(g);
		close_(g);
	}
	array_close(g);
}

/* registry.yaml's entries only: a profile's entry is made from it */
static size_t rows_registry(struct cg *g, const struct catalog *cat)
{
	size_t i, n = 0;

	for (i = 0; i < cat->n_entries; i++)
		n += !cat->entries[i]->profile;
	if (!n)
		return 0;
	n = 0;
	array_open(g, "registry_entry", "entries");
	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];

		if (e->profile)
			continue;
		row_open(g);
		f_str(g, "name", e->name);
		f_str(g, "display_name", e->display_name);
		f_str(g, "binary", e->binary);
		f_strvz(g, "version_args", e->version_args);
		f_bool(g, "builtin", e->builtin);
		f_strategy_ptr(g, "strategy", e->strategy);
		f_origin(g, "origin", &e->origin);
		field(g, "profile");
		put(g, "NULL,\n");
		f_int(g, "layer", e->layer);
		close_(g);
		n++;
	}
	array_close(g);
	return n;
}

static void rows_small(struct cg *g, const struct catalog *cat)
{
	size_t i;

	if (cat->n_multimodal)
		array_open(g, "multimodal_row", "multimodal");
	for (i = 0; i < cat->n_multimodal; i++) {
		row_open(g);
		f_str(g, "name", cat->multimodal[i]->name);
		f_bool(g, "vision", cat->multimodal[i]->vision);
		f_origin(g, "origin", &cat->multimodal[i]->origin);
		close_(g);
	}
	if (cat->n_multimodal)
		array_close(g);
	if (cat->n_use_cases)
		array_open(g, "use_case", "use_cases");
	for (i = 0; i < cat->n_use_cases; i++) {
		row_open(g);
		f_str(g, "name", cat->use_cases[i]->name);
		f_str(g, "summary", cat->use_cases[i]->summary);
		f_str(g, "install", cat->use_cases[i]->install);
		f_origin(g, "origin", &cat->use_cases[i]->origin);
		close_(g);
	}
	if (cat->n_use_cases)
		array_close(g);
	if (cat->n_roles)
		array_open(g, "role_preamble", "roles");
	for (i = 0; i < cat->n_roles; i++) {
		row_open(g);
		f_str(g, "name", cat->roles[i]->name);
		f_str(g, "preamble", cat->roles[i]->preamble);
		f_origin(g, "origin", &cat->roles[i]->origin);
		close_(g);
	}
	if (cat->n_roles)
		array_close(g);
}

/* .NAME = (const struct TYPE *const[]){&static_NAME[0], ...}, .n_NAME = n */
static void table_ptrs(struct cg *g, const char *type, const char *name, size_t n)
{
	size_t i;

	field(g, name);
	if (n == 0) {
		put(g, "NULL,\n");
	} else {
		put(g, "(const struct %s *const[]){\n", type);
		for (i = 0; i < n; i++)
			put(g, "\t\t&static_%s[%zu],\n", name, i);
		put(g, "\t},\n");
	}
	indent(g);
	put(g, ".n_%s = %zu,\n", name, n);
}

int catalog_cgen_tables(const struct catalog *cat, struct sbuf *out)
{
	struct cg g = {.out = out};
	size_t n_entries;

	need_files(&g, cat);
	rows_matrix(&g, cat);
	n_entries = rows_registry(&g, cat);
	rows_small(&g, cat);
	put(&g, "\nconst struct catalog_static_tables catalog_static_tables = {\n");
	g.depth = 1;
	table_ptrs(&g, "matrix_row", "rows", cat->n_rows);
	table_ptrs(&g, "registry_entry", "entries", n_entries);
	table_ptrs(&g, "multimodal_row", "multimodal", cat->n_multimodal);
	table_ptrs(&g, "use_case", "use_cases", cat->n_use_cases);
	table_ptrs(&g, "role_preamble", "roles", cat->n_roles);
	put(&g, "};\n");
	return g.r;
}
