/* Model prices (pricing.h, docs/configuration.md "Pricing"). */
#include "adapter/pricing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/xalloc.h"
#include "util/yaml.h"

static const char *const no_aliases[] = {NULL};

static const struct yfield row_fields[] = {
	{"aliases", YT_STRLIST, 0, NULL, NULL},	     {"input", YT_ANY, YF_REQUIRED, NULL, NULL},
	{"output", YT_ANY, YF_REQUIRED, NULL, NULL}, {"cache_read", YT_ANY, 0, NULL, NULL},
	{"cache_write", YT_ANY, 0, NULL, NULL},	     {"date", YT_STR, YF_REQUIRED, NULL, NULL},
	{"source", YT_STR, YF_REQUIRED, NULL, NULL}, {NULL, 0, 0, NULL, NULL},
};

static const struct yfield top_fields[] = {
	{"models", YT_MAP, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

/* A model id or alias: printable ASCII without blanks, quotes or
 * backslashes, 1..PRICING_NAME_MAX bytes. */
static bool name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > PRICING_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\')
			return false;
	}
	return true;
}

static int bad_name(const struct ydoc *doc, const struct ynode *n, const char *what,
		    struct diag *reterr)
{
	char q[YAML_QUOTE_SIZE];

	yaml_diag(doc, n, reterr,
		  "invalid %s '%s' (printable ASCII without blanks or quotes, at most %d bytes)",
		  what,
		  n->kind == YNODE_SCALAR ? yaml_quote_bytes(q, sizeof(q), n->str, n->len) : "",
		  PRICING_NAME_MAX);
	return -EINVAL;
}

/* YYYY-MM-DD with a month 01..12 and a day 01..31. */
static bool date_ok(const char *s)
{
	int i;

	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return false;
	for (i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
			return false;
	i = (s[5] - '0') * 10 + (s[6] - '0');
	if (i < 1 || i > 12)
		return false;
	i = (s[8] - '0') * 10 + (s[9] - '0');
	return i >= 1 && i <= 31;
}

static int price(const struct ydoc *doc, const struct ynode *row, const char *model,
		 const char *key, double *ret, struct diag *reterr)
{
	const struct ynode *v = ynode_get(row, key);
	char path[PRICING_NAME_MAX + 64];

	if (!v)
		return 0;
	(void)snprintf(path, sizeof(path), "models.%s.%s", model, key);
	return yaml_value_number(doc, v, path, 0, false, PRICING_PRICE_MAX, ret, reterr);
}

/* name (a model or alias) already taken in this file by rows[0..n) or the
 * row being parsed (its model, its aliases before index k). */
static const char *taken(struct pricing_row *const *rows, size_t n, const char *model,
			 const char **aliases, size_t k, const char *name)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (strcasecmp(rows[i]->model, name) == 0)
			return rows[i]->model;
		for (j = 0; rows[i]->aliases[j]; j++)
			if (strcasecmp(rows[i]->aliases[j], name) == 0)
				return rows[i]->model;
	}
	if (model && strcasecmp(model, name) == 0)
		return model;
	for (j = 0; j < k; j++)
		if (strcasecmp(aliases[j], name) == 0)
			return model;
	return NULL;
}

static int parse_row(const struct ydoc *doc, const struct ynode *key, const struct ynode *val,
		     bool check, struct arena *arena, const char *file, unsigned layer,
		     struct pricing_row *const *done, size_t n_done, struct pricing_row **ret,
		     struct diag *reterr)
{
	struct pricing_row *p = arena_alloc(arena, sizeof(*p));
	char what[PRICING_NAME_MAX + 32];
	const char *date = NULL, *source = NULL, *other;
	const char **aliases = NULL;
	size_t n_aliases = 0, i;
	const struct ynode *an;
	int r;

	if (!name_ok(key->str, key->len))
		return bad_name(doc, key, "model name", reterr);
	other = taken(done, n_done, NULL, NULL, 0, key->str);
	if (other) {
		yaml_diag(doc, key, reterr, "model '%s' is already an alias of '%s' in this file",
			  key->str, other);
		return -EINVAL;
	}
	if (check) {
		(void)snprintf(what, sizeof(what), "prices of '%s'", key->str);
		r = yaml_check_map(doc, val, row_fields, what, reterr);
		if (r < 0)
			return r;
	}
	p->cache_read = -1;
	p->cache_write = -1;
	r = price(doc, val, key->str, "input", &p->input, reterr);
	if (r >= 0)
		r = price(doc, val, key->str, "output", &p->output, reterr);
	if (r >= 0)
		r = price(doc, val, key->str, "cache_read", &p->cache_read, reterr);
	if (r >= 0)
		r = price(doc, val, key->str, "cache_write", &p->cache_write, reterr);
	if (r >= 0)
		r = yaml_get_str(doc, val, "date", &date, reterr);
	if (r >= 0)
		r = yaml_get_str(doc, val, "source", &source, reterr);
	if (r >= 0)
		r = yaml_get_strlist(doc, val, "aliases", &aliases, &n_aliases, reterr);
	if (r < 0)
		return r;
	if (!date || !source) { /* required: only an unchecked tree gets here */
		yaml_diag(doc, val, reterr, "%s: missing 'date' or 'source'", key->str);
		return -EINVAL;
	}
	if (!date_ok(date)) {
		yaml_diag(doc, ynode_get(val, "date"), reterr,
			  "'date': expected the day the prices were taken as YYYY-MM-DD");
		return -EINVAL;
	}
	if (!source[0] || strspn(source, " \t") == strlen(source)) {
		yaml_diag(doc, ynode_get(val, "source"), reterr, "'source' must not be empty");
		return -EINVAL;
	}
	an = ynode_get(val, "aliases");
	if (n_aliases > PRICING_ALIAS_MAX) {
		yaml_diag(doc, an, reterr, "'aliases': at most %d per model", PRICING_ALIAS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n_aliases; i++) {
		const struct ynode *a = an->items[i];

		if (!name_ok(a->str, a->len))
			return bad_name(doc, a, "alias", reterr);
		other = taken(done, n_done, key->str, aliases, i, a->str);
		if (other) {
			yaml_diag(doc, a, reterr, "alias '%s' already names '%s' in this file",
				  a->str, other);
			return -EINVAL;
		}
	}
	p->model = arena_strdup(arena, key->str);
	if (n_aliases) {
		const char **v = arena_alloc(arena, st_mult(n_aliases + 1, sizeof(*v)));

		for (i = 0; i < n_aliases; i++)
			v[i] = arena_strdup(arena, aliases[i]);
		v[n_aliases] = NULL;
		p->aliases = v;
	} else {
		p->aliases = no_aliases;
	}
	p->date = arena_strdup(arena, date);
	p->source = arena_strdup(arena, source);
	p->file = file;
	p->line = key->line;
	p->col = key->col;
	p->layer = layer;
	*ret = p;
	return 0;
}

/* check: the fields against the schema, false for the embedded table
 * (pricing_parse_embedded()). */
static int parse(const struct ydoc *doc, bool check, struct arena *arena, const char *file,
		 unsigned layer, struct pricing_row ***ret, size_t *ret_n, struct diag *reterr)
{
	struct pricing_row **rows = NULL;
	const struct ynode *models;
	size_t i, n = 0;
	int r;

	r = check ? yaml_check_map(doc, doc->root, top_fields, "pricing table", reterr) : 0;
	if (r < 0)
		return r;
	models = ynode_get(doc->root, "models");
	if (!models || models->kind != YNODE_MAP) { /* unchecked: a broken build */
		yaml_diag(doc, doc->root, reterr, "missing the 'models' mapping");
		return -EINVAL;
	}
	for (i = 0; i < models->n; i++) {
		struct pricing_row *p = NULL;

		r = parse_row(doc, models->keys[i], models->items[i], check, arena, file, layer,
			      rows, n, &p, reterr);
		if (r < 0) {
			free(rows);
			return r;
		}
		rows = xrealloc(rows, st_mult(n + 1, sizeof(*rows)));
		rows[n++] = p;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}

int pricing_parse(const struct ydoc *doc, struct arena *arena, const char *file, unsigned layer,
		  struct pricing_row ***ret, size_t *ret_n, struct diag *reterr)
{
	return parse(doc, true, arena, file, layer, ret, ret_n, reterr);
}

int pricing_parse_embedded(const struct ydoc *doc, struct arena *arena, const char *file,
			   unsigned layer, struct pricing_row ***ret, size_t *ret_n,
			   struct diag *reterr)
{
	return parse(doc, false, arena, file, layer, ret, ret_n, reterr);
}

static bool row_names(const struct pricing_row *p, const char *name, size_t len)
{
	size_t j;

	if (strlen(p->model) == len && strncasecmp(p->model, name, len) == 0)
		return true;
	for (j = 0; p->aliases[j]; j++)
		if (strlen(p->aliases[j]) == len && strncasecmp(p->aliases[j], name, len) == 0)
			return true;
	return false;
}

/* The row of the highest layer that names name[0..len). */
static const struct pricing_row *find_exact(const struct pricing_row *const *rows, size_t n,
					    const char *name, size_t len)
{
	const struct pricing_row *best = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (row_names(rows[i], name, len) && (!best || rows[i]->layer > best->layer))
			best = rows[i];
	return best;
}

const struct pricing_row *pricing_find(const struct pricing_row *const *rows, size_t n,
				       const char *model)
{
	const struct pricing_row *p;
	const char *slash;

	if (!model || !model[0])
		return NULL;
	p = find_exact(rows, n, model, strlen(model));
	if (p)
		return p;
	slash = strrchr(model, '/');
	if (slash && slash[1])
		return find_exact(rows, n, slash + 1, strlen(slash + 1));
	return NULL;
}

void pricing_usage_from(enum dialect d, int64_t input, int64_t output, int64_t cached,
			struct pricing_usage *ret)
{
	ret->input = input;
	ret->output = output;
	ret->cache_read = cached;
	ret->cache_write = -1;
	if ((d == DIALECT_CODEX || d == DIALECT_GEMINI) && input >= 0 && cached > 0)
		ret->input = cached > input ? 0 : input - cached;
}

static double tokens(int64_t n)
{
	return n > 0 ? (double)n : 0.0;
}

int pricing_cost(const struct pricing_row *row, const struct pricing_usage *u, double *ret)
{
	double c;

	if (!row || (u->input < 0 && u->output < 0 && u->cache_read < 0 && u->cache_write < 0))
		return -ENODATA;
	c = tokens(u->input) * row->input + tokens(u->output) * row->output +
	    tokens(u->cache_read) * (row->cache_read >= 0 ? row->cache_read : row->input) +
	    tokens(u->cache_write) * (row->cache_write >= 0 ? row->cache_write : row->input);
	*ret = c / 1e6;
	return 0;
}
