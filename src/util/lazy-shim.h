/* The body of a shim file (lazy-LIB.c, see lazy.h), generated from one list
 * of the functions bernstein calls:
 *
 *   #define LIB_FNS(F, V, H) \
 *           F(int, lib_open, (const char *path, struct lib **ret), (path, ret)) \
 *           V(lib_close, (struct lib *l), (l)) \
 *           H(lib_printf)
 *   LAZY_SHIM(LAZY_LIB, LIB_FNS)
 *
 * F defines a function returning a value, V one returning void: each with
 * the parameter list of the library's header, which the compiler checks the
 * definition against (the header must be included first). H only reserves a
 * slot for a function the file defines by hand (a variadic one), calling
 * LAZY_FN(name). Every definition loads the library on its first call
 * (lazy_resolve(): all of the file's functions at once), then calls through
 * the table. The definitions are hidden: a shared library linked in beside
 * (libcurl calls libcrypto) binds to the real library, not to these. */
#ifndef BERNSTEIN_UTIL_LAZY_SHIM_H
#define BERNSTEIN_UTIL_LAZY_SHIM_H

#include <stdatomic.h>

#include "util/lazy.h"

#define LAZY_IDX_F(ret, name, params, args) LAZY_IDX_##name,
#define LAZY_IDX_V(name, params, args)	    LAZY_IDX_##name,
#define LAZY_IDX_H(name)		    LAZY_IDX_##name,
#define LAZY_STR_F(ret, name, params, args) #name,
#define LAZY_STR_V(name, params, args)	    #name,
#define LAZY_STR_H(name)		    #name,
#define LAZY_NONE_H(name)

/* The real function behind name, typed as the header declares it. */
#define LAZY_FN(name)                                                                              \
	(lazy_shim_need(), ((union {                                                               \
				   void *p;                                                        \
				   __typeof__(name) *f;                                            \
			   }){.p = lazy_shim_slots[LAZY_IDX_##name]})                              \
				   .f)

#define LAZY_DEF_F(ret, name, params, args)                                                        \
	__attribute__((visibility("hidden"))) ret name params                                      \
	{                                                                                          \
		return LAZY_FN(name) args;                                                         \
	}
#define LAZY_DEF_V(name, params, args)                                                             \
	__attribute__((visibility("hidden"))) void name params                                     \
	{                                                                                          \
		LAZY_FN(name) args;                                                                \
	}

#define LAZY_SHIM(ID, LIST)                                                                        \
	enum { LIST(LAZY_IDX_F, LAZY_IDX_V, LAZY_IDX_H) LAZY_SHIM_N };                             \
	static const char *const lazy_shim_names[LAZY_SHIM_N] = {                                  \
		LIST(LAZY_STR_F, LAZY_STR_V, LAZY_STR_H)};                                         \
	static void *lazy_shim_slots[LAZY_SHIM_N];                                                 \
	static atomic_int lazy_shim_ready;                                                         \
	static void lazy_shim_need(void)                                                           \
	{                                                                                          \
		if (atomic_load_explicit(&lazy_shim_ready, memory_order_acquire))                  \
			return;                                                                    \
		lazy_resolve(ID, lazy_shim_names, lazy_shim_slots, LAZY_SHIM_N);                   \
		atomic_store_explicit(&lazy_shim_ready, 1, memory_order_release);                  \
	}                                                                                          \
	LIST(LAZY_DEF_F, LAZY_DEF_V, LAZY_NONE_H)

#endif
