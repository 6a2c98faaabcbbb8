/* endpoints: where each adapter's agent is pointed, per adapter, in
 * bernstein.yaml and in a plan (docs/configuration.md, "Endpoints"):
 *
 *   endpoints:
 *     claude: {base_url: "http://127.0.0.1:8080", api_key_env: ANTHROPIC_API_KEY}
 *     codex:  {base_url: "http://127.0.0.1:8080/v1", api_key_env: OPENAI_API_KEY,
 *              model: gpt-5.5}
 *
 * An entry applies to a task whichever way its adapter was chosen (named,
 * by role, by routing, by adapter: auto, as a fallback). A plan's entry for
 * an adapter replaces bernstein.yaml's for that adapter as a whole (no key
 * of the one is mixed into the other). Per slot, the most specific source
 * wins (orch_config_slots(), orch_config_model()):
 *
 *   base_url, api_key_env: task sampling > role_model_policy > endpoint
 *   temperature, top_p, top_k, max_tokens: task sampling > mode profile
 *   model: task (or its plan's model:) > role_model_policy > endpoint >
 *          bernstein.yaml's model:
 *
 * Checked while loading, each problem at FILE:LINE:COL naming the field
 * ("endpoints.claude.api_key_env"): the key an adapter name (never auto),
 * the entry a mapping of base_url (util/url.h), api_key_env (the credential
 * allow-list, adapter/credential.h: a known provider key or one listed in
 * BERNSTEIN_ALLOWED_API_KEY_ENVS) and model (a model id), at least one of
 * them. Whether the adapter exists and takes an endpoint needs the
 * catalogue: `plan validate` and `config validate` check that. Only the
 * variable's NAME is ever kept; its value is read at spawn. */
#ifndef BERNSTEIN_ORCH_ENDPOINTS_H
#define BERNSTEIN_ORCH_ENDPOINTS_H

#include <jansson.h>
#include <stddef.h>

#include "adapter/invocation.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/sbuf.h"

struct ydoc;
struct ynode;

struct orch_endpoint {
	const char *adapter;	 /* the entry's key */
	const char *base_url;	 /* NULL: not given */
	const char *api_key_env; /* the NAME of the variable holding the key; NULL: not given */
	const char *model;	 /* NULL: not given */
	unsigned line, col;	 /* the entry's key (0: recorded, not from a file) */
};

struct orch_endpoints {
	struct orch_endpoint *v; /* in file order, each adapter once */
	size_t n;
};

/* endpoints: at n (path: "endpoints") into *ret, strings borrowed from doc,
 * the array from a. allowed: the host's BERNSTEIN_ALLOWED_API_KEY_ENVS, or
 * NULL. The first problem in reterr (-EINVAL). */
int orch_endpoints_get(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, const char *allowed, struct orch_endpoints *ret,
		       struct diag *reterr);

/* The entry for adapter, or NULL (e, adapter may be NULL). */
const struct orch_endpoint *orch_endpoints_find(const struct orch_endpoints *e,
						const char *adapter);

/* The entry's base_url and api_key_env as slots (only those given). */
void orch_endpoint_slots(const struct orch_endpoint *ep, struct invocation_sampling *ret);

/* {ADAPTER: {base_url, api_key_env, model}} with the keys given (a new
 * reference). */
json_t *orch_endpoints_json(const struct orch_endpoints *e);
/* The same back (a task's recorded spec): strings copied into a, each
 * checked as loading checks it. -EBADMSG with the reason in msg. */
int orch_endpoints_parse_json(struct arena *a, const json_t *j, struct orch_endpoints *ret,
			      char *msg, size_t size);

/* "\nendpoints:" and one flow mapping per entry (nothing when e is empty),
 * appended to out: bernstein.yaml text that loads back to e. 0 or
 * -ENOBUFS. */
int orch_endpoints_yaml(const struct orch_endpoints *e, struct sbuf *out);

/* Copy e's entries (strings too) into a. */
void orch_endpoints_copy(struct arena *a, const struct orch_endpoints *e,
			 struct orch_endpoints *ret);

#endif
