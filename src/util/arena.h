/* Bump allocator for data that dies together (git mem-pool): a loaded profile,
 * a parsed YAML document, a task's plan. arena_release() frees everything. */
#ifndef BERNSTEIN_UTIL_ARENA_H
#define BERNSTEIN_UTIL_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;
	size_t block_size;
	size_t total; /* bytes handed out, for caps and tests */
};

#define ARENA_INIT                                                                                 \
	{                                                                                          \
		.head = NULL, .block_size = 0, .total = 0                                          \
	}

void arena_init(struct arena *a, size_t block_size);
/* Aligned for any type; never returns NULL (OOM aborts). Zeroed memory. */
void *arena_alloc(struct arena *a, size_t n);
/* The same, not zeroed: for memory the caller writes in full at once. */
void *arena_alloc_raw(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
void *arena_memdup(struct arena *a, const void *p, size_t n);
void arena_release(struct arena *a);

#endif
