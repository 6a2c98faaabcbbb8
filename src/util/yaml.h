/* Strict YAML loader over libyaml's event API.
 *
 * The whole document is read into a small tree (struct ynode) allocated in the
 * document's arena. Loading rejects, each with FILE:LINE:COL in the diag:
 *   - anchors and aliases (no "billion laughs"), merge keys, any explicit tag;
 *   - duplicate mapping keys, non-scalar mapping keys;
 *   - files larger than limits.max_bytes, nesting deeper than limits.max_depth,
 *     more than limits.max_nodes nodes, NUL bytes, invalid UTF-8 (libyaml);
 *   - more than one document in the stream; an empty stream is an empty map.
 * Schema checks (unknown keys, missing keys, wrong types) are done afterwards
 * with util/yschema.h and the typed getters, which report the offending
 * node's position. Line and column are 1-based. */
#ifndef BERNSTEIN_UTIL_YAML_H
#define BERNSTEIN_UTIL_YAML_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/arena.h"
#include "util/diag.h"
#include "util/yschema.h"

enum ynode_kind {
	YNODE_SCALAR,
	YNODE_SEQ,
	YNODE_MAP,
	_YNODE_KIND_MAX,
};

struct ynode {
	enum ynode_kind kind;
	unsigned line, col; /* 1-based start mark */
	/* YNODE_SCALAR: the bytes (NUL-terminated, may not contain NUL) */
	const char *str;
	size_t len;
	bool plain; /* plain (unquoted) scalar: subject to null/bool/int resolution */
	/* YNODE_SEQ: items[0..n); YNODE_MAP: keys[i] -> items[i], in document order */
	struct ynode **items;
	struct ynode **keys;
	size_t n;
};

struct yaml_limits {
	size_t max_bytes;   /* 0 = YAML_DEFAULT_MAX_BYTES */
	unsigned max_depth; /* 0 = YAML_DEFAULT_MAX_DEPTH */
	size_t max_nodes;   /* 0 = YAML_DEFAULT_MAX_NODES */
};

#define YAML_DEFAULT_MAX_BYTES (1024 * 1024)
#define YAML_DEFAULT_MAX_DEPTH 32
#define YAML_DEFAULT_MAX_NODES 100000

struct ydoc {
	struct arena arena;
	struct ynode *root;  /* never NULL after a successful load */
	char name[PATH_MAX]; /* the file name used in diagnostics */
};

/* lim may be NULL for the defaults. Errors: -EFBIG (too large), -EINVAL
 * (syntax, alias, duplicate key, depth...), -errno (I/O). */
int yaml_load_file(const char *path, const struct yaml_limits *lim, struct ydoc **ret,
		   struct diag *reterr);
/* name is used only in diagnostics. */
int yaml_load_buf(const char *name, const char *buf, size_t len, const struct yaml_limits *lim,
		  struct ydoc **ret, struct diag *reterr);
struct ydoc *ydoc_free(struct ydoc *doc);

/* ---- schema: util/yschema.h (enum ytype, struct yfield, yaml_check_map) ---- */

/* Lookup in a map; NULL when absent or when map is not a map. Inline so
 * that the length of a literal key is known at compile time (a profile
 * looks up 80 keys, at every start). */
const struct ynode *ynode_getn(const struct ynode *map, const char *key, size_t len);
static inline const struct ynode *ynode_get(const struct ynode *map, const char *key)
{
	return key ? ynode_getn(map, key, strlen(key)) : NULL;
}
/* "a mapping", "a sequence", "a string", "null", "a boolean", "an integer" */
const char *ynode_describe(const struct ynode *node);
bool ynode_is_null(const struct ynode *node);
/* Scalar resolution without a diag: 0 and *ret set, -EINVAL when node is not
 * a plain true/false (resp. plain [-+]?[0-9]+), -ERANGE when the integer does
 * not fit in int64_t. *ret is written only on success. */
int ynode_bool(const struct ynode *node, bool *ret);
int ynode_int(const struct ynode *node, int64_t *ret);

/* Typed getters. Absent key: return 0 and leave *ret untouched (so callers set
 * defaults first). Present with the wrong type: -EINVAL and a diag at the value.
 * The string pointers live in the doc's arena. */
int yaml_get_str(const struct ydoc *doc, const struct ynode *map, const char *key, const char **ret,
		 struct diag *reterr);
int yaml_get_bool(const struct ydoc *doc, const struct ynode *map, const char *key, bool *ret,
		  struct diag *reterr);
int yaml_get_int(const struct ydoc *doc, const struct ynode *map, const char *key, int64_t min,
		 int64_t max, int64_t *ret, struct diag *reterr);
/* Value must be one of values[] (NULL-terminated); *ret is its index. The
 * error lists the accepted values. */
int yaml_get_enum(const struct ydoc *doc, const struct ynode *map, const char *key,
		  const char *const *values, int *ret, struct diag *reterr);
/* A sequence of strings; *ret is a NULL-terminated array in the doc's arena
 * and *ret_n its length. */
int yaml_get_strlist(const struct ydoc *doc, const struct ynode *map, const char *key,
		     const char ***ret, size_t *ret_n, struct diag *reterr);

/* User bytes s[0..len) for a message: control bytes, quotes and backslashes
 * escaped, cut with "..." after 80 bytes (never inside a UTF-8 sequence).
 * size is at least 8; YAML_QUOTE_SIZE holds any result. */
#define YAML_QUOTE_SIZE (80 * 4 + 16)
const char *yaml_quote_bytes(char *out, size_t size, const char *s, size_t len);

/* Writers of YAML text (config show): s as a double-quoted scalar (JSON's
 * string syntax, a subset of YAML's; NULL: null), v as the shortest decimal
 * that reads back to it. 0, or sbuf's error. */
struct sbuf;
int yaml_emit_str(struct sbuf *out, const char *s);
int yaml_emit_num(struct sbuf *out, double v);

/* Set a diag at node's position in doc. */
void yaml_diag(const struct ydoc *doc, const struct ynode *node, struct diag *reterr,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
