/* jansson, loaded on first use (lazy.h): every function bernstein, its
 * tests and its fuzzers call (`--version` and `help` need none of it). */
#include <stdarg.h>

#include <jansson.h>

#include "util/lazy-shim.h"
#include "util/banned.h"

/* clang-format off */
#define JANSSON_FNS(F, V, H) \
	F(json_t *, json_array, (void), ()) \
	F(int, json_array_append_new, (json_t *array, json_t *value), (array, value)) \
	F(int, json_array_clear, (json_t *array), (array)) \
	F(json_t *, json_array_get, (const json_t *array, size_t index), (array, index)) \
	F(int, json_array_insert_new, (json_t *array, size_t index, json_t *value), (array, index, value)) \
	F(size_t, json_array_size, (const json_t *array), (array)) \
	F(json_t *, json_copy, (json_t *value), (value)) \
	F(json_t *, json_deep_copy, (const json_t *value), (value)) \
	V(json_delete, (json_t *json), (json)) \
	F(char *, json_dumps, (const json_t *json, size_t flags), (json, flags)) \
	F(int, json_equal, (const json_t *value1, const json_t *value2), (value1, value2)) \
	F(json_t *, json_false, (void), ()) \
	V(json_get_alloc_funcs, (json_malloc_t *malloc_fn, json_free_t *free_fn), (malloc_fn, free_fn)) \
	F(json_t *, json_integer, (json_int_t value), (value)) \
	F(json_int_t, json_integer_value, (const json_t *integer), (integer)) \
	F(json_t *, json_load_file, (const char *path, size_t flags, json_error_t *error), (path, flags, error)) \
	F(json_t *, json_loadb, (const char *buffer, size_t buflen, size_t flags, json_error_t *error), (buffer, buflen, flags, error)) \
	F(json_t *, json_loads, (const char *input, size_t flags, json_error_t *error), (input, flags, error)) \
	F(json_t *, json_null, (void), ()) \
	F(double, json_number_value, (const json_t *json), (json)) \
	F(json_t *, json_object, (void), ()) \
	F(int, json_object_del, (json_t *object, const char *key), (object, key)) \
	F(json_t *, json_object_get, (const json_t *object, const char *key), (object, key)) \
	F(void *, json_object_iter, (json_t *object), (object)) \
	F(const char *, json_object_iter_key, (void *iter), (iter)) \
	F(size_t, json_object_iter_key_len, (void *iter), (iter)) \
	F(void *, json_object_iter_next, (json_t *object, void *iter), (object, iter)) \
	F(json_t *, json_object_iter_value, (void *iter), (iter)) \
	F(void *, json_object_key_to_iter, (const char *key), (key)) \
	F(int, json_object_set_new, (json_t *object, const char *key, json_t *value), (object, key, value)) \
	F(int, json_object_setn_new, (json_t *object, const char *key, size_t key_len, json_t *value), (object, key, key_len, value)) \
	F(int, json_object_setn_new_nocheck, (json_t *object, const char *key, size_t key_len, json_t *value), (object, key, key_len, value)) \
	F(size_t, json_object_size, (const json_t *object), (object)) \
	F(int, json_object_update, (json_t *object, json_t *other), (object, other)) \
	H(json_pack) \
	F(json_t *, json_real, (double value), (value)) \
	F(double, json_real_value, (const json_t *real), (real)) \
	F(json_t *, json_string, (const char *value), (value)) \
	F(size_t, json_string_length, (const json_t *string), (string)) \
	F(json_t *, json_string_nocheck, (const char *value), (value)) \
	F(int, json_string_setn, (json_t *string, const char *value, size_t len), (string, value, len)) \
	F(const char *, json_string_value, (const json_t *string), (string)) \
	F(json_t *, json_stringn, (const char *value, size_t len), (value, len)) \
	F(json_t *, json_stringn_nocheck, (const char *value, size_t len), (value, len)) \
	F(json_t *, json_true, (void), ()) \
	F(json_t *, json_vpack_ex, (json_error_t *error, size_t flags, const char *fmt, va_list ap), (error, flags, fmt, ap))
/* clang-format on */

LAZY_SHIM(LAZY_JANSSON, JANSSON_FNS)

/* variadic: through json_vpack_ex(), as jansson's own json_pack() is */
__attribute__((visibility("hidden"))) json_t *json_pack(const char *fmt, ...)
{
	json_t *v;
	va_list ap;

	va_start(ap, fmt);
	v = LAZY_FN(json_vpack_ex)(NULL, 0, fmt, ap);
	va_end(ap);
	return v;
}
