/* `plan validate`'s dispatch gates (see plan-gates.h). */
#include "cli/plan-gates.h"

#include <stdio.h>

#include "adapter/invocation.h"
#include "util/diag.h"
#include "util/banned.h"

size_t plan_gates_check(const struct plan *p, const struct catalog *cat,
			const char *allowed_key_envs, struct diag_list *is)
{
	size_t i, added = 0;

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
