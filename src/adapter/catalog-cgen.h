/* The embedded catalogue written out as C (scripts/catalog-static.c): a
 * loaded profile as the initialiser of a static struct profile that the
 * binary uses without parsing (catalog_static_profiles[] in
 * adapter/catalog.h), and the tables the same way
 * (catalog_static_tables).
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
 * the size of each struct (LP64) fails the build until catalog-cgen.c is
 * updated, and test-catalog-static.c compares every static profile with the
 * same one parsed through the checking path, via this writer and field by
 * field. */
#ifndef BERNSTEIN_ADAPTER_CATALOG_CGEN_H
#define BERNSTEIN_ADAPTER_CATALOG_CGEN_H

#include "util/sbuf.h"

struct catalog;
struct profile;

/* Append to out (IDENT at most 80 bytes):
 *   static const char IDENT_source[] = "...";
 *   static const struct profile IDENT = { ... };
 * 0, or -ENOBUFS when out's cap is hit. */
int catalog_cgen_profile(const struct profile *p, const char *ident, struct sbuf *out);

/* Append the tables of cat's layer 0 (the embedded one) but the profiles
 * and the prices: the strategy matrix's rows, registry.yaml's entries,
 * multimodal.yaml's, use-cases.yaml's and roles.yaml's rows, in the
 * catalogue's order, each table an array of static structs, then
 *   const struct catalog_static_tables catalog_static_tables = { ... };
 * (adapter/catalog.h). 0, or -ENOBUFS. */
int catalog_cgen_tables(const struct catalog *cat, struct sbuf *out);

#endif
