/* `plan validate`'s dispatch gates (see plan-gates.h). */
#include "cli/plan-gates.h"

#include <stdio.h>

#include "adapter/invocation.h"
#include "util/diag.h"
#include "util/banned.h"

size_t plan_gates_endpoints(const struct orch_endpoints *eps, const char *source,
			    const struct catalog *cat, const char *allowed_key_envs,
			    struct diag_list *is)
{
	size_t i, added = 0;

	for (i = 0; eps && i < eps->n; i++) {
		const struct orch_endpoint *ep = &eps->v[i];
		const struct registry_entry *e = catalog_find(cat, ep->adapter);
		struct invocation_sampling s;
		struct diag d, out;

		diag_clear(&d);
		orch_endpoint_slots(ep, &s);
		if (!e || !e->profile)
			diag_set(
				&out, source, ep->line, ep->col,
				"field 'endpoints.%s': unknown adapter '%s' (not in the catalogue: 'bernstein adapters list')",
				ep->adapter, ep->adapter);
		else if (invocation_check_static(e->profile, cat, &s, 0, allowed_key_envs, NULL,
						 &d) == 0)
			continue;
		else
			diag_set(
				&out, source, ep->line, ep->col,
				"field 'endpoints.%s': a task on '%s' would be refused at dispatch: %s",
				ep->adapter, ep->adapter, d.msg);
		diag_list_add(is, &out);
		added++;
	}
	return added;
}

size_t plan_gates_check(const struct plan *p, const struct catalog *cat,
			const char *allowed_key_envs, struct diag_list *is)
{
	size_t i, added;

	added = plan_gates_endpoints(&p->endpoints, p->source, cat, allowed_key_envs, is);

	for (i = 0; i < p->n; i++) {
		const struct plan_task *t = &p->tasks[i];
		const struct registry_entry *e = t->adapter ? catalog_find(cat, t->adapter) : NULL;
		enum sampling_key key = _SAMPLING_KEY_INVALID;
		unsigned line = t->line, col = t->col;
		struct diag d, out;
		char what[64] = "";

		if (!e || !e->profile)
			continue;
		diag_clear(&d);
		if (invocation_check_static(e->profile, cat, &t->sampling, t->n_attachments,
					    allowed_key_envs, &key, &d) == 0)
			continue;
		if ((int)key >= 0 && key < _SAMPLING_KEY_MAX && t->sampling_line[key]) {
			line = t->sampling_line[key];
			col = t->sampling_col[key];
			(void)snprintf(what, sizeof(what), "sampling.%s",
				       sampling_key_to_string(key));
		} else if ((int)key < 0 && t->attachments_line) {
			line = t->attachments_line;
			col = t->attachments_col;
			(void)snprintf(what, sizeof(what), "attachments");
		}
		diag_set(&out, p->source, line, col,
			 "field '%s%s%s': task '%s' would be refused at dispatch: %s", t->path,
			 what[0] ? "." : "", what, t->id, d.msg);
		diag_list_add(is, &out);
		added++;
	}
	return added;
}
