#include "proc/sandbox.h"

#include <string.h>

static const char *const kind_names[_SANDBOX_KIND_MAX] = {
	[SANDBOX_KIND_NONE] = "none",
	[SANDBOX_KIND_LANDLOCK] = "landlock",
	[SANDBOX_KIND_BWRAP] = "bwrap",
	[SANDBOX_KIND_CONTAINER] = "container",
};

const char *sandbox_kind_to_string(enum sandbox_kind k)
{
	return k >= 0 && k < _SANDBOX_KIND_MAX ? kind_names[k] : NULL;
}

enum sandbox_kind sandbox_kind_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _SANDBOX_KIND_MAX; i++)
		if (strcmp(kind_names[i], s) == 0)
			return (enum sandbox_kind)i;
	return _SANDBOX_KIND_INVALID;
}
