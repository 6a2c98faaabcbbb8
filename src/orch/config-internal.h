/* Schema helpers shared by the bernstein.yaml loader (config.c) and the
 * plan loader (plan.c): the orch-specific values, on top of the typed
 * getters of util/yschema.h. Not a public interface.
 *
 * Every error names the field by its path in the document
 * ("role_model_policy.backend.api_key_env", "tasks[2].requires[0]") and sits
 * at the offending node:
 *   FILE:LINE:COL: field 'PATH': MESSAGE */
#ifndef BERNSTEIN_ORCH_CONFIG_INTERNAL_H
#define BERNSTEIN_ORCH_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/invocation.h"
#include "orch/config.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/yaml.h"
#include "util/yschema.h"

/* yaml_check_keys() with the first problem into reterr: unknown keys, with
 * what = the path of the map ("role_model_policy.backend"; the top level
 * passes a word). */
int orch_check_keys(const struct ydoc *doc, const struct ynode *map, const char *const *keys,
		    const char *what, struct diag *reterr);

/* An adapter name ([a-z][a-z0-9_]*); "auto" (Bernstein's "let routing
 * decide") and null give NULL. */
int orch_get_adapter(const struct ydoc *doc, const struct ynode *n, const char *path,
		     const char **ret, struct diag *reterr);
/* One of the efforts (orch_efforts). */
int orch_get_effort(const struct ydoc *doc, const struct ynode *n, const char *path,
		    const char **ret, struct diag *reterr);

/* network: full | llm | none. */
int orch_get_network(const struct ydoc *doc, const struct ynode *n, const char *path,
		     enum net_mode *ret, struct diag *reterr);
/* sandbox: auto | none | landlock | bwrap | container. */
int orch_get_sandbox(const struct ydoc *doc, const struct ynode *n, const char *path,
		     enum sandbox_mode *ret, struct diag *reterr);

/* on_conflict: rebase | resolve | fail. */
int orch_get_on_conflict(const struct ydoc *doc, const struct ynode *n, const char *path,
			 enum conflict_policy *ret, struct diag *reterr);

/* limits: {memory: 512M, pids: 256, cpu: 1.5} (any of them) into *ret. */
int orch_get_limits(const struct ydoc *doc, const struct ynode *n, const char *path,
		    struct contain_limits *ret, struct diag *reterr);

/* gates: [{name, run, timeout}] into an array in a. Gate names are unique
 * within the list. */
int orch_get_gates(struct arena *a, const struct ydoc *doc, const struct ynode *n, const char *path,
		   struct orch_gate **ret, size_t *ret_n, struct diag *reterr);

/* Which sampling keys a map may hold. */
enum orch_slot_keys {
	ORCH_SLOTS_SAMPLING = 1 << 0, /* temperature, top_p, top_k, max_tokens */
	ORCH_SLOTS_ENDPOINT = 1 << 1, /* base_url, api_key_env */
};

/* One slot value at n (key k) into *s, checked; api_key_env against the
 * credential allow-list with allowed (the host's
 * BERNSTEIN_ALLOWED_API_KEY_ENVS, or NULL). */
int orch_get_slot(const struct ydoc *doc, const struct ynode *n, const char *path,
		  enum sampling_key k, const char *allowed, struct invocation_sampling *s,
		  struct diag *reterr);
/* A whole map of slots (sampling:, modes.NAME) into *ret (zeroed first). */
int orch_get_slots(const struct ydoc *doc, const struct ynode *n, const char *path,
		   enum orch_slot_keys which, const char *allowed, struct invocation_sampling *ret,
		   struct diag *reterr);

#endif
