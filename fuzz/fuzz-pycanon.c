/* Fuzz target for the Python json.dumps(sort_keys=True) writer: parse the
 * input with jansson; if it parses, canonicalize it with both writers and
 * check the properties:
 *   - the Python form never fails on parsed input, is printable ASCII only,
 *     parses again, and canonicalizing that gives the same bytes;
 *   - json_parse_strict() accepts exactly what jansson accepts without NULs;
 *   - the JCS form fails only with -ERANGE; the pretty form is produced. */
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
	struct sbuf jcs = SBUF_INIT(OUT_CAP);
	json_t *v, *w = NULL, *strict = NULL, *plain;
	struct diag d;
	char *pretty;
	size_t i;
	int r;

	/* The strict parser agrees with jansson's own verdict. */
	plain = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
			   NULL);
	r = json_parse_strict("fuzz", (const char *)data, size, &strict, &d);
	if ((r == 0) != (plain != NULL))
		__builtin_trap();
	if (r < 0 && (r != -EBADMSG || strcmp(d.file, "fuzz") != 0 || !d.msg[0]))
		__builtin_trap();
	json_decref(strict);
	json_decref(plain);

	v = json_loadb((const char *)data, size, LOAD_FLAGS, NULL);
	if (!v)
		return 0;

	if (json_canon_py(v, &out) < 0)
		__builtin_trap();
	for (i = 0; i < out.len; i++)
		if ((unsigned char)out.buf[i] < 0x20 || (unsigned char)out.buf[i] > 0x7e)
			__builtin_trap(); /* ensure_ascii output */
	w = json_loadb(out.buf, out.len, LOAD_FLAGS, NULL);
	if (!w)
		__builtin_trap();
	if (json_canon_py(w, &again) < 0 || again.len != out.len ||
	    memcmp(again.buf, out.buf, out.len) != 0)
		__builtin_trap(); /* not a fixed point */

	r = json_canon_jcs(v, &jcs);
	if (r < 0 && r != -ERANGE)
		__builtin_trap();

	pretty = json_dump_pretty(v);
	if (!pretty || !*pretty || pretty[strlen(pretty) - 1] != '\n')
		__builtin_trap();
	free(pretty);

	json_decref(w);
	json_decref(v);
	sbuf_release(&jcs);
	sbuf_release(&again);
	sbuf_release(&out);
	return 0;
}
