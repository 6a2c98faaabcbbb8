/* Routing with a record: the seam that turns an adapter selection into a
 * replay-verifiable entry of the HMAC audit chain (docs/routing.md,
 * "Audit events").
 *
 * route_and_record() selects exactly as select_adapter() and then, when a
 * chain is given, appends one record (actor "bernstein", resource_type
 * "run", resource_id the run id):
 *   - a match: adapter.capability_selection, details
 *       {"adapter": NAME, "profile_hash": HEX, "requirements": {...}};
 *   - a mismatch: adapter.capability_refusal, details
 *       {"candidates": [...], "receipt_hash": HEX, "requirements": {...},
 *        "unmet": [...]}
 *     (the receipt's own fields, so the receipt hash can be recomputed from
 *     the record alone), appended BEFORE -ENOTSUP is returned;
 *   - a match of an adapter without a profile (only possible when the caller
 *     named it explicitly and the task requires nothing; e.g. the dispatch
 *     path anchoring the adapter a task was routed to): nothing is appended,
 *     ret->recorded stays false, and the call returns 0. There is no profile
 *     hash to anchor: a no-op, as for Bernstein's generic fallback.
 * Without a chain the call decides the same and writes nothing: no audit
 * function is called (a dry-run capability probe needs no key). */
#ifndef BERNSTEIN_ROUTE_ROUTE_H
#define BERNSTEIN_ROUTE_ROUTE_H

#include <jansson.h>

#include "route/select.h"
#include "util/diag.h"

struct audit_chain;

#define ROUTE_EVENT_SELECTION "adapter.capability_selection"
#define ROUTE_EVENT_REFUSAL   "adapter.capability_refusal"
#define ROUTE_ACTOR	      "bernstein"
#define ROUTE_RESOURCE_TYPE   "run"

/* Returns 0 (ret->chosen set) or -ENOTSUP (the refusal in ret), as
 * select_adapter(), with ret->recorded telling whether a record was
 * appended; -EINVAL (unknown name) with *ret untouched. When the append
 * fails its error is returned (-EBADMSG, -EKEYREJECTED, -EINVAL, -errno;
 * diag) and *ret is released: no decision leaves here unrecorded when a
 * chain was given. run_id NULL is "". */
int route_and_record(const struct select_input *in, struct audit_chain *chain, const char *run_id,
		     struct selection *ret, struct diag *reterr);

/* The details of the record for s (a new reference): the selection's for a
 * match, the refusal's for a mismatch. */
json_t *route_record_details(const struct selection *s);

#endif
