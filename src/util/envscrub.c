#include "util/envscrub.h"

#include <string.h>

#include "util/xalloc.h"

char **envscrub_take(char *const *envp)
{
	size_t n = 0, bytes = 0, i;
	char **copy, *p;

	for (i = 0; envp && envp[i]; i++) {
		bytes = st_add(bytes, st_add(strlen(envp[i]), 1));
		n++;
	}
	copy = xmalloc(st_add(st_mult(n + 1, sizeof(*copy)), bytes));
	p = (char *)(copy + n + 1);
	for (i = 0; i < n; i++) {
		size_t len = strlen(envp[i]) + 1;

		memcpy(p, envp[i], len);
		copy[i] = p;
		p += len;
	}
	copy[n] = NULL;
	/* Only once everything is copied (an entry may point into another). */
	for (i = 0; i < n; i++)
		explicit_bzero(envp[i], strlen(envp[i]));
	return copy;
}
