/* YAML documents compiled at build time: the tree util/yaml.c would make of
 * a file, stored without pointers (so the data needs no relocation at
 * start-up and stays in read-only pages), and turned back into a struct
 * ydoc by one linear pass, without libyaml.
 *
 * scripts/catalog-compile.c writes the arrays: every node of every file in
 * one array, each file's nodes contiguous, its root first; the children of
 * a collection are node indices in kids[]: a sequence's n items at kids[k],
 * a map's n values at kids[k] and its n keys right after them at
 * kids[k + n]; a scalar's bytes at pool[str] (len bytes and a NUL). */
#ifndef BERNSTEIN_UTIL_YCOMPILED_H
#define BERNSTEIN_UTIL_YCOMPILED_H

#include <stddef.h>
#include <stdint.h>

#include "util/yaml.h"

struct ycnode {
	uint32_t line, col;
	uint32_t str, len; /* YNODE_SCALAR */
	uint32_t kids, n;  /* YNODE_SEQ, YNODE_MAP */
	uint8_t kind;	   /* enum ynode_kind */
	uint8_t plain;
};

struct ycompiled {
	const struct ycnode *nodes;
	const uint32_t *kids;
	const char *pool;
	size_t n_nodes, n_kids, pool_len;
};

/* A document of nodes [first, first + count) of c, first its root; name for
 * diagnostics. The scalars point into c->pool (static data): the tree lives
 * in the document's arena, free it with ydoc_free(). -EINVAL when the range
 * or a child index is out of bounds (a broken build, never user input). */
int ydoc_from_compiled(const char *name, const struct ycompiled *c, size_t first, size_t count,
		       struct ydoc **ret);

#endif
