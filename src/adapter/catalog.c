#include "adapter/catalog.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapter/contract.h"
#include "adapter/pricing.h"
#include "adapter/profile.h"
#include "adapter/strategy.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/ycompiled.h"

static const char *const default_version_args[] = {"--version", NULL};

/* ---- embedded files ---- */

const struct catalog_file *catalog_embedded_find(const char *name)
{
	const struct catalog_file *f;

	for (f = catalog_embedded; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

const struct catalog_tree *catalog_compiled_find(const char *name)
{
	size_t lo = 0, hi = 0;

	while (catalog_compiled[hi].name)
		hi++;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(catalog_compiled[mid].name, name);

		if (c == 0)
			return &catalog_compiled[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int catalog_compiled_doc(const struct catalog_tree *t, struct ydoc **ret, struct diag *reterr)
{
	static const char prefix[] = CATALOG_EMBEDDED_PREFIX;
	char name[PATH_MAX];
	size_t n = strnlen(t->name, sizeof(name) - sizeof(prefix));
	int r;

	/* at every start, for every embedded file: copies, not snprintf */
	memcpy(name, prefix, sizeof(prefix) - 1);
	memcpy(name + sizeof(prefix) - 1, t->name, n);
	name[sizeof(prefix) - 1 + n] = '\0';
	r = ydoc_from_compiled(name, &catalog_compiled_data, t->first, t->count, ret);
	if (r < 0)
		diag_set(reterr, name, 0, 0, "broken compiled catalogue (rebuild bernstein)");
	return r;
}

/* ---- lifecycle ---- */

struct catalog *catalog_new(void)
{
	struct catalog *cat = xcalloc(1, sizeof(*cat));

	arena_init(&cat->arena, 0);
	return cat;
}

struct catalog *catalog_free(struct catalog *cat)
{
	if (!cat)
		return NULL;
	for (size_t i = 0; i < cat->n_profiles; i++)
		profile_free(cat->profiles[i]);
	free(cat->profiles);
	contract_index_free(cat->contracts);
	arena_release(&cat->arena);
	free((void *)cat->rows);
	free((void *)cat->entries);
	free((void *)cat->multimodal);
	free((void *)cat->use_cases);
	free((void *)cat->pricing);
	free((void *)cat->roles);
	free(cat);
	return NULL;
}

enum catalog_kind catalog_kind_from_name(const char *basename)
{
	if (!basename)
		return _CATALOG_KIND_INVALID;
	if (strcmp(basename, CATALOG_MATRIX_FILE) == 0)
		return CATALOG_KIND_MATRIX;
	if (strcmp(basename, CATALOG_REGISTRY_FILE) == 0)
		return CATALOG_KIND_REGISTRY;
	if (strcmp(basename, CATALOG_MULTIMODAL_FILE) == 0)
		return CATALOG_KIND_MULTIMODAL;
	if (strcmp(basename, CATALOG_USE_CASES_FILE) == 0)
		return CATALOG_KIND_USE_CASES;
	if (strcmp(basename, CATALOG_PRICING_FILE) == 0)
		return CATALOG_KIND_PRICING;
	if (strcmp(basename, CATALOG_ROLES_FILE) == 0)
		return CATALOG_KIND_ROLES;
	return _CATALOG_KIND_INVALID;
}

/* ---- sorted tables (binary search on name) ---- */

typedef const char *name_at_fn(const void *tab, size_t i);

static const char *row_name_at(const void *tab, size_t i)
{
	return ((const struct matrix_row *const *)tab)[i]->name;
}

static const char *entry_name_at(const void *tab, size_t i)
{
	return ((const struct registry_entry *const *)tab)[i]->name;
}

/* Index of name in a sorted table, or -(insertion point) - 1 when absent. */
static long table_search(const void *tab, size_t n, name_at_fn *name_at, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name_at(tab, mid), name);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(long)lo - 1;
}

/* A row of a higher layer replaces the whole row of the same name. */
static void rows_put(struct catalog *cat, const struct matrix_row *row)
{
	long i = table_search(cat->rows, cat->n_rows, row_name_at, row->name);
	size_t pos;

	if (i >= 0) {
		cat->rows[i] = row;
		return;
	}
	pos = (size_t)(-i - 1);
	if (cat->n_rows == cat->alloc_rows) {
		cat->alloc_rows = cat->alloc_rows ? st_mult(cat->alloc_rows, 2) : 64;
		cat->rows =
			xrealloc((void *)cat->rows, st_mult(cat->alloc_rows, sizeof(*cat->rows)));
	}
	memmove((void *)(cat->rows + pos + 1), (const void *)(cat->rows + pos),
		(cat->n_rows - pos) * sizeof(*cat->rows));
	cat->rows[pos] = row;
	cat->n_rows++;
}

static void entries_put(struct catalog *cat, const struct registry_entry *e)
{
	long i = table_search(cat->entries, cat->n_entries, entry_name_at, e->name);
	size_t pos;

	if (i >= 0) {
		cat->entries[i] = e;
		return;
	}
	pos = (size_t)(-i - 1);
	if (cat->n_entries == cat->alloc_entries) {
		cat->alloc_entries = cat->alloc_entries ? st_mult(cat->alloc_entries, 2) : 64;
		cat->entries = xrealloc((void *)cat->entries,
					st_mult(cat->alloc_entries, sizeof(*cat->entries)));
	}
	memmove((void *)(cat->entries + pos + 1), (const void *)(cat->entries + pos),
		(cat->n_entries - pos) * sizeof(*cat->entries));
	cat->entries[pos] = e;
	cat->n_entries++;
}

const struct registry_entry *catalog_find(const struct catalog *cat, const char *name)
{
	long i;

	if (!cat || !name)
		return NULL;
	i = table_search(cat->entries, cat->n_entries, entry_name_at, name);
	return i >= 0 ? cat->entries[i] : NULL;
}

const struct matrix_row *catalog_matrix_find(const struct catalog *cat, const char *name)
{
	long i;

	if (!cat || !name)
		return NULL;
	i = table_search(cat->rows, cat->n_rows, row_name_at, name);
	return i >= 0 ? cat->rows[i] : NULL;
}

/* ---- parsing ---- */

static const struct yfield strategy_fields[] = {
	{"resume", YT_STR, YF_REQUIRED, NULL, NULL},
	{"dangerous_mode", YT_STR, YF_REQUIRED, NULL, NULL},
	{"event_channel", YT_STR, YF_REQUIRED, NULL, NULL},
	{"output_mode", YT_STR, 0, NULL, NULL},
	{"session_state", YT_STR, 0, NULL, NULL},
	{"note", YT_STR, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static const struct yfield registry_fields[] = {
	{"display_name", YT_STR, YF_REQUIRED, NULL, NULL},
	{"binary", YT_STR, 0, NULL, NULL},
	{"version_args", YT_STRLIST, 0, NULL, NULL},
	{"builtin", YT_BOOL, 0, NULL, NULL},
	{"strategy", YT_MAP, 0, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static struct catalog_origin origin_of(const char *file, const struct ynode *n)
{
	struct catalog_origin o = {.file = file, .line = n->line, .col = n->col};

	return o;
}

static int parse_strategy(const struct ydoc *doc, const struct ynode *node, const char *what,
			  struct arena *arena, const char *file, struct strategy_decl *ret,
			  struct diag *reterr)
{
	struct strategy_decl d;
	const char *note = NULL;
	int a, r;

	memset(&d, 0, sizeof(d));
	d.strategy = strategy_default; /* for the optional axes */

	r = yaml_check_map(doc, node, strategy_fields, what, reterr);
	if (r < 0)
		return r;
	d.origin = origin_of(file, node);
	for (a = 0; a < _AXIS_MAX; a++) {
		const struct ynode *v = ynode_get(node, axis_name((enum axis)a));
		int val = -1;

		if (!v)
			continue;
		r = yaml_get_enum(doc, node, axis_name((enum axis)a), axis_values((enum axis)a),
				  &val, reterr);
		if (r < 0)
			return r;
		if (axis_set(&d.strategy, (enum axis)a, val) < 0) {
			yaml_diag(doc, v, reterr, "'%s': invalid value", axis_name((enum axis)a));
			return -EINVAL;
		}
		d.axis_declared[a] = true;
		d.axis_origin[a] = origin_of(file, v);
	}
	r = yaml_get_str(doc, node, "note", &note, reterr);
	if (r < 0)
		return r;
	d.note = note ? arena_strdup(arena, note) : NULL;
	*ret = d;
	return 0;
}

int catalog_parse_strategy(const struct ydoc *doc, const struct ynode *node, const char *what,
			   struct arena *arena, const char *file, struct strategy_decl *ret,
			   struct diag *reterr)
{
	return parse_strategy(doc, node, what, arena, file, ret, reterr);
}

static int check_name(const struct ydoc *doc, const struct ynode *key, struct diag *reterr)
{
	size_t i;

	if (key->kind != YNODE_SCALAR || key->len == 0 || key->len > CATALOG_MAX_NAME)
		goto bad;
	for (i = 0; i < key->len; i++) {
		char c = key->str[i];

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if (i > 0 && (c == '_' || c == '-'))
			continue;
		goto bad;
	}
	return 0;
bad:
	yaml_diag(doc, key, reterr,
		  "invalid adapter name '%.*s' (expected [a-z0-9][a-z0-9_-]*, at most %d bytes)",
		  key->kind == YNODE_SCALAR && key->len <= 200 ? (int)key->len : 0,
		  key->kind == YNODE_SCALAR ? key->str : "", CATALOG_MAX_NAME);
	return -EINVAL;
}

/* A parsed file, merged into the catalogue only when all of it is valid:
 * matrix rows, registry entries, multimodal rows or use cases. */
struct parsed {
	const void **items;
	size_t n;
};

static void parsed_push(struct parsed *p, const void *item)
{
	p->items = xrealloc((void *)p->items, st_mult(p->n + 1, sizeof(*p->items)));
	p->items[p->n++] = item;
}

static void parsed_release(struct parsed *p)
{
	free((void *)p->items);
	p->items = NULL;
	p->n = 0;
}

static int parse_matrix_row(const struct ydoc *doc, const struct ynode *key,
			    const struct ynode *val, struct arena *arena, const char *file,
			    struct matrix_row **ret, struct diag *reterr)
{
	struct matrix_row *row = arena_alloc(arena, sizeof(*row));
	char what[CATALOG_MAX_NAME + 64];
	int r;

	(void)snprintf(what, sizeof(what), "strategy of '%s'", key->str);
	r = parse_strategy(doc, val, what, arena, file, &row->decl, reterr);
	if (r < 0)
		return r;
	row->name = arena_strdup(arena, key->str);
	row->decl.origin = origin_of(file, key);
	*ret = row;
	return 0;
}

static bool str_blank(const char *s)
{
	for (; *s; s++)
		if (*s != ' ' && *s != '\t')
			return false;
	return true;
}

static int parse_registry_entry(const struct ydoc *doc, const struct ynode *key,
				const struct ynode *val, struct arena *arena, const char *file,
				struct registry_entry **ret, struct diag *reterr)
{
	struct registry_entry *e = arena_alloc(arena, sizeof(*e));
	char what[CATALOG_MAX_NAME + 64];
	const char *display = NULL, *binary = NULL;
	const char **args = NULL;
	size_t nargs = 0, i;
	bool builtin = false;
	const struct ynode *n;
	int r;

	(void)snprintf(what, sizeof(what), "registry entry '%s'", key->str);
	r = yaml_check_map(doc, val, registry_fields, what, reterr);
	if (r < 0)
		return r;
	r = yaml_get_str(doc, val, "display_name", &display, reterr);
	if (r >= 0)
		r = yaml_get_str(doc, val, "binary", &binary, reterr);
	if (r >= 0)
		r = yaml_get_bool(doc, val, "builtin", &builtin, reterr);
	if (r >= 0)
		r = yaml_get_strlist(doc, val, "version_args", &args, &nargs, reterr);
	if (r < 0)
		return r;
	if (!display) { /* required: only an unchecked tree gets here */
		yaml_diag(doc, val, reterr, "%s: missing required key 'display_name'", what);
		return -EINVAL;
	}
	if (str_blank(display)) {
		yaml_diag(doc, ynode_get(val, "display_name"), reterr,
			  "'display_name' must not be empty");
		return -EINVAL;
	}
	if (builtin && binary) {
		yaml_diag(doc, ynode_get(val, "binary"), reterr,
			  "%s: 'binary' cannot be combined with 'builtin: true'", what);
		return -EINVAL;
	}
	if (!builtin && !binary) {
		yaml_diag(doc, val, reterr,
			  "%s: missing required key 'binary' (or 'builtin: true')", what);
		return -EINVAL;
	}
	if (binary && str_blank(binary)) {
		yaml_diag(doc, ynode_get(val, "binary"), reterr, "'binary' must not be empty");
		return -EINVAL;
	}
	n = ynode_get(val, "version_args");
	if (n && nargs == 0) {
		yaml_diag(doc, n, reterr, "'version_args' must not be empty");
		return -EINVAL;
	}
	if (n && builtin) {
		yaml_diag(doc, n, reterr,
			  "%s: 'version_args' cannot be combined with 'builtin: true'", what);
		return -EINVAL;
	}
	n = ynode_get(val, "strategy");
	if (n) {
		struct strategy_decl *d = arena_alloc(arena, sizeof(*d));
		char swhat[CATALOG_MAX_NAME + 64];

		(void)snprintf(swhat, sizeof(swhat), "inline strategy of '%s'", key->str);
		r = parse_strategy(doc, n, swhat, arena, file, d, reterr);
		if (r < 0)
			return r;
		e->strategy = d;
	}
	e->name = arena_strdup(arena, key->str);
	e->display_name = arena_strdup(arena, display);
	e->binary = binary ? arena_strdup(arena, binary) : NULL;
	e->builtin = builtin;
	if (args) {
		const char **v = arena_alloc(arena, st_mult(nargs + 1, sizeof(*v)));

		for (i = 0; i < nargs; i++)
			v[i] = arena_strdup(arena, args[i]);
		v[nargs] = NULL;
		e->version_args = v;
	} else {
		e->version_args = default_version_args;
	}
	e->origin = origin_of(file, key);
	*ret = e;
	return 0;
}

/* A registry entry and a profile of one name may not share a layer. */
static int check_conflict(const struct catalog *cat, const struct ydoc *doc,
			  const struct ynode *key, struct diag *reterr)
{
	const struct registry_entry *old = catalog_find(cat, key->str);

	if (!old || !old->profile || old->layer != cat->layer)
		return 0;
	yaml_diag(
		doc, key, reterr,
		"adapter '%s' has a capability profile (%s) and a registry entry in the same catalogue layer: a name may have a profile or a registry.yaml entry, not both",
		key->str, old->origin.file);
	return -EINVAL;
}

static const struct yfield use_case_fields[] = {
	{"summary", YT_STR, YF_REQUIRED, NULL, NULL},
	{"install", YT_STR, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

/* map's string key, checked by yaml_check_map() already; NULL and a diag
 * otherwise (an unchecked tree of a broken build: never a crash). */
static const struct ynode *str_field(const struct ydoc *doc, const struct ynode *map,
				     const char *key, struct diag *reterr)
{
	const struct ynode *v = ynode_get(map, key);

	if (v && v->kind == YNODE_SCALAR)
		return v;
	yaml_diag(doc, v ? v : map, reterr, "'%s': expected a string", key);
	return NULL;
}

static int parse_use_case(const struct ydoc *doc, const struct ynode *key, const struct ynode *val,
			  struct arena *arena, const char *file, struct use_case **ret,
			  struct diag *reterr)
{
	struct use_case *u = arena_alloc(arena, sizeof(*u));
	char what[CATALOG_MAX_NAME + 64];
	static const char *const keys[] = {"summary", "install"};
	const struct ynode *v[2];
	size_t i;
	int r;

	(void)snprintf(what, sizeof(what), "use case of '%s'", key->str);
	r = yaml_check_map(doc, val, use_case_fields, what, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		v[i] = str_field(doc, val, keys[i], reterr);
		if (!v[i])
			return -EINVAL;
		if (str_blank(v[i]->str)) {
			yaml_diag(doc, v[i], reterr, "'%s' must not be empty", keys[i]);
			return -EINVAL;
		}
	}
	u->name = arena_strdup(arena, key->str);
	u->summary = arena_strdup(arena, v[0]->str);
	u->install = arena_strdup(arena, v[1]->str);
	u->origin = origin_of(file, key);
	*ret = u;
	return 0;
}

static const struct yfield role_fields[] = {
	{"preamble", YT_STR, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static int parse_role(const struct ydoc *doc, const struct ynode *key, const struct ynode *val,
		      struct arena *arena, const char *file, struct role_preamble **ret,
		      struct diag *reterr)
{
	struct role_preamble *u = arena_alloc(arena, sizeof(*u));
	char what[CATALOG_MAX_NAME + 64];
	const struct ynode *v;
	int r;

	(void)snprintf(what, sizeof(what), "role '%s'", key->str);
	r = yaml_check_map(doc, val, role_fields, what, reterr);
	if (r < 0)
		return r;
	v = str_field(doc, val, "preamble", reterr);
	if (!v)
		return -EINVAL;
	if (str_blank(v->str)) {
		yaml_diag(doc, v, reterr, "'preamble' must not be empty");
		return -EINVAL;
	}
	u->name = arena_strdup(arena, key->str);
	u->preamble = arena_strdup(arena, v->str);
	u->origin = origin_of(file, key);
	*ret = u;
	return 0;
}

static const char *kind_what(enum catalog_kind kind)
{
	switch (kind) {
	case CATALOG_KIND_MATRIX:
		return "strategy matrix";
	case CATALOG_KIND_REGISTRY:
		return "registry";
	case CATALOG_KIND_MULTIMODAL:
		return "multimodal table";
	case CATALOG_KIND_USE_CASES:
		return "use cases";
	case CATALOG_KIND_PRICING:
		return "pricing table";
	case CATALOG_KIND_ROLES:
		return "role preambles";
	case _CATALOG_KIND_MAX:
	case _CATALOG_KIND_INVALID:
	default:
		return "catalogue file";
	}
}

static int parse_doc(struct catalog *cat, enum catalog_kind kind, const struct ydoc *doc,
		     struct parsed *out, struct diag *reterr)
{
	const char *top = kind == CATALOG_KIND_USE_CASES ? "agents"
			  : kind == CATALOG_KIND_ROLES	 ? "roles"
							 : "adapters";
	const struct yfield fields[] = {{top, YT_MAP, YF_REQUIRED, NULL, NULL},
					{NULL, 0, 0, NULL, NULL}};
	const struct ynode *adapters;
	const char *file;
	size_t i;
	int r;

	if (kind == CATALOG_KIND_PRICING) {
		struct pricing_row **rows = NULL;
		size_t n = 0;

		r = pricing_parse(doc, &cat->arena, arena_strdup(&cat->arena, doc->name),
				  cat->layer, &rows, &n, reterr);
		for (i = 0; r >= 0 && i < n; i++)
			parsed_push(out, rows[i]);
		free(rows);
		return r;
	}
	r = yaml_check_map(doc, doc->root, fields, kind_what(kind), reterr);
	if (r < 0)
		return r;
	adapters = ynode_get(doc->root, top);
	if (!adapters || adapters->kind != YNODE_MAP) { /* unchecked: a broken build */
		yaml_diag(doc, doc->root, reterr, "missing the '%s' mapping", top);
		return -EINVAL;
	}
	file = arena_strdup(&cat->arena, doc->name);
	for (i = 0; i < adapters->n; i++) {
		const struct ynode *key = adapters->keys[i], *val = adapters->items[i];

		r = check_name(doc, key, reterr);
		if (r < 0)
			return r;
		switch (kind) {
		case CATALOG_KIND_MATRIX: {
			struct matrix_row *row = NULL;

			r = parse_matrix_row(doc, key, val, &cat->arena, file, &row, reterr);
			if (r >= 0)
				parsed_push(out, row);
			break;
		}
		case CATALOG_KIND_REGISTRY: {
			struct registry_entry *e = NULL;

			r = parse_registry_entry(doc, key, val, &cat->arena, file, &e, reterr);
			if (r >= 0)
				r = check_conflict(cat, doc, key, reterr);
			if (r >= 0) {
				e->layer = cat->layer;
				parsed_push(out, e);
			}
			break;
		}
		case CATALOG_KIND_MULTIMODAL: {
			struct multimodal_row *m = arena_alloc(&cat->arena, sizeof(*m));
			bool b = false;

			r = yaml_get_bool(doc, adapters, key->str, &b, reterr);
			if (r >= 0) {
				m->name = arena_strdup(&cat->arena, key->str);
				m->vision = b;
				m->origin = origin_of(file, key);
				parsed_push(out, m);
			}
			break;
		}
		case CATALOG_KIND_USE_CASES: {
			struct use_case *u = NULL;

			r = parse_use_case(doc, key, val, &cat->arena, file, &u, reterr);
			if (r >= 0)
				parsed_push(out, u);
			break;
		}
		case CATALOG_KIND_ROLES: {
			struct role_preamble *u = NULL;

			r = parse_role(doc, key, val, &cat->arena, file, &u, reterr);
			if (r >= 0)
				parsed_push(out, u);
			break;
		}
		case CATALOG_KIND_PRICING: /* parsed above */
		case _CATALOG_KIND_MAX:
		case _CATALOG_KIND_INVALID:
		default:
			BUG("bad catalogue kind %d", (int)kind);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Replace the item of the same name in an unsorted table, or append. */
static void unsorted_put(const void ***tab, size_t *n, const void *item)
{
	const char *name = *(const char *const *)item;
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(*(const char *const *)(*tab)[i], name) == 0) {
			(*tab)[i] = item;
			return;
		}
	*tab = xrealloc((void *)*tab, st_mult(*n + 1, sizeof(**tab)));
	(*tab)[(*n)++] = item;
}

/* items[0..n) put in turn; into an empty table, appended at once: the
 * names of one file are distinct (the YAML loader refuses a repeated key),
 * and the embedded layer fills empty tables at every start. */
static void unsorted_put_all(const void ***tab, size_t *n, const void *const *items, size_t count)
{
	size_t i;

	if (*n == 0 && count) {
		*tab = xrealloc((void *)*tab, st_mult(count, sizeof(**tab)));
		memcpy((void *)*tab, items, count * sizeof(**tab));
		*n = count;
		return;
	}
	for (i = 0; i < count; i++)
		unsorted_put(tab, n, items[i]);
}

static void merge(struct catalog *cat, enum catalog_kind kind, const struct parsed *p)
{
	const void **tab;
	size_t i;

	switch (kind) {
	case CATALOG_KIND_MULTIMODAL:
		tab = (const void **)cat->multimodal;
		unsorted_put_all(&tab, &cat->n_multimodal, p->items, p->n);
		cat->multimodal = (const struct multimodal_row **)tab;
		return;
	case CATALOG_KIND_USE_CASES:
		tab = (const void **)cat->use_cases;
		unsorted_put_all(&tab, &cat->n_use_cases, p->items, p->n);
		cat->use_cases = (const struct use_case **)tab;
		return;
	case CATALOG_KIND_PRICING:
		tab = (const void **)cat->pricing;
		unsorted_put_all(&tab, &cat->n_pricing, p->items, p->n);
		cat->pricing = (const struct pricing_row **)tab;
		return;
	case CATALOG_KIND_ROLES:
		tab = (const void **)cat->roles;
		unsorted_put_all(&tab, &cat->n_roles, p->items, p->n);
		cat->roles = (const struct role_preamble **)tab;
		return;
	case CATALOG_KIND_MATRIX:
	case CATALOG_KIND_REGISTRY:
	case _CATALOG_KIND_MAX:
	case _CATALOG_KIND_INVALID:
	default:
		break;
	}
	for (i = 0; i < p->n; i++) {
		switch (kind) {
		case CATALOG_KIND_MATRIX:
			rows_put(cat, p->items[i]);
			break;
		case CATALOG_KIND_REGISTRY:
			entries_put(cat, p->items[i]);
			break;
		case CATALOG_KIND_MULTIMODAL:
		case CATALOG_KIND_USE_CASES:
		case CATALOG_KIND_PRICING:
		case CATALOG_KIND_ROLES:
		case _CATALOG_KIND_MAX:
		case _CATALOG_KIND_INVALID:
		default:
			BUG("bad catalogue kind %d", (int)kind);
		}
	}
}

static int add_doc(struct catalog *cat, enum catalog_kind kind, const struct ydoc *doc,
		   struct diag *reterr)
{
	struct parsed p = {NULL, 0};
	int r;

	r = parse_doc(cat, kind, doc, &p, reterr);
	if (r >= 0)
		merge(cat, kind, &p);
	parsed_release(&p);
	return r < 0 ? r : 0;
}

static int check_kind(enum catalog_kind kind, const char *name, struct diag *reterr)
{
	if ((int)kind < 0 || kind >= _CATALOG_KIND_MAX) {
		diag_set(reterr, name, 0, 0, "not a catalogue file");
		return -EINVAL;
	}
	return 0;
}

static const struct yaml_limits catalog_limits = {
	.max_bytes = CATALOG_MAX_FILE_BYTES,
	.max_depth = 8,
	.max_nodes = 0,
};

/* Make sure a load error names the file, and that an error about the file
 * as a whole (too large) still has a position: 1:1. */
static void diag_locate(struct diag *d, const char *name, int r)
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

int catalog_add_buf(struct catalog *cat, enum catalog_kind kind, const char *name, const char *buf,
		    size_t len, struct diag *reterr)
{
	struct ydoc *doc = NULL;
	int r;

	r = check_kind(kind, name, reterr);
	if (r < 0)
		return r;
	r = yaml_load_buf(name, buf, len, &catalog_limits, &doc, reterr);
	if (r < 0) {
		diag_locate(reterr, name, r);
		return r;
	}
	r = add_doc(cat, kind, doc, reterr);
	doc = ydoc_free(doc);
	return r;
}

int catalog_add_file(struct catalog *cat, enum catalog_kind kind, const char *path,
		     struct diag *reterr)
{
	struct ydoc *doc = NULL;
	int r;

	r = check_kind(kind, path, reterr);
	if (r < 0)
		return r;
	r = yaml_load_file(path, &catalog_limits, &doc, reterr);
	if (r == -ENOENT)
		return r;
	if (r < 0) {
		diag_locate(reterr, path, r);
		return r;
	}
	r = add_doc(cat, kind, doc, reterr);
	doc = ydoc_free(doc);
	return r;
}

/* ---- profiles ---- */

static void own_profile(struct catalog *cat, struct profile *p)
{
	cat->profiles =
		xrealloc(cat->profiles, st_mult(cat->n_profiles + 1, sizeof(*cat->profiles)));
	cat->profiles[cat->n_profiles++] = p;
}

/* p (owned by cat already) becomes the registry entry of its name. */
static int add_profile(struct catalog *cat, const struct profile *p, struct diag *reterr)
{
	const struct registry_entry *old = catalog_find(cat, p->name);
	struct registry_entry *e;

	if (old && !old->profile && old->layer == cat->layer) {
		diag_set(
			reterr, p->source, p->origin.line, p->origin.col,
			"field 'name': adapter '%s' has a registry entry (%s:%u) and a capability profile in the same catalogue layer: a name may have a profile or a registry.yaml entry, not both",
			p->name, old->origin.file, old->origin.line);
		return -EINVAL;
	}
	e = arena_alloc(&cat->arena, sizeof(*e));
	e->name = p->name;
	e->display_name = p->display_name;
	e->builtin = p->builtin;
	e->binary = p->builtin ? NULL : p->invocation.binary;
	e->version_args = p->version_args ? p->version_args : default_version_args;
	e->strategy = p->strategy;
	e->origin = p->origin;
	e->profile = p;
	e->layer = cat->layer;
	entries_put(cat, e);
	return 0;
}

int catalog_add_profile_buf(struct catalog *cat, const char *stem, const char *source,
			    const char *buf, size_t len, struct diag *reterr)
{
	struct profile *p = NULL;
	int r;

	r = profile_load_buf(source, stem, buf, len, &p, reterr);
	if (r < 0)
		return r;
	own_profile(cat, p);
	return add_profile(cat, p, reterr);
}

int catalog_add_profile_file(struct catalog *cat, const char *path, struct diag *reterr)
{
	struct profile *p = NULL;
	int r;

	r = profile_load_file(path, &p, reterr);
	if (r < 0)
		return r;
	own_profile(cat, p);
	return add_profile(cat, p, reterr);
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* DIR/profiles/NAME.yaml in name order. A missing directory adds nothing. */
static int add_profile_dir(struct catalog *cat, const char *dir, struct diag *reterr)
{
	struct sbuf path = SBUF_INIT(PATH_MAX);
	struct strvec names = STRVEC_INIT;
	struct dirent *de;
	DIR *d = NULL;
	size_t i;
	int r = 0;

	if (sbuf_addf(&path, "%s%s" PROFILE_DIR, dir, dir[strlen(dir) - 1] == '/' ? "" : "/") < 0) {
		diag_set(reterr, dir, 0, 0, "catalogue directory path too long");
		r = -ENAMETOOLONG;
		goto out;
	}
	d = opendir(path.buf);
	if (!d) {
		if (errno == ENOENT)
			goto out;
		r = -errno;
		diag_set(reterr, path.buf, 0, 0, "cannot read the profile directory: %s",
			 strerror(-r));
		goto out;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), sl = strlen(PROFILE_SUFFIX);

		if (de->d_name[0] == '.' || n <= sl || strcmp(de->d_name + n - sl, PROFILE_SUFFIX))
			continue;
		strvec_push(&names, de->d_name);
	}
	qsort((void *)names.v, names.nr, sizeof(*names.v), cmp_cstr);
	if (names.nr)
		cat->overridden = true;
	for (i = 0; i < names.nr; i++) {
		size_t len = path.len;

		if (sbuf_addf(&path, "/%s", names.v[i]) < 0) {
			diag_set(reterr, path.buf, 0, 0, "profile path too long");
			r = -ENAMETOOLONG;
			goto out;
		}
		r = catalog_add_profile_file(cat, path.buf, reterr);
		if (r < 0)
			goto out;
		sbuf_setlen(&path, len);
	}
out:
	if (d)
		(void)closedir(d);
	strvec_clear(&names);
	sbuf_release(&path);
	return r;
}

/* ---- layers ---- */

/* The embedded pricing.yaml's rows, then the override layers' rows merged
 * over them in their order: the table an eager parse would have made. The
 * compiled tree is checked by the tests (test-catalog-compiled.c), so a
 * failure here is a broken build. */
static void pricing_complete(struct catalog *cat)
{
	const struct catalog_tree *t;
	struct pricing_row **rows = NULL;
	const void **tab = NULL;
	struct ydoc *doc = NULL;
	size_t n = 0, nt = 0, i;
	struct diag d;

	if (!cat->pricing_pending)
		return;
	cat->pricing_pending = false;
	diag_clear(&d);
	t = catalog_compiled_find(CATALOG_PRICING_FILE);
	if (!t || catalog_compiled_doc(t, &doc, &d) < 0 ||
	    pricing_parse_embedded(doc, &cat->arena, arena_strdup(&cat->arena, doc->name),
				   cat->pricing_layer, &rows, &n, &d) < 0)
		BUG("embedded pricing table: %s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	ydoc_free(doc);
	unsorted_put_all(&tab, &nt, (const void *const *)rows, n);
	for (i = 0; i < cat->n_pricing; i++)
		unsorted_put(&tab, &nt, cat->pricing[i]);
	free(rows);
	free((void *)cat->pricing);
	cat->pricing = (const struct pricing_row **)tab;
	cat->n_pricing = nt;
}

/* The embedded tables (catalog_static_tables), merged as a parsed file's
 * rows would be. */
static int add_static_tables(struct catalog *cat, struct diag *reterr)
{
	const struct catalog_static_tables *st = &catalog_static_tables;
	const void **tab;
	size_t i;

	if (!st->n_entries || !st->n_rows) {
		diag_set(reterr, st->n_entries ? CATALOG_MATRIX_FILE : CATALOG_REGISTRY_FILE, 0, 0,
			 "missing from the embedded catalogue");
		return -ENOENT;
	}
	for (i = 0; i < st->n_rows; i++)
		rows_put(cat, st->rows[i]);
	for (i = 0; i < st->n_entries; i++) {
		struct registry_entry *e = arena_alloc(&cat->arena, sizeof(*e));

		*e = *st->entries[i]; /* in the current layer */
		e->layer = cat->layer;
		entries_put(cat, e);
	}
	tab = (const void **)cat->multimodal;
	unsorted_put_all(&tab, &cat->n_multimodal, (const void *const *)st->multimodal,
			 st->n_multimodal);
	cat->multimodal = (const struct multimodal_row **)tab;
	tab = (const void **)cat->use_cases;
	unsorted_put_all(&tab, &cat->n_use_cases, (const void *const *)st->use_cases,
			 st->n_use_cases);
	cat->use_cases = (const struct use_case **)tab;
	tab = (const void **)cat->roles;
	unsorted_put_all(&tab, &cat->n_roles, (const void *const *)st->roles, st->n_roles);
	cat->roles = (const struct role_preamble **)tab;
	return 0;
}

int catalog_add_embedded(struct catalog *cat, struct diag *reterr)
{
	const struct profile *const *pp;
	int r;

	/* The tables and the profiles, written as static data at build time
	 * from the same files loaded through every check
	 * (scripts/catalog-static.c): merged as they are, not owned, never
	 * freed, nothing written to them. */
	r = add_static_tables(cat, reterr);
	if (r < 0)
		return r;
	/* the prices: parsed from their compiled tree when a price is asked
	 * (catalog_pricing()) */
	if (catalog_compiled_find(CATALOG_PRICING_FILE)) {
		pricing_complete(cat);
		cat->pricing_pending = true;
		cat->pricing_layer = cat->layer;
	}
	for (pp = catalog_static_profiles; *pp; pp++) {
		r = add_profile(cat, *pp, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

int catalog_add_embedded_parsed(struct catalog *cat, struct diag *reterr)
{
	static const char *const files[] = {CATALOG_REGISTRY_FILE,   CATALOG_MATRIX_FILE,
					    CATALOG_MULTIMODAL_FILE, CATALOG_USE_CASES_FILE,
					    CATALOG_PRICING_FILE,    CATALOG_ROLES_FILE};
	const struct catalog_file *f;
	size_t i;
	int r;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		char name[128];

		f = catalog_embedded_find(files[i]);
		(void)snprintf(name, sizeof(name), CATALOG_EMBEDDED_PREFIX "%s", files[i]);
		if (!f) {
			if (i >= 2)
				continue; /* optional */
			diag_set(reterr, name, 0, 0, "missing from the embedded catalogue");
			return -ENOENT;
		}
		r = catalog_add_buf(cat, catalog_kind_from_name(files[i]), name,
				    (const char *)f->data, f->len, reterr);
		if (r < 0)
			return r;
	}
	for (f = catalog_embedded; f->name; f++) {
		const char *prefix = PROFILE_DIR "/";
		char stem[PROFILE_MAX_NAME + 2], name[PROFILE_MAX_NAME + 64];

		if (strncmp(f->name, prefix, strlen(prefix)) != 0 ||
		    strchr(f->name + strlen(prefix), '/'))
			continue;
		if (profile_stem(f->name, stem, sizeof(stem)) < 0)
			continue;
		(void)snprintf(name, sizeof(name), CATALOG_EMBEDDED_PREFIX "%s", f->name);
		r = catalog_add_profile_buf(cat, stem, name, (const char *)f->data, f->len, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

int catalog_add_dir(struct catalog *cat, const char *dir, struct diag *reterr)
{
	static const char *const files[] = {CATALOG_REGISTRY_FILE,   CATALOG_MATRIX_FILE,
					    CATALOG_MULTIMODAL_FILE, CATALOG_USE_CASES_FILE,
					    CATALOG_PRICING_FILE,    CATALOG_ROLES_FILE};
	struct sbuf path = SBUF_INIT(PATH_MAX);
	size_t i;
	int r = 0;

	if (!dir || !dir[0])
		return 0;
	cat->layer++;
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		sbuf_reset(&path);
		r = sbuf_addf(&path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
			      files[i]);
		if (r < 0) {
			diag_set(reterr, dir, 0, 0, "catalogue directory path too long");
			r = -ENAMETOOLONG;
			goto out;
		}
		r = catalog_add_file(cat, catalog_kind_from_name(files[i]), path.buf, reterr);
		if (r == -ENOENT) {
			diag_clear(reterr);
			r = 0;
			continue;
		}
		if (r < 0)
			goto out;
		cat->overridden = true;
	}
	r = add_profile_dir(cat, dir, reterr);
out:
	sbuf_release(&path);
	return r;
}

/* ---- the gates that need the whole catalogue ---- */

bool catalog_vision(const struct catalog *cat, const char *name)
{
	size_t i;

	if (!cat || !name)
		return false;
	for (i = 0; i < cat->n_multimodal; i++)
		if (strcmp(cat->multimodal[i]->name, name) == 0)
			return cat->multimodal[i]->vision;
	return false;
}

const struct use_case *catalog_use_case(const struct catalog *cat, const char *name)
{
	size_t i;

	if (!cat || !name)
		return NULL;
	for (i = 0; i < cat->n_use_cases; i++)
		if (strcmp(cat->use_cases[i]->name, name) == 0)
			return cat->use_cases[i];
	return NULL;
}

const char *catalog_role_preamble(const struct catalog *cat, const char *role)
{
	size_t i;

	if (!cat || !role)
		return NULL;
	for (i = 0; i < cat->n_roles; i++)
		if (strcmp(cat->roles[i]->name, role) == 0)
			return cat->roles[i]->preamble;
	return NULL;
}

const struct pricing_row *const *catalog_pricing_rows(const struct catalog *cat, size_t *ret_n)
{
	/* completed on first use: logically const (catalog.h) */
	pricing_complete((struct catalog *)(uintptr_t)cat);
	*ret_n = cat->n_pricing;
	return cat->pricing;
}

const struct pricing_row *catalog_pricing(const struct catalog *cat, const char *model)
{
	const struct pricing_row *const *rows;
	size_t n;

	if (!cat)
		return NULL;
	rows = catalog_pricing_rows(cat, &n);
	return pricing_find(rows, n, model);
}

int catalog_profile_strategy(const struct catalog *cat, const struct profile *p,
			     struct strategy_resolved *ret)
{
	const struct matrix_row *row;
	int a;

	if (p->strategy)
		return (int)strategy_resolve(NULL, p->name, p->strategy, ret);
	row = catalog_matrix_find(cat, p->name);
	if (!row)
		return (int)strategy_resolve(NULL, p->name, NULL, ret);
	/* the matrix row, not the catalogue's entry of that name (which may
	 * be another profile when p is checked on its own) */
	(void)strategy_resolve(NULL, p->name, &row->decl, ret);
	ret->source = STRATEGY_SOURCE_MATRIX;
	for (a = 0; a < _AXIS_MAX; a++)
		if (ret->axis_source[a] == STRATEGY_SOURCE_INLINE)
			ret->axis_source[a] = STRATEGY_SOURCE_MATRIX;
	return (int)ret->source;
}

static void issue(struct diag_list *ret, const char *file, const struct catalog_origin *at,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void issue(struct diag_list *ret, const char *file, const struct catalog_origin *at,
		  const char *fmt, ...)
{
	struct diag d;
	va_list ap;

	diag_clear(&d);
	va_start(ap, fmt);
	diag_vset(&d, file, at ? at->line : 0, at ? at->col : 0, fmt, ap);
	va_end(ap);
	diag_list_add(ret, &d);
}

size_t catalog_check_profile(const struct catalog *cat, const struct profile *p,
			     enum catalog_check_flags flags, struct diag_list *ret)
{
	struct contract_index *own = NULL;
	const struct contract_index *idx = cat->contracts;
	const struct contract_entry *ce;
	struct strategy_resolved res;
	size_t before = ret->n;
	char where[PATH_MAX + 64];
	struct diag d;

	/* gate 1, the strategy-dependent rules */
	(void)catalog_profile_strategy(cat, p, &res);
	if (res.source == STRATEGY_SOURCE_INLINE)
		(void)snprintf(where, sizeof(where), "the profile's strategy");
	else if (res.source == STRATEGY_SOURCE_MATRIX)
		(void)snprintf(where, sizeof(where), "strategy matrix %s:%u", res.decl->origin.file,
			       res.decl->origin.line);
	else
		(void)snprintf(where, sizeof(where), "the default strategy");
	diag_clear(&d);
	if (profile_check_strategy(p, &res.strategy, res.source == STRATEGY_SOURCE_INLINE, where,
				   &d) < 0)
		diag_list_add(ret, &d);

	/* no profile grants itself image input */
	if (p->caps.vision && !catalog_vision(cat, p->name))
		issue(ret, p->source, &p->caps.vision_at,
		      "field 'capabilities.vision': multimodal.yaml does not grant '%s' image input (a profile cannot grant itself attachment access)",
		      p->name);

	/* gate 2 */
	if (!idx) {
		diag_clear(&d);
		if (contract_index_build(NULL, NULL, &own, &d) < 0) {
			diag_list_add(ret, &d);
			goto declared;
		}
		idx = own;
	}
	ce = contract_index_find(idx, p->contract);
	if (!ce) {
		if (p->contract_declared)
			issue(ret, p->source, &p->contract_at,
			      "field 'contract': no contract '%s' in the catalogue (contracts/%s.yaml)",
			      p->contract, p->contract);
	} else {
		struct contract *c = NULL;

		diag_clear(&d);
		if (contract_index_load(ce, &c, &d) < 0)
			diag_list_add(ret, &d);
		else
			(void)profile_contract_discrepancies(p, c, ce->source, ret);
		contract_free(c);
	}

declared:
	/* gate 3, for a profile on its own */
	if (flags & CATALOG_CHECK_STANDALONE) {
		const struct registry_entry *e = catalog_find(cat, p->name);

		if (!catalog_matrix_find(cat, p->name))
			issue(ret, p->source, &p->origin,
			      "field 'name': '%s' has no row in the strategy matrix: every adapter declares its strategy there (an inline strategy: block alone does not count)",
			      p->name);
		if (e && !e->profile && e->layer == cat->layer)
			issue(ret, p->source, &p->origin,
			      "field 'name': adapter '%s' already has a registry entry (%s:%u) in that catalogue layer: a name may have a profile or a registry.yaml entry, not both",
			      p->name, e->origin.file, e->origin.line);
	}
	contract_index_free(own);
	return ret->n - before;
}

int catalog_validate(struct catalog *cat, const char *user_dir, const char *repo_dir,
		     struct diag *reterr)
{
	const char *dirs[] = {user_dir, repo_dir, NULL};

	/* a NULL user_dir ends the list early: skip it */
	return catalog_validate_dirs(cat, user_dir ? dirs : dirs + 1, reterr);
}

int catalog_validate_dirs(struct catalog *cat, const char *const *dirs, struct diag *reterr)
{
	struct diag_list is = PROFILE_ISSUES_INIT;
	struct contract_index *idx = NULL;
	size_t i;
	int r;

	r = contract_index_build_dirs(dirs, &idx, reterr);
	if (r < 0)
		return r;
	contract_index_free(cat->contracts);
	cat->contracts = idx;
	/* The embedded catalogue is immutable and passes every gate (test-profile
	 * checks each shipped profile), so the gates can only fail when a user or
	 * repo directory changed something: skip them otherwise, which keeps
	 * start-up fast for every command. */
	if (!cat->overridden) {
		for (i = 0; i < idx->n && idx->v[i].data; i++)
			;
		if (i == idx->n)
			return 0;
	}
	/* An override contract that cannot be read at all (a FIFO, a
	 * directory...) is that error, not an invalid catalogue: gate 2 below
	 * would report it as one of the profile's problems. */
	for (i = 0; i < idx->n; i++) {
		struct contract *c = NULL;
		struct diag d;

		if (idx->v[i].data)
			continue;
		r = contract_index_load(&idx->v[i], &c, &d);
		contract_free(c);
		if (r < 0 && r != -EINVAL && r != -EFBIG) {
			if (reterr)
				*reterr = d;
			return r;
		}
	}
	for (i = 0; i < cat->n_entries; i++) {
		const struct profile *p = cat->entries[i]->profile;

		if (!p || catalog_check_profile(cat, p, 0, &is) == 0)
			continue;
		if (reterr) {
			*reterr = is.v[0];
			if (is.n > 1) {
				size_t len = strlen(reterr->msg);

				(void)snprintf(
					reterr->msg + len, sizeof(reterr->msg) - len,
					" (and %zu more problem%s: bernstein profiles validate %s)",
					is.n - 1, is.n > 2 ? "s" : "", p->source);
			}
		}
		diag_list_release(&is);
		return -EINVAL;
	}
	return 0;
}

int catalog_load(const char *user_dir, const char *repo_dir, struct catalog **ret,
		 struct diag *reterr)
{
	const char *dirs[] = {user_dir, repo_dir, NULL};

	return catalog_load_dirs(user_dir ? dirs : dirs + 1, ret, reterr);
}

int catalog_load_dirs(const char *const *dirs, struct catalog **ret, struct diag *reterr)
{
	struct catalog *cat = catalog_new();
	size_t i;
	int r;

	r = catalog_add_embedded(cat, reterr);
	for (i = 0; r >= 0 && dirs && dirs[i]; i++)
		r = catalog_add_dir(cat, dirs[i], reterr);
	if (r >= 0)
		r = catalog_validate_dirs(cat, dirs, reterr);
	if (r < 0) {
		(void)catalog_free(cat);
		return r;
	}
	*ret = cat;
	return 0;
}

/* ---- conformance ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t catalog_undeclared(const struct catalog *cat, const char *const *names, struct strvec *ret)
{
	struct strvec found = STRVEC_INIT;
	size_t i;

	if (names) {
		for (; *names; names++)
			if (!catalog_matrix_find(cat, *names) && strvec_find(&found, *names) < 0)
				strvec_push(&found, *names);
	} else {
		for (i = 0; i < cat->n_entries; i++)
			if (!catalog_matrix_find(cat, cat->entries[i]->name))
				strvec_push(&found, cat->entries[i]->name);
	}
	if (found.nr > 1)
		qsort((void *)found.v, found.nr, sizeof(*found.v), cmp_str);
	for (i = 0; i < found.nr; i++)
		strvec_push(ret, found.v[i]);
	i = found.nr;
	strvec_clear(&found);
	return i;
}

int catalog_check(const struct catalog *cat, const char *const *names, struct diag *reterr)
{
	/* A diag message holds 511 bytes: keep whole names and say how many
	 * were left out (the CLI prints the complete list itself). */
	const size_t cap = sizeof(((struct diag *)NULL)->msg) - 1, reserve = 24;
	struct strvec missing = STRVEC_INIT;
	struct sbuf msg = SBUF_INIT(SIZE_MAX);
	size_t i, n;

	n = catalog_undeclared(cat, names, &missing);
	if (n == 0) {
		strvec_clear(&missing);
		return 0;
	}
	(void)sbuf_adds(&msg, CATALOG_UNDECLARED_MSG);
	for (i = 0; i < n; i++) {
		size_t need = strlen(missing.v[i]) + (i ? 2 : 0);

		if (msg.len + need + (i + 1 < n ? reserve : 0) > cap) {
			(void)sbuf_addf(&msg, ", ... (%zu more)", n - i);
			break;
		}
		(void)sbuf_addf(&msg, "%s%s", i ? ", " : "", missing.v[i]);
	}
	diag_set(reterr, NULL, 0, 0, "%s", msg.buf);
	sbuf_release(&msg);
	strvec_clear(&missing);
	return -EINVAL;
}
