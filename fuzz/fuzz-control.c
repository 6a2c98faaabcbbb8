/* Fuzz target for the control channel's requests (src/orch/control.h): the
 * parser on arbitrary bytes, as any local process of the run's user may
 * send them. A parsed request holds its invariants: a known op, 1..64 valid
 * distinct task ids for cancel and retry, a prompt for add_task; and its
 * dump parses again to the same dump. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "orch/control.h"
#include "orch/plan.h"

static void check(const struct control_request *r)
{
	struct control_request again;
	char *dump, *dump2;
	size_t i;

	if ((int)r->op < 0 || r->op >= _CONTROL_OP_MAX)
		abort();
	if (r->op == CONTROL_CANCEL || r->op == CONTROL_RETRY) {
		if (r->n_tasks == 0 || r->n_tasks > CONTROL_TASKS_MAX)
			abort();
		for (i = 0; i < r->n_tasks; i++)
			if (!plan_id_valid(r->tasks[i]))
				abort();
	}
	if (r->op == CONTROL_ADD_TASK && (!r->add.prompt || !*r->add.prompt))
		abort();
	dump = control_request_dump(r);
	control_request_init(&again);
	if (control_request_parse(dump, strlen(dump), &again, NULL) < 0)
		abort();
	dump2 = control_request_dump(&again);
	if (strcmp(dump, dump2) != 0)
		abort();
	free(dump);
	free(dump2);
	control_request_release(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct control_request r;
	struct diag d;

	control_request_init(&r);
	diag_clear(&d);
	if (control_request_parse((const char *)data, size, &r, &d) == 0) {
		check(&r);
		control_request_release(&r);
	} else if (!d.msg[0]) {
		abort(); /* a refusal says why */
	}
	return 0;
}
