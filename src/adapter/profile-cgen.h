/* A loaded profile written out as C: the initialiser of a static struct
 * profile that the binary uses without parsing (the embedded catalogue,
 * scripts/catalog-static.c, catalog_static_profiles[] in adapter/catalog.h).
 *
 * Every field of struct profile and of the structs it holds is written,
 * strings as escaped literals, arrays as file-scope compound literals
 * (NULL-terminated where the type says so: strv.v, map keys and values,
 * version_args), origins naming the profile's source as one array; the
 * arena stays empty and the hash and canonical bytes are precomputed, so
 * nothing writes to the static profile (profile_hash() finds its cache
 * full). The output is deterministic: the same profile gives the same bytes.
 *
 * A field added to these structs must be written here: a _Static_assert on
 * the size of each struct (LP64) fails the build until profile-cgen.c is
 * updated, and test-catalog-static.c compares every static profile with the
 * same one parsed through the checking path, via this writer and field by
 * field. */
#ifndef BERNSTEIN_ADAPTER_PROFILE_CGEN_H
#define BERNSTEIN_ADAPTER_PROFILE_CGEN_H

#include "util/sbuf.h"

struct profile;

/* Append to out:
 *   static const char IDENT_source[] = "...";
 *   static const struct profile IDENT = { ... };
 * 0, or -ENOBUFS when out's cap is hit. */
int profile_cgen(const struct profile *p, const char *ident, struct sbuf *out);

#endif
