/* The empty table of static profiles linked into the generator that writes
 * the real one (scripts/catalog-static.c; adapter/catalog.h). */
#include <stddef.h>

#include "adapter/catalog.h"

const struct profile *const catalog_static_profiles[] = {NULL};
