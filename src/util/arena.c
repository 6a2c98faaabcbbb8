#include "util/arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

struct arena_block {
	struct arena_block *next;
	size_t size, used;
	alignas(max_align_t) unsigned char data[];
};

void arena_init(struct arena *a, size_t block_size)
{
	a->head = NULL;
	a->block_size = block_size;
	a->total = 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
	const size_t align = alignof(max_align_t);
	struct arena_block *b = a->head;
	size_t need = st_add(n, align - 1) & ~(align - 1);
	void *p;

	if (!need)
		need = align;
	if (!b || b->size - b->used < need) {
		size_t bs = a->block_size ? a->block_size : 16384;

		if (need > bs)
			bs = need;
		b = xmalloc(st_add(sizeof(*b), bs));
		b->size = bs;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	p = b->data + b->used;
	b->used += need;
	a->total += need;
	memset(p, 0, need);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = arena_alloc(a, st_add(len, 1));

	memcpy(p, s, len);
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

void *arena_memdup(struct arena *a, const void *p, size_t n)
{
	void *d = arena_alloc(a, n);

	if (n)
		memcpy(d, p, n);
	return d;
}

void arena_release(struct arena *a)
{
	struct arena_block *b = a->head;

	while (b) {
		struct arena_block *next = b->next;

		free(b);
		b = next;
	}
	a->head = NULL;
	a->total = 0;
}
