/* SQLite, loaded on first use (lazy.h): every function bernstein calls (its
 * tests and benchmarks included: sqlite3_close, sqlite3_errcode, sqlite3_free). */
#include <sqlite3.h>
#include <stdarg.h>

#include "util/lazy-shim.h"
#include "util/banned.h"

/* clang-format off */
#define SQLITE_FNS(F, V, H)                                                                        \
	F(int, sqlite3_bind_double, (sqlite3_stmt *s, int i, double v), (s, i, v))                 \
	F(int, sqlite3_bind_int64, (sqlite3_stmt *s, int i, sqlite3_int64 v), (s, i, v))           \
	F(int, sqlite3_bind_null, (sqlite3_stmt *s, int i), (s, i))                                \
	F(int, sqlite3_bind_text, (sqlite3_stmt *s, int i, const char *v, int n,                   \
				   void (*d)(void *)), (s, i, v, n, d))                            \
	F(int, sqlite3_busy_timeout, (sqlite3 *db, int ms), (db, ms))                              \
	F(int, sqlite3_changes, (sqlite3 *db), (db))                                               \
	F(int, sqlite3_clear_bindings, (sqlite3_stmt *s), (s))                                     \
	F(int, sqlite3_close, (sqlite3 *db), (db))                                                 \
	F(int, sqlite3_close_v2, (sqlite3 *db), (db))                                              \
	F(int, sqlite3_column_bytes, (sqlite3_stmt *s, int i), (s, i))                             \
	F(double, sqlite3_column_double, (sqlite3_stmt *s, int i), (s, i))                         \
	F(sqlite3_int64, sqlite3_column_int64, (sqlite3_stmt *s, int i), (s, i))                   \
	F(const unsigned char *, sqlite3_column_text, (sqlite3_stmt *s, int i), (s, i))            \
	F(int, sqlite3_column_type, (sqlite3_stmt *s, int i), (s, i))                              \
	H(sqlite3_db_config)                                                                       \
	F(int, sqlite3_errcode, (sqlite3 *db), (db))                                               \
	F(const char *, sqlite3_errmsg, (sqlite3 *db), (db))                                       \
	F(int, sqlite3_exec, (sqlite3 *db, const char *sql,                                        \
			      int (*cb)(void *, int, char **, char **), void *arg, char **err),    \
	  (db, sql, cb, arg, err))                                                                 \
	F(int, sqlite3_extended_result_codes, (sqlite3 *db, int on), (db, on))                     \
	F(int, sqlite3_finalize, (sqlite3_stmt *s), (s))                                           \
	V(sqlite3_free, (void *p), (p))                                                            \
	F(int, sqlite3_get_autocommit, (sqlite3 *db), (db))                                        \
	F(int, sqlite3_open_v2, (const char *file, sqlite3 **db, int flags, const char *vfs),      \
	  (file, db, flags, vfs))                                                                  \
	F(int, sqlite3_prepare_v2, (sqlite3 *db, const char *sql, int n, sqlite3_stmt **s,         \
				    const char **tail), (db, sql, n, s, tail))                     \
	F(int, sqlite3_prepare_v3, (sqlite3 *db, const char *sql, int n, unsigned int fl,          \
				    sqlite3_stmt **s, const char **tail),                          \
	  (db, sql, n, fl, s, tail))                                                               \
	F(int, sqlite3_reset, (sqlite3_stmt *s), (s))                                              \
	F(int, sqlite3_step, (sqlite3_stmt *s), (s))                                               \
	F(int, sqlite3_system_errno, (sqlite3 *db), (db))
/* clang-format on */

LAZY_SHIM(LAZY_SQLITE, SQLITE_FNS)

/* Variadic: the arguments each op takes (https://sqlite.org/c3ref/c_dbconfig_defensive.html),
 * passed on as they are. */
__attribute__((visibility("hidden"))) int sqlite3_db_config(sqlite3 *db, int op, ...)
{
	va_list ap;
	int r;

	va_start(ap, op);
	if (op == SQLITE_DBCONFIG_MAINDBNAME) {
		const char *name = va_arg(ap, const char *);

		r = LAZY_FN(sqlite3_db_config)(db, op, name);
	} else if (op == SQLITE_DBCONFIG_LOOKASIDE) {
		void *buf = va_arg(ap, void *);
		int size = va_arg(ap, int), n = va_arg(ap, int);

		r = LAZY_FN(sqlite3_db_config)(db, op, buf, size, n);
	} else { /* every other op: an int and an int * (may be NULL) */
		int v = va_arg(ap, int);
		int *ret = va_arg(ap, int *);

		r = LAZY_FN(sqlite3_db_config)(db, op, v, ret);
	}
	va_end(ap);
	return r;
}
