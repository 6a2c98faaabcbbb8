/* Fuzz target for a recorded task (src/orch/spec.h): spec_parse_text() on
 * arbitrary bytes, as if state.db's tasks.spec held them. Properties, besides
 * never crashing or leaking:
 *   - a refusal is -EBADMSG with a message, and leaves the spec empty;
 *   - an accepted spec written back (spec_dump()) parses again to the same
 *     text: one serialiser, one parser, a fixed point after one step;
 *   - the arrays it returns are NULL-terminated at their counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "orch/spec.h"

static void check_arrays(const struct task_spec *s)
{
	if (!s->depends_on || s->depends_on[s->n_depends_on] || !s->requires ||
	    s->requires[s->n_requires] || !s->attachments || s->attachments[s->n_attachments])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct task_spec s, again;
	struct diag d;
	char *t1, *t2;
	int r;

	spec_init(&s);
	diag_clear(&d);
	r = spec_parse_text((const char *)data, size, &s, &d);
	if (r < 0) {
		if (r != -EBADMSG || !d.msg[0] || s.id || s.n_gates || s.n_requires)
			abort();
		return 0;
	}
	check_arrays(&s);
	t1 = spec_dump(&s);
	spec_init(&again);
	if (!t1 || spec_parse_text(t1, strlen(t1), &again, &d) < 0)
		abort();
	check_arrays(&again);
	t2 = spec_dump(&again);
	if (!t2 || strcmp(t1, t2) != 0)
		abort();
	free(t1);
	free(t2);
	spec_release(&again);
	spec_release(&s);
	return 0;
}
