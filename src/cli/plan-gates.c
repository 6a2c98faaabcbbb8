/* `plan validate`'s dispatch gates (see plan-gates.h). */
#include "cli/plan-gates.h"

#include <stdio.h>
#include <string.h>

#include "adapter/invocation.h"
#include "adapter/profile.h"
#include "orch/mcpservers.h"
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

/* A task with MCP servers (its own over its plan's; a role's or
 * bernstein.yaml's are the run's to check) on an adapter that cannot take
 * them: refused at dispatch, so said here. */
static size_t mcp_gate(const struct plan *p, const struct plan_task *t, const struct profile *prof,
		       struct diag_list *is)
{
	const struct orch_mcp_servers *layers[] = {&p->mcp_servers, &t->mcp_servers};
	struct orch_mcp_servers ms;
	struct arena a = ARENA_INIT;
	const char *why = NULL;
	struct diag out;
	size_t i;

	orch_mcp_servers_merge(&a, layers, 2, &ms);
	if (ms.n && strcmp(prof->name, "openai_agents") == 0) {
		for (i = 0; i < ms.n; i++)
			if (ms.v[i].url)
				why = "the built-in runner speaks stdio MCP servers only, not a url";
	} else if (ms.n && !prof->runtime.mcp.declared) {
		why = "its profile declares no runtime.mcp: the agent has no way to take them";
	}
	arena_release(&a);
	if (!why)
		return 0;
	diag_set(&out, p->source, t->line, t->col,
		 "field '%s.mcp_servers': task '%s' would be refused at dispatch on '%s': %s",
		 t->path, t->id, prof->name, why);
	diag_list_add(is, &out);
	return 1;
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
		added += mcp_gate(p, t, e->profile, is);
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
