/* The event connection between `bernstein agent-relay` (the submitting
 * host) and `bernstein agent-exec` (a Slurm node): docs/executors.md,
 * "The connection". One JSON object a line, each at most REMOTE_LINE_MAX
 * bytes, over one TLS connection the node opens (orch/remote-tls.h: the
 * node first checks the relay's certificate against its pinned
 * fingerprint):
 *
 *   node  -> relay  {"token": HEX, "node": NAME}           first, within 10 s
 *   relay -> node   {"invocation": {...}}                  once the token matched
 *   node  -> relay  {"out": LINE} | {"err": LINE}          the agent's lines, live
 *                   {"error": MESSAGE}                     the node could not run it
 *                   {"bundle": BASE64}...                  after the agent: a git bundle
 *                                                          of the branch (BASE..refs/heads/
 *                                                          BRANCH), in chunks, in order
 *                   {"pushed": SHA|null}                   after the agent: the branch
 *                   {"exit": N}                            last
 *
 * The relay's parser of the node's lines (remote_msg_parse()) reads input an
 * agent on the node could forge (it runs as the same user as agent-exec):
 * it is a fuzz target (fuzz/fuzz-remote.c). Nothing here prints. */
#ifndef BERNSTEIN_ORCH_REMOTE_H
#define BERNSTEIN_ORCH_REMOTE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"

#define REMOTE_LINE_MAX	 (4u << 20) /* one message */
#define REMOTE_TOKEN_HEX 64	    /* 32 random bytes */

enum remote_msg_kind {
	REMOTE_MSG_HELLO,  /* token, node */
	REMOTE_MSG_OUT,	   /* text: a stdout line of the agent */
	REMOTE_MSG_ERR,	   /* text: a stderr line */
	REMOTE_MSG_ERROR,  /* text: why the node could not run the agent */
	REMOTE_MSG_PUSHED, /* text: the branch's commit at the hub, NULL: not pushed */
	REMOTE_MSG_EXIT,   /* code: the agent's exit status as a shell reports it */
	REMOTE_MSG_BUNDLE, /* text, len: the next bytes of the branch's git bundle */
	_REMOTE_MSG_KIND_MAX,
	_REMOTE_MSG_KIND_INVALID = -EINVAL,
};

struct remote_msg {
	enum remote_msg_kind kind;
	char *text; /* owned; out, err, error, pushed (NULL: null), hello's token */
	char *node; /* owned; hello */
	int code;   /* exit: 0..255 */
	size_t len; /* bundle: the bytes in text (binary; a NUL after them) */
};

/* The raw bytes of one bundle message at most (its base64 is a third more,
 * well under REMOTE_LINE_MAX). */
#define REMOTE_BUNDLE_CHUNK (1u << 20)

/* data as standard base64 with padding (caller frees). */
char *remote_b64_encode(const void *data, size_t n);

/* The refs `git bundle list-heads` printed for the node's bundle (out, NUL
 * terminated): 0 and the commit id in ret_sha when it lists exactly one
 * ref, refs/heads/BRANCH, with a 40 or 64 hex id; else -EBADMSG with why
 * (the bundle holds another ref, several, none, a malformed line). It is
 * what a hostile node sent. */
int remote_bundle_heads(const char *out, const char *branch, char ret_sha[65], struct diag *reterr);

void remote_msg_release(struct remote_msg *m);

/* One line from the node (without its newline): 0 and *ret filled, or
 * -EBADMSG with why in reterr (not JSON, not one known key, a wrong type,
 * an exit out of 0..255, a token not of REMOTE_TOKEN_HEX lowercase hex, a
 * pushed that is not a 40 or 64 hex commit id). */
int remote_msg_parse(const char *line, size_t len, struct remote_msg *ret, struct diag *reterr);

/* Whether rel may name a file of the task's HOME that the relay sends in
 * the invocation (home_files) for the node to write under its own HOME:
 * not empty, not absolute, no empty, "." or ".." component, shorter than
 * REMOTE_HOME_PATH_MAX. */
#define REMOTE_HOME_PATH_MAX 1024
bool remote_home_path_ok(const char *rel);

/* A fresh token: REMOTE_TOKEN_HEX lowercase hex digits and a NUL, from
 * getrandom() only (-errno when it fails: no weaker fallback). */
int remote_token(char buf[REMOTE_TOKEN_HEX + 1]);

/* Whether the two tokens are equal, in time independent of where they
 * differ. */
bool remote_token_equal(const char *a, const char *b);

#endif
