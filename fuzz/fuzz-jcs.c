/* Fuzz target for the RFC 8785 (JCS) writer: parse the input with jansson;
 * if it parses, canonicalize it with both writers and check the properties:
 *   - the only refusal is -ERANGE (an integer beyond +-2^53);
 *   - the output parses again, and canonicalizing that gives the same bytes
 *     (numbers re-read as doubles, JCS's data model);
 *   - reading the input's integers as doubles gives the same bytes too;
 *   - the Python form never fails on parsed input and is pure ASCII. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/json.h"
#include "util/banned.h"

#define LOAD_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
#define OUT_CAP	   (64u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbuf out = SBUF_INIT(OUT_CAP), again = SBUF_INIT(OUT_CAP);
	struct sbuf py = SBUF_INIT(OUT_CAP);
	json_t *v, *w = NULL, *x = NULL;
	size_t i;
	int r;

	v = json_loadb((const char *)data, size, LOAD_FLAGS, NULL);
	if (!v)
		return 0;

	r = json_canon_jcs(v, &out);
	if (r < 0 && r != -ERANGE)
		__builtin_trap();
	if (r == 0) {
		w = json_loadb(out.buf, out.len, LOAD_FLAGS | JSON_DECODE_INT_AS_REAL, NULL);
		if (!w)
			__builtin_trap(); /* canonical output is not JSON */
		if (json_canon_jcs(w, &again) < 0)
			__builtin_trap();
		if (again.len != out.len || memcmp(again.buf, out.buf, out.len) != 0)
			__builtin_trap(); /* not a fixed point */

		/* Integers (all within +-2^53 here) read as doubles: same text. */
		x = json_loadb((const char *)data, size, LOAD_FLAGS | JSON_DECODE_INT_AS_REAL,
			       NULL);
		if (!x)
			__builtin_trap();
		sbuf_reset(&again);
		if (json_canon_jcs(x, &again) < 0 || again.len != out.len ||
		    memcmp(again.buf, out.buf, out.len) != 0)
			__builtin_trap();
	}

	if (json_canon_py(v, &py) < 0)
		__builtin_trap();
	for (i = 0; i < py.len; i++)
		if ((unsigned char)py.buf[i] < 0x20 || (unsigned char)py.buf[i] > 0x7e)
			__builtin_trap();

	json_decref(x);
	json_decref(w);
	json_decref(v);
	sbuf_release(&py);
	sbuf_release(&again);
	sbuf_release(&out);
	return 0;
}
