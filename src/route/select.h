/* Capability-aware selection and refusal receipts (docs/routing.md).
 *
 * select_adapter() walks the candidates in one deterministic order and
 * returns the first whose profile (with its resolved strategy) satisfies
 * every requirement. The order:
 *   1. explicit: in->candidates, as given (first occurrence of a repeated
 *      name counts); every name must be in the catalogue;
 *   2. preference: in->preference first, as given, then every other
 *      adapter in catalogue order (a preference orders, it does not
 *      restrict); every name must be in the catalogue;
 *   3. catalogue: the catalogue's registry entries in byte order of their
 *      names (strcmp), the order catalog->entries keeps them in.
 * In orders 2 and 3 only adapters WITH a capability profile are candidates:
 * an adapter without one declares no capabilities and is never chosen by
 * routing. An adapter without a profile named in an explicit list is
 * considered (the caller chose it), presents no profile hash, and satisfies
 * only a task that requires nothing; see route_and_record() for the no-op
 * this means for anchoring.
 *
 * When nothing satisfies the task there is no fallback: the call fails
 * with -ENOTSUP and a refusal receipt, a content-addressed record of the
 * normalized requirements, every candidate considered (in order) with the
 * profile hash it presented and the axes it failed, and the union of those
 * axes:
 *
 *   {"candidates": [{"adapter": NAME, "profile_hash": HEX | null,
 *                    "unmet": [AXIS...]}...],
 *    "kind": "adapter-capability-refusal",
 *    "requirements": {...requirements_json()...},
 *    "unmet": [AXIS...]}
 *
 * receipt_hash = lowercase hex SHA-256 of the RFC 8785 canonical JSON of
 * that object. Axis lists are sorted by name. */
#ifndef BERNSTEIN_ROUTE_SELECT_H
#define BERNSTEIN_ROUTE_SELECT_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/catalog.h"
#include "adapter/profile.h"
#include "route/requirements.h"
#include "util/diag.h"
#include "util/hash.h"

#define SELECT_RECEIPT_KIND "adapter-capability-refusal"

enum select_order {
	SELECT_ORDER_EXPLICIT,	 /* "explicit" */
	SELECT_ORDER_PREFERENCE, /* "preference" */
	SELECT_ORDER_CATALOGUE,	 /* "catalogue" */
	_SELECT_ORDER_MAX,
	_SELECT_ORDER_INVALID = -EINVAL,
};
const char *select_order_to_string(enum select_order o);

struct select_input {
	const struct catalog *cat;
	const struct requirements *req; /* NULL: nothing required */
	/* NULL-terminated name lists; NULL = not given. An explicit list that
	 * is given but empty considers no candidate (and so refuses). */
	const char *const *candidates;
	const char *const *preference;
	/* bernstein's own sandbox tiers this task can get on this host (bit
	 * 1u << enum sandbox_kind, proc/sandbox.h; 0: none, or not looked
	 * at): a candidate whose profile declares one of them
	 * (runtime.sandbox.tiers) reaches the seed's tier it gives (landlock,
	 * bwrap: process; container: container) whatever its capabilities
	 * say, for capability:sandbox=T. */
	unsigned host_tiers;
};

struct select_candidate {
	const char *name;	       /* the registry name (lives as long as the catalogue) */
	const struct profile *profile; /* NULL: an explicitly named adapter without one */
	const char *profile_hash;      /* profile_hash(profile), or NULL */
	uint32_t unmet;		       /* bit (1u << enum req_axis) per axis it fails */
};

struct selection {
	enum select_order order;
	/* The candidates considered, in order: up to and including the chosen
	 * one, or all of them on a refusal (owned). */
	struct select_candidate *considered;
	size_t n_considered;
	const struct select_candidate *chosen; /* into considered; NULL on a refusal */
	json_t *requirements;		       /* requirements_json() (owned) */
	/* On a refusal: */
	uint32_t unmet; /* the union of the candidates' unmet axes */
	char receipt_hash[SHA256_HEX_LEN + 1];
	/* Set by route_and_record(): the decision is in the audit chain. */
	bool recorded;
};

/* Select per the rules above. Returns 0 with ret->chosen set, or -ENOTSUP
 * (capability mismatch) with ret->unmet and ret->receipt_hash set and a
 * one-line message in the diag; in both cases the caller releases *ret with
 * selection_release(). -EINVAL (a name not in the catalogue; diag) leaves
 * *ret untouched. */
int select_adapter(const struct select_input *in, struct selection *ret, struct diag *reterr);
void selection_release(struct selection *s);

/* The refusal receipt of s as a JSON object (a new reference; built on
 * demand, the hash does not need it), or NULL when s is a match. */
json_t *selection_receipt(const struct selection *s);
/* The receipt's hash: SHA-256 over the RFC 8785 form of receipt. */
int select_receipt_hash(const json_t *receipt, char hex[SHA256_HEX_LEN + 1]);

#endif
