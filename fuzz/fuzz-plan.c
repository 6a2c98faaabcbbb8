/* Fuzz target for plan.yaml (src/orch/plan.h): the loader on arbitrary
 * bytes. A failure reports at least one problem, each in fuzz.yaml, in
 * position order. A loaded plan holds its invariants: valid unique ids,
 * unique titles, known roles, every dependency resolved, no cycle (the
 * topological order exists and respects every dependency), the hash of
 * the bytes, and validating it again finds nothing. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "orch/plan.h"
#include "orch/spec.h"
#include "util/hash.h"
#include "util/xalloc.h"

static void check_plan(struct plan *p, const uint8_t *data, size_t size)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	char hex[SHA256_HEX_LEN + 1];
	size_t *order, *pos, i, j;
	json_t *j_plan;

	if (!p->name || p->n == 0)
		abort();
	hash_sha256_hex(data, size, hex);
	if (strcmp(hex, plan_hash(p)) != 0)
		abort();
	for (i = 0; i < p->n; i++) {
		const struct plan_task *t = &p->tasks[i];

		if (!plan_id_valid(t->id) || !t->title || !t->prompt || !orch_role_known(t->role))
			abort();
		if (plan_find(p, t->id) != (long)i)
			abort(); /* ids are unique */
		for (j = 0; j < t->n_deps; j++)
			if (t->deps[j].index >= p->n)
				abort();
		for (j = 0; j < i; j++)
			if (strcmp(p->tasks[j].title, t->title) == 0)
				abort();
	}
	order = xcalloc(p->n, sizeof(*order));
	pos = xcalloc(p->n, sizeof(*pos));
	if (plan_topo_order(p, order) != 0)
		abort();
	for (i = 0; i < p->n; i++)
		pos[order[i]] = i + 1;
	for (i = 0; i < p->n; i++) {
		if (!pos[i])
			abort(); /* a permutation */
		for (j = 0; j < p->tasks[i].n_deps; j++)
			if (pos[p->tasks[i].deps[j].index] >= pos[i])
				abort(); /* dependencies first */
	}
	free(order);
	free(pos);
	if (plan_validate(p, &is) != 0 || is.n)
		abort();
	j_plan = spec_plan_json(p);
	if (!j_plan || json_array_size(json_object_get(j_plan, "tasks")) != p->n)
		abort();
	json_decref(j_plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	size_t i;

	if (plan_load_buf("fuzz.yaml", (const char *)data, size, "FUZZ_KEY", &p, &is) < 0) {
		if (p || is.n == 0)
			abort();
		for (i = 0; i < is.n; i++) {
			if (strcmp(is.v[i].file, "fuzz.yaml") != 0 || !is.v[i].msg[0])
				abort();
			if (i &&
			    (is.v[i].line < is.v[i - 1].line ||
			     (is.v[i].line == is.v[i - 1].line && is.v[i].col < is.v[i - 1].col)))
				abort(); /* in position order */
		}
		diag_list_release(&is);
		return 0;
	}
	if (is.n)
		abort();
	check_plan(p, data, size);
	plan_free(p);
	return 0;
}
