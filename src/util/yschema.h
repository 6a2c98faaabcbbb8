/* The one schema checker for YAML documents (util/yaml.h loads them).
 *
 * A schema is a table of fields (key, type, required, an optional nested
 * table or checker callback) checked against a mapping node. Every problem
 * is reported: unknown keys, values of the wrong type, missing required
 * keys, each at its node with FILE:LINE:COL, onto a struct ycheck that keeps
 * the first problem (a loader that stops there) and/or appends every problem
 * to a diag_list (a validator that shows them all).
 *
 * Two wordings, chosen per check (the documents' messages are golden-tested
 * and users grep for them):
 *   YCHECK_IN    (catalogue, contracts, onboarding, bernstein.yaml, plans)
 *     FILE:L:C: unknown key 'argz' in profile (expected one of: a, b, c)
 *     FILE:L:C: profile: missing required key 'binary'
 *     FILE:L:C: 'max_parallel_workers': expected an integer, got a string
 *   YCHECK_FIELD (profiles: the dotted field path names the place)
 *     FILE:L:C: field 'invocation.argz': unknown key (expected one of: a, b)
 *     FILE:L:C: field 'invocation.binary': missing (required)
 *     FILE:L:C: field 'capabilities.max_parallel_workers': expected an integer, got a string
 *
 * The typed value getters (yaml_value_*) check one node named by its dotted
 * path and fill a diag worded "field 'PATH': MESSAGE" (yaml_field_err). */
#ifndef BERNSTEIN_UTIL_YSCHEMA_H
#define BERNSTEIN_UTIL_YSCHEMA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/diag.h"

struct ydoc;
struct ynode;
struct ycheck;

enum ytype {
	YT_ANY,
	YT_STR,	 /* any non-null scalar (plain or quoted) */
	YT_BOOL, /* plain true / false */
	YT_INT,	 /* plain decimal integer [-+]?[0-9]+ that fits in int64_t */
	YT_SEQ,
	YT_MAP,
	YT_STRLIST, /* sequence of YT_STR */
	_YTYPE_MAX,
};

/* "a string", "a list of strings"... */
const char *ytype_name(enum ytype t);

enum yfield_flags {
	YF_REQUIRED = 1 << 0,
	YF_IGNORED = 1 << 1, /* accepted, never checked, not listed as expected */
};

/* A checker for one field's value, called once its type is right. path is
 * the value's path (YCHECK_FIELD) or its key (YCHECK_IN). Reports through
 * ycheck_problem(); returns 0 or -EINVAL. */
typedef int yfield_check_fn(struct ycheck *c, const struct ynode *v, const char *path);

struct yfield {
	const char *key; /* NULL ends a table */
	enum ytype type;
	enum yfield_flags flags;
	const struct yfield *sub; /* YT_MAP: the value is checked against this table too */
	yfield_check_fn *check;	  /* then this (may be NULL) */
};

enum ycheck_style {
	YCHECK_IN,
	YCHECK_FIELD,
	_YCHECK_STYLE_MAX,
};

/* One checking pass over a document: where its problems go. */
struct ycheck {
	const struct ydoc *doc;
	enum ycheck_style style;
	struct diag_list *list; /* every problem appended (NULL: not kept) */
	struct diag *first;	/* the first problem (NULL: not kept) */
	size_t found;		/* problems found (list may drop some) */
};
#define YCHECK_INIT(doc_, style_, list_, first_)                                                   \
	{                                                                                          \
		.doc = (doc_), .style = (style_), .list = (list_), .first = (first_), .found = 0   \
	}

/* Record d: kept as the first problem if it is, appended to the list. */
void ycheck_add(struct ycheck *c, const struct diag *d);
/* A problem at node at (NULL: the document's start): "field 'PATH':
 * MESSAGE", or MESSAGE alone when path is NULL or empty. Returns -EINVAL. */
int ycheck_problem(struct ycheck *c, const struct ynode *at, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void ycheck_vproblem(struct ycheck *c, const struct ynode *at, const char *path, const char *fmt,
		     va_list ap) __attribute__((format(printf, 4, 0)));

/* Check node against fields[] (ended by a {NULL} entry). path names the
 * map: its dotted field path ("" for the document's root) in YCHECK_FIELD,
 * the word or path the messages use ("profile", "tasks[0]") in YCHECK_IN.
 * Every key and value in document order, then every missing required key;
 * nested tables and checkers for fields whose type is right. Returns 0, or
 * -EINVAL when it reported at least one problem. A node that is not a
 * mapping is one problem: "PATH: expected a mapping, got D" (YCHECK_IN),
 * "field 'PATH': expected a mapping, got D" (YCHECK_FIELD). */
int yaml_check(struct ycheck *c, const struct ynode *node, const struct yfield *fields,
	       const char *path);
/* yaml_check() with every value YT_ANY: keys[] the accepted keys (listed in
 * messages), ignored[] (may be NULL) accepted silently. Both NULL-ended. */
int yaml_check_keys(struct ycheck *c, const struct ynode *map, const char *const *keys,
		    const char *const *ignored, const char *what);

/* yaml_check() in YCHECK_IN wording, the first problem into reterr. */
int yaml_check_map(const struct ydoc *doc, const struct ynode *node, const struct yfield *fields,
		   const char *what, struct diag *reterr);

/* ---- maps of NAME -> entry ---- */

/* One entry of a named map: k its name (a scalar), v its value (any kind,
 * may be the null scalar), path "PATH.NAME". Fills the caller's i-th slot;
 * returns 0, or a negative errno with reterr filled. */
typedef int yaml_named_fn(void *ctx, const struct ydoc *doc, size_t i, const struct ynode *k,
			  const struct ynode *v, const char *path, struct diag *reterr);

/* A number macro as a string literal, for a spec's expect text. */
#define YAML_STRINGIFY_(x) #x
#define YAML_STRINGIFY(x)  YAML_STRINGIFY_(x)

/* What a named map is: mcp_servers, endpoints, modes, env, headers... */
struct ynamed {
	const char *what;		   /* "a mapping of adapters": "expected WHAT, got D" */
	bool (*name_ok)(const char *name); /* NULL: every name */
	const char *kind;   /* "adapter": "invalid KIND name 'N' (expected EXPECT)" */
	const char *expect; /* "[a-z][a-z0-9_]*, at most 64 bytes" */
	yaml_named_fn *entry;
};

/* Walk the mapping n named by path in document order: each name checked by
 * spec->name_ok (at the key), then spec->entry for it. The first problem
 * stops the walk, into reterr as "field 'PATH.NAME': MESSAGE" at its
 * FILE:LINE:COL. Duplicate names never reach here: the loader (yaml.h)
 * refuses a repeated key. Returns the number of entries, or -EINVAL (or the
 * callback's negative errno). */
int yaml_named_map(const struct ydoc *doc, const struct ynode *n, const char *path,
		   const struct ynamed *spec, void *ctx, struct diag *reterr);

/* ---- paths, quoting, descriptions ---- */

/* A field path: long enough for any path a message needs (a longer one is
 * cut, which only shortens the message). */
#define YAML_PATH_MAX 192

/* PATH.KEY ("KEY" when path is empty) and PATH[I] into buf. */
const char *yaml_path_key(char *buf, size_t size, const char *path, const char *key);
const char *yaml_path_index(char *buf, size_t size, const char *path, size_t i);
/* User text for a message: at most 64 bytes, then "...", control bytes as
 * '?'. size is at least 8. */
const char *yaml_quote(char *buf, size_t size, const char *s);
/* ynode_describe(), with "a number" for a plain non-integer number. */
const char *yaml_describe(const struct ynode *n);
/* A non-null scalar. */
bool yaml_is_str(const struct ynode *n);
/* A plain scalar spelling a decimal number ([-+]?digits[.digits][e[-+]digits]). */
bool yaml_looks_number(const struct ynode *n);

/* ---- typed values (node n named by path) ---- */

/* "field 'PATH': MESSAGE" (MESSAGE alone for an empty path) at node n (NULL:
 * the document's start). Returns -EINVAL. */
int yaml_field_err(const struct ydoc *doc, const struct ynode *n, struct diag *reterr,
		   const char *path, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A string value; with nullable, null gives *ret = NULL. Empty strings are
 * refused. */
int yaml_value_str(const struct ydoc *doc, const struct ynode *n, const char *path, bool nullable,
		   const char **ret, struct diag *reterr);
/* A plain decimal number in [min, max] (min excluded when min_open). */
int yaml_value_number(const struct ydoc *doc, const struct ynode *n, const char *path, double min,
		      bool min_open, double max, double *ret, struct diag *reterr);
/* A plain integer in [min, max]. */
int yaml_value_int(const struct ydoc *doc, const struct ynode *n, const char *path, int64_t min,
		   int64_t max, int64_t *ret, struct diag *reterr);
/* A sequence of non-empty strings into a NULL-terminated array in a. */
int yaml_value_strlist(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, const char ***ret, size_t *ret_n, struct diag *reterr);
/* A string, one of values[] (NULL-terminated); *ret is its index. The error
 * lists the accepted values. */
int yaml_value_enum(const struct ydoc *doc, const struct ynode *n, const char *path,
		    const char *const *values, int *ret, struct diag *reterr);

#endif
