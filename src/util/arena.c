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

/* The default blocks grow from one page to four (each malloc'd chunk, its
 * header included, a whole number of pages): most arenas (a profile, a
 * small document) need less than a page, and a 16 KiB block made malloc
 * touch a second page at its end for the next chunk's header, 80 page
 * faults of a start-up that loads the catalogue's 45 profiles. */
static size_t default_block(const struct arena_block *prev)
{
	const size_t overhead = sizeof(struct arena_block) + 2 * sizeof(size_t);
	size_t chunk = 4096;

	if (prev && prev->size + overhead >= 4096)
		chunk = prev->size + overhead >= 8192 ? 16384 : 8192;
	return chunk - overhead;
}

void *arena_alloc_raw(struct arena *a, size_t n)
{
	const size_t align = alignof(max_align_t);
	struct arena_block *b = a->head;
	size_t need = st_add(n, align - 1) & ~(align - 1);
	void *p;

	if (!need)
		need = align;
	if (!b || b->size - b->used < need) {
		size_t bs = a->block_size ? a->block_size : default_block(b);

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
	return p;
}

void *arena_alloc(struct arena *a, size_t n)
{
	void *p = arena_alloc_raw(a, n);

	/* arena_alloc(a, 0) hands out (and zeroes) one alignment unit */
	memset(p, 0, n ? n : alignof(max_align_t));
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = arena_alloc_raw(a, st_add(len, 1));

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = arena_alloc_raw(a, n);

	memcpy(p, s, n);
	return p;
}

void *arena_memdup(struct arena *a, const void *p, size_t n)
{
	void *d;

	if (!n)
		return arena_alloc(a, 0);
	d = arena_alloc_raw(a, n);
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
