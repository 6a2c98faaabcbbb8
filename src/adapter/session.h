/* Agent session ids: checking the ones a user passes (--resume, --session-id)
 * and deriving a pre-assigned one deterministically.
 *
 * The derivation is Bernstein's (anchor-adapters.md section 1.14,
 * A/session_id.py, recipe version 1):
 *   digest = HMAC-SHA256(key = conversation id (UTF-8),
 *                        msg = "bernstein.adapter:" + adapter name)
 *   b = digest[0:16]; b[6] = (b[6] & 0x0F) | 0x50; b[8] = (b[8] & 0x3F) | 0x80
 * formatted as a canonical lower-case UUID (version 5 and RFC 4122 variant
 * bits, although the hash is HMAC-SHA256, not SHA-1). The same conversation
 * and adapter always give the same id, so a re-run of a task finds its
 * session again. */
#ifndef BERNSTEIN_ADAPTER_SESSION_H
#define BERNSTEIN_ADAPTER_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"

#define SESSION_NAMESPACE_PREFIX "bernstein.adapter:"
#define SESSION_RECIPE_VERSION	 1
#define SESSION_UUID_LEN	 36  /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
#define SESSION_ID_MAX		 256 /* longest id accepted from a user */

/* The UUID of (conversation_id, adapter) into out (SESSION_UUID_LEN + 1
 * bytes). -EINVAL when either is NULL or empty. */
int session_id_derive(const char *conversation_id, const char *adapter,
		      char out[SESSION_UUID_LEN + 1]);

/* s is a UUID in the 8-4-4-4-12 hex form (either case). */
bool session_id_is_uuid(const char *s);

/* An agent session id a user may pass on argv: 1 to SESSION_ID_MAX bytes of
 * printable ASCII without blanks, not starting with '-' (it would read as a
 * flag). 0, or -EINVAL with the reason in reterr ("session id '...': ..."). */
int session_id_check(const char *id, struct diag *reterr);

#endif
