#include "util/ycompiled.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"
#include "util/banned.h"

/* Children and pointer slots of nodes [first, first + count). */
static int count_slots(const struct ycompiled *c, size_t first, size_t count, size_t *ret)
{
	size_t i, slots = 0;

	for (i = first; i < first + count; i++) {
		const struct ycnode *cn = &c->nodes[i];
		size_t k = cn->kind == YNODE_MAP ? 2 * (size_t)cn->n : cn->n, j;

		if (cn->kind >= _YNODE_KIND_MAX)
			return -EINVAL;
		if (cn->kind == YNODE_SCALAR) {
			if ((size_t)cn->str + cn->len >= c->pool_len)
				return -EINVAL;
			continue;
		}
		if ((size_t)cn->kids + k > c->n_kids)
			return -EINVAL;
		for (j = 0; j < k; j++) {
			uint32_t kid = c->kids[cn->kids + j];

			if (kid <= i || kid >= first + count)
				return -EINVAL;
		}
		slots += k;
	}
	*ret = slots;
	return 0;
}

int ydoc_from_compiled(const char *name, const struct ycompiled *c, size_t first, size_t count,
		       struct ydoc **ret)
{
	struct ynode *v, **slot;
	struct ydoc *doc;
	size_t i, j, slots = 0;

	if (count == 0 || first > c->n_nodes || count > c->n_nodes - first ||
	    count_slots(c, first, count, &slots) < 0)
		return -EINVAL;
	/* not zeroed: the name is copied with its NUL, every field of every
	 * node and every slot is written below (a document of the catalogue
	 * is made at every start: zeroing the 4 KiB name cost more than the
	 * rest of the copy) */
	doc = xmalloc(sizeof(*doc));
	arena_init(&doc->arena, 0);
	j = strnlen(name, sizeof(doc->name) - 1);
	memcpy(doc->name, name, j);
	doc->name[j] = '\0';
	v = arena_alloc_raw(&doc->arena, st_mult(count, sizeof(*v)));
	slot = slots ? arena_alloc_raw(&doc->arena, st_mult(slots, sizeof(*slot))) : NULL;
	for (i = 0; i < count; i++) {
		const struct ycnode *cn = &c->nodes[first + i];
		struct ynode *n = &v[i];

		n->kind = (enum ynode_kind)cn->kind;
		n->line = cn->line;
		n->col = cn->col;
		if (n->kind == YNODE_SCALAR) {
			n->str = c->pool + cn->str;
			n->len = cn->len;
			n->plain = cn->plain != 0;
			n->items = n->keys = NULL;
			n->n = 0;
			continue;
		}
		n->str = NULL;
		n->len = 0;
		n->plain = false;
		n->items = n->keys = NULL;
		n->n = cn->n;
		if (!cn->n)
			continue;
		n->items = slot;
		for (j = 0; j < cn->n; j++)
			*slot++ = &v[c->kids[cn->kids + j] - first];
		if (n->kind != YNODE_MAP)
			continue;
		n->keys = slot;
		for (j = 0; j < cn->n; j++)
			*slot++ = &v[c->kids[cn->kids + cn->n + j] - first];
	}
	doc->root = v;
	*ret = doc;
	return 0;
}
