/* Shared libraries loaded on first use (bench/README.md, "Loaded on first
 * use"). A command that never calls into SQLite, libcrypto, libssl,
 * libvterm, libyaml or jansson does not pay for loading and relocating them
 * at start-up.
 *
 * How: in the default (dynamic) build these libraries are not in the
 * executable's DT_NEEDED. src/util/lazy-LIB.c defines every function of LIB
 * that bernstein calls, with the prototype of the library's own header (the
 * compiler checks each definition against it); the first call dlopen()s the
 * library by the soname meson read from it at configure time
 * (scripts/soname.py, config.h) and resolves all of the file's functions into
 * a table, later calls go through the table. A function called but not
 * wrapped is an undefined reference: the link fails, not a run. With
 * `-Dstatic_deps=true` SQLite and libcrypto are linked in and have no shim;
 * `-Dlazy_deps=false` links all four as before.
 *
 * Adding a library (libssl, say) is a lazy-LIB.c like lazy-crypto.c, an
 * enum lazy_id member, its row in lazy.c and its soname in meson.build.
 *
 * Failure: a library that cannot be loaded, or lacks one of the functions,
 * cannot be reported through the wrapped function (its signature is the
 * library's), so the shim calls the handler that cli/ installed
 * (lazy_set_fail_handler(): it prints the error and exits, docs/exit-codes.md
 * 127). Without a handler, or if it returns, the process aborts. A command
 * that must not stop half-way (one that starts agents) calls lazy_load()
 * first and gets an ordinary error. */
#ifndef BERNSTEIN_UTIL_LAZY_H
#define BERNSTEIN_UTIL_LAZY_H

struct diag;

enum lazy_id {
	LAZY_SQLITE,
	LAZY_CRYPTO,
	LAZY_VTERM,
	LAZY_YAML,
	LAZY_SSL,
	LAZY_JANSSON,
	_LAZY_ID_MAX,
};

/* what: "SQLite"; soname: "libsqlite3.so.0"; why: the loader's message. */
typedef void lazy_fail_fn(const char *what, const char *soname, const char *why);

/* Install the handler for a library that cannot be loaded when one of its
 * functions is first called. It should not return. */
void lazy_set_fail_handler(lazy_fail_fn *fn);

/* Load library id now (once; later calls are free). 0 when it is loaded or
 * linked in; -ELIBACC with reterr "cannot load SQLite (libsqlite3.so.0):
 * <the loader's message>" when it cannot be. Thread-safe. */
int lazy_load(enum lazy_id id, struct diag *reterr);
/* Every lazily loaded library: 0, or the first failure as lazy_load(). */
int lazy_load_all(struct diag *reterr);

/* For the shims (lazy-LIB.c): load library id and resolve names[0..n) into
 * slots[0..n), once; on failure call the handler, then abort(). Returns when
 * every slot is set. */
void lazy_resolve(enum lazy_id id, const char *const *names, void **slots, unsigned n);

#endif
