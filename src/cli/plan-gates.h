/* `plan validate`'s dispatch gates: each task that names its adapter meets
 * the gates dispatch runs before its agent sees anything
 * (invocation_check_static(): sampling keys the agent cannot take, credential
 * variable names, attachments for an agent without image input), so a plan
 * that validates is not refused at dispatch for a reason the file shows. */
#ifndef BERNSTEIN_CLI_PLAN_GATES_H
#define BERNSTEIN_CLI_PLAN_GATES_H

#include <stddef.h>

#include "adapter/catalog.h"
#include "orch/plan.h"

/* Add one issue per refused task to is (file: p->source; line:col of the
 * sampling key or attachments: at fault, else of the task); allowed_key_envs:
 * the host's CREDENTIAL_HOST_ALLOW_ENV or NULL. Tasks without an adapter
 * (routing decides at dispatch) and adapters cat does not know are skipped.
 * Returns the number of issues added. */
size_t plan_gates_check(const struct plan *p, const struct catalog *cat,
			const char *allowed_key_envs, struct diag_list *is);

/* The same gates for each entry of an endpoints: map (orch/endpoints.h)
 * of file source: its adapter is in cat and takes its base_url and
 * api_key_env (invocation_check_static()); one issue per bad entry at the
 * entry's key, "field 'endpoints.NAME': ...". Returns the number added. */
size_t plan_gates_endpoints(const struct orch_endpoints *eps, const char *source,
			    const struct catalog *cat, const char *allowed_key_envs,
			    struct diag_list *is);

#endif
