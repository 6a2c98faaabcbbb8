/* The empty static profiles and tables linked into the generator that
 * writes the real ones (scripts/catalog-static.c; adapter/catalog.h). */
#include <stddef.h>

#include "adapter/catalog.h"

const struct profile *const catalog_static_profiles[] = {NULL};
const struct catalog_static_tables catalog_static_tables = {NULL, 0,	NULL, 0,    NULL,
							    0,	  NULL, 0,    NULL, 0};
