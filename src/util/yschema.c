/* The one schema checker for YAML documents (yschema.h). */
#include "util/yschema.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/banned.h"

/* ---- paths, quoting, descriptions ---- */

/* Appends s to buf[*o..size - 1), truncating like snprintf. */
static void path_put(char *buf, size_t size, size_t *o, const char *s)
{
	size_t n = strlen(s);

	if (*o + n >= size)
		n = size - 1 - *o;
	memcpy(buf + *o, s, n);
	*o += n;
}

/* Called for every field of every checked map (profiles at every start-up):
 * plain copies, not snprintf. */
const char *yaml_path_key(char *buf, size_t size, const char *path, const char *key)
{
	size_t o = 0;

	if (size == 0)
		return buf;
	path_put(buf, size, &o, path);
	if (path[0])
		path_put(buf, size, &o, ".");
	path_put(buf, size, &o, key);
	buf[o] = '\0';
	return buf;
}

/* Called for every item of every checked list (profiles at every
 * start-up): plain copies, not snprintf, cut like snprintf. */
const char *yaml_path_index(char *buf, size_t size, const char *path, size_t i)
{
	char num[3 * sizeof(size_t) + 3], *d = num + sizeof(num);
	size_t o = 0;

	if (size == 0)
		return buf;
	*--d = '\0';
	*--d = ']';
	do {
		*--d = (char)('0' + i % 10);
		i /= 10;
	} while (i);
	*--d = '[';
	path_put(buf, size, &o, path);
	path_put(buf, size, &o, d);
	buf[o] = '\0';
	return buf;
}

const char *yaml_quote(char *buf, size_t size, const char *s)
{
	size_t i, o = 0;

	if (size < 8)
		BUG("quote buffer too small");
	for (i = 0; s[i] && o + 4 < size; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i >= 64) {
			buf[o++] = '.';
			buf[o++] = '.';
			buf[o++] = '.';
			break;
		}
		buf[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	buf[o] = '\0';
	return buf;
}

#define Q(buf, s) yaml_quote(buf, sizeof(buf), s)

bool yaml_looks_number(const struct ynode *n)
{
	const char *s;
	size_t digits = 0;

	if (!n || n->kind != YNODE_SCALAR || !n->plain || n->len == 0)
		return false;
	s = n->str;
	if (*s == '-' || *s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits++;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits++;
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

const char *yaml_describe(const struct ynode *n)
{
	if (yaml_looks_number(n) && ynode_int(n, &(int64_t){0}) != 0)
		return "a number";
	return ynode_describe(n);
}

bool yaml_is_str(const struct ynode *n)
{
	return n && n->kind == YNODE_SCALAR && !ynode_is_null(n);
}

const char *ytype_name(enum ytype t)
{
	switch (t) {
	case YT_ANY:
		return "any value";
	case YT_STR:
		return "a string";
	case YT_BOOL:
		return "a boolean";
	case YT_INT:
		return "an integer";
	case YT_SEQ:
		return "a sequence";
	case YT_MAP:
		return "a mapping";
	case YT_STRLIST:
		return "a list of strings";
	case _YTYPE_MAX:
	default:
		return "an unknown type";
	}
}

/* "a, b, c" into list (cut with "..." when it does not fit); YF_IGNORED
 * keys are not listed. */
static void field_list(char *list, size_t size, const struct yfield *fields)
{
	const struct yfield *g;
	size_t o = 0;

	list[0] = '\0';
	for (g = fields; g->key; g++) {
		int w;

		if (g->flags & YF_IGNORED)
			continue;
		w = snprintf(list + o, size - o, "%s%s", o ? ", " : "", g->key);
		if (w < 0 || (size_t)w >= size - o) {
			(void)snprintf(list + size - 5, 5, "...");
			break;
		}
		o += (size_t)w;
	}
}

/* ---- problems ---- */

void ycheck_add(struct ycheck *c, const struct diag *d)
{
	if (c->first && c->found == 0)
		*c->first = *d;
	diag_list_add(c->list, d);
	c->found++;
}

void ycheck_vproblem(struct ycheck *c, const struct ynode *at, const char *path, const char *fmt,
		     va_list ap)
{
	char msg[sizeof(((struct diag *)NULL)->msg)];
	struct diag d;

	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	diag_clear(&d);
	(void)yaml_field_err(c->doc, at, &d, path, "%s", msg);
	ycheck_add(c, &d);
}

int ycheck_problem(struct ycheck *c, const struct ynode *at, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ycheck_vproblem(c, at, path, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int yaml_field_err(const struct ydoc *doc, const struct ynode *n, struct diag *reterr,
		   const char *path, const char *fmt, ...)
{
	char msg[sizeof(((struct diag *)NULL)->msg)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (path && path[0])
		yaml_diag(doc, n, reterr, "field '%s': %s", path, msg);
	else
		yaml_diag(doc, n, reterr, "%s", msg);
	return -EINVAL;
}

/* ---- the checker ---- */

/* A value of the wrong type; key names it in YCHECK_IN, path in YCHECK_FIELD. */
static int wrong_type(struct ycheck *c, const struct ynode *v, const char *key, const char *path,
		      const char *expected)
{
	if (c->style == YCHECK_FIELD)
		return ycheck_problem(c, v, path, "expected %s, got %s", expected,
				      yaml_describe(v));
	return ycheck_problem(c, v, NULL, "'%s': expected %s, got %s", key, expected,
			      yaml_describe(v));
}

static int check_strlist(struct ycheck *c, const struct ynode *seq, const char *key,
			 const char *path)
{
	char ip[YAML_PATH_MAX];
	size_t i;
	int r = 0;

	for (i = 0; i < seq->n; i++) {
		const struct ynode *it = seq->items[i];

		if (yaml_is_str(it))
			continue;
		if (c->style == YCHECK_FIELD)
			r = ycheck_problem(c, it, yaml_path_index(ip, sizeof(ip), path, i),
					   "expected a string, got %s", yaml_describe(it));
		else
			r = ycheck_problem(c, it, NULL, "'%s' item %zu: expected a string, got %s",
					   key, i + 1, yaml_describe(it));
	}
	return r;
}

static int check_int(struct ycheck *c, const struct ynode *v, const char *key, const char *path)
{
	char q[YAML_QUOTE_SIZE];
	int64_t iv;
	int r = ynode_int(v, &iv);

	if (r == 0)
		return 0;
	if (r != -ERANGE)
		return wrong_type(c, v, key, path, ytype_name(YT_INT));
	if (c->style == YCHECK_FIELD)
		return ycheck_problem(c, v, path, "integer out of range");
	return ycheck_problem(c, v, NULL, "'%s': integer out of range ('%s')", key,
			      yaml_quote_bytes(q, sizeof(q), v->str, v->len));
}

/* value v of field f: does it have f's type? Reports if not. */
static int check_type(struct ycheck *c, const struct ynode *v, const struct yfield *f,
		      const char *path)
{
	bool ok, b;

	switch (f->type) {
	case YT_ANY:
		return 0;
	case YT_STR:
		ok = yaml_is_str(v);
		break;
	case YT_BOOL:
		ok = ynode_bool(v, &b) == 0;
		break;
	case YT_INT:
		return check_int(c, v, f->key, path);
	case YT_SEQ:
		ok = v->kind == YNODE_SEQ;
		break;
	case YT_MAP:
		ok = v->kind == YNODE_MAP;
		break;
	case YT_STRLIST:
		if (v->kind == YNODE_SEQ)
			return check_strlist(c, v, f->key, path);
		ok = false;
		break;
	case _YTYPE_MAX:
	default:
		BUG("bad ytype %d", (int)f->type);
	}
	return ok ? 0 : wrong_type(c, v, f->key, path, ytype_name(f->type));
}

static const struct yfield *field_find(const struct yfield *fields, const struct ynode *k)
{
	const struct yfield *f;

	for (f = fields; f->key; f++)
		if (strlen(f->key) == k->len && memcmp(f->key, k->str, k->len) == 0)
			return f;
	return NULL;
}

static void unknown_key(struct ycheck *c, const struct ynode *k, const struct yfield *fields,
			const char *path)
{
	char q[YAML_QUOTE_SIZE], kp[YAML_PATH_MAX], list[400];

	field_list(list, sizeof(list), fields);
	if (c->style == YCHECK_FIELD) {
		char qk[80];

		(void)ycheck_problem(c, k, yaml_path_key(kp, sizeof(kp), path, Q(qk, k->str)),
				     "unknown key (expected one of: %s)", list);
		return;
	}
	(void)ycheck_problem(c, k, NULL, "unknown key '%s' in %s (expected one of: %s)",
			     yaml_quote_bytes(q, sizeof(q), k->str, k->len), path, list);
}

/* One present field: its type, then its nested table and its checker. */
static void check_field(struct ycheck *c, const struct ynode *v, const struct yfield *f,
			const char *path)
{
	char kp[YAML_PATH_MAX];

	yaml_path_key(kp, sizeof(kp), path, f->key);
	if (f->flags & YF_IGNORED)
		return;
	if (check_type(c, v, f, kp) < 0)
		return;
	if (f->sub && v->kind == YNODE_MAP && yaml_check(c, v, f->sub, kp) < 0)
		return;
	if (f->check) {
		size_t before = c->found;

		if (f->check(c, v, kp) < 0 && c->found == before)
			BUG("checker of '%s' failed without reporting", f->key);
	}
}

int yaml_check(struct ycheck *c, const struct ynode *node, const struct yfield *fields,
	       const char *path)
{
	const struct yfield *f;
	size_t i, before = c->found;

	if (!node || node->kind != YNODE_MAP) {
		if (c->style == YCHECK_FIELD)
			return ycheck_problem(c, node, path, "expected a mapping, got %s",
					      yaml_describe(node));
		return ycheck_problem(c, node, NULL, "%s: expected a mapping, got %s", path,
				      yaml_describe(node));
	}
	for (i = 0; i < node->n; i++) {
		f = field_find(fields, node->keys[i]);
		if (!f)
			unknown_key(c, node->keys[i], fields, path);
		else
			check_field(c, node->items[i], f, path);
	}
	for (f = fields; f->key; f++) {
		char kp[YAML_PATH_MAX];

		if (!(f->flags & YF_REQUIRED) || ynode_get(node, f->key))
			continue;
		if (c->style == YCHECK_FIELD)
			(void)ycheck_problem(c, node, yaml_path_key(kp, sizeof(kp), path, f->key),
					     "missing (required)");
		else
			(void)ycheck_problem(c, node, NULL, "%s: missing required key '%s'", path,
					     f->key);
	}
	return c->found == before ? 0 : -EINVAL;
}

#define YCHECK_KEYS_MAX 64

int yaml_check_keys(struct ycheck *c, const struct ynode *map, const char *const *keys,
		    const char *const *ignored, const char *what)
{
	struct yfield fields[YCHECK_KEYS_MAX + 1];
	size_t n = 0, i;

	for (i = 0; keys[i]; i++, n++) {
		if (n >= YCHECK_KEYS_MAX)
			BUG("too many keys for yaml_check_keys");
		fields[n] = (struct yfield){.key = keys[i], .type = YT_ANY};
	}
	for (i = 0; ignored && ignored[i]; i++, n++) {
		if (n >= YCHECK_KEYS_MAX)
			BUG("too many keys for yaml_check_keys");
		fields[n] = (struct yfield){.key = ignored[i], .type = YT_ANY, .flags = YF_IGNORED};
	}
	fields[n] = (struct yfield){.key = NULL};
	return yaml_check(c, map, fields, what);
}

int yaml_check_map(const struct ydoc *doc, const struct ynode *node, const struct yfield *fields,
		   const char *what, struct diag *reterr)
{
	struct ycheck c = YCHECK_INIT(doc, YCHECK_IN, NULL, reterr);

	return yaml_check(&c, node, fields, what);
}

/* ---- maps of NAME -> entry ---- */

int yaml_named_map(const struct ydoc *doc, const struct ynode *n, const char *path,
		   const struct ynamed *spec, void *ctx, struct diag *reterr)
{
	char p[YAML_PATH_MAX], q[80];
	size_t i;
	int r;

	if (!n || n->kind != YNODE_MAP)
		return yaml_field_err(doc, n, reterr, path, "expected %s, got %s", spec->what,
				      yaml_describe(n));
	for (i = 0; i < n->n; i++) {
		const struct ynode *k = n->keys[i];

		yaml_path_key(p, sizeof(p), path, k->str);
		if (spec->name_ok && !spec->name_ok(k->str))
			return yaml_field_err(doc, k, reterr, p,
					      "invalid %s name '%s' (expected %s)", spec->kind,
					      Q(q, k->str), spec->expect);
		r = spec->entry(ctx, doc, i, k, n->items[i], p, reterr);
		if (r < 0)
			return r;
	}
	return (int)n->n;
}

/* ---- typed values ---- */

int yaml_value_str(const struct ydoc *doc, const struct ynode *n, const char *path, bool nullable,
		   const char **ret, struct diag *reterr)
{
	if (nullable && ynode_is_null(n)) {
		*ret = NULL;
		return 0;
	}
	if (!yaml_is_str(n))
		return yaml_field_err(doc, n, reterr, path, "expected a string%s, got %s",
				      nullable ? " or null" : "", yaml_describe(n));
	if (n->len == 0)
		return yaml_field_err(doc, n, reterr, path, "empty string");
	*ret = n->str;
	return 0;
}

/* "> 0", ">= 0 and <= 1" */
static void range_text(char *buf, size_t size, double min, bool min_open, double max)
{
	if (isinf(max))
		(void)snprintf(buf, size, "%s %g", min_open ? ">" : ">=", min);
	else
		(void)snprintf(buf, size, "%s %g and <= %g", min_open ? ">" : ">=", min, max);
}

int yaml_value_number(const struct ydoc *doc, const struct ynode *n, const char *path, double min,
		      bool min_open, double max, double *ret, struct diag *reterr)
{
	char range[96];
	char *end;
	double v;

	/* the range's text (%g) only for an error: it was a tenth of the
	 * instructions of a start-up that checks the catalogue's prices */
	if (!yaml_looks_number(n)) {
		range_text(range, sizeof(range), min, min_open, max);
		return yaml_field_err(doc, n, reterr, path, "expected a number %s, got %s", range,
				      yaml_describe(n));
	}
	errno = 0;
	v = strtod(n->str, &end);
	if (errno == ERANGE || *end || !isfinite(v))
		return yaml_field_err(doc, n, reterr, path, "number out of range");
	if (v < min || (min_open && v == min) || v > max) {
		range_text(range, sizeof(range), min, min_open, max);
		return yaml_field_err(doc, n, reterr, path,
				      "%s is out of range (expected a number %s)", n->str, range);
	}
	*ret = v;
	return 0;
}

int yaml_value_int(const struct ydoc *doc, const struct ynode *n, const char *path, int64_t min,
		   int64_t max, int64_t *ret, struct diag *reterr)
{
	int64_t v;
	int r = ynode_int(n, &v);

	if (r == -ERANGE)
		return yaml_field_err(doc, n, reterr, path, "integer out of range");
	if (r < 0)
		return yaml_field_err(doc, n, reterr, path, "expected an integer, got %s",
				      yaml_describe(n));
	if (v < min || v > max) {
		if (max == INT64_MAX)
			return yaml_field_err(
				doc, n, reterr, path,
				"%" PRId64 " is out of range (expected >= %" PRId64 ")", v, min);
		return yaml_field_err(doc, n, reterr, path,
				      "%" PRId64 " is out of range (%" PRId64 "..%" PRId64 ")", v,
				      min, max);
	}
	*ret = v;
	return 0;
}

int yaml_value_strlist(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, const char ***ret, size_t *ret_n, struct diag *reterr)
{
	char p[YAML_PATH_MAX];
	const char **v;
	size_t i;
	int r;

	if (!n || n->kind != YNODE_SEQ)
		return yaml_field_err(doc, n, reterr, path, "expected a list of strings, got %s",
				      yaml_describe(n));
	v = arena_alloc(a, st_mult(n->n + 1, sizeof(*v)));
	for (i = 0; i < n->n; i++) {
		r = yaml_value_str(doc, n->items[i], yaml_path_index(p, sizeof(p), path, i), false,
				   &v[i], reterr);
		if (r < 0)
			return r;
	}
	v[n->n] = NULL;
	*ret = v;
	*ret_n = n->n;
	return 0;
}

int yaml_value_enum(const struct ydoc *doc, const struct ynode *n, const char *path,
		    const char *const *values, int *ret, struct diag *reterr)
{
	char list[300], q[80];
	size_t o = 0;
	int i;

	if (!yaml_is_str(n))
		return yaml_field_err(doc, n, reterr, path, "expected a string, got %s",
				      yaml_describe(n));
	for (i = 0; values[i]; i++)
		if (strcmp(values[i], n->str) == 0) {
			*ret = i;
			return 0;
		}
	list[0] = '\0';
	for (i = 0; values[i]; i++) {
		int w = snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", values[i]);

		if (w < 0 || (size_t)w >= sizeof(list) - o)
			break;
		o += (size_t)w;
	}
	return yaml_field_err(doc, n, reterr, path, "unknown value '%s' (expected one of: %s)",
			      Q(q, n->str), list);
}

/* ---- typed getters by key (yaml.h), worded like YCHECK_IN ---- */

/* value v of key: does it have type t? The problem into reterr. */
static int get_checked(const struct ydoc *doc, const struct ynode *v, const char *key, enum ytype t,
		       struct diag *reterr)
{
	struct ycheck c = YCHECK_INIT(doc, YCHECK_IN, NULL, reterr);
	const struct yfield f = {.key = key, .type = t};

	return check_type(&c, v, &f, key);
}

int yaml_get_str(const struct ydoc *doc, const struct ynode *map, const char *key, const char **ret,
		 struct diag *reterr)
{
	const struct ynode *v = ynode_get(map, key);
	int r;

	if (!v)
		return 0;
	r = get_checked(doc, v, key, YT_STR, reterr);
	if (r < 0)
		return r;
	*ret = v->str;
	return 0;
}

int yaml_get_bool(const struct ydoc *doc, const struct ynode *map, const char *key, bool *ret,
		  struct diag *reterr)
{
	const struct ynode *v = ynode_get(map, key);
	bool b = false;
	int r;

	if (!v)
		return 0;
	r = get_checked(doc, v, key, YT_BOOL, reterr);
	if (r < 0)
		return r;
	(void)ynode_bool(v, &b);
	*ret = b;
	return 0;
}

int yaml_get_int(const struct ydoc *doc, const struct ynode *map, const char *key, int64_t min,
		 int64_t max, int64_t *ret, struct diag *reterr)
{
	const struct ynode *v = ynode_get(map, key);
	int64_t x = 0;
	int r;

	if (!v)
		return 0;
	r = get_checked(doc, v, key, YT_INT, reterr);
	if (r < 0)
		return r;
	(void)ynode_int(v, &x);
	if (x < min || x > max) {
		yaml_diag(doc, v, reterr,
			  "'%s': %" PRId64 " is out of range (%" PRId64 "..%" PRId64 ")", key, x,
			  min, max);
		return -EINVAL;
	}
	*ret = x;
	return 0;
}

int yaml_get_enum(const struct ydoc *doc, const struct ynode *map, const char *key,
		  const char *const *values, int *ret, struct diag *reterr)
{
	const struct ynode *v = ynode_get(map, key);
	char q[YAML_QUOTE_SIZE], list[400];
	size_t o = 0;
	int i, r;

	if (!v)
		return 0;
	r = get_checked(doc, v, key, YT_STR, reterr);
	if (r < 0)
		return r;
	for (i = 0; values[i]; i++)
		if (strlen(values[i]) == v->len && memcmp(values[i], v->str, v->len) == 0) {
			*ret = i;
			return 0;
		}
	list[0] = '\0';
	for (i = 0; values[i]; i++) {
		int w = snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", values[i]);

		if (w < 0 || (size_t)w >= sizeof(list) - o) {
			(void)snprintf(list + sizeof(list) - 5, 5, "...");
			break;
		}
		o += (size_t)w;
	}
	yaml_diag(doc, v, reterr, "'%s': unknown value '%s' (expected one of: %s)", key,
		  yaml_quote_bytes(q, sizeof(q), v->str, v->len), list);
	return -EINVAL;
}

int yaml_get_strlist(const struct ydoc *doc, const struct ynode *map, const char *key,
		     const char ***ret, size_t *ret_n, struct diag *reterr)
{
	const struct ynode *v = ynode_get(map, key);
	const char **arr;
	size_t i;
	int r;

	if (!v)
		return 0;
	r = get_checked(doc, v, key, YT_STRLIST, reterr);
	if (r < 0)
		return r;
	/* the doc is logically const; its arena is where the array lives */
	arr = arena_alloc((struct arena *)(uintptr_t)&doc->arena,
			  st_mult(st_add(v->n, 1), sizeof(*arr)));
	for (i = 0; i < v->n; i++)
		arr[i] = v->items[i]->str;
	arr[v->n] = NULL;
	*ret = arr;
	if (ret_n)
		*ret_n = v->n;
	return 0;
}
